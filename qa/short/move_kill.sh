#!/bin/sh
# move-kv killed with SIGKILL at a random moment (docs/kvfs.md 7.3, 8.5):
# each round copies one store, starts `hybridstore-tool move-kv` on it and
# kills it after a random delay within one move's duration. The store must
# then mount (from its directory, or from the SSD once the label pair
# committed), hold exactly what it held (hybridstore-crashtest digest) and
# pass fsck --deep; a store still in its directory must move when asked
# again. A kill leaves the page cache: what this adds to the power cuts of
# move_kv_test is the real process, its locks and its half-renamed
# directory. Seeded (HS_MOVE_KILL_SEED, else HS_QA_SEED, else 1; printed);
# the delays repeat, the instants they land on do not.
# HS_MOVE_KILL_ROUNDS changes the length (50, as docs/kvfs.md 8.5 asks).
set -eu
BUILD=${1:-build}
BIN="$(cd "$BUILD/bin" && pwd)"
TOOL="$BIN/hybridstore-tool"
CT="$BIN/hybridstore-crashtest"
SEED=${HS_MOVE_KILL_SEED:-${HS_QA_SEED:-1}}
ROUNDS=${HS_MOVE_KILL_ROUNDS:-50}
echo "move-kv kill seed: $SEED (reproduce with HS_MOVE_KILL_SEED=$SEED $0 $BUILD)"
W=$(mktemp -d "${TMPDIR:-/tmp}/hs-movekill.XXXXXX")
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL (seed $SEED, round ${round:-none}): $*" >&2; exit 1; }

T="$W/template"
# A directory store (not the default), which move-kv moves.
"$TOOL" --path "$T" --set hybridstore_kv_location=directory --set hybridstore_ssd_size=256M --set hybridstore_hdd_size=1G mkfs >/dev/null
python3 - "$W/t.json" << 'PY'
import json, sys
ops = [{"op": "mkcoll", "coll": "1.0_head"}]
for i in range(200):
    o = "obj%d" % i
    ops.append({"op": "write", "coll": "1.0_head", "oid": o, "off": 0, "data": ("%d-" % i) * (50 + i * 7)})
    ops.append({"op": "setattrs", "coll": "1.0_head", "oid": o, "attrs": {"_": "info-%d" % i}})
    ops.append({"op": "omap_setkeys", "coll": "1.0_head", "oid": o, "kv": {"k%d" % j: "v" * j for j in range(8)}})
json.dump([{"ops": ops}], open(sys.argv[1], "w"))
PY
"$TOOL" --path "$T" txn "$W/t.json" >/dev/null || fail "the template's transaction"
"$CT" digest --path "$T" >"$W/digest" || fail "digest of the template"

copy() { rm -rf "$W/s" && cp -a --sparse=always "$T" "$W/s"; }
# How long one move takes, in milliseconds: the range of the kill delays.
copy
start=$(date +%s%N)
"$TOOL" --path "$W/s" --log-level error move-kv >/dev/null || fail "move-kv of a copy"
span=$((($(date +%s%N) - start) / 1000000))
echo "one move takes $span ms; $ROUNDS rounds"
directory=0
device=0
round=0
while [ "$round" -lt "$ROUNDS" ]; do
  round=$((round + 1))
  delay=$(python3 -c 'import random, sys; print(random.Random(sys.argv[1]).randrange(int(sys.argv[2]) + 1))' \
    "$SEED.$round" "$span")
  copy
  "$TOOL" --path "$W/s" --log-level error move-kv >/dev/null 2>&1 &
  pid=$!
  python3 -c 'import sys, time; time.sleep(int(sys.argv[1]) / 1000)' "$delay"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if "$TOOL" --path "$W/s" show-label 2>/dev/null | grep -q kv_on_device; then
    device=$((device + 1))
  else
    directory=$((directory + 1))
  fi
  "$CT" digest --path "$W/s" >"$W/now" || fail "the store does not mount after a kill at $delay ms"
  cmp -s "$W/digest" "$W/now" || fail "the store changed after a kill at $delay ms"
  "$TOOL" --path "$W/s" fsck --deep >/dev/null || fail "fsck --deep after a kill at $delay ms"
  if ! "$TOOL" --path "$W/s" df | grep -q "rocksdb: on the ssd tier"; then
    "$TOOL" --path "$W/s" --log-level error move-kv >/dev/null || fail "move-kv again after a kill at $delay ms"
    "$CT" digest --path "$W/s" >"$W/now" || fail "mount after moving again"
    cmp -s "$W/digest" "$W/now" || fail "the store changed when moved again"
  fi
done
echo "move-kv kill checks passed: $ROUNDS kills, $directory left the directory store, $device the device store"
