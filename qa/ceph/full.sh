#!/usr/bin/env bash
# Full devices (issue 36, part 4): a cluster filled past its full ratio
# blocks writes cleanly, no OSD asserts or exits on ENOSPC, deletes bring it
# back and writes resume; on hybridstore the SSD tier fills first and new
# objects spill to the HDD with nothing lost. BlueStore of the same ceph-osd
# on the same space is the control.
#
#   CEPH_BUILD=DIR qa/ceph/full.sh [hybridstore|bluestore|both] [OUTDIR]
#
# For each store (default both): Debian's ceph-mon and ceph-mgr, cephx, three
# OSDs of $CEPH_BUILD/bin/ceph-osd on small file devices (hybridstore: SSD
# HS_SSD_SIZE + HDD HS_HDD_SIZE 1G, RocksDB where HS_FULL_KV says: on the
# SSD, `device`, the default, with a 512M SSD; in the data directory,
# `directory`, with a 256M one; BlueStore: one block file of HS_SSD_SIZE +
# HS_HDD_SIZE), a replicated pool of size 3, min_size 2, and
# the cluster's ratios lowered so that the run is short and BlueStore's
# RocksDB keeps room: nearfull 0.70, backfillfull 0.75, full 0.80
# (HS_FULL_RATIO). Objects of 768 KiB (below hybridstore's HDD threshold, so
# placed on the SSD while it has room) with make_payload's deterministic
# content are written one `rados put` at a time, each bounded by
# HS_FULL_PUT_TIMEOUT (20 s), until a put does not complete: then
#   full      `ceph health` has OSD_FULL, and a further put still does not
#             complete (the client waits; nothing is refused with an error
#             that loses data);
#   statfs    every OSD reports its usage (`ceph osd df`: within 5 points
#             of the full ratio or above it, below 100%);
#   spill     (hybridstore) every OSD's SSD tier full to its target and
#             objects on its HDD (perf: ssd_bytes_used, hdd_objects > 0);
#             with RocksDB on the SSD, the kvfs never refused (kvfs_nospace
#             0): the floor kept its room while object data filled the tier;
#   alive     every OSD still running, no crash line in any OSD log;
#   delete    `rados rm --force-full` of the first 40% of the objects clears
#             OSD_FULL (HS_TIMEOUT);
#   resume    five new objects are written and read back;
#   intact    every acknowledged object not deleted reads back as written.
#
# OUTDIR (default ./full-<date>) gets REPORT.md (also printed), results.tsv
# and every daemon's log. Exit 0: every hybridstore check passed (a BlueStore
# failure is reported, and fails the run too); 1: a failure; 77: SKIPPED.
# Environment: HS_FULL_KV (device), HS_SSD_SIZE (512M with device, 256M with
# directory), HS_HDD_SIZE (1G), HS_FULL_RATIO (0.80),
# HS_FULL_PUT_TIMEOUT (20), HS_FULL_MAX_OBJECTS (4000), HS_TIMEOUT (300),
# HS_KEEP=1 keeps the cluster directory.
set -u

which=${1:-both}
case $which in
both) stores="hybridstore bluestore" ;;
hybridstore | bluestore) stores=$which ;;
-h | --help) ;;  # common.sh prints the header
*) echo "usage: CEPH_BUILD=DIR $0 [hybridstore|bluestore|both] [OUTDIR]" >&2; exit 2 ;;
esac
out=${2:-$PWD/full-$(date +%Y%m%d-%H%M%S)}

HS_FULL_KV=${HS_FULL_KV:-device}
case $HS_FULL_KV in
device) ssd_default=512M ;;
directory) ssd_default=256M ;;
*) echo "HS_FULL_KV=$HS_FULL_KV: device or directory" >&2; exit 2 ;;
esac
export HS_TIMEOUT=${HS_TIMEOUT:-300} HS_SSD_SIZE=${HS_SSD_SIZE:-$ssd_default} HS_HDD_SIZE=${HS_HDD_SIZE:-1G}
# shellcheck source=SCRIPTDIR/common.sh
source "$(dirname "$0")/common.sh"
# shellcheck source=SCRIPTDIR/../standalone/hybridstore-helpers.sh
source "$HS_TOP/qa/standalone/hybridstore-helpers.sh"

