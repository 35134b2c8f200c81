#!/usr/bin/env bash
# Ceph's own standalone scripts (qa/standalone of the Ceph tree that
# CEPH_BUILD was built from), unmodified, against hybridstore OSDs, and the
# same tests on the BlueStore of the same ceph-osd as the control (issue 36,
# part 2).
#
#   CEPH_BUILD=DIR qa/ceph/ceph-standalone.sh [hybridstore|bluestore|both] [OUTDIR]
#   HS_CEPH_TREE=TREE qa/ceph/ceph-standalone.sh ...     # installed Ceph
#
# With CEPH_BUILD, the build's ceph-osd, ceph-objectstore-tool and plugins,
# and the tree it was built from. Without it (a node with Ceph installed, as
# in a teuthology job: qa/workunits/hybridstore/ceph-standalone.sh), the
# ceph-osd named by CEPH_OSD or found on PATH, the ceph-objectstore-tool
# beside it or on PATH, their own plugin directories, and the scripts of
# HS_CEPH_TREE: a Ceph source tree of the installed release.
#
# The scripts start their daemons through ceph-helpers.sh (run_mon, run_mgr,
# run_osd, activate_osd, objectstore_tool), which call ceph-mon, ceph-mgr,
# ceph-osd and ceph-objectstore-tool by name and clear CEPH_ARGS first. So
# the shim is a directory put first on PATH, nothing inside the tree changes:
#   ceph-osd               the build's, with the store under test as
#                          osd_objectstore (unless the test asked for one:
#                          run_osd_filestore passes --osd-objectstore=filestore)
#                          and the build's plugin, erasure-code and class dirs;
#                          each start is logged, so a test that ran its OSDs on
#                          another store is reported as such, not as a result
#   ceph-objectstore-tool  the build's
#   ceph-mgr               Debian's, on its own mgr modules (the tree's are
#                          for the tree's mgr, which this build does not have)
#   ceph-mon               Debian's; for hybridstore with
#                          mon_debug_no_require_bluestore_for_ec_overwrites
#                          (the monitor allows EC overwrites only on BlueStore
#                          OSDs; hybridstore checksums every block for scrub)
#   ceph, rados, ceph-authtool, ...  Debian's
# Every TEST_ function of every script runs on its own (ceph-helpers' run()
# takes their names), so each gets a row: passed, failed, or not applicable
# with the reason read from the test (its OSDs ran on FileStore; it reads
# BlueStore's key layout with `ceph-kvstore-tool bluestore-kv`).
#
# Scripts (HS_STANDALONE_SCRIPTS, paths under qa/standalone/):
#   scrub/osd-scrub-repair.sh scrub/osd-scrub-snaps.sh scrub/osd-recovery-scrub.sh
#   osd/osd-rep-recov-eio.sh osd/osd-recovery-space.sh osd/osd-backfill-space.sh
#   osd/pg-split-merge.sh osd/osd-dup.sh erasure-code/test-erasure-eio.sh
# HS_STANDALONE_TESTS: only these TEST_ names (space separated); default all.
# HS_TEST_TIMEOUT (1800): seconds per test; on timeout the test's daemons
# are stopped by their pid files (the helpers' teardown) and it fails.
# OUTDIR (default ./ceph-standalone-<date>) gets REPORT.md, results.tsv and
# each test's output. Exit 0: nothing failed; 1: a test failed; 77: SKIPPED
# (no CEPH_BUILD, no tree with qa/standalone, tools missing).
set -u
source "$(dirname "$0")/common.sh"

stores=${1:-both}
case "$stores" in
hybridstore | bluestore) ;;
both) stores="hybridstore bluestore" ;;
*) echo "unknown store '$stores' (hybridstore, bluestore or both)" >&2; exit 2 ;;
esac
out=${2:-$PWD/ceph-standalone-$(date +%Y%m%d-%H%M%S)}

