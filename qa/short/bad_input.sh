#!/bin/sh
# Bad input through hybridstore-tool, as an operator or a broken disk gives
# it: corrupt labels, truncated, missing, swapped and foreign devices, broken
# or hostile JSON transactions, invalid options. Each must be refused with a
# clear message (the expected words), a non-zero exit and no crash (an exit
# status below 128), and must change nothing: the refused command leaves the
# device bytes as they were, and once the damage is undone the store's
# observable content (hybridstore-crashtest digest: every collection, object,
# byte, xattr and omap entry) and its device bytes equal the snapshot taken
# before, and fsck --deep is clean.
set -eu
BUILD=${1:-build}
BIN="$(cd "$BUILD/bin" && pwd)"
TOOL="$BIN/hybridstore-tool"
CT="$BIN/hybridstore-crashtest"
W=$(mktemp -d "${TMPDIR:-/tmp}/hs-badinput.XXXXXX")
trap 'rm -rf "$W"' EXIT
S="$W/store"
S2="$W/other"
cases=0
# The random data (an object's bytes, garbage JSON) comes from a seed, fixed
# unless HS_BADINPUT_SEED (or HS_QA_SEED) names another.
SEED=${HS_BADINPUT_SEED:-${HS_QA_SEED:-1}}
echo "bad input seed: $SEED (reproduce with HS_BADINPUT_SEED=$SEED)"
fail() { echo "FAIL (seed $SEED): $*" >&2; exit 1; }
# seeded_bytes N: N pseudo-random bytes from the seed and a call counter.
draws=0
seeded_bytes() {
  draws=$((draws + 1))
  python3 -c 'import random, sys; sys.stdout.buffer.write(random.Random(sys.argv[1]).randbytes(int(sys.argv[2])))' \
    "$SEED.$draws" "$1"
}

# refused WORDS CMD...: CMD fails cleanly and its message contains WORDS.
refused() {
  words=$1
  shift
  set +e
  "$@" >"$W/out" 2>"$W/err" </dev/null
  rc=$?
  set -e
  [ $rc -ne 0 ] || fail "accepted: $*"
  [ $rc -lt 128 ] || fail "crashed (exit status $rc): $*"
  grep -q -- "$words" "$W/err" || fail "message of '$*' lacks '$words': $(cat "$W/err")"
  cases=$((cases + 1))
}
devices() { md5sum <"$S/block.ssd"; md5sum <"$S/block.hdd"; }
# Size and modification time (ns): any write through any I/O path changes them.
device_stamps() { stat -c '%n %s %y' "$S/block.ssd" "$S/block.hdd"; }
state() { "$CT" digest --path "$S" && devices; }
# unchanged WHAT: the store holds what it held before WHAT, and fsck --deep is clean.
unchanged() {
  state >"$W/now" || fail "cannot read the store after $1"
  cmp -s "$W/before" "$W/now" || fail "$1 changed the store: $(diff "$W/before" "$W/now")"
  "$TOOL" --path "$S" fsck --deep >/dev/null || fail "fsck --deep after $1"
}
# refused_untouched WORDS CMD...: refused, and the devices were not written meanwhile.
refused_untouched() {
  device_stamps >"$W/dev-before"
  refused "$@"
  device_stamps >"$W/dev-after"
  cmp -s "$W/dev-before" "$W/dev-after" || fail "refused command wrote to a device: $*"
}
# flip FILE OFFSET: invert every bit of one byte (flipping twice restores it).
flip() {
  b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
  # shellcheck disable=SC2059
  printf "$(printf '\\%03o' $((255 - b)))" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}

