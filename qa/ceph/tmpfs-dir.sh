#!/usr/bin/env bash
# An OSD whose data directory is a tmpfs, as ceph-volume, cephadm and Rook
# make them: everything the OSD needs after a reboot comes from its devices'
# labels (issue 55, "the data directory disposable").
#
#   CEPH_BUILD=DIR qa/ceph/tmpfs-dir.sh [hybridstore|bluestore|both] [REPORT.md]
#
# For each store asked for (default both; hybridstore with its RocksDB and
# journal on the SSD, `hybridstore kv location = device`; BlueStore with
# block on the HDD and block.db on the SSD, the control row): Debian's
# ceph-mon and ceph-mgr, cephx, one OSD of $CEPH_BUILD/bin/ceph-osd on two
# loop devices (the SSD marked rotational=0), its data directory a tmpfs
# holding only the device links, `type`, and what `ceph-osd --mkfs --key`
# writes (the key goes to the label as `osd_key`, as ceph-volume passes it).
# Then:
#   1. objects of 4 KiB to 4 MiB written with xattrs and omap keys;
#   2. a reboot: the OSD stopped, the tmpfs unmounted and mounted again empty,
#      primed from the devices (hybridstore-tool prime-osd-dir, or
#      ceph-bluestore-tool prime-osd-dir and the block and block.db links
#      ceph-volume makes after it), the OSD started: every object, xattr and omap key back;
#   3. the disks moved to another host: the OSD stopped, its loop devices
#      detached and the images attached again under new device names, a new
#      tmpfs at another path, primed from the new names, the OSD started in a
#      UTS namespace whose hostname is another host's: it rejoins under that
#      host in the CRUSH map with every object back;
#   4. the OSD stopped and its store's own deep fsck clean
#      (hybridstore-tool fsck --deep, ceph-bluestore-tool fsck --deep).
# Exit 0: every row passed; 1: a failure (the cluster kept, its logs named);
# 77: SKIPPED (no CEPH_BUILD, not root, no loop devices, no tmpfs mounts,
# missing tools).
#
# Environment: HS_TMPFS_OBJECTS (24), HS_SSD_SIZE (4G), HS_HDD_SIZE (8G),
# HS_TIMEOUT (300), HS_KEEP (keep the cluster directory), HYBRIDSTORE_TOOL,
# CEPH_BLUESTORE_TOOL (ceph-bluestore-tool on PATH or in CEPH_BUILD).
set -u
export HS_SSD_SIZE=${HS_SSD_SIZE:-4G} HS_HDD_SIZE=${HS_HDD_SIZE:-8G} HS_TIMEOUT=${HS_TIMEOUT:-300}
source "$(dirname "$0")/common.sh"
# shellcheck source=qa/standalone/hybridstore-helpers.sh
source "$HS_TOP/qa/standalone/hybridstore-helpers.sh"

require_ceph_build ceph-osd
which=${1:-both}
report=${2:-}
case $which in
both) stores="hybridstore bluestore" ;;
hybridstore | bluestore) stores=$which ;;
*) echo "usage: $0 [hybridstore|bluestore|both] [REPORT.md]" >&2; exit 2 ;;
esac
export CEPH_OSD=$CEPH_BUILD/bin/ceph-osd
[ "$(id -u)" = 0 ] || skip "tmpfs mounts and loop devices need root"
[ -e /dev/loop-control ] || skip "no /dev/loop-control: loop devices are unavailable"
for b in ceph-mon ceph-mgr ceph rados monmaptool uuidgen jq ceph-authtool unshare losetup; do
    command -v "$b" > /dev/null || skip "$b is not installed (make qa-deps)"
done
bluestore_tool=$(find_bluestore_tool)
case " $stores " in
*" hybridstore "*)
    osd_knows_hybridstore "$CEPH_OSD" || skip "$CEPH_OSD does not know osd_objectstore=hybridstore"
    hybridstore_tool --help > /dev/null 2>&1 || skip "hybridstore-tool not found (set HYBRIDSTORE_TOOL)"
    hybridstore_tool prime-osd-dir --help > /dev/null 2>&1 || skip "this hybridstore-tool has no prime-osd-dir" ;;
