#!/usr/bin/env bash
# HybridStore against BlueStore on tiers that differ: an HDD served through
# the disk model (qa/devclass, a 7,200-rpm profile under a loop device) and an
# SSD (a raw loop device on this machine's disk, or the ssd profile), the
# same devices and classes for every row, in one run.
#
#   CEPH_BUILD=DIR qa/ceph/hybrid-hardware.sh [OUTDIR]
#
# Rows (HH_ROWS, default all five):
#   hybridstore       the built ceph-osd, osd_objectstore = hybridstore, SSD + HDD
#   bluestore         the same binary's BlueStore, block on the HDD, block.db on the SSD
#   debian-bluestore  Debian's stock ceph-osd (HH_DEBIAN_OSD, default /usr/bin/ceph-osd;
#                     where the hybridstore package replaced that one, the stock
#                     binary unpacked from Debian's .deb), the same layout
#   bluestore-hdd     the built BlueStore all on the HDD (the floor)
#   memstore          the built MemStore, no device at all (the ceiling): what
#                     the OSD's own code path, the clients and the mon reach on
#                     this host's CPU whatever the store does; only the rows
#                     with a 3x goal (HH_CEILING_PARTS: rados 4 KiB writes and
#                     random reads, RBD 4 KiB random writes on a
#                     HH_CEILING_RBD_SIZE image)
# Each row: Debian's mon and mgr, 3 OSDs, pool size 1, cephx; then the parts
# (HH_PARTS, default "rados rbd hotset"):
#   rados   rados bench write/seq/rand, 4 MiB and 4 KiB objects, 16 in flight
#   rbd     fio's rbd engine on one image (HH_RBD_SIZE, 16G), written whole
#           first: 4 KiB randwrite, 4 KiB randread, 64 KiB sequential write, a
#           70/30 random mix, and a verifying pass (fio --verify) of each kind
#   hotset  4 KiB reads (10% writes) with 90% of them on a tenth of the image,
#           HH_HOT_SECONDS (240) long, IOPS and p99 every second, the migrator's
#           passes (every HH_MIGRATE_INTERVAL, 60 s) and bytes moved on the
#           same time axis; not on the floor row (HH_FLOOR_PARTS)
# HH_SECONDS (30) per rados bench run (HH_WRITE4K_SECONDS, 90, for 4 KiB
# writes), HH_RBD_SECONDS (45) per RBD row.
# HH_HS_OPTIONS ("name=value ...", default none): engine options added to the
# hybridstore row's OSDs (an A/B of one option in the same binary), e.g.
# hybridstore_kv_location=directory.
# HH_SSD_CLASS (raw): the SSD's class, raw (a written-out image under a loop
# device), file (the same image given to the store as a file, no loop
# device; the hybridstore row then gets hybridstore_tier_absorb=always, as
# the file's media is the host disk's), or a qa/devclass profile;
# HH_HDD_CLASS (hdd) the HDD's.
# Before the rows, the modelled devices' own fio figures (the model check),
# printed in the report. OUTDIR (default ./hybrid-hardware-<date>) gets
# REPORT.md, results.json, the plots and every raw output.
#
# Without root, loop devices, FUSE or the disk model, the run says
# "classes: off" and exits SKIPPED (77): it never compares on devices that
# are not modelled. A row whose binary is missing is reported skipped.
set -u
export HS_SSD_SIZE=${HH_SSD_SIZE:-2G} HS_HDD_SIZE=${HH_HDD_SIZE:-48G} HS_TIMEOUT=${HS_TIMEOUT:-300}
source "$(dirname "$0")/common.sh"
# shellcheck source=qa/standalone/hybridstore-helpers.sh
source "$HS_TOP/qa/standalone/hybridstore-helpers.sh"
# shellcheck source=qa/devclass/devclass.sh
source "$HS_TOP/qa/devclass/devclass.sh"