# $S and $S2 keep RocksDB in their directories (format 3's layout, no longer
# the default): the move-kv and kvfs refusals below need a directory store,
# and a 64 MiB SSD is too small for a kvfs. $K further down is on its device.
SIZES="--set hybridstore_ssd_size=64M --set hybridstore_hdd_size=64M --set hybridstore_kv_location=directory"
# shellcheck disable=SC2086
"$TOOL" --path "$S" $SIZES mkfs >/dev/null
# shellcheck disable=SC2086
"$TOOL" --path "$S2" $SIZES mkfs >/dev/null
seeded_bytes 300000 >"$W/blob"
cat >"$W/data.json" <<'JSON'
[{"ops": [{"op": "mkcoll", "coll": "1.0_head"},
          {"op": "write", "coll": "1.0_head", "oid": "small", "data": "some text"},
          {"op": "setattrs", "coll": "1.0_head", "oid": "small", "attrs": {"_": "v1", "snapset": "s"}},
          {"op": "omap_setkeys", "coll": "1.0_head", "oid": "small", "kv": {"a": "1", "b": "2"}},
          {"op": "omap_setheader", "coll": "1.0_head", "oid": "small", "data": "hdr"},
          {"op": "touch", "coll": "1.0_head", "oid": "big"},
          {"op": "set_alloc_hint", "coll": "1.0_head", "oid": "big", "expected_object_size": 4194304,
           "expected_write_size": 1048576, "flags": 1},
          {"op": "write", "coll": "1.0_head", "oid": "big", "data_file": "blob"}]},
 {"ops": [{"op": "clone", "coll": "1.0_head", "oid": "small", "dst": "copy"}]}]
JSON
"$TOOL" --path "$S" txn -q "$W/data.json"
"$TOOL" --path "$S" df --json | grep -q '"objects": 3' || fail "setup"
state >"$W/before"

echo "labels: flipped bytes, zeroed"
# Two copies, A at 0 and B at 4096 (the label slot of a file): a store is
# refused only when both are damaged; one damaged copy is a warning of fsck.
for dev in block.ssd block.hdd; do
  for off in 0 9 17 18 20 22 23 30 41 60; do
    flip "$S/$dev" $off
    flip "$S/$dev" $((4096 + off))
    refused_untouched "label" "$TOOL" --path "$S" df
    flip "$S/$dev" $off
    flip "$S/$dev" $((4096 + off))
  done
  for copy in A B; do
    off=30
    [ $copy = A ] || off=$((4096 + 30))
    flip "$S/$dev" $off
    "$TOOL" --path "$S" fsck >"$W/out" 2>&1 || fail "fsck with label copy $copy of $dev damaged: $(cat "$W/out")"
    grep -q "warning: .* label copy $copy is damaged" "$W/out" || fail "fsck did not warn of copy $copy: $(cat "$W/out")"
    flip "$S/$dev" $off
    cases=$((cases + 1))
  done
  flip "$S/$dev" 30
  flip "$S/$dev" $((4096 + 30))
  refused_untouched "label" "$TOOL" --path "$S" show-label
  flip "$S/$dev" 30
  flip "$S/$dev" $((4096 + 30))
done
dd if="$S/block.hdd" of="$W/label" bs=4096 count=2 2>/dev/null
dd if=/dev/zero of="$S/block.hdd" bs=4096 count=2 conv=notrunc 2>/dev/null
refused_untouched "no hybridstore label" "$TOOL" --path "$S" fsck
dd if="$W/label" of="$S/block.hdd" bs=4096 count=2 conv=notrunc 2>/dev/null
unchanged "corrupt labels"

echo "devices: truncated, smaller than the label, missing, swapped, foreign, not a device"
cp --sparse=always "$S/block.hdd" "$W/hdd"
for size in 32M 4095 100 0; do
  truncate -s $size "$S/block.hdd"
  if [ $size = 32M ]; then words="truncated or wrong device"; else words="too small to hold a label"; fi
  refused_untouched "$words" "$TOOL" --path "$S" df
  cp --sparse=always "$W/hdd" "$S/block.hdd"
