#!/bin/sh
# End-to-end checks of hybridstore-tool as an operator uses it: every
# command's output and exit code, and that a failing transaction file
# changes nothing.
set -eu
BUILD=${1:-build}
TOOL="$(cd "$BUILD/bin" && pwd)/hybridstore-tool"
W=$(mktemp -d "${TMPDIR:-/tmp}/hs-tool.XXXXXX")
trap 'rm -rf "$W"' EXIT
S="$W/store"
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_fail() { if "$@" >/dev/null 2>"$W/err"; then fail "expected failure: $*"; fi; }

# The defaults' store: RocksDB and the journal on the SSD tier.
"$TOOL" --path "$S" --set hybridstore_ssd_size=256M --set hybridstore_hdd_size=1G mkfs >/dev/null
"$TOOL" --path "$S" mkfs >/dev/null || fail "second mkfs must be harmless"
[ ! -e "$S/db" ] && [ ! -e "$S/journal" ] || fail "the default store has a db or journal in its directory"
"$TOOL" --help | grep -q "txn" || fail "--help lists commands"
"$TOOL" txn --help | grep -q "JSON" || fail "txn --help"

printf 'blob-from-file' > "$W/blob"
cat > "$W/t1.json" <<'JSON'
[{"ops": [{"op": "mkcoll", "coll": "1.0_head"},
          {"op": "write", "coll": "1.0_head", "oid": "a", "off": 0, "data": "text"},
          {"op": "write", "coll": "1.0_head", "oid": "b", "off": 0, "data_b64": "aGVsbG8="},
          {"op": "write", "coll": "1.0_head", "oid": "f", "data_file": "blob"},
          {"op": "setattrs", "coll": "1.0_head", "oid": "a", "attrs": {"k": "v"}},
          {"op": "omap_setkeys", "coll": "1.0_head", "oid": "a", "kv": {"x": "1", "y": "2"}},
          {"op": "omap_setheader", "coll": "1.0_head", "oid": "a", "data": "h"}]},
 {"ops": [{"op": "clone", "coll": "1.0_head", "oid": "a", "dst": "c"},
          {"op": "zero", "coll": "1.0_head", "oid": "c", "off": 0, "len": 2},
          {"op": "truncate", "coll": "1.0_head", "oid": "b", "size": 3},
          {"op": "rename", "coll": "1.0_head", "oid": "f", "dst": "g"},
          {"op": "omap_rmkeys", "coll": "1.0_head", "oid": "c", "keys": ["y"]},
          {"op": "rmattr", "coll": "1.0_head", "oid": "c", "name": "k"}]}]
JSON
"$TOOL" --path "$S" txn "$W/t1.json" | grep -q "applied 2 transactions" || fail "txn"
[ "$("$TOOL" --path "$S" list)" = "1.0_head" ] || fail "list collections"
[ "$("$TOOL" --path "$S" list --coll 1.0_head | sort | tr '\n' ' ')" = "a b c g " ] || fail "list objects"
[ "$("$TOOL" --path "$S" cat --coll 1.0_head --oid a)" = "text" ] || fail "cat a"
[ "$("$TOOL" --path "$S" cat --coll 1.0_head --oid b)" = "hel" ] || fail "cat b (truncate)"
[ "$("$TOOL" --path "$S" cat --coll 1.0_head --oid g)" = "blob-from-file" ] || fail "cat g (data_file, rename)"
"$TOOL" --path "$S" cat --coll 1.0_head --oid c | od -c | head -1 | grep -q '\\0  \\0   x   t' || fail "cat c (zero)"
[ "$("$TOOL" --path "$S" getattr --coll 1.0_head --oid a --name k)" = "v" ] || fail "getattr"
expect_fail "$TOOL" --path "$S" getattr --coll 1.0_head --oid c --name k
"$TOOL" --path "$S" stat --coll 1.0_head --oid a | grep -q '"size": 4' || fail "stat size"
"$TOOL" --path "$S" omap-list --coll 1.0_head --oid a | tr -d ' \n' | grep -q '{"x":"1","y":"2"}' || fail "omap-list a"
"$TOOL" --path "$S" omap-list --coll 1.0_head --oid c | tr -d ' \n' | grep -q '^{"x":"1"}$' || fail "omap-list c"
"$TOOL" --path "$S" stat --coll 1.0_head --oid '{"name":"a","pool":1}' >/dev/null || fail "JSON oid"
# omap-keys: every key of every object, one a line; odd bytes as %XX.
"$TOOL" --path "$S" omap-keys > "$W/keys" || fail "omap-keys"
[ "$(cut -f1,3 "$W/keys" | tr '\t\n' ': ')" = "1.0_head:x 1.0_head:y 1.0_head:x " ] || fail "omap-keys: $(cat "$W/keys")"
cut -f2 "$W/keys" | head -1 | grep -q '"name":"a"' || fail "omap-keys names the object as JSON"
printf '[{"ops": [{"op": "omap_setkeys", "coll": "1.0_head", "oid": "b", "kv": {"sp ace%%": "1"}}]}]' > "$W/t3.json"
"$TOOL" --path "$S" txn "$W/t3.json" >/dev/null || fail "txn t3"
"$TOOL" --path "$S" omap-keys --coll 1.0_head | cut -f3 | grep -qx 'sp%20ace%25' || fail "omap-keys escapes: $("$TOOL" --path "$S" omap-keys)"
expect_fail "$TOOL" --path "$S" stat --coll 1.0_head --oid nothing

