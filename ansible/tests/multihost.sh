#!/usr/bin/env bash
# The multi-host test of the ansible playbooks (make ansible-test-multihost),
# on Tentacle from packages. Three hosts on this machine (multihost-hosts.sh:
# each a throwaway overlay of the Debian sid root with Debian's Ceph 20.2.4,
# in its own network, mount, UTS and pid namespaces, reached by ansible over
# ssh as a real host: an sshd of this machine chrooting each session into
# the overlay), a fourth such host for the test's client (Tentacle's ceph
# CLI and python3-rados), and a HybridStore cluster on them, installed from
# the project's flat apt repository served over http on the hosts' bridge
# (the debs of HS_APT_REPO_DIR plus ceph-volume-hybridstore built from this
# tree), OSDs made by ceph-volume (raw prepare, raw activate), daemons
# started directly (no systemd). Before the hosts come up, the root is made
# to look like a stock Tentacle host in a layer of its own under the hosts'
# overlays: Debian's own ceph-osd, no HybridStore package or source. Taken
# through:
#
#   1 deploy    site.yml: the packages from the repository, 3 mons in
#               quorum, a mgr, 2 OSDs per host on hybridstore, pool size 3
#               with host as failure domain; a second run reports changed=0
#   2 add-osd   add-osd.yml: a new SSD+HDD pair on node2 becomes an OSD,
#               data moves onto it, active+clean
#   3 shrink    shrink-osd.yml on a failed OSD of node1 (daemon killed,
#     replace   devices wiped): out, purged from CRUSH, auth and the map;
#               replace-osd.yml on a failed OSD of node3: destroyed, made
#               again with the same id on new devices (raw prepare
#               --osd-id); checksums of a pre-written object set read back;
#               site.yml changed=0
#   4 rolling   rolling_update.yml (same packages) under a client writing:
#               every daemon restarted, OSD hosts one at a time, noout set
#               when each OSD went down and cleared after, active+clean
#               between hosts, no client error
#   5 hostloss  node3's link cut under client load: its OSDs marked down,
#               quorum of 2, every PG still active, writes go on; link back:
#               OSDs up, quorum of 3, active+clean, every write read back
#   then purge-cluster.yml, and the teardown (nothing left behind).
#
# Every check reads ceph's JSON output (ceph -s, osd tree, osd dump, ...).
# (Until issue 56 the hosts were this bookworm machine itself and the OSDs
# a Pacific build tree's ceph-osd made by the manual provisioner; that path
# is gone with the build, see git history.)
#
# usage: ansible/tests/multihost.sh [--until N] [--keep]
#   --until N   stop after step N (then purge and tear down as usual)
#   --keep      keep the work directory (also KEEP_WORK=1)
#   --can-run   only say whether it can run here: exit 0, or SKIPPED and 77
# Environment:
#   HS_CHROOT (default /srv/hs-chroot/sid: Debian sid with Ceph 20.2.4,
#   src/tools/ceph-chroot create) and HS_APT_REPO_DIR (default
#   /srv/hs-repo/sid: ceph-osd +hybridstore and hybridstore-tools debs); the
#   test is SKIPPED (exit 77) without them
#   ANSIBLE_VENV (default build/venv-ansible), ANSIBLE_TEST_ARCHIVE (default
#   build/ansible-test: logs go to <archive>/multihost/),
#   MULTIHOST_TIMEOUT (seconds, default 3300: the whole run is stopped then)
# Exit: 0 passed, 1 failed, 2 cannot run (a tool missing), 77 skipped.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
ansible_dir=$top/ansible
hosts_sh=$here/multihost-hosts.sh
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

if [ "${1:-}" = --prepare-base ]; then
    # --- inside unshare --mount: the base layer (make_base)
    set -e
    work=$2 lower=$3 root=$2/base/root
    mkdir -p "$root"
    mount -t overlay hs-multihost-base -o "lowerdir=$lower,upperdir=$work/base/upper,workdir=$work/base/ovl" "$root"
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount --rbind /sys "$root/sys"
    rm -f "$root"/etc/apt/sources.list.d/hybridstore.list "$root"/var/lib/apt/lists/_srv_hs-repo_*
    stock=$(ls "$root"/var/cache/apt/archives/ceph-osd_20.2.4+ds-2_*.deb 2> /dev/null | head -1 || true)
    if [ -n "$stock" ]; then
        chroot "$root" env DEBIAN_FRONTEND=noninteractive dpkg -i "${stock#"$root"}"
    fi
    chroot "$root" env DEBIAN_FRONTEND=noninteractive dpkg --purge hybridstore-tools ceph-volume-hybridstore
    # (sid moves on: the root's index may name a python3-apt the mirror no
    # longer has)
    chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-apt ||
        { chroot "$root" apt-get update -q &&
          chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-apt; }
    chroot "$root" dpkg-query -W ceph-osd ceph-volume ceph-mon ceph-mgr hybridstore-tools python3 python3-apt 2>&1 || true
    echo "Debian's ceph-osd asked for osd_objectstore=hybridstore: $(chroot "$root" ceph-osd --no-mon-config \
        -c /dev/null --log-file /dev/null --osd-objectstore hybridstore --show-config-value osd_objectstore 2>&1 | tail -1)"
    exit 0
fi

until_step=5
keep=${KEEP_WORK:-}
can_run_only=""
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    --until) until_step=${2:?--until needs a step number}; shift ;;
    --keep) keep=1 ;;
    --can-run) can_run_only=1 ;;
    *) echo "multihost.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done

skip() { echo "SKIPPED: multihost: $*"; exit 77; }
die() { echo "multihost.sh: $*" >&2; exit 2; }

# --- can it run here? ----------------------------------------------------------
hs_chroot=${HS_CHROOT:-/srv/hs-chroot/sid}
repo_src=${HS_APT_REPO_DIR:-/srv/hs-repo/sid}
[ "$(id -u)" = 0 ] || skip "needs root (namespaces, overlays, a bridge, loop devices)"
[ -x "$hs_chroot/usr/bin/ceph-mon" ] && [ -x "$hs_chroot/usr/sbin/ceph-volume" ] ||
    skip "no sid root with Debian's Ceph at $hs_chroot (src/tools/ceph-chroot create)"
ls "$repo_src"/ceph-osd_*+hybridstore*.deb > /dev/null 2>&1 && ls "$repo_src"/hybridstore-tools_*.deb > /dev/null 2>&1 ||
    skip "no ceph-osd +hybridstore and hybridstore-tools debs in $repo_src (qa/ceph/debian-proof.sh package)"