done
mv "$S/block.hdd" "$W/hdd-away"
refused "cannot open device" "$TOOL" --path "$S" df
mkdir "$S/block.hdd"
refused "Is a directory" "$TOOL" --path "$S" df
rmdir "$S/block.hdd"
ln -s /dev/null "$S/block.hdd"
refused "neither a regular file nor a block device" "$TOOL" --path "$S" df
rm "$S/block.hdd"
mv "$W/hdd-away" "$S/block.hdd"
# The two devices of one store, each in the other's place.
mv "$S/block.ssd" "$W/x" && mv "$S/block.hdd" "$S/block.ssd" && mv "$W/x" "$S/block.hdd"
refused_untouched "labelled as the hdd device" "$TOOL" --path "$S" df
mv "$S/block.ssd" "$W/x" && mv "$S/block.hdd" "$S/block.ssd" && mv "$W/x" "$S/block.hdd"
# Devices of two different stores: HDDs swapped between them.
mv "$S/block.hdd" "$W/x" && mv "$S2/block.hdd" "$S/block.hdd" && mv "$W/x" "$S2/block.hdd"
refused_untouched "belongs to store" "$TOOL" --path "$S" df
refused "belongs to store" "$TOOL" --path "$S2" fsck
mv "$S/block.hdd" "$W/x" && mv "$S2/block.hdd" "$S/block.hdd" && mv "$W/x" "$S2/block.hdd"
"$TOOL" --path "$S2" fsck >/dev/null || fail "the other store after the swap back"
unchanged "damaged devices"

echo "JSON transactions: garbage, truncated, hostile"
bad_json() {  # WORDS CONTENT
  printf '%s' "$2" >"$W/bad.json"
  refused "$1" "$TOOL" --path "$S" txn "$W/bad.json"
}
: >"$W/bad.json"
refused "not valid JSON" "$TOOL" --path "$S" txn "$W/bad.json"
seeded_bytes 4096 >"$W/bad.json"
refused "not valid JSON" "$TOOL" --path "$S" txn "$W/bad.json"
# The valid file cut short at several points.
len=$(wc -c <"$W/data.json")
for cut in 1 17 100 $((len / 2)) $((len - 3)); do
  head -c $cut "$W/data.json" >"$W/cut.json"
  refused "not valid JSON" "$TOOL" --path "$S" txn "$W/cut.json"
done
refused "not valid JSON" sh -c "head -c 200 '$W/data.json' | '$TOOL' --path '$S' txn -"
bad_json "not valid JSON" '[{"ops": [{"op": "touch", "coll": "1.0_head", "oid": "x"}]}] trailing'
bad_json "not valid JSON" "$(printf '[{"ops": [{"op": "touch", "coll": "1.0_head", "oid": "\377\376"}]}]')"
bad_json "nests deeper" "$(head -c 5000 /dev/zero | tr '\0' '[')"
bad_json "expected a JSON list" '{"ops": []}'
bad_json "a transaction is an object" '[[1, 2]]'
bad_json "unknown transaction field" '[{"ops": [], "extra": 1}]'
bad_json "unknown op" '[{"ops": [{"op": "format_disk", "coll": "1.0_head"}]}]'
bad_json "unknown field" '[{"ops": [{"op": "touch", "coll": "1.0_head", "oid": "x", "mode": 7}]}]'
bad_json '"off" must be a non-negative integer' '[{"ops": [{"op": "write", "coll": "1.0_head", "oid": "x", "off": "ten", "data": "d"}]}]'
bad_json '"len" must be a non-negative integer' '[{"ops": [{"op": "zero", "coll": "1.0_head", "oid": "x", "off": 0, "len": -1}]}]'
bad_json '"size" must be a non-negative integer' '[{"ops": [{"op": "truncate", "coll": "1.0_head", "oid": "x", "size": 1.5}]}]'
bad_json "not valid JSON" '[{"ops": [{"op": "truncate", "coll": "1.0_head", "oid": "x", "size": 1e999}]}]'
bad_json "not valid base64" '[{"ops": [{"op": "write", "coll": "1.0_head", "oid": "x", "data_b64": "@@@"}]}]'
bad_json "not a regular file" '[{"ops": [{"op": "write", "coll": "1.0_head", "oid": "x", "data_file": "/dev/zero"}]}]'
bad_json "not a regular file" '[{"ops": [{"op": "write", "coll": "1.0_head", "oid": "x", "data_file": "missing"}]}]'
bad_json '"hash" must be a 32-bit' '[{"ops": [{"op": "touch", "coll": "1.0_head", "oid": {"name": "x", "hash": 4294967296}}]}]'
bad_json "not a valid collection name" '[{"ops": [{"op": "mkcoll", "coll": ""}]}]'
# Well-formed, refused by the store: offsets whose end wraps past 2^64.
bad_json "past the largest object size" '[{"ops": [{"op": "write", "coll": "1.0_head", "oid": "small", "off": 18446744073709551615, "data": "xy"}]}]'
bad_json "destination range" '[{"ops": [{"op": "clone_range", "coll": "1.0_head", "oid": "small", "dst": "z", "len": 2, "dst_off": 18446744073709551615}]}]'
bad_json "lies outside the source object" '[{"ops": [{"op": "clone_range", "coll": "1.0_head", "oid": "small", "dst": "z", "src_off": 18446744073709551615, "len": 2}]}]'
unchanged "bad transactions"

