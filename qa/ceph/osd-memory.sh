#!/usr/bin/env bash
# An OSD in the memory Ceph gives it (issue 57): with osd_memory_target set,
# a hybridstore OSD holding a pool of many small objects keeps its RSS within
# 10% of the target through the fill, reads, a migration pass and a deep
# scrub; its store's holders show in `dump_mempools`; a change of
# osd_memory_target at run time reaches the store.
#
#   CEPH_BUILD=DIR qa/ceph/osd-memory.sh [hybridstore|bluestore|both] [OUTDIR]
#
# For each store (default hybridstore; BlueStore of the same binary is the
# control row): Debian's ceph-mon and ceph-mgr, cephx, one OSD on file
# devices (hybridstore: SSD HS_SSD_SIZE 8G, HDD HS_HDD_SIZE 32G; BlueStore:
# one block file of both), osd_memory_target HS_MEM_TARGET (2G), a pool of
# size 1 and HS_MEM_PGS (32) PGs. Phases, the OSD's VmRSS sampled every 2 s
# throughout:
#   fill     rados bench writes HS_MEM_OBJECTS (1,000,000) objects of
#            HS_MEM_OBJECT_SIZE (4K), 32 in flight;
#   read     rados bench rand for HS_MEM_READ_SECONDS (60);
#   migrate  (hybridstore) the OSD idle until its migrator runs a pass
#            (hybridstore_tier_migrate_idle_sec 20; the counter
#            migration_passes rises), at most HS_MEM_PASS_TIMEOUT (900) s;
#   scrub    every PG deep-scrubbed, clean;
#   retarget (hybridstore) `ceph tell osd.0 config set osd_memory_target` to 3/4
#            of the target (5/4 where 3/4 is below Ceph's minimum, 896 MiB):
#            the OSD log says the store took it.
# Checks: peak RSS of every phase <= 1.1 x target; (hybridstore) the log
# line of the target the store was given at mount; `dump_mempools` has
# bluestore_cache_onode or bluestore_cache_other bytes from the store
# (charged by the adapter) after the read phase.
#
# OUTDIR (default ./osd-memory-<date>) gets REPORT.md (also printed),
# rss.tsv (time, store, phase, RSS in bytes), results.tsv, the mempool
# dumps and the daemons' logs. Exit 0: every check passed; 1: a failure;
# 77: SKIPPED (no CEPH_BUILD, missing tools).
# Environment: HS_MEM_TARGET (2G), HS_MEM_OBJECTS (1000000),
# HS_MEM_OBJECT_SIZE (4K), HS_MEM_PGS (32), HS_MEM_READ_SECONDS (60),
# HS_MEM_PASS_TIMEOUT (900), HS_SSD_SIZE (8G), HS_HDD_SIZE (32G),
# HS_TIMEOUT (300), HS_KEEP=1 keeps the cluster directory.
set -u

which=${1:-hybridstore}
case $which in
both) stores="hybridstore bluestore" ;;
hybridstore | bluestore) stores=$which ;;
-h | --help) ;;  # common.sh prints the header
*) echo "usage: CEPH_BUILD=DIR $0 [hybridstore|bluestore|both] [OUTDIR]" >&2; exit 2 ;;
esac
out=${2:-$PWD/osd-memory-$(date +%Y%m%d-%H%M%S)}
export HS_TIMEOUT=${HS_TIMEOUT:-300} HS_SSD_SIZE=${HS_SSD_SIZE:-8G} HS_HDD_SIZE=${HS_HDD_SIZE:-32G}
# shellcheck source=SCRIPTDIR/common.sh
source "$(dirname "$0")/common.sh"
# shellcheck source=SCRIPTDIR/../standalone/hybridstore-helpers.sh
source "$HS_TOP/qa/standalone/hybridstore-helpers.sh"

HS_MEM_TARGET=${HS_MEM_TARGET:-2G}
HS_MEM_OBJECTS=${HS_MEM_OBJECTS:-1000000}
HS_MEM_OBJECT_SIZE=${HS_MEM_OBJECT_SIZE:-4K}
HS_MEM_PGS=${HS_MEM_PGS:-32}
HS_MEM_READ_SECONDS=${HS_MEM_READ_SECONDS:-60}
HS_MEM_PASS_TIMEOUT=${HS_MEM_PASS_TIMEOUT:-900}
for v in HS_MEM_OBJECTS HS_MEM_PGS HS_MEM_READ_SECONDS HS_MEM_PASS_TIMEOUT; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "$v=${!v}: a positive integer" >&2; exit 2; }
done
for v in HS_MEM_TARGET HS_MEM_OBJECT_SIZE; do
    [[ ${!v} =~ ^[1-9][0-9]*[KMG]?$ ]] || { echo "$v=${!v}: a size (4K, 2G)" >&2; exit 2; }
done
target=$(size_bytes "$HS_MEM_TARGET")
object_bytes=$(size_bytes "$HS_MEM_OBJECT_SIZE")