[ -e /dev/loop-control ] || skip "no loop devices"
probe=$(mktemp -d /tmp/hs-multihost-probe.XXXXXX) || die "mktemp failed"
mkdir -p "$probe"/{u,w,m}
if ! unshare --mount --propagation private mount -t overlay hs-probe \
        -o "lowerdir=$hs_chroot,upperdir=$probe/u,workdir=$probe/w" "$probe/m" 2> /dev/null; then
    rm -rf "$probe"
    skip "overlayfs over $hs_chroot cannot be mounted here"
fi
rm -rf "$probe"
[ -z "$can_run_only" ] || exit 0
venv=${ANSIBLE_VENV:-$top/build/venv-ansible}
[ -x "$venv/bin/ansible-playbook" ] || die "no ansible in $venv (make ansible-venv)"
missing=""
for t in /usr/sbin/sshd ssh ssh-keygen ip nsenter unshare losetup flock jq python3 dpkg-deb; do
    command -v "$t" > /dev/null || missing+=" $t"
done
[ -z "$missing" ] || die "missing:$missing (make ansible-test-multihost installs them: openssh-server, ...)"

# --- where things go --------------------------------------------------------------
archive=${ANSIBLE_TEST_ARCHIVE:-$top/build/ansible-test}/multihost
mkdir -p "$archive" || die "cannot make $archive"
work=$(mktemp -d /tmp/hs-multihost.XXXXXX) || die "mktemp failed"
mkdir -p "$work"/{logs,inventory/group_vars,inventory/host_vars,devices,client,objects,repo,base/upper,base/ovl}
inv=$work/inventory
results=$archive/results
: > "$results"
cconf=$work/client/ceph.conf
ckey=$work/client/ceph.client.admin.keyring
# the hosts' overlays: the stock-Tentacle layer over the sid root
export MULTIHOST_LOWER=$work/base/upper:$hs_chroot

export PATH=$venv/bin:$PATH
export ANSIBLE_CONFIG=$ansible_dir/ansible.cfg
export ANSIBLE_SSH_CONTROL_PATH_DIR=$work/cp
export ANSIBLE_LOCAL_TEMP=$work/ansible-tmp
export ANSIBLE_NOCOLOR=1
export ANSIBLE_HOST_KEY_CHECKING=True

t0=$SECONDS
bg_pids=()
declare -A bg=()
group_pid=""
waited=0
writer_out=""

elapsed() { local s=$((SECONDS - t0)); printf '%02d:%02d' $((s / 60)) $((s % 60)); }
log() { printf '[%s] %s\n' "$(elapsed)" "$*"; }
result() {  # result STATUS STEP DETAIL
    printf 'multihost|%s|%s|%s\n' "$1" "$2" "$3" >> "$results"
    printf '[%s] %s: %s%s\n' "$(elapsed)" "$1" "$2" "${3:+ ($3)}"
}
# check DESCRIPTION COMMAND...: one assertion of a step
check() {
    local what=$1
    shift
    if "$@"; then
        log "  ok: $what"
    else
        log "  FAILED: $what"
        step_why+="$what; "
        return 1
    fi
}
eq() {  # eq WANT GOT: a check that says what it got
    [ "$1" = "$2" ] && return 0
    log "    want '$1', got '$2'"
    return 1
}

# --- ceph and the client, from the client host -------------------------------------
# (Tentacle's ceph CLI and python3-rados of the sid root, outside the three
# cluster hosts: this machine's are Pacific's; the client host sees the work
# directory and this tree at their paths)
in_host() { "$hosts_sh" exec "$work" "$@"; }
c() { in_host client timeout 60 ceph -c "$cconf" -k "$ckey" --connect-timeout 30 "$@" 2>> "$work/logs/ceph-cli.err"; }
cj() { c "$@" --format json; }
client() { in_host client /usr/bin/python3 "$here/multihost-client.py" --conf "$cconf" --keyring "$ckey" "$@"; }
jq_clean='def clean: (split("+")) as $s | ($s | any(. == "active")) and ($s | any(. == "clean"))
  and (test("degraded|undersized|remapped|backfill|recover|peer|stale|down|incomplete|inconsistent|unknown|repair|activating") | not);
  def live: (split("+") | any(. == "active")) and (test("stale|peering|down|incomplete|unknown|activating") | not);'
# (live: "stale+active+clean" is what the mgr last heard from a primary that
# went silent, and peering PGs serve no I/O: neither counts as active)
# The cluster-wide facts come from `ceph -s --format json` (the PG counts in
# it are the mgr's, as in `pg stat`); Pacific flattened its osdmap section,
# older releases nest it.
status() { cj status; }
jq_pgs='.pgmap as $p | ([$p.pgs_by_state[]? | select(.state_name | clean) | .count] | add // 0) as $clean
  | ([$p.pgs_by_state[]? | select(.state_name | live) | .count] | add // 0) as $active
  | (if $p.num_pgs > 0 and $clean == $p.num_pgs then "clean" elif $p.num_pgs > 0 and $active == $p.num_pgs
     then "active" else "not-active" end) as $pgs'
pgs_clean() { [ "$(status | jq -r "$jq_clean$jq_pgs"' | $pgs')" = clean ]; }
pgs_active() { case $(status | jq -r "$jq_clean$jq_pgs"' | $pgs') in clean | active) return 0 ;; esac; return 1; }
pg_states() { status | jq -r '[.pgmap.pgs_by_state[] | "\(.count) \(.state_name)"] | join(", ")'; }
# status_line: quorum, OSDs (total/up/in) and PGs (clean, active or
# not-active), as one line to compare with what a step expects
status_line() {
    status | jq -r "$jq_clean$jq_pgs"' | (.osdmap.osdmap // .osdmap) as $o
        | "quorum=\(.quorum_names | sort | join(",")) osds=\($o.num_osds)/\($o.num_up_osds)/\($o.num_in_osds) pgs=\($pgs)"'
}
# pgs_active_without HOST: every PG active (not stale, not peering) on an
# acting set without HOST's OSDs. Right after the OSDs are marked down the
# mgr still reports the PG states from before (all active+clean), so the
# states alone would pass too early: the acting sets show the PGs re-peered.
pgs_active_without() {
    local ids
    ids=$(osds_of "$1" | jq -sc .)
    cj pg dump pgs_brief | jq -e --argjson ids "$ids" "$jq_clean"'(if type == "array" then . else .pg_stats end) as $pgs
        | ($pgs | length) > 0 and ($pgs | all((.state | live) and ([.acting[] | select(. as $o | $ids | index($o))] | length == 0)))' \
        > /dev/null
}
osd_up() { [ "$(cj osd dump | jq --argjson i "$1" '.osds[] | select(.osd == $i) | .up')" = "$2" ]; }
osds_of() { cj osd tree | jq -r --arg h "$1" '.nodes[] | select(.type == "host" and .name == $h) | .children | sort | .[]'; }
all_osds_state() {  # all_osds_state HOST 0|1: every OSD of HOST down (0) or up (1)
    local ids
    ids=$(osds_of "$1" | jq -sc .)
    cj osd dump | jq -e --argjson ids "$ids" --argjson s "$2" \
        '[.osds[] | select(.osd as $o | $ids | index($o)) | .up] | length > 0 and all(. == $s)' > /dev/null
}
quorum_is() { eq "$1" "$(status | jq -r '.quorum_names | sort | join(",")')"; }
quorum_quiet() { [ "$(status | jq -r '.quorum_names | sort | join(",")')" = "$1" ]; }
wait_for() {  # wait_for DESCRIPTION SECONDS COMMAND...: poll every 3 s
    local what=$1 limit=$2 start=$SECONDS
    shift 2
    while ! "$@"; do
        if [ $((SECONDS - start)) -ge "$limit" ]; then
            log "  FAILED: $what: not within ${limit}s"
            step_why+="$what not within ${limit}s; "
            return 1
        fi
        sleep 3
    done
    log "  ok: $what (${SECONDS}s - ${start}s = $((SECONDS - start))s)"
    waited=$((SECONDS - start))
}

