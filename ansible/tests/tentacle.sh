#!/usr/bin/env bash
# site.yml on Tentacle, from packages (make ansible-test-tentacle): the
# managed host is the Debian sid root (HS_CHROOT, default
# /srv/hs-chroot/sid: Debian's Ceph 20.2.4) under a throwaway overlay, so
# nothing the play does stays in it; the controller is this machine's
# ansible-core (ANSIBLE_VENV), whose modules run in the root through a
# python3 that chroots there (a local connection with a chroot interpreter;
# the root has no sshd). Before the play the host is made to look like a
# plain Tentacle host: Debian's own ceph-osd 20.2.4+ds-2 (which refuses
# hybridstore) in place of the project's, no hybridstore-tools, no
# HybridStore apt source.
#
# The HybridStore repository: the debs of HS_APT_REPO_DIR (default
# /srv/hs-repo/sid, what `ceph-package osd`/`tools` wrote) plus
# ceph-volume-hybridstore built from this tree (`ceph-package volume`),
# indexed as a flat repository and served over http on 127.0.0.1 to the
# host (hybridstore_apt_repo: http://127.0.0.1:PORT/), or with
# HS_APT_REPO_SERVE=path given as that directory's path, which is bound into
# the root at the same place (hybridstore_apt_repo: /.../repo, a file: source).
#
# Steps, each a result row: converge (the packages installed from the
# repository with the pin, OSDs made by ceph-volume raw prepare + raw
# activate on two SSD+HDD pairs of loop devices, started directly: no
# systemd), a second converge (changed=0), a --check run, verify.sh
# (quorum, OSDs up, osd_objectstore hybridstore, the smoke bench, the
# packages and pin, raw list, tmpfs data directories, 20.2.4 everywhere),
# day 2 (replace-osd.yml moves osd.1 onto a spare pair keeping its id, a
# second replace-osd and site.yml change nothing, add-osd.yml makes osd.2
# on the old pair, shrink-osd.yml removes osd.1), purge-cluster.yml; then
# no process, mount or loop device left.
#
#   ansible/tests/tentacle.sh [RESULTS_FILE]
# Exit 0 passed, 1 failed, 77 SKIPPED (with the reason: not root, no sid
# root, no repository, no loop devices, no overlayfs, no ansible venv).
# Environment: HS_CHROOT, HS_APT_REPO_DIR, HS_APT_REPO_SERVE, ANSIBLE_VENV, HS_WORK_DIR (the
# run's directory is made under it; default /tmp), KEEP_WORK,
# ANSIBLE_TEST_ARCHIVE (logs kept in <it>/tentacle; default build/ansible-test).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
scenario=tentacle

