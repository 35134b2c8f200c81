#!/bin/sh
# Every benchmark, one after another; each prints its table. Stores go under
# ${BENCH_DIR:-bench-out} and are removed afterwards.
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/.."
OUT=${BENCH_DIR:-bench-out}
mkdir -p "$OUT"
BIN="$BUILD/bin/hybridstore-bench"
# fio gives the raw figures of the file-backed tiers (make deps installs it);
# without it the bench measures them in process with the same I/O pattern.
FIO=""
command -v fio >/dev/null 2>&1 && FIO=--fio-compare
echo "== compare: the store against the raw device, row by row (file-backed SSD and raw NAND)"
"$BIN" compare --dir "$OUT/compare-store" $FIO --json "$OUT/compare.json"
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
