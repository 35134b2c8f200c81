#!/usr/bin/env bash
# The cluster proof of the Ceph adapter, on 127.0.0.1: Debian's ceph-mon and
# ceph-mgr, cephx, and three OSDs of the ceph-osd built with HybridStore, each
# on its own SSD+HDD pair (loop devices, the SSD marked rotational=0; plain
# files without root).
#
#   CEPH_BUILD=DIR qa/ceph/cluster.sh [hybridstore|bluestore|both] [REPORT.md]
#
# For each store asked for (default both: hybridstore, then BlueStore built
# into the same ceph-osd, block on the HDD and block.db on the SSD of the same
# kind of devices):
#   - the cluster comes up and every PG of a pool of 64 goes active+clean;
#   - rados bench write / seq / rand, 4 MiB and 4 KiB objects, 16 in flight,
#     HS_BENCH_SECONDS (30) each;
#   - an RBD image created (the OSDs load the tree's cls_rbd), 16 MiB of 4 KiB
#     random writes and reads through librbd;
# and for hybridstore only:
#   - the admin socket: perf dump has the hybridstore section with commit_lat,
#     `compact`, `flush_store_cache`, `list_devices`; `ceph osd perf`;
#   - an OSD killed with SIGKILL during a write bench, restarted: the cluster
#     returns to active+clean and every acknowledged object reads back;
#   - on a stopped OSD: ceph-objectstore-tool --op list and --op fsck, and the
#     project's hybridstore-tool fsck.
# The bench table goes to stdout and, with REPORT.md, to that file.
set -u
# Before the helpers, whose defaults (1G + 8G) a 30 s 4 MiB write bench fills.
export HS_SSD_SIZE=${HS_SSD_SIZE:-4G} HS_HDD_SIZE=${HS_HDD_SIZE:-24G} HS_TIMEOUT=${HS_TIMEOUT:-300}
source "$(dirname "$0")/common.sh"
# shellcheck source=qa/standalone/hybridstore-helpers.sh
source "$HS_TOP/qa/standalone/hybridstore-helpers.sh"

require_ceph_build ceph-osd ceph-objectstore-tool
which=${1:-both}
report=${2:-}
export CEPH_OSD=$CEPH_BUILD/bin/ceph-osd
osd_knows_hybridstore "$CEPH_OSD" || skip "$CEPH_OSD does not know osd_objectstore=hybridstore"
for b in ceph-mon ceph-mgr ceph rados monmaptool uuidgen jq; do
    command -v "$b" > /dev/null || skip "$b is not installed (make qa-deps)"
done

export HS_AUTH=cephx
HS_BENCH_SECONDS=${HS_BENCH_SECONDS:-30}
if [ "$(id -u)" = 0 ] && [ -e /dev/loop-control ]; then export HS_DEVICES=loop; else export HS_DEVICES=file; fi
base=$(mktemp -d "${TMPDIR:-/tmp}/hs-cluster.XXXXXX")
results=$base/results.tsv
: > "$results"
dir=
cleanup() { [ -n "$dir" ] && teardown "$dir" "${failed:-}"; }
trap cleanup EXIT
trap 'failed=1; exit 1' INT TERM

# bench STORE POOL MODE SIZE: one rados bench run, its summary figures into results.tsv.
bench() {
    local store=$1 pool=$2 mode=$3 bs=$4 out args=()
    out=$dir/bench-$mode-$bs.txt
    [ "$mode" = write ] && args=(-b "$(size_bytes "$bs")" --no-cleanup)
    HS_CMD_TIMEOUT=$((HS_BENCH_SECONDS + 180)) rados_cli -p "$pool" bench "$HS_BENCH_SECONDS" "$mode" \
        -t 16 --run-name "bench-$bs" "${args[@]}" > "$out" 2>&1 ||
        { tail -20 "$out" >&2; fail "rados bench $mode $bs on $store"; return 1; }
    local mbs iops lat
    mbs=$(awk -F: '/^Bandwidth \(MB\/sec\)/ {gsub(/ /,"",$2); print $2}' "$out")
    iops=$(awk -F: '/^Average IOPS/ {gsub(/ /,"",$2); print $2}' "$out")
    lat=$(awk -F: '/^Average Latency\(s\)/ {gsub(/ /,"",$2); print $2}' "$out")
    [ -n "$mbs" ] || { tail -20 "$out" >&2; fail "no summary in rados bench $mode $bs"; return 1; }
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$store" "$bs" "$mode" "$mbs" "$iops" "$lat" >> "$results"
    log "$store $bs $mode: $mbs MB/s, $iops IOPS, $lat s"
}

