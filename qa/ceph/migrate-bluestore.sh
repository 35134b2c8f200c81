#!/usr/bin/env bash
# The one-time migration of a BlueStore OSD to hybridstore, run as an
# operator runs it on a Tentacle cluster (issue 56, item 4): Debian's
# ceph-mon, ceph-mgr and ceph-volume 20.2.4, this project's ceph-osd (which
# runs BlueStore and hybridstore) and ceph-volume module, in the sid root, on
# loop devices.
#
#   qa/ceph/migrate-bluestore.sh [--in-root] [REPORT.md]
#
# --in-root enters the sid root first (src/tools/ceph-chroot run, HS_CHROOT,
# default /srv/hs-chroot/sid); without it the script must run inside a root
# with the packages installed. REPORT.md gets every command the operator
# types, what it printed (condensed) and how long each phase took.
#
# The cluster: mon.a, mgr.x (cephx, a bootstrap-osd key) and three BlueStore
# OSDs, each on two loop devices (block on an HDD of HS_HDD_SIZE, block.db on
# an SSD of HS_SSD_SIZE, rotational=0). They are made as
# qa/standalone/hybridstore-helpers.sh's create_osd makes them (`ceph osd
# new`, `ceph-osd --mkfs` with osd_objectstore=bluestore): Ceph's own
# `ceph-volume raw prepare --bluestore` needs udev's data, which this host
# lacks ("No udev data could be retrieved"). A pool of size 2, min_size 1
# (three OSDs: draining one leaves two for its PGs) holds HS_OBJECTS objects
# of deterministic content (4 KiB to 2 MiB), each with an xattr, every fourth
# with an omap key. Then, for osd.HS_MIGRATE_OSD (1):
#   1. drain:   ceph osd out N; until `ceph osd safe-to-destroy N` says so;
#   2. retire:  the OSD stopped; ceph osd destroy N --yes-i-really-mean-it
#               (the id, its CRUSH place and its key... kept for reuse);
#   3. zap:     `ceph-volume raw prepare` over the BlueStore devices first
#               (refused: "holds a BlueStore label"); `ceph-volume lvm zap
#               --destroy` tried (it needs udev's data, which this host
#               lacks); wipefs -a and 10 MiB of zeros at the start of both
#               devices, which is what ceph-volume's zap runs;
#   4. prepare: ceph-volume raw prepare --objectstore hybridstore --data HDD
#               --block.ssd SSD --osd-id N (the destroyed id reused; if the
#               module refused that, a new id, and the report says so);
#   5. activate and start: ceph-volume raw activate --osd-id N --osd-uuid U
#               --no-systemd, ceph-osd started on the tmpfs data directory;
#               ceph osd in N;
#   6. backfill: until every PG is active+clean;
#   7. verify:  ceph osd metadata N says osd_objectstore hybridstore, every
#               object reads back identical (data, xattr, omap), a deep-scrub
#               of the pool finds nothing.
# ceph-volume runs with a cluster name of its own (--cluster hsmigN), so its
# fixed paths (/var/lib/ceph/osd/hsmigN-ID, /var/lib/ceph/bootstrap-osd/
# hsmigN.keyring) are this run's alone and removed at the end.
# Exit 0: migrated and verified; 1: a failure (the directory kept, its logs
# named); 77: SKIPPED (not root, no sid root, no loop devices, no tmpfs, no
# ceph-volume or its hybridstore module, a ceph-osd without hybridstore, no
# hybridstore-tool).
#
# Environment: HS_SSD_SIZE (2G), HS_HDD_SIZE (6G), HS_OBJECTS (32),
# HS_MIGRATE_OSD (1), HS_TIMEOUT (600, each wait), HS_KEEP (keep the
# directory), HS_MIGRATION_DIR (where the run's directory goes: TMPDIR or
# /tmp; with --in-root it is bound into the root), HS_MON_PORT_BASE (49200),
# HS_MS_PORTS (the daemons' port range, 49600-49799), HYBRIDSTORE_TOOL,
# HS_CHROOT (with --in-root).
set -u
export HS_SSD_SIZE=${HS_SSD_SIZE:-2G} HS_HDD_SIZE=${HS_HDD_SIZE:-6G} HS_TIMEOUT=${HS_TIMEOUT:-600}
export HS_OBJECTS=${HS_OBJECTS:-32} HS_MIGRATE_OSD=${HS_MIGRATE_OSD:-1}
export HS_MON_PORT_BASE=${HS_MON_PORT_BASE:-49200} HS_MS_PORTS=${HS_MS_PORTS:-49600-49799}
HS_TOP=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${1:-}" = --in-root ]; then
    shift
    root=${HS_CHROOT:-/srv/hs-chroot/sid}
    [ "$(id -u)" = 0 ] || { echo "SKIPPED: entering $root needs root"; exit 77; }
    [ -d "$root" ] || { echo "SKIPPED: no Debian root at $root (make ceph-packages)"; exit 77; }
    args=(run --root "$root" --bind "$HS_TOP")
    report_arg=()
    made=()
    if [ -n "${1:-}" ]; then
        report_arg=("$(realpath -m "$1")")
        mkdir -p "$(dirname "${report_arg[0]}")" || exit 1
        args+=(--bind "$(dirname "${report_arg[0]}")")
        [ -e "$root$(dirname "${report_arg[0]}")" ] || made+=("$root$(dirname "${report_arg[0]}")")
    fi
    workdir=
    if [ -n "${HS_MIGRATION_DIR:-}" ]; then
        workdir=$(realpath -m "$HS_MIGRATION_DIR")
        mkdir -p "$workdir" || exit 1
        if [ "$workdir" != "$(dirname "${report_arg[0]:-/nonexistent/x}")" ]; then
            args+=(--bind "$workdir")
            [ -e "$root$workdir" ] || made+=("$root$workdir")
        fi
    fi
    # not exec: the mount points ceph-chroot makes inside the root are
    # removed after (when empty)
    "$HS_TOP/src/tools/ceph-chroot" "${args[@]}" -- \
        env HYBRIDSTORE_TOOL="${HYBRIDSTORE_TOOL:-/usr/bin/hybridstore-tool}" HS_SSD_SIZE="$HS_SSD_SIZE" \
        HS_SOURCE_COMMIT="$(git -C "$HS_TOP" rev-parse --short HEAD 2> /dev/null)" \
        HS_HDD_SIZE="$HS_HDD_SIZE" HS_TIMEOUT="$HS_TIMEOUT" HS_KEEP="${HS_KEEP:-}" \
        HS_OBJECTS="$HS_OBJECTS" HS_MIGRATE_OSD="$HS_MIGRATE_OSD" HS_MIGRATION_DIR="$workdir" \
        HS_MON_PORT_BASE="$HS_MON_PORT_BASE" HS_MS_PORTS="$HS_MS_PORTS" \
        bash "$HS_TOP/qa/ceph/migrate-bluestore.sh" "${report_arg[@]}"
    rc=$?
    for m in "${made[@]}"; do rmdir "$m" 2> /dev/null; done
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
for b in ceph-volume ceph-mon ceph-mgr ceph rados uuidgen jq ceph-authtool losetup wipefs findmnt python3 ss; do
    command -v "$b" > /dev/null || skip "$b is not installed"
