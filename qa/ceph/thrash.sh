#!/usr/bin/env bash
# Ceph's model-checking workload, ceph_test_rados, under OSD thrashing (what
# Ceph's rados/thrash suites run), on hybridstore OSDs and, as the control,
# on the BlueStore built into the same ceph-osd (issue 36, part 1).
#
#   CEPH_BUILD=DIR qa/ceph/thrash.sh [hybridstore|bluestore|both] [OUTDIR]
#
# For each store (default both: hybridstore, then bluestore): Debian's
# ceph-mon and ceph-mgr, cephx, three OSDs of $CEPH_BUILD/bin/ceph-osd (loop
# devices as root, the SSD marked rotational=0; files otherwise), the helpers
# of qa/standalone/hybridstore-helpers.sh. Then, one pool after the other:
#   replicated  size 3, min_size 2, HS_THRASH_PGS PGs
#   erasure     profile k=2 m=1 crush-failure-domain=osd, allow_ec_overwrites
#               (the monitor needs `mon debug no require bluestore for ec
#               overwrites` for a non-bluestore OSD; set for both stores)
# each for HS_THRASH_MINUTES of $CEPH_BUILD/bin/ceph_test_rados with the flags
# and op weights Ceph's qa/tasks/rados.py builds for the thrash workloads:
#   replicated  rados/thrash/workloads/small-objects.yaml (1024 objects of
#               16 KiB, 64 in flight; read 100, write 100, delete 50,
#               snap_create 50, snap_remove 50, rollback 50, copy_from 50,
#               setattr 25, rmattr 25) plus append 100 as in its EC twin;
#   erasure     rados/thrash-erasure-code-overwrites/workloads/
#               ec-small-objects-overwrites.yaml: the same weights, --no-omap
#               (rados.py gives --ec-pool only to pools without overwrites:
#               HS_THRASH_EC_OVERWRITES=0 runs ec-small-objects.yaml that way,
#               appends only, aligned);
#   rados.py halves write and append into write/write_excl and
#   append/append_excl; so does this script.
# While it runs, a thrasher, seeded with HS_THRASH_SEED (default 1; the same
# sequence for every pool and store): after HS_THRASH_MIN_DELAY..MAX_DELAY
# seconds, either SIGKILLs a random OSD (by its pid file, never by name),
# waits until the monitor marks it down, leaves it down HS_THRASH_DOWN_MIN..MAX
# seconds and revives it; or (HS_THRASH_OUT_CHANCE percent of the actions)
# marks one `ceph osd out` for that long and then `in`. One action at a time:
# never more than one OSD down or out.
# Afterwards, asserted on `--format json` where Ceph has it:
#   - ceph_test_rados exited 0 and printed "0 errors.";
#   - no OSD died but by the thrasher's kills (every OSD's pid watched the
#     whole run, every OSD log free of 'Caught signal', 'FAILED ceph_assert',
#     ceph_abort, 'terminate called');
#   - every PG active+clean within HS_THRASH_CLEAN_TIMEOUT (900 s);
#   - `ceph pg deep-scrub` of every PG of the pool, each PG's
#     last_deep_scrub_stamp moved, no PG inconsistent, no scrub errors,
#     `rados list-inconsistent-pg` empty.
# OUTDIR (default ./thrash-<date>) gets REPORT.md (also printed), results.tsv,
# and per store every daemon's log, the thrasher's log and ceph_test_rados'
# output. The clusters are torn down on success, failure and Ctrl-C (HS_KEEP=1
# keeps the cluster directory). Exit 0: every row passed; 1: a failure (the
# logs' tails are printed); 77: SKIPPED (no CEPH_BUILD, no ceph_test_rados in
# it, loop devices without root, missing tools).
#
# Environment: HS_THRASH_MINUTES (20, per pool; decimals allowed),
# HS_THRASH_SEED (1), HS_THRASH_POOLS ("replicated erasure"), HS_THRASH_PGS
# (16), HS_THRASH_MIN_DELAY/MAX_DELAY (5/20), HS_THRASH_DOWN_MIN/MAX (5/30),
# HS_THRASH_OUT_CHANCE (30), HS_THRASH_OPS (ceph_test_rados --max-ops; large,
# so that the time bounds the run), HS_THRASH_DRAIN (900: seconds
# ceph_test_rados may take past its time to finish its ops),
# HS_THRASH_SCRUB_TIMEOUT (900), HS_DEVICES (loop as root, else file),
# HS_SSD_SIZE/HS_HDD_SIZE (1G/8G), HS_TIMEOUT (300), HS_KEEP.
set -u