echo "options: invalid values, unknown names, broken config files"
refused "below the minimum 4K" "$TOOL" --path "$S" --set hybridstore_ssd_alloc_unit=3K df
refused "hybridstore_ssd_alloc_unit" "$TOOL" --path "$S" --set hybridstore_ssd_alloc_unit=banana df
refused "unknown option 'hybridstore_no_such_thing'" "$TOOL" --path "$S" --set hybridstore_no_such_thing=1 df
refused "key=value" "$TOOL" --path "$S" --set hybridstore_direct_io df
refused "permitted values" "$TOOL" --path "$S" --set hybridstore_io_backend=floppy fsck
refused "hybridstore_rocksdb_options" "$TOOL" --path "$S" --set hybridstore_rocksdb_options=garbage df
refused "below the minimum 0" "$TOOL" --path "$S" --set hybridstore_debug_eio_on_flush=-1 df
refused "not a size" "$TOOL" --path "$S" --set hybridstore_max_object_size=99999999999999999999999 txn "$W/data.json"
refused "bad log level" "$TOOL" --path "$S" --log-level loud df
refused "cannot read config file" "$TOOL" --path "$S" --conf "$W/missing.conf" df
printf '[hybridstore\nx = 1\n' >"$W/bad.conf"
refused "malformed section header" "$TOOL" --path "$S" --conf "$W/bad.conf" df
printf '[hybridstore]\nhybridstore_hdd_alloc_unit = 12345\n' >"$W/bad.conf"
refused "not a power of two" "$TOOL" --path "$S" --conf "$W/bad.conf" df
refused "below the minimum 64M" "$TOOL" --path "$W/new" --set hybridstore_ssd_size=1M mkfs
[ ! -e "$W/new" ] || fail "a refused mkfs created $W/new"
unchanged "bad options"

echo "move-kv: bad --verify and --kvfs-size, a rollback with nothing to roll back"
refused_untouched "--verify must be files, keys or none, not 'bytes'" "$TOOL" --path "$S" move-kv --verify bytes
refused_untouched "--kvfs-size: 'lots' is not a size" "$TOOL" --path "$S" move-kv --kvfs-size lots
refused_untouched "--kvfs-size: '0' is not a size" "$TOOL" --path "$S" move-kv --kvfs-size 0
refused_untouched "keeps its RocksDB in its directory: there is no move to roll back" \
  "$TOOL" --path "$S" move-kv-rollback
refused_untouched "required" "$TOOL" move-kv
[ -e "$S/db/CURRENT" ] && [ ! -e "$S/db.format3-moved" ] || fail "a refused move-kv moved the store"
unchanged "refused moves"

