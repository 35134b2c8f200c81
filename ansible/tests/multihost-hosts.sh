#!/usr/bin/env bash
# Hosts on one machine for the multi-host ansible test (multihost.sh). Each
# host is a throwaway overlay of a Debian root (MULTIHOST_LOWER: the
# overlay's lowerdir, the sid root with Debian's Tentacle under the layer
# multihost.sh prepares) in namespaces of its own: network (an address of a
# private /24 on a bridge this script makes), mount (the overlay at
# /mnt/root, with /proc, /sys, /dev, a tmpfs /run and the host's /etc/hosts),
# UTS (hostname) and pid (a small reaper is its pid 1: killing it ends every
# process of the host, and with the last of them the mounts go). An sshd of
# this machine listens only on the host's address and chroots each session
# into the overlay (ChrootDirectory), so what ansible reaches over ssh is the
# sid root; the root has no sshd of its own. Devices are loop devices over
# sparse image files (SSD rotational=0), seen by every host as /dev is.
#
# Everything made is recorded under WORK/state and torn down from there:
# processes by pid (checked against the pid namespace they were started
# in), links by the names this script gave them (a per-run tag), loop
# devices by the image files they were attached to. Nothing else on the
# machine is touched.
#
# usage: multihost-hosts.sh COMMAND WORK [ARGS]
#   up WORK HOST...            make the hosts (names like node1; the first call
#                              also makes the bridge and the ssh client key)
#   up-client WORK HOST DIR... a host without sshd for the test's client, with
#                              WORK and each DIR bound into its root at the
#                              same paths
#   devices WORK HOST PAIRS    attach PAIRS new SSD+HDD loop pairs to HOST and
#                              print them as JSON, one {"ssd":..,"hdd":..} a line
#                              (sizes: MULTIHOST_SSD_SIZE, MULTIHOST_HDD_SIZE)
#   exec WORK HOST CMD...      run CMD in HOST: its namespaces, chrooted into its root
#   pid WORK HOST              the pid (in this namespace) of HOST's reaper
#   subnet WORK                the bridge's /24, as 10.254.X
#   cut WORK HOST              take HOST's link down (the host is cut off)
#   restore WORK HOST          bring it up again
#   down WORK                  tear down everything WORK/state records
#   check-clean WORK           exit 1 (and say what) if anything of WORK is left
#   _init WORK HOST [DIR...]   (internal) pid 1 of a host's namespaces
set -uo pipefail

self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "multihost-hosts.sh: $*" >&2; exit 1; }

[ $# -ge 1 ] || { usage >&2; exit 2; }
case $1 in -h | --help | help) usage; exit 0 ;; esac
cmd=$1
shift
[ $# -ge 1 ] || { usage >&2; exit 2; }
work=$1
shift
state=$work/state
lock=/tmp/hs-multihost.lock   # serialises subnet picking and loop attaching between runs

ssd_size=${MULTIHOST_SSD_SIZE:-1G}
hdd_size=${MULTIHOST_HDD_SIZE:-4G}

# --- helpers ---------------------------------------------------------------
get() {  # get FILE KEY
    sed -n "s/^$2=//p" "$1" 2> /dev/null | tail -1
}
host_file() { echo "$state/host.$1"; }
host_pid() {  # the reaper of HOST, if it still is the process we started
    local f pid ns
    f=$(host_file "$1")
    [ -f "$f" ] || return 1
    pid=$(get "$f" HOLDER)
    ns=$(get "$f" PIDNS)
    [ -n "$pid" ] && [ -n "$ns" ] && [ "$(readlink "/proc/$pid/ns/pid" 2> /dev/null)" = "$ns" ] || return 1
    echo "$pid"
}
ns_members() {  # pids (here) of the processes in pid namespace NS
    local p
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/ns/pid" 2> /dev/null)" = "$1" ] && echo "${p#/proc/}"
    done
}
wait_tcp() {  # wait_tcp IP PORT SECONDS
    local i
    for i in $(seq $(($3 * 5))); do
        (exec 3<> "/dev/tcp/$1/$2") 2> /dev/null && return 0
        sleep 0.2
    done
    return 1
}