HH_ROWS=${HH_ROWS:-hybridstore bluestore debian-bluestore bluestore-hdd memstore}
HH_PARTS=${HH_PARTS:-rados rbd hotset}
# The floor row (BlueStore all on the HDD) skips the hot set by default: it
# bounds the rados and RBD rows, and the hour's budget is the others'.
HH_FLOOR_PARTS=${HH_FLOOR_PARTS:-rados rbd}
# The ceiling row keeps its data in the OSDs' memory: 4 KiB objects and a
# small image only (a 4 KiB op costs the same CPU on a 2 GiB image).
HH_CEILING_PARTS=${HH_CEILING_PARTS:-rados rbd}
HH_CEILING_RBD_SIZE=${HH_CEILING_RBD_SIZE:-2G}
HH_SECONDS=${HH_SECONDS:-25}
# The 4 KiB write run is longer: BlueStore defers small writes to its DB
# device and takes them to the HDD later, so a short run measures its
# deferred queue filling, not what it sustains. The report takes the second
# half of the run.
HH_WRITE4K_SECONDS=${HH_WRITE4K_SECONDS:-60}
HH_RBD_SECONDS=${HH_RBD_SECONDS:-40}
HH_RBD_SIZE=${HH_RBD_SIZE:-16G}
HH_HOT_SECONDS=${HH_HOT_SECONDS:-240}
HH_MIGRATE_INTERVAL=${HH_MIGRATE_INTERVAL:-60}
HH_SSD_CLASS=${HH_SSD_CLASS:-raw}
HH_HDD_CLASS=${HH_HDD_CLASS:-hdd}
HH_CHECK_SECONDS=${HH_CHECK_SECONDS:-8}
HH_HS_OPTIONS=${HH_HS_OPTIONS:-}
# A file takes its media from the disk under it, and this VM's disk says
# rotational: the store would then not absorb small writes into HDD objects
# on the "SSD" (hybridstore_tier_absorb=auto), which the loop-device rig
# does. The file class stands for an SSD, so it is told so.
if [ "$HH_SSD_CLASS" = file ] && [[ " $HH_HS_OPTIONS" != *" hybridstore_tier_absorb="* ]]; then
    HH_HS_OPTIONS="hybridstore_tier_absorb=always${HH_HS_OPTIONS:+ $HH_HS_OPTIONS}"
fi
for o in $HH_HS_OPTIONS; do
    case $o in hybridstore_*=?*) ;; *) echo "HH_HS_OPTIONS: '$o' is not hybridstore_NAME=VALUE" >&2; exit 2 ;; esac
done
out=${1:-$PWD/hybrid-hardware-$(date +%Y%m%d-%H%M%S)}

for b in ceph-mon ceph-mgr ceph rados rbd monmaptool uuidgen jq fio; do
    command -v "$b" > /dev/null || skip "$b is not installed (make qa-deps; fio from Debian links librbd)"
done
fio --enghelp 2> /dev/null | grep -qw rbd || skip "this fio has no rbd engine"
no_classes=$(devclass_available 2>&1) || skip "classes: off ($no_classes); this comparison needs modelled devices"
# Rows whose binary is missing are reported skipped; the run needs one row.
built_osd=
if [ -n "${CEPH_BUILD:-}" ] && [ -x "$CEPH_BUILD/bin/ceph-osd" ]; then
    built_osd=$CEPH_BUILD/bin/ceph-osd
    osd_knows_hybridstore "$built_osd" || skip "$built_osd does not know hybridstore"
fi
debian_osd=${HH_DEBIAN_OSD:-/usr/bin/ceph-osd}
# The stock row must be Debian's binary: one that knows hybridstore is ours.
if [ -x "$debian_osd" ] && osd_knows_hybridstore "$debian_osd"; then
    log "$debian_osd knows hybridstore: not Debian's stock ceph-osd; the debian-bluestore row is skipped (set HH_DEBIAN_OSD)"
    debian_osd="$debian_osd (not stock)"