echo "label keys and zap: reserved, too long, too much, missing, in use, v1 labels"
SSD="$S/block.ssd"
refused_untouched "reserved" "$TOOL" set-label-key --dev "$SSD" -k path_block.ssd -v /dev/sdz
refused_untouched "reserved" "$TOOL" --path "$S" set-label-key -k path_block.hdd -v /dev/sdz
refused_untouched "reserved" "$TOOL" rm-label-key --dev "$SSD" -k path_block.ssd
refused_untouched "must not be empty" "$TOOL" set-label-key --dev "$SSD" -k "" -v x
refused_untouched "longer than the 64" "$TOOL" set-label-key --dev "$SSD" -k "$(printf 'k%.0s' $(seq 65))" -v x
refused_untouched "more than the 1024" "$TOOL" set-label-key --dev "$SSD" -k big -v "$(printf 'v%.0s' $(seq 1025))"
refused_untouched "no meta key 'nosuch'" "$TOOL" rm-label-key --dev "$SSD" -k nosuch
refused_untouched "no meta key 'nosuch'" "$TOOL" --path "$S" rm-label-key -k nosuch
refused_untouched "no meta key 'nosuch'" "$TOOL" get-label-key --dev "$SSD" -k nosuch
refused_untouched "--dev DEV or --path DIR" "$TOOL" set-label-key -k a -v b
refused_untouched "required" "$TOOL" set-label-key --dev "$SSD" -k a
refused_untouched "required" "$TOOL" zap
refused "does not exist" "$TOOL" set-label-key --dev "$W/missing" -k a -v b
refused "does not exist" "$TOOL" zap --dev "$W/missing"
[ ! -e "$W/missing" ] || fail "a refused command created $W/missing"
refused_untouched "does not exist; nothing zapped" "$TOOL" zap --dev "$SSD" --dev "$W/missing"
refused_untouched "no hybridstore label" "$TOOL" set-label-key --dev "$W/blob" -k a -v b
# A device in use: another process holds the lock a mount takes.
python3 - "$SSD" "$W/locked" <<'PY' &
import fcntl, os, struct, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
F_OFD_SETLK = 37  # Linux, every architecture
fcntl.fcntl(fd, F_OFD_SETLK, struct.pack("=hhxxxxqqixxxx", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
open(sys.argv[2], "w").close()
time.sleep(120)
PY
holder=$!
for _ in $(seq 100); do [ -e "$W/locked" ] && break; sleep 0.1; done
[ -e "$W/locked" ] || fail "the lock holder did not start"
refused_untouched "in use" "$TOOL" set-label-key --dev "$SSD" -k a -v b
refused_untouched "in use" "$TOOL" --path "$S" set-label-key -k a -v b
refused_untouched "in use" "$TOOL" rm-label-key --dev "$SSD" -k a
refused_untouched "in use" "$TOOL" zap --dev "$S/block.hdd" --dev "$SSD"
kill "$holder"
wait "$holder" 2>/dev/null || true
unchanged "refused label changes"
# A format-3 store's v1 labels have no meta map: refused, not upgraded.
F3="$W/fmt3"
mkdir "$F3"
tar -C "$F3" -xzf "$(dirname "$0")/../../src/test/data/format3-20261129/store.tar.gz"
md5sum <"$F3/store/block.ssd" >"$W/f3-before"
refused "record version 1" "$TOOL" set-label-key --dev "$F3/store/block.ssd" -k whoami -v 1
refused "record version 1" "$TOOL" --path "$F3/store" set-label-key -k whoami -v 1
md5sum <"$F3/store/block.ssd" | cmp -s - "$W/f3-before" || fail "a refused key change wrote to a v1 label"
# A label with no room left: the key that would not fit is refused.
i=0
while "$TOOL" set-label-key --dev "$SSD" -k "fill$i" -v "$(printf 'f%.0s' $(seq 1024))" >/dev/null 2>"$W/err"; do
  i=$((i + 1))
  [ $i -lt 8 ] || fail "eight 1 KiB values fitted in a 4 KiB label"
done
grep -q "would not fit" "$W/err" || fail "a full label: $(cat "$W/err")"
refused_untouched "would not fit" "$TOOL" set-label-key --dev "$SSD" -k "fill$i" -v "$(printf 'f%.0s' $(seq 1024))"
while [ $i -gt 0 ]; do
  i=$((i - 1))
  "$TOOL" rm-label-key --dev "$SSD" -k "fill$i" >/dev/null || fail "rm-label-key fill$i"
done
"$TOOL" --path "$S" fsck --deep >/dev/null || fail "fsck --deep after the label was filled and emptied"

echo "kvfs: a directory store, no store, no OUTDIR, a device in use, both kvfs slots damaged"
K="$W/kvdev"
"$TOOL" --path "$K" --set hybridstore_kv_location=device --set hybridstore_ssd_size=256M \
    --set hybridstore_hdd_size=1G mkfs >/dev/null
KSSD="$K/block.ssd"
md5sum <"$KSSD" >"$W/k-before"
refused_untouched "this store keeps RocksDB in $S/db, not on the device" "$TOOL" --path "$S" kvfs ls
refused "no store at $W/nostore" "$TOOL" --path "$W/nostore" kvfs stat
[ ! -e "$W/nostore" ] || fail "a refused kvfs command created $W/nostore"
refused "--path DIR is required" "$TOOL" kvfs ls
refused "outdir is required" "$TOOL" --path "$K" kvfs export
refused "A subcommand is required" "$TOOL" --path "$K" kvfs
python3 - "$KSSD" "$W/klocked" <<'PY' &
import fcntl, os, struct, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
F_OFD_SETLK = 37  # Linux, every architecture
fcntl.fcntl(fd, F_OFD_SETLK, struct.pack("=hhxxxxqqixxxx", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
open(sys.argv[2], "w").close()
time.sleep(120)
PY
holder=$!
for _ in $(seq 100); do [ -e "$W/klocked" ] && break; sleep 0.1; done
[ -e "$W/klocked" ] || fail "the lock holder did not start"
refused "is in use: a mount holds it" "$TOOL" --path "$K" kvfs ls
refused "is in use: a mount holds it" "$TOOL" --path "$K" kvfs export "$W/kexp"
[ ! -e "$W/kexp" ] || fail "a refused export created $W/kexp"
kill "$holder"
wait "$holder" 2>/dev/null || true
# The kvfs's superblock slots sit after the label's two copies (4 KiB each).
flip "$KSSD" 8212
flip "$KSSD" 12308
md5sum <"$KSSD" >"$W/k-flipped"
refused "the KV file system" "$TOOL" --path "$K" kvfs stat
refused "the KV file system" "$TOOL" --path "$K" kvfs log-dump
md5sum <"$KSSD" | cmp -s - "$W/k-flipped" || fail "a refused kvfs command wrote to the ssd"
flip "$KSSD" 8212
flip "$KSSD" 12308
md5sum <"$KSSD" | cmp -s - "$W/k-before" || fail "the ssd is not what it was after the flips were undone"
"$TOOL" --path "$K" kvfs stat >/dev/null || fail "kvfs stat once the slots are whole again"
"$TOOL" --path "$K" fsck --deep >/dev/null || fail "fsck --deep of the device store after the kvfs cases"

echo "raw NAND with RocksDB on it: a configuration that contradicts the label"
N="$W/nandkv"
"$TOOL" --path "$N" --set hybridstore_kv_location=device --set hybridstore_ssd_kind=nand \
    --set hybridstore_nand_size=256M --set hybridstore_hdd_size=1G mkfs >/dev/null
md5sum <"$N/block.ssd" >"$W/n-before"
refused "hybridstore_nand_page_size is 4096 in the configuration, but the label of $N/block.ssd says the device was made with 2048" \
  "$TOOL" --path "$N" --set hybridstore_nand_page_size=4K fsck
refused "hybridstore_ftl_policy is ubi in the configuration" "$TOOL" --path "$N" --set hybridstore_ftl_policy=ubi kvfs ls
refused "meta key 'mkfs.hybridstore_nand_size' is reserved" \
  "$TOOL" --path "$N" set-label-key -k mkfs.hybridstore_nand_size -v 1G
refused "meta key 'mkfs.hybridstore_ftl_policy' is reserved" \
  "$TOOL" rm-label-key --dev "$N/block.ssd" -k mkfs.hybridstore_ftl_policy
md5sum <"$N/block.ssd" | cmp -s - "$W/n-before" || fail "a refused command wrote to the NAND image"
# The label commands find the label behind the FTL.
"$TOOL" --path "$N" show-label | grep -q '"device_kind": "nand"' || fail "show-label does not read the NAND label"
[ "$("$TOOL" get-label-key --dev "$N/block.ssd" -k mkfs.hybridstore_nand_page_size)" = 2048 ] ||
  fail "get-label-key --dev does not read the NAND label"
# No NAND option at all: the device and its label say what it is.
"$TOOL" --path "$N" fsck --deep >/dev/null || fail "fsck --deep of the NAND device store from its label"

echo "bad input checks passed: $cases refused cleanly, nothing changed"
