#!/usr/bin/env bash
# Power cuts under a live OSD (issue 55, part 5): both of an OSD's devices are
# disk models with a volatile write cache (hybridstore-diskmodel through FUSE,
# DEVCLASS_POWERCUT=1: every write not yet flushed is undoable), the OSD is
# writing, and the power goes: the models drop what was not flushed (all of
# it, or per 4 KiB block at random, and tear the writes in flight on every
# other round), refuse all I/O from then on, and the OSD is killed at once.
# The devices come back with only their media and the OSD restarts.
#
#   CEPH_BUILD=DIR qa/ceph/powercut.sh [hybridstore|bluestore|both] [OUTDIR]
#
# For each store (default both: hybridstore with its RocksDB and journal on
# the SSD, `hybridstore kv location = device`; then BlueStore built into the
# same ceph-osd, block on the HDD model and block.db on the SSD model, as the
# control row): Debian's ceph-mon and ceph-mgr, cephx, one OSD on an `ssd`
# and an `hdd` model of qa/devclass/profiles.conf. Each round, seeded with
# HS_POWERCUT_SEED + round (printed):
#   1. load: a client putting named objects of 4 KiB to 1 MiB one at a time
#      and logging each whose put returned 0 (its own log of acknowledged
#      writes), beside `rados bench write` of 4 KiB or 64 KiB objects, 16 in
#      flight, and an RBD client: fio's rbd engine writing 4 KiB at random
#      into an image, 8 in flight, with crc32c verify headers;
#   2. after a seeded 4 to 12 s, the cut of both models (devclass_powercut,
#      keep=random, --tear on odd rounds) and SIGKILL of the OSD. With
#      HS_POWERCUT_KILL=with-cut (the default) the OSD is stopped (SIGSTOP)
#      just before the cut, so it dies with its devices, as in a power cut
#      of the whole host; with after-cut it runs on until the SIGKILL, meets
#      devices that fail every request, and must not acknowledge anything
#      then (a device dying under a live OSD);
#   3. the models detached and attached again over their images, the OSD
#      started: it must come up, the pool must go active+clean, and every
#      object the client logged as acknowledged in this round must read back
#      whole (every tenth round and the last: those of all rounds); fio,
#      stopped at the cut, finishes what it had in flight once the OSD is
#      back and logs each write it saw complete: every one of those must
#      hold its verify header (qa/ceph/fio-acked-check.py), and a
#      verify-only replay of the first writes up to the first not completed
#      checks their crc32c (writes fio never saw complete are counted, not
#      checked);
#   4. every PG deep-scrubbed: no inconsistency, no scrub errors;
#   5. the OSD stopped and the store's deep fsck run (hybridstore-tool fsck
#      --deep, ceph-bluestore-tool fsck --deep): clean.
# A round that fails is reported with its seed; the next round runs unless
# the OSD did not come back.
# OUTDIR (default ./powercut-<date>) gets REPORT.md (also printed),
# rounds.tsv, and per store the OSD's log and each cut's report.
# Exit 0: every round of every store passed; 1: a failure; 77: SKIPPED (no
# CEPH_BUILD, not root, no FUSE or loop devices, no hybridstore-diskmodel).
#
# Environment: HS_POWERCUT_ROUNDS (50), HS_POWERCUT_SEED (1),
# HS_POWERCUT_LOAD_MIN/MAX (4/12 s), HS_SSD_SIZE (4G), HS_HDD_SIZE (16G),
# HS_POWERCUT_RBD_SIZE (1G), HS_POWERCUT_KILL (with-cut), HS_TIMEOUT (300), HS_KEEP, HYBRIDSTORE_TOOL, DEVCLASS_TOOL,
# CEPH_BLUESTORE_TOOL.
set -u
export HS_SSD_SIZE=${HS_SSD_SIZE:-4G} HS_HDD_SIZE=${HS_HDD_SIZE:-16G} HS_TIMEOUT=${HS_TIMEOUT:-300}
source "$(dirname "$0")/common.sh"
# shellcheck source=qa/standalone/hybridstore-helpers.sh
source "$HS_TOP/qa/standalone/hybridstore-helpers.sh"
# shellcheck source=qa/devclass/devclass.sh
source "$HS_TOP/qa/devclass/devclass.sh"