# --- ansible -----------------------------------------------------------------------------
# playbook LOG PLAYBOOK [ARGS...]: runs in its own process group (so a
# timeout or ^C can stop it), prints each play as it starts.
playbook() {
    local logf=$work/logs/$1 rc
    shift
    log "  ansible-playbook $* (log: ${logf##*/})"
    setsid bash -c 'set -o pipefail; cd "$1" && shift && ansible-playbook "$@" 2>&1 | tee "$0"' \
        "$logf" "$ansible_dir" -i "$inv/hosts.ini" "$@" > /dev/null &
    group_pid=$!
    progress "$logf" "$group_pid" &
    local progress_pid=$!
    wait "$group_pid"
    rc=$?
    group_pid=""
    wait "$progress_pid" 2> /dev/null
    if [ $rc != 0 ]; then
        log "  ansible-playbook failed (rc $rc); the end of ${logf##*/}:"
        grep -E '^(fatal|failed):|FAILED!|ERROR!|msg' "$logf" | tail -15 | cut -c1-400 | sed 's/^/      /'
        step_why+="${logf##*/}: ansible-playbook rc $rc; "
    fi
    return $rc
}
progress() {  # progress LOG PID: the PLAY lines of LOG while PID runs
    local n=0 line
    while kill -0 "$2" 2> /dev/null || [ "$n" = 0 ]; do
        sleep 2
        [ -f "$1" ] || continue
        while IFS= read -r line; do
            printf '    [%s] %s\n' "$(elapsed)" "$line"
        done < <(grep -E '^PLAY \[' "$1" | tail -n +$((n + 1)) | sed 's/^PLAY \[\(.*\)\] \**$/play: \1/')
        n=$(grep -cE '^PLAY \[' "$1")
        kill -0 "$2" 2> /dev/null || break
    done
}
recap() {  # recap LOG FIELD: the sum of FIELD=N over the PLAY RECAP lines
    sed -n '/PLAY RECAP/,$p' "$work/logs/$1" | grep -o "$2=[0-9]*" | cut -d= -f2 | awk '{s += $1} END {print s + 0}'
}
changed_tasks() {  # the tasks that reported changed in LOG
    awk '/^TASK \[/ {t = $0} /^changed:/ {print t " " $0}' "$work/logs/$1" | cut -c1-200 | head -20
}

# --- the inventory --------------------------------------------------------------------------
all_hosts=(node1 node2 node3)
fsid=$(cat /proc/sys/kernel/random/uuid)
write_inventory() {
    local h ip subnet
    subnet=$(sed -n 's/^SUBNET=//p' "$work/state/net")
    {
        echo "# written by ansible/tests/multihost.sh"
        echo "[mons]"
        for h in "${all_hosts[@]}"; do
            ip=$(sed -n 's/^IP=//p' "$work/state/host.$h")
            echo "$h ansible_host=$ip monitor_address=$ip"
        done
        echo "[mgrs]"
        echo "node1"
        echo "[osds]"
        printf '%s\n' "${all_hosts[@]}"
        echo "[clients]"
        echo "node1"
        echo "[all:vars]"
        echo "ansible_user=root"
        echo "ansible_python_interpreter=/usr/bin/python3"
        echo "ansible_ssh_private_key_file=$work/ssh/id_ed25519"
        echo "ansible_ssh_common_args='-o UserKnownHostsFile=$work/ssh/known_hosts -o GlobalKnownHostsFile=/dev/null" \
            "-o StrictHostKeyChecking=yes -o IdentitiesOnly=yes -o ConnectTimeout=20'"
    } > "$inv/hosts.ini"
    cat > "$inv/group_vars/all.yml" <<EOF
---
fsid: $fsid
public_network: $subnet.0/24
# a stock Tentacle host: Debian's ceph packages, the HybridStore ones
# from the project's repository (pinned), OSDs by ceph-volume
ceph_origin: distro
hybridstore_apt_repo: $repo_url
ceph_service_manager: direct
osd_objectstore: hybridstore
osd_provisioner: ceph-volume
osd_pool_default_size: 3
osd_pool_default_min_size: 2
osd_pool_default_pg_num: 16
osd_crush_chooseleaf_type: 1
osd_wait_retries: 60
osd_wait_delay: 3
health_osd_check_retries: 150
health_osd_check_delay: 2
ceph_smoke_bench_seconds: 5
ceph_conf_overrides:
  global:
    # this machine's disk, which the hosts' monitor stores share, runs
    # below ceph's 5% (the monitors refuse to start)
    mon data avail warn: 2
    mon data avail crit: 1
    osd pool default pg autoscale mode: "off"
  osd:
    osd memory target: 939524096
EOF
    for h in "${all_hosts[@]}"; do write_host_vars "$h"; done
}
write_host_vars() {  # host_vars/HOST.yml from devices/HOST.json
    printf -- '---\nosd_devices: %s\n' "$(jq -c . "$work/devices/$1.json")" > "$inv/host_vars/$1.yml"
}
add_pairs() {  # add_pairs HOST N: attach N pairs, add them to HOST's osd_devices; prints them
    local new
    new=$("$hosts_sh" devices "$work" "$1" "$2") || return 1
    [ -f "$work/devices/$1.json" ] || echo '[]' > "$work/devices/$1.json"
    jq -c --argjson new "$(echo "$new" | jq -sc .)" '. + $new' "$work/devices/$1.json" > "$work/devices/$1.json.new" &&
        mv "$work/devices/$1.json.new" "$work/devices/$1.json" || return 1
    write_host_vars "$1"
    echo "$new"
}
# osd_dev HOST ID device|device_ssd: the OSD's HDD or SSD as ceph-volume raw
# list on HOST finds it by its labels (every host sees every loop device of
# the machine: this cluster's OSD of that id)
osd_dev() {
    in_host "$1" ceph-volume raw list --format json 2>> "$work/logs/raw-list.err" |
        jq -r --arg f "$fsid" --argjson i "$2" --arg k "$3" '[.[] | select(.ceph_fsid == $f and .osd_id == $i)][0][$k] // empty'
}
# raw_pairs HOST: "HDD SSD" of each OSD CRUSH puts under HOST, as ceph-volume
# raw list on HOST finds them
raw_pairs() {
    local ids
    ids=$(osds_of "$1" | jq -sc .)
    in_host "$1" ceph-volume raw list --format json 2>> "$work/logs/raw-list.err" |
        jq -r --arg f "$fsid" --argjson ids "$ids" \
            '.[] | select(.ceph_fsid == $f and (.osd_id as $i | $ids | index($i) != null)) | .device + " " + .device_ssd' | sort
}
host_packages() {  # host_packages HOST: "ok" when the project's packages are installed there
    local v
    v=$(in_host "$1" dpkg-query -W -f '${Version}' ceph-osd) || { echo "no ceph-osd"; return 0; }
    case $v in *+hybridstore*) ;; *) echo "ceph-osd=$v"; return 0 ;; esac
    in_host "$1" dpkg-query -W hybridstore-tools ceph-volume-hybridstore > /dev/null 2>&1 ||
        { echo "no-hybridstore-tools-or-ceph-volume-hybridstore"; return 0; }
    echo ok
}
# fail_osd HOST ID: the daemon killed (-9, by its pid file), both devices wiped
fail_osd() {
    local host=$1 id=$2 pid ssd hdd dev
    hdd=$(osd_dev "$host" "$id" device) && ssd=$(osd_dev "$host" "$id" device_ssd) && [ -n "$hdd" ] && [ -n "$ssd" ] ||
        return 1
    pid=$(in_host "$host" cat "/run/ceph/ceph-osd.$id.pid") || return 1
    in_host "$host" kill -9 "$pid" || return 1
    for _ in $(seq 50); do in_host "$host" kill -0 "$pid" 2> /dev/null || break; sleep 0.2; done
    ! in_host "$host" kill -0 "$pid" 2> /dev/null || return 1
    for dev in "$ssd" "$hdd"; do
        dd if=/dev/zero of="$dev" bs=1M count=64 oflag=direct conv=notrunc status=none || return 1
    done
    log "  osd.$id on $host failed: daemon (pid $pid in $host) killed, $ssd and $hdd wiped (64 MiB zeroed)"
}