esac
case " $stores " in
*" bluestore "*) [ -x "$bluestore_tool" ] || skip "ceph-bluestore-tool not found (set CEPH_BLUESTORE_TOOL)" ;;
esac
probe=$(mktemp -d "${TMPDIR:-/tmp}/hs-tmpfs-probe.XXXXXX")
mount -t tmpfs -o size=1M tmpfs "$probe" 2> /dev/null || { rmdir "$probe"; skip "tmpfs cannot be mounted here"; }
umount "$probe"
rmdir "$probe"

export HS_AUTH=cephx HS_DEVICES=loop
objects=${HS_TMPFS_OBJECTS:-24}
base=$(mktemp -d "${TMPDIR:-/tmp}/hs-tmpfs-dir.XXXXXX")
: > "$base/summary"
dir=
failed=
osd_data=
# The OSD's data directories are mounts: unmounted before the directory goes.
unmount_all() {
    local m
    [ -n "$dir" ] && [ -s "$dir/tmpfs-mounts" ] || return 0
    while read -r m; do
        mountpoint -q "$m" && { umount "$m" || log "umount $m failed"; }
    done < "$dir/tmpfs-mounts"
    : > "$dir/tmpfs-mounts"
}
cleanup() {
    [ -n "$dir" ] || return 0
    kill_daemons "$dir" TERM
    unmount_all
    teardown "$dir" "$failed"
}
trap cleanup EXIT
trap 'failed=1; exit 1' INT TERM

fresh_tmpfs() {
    local where=$1
    mkdir -p "$where" || return 1
    mount -t tmpfs -o size=64M,mode=0755 tmpfs "$where" || { fail "mount tmpfs on $where"; return 1; }
    echo "$where" >> "$dir/tmpfs-mounts"
}

drop_tmpfs() {
    local where=$1
    umount "$where" || { fail "umount $where"; return 1; }
    [ -z "$(ls -A "$where")" ] || { fail "$where is not empty after umount"; return 1; }
}

# The OSD's two devices: loop devices over image files that stay in $dir.
attach_devices() {
    ssd=$(loop_attach "$dir" "$dir/osd.0.ssd.img" 0) && hdd=$(loop_attach "$dir" "$dir/osd.0.hdd.img" 1)
}

detach_devices() {
    losetup -d "$ssd" || { fail "losetup -d $ssd"; return 1; }
    losetup -d "$hdd" || { fail "losetup -d $hdd"; return 1; }
    grep -v -x -e "$ssd" -e "$hdd" "$dir/loops" > "$dir/loops.new"
    mv "$dir/loops.new" "$dir/loops"
}

# The links ceph-volume makes for each store, then `type`.
link_devices() {
    local store=$1 data=$2
    case $store in
    hybridstore) ln -sf "$ssd" "$data/block.ssd" && ln -sf "$hdd" "$data/block.hdd" ;;
    bluestore) ln -sf "$hdd" "$data/block" && ln -sf "$ssd" "$data/block.db" ;;
    esac
}

prime() {
    local store=$1 data=$2
    case $store in
    hybridstore)
        hybridstore_tool --path "$data" prime-osd-dir --dev "$ssd" --dev "$hdd" > "$dir/prime.log" 2>&1 ||
            { cat "$dir/prime.log" >&2; fail "hybridstore-tool prime-osd-dir"; return 1; } ;;
    bluestore)
        "$bluestore_tool" prime-osd-dir --dev "$hdd" --path "$data" > "$dir/prime.log" 2>&1 ||
            { cat "$dir/prime.log" >&2; fail "ceph-bluestore-tool prime-osd-dir"; return 1; }
        # ceph-volume links block and block.db itself after the prime (from
        # its LVM tags): the label keeps no device path.
        ln -sf "$hdd" "$data/block" && ln -sf "$ssd" "$data/block.db" ;;
    esac
    [ -s "$data/keyring" ] || { fail "prime wrote no keyring into $data"; return 1; }
    log "primed $data: $(cd "$data" && ls | tr '\n' ' ')"
}

