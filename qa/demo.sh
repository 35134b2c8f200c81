#!/bin/sh
# The main job on a fresh machine: a file-backed store under ./demo-store
# with the embedded defaults, a mixed-size write, a verified rand read-back
# and a mixed tiering run (hybridstore-bench demo), then the usage per tier,
# the perf counter deltas and a plotted report under ./demo-report.
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/.."
start=$(date +%s)
"$BUILD/bin/hybridstore-bench" demo --dir "${DEMO_DIR:-demo-store}" --report "${DEMO_REPORT:-demo-report}"
echo "demo took $(( $(date +%s) - start )) s"