done
osd_knows_hybridstore "$CEPH_OSD" || skip "$CEPH_OSD does not know osd_objectstore=hybridstore ($("$CEPH_OSD" --version 2> /dev/null | head -1))"
python3 -c 'import importlib.metadata as m, sys; sys.exit(0 if any(e.name == "hybridstore" for e in m.entry_points(group="ceph_volume_handlers")) else 1)' 2> /dev/null ||
    skip "ceph-volume has no hybridstore module (install ceph-volume-hybridstore)"
HYBRIDSTORE_TOOL=${HYBRIDSTORE_TOOL:-$(command -v hybridstore-tool)}
[ -n "$HYBRIDSTORE_TOOL" ] && [ -x "$HYBRIDSTORE_TOOL" ] || skip "hybridstore-tool not found (install hybridstore-tools or set HYBRIDSTORE_TOOL)"
export HYBRIDSTORE_TOOL CEPH_VOLUME_HYBRIDSTORE_TOOL=$HYBRIDSTORE_TOOL
getent group ceph > /dev/null || skip "no ceph group (ceph-common is not installed)"
[[ $HS_MIGRATE_OSD =~ ^[0-2]$ ]] || { echo "FAILED: HS_MIGRATE_OSD=$HS_MIGRATE_OSD is none of 0, 1, 2" >&2; exit 1; }
[[ $HS_MS_PORTS =~ ^[0-9]+-[0-9]+$ ]] || { echo "FAILED: HS_MS_PORTS=$HS_MS_PORTS is not LOW-HIGH" >&2; exit 1; }
workroot=${HS_MIGRATION_DIR:-${TMPDIR:-/tmp}}
mkdir -p "$workroot" || { echo "FAILED: cannot make $workroot" >&2; exit 1; }
probe=$(mktemp -d "$workroot/hs-migrate-probe.XXXXXX")
mount -t tmpfs -o size=1M tmpfs "$probe" 2> /dev/null || { rmdir "$probe"; skip "tmpfs cannot be mounted here"; }
umount "$probe"
rmdir "$probe"