# start_at DATA [HOST]: osd.0 on the data directory DATA, in a UTS namespace
# named HOST when given (another host for CRUSH), waiting until it is up.
start_at() {
    local data=$1 host=${2:-}
    local args=(-c "$dir/ceph.conf" -i 0 --osd-data "$data" --keyring "$data/keyring")
    if [ -n "$host" ]; then
        unshare --uts sh -c 'hostname "$1" && shift && exec "$@"' sh "$host" "$CEPH_OSD" "${args[@]}" ||
            { tail -20 "$dir/osd.0.log" >&2; fail "ceph-osd on $host did not start"; return 1; }
    else
        "$CEPH_OSD" "${args[@]}" || { tail -20 "$dir/osd.0.log" >&2; fail "ceph-osd did not start"; return 1; }
    fi
    wait_for_osd up 0 || { tail -20 "$dir/osd.0.log" >&2; return 1; }
    check_osd_objectstore 0
}

object_size() {
    local sizes=(4096 65536 1048576 4194304)
    echo "${sizes[$(($1 % 4))]}"
}

write_objects() {
    local i name
    create_pool data 16 || return 1
    for ((i = 0; i < objects; i++)); do
        name=obj-$i
        make_payload "$name" "$(object_size "$i")" "$dir/in" || return 1
        rados_cli -p data put "$name" "$dir/in" || { fail "rados put $name"; return 1; }
        rados_cli -p data setxattr "$name" origin "written-before-reboot-$i" || { fail "setxattr $name"; return 1; }
        rados_cli -p data setomapval "$name" "key-$i" "value-$i" || { fail "setomapval $name"; return 1; }
    done
    log "wrote $objects objects with an xattr and an omap key each"
}

check_objects() {
    local what=$1 i name got
    wait_for_clean "$HS_TIMEOUT" || { fail "the pool did not return to active+clean ($what)"; return 1; }
    for ((i = 0; i < objects; i++)); do
        name=obj-$i
        check_object data "$name" "$(object_size "$i")" "$dir" || { fail "$what: $name"; return 1; }
        got=$(rados_cli -p data getxattr "$name" origin) || { fail "$what: getxattr $name"; return 1; }
        [ "$got" = "written-before-reboot-$i" ] || { fail "$what: xattr of $name is '$got'"; return 1; }
        got=$(rados_cli -p data getomapval "$name" "key-$i" "$dir/omap" > /dev/null 2>&1 && cat "$dir/omap") ||
            { fail "$what: getomapval $name"; return 1; }
        [ "$got" = "value-$i" ] || { fail "$what: omap key of $name is '$got'"; return 1; }
    done
    log "$what: $objects objects, their xattrs and omap keys read back"
}

osd_host() {
    ceph_cli osd find 0 -f json | jq -r '.crush_location.host // empty'
}

deep_fsck() {
    local store=$1 data=$2
    case $store in
    hybridstore) hybridstore_tool --path "$data" fsck --deep > "$dir/fsck.log" 2>&1 ;;
    bluestore) "$bluestore_tool" fsck --deep 1 --path "$data" > "$dir/fsck.log" 2>&1 ;;
    esac || { tail -30 "$dir/fsck.log" >&2; fail "$store fsck --deep of $data"; return 1; }
}