if [ -n "${CEPH_BUILD:-}" ] || [ -z "${HS_CEPH_TREE:-}" ]; then
    require_ceph_build ceph-osd ceph-objectstore-tool
    tree=${HS_CEPH_TREE:-$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$CEPH_BUILD/CMakeCache.txt" 2> /dev/null)}
    osd_bin=$CEPH_BUILD/bin/ceph-osd
    cot_bin=$CEPH_BUILD/bin/ceph-objectstore-tool
    # The build's own ceph-kvstore-tool when it has one: Debian's (another
    # release) once left a 16.2.11 BlueStore OSD unmountable for
    # ceph-objectstore-tool in osd-scrub-snaps.sh.
    kvt_bin=$CEPH_BUILD/bin/ceph-kvstore-tool
    # The build's plugins; Ceph's own defaults point at an installed tree.
    lib=$CEPH_BUILD/lib
    plugin_args="--erasure-code-dir=$lib --plugin-dir=$lib --osd-class-dir=$lib"
else
    tree=$HS_CEPH_TREE
    osd_bin=${CEPH_OSD:-$(command -v ceph-osd)}
    [ -n "$osd_bin" ] && [ -x "$osd_bin" ] || skip "no ceph-osd: set CEPH_BUILD, or CEPH_OSD, or install Ceph"
    cot_bin=$(dirname "$osd_bin")/ceph-objectstore-tool
    [ -x "$cot_bin" ] || cot_bin=$(command -v ceph-objectstore-tool)
    kvt_bin=$(dirname "$osd_bin")/ceph-kvstore-tool
    [ -n "$cot_bin" ] || skip "no ceph-objectstore-tool beside $osd_bin or on PATH"
    plugin_args=""
fi
[ -n "$tree" ] && [ -f "$tree/qa/standalone/ceph-helpers.sh" ] ||
    skip "the Ceph tree '${tree}' (HS_CEPH_TREE, or the CMakeCache of CEPH_BUILD) has no qa/standalone/ceph-helpers.sh"
for b in ceph-mon ceph-mgr ceph rados ceph-authtool jq uuidgen xmlstarlet; do
    command -v "$b" > /dev/null || skip "$b is not installed (make qa-deps)"
done
osd_knows_store() {
    "$osd_bin" --no-mon-config -c /dev/null --log-file /dev/null --osd-objectstore "$1" \
        --show-config-value osd_objectstore 2> /dev/null | grep -qx "$1"
}
osd_knows_store hybridstore || skip "$osd_bin does not know osd_objectstore=hybridstore"
# For the ceph-kvstore-tool shim (osd-scrub-snaps.sh); without it those
# tests are listed as not applicable.
hs_tool=${HYBRIDSTORE_TOOL:-}
[ -z "$hs_tool" ] && [ -x "$HS_TOP/build/bin/hybridstore-tool" ] && hs_tool=$HS_TOP/build/bin/hybridstore-tool
[ -n "$hs_tool" ] && [ -x "$hs_tool" ] || hs_tool=""
[ -x "$kvt_bin" ] || kvt_bin=/usr/bin/ceph-kvstore-tool

scripts=${HS_STANDALONE_SCRIPTS:-"scrub/osd-scrub-repair.sh scrub/osd-scrub-snaps.sh scrub/osd-recovery-scrub.sh osd/osd-rep-recov-eio.sh osd/osd-recovery-space.sh osd/osd-backfill-space.sh osd/pg-split-merge.sh osd/osd-dup.sh erasure-code/test-erasure-eio.sh"}
test_timeout=${HS_TEST_TIMEOUT:-1800}
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
results=$out/results.tsv   # store script test result seconds reason
: > "$results"

# The shim for one store: a bin directory first on PATH.
make_shim() {
    local store=$1 bin=$out/shim-$1/bin
    mkdir -p "$bin"
    cat > "$bin/ceph-osd" << EOF
#!/usr/bin/env bash
# The test's own --osd-objectstore wins (FileStore tests ask for it); the
# store under test otherwise. Logged for the report.
store=$store
for a in "\$@"; do
    case "\$a" in --osd-objectstore=*) store=\${a#--osd-objectstore=} ;; esac
done
echo "\$(date +%s) \$store \$*" >> "\${HS_OSD_START_LOG:-/dev/null}"
exec "$osd_bin" --osd-objectstore="$store" $plugin_args "\$@"
EOF
    cat > "$bin/ceph-objectstore-tool" << EOF
#!/usr/bin/env bash
exec "$cot_bin" "\$@"
EOF
    # The monitor allows EC overwrites only on BlueStore OSDs (FileStore had
    # no data checksums for scrub to check); hybridstore checksums every
    # block, and thrash.sh sets the same option.
    local mon_extra=""
    [ "$store" = bluestore ] || mon_extra="--mon-debug-no-require-bluestore-for-ec-overwrites=true"
    cat > "$bin/ceph-mon" << EOF
#!/usr/bin/env bash
exec /usr/bin/ceph-mon "\$@" $mon_extra
EOF
    cat > "$bin/ceph-mgr" << 'EOF'
#!/usr/bin/env bash
args=()
for a in "$@"; do
    case "$a" in --mgr-module-path=*) ;; *) args+=("$a") ;; esac
