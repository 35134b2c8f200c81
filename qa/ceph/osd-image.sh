#!/usr/bin/env bash
# An OCI image of a hybridstore OSD, and a `podman run` of it that joins a
# cluster of Debian's Tentacle mon and mgr run in the sid root (issue 56,
# item 3).
#
#   qa/ceph/osd-image.sh [--parts build,join] [--dir DIR] [REPORT.md]
#
# Parts (--parts takes a comma-separated subset; default both):
#   build  a private flat apt repository (DIR/repo) of the packages the
#          package step wrote (HS_REPO, default /srv/hs-repo/sid): the
#          ceph-osd named in its ceph-osd.version, the newest
#          hybridstore-tools, and ceph-volume-hybridstore (taken from there,
#          else made from this tree with `ceph-package volume` in the root);
#          then a root of Debian sid with those packages, made by mmdebstrap
#          (minbase, the Debian mirror, Acquire::Check-Valid-Until off) as a
#          tarball, imported as an OCI image (`podman import`), tagged
#          localhost/hybridstore-osd:VERSION, and saved as an OCI archive
#          (DIR/image/hybridstore-osd.oci.tar) an operator can push to a
#          registry.
#   join   in the sid root (HS_CHROOT, default /srv/hs-chroot/sid): Debian's
#          ceph-mon and ceph-mgr with cephx and a bootstrap-osd key, two loop
#          devices (an SSD, rotational=0, and an HDD); then, from the image:
#          a one-shot container runs `ceph-volume raw prepare --objectstore
#          hybridstore --data HDD --block.ssd SSD`, and a long-running one
#          runs `ceph-volume activate --no-systemd` (the OSD's tmpfs data
#          directory primed from the devices' labels) and then
#          `ceph-osd --foreground`, as cephadm's OSD containers do. The root's
#          Debian client then checks `ceph osd metadata` (osd_objectstore
#          hybridstore, the container image) and runs rados bench write and
#          sequential read through that OSD. Everything is stopped and
#          removed at the end (the image is kept).
# Podman here: rootful, storage of its own under DIR (vfs driver), cgroupfs
# manager, runc (crun refuses these machines' hybrid cgroup layout), host
# networking, a privileged container (loop devices, tmpfs mounts), and
# explicit ulimits under the hard limits (the sandbox lacks CAP_SYS_RESOURCE,
# so podman's default ulimits are refused).
# Exit 0: every part run passed; 1: a failure (the run's directory kept);
# 77: SKIPPED (not root, no podman or runc, no mmdebstrap, no sid root, no
# packages, or podman cannot run a container here: its error is printed).
#
# Environment: HS_OSD_IMAGE_DIR (DIR, default /srv/hs-proof/osd-image),
# HS_CHROOT (/srv/hs-chroot/sid), HS_REPO (/srv/hs-repo/sid),
# HS_DEBIAN_MIRROR (http://deb.debian.org/debian), HS_MON_PORT_BASE (48400;
# the run takes 32 ports from there up to 48999),
# HS_SSD_SIZE (2G), HS_HDD_SIZE (6G), HS_BENCH_SECONDS (10), HS_TIMEOUT
# (300), HS_KEEP (keep the run's directory), HS_PODMAN_RUNTIME (runc).
set -u
HS_TOP=$(cd "$(dirname "$0")/../.." && pwd)
HS_SKIP=77
parts=build,join
work=${HS_OSD_IMAGE_DIR:-/srv/hs-proof/osd-image}
report=
# The internal entry into the root (below) comes first: it takes its own arguments.
if [ "${1:-}" != _in_root ]; then
    while [ $# -gt 0 ]; do
        case $1 in
        --parts) parts=$2; shift 2 ;;
        --dir) work=$2; shift 2 ;;
        -h | --help) sed -n '2,/^set -u/p' "$0" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "osd-image.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) report=$(realpath -m "$1"); shift ;;
        esac
    done
    for p in ${parts//,/ }; do
        case $p in build | join) ;; *) echo "osd-image.sh: unknown part $p (build, join)" >&2; exit 2 ;; esac
    done
fi
export HS_SSD_SIZE=${HS_SSD_SIZE:-2G} HS_HDD_SIZE=${HS_HDD_SIZE:-6G} HS_TIMEOUT=${HS_TIMEOUT:-300}
bench_seconds=${HS_BENCH_SECONDS:-10}

