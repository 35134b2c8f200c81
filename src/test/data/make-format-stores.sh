#!/usr/bin/env bash
# Makes the store fixtures of src/test/engine/format_compat_test.cc with the
# hybridstore-tool of a build, so a later engine is tested on stores an
# earlier one wrote. Run it only to add a fixture for a new format: a
# fixture is the record of what a past release wrote, never remade.
#
#   src/test/data/make-format-stores.sh TOOL OUTDIR [KEY=VALUE]...
#
# KEY=VALUE options go to every mkfs (format 4: hybridstore_kv_location=device
# made the fixture of a store whose RocksDB and journal are on its SSD; its
# SSD is 128 MiB, as 64 MiB cannot hold RocksDB beside object data). Since
# device is the default, a store of the format-3 layout needs
# hybridstore_kv_location=directory, which also brings the SSD back to 64 MiB.
#
# OUTDIR/store.tar.gz (sparse, gzip) holds one store: 128 MiB SSD (64 MiB
# with RocksDB in the directory), 128 MiB HDD; a 12 KiB object on the SSD overwritten in its middle block and
# cloned before that, a 3 MiB HDD object (sequential hint, then truncated),
# attributes, an omap with a header.
#
# Since format 3 it also writes OUTDIR/store-powercut.tar.gz: the same two
# transactions, but the power fails (fault injection, which TOOL provides)
# right after the second one's commit journal record became durable and
# before RocksDB synced its WAL. That store's RocksDB lacks the second
# transaction; only its commit journal holds it, so a later engine must
# replay an older engine's journal. The cut is the first write for which a
# mount of a copy replays exactly one transaction and shows the content of
# store.tar.gz (digests by hybridstore-crashtest, found beside TOOL).
set -eu
[ $# -ge 2 ] || { echo "usage: $0 TOOL OUTDIR [KEY=VALUE]..." >&2; exit 2; }
tool=$(readlink -f "$1")
out=$(readlink -f -m "$2")
shift 2
sets=()
ssd=128M
for kv in "$@"; do
    sets+=(--set "$kv")
    case $kv in
    hybridstore_kv_location=directory) ssd=64M ;;
    hybridstore_kv_location=*) ssd=128M ;;
    esac
done
crashtest=$(dirname "$tool")/hybridstore-crashtest
[ -x "$crashtest" ] || { echo "$0: no $crashtest beside $tool" >&2; exit 2; }
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
mkfs() { "$tool" --path "$1" --set hybridstore_ssd_size=$ssd --set hybridstore_hdd_size=128M "${sets[@]}" mkfs > /dev/null; }
mkfs store
"$tool" --path store txn t.json > /dev/null
"$tool" --path store fsck --deep
want=$("$crashtest" digest --path store)
mkdir -p "$out"
tar -cSzf "$out/store.tar.gz" store
echo "wrote $out/store.tar.gz"

python3 -c 'import json, sys; t = json.load(open("t.json")); [json.dump([x], open(f"t{i + 1}.json", "w")) for i, x in enumerate(t)]'
mkfs first
"$tool" --path first txn t1.json > /dev/null
found=""
for n in $(seq 1 64); do
    rm -rf cut check
    cp -a --sparse=always first cut
    if "$tool" --path cut --log-level error --set hybridstore_debug_powercut_after_writes=$n txn t2.json \
        > /dev/null 2>&1; then
        continue  # the transaction finished before write n: no cut inside it
    fi
    cp -a --sparse=always cut check
    "$tool" --path check --log-level info fsck --deep > check.log 2>&1 || continue
    grep -q "commit journal: replayed 1 transactions" check.log || continue
    [ "$("$crashtest" digest --path check)" = "$want" ] || continue
    found=$n
    break
done
[ -n "$found" ] || { echo "$0: no power-cut point leaves the second transaction in the journal only" >&2; exit 1; }
mv cut store-powercut-src
rm -rf store && mv store-powercut-src store
tar -cSzf "$out/store-powercut.tar.gz" store
echo "wrote $out/store-powercut.tar.gz (power cut at write $found of the second transaction)"