require_ceph_build ceph-osd
export CEPH_OSD=$CEPH_BUILD/bin/ceph-osd
case " $stores " in
*" hybridstore "*) osd_knows_hybridstore "$CEPH_OSD" || skip "$CEPH_OSD does not know osd_objectstore=hybridstore" ;;
esac
for b in ceph-mon ceph-mgr ceph rados ceph-authtool monmaptool uuidgen jq timeout; do
    command -v "$b" > /dev/null || skip "$b is not installed (make qa-deps)"
done
export HS_DEVICES=file HS_AUTH=cephx

mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
results=$out/results.tsv
printf 'store\tcheck\tresult\tdetail\n' > "$results"
printf 'time\tstore\tphase\trss_bytes\n' > "$out/rss.tsv"
dir=
store=
sampler=
failed=
POOL=mem

record() {
    printf '%s\t%s\t%s\t%s\n' "$store" "$1" "$2" "$3" >> "$results"
    log "$store: $1 $2${3:+ ($3)}"
    [ "$2" = passed ] || failed=1
}

stop_sampler() {
    [ -n "$sampler" ] && kill "$sampler" 2> /dev/null && wait "$sampler" 2> /dev/null
    sampler=
}

cleanup() {
    stop_sampler
    if [ -n "$dir" ] && [ -d "$dir" ]; then
        kill_daemons "$dir" TERM
        sleep 1
        kill_daemons "$dir" KILL
        mkdir -p "$out/$store"
        local f
        for f in "$dir"/*.log "$dir"/ceph.conf; do [ -f "$f" ] && cp "$f" "$out/$store/"; done
        if [ "${HS_KEEP:-}" = 1 ]; then log "kept $dir"; else teardown "$dir"; fi
    fi
    dir=
}
exec 9>&2
trap 'cleanup 2>&9' EXIT
trap 'log "interrupted: tearing down" 2>&9; exit 130' INT TERM

# The phase the sampler labels its readings with.
set_phase() { echo "$1" > "$dir/phase"; log "$store: phase $1"; }

# sample PID: VmRSS of PID every 2 s into rss.tsv until killed.
sample() {
    local pid=$1 kb
    while kb=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2> /dev/null) && [ -n "$kb" ]; do
        printf '%s\t%s\t%s\t%s\n' "$(date +%s)" "$store" "$(cat "$dir/phase")" "$((kb * 1024))" >> "$out/rss.tsv"
        sleep 2
    done
}

peak_of() { awk -F '\t' -v s="$store" -v p="$1" '$2 == s && $3 == p && $4 > m { m = $4 } END { print m + 0 }' "$out/rss.tsv"; }
mib() { echo "$(($1 / 1048576)) MiB"; }

perf_counter() { perf_dump 0 | jq -r --arg c "$1" '.hybridstore[$c] // 0'; }

run_store() {
    store=$1
    export HS_OBJECTSTORE=$store
    local hdd_size=$HS_HDD_SIZE
    [ "$store" = bluestore ] && HS_HDD_SIZE=$(($(size_bytes "$HS_SSD_SIZE") + $(size_bytes "$HS_HDD_SIZE")))
    dir=$(mktemp -d "${TMPDIR:-/tmp}/hs-memory-$store.XXXXXX")
    CEPH_MON=127.0.0.1:$(pick_mon_port 19300) || return 1
    export CEPH_MON
    setup "$dir" || return 1
    conf_set "$dir" osd "osd memory target" "$target"
    # The store reports its capacity tier, rotational, and mClock holds an
    # HDD OSD's scrub to a share of its 315 IOPS default: a deep scrub of
    # 1M objects would take over an hour (234 objects/s measured). The
    # scrub is here for the memory it takes, not its pace.
    conf_set "$dir" osd "osd mclock max capacity iops hdd" 50000
    conf_set "$dir" osd "osd mclock skip benchmark" true
    if [ "$store" = hybridstore ]; then
        conf_set "$dir" osd "hybridstore tier migrate idle sec" 20
        conf_set "$dir" osd "debug hybridstore" 1
    fi
    conf_render "$dir"
    HS_HDD_SIZE=$hdd_size
    log "=== $store: 1 OSD (file devices), osd_memory_target $(mib "$target"), $HS_MEM_OBJECTS objects of $HS_MEM_OBJECT_SIZE"
    echo setup > "$dir/phase"
    run_cluster "$dir" 1 || { fail "$store: cluster did not start"; return 1; }
    create_pool "$POOL" "$HS_MEM_PGS" 1 || return 1
    local pid
    pid=$(daemon_pid "$dir" osd.0) || { fail "no pid for osd.0"; return 1; }
    sample "$pid" &
    sampler=$!

    if [ "$store" = hybridstore ]; then
        if grep -a -q "memory target $target bytes (osd_memory_target)" "$dir/osd.0.log"; then
            record mount-target passed "the store was given $(mib "$target") at mount"
        else
            record mount-target FAILED "no 'memory target $target bytes (osd_memory_target)' line in osd.0.log"
        fi
    fi

    set_phase fill
    local start=$SECONDS secs=$((HS_MEM_OBJECTS / 200 + 600))
    timeout -k 10 $((secs + 120)) rados -p "$POOL" bench "$secs" write -b "$object_bytes" -t 32 \
        --max-objects "$HS_MEM_OBJECTS" --no-cleanup --run-name mem > "$out/$store-fill.txt" 2>&1 ||
        { tail -5 "$out/$store-fill.txt" >&2; fail "rados bench write"; return 1; }
    local written
    written=$(awk '/^Total writes made:/ { print $4 }' "$out/$store-fill.txt")
    log "$store: $written objects written in $((SECONDS - start)) s," \
        "$(awk '/^Average IOPS:/ { print $3 }' "$out/$store-fill.txt") writes/s"

    set_phase read
    timeout -k 10 $((HS_MEM_READ_SECONDS + 120)) rados -p "$POOL" bench "$HS_MEM_READ_SECONDS" rand -t 32 \
        --run-name mem > "$out/$store-read.txt" 2>&1 ||
        { tail -5 "$out/$store-read.txt" >&2; fail "rados bench rand"; return 1; }
    ceph_cli daemon osd.0 dump_mempools > "$out/$store-mempools-read.json" || return 1
    if [ "$store" = hybridstore ]; then
        local charged
        charged=$(jq '[.mempool.by_pool | (.bluestore_cache_onode.bytes // 0), (.bluestore_cache_other.bytes // 0),
                       (.bluestore_alloc.bytes // 0)] | add' "$out/$store-mempools-read.json")
        if [ "${charged:-0}" -gt 0 ]; then
            record mempools passed "$(mib "$charged") of the store's holders in dump_mempools"
        else
            record mempools FAILED "dump_mempools shows no bytes of the store's (bluestore_cache_onode/other, bluestore_alloc)"
        fi

        set_phase migrate
        local passes0 passes deadline=$((SECONDS + HS_MEM_PASS_TIMEOUT))
        passes0=$(perf_counter migration_passes)
        passes=$passes0
        while ((passes == passes0 && SECONDS < deadline)); do
            sleep 5
            passes=$(perf_counter migration_passes)
        done
        if ((passes > passes0)); then
            record migrate passed "a migration pass ran ($(perf_dump 0 | jq -r '.hybridstore.migration_lat.avgtime // "?"') s)"
        else
            record migrate FAILED "no migration pass in ${HS_MEM_PASS_TIMEOUT} s"
        fi
    fi

    set_phase scrub
    local scrub
    if scrub=$(deep_scrub "$POOL" 1800); then record scrub passed "$scrub"; else record scrub FAILED "$scrub"; fi
    ceph_cli daemon osd.0 dump_mempools > "$out/$store-mempools-end.json" || true

    if [ "$store" = hybridstore ]; then
        set_phase retarget
        # Down by a quarter, or up by one where that would go below Ceph's
        # minimum for the option (896 MiB).
        local other=$((target * 3 / 4))
        ((other < 939524096)) && other=$((target * 5 / 4))
        # `ceph tell ... config set`: a value in ceph.conf outranks the
        # mon's database, so `ceph config set` would not reach this OSD.
        if ! ceph_cli tell osd.0 config set osd_memory_target "$other" > "$dir/config-set.out" 2>&1; then
            record retarget FAILED "ceph tell osd.0 config set osd_memory_target $other: $(tr '\n' ' ' < "$dir/config-set.out")"
        elif wait_until 60 "the store takes the new target" \
            grep -a -q "memory target now $other bytes" "$dir/osd.0.log"; then
            record retarget passed "osd_memory_target set to $(mib "$other") at run time reached the store"
        else
            record retarget FAILED "no 'memory target now $other bytes' in osd.0.log within 60 s"
        fi
        sleep 10
    fi
    stop_sampler

    local phase peak worst=0 line=""
    for phase in fill read migrate scrub; do
        peak=$(peak_of "$phase")
        ((peak == 0)) && continue
        line+="$phase $(mib "$peak"), "
        ((peak > worst)) && worst=$peak
    done
    if ((worst * 10 <= target * 11)); then
        record rss passed "peak ${line%, } (limit $(mib $((target * 11 / 10))))"
    else
        record rss FAILED "peak ${line%, } above 1.1 x the target ($(mib $((target * 11 / 10))))"
    fi
    local crashes
    crashes=$(osd_crash_lines "$dir" 1)
    [ -z "$crashes" ] || record alive FAILED "$crashes"
    cleanup
}

for s in $stores; do
    run_store "$s" || { record run FAILED "see the log above"; cleanup; }
done

{
    echo "# An OSD in osd_memory_target $(mib "$target") ($(ceph_build_release), $(date -u +%Y-%m-%dT%H:%MZ))"
    echo
    echo "$HS_MEM_OBJECTS objects of $HS_MEM_OBJECT_SIZE, one OSD on file devices, pool of size 1 and $HS_MEM_PGS PGs."
    echo "Command: \`CEPH_BUILD=$CEPH_BUILD qa/ceph/osd-memory.sh $which\`"
    echo
    echo "| store | check | result | detail |"
    echo "|---|---|---|---|"
    tail -n +2 "$results" | awk -F '\t' '{ printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }'
} > "$out/REPORT.md"
cat "$out/REPORT.md"
[ -z "$failed" ]