# --- inside the sid root: the cluster's mon, mgr and devices ------------------
# _in_root start DIR PORT | osd DIR | wait-osd DIR ID | check DIR ID SECONDS |
# stop DIR [FAILED]. The daemons outlive `ceph-chroot run` (they fork away);
# they are stopped later by their pid files. The loop devices are the host's
# business: once the root's mount namespace is gone, a loop device attached
# from inside it names its image by a path the host cannot match.
if [ "${1:-}" = _in_root ]; then
    cmd=$2 dir=$3
    export HS_AUTH=cephx HS_OBJECTSTORE=hybridstore HS_DEVICES=loop
    # shellcheck source=qa/standalone/hybridstore-helpers.sh
    source "$HS_TOP/qa/standalone/hybridstore-helpers.sh"
    export CEPH_CONF=$dir/ceph.conf
    case $cmd in
    start)
        export CEPH_MON=127.0.0.1:$4
        setup "$dir" || exit 1
        # the mgr's and the OSD's ports in this run's window too, not
        # Ceph's default 6800-7300 that other clusters here use
        conf_set "$dir" global "ms bind port min" $(($4 + 2))
        conf_set "$dir" global "ms bind port max" $(($4 + 31))
        conf_render "$dir"
        run_mon "$dir" a || exit 1
        run_mgr "$dir" x || exit 1
        ceph_cli auth get-or-create client.bootstrap-osd mon 'allow profile bootstrap-osd' > "$dir/bootstrap-osd.keyring" ||
            { fail "bootstrap-osd key"; exit 1; }
        log "mon.a and mgr.x up ($(ceph-mon --version | head -1))"
        ;;
    osd)
        # the id and uuid of the only OSD (prepare made it)
        ceph_cli osd dump -f json | jq -r '.osds[0] | "\(.osd) \(.uuid)"'
        ;;
    wait-osd)
        wait_for_osd up "$4"
        ;;
    check)
        id=$4
        echo "\$ ceph osd tree"
        ceph_cli osd tree || exit 1
        echo "\$ ceph osd metadata $id (some fields)"
        ceph_cli osd metadata "$id" -f json | jq '{osd_objectstore, ceph_version, container_image, hostname,
            hybridstore_devices: (to_entries | map(select(.key | test("^hybridstore"))) | from_entries)}' || exit 1
        check_osd_objectstore "$id" || exit 1
        create_pool bench 8 || { fail "pool create"; exit 1; }
        wait_for_clean "$HS_TIMEOUT" || exit 1
        # at most 40 % of the HDD: a full OSD holds writes and the bench
        # would hang (4 MiB objects fill the 6G HDD in ~15 s here)
        max=$(($(size_bytes "$HS_HDD_SIZE") * 4 / 10 / 4194304))
        echo "\$ rados bench -p bench $5 write -b 4M -t 16 --max-objects $max --no-cleanup"
        rados_cli -p bench bench "$5" write -b 4194304 -t 16 --max-objects "$max" --no-cleanup > "$dir/bench-write.txt" 2>&1 ||
            { tail -20 "$dir/bench-write.txt"; fail "rados bench write"; exit 1; }
        grep -E '^(Total time run|Total writes made|Write size|Bandwidth \(MB/sec\)|Average IOPS|Average Latency\(s\)):' "$dir/bench-write.txt"
        echo "\$ rados bench -p bench $5 seq -t 16"
        rados_cli -p bench bench "$5" seq -t 16 > "$dir/bench-seq.txt" 2>&1 ||
            { tail -20 "$dir/bench-seq.txt"; fail "rados bench seq"; exit 1; }
        grep -E '^(Total time run|Total reads made|Read size|Bandwidth \(MB/sec\)|Average IOPS|Average Latency\(s\)):' "$dir/bench-seq.txt"
        # a read that found no object would print no totals
        grep -q '^Total reads made:' "$dir/bench-seq.txt" || { fail "rados bench seq read nothing"; exit 1; }
        rados_cli -p bench cleanup > /dev/null 2>&1
        echo "\$ ceph -s"
        ceph_cli -s
        ;;
    stop)
        teardown "$dir" "${4:-}"
        ;;
    esac
    exit $?