# --- background client work (by pid) -------------------------------------------------------
start_bg() {  # start_bg NAME ARGS...: a client command until $work/NAME.stop exists
    local name=$1
    shift
    rm -f "$work/$name.stop"
    client "$@" --stop-file "$work/$name.stop" > "$work/logs/$name.out" 2>&1 &
    bg_pids+=($!)
    bg[$name]=$!
}
stop_bg() {  # stop_bg NAME
    local name=$1 pid
    pid=${bg[$name]:-}
    [ -n "$pid" ] || return 0
    touch "$work/$name.stop"
    for _ in $(seq 150); do kill -0 "$pid" 2> /dev/null || break; sleep 0.2; done
    kill "$pid" 2> /dev/null
    wait "$pid" 2> /dev/null
    bg[$name]=""
}
start_load() {  # start_load NAME: writer (pool mh-load) and sampler
    start_bg "writer-$1" writer --pool mh-load --prefix "$1" --log "$work/logs/writer-$1.jsonl"
    start_bg "sampler-$1" sampler --log "$work/logs/samples-$1.jsonl" --interval 1
    log "  client load started: rados writes of 64 KiB objects to mh-load (writer-$1.jsonl), sampler (samples-$1.jsonl)"
}
stop_load() { stop_bg "writer-$1"; stop_bg "sampler-$1"; }
writer_report() {  # writer_report NAME [verify-writer args]: the summary in writer_out; fails on errors
    writer_out=$(client verify-writer --pool mh-load --log "$work/logs/writer-$1.jsonl" "${@:2}")
    log "  client: $writer_out"
    echo "$writer_out" | jq -e .ok > /dev/null
}

