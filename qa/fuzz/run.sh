#!/bin/sh
# Runs each libFuzzer target for SECONDS from its seed corpus
# (qa/fuzz/corpus/<target>, plus the dictionary qa/fuzz/<target>.dict if
# any) and prints executions per target. New inputs go to a scratch
# directory, never into the committed corpus. A crash, a leak, a sanitizer
# report or a timeout fails the run and keeps the input that caused it.
# Usage: qa/fuzz/run.sh FUZZ_BUILD_DIR SECONDS [SEED]   (make fuzz; qa/short/fuzz.sh)
# SEED is libFuzzer's -seed (0 or none: libFuzzer draws one); each target's
# seed is printed in the summary. Runs are cut by time, so the same seed
# repeats the same inputs only as far as the slower run got.
set -eu
B=$(cd "$1" && pwd)
SECS=$2
SEED=${3:-0}
cd "$(dirname "$0")/../.."
W=$(mktemp -d "${TMPDIR:-/tmp}/hs-fuzz.XXXXXX")
failed=""
printf '%-10s %8s %12s %10s %8s %11s  %s\n' target seconds executions "exec/s" corpus seed result >"$W/summary"
for t in onode label txn_json kvfs journal heat; do
  mkdir -p "$W/$t"
  dict=""
  [ -f "qa/fuzz/$t.dict" ] && dict="-dict=qa/fuzz/$t.dict"
  echo "fuzzing $t for $SECS s"
  set +e
  # shellcheck disable=SC2086
  "$B/bin/fuzz_$t" -seed="$SEED" -max_total_time="$SECS" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$W/$t-" $dict "$W/$t" "qa/fuzz/corpus/$t" >"$W/$t.log" 2>&1
  rc=$?
  set -e
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$W/$t.log")
  rate=$(awk '/stat::average_exec_per_sec/ {print $2}' "$W/$t.log")
  used=$(sed -n 's/^INFO: Seed: \([0-9]*\).*/\1/p' "$W/$t.log" | head -1)
  corpus=$(($(ls "$W/$t" | wc -l) + $(ls "qa/fuzz/corpus/$t" | wc -l)))
  if [ $rc -eq 0 ]; then result=ok; else result="FAILED (exit $rc)"; failed="$failed $t"; fi
  printf '%-10s %8s %12s %10s %8s %11s  %s\n' "$t" "$SECS" "${execs:-?}" "${rate:-?}" "$corpus" "${used:-?}" "$result" \
    >>"$W/summary"
  if [ $rc -ne 0 ]; then
    echo "fuzz_$t failed; the end of its log:" >&2
    tail -40 "$W/$t.log" >&2
  fi
done
cat "$W/summary"
if [ -n "$failed" ]; then
  echo "fuzzing failed for:$failed; logs and crashing inputs are kept in $W" >&2
  exit 1
fi
rm -rf "$W"
