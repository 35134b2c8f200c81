#!/usr/bin/env bash
# One real converge of site.yml against this machine, inside a throwaway
# mount and pid namespace (tmpfs over /etc/ceph, /var/lib/ceph,
# /var/log/ceph, /run/ceph), on loop devices (file images when loop devices
# cannot be had). Then a second converge (must report changed=0), a --check
# run, the checks of verify.sh, and purge-cluster.yml. When the namespace's
# first process exits every daemon in it dies; the loop devices are
# detached here, by a trap.
#
#   ansible/tests/converge.sh SCENARIO RESULTS_FILE
#     SCENARIO hybridstore: osd_objectstore hybridstore; OSDs started when
#              CEPH_OSD (or CEPH_BUILD) names a hybridstore-capable
#              ceph-osd, else prepared only (hybridstore-tool mkfs).
#     SCENARIO bluestore: the baseline with Debian's ceph-osd (OSDs start,
#              rados bench runs) - never counted as a hybridstore result.
# Environment: ANSIBLE_VENV (the venv with ansible-core), HYBRIDSTORE_TOOL,
# ANSIBLE_TEST_ARCHIVE (where the logs are copied; default build/ansible-test).
set -uo pipefail

scenario=$1
results=$2
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
venv=${ANSIBLE_VENV:-$top/build/venv-ansible}
tool=${HYBRIDSTORE_TOOL:-$top/build/bin/hybridstore-tool}
work=$(mktemp -d /tmp/hs-ansible-"$scenario".XXXXXX)
archive=${ANSIBLE_TEST_ARCHIVE:-$top/build/ansible-test}
loops=()

result() {  # result STATUS STEP DETAIL
    printf '%s|%s|%s|%s\n' "$scenario" "$1" "$2" "$3" >> "$results"
    echo "$1: $scenario: $2${3:+ ($3)}"
}