bench_all() {
    local store=$1 bs mode
    create_pool bench 64 || return 1
    for bs in 4M 4K; do
        for mode in write seq rand; do bench "$store" bench "$mode" "$bs" || return 1; done
        rados_cli -p bench cleanup --run-name "bench-$bs" > /dev/null || return 1
    done
}

# rbd_check STORE: an RBD image on the cluster (the OSDs load the tree's
# cls_rbd), written and read back with Debian's rbd client.
rbd_check() {
    local store=$1 out=$dir/rbd-bench.txt
    create_pool rbd 32 || return 1
    timeout --foreground 120 rbd pool init rbd || { fail "rbd pool init on $store"; return 1; }
    timeout --foreground 120 rbd create rbd/proof --size 256M ||
        { fail "rbd create on $store (does the OSD load cls_rbd?)"; return 1; }
    for io in write read; do
        timeout --foreground 300 rbd bench rbd/proof --io-type "$io" --io-size 4K --io-pattern rand \
            --io-threads 16 --io-total 16M >> "$out" 2>&1 ||
            { tail -20 "$out" >&2; fail "rbd bench $io on $store"; return 1; }
    done
    log "$store: rbd create, 4 KiB random write and read bench of rbd/proof passed ($(grep -c '^elapsed' "$out") runs)"
    echo "$store: rbd create + 16 MiB of 4 KiB random writes and reads through librbd: passed" >> "$base/summary"
    timeout --foreground 120 rbd rm rbd/proof > /dev/null 2>&1 || { fail "rbd rm on $store"; return 1; }
}

admin_checks() {
    local id=0 j
    j=$(perf_dump "$id") || { fail "perf dump"; return 1; }
    echo "$j" | jq -e '.hybridstore.commit_lat.avgcount > 0' > /dev/null ||
        { fail "perf dump of osd.$id has no hybridstore.commit_lat samples"; return 1; }
    log "perf dump: hybridstore section with $(echo "$j" | jq '.hybridstore | length') counters"
    ceph_cli daemon "osd.$id" compact > /dev/null || { fail "admin socket compact"; return 1; }
    ceph_cli daemon "osd.$id" flush_store_cache > /dev/null || { fail "admin socket flush_store_cache"; return 1; }
    log "list_devices: $(ceph_cli daemon "osd.$id" list_devices | jq -c .)"
    ceph_cli osd perf > "$dir/osd-perf.txt" || { fail "ceph osd perf"; return 1; }
    log "ceph osd perf: $(tr -s ' \n' ' ' < "$dir/osd-perf.txt")"
    log "osd.$id metadata: $(ceph_cli osd metadata "$id" -f json | jq -c '{osd_objectstore, rotational, journal_rotational, default_device_class, hybridstore_ssd_path, hybridstore_hdd_path, hybridstore_ssd_rotational, hybridstore_hdd_rotational}')"
}

# writer POOL TAG: named objects whose put returned 0 are listed in acked-TAG.
writer() {
    local pool=$1 tag=$2 i=0 size sizes=(4096 65536 1048576 4194304)
    while [ ! -e "$dir/stop-$tag" ]; do
        i=$((i + 1))
        size=${sizes[$((i % 4))]}
        make_payload "$tag-$i" "$size" "$dir/in-$tag" || return 1
        if HS_CMD_TIMEOUT=300 rados_cli -p "$pool" put "$tag-$i" "$dir/in-$tag" 2> /dev/null; then
            echo "$tag-$i $size" >> "$dir/acked-$tag"
        fi
    done
}

kill9_recovery() {
    local n=0 name size
    create_pool crash 32 || return 1
    run_in_background "$dir" bench-load rados -p crash bench 40 write -t 16 -b 65536 --no-cleanup --run-name load
    run_in_background "$dir" writer writer crash named
    sleep 12
    log "SIGKILL osd.1 during the write bench"
    stop_osd "$dir" 1 KILL || return 1
    wait_for_osd down 1 || return 1
    sleep 5
    activate_osd "$dir" 1 || return 1
    sleep 10
    touch "$dir/stop-named"
    local start=$SECONDS
    while kill -0 "$(cat "$dir/writer.bgpid")" 2> /dev/null && ((SECONDS - start < 300)); do sleep 1; done
    wait_for_clean || return 1
    [ -s "$dir/acked-named" ] || { fail "no write was acknowledged"; return 1; }
    while read -r name size; do
        check_object crash "$name" "$size" "$dir" || return 1
        n=$((n + 1))
    done < "$dir/acked-named"
    log "after SIGKILL and restart: active+clean, $n acknowledged objects read back intact"
    echo "kill9: $n acknowledged objects read back after SIGKILL of osd.1 and recovery to active+clean" >> "$base/summary"
}

