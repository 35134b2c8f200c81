#!/usr/bin/env bash
# Ceph's own object store conformance suite, ceph_test_objectstore (store_test),
# on hybridstore: every StoreTest and StoreTestSpecificAUSize case of the
# "hybridstore" parameter (index 4 in a Pacific tree: memstore, filestore,
# bluestore, kstore, hybridstore).
#
#   CEPH_BUILD=DIR qa/ceph/store-test.sh [--gtest_filter extra] [WORKDIR]
#
# Prints the pass/fail counts, every failed case, and which cases returned at
# once because they are written for BlueStore only (they report OK in gtest
# without testing anything: they are listed apart, never counted as passes).
set -u
source "$(dirname "$0")/common.sh"
require_ceph_build ceph_test_objectstore

work=${1:-$(mktemp -d "${TMPDIR:-/tmp}/hs-storetest.XXXXXX")}
mkdir -p "$work"
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$CEPH_BUILD/CMakeCache.txt" 2>/dev/null)
store_test_cc=$src/src/test/objectstore/store_test.cc
index=${HS_STORE_TEST_INDEX:-}
if [ -z "$index" ] && [ -f "$store_test_cc" ]; then
    # The parameter's position in the first INSTANTIATE list of store_test.cc.
    index=$(python3 - "$store_test_cc" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
m = re.search(r'INSTANTIATE_TEST_(?:SUITE|CASE)_P\(\s*ObjectStore,\s*StoreTest,\s*::testing::Values\((.*?)\)\);', s, re.S)
names = re.findall(r'"([a-z]+)"', m.group(1)) if m else []
print(names.index("hybridstore") if "hybridstore" in names else "")
PY
)
fi
[ -n "$index" ] || skip "cannot tell hybridstore's parameter index in store_test (set HS_STORE_TEST_INDEX)"

filter="ObjectStore/StoreTest.*/$index:ObjectStore/StoreTestSpecificAUSize.*/$index"
log=$work/store_test.log
echo "ceph_test_objectstore on hybridstore ($(ceph_build_release)): filter $filter, work dir $work"
start=$SECONDS
(
    cd "$work" || exit 1
    # Small device files: each case makes a fresh store.
    CEPH_ARGS="--no-mon-config --log-file $work/ceph.log --debug-hybridstore 5 \
--hybridstore-ssd-size 2G --hybridstore-hdd-size 8G ${CEPH_ARGS:-}" \
        timeout "${HS_STORE_TEST_TIMEOUT:-5400}" "$CEPH_BUILD/bin/ceph_test_objectstore" \
        --gtest_filter="$filter" --gtest_catch_exceptions=0 "${@:2}"
) > "$log" 2>&1
rc=$?
elapsed=$((SECONDS - start))

passed=$(grep -c '^\[       OK \]' "$log")
failed_list=$(grep '^\[  FAILED  \]' "$log" | grep -v 'listed below\|tests, listed' | sed 's/ (.*//' | sort -u)
failed=$(printf '%s' "$failed_list" | grep -c . || true)
# Cases that return at once unless the store is bluestore (or filestore):
# they run in under a millisecond and log nothing of ours.
bluestore_only=$(python3 - "$store_test_cc" <<'PY'
import re, sys
try:
    s = open(sys.argv[1]).read()
except OSError:
    sys.exit(0)
# Each case by its own body (brace-matched): a scan of a fixed span ran
# into the next case and counted StoreTest.Synthetic as BlueStore-only.
for m in re.finditer(r'TEST_P\((\w+),\s*(\w+)\)\s*\{', s):
    depth, i = 1, m.end()
    while depth and i < len(s):
        depth += {"{": 1, "}": -1}.get(s[i], 0)
        i += 1
    body = s[m.end():i][:600]
    only = re.search(r'if\s*\(\s*string\(GetParam\(\)\)\s*!=\s*"(bluestore|filestore)"\)', body)
    if only:
        print("%s.%s (%s only)" % (m.group(1), m.group(2), only.group(1)))
PY
)
# Passes that tested something: OK cases minus the early returns above.
not_applicable=0
while read -r case _; do
    [ -n "$case" ] || continue
    grep -q "^\[       OK \] ObjectStore/${case%%.*}\.${case#*.}/$index " "$log" && not_applicable=$((not_applicable + 1))
done <<< "$bluestore_only"
echo
echo "passed: $((passed - not_applicable)) (plus $not_applicable written for another store)   failed: $failed   time: ${elapsed}s   exit: $rc   log: $log"
if [ -n "$failed_list" ]; then
    echo "failed cases:"
    printf '%s\n' "$failed_list" | sed 's/^\[  FAILED  \] /  /'
fi
if [ -n "$bluestore_only" ]; then
    echo "cases written for another store (they return at once here; not counted as tested):"
    printf '%s\n' "$bluestore_only" | sed 's/^/  /'
fi
[ "$rc" = 0 ] && [ "$failed" = 0 ]
