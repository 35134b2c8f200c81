#!/bin/sh
# Short multi-process checks that run with `make test` (CI). Long soaks have
# their own make targets.
# Every check that randomises takes its seed from HS_QA_SEED (fixed: 1, so a
# failure repeats; each check prints its seed) unless its own variable
# (HS_CRASH_SEED, ...) says otherwise. Each runs under qa/watchdog.py: a check
# that prints nothing for HS_QA_IDLE seconds (300) fails with the stacks of
# its processes instead of hanging until the CI limit.
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/.."
HS_QA_SEED=${HS_QA_SEED:-1}
HS_QA_IDLE=${HS_QA_IDLE:-300}
export HS_QA_SEED HS_QA_IDLE
echo "qa seed $HS_QA_SEED, watchdog: $HS_QA_IDLE s without output fails a check"
for t in qa/short/*.sh; do
  [ -e "$t" ] || continue
  echo "== $t"
  start=$(date +%s)
  python3 qa/watchdog.py --name "$t" -- sh "$t" "$BUILD"
  echo "== $t passed in $(($(date +%s) - start)) s"
done