require_ceph_build ceph-osd
which=${1:-both}
outdir=${2:-./powercut-$(date +%Y%m%d-%H%M%S)}
case $which in
both) stores="hybridstore bluestore" ;;
hybridstore | bluestore) stores=$which ;;
*) echo "usage: $0 [hybridstore|bluestore|both] [OUTDIR]" >&2; exit 2 ;;
esac
export CEPH_OSD=$CEPH_BUILD/bin/ceph-osd
unavailable=$(devclass_available 2>&1) || skip "disk models unavailable: $unavailable"
for b in ceph-mon ceph-mgr ceph rados monmaptool uuidgen jq ceph-authtool; do
    command -v "$b" > /dev/null || skip "$b is not installed (make qa-deps)"
done
bluestore_tool=$(find_bluestore_tool)
case " $stores " in
*" hybridstore "*)
    osd_knows_hybridstore "$CEPH_OSD" || skip "$CEPH_OSD does not know osd_objectstore=hybridstore"
    hybridstore_tool --help > /dev/null 2>&1 || skip "hybridstore-tool not found (set HYBRIDSTORE_TOOL)" ;;
esac
case " $stores " in
*" bluestore "*) [ -x "$bluestore_tool" ] || skip "ceph-bluestore-tool not found (set CEPH_BLUESTORE_TOOL)" ;;
esac

# The RBD client needs fio with its rbd engine (Debian's links librbd).
rbd_client=0
rbd_size=${HS_POWERCUT_RBD_SIZE:-1G}
if command -v fio > /dev/null && command -v rbd > /dev/null && fio --enghelp=rbd > /dev/null 2>&1 &&
    python3 -c 'import rados, rbd' 2> /dev/null; then
    rbd_client=1
else
    log "no fio with an rbd engine, no rbd, or no python3-rbd: the rounds run without the RBD client"
fi
rounds=${HS_POWERCUT_ROUNDS:-50}
kill_order=${HS_POWERCUT_KILL:-with-cut}
case $kill_order in
with-cut | after-cut) ;;
*) echo "HS_POWERCUT_KILL must be with-cut or after-cut, not '$kill_order'" >&2; exit 2 ;;
esac
seed0=${HS_POWERCUT_SEED:-1}
load_min=${HS_POWERCUT_LOAD_MIN:-4}
load_max=${HS_POWERCUT_LOAD_MAX:-12}
export HS_AUTH=cephx HS_DEVICES=loop HS_SSD_CLASS=ssd HS_HDD_CLASS=hdd DEVCLASS_POWERCUT=1 HS_BLUESTORE_DB=ssd
mkdir -p "$outdir" || exit 1
outdir=$(cd "$outdir" && pwd)
tsv=$outdir/rounds.tsv
printf 'store\tround\tseed\tload_s\ttear\tcut\tacked_round\tacked_total\tlost\tdeep_scrub\tfsck\tstatus\trbd\n' > "$tsv"
base=$(mktemp -d "${TMPDIR:-/tmp}/hs-powercut.XXXXXX")
dir=
failed=
cleanup() {
    [ -n "$dir" ] || return 0
    [ -s "$dir/fio.pid" ] && kill -KILL "$(cat "$dir/fio.pid")" 2> /dev/null
    teardown "$dir" "$failed"
}
trap cleanup EXIT
trap 'failed=1; exit 1' INT TERM

# seeded N LO HI: a number in [LO, HI] from seed N (the same on every host).
seeded() { awk -v s="$1" -v lo="$2" -v hi="$3" 'BEGIN { srand(s); print lo + int(rand() * (hi - lo + 1)) }'; }

object_size() {
    local sizes=(4096 65536 262144 1048576)
    echo "${sizes[$(($1 % 4))]}"
}

# writer ROUND: named objects put one at a time; each acknowledged one is
# logged (name and size) in acked.tsv once its put returned 0.
writer() {
    local round=$1 i=0 name size
    while [ ! -e "$dir/stop-writer" ]; do
        i=$((i + 1))
        name=r$round-$i
        size=$(object_size "$i")
        make_payload "$name" "$size" "$dir/in-writer" || return 1
        if HS_CMD_TIMEOUT=120 rados_cli -p data put "$name" "$dir/in-writer" 2> /dev/null; then
            printf '%s\t%s\n' "$name" "$size" >> "$dir/acked.tsv"
        fi
    done
}

