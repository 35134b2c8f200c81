# Shared by qa/ceph/*.sh: finds the Ceph build that has HybridStore linked in
# (src/tools/ceph-integrate), or reports the script SKIPPED (exit 77), never
# passed, when there is none.
#
#   CEPH_BUILD   a Ceph build directory with bin/ceph-osd, bin/ceph_test_objectstore, ...
HS_SKIP=77
QA_CEPH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HS_TOP=$(cd "$QA_CEPH_DIR/../.." && pwd)

skip() {
    echo "SKIPPED: $*"
    exit "$HS_SKIP"
}

# require_ceph_build BINARY...: every named binary exists in $CEPH_BUILD/bin.
require_ceph_build() {
    [ -n "${CEPH_BUILD:-}" ] || skip "CEPH_BUILD is not set (a Ceph build with HybridStore: see docs/ceph.md)"
    [ -d "$CEPH_BUILD/bin" ] || skip "CEPH_BUILD=$CEPH_BUILD has no bin/ directory"
    local b
    for b in "$@"; do
        [ -x "$CEPH_BUILD/bin/$b" ] || skip "$CEPH_BUILD/bin/$b is missing (build it with src/tools/ceph-integrate)"
    done
}