# A failing transaction: nothing of it lands, the message names the op.
cat > "$W/t2.json" <<'JSON'
[{"ops": [{"op": "write", "coll": "1.0_head", "oid": "a", "off": 0, "data": "CHANGED"},
          {"op": "touch", "coll": "1.0_head", "oid": "new"},
          {"op": "clone", "coll": "1.0_head", "oid": "missing", "dst": "x"}]}]
JSON
expect_fail "$TOOL" --path "$S" txn "$W/t2.json"
grep -q "op 2 (clone)" "$W/err" || fail "failing op named: $(cat "$W/err")"
[ "$("$TOOL" --path "$S" cat --coll 1.0_head --oid a)" = "text" ] || fail "failed txn changed data"
"$TOOL" --path "$S" list --coll 1.0_head | grep -q '^new$' && fail "failed txn created an object"

# Malformed input: clear error, non-zero exit, no change.
printf '[{"ops": [{"op": "write", "coll": "1.0_head", "oid": "a"' > "$W/bad.json"
expect_fail "$TOOL" --path "$S" txn "$W/bad.json"
grep -q "not valid JSON" "$W/err" || fail "truncated JSON message"
echo '[{"ops":[{"op":"write","coll":"1.0_head","oid":"a","off":-5,"data":"x"}]}]' > "$W/bad2.json"
expect_fail "$TOOL" --path "$S" txn "$W/bad2.json"
grep -q '"off"' "$W/err" || fail "negative offset message"
expect_fail "$TOOL" --path "$S" --set hybridstore_ssd_alloc_unit=banana df
grep -q "hybridstore_ssd_alloc_unit" "$W/err" || fail "bad option named"
expect_fail "$TOOL" --path "$W/nothing" df
expect_fail "$TOOL" df

"$TOOL" --path "$S" df | grep -q "^ssd" || fail "df"
"$TOOL" --path "$S" df | grep -q "rocksdb: on the ssd tier" || fail "df: the default store's RocksDB"
"$TOOL" --path "$S" df --json | grep -q '"objects": 4' || fail "df --json objects"
"$TOOL" --path "$S" fsck --deep | grep -q "clean" || fail "fsck --deep"
"$TOOL" --path "$S" show-label | grep -q '"role": "hdd"' || fail "show-label"
"$TOOL" --path "$S" repair | grep -q "0 changes; fsck afterwards: clean" || fail "repair on a clean store"

# A store of three tiers: the extra one sits between the SSD and the HDD
# everywhere the tool lists tiers, fastest first.
S3="$W/store3"
"$TOOL" --path "$S3" --set hybridstore_tiers=3 --set hybridstore_ssd_size=256M --set hybridstore_tier2_size=256M \
  --set hybridstore_hdd_size=1G mkfs > "$W/mkfs3"
[ "$(awk '{print $1}' "$W/mkfs3" | tail -3 | tr '\n' ' ')" = "ssd: tier2: hdd: " ] || fail "mkfs lists three tiers in order"
"$TOOL" --path "$S3" txn "$W/t1.json" | grep -q "applied 2 transactions" || fail "txn on three tiers"
[ "$("$TOOL" --path "$S3" df | awk 'NR > 1 && NF > 6 && $1 != "rocksdb:" {print $1}' | tr '\n' ' ')" = "ssd tier2 hdd " ] || fail "df on three tiers"
"$TOOL" --path "$S3" df --json | grep -q '"tier_order"' || fail "df --json tier order"
[ "$("$TOOL" --path "$S3" show-label | grep -c '"role"')" = 3 ] || fail "show-label reads three labels"
"$TOOL" --path "$S3" fsck --deep | grep -q "clean" || fail "fsck --deep on three tiers"
# RocksDB on the SSD (hybridstore_kv_location=device): the directory holds
# only links and meta files, and prime-osd-dir makes it again from the
# devices in an empty directory (an OSD's tmpfs after a reboot).
K="$W/kvdev"
mkdir -p "$K/devs"
"$TOOL" --path "$K/osd" --set hybridstore_kv_location=device --set "hybridstore_ssd_path=$K/devs/ssd" \
    --set "hybridstore_hdd_path=$K/devs/hdd" --set hybridstore_ssd_size=256M --set hybridstore_hdd_size=1G \
    mkfs >/dev/null
