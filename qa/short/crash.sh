#!/bin/sh
# Crash consistency, short (CI): 20 rounds of a random workload (writes,
# clones, omap, xattrs, renames, removes, collection create/remove/split/
# merge) ended by SIGKILL at a random moment or by an injected power cut;
# each round must mount, pass fsck --deep, and hold exactly transactions 1..p
# with every acknowledged transaction included. `make crash-long` runs 300.
# The base seed is fixed (HS_CRASH_SEED, else HS_QA_SEED, else 1) so that CI
# runs the same workloads every time; HS_CRASH_SEED=random draws one (printed).
# The kill moments are wall-clock times, so a rerun repeats the workloads and
# the power-cut points exactly but not the precise instant of each SIGKILL.
# HS_CRASH_ROUNDS changes the length. Then 8 rounds more (HS_CRASH_SHARD_ROUNDS)
# with almost every extent map stored in shards (inline limit 64 bytes): the
# workload's objects stay under one shard's span, so at the default limit
# few maps reach shards, and moving between inline and sharded under a kill
# is what these rounds check. Then 8 power-cut rounds (HS_CRASH_KEEP_ROUNDS) in
# which the cut destages a random half of each device's cached 4 KiB blocks
# instead of dropping them all (hybridstore_debug_powercut_keep=random): a
# commit must not rely on the write cache keeping its order. All of these
# run on stores made with the defaults, whose RocksDB and journal are in the
# KV file system on the SSD (hybridstore_kv_location=device), where a cut
# drops RocksDB's unflushed writes with the tier's. Then 10 rounds
# (HS_CRASH_DIRKV_ROUNDS) of kills and cuts of a store that keeps them in its
# directory (hybridstore_kv_location=directory, format 3's layout, which
# stores made before the default changed still have). Then 10 rounds
# (HS_CRASH_OFF_ROUNDS) with small overwrites' data staged in RocksDB
# (hybridstore_small_write_journal=off) instead of the journal's record.
# Then 8 rounds (HS_CRASH_RING_ROUNDS) on an SSD tier of 4 KiB units, where
# every small in-place overwrite's data is in the journal's record. Last, 6
# rounds (HS_CRASH_ON_ROUNDS) of those with hybridstore_small_write_journal=on
# (format 7: onode records carry incarnation and version).
set -eu
BUILD=${1:-build}
SEED=${HS_CRASH_SEED:-${HS_QA_SEED:-1}}
echo "crash harness seed: $SEED (reproduce with HS_CRASH_SEED=$SEED $0 $BUILD)"
W=$(mktemp -d "${TMPDIR:-/tmp}/hs-crash.XXXXXX")
set +e
"$BUILD/bin/hybridstore-crashtest" loop --dir "$W" --rounds "${HS_CRASH_ROUNDS:-20}" --mode mixed --seed "$SEED"
rc=$?
if [ $rc -eq 0 ]; then
    rm -rf "$W"
    "$BUILD/bin/hybridstore-crashtest" loop --dir "$W" --rounds "${HS_CRASH_SHARD_ROUNDS:-8}" --mode mixed \
        --seed "$((SEED + 1000))" --set hybridstore_extent_map_inline_max=64
    rc=$?
fi
if [ $rc -eq 0 ]; then
    rm -rf "$W"
    "$BUILD/bin/hybridstore-crashtest" loop --dir "$W" --rounds "${HS_CRASH_KEEP_ROUNDS:-8}" --mode powercut \
        --seed "$((SEED + 2000))" --set hybridstore_debug_powercut_keep=random
    rc=$?
fi
if [ $rc -eq 0 ]; then
    rm -rf "$W"
    "$BUILD/bin/hybridstore-crashtest" loop --dir "$W" --rounds "${HS_CRASH_DIRKV_ROUNDS:-10}" --mode mixed \
        --seed "$((SEED + 3000))" --set hybridstore_kv_location=directory
    rc=$?
fi
if [ $rc -eq 0 ]; then
    # Small overwrites' data staged as deferred records in RocksDB (format 5),
    # the path before the journal carried it by default: kills and torn power cuts.
    rm -rf "$W"
    "$BUILD/bin/hybridstore-crashtest" loop --dir "$W" --rounds "${HS_CRASH_OFF_ROUNDS:-10}" --mode mixed \
        --seed "$((SEED + 4000))" --set hybridstore_small_write_journal=off
    rc=$?
fi
if [ $rc -eq 0 ]; then
    # The SSD tier in 4 KiB units: every small in-place overwrite is then
    # whole journal blocks, so its data rides in the journal's record (the
    # default path; with 256-byte units most of the harness's unaligned
    # writes fall back to D records). Applied late, so that more of them are
    # still in the ring when the process dies (3x the replays of the 20 ms default).
    rm -rf "$W"
    "$BUILD/bin/hybridstore-crashtest" loop --dir "$W" --rounds "${HS_CRASH_RING_ROUNDS:-8}" --mode mixed \
        --seed "$((SEED + 5000))" --set hybridstore_ssd_block_size=4K --set hybridstore_deferred_max_delay_ms=2000
    rc=$?
fi
if [ $rc -eq 0 ]; then
    # Format 7 (docs/small-writes.md step 6): stores made and recovered with
    # onode records of version 3.
    rm -rf "$W"
    "$BUILD/bin/hybridstore-crashtest" loop --dir "$W" --rounds "${HS_CRASH_ON_ROUNDS:-6}" --mode mixed \
        --seed "$((SEED + 6000))" --set hybridstore_small_write_journal=on --set hybridstore_ssd_block_size=4K \
        --set hybridstore_deferred_max_delay_ms=2000
    rc=$?
fi
set -e
if [ $rc -eq 0 ]; then rm -rf "$W"; else echo "crash harness failed; its store and logs are kept in $W" >&2; fi
exit $rc
