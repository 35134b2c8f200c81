#!/usr/bin/env bash
# Basic life of a hybridstore OSD: mkfs and mount through ceph-osd, data and
# omap round trips through rados, a clean restart with offline fsck by both
# tools, and an OSD on loop devices (SSD rotational=0, HDD rotational=1).
# shellcheck source=qa/standalone/hybridstore-helpers.sh
source "$(dirname "$0")/../hybridstore-helpers.sh"

run() {
    local dir=$1
    shift
    CEPH_MON=127.0.0.1:$(pick_mon_port 17100) || return 1
    export CEPH_MON
    run_tests "$dir" "$@"
}

# The ceph-objectstore-tool built with the ceph-osd under test (Debian's
# cannot open a hybridstore).
objectstore_tool() {
    local dir=$1 id=$2 cot lib
    shift 2
    cot=${CEPH_OBJECTSTORE_TOOL:-$(dirname "$CEPH_OSD")/ceph-objectstore-tool}
    [ -x "$cot" ] || { fail "no ceph-objectstore-tool next to $CEPH_OSD (set CEPH_OBJECTSTORE_TOOL)"; return 1; }
    lib=$(dirname "$cot")/../lib
    if [ -d "$lib" ] && [ "$(dirname "$cot")" != /usr/bin ]; then
        LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} CEPH_CONF=$dir/ceph.conf timeout 300 "$cot" \
            --no-mon-config --data-path "$dir/osd.$id" "$@"
    else
        CEPH_CONF=$dir/ceph.conf timeout 300 "$cot" --no-mon-config --data-path "$dir/osd.$id" "$@"
    fi
}

TEST_mkfs_mount() {
    local dir=$1
    run_cluster "$dir" 1 || return 1
    [ "$(cat "$dir/osd.0/type")" = "$HS_OBJECTSTORE" ] || { fail "type file: $(cat "$dir/osd.0/type")"; return 1; }
    local reported
    reported=$(osd_metadata_field 0 osd_objectstore)
    [ "$reported" = "$HS_OBJECTSTORE" ] || { fail "osd metadata osd_objectstore=$reported"; return 1; }
    if [ "$HS_OBJECTSTORE" = hybridstore ]; then
        perf_dump 0 | jq -e 'has("hybridstore")' > /dev/null ||
            { fail "perf dump of osd.0 has no hybridstore section"; return 1; }
        # The labels are readable without mounting, even while the OSD runs.
        hybridstore_tool --path "$dir/osd.0" show-label > "$dir/labels.json" || return 1
        jq -e '[.[] | .role] | sort == ["hdd", "ssd"]' "$dir/labels.json" > /dev/null ||
            { cat "$dir/labels.json" >&2; fail "device labels"; return 1; }
    fi
    # A second start of the same store must be refused while it is mounted.
    # (own pid file, socket and log, so the running OSD's stay intact)
    if timeout 120 "$CEPH_OSD" -c "$dir/ceph.conf" -i 0 -f --pid-file "$dir/second.pid" \
        --admin-socket "$dir/second.asok" --log-file "$dir/second.log" > "$dir/second.out" 2>&1; then
        fail "a second ceph-osd -i 0 started on a mounted store"
        return 1
    fi
    osd_is_up 0 || { fail "osd.0 went down after the refused second start"; return 1; }
}

