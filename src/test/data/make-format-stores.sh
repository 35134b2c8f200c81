#!/usr/bin/env bash
# Makes the store fixtures of src/test/engine/format_compat_test.cc with the
# hybridstore-tool of a build, so a later engine is tested on stores an
# earlier one wrote. Run it only to add a fixture for a new format: a
# fixture is the record of what a past release wrote, never remade.
#
#   src/test/data/make-format-stores.sh TOOL OUTDIR
#
# OUTDIR/store.tar.gz (sparse, gzip) holds one store: 64 MiB SSD, 128 MiB
# HDD; a 12 KiB object on the SSD overwritten in its middle block and
# cloned before that, a 3 MiB HDD object (sequential hint, then truncated),
# attributes, an omap with a header.
set -eu
[ $# -eq 2 ] || { echo "usage: $0 TOOL OUTDIR" >&2; exit 2; }
tool=$1
out=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
python3 - << 'PY'
open('big.bin', 'wb').write(bytes((i * 7 + 3) % 251 for i in range(3 << 20)))
open('small.bin', 'wb').write(bytes((i * 13 + 1) % 253 for i in range(12288)))
PY
cat > t.json << 'JSON'
[{"ops": [{"op": "mkcoll", "coll": "1.0_head", "bits": 3},
          {"op": "mkcoll", "coll": "meta"},
          {"op": "write", "coll": "1.0_head", "oid": "small", "data_file": "small.bin"},
          {"op": "set_alloc_hint", "coll": "1.0_head", "oid": "big", "expected_object_size": 4194304,
           "expected_write_size": 4194304, "flags": 1},
          {"op": "write", "coll": "1.0_head", "oid": "big", "data_file": "big.bin"},
          {"op": "setattrs", "coll": "1.0_head", "oid": "small", "attrs": {"_": "object-info", "snapset": "ss"}},
          {"op": "touch", "coll": "meta", "oid": "pgmeta"},
          {"op": "omap_setheader", "coll": "meta", "oid": "pgmeta", "data": "header"},
          {"op": "omap_setkeys", "coll": "meta", "oid": "pgmeta", "kv": {"k1": "v1", "k2": "v2"}}]},
 {"ops": [{"op": "clone", "coll": "1.0_head", "oid": "small", "dst": "small-clone"},
          {"op": "write", "coll": "1.0_head", "oid": "small", "off": 4096, "data": "overwritten"},
          {"op": "truncate", "coll": "1.0_head", "oid": "big", "size": 3000000}]}]
JSON
"$tool" --path store --set hybridstore_ssd_size=64M --set hybridstore_hdd_size=128M mkfs > /dev/null
"$tool" --path store txn t.json > /dev/null
"$tool" --path store fsck --deep
mkdir -p "$out"
tar -cSzf "$out/store.tar.gz" store
echo "wrote $out/store.tar.gz"
