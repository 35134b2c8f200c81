#!/usr/bin/env bash
# ceph-volume makes, runs and removes a hybridstore OSD on loop devices, as an
# operator would (issue 56, item 1): Debian's ceph-volume 20.2.4 with this
# project's module (src/ceph-volume), the installed ceph-osd and
# hybridstore-tool, in the sid root.
#
#   qa/ceph/ceph-volume.sh [--in-root] [REPORT.md]
#
# --in-root enters the sid root first (src/tools/ceph-chroot run, HS_CHROOT,
# default /srv/hs-chroot/sid); without it the script must run inside a root
# with the packages installed.
#
# Debian's ceph-mon and ceph-mgr with cephx and a bootstrap-osd key; two loop
# devices, an SSD (HS_SSD_SIZE, rotational=0) and an HDD (HS_HDD_SIZE). The
# steps, each a row of the report:
#   1. refusals, each leaving the OSD map and the devices as they were: no
#      --block.ssd; an SSD larger than the HDD; a device held open by another
#      process (O_EXCL); the same device twice;
#   2. `ceph-volume raw prepare --objectstore hybridstore --data HDD
#      --block.ssd SSD`: osd new, a tmpfs data directory, mkfs; the SSD label
#      holds whoami, ceph_fsid and osd_key;
#   3. `ceph-volume raw activate --osd-id --osd-uuid --no-systemd` over what
#      prepare left in the directory, the OSD started on it: it joins, `ceph osd metadata` says
#      osd_objectstore hybridstore; objects written;
#   4. `ceph-volume raw list`: the OSD with both devices and its store;
#   5. refusals on a live OSD: prepare on its devices (they hold an OSD), zap
#      of its devices (`ceph-volume hybridstore zap`: in use, nothing zapped);
#   6. deactivate (the OSD stopped, `ceph-volume hybridstore deactivate`: the
#      tmpfs unmounted) and `ceph-volume activate --osd-id --osd-uuid
#      --no-systemd` (what cephadm runs) from the labels alone: the OSD back
#      with every object; then `raw activate --devices SSD HDD` after another
#      deactivate (not --all, which would take other runs' OSDs on this host);
#   7. the OSD stopped and deactivated, `ceph-volume lvm zap --destroy SSD
#      HDD` (or, where ceph-volume finds no udev data to inspect devices
#      with, `ceph-volume hybridstore zap SSD HDD`): no label left on either;
#      `ceph osd purge`.
# ceph-volume runs with a cluster name of its own (--cluster hsvolN), so its
# fixed paths (/var/lib/ceph/osd/hsvolN-ID, /var/lib/ceph/bootstrap-osd/
# hsvolN.keyring) are this run's alone and removed at the end; its log goes to
# the run's directory. The module is the installed ceph-volume-hybridstore
# package when there is one, else this tree's (ceph-package volume-tree, on
# PYTHONPATH); the report says which.
# Exit 0: every step passed; 1: a failure (the directory kept, its logs
# named); 77: SKIPPED (not root, no loop devices, no tmpfs, no ceph-volume,
# a ceph-osd without hybridstore, no hybridstore-tool).
#
# Environment: HS_SSD_SIZE (2G), HS_HDD_SIZE (6G), HS_TIMEOUT (300),
# HS_KEEP (keep the directory), HYBRIDSTORE_TOOL (/usr/bin/hybridstore-tool
# or on PATH), HS_CHROOT (with --in-root).
set -u
export HS_SSD_SIZE=${HS_SSD_SIZE:-2G} HS_HDD_SIZE=${HS_HDD_SIZE:-6G} HS_TIMEOUT=${HS_TIMEOUT:-300}
HS_TOP=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${1:-}" = --in-root ]; then
    shift
    root=${HS_CHROOT:-/srv/hs-chroot/sid}
    [ "$(id -u)" = 0 ] || { echo "SKIPPED: entering $root needs root"; exit 77; }
    [ -d "$root" ] || { echo "SKIPPED: no Debian root at $root (make ceph-packages)"; exit 77; }
    args=(run --root "$root" --bind "$HS_TOP")
    report_arg=()
    made_mount_point=
    if [ -n "${1:-}" ]; then
        report_arg=("$(realpath -m "$1")")
        mkdir -p "$(dirname "${report_arg[0]}")" && args+=(--bind "$(dirname "${report_arg[0]}")")
        [ -e "$root$(dirname "${report_arg[0]}")" ] || made_mount_point=$root$(dirname "${report_arg[0]}")
    fi
    # not exec: the report directory's mount point, which ceph-chroot makes
    # inside the root, is removed after (when empty)
    "$HS_TOP/src/tools/ceph-chroot" "${args[@]}" -- \
        env HYBRIDSTORE_TOOL="${HYBRIDSTORE_TOOL:-/usr/bin/hybridstore-tool}" HS_SSD_SIZE="$HS_SSD_SIZE" \
        HS_SOURCE_COMMIT="$(git -C "$HS_TOP" rev-parse --short HEAD 2> /dev/null)" \
        HS_HDD_SIZE="$HS_HDD_SIZE" HS_TIMEOUT="$HS_TIMEOUT" HS_KEEP="${HS_KEEP:-}" \
        bash "$HS_TOP/qa/ceph/ceph-volume.sh" "${report_arg[@]}"
    rc=$?
    [ -n "$made_mount_point" ] && rmdir "$made_mount_point" 2> /dev/null
    exit $rc