TEST_put_get() {
    local dir=$1 size
    run_cluster "$dir" 1 || return 1
    create_pool test 8 || return 1
    local sizes=(0 1 4095 4096 65536 1048575 1048577 4194304)
    for size in "${sizes[@]}"; do
        put_and_check test "obj-$size" "$size" "$dir" || return 1
    done
    [ "$(rados_cli -p test ls | wc -l)" -eq ${#sizes[@]} ] || { fail "rados ls count"; return 1; }
    # Append, truncate and overwrite an object, checking each step.
    make_payload tail 5000 "$dir/tail" || return 1
    rados_cli -p test append obj-4096 "$dir/tail" || return 1
    make_payload obj-4096 4096 "$dir/want" && cat "$dir/tail" >> "$dir/want"
    rados_cli -p test get obj-4096 "$dir/got" || return 1
    cmp -s "$dir/want" "$dir/got" || { fail "append read back"; return 1; }
    rados_cli -p test truncate obj-4096 3000 || return 1
    head -c 3000 "$dir/want" > "$dir/want.t"
    rados_cli -p test get obj-4096 "$dir/got" || return 1
    cmp -s "$dir/want.t" "$dir/got" || { fail "truncate read back"; return 1; }
    rados_cli -p test rm obj-1 || return 1
    if rados_cli -p test stat obj-1 2> /dev/null; then fail "obj-1 still there after rm"; return 1; fi
}

TEST_omap() {
    local dir=$1 i
    run_cluster "$dir" 1 || return 1
    create_pool test 8 || return 1
    rados_cli -p test create omapobj || return 1
    for i in $(seq 1 100); do
        rados_cli -p test setomapval omapobj "key-$(printf %03d "$i")" "value-$i" || return 1
    done
    rados_cli -p test setomapheader omapobj "the header" || return 1
    rados_cli -p test setxattr omapobj user.attr "attr value" || return 1
    check_omap() {
        [ "$(rados_cli -p test listomapkeys omapobj | wc -l)" -eq 99 ] || { fail "omap key count"; return 1; }
        rados_cli -p test getomapval omapobj key-042 "$dir/v" > /dev/null || return 1
        [ "$(cat "$dir/v")" = value-42 ] || { fail "omap value of key-042"; return 1; }
        rados_cli -p test getomapheader omapobj "$dir/h" > /dev/null || return 1
        [ "$(cat "$dir/h")" = "the header" ] || { fail "omap header"; return 1; }
        [ "$(rados_cli -p test getxattr omapobj user.attr)" = "attr value" ] || { fail "xattr"; return 1; }
    }
    rados_cli -p test rmomapkey omapobj key-100 || return 1
    check_omap || return 1
    # The same after a restart (from the store, not a cache).
    restart_osd "$dir" 0 || return 1
    check_omap || return 1
}

TEST_restart_fsck() {
    local dir=$1 i
    run_cluster "$dir" 1 || return 1
    create_pool test 8 || return 1
    for i in $(seq 1 40); do
        make_payload "obj-$i" $((i * 7919)) "$dir/in" && rados_cli -p test put "obj-$i" "$dir/in" || return 1
    done
    stop_osd "$dir" 0 || return 1
    if [ "$HS_OBJECTSTORE" = hybridstore ]; then
        hybridstore_tool --path "$dir/osd.0" fsck || { fail "hybridstore-tool fsck"; return 1; }
        hybridstore_tool --path "$dir/osd.0" df || return 1
    fi
    objectstore_tool "$dir" 0 --op fsck || { fail "ceph-objectstore-tool --op fsck"; return 1; }
    objectstore_tool "$dir" 0 --op list > "$dir/list" || { fail "ceph-objectstore-tool --op list"; return 1; }
    [ "$(grep -c '"oid":"obj-' "$dir/list")" -eq 40 ] || { fail "objectstore-tool lists $(grep -c '"oid":"obj-' "$dir/list") objects, not 40"; return 1; }
    activate_osd "$dir" 0 || return 1
    wait_for_clean || return 1
    for i in $(seq 1 40); do
        check_object test "obj-$i" $((i * 7919)) "$dir" || return 1
    done
}

TEST_loop_devices() {
    local dir=$1
    [ "$(id -u)" = 0 ] || { echo "SKIPPED: loop devices need root"; return "$HS_SKIP"; }
    HS_DEVICES=loop run_cluster "$dir" 1 || return 1
    [ "$(wc -l < "$dir/loops")" -eq 2 ] || { fail "expected two loop devices"; return 1; }
    if [ "$HS_OBJECTSTORE" = hybridstore ]; then
        # osd_devices attached the SSD first, then the HDD; the store links
        # them into its directory and labels both.
        local ssd hdd
        { read -r ssd; read -r hdd; } < "$dir/loops"
        [ "$(readlink -f "$dir/osd.0/block.ssd")" = "$ssd" ] || { fail "block.ssd is not $ssd"; return 1; }
        [ "$(readlink -f "$dir/osd.0/block.hdd")" = "$hdd" ] || { fail "block.hdd is not $hdd"; return 1; }
        hybridstore_tool --path "$dir/osd.0" show-label > "$dir/labels.json" || return 1
        jq -e '[.[] | .role] | sort == ["hdd", "ssd"]' "$dir/labels.json" > /dev/null ||
            { cat "$dir/labels.json" >&2; fail "labels on the loop devices"; return 1; }
    else
        [ "$(osd_metadata_field 0 bluefs_db_rotational)" = 0 ] || { fail "db device not rotational=0"; return 1; }
        [ "$(osd_metadata_field 0 bluestore_bdev_rotational)" = 1 ] || { fail "block device not rotational=1"; return 1; }
    fi
    create_pool test 8 || return 1
    put_and_check test big 4194304 "$dir" || return 1
    put_and_check test small 8192 "$dir" || return 1
}

main hybridstore-basic "$@"
