#!/usr/bin/env bash
# Crashes under load: OSDs killed with SIGKILL while clients write, restarted,
# and the cluster recovered; every object whose write was acknowledged must
# read back with the bytes written.
# shellcheck source=qa/standalone/hybridstore-helpers.sh
source "$(dirname "$0")/../hybridstore-helpers.sh"

run() {
    local dir=$1
    shift
    CEPH_MON=127.0.0.1:$(pick_mon_port 17300) || return 1
    export CEPH_MON
    run_tests "$dir" "$@"
}

# writer DIR POOL TAG: writes objects TAG-1, TAG-2, ... until DIR/stop-TAG
# exists; a name goes to DIR/acked-TAG only after rados put returned 0. Sizes
# cycle through small (SSD) and large (HDD) objects.
writer() {
    local dir=$1 pool=$2 tag=$3 i=0 size
    local sizes=(4096 12288 65536 200000 1100000 3000000)
    mkdir -p "$dir/w-$tag"
    while [ -d "$dir" ] && [ ! -e "$dir/stop-$tag" ]; do
        i=$((i + 1))
        size=${sizes[$((i % ${#sizes[@]}))]}
        make_payload "$tag-$i" "$size" "$dir/w-$tag/in" || return 1
        if HS_CMD_TIMEOUT=120 rados_cli -p "$pool" put "$tag-$i" "$dir/w-$tag/in" 2> /dev/null; then
            echo "$tag-$i $size" >> "$dir/acked-$tag"
        fi
    done
}

start_writer() {
    run_in_background "$1" "writer-$3" writer "$@"
}

stop_writer() {
    local dir=$1 tag=$2 pid
    touch "$dir/stop-$tag"
    pid=$(cat "$dir/writer-$tag.bgpid")
    local start=$SECONDS
    while kill -0 "$pid" 2> /dev/null; do
        if ((SECONDS - start > 180)); then fail "writer $tag did not stop"; kill "$pid"; return 1; fi
        sleep 0.5
    done
    wait "$pid" 2> /dev/null || true
    rm -f "$dir/writer-$tag.bgpid"
}

# check_acked DIR POOL TAG: every acknowledged object reads back intact.
check_acked() {
    local dir=$1 pool=$2 tag=$3 name size n=0
    [ -s "$dir/acked-$tag" ] || { fail "no write of $tag was acknowledged"; return 1; }
    while read -r name size; do
        check_object "$pool" "$name" "$size" "$dir" || return 1
        n=$((n + 1))
    done < "$dir/acked-$tag"
    log "$n acknowledged objects of $tag read back intact"
}

# One OSD, pool size 1: a SIGKILL is a crash of the only copy, so what was
# acknowledged must have been durable in the store.
TEST_kill9_single_osd() {
    local dir=$1 round
    run_cluster "$dir" 1 || return 1
    create_pool test 8 || return 1
    start_writer "$dir" test single
    for round in 1 2 3; do
        sleep 4
        log "round $round: kill -9 osd.0"
        stop_osd "$dir" 0 KILL || return 1
        activate_osd "$dir" 0 || return 1
    done
    sleep 2
    stop_writer "$dir" single || return 1
    wait_for_clean || return 1
    check_acked "$dir" test single
}

# Three OSDs, pool size 3 (min_size 2): OSDs killed in turn while a client
# writes, each restarted and recovered; then all three killed at once.
TEST_kill9_replicated_recovery() {
    local dir=$1 id
    run_cluster "$dir" 3 || return 1
    create_pool rep 16 3 || return 1
    ceph_cli osd pool set rep min_size 2 > /dev/null 2>&1 || return 1
    start_writer "$dir" rep load
    for id in 1 2 0; do
        sleep 4
        log "kill -9 osd.$id under load"
        stop_osd "$dir" "$id" KILL || return 1
        wait_for_osd down "$id" || return 1
        sleep 3
        activate_osd "$dir" "$id" || return 1
    done
    stop_writer "$dir" load || return 1
    wait_for_clean || return 1
    check_acked "$dir" rep load || return 1
    log "kill -9 every OSD at once"
    for id in 0 1 2; do stop_osd "$dir" "$id" KILL || return 1; done
    for id in 0 1 2; do activate_osd "$dir" "$id" || return 1; done
    wait_for_clean || return 1
    check_acked "$dir" rep load
}

main hybridstore-recovery "$@"