usage() {
    cat << EOF
usage: CEPH_BUILD=DIR $0 [hybridstore|bluestore|both] [OUTDIR]

ceph_test_rados on a replicated (size 3, min_size 2) and an EC (k=2 m=1,
overwrites) pool of 3 OSDs while a seeded thrasher kills (SIGKILL) and
revives OSDs and marks them out and in; then every PG active+clean and
deep-scrubbed clean. BlueStore of the same ceph-osd is the control.

  HS_THRASH_MINUTES  minutes per pool (default 20)
  HS_THRASH_SEED     the thrasher's seed (default 1)
  HS_THRASH_POOLS    pools to run (default "replicated erasure")
  HS_KEEP=1          keep the cluster directory
Exit 0 passed, 1 failed, 77 skipped. See the header of $0 for the rest.
EOF
}

case ${1:-} in
-h | --help) usage; exit 0 ;;
esac
which=${1:-both}
case $which in
both) stores="hybridstore bluestore" ;;
hybridstore | bluestore) stores=$which ;;
*) usage >&2; exit 2 ;;
esac
out=${2:-$PWD/thrash-$(date +%Y%m%d-%H%M%S)}

export HS_TIMEOUT=${HS_TIMEOUT:-300}
# Before the helpers, which default HS_DEVICES to file.
devices=${HS_DEVICES:-}
# shellcheck source=SCRIPTDIR/common.sh
source "$(dirname "$0")/common.sh"
# shellcheck source=SCRIPTDIR/../standalone/hybridstore-helpers.sh
source "$HS_TOP/qa/standalone/hybridstore-helpers.sh"

HS_THRASH_MINUTES=${HS_THRASH_MINUTES:-20}
HS_THRASH_SEED=${HS_THRASH_SEED:-1}
HS_THRASH_POOLS=${HS_THRASH_POOLS:-replicated erasure}
HS_THRASH_PGS=${HS_THRASH_PGS:-16}
HS_THRASH_MIN_DELAY=${HS_THRASH_MIN_DELAY:-5}
HS_THRASH_MAX_DELAY=${HS_THRASH_MAX_DELAY:-20}
HS_THRASH_DOWN_MIN=${HS_THRASH_DOWN_MIN:-5}
HS_THRASH_DOWN_MAX=${HS_THRASH_DOWN_MAX:-30}
HS_THRASH_OUT_CHANCE=${HS_THRASH_OUT_CHANCE:-30}
HS_THRASH_OPS=${HS_THRASH_OPS:-100000000}
HS_THRASH_DRAIN=${HS_THRASH_DRAIN:-900}
HS_THRASH_CLEAN_TIMEOUT=${HS_THRASH_CLEAN_TIMEOUT:-900}
HS_THRASH_SCRUB_TIMEOUT=${HS_THRASH_SCRUB_TIMEOUT:-900}
HS_THRASH_EC_OVERWRITES=${HS_THRASH_EC_OVERWRITES:-1}
NUM_OSDS=3

seconds=$(awk -v m="$HS_THRASH_MINUTES" 'BEGIN {
    if (m !~ /^[0-9]+(\.[0-9]+)?$/ || m * 60 < 10) exit 1
    printf "%d", m * 60 }') || { echo "HS_THRASH_MINUTES=$HS_THRASH_MINUTES: a number of minutes (at least 10 s)" >&2; exit 2; }
for v in HS_THRASH_SEED HS_THRASH_PGS HS_THRASH_MIN_DELAY HS_THRASH_MAX_DELAY HS_THRASH_DOWN_MIN \
    HS_THRASH_DOWN_MAX HS_THRASH_OUT_CHANCE HS_THRASH_OPS HS_THRASH_DRAIN HS_THRASH_CLEAN_TIMEOUT \
    HS_THRASH_SCRUB_TIMEOUT; do
    [[ ${!v} =~ ^[0-9]+$ ]] || { echo "$v=${!v}: not a non-negative integer" >&2; exit 2; }