fi
CEPH_BUILD=${CEPH_BUILD:-installed}
export CEPH_BUILD
source "$(dirname "$0")/common.sh"
# shellcheck source=qa/standalone/hybridstore-helpers.sh
source "$HS_TOP/qa/standalone/hybridstore-helpers.sh"

report=${1:-}
require_ceph_build ceph-osd
export CEPH_OSD=$CEPH_BUILD/bin/ceph-osd
[ "$(id -u)" = 0 ] || skip "tmpfs mounts and loop devices need root"
[ -e /dev/loop-control ] || skip "no /dev/loop-control: loop devices are unavailable"
for b in ceph-volume ceph-mon ceph-mgr ceph rados uuidgen jq ceph-authtool losetup lsblk wipefs findmnt python3; do
    command -v "$b" > /dev/null || skip "$b is not installed"
done
osd_knows_hybridstore "$CEPH_OSD" || skip "$CEPH_OSD does not know osd_objectstore=hybridstore ($("$CEPH_OSD" --version 2> /dev/null | head -1))"
HYBRIDSTORE_TOOL=${HYBRIDSTORE_TOOL:-$(command -v hybridstore-tool)}
[ -n "$HYBRIDSTORE_TOOL" ] && [ -x "$HYBRIDSTORE_TOOL" ] || skip "hybridstore-tool not found (install hybridstore-tools or set HYBRIDSTORE_TOOL)"
hybridstore_tool prime-osd-dir --help > /dev/null 2>&1 || skip "this hybridstore-tool has no prime-osd-dir"
export HYBRIDSTORE_TOOL CEPH_VOLUME_HYBRIDSTORE_TOOL=$HYBRIDSTORE_TOOL
probe=$(mktemp -d "${TMPDIR:-/tmp}/hs-volume-probe.XXXXXX")
mount -t tmpfs -o size=1M tmpfs "$probe" 2> /dev/null || { rmdir "$probe"; skip "tmpfs cannot be mounted here"; }
umount "$probe"
rmdir "$probe"

export HS_AUTH=cephx HS_DEVICES=loop HS_OBJECTSTORE=hybridstore
cluster=hsvol$$
getent group ceph > /dev/null || skip "no ceph group (ceph-common is not installed)"
base=$(mktemp -d "${TMPDIR:-/tmp}/hs-ceph-volume.XXXXXX")
# the cluster's directory (setup makes it); the summary and the module beside it
dir=$base/cluster
: > "$base/summary"
failed=
holder_pid=
bootstrap=/var/lib/ceph/bootstrap-osd/$cluster.keyring

row() { echo "$*" >> "$base/summary"; log "ROW: $*"; }

cleanup() {
    local m d
    [ -n "$holder_pid" ] && kill "$holder_pid" 2> /dev/null
    kill_daemons "$dir" TERM
    for m in /var/lib/ceph/osd/"$cluster"-*; do
        [ -e "$m" ] || continue
        mountpoint -q "$m" && { umount "$m" || log "umount $m failed"; }
        rmdir "$m" 2> /dev/null || log "kept $m (not empty)"
    done
    rm -f "$bootstrap"
    # ceph-volume gave the devices to the ceph user: back to their owner
    # before they are detached (the device nodes are the host's)
    if [ -s "$base/owners" ]; then
        while read -r d o; do chown "$o" "$d" 2> /dev/null; done < "$base/owners"
    fi
    teardown "$dir" "$failed"
    [ -n "$failed" ] || [ -n "${HS_KEEP:-}" ] || rm -rf "$base"
}
trap cleanup EXIT
trap 'failed=1; exit 1' INT TERM