fi
[ -n "$built_osd" ] || [ -x "$debian_osd" ] ||
    skip "no ceph-osd: CEPH_BUILD is not a Ceph build with HybridStore and Debian's ceph-osd is not installed"
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
log "output in $out"
export HS_AUTH=cephx HS_DEVICES=loop HS_SSD_CLASS=$HH_SSD_CLASS HS_HDD_CLASS=$HH_HDD_CLASS
results=$out/results.tsv   # row part name metric value
: > "$results"
dir=
cleanup() { [ -n "$dir" ] && teardown "$dir" "${failed:-}"; }
trap cleanup EXIT
trap 'failed=1; exit 1' INT TERM

record() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >> "$results"; }

ceph_release() {
    local v
    v=$("$1" --version 2> /dev/null | head -1)
    echo "${v:-unknown}"
}

# ---------------------------------------------------------------- model check
model_check() {
    log "model check: the modelled devices' own fio figures (${HH_CHECK_SECONDS} s a row)"
    # The classes the rows use: the HDD profile, and the SSD's (raw: the VM's
    # disk as it is; the ssd profile's FUSE path is slower than an SSD here).
    local ssd_rows=$HH_SSD_CLASS
    [ "$HH_SSD_CLASS" = file ] && ssd_rows=raw
    local rows="^($HH_HDD_CLASS|$ssd_rows)/|^data/"
    # An installed model (DEVCLASS_TOOL) is the one the rows use: no build
    # directory then, which would override it.
    local build_dir=${HS_BUILD_DIR:-$HS_TOP/build}
    [ -n "${DEVCLASS_TOOL:-}" ] && build_dir=
    CHECK_RUNTIME=$HH_CHECK_SECONDS CHECK_ROWS=$rows bash "$HS_TOP/qa/devclass/check-model.sh" \
        "$build_dir" "$out/model-check" > "$out/model-check.txt" 2>&1
    local rc=$?
    tail -30 "$out/model-check.txt" >&2
    [ $rc = 0 ] || log "model check: some rows outside their published range (see $out/model-check.txt)"
    return 0
}

# ---------------------------------------------------------------- rados bench
rados_bench() {
    local row=$1 bs mode f sizes="4M 4K" modes="write seq rand"
    [ "$row" = memstore ] && sizes=4K modes="write rand"
    create_pool bench 64 || return 1
    for bs in $sizes; do
        for mode in $modes; do
            f=$out/$row/rados-$mode-$bs.txt
            local args=() seconds=$HH_SECONDS
            [ "$mode" = write ] && args=(-b "$(size_bytes "$bs")" --no-cleanup)
            [ "$mode-$bs" = write-4K ] && seconds=$HH_WRITE4K_SECONDS
            HS_CMD_TIMEOUT=$((seconds + 300)) rados_cli -p bench bench "$seconds" "$mode" -t 16 \
                --run-name "bench-$bs" "${args[@]}" > "$f" 2>&1 ||
                { tail -20 "$f" >&2; fail "$row: rados bench $mode $bs"; return 1; }
            local mbs iops lat
            mbs=$(awk -F: '/^Bandwidth \(MB\/sec\)/ {gsub(/ /,"",$2); print $2}' "$f")
            iops=$(awk -F: '/^Average IOPS/ {gsub(/ /,"",$2); print $2}' "$f")
            lat=$(awk -F: '/^Average Latency\(s\)/ {gsub(/ /,"",$2); print $2}' "$f")
            [ -n "$mbs" ] || { tail -20 "$f" >&2; fail "$row: no summary in rados bench $mode $bs"; return 1; }
            record "$row" rados "$mode-$bs" mbs "$mbs"
            record "$row" rados "$mode-$bs" iops "$iops"
            record "$row" rados "$mode-$bs" lat_ms "$(awk -v l="$lat" 'BEGIN{printf "%.2f", l*1000}')"
            log "$row rados $mode $bs: $mbs MB/s, $iops IOPS, $lat s"
            snapshot_counters "$row" "rados-$mode-$bs"
        done
        rados_cli -p bench cleanup --run-name "bench-$bs" > /dev/null || return 1
    done
    ceph_cli osd pool delete bench bench --yes-i-really-really-mean-it > /dev/null
}