if [ "${1:-}" = --in-namespace ]; then
    # --- inside unshare --mount --pid: the host's root, its mounts, the repository server
    work=$2 results=$3 hport=$4
    root=$work/root
    failed() { printf '%s|FAILED|%s|%s\n' "$scenario" "$1" "$2" >> "$results"; echo "FAILED: $scenario: $1 ($2)"; exit 1; }
    # (the root must not change while the overlay is mounted: a package
    # installed into it meanwhile gives "Stale file handle" here)
    mount -t overlay hs-ansible-tentacle -o "lowerdir=$HS_CHROOT,upperdir=$work/upper,workdir=$work/ovl" "$root" ||
        failed host "overlay of $HS_CHROOT"
    mount -t proc proc "$root/proc" && mount --rbind /sys "$root/sys" && mount --rbind /dev "$root/dev" &&
        mount -t tmpfs -o mode=0755 hs-run "$root/run" || failed host "mounts in $root"
    # the work directory (ansible's remote tmp, logs, results) and this tree
    # (verify.sh) at the same paths in the root
    for d in "$work" "$top"; do
        mkdir -p "$root$d" && mount --bind "$d" "$root$d" || failed host "bind $d"
    done
    {
        echo "--- the host before the play"
        # a plain Tentacle host: Debian's ceph-osd, no HybridStore package or source
        rm -f "$root"/etc/apt/sources.list.d/hybridstore.list "$root"/var/lib/apt/lists/_srv_hs-repo_*
        stock=$(ls "$root"/var/cache/apt/archives/ceph-osd_20.2.4+ds-2_*.deb 2> /dev/null | head -1)
        if [ -n "$stock" ]; then
            chroot "$root" env DEBIAN_FRONTEND=noninteractive dpkg -i "${stock#"$root"}" || exit 1
        fi
        chroot "$root" env DEBIAN_FRONTEND=noninteractive dpkg --purge hybridstore-tools ceph-volume-hybridstore || exit 1
        # ansible's apt module needs python3-apt on the host (it would
        # otherwise refresh every source to install it itself)
        chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-apt ||
            exit 1
        chroot "$root" dpkg-query -W ceph-osd ceph-volume ceph-mon ceph-mgr python3
        echo "Debian's ceph-osd asked for osd_objectstore=hybridstore: $(chroot "$root" ceph-osd --no-mon-config \
            -c /dev/null --log-file /dev/null --osd-objectstore hybridstore --show-config-value osd_objectstore 2>&1 | tail -1)"
    } > "$work/host-before.log" 2>&1 || { tail -20 "$work/host-before.log"; failed host "preparing the host, log: host-before.log"; }
    grep -v -e '^(Reading database' -e '^Selecting\|^Preparing\|^Unpacking\|^Setting up\|^Processing' "$work/host-before.log"
    if [ "$hport" != path ]; then
        python3 -m http.server "$hport" --bind 127.0.0.1 --directory "$work/repo" > "$work/http.log" 2>&1 &
        for _ in $(seq 50); do (exec 3<> "/dev/tcp/127.0.0.1/$hport") 2> /dev/null && break; sleep 0.2; done
    fi
    # -v: the logs keep what ceph-volume and apt printed on the host
    TARGET_ROOT=$root OBJECTSTORE=hybridstore ANSIBLE_REMOTE_TMP=$work/ansible-tmp ANSIBLE_PIPELINING=True ANSIBLE_VERBOSITY=1 \
        bash "$here/in-namespace.sh" "$work" "$scenario" true "$results"
    exit $?
fi

results_out=${1:-}
venv=${ANSIBLE_VENV:-$top/build/venv-ansible}
export HS_CHROOT=${HS_CHROOT:-/srv/hs-chroot/sid}
repo_src=${HS_APT_REPO_DIR:-/srv/hs-repo/sid}
archive=${ANSIBLE_TEST_ARCHIVE:-$top/build/ansible-test}

results=/dev/null
result() {  # result STATUS STEP DETAIL
    printf '%s|%s|%s|%s\n' "$scenario" "$1" "$2" "$3" >> "$results"
    echo "$1: $scenario: $2${3:+ ($3)}"
}
skip() {
    [ -n "$results_out" ] && printf '%s|SKIPPED|%s|%s\n' "$scenario" "site.yml on Tentacle" "$*" >> "$results_out"
    echo "SKIPPED: $scenario: site.yml on Tentacle ($*)"
    exit 77
}

[ "$(id -u)" = 0 ] || skip "needs root (overlay, chroot, loop devices)"
[ -x "$HS_CHROOT/usr/bin/ceph-mon" ] && [ -x "$HS_CHROOT/usr/sbin/ceph-volume" ] ||
    skip "no sid root with Debian's Ceph at $HS_CHROOT (src/tools/ceph-chroot create)"
ls "$repo_src"/ceph-osd_*+hybridstore*.deb > /dev/null 2>&1 && ls "$repo_src"/hybridstore-tools_*.deb > /dev/null 2>&1 ||
    skip "no ceph-osd +hybridstore and hybridstore-tools debs in $repo_src (qa/ceph/debian-proof.sh package)"
[ -x "$venv/bin/ansible-playbook" ] || skip "no ansible-core at $venv (make ansible-venv)"
[ -e /dev/loop-control ] || skip "no loop devices"
command -v dpkg-deb > /dev/null || skip "no dpkg-deb (ceph-package volume needs it)"