"$TOOL" --path "$K/osd" txn "$W/t1.json" >/dev/null || fail "kvdev: txn"
[ ! -e "$K/osd/db" ] && [ ! -e "$K/osd/journal" ] || fail "kvdev: a db or journal in the directory"
"$TOOL" --path "$K/osd" df | grep -q "rocksdb: on the ssd tier" || fail "kvdev: df"
rm -rf "$K/osd"
"$TOOL" --path "$K/osd" prime-osd-dir --dev "$K/devs/ssd" > "$W/prime.out" || fail "prime-osd-dir"
grep -q "block.hdd -> $K/devs/hdd" "$W/prime.out" || fail "prime-osd-dir finds the hdd by the label's hint"
[ "$("$TOOL" --path "$K/osd" cat --coll 1.0_head --oid g)" = "blob-from-file" ] || fail "kvdev: object after prime"
"$TOOL" --path "$K/osd" fsck --deep >/dev/null || fail "kvdev: fsck after prime"
# The kvfs from outside (docs/kvfs.md 5.5): read from the SSD of a store not
# mounted, never written; its files exported whole.
"$TOOL" kvfs --help | grep -q "log-dump" || fail "kvfs --help lists log-dump"
for c in ls stat log-dump export; do "$TOOL" kvfs $c --help >/dev/null || fail "kvfs $c --help"; done
md5sum <"$K/devs/ssd" >"$W/kv-before"
"$TOOL" --path "$K/osd" kvfs ls >"$W/kvls" || fail "kvfs ls"
for f in db/CURRENT db/IDENTITY; do grep -q " $f " "$W/kvls" || fail "kvfs ls lacks $f: $(cat "$W/kvls")"; done
grep -q ' db/MANIFEST-' "$W/kvls" || fail "kvfs ls lacks the MANIFEST"
"$TOOL" --path "$K/osd" kvfs stat >"$W/kvstat" || fail "kvfs stat"
grep -q "(current) generation" "$W/kvstat" || fail "kvfs stat: no current slot: $(cat "$W/kvstat")"
grep -q "^journal ring: 16.00 MiB" "$W/kvstat" || fail "kvfs stat: the ring: $(cat "$W/kvstat")"
grep -q "^owned .*, used .*, free " "$W/kvstat" || fail "kvfs stat: owned/used/free"
"$TOOL" --path "$K/osd" kvfs log-dump >"$W/kvlog" || fail "kvfs log-dump"
grep -q "^[0-9]*: INIT uuid" "$W/kvlog" && grep -q ": CREATE db/IDENTITY ino" "$W/kvlog" ||
  grep -q ": UPDATE ino" "$W/kvlog" || fail "kvfs log-dump: $(head -5 "$W/kvlog")"
"$TOOL" --path "$K/osd" kvfs export "$W/kvexport" >"$W/kvexp" || fail "kvfs export"
[ "$(wc -l <"$W/kvexp")" = "$(grep -c ' db/' "$W/kvls")" ] || fail "kvfs export: not every file"
manifest=$(cat "$W/kvexport/db/CURRENT")
[ -s "$W/kvexport/db/$manifest" ] || fail "kvfs export: the MANIFEST CURRENT names ($manifest)"
# Every exported file has the size ls gives it.
awk 'NR > 1 && NF >= 4 && $2 ~ /\// {print $2, $3}' "$W/kvls" | while read -r f size; do
  [ "$(stat -c %s "$W/kvexport/$f")" = "$size" ] || fail "kvfs export: $f is not $size bytes"
done
md5sum <"$K/devs/ssd" | cmp -s - "$W/kv-before" || fail "a kvfs command wrote to the ssd"
"$TOOL" --path "$K/osd" fsck --json >"$W/kvfsck.json" || fail "kvdev: fsck after the kvfs commands"
# The ring as fsck's own mount left it: walked from the tail that mount's
# replay wrote, so no record is left to take, and none is above RocksDB's.
grep -q '"kvfs_orphans": 0' "$W/kvfsck.json" && grep -q '"kvfs_ring_records": 0' "$W/kvfsck.json" &&
  grep -q '"kvfs_ring_walk_end": 0' "$W/kvfsck.json" ||
  fail "kvdev: fsck --json lacks the kvfs rows: $(cat "$W/kvfsck.json")"