# The module: the installed package's, else this tree's on PYTHONPATH.
if python3 -c 'import importlib.metadata as m, sys; sys.exit(0 if any(e.name == "hybridstore" for e in m.entry_points(group="ceph_volume_handlers")) else 1)' 2> /dev/null; then
    module="installed ($(dpkg-query -W -f '${Package} ${Version}' ceph-volume-hybridstore 2> /dev/null || echo 'not from a package'))"
else
    python3 "$HS_TOP/src/tools/ceph-package" volume-tree --out "$base/module" > /dev/null || { failed=1; fail "ceph-package volume-tree"; exit 1; }
    export PYTHONPATH=$base/module/usr/lib/python3/dist-packages${PYTHONPATH:+:$PYTHONPATH}
    module="this tree's src/ceph-volume at ${HS_SOURCE_COMMIT:-$(git -C "$HS_TOP" rev-parse --short HEAD 2> /dev/null)} (PYTHONPATH)"
fi

# cv ARGS...: ceph-volume of this run's cluster, its standard output in
# $dir/cv.out, its messages in $dir/cv.err (both shown).
cv() {
    ceph-volume --cluster "$cluster" --log-path "$dir" "$@" > "$dir/cv.out" 2> "$dir/cv.err"
    local rc=$?
    cat "$dir/cv.out" "$dir/cv.err" | sed 's/^/    ceph-volume: /' >&2
    return $rc
}

osd_ids() { ceph_cli osd ls -f json | jq -c 'sort'; }

# label_of DEV: the device's label in one line (fsid, role, flags,
# generation), nothing when it has none
label_of() {
    hybridstore_tool show-label --dev "$1" 2> /dev/null |
        jq -c --arg d "$1" '.[$d] | select(.fsid != null) | {fsid, role, flags, generation}'
}

# refused WHAT ARGS...: ceph-volume ARGS must fail, print WHAT, and leave the
# OSD map and both devices' labels as they were.
refused() {
    local what=$1 before after l1 l2
    shift
    before=$(osd_ids) l1="$(label_of "$ssd")|$(label_of "$hdd")"
    if cv "$@"; then fail "ceph-volume $* was not refused"; return 1; fi
    cat "$dir/cv.out" "$dir/cv.err" > "$dir/cv.all"
    grep -q -- "$what" "$dir/cv.all" || { fail "ceph-volume $*: no '$what' in its output"; return 1; }
    after=$(osd_ids) l2="$(label_of "$ssd")|$(label_of "$hdd")"
    [ "$before" = "$after" ] || { fail "ceph-volume $*: the OSD ids went from $before to $after"; return 1; }
    [ "$l1" = "$l2" ] || { fail "ceph-volume $*: a label changed ($l1 -> $l2)"; return 1; }
    row "refused, nothing changed: \`ceph-volume $*\`: $(grep -m1 -- "$what" "$dir/cv.all" | sed 's/^ *//')"
}

osd_data() { echo "/var/lib/ceph/osd/$cluster-$osd_id"; }

start_osd_vol() {
    local data
    data=$(osd_data)
    "$CEPH_OSD" -c "$dir/ceph.conf" -i "$osd_id" --osd-data "$data" --keyring "$data/keyring" ||
        { tail -20 "$dir/osd.$osd_id.log" >&2; fail "ceph-osd did not start on $data"; return 1; }
    wait_for_osd up "$osd_id" || { tail -20 "$dir/osd.$osd_id.log" >&2; return 1; }
    check_osd_objectstore "$osd_id"
}

write_objects() {
    local i
    create_pool data 8 || return 1
    for ((i = 0; i < 8; i++)); do
        make_payload "obj-$i" $((65536 << (i % 4))) "$dir/in" || return 1
        rados_cli -p data put "obj-$i" "$dir/in" || { fail "rados put obj-$i"; return 1; }
    done
}

check_objects() {
    local i
    wait_for_clean "$HS_TIMEOUT" || return 1
    for ((i = 0; i < 8; i++)); do
        check_object data "obj-$i" $((65536 << (i % 4))) "$dir" || { fail "$1: obj-$i"; return 1; }
    done
}

deactivate() {
    stop_osd "$dir" "$osd_id" TERM || return 1
    cv hybridstore deactivate --osd-id "$osd_id" || { fail "ceph-volume hybridstore deactivate"; return 1; }
    ! mountpoint -q "$(osd_data)" || { fail "$(osd_data) is still mounted after deactivate"; return 1; }
}