HS_FULL_RATIO=${HS_FULL_RATIO:-0.80}
HS_FULL_PUT_TIMEOUT=${HS_FULL_PUT_TIMEOUT:-20}
HS_FULL_MAX_OBJECTS=${HS_FULL_MAX_OBJECTS:-4000}
awk -v r="$HS_FULL_RATIO" 'BEGIN { exit !(r ~ /^0\.[0-9]+$/ && r >= 0.5 && r <= 0.95) }' ||
    { echo "HS_FULL_RATIO=$HS_FULL_RATIO: a ratio between 0.5 and 0.95" >&2; exit 2; }
for v in HS_FULL_PUT_TIMEOUT HS_FULL_MAX_OBJECTS; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "$v=${!v}: a positive integer" >&2; exit 2; }
done

require_ceph_build ceph-osd
export CEPH_OSD=$CEPH_BUILD/bin/ceph-osd
case " $stores " in
*" hybridstore "*) osd_knows_hybridstore "$CEPH_OSD" || skip "$CEPH_OSD does not know osd_objectstore=hybridstore" ;;
esac
for b in ceph-mon ceph-mgr ceph rados ceph-authtool monmaptool uuidgen jq timeout python3; do
    command -v "$b" > /dev/null || skip "$b is not installed (make qa-deps)"
done
export HS_DEVICES=file HS_AUTH=cephx

mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
results=$out/results.tsv
printf 'store\tcheck\tresult\tdetail\n' > "$results"
dir=
store=
failed=
release=$(ceph_build_release)
POOL=full
OBJ_SIZE=786432

record() {
    printf '%s\t%s\t%s\t%s\n' "$store" "$1" "$2" "$3" >> "$results"
    log "$store: $1 $2${3:+ ($3)}"
    [ "$2" = passed ] || failed=1
}