fi

# --- on the host ---------------------------------------------------------------
# pick_mon_port, loop_attach, loops_detach (and log, fail)
# shellcheck source=qa/standalone/hybridstore-helpers.sh
source "$HS_TOP/qa/standalone/hybridstore-helpers.sh"
skip() { echo "SKIPPED: $*"; exit "$HS_SKIP"; }
wanted() { case ",$parts," in *",$1,"*) return 0 ;; esac; return 1; }

[ "$(id -u)" = 0 ] || skip "osd-image.sh needs root (rootful podman, loop devices, the sid root)"
command -v podman > /dev/null || skip "podman is not installed (apt-get install podman buildah)"
runtime=${HS_PODMAN_RUNTIME:-runc}
command -v "$runtime" > /dev/null || skip "the OCI runtime $runtime is not installed (apt-get install $runtime)"
root=${HS_CHROOT:-/srv/hs-chroot/sid}
src_repo=${HS_REPO:-/srv/hs-repo/sid}
mirror=${HS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
chroot_tool=$HS_TOP/src/tools/ceph-chroot
[ -f "$root/.hybridstore-chroot.json" ] || skip "no sid root at $root (make ceph-packages)"
if wanted build; then
    command -v mmdebstrap > /dev/null || skip "mmdebstrap is not installed"
    [ -s "$src_repo/ceph-osd.version" ] || skip "no $src_repo/ceph-osd.version (the package step: make ceph-packages)"
fi

mkdir -p "$work" || exit 1
work=$(cd "$work" && pwd)
# podman's own state, all under DIR: nothing shared with another podman user
# of this machine; vfs needs no overlay or fuse-overlayfs.
podman_cmd=(podman --root "$work/storage" --runroot "$work/runroot" --tmpdir "$work/libpod-tmp"
    --storage-driver vfs --cgroup-manager cgroupfs --events-backend file --runtime "$runtime")
pm() { nice -n 19 "${podman_cmd[@]}" "$@"; }
# Under the hard limits: podman's defaults (nofile 1048576, nproc 4194304)
# need CAP_SYS_RESOURCE, which this sandbox's bounding set lacks; nproc above
# 32768 was refused here too.
nofile=$(ulimit -Hn)
[ "$nofile" = unlimited ] && nofile=1048576
run_opts=(--network host --ulimit "nofile=$nofile:$nofile" --ulimit "nproc=32768:32768")
image_dir=$work/image
image_name=localhost/hybridstore-osd

summary=$(mktemp)
row() { echo "$*" >> "$summary"; log "ROW: $*"; }
failed=
run_dir=
container=
made_mount_points=()
cgroup_parents=()
# libpod_parent is the cgroup podman's cgroupfs manager puts containers (and
# conmon) under; the ones this run made (none there before) are removed at
# the end.
for c in /sys/fs/cgroup/*/; do [ -d "$c/libpod_parent" ] || cgroup_parents+=("$c/libpod_parent"); done

in_root() { nice -n 19 "$chroot_tool" run --root "$root" --bind "$HS_TOP" --bind "$work" -- "$@"; }
# ceph-chroot makes each --bind's mount point inside the root: the ones this
# run makes are removed again (when empty).
for b in "$HS_TOP" "$work"; do
    d=$root$b
    while [ ! -e "$d" ]; do made_mount_points+=("$d"); d=$(dirname "$d"); done
done

cleanup() {
    local d c
    if [ -n "$container" ]; then
        pm logs "$container" > "$run_dir/osd-container.log" 2>&1
        pm stop -t 60 "$container" > /dev/null 2>&1
        pm rm -f "$container" > /dev/null 2>&1 || log "podman rm $container failed"
    fi
    pm rm -f "hs-osd-prepare-$$" > /dev/null 2>&1
    [ -n "$run_dir" ] && [ -d "$run_dir/cluster" ] && in_root bash "$HS_TOP/qa/ceph/osd-image.sh" _in_root stop "$run_dir/cluster" "${failed}${HS_KEEP:-}"
    # ceph-volume in a privileged container chowns the device nodes to its
    # ceph user: back to their owners before the devices are detached
    [ -s "$run_dir/owners" ] && while read -r d o; do chown "$o" "$d" 2> /dev/null; done < "$run_dir/owners"
    [ -n "$run_dir" ] && loops_detach "$run_dir"
    for d in "${made_mount_points[@]}"; do rmdir "$d" 2> /dev/null; done
    # depth first: podman leaves a conmon cgroup under it
    for c in "${cgroup_parents[@]}"; do
        [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} \; 2> /dev/null
    done
    if [ -n "$run_dir" ]; then
        if [ -n "$failed" ] || [ -n "${HS_KEEP:-}" ]; then log "kept $run_dir"; else rm -rf "$run_dir"; fi
    fi
    rm -f "$summary"
}
trap cleanup EXIT
trap 'failed=1; exit 1' INT TERM
die() { echo "FAILED: $*" >&2; failed=1; exit 1; }

osd_version=
image_tag=

# --- build ----------------------------------------------------------------------
build() {
    local hv tools vol v deb
    hv=$(cat "$src_repo/ceph-osd.version")
    log "== build: ceph-osd $hv from $src_repo"
    rm -rf "$work/repo" && mkdir -p "$work/repo" "$image_dir" || return 1
    cp "$src_repo/ceph-osd_${hv}_amd64.deb" "$work/repo/" || die "no ceph-osd_${hv}_amd64.deb in $src_repo"
    # the newest of each by Debian version order (the repository keeps older ones)
    newest() {
        local f best='' bv=''
        for f in "$src_repo"/"$1"_*.deb; do
            [ -e "$f" ] || continue
            v=$(dpkg-deb -f "$f" Version)
            if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$bv"; then best=$f bv=$v; fi
        done
        echo "$best"
    }
    tools=$(newest hybridstore-tools)
    [ -n "$tools" ] || die "no hybridstore-tools package in $src_repo"
    cp "$tools" "$work/repo/" || return 1
    vol=$(newest ceph-volume-hybridstore)
    if [ -n "$vol" ]; then
        cp "$vol" "$work/repo/" || return 1
        python3 "$HS_TOP/src/tools/ceph-package" repo --out "$work/repo" || return 1
    else
        # the package step writes it only on sid; made here from this tree,
        # inside the root (its dpkg-deb and lintian), the version from the
        # host's checkout (the root cannot read a worktree's git directory)
        v=$(python3 "$HS_TOP/src/tools/ceph-package" version) || return 1
        in_root python3 "$HS_TOP/src/tools/ceph-package" volume --out "$work/repo" --version "$v" ||
            die "ceph-package volume"
    fi
    for deb in "$work/repo"/*.deb; do log "  $(basename "$deb")"; done

    local tar=$image_dir/rootfs.tar t0=$SECONDS
    rm -f "$tar"
    # The repository is made visible inside the root while apt installs
    # (mmdebstrap's file-mirror-automount hook), then the image's apt is left
    # pointing at Debian alone: the file: path means nothing in a container.
    log "mmdebstrap: sid minbase + ceph-osd=$hv ceph-volume-hybridstore hybridstore-tools"
    nice -n 19 mmdebstrap --mode=root --variant=minbase \
        --aptopt='Acquire::Check-Valid-Until "false"' --aptopt='Acquire::Retries "3"' \
        --hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
        --include="ceph-osd=$hv,ceph-volume-hybridstore,hybridstore-tools,ceph-common" \
        --customize-hook='chroot "$1" ceph-osd --no-mon-config -c /dev/null --log-file /dev/null --osd-objectstore hybridstore --show-config-value osd_objectstore | grep -qx hybridstore' \
        --customize-hook="echo 'deb $mirror sid main' > \"\$1/etc/apt/sources.list\"" \
        --customize-hook="d=\"\$1$work/repo\"; while [ \"\$d\" != \"\$1\" ] && rmdir \"\$d\" 2>/dev/null; do d=\$(dirname \"\$d\"); done" \
        --customize-hook='chroot "$1" dpkg-query -W -f "\${Package} \${Version}\n" ceph-osd ceph-volume ceph-volume-hybridstore hybridstore-tools ceph-common ceph-base > "$1/etc/hybridstore-image.packages"' \
        sid "$tar" "deb $mirror sid main" "deb [trusted=yes] file://$work/repo ./" > "$image_dir/mmdebstrap.log" 2>&1 ||
        { tail -30 "$image_dir/mmdebstrap.log" >&2; die "mmdebstrap (log: $image_dir/mmdebstrap.log)"; }
    log "root: $(du -h "$tar" | cut -f1) in $((SECONDS - t0)) s"

    # podman tags cannot hold '+': 20.2.4+ds-2+hybridstore659 -> 20.2.4-ds-2-hybridstore659
    image_tag=$image_name:${hv//+/-}
    pm rmi -f "$image_tag" > /dev/null 2>&1
    # CMD only: cephadm and Rook give every container its entrypoint and
    # arguments themselves; CEPH_VERSION is read by cephadm's checks.
    pm import \
        --change 'CMD ["/usr/bin/ceph-osd", "--version"]' \
        --change "ENV CEPH_VERSION=tentacle CEPH_POINT_RELEASE=-20.2.4" \
        --change "LABEL org.opencontainers.image.title=hybridstore-osd org.opencontainers.image.version=$hv io.ceph.osd.objectstore=hybridstore" \
        --message "Debian sid, ceph-osd $hv with hybridstore" \
        "$tar" "$image_tag" > "$image_dir/import.log" 2>&1 || { cat "$image_dir/import.log" >&2; die "podman import"; }
    pm tag "$image_tag" "$image_name:latest" || return 1
    # a rebuild of the same version leaves the previous image untagged: 661 MB
    # each in vfs storage (this run's private storage only)
    pm image prune -f > /dev/null
    rm -f "$image_dir/hybridstore-osd.oci.tar"
    pm save --format oci-archive -o "$image_dir/hybridstore-osd.oci.tar" "$image_tag" > /dev/null 2>&1 || die "podman save"
    local mt
    mt=$(tar -xOf "$image_dir/hybridstore-osd.oci.tar" index.json | jq -r '.manifests[0].mediaType')
    row "image $image_tag ($(pm image inspect "$image_tag" --format '{{.Id}}' | cut -c1-12), $(pm image inspect "$image_tag" --format '{{.Size}}' | numfmt --to=si)B) from mmdebstrap sid minbase; packages: $(pm run --rm "${run_opts[@]}" "$image_tag" cat /etc/hybridstore-image.packages | tr '\n' ';' | sed 's/;$//;s/;/; /g'); saved as $image_dir/hybridstore-osd.oci.tar ($mt)"
    rm -f "$tar"
}

# --- join ---------------------------------------------------------------------
# port_window: a port P, P a multiple of 32 in [HS_MON_PORT_BASE, 48999], with
# P and P+1 (the mon's v2 and v1) used by no socket at all. 48000-48999 lies
# in this machine's ephemeral range (32768-60999): a client's socket in
# TIME-WAIT there makes the mon's bind fail, which a connect test does not
# see. The mgr and the OSD take ports P+2..P+31.
port_window() {
    local base=${HS_MON_PORT_BASE:-48400} i p n
    n=$(((49000 - base) / 32))
    for ((i = 0; i < n; i++)); do
        p=$((base + ((RANDOM + i) % n) * 32))
        [ -z "$(ss -Htan "( sport = :$p or sport = :$((p + 1)) )")" ] && { echo "$p"; return 0; }
    done
    return 1
}

# probe: can this machine run a container of the image at all? If not, the
# result is "skipped", with podman's error, never a pass.
probe() {
    local out
    out=$(pm run --rm "${run_opts[@]}" "$image_tag" 2>&1) ||
        skip "podman cannot run a container of $image_tag here: $(echo "$out" | tail -3 | tr '\n' ' ')"
    osd_version=$(echo "$out" | head -1)
    out=$(pm run --rm "${run_opts[@]}" "$image_tag" ceph-osd --no-mon-config -c /dev/null --log-file /dev/null \
        --osd-objectstore hybridstore --show-config-value osd_objectstore 2>&1)
    [ "$out" = hybridstore ] || die "the image's ceph-osd does not know hybridstore: $out"
    row "podman run --rm $image_tag: $osd_version; knows osd_objectstore=hybridstore"
}

join() {
    local port ssd hdd id uuid fsid mon_host ceph_dir vol_opts got d try
    log "== join: $image_tag"
    probe
    run_dir=$(mktemp -d "$work/run.XXXXXX") && chmod 0755 "$run_dir" || return 1
    for try in 1 2 3; do
        port=$(port_window) || die "no free window of 32 ports from ${HS_MON_PORT_BASE:-48400} to 48999"
        in_root bash "$HS_TOP/qa/ceph/osd-image.sh" _in_root start "$run_dir/cluster" "$port" && break
        # an ephemeral port may take the mon's between the check and the bind
        grep -q 'Address already in use' "$run_dir/cluster/mon.a.log" 2> /dev/null && [ $try -lt 3 ] ||
            die "the cluster in the sid root"
        log "mon port $port taken meanwhile; another window"
    done
    # on the host, recorded in the run's directory (loops_detach at the end)
    truncate -s "$HS_SSD_SIZE" "$run_dir/ssd.img" && truncate -s "$HS_HDD_SIZE" "$run_dir/hdd.img" || return 1
    ssd=$(loop_attach "$run_dir" "$run_dir/ssd.img" 0) && hdd=$(loop_attach "$run_dir" "$run_dir/hdd.img" 1) ||
        die "loop devices"
    for d in "$ssd" "$hdd"; do echo "$d $(stat -c %u:%g "$d")" >> "$run_dir/owners"; done
    log "devices: ssd $ssd ($HS_SSD_SIZE, rotational=0), hdd $hdd ($HS_HDD_SIZE, rotational=1)"
    fsid=$(cat "$run_dir/cluster/fsid")
    mon_host="[v2:127.0.0.1:$port,v1:127.0.0.1:$((port + 1))]"

    # What the container sees as /etc/ceph and /var/lib/ceph/bootstrap-osd:
    # the cluster's fsid and mon, cephx, logs to stderr (podman logs), as
    # cephadm gives its containers a minimal ceph.conf.
    ceph_dir=$run_dir/etc-ceph
    mkdir -p "$ceph_dir" "$run_dir/bootstrap-osd" "$run_dir/log" || return 1
    cat > "$ceph_dir/ceph.conf" << EOF
[global]
	fsid = $fsid
	mon host = $mon_host
	auth cluster required = cephx
	auth service required = cephx
	auth client required = cephx
	public addr = 127.0.0.1
	ms bind ipv4 = true
	ms bind port min = $((port + 2))
	ms bind port max = $((port + 31))
[osd]
	osd objectstore = hybridstore
	osd memory target = 939524096
	osd max object name len = 460
	osd max object namespace len = 64
EOF
    cp "$run_dir/cluster/bootstrap-osd.keyring" "$run_dir/bootstrap-osd/ceph.keyring" || return 1
    # /run/ceph holds ceph-osd's admin socket and pid file; on a host
    # systemd-tmpfiles makes it, cephadm bind-mounts /var/run/ceph/FSID into
    # its containers, and an image root cannot carry it (mmdebstrap empties
    # /run). Without it ceph-osd --mkfs as the ceph user aborts ("cannot set
    # permissions ... /var/run/ceph"), so each container makes it first.
    local mkrun='install -d -o ceph -g ceph -m 0770 /run/ceph'
    vol_opts=(-v "$ceph_dir:/etc/ceph:ro" -v "$run_dir/bootstrap-osd:/var/lib/ceph/bootstrap-osd:ro"
        -v "$run_dir/log:/var/log/ceph" --privileged)

    log "podman run --rm --privileged ... ceph-volume raw prepare --objectstore hybridstore --data $hdd --block.ssd $ssd"
    pm run --rm --name "hs-osd-prepare-$$" "${run_opts[@]}" "${vol_opts[@]}" "$image_tag" \
        /bin/sh -c "$mkrun && ceph-volume raw prepare --objectstore hybridstore --data $hdd --block.ssd $ssd" \
        > "$run_dir/prepare.log" 2>&1 ||
        { tail -30 "$run_dir/prepare.log" >&2; die "ceph-volume raw prepare in a container"; }
    read -r id uuid < <(in_root bash "$HS_TOP/qa/ceph/osd-image.sh" _in_root osd "$run_dir/cluster")
    [ -n "$id" ] && [ "$id" != null ] || die "no OSD in the map after prepare"
    row "podman run --rm --privileged --network host $image_tag ceph-volume raw prepare --objectstore hybridstore --data $hdd --block.ssd $ssd: osd.$id ($uuid) made"

    # The OSD's container: activate from the labels into a tmpfs of the
    # container's own, then the daemon in the foreground as the ceph user.
    # CONTAINER_IMAGE and NODE_NAME are what cephadm sets: ceph-osd reports
    # the image in its metadata.
    container=hs-osd-image-$$
    log "podman run -d --privileged ... ceph-volume activate --osd-id $id --osd-uuid $uuid --no-systemd && ceph-osd --foreground"
    pm run -d --name "$container" "${run_opts[@]}" "${vol_opts[@]}" \
        -e CONTAINER_IMAGE="$image_tag" -e NODE_NAME="$(hostname)" "$image_tag" \
        /bin/sh -c "$mkrun && ceph-volume activate --osd-id $id --osd-uuid $uuid --no-systemd &&
            exec ceph-osd --foreground --cluster ceph --id $id --setuser ceph --setgroup ceph \
                --default-log-to-file=false --default-log-to-stderr=true --default-err-to-stderr=true" \
        > /dev/null || die "podman run -d of the OSD"
    if ! in_root bash "$HS_TOP/qa/ceph/osd-image.sh" _in_root wait-osd "$run_dir/cluster" "$id"; then
        pm logs "$container" 2>&1 | tail -30 >&2
        die "osd.$id in the container did not come up"
    fi
    row "podman run -d --privileged --network host $image_tag sh -c 'ceph-volume activate --osd-id $id --osd-uuid ... --no-systemd && exec ceph-osd --foreground ...': osd.$id up ($(pm ps --filter "name=$container" --format '{{.Status}}'))"
    got=$(pm exec "$container" ceph-volume raw list 2> /dev/null | jq -c --arg u "$uuid" '.[$u] | {osd_id, type, device, device_ssd}')
    row "podman exec ... ceph-volume raw list: $got"

    in_root bash "$HS_TOP/qa/ceph/osd-image.sh" _in_root check "$run_dir/cluster" "$id" "$bench_seconds" > "$run_dir/check.txt" 2>&1
    local rc=$?
    cat "$run_dir/check.txt"
    [ $rc = 0 ] || die "the checks through the container's OSD"
    row "\`ceph osd metadata $id\`: $(grep -m1 '"osd_objectstore"' "$run_dir/check.txt" | sed 's/^ *//;s/,$//'), $(grep -m1 '"container_image"' "$run_dir/check.txt" | sed 's/^ *//;s/,$//')"
    row "rados bench write ($bench_seconds s or 40 % of the HDD, 4 MiB, 16 in flight): $(sed -n '/bench.*write/,/bench.*seq/p' "$run_dir/check.txt" | grep -E '^(Total writes made|Bandwidth|Average IOPS|Average Latency)' | tr -s ' ' | tr '\n' ';' | sed 's/;$//;s/;/; /g')"
    row "rados bench seq read: $(sed -n '/bench.*seq/,$p' "$run_dir/check.txt" | grep -E '^(Total reads made|Bandwidth|Average IOPS|Average Latency)' | tr -s ' ' | tr '\n' ';' | sed 's/;$//;s/;/; /g')"

    log "stopping the OSD container (SIGTERM, as podman stop sends)"
    pm stop -t 60 "$container" > /dev/null || die "podman stop $container"
    pm logs "$container" > "$run_dir/osd-container.log" 2>&1
    got=$(pm inspect "$container" --format '{{.State.ExitCode}}')
    pm rm "$container" > /dev/null || die "podman rm $container"
    container=
    row "podman stop: the OSD container exited with $got and was removed"
}

if wanted build; then
    build || die "build"
else
    image_tag=$image_name:$(tr '+' '-' < "$src_repo/ceph-osd.version" 2> /dev/null)
    pm image exists "$image_tag" || image_tag=$image_name:latest
    pm image exists "$image_tag" || skip "no image $image_name in $work/storage: run the build part first"
fi
wanted join && { join || die "join"; }
{
    echo "hybridstore OSD container image: $image_tag; podman $(podman --version | awk '{print $3}') ($runtime, vfs, cgroupfs, host network); $(date -u +%Y-%m-%dT%H:%MZ)"
    echo
    sed 's/^/- /' "$summary"
} | tee ${report:+"$report"}
exit 0
