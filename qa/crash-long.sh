#!/bin/sh
# Crash consistency, long mode (`make crash-long`): 300 kill/recover rounds
# by default, half SIGKILL at a random moment of up to 3 s of workload, half
# injected power cuts (dropped or torn last write). Prints a line per round
# and a summary: rounds, transactions verified, fsck results.
# HS_CRASH_ROUNDS, HS_CRASH_SEED and HS_CRASH_DIR change the run. The seed is
# random unless HS_CRASH_SEED names one; the harness prints it first and last.
# HS_CRASH_SET="k=v k2=v2" passes store options (e.g. hybridstore_ssd_block_size=4K,
# where every small in-place overwrite rides in the journal's record).
set -eu
BUILD=${1:-build}
SETS=
for kv in ${HS_CRASH_SET:-}; do SETS="$SETS --set $kv"; done
W=${HS_CRASH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/hs-crash-long.XXXXXX")}
set +e
"$BUILD/bin/hybridstore-crashtest" loop --dir "$W" --rounds "${HS_CRASH_ROUNDS:-300}" --mode mixed \
  --max-kill-ms 3000 --seed "${HS_CRASH_SEED:-random}" $SETS
rc=$?
set -e
if [ $rc -eq 0 ]; then rm -rf "$W"; else echo "crash harness failed; its store and logs are kept in $W" >&2; fi
exit $rc