cleanup() {
    if [ -n "$dir" ] && [ -d "$dir" ]; then
        kill_daemons "$dir" TERM
        sleep 1
        kill_daemons "$dir" KILL
        mkdir -p "$out/$store"
        local f
        for f in "$dir"/*.log "$dir"/ceph.conf; do [ -f "$f" ] && cp "$f" "$out/$store/"; done
        teardown "$dir"
    fi
    dir=
}
exec 9>&2
trap 'cleanup 2>&9' EXIT
trap 'log "interrupted: tearing down" 2>&9; exit 130' INT TERM

q() { HS_CMD_TIMEOUT=${HS_CMD_TIMEOUT:-60} ceph_cli "$@"; }

health_has() { q health detail -f json | jq -e --arg c "$1" '.checks[$c] != null' > /dev/null; }
not_full() { ! health_has OSD_FULL && q health detail -f json > /dev/null; }

# put NAME: one bounded rados put of NAME's payload; 0 when acknowledged.
put() {
    make_payload "$1" "$OBJ_SIZE" "$dir/payload" || return 2
    timeout -k 5 "$HS_FULL_PUT_TIMEOUT" rados -p "$POOL" put "$1" "$dir/payload" 2> "$dir/put.err"
}

osds_alive() {
    local id n=0
    for id in 0 1 2; do daemon_pid "$dir" "osd.$id" > /dev/null && n=$((n + 1)); done
    echo "$n"
}

run_store() {
    store=$1
    export HS_OBJECTSTORE=$store
    local hdd_size=$HS_HDD_SIZE
    if [ "$store" = bluestore ]; then
        # The same space in one block file.
        HS_HDD_SIZE=$(($(size_bytes "$HS_SSD_SIZE") + $(size_bytes "$HS_HDD_SIZE")))
    fi
    dir=$(mktemp -d "${TMPDIR:-/tmp}/hs-full-$store.XXXXXX")
    CEPH_MON=127.0.0.1:$(pick_mon_port 19100) || return 1
    export CEPH_MON
    setup "$dir" || return 1
    # With RocksDB on the SSD the tier fills around the kvfs: the floor
    # (hybridstore_kvfs_reserve) is what lets RocksDB go on writing once
    # object data took the rest (docs/kvfs.md 2.5).
    [ "$store" = hybridstore ] && conf_set "$dir" osd "hybridstore kv location" "$HS_FULL_KV"

    conf_render "$dir"
    HS_HDD_SIZE=$hdd_size
    log "=== $store: $release, 3 OSDs (file devices), pool $POOL size 3 min_size 2, full ratio $HS_FULL_RATIO"
    run_cluster "$dir" 3 || { fail "$store: cluster did not start"; return 1; }
    local back near
    back=$(awk -v r="$HS_FULL_RATIO" 'BEGIN { printf "%.2f", r - 0.05 }')
    near=$(awk -v r="$HS_FULL_RATIO" 'BEGIN { printf "%.2f", r - 0.10 }')
    if ! q osd set-nearfull-ratio "$near" > /dev/null || ! q osd set-backfillfull-ratio "$back" > /dev/null ||
        ! q osd set-full-ratio "$HS_FULL_RATIO" > /dev/null; then
        fail "setting the full ratios"
        return 1
    fi
    q osd pool create "$POOL" 16 16 replicated > /dev/null || return 1
    q osd pool set "$POOL" size 3 > /dev/null || return 1
    q osd pool set "$POOL" min_size 2 > /dev/null || return 1
    q osd pool application enable "$POOL" rados > /dev/null || return 1
    wait_for_clean "$HS_TIMEOUT" || return 1

    # ---- fill until a put does not complete
    local i=0 acked=0 start=$SECONDS blocked=
    : > "$dir/acked"
    while ((i < HS_FULL_MAX_OBJECTS)); do
        i=$((i + 1))
        if put "obj-$i"; then
            echo "obj-$i" >> "$dir/acked"
            acked=$((acked + 1))
            ((acked % 100 == 0)) && log "$store: $acked objects of 768 KiB written ($((SECONDS - start)) s)" \
                "$(q osd df -f json | jq -r '[.nodes[] | "osd.\(.id) \(.utilization | floor)%"] | join(", ")')"
        else
            blocked="obj-$i ($(tr '\n' ' ' < "$dir/put.err" | tail -c 200))"
            break
        fi
    done
    log "$store: $acked objects acknowledged in $((SECONDS - start)) s; the put of ${blocked:-nothing} did not complete"
    [ -n "$blocked" ] || { record full FAILED "$HS_FULL_MAX_OBJECTS objects fit: nothing filled (raise HS_FULL_MAX_OBJECTS)"; return 1; }

    # ---- full: the flag, writes held, statfs
    wait_until 60 "OSD_FULL" health_has OSD_FULL
    local df util
    df=$(q osd df -f json)
    util=$(echo "$df" | jq -r '[.nodes[] | "osd.\(.id) \(.utilization * 10 | floor / 10)%"] | join(", ")')
    if health_has OSD_FULL; then
        if put "held-1"; then
            record full FAILED "OSD_FULL raised, but a put still completed ($util)"
        else
            record full passed "OSD_FULL after $acked objects; a further put waits (${HS_FULL_PUT_TIMEOUT}s); $util"
        fi
    else
        record full FAILED "no OSD_FULL after a put stopped completing: $(q health detail 2>&1 | head -3 | tr '\n' ' '); $util"
    fi
    local bad_util
    bad_util=$(echo "$df" | jq --argjson r "$HS_FULL_RATIO" '[.nodes[] | select(.utilization < ($r * 100 - 5) or .utilization >= 100 or .kb <= 0)] | length')
    record statfs "$([ "$bad_util" = 0 ] && echo passed || echo FAILED)" \
        "osd df: $(echo "$df" | jq -r '[.nodes[] | "osd.\(.id) \(.kb_used / 1024 | floor) of \(.kb / 1024 | floor) MiB"] | join(", ")')"

    # ---- spill (hybridstore): the SSD at its target, objects on the HDD
    if [ "$store" = hybridstore ]; then
        local id p spill=passed detail=
        for id in 0 1 2; do
            p=$(perf_dump "$id" | jq -c '.hybridstore | {ssd: .ssd_bytes_used, ssd_objects, hdd: .hdd_bytes_used, hdd_objects,
                kvfs: (.kvfs_owned_bytes // 0), kvfs_used: (.kvfs_used_bytes // 0), kvfs_nospace: (.kvfs_nospace // 0)}')
            detail+="osd.$id $p "
            echo "$p" | jq -e '.hdd_objects > 0 and .ssd_objects > 0 and .kvfs_nospace == 0' > /dev/null || spill=FAILED
            if [ "$HS_FULL_KV" = device ]; then
                echo "$p" | jq -e '.kvfs > 0' > /dev/null || { spill=FAILED; detail+="(RocksDB is not on the SSD) "; }
            fi
        done
        record spill "$spill" "$detail"
    fi

    # ---- alive
    local alive crashes
    alive=$(osds_alive)
    crashes=$(osd_crash_lines "$dir" 3 5)
    record alive "$([ "$alive" = 3 ] && [ -z "$crashes" ] && echo passed || echo FAILED)" \
        "$alive of 3 OSDs running; ${crashes:-no crash line}"

    # ---- delete with --force-full until the flag clears
    local n del=0
    n=$(wc -l < "$dir/acked")
    head -n $((n * 4 / 10)) "$dir/acked" > "$dir/deleted"
    while read -r name; do
        timeout 60 rados -p "$POOL" rm "$name" --force-full 2> /dev/null && del=$((del + 1))
    done < "$dir/deleted"
    if wait_until "$HS_TIMEOUT" "OSD_FULL to clear" not_full; then
        record delete passed "$del objects removed with --force-full; OSD_FULL cleared"
    else
        record delete FAILED "$del objects removed; OSD_FULL still set after ${HS_TIMEOUT}s"
    fi

    # ---- resume: new writes, and the held one
    local ok=0
    for i in 1 2 3 4 5; do
        put "resume-$i" && check_object "$POOL" "resume-$i" "$OBJ_SIZE" "$dir" 2> /dev/null && ok=$((ok + 1))
    done
    record resume "$([ $ok = 5 ] && echo passed || echo FAILED)" "$ok of 5 new objects written and read back"

    # ---- intact: every acknowledged object not deleted
    local bad=0 checked=0
    while read -r name; do
        checked=$((checked + 1))
        check_object "$POOL" "$name" "$OBJ_SIZE" "$dir" 2> /dev/null || { bad=$((bad + 1)); log "$name differs"; }
    done < <(tail -n +$(($(wc -l < "$dir/deleted") + 1)) "$dir/acked")
    record intact "$([ $bad = 0 ] && [ $checked -gt 0 ] && echo passed || echo FAILED)" "$bad of $checked acknowledged objects differ"
    alive=$(osds_alive)
    crashes=$(osd_crash_lines "$dir" 3 5)
    record end "$([ "$alive" = 3 ] && [ -z "$crashes" ] && echo passed || echo FAILED)" \
        "$alive of 3 OSDs running; ${crashes:-no crash line}; $((SECONDS - start)) s"
    cleanup
}

for s in $stores; do
    run_store "$s" || { record setup FAILED "the run stopped early (see the log)"; cleanup; }
done

{
    echo "# Full devices"
    echo
    echo "$release; $(date -u +%F). \`qa/ceph/full.sh\` (see its header): SSD $HS_SSD_SIZE + HDD $HS_HDD_SIZE per OSD, RocksDB of hybridstore: $HS_FULL_KV," \
        "full ratio $HS_FULL_RATIO, 768 KiB objects, pool size 3."
    echo
    echo "| store | check | result | detail |"
    echo "|---|---|---|---|"
    tail -n +2 "$results" | awk -F'\t' '{ printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }'
} > "$out/REPORT.md"
cat "$out/REPORT.md"
[ -z "$failed" ] || exit 1