osd_pid() { daemon_pid "$dir" osd.0; }

# The models, after a cut: detached, attached again over their images (the
# media only), the OSD's device options pointed at the new loop devices.
reattach_devices() {
    devclass_detach_all "$dir" --keep-images > "$dir/detach.log" 2>&1 ||
        { cat "$dir/detach.log" >&2; fail "detaching the models"; return 1; }
    rm -f "$dir/loops"
    osd_devices "$dir" 0 || return 1
    devices_are_ours || return 1
    relink_devices
}

# conf_value KEY: the last value ceph.conf gives KEY.
conf_value() { awk -F' = ' -v k="$1" '$1 ~ "^[ \t]*" k "$" { v = $2 } END { print v }' "$dir/ceph.conf"; }

# The models came back as loop devices of other numbers, maybe: the links in
# the data directory follow them, as ceph-volume relinks at boot (both
# stores mount through these links; a stale one named another run's device).
relink_devices() {
    local data=$dir/osd.0
    case $HS_OBJECTSTORE in
    hybridstore)
        ln -sfn "$(conf_value 'hybridstore ssd path')" "$data/block.ssd" &&
            ln -sfn "$(conf_value 'hybridstore hdd path')" "$data/block.hdd" ;;
    bluestore)
        ln -sfn "$(conf_value 'bluestore block path')" "$data/block" &&
            ln -sfn "$(conf_value 'bluestore block db path')" "$data/block.db" ;;
    esac
}

# devices_are_ours: every loop device the OSD is configured with serves this
# run's model image; another harness detaching a loop device by a stale name
# would otherwise pass for a store that cannot mount.
devices_are_ours() {
    local dev back
    for dev in $(awk -F' = ' '/(hybridstore (ssd|hdd)|bluestore block( db)?) path/ { print $2 }' "$dir/ceph.conf"); do
        back=$(losetup -n -O BACK-FILE "$dev" 2> /dev/null | sed 's/ *$//')
        [[ $back == "$dir/"* ]] || { fail "harness: $dev serves '${back:-nothing}', not a model of $dir"; return 1; }
    done
}

# osd_error: the last error line of the OSD's log, for a round's status.
osd_error() {
    grep -a -E '\] -1 |ERROR|mount failed' "$dir/osd.0.log" 2> /dev/null | tail -1 | sed 's/^[^ ]* [^ ]* *-1 //' | cut -c1-200
}

deep_fsck() {
    local store=$1 data=$dir/osd.0
    case $store in
    hybridstore) hybridstore_tool --path "$data" fsck --deep > "$dir/fsck.log" 2>&1 ;;
    bluestore) "$bluestore_tool" fsck --deep 1 --path "$data" > "$dir/fsck.log" 2>&1 ;;
    esac
}

# check_acked FIRST: the acknowledged objects from line FIRST of acked.tsv
# on; prints how many were checked and how many were lost.
check_acked() {
    local name size n=0 lost=0
    while IFS=$'\t' read -r name size; do
        n=$((n + 1))
        check_object data "$name" "$size" "$dir" 2>> "$dir/lost.log" || lost=$((lost + 1))
    done < <(tail -n +"$1" "$dir/acked.tsv")
    echo "$n $lost"
}

# The RBD client: fio's rbd engine writing 4 KiB at random into one image
# with crc32c verify headers, and a log of every write it saw complete, with
# its offset and time (its completion-latency log). Stopped at the cut, it
# waits for the writes then in flight, which librbd sends again once the OSD
# is back. The check is of the writes the log says completed
# (fio-acked-check.py reads each one's block for its verify header), and a
# verify-only replay, with the same seed, of the first writes up to the
# first one that did not complete checks their crc32c as well. The log's
# times say when each acknowledgement came: a lost write acknowledged after
# the cut shows there.
# fio_args SEED [null]: the job, on the rbd engine or (null) on none.
fio_args() {
    fio_job=(--name=pc --rw=randwrite --bs=4k --iodepth=8 --size="$rbd_size" --verify=crc32c --randseed="$1")
    if [ "${2:-}" = null ]; then
        fio_job+=(--ioengine=null)
    else
        fio_job+=(--ioengine=rbd --clientname=admin --pool=rbd --rbdname=pc)
    fi
}