# move-kv (docs/kvfs.md 7.3): a directory store's RocksDB and journal onto
# its SSD, kept in the directory as *.format3-moved until the first
# read-write mount; move-kv-rollback undoes it until then, and refuses after.
# A store made with RocksDB in its directory, as before the default changed.
M="$W/move"
"$TOOL" --path "$M" --set hybridstore_kv_location=directory --set hybridstore_ssd_size=256M \
  --set hybridstore_hdd_size=1G mkfs >/dev/null
"$TOOL" --path "$M" txn "$W/t1.json" >/dev/null || fail "move: txn"
[ -e "$M/db/CURRENT" ] && [ -e "$M/journal" ] || fail "hybridstore_kv_location=directory: no db or journal"
"$TOOL" --path "$M" mkfs >/dev/null || fail "mkfs of a directory store under the device default"
"$TOOL" --path "$M" df | grep -q "rocksdb: on the ssd tier" && fail "df of a directory store says on the ssd tier"
expect_fail "$TOOL" --path "$M" kvfs ls
grep -q "this store keeps RocksDB in $M/db, not on the device" "$W/err" || fail "kvfs on a directory store: $(cat "$W/err")"
expect_fail "$TOOL" --path "$W/primed-dir" prime-osd-dir --dev "$M/block.ssd"
grep -q "keeps its RocksDB in its directory" "$W/err" || fail "prime of a directory store: $(cat "$W/err")"
echo 3 > "$M/whoami"
"$TOOL" move-kv --help | grep -q -- "--verify" || fail "move-kv --help"
"$TOOL" move-kv-rollback --help | grep -q "undo move-kv" || fail "move-kv-rollback --help"
expect_fail "$TOOL" --path "$M" move-kv --kvfs-size 100G
grep -q "the move needs .* bytes free on the SSD tier, it has" "$W/err" || fail "move-kv without space: $(cat "$W/err")"
[ -e "$M/db/CURRENT" ] || fail "a refused move-kv moved the store"
"$TOOL" --path "$M" move-kv --verify keys > "$W/move.out" || fail "move-kv"
grep -q "^moved .* (verify: keys, [0-9]* keys)" "$W/move.out" || fail "move-kv output: $(cat "$W/move.out")"
grep -q "meta key whoami now in the ssd label" "$W/move.out" || fail "move-kv imports whoami"
[ ! -e "$M/db" ] && [ -e "$M/db.format3-moved/CURRENT" ] || fail "move-kv keeps the old db aside"
"$TOOL" --path "$M" show-label | grep -q "kv_moved_pending" || fail "show-label: kv_moved_pending after the move"
"$TOOL" --path "$M" move-kv-rollback | grep -q "in its directory again" || fail "move-kv-rollback"
[ -e "$M/db/CURRENT" ] && [ ! -e "$M/db.format3-moved" ] || fail "move-kv-rollback brings the db back"
"$TOOL" --path "$M" df | grep -q "rocksdb: on the ssd tier" && fail "df after the rollback says on the ssd tier"
[ "$("$TOOL" --path "$M" cat --coll 1.0_head --oid g)" = "blob-from-file" ] || fail "object after the rollback"
"$TOOL" --path "$M" move-kv > /dev/null || fail "move-kv after a rollback"
"$TOOL" --path "$M" df | grep -q "rocksdb: on the ssd tier" || fail "df after the move"
[ ! -e "$M/db.format3-moved" ] || fail "the first read-write mount deletes the old db"
[ "$("$TOOL" --path "$M" cat --coll 1.0_head --oid g)" = "blob-from-file" ] || fail "object after the move"
"$TOOL" --path "$M" fsck --deep | grep -q "clean" || fail "fsck --deep after the move"
[ "$("$TOOL" --path "$M" get-label-key -k whoami)" = 3 ] || fail "whoami in the label after the move"
expect_fail "$TOOL" --path "$M" move-kv-rollback
grep -q "can no longer be rolled back" "$W/err" || fail "rollback after a mount: $(cat "$W/err")"
expect_fail "$TOOL" --path "$M" move-kv
grep -q "already" "$W/err" || fail "move-kv of a device store: $(cat "$W/err")"

