#!/bin/sh
# Crash consistency, short (CI): 20 rounds of a random workload (writes,
# clones, omap, xattrs, renames, removes, collection create/remove/split/
# merge) ended by SIGKILL at a random moment or by an injected power cut;
# each round must mount, pass fsck --deep, and hold exactly transactions 1..p
# with every acknowledged transaction included. `make crash-long` runs 300.
# HS_CRASH_SEED reproduces a run; HS_CRASH_ROUNDS changes its length.
set -eu
BUILD=${1:-build}
W=$(mktemp -d "${TMPDIR:-/tmp}/hs-crash.XXXXXX")
set +e
# shellcheck disable=SC2086
"$BUILD/bin/hybridstore-crashtest" loop --dir "$W" --rounds "${HS_CRASH_ROUNDS:-20}" --mode mixed \
  ${HS_CRASH_SEED:+--seed "$HS_CRASH_SEED"}
rc=$?
set -e
if [ $rc -eq 0 ]; then rm -rf "$W"; else echo "crash harness failed; its store and logs are kept in $W" >&2; fi
exit $rc