fio_start() {
    local r=$1 seed=$2
    mkdir -p "$dir/fio-$r"
    fio_args "$seed"
    (cd "$dir/fio-$r" && exec fio "${fio_job[@]}" --time_based --runtime=3600 --do_verify=0 \
        --write_lat_log=done --log_offset=1 --output=write.out) &
    echo $! > "$dir/fio.pid"
}

# fio_finish R SEED: waits for fio (stopped at the cut) to exit, then reads
# back every write it saw complete. Prints the check's summary, or the
# failure.
fio_finish() {
    local r=$1 seed=$2 pid i n prefix out f
    f=$dir/fio-$r
    pid=$(cat "$dir/fio.pid" 2> /dev/null) || { echo "no fio ran"; return 1; }
    for ((i = 0; i < 240; i++)); do kill -0 "$pid" 2> /dev/null || break; sleep 0.5; done
    if kill -0 "$pid" 2> /dev/null; then
        kill -KILL "$pid" 2> /dev/null
        echo "fio did not exit within 120 s of the OSD's return"
        return 1
    fi
    rm -f "$dir/fio.pid"
    grep -q 'err= 0' "$f/write.out" || { echo "fio's writes failed: $(grep -m1 'err=' "$f/write.out")"; return 1; }
    n=$(sed -n 's/.*issued rwts: total=[0-9]*,\([0-9]*\),.*/\1/p' "$f/write.out" | head -1)
    [ -n "$n" ] || { echo "fio printed no write count"; return 1; }
    [ -s "$f/done_clat.1.log" ] || { echo "fio wrote no completion log"; return 1; }
    # The order fio issued its writes in: the same job on the null engine.
    fio_args "$seed" null
    (cd "$f" && fio "${fio_job[@]}" --do_verify=0 --io_size=$((n * 4096)) \
        --write_iolog=order.iolog --output=order.out) || { echo "fio's null replay of the order failed"; return 1; }
    if ! out=$(python3 "$HS_TOP/qa/ceph/fio-acked-check.py" --pool rbd --image pc --order "$f/order.iolog" \
        --completed "$f/done_clat.1.log" --issued "$n" --prefix-out "$f/prefix" 2>&1); then
        echo "RBD: $(echo "$out" | head -3 | tr '\n' ' ')"
        return 1
    fi
    echo "$out" > "$f/acked-check.out"
    prefix=$(cat "$f/prefix")
    if ((prefix > 0)); then
        fio_args "$seed"
        if ! (cd "$f" && timeout 600 fio "${fio_job[@]}" --verify_only --io_size=$((prefix * 4096)) --output=verify.out) ||
            grep -q "verify: bad\|bad magic\|verify failed" "$f/verify.out"; then
            echo "RBD verify of the first $prefix writes failed: $(grep -m1 -i 'bad\|fail' "$f/verify.out")"
            return 1
        fi
    fi
    echo "$(head -1 <<< "$out"); crc32c of the first $prefix verified"
}