done
exec /usr/bin/ceph-mgr "${args[@]}"
EOF
    # osd-scrub-snaps.sh checks the OSD's SnapMapper keys (omap keys of its
    # meta collection) by listing BlueStore's key-value store with
    # `ceph-kvstore-tool bluestore-kv DIR list` and grepping omap lines
    # (prefix p or m). For a hybridstore OSD the shim lists the same omap
    # keys with hybridstore-tool omap-keys, under BlueStore's omap prefix p;
    # every other use goes to the real tool.
    if [ "$store" = hybridstore ] && [ -n "$hs_tool" ]; then
        cat > "$bin/ceph-kvstore-tool" << EOF
#!/usr/bin/env bash
if [ "\$1" = bluestore-kv ] && [ "\$(cat "\$2/type" 2> /dev/null)" = hybridstore ]; then
    echo "\$(date +%s) \$*" >> "\${HS_KV_SHIM_LOG:-/dev/null}"
    [ "\$3" = list ] && [ \$# -eq 3 ] || { echo "ceph-kvstore-tool (hybridstore shim): only 'list' of a hybridstore OSD" >&2; exit 1; }
    "$hs_tool" --path "\$2" --log-level error omap-keys | awk -F'\t' '{print "p\t" \$3}'
    exit \${PIPESTATUS[0]}
fi
exec "$kvt_bin" "\$@"
EOF
    else
        cat > "$bin/ceph-kvstore-tool" << EOF
#!/usr/bin/env bash
exec "$kvt_bin" "\$@"
EOF
    fi
    chmod +x "$bin"/*
    # A test's own --osd-objectstore must come after the shim's default to
    # win: ceph-osd takes the last value of an option.
    echo "$bin"
}

# not_applicable STORE START_LOG TEST_OUTPUT KV_SHIM_LOG: why a test says
# nothing about STORE, or nothing.
not_applicable() {
    local store=$1 starts=$2 output=$3 other
    other=$(awk -v s="$store" '$2 != s {print $2}' "$starts" 2> /dev/null | sort -u | tr '\n' ' ')
    if [ -n "$other" ]; then
        echo "its OSDs ran on ${other% } (the test starts them with run_osd_filestore or its own --osd-objectstore)"
        return
    fi
    if [ "$store" != bluestore ] && grep -q "ceph-kvstore-tool bluestore-kv" "$output" && [ ! -s "$4" ]; then
        echo "it reads BlueStore's key layout (ceph-kvstore-tool bluestore-kv), and no hybridstore-tool was found for the shim"
    fi
}

work=$out/work
mkdir -p "$work"
any_failed=0
if [ -n "${CEPH_BUILD:-}" ]; then
    release=$(ceph_build_release)
else
    release=$("$osd_bin" --version 2> /dev/null | head -1)
fi
log() { echo "$(date +%T) $*"; }
log "Ceph tree $tree, ceph-osd $release; output in $out"
for store in $stores; do
    shim=$(make_shim "$store")
    for script in $scripts; do
        path=$tree/qa/standalone/$script
        if [ ! -f "$path" ]; then
            printf '%s\t%s\t-\tmissing\t0\tnot in this tree\n' "$store" "$script" >> "$results"
            continue
        fi
        tests=$(sed -n 's/^function \(TEST_[A-Za-z0-9_]*\)().*/\1/p' "$path")
        if [ -z "$tests" ]; then
            # Tentacle's osd-dup.sh, for one, kept its file and lost its tests.
            printf '%s\t%s\t-\tnone\t0\tno TEST_ function in this tree\n' "$store" "$script" >> "$results"
            continue
        fi
        for t in $tests; do
            if [ -n "${HS_STANDALONE_TESTS:-}" ] && ! grep -qw -- "$t" <<< "$HS_STANDALONE_TESTS"; then
                continue
            fi
            tdir=$out/$store/$(basename "$script" .sh)
            mkdir -p "$tdir"
            starts=$tdir/$t.osd-starts
            kvlog=$tdir/$t.kv-shim
            : > "$starts"
            : > "$kvlog"
            log "$store $script $t"
            start=$SECONDS
            # ceph-helpers' main() puts "." first on PATH and makes td/ here.
            # No CEPH_LIB: Ceph reads it as every daemon's plugin directory,
            # and Debian's mon must load Debian's erasure-code plugins (the
            # shim's ceph-osd gets the build's).
            (cd "$work" && PATH="$shim:$PATH" CEPH_ROOT=$tree LOCALRUN=yes \
                HS_OSD_START_LOG=$starts HS_KV_SHIM_LOG=$kvlog timeout --signal=TERM --kill-after=120 "$test_timeout" \
                bash "$path" "$t") > "$tdir/$t.log" 2>&1
            rc=$?
            took=$((SECONDS - start))
            why=$(not_applicable "$store" "$starts" "$tdir/$t.log" "$kvlog")
            if [ -n "$why" ]; then
                result="n/a"
            elif [ $rc = 0 ]; then
                result=passed
            else
                result=FAILED
                [ $rc = 124 ] && why="timed out after ${test_timeout}s"
                any_failed=1
                tail -5 "$tdir/$t.log" | sed 's/^/    /'
            fi
            log "  $result ($took s)${why:+: $why}"
            printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$store" "$script" "$t" "$result" "$took" "$why" >> "$results"
            # A test that failed leaves its daemons to the helpers' teardown;
            # anything left by pid file in td/ is stopped before the next.
            for pidf in "$work"/td/*/*.pid; do
                [ -f "$pidf" ] || continue
                pid=$(cat "$pidf")
                [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q ceph- && kill -9 "$pid"
            done
            rm -rf "$work/td"
        done
    done
done

{
    echo "# Ceph's standalone scripts on hybridstore and BlueStore"
    echo
    echo "ceph-osd: $release, tree $tree; Debian's mon and mgr ($(ceph-mon --version 2> /dev/null | awk '{print $3}'))."
    echo "Produced by \`qa/ceph/ceph-standalone.sh\`; every test of every script run on its own."
    echo
    echo "| script | test | store | result | seconds | why not applicable / failure |"
    echo "|---|---|---|---|---|---|"
    awk -F'\t' '{printf "| %s | %s | %s | %s | %s | %s |\n", $2, $3, $1, $4, $5, $6}' "$results"
    echo
    for store in $stores; do
        awk -F'\t' -v s="$store" '$1 == s {n[$4]++} END {printf "%s: %d passed, %d failed, %d not applicable\n", s, n["passed"], n["FAILED"], n["n/a"]}' "$results"
        echo
    done
} > "$out/REPORT.md"
cat "$out/REPORT.md"
exit $any_failed
