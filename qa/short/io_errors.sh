#!/bin/sh
# I/O errors and power cuts through hybridstore-tool's debug options
# (hybridstore_debug_*, see docs/durability-testing.md): an EIO on a data
# write fails that transaction, an EIO on a device flush fails the commit
# with a message saying so; either way nothing of it lands. A power cut at
# any write of a three-transaction file leaves a prefix of the file (never
# part of a transaction) and a store fsck --deep finds clean.
set -eu
BUILD=${1:-build}
BIN="$(cd "$BUILD/bin" && pwd)"
TOOL="$BIN/hybridstore-tool"
CT="$BIN/hybridstore-crashtest"
W=$(mktemp -d "${TMPDIR:-/tmp}/hs-ioerr.XXXXXX")
trap 'rm -rf "$W"' EXIT
S="$W/store"
fail() { echo "FAIL: $*" >&2; exit 1; }
# Every store here keeps RocksDB and the journal in its directory (format 3's
# layout, not the default): the write counts, the first device write and the
# journal's own failure message below assume the tiers' devices carry data
# only. The power cuts of a store on its device: crash.sh and
# unittest_powercut's .kvdev runs.
DIRKV="--set hybridstore_kv_location=directory"
# The extent allocator writes data at transaction time, where these EIO
# checks aim; the SSD sections' staged write-out is checked at the end.
# shellcheck disable=SC2086
"$TOOL" --path "$S" $DIRKV --set hybridstore_ssd_size=64M --set hybridstore_hdd_size=64M \
  --set hybridstore_ssd_allocator=extent mkfs >/dev/null
echo '[{"ops": [{"op": "mkcoll", "coll": "1.0_head"}, {"op": "write", "coll": "1.0_head", "oid": "base", "data": "b"}]}]' >"$W/base.json"
"$TOOL" --path "$S" txn -q "$W/base.json"
"$CT" digest --path "$S" >"$W/before"

cat >"$W/next.json" <<'JSON'
[{"ops": [{"op": "write", "coll": "1.0_head", "oid": "a", "data": "first"},
          {"op": "setattrs", "coll": "1.0_head", "oid": "a", "attrs": {"k": "1"}}]},
 {"ops": [{"op": "write", "coll": "1.0_head", "oid": "b", "data": "second"},
          {"op": "omap_setkeys", "coll": "1.0_head", "oid": "b", "kv": {"x": "2"}}]},
 {"ops": [{"op": "clone", "coll": "1.0_head", "oid": "b", "dst": "c"},
          {"op": "remove", "coll": "1.0_head", "oid": "base"}]}]
JSON
expect_eio() {  # OPTION WORDS
  if "$TOOL" --path "$S" --set "$1" txn "$W/next.json" >/dev/null 2>"$W/err"; then fail "$1: accepted"; fi
  grep -q "$2" "$W/err" || fail "$1: message lacks '$2': $(cat "$W/err")"
  "$CT" digest --path "$S" >"$W/now"
  cmp -s "$W/before" "$W/now" || fail "$1: the failed transaction changed the store"
  "$TOOL" --path "$S" fsck --deep >/dev/null || fail "$1: fsck"
}
expect_eio hybridstore_debug_eio_on_write=1 "transaction 0 failed: device write failed"
expect_eio hybridstore_debug_eio_on_flush=1 "not made durable: flush of ssd device failed"

# Power cuts at every write of the file's run: what survives is a prefix.
cuts=0
seen=""
for at in $(seq 1 24); do
  rm -rf "$W/cut" && cp -a "$S" "$W/cut"
  # Transactions the tool saw durable: all three, or those before the one that failed.
  if "$TOOL" --path "$W/cut" --set hybridstore_debug_powercut_after_writes=$at txn -q "$W/next.json" \
    >/dev/null 2>"$W/err"; then
    acked=3
  else
    acked=$(sed -n 's/^hybridstore-tool: transaction \([0-9]*\) failed.*/\1/p' "$W/err" | head -1)
    acked=${acked:-0}
  fi
  "$TOOL" --path "$W/cut" fsck --deep >/dev/null || fail "power cut at write $at: fsck --deep"
  objs=$("$TOOL" --path "$W/cut" list --coll 1.0_head | sort | tr '\n' ' ')
  case "$objs" in
    "base ") held=0 ;;
    "a base ") held=1 ;;
    "a b base ") held=2 ;;
    "a b c ") held=3 ;;
    *) fail "power cut at write $at left objects '$objs': not a prefix of the file" ;;
  esac
  [ "$held" -ge "$acked" ] || fail "power cut at write $at: $acked transactions were acknowledged, $held survived"
  seen="$seen $held"
  cuts=$((cuts + 1))
done

# SSD sections (the default): small data is staged in RocksDB and written out
# in whole units later. A failed write-out makes the store read-only, loses
# nothing acknowledged, and the next mount replays the staged records. The
# commit journal is off for this run, so that the first device write is the
# write-out's (the journal's own writes are device writes too: next check).
S2="$W/sections"
# shellcheck disable=SC2086
"$TOOL" --path "$S2" $DIRKV --set hybridstore_ssd_size=64M --set hybridstore_hdd_size=64M mkfs >/dev/null
"$TOOL" --path "$S2" txn -q "$W/base.json"
if "$TOOL" --path "$S2" --set hybridstore_commit_journal_size=0 --set hybridstore_debug_eio_on_write=1 \
  txn -q "$W/next.json" >/dev/null 2>"$W/err"; then
  fail "sections: a failed write-out went unreported"
fi
grep -q "read-only" "$W/err" || fail "sections: no read-only message: $(cat "$W/err")"
objs=$("$TOOL" --path "$S2" list --coll 1.0_head | sort | tr '\n' ' ')
[ "$objs" = "a b c " ] || fail "sections: acknowledged transactions lost after the failed write-out: '$objs'"
[ "$("$TOOL" --path "$S2" cat --coll 1.0_head --oid c)" = "second" ] || fail "sections: clone data lost"
"$TOOL" --path "$S2" fsck --deep >/dev/null || fail "sections: fsck --deep after replay"

# The commit journal: its write failing fails the transaction it carried,
# which is never acknowledged (it may survive, whole, from RocksDB's unsynced
# write), and the store turns read-only with a message saying why.
S3="$W/journal"
# shellcheck disable=SC2086
"$TOOL" --path "$S3" $DIRKV --set hybridstore_ssd_size=64M --set hybridstore_hdd_size=64M mkfs >/dev/null
"$TOOL" --path "$S3" txn -q "$W/base.json"
if "$TOOL" --path "$S3" --set hybridstore_debug_eio_on_write=1 txn -q "$W/next.json" >/dev/null 2>"$W/err"; then
  fail "journal: a failed journal write went unreported"
fi
grep -q "transaction 0 failed: not made durable: commit journal write failed" "$W/err" ||
  fail "journal: message: $(cat "$W/err")"
objs=$("$TOOL" --path "$S3" list --coll 1.0_head | sort | tr '\n' ' ')
case "$objs" in
  "base "|"a base ") ;;
  *) fail "journal: after a failed journal write the store holds '$objs'" ;;
esac
"$TOOL" --path "$S3" fsck --deep >/dev/null || fail "journal: fsck --deep"

echo "io error checks passed: $cuts power cuts, transactions surviving each:$seen; sections write-out EIO replayed; journal write EIO"