offline_tools() {
    local id=2 data n
    data=$dir/osd.$id
    stop_osd "$dir" "$id" TERM || return 1
    n=$("$CEPH_BUILD/bin/ceph-objectstore-tool" --data-path "$data" --no-mon-config --op list 2> "$dir/cot.err" | wc -l)
    [ "$n" -gt 0 ] || { cat "$dir/cot.err" >&2; fail "ceph-objectstore-tool --op list found nothing"; return 1; }
    "$CEPH_BUILD/bin/ceph-objectstore-tool" --data-path "$data" --no-mon-config --op fsck > "$dir/cot-fsck.txt" 2>&1 ||
        { cat "$dir/cot-fsck.txt" >&2; fail "ceph-objectstore-tool --op fsck"; return 1; }
    hybridstore_tool --path "$data" fsck --deep > "$dir/hs-fsck.txt" 2>&1 ||
        { cat "$dir/hs-fsck.txt" >&2; fail "hybridstore-tool fsck --deep"; return 1; }
    log "osd.$id stopped: ceph-objectstore-tool listed $n objects, its fsck and hybridstore-tool fsck --deep are clean"
    echo "offline: ceph-objectstore-tool --op list ($n objects) and --op fsck, hybridstore-tool fsck --deep: clean" >> "$base/summary"
    activate_osd "$dir" "$id" || return 1
    wait_for_clean
}

run_store() {
    local store=$1
    export HS_OBJECTSTORE=$store
    dir=$base/$store
    CEPH_MON=127.0.0.1:$(pick_mon_port 17600) || return 1
    export CEPH_MON
    setup "$dir" || return 1
    # The OSDs report rotational (the HDD decides, as for BlueStore with an
    # SSD block.db), so Ceph would sleep 0.1 s between recovery ops: minutes
    # for the objects written while an OSD is down. Loop files need no pacing.
    conf_set "$dir" osd "osd recovery sleep hdd" 0
    conf_set "$dir" osd "osd recovery sleep hybrid" 0
    log "=== $store: mon, mgr, 3 OSDs ($HS_DEVICES devices, SSD $HS_SSD_SIZE, HDD $HS_HDD_SIZE, cephx)"
    run_cluster "$dir" 3 || return 1
    bench_all "$store" || return 1
    rbd_check "$store" || return 1
    if [ "$store" = hybridstore ]; then
        admin_checks || return 1
        kill9_recovery || return 1
        offline_tools || return 1
    fi
    teardown "$dir"
    dir=
}

: > "$base/summary"
case $which in
both) stores="hybridstore bluestore" ;;
hybridstore | bluestore) stores=$which ;;
*) echo "usage: $0 [hybridstore|bluestore|both] [REPORT.md]" >&2; exit 2 ;;
esac
for s in $stores; do
    run_store "$s" || { failed=1; fail "$s cluster run"; exit 1; }
done

table() {
    echo "| object size | mode | hybridstore MB/s | IOPS | latency (s) | bluestore MB/s | IOPS | latency (s) |"
    echo "|---|---|---|---|---|---|---|---|"
    local bs mode
    for bs in 4M 4K; do
        for mode in write seq rand; do
            awk -F'\t' -v bs="$bs" -v mode="$mode" '
                $2 == bs && $3 == mode { v[$1] = $4 " | " $5 " | " $6 }
                END {
                    h = ("hybridstore" in v) ? v["hybridstore"] : "- | - | -"
                    b = ("bluestore" in v) ? v["bluestore"] : "- | - | -"
                    printf "| %s | %s | %s | %s |\n", bs, mode, h, b
                }' "$results"
        done
    done
}
echo
release=$(ceph_build_release)
echo "rados bench, 16 in flight, ${HS_BENCH_SECONDS} s each, pool size 1, 64 PGs, 3 OSDs ($HS_DEVICES devices), $release:"
table
cat "$base/summary"
if [ -n "$report" ]; then
    { echo "rados bench, 16 in flight, ${HS_BENCH_SECONDS} s each, pool size 1, 64 PGs, 3 OSDs ($HS_DEVICES devices), $release"; echo; table; echo; cat "$base/summary"; } > "$report"
fi
rm -rf "$base"
