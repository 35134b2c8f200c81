#!/usr/bin/env bash
# Runs the standalone scripts (qa/standalone/hybridstore/*.sh, or the ones
# named) one after the other and prints a summary: passed, failed, or skipped
# with the reason. Exits 1 if any failed.
#
#   qa/standalone/run-standalone.sh [SCRIPT [TEST_...]]
#   CEPH_OSD=/path/to/ceph-osd qa/standalone/run-standalone.sh
#   CEPH_BUILD=/path/to/ceph/build qa/standalone/run-standalone.sh hybridstore-basic.sh TEST_put_get
#   HS_OBJECTSTORE=bluestore qa/standalone/run-standalone.sh   # the baseline, on any ceph-osd
#
# HS_SCRIPT_TIMEOUT bounds each script (seconds, default 3600).
set -u
here=$(cd "$(dirname "$0")" && pwd)
timeout_s=${HS_SCRIPT_TIMEOUT:-3600}

scripts=()
tests=()
if [ $# -gt 0 ]; then
    scripts=("$here/hybridstore/$(basename "$1")")
    shift
    tests=("$@")
else
    for f in "$here"/hybridstore/*.sh; do scripts+=("$f"); done
fi

results=()
failed=0
for script in "${scripts[@]}"; do
    name=$(basename "$script" .sh)
    [ -f "$script" ] || { results+=("$name|FAILED|0|no such script"); failed=1; continue; }
    log=$(mktemp "${TMPDIR:-/tmp}/hs-standalone-$name.XXXXXX.log")
    echo "--- $name"
    start=$SECONDS
    # On timeout the script gets TERM, and its trap stops its daemons by
    # their pid files and detaches its loop devices.
    timeout --signal=TERM --kill-after=120 "$timeout_s" bash "$script" "${tests[@]}" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    took=$((SECONDS - start))
    case $rc in
    0) results+=("$name|passed|$took|$(grep -E '^[^ ]+: passed' "$log" | tail -1 | sed 's/^[^:]*: //')") ;;
    77) results+=("$name|skipped|$took|$(grep '^SKIPPED:' "$log" | tail -1 | sed 's/^SKIPPED: [^:]*: //')") ;;
    124) results+=("$name|FAILED|$took|timed out after ${timeout_s}s"); failed=1 ;;
    *) results+=("$name|FAILED|$took|exit $rc, see $log"); failed=1 ;;
    esac
    [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || continue
    rm -f "$log"
done

echo
printf '%-24s %-8s %6s  %s\n' SCRIPT RESULT SECONDS DETAIL
for r in "${results[@]}"; do
    IFS='|' read -r name status took detail <<< "$r"
    printf '%-24s %-8s %6s  %s\n' "$name" "$status" "$took" "$detail"
done
exit $failed
