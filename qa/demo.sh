#!/bin/sh
# The main job on a fresh machine: a file-backed store under ./demo-store,
# a few thousand mixed-size objects written and verified, usage per tier.
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/.."
exec "$BUILD/bin/hybridstore-bench" demo --dir "${DEMO_DIR:-demo-store}" --objects "${DEMO_OBJECTS:-3000}"