done
((HS_THRASH_MAX_DELAY >= HS_THRASH_MIN_DELAY && HS_THRASH_DOWN_MAX >= HS_THRASH_DOWN_MIN)) ||
    { echo "HS_THRASH_*_MAX must not be below HS_THRASH_*_MIN" >&2; exit 2; }
for p in $HS_THRASH_POOLS; do
    case $p in replicated | erasure) ;; *) echo "HS_THRASH_POOLS: unknown pool type $p" >&2; exit 2 ;; esac
done

require_ceph_build ceph-osd ceph_test_rados
export CEPH_OSD=$CEPH_BUILD/bin/ceph-osd
case " $stores " in
*" hybridstore "*) osd_knows_hybridstore "$CEPH_OSD" || skip "$CEPH_OSD does not know osd_objectstore=hybridstore" ;;
esac
for b in ceph-mon ceph-mgr ceph rados ceph-authtool monmaptool uuidgen jq timeout; do
    command -v "$b" > /dev/null || skip "$b is not installed (make qa-deps)"
done
if [ -z "$devices" ]; then
    if [ "$(id -u)" = 0 ] && [ -e /dev/loop-control ]; then devices="loop"; else devices="file"; fi
fi
export HS_DEVICES=$devices
if [ "$HS_DEVICES" = loop ]; then
    [ "$(id -u)" = 0 ] || skip "HS_DEVICES=loop needs root (loop devices)"
    [ -e /dev/loop-control ] || skip "HS_DEVICES=loop: no /dev/loop-control"
fi
export HS_AUTH=cephx
TEST_RADOS=$CEPH_BUILD/bin/ceph_test_rados

mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
results=$out/results.tsv
printf 'store\tpool\tminutes\tops\tresult\tkills\touts\tpg_state\tdeep_scrub\tstatus\n' > "$results"
dir=
store=
failed=
interrupted=
release=$(ceph_build_release)

# ---------------------------------------------------------------- teardown

# dir_pids DIR: every process started with this cluster's ceph.conf (the
# daemons, a ceph-osd a killed thrasher was starting), by pid.
dir_pids() {
    local p cmd
    for p in /proc/[0-9]*; do
        cmd=$({ tr '\0' ' ' < "$p/cmdline"; } 2> /dev/null) || continue
        case $cmd in *" -c $1/ceph.conf "*) echo "${p#/proc/}" ;; esac
    done
}

stop_cluster() {
    local pid
    [ -n "$dir" ] && [ -d "$dir" ] || return 0
    touch "$dir/stop-thrasher"
    kill_background "$dir"
    kill_daemons "$dir" TERM
    sleep 1
    # A ceph-osd that a killed thrasher was starting writes its pid file late.
    for pid in $(dir_pids "$dir"); do kill -KILL "$pid" 2> /dev/null; done
    kill_daemons "$dir" KILL
}