cleanup() {
    local dev
    for dev in "${loops[@]}"; do
        # the namespace chowned the node to the daemon user: give it back
        chown root:root "$dev" 2> /dev/null
        chmod 0600 "$dev" 2> /dev/null
        losetup -d "$dev" 2> /dev/null || echo "converge.sh: could not detach $dev" >&2
    done
    # the logs outlive the run: $archive/<scenario>/
    if [ -d "$work" ]; then
        rm -rf "${archive:?}/$scenario" && mkdir -p "$archive/$scenario" &&
            cp "$work"/*.log "$work"/*.yml "$work"/*.ini "$archive/$scenario/" 2> /dev/null
    fi
    if [ -n "${KEEP_WORK:-}" ]; then
        echo "converge.sh: kept $work"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

port_in_use() { (exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null; }
pick_port() {
    local i p
    for i in $(seq 0 99); do
        p=$((port_base + (($$ + i) % 100) * 2))
        port_in_use "$p" || port_in_use $((p + 1)) || { echo "$p"; return 0; }
    done
    return 1
}

# --- the hybridstore-capable ceph-osd, if given
ceph_osd=${CEPH_OSD:-}
[ -z "$ceph_osd" ] && [ -n "${CEPH_BUILD:-}" ] && ceph_osd=$CEPH_BUILD/bin/ceph-osd
case $scenario in
hybridstore)
    port_base=18300
    objectstore=hybridstore
    if [ -n "$ceph_osd" ]; then
        start=true
    else
        start=false
        ceph_osd=/usr/bin/ceph-osd
    fi ;;
bluestore)
    port_base=18500
    objectstore=bluestore
    ceph_osd=/usr/bin/ceph-osd
    start=true ;;
*) echo "converge.sh: unknown scenario $scenario" >&2; exit 2 ;;
esac

# --- devices: two OSDs, each a 1 GiB SSD (rotational 0) and a 4 GiB HDD
devices_json="["
allow_files=false
mkdir -p "$archive"
exec 9> "$archive/.losetup.lock"
flock -w 120 9  # converges may run side by side: attach loop devices one run at a time
for i in 0 1; do
    truncate -s 1G "$work/osd$i-ssd.img" && truncate -s 4G "$work/osd$i-hdd.img" || exit 1
    ssd=$(losetup --find --show "$work/osd$i-ssd.img" 2> /dev/null) && loops+=("$ssd")
    hdd=$(losetup --find --show "$work/osd$i-hdd.img" 2> /dev/null) && loops+=("$hdd")
    if [ -n "$ssd" ] && [ -n "$hdd" ]; then
        echo 0 > "/sys/block/$(basename "$ssd")/queue/rotational"
        echo 1 > "/sys/block/$(basename "$hdd")/queue/rotational"
    else
        ssd=$work/osd$i-ssd.img
        hdd=$work/osd$i-hdd.img
        allow_files=true
    fi
    devices_json+="{\"ssd\": \"$ssd\", \"hdd\": \"$hdd\"}"
    [ $i = 0 ] && devices_json+=", "
done
devices_json+="]"
flock -u 9
[ "$allow_files" = true ] && echo "converge.sh: loop devices unavailable; using image files"

port=$(pick_port) || { result FAILED setup "no free port pair"; exit 1; }
plugin_dir=
[ "$start" = true ] && [ "$ceph_osd" != /usr/bin/ceph-osd ] && [ -d "$(dirname "$ceph_osd")/../lib" ] &&
    plugin_dir=$(cd "$(dirname "$ceph_osd")/../lib" && pwd)

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
ansible_python_interpreter=/usr/bin/python3
EOF
cat > "$work/vars.yml" <<EOF
---
fsid: $(cat /proc/sys/kernel/random/uuid)
public_network: 127.0.0.0/8
mon_port: $port
mon_port_v1: $((port + 1))
ceph_origin: distro
ceph_service_manager: direct
osd_objectstore: $objectstore
# bookworm's Pacific: its ceph-volume has no hybridstore module, and the
# hybridstore ceph-osd (CEPH_OSD) is a build tree; tentacle.sh runs the
# packaged ceph-volume path on Tentacle
osd_provisioner: manual
ceph_osd_binary: $ceph_osd
hybridstore_prepare_only: $([ "$start" = true ] && echo false || echo true)
hybridstore_tool_binary: $tool
hybridstore_tool_packages: []
osd_devices: $devices_json
osd_devices_allow_files: $allow_files
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
    # A 2020 Pacific ceph-osd finds no address of 127.0.0.0/8 on its own
    # (its address picker passes over the loopback interface); 16.2.x does.
    public addr: 127.0.0.1
    cluster addr: 127.0.0.1
    osd memory target: 939524096
    hybridstore ssd size: 1G
    hybridstore hdd size: 4G
${plugin_dir:+    plugin dir: $plugin_dir}
${plugin_dir:+    osd class dir: $plugin_dir}
${plugin_dir:+    erasure code dir: $plugin_dir}
EOF

echo "converge.sh: $scenario in $work (mon port $port, ceph-osd $ceph_osd, start OSDs: $start)"
unshare --mount --pid --fork --mount-proc --propagation private \
    env PATH="$venv/bin:$PATH" ANSIBLE_CONFIG="$top/ansible/ansible.cfg" \
    bash "$here/in-namespace.sh" "$work" "$scenario" "$start" "$results"
rc=$?

# --- after the namespace: nothing of it may be left
leftover=$(ps -eo pid,args | grep -F "$work" | grep -v grep || true)
[ -z "$leftover" ] || { result FAILED teardown "processes left: $leftover"; rc=1; }
cleanup
trap - EXIT
still=$(for dev in "${loops[@]}"; do losetup -a | grep "^$dev:" ; done)
if [ -n "$still" ]; then
    result FAILED teardown "loop devices still attached: $still"
    rc=1
elif [ -z "$leftover" ]; then
    result passed teardown "no process and no loop device left"
fi
exit $rc