# The cluster starts as BlueStore; the migrated OSD's `type` file (written
# by ceph-volume) names hybridstore.
export HS_AUTH=cephx HS_DEVICES=loop HS_OBJECTSTORE=bluestore HS_RAW_SPARSE=${HS_RAW_SPARSE:-1}
cluster=hsmig$$
base=$(mktemp -d "$workroot/hs-migrate.XXXXXX")
dir=$base/cluster
: > "$base/transcript"
: > "$base/phases"
failed=
bootstrap=/var/lib/ceph/bootstrap-osd/$cluster.keyring
osd=$HS_MIGRATE_OSD
new_id=$osd
pool=migrate

cleanup() {
    local m d o
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

# --- the record --------------------------------------------------------------

# rec SHOWN -- CMD...: runs CMD, records "$ SHOWN" and what it printed (at
# most HS_REC_LINES lines, 14) in the transcript; its output is also in
# $dir/rec.out. Returns CMD's status.
rec() {
    local shown=$1 rc n max=${HS_REC_LINES:-14}
    shift 2
    "$@" > "$dir/rec.out" 2>&1
    rc=$?
    n=$(wc -l < "$dir/rec.out")
    {
        echo "\$ $shown"
        head -n "$max" "$dir/rec.out"
        ((n > max)) && echo "[... $((n - max)) more lines]"
        [ $rc = 0 ] || echo "[exit status $rc]"
    } | tee -a "$base/transcript" | sed 's/^/    /' >&2
    return $rc
}

# note TEXT: a line of the transcript that is not a command's output
note() { echo "# $*" | tee -a "$base/transcript" >&2; }

phase_name=
phase_start=
phase() {
    local now=$SECONDS
    [ -n "$phase_name" ] && printf '%s\t%s\n' "$phase_name" $((now - phase_start)) >> "$base/phases"
    phase_name=$1
    phase_start=$now
    [ -n "$phase_name" ] && { log "=== $phase_name"; printf '\n## %s\n' "$phase_name" >> "$base/transcript"; }
    return 0
}

# cv ARGS...: ceph-volume of this run's cluster, its log in $dir
cv() { ceph-volume --cluster "$cluster" --log-path "$dir" "$@"; }

# --- the data ----------------------------------------------------------------

obj_size() { echo $((4096 << ($1 % 10))); }

write_objects() {
    local i
    for ((i = 0; i < HS_OBJECTS; i++)); do
        make_payload "obj-$i" "$(obj_size "$i")" "$dir/in" || return 1
        rados_cli -p "$pool" put "obj-$i" "$dir/in" || { fail "rados put obj-$i"; return 1; }
        rados_cli -p "$pool" setxattr "obj-$i" migration "xattr-of-obj-$i" || { fail "rados setxattr obj-$i"; return 1; }
        if ((i % 4 == 0)); then
            rados_cli -p "$pool" setomapval "obj-$i" key "omap-of-obj-$i" || { fail "rados setomapval obj-$i"; return 1; }
        fi
    done
    sha256sum_all > "$base/written.sha256"
}

# the sha256 of every object as read back, one line each
sha256sum_all() {
    local i
    for ((i = 0; i < HS_OBJECTS; i++)); do
        rados_cli -p "$pool" get "obj-$i" "$dir/got" || { echo "obj-$i unreadable"; continue; }
        echo "obj-$i $(sha256sum < "$dir/got" | cut -d' ' -f1)"
    done
}

# check_objects: every object's data, xattr and omap as written; prints the count
check_objects() {
    local i bad=0 x o
    for ((i = 0; i < HS_OBJECTS; i++)); do
        check_object "$pool" "obj-$i" "$(obj_size "$i")" "$dir" || { bad=$((bad + 1)); continue; }
        x=$(rados_cli -p "$pool" getxattr "obj-$i" migration) || x=
        [ "$x" = "xattr-of-obj-$i" ] || { echo "obj-$i: xattr '$x'"; bad=$((bad + 1)); continue; }
        if ((i % 4 == 0)); then
            o=$(rados_cli -p "$pool" getomapval "obj-$i" key "$dir/omap" > /dev/null 2>&1 && cat "$dir/omap") || o=
            [ "$o" = "omap-of-obj-$i" ] || { echo "obj-$i: omap '$o'"; bad=$((bad + 1)); continue; }
        fi
    done
    echo "$((HS_OBJECTS - bad))/$HS_OBJECTS objects identical to what was written (data, xattr$( ((HS_OBJECTS > 0)) && echo ", omap on every 4th"))"
    [ $bad = 0 ]
}

# --- the run -----------------------------------------------------------------

# where osd.N's BlueStore lives: its conf.tsv lines (create_osd's)
bluestore_dev() { awk -F '\t' -v s="osd.$1" -v k="$2" '$1 == s && $2 == k { v = $3 } END { print v }' "$dir/conf.tsv"; }

# free_port_pair BASE: a port P (and P+1) from BASE on that no socket uses in
# any state: the 49xxx ports are in this machine's ephemeral range, and a
# client socket in TIME-WAIT on the mon's port keeps the mon from binding it
# (which a connect test does not see).
free_port_pair() {
    local base=$1 i p
    for ((i = 0; i < 100; i++)); do
        p=$((base + (($$ + i) % 100) * 2))
        if [ -z "$(ss -Htan "( sport = :$p or sport = :$((p + 1)) )" 2> /dev/null)" ] &&
            ! port_in_use "$p" && ! port_in_use $((p + 1)); then
            echo "$p"
            return 0
        fi
    done
    fail "no free port pair from $base"
}

drained() { [ "$(stored_pgs "$1")" = 0 ]; }
holds_pgs() { [ "$(stored_pgs "$1")" -gt 0 ] 2> /dev/null; }

stored_pgs() { ceph_cli osd df -f json | jq -r --argjson id "$1" '.nodes[] | select(.id == $id) | .pgs'; }

run() {
    local i uuid hdd ssd got data want
    CEPH_MON=127.0.0.1:$(free_port_pair "$HS_MON_PORT_BASE") || return 1
    export CEPH_MON
    setup "$dir" || return 1
    conf_set "$dir" global "ms bind port min" "${HS_MS_PORTS%-*}"
    conf_set "$dir" global "ms bind port max" "${HS_MS_PORTS#*-}"
    conf_render "$dir"
    # ceph-volume runs ceph-osd --mkfs as the ceph user, which logs here
    chmod 0755 "$base" && chgrp ceph "$dir" && chmod 0775 "$dir" || return 1

    phase "the BlueStore cluster (mon, mgr, 3 OSDs on loop devices)"
    note "made as qa/standalone/hybridstore-helpers.sh's create_osd does: ceph osd new, ceph-osd --mkfs (osd_objectstore=bluestore, block on the HDD, block.db on the SSD); Ceph's ceph-volume raw prepare --bluestore needs udev's data, which this host lacks"
    run_cluster "$dir" 3 || return 1
    for ((i = 0; i < 3; i++)); do
        for d in "$(bluestore_dev "$i" "bluestore block path")" "$(bluestore_dev "$i" "bluestore block db path")"; do
            echo "$d $(stat -c %u:%g "$d")" >> "$base/owners"
        done
    done
    hdd=$(bluestore_dev "$osd" "bluestore block path")
    ssd=$(bluestore_dev "$osd" "bluestore block db path")
    [ -b "$hdd" ] && [ -b "$ssd" ] || { fail "osd.$osd's devices: '$hdd' '$ssd'"; return 1; }
    mkdir -p /var/lib/ceph/bootstrap-osd
    ceph_cli auth get-or-create client.bootstrap-osd mon 'allow profile bootstrap-osd' > "$bootstrap" ||
        { fail "bootstrap-osd key"; return 1; }
    rec "dpkg-query -W ceph-osd ceph-volume ceph-volume-hybridstore hybridstore-tools ceph-mon" -- \
        dpkg-query -W ceph-osd ceph-volume ceph-volume-hybridstore hybridstore-tools ceph-mon
    rec "ceph-osd --no-mon-config -c /dev/null --log-file /dev/null --osd-objectstore hybridstore --show-config-value osd_objectstore" -- \
        "$CEPH_OSD" --no-mon-config -c /dev/null --log-file /dev/null --osd-objectstore hybridstore --show-config-value osd_objectstore
    rec "ceph-volume hybridstore status" -- cv hybridstore status
    rec "ceph versions" -- ceph_cli versions || return 1
    rec "ceph osd tree" -- ceph_cli osd tree || return 1
    rec "ceph osd metadata $osd | jq -r '.osd_objectstore, .bluestore_bdev_dev_node, .bluefs_db_dev_node'" -- \
        bash -c 'ceph osd metadata "$1" -f json | jq -r ".osd_objectstore, .bluestore_bdev_dev_node, .bluefs_db_dev_node"' _ "$osd" || return 1
    [ "$(osd_metadata_field "$osd" osd_objectstore)" = bluestore ] || { fail "osd.$osd does not run BlueStore"; return 1; }

    phase "a pool of size 2 with $HS_OBJECTS objects"
    rec "ceph osd pool create $pool 16 16 && ceph osd pool set $pool size 2 && ceph osd pool set $pool min_size 1 && ceph osd pool application enable $pool rados" -- \
        bash -c 'ceph osd pool create "$1" 16 16 && ceph osd pool set "$1" size 2 && ceph osd pool set "$1" min_size 1 && ceph osd pool application enable "$1" rados' _ "$pool" ||
        return 1
    wait_for_clean "$HS_TIMEOUT" || return 1
    note "for i in 0..$((HS_OBJECTS - 1)): rados -p $pool put obj-\$i FILE (4 KiB << (i % 10) bytes of a sha256 stream seeded by the name); rados setxattr obj-\$i migration ...; every 4th: rados setomapval obj-\$i key ..."
    write_objects || return 1
    rec "ceph df | grep -E 'POOL|$pool'" -- bash -c 'ceph df | grep -E "POOL|$1"' _ "$pool"
    rec "ceph osd df" -- ceph_cli osd df || return 1
    want=$(stored_pgs "$osd")
    note "osd.$osd holds $want PGs before the migration"

    phase "1. drain: ceph osd out $osd, until safe-to-destroy"
    rec "ceph osd out $osd" -- ceph_cli osd out "$osd" || return 1
    # the mgr's PG statistics lag the remap: safe-to-destroy answered yes a
    # second after `out`, with PGs still activating+degraded; so first until
    # the OSD holds no PG and every PG is active+clean
    wait_until "$HS_TIMEOUT" "osd.$osd to hold no PG" drained "$osd" || { ceph_cli pg stat >&2; return 1; }
    wait_for_clean "$HS_TIMEOUT" || return 1
    wait_until "$HS_TIMEOUT" "osd.$osd to be safe to destroy" ceph_cli osd safe-to-destroy "$osd" || { ceph_cli pg stat >&2; return 1; }
    rec "ceph osd safe-to-destroy $osd" -- ceph_cli osd safe-to-destroy "$osd" || return 1
    rec "ceph pg stat" -- ceph_cli pg stat || return 1

    phase "2. retire: stop osd.$osd, ceph osd destroy"
    note "systemctl stop ceph-osd@$osd on a host with systemd; here its pid (from its pid file) gets SIGTERM"
    stop_osd "$dir" "$osd" TERM || return 1
    wait_for_osd down "$osd" || return 1
    # its log, the root's, kept aside: ceph-volume's mkfs runs as the ceph
    # user and logs to the same name
    mv "$dir/osd.$osd.log" "$dir/osd.$osd.bluestore.log"
    rec "ceph osd destroy $osd --yes-i-really-mean-it" -- ceph_cli osd destroy "$osd" --yes-i-really-mean-it || return 1
    rec "ceph osd tree" -- ceph_cli osd tree || return 1

    phase "3. zap the BlueStore devices ($hdd block, $ssd block.db)"
    note "the data directory of the BlueStore OSD removed ($dir/osd.$osd here, /var/lib/ceph/osd/ceph-$osd on a host) and its [osd.$osd] bluestore paths taken out of ceph.conf"
    rm -rf "${dir:?}/osd.$osd"
    awk -F '\t' -v s="osd.$osd" '$1 != s' "$dir/conf.tsv" > "$dir/conf.tsv.new" && mv "$dir/conf.tsv.new" "$dir/conf.tsv" && conf_render "$dir" || return 1
    rec "ceph-bluestore-tool show-label --dev $hdd | jq -c '.[] | {description, osd_uuid, size}'" -- \
        bash -c 'ceph-bluestore-tool show-label --dev "$1" | jq -c ".[] | {description, osd_uuid, size}"' _ "$hdd"
    note "prepare before the zap: refused, nothing changed"
    if rec "ceph-volume raw prepare --objectstore hybridstore --data $hdd --block.ssd $ssd --osd-id $osd" -- \
        cv raw prepare --objectstore hybridstore --data "$hdd" --block.ssd "$ssd" --osd-id "$osd"; then
        fail "raw prepare over BlueStore's devices was not refused"
        return 1
    fi
    grep -q "BlueStore label" "$dir/rec.out" || { fail "raw prepare over BlueStore's devices: no 'BlueStore label' in its refusal"; return 1; }
    if rec "ceph-volume lvm zap --destroy $hdd $ssd" -- cv lvm zap --destroy --no-systemd "$hdd" "$ssd"; then
        note "ceph-volume lvm zap zapped them; wipefs and dd again all the same"
    else
        note "ceph-volume's zap inspects the devices through udev, whose data this host lacks; it would run wipefs and dd of 10 MiB: so does this"
    fi
    rec "wipefs -a $hdd $ssd" -- wipefs -a "$hdd" "$ssd" || return 1
    rec "dd if=/dev/zero of=$hdd bs=1M count=10 oflag=direct conv=fsync" -- dd if=/dev/zero of="$hdd" bs=1M count=10 oflag=direct conv=fsync status=none || return 1
    rec "dd if=/dev/zero of=$ssd bs=1M count=10 oflag=direct conv=fsync" -- dd if=/dev/zero of="$ssd" bs=1M count=10 oflag=direct conv=fsync status=none || return 1
    rec "ceph-bluestore-tool show-label --dev $hdd | jq -c '.[] | {description, osd_uuid}'" -- \
        bash -c 'ceph-bluestore-tool show-label --dev "$1" | jq -c ".[] | {description, osd_uuid}"' _ "$hdd"
    note "a copy of BlueStore's label is left: since Squid BlueStore writes copies at 1, 10, 100 and 1000 GiB of its main device; each copy within the device zeroed"
    for off in 1 10 100 1000; do
        (((off << 30) + 4096 <= $(blockdev --getsize64 "$hdd"))) || break
        rec "dd if=/dev/zero of=$hdd bs=4096 count=1 seek=$(((off << 30) / 4096)) oflag=direct conv=fsync" -- \
            dd if=/dev/zero of="$hdd" bs=4096 count=1 seek=$(((off << 30) / 4096)) oflag=direct conv=fsync status=none || return 1
    done
    rec "ceph-bluestore-tool show-label --dev $hdd" -- ceph-bluestore-tool show-label --dev "$hdd" && { fail "a BlueStore label is left on $hdd"; return 1; }
    rec "hybridstore-tool show-label --dev $ssd" -- hybridstore_tool show-label --dev "$ssd"

    phase "4. ceph-volume raw prepare --objectstore hybridstore --osd-id $osd"
    if ! rec "ceph-volume raw prepare --objectstore hybridstore --data $hdd --block.ssd $ssd --osd-id $osd" -- \
        cv raw prepare --objectstore hybridstore --data "$hdd" --block.ssd "$ssd" --osd-id "$osd"; then
        note "the destroyed id was not reused (above): a new id instead, osd.$osd purged"
        rec "ceph osd purge $osd --yes-i-really-mean-it" -- ceph_cli osd purge "$osd" --yes-i-really-mean-it || return 1
        rec "ceph-volume raw prepare --objectstore hybridstore --data $hdd --block.ssd $ssd" -- \
            cv raw prepare --objectstore hybridstore --data "$hdd" --block.ssd "$ssd" || return 1
        new_id=$(ceph_cli osd ls -f json | jq -r 'max')
        echo "reuse of a destroyed id: REFUSED, osd.$new_id made instead" > "$base/reuse"
    else
        echo "reuse of a destroyed id: osd.$osd reused" > "$base/reuse"
    fi
    uuid=$(ceph_cli osd dump -f json | jq -r --argjson id "$new_id" '.osds[] | select(.osd == $id) | .uuid')
    data=/var/lib/ceph/osd/$cluster-$new_id
    got=$(hybridstore_tool show-label --dev "$ssd" | jq -r --arg d "$ssd" '.[$d].meta.whoami')
    [ "$got" = "$new_id" ] || { fail "the SSD label says whoami $got, not $new_id"; return 1; }
    rec "ceph osd tree | grep osd.$new_id" -- bash -c 'ceph osd tree | grep -E "ID|osd\.$1 "' _ "$new_id"

    phase "5. activate, start, ceph osd in"
    rec "ceph-volume raw activate --osd-id $new_id --osd-uuid $uuid --no-systemd" -- \
        cv raw activate --osd-id "$new_id" --osd-uuid "$uuid" --no-systemd || return 1
    rec "ls $data; cat $data/type" -- bash -c 'ls "$1" | tr "\n" " "; echo; cat "$1/type"' _ "$data"
    note "systemctl start ceph-osd@$new_id on a host with systemd (with raw activate --no-systemd, cephadm's container runs ceph-osd in the foreground); here:"
    rec "ceph-osd -i $new_id --osd-data $data --keyring $data/keyring" -- \
        "$CEPH_OSD" -c "$dir/ceph.conf" -i "$new_id" --osd-data "$data" --keyring "$data/keyring" ||
        { tail -20 "$dir/osd.$new_id.log" >&2; return 1; }
    wait_for_osd up "$new_id" || { tail -20 "$dir/osd.$new_id.log" >&2; return 1; }
    rec "ceph osd in $new_id" -- ceph_cli osd in "$new_id" || return 1

    phase "6. backfill until active+clean"
    # the same lag: until the OSD holds PGs, then until all are clean
    wait_until "$HS_TIMEOUT" "osd.$new_id to hold PGs" holds_pgs "$new_id" || { ceph_cli osd df >&2; return 1; }
    wait_for_clean "$HS_TIMEOUT" || return 1
    rec "ceph pg stat" -- ceph_cli pg stat || return 1
    rec "ceph osd df" -- ceph_cli osd df || return 1
    got=$(stored_pgs "$new_id")
    [ "${got:-0}" -gt 0 ] || { fail "osd.$new_id holds no PGs after backfill"; return 1; }

    phase "7. verify: metadata, objects, deep-scrub"
    rec "ceph osd metadata $new_id | jq -r '.osd_objectstore, .osd_data, .ceph_version'" -- \
        bash -c 'ceph osd metadata "$1" -f json | jq -r ".osd_objectstore, .osd_data, .ceph_version"' _ "$new_id" || return 1
    [ "$(osd_metadata_field "$new_id" osd_objectstore)" = hybridstore ] || { fail "osd.$new_id does not report hybridstore"; return 1; }
    rec "ceph osd count-metadata osd_objectstore" -- ceph_cli osd count-metadata osd_objectstore || return 1
    rec "ceph-volume raw list" -- bash -c 'ceph-volume --cluster "$1" --log-path "$2" raw list 2> /dev/null | jq -c ".[] | select(.type == \"hybridstore\")"' _ "$cluster" "$dir"
    note "every object read back (rados get, getxattr, getomapval) and compared with what was written"
    rec "(rados get / getxattr / getomapval of each object, compared)" -- check_objects || return 1
    sha256sum_all > "$base/read.sha256"
    cmp -s "$base/written.sha256" "$base/read.sha256" || { fail "the objects' sha256 differ from before"; return 1; }
    note "for each PG of $pool: ceph pg deep-scrub PGID; waited until each had a newer deep-scrub stamp; then ceph pg ls-by-pool and rados list-inconsistent-pg $pool"
    rec "(deep-scrub of every PG of $pool)" -- deep_scrub "$pool" "$HS_TIMEOUT" || return 1
    rec "ceph health detail" -- ceph_cli health detail
    phase ""
}

start=$SECONDS
if ! run; then
    failed=1
    fail "migration run (kept: $base; logs $dir/*.log, ceph-volume's $dir/ceph-volume.log)"
    phase ""
    exit 1
fi
{
    echo "# BlueStore to hybridstore: one OSD migrated"
    echo
    echo "$(ceph_build_release); ceph-volume $(dpkg-query -W -f '${Version}' ceph-volume 2> /dev/null);" \
        "ceph-volume-hybridstore $(dpkg-query -W -f '${Version}' ceph-volume-hybridstore 2> /dev/null);" \
        "hybridstore-tools $(dpkg-query -W -f '${Version}' hybridstore-tools 2> /dev/null);" \
        "script at ${HS_SOURCE_COMMIT:-$(git -C "$HS_TOP" rev-parse --short HEAD 2> /dev/null)};" \
        "$(date -u +%Y-%m-%dT%H:%MZ); $((SECONDS - start)) s in all"
    echo
    echo "osd.$osd of 3 BlueStore OSDs (loop devices: HDD $HS_HDD_SIZE, SSD $HS_SSD_SIZE); $(cat "$base/reuse")."
    echo
    echo "| phase | seconds |"
    echo "|---|---|"
    awk -F '\t' '{ printf "| %s | %s |\n", $1, $2 }' "$base/phases"
    echo
    echo '```'
    cat "$base/transcript"
    echo '```'
} | tee ${report:+"$report"}