# === the steps ===============================================================================
# The HybridStore repository: the project's debs and the ceph-volume module
# of this tree (the module under test, not one built before)
make_repo() {
    local deb
    for deb in "$repo_src"/*.deb; do
        case $(basename "$deb") in ceph-volume-hybridstore_*) continue ;; esac
        ln "$deb" "$work/repo/" 2> /dev/null || cp "$deb" "$work/repo/" || return 1
    done
    python3 "$top/src/tools/ceph-package" volume --out "$work/repo" > "$work/logs/repo.log" 2>&1 || return 1
    log "  repository $work/repo: $(cd "$work/repo" && echo ./*.deb)"
}
# The layer under every host's overlay: the sid root made to look like a
# plain Tentacle host (Debian's ceph-osd, which refuses hybridstore; no
# HybridStore package or source) with python3-apt, which ansible's apt
# module needs and would otherwise fetch itself by refreshing every source.
# Made once, here, where Debian's mirror is reachable: the hosts' networks
# reach only the bridge.
make_base() {
    unshare --mount --propagation private bash "$0" --prepare-base "$work" "$hs_chroot" > "$work/logs/host-before.log" 2>&1 ||
        { tail -20 "$work/logs/host-before.log"; return 1; }
    grep -e '^ceph\|^python3\|^Debian\|^dpkg-query' "$work/logs/host-before.log" | sed 's/^/    /'
}
port_in_use() { (exec 3<> "/dev/tcp/$1/$2") 2> /dev/null; }
repo_url=""
serve_repo() {  # the repository over http on the bridge's address, where the hosts reach it
    local addr port="" i p
    addr=$("$hosts_sh" subnet "$work").1
    for i in $(seq 0 49); do
        p=$((47500 + ($$ + i) % 50))
        port_in_use "$addr" "$p" || { port=$p; break; }
    done
    [ -n "$port" ] || return 1
    python3 -m http.server "$port" --bind "$addr" --directory "$work/repo" > "$work/logs/http.log" 2>&1 &
    bg_pids+=($!)
    for _ in $(seq 50); do port_in_use "$addr" "$port" && break; sleep 0.2; done
    port_in_use "$addr" "$port" || return 1
    repo_url=http://$addr:$port/
    log "  repository served at $repo_url (pid $!)"
}

step_hosts() {
    make_repo || { cat "$work/logs/repo.log"; step_why+="ceph-package volume failed; "; return 1; }
    log "  the hosts' base: $hs_chroot as a stock Tentacle host (log: host-before.log)"
    make_base || { step_why+="preparing the hosts' base layer (logs/host-before.log); "; return 1; }
    log "  making node1..node3 (overlays of it, namespaces, bridge, sshd), the client host, 2 SSD+HDD loop pairs each"
    { "$hosts_sh" up "$work" "${all_hosts[@]}" && "$hosts_sh" up-client "$work" client "$top"; } > "$work/logs/hosts.log" 2>&1 ||
        { cat "$work/logs/hosts.log"; step_why+="host setup failed; "; return 1; }
    sed 's/^/    /' "$work/logs/hosts.log"
    serve_repo || { step_why+="no http server for the repository; "; return 1; }
    local h
    for h in "${all_hosts[@]}"; do
        add_pairs "$h" 2 > /dev/null || { step_why+="devices of $h; "; return 1; }
        log "    $h: osd_devices $(jq -c . "$work/devices/$h.json")"
    done
    write_inventory
    # ansible reaches every host over ssh, becomes root, and gathers facts
    # that show each is a host of its own
    # (--tree: a JSON file per host, with ansible-core alone)
    ansible all -i "$inv/hosts.ini" -b -m ansible.builtin.setup -a 'gather_subset=!all,network' \
        --tree "$work/logs/facts" > "$work/logs/facts.out" 2>&1 || { step_why+="ansible setup over ssh failed (logs/facts.out); "; }
    local got want=""
    for h in "${all_hosts[@]}"; do want+="$h:$h:$(sed -n 's/^IP=//p' "$work/state/host.$h") "; done
    got=$(for h in "${all_hosts[@]}"; do
        jq -r --arg h "$h" '"\($h):\(.ansible_facts.ansible_hostname):\(.ansible_facts.ansible_all_ipv4_addresses | join(","))"' \
            "$work/logs/facts/$h" 2> /dev/null
    done | tr '\n' ' ')
    check "ansible over ssh (become, facts): each host has its own hostname and address" eq "$want" "$got"
}

deploy_started=""
step_deploy() {
    deploy_started=1
    playbook site.log site.yml || return 1
    in_host node1 cat /etc/ceph/ceph.conf > "$cconf" && in_host node1 cat /etc/ceph/ceph.client.admin.keyring > "$ckey" ||
        { step_why+="no ceph.conf/admin keyring on node1; "; return 1; }
    local ok=0 rule
    check "monitors node1, node2, node3 in quorum" quorum_is node1,node2,node3 || ok=1
    check "a mgr is available" eq true "$(cj mgr stat | jq -r .available)" || ok=1
    check "6 OSDs, all up and in" eq "6 6 6" "$(cj osd stat | jq -r '"\(.num_osds) \(.num_up_osds) \(.num_in_osds)"')" || ok=1
    check "CRUSH: 3 hosts with 2 OSDs each" eq "node1:2 node2:2 node3:2" \
        "$(cj osd tree | jq -r '[.nodes[] | select(.type == "host") | "\(.name):\(.children | length)"] | sort | join(" ")')" || ok=1
    check "every OSD runs hybridstore, on the host CRUSH puts it under" eq "" \
        "$(cj osd metadata | jq -r --argjson t "$(cj osd tree)" '.[] | .id as $i
            | ($t.nodes[] | select(.type == "host" and (.children | index($i))) | .name) as $h
            | select(.osd_objectstore != "hybridstore" or .hostname != $h) | "osd.\(.id): \(.osd_objectstore) on \(.hostname)"')" || ok=1
    check "pool hybridstore-smoke: size 3, min_size 2" eq "3 2" \
        "$(cj osd pool ls detail | jq -r '.[] | select(.pool_name == "hybridstore-smoke") | "\(.size) \(.min_size)"')" || ok=1
    rule=$(cj osd pool ls detail | jq -r '.[] | select(.pool_name == "hybridstore-smoke") | .crush_rule')
    check "its CRUSH rule places replicas on different hosts" eq host \
        "$(cj osd crush rule dump | jq -r --argjson r "${rule:-0}" '.[] | select(.rule_id == $r) | .steps[] | select(.op | startswith("choose")) | .type')" || ok=1
    check "every host: ceph-osd +hybridstore, hybridstore-tools, ceph-volume-hybridstore from the repository" \
        eq "node1:ok node2:ok node3:ok" "$(for h in "${all_hosts[@]}"; do echo "$h:$(host_packages "$h")"; done | xargs)" || ok=1
    check "every daemon runs 20.2.4 (Tentacle)" eq true \
        "$(cj versions | jq '[.overall | keys[]] | length > 0 and all(test("^ceph version 20[.]2[.]4 "))')" || ok=1
    for h in "${all_hosts[@]}"; do
        check "ceph-volume raw list on $h: its OSDs (CRUSH) on its osd_devices pairs" \
            eq "$(jq -r '.[] | .hdd + " " + .ssd' "$work/devices/$h.json" | sort | xargs)" "$(raw_pairs "$h" | xargs)" || ok=1
    done
    check "pid files (ceph_service_manager direct) of 3 mons, 1 mgr and 6 OSDs" eq "3 1 6" \
        "$(daemon_pids | awk -F'[/.=]' '{n[$2]++} END {printf "%d %d %d", n["ceph-mon"], n["ceph-mgr"], n["ceph-osd"]}')" || ok=1
    wait_for "every PG active+clean" 180 pgs_clean || ok=1
    [ $ok = 0 ] || return 1

    playbook site-again.log site.yml || return 1
    local changed
    changed=$(recap site-again.log changed)
    check "a second site.yml run changes nothing" eq 0 "$changed" || { changed_tasks site-again.log | sed 's/^/      /'; return 1; }

    # data for the later steps: a set of objects with checksums, a pool for the load
    c osd pool create mh-data 32 32 replicated > /dev/null && c osd pool application enable mh-data rados > /dev/null &&
        c osd pool create mh-load 16 16 replicated > /dev/null && c osd pool application enable mh-load rados > /dev/null ||
        { step_why+="pool creation; "; return 1; }
    local out
    out=$(client put-set --pool mh-data --dir "$work/objects" --count 24)
    log "  wrote the checksum set to pool mh-data: $out"
    echo "$out" | jq -e .ok > /dev/null || { step_why+="put-set failed; "; return 1; }
    wait_for "every PG active+clean (with pools mh-data and mh-load)" 180 pgs_clean || return 1
    check "ceph -s: quorum of 3, 6 OSDs up and in, every PG active+clean" \
        eq "quorum=node1,node2,node3 osds=6/6/6 pgs=clean" "$(status_line)" || return 1
    step_note="quorum of 3, 6 hybridstore OSDs (2 per host), size 3/min_size 2 on hosts, changed=0 on rerun"
}

verify_set() {
    local out
    out=$(client verify-set --pool mh-data --dir "$work/objects")
    check "the 24 checksummed objects read back intact" eq true "$(echo "$out" | jq -r .ok)" ||
        { log "    $out"; return 1; }
}

step_add_osd() {
    local new before id ok=0
    before=$(cj osd ls | jq -c .)
    new=$(add_pairs node2 1) || { step_why+="attaching a new pair; "; return 1; }
    log "  new pair on node2: $new"
    playbook add-osd.log infrastructure-playbooks/add-osd.yml --limit node2 || return 1
    id=$(cj osd ls | jq -r --argjson b "$before" '. - $b | .[]')
    check "one new OSD" eq 1 "$(echo "$id" | grep -c .)" || return 1
    check "osd.$id is up and in" eq "1 1" "$(cj osd dump | jq -r --argjson i "$id" '.osds[] | select(.osd == $i) | "\(.up) \(.in)"')" || ok=1
    check "7 OSDs up and in" eq "7 7 7" "$(cj osd stat | jq -r '"\(.num_osds) \(.num_up_osds) \(.num_in_osds)"')" || ok=1
    check "osd.$id sits under node2 in CRUSH" eq yes \
        "$(osds_of node2 | grep -qx "$id" && echo yes)" || ok=1
    check "osd.$id runs hybridstore on node2's new devices (ceph-volume raw list)" \
        eq "hybridstore $(echo "$new" | jq -r '.hdd + " " + .ssd')" \
        "$(cj osd metadata "$id" | jq -r .osd_objectstore) $(osd_dev node2 "$id" device) $(osd_dev node2 "$id" device_ssd)" || ok=1
    check "noup is cleared" eq false "$(cj osd dump | jq -r '.flags | split(",") | any(. == "noup")')" || ok=1
    wait_for "data rebalanced: every PG active+clean" 300 pgs_clean || return 1
    local pgs
    pgs=$(cj osd df | jq -r --argjson i "$id" '.nodes[] | select(.id == $i) | .pgs')
    check "osd.$id holds placement groups now ($pgs)" test "${pgs:-0}" -gt 0 || ok=1
    verify_set || ok=1
    check "ceph -s: quorum of 3, 7 OSDs up and in, every PG active+clean" \
        eq "quorum=node1,node2,node3 osds=7/7/7 pgs=clean" "$(status_line)" || ok=1
    step_note="osd.$id on node2 (now 3 there), $pgs PGs moved onto it, active+clean after ${waited}s"
    return $ok
}

step_shrink_replace() {
    local x y ok=0 old_uuid ssd new new_ssd
    # --- shrink: a failed OSD of node1 leaves the cluster
    x=$(osds_of node1 | head -1)
    ssd=$(jq -r --arg d "$(osd_dev node1 "$x" device)" '.[] | select(.hdd == $d) | .ssd' "$work/devices/node1.json")
    fail_osd node1 "$x" || { step_why+="could not fail osd.$x; "; return 1; }
    wait_for "osd.$x marked down" 90 osd_up "$x" 0 || return 1
    playbook shrink.log infrastructure-playbooks/shrink-osd.yml -e "osd_to_kill=$x" -e ireallymeanit=yes || return 1
    check "osd.$x is gone from the OSD map" eq false "$(cj osd ls | jq --argjson i "$x" 'index($i) != null')" || ok=1
    check "osd.$x is gone from CRUSH" eq 0 "$(cj osd tree | jq --argjson i "$x" '[.nodes[] | select(.id == $i)] | length')" || ok=1
    check "osd.$x has no cephx key any more" eq 0 "$(cj auth ls | jq --arg n "osd.$x" '[.auth_dump[] | select(.entity == $n)] | length')" || ok=1
    check "its data directory on node1 is unmounted and removed" in_host node1 test ! -e "/var/lib/ceph/osd/ceph-$x" || ok=1
    check "node1 keeps 1 OSD in CRUSH" eq 1 "$(osds_of node1 | grep -c .)" || ok=1
    check "ceph-volume raw list on node1 finds no osd.$x any more" eq "" "$(osd_dev node1 "$x" device)" || ok=1
    # the operator's part: the devices leave the inventory
    jq -c --arg s "$ssd" '[.[] | select(.ssd != $s)]' "$work/devices/node1.json" > "$work/devices/node1.json.new" &&
        mv "$work/devices/node1.json.new" "$work/devices/node1.json" && write_host_vars node1
    wait_for "every PG active+clean after the shrink" 300 pgs_clean || return 1
    verify_set || ok=1
    local shrink_wait=$waited

    # --- replace: a failed OSD of node3 comes back with the same id on new devices
    y=$(osds_of node3 | head -1)
    old_uuid=$(cj osd dump | jq -r --argjson i "$y" '.osds[] | select(.osd == $i) | .uuid')
    ssd=$(osd_dev node3 "$y" device_ssd)
    fail_osd node3 "$y" || { step_why+="could not fail osd.$y; "; return 1; }
    wait_for "osd.$y marked down" 90 osd_up "$y" 0 || return 1
    new=$("$hosts_sh" devices "$work" node3 1) || { step_why+="attaching a new pair; "; return 1; }
    new_ssd=$(echo "$new" | jq -r .ssd)
    log "  new pair on node3 for osd.$y: $new"
    jq -c --arg s "$ssd" --argjson n "$new" --argjson i "$y" '[.[] | if .ssd == $s then ($n + {osd_id: $i}) else . end]' \
        "$work/devices/node3.json" > "$work/devices/node3.json.new" &&
        mv "$work/devices/node3.json.new" "$work/devices/node3.json" && write_host_vars node3
    log "    node3: osd_devices $(jq -c . "$work/devices/node3.json")"
    playbook replace.log infrastructure-playbooks/replace-osd.yml -e "osd_to_replace=$y" -e ireallymeanit=yes || return 1
    check "osd.$y is up and in again" eq "1 1" "$(cj osd dump | jq -r --argjson i "$y" '.osds[] | select(.osd == $i) | "\(.up) \(.in)"')" || ok=1
    check "osd.$y is a new OSD (new uuid)" test "$(cj osd dump | jq -r --argjson i "$y" '.osds[] | select(.osd == $i) | .uuid')" != "$old_uuid" || ok=1
    check "osd.$y kept its place under node3 in CRUSH" eq yes "$(osds_of node3 | grep -qx "$y" && echo yes)" || ok=1
    check "osd.$y runs hybridstore on the new devices (ceph-volume raw list)" eq "hybridstore $new_ssd" \
        "$(cj osd metadata "$y" | jq -r .osd_objectstore) $(osd_dev node3 "$y" device_ssd)" || ok=1
    check "6 OSDs up and in" eq "6 6 6" "$(cj osd stat | jq -r '"\(.num_osds) \(.num_up_osds) \(.num_in_osds)"')" || ok=1
    check "ceph-volume raw list on node3 finds osd.$y once, on the new pair (the old one holds no label of it)" \
        eq "$(echo "$new" | jq -r '.hdd + " " + .ssd')" \
        "$(in_host node3 ceph-volume raw list --format json 2>> "$work/logs/raw-list.err" |
            jq -r --arg f "$fsid" --argjson i "$y" '.[] | select(.ceph_fsid == $f and .osd_id == $i) | .device + " " + .device_ssd' | xargs)" ||
        ok=1
    wait_for "every PG active+clean after the replacement" 300 pgs_clean || return 1
    verify_set || ok=1
    local replace_wait=$waited

    check "ceph -s: quorum of 3, 6 OSDs up and in, every PG active+clean" \
        eq "quorum=node1,node2,node3 osds=6/6/6 pgs=clean" "$(status_line)" || ok=1

    # --- the inventory and the cluster agree again
    playbook site-after-day2.log site.yml || return 1
    check "site.yml after add/shrink/replace changes nothing" eq 0 "$(recap site-after-day2.log changed)" ||
        { changed_tasks site-after-day2.log | sed 's/^/      /'; ok=1; }
    step_note="osd.$x purged (clean ${shrink_wait}s later), osd.$y destroyed and remade on $new_ssd (clean ${replace_wait}s), checksums intact"
    return $ok
}

daemon_pids() {  # every ceph daemon's pid (in its host), from the pid files
    local h
    for h in "${all_hosts[@]}"; do
        # shellcheck disable=SC2016
        in_host "$h" sh -c 'for f in /run/ceph/*.pid; do [ -f "$f" ] && echo "$(basename "$f" .pid)=$(cat "$f")"; done' |
            sed "s|^|$h/|"
    done
}

step_rolling() {
    local ok=0 out pids_before pids_after
    cj osd dump > "$work/logs/rolling-osd-dump-before.json" && cj osd tree > "$work/logs/rolling-osd-tree.json" || return 1
    pids_before=$(daemon_pids | LC_ALL=C sort -t= -k1,1)
    start_load rolling
    sleep 5
    playbook rolling.log infrastructure-playbooks/rolling_update.yml -e ireallymeanit=yes || { stop_load rolling; return 1; }
    sleep 5
    stop_load rolling
    cj osd dump > "$work/logs/rolling-osd-dump-after.json" || return 1
    pids_after=$(daemon_pids | LC_ALL=C sort -t= -k1,1)
    check "every mon, mgr and OSD daemon has a new pid" eq "" \
        "$(LC_ALL=C join -t= <(echo "$pids_before") <(echo "$pids_after") | awk -F= '$2 == $3 {print $1}' | tr '\n' ' ')" || ok=1
    out=$(client check-rolling --samples "$work/logs/samples-rolling.jsonl" --before "$work/logs/rolling-osd-dump-before.json" \
        --after "$work/logs/rolling-osd-dump-after.json" --tree "$work/logs/rolling-osd-tree.json")
    log "  restarts: $out"
    check "OSD hosts restarted one at a time, noout set when each OSD went down, active+clean between hosts" \
        eq true "$(echo "$out" | jq -r .ok)" || ok=1
    check "noout, noscrub, nodeep-scrub cleared" eq "" \
        "$(cj osd dump | jq -r '.flags | split(",") | map(select(. == "noout" or . == "noscrub" or . == "nodeep-scrub")) | join(",")')" || ok=1
    check "the client wrote through it without an error, every object reads back" writer_report rolling --min-writes 20 || ok=1
    wait_for "every PG active+clean" 120 pgs_clean || ok=1
    verify_set || ok=1
    check "ceph -s: quorum of 3, 6 OSDs up and in, every PG active+clean" \
        eq "quorum=node1,node2,node3 osds=6/6/6 pgs=clean" "$(status_line)" || ok=1
    step_note="order $(echo "$out" | jq -r '.host_order | join(" > ")'), $(jq -s '[.[] | select(.ok)] | length' "$work/logs/writer-rolling.jsonl") client writes, 0 errors, max latency $(jq -s 'map(.lat) | max' "$work/logs/writer-rolling.jsonl")s"
    return $ok
}

step_hostloss() {
    local ok=0 t_cut t_active t_end waited_down waited_active waited_back
    start_load hostloss
    sleep 5
    t_cut=$(date +%s.%N)
    "$hosts_sh" cut "$work" node3 || { stop_load hostloss; return 1; }
    log "  node3 cut off (its link is down)"
    wait_for "node3's OSDs marked down" 180 all_osds_state node3 0 || ok=1
    waited_down=$waited
    wait_for "quorum of node1 and node2" 120 quorum_quiet node1,node2 || ok=1
    wait_for "every PG active again on node1 and node2 (undersized, degraded)" 180 pgs_active_without node3 || ok=1
    # the mgr's summary (ceph -s) follows within a report period
    waited_active=$waited
    wait_for "ceph -s says every PG is active" 30 pgs_active || ok=1
    waited_active=$((waited_active + waited))
    t_active=$(date +%s.%N)
    local away
    away=$(osds_of node3 | grep -c .)
    check "ceph -s: quorum of node1+node2, node3's $away OSDs down (not out), every PG active" \
        eq "quorum=node1,node2 osds=6/$((6 - away))/6 pgs=active" "$(status_line)" || ok=1
    log "  PG states while node3 is away: $(pg_states)"
    log "  ceph health: $(cj status | jq -r '.health.status + ": " + ([.health.checks | keys[]] | join(", "))')"
    sleep 30
    t_end=$(date +%s.%N)
    check "every PG stayed active while node3 was away" eq 0 \
        "$(jq -s --argjson a "${t_active%.*}" --argjson b "${t_end%.*}" \
            '[.[] | select(.t >= $a and .t <= $b and .pgs != null and .active != .pgs)] | length' "$work/logs/samples-hostloss.jsonl")" || ok=1
    "$hosts_sh" restore "$work" node3 || ok=1
    log "  node3's link is back"
    wait_for "node3's OSDs up again" 240 all_osds_state node3 1 || ok=1
    waited_back=$waited
    wait_for "quorum of node1, node2, node3" 180 quorum_quiet node1,node2,node3 || ok=1
    wait_for "every PG active+clean" 300 pgs_clean || ok=1
    check "ceph -s: quorum of 3 again, 6 OSDs up and in, every PG active+clean" \
        eq "quorum=node1,node2,node3 osds=6/6/6 pgs=clean" "$(status_line)" || ok=1
    sleep 3
    stop_load hostloss
    check "client writes went on while node3 was away, no error, every object reads back" \
        writer_report hostloss --min-writes 20 --between "$t_active,$t_end" || ok=1
    local between
    between=$(echo "$writer_out" | jq -r '.writes_between // 0')
    check "at least 10 writes completed while node3 was cut off and its OSDs down ($between)" test "${between:-0}" -ge 10 || ok=1
    verify_set || ok=1
    step_note="OSDs down ${waited_down}s after the cut, PGs active ${waited_active}s later, $between writes while away; back up ${waited_back}s after restore"
    : "$t_cut"
    return $ok
}

step_purge() {
    playbook purge.log infrastructure-playbooks/purge-cluster.yml -e ireallymeanit=yes || return 1
    local h f left="" ns
    for h in "${all_hosts[@]}"; do
        ns=$(sed -n 's/^PIDNS=//p' "$work/state/host.$h")
        for f in /proc/[0-9]*; do
            [ "$(readlink "$f/ns/pid" 2> /dev/null)" = "$ns" ] || continue
            case $(cat "$f/comm" 2> /dev/null) in ceph-mon | ceph-mgr | ceph-osd) left+="$h:${f#/proc/} " ;; esac
        done
    done
    check "no ceph daemon left on any host" eq "" "$left" || return 1
    left=""
    for h in "${all_hosts[@]}"; do
        in_host "$h" test -e /etc/ceph/ceph.conf && left+="$h:ceph.conf "
        [ -n "$(in_host "$h" ls /var/lib/ceph/osd 2> /dev/null)" ] && left+="$h:osd dirs "
        [ -n "$(in_host "$h" ls /var/lib/ceph/mon 2> /dev/null)" ] && left+="$h:mon dirs "
        [ -n "$(in_host "$h" findmnt -rn -o TARGET | grep '^/var/lib/ceph/')" ] && left+="$h:mounts "
    done
    check "no ceph state left on any host" eq "" "$left"
}

# === run ====================================================================================
stopped=""
cleanup() {
    local rc=$? left
    trap - EXIT INT TERM
    [ -n "$group_pid" ] && kill -TERM -- "-$group_pid" 2> /dev/null
    [ -n "${watchdog:-}" ] && kill "$watchdog" 2> /dev/null
    for p in "${bg_pids[@]}"; do kill "$p" 2> /dev/null; done
    wait 2> /dev/null
    log "tearing down (namespaces, bridge, links, loop devices, sshd and ceph processes)"
    start=$SECONDS
    "$hosts_sh" down "$work" >> "$work/logs/teardown.log" 2>&1
    if left=$("$hosts_sh" check-clean "$work"); then
        left=$(ps -eo pid=,args= | grep -F "$work" | grep -v grep || true)
        if [ -z "$left" ]; then
            result passed teardown "no process, link or loop device left; $((SECONDS - start))s"
        else
            result FAILED teardown "processes left: $left"
        fi
    else
        result FAILED teardown "$left"
    fi
    # the logs outlive the run
    rm -rf "$archive/logs" "$archive/inventory" && mkdir -p "$archive/logs" &&
        cp -r "$work/logs/." "$archive/logs/" && cp -r "$inv" "$archive/inventory" 2> /dev/null
    # (what the hosts wrote is in their overlays' upper layers)
    for h in "${all_hosts[@]}"; do
        [ -d "$work/hosts/$h/upper/var/log/ceph" ] &&
            tar -C "$work/hosts/$h" -czf "$archive/logs/ceph-logs-$h.tar.gz" upper/var/log/ceph sshd.log 2> /dev/null
    done
    echo
    printf '%-10s %-8s %-24s %s\n' TEST RESULT STEP DETAIL
    while IFS='|' read -r t status step detail; do
        printf '%-10s %-8s %-24s %s\n' "$t" "$status" "$step" "$detail"
    done < "$results"
    echo "total: $((SECONDS - t0))s; logs: $archive/logs/"
    [ -n "$stopped" ] && echo "stopped: $stopped"
    if [ -n "$keep" ]; then
        echo "work directory kept: $work"
    else
        rm -rf "$work"
    fi
    grep -q '|FAILED|' "$results" && exit 1
    [ "$rc" = 0 ] || exit "$rc"
    exit 0
}
trap cleanup EXIT
trap 'stopped="by a signal (^C, or the ${MULTIHOST_TIMEOUT:-3300}s watchdog)"; exit 130' INT TERM
timeout_s=${MULTIHOST_TIMEOUT:-3300}
main_pid=$$
(
    trap 'kill "$sleeper" 2> /dev/null; exit 0' TERM
    sleep "$timeout_s" &
    sleeper=$!
    wait "$sleeper" || exit 0
    echo "multihost.sh: stopping: the run took more than ${timeout_s}s" >&2
    kill -TERM "$main_pid"
) &
watchdog=$!

log "multihost test in $work; hosts: $hs_chroot (Tentacle), packages: $repo_src and this tree's ceph-volume module"
steps=(
    "0|hosts|step_hosts"
    "1|deploy (site.yml)|step_deploy"
    "2|add-osd|step_add_osd"
    "3|shrink + replace|step_shrink_replace"
    "4|rolling update|step_rolling"
    "5|host loss|step_hostloss"
)
broken=""
for s in "${steps[@]}"; do
    IFS='|' read -r n name fn <<< "$s"
    if [ -n "$broken" ]; then
        result "not run" "$n $name" "$broken"
        continue
    fi
    if [ "$n" -gt "$until_step" ]; then
        result SKIPPED "$n $name" "--until $until_step"
        continue
    fi
    log "== step $n: $name"
    step_why=""
    step_note=""
    start=$SECONDS
    if "$fn"; then
        result passed "$n $name" "$((SECONDS - start))s${step_note:+; $step_note}"
    else
        result FAILED "$n $name" "$((SECONDS - start))s; ${step_why:-see above}"
        broken="step $n failed"
    fi
done
# purge whenever site.yml ran (a half-made cluster too)
if [ -n "$deploy_started" ]; then
    log "== purge-cluster.yml"
    step_why=""
    start=$SECONDS
    if step_purge; then
        result passed "purge" "$((SECONDS - start))s; daemons stopped by pid file, state removed on all hosts"
    else
        result FAILED "purge" "$((SECONDS - start))s; ${step_why:-see above}"
    fi
fi
exit 0