mkdir -p "${HS_WORK_DIR:-/tmp}" "$archive"
work=$(mktemp -d "${HS_WORK_DIR:-/tmp}/hs-ansible-tentacle.XXXXXX")
mkdir -p "$work"/{upper,ovl,root,repo,ansible-tmp}
# the rows are written in the root too (verify.sh): a file of the run's
results=$work/results.log
: > "$results"
probe=$work/probe
mkdir -p "$probe"/{u,w,m}
if ! unshare --mount --propagation private mount -t overlay hs-probe \
        -o "lowerdir=$HS_CHROOT,upperdir=$probe/u,workdir=$probe/w" "$probe/m" 2> /dev/null; then
    rm -rf "$work"
    skip "overlayfs over $HS_CHROOT cannot be mounted here"
fi
rm -rf "$probe"
loops=()
summary_done=

cleanup() {
    local dev
    for dev in "${loops[@]}"; do
        chown root:root "$dev" 2> /dev/null
        chmod 0600 "$dev" 2> /dev/null
        losetup -d "$dev" 2> /dev/null || echo "tentacle.sh: could not detach $dev" >&2
    done
    loops=()
    if [ -d "$work" ]; then
        [ -n "$results_out" ] && cat "$results" >> "$results_out"
        if [ -z "$summary_done" ]; then
            summary_done=1
            echo
            printf '%-10s %-8s %-22s %s\n' SCENARIO RESULT STEP DETAIL
            while IFS='|' read -r sc status step detail; do
                printf '%-10s %-8s %-22s %s\n' "$sc" "$status" "$step" "$detail"
            done < "$results"
        fi
        rm -rf "${archive:?}/$scenario" && mkdir -p "$archive/$scenario" &&
            cp "$work"/*.log "$work"/*.yml "$work"/*.ini "$work"/*.json "$archive/$scenario/" 2> /dev/null
        if [ -n "${KEEP_WORK:-}" ]; then echo "tentacle.sh: kept $work"; else rm -rf "$work"; fi
    fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

port_in_use() { (exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null; }
pick_port() {  # pick_port BASE STEP: P (and P+1 when STEP is 2) free
    local i p
    for i in $(seq 0 49); do
        p=$(($1 + (($$ + i) % 50) * $2))
        port_in_use "$p" || { [ "$2" = 2 ] && port_in_use $((p + 1)); } || { echo "$p"; return 0; }
    done
    return 1
}

# --- the repository: the project's debs and the ceph-volume module of this tree
for deb in "$repo_src"/*.deb; do
    # the module under test is this tree's (below), not one built before
    case $(basename "$deb") in ceph-volume-hybridstore_*) continue ;; esac
    ln "$deb" "$work/repo/" 2> /dev/null || cp "$deb" "$work/repo/" || exit 1
done
python3 "$top/src/tools/ceph-package" volume --out "$work/repo" > "$work/repo.log" 2>&1 ||
    { cat "$work/repo.log"; result FAILED repository "ceph-package volume"; exit 1; }
echo "tentacle.sh: repository $work/repo: $(cd "$work/repo" && echo ./*.deb)"

# --- devices: two OSDs, each a 1 GiB SSD (rotational 0) and a 4 GiB HDD
devices_json="["
exec 9> "$archive/.losetup.lock"
flock -w 120 9
for i in 0 1 2; do
    truncate -s 1G "$work/osd$i-ssd.img" && truncate -s 4G "$work/osd$i-hdd.img" || exit 1
    ssd=$(losetup --find --show --direct-io=on "$work/osd$i-ssd.img") && loops+=("$ssd") || exit 1
    hdd=$(losetup --find --show --direct-io=on "$work/osd$i-hdd.img") && loops+=("$hdd") || exit 1
    echo 0 > "/sys/block/$(basename "$ssd")/queue/rotational"
    echo 1 > "/sys/block/$(basename "$hdd")/queue/rotational"
    # the third pair is the spare one the day-2 step replaces osd.1 onto
    if [ $i = 2 ]; then
        spare_json="{\"ssd\": \"$ssd\", \"hdd\": \"$hdd\"}"
    else
        devices_json+="{\"ssd\": \"$ssd\", \"hdd\": \"$hdd\"}"
        [ $i = 0 ] && devices_json+=", "
    fi
done
devices_json+="]"
flock -u 9

port=$(pick_port 47100 2) && hport=$(pick_port 47300 1) || { result FAILED setup "no free port"; exit 1; }
case ${HS_APT_REPO_SERVE:-http} in
http) repo_url=http://127.0.0.1:$hport/ ;;
path)
    repo_url=$work/repo hport=path
    # apt reads file: sources as its _apt user: mktemp's 0700 made it fall
    # back to root with a "Permission denied" warning
    chmod 0755 "$work" ;;
*) echo "tentacle.sh: HS_APT_REPO_SERVE is http or path" >&2; exit 2 ;;
esac
cat > "$work/python3-in-root" <<EOF
#!/bin/sh
# ansible's modules run on the managed host: the sid root
exec chroot $work/root /usr/bin/python3 "\$@"
EOF
chmod 0755 "$work/python3-in-root"
cat > "$work/inventory.ini" <<EOF
[mons]
localhost monitor_address=127.0.0.1
[mgrs]
localhost
[osds]
localhost
[clients]
localhost
[all:vars]
ansible_connection=local
ansible_become=false
ansible_python_interpreter=$work/python3-in-root
EOF
cat > "$work/vars.yml" <<EOF
---
fsid: $(cat /proc/sys/kernel/random/uuid)
public_network: 127.0.0.0/8
mon_port: $port
mon_port_v1: $((port + 1))
ceph_origin: distro
hybridstore_apt_repo: $repo_url
ceph_service_manager: direct
osd_objectstore: hybridstore
osd_provisioner: ceph-volume
osd_devices: $devices_json
osd_pool_default_size: 2
osd_pool_default_min_size: 1
osd_pool_default_pg_num: 16
osd_crush_chooseleaf_type: 0
osd_wait_retries: 36
ceph_smoke_bench_seconds: 5
ceph_conf_overrides:
  global:
    mon warn on pool no redundancy: false
    mon data avail warn: 2
  osd:
    osd memory target: 939524096
EOF

echo "tentacle.sh: $work (root $HS_CHROOT, mon port $port, repository $repo_url, devices $devices_json)"
# --kill-child and the trap: stopped (a timeout, ^C), the namespace's first
# process is killed with this script, and with it every daemon of the
# namespace, before the loop devices are detached
unshare --mount --pid --fork --kill-child --mount-proc --propagation private \
    env PATH="$venv/bin:$PATH" ANSIBLE_CONFIG="$top/ansible/ansible.cfg" HS_CHROOT="$HS_CHROOT" DAY2_SPARE="$spare_json" \
    bash "$here/tentacle.sh" --in-namespace "$work" "$results" "$hport" &
ns_pid=$!
trap 'kill "$ns_pid" 2> /dev/null; wait "$ns_pid"; result FAILED run "stopped by a signal (a timeout, ^C)"; exit 1' INT TERM
wait "$ns_pid"
rc=$?
trap 'exit 1' INT TERM

# --- after the namespace: nothing of it may be left
leftover=$(ps -eo pid,args | grep -F "$work" | grep -v grep || true)
[ -z "$leftover" ] || { result FAILED teardown "processes left: $leftover"; rc=1; }
mounted=$(findmnt -rn -o TARGET | grep -F "$work" || true)
[ -z "$mounted" ] || { result FAILED teardown "mounts left: $mounted"; rc=1; }
devs=("${loops[@]}")
for dev in "${devs[@]}"; do
    chown root:root "$dev" 2> /dev/null
    chmod 0600 "$dev" 2> /dev/null
    losetup -d "$dev" 2> /dev/null || echo "tentacle.sh: could not detach $dev" >&2
done
loops=()
still=$(for dev in "${devs[@]}"; do losetup -a | grep "^$dev:"; done)
if [ -n "$still" ]; then
    result FAILED teardown "loop devices still attached: $still"
    rc=1
elif [ -z "$leftover" ] && [ -z "$mounted" ]; then
    result passed teardown "no process, mount or loop device left"
fi
grep -q "^$scenario|FAILED|" "$results" && rc=1
cleanup
trap - EXIT
exit $rc