save_logs() {
    [ -n "$dir" ] && [ -d "$dir" ] && [ -n "$store" ] || return 0
    local f dest=$out/$store
    mkdir -p "$dest"
    for f in "$dir"/*.log "$dir"/thrash-* "$dir"/rados-* "$dir"/ceph.conf "$dir"/events-* "$dir"/inconsistent-*; do
        [ -f "$f" ] || continue
        case $f in
        *.out) gzip -c "$f" > "$dest/$(basename "$f").gz" ;;
        *) cp "$f" "$dest/" ;;
        esac
    done
}

cleanup() {
    if [ -n "$dir" ] && [ -d "$dir" ]; then
        stop_cluster
        save_logs
        teardown "$dir"
        [ -n "$failed$interrupted" ] && log "logs of $store in $out/$store"
    fi
    dir=
}
# The traps may fire inside a command whose stderr is /dev/null (a wait
# loop's probe): they write to the script's own stderr, kept on fd 9.
exec 9>&2
trap 'cleanup 2>&9' EXIT
trap 'interrupted=1; log "interrupted: tearing down" 2>&9; exit 130' INT TERM

# ---------------------------------------------------------------- helpers

q() { HS_CMD_TIMEOUT=${HS_CMD_TIMEOUT:-60} ceph_cli "$@"; }

osd_alive() { daemon_pid "$dir" "osd.$1" > /dev/null; }

# event POOL WHAT OSD [TEXT]: one thrasher event, counted for the report.
event() {
    local text="$2 osd.$3${4:+ $4}"
    printf '%s\t%s\t%s\n' "$1" "$2" "$3" >> "$dir/events-$1.tsv"
    echo "$(date +%H:%M:%S) $text" >> "$dir/thrash-$1.log"
    log "[thrasher] $store/$1: $text"
}

# count_events POOL WHAT: how many WHAT events the pool's thrasher recorded.
count_events() { awk -F'\t' -v w="$2" '$2 == w { n++ } END { print n + 0 }' "$dir/events-$1.tsv" 2> /dev/null; }

# shellcheck disable=SC2317  # run through thrasher, in the background
# watch_sleep POOL SECONDS [SKIP_OSD]: sleep, one second at a time, checking
# that every OSD but SKIP_OSD (the one killed) is still running; one that is
# not died on its own: counted, and started again so that the run goes on.
# Returns 1 early when the thrasher is told to stop.
watch_sleep() {
    local pool=$1 n=$2 skip_id=${3:-} i id
    for ((i = 0; i < n; i++)); do
        [ -e "$dir/stop-thrasher" ] && return 1
        for ((id = 0; id < NUM_OSDS; id++)); do
            [ "$id" = "$skip_id" ] && continue
            osd_alive "$id" && continue
            event "$pool" unexpected-death "$id" "(not killed by the thrasher; restarting it)"
            activate_osd "$dir" "$id" > /dev/null 2>&1 || event "$pool" revive-failed "$id"
        done
        sleep 1
    done
    [ ! -e "$dir/stop-thrasher" ]
}

# shellcheck disable=SC2317
# draw VAR MIN MAX: a number from the thrasher's seeded sequence into VAR. In
# the thrasher's own shell: bash reseeds RANDOM in a $(...) subshell.
draw() { printf -v "$1" '%d' $(($2 + RANDOM % ($3 - $2 + 1))); }

# shellcheck disable=SC2317  # run through run_in_background
# thrasher POOL: the background thrasher of one pool's run (see the header).
thrasher() {
    local pool=$1 id pid t delay
    RANDOM=$HS_THRASH_SEED
    echo "$(date +%H:%M:%S) thrasher seed $HS_THRASH_SEED" >> "$dir/thrash-$pool.log"
    while [ ! -e "$dir/stop-thrasher" ]; do
        draw delay "$HS_THRASH_MIN_DELAY" "$HS_THRASH_MAX_DELAY"
        watch_sleep "$pool" "$delay" || break
        id=$((RANDOM % NUM_OSDS))
        draw t "$HS_THRASH_DOWN_MIN" "$HS_THRASH_DOWN_MAX"
        if ((RANDOM % 100 < HS_THRASH_OUT_CHANCE)); then
            q osd out "$id" > /dev/null 2>&1 || { event "$pool" out-failed "$id"; continue; }
            event "$pool" out "$id" "(in again after ${t}s)"
            watch_sleep "$pool" "$t"
            until q osd in "$id" > /dev/null 2>&1; do sleep 5; done
            event "$pool" in "$id"
        else
            pid=$(daemon_pid "$dir" "osd.$id") || continue
            stop_osd "$dir" "$id" KILL
            event "$pool" kill "$id" "(SIGKILL pid $pid; revived ${t}s after the mon marks it down)"
            wait_until "$HS_TIMEOUT" "osd.$id down" osd_is_down "$id" > /dev/null 2>&1 ||
                echo "$(date +%H:%M:%S) osd.$id not marked down after ${HS_TIMEOUT}s" >> "$dir/thrash-$pool.log"
            watch_sleep "$pool" "$t" "$id"
            if activate_osd "$dir" "$id" >> "$dir/thrash-$pool.log" 2>&1; then
                event "$pool" revive "$id" "(pid $(daemon_pid "$dir" "osd.$id"))"
            else
                event "$pool" revive-failed "$id"
                return 1
            fi
        fi
    done
    echo "$(date +%H:%M:%S) thrasher stopped" >> "$dir/thrash-$pool.log"
}

# shellcheck disable=SC2317  # run through run_in_background
# run_test_rados POOL ARGS...: ceph_test_rados, bounded, output in DIR/rados-POOL.{out,err}.
run_test_rados() {
    local pool=$1
    shift
    exec timeout -k 30 $((seconds + HS_THRASH_DRAIN)) "$TEST_RADOS" "$@" \
        > "$dir/rados-$pool.out" 2> "$dir/rados-$pool.err"
}

# The op weights of qa/tasks/rados.py for the workload (see the header).
rados_args() {
    local pool=$1 w args=()
    local -A weights=([read]=100 [write]=100 [delete]=50 [append]=100 [snap_create]=50 [snap_remove]=50
        [rollback]=50 [copy_from]=50 [setattr]=25 [rmattr]=25)
    if [ "$pool" = erasure ]; then
        args+=(--no-omap)
        [ "$HS_THRASH_EC_OVERWRITES" = 1 ] || { args+=(--ec-pool); weights[write]=0; }
    fi
    # rados.py's write_append_excl (on by default).
    weights[write]=$((weights[write] / 2)); weights[write_excl]=${weights[write]}
    weights[append]=$((weights[append] / 2)); weights[append_excl]=${weights[append]}
    args+=(--max-ops "$HS_THRASH_OPS" --objects 1024 --max-in-flight 64 --size 16384
        --min-stride-size 1638 --max-stride-size 3276 --max-seconds "$seconds")
    for w in read write write_excl delete append append_excl snap_create snap_remove rollback copy_from setattr rmattr; do
        [ "${weights[$w]}" -gt 0 ] && args+=(--op "$w" "${weights[$w]}")
    done
    printf '%s\n' "${args[@]}"
}

# pg_states POOL: "16 active+clean" or "12 active+clean, 4 active+recovering".
pg_states() {
    pg_json "$1" | jq -r 'group_by(.state) | map("\(length) \(.[0].state)") | join(", ")'
}

cluster_pg_summary() {
    q pg stat -f json 2> /dev/null | jq -r '(.pg_summary // .) | [.num_pg_by_state[]? | "\(.num) \(.name)"] | join(", ")'
}

show_tails() {
    local pool=$1 id
    {
        echo "---- ceph_test_rados stderr (tail)"; tail -30 "$dir/rados-$pool.err" 2> /dev/null
        echo "---- ceph_test_rados stdout (tail)"; tail -20 "$dir/rados-$pool.out" 2> /dev/null
        echo "---- thrasher"; tail -30 "$dir/thrash-$pool.log" 2> /dev/null
        echo "---- crash lines in the OSD logs"; osd_crash_lines "$dir" "$NUM_OSDS"
        for ((id = 0; id < NUM_OSDS; id++)); do
            echo "---- osd.$id.log (tail)"; tail -25 "$dir/osd.$id.log" 2> /dev/null
        done
        echo "---- ceph health detail"; q health detail 2> /dev/null
        echo "---- ceph pg ls-by-pool thrash-$pool (not active+clean)"
        q pg ls-by-pool "thrash-$pool" 2> /dev/null | grep -v 'active+clean ' | head -20
    } >&2
}

record() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >> "$results"; }

# op_counts POOL: "12345 ops (read 3000, write 1500, ...)" from ceph_test_rados' stdout.
op_counts() {
    awk '
        /^[0-9]+: write initial/ { c["write(initial)"]++; n++; next }
        /^[0-9]+: write \(excl\)/ { c["write_excl"]++; n++; next }
        /^[0-9]+: done / { next }
        /^[0-9]+: chunk read/ { c["chunk_read"]++; n++; next }
        /^[0-9]+: [a-z]/ { c[$2]++; n++; next }
        /^append oid \(excl\)/ { c["append_excl"]++; n++; next }
        /^append oid/ { c["append"]++; n++; next }
        END {
            s = ""
            for (k in c) s = s (s == "" ? "" : ", ") k " " c[k]
            printf "%d ops (%s)\n", n, s
        }' "$dir/rados-$1.out"
}

# ---------------------------------------------------------------- one pool

create_test_pool() {
    local pool=$1 name=thrash-$1
    if [ "$pool" = replicated ]; then
        q osd pool create "$name" "$HS_THRASH_PGS" "$HS_THRASH_PGS" replicated > /dev/null || return 1
        q osd pool set "$name" size 3 > /dev/null || return 1
        q osd pool set "$name" min_size 2 > /dev/null || return 1
    else
        q osd erasure-code-profile set thrash-k2m1 k=2 m=1 crush-failure-domain=osd > /dev/null || return 1
        q osd pool create "$name" "$HS_THRASH_PGS" "$HS_THRASH_PGS" erasure thrash-k2m1 > /dev/null || return 1
        if [ "$HS_THRASH_EC_OVERWRITES" = 1 ]; then
            q osd pool set "$name" allow_ec_overwrites true > /dev/null || { fail "allow_ec_overwrites on $name"; return 1; }
        fi
    fi
    q osd pool application enable "$name" rados > /dev/null || return 1
    wait_for_clean "$HS_TIMEOUT" || return 1
    log "$store: pool $name: $(q osd pool get "$name" all -f json 2> /dev/null |
        jq -c '{size, min_size, pg_num, erasure_code_profile, allow_ec_overwrites} | with_entries(select(.value != null))')"
}

# run_pool POOL: the workload and the thrasher, then the checks; one row.
run_pool() {
    local pool=$1 name=thrash-$1 rc status=passed ops result pgstate scrub kills outs
    local -a args
    create_test_pool "$pool" || { record "$store" "$pool" "$HS_THRASH_MINUTES" - "pool not created" 0 0 - - FAILED; return 1; }
    mapfile -t args < <(rados_args "$pool")
    echo "$TEST_RADOS ${args[*]} --pool $name" > "$dir/rados-$pool.cmd"
    log "=== $store/$pool: ceph_test_rados for $HS_THRASH_MINUTES min, thrasher seed $HS_THRASH_SEED"
    log "    $(cat "$dir/rados-$pool.cmd")"
    : > "$dir/events-$pool.tsv"
    rm -f "$dir/stop-thrasher"
    run_in_background "$dir" "thrasher-$pool" thrasher "$pool"
    local tpid=$!
    run_in_background "$dir" "rados-$pool" run_test_rados "$pool" "${args[@]}" --pool "$name"
    local rpid=$! start=$SECONDS last=$SECONDS
    while kill -0 "$rpid" 2> /dev/null; do
        if ((SECONDS - last >= 30)); then
            last=$SECONDS
            local lastop
            lastop=$(tail -n 400 "$dir/rados-$pool.out" 2> /dev/null | grep -oE '^[0-9]+:' | tail -1)
            log "$store/$pool: $((SECONDS - start))/$seconds s, op ${lastop%:}, kills $(count_events "$pool" kill)," \
                "outs $(count_events "$pool" out), PGs: $(HS_CMD_TIMEOUT=20 cluster_pg_summary)"
        fi
        sleep 1
    done
    wait "$rpid"
    rc=$?
    local elapsed=$((SECONDS - start))
    rm -f "$dir/rados-$pool.bgpid"
    log "$store/$pool: ceph_test_rados exited $rc after $elapsed s; stopping the thrasher"
    touch "$dir/stop-thrasher"
    local t0=$SECONDS
    while kill -0 "$tpid" 2> /dev/null && ((SECONDS - t0 < 2 * HS_TIMEOUT + 120)); do sleep 1; done
    if kill -0 "$tpid" 2> /dev/null; then
        log "$store/$pool: the thrasher did not stop; killing it"
        kill -KILL -- "-$tpid" 2> /dev/null
        status=FAILED
    fi
    wait "$tpid" || { log "$store/$pool: the thrasher failed (a revive)"; status=FAILED; }
    rm -f "$dir/thrasher-$pool.bgpid"
    kills=$(count_events "$pool" kill)
    outs=$(count_events "$pool" out)

    # Every OSD running, up and in (an OSD found dead here died on its own).
    local id
    for ((id = 0; id < NUM_OSDS; id++)); do
        if ! osd_alive "$id"; then
            event "$pool" unexpected-death "$id" "(found dead after the run)"
            activate_osd "$dir" "$id" > /dev/null 2>&1 || event "$pool" revive-failed "$id"
        fi
        q osd in "$id" > /dev/null 2>&1
    done

    local errors
    errors=$(sed -n 's/^\([0-9][0-9]*\) errors\.$/\1/p' "$dir/rados-$pool.err" | tail -1)
    ops=$(op_counts "$pool")
    if [ "$rc" = 0 ] && [ "$errors" = 0 ]; then
        result="exit 0, 0 errors"
    else
        result="exit $rc, errors ${errors:-?}"
        [ "$rc" = 124 ] && result="$result (timed out)"
        status=FAILED
        fail "$store/$pool: ceph_test_rados $result"
    fi
    log "$store/$pool: $ops"

    local unexpected
    unexpected=$(awk -F'\t' '$2 == "unexpected-death" || $2 == "revive-failed" { print $2 " osd." $3 }' "$dir/events-$pool.tsv")
    if [ -n "$unexpected" ]; then
        status=FAILED
        fail "$store/$pool: OSDs died other than by the thrasher's kills: $(echo "$unexpected" | tr '\n' ' ')"
    fi
    local crashes
    crashes=$(osd_crash_lines "$dir" "$NUM_OSDS")
    if [ -n "$crashes" ]; then
        status=FAILED
        fail "$store/$pool: crash lines in the OSD logs:"
        echo "$crashes" >&2
    fi

    log "$store/$pool: waiting for every PG active+clean (up to $HS_THRASH_CLEAN_TIMEOUT s)"
    if wait_for_clean "$HS_THRASH_CLEAN_TIMEOUT"; then
        pgstate=$(pg_states "$name")
    else
        pgstate="not clean after ${HS_THRASH_CLEAN_TIMEOUT}s: $(pg_states "$name")"
        status=FAILED
        fail "$store/$pool: $pgstate"
    fi
    log "$store/$pool: PGs: $pgstate; deep-scrubbing every PG of $name"
    if scrub=$(deep_scrub "$name" "$HS_THRASH_SCRUB_TIMEOUT"); then
        log "$store/$pool: deep-scrub: $scrub"
    else
        status=FAILED
        fail "$store/$pool: deep-scrub: $scrub"
        pg_json "$name" | jq -c '.[] | select(.state != "active+clean") | {pgid, state}' >&2
        # What scrub found, object by object, kept with the logs.
        local pg
        for pg in $(rados_cli list-inconsistent-pg "$name" --format json 2> /dev/null | jq -r '.[]'); do
            rados_cli list-inconsistent-obj "$pg" --format json-pretty > "$dir/inconsistent-$pg.json" 2>&1
            log "$store/$pool: pg $pg: $(jq -c '[.inconsistents[] | {object: .object.name, errors, shards: [.shards[] | {osd, errors, omap_digest, data_digest}]}]' "$dir/inconsistent-$pg.json" 2> /dev/null)"
        done
    fi
    # A scrub that found nothing leaves the PGs active+clean.
    all_pgs_clean || { status=FAILED; pgstate="$pgstate; after deep-scrub: $(pg_states "$name")"; }

    local mins
    mins=$(awk -v s="$elapsed" 'BEGIN { printf "%.1f", s / 60 }')
    record "$store" "$pool" "$HS_THRASH_MINUTES ($mins run)" "${ops%% (*}" "$result" "$kills" "$outs" "$pgstate" "${scrub:-}" "$status"
    echo "$store $pool: $ops" >> "$out/ops.txt"
    [ "$status" = passed ] || show_tails "$pool"
    # As rados.py: the pool goes after its run (so that the next pool's
    # checks see only their own PGs).
    q osd pool delete "$name" "$name" --yes-i-really-really-mean-it > /dev/null 2>&1 ||
        log "$store/$pool: could not delete pool $name"
    [ "$status" = passed ] || return 1
    log "$store/$pool: passed ($kills kills, $outs outs)"
}

# ---------------------------------------------------------------- one store

run_store() {
    store=$1
    export HS_OBJECTSTORE=$store HS_BLUESTORE_DB=ssd
    dir=$(mktemp -d "${TMPDIR:-/tmp}/hs-thrash-$store.XXXXXX") || return 1
    CEPH_MON=127.0.0.1:$(pick_mon_port 17900) || return 1
    export CEPH_MON
    setup "$dir" || return 1
    # The OSDs report rotational (the HDD decides), so Ceph would sleep 0.1 s
    # between recovery ops; loop devices on a file need no pacing.
    conf_set "$dir" osd "osd recovery sleep hdd" 0
    conf_set "$dir" osd "osd recovery sleep hybrid" 0
    # Likewise between snap trims (5 s for an HDD, 2 s for BlueStore's HDD +
    # SSD db): minutes of snaptrim before the PGs are clean, and not the
    # same for both stores.
    conf_set "$dir" osd "osd snap trim sleep hdd" 0
    conf_set "$dir" osd "osd snap trim sleep hybrid" 0
    # EC overwrites on a store that does not report bluestore (README.md).
    conf_set "$dir" mon "mon debug no require bluestore for ec overwrites" true
    # Every pool replicated 3 times (the helpers' default is 1), the mgr's
    # device_health_metrics too: a killed OSD takes no PG down with it.
    conf_set "$dir" global "osd pool default size" 3
    conf_set "$dir" global "osd pool default min size" 2
    conf_render "$dir"
    log "=== $store: mon, mgr, $NUM_OSDS OSDs ($HS_DEVICES devices, SSD $HS_SSD_SIZE, HDD $HS_HDD_SIZE, cephx), dir $dir"
    if ! run_cluster "$dir" "$NUM_OSDS"; then
        record "$store" - "$HS_THRASH_MINUTES" - "not run: the cluster did not come up" 0 0 - - FAILED
        fail "$store: the cluster did not come up"
        return 1
    fi
    local pool rc=0
    for pool in $HS_THRASH_POOLS; do
        if [ "$rc" != 0 ] && ! { osd_is_up 0 && osd_is_up 1 && osd_is_up 2; } > /dev/null 2>&1; then
            record "$store" "$pool" "$HS_THRASH_MINUTES" - "not run: the cluster is broken" 0 0 - - FAILED
            continue
        fi
        run_pool "$pool" || rc=1
    done
    [ "$rc" = 0 ] || failed=1
    cleanup
    return $rc
}

log "thrash: stores: $stores; pools: $HS_THRASH_POOLS; $HS_THRASH_MINUTES min each; seed $HS_THRASH_SEED; $release"
log "thrash: output in $out"
overall=0
for s in $stores; do
    run_store "$s" || { overall=1; failed=1; fail "$s thrash run"; cleanup; }
done

report() {
    echo "# ceph_test_rados under thrashing"
    echo
    echo "$release ($CEPH_BUILD), $NUM_OSDS OSDs ($HS_DEVICES devices, SSD $HS_SSD_SIZE, HDD $HS_HDD_SIZE), cephx;"
    echo "thrasher seed $HS_THRASH_SEED: every $HS_THRASH_MIN_DELAY-$HS_THRASH_MAX_DELAY s, either SIGKILL of one OSD, revived"
    echo "$HS_THRASH_DOWN_MIN-$HS_THRASH_DOWN_MAX s after the mon marks it down, or ($HS_THRASH_OUT_CHANCE% of the actions) \`ceph osd out\`"
    echo "of one OSD and \`in\` $HS_THRASH_DOWN_MIN-$HS_THRASH_DOWN_MAX s later; one OSD at a time."
    echo "Pools ($HS_THRASH_POOLS): replicated size 3 min_size 2; erasure k=2 m=1 crush-failure-domain=osd"
    echo "(allow_ec_overwrites: $HS_THRASH_EC_OVERWRITES); $HS_THRASH_PGS PGs each. ceph_test_rados as run:"
    echo
    local p f
    for p in $HS_THRASH_POOLS; do
        for f in "$out"/*/"rados-$p.cmd"; do
            [ -f "$f" ] && { echo "- $p: \`$(sed "s|$CEPH_BUILD/bin/||" "$f")\`"; break; }
        done
    done
    echo
    echo "| store | pool | minutes | ceph_test_rados ops | result | kills | outs | final PG state | deep-scrub | verdict |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    tail -n +2 "$results" | awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 }'
    echo
    if [ -s "$out/ops.txt" ]; then
        echo "Ops by type:"
        echo
        sed 's/^/- /' "$out/ops.txt"
        echo
    fi
    echo "Logs of every daemon, the thrasher and ceph_test_rados: $out/<store>/."
}
[ -e "$out/ops.txt" ] || : > "$out/ops.txt"
report > "$out/REPORT.md"
echo
cat "$out/REPORT.md"
if [ "$overall" != 0 ] || grep -q $'\tFAILED$' "$results"; then
    echo "thrash: FAILED (logs in $out)"
    exit 1
fi
echo "thrash: passed"
exit 0