run() {
    local uuid got labels meta
    CEPH_MON=127.0.0.1:$(pick_mon_port 18400) || return 1
    export CEPH_MON
    setup "$dir" || return 1
    # ceph-volume runs ceph-osd --mkfs as the ceph user, which logs here
    chmod 0755 "$base" && chgrp ceph "$dir" && chmod 0775 "$dir" || return 1
    log "=== ceph-volume ($(dpkg-query -W -f '${Version}' ceph-volume 2> /dev/null)), module: $module"
    run_mon "$dir" a || return 1
    run_mgr "$dir" x || return 1
    mkdir -p /var/lib/ceph/bootstrap-osd
    ceph_cli auth get-or-create client.bootstrap-osd mon 'allow profile bootstrap-osd' > "$bootstrap" ||
        { fail "bootstrap-osd key"; return 1; }
    cv hybridstore status || { fail "ceph-volume hybridstore status (the module did not load)"; return 1; }
    cat "$dir/cv.out" "$dir/cv.err" | grep -q 'raw objectstores: .*hybridstore' || { fail "hybridstore is not registered"; return 1; }

    truncate -s "$HS_SSD_SIZE" "$dir/ssd.img" && truncate -s "$HS_HDD_SIZE" "$dir/hdd.img" &&
        truncate -s "$HS_HDD_SIZE" "$dir/big.img" || return 1
    ssd=$(loop_attach "$dir" "$dir/ssd.img" 0) && hdd=$(loop_attach "$dir" "$dir/hdd.img" 1) &&
        big=$(loop_attach "$dir" "$dir/big.img" 0) || return 1
    local d
    for d in "$ssd" "$hdd" "$big"; do echo "$d $(stat -c %u:%g "$d")" >> "$base/owners"; done
    log "devices: ssd $ssd ($HS_SSD_SIZE), hdd $hdd ($HS_HDD_SIZE), spare $big ($HS_HDD_SIZE)"

    log "--- 1. refusals"
    refused "needs --block.ssd" raw prepare --objectstore hybridstore --data "$hdd" || return 1
    truncate -s "$HS_SSD_SIZE" "$dir/small.img" || return 1
    local small
    small=$(loop_attach "$dir" "$dir/small.img" 1) || return 1
    echo "$small $(stat -c %u:%g "$small")" >> "$base/owners"
    refused "is larger than --data" raw prepare --objectstore hybridstore --data "$small" --block.ssd "$big" || return 1
    refused "same device" raw prepare --objectstore hybridstore --data "$hdd" --block.ssd "$hdd" || return 1
    python3 -c 'import os, sys, time; fd = os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL); print("held", flush=True); time.sleep(3600)' \
        "$hdd" > "$dir/holder.out" 2>&1 &
    holder_pid=$!
    wait_until 10 "the holder to open $hdd" grep -q held "$dir/holder.out" || return 1
    refused "is in use" raw prepare --objectstore hybridstore --data "$hdd" --block.ssd "$ssd" || return 1
    kill "$holder_pid" && wait "$holder_pid" 2> /dev/null
    holder_pid=

    log "--- 2. raw prepare"
    cv raw prepare --objectstore hybridstore --data "$hdd" --block.ssd "$ssd" || { fail "ceph-volume raw prepare"; return 1; }
    osd_id=$(ceph_cli osd ls -f json | jq -r 'max')
    uuid=$(ceph_cli osd dump -f json | jq -r --argjson id "$osd_id" '.osds[] | select(.osd == $id) | .uuid')
    meta=$(hybridstore_tool show-label --dev "$ssd" | jq -c --arg d "$ssd" '.[$d].meta | {whoami, ceph_fsid, has_key: (.osd_key != null)}')
    [ "$(echo "$meta" | jq -r .whoami)" = "$osd_id" ] && [ "$(echo "$meta" | jq -r .has_key)" = true ] &&
        [ "$(echo "$meta" | jq -r .ceph_fsid)" = "$(cat "$dir/fsid")" ] || { fail "the SSD label's meta: $meta"; return 1; }
    row "raw prepare: osd.$osd_id ($uuid), $(osd_data) a tmpfs holding: $(cd "$(osd_data)" && ls | tr '\n' ' '); SSD label meta $meta"

    log "--- 3. raw activate (over what prepare left, as cephadm runs it), the OSD started"
    cv raw activate --osd-id "$osd_id" --osd-uuid "$uuid" --no-systemd || { fail "ceph-volume raw activate"; return 1; }
    start_osd_vol || return 1
    got=$(osd_metadata_field "$osd_id" osd_objectstore)
    write_objects || return 1
    row "raw activate --osd-id $osd_id --osd-uuid ... --no-systemd: primed $(cd "$(osd_data)" && ls | tr '\n' ' '); the OSD joined, \`ceph osd metadata\` osd_objectstore: $got; 8 objects written"

    log "--- 4. raw list"
    cv raw list || { fail "ceph-volume raw list"; return 1; }
    jq . "$dir/cv.out" > "$dir/list.json" || { fail "raw list printed no JSON"; return 1; }
    got=$(jq -c --arg u "$uuid" '.[$u] // empty' "$dir/list.json")
    [ -n "$got" ] && [ "$(echo "$got" | jq -r '.type, .device, .device_ssd, .osd_id' | tr '\n' ' ')" = "hybridstore $hdd $ssd $osd_id " ] ||
        { fail "raw list: $(cat "$dir/list.json")"; return 1; }
    row "raw list: $got"

    log "--- 5. refusals on the live OSD"
    refused "already holds a hybridstore" raw prepare --objectstore hybridstore --data "$hdd" --block.ssd "$big" || return 1
    refused "nothing zapped" hybridstore zap "$ssd" "$hdd" || return 1

    log "--- 6. deactivate, activate from the labels alone"
    deactivate || return 1
    cv activate --osd-id "$osd_id" --osd-uuid "$uuid" --no-systemd || { fail "ceph-volume activate"; return 1; }
    start_osd_vol || return 1
    check_objects "after ceph-volume activate" || return 1
    row "deactivate (the OSD stopped, the tmpfs unmounted), \`ceph-volume activate --osd-id $osd_id --osd-uuid ... --no-systemd\`: the OSD back with its 8 objects"
    deactivate || return 1
    # by its devices, not --all: other runs' hybridstore OSDs may be on this host
    cv raw activate --devices "$ssd" "$hdd" || { fail "ceph-volume raw activate --devices"; return 1; }
    start_osd_vol || return 1
    check_objects "after raw activate --devices" || return 1
    row "deactivate again, \`ceph-volume raw activate --devices $ssd $hdd\`: the OSD back with its 8 objects"

    log "--- 7. zap"
    deactivate || return 1
    local how="lvm zap --destroy"
    if ! cv lvm zap --destroy --no-systemd "$ssd" "$hdd"; then
        # ceph-volume's device inspection needs udev's data, which a host
        # without udev lacks: the module's zap does the same to raw devices
        grep -q "No udev data" "$dir/cv.err" || { fail "ceph-volume lvm zap --destroy"; return 1; }
        row "lvm zap --destroy: not possible here, ceph-volume's Device() fails before any zap: $(grep -m1 'No udev data' "$dir/cv.err" | sed 's/^ *//')"
        how="hybridstore zap"
        cv hybridstore zap "$ssd" "$hdd" || { fail "ceph-volume hybridstore zap"; return 1; }
    fi
    labels="$(label_of "$ssd")$(label_of "$hdd")"
    [ -z "$labels" ] || { fail "labels left after zap: $labels"; return 1; }
    cv raw list || { fail "raw list after zap"; return 1; }
    jq . "$dir/cv.out" > "$dir/list.json" || { fail "raw list printed no JSON"; return 1; }
    [ "$(jq -r --arg u "$uuid" '.[$u] // empty' "$dir/list.json")" = "" ] || { fail "raw list still shows $uuid"; return 1; }
    ceph_cli osd purge "$osd_id" --yes-i-really-mean-it > /dev/null 2>&1 || { fail "osd purge"; return 1; }
    row "$how $ssd $hdd: no label on either, raw list empty of it; osd.$osd_id purged"
}

if ! run; then
    failed=1
    fail "ceph-volume run (kept: $base; ceph-volume's log $dir/ceph-volume.log)"
    exit 1
fi
{
    echo "ceph-volume with hybridstore on loop devices: $(ceph_build_release); ceph-volume $(dpkg-query -W -f '${Version}' ceph-volume 2> /dev/null); hybridstore-tools $(dpkg-query -W -f '${Version}' hybridstore-tools 2> /dev/null); module $module"
    echo
    sed 's/^/- /' "$base/summary"
} | tee ${report:+"$report"}
