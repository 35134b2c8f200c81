#!/bin/sh
# Every benchmark, one after another; each prints its table. Stores go under
# ${BENCH_DIR:-bench-out} and are removed afterwards.
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/.."
OUT=${BENCH_DIR:-bench-out}
mkdir -p "$OUT"
BIN="$BUILD/bin/hybridstore-bench"
echo "== core: bandwidth against the raw device, group commit"
"$BIN" core --dir "$OUT/core-store" --json "$OUT/core.json"
echo "== rados: write, seq and rand with 4 MiB and 4 KiB objects, 16 in flight, against the raw ceiling"
BENCH_DIR="$OUT" qa/rados-bench.sh "$BUILD"
for sub in alloc tier; do
  if "$BIN" --help 2>/dev/null | grep -q "^  $sub "; then
    echo "== $sub"
    "$BIN" "$sub" --json "$OUT/$sub.json"
  fi
done
rm -rf "$OUT"/*-store
echo "JSON results in $OUT/"