# round STORE R: one power cut and its checks; a line into rounds.tsv.
round() {
    local store=$1 r=$2 seed load tear=() before after n lost scrub cut rbd=- fsck=- status=passed
    seed=$((seed0 + r))
    load=$(seeded "$seed" "$load_min" "$load_max")
    ((r % 2)) && tear=(--tear)
    before=$(wc -l < "$dir/acked.tsv")
    rm -f "$dir/stop-writer"
    run_in_background "$dir" writer writer "$r"
    run_in_background "$dir" bench sh -c 'exec "$@" > "$0" 2>&1' "$dir/bench-$r.log" \
        rados -p data bench 600 write -t 16 -b "$(((r % 2) ? 65536 : 4096))" --run-name "cut-$r" --no-cleanup
    [ "$rbd_client" = 1 ] && fio_start "$r" "$seed"
    sleep "$load"
    log "round $r (seed $seed): power cut after ${load} s of load${tear:+, writes in flight torn}"
    # with-cut: the OSD is frozen first, so it does nothing between the cut
    # and its death, as when one power supply feeds host and disks alike.
    [ "$kill_order" = with-cut ] && kill -STOP "$(osd_pid)"
    devclass_powercut "$dir" --seed "$seed" --keep random "${tear[@]}" > "$dir/cut-$r.log" 2>&1 ||
        { cat "$dir/cut-$r.log" >&2; fail "round $r: the cut failed"; return 1; }
    stop_osd "$dir" 0 KILL
    [ "$rbd_client" = 1 ] && kill -TERM "$(cat "$dir/fio.pid")" 2> /dev/null
    touch "$dir/stop-writer"
    kill_background "$dir"
    cp "$dir/cut-$r.log" "$outdir/$store/" 2> /dev/null
    # What the cut took: unflushed writes and bytes put back, over both models.
    cut=$(awk '/unflushed writes/ { for (i = 1; i <= NF; i++) { if ($(i+1) == "unflushed") w += $i; if ($(i+1) == "bytes" && $(i+2) == "restored") b += $i } }
        END { printf "%d unflushed writes, %.1f MiB put back", w, b / 1048576 }' "$dir/cut-$r.log")
    after=$(wc -l < "$dir/acked.tsv")
    reattach_devices || { losetup -a >&2; fail "round $r: the harness could not give the devices back"; return 1; }
    if ! activate_osd "$dir" 0; then
        status="FAILED: the OSD did not come back: $(osd_error)"
        losetup -a > "$outdir/$store/losetup-$r.txt" 2>&1
    elif ! wait_for_clean "$HS_TIMEOUT"; then
        status="FAILED: not active+clean after the restart"
    fi
    if [ "$status" = passed ]; then
        # This round's writes every round (reading back every earlier one
        # each round would grow as the square of the rounds); all of them
        # every tenth round and at the last.
        if ((r % 10 == 0 || r == rounds)); then read -r n lost < <(check_acked 1); else read -r n lost < <(check_acked $((before + 1))); fi
        [ "$lost" = 0 ] || status="FAILED: $lost acknowledged objects lost or changed"
        if [ "$rbd_client" = 1 ] && ! rbd=$(fio_finish "$r" "$seed"); then status="FAILED: $rbd"; fi
        if scrub=$(deep_scrub data 600); then :; else status="FAILED: deep scrub: $scrub"; fi
        rados_cli -p data cleanup --prefix benchmark_data > /dev/null 2>&1 || true
    fi
    if [ "$status" = passed ]; then
        stop_osd "$dir" 0 TERM
        if deep_fsck "$store"; then fsck=clean; else fsck=FAILED; status="FAILED: fsck --deep"; tail -20 "$dir/fsck.log" >&2; fi
        activate_osd "$dir" 0 || status="FAILED: the OSD did not start after fsck"
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$store" "$r" "$seed" "$load" "${tear:+yes}" \
        "$cut" "$((after - before))" "${n:-?}" "${lost:-?}" "${scrub:-not run}" "$fsck" "$status" "$rbd" >> "$tsv"
    log "round $r: the cut: $cut; $((after - before)) writes acknowledged this round, ${n:-?} checked, ${lost:-?} lost; RBD: $rbd; ${scrub:-no scrub}; fsck $fsck: $status"
    [ "$status" = passed ]
}

run_store() {
    local store=$1 r
    export HS_OBJECTSTORE=$store
    dir=$base/$store
    mkdir -p "$outdir/$store"
    CEPH_MON=127.0.0.1:$(pick_mon_port 18000) || return 1
    export CEPH_MON
    setup "$dir" || return 1
    [ "$store" = hybridstore ] && conf_set "$dir" osd "hybridstore kv location" device
    # BlueStore checks itself at every mount here as well (conf_base).
    conf_set "$dir" osd "osd recovery sleep hdd" 0
    conf_set "$dir" osd "osd recovery sleep hybrid" 0
    # Every round deep-scrubs every PG: at once, without pauses.
    conf_set "$dir" osd "osd max scrubs" 8
    conf_set "$dir" osd "osd scrub sleep" 0
    # librbd's cache would acknowledge fio's writes before an OSD has them
    # (writeback once a client flushed): what it acknowledged would not be
    # what the store was asked to keep.
    conf_set "$dir" client "rbd cache" false
    conf_render "$dir"
    log "=== $store: one OSD on an ssd and an hdd model with power cuts (SSD $HS_SSD_SIZE, HDD $HS_HDD_SIZE), $rounds rounds from seed $seed0, the OSD killed $kill_order"
    if ! run_cluster "$dir" 1 || ! create_pool data 8; then
        printf '%s\t0\t-\t-\t-\t-\t-\t-\t-\t-\t-\tFAILED: the cluster did not come up\t-\n' "$store" >> "$tsv"
        return 1
    fi
    if [ "$rbd_client" = 1 ]; then
        ceph_cli osd pool create rbd 8 8 > /dev/null && timeout --foreground 120 rbd pool init rbd &&
            wait_for_clean "$HS_TIMEOUT" &&
            timeout --foreground 120 rbd create rbd/pc --size "$rbd_size" > /dev/null 2>&1 || { fail "the RBD image"; return 1; }
    fi
    : > "$dir/acked.tsv"
    local failures=0
    for ((r = 1; r <= rounds; r++)); do
        round "$store" "$r" && continue
        failures=$((failures + 1))
        cp "$dir/osd.0.log" "$outdir/$store/osd.0.log.round-$r" 2> /dev/null
        [ -s "$dir/lost.log" ] && head -50 "$dir/lost.log" > "$outdir/$store/lost.log"
        [ -d "$dir/fio-$r" ] && cp -r "$dir/fio-$r" "$outdir/$store/"
        # A round whose checks failed is recorded and the next one runs; an
        # OSD that does not come back ends the store's run.
        daemon_pid "$dir" osd.0 > /dev/null || return 1
    done
    [ "$failures" = 0 ] || return 1
    cp "$dir/osd.0.log" "$outdir/$store/" 2> /dev/null
    teardown "$dir"
    dir=
}

report() {
    local release
    release=$(ceph_build_release)
    echo "# Power cuts under a live OSD: $release"
    echo
    echo "One OSD, its SSD and HDD on hybridstore-diskmodel (profiles ssd and hdd, volatile write caches), seeds from $seed0, load $load_min-$load_max s a round, the OSD killed $kill_order (qa/ceph/powercut.sh)."
    echo
    echo "| store | rounds passed | unflushed writes the cuts undid | acknowledged writes read back at the end | lost | RBD writes acknowledged and read back | RBD writes never acknowledged: reached the store / did not | rounds with scrub errors | rounds with fsck errors |"
    echo "|---|---|---|---|---|---|---|---|---|"
    awk -F'\t' 'NR > 1 {
            s = $1; rounds[s]++; if ($12 == "passed") ok[s]++
            checked[s] = $8; if ($9 != "?" && $9 != "-") lost[s] += $9
            if ($10 !~ / 0 inconsistent, 0 scrub errors/) scrub[s]++
            if ($11 == "FAILED") fsck[s]++
            if (match($6, /^[0-9]+/)) writes[s] += substr($6, RSTART, RLENGTH)
            if ($13 ~ /^[0-9]+ of [0-9]+ issued writes acknowledged/) {
                split($13, w, " "); rbd[s] += w[11]; rbdr[s]++; there[s] += w[19]; absent[s] += w[23] }
            if (!(s in order)) { order[s] = ++n; name[n] = s }
        }
        END { for (i = 1; i <= n; i++) { s = name[i]
            printf "| %s | %d of %d | %d | %s | %d | %d (%d rounds) | %d / %d | %d | %d |\n", s, ok[s], rounds[s], writes[s], checked[s], lost[s], rbd[s], rbdr[s], there[s], absent[s], scrub[s], fsck[s] } }' "$tsv"
    echo
    echo "Failed rounds (seed, status):"
    awk -F'\t' 'NR > 1 && $12 != "passed" { printf "- %s round %s, seed %s: %s\n", $1, $2, $3, $12 }' "$tsv"
}

rc=0
for s in $stores; do
    if ! run_store "$s"; then
        failed=1
        rc=1
        teardown "$dir" 1
        dir=
    fi
done
report | tee "$outdir/REPORT.md"
[ "$rc" = 0 ] && rm -rf "$base"
exit "$rc"