run_store() {
    local store=$1 key uuid got host1 host2
    export HS_OBJECTSTORE=$store
    dir=$base/$store
    CEPH_MON=127.0.0.1:$(pick_mon_port 17800) || return 1
    export CEPH_MON
    setup "$dir" || return 1
    : > "$dir/tmpfs-mounts"
    # conf_base points every OSD at $dir/osd.N's keyring; here the OSD is
    # given its data directory and keyring when it starts.
    [ "$store" = hybridstore ] && conf_set "$dir" osd "hybridstore kv location" device
    conf_render "$dir"
    log "=== $store: mon, mgr, one OSD on a tmpfs data directory (loop devices, SSD $HS_SSD_SIZE, HDD $HS_HDD_SIZE)"
    run_mon "$dir" a || return 1
    run_mgr "$dir" x || return 1

    truncate -s "$HS_SSD_SIZE" "$dir/osd.0.ssd.img" && truncate -s "$HS_HDD_SIZE" "$dir/osd.0.hdd.img" || return 1
    attach_devices || return 1
    osd_data=$dir/osd.0
    fresh_tmpfs "$osd_data" || return 1
    link_devices "$store" "$osd_data" || return 1
    echo "$store" > "$osd_data/type"
    uuid=$(uuidgen)
    key=$(ceph-authtool --gen-print-key) || return 1
    printf '{"cephx_secret": "%s"}\n' "$key" > "$dir/new.json"
    got=$(ceph_cli osd new "$uuid" 0 -i "$dir/new.json") && [ "$got" = 0 ] || { fail "ceph osd new"; return 1; }
    # As ceph-volume: the key given to mkfs, which keeps it in the label.
    "$CEPH_OSD" -c "$dir/ceph.conf" -i 0 --mkfs --osd-uuid "$uuid" --osd-data "$osd_data" --key "$key" \
        > "$dir/osd.0.mkfs.log" 2>&1 || { tail -20 "$dir/osd.0.mkfs.log" >&2; fail "ceph-osd --mkfs"; return 1; }
    printf '[osd.0]\n\tkey = %s\n' "$key" > "$osd_data/keyring"
    log "mkfs: $(cd "$osd_data" && ls | tr '\n' ' ')"
    start_at "$osd_data" || return 1
    write_objects || return 1
    host1=$(osd_host)

    log "--- reboot: stop, unmount the tmpfs, mount it empty, prime, start"
    stop_osd "$dir" 0 TERM || return 1
    drop_tmpfs "$osd_data" || return 1
    fresh_tmpfs "$osd_data" || return 1
    prime "$store" "$osd_data" || return 1
    start_at "$osd_data" || return 1
    check_objects "after a reboot on a fresh tmpfs" || return 1
    echo "$store: reboot onto an empty tmpfs, primed from the devices: $objects objects, xattrs and omap keys back" >> "$base/summary"

    log "--- the disks moved to another host: new device names, a new data directory, another hostname"
    stop_osd "$dir" 0 TERM || return 1
    drop_tmpfs "$osd_data" || return 1
    local old_ssd=$ssd old_hdd=$hdd
    detach_devices || return 1
    # Other loop devices taken first, so that the images come back under
    # names they did not have.
    local spare1 spare2
    truncate -s 1M "$dir/spare.img" || return 1
    spare1=$(loop_attach "$dir" "$dir/spare.img" 1) && spare2=$(loop_attach "$dir" "$dir/spare.img" 1) || return 1
    attach_devices || return 1
    log "devices: ssd $old_ssd -> $ssd, hdd $old_hdd -> $hdd (spares $spare1 $spare2 hold the old names)"
    osd_data=$dir/host2/var/lib/ceph/osd/ceph-0
    fresh_tmpfs "$osd_data" || return 1
    prime "$store" "$osd_data" || return 1
    host2=hs-moved-$$
    start_at "$osd_data" "$host2" || return 1
    got=$(osd_host)
    [ "$got" = "$host2" ] || { fail "osd.0 sits under host '$got' in CRUSH, not $host2 (it was under $host1)"; return 1; }
    check_objects "after the disks moved to $host2" || return 1
    echo "$store: disks moved (new device names, data directory, hostname $host1 -> $host2), primed there: the OSD rejoined with $objects objects" >> "$base/summary"

    stop_osd "$dir" 0 TERM || return 1
    deep_fsck "$store" "$osd_data" || return 1
    log "$store: deep fsck of the moved OSD clean"
    echo "$store: the store's deep fsck after the move: clean" >> "$base/summary"
    kill_daemons "$dir" TERM
    unmount_all
    teardown "$dir"
    dir=
}

for s in $stores; do
    run_store "$s" || { failed=1; fail "$s: tmpfs data directory run"; exit 1; }
done
release=$(ceph_build_release)
{
    echo "tmpfs data directory, one OSD on loop devices, $release"
    echo
    sed 's/^/- /' "$base/summary"
} | tee ${report:+"$report"}
rm -rf "$base"