# --- _init: pid 1 of a host ------------------------------------------------
if [ "$cmd" = _init ]; then
    set -e
    host=$1
    shift
    hd=$work/hosts/$host
    root=/mnt/root
    echo "$host" > /proc/sys/kernel/hostname
    # sshd's ChrootDirectory wants every component of the path root-owned
    # and writable by root alone (not /tmp): a tmpfs over /mnt, private to
    # this mount namespace
    mount -t tmpfs -o mode=0755,size=1m hs-multihost-mnt /mnt
    mkdir "$root"
    mount -t overlay "hs-multihost-$host" -o "lowerdir=$MULTIHOST_LOWER,upperdir=$hd/upper,workdir=$hd/ovl" "$root"
    mount -t proc proc "$root/proc"
    mount --rbind /sys "$root/sys"
    mount --rbind /dev "$root/dev"
    mount -t tmpfs -o mode=0755,size=64m hs-multihost-run "$root/run"
    mount --bind "$hd/hosts" "$root/etc/hosts"
    echo "$host" > "$root/etc/hostname"
    for d in "$@"; do
        mkdir -p "$root$d"
        mount --bind "$d" "$root$d"
    done
    # sshd's privilege separation directory, outside the root
    mount -t tmpfs -o mode=0755,size=1m hs-multihost-sshd /run
    mkdir -p /run/sshd
    touch "$hd/ready"
    # pid 1 reaps every orphan (daemons that detached), so a stopped
    # daemon's pid really disappears
    exec /usr/bin/python3 -c '
import os, signal, time
signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
while True:
    try:
        os.wait()
    except ChildProcessError:
        time.sleep(1)
'
fi

