#!/bin/sh
# The I/O stress checks under ThreadSanitizer (`make tsan`): builds the block
# device batch tests, the fragmented-object tests and the section-state order
# test and the commit journal tests with -DHS_TSAN=ON in their own directory
# (<build>-tsan) and runs their concurrent checks: several threads submitting
# large batches to one device at every ring depth, readers of fragmented
# objects while writers, the deferred writer and the SSD cleaner work,
# section ticks racing transactions, the kvfs's lending beside both (the
# store's and the section allocator's own), and committer lanes writing journal
# records while the committer fills RocksDB, and kvfs writers, renames and
# compactions sharing the kvfs log's group commit. Any report fails the run
# (halt_on_error). Not part of `make test`: the instrumented build alone
# takes long on a small machine.
# Debian's RocksDB is not instrumented; qa/tsan.supp silences it.
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/.."
TSAN_BUILD=${HS_TSAN_BUILD:-$BUILD-tsan}
if [ ! -f "$TSAN_BUILD/build.ninja" ]; then
  cmake -S . -B "$TSAN_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHS_TSAN=ON >/dev/null
fi
cmake --build "$TSAN_BUILD" -j "${JOBS:-$(nproc)}" --target unittest_block_device_batch unittest_conformance_fragmented \
  unittest_sections_state_order unittest_section_lending unittest_commit_journal unittest_kvfs
TSAN_OPTIONS="suppressions=$(pwd)/qa/tsan.supp halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
export TSAN_OPTIONS
HS_TEST_TMPDIR=${HS_TEST_TMPDIR:-$(pwd)/$TSAN_BUILD/test-tmp}
export HS_TEST_TMPDIR
mkdir -p "$HS_TEST_TMPDIR"
set -x
"$TSAN_BUILD/bin/unittest_block_device_batch" \
  --gtest_filter='*ConcurrentLargeBatchesShareTheDevice*:*ShortTransfersAreContinued*:*OverlappingAndRepeated*'
"$TSAN_BUILD/bin/unittest_conformance_fragmented" --gtest_filter='*Readers*'
"$TSAN_BUILD/bin/unittest_conformance_fragmented" --gtest_filter='*Readers*' \
  --hs-set=hybridstore_ssd_kind=nand --hs-set=hybridstore_nand_size=256M
"$TSAN_BUILD/bin/unittest_sections_state_order"
"$TSAN_BUILD/bin/unittest_section_lending" --gtest_filter='*Concurrent*:*WithoutTheLock*'
"$TSAN_BUILD/bin/unittest_commit_journal"
"$TSAN_BUILD/bin/unittest_kvfs" --gtest_filter='*Concurrent*'
set +x
echo "tsan: no reports"
