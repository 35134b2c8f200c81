#!/bin/sh
# Every benchmark, one after another; each prints its table. Stores go under
# ${BENCH_DIR:-bench-out} and are removed afterwards; each benchmark's output
# stays there as NAME.log. At the end, the PASS/FAIL lines of every
# benchmark's "Goals:" block are printed together with a count. A goal not met
# is a result, not an error: the exit status is non-zero only when a benchmark
# itself failed (then with its status, after the goals collected so far).
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/.."
OUT=${BENCH_DIR:-bench-out}
mkdir -p "$OUT"
BIN="$BUILD/bin/hybridstore-bench"
# Line-buffered output through the tee below, so tables appear as they are made.
LINEBUF=""
command -v stdbuf >/dev/null 2>&1 && LINEBUF="stdbuf -oL"
LOGS=""

# The "Goals:" lines of one log, each as "NAME  PASS|FAIL  what".
goals_of() {
  awk -v name="$1" '
    /^Goals:/ { in_goals = 1; next }
    in_goals && /^[ \t]+(PASS|FAIL)[ \t]/ { sub(/^[ \t]+/, ""); printf "%-8s %s\n", name, $0; next }
    in_goals { in_goals = 0 }
  ' "$OUT/$1.log"
}

summary() {
  echo
  echo "== Goals (each benchmark's own PASS/FAIL lines)"
  all=""
  for name in $LOGS; do
    lines=$(goals_of "$name")
    [ -n "$lines" ] && all="$all$lines
"
  done
  if [ -z "$all" ]; then
    echo "  no benchmark printed goals"
    return
  fi
  printf '%s' "$all" | sed 's/^/  /'
  met=$(printf '%s' "$all" | awk '$2 == "PASS" { n++ } END { print n + 0 }')
  missed=$(printf '%s' "$all" | awk '$2 == "FAIL" { n++ } END { print n + 0 }')
  echo "$met goals met, $missed not met"
}

# bench NAME CMD...: runs CMD with its output on the terminal and in
# $OUT/NAME.log; a failing CMD ends the run with its exit status.
bench() {
  name=$1
  shift
  LOGS="$LOGS $name"
  { rc=0; $LINEBUF "$@" || rc=$?; echo "$rc" >"$OUT/.$name.rc"; } | tee "$OUT/$name.log"
  rc=$(cat "$OUT/.$name.rc")
  rm -f "$OUT/.$name.rc"
  if [ "$rc" != 0 ]; then
    summary
    echo "bench: $name failed (exit $rc)" >&2
    exit "$rc"
  fi
}

# fio gives the raw figures of the file-backed tiers (make deps installs it);
# without it the bench measures them in process with the same I/O pattern.
FIO=""
command -v fio >/dev/null 2>&1 && FIO=--fio-compare
echo "== compare: the store against the raw device, row by row (file-backed SSD and raw NAND)"
# $FIO is empty or one word.
# shellcheck disable=SC2086
bench compare "$BIN" compare --dir "$OUT/compare-store" $FIO --json "$OUT/compare.json"
echo "== core: bandwidth against the raw device, group commit"
bench core "$BIN" core --dir "$OUT/core-store" --json "$OUT/core.json"
echo "== rados: write, seq and rand with 4 MiB and 4 KiB objects, 16 in flight, against the raw ceiling"
bench rados env BENCH_DIR="$OUT" qa/rados-bench.sh "$BUILD"
for sub in alloc tier; do
  if "$BIN" --help 2>/dev/null | grep -q "^  $sub "; then
    echo "== $sub"
    bench "$sub" "$BIN" "$sub" --json "$OUT/$sub.json"
  fi
done
rm -rf "$OUT"/*-store
summary
echo "JSON results and logs in $OUT/"