# Meta keys in a device's label (docs/kvfs.md 5.5): through the store's SSD
# (--path) or on a device directly (--dev, any tier's), each change a new
# label pair with a higher generation that mount then reads.
"$TOOL" set-label-key --help | grep -q -- "--key" || fail "set-label-key --help"
"$TOOL" rm-label-key --help | grep -q -- "--dev" || fail "rm-label-key --help"
"$TOOL" zap --help | grep -q -- "--dev" || fail "zap --help"
generation() { "$TOOL" show-label --dev "$1" | sed -n 's/^ *"generation": \([0-9]*\),*$/\1/p' | head -1; }
g0=$(generation "$S/block.ssd")
"$TOOL" --path "$S" set-label-key -k whoami -v 5 | grep -q "set meta key whoami" || fail "set-label-key --path"
[ "$("$TOOL" --path "$S" get-label-key -k whoami)" = 5 ] || fail "get-label-key --path"
"$TOOL" set-label-key --dev "$S/block.ssd" -k ceph_fsid -v 4f1c | grep -q "in the ssd label of .*generation" ||
  fail "set-label-key --dev"
[ "$(generation "$S/block.ssd")" = $((g0 + 2)) ] || fail "each change writes a new generation"
[ "$("$TOOL" get-label-key --dev "$S/block.ssd" -k ceph_fsid)" = 4f1c ] || fail "get-label-key --dev"
"$TOOL" --path "$S" show-label | grep -q '"whoami": "5"' || fail "show-label prints the meta keys"
"$TOOL" set-label-key --dev "$S/block.hdd" -k note -v on-the-hdd >/dev/null || fail "set-label-key on the hdd"
[ "$("$TOOL" get-label-key --dev "$S/block.hdd" -k note)" = on-the-hdd ] || fail "get-label-key on the hdd"
"$TOOL" rm-label-key --dev "$S/block.ssd" -k ceph_fsid | grep -q "removed meta key ceph_fsid" || fail "rm-label-key"
expect_fail "$TOOL" get-label-key --dev "$S/block.ssd" -k ceph_fsid
grep -q "no meta key 'ceph_fsid'" "$W/err" || fail "get-label-key of a removed key: $(cat "$W/err")"
"$TOOL" --path "$S" rm-label-key -k whoami >/dev/null || fail "rm-label-key --path"
"$TOOL" --path "$S" fsck | grep -q "clean" || fail "fsck after the label changes"
"$TOOL" --path "$S" show-label | grep -q '"state": "intact"' || fail "the pair is intact after the changes"

# zap: both label copies and both kvfs slots zeroed, nothing past the head.
# The store has its RocksDB on the SSD (the default), so there are slots.
Z="$W/zapped"
"$TOOL" --path "$Z" --set hybridstore_ssd_path="$W/zssd" --set hybridstore_hdd_path="$W/zhdd" \
  --set hybridstore_ssd_size=256M --set hybridstore_hdd_size=64M mkfs >/dev/null
"$TOOL" --path "$Z" txn "$W/t1.json" >/dev/null || fail "txn on the store to zap"
H=$("$TOOL" show-label --dev "$W/zhdd" | sed -n 's/^ *"head": \([0-9]*\),*$/\1/p' | head -1)
[ "$H" -ge 65536 ] || fail "the hdd label's head: '$H'"
tail -c +$((H + 1)) "$W/zhdd" | md5sum >"$W/zhdd-tail"
"$TOOL" zap --dev "$W/zssd" --dev "$W/zhdd" >"$W/zap" || fail "zap"
grep -q "^zapped $W/zssd: label of store .*ssd device" "$W/zap" || fail "zap says what it found: $(cat "$W/zap")"
grep -q "^zapped $W/zhdd: .*zeroed bytes 0 to $H " "$W/zap" || fail "zap says what it zeroed: $(cat "$W/zap")"
[ "$(head -c 65536 "$W/zssd" | tr -d '\0' | wc -c)" = 0 ] || fail "zap left bytes in the ssd's head"
tail -c +$((H + 1)) "$W/zhdd" | md5sum | cmp -s - "$W/zhdd-tail" || fail "zap wrote past the head"
expect_fail "$TOOL" show-label --dev "$W/zssd"
grep -q "no hybridstore label" "$W/err" || fail "show-label after zap: $(cat "$W/err")"
"$TOOL" zap --dev "$W/zssd" | grep -q "no label .*zapped anyway" || fail "zap of a zapped device"
rm -rf "$Z"
"$TOOL" --path "$Z" --set hybridstore_ssd_path="$W/zssd" --set hybridstore_hdd_path="$W/zhdd" \
  --set hybridstore_ssd_size=256M --set hybridstore_hdd_size=64M mkfs >/dev/null || fail "mkfs after zap"
"$TOOL" --path "$Z" fsck | grep -q "clean" || fail "fsck of the store made after zap"

echo "tool checks passed"