# ---------------------------------------------------------------- fio on RBD
# fio_rbd ROW NAME ARGS...: one fio job on the image; IOPS, MB/s, p50/p99
# (completion latency) recorded; per-second IOPS log kept.
fio_rbd() {
    local row=$1 name=$2
    shift 2
    local f=$out/$row/fio-$name
    # fio writes its verify state into the working directory: the row's.
    (cd "$out/$row" && timeout --foreground $((HH_RBD_SECONDS + HH_HOT_SECONDS + 900)) \
        fio --name="$name" --ioengine=rbd --clientname=admin --pool=rbd --rbdname=img \
        --direct=1 --output-format=json --output="$f.json" \
        --write_iops_log="$f" --log_avg_msec=1000 "$@" > "$f.out" 2>&1) ||
        { tail -20 "$f.out" >&2; [ -s "$f.json" ] && tail -c 2000 "$f.json" >&2; fail "$row: fio $name"; return 1; }
    python3 - "$f.json" "$row" "$name" >> "$results" << 'EOF' || { fail "$row: fio $name: no result"; return 1; }
import json, sys
j = json.load(open(sys.argv[1]))
row, name = sys.argv[2], sys.argv[3]
job = j["jobs"][0]
for d in ("read", "write"):
    s = job[d]
    if s["total_ios"] == 0:
        continue
    pct = s.get("clat_ns", {}).get("percentile", {})
    print(f"{row}\trbd\t{name}\t{d}_iops\t{s['iops']:.1f}")
    print(f"{row}\trbd\t{name}\t{d}_mbs\t{s['bw_bytes'] / 1e6:.1f}")
    for p, key in (("p50", "50.000000"), ("p99", "99.000000")):
        if key in pct:
            print(f"{row}\trbd\t{name}\t{d}_{p}_ms\t{pct[key] / 1e6:.3f}")
if job.get("error"):
    print(f"{row}\trbd\t{name}\terror\t{job['error']}")
    sys.exit(1)
EOF
    log "$row fio $name: $(grep -P "^$row\trbd\t$name\t" "$results" | awk -F'\t' '{printf "%s=%s ", $4, $5}')"
    snapshot_counters "$row" "rbd-$name"
}

rbd_setup() {
    local row=$1
    ceph_cli osd pool create rbd 64 64 > /dev/null || return 1
    timeout --foreground 120 rbd pool init rbd || { fail "$row: rbd pool init"; return 1; }
    wait_for_clean "$HS_TIMEOUT" || return 1
    local size=$HH_RBD_SIZE
    [ "$row" = memstore ] && size=$HH_CEILING_RBD_SIZE
    timeout --foreground 120 rbd create rbd/img --size "$size" ||
        { fail "$row: rbd create (does the OSD load cls_rbd?)"; return 1; }
    log "$row: writing the whole image ($size) in 4 MiB pieces"
    fio_rbd "$row" fill --rw=write --bs=4M --iodepth=16 --size=100% || return 1
}

rbd_rows() {
    local row=$1
    rbd_setup "$row" || return 1
    local common=(--time_based --runtime="$HH_RBD_SECONDS" --ramp_time=5 --iodepth=16 --randseed=7)
    if [ "$row" = memstore ]; then
        fio_rbd "$row" randwrite-4k --rw=randwrite --bs=4k "${common[@]}"
        return
    fi
    # A verifying pass of each kind first, on its own slice of the image; not
    # on the floor row (the hour's budget is the other rows', and the
    # bluestore row verifies the same binary's BlueStore).
    if [ "$row" != bluestore-hdd ]; then
        fio_rbd "$row" verify-randwrite --rw=randwrite --bs=4k --iodepth=16 --offset=0 --size=32M \
            --verify=crc32c --do_verify=1 --verify_fatal=1 --randseed=41 || return 1
        fio_rbd "$row" verify-seqwrite --rw=write --bs=64k --iodepth=16 --offset=256M --size=256M \
            --verify=crc32c --do_verify=1 --verify_fatal=1 || return 1
        fio_rbd "$row" verify-randrw --rw=randrw --rwmixread=70 --bs=4k --iodepth=16 --offset=512M --size=32M \
            --verify=crc32c --verify_fatal=1 --randseed=43 || return 1
    fi
    fio_rbd "$row" randwrite-4k --rw=randwrite --bs=4k "${common[@]}" || return 1
    fio_rbd "$row" randread-4k --rw=randread --bs=4k "${common[@]}" || return 1
    fio_rbd "$row" seqwrite-64k --rw=write --bs=64k "${common[@]}" || return 1
    fio_rbd "$row" randrw-70-30 --rw=randrw --rwmixread=70 --bs=4k "${common[@]}" || return 1
}