# --- up ----------------------------------------------------------------------
make_network() {  # the tag, the subnet and the bridge (once per WORK)
    local tag x i start cand=""
    [ -f "$state/net" ] && return 0
    tag=hsm$(head -c 2 /dev/urandom | od -An -tx1 | tr -d ' \n')
    start=$((0x${tag#hsm} % 234))
    for i in $(seq 0 233); do
        x=$(((start + i) % 234 + 20))
        # free: no address of it here, no route into it but the default one
        ip -4 -o addr show | grep -q " 10\.254\.$x\." && continue
        ip -4 route show match "10.254.$x.0/24" | grep -vq '^default' && continue
        cand=10.254.$x
        break
    done
    [ -n "$cand" ] || die "no free 10.254.x.0/24"
    ip link show "${tag}br" > /dev/null 2>&1 && die "link ${tag}br exists already"
    printf 'TAG=%s\nSUBNET=%s\nBRIDGE=%s\n' "$tag" "$cand" "${tag}br" > "$state/net"
    ip link add "${tag}br" type bridge || die "cannot make bridge ${tag}br"
    ip link set "${tag}br" type bridge stp_state 0 forward_delay 0 2> /dev/null
    ip addr add "$cand.1/24" dev "${tag}br" || die "cannot address ${tag}br"
    ip link set "${tag}br" up || die "cannot bring ${tag}br up"
    echo "bridge ${tag}br, $cand.1/24"
}

make_ssh_client_key() {
    mkdir -p "$work/ssh" "$work/cp"
    [ -f "$work/ssh/id_ed25519" ] && return 0
    ssh-keygen -q -t ed25519 -N '' -C "hs-multihost-controller" -f "$work/ssh/id_ed25519" || die "ssh-keygen failed"
    cp "$work/ssh/id_ed25519.pub" "$work/ssh/authorized_keys"
    : > "$work/ssh/known_hosts"
}

make_host() {  # make_host NAME ssh|client [DIR...]
    local host=$1 kind=$2 hd idx ip tag subnet bridge upid hpid pidns veth spid i
    shift 2
    hd=$work/hosts/$host
    [ -f "$(host_file "$host")" ] && die "$host exists already"
    idx=$(ls "$state"/host.* 2> /dev/null | wc -l)
    idx=$((idx + 1))
    tag=$(get "$state/net" TAG)
    subnet=$(get "$state/net" SUBNET)
    bridge=$(get "$state/net" BRIDGE)
    ip=$subnet.$((10 + idx))
    mkdir -p "$hd"/{upper,ovl,ssh,dev} || die "cannot make $hd"
    printf 'IP=%s\nINDEX=%s\n' "$ip" "$idx" > "$(host_file "$host")"

    # /etc/hosts of every host names all hosts (rewritten as hosts come)
    echo "$host $ip" >> "$state/hostlist"
    local h
    for h in $(cut -d' ' -f1 "$state/hostlist"); do
        { echo "127.0.0.1 localhost"; awk '{print $2, $1}' "$state/hostlist"; } > "$work/hosts/$h/hosts.new" &&
            cat "$work/hosts/$h/hosts.new" > "$work/hosts/$h/hosts" && rm -f "$work/hosts/$h/hosts.new"
    done
    chmod 0644 "$hd/hosts"

    ssh-keygen -q -t ed25519 -N '' -C "$host" -f "$hd/ssh/ssh_host_ed25519_key" || die "ssh-keygen failed"
    echo "$ip $(cut -d' ' -f1,2 "$hd/ssh/ssh_host_ed25519_key.pub")" >> "$work/ssh/known_hosts"
    cat > "$hd/sshd_config" <<EOF
# sshd of test host $host: only on $ip, keys of this test only
ListenAddress $ip
Port 22
HostKey $hd/ssh/ssh_host_ed25519_key
PidFile none
AuthorizedKeysFile $work/ssh/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM yes
StrictModes no
X11Forwarding no
PrintMotd no
MaxStartups 50:30:100
MaxSessions 50
LogLevel INFO
# the session is the host: its sid root (overlay), in its namespaces;
# sftp (ansible's copies) is sshd's own, as the root has no sftp-server
ChrootDirectory /mnt/root
Subsystem sftp internal-sftp
EOF

    # the namespaces, held by the reaper
    unshare --net --mount --uts --ipc --pid --fork --mount-proc --propagation private \
        env MULTIHOST_LOWER="$MULTIHOST_LOWER" "$self" _init "$work" "$host" "$@" > "$hd/init.log" 2>&1 &
    upid=$!
    echo "UNSHARE=$upid" >> "$(host_file "$host")"
    for i in $(seq 100); do
        [ -e "$hd/ready" ] && break
        kill -0 "$upid" 2> /dev/null || { cat "$hd/init.log" >&2; die "$host: namespaces could not be set up"; }
        sleep 0.1
    done
    [ -e "$hd/ready" ] || die "$host: namespaces not ready in 10 s"
    hpid=$(cut -d' ' -f1 "/proc/$upid/task/$upid/children" 2> /dev/null)
    [ -n "$hpid" ] || die "$host: no reaper under unshare $upid"
    pidns=$(readlink "/proc/$hpid/ns/pid")
    [ "$pidns" != "$(readlink /proc/self/ns/pid)" ] || die "$host: reaper is not in a new pid namespace"
    printf 'HOLDER=%s\nPIDNS=%s\n' "$hpid" "$pidns" >> "$(host_file "$host")"

    # its link to the bridge
    veth=${tag}h$idx
    ip link add "$veth" type veth peer name "${tag}n$idx" || die "cannot make veth $veth"
    echo "VETH=$veth" >> "$(host_file "$host")"
    ip link set "$veth" master "$bridge" up &&
        ip link set "${tag}n$idx" netns "$hpid" &&
        nsenter -t "$hpid" -n ip link set "${tag}n$idx" name eth0 &&
        nsenter -t "$hpid" -n ip addr add "$ip/24" dev eth0 &&
        nsenter -t "$hpid" -n ip link set eth0 up &&
        nsenter -t "$hpid" -n ip link set lo up || die "$host: network setup failed"

    if [ "$kind" = client ]; then
        echo "host $host: $ip, hostname $host, reaper pid $hpid, no sshd (the test's client)"
        return 0
    fi
    # its sshd (this machine's openssh-server), in all its namespaces; checked
    # there, as sshd wants its privilege separation directory in the /run
    # that the host sees
    nsenter -t "$hpid" -a /usr/sbin/sshd -t -f "$hd/sshd_config" || die "sshd rejects $hd/sshd_config"
    nsenter -t "$hpid" -a /usr/sbin/sshd -D -f "$hd/sshd_config" -E "$hd/sshd.log" &
    spid=$!
    echo "SSHD=$spid" >> "$(host_file "$host")"
    wait_tcp "$ip" 22 10 || { cat "$hd/sshd.log" >&2; die "$host: sshd does not listen on $ip:22"; }
    echo "host $host: $ip, hostname $host, reaper pid $hpid, sshd on $ip:22"
}

# --- devices -------------------------------------------------------------------
attach() {  # attach IMAGE ROTATIONAL: prints the loop device
    local img=$1 rot=$2 dev
    dev=$(losetup --direct-io=on --find --show "$img") || return 1
    echo "$dev $img $(stat -c '%u:%g %a' "$dev")" >> "$state/loops"
    echo "$rot" > "/sys/block/$(basename "$dev")/queue/rotational" || return 1
    if [ "$(cat "/sys/block/$(basename "$dev")/loop/dio" 2> /dev/null)" != 1 ]; then
        echo "multihost-hosts.sh: $dev: direct I/O could not be enabled (buffered)" >&2
    fi
    echo "$dev"
}

add_devices() {  # add_devices HOST PAIRS
    local host=$1 pairs=$2 hd k n ssd hdd
    hd=$work/hosts/$host
    [ -f "$(host_file "$host")" ] || die "no host $host"
    exec 9> "$lock"
    flock -w 120 9 || die "lock $lock busy"
    n=$(ls "$hd/dev"/*-ssd.img 2> /dev/null | wc -l)
    for k in $(seq "$n" $((n + pairs - 1))); do
        truncate -s "$ssd_size" "$hd/dev/osd$k-ssd.img" && truncate -s "$hdd_size" "$hd/dev/osd$k-hdd.img" ||
            die "cannot make images in $hd/dev"
        ssd=$(attach "$hd/dev/osd$k-ssd.img" 0) || die "cannot attach $hd/dev/osd$k-ssd.img"
        hdd=$(attach "$hd/dev/osd$k-hdd.img" 1) || die "cannot attach $hd/dev/osd$k-hdd.img"
        printf '{"ssd": "%s", "hdd": "%s"}\n' "$ssd" "$hdd"
    done
    flock -u 9
    exec 9>&-
}

# --- down ----------------------------------------------------------------------
teardown() {
    local f host pid ns upid spid veth i left s dev img owner mode back
    [ -d "$state" ] || return 0
    # ssh connection masters of the controller (by their sockets)
    for s in "$work"/cp/*; do
        [ -S "$s" ] && ssh -o ControlPath="$s" -O exit placeholder > /dev/null 2>&1
    done
    # every host: kill its pid 1 (the kernel then kills the whole namespace)
    for f in "$state"/host.*; do
        [ -f "$f" ] || continue
        host=${f##*/host.}
        ns=$(get "$f" PIDNS)
        if pid=$(host_pid "$host"); then
            kill -KILL "$pid" 2> /dev/null
        fi
        if [ -n "$ns" ]; then
            for i in $(seq 150); do
                [ -z "$(ns_members "$ns")" ] && break
                sleep 0.2
            done
            left=$(ns_members "$ns")
            [ -z "$left" ] || echo "multihost-hosts.sh: $host: processes still in its pid namespace: $left" >&2
        fi
        # the unshare and nsenter parents exit with their children
        for pid in $(get "$f" UNSHARE) $(get "$f" SSHD); do
            for i in $(seq 25); do kill -0 "$pid" 2> /dev/null || break; sleep 0.2; done
            if kill -0 "$pid" 2> /dev/null && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF -- "$work"; then
                kill -KILL "$pid" 2> /dev/null
            fi
        done
        veth=$(get "$f" VETH)
        [ -n "$veth" ] && ip link show "$veth" > /dev/null 2>&1 && ip link del "$veth"
    done
    if [ -f "$state/net" ]; then
        s=$(get "$state/net" BRIDGE)
        [ -n "$s" ] && ip link show "$s" > /dev/null 2>&1 && ip link del "$s"
    fi
    # loop devices: give the nodes back as they were, detach
    if [ -f "$state/loops" ]; then
        while read -r dev img owner mode; do
            back=$(losetup -n -O BACK-FILE "$dev" 2> /dev/null | sed 's/ *$//')
            [ "$back" = "$img" ] || continue
            chown "$owner" "$dev" 2> /dev/null
            chmod "$mode" "$dev" 2> /dev/null
            losetup -d "$dev" || echo "multihost-hosts.sh: could not detach $dev" >&2
        done < "$state/loops"
    fi
}

check_clean() {
    local f ns left="" tag dev img owner mode back
    for f in "$state"/host.*; do
        [ -f "$f" ] || continue
        ns=$(get "$f" PIDNS)
        [ -n "$ns" ] && [ -n "$(ns_members "$ns")" ] && left+="processes in the pid namespace of ${f##*/host.}; "
    done
    if [ -f "$state/net" ]; then
        tag=$(get "$state/net" TAG)
        [ -n "$tag" ] && ip -o link show | grep -q ": $tag" && left+="links named $tag*; "
    fi
    if [ -f "$state/loops" ]; then
        while read -r dev img owner mode; do
            back=$(losetup -n -O BACK-FILE "$dev" 2> /dev/null | sed 's/ *$//')
            [ "$back" = "$img" ] && left+="$dev still attached; "
        done < "$state/loops"
    fi
    [ -z "$left" ] && return 0
    echo "$left"
    return 1
}

case $cmd in
up)
    [ $# -ge 1 ] || die "up WORK HOST..."
    [ -n "${MULTIHOST_LOWER:-}" ] || die "MULTIHOST_LOWER (the hosts' overlay lowerdir) is not set"
    mkdir -p "$state" || die "cannot make $state"
    exec 9> "$lock"
    flock -w 120 9 || die "lock $lock busy"
    make_network
    flock -u 9
    exec 9>&-
    make_ssh_client_key
    for h in "$@"; do make_host "$h" ssh; done ;;
up-client)
    [ $# -ge 1 ] || die "up-client WORK HOST DIR..."
    [ -n "${MULTIHOST_LOWER:-}" ] || die "MULTIHOST_LOWER (the hosts' overlay lowerdir) is not set"
    [ -f "$state/net" ] || die "up-client comes after up"
    make_host "$1" client "$work" "${@:2}" ;;
devices)
    [ $# -eq 2 ] || die "devices WORK HOST PAIRS"
    add_devices "$1" "$2" ;;
exec)
    [ $# -ge 2 ] || die "exec WORK HOST CMD..."
    pid=$(host_pid "$1") || die "host $1 is not running"
    shift
    exec nsenter -t "$pid" -a -- chroot /mnt/root "$@" ;;
subnet) get "$state/net" SUBNET ;;
pid)
    host_pid "$1" || die "host $1 is not running" ;;
cut | restore)
    f=$(host_file "$1")
    veth=$(get "$f" VETH)
    [ -n "$veth" ] || die "no host $1"
    ip link set "$veth" "$([ "$cmd" = cut ] && echo down || echo up)" ;;
down) teardown ;;
check-clean) check_clean ;;
*) usage >&2; exit 2 ;;
esac
