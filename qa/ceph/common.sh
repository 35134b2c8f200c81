# shellcheck shell=bash
# Shared by qa/ceph/*.sh: finds the Ceph build that has HybridStore linked in
# (src/tools/ceph-integrate), or reports the script SKIPPED (exit 77), never
# passed, when there is none.
#
#   CEPH_BUILD   a Ceph build directory with bin/ceph-osd, bin/ceph_test_objectstore, ...,
#                or "installed" (below)
HS_SKIP=77
QA_CEPH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The checkout's top, for the scripts that source this file.
# shellcheck disable=SC2034
HS_TOP=$(cd "$QA_CEPH_DIR/../.." && pwd)

# --help / -h of the sourcing script (the positional parameters of a script
# that sources this file are this file's): its header comment, up to `set -u`.
case "${1:-}" in
-h | --help)
    sed -n '2,/^set -u/p' "$0" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//'
    exit 0 ;;
esac

# CEPH_BUILD=installed: the Ceph installed from packages (a packaged build
# with HybridStore, src/tools/ceph-package), for the proofs on an installed
# release. A directory of links stands in for a build directory: bin/ holds
# the installed binaries (/usr/bin), plus ceph_test_objectstore of
# CEPH_TEST_BUILD (a build directory of the same source) when given; its
# CMakeCache.txt names HS_CEPH_TREE, the source tree of that release, where
# the scripts read store_test.cc and qa/standalone.
if [ "${CEPH_BUILD:-}" = installed ]; then
    _shim=$(mktemp -d "${TMPDIR:-/tmp}/hs-installed-ceph.XXXXXX")
    mkdir -p "$_shim/bin"
    for _b in /usr/bin/ceph-osd /usr/bin/ceph-objectstore-tool /usr/bin/ceph-kvstore-tool \
        /usr/bin/ceph-bluestore-tool /usr/bin/ceph-mon /usr/bin/ceph-mgr /usr/bin/ceph_test_rados; do
        [ -x "$_b" ] && ln -s "$_b" "$_shim/bin/"
    done
    if [ -n "${CEPH_TEST_BUILD:-}" ] && [ -x "$CEPH_TEST_BUILD/bin/ceph_test_objectstore" ]; then
        ln -s "$CEPH_TEST_BUILD/bin/ceph_test_objectstore" "$_shim/bin/"
        ln -s "$CEPH_TEST_BUILD/lib" "$_shim/lib"
    fi
    [ -n "${HS_CEPH_TREE:-}" ] && echo "CMAKE_HOME_DIRECTORY:INTERNAL=$HS_CEPH_TREE" > "$_shim/CMakeCache.txt"
    export CEPH_BUILD=$_shim
    unset _shim _b
fi

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

# find_bluestore_tool: CEPH_BLUESTORE_TOOL, else the build's
# ceph-bluestore-tool, else the one on PATH (empty when there is none).
find_bluestore_tool() {
    local t
    for t in "${CEPH_BLUESTORE_TOOL:-}" "$CEPH_BUILD/bin/ceph-bluestore-tool" "$(command -v ceph-bluestore-tool)"; do
        [ -n "$t" ] && [ -x "$t" ] && { echo "$t"; return 0; }
    done
}

# ceph_build_release: the release of the Ceph build, for every report: the
# version its ceph-osd prints, or else the tree's src/ceph_release (found
# through the build's CMakeCache).
ceph_build_release() {
    local v src
    v=$("$CEPH_BUILD/bin/ceph-osd" --version 2> /dev/null | head -1)
    if [ -z "$v" ]; then
        src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$CEPH_BUILD/CMakeCache.txt" 2> /dev/null)
        [ -n "$src" ] && [ -f "$src/src/ceph_release" ] && v="ceph $(tr '\n' ' ' < "$src/src/ceph_release")(tree)"
    fi
    echo "${v:-unknown release}"
}

# osd_crash_lines DIR OSDS [MAX]: the lines of DIR/osd.0.log .. osd.(OSDS-1).log
# that tell of a crash, at most MAX (20) a log, each prefixed by its log's name.
osd_crash_lines() {
    local dir=$1 n=$2 max=${3:-20} id
    for ((id = 0; id < n; id++)); do
        grep -a -n -E 'Caught signal|FAILED ceph_assert|ceph_abort|terminate called|[*]{3} Aborted' \
            "$dir/osd.$id.log" 2> /dev/null | head -"$max" | sed "s|^|osd.$id.log:|"
    done
}

# pg_json POOL: the pool's PGs (Pacific wraps them in pg_stats).
pg_json() { ceph_cli pg ls-by-pool "$1" -f json | jq -c '.pg_stats // .'; }

# deep_scrub POOL [TIMEOUT]: deep-scrub every PG of the pool and wait (at most
# TIMEOUT seconds, 900) until each has one newer than before; prints the
# result, returns 1 unless all clean. Uses $dir for its scratch files.
deep_scrub() {
    local pool=$1 timeout=${2:-900} pgid start=$SECONDS last_issue=$SECONDS n pending
    pg_json "$pool" | jq -r '.[] | "\(.pgid) \(.last_deep_scrub_stamp)"' > "$dir/scrub-before-$pool" || return 1
    n=$(wc -l < "$dir/scrub-before-$pool")
    while read -r pgid _; do ceph_cli pg deep-scrub "$pgid" > /dev/null 2>&1; done < "$dir/scrub-before-$pool"
    while :; do
        # PGs not deep-scrubbed since the request (idle ones: request again
        # every 2 minutes), and PGs scrubbing still.
        pending=$(pg_json "$pool" | jq -r --rawfile before "$dir/scrub-before-$pool" '
            ($before | split("\n") | map(select(length > 0) | split(" ")) | map({key: .[0], value: .[1]}) | from_entries) as $b
            | .[] | if .state | test("scrubbing") then "scrubbing \(.pgid)"
                    elif .last_deep_scrub_stamp == $b[.pgid] then "idle \(.pgid)" else empty end')
        [ -z "$pending" ] && break
        if ((SECONDS - start >= timeout)); then
            echo "deep-scrub timed out after ${timeout}s: $(echo "$pending" | tr '\n' ' ')"
            return 1
        fi
        if ((SECONDS - last_issue >= 120)); then
            for pgid in $(echo "$pending" | awk '$1 == "idle" { print $2 }'); do ceph_cli pg deep-scrub "$pgid" > /dev/null 2>&1; done
            last_issue=$SECONDS
        fi
        sleep 3
    done
    local j incons errs bad listed
    j=$(pg_json "$pool") || return 1
    incons=$(echo "$j" | jq '[.[] | select(.state | test("inconsistent"))] | length')
    errs=$(echo "$j" | jq '[.[] | .stat_sum | (.num_scrub_errors // 0) + (.num_shallow_scrub_errors // 0) + (.num_deep_scrub_errors // 0)] | add // 0')
    bad=$(echo "$j" | jq '[.[] | select(.state != "active+clean")] | length')
    listed=$(rados_cli list-inconsistent-pg "$pool" --format json 2> /dev/null | jq 'length') || listed='?'
    echo "$n/$n deep-scrubbed in $((SECONDS - start)) s, $incons inconsistent, $errs scrub errors, list-inconsistent-pg: $listed"
    [ "$incons" = 0 ] && [ "$errs" = 0 ] && [ "$bad" = 0 ] && [ "$listed" = 0 ]
}