# The hot set: 90% of the ops on the first tenth of the image (fio's zoned
# distribution), 10% of them writes; the migrator's counters polled beside.
hotset() {
    local row=$1
    [ -n "$(rbd_cli_ls)" ] || rbd_setup "$row" || return 1
    local poll=$out/$row/hotset-counters.tsv
    : > "$poll"
    ( start=$(date +%s.%N)
      while [ ! -e "$out/$row/hotset.done" ]; do
          t=$(awk -v s="$start" -v n="$(date +%s.%N)" 'BEGIN{printf "%.1f", n-s}')
          for i in 0 1 2; do
              ceph_cli daemon "osd.$i" perf dump 2> /dev/null |
                  jq -r --arg t "$t" --arg i "$i" '(.hybridstore // {}) |
                     [$t, $i, (.migration_passes // 0), (.migrate_up_bytes // 0), (.migrate_down_bytes // 0),
                      (.promote_on_read_bytes // 0), (.destage_bytes // 0), (.tier_absorb_bytes // 0)] | @tsv' \
                  >> "$poll"
          done
          sleep 5
      done ) &
    local poller=$!
    rm -f "$out/$row/hotset.done"
    fio_rbd "$row" hotset --rw=randrw --rwmixread=90 --bs=4k --iodepth=16 --time_based \
        --runtime="$HH_HOT_SECONDS" --random_distribution=zoned:90/10:10/90 --randseed=11 \
        --write_lat_log="$out/$row/fio-hotset" --log_avg_msec=0 --log_max_value=1
    local rc=$?
    touch "$out/$row/hotset.done"
    wait "$poller" 2> /dev/null
    return $rc
}

rbd_cli_ls() { timeout --foreground 60 rbd ls rbd 2> /dev/null; }

# ---------------------------------------------------------------- counters
# snapshot_counters ROW STEP: every OSD's perf dump after a step, and the
# HDD devices' own counters from the disk model.
snapshot_counters() {
    local row=$1 step=$2 i
    # The host's CPU time (the first line of /proc/stat) beside the devices'
    # busy time: the report says which one bounded each step.
    head -1 /proc/stat > "$out/$row/cpu-$step.txt"
    # And the OSDs' own (utime + stime, clock ticks): the rest is the clients,
    # the mon and mgr, the disk model and the kernel.
    local pid
    for i in 0 1 2; do
        pid=$(daemon_pid "$dir" "osd.$i") || continue
        awk -v i="$i" '{ print "osd." i, $14 + $15 }' "/proc/$pid/stat" >> "$out/$row/cpu-$step.txt"
    done
    echo "$step" >> "$out/$row/steps"
    for i in 0 1 2; do
        ceph_cli daemon "osd.$i" perf dump > "$out/$row/perf-$step-osd.$i.json" 2> /dev/null
    done
    for i in 0 1 2; do
        [ -d "$dir/osd.$i.hdd.mnt" ] || continue
        devclass_stats "$dir" "osd.$i.hdd" > /dev/null 2>&1 &&
            cp "$dir/osd.$i.hdd.stats.json" "$out/$row/hdd-$step-osd.$i.json" 2> /dev/null
    done
}

# ---------------------------------------------------------------- rows
run_row() {
    local row=$1 osd
    case $row in
    hybridstore) export HS_OBJECTSTORE=hybridstore HS_BLUESTORE_DB=ssd; osd=${built_osd:-(no CEPH_BUILD)} ;;
    bluestore) export HS_OBJECTSTORE=bluestore HS_BLUESTORE_DB=ssd; osd=${built_osd:-(no CEPH_BUILD)} ;;
    debian-bluestore) export HS_OBJECTSTORE=bluestore HS_BLUESTORE_DB=ssd; osd=$debian_osd ;;
    bluestore-hdd) export HS_OBJECTSTORE=bluestore HS_BLUESTORE_DB=none; osd=${built_osd:-(no CEPH_BUILD)} ;;
    memstore) export HS_OBJECTSTORE=memstore; osd=${built_osd:-(no CEPH_BUILD)} ;;
    *) fail "unknown row $row"; return 1 ;;
    esac
    if [ ! -x "$osd" ]; then
        log "row $row: SKIPPED ($osd is missing)"
        record "$row" row status "skipped: $osd is missing"
        return 0
    fi
    export CEPH_OSD=$osd
    mkdir -p "$out/$row"
    dir=$(mktemp -d "${TMPDIR:-/tmp}/hh-$row.XXXXXX")
    CEPH_MON=127.0.0.1:$(pick_mon_port 18600) || return 1
    export CEPH_MON
    setup "$dir" || return 1
    conf_set "$dir" osd "osd recovery sleep hdd" 0
    conf_set "$dir" osd "osd recovery sleep hybrid" 0
    # The test's own migration interval (the default is a day); see docs/tiering.md.
    if [ "$row" = hybridstore ]; then
        conf_set "$dir" osd "hybridstore tier migrate interval sec" "$HH_MIGRATE_INTERVAL"
        # The engine's info lines (one per migration pass) reach the OSD's log.
        conf_set "$dir" osd "debug hybridstore" "5/5"
        for o in $HH_HS_OPTIONS; do conf_set "$dir" osd "${o%%=*}" "${o#*=}"; done
        record "$row" row hs_options "${HH_HS_OPTIONS:-none}"
    fi
    conf_render "$dir"
    record "$row" row binary "$(ceph_release "$osd")"
    log "=== $row: $(ceph_release "$osd"); 3 OSDs, SSD $HS_SSD_SIZE ($HS_SSD_CLASS), HDD $HS_HDD_SIZE ($HS_HDD_CLASS)"
    run_cluster "$dir" 3 || return 1
    snapshot_counters "$row" start
    ceph_cli osd metadata 0 -f json > "$out/$row/osd.0-metadata.json" 2> /dev/null
    local part start parts=$HH_PARTS
    [ "$row" = bluestore-hdd ] && parts=$HH_FLOOR_PARTS
    [ "$row" = memstore ] && parts=$HH_CEILING_PARTS
    for part in $parts; do
        start=$SECONDS
        case $part in
        rados) rados_bench "$row" || return 1 ;;
        rbd) rbd_rows "$row" || return 1 ;;
        hotset) hotset "$row" || return 1 ;;
        *) fail "unknown part $part"; return 1 ;;
        esac
        record "$row" "$part" all seconds $((SECONDS - start))
    done
    record "$row" row status ran
    # The passes' own lines (when, what moved) beside the rows they ran in.
    local i
    for i in 0 1 2; do
        [ -e "$dir/osd.$i.log" ] && grep -E 'migration \(|promot|destage' "$dir/osd.$i.log" > "$out/$row/osd.$i-migrations.log"
    done
    teardown "$dir"
    dir=
}

start=$SECONDS
model_check
for row in $HH_ROWS; do
    run_row "$row" || { failed=1; fail "row $row"; exit 1; }
done
log "all rows in $((SECONDS - start)) s"
# Debian's interpreter: its matplotlib draws the plots (another python3 first
# on PATH may lack it; the report is then written without them).
report_python=python3
[ -x /usr/bin/python3 ] && report_python=/usr/bin/python3
"$report_python" "$QA_CEPH_DIR/hybrid-hardware-report.py" "$out" ||
    { failed=1; fail "report"; exit 1; }
log "report: $out/REPORT.md"
