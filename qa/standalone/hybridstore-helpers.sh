#!/usr/bin/env bash
# hybridstore-helpers.sh: a small bash library for single-machine Ceph clusters
# on 127.0.0.1, used by qa/standalone/hybridstore/*.sh and by qa/run-local.
# Written for this project; it follows the shape of Ceph's standalone tests
# (run() / TEST_* / setup / teardown / main) but is not derived from their
# helper file.
#
# Model:
#   - Every cluster lives in one directory DIR: ceph.conf, the monmap, one data
#     directory per daemon (DIR/mon.a, DIR/mgr.x, DIR/osd.N), and every daemon's
#     pid file, admin socket and log (DIR/<name>.{pid,asok,log}).
#   - ceph.conf is rendered from DIR/conf.tsv ("section<TAB>key<TAB>value"
#     lines, last one wins), so callers add settings with conf_set and the
#     runner adds a job's overrides the same way.
#   - Daemons are stopped only through their pid files, and only if the pid
#     still names a ceph daemon; loop devices are detached only if this
#     library attached them (DIR/loops). teardown does both.
#   - Authentication is off (as in Ceph's standalone tests) unless
#     HS_AUTH=cephx: then every daemon and the admin client get keys, as in a
#     real cluster. The mon uses the two ports of CEPH_MON (v2 on the port
#     given, v1 on the next one).
#
# Environment:
#   CEPH_MON        127.0.0.1:PORT, set by the script's run() (pick_mon_port)
#   CEPH_OSD        the ceph-osd to test (else $CEPH_BUILD/bin/ceph-osd, else
#                   ceph-osd on PATH if it knows hybridstore)
#   HS_OBJECTSTORE  hybridstore (default) or bluestore (the baseline, with any
#                   ceph-osd; results are labelled as such, never as hybridstore),
#                   or memstore (no device at all: the ceiling of the OSD's own
#                   code path on this host, HS_MEMSTORE_SIZE bytes per OSD)
#   HS_DEVICES      file (default: the store creates sparse files in the OSD
#                   directory) or loop (loop devices, SSD rotational=0)
#   HS_SSD_SIZE, HS_HDD_SIZE   device sizes (default 1G and 8G)
#   HS_TIMEOUT      seconds every wait loop may take (default 120)
#   HYBRIDSTORE_TOOL  the project's hybridstore-tool (found in build/bin if unset)

HS_TIMEOUT=${HS_TIMEOUT:-120}
HS_AUTH=${HS_AUTH:-none}
HS_OBJECTSTORE=${HS_OBJECTSTORE:-hybridstore}
HS_DEVICES=${HS_DEVICES:-file}
HS_SSD_SIZE=${HS_SSD_SIZE:-1G}
HS_HDD_SIZE=${HS_HDD_SIZE:-8G}
HS_SKIP=77                     # exit status meaning "skipped" (automake's convention)
HS_HELPERS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HS_TOP=$(cd "$HS_HELPERS_DIR/../.." && pwd)

log() { echo "$(date +%H:%M:%S) $*" >&2; }
fail() { echo "FAILED: $*" >&2; return 1; }

# ---------------------------------------------------------------------------
# Binaries

# The ceph-osd to use: CEPH_OSD, CEPH_BUILD/bin/ceph-osd, or for the baseline
# (and for a lab where the installed one is hybridstore-capable) ceph-osd on PATH.
resolve_ceph_osd() {
    if [ -n "${CEPH_OSD:-}" ]; then
        echo "$CEPH_OSD"
    elif [ -n "${CEPH_BUILD:-}" ]; then
        echo "$CEPH_BUILD/bin/ceph-osd"
    else
        command -v ceph-osd || true
    fi
}

# True if the ceph-osd binary accepts osd_objectstore=hybridstore (its option
# table lists the value); Debian's stock binary rejects it.
osd_knows_hybridstore() {
    local osd=$1 out
    [ -x "$osd" ] || return 1
    out=$("$osd" --no-mon-config -c /dev/null --log-file /dev/null --osd-objectstore hybridstore \
        --show-config-value osd_objectstore 2>/dev/null) || return 1
    [ "$out" = hybridstore ]
}

# Prints why the configured objectstore cannot run here, or nothing if it can.
# Sets CEPH_OSD (exported) when it can.
objectstore_unavailable_reason() {
    local osd
    osd=$(resolve_ceph_osd)
    case "$HS_OBJECTSTORE" in
    hybridstore)
        if [ -z "$osd" ]; then
            echo "no ceph-osd found; set CEPH_OSD=/path/to/ceph-osd or CEPH_BUILD=dir"
        elif [ ! -x "$osd" ]; then
            echo "ceph-osd $osd does not exist or is not executable"
        elif ! osd_knows_hybridstore "$osd"; then
            if [ -z "${CEPH_OSD:-}${CEPH_BUILD:-}" ]; then
                echo "no hybridstore-capable ceph-osd given ($osd does not know osd_objectstore=hybridstore); set CEPH_OSD=/path/to/ceph-osd or CEPH_BUILD=dir"
            else
                echo "ceph-osd $osd does not know osd_objectstore=hybridstore"
            fi
        else
            export CEPH_OSD=$osd
        fi ;;
    bluestore|memstore)
        if [ -z "$osd" ] || [ ! -x "$osd" ]; then
            echo "no ceph-osd found for the $HS_OBJECTSTORE baseline"
        else
            export CEPH_OSD=$osd
        fi ;;
    *)
        echo "HS_OBJECTSTORE=$HS_OBJECTSTORE is none of hybridstore, bluestore, memstore" ;;
    esac
    local b
    for b in ceph-mon ceph-mgr ceph rados monmaptool uuidgen jq; do
        command -v "$b" > /dev/null || { echo "$b is not installed"; return 0; }
    done
}

hybridstore_tool() {
    local tool=${HYBRIDSTORE_TOOL:-}
    if [ -z "$tool" ]; then
        for tool in "$HS_TOP/build/bin/hybridstore-tool" "$(command -v hybridstore-tool)"; do
            [ -x "$tool" ] && break
        done
    fi
    [ -x "$tool" ] || { fail "hybridstore-tool not found (build it or set HYBRIDSTORE_TOOL)"; return 1; }
    "$tool" "$@"
}

# ---------------------------------------------------------------------------
# Ports and waiting

port_in_use() {
    (exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null
}

# pick_mon_port BASE: a port P >= BASE with P and P+1 free. The start is
# offset by the shell's pid so concurrent runs of one script do not collide.
pick_mon_port() {
    local base=$1 i p
    for i in $(seq 0 99); do
        p=$((base + (($$ + i) % 100) * 2))
        if ! port_in_use "$p" && ! port_in_use $((p + 1)); then
            echo "$p"
            return 0
        fi
    done
    fail "no free port pair from $base"
}

# wait_until SECONDS WHAT CMD...: runs CMD every second until it succeeds.
wait_until() {
    local timeout=$1 what=$2 start=$SECONDS
    shift 2
    until "$@" > /dev/null 2>&1; do
        if ((SECONDS - start >= timeout)); then
            fail "timed out after ${timeout}s waiting for $what"
            return 1
        fi
        sleep 1
    done
}

# ceph and rados with a bound on every call (a down cluster must not hang a
# test). --foreground keeps them in the caller's process group, so stopping a
# background load generator's group stops its client calls too.
ceph_cli() { timeout --foreground "${HS_CMD_TIMEOUT:-90}" ceph "$@"; }
rados_cli() { timeout --foreground "${HS_CMD_TIMEOUT:-90}" rados "$@"; }

# ---------------------------------------------------------------------------
# Configuration

# conf_set DIR SECTION KEY VALUE
conf_set() {
    printf '%s\t%s\t%s\n' "$2" "$3" "$4" >> "$1/conf.tsv"
}

# conf_render DIR: writes DIR/ceph.conf from DIR/conf.tsv. Keys are compared
# with spaces and underscores equal; the last value of a key wins; sections
# and keys keep the order in which they first appeared.
conf_render() {
    local dir=$1
    awk -F '\t' '
        NF < 3 { next }
        {
            sec = $1; key = $2; val = $3
            for (i = 4; i <= NF; i++) val = val "\t" $i
            norm = key; gsub(/[ _]+/, "_", norm)
            if (!(sec in seen)) { seen[sec] = 1; secs[++nsec] = sec }
            id = sec SUBSEP norm
            if (!(id in val_of)) { keys[sec, ++nkeys[sec]] = norm; name_of[id] = key }
            val_of[id] = val
        }
        END {
            print "# generated by hybridstore-helpers.sh from conf.tsv"
            for (s = 1; s <= nsec; s++) {
                sec = secs[s]
                printf "[%s]\n", sec
                for (k = 1; k <= nkeys[sec]; k++) {
                    id = sec SUBSEP keys[sec, k]
                    printf "\t%s = %s\n", name_of[id], val_of[id]
                }
            }
        }' "$dir/conf.tsv" > "$dir/ceph.conf.tmp" && mv "$dir/ceph.conf.tmp" "$dir/ceph.conf"
}

# conf_base DIR: the settings every cluster here shares.
conf_base() {
    local dir=$1 port=${CEPH_MON:?CEPH_MON is not set (run() sets it)}
    port=${port##*:}
    local fsid
    fsid=$(cat "$dir/fsid")
    conf_set "$dir" global fsid "$fsid"
    conf_set "$dir" global "mon host" "[v2:127.0.0.1:$port,v1:127.0.0.1:$((port + 1))]"
    conf_set "$dir" global "auth cluster required" "$HS_AUTH"
    conf_set "$dir" global "auth service required" "$HS_AUTH"
    conf_set "$dir" global "auth client required" "$HS_AUTH"
    if [ "$HS_AUTH" = cephx ]; then
        # mon. and client.admin in one keyring; mgr and OSDs keep theirs in
        # their data directories.
        conf_set "$dir" global keyring "$dir/keyring"
        conf_set "$dir" mgr keyring "$dir/\$name/keyring"
        conf_set "$dir" osd keyring "$dir/\$name/keyring"
    fi
    conf_set "$dir" global "run dir" "$dir"
    conf_set "$dir" global "admin socket" "$dir/\$name.asok"
    # Clients run side by side (a bench and a writer): one socket each.
    conf_set "$dir" client "admin socket" "$dir/\$name.\$pid.asok"
    conf_set "$dir" global "pid file" "$dir/\$name.pid"
    conf_set "$dir" global "log file" "$dir/\$name.log"
    conf_set "$dir" global "mon cluster log file" "default=$dir/\$cluster.\$channel.log cluster=$dir/cluster.log"
    conf_set "$dir" global "mon data" "$dir/\$name"
    conf_set "$dir" global "mgr data" "$dir/\$name"
    conf_set "$dir" global "osd data" "$dir/\$name"
    conf_set "$dir" global "osd pool default size" 1
    conf_set "$dir" global "osd pool default min size" 1
    conf_set "$dir" global "osd pool default pg autoscale mode" off
    conf_set "$dir" global "osd crush chooseleaf type" 0
    conf_set "$dir" global "mon allow pool size one" true
    conf_set "$dir" global "mon allow pool delete" true
    conf_set "$dir" global "mon warn on pool no redundancy" false
    conf_set "$dir" global "mon data avail warn" 2
    conf_set "$dir" global "mon data avail crit" 1
    conf_set "$dir" global "ms bind ipv4" true
    # A ceph-osd built from a pre-16.2.1 tree reclaims global ids the old
    # way; the mon allows that by default, and here it should not warn.
    conf_set "$dir" mon "mon warn on insecure global id reclaim" false
    conf_set "$dir" mon "mon warn on insecure global id reclaim allowed" false
    conf_set "$dir" global "public addr" 127.0.0.1
    conf_set "$dir" mon "mon osd report timeout" 30
    conf_set "$dir" osd "osd memory target" 939524096
    conf_set "$dir" osd "osd max object name len" 460
    conf_set "$dir" osd "osd max object namespace len" 64
    conf_set "$dir" osd "osd objectstore" "$HS_OBJECTSTORE"
    case "$HS_OBJECTSTORE" in
    hybridstore)
        conf_set "$dir" osd "hybridstore ssd size" "$HS_SSD_SIZE"
        conf_set "$dir" osd "hybridstore hdd size" "$HS_HDD_SIZE"
        conf_set "$dir" osd "hybridstore block create" true ;;
    bluestore)
        conf_set "$dir" osd "bluestore block size" "$(size_bytes "$HS_HDD_SIZE")"
        conf_set "$dir" osd "bluestore block create" true
        conf_set "$dir" osd "bluestore fsck on mount" true ;;
    memstore)
        conf_set "$dir" osd "memstore device bytes" "$(size_bytes "${HS_MEMSTORE_SIZE:-4G}")" ;;
    esac
    # A ceph-osd built from a source tree loads its plugins (erasure code,
    # compression, object classes) from the tree.
    local osd_bin=${CEPH_OSD:-} lib
    # An installed binary, or one unpacked from a package (a .../usr/bin
    # directory), finds them where it was configured to: none is set.
    if [ -n "$osd_bin" ] && [ -d "$(dirname "$osd_bin")/../lib" ] && [[ $(dirname "$osd_bin") != */usr/bin ]]; then
        lib=$(cd "$(dirname "$osd_bin")/../lib" && pwd)
        conf_set "$dir" osd "plugin dir" "$lib"
        conf_set "$dir" osd "erasure code dir" "$lib"
        conf_set "$dir" osd "osd class dir" "$lib"
    fi
}

# size_bytes 1G -> 1073741824 (K, M, G, T suffixes, powers of 1024)
size_bytes() {
    local s=$1 n mult=1
    n=${s%[KkMmGgTt]}
    case "$s" in
    *[Kk]) mult=1024 ;;
    *[Mm]) mult=$((1024 ** 2)) ;;
    *[Gg]) mult=$((1024 ** 3)) ;;
    *[Tt]) mult=$((1024 ** 4)) ;;
    esac
    echo $((n * mult))
}

# ---------------------------------------------------------------------------
# Setup and teardown

# setup DIR: an empty cluster directory (DIR must not hold a running cluster).
setup() {
    local dir=$1
    teardown "$dir" > /dev/null 2>&1 || true
    mkdir -p "$dir" || return 1
    uuidgen > "$dir/fsid"
    : > "$dir/conf.tsv"
    conf_base "$dir"
    conf_render "$dir"
    export CEPH_CONF=$dir/ceph.conf
}

# daemon_pid DIR NAME: the pid of a running daemon, from its pid file, if that
# process is still a ceph daemon; nothing otherwise.
daemon_pid() {
    local pidfile=$1/$2.pid pid
    [ -s "$pidfile" ] || return 1
    pid=$(cat "$pidfile")
    [ -r "/proc/$pid/cmdline" ] || return 1
    tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q "ceph-\|$(basename "${CEPH_OSD:-ceph-osd}")" || return 1
    echo "$pid"
}

# kill_daemon DIR NAME [SIGNAL]: signal a daemon and wait until it is gone.
kill_daemon() {
    local dir=$1 name=$2 sig=${3:-TERM} pid start=$SECONDS
    pid=$(daemon_pid "$dir" "$name") || { rm -f "$dir/$name.pid"; return 0; }
    kill -s "$sig" "$pid" 2> /dev/null || true
    while kill -0 "$pid" 2> /dev/null; do
        if ((SECONDS - start >= 60)); then
            log "$name (pid $pid) still running 60s after SIG$sig; sending KILL"
            kill -s KILL "$pid" 2> /dev/null || true
            start=$SECONDS
        fi
        sleep 0.2
    done
    rm -f "$dir/$name.pid"
}

# run_in_background DIR NAME CMD...: a client process of the test (a load
# generator) in a process group of its own, recorded so that teardown stops
# it with everything it started.
run_in_background() {
    local dir=$1 name=$2
    shift 2
    set -m
    "$@" &
    echo $! > "$dir/$name.bgpid"
    set +m
}

# kill_background DIR: the process groups run_in_background started.
kill_background() {
    local dir=$1 f pid
    for f in "$dir"/*.bgpid; do
        [ -e "$f" ] || continue
        pid=$(cat "$f")
        kill -KILL -- "-$pid" 2> /dev/null || true
        rm -f "$f"
    done
}

# kill_daemons DIR [SIGNAL]: the test's background processes, then every
# daemon of the cluster, OSDs first.
kill_daemons() {
    local dir=$1 sig=${2:-TERM} f name
    [ -d "$dir" ] || return 0
    kill_background "$dir"
    for f in "$dir"/osd.*.pid "$dir"/mgr.*.pid "$dir"/mon.*.pid; do
        [ -e "$f" ] || continue
        name=$(basename "$f" .pid)
        kill_daemon "$dir" "$name" "$sig"
    done
}

# loop_attach DIR IMAGE ROTATIONAL: a loop device over IMAGE, recorded for
# teardown. Direct I/O: a buffered loop device lets the host's page cache
# serve reads and absorb writes behind the stores' O_DIRECT, which no disk
# does.
loop_attach() {
    local dir=$1 img=$2 rot=$3 dev
    dev=$(losetup --find --show --direct-io=on "$img") || { fail "losetup --direct-io=on $img"; return 1; }
    [ "$(cat "/sys/block/$(basename "$dev")/loop/dio" 2> /dev/null)" = 1 ] ||
        log "warning: $dev runs without direct I/O (the backing filesystem refused it)"
    echo "$dev" >> "$dir/loops"
    echo "$rot" > "/sys/block/$(basename "$dev")/queue/rotational" 2> /dev/null ||
        log "cannot set rotational=$rot on $dev"
    echo "$dev"
}

# Only a loop device that still serves an image under DIR: a name recorded
# here may since have been detached and given to another test's image.
loops_detach() {
    local dir=$1 dev back
    [ -s "$dir/loops" ] || return 0
    while read -r dev; do
        back=$(losetup -n -O BACK-FILE "$dev" 2> /dev/null | sed 's/ *$//')
        [[ $back == "$dir/"* ]] || { log "not detaching $dev: it serves '${back:-nothing}' now"; continue; }
        losetup -d "$dev" 2> /dev/null || log "losetup -d $dev failed"
    done < "$dir/loops"
    rm -f "$dir/loops"
}

# teardown DIR [FAILED]: stop every daemon, detach loops, remove DIR (kept,
# with its logs, when FAILED is non-empty or HS_KEEP is set).
teardown() {
    local dir=$1 failed=${2:-}
    [ -d "$dir" ] || return 0
    kill_daemons "$dir" TERM
    loops_detach "$dir"
    if [ -e "$dir/devclass" ] || ls "$dir"/*.mnt > /dev/null 2>&1; then
        # shellcheck source=qa/devclass/devclass.sh
        source "$HS_TOP/qa/devclass/devclass.sh" && devclass_detach_all "$dir"
    fi
    if [ -n "$failed" ] || [ -n "${HS_KEEP:-}" ]; then
        log "kept $dir (logs: $dir/*.log)"
    else
        rm -rf "$dir"
    fi
}

# ---------------------------------------------------------------------------
# Daemons

run_mon() {
    local dir=$1 id=${2:-a} port=${CEPH_MON##*:}
    port_in_use "$port" && { fail "mon port $port is in use"; return 1; }
    if [ "$HS_AUTH" = cephx ]; then
        ceph-authtool --create-keyring "$dir/keyring" --gen-key -n mon. --cap mon 'allow *' > /dev/null &&
            ceph-authtool "$dir/keyring" --gen-key -n client.admin --cap mon 'allow *' --cap osd 'allow *' \
                --cap mgr 'allow *' --cap mds 'allow *' > /dev/null || { fail "keyrings"; return 1; }
    fi
    monmaptool --create --fsid "$(cat "$dir/fsid")" \
        --addv "$id" "[v2:127.0.0.1:$port,v1:127.0.0.1:$((port + 1))]" "$dir/monmap" > /dev/null || return 1
    ceph-mon -c "$dir/ceph.conf" -i "$id" --mkfs --monmap "$dir/monmap" > "$dir/mon.$id.mkfs.log" 2>&1 ||
        { cat "$dir/mon.$id.mkfs.log" >&2; fail "ceph-mon --mkfs"; return 1; }
    ceph-mon -c "$dir/ceph.conf" -i "$id" || { fail "ceph-mon -i $id did not start"; return 1; }
    wait_until 60 "mon.$id to answer" ceph_cli --connect-timeout 5 mon stat
}

mgr_available() {
    [ "$(ceph_cli mgr stat -f json | jq -r .available)" = true ]
}

run_mgr() {
    local dir=$1 id=${2:-x}
    mkdir -p "$dir/mgr.$id"
    if [ "$HS_AUTH" = cephx ]; then
        ceph_cli auth get-or-create "mgr.$id" mon 'allow profile mgr' osd 'allow *' mds 'allow *' \
            > "$dir/mgr.$id/keyring" || { fail "mgr.$id key"; return 1; }
    fi
    ceph-mgr -c "$dir/ceph.conf" -i "$id" || { fail "ceph-mgr -i $id did not start"; return 1; }
    wait_until "$HS_TIMEOUT" "mgr.$id to be available" mgr_available
}

osd_is_up() {
    ceph_cli osd dump -f json | jq -e --argjson id "$1" \
        '.osds[] | select(.osd == $id) | .up == 1' > /dev/null
}

osd_is_down() {
    ceph_cli osd dump -f json | jq -e --argjson id "$1" \
        '.osds[] | select(.osd == $id) | .up == 0' > /dev/null
}

wait_for_osd() {
    local state=$1 id=$2
    wait_until "$HS_TIMEOUT" "osd.$id to be $state" "osd_is_$state" "$id"
}

# class_device DIR NAME CLASS SIZE ROTATIONAL: a loop device of the device
# class CLASS: raw (an image, direct I/O) or a profile of
# qa/devclass/profiles.conf (hdd, ssd) served through the disk model. A raw
# SSD's image is written out first, as qa/devclass's raw class does: an SSD
# has all its blocks, and writes into a sparse image's holes make a synced
# write through the loop device wait for the host filesystem's allocations
# (docs/benchmarks.md). A raw HDD stays sparse; HS_RAW_SPARSE=1 keeps the
# SSD sparse too. Class file is a raw image written out and given to the
# store as the file itself, no loop device: a loop device serialises a
# syncing writer behind a write stream on the same device, a file does not
# (docs/benchmarks.md), so this class separates that from the store's cost.
class_device() {
    local dir=$1 name=$2 class=$3 size=$4 rot=$5
    if [ "$class" = file ]; then
        truncate -s "$size" "$dir/$name.img" || return 1
        local mib=$(($(size_bytes "$size") >> 20))
        dd if=/dev/zero of="$dir/$name.img" bs=1M count="$mib" conv=notrunc oflag=direct status=none || return 1
        echo "$dir/$name.img"
    elif [ "$class" = raw ]; then
        truncate -s "$size" "$dir/$name.img" || return 1
        if [ "$rot" = 0 ] && [ "${HS_RAW_SPARSE:-0}" != 1 ]; then
            local mib=$(($(size_bytes "$size") >> 20))
            dd if=/dev/zero of="$dir/$name.img" bs=1M count="$mib" conv=notrunc oflag=direct status=none || return 1
        fi
        loop_attach "$dir" "$dir/$name.img" "$rot"
    else
        # shellcheck source=qa/devclass/devclass.sh
        source "$HS_TOP/qa/devclass/devclass.sh" || return 1
        devclass_attach "$dir" "$name" "$class" "$size"
    fi
}

# osd_devices DIR ID: for HS_DEVICES=loop, makes the OSD's two images and loop
# devices and points the OSD's device options at them; for file, nothing (the
# store creates block.ssd and block.hdd in its directory). HS_SSD_CLASS and
# HS_HDD_CLASS (default raw) give each device a class (class_device).
# BlueStore puts block on the HDD and block.db on the SSD, or, with
# HS_BLUESTORE_DB=none, everything on the HDD.
osd_devices() {
    local dir=$1 id=$2 ssd hdd
    [ "$HS_DEVICES" = loop ] || return 0
    # MemStore keeps everything in the OSD's memory: no device to make.
    [ "$HS_OBJECTSTORE" = memstore ] && return 0
    hdd=$(class_device "$dir" "osd.$id.hdd" "${HS_HDD_CLASS:-raw}" "$HS_HDD_SIZE" 1) || return 1
    if ! [ "$HS_OBJECTSTORE" = bluestore ] || [ "${HS_BLUESTORE_DB:-ssd}" != none ]; then
        ssd=$(class_device "$dir" "osd.$id.ssd" "${HS_SSD_CLASS:-raw}" "$HS_SSD_SIZE" 0) || return 1
    fi
    case "$HS_OBJECTSTORE" in
    hybridstore)
        conf_set "$dir" "osd.$id" "hybridstore ssd path" "$ssd"
        conf_set "$dir" "osd.$id" "hybridstore hdd path" "$hdd" ;;
    bluestore)
        conf_set "$dir" "osd.$id" "bluestore block path" "$hdd"
        if [ -n "${ssd:-}" ]; then
            conf_set "$dir" "osd.$id" "bluestore block db path" "$ssd"
            conf_set "$dir" "osd.$id" "bluestore block db create" false
        fi ;;
    esac
    conf_render "$dir"
}

# create_osd DIR ID [ceph-osd args...]: register osd.ID and mkfs its store.
# The data directory's `type` file names the store before mkfs, so the store
# is selected even by a ceph-osd that falls back to its default
# osd_objectstore.
create_osd() {
    local dir=$1 id=$2 uuid got
    shift 2
    local data=$dir/osd.$id
    uuid=$(uuidgen)
    mkdir -p "$data" || return 1
    echo "$HS_OBJECTSTORE" > "$data/type"
    osd_devices "$dir" "$id" || return 1
    if [ "$HS_AUTH" = cephx ]; then
        # The key goes in with the OSD (`osd new -i`), as ceph-volume does.
        local key
        key=$(ceph-authtool --gen-print-key) || return 1
        printf '[osd.%s]\n\tkey = %s\n' "$id" "$key" > "$data/keyring"
        printf '{"cephx_secret": "%s"}\n' "$key" > "$data/new.json"
        got=$(ceph_cli osd new "$uuid" "$id" -i "$data/new.json") || { fail "ceph osd new $uuid $id"; return 1; }
    else
        got=$(ceph_cli osd new "$uuid" "$id") || { fail "ceph osd new $uuid $id"; return 1; }
    fi
    [ "$got" = "$id" ] || { fail "ceph osd new gave id $got, wanted $id"; return 1; }
    "$CEPH_OSD" -c "$dir/ceph.conf" -i "$id" --mkfs --osd-uuid "$uuid" --osd-data "$data" "$@" \
        > "$dir/osd.$id.mkfs.log" 2>&1 ||
        { tail -20 "$dir/osd.$id.mkfs.log" >&2; fail "ceph-osd --mkfs for osd.$id"; return 1; }
    echo "$*" > "$data/hs.args"
}

# start_osd DIR ID: start an existing osd.ID without waiting for it.
start_osd() {
    local dir=$1 id=$2 args=()
    [ -s "$dir/osd.$id/hs.args" ] && read -r -a args < "$dir/osd.$id/hs.args"
    "$CEPH_OSD" -c "$dir/ceph.conf" -i "$id" "${args[@]}" ||
        { tail -20 "$dir/osd.$id.log" >&2; fail "ceph-osd -i $id did not start"; return 1; }
}

# run_osd DIR ID [ceph-osd args...]: create osd.ID, start it, wait until the
# mon sees it up.
run_osd() {
    create_osd "$@" && activate_osd "$1" "$2" && check_osd_objectstore "$2"
}

# activate_osd DIR ID: start an existing osd.ID (after run_osd or a stop) and
# wait until it is up.
activate_osd() {
    start_osd "$1" "$2" || return 1
    wait_for_osd up "$2" || { tail -20 "$1/osd.$2.log" >&2; return 1; }
}

# stop_osd DIR ID [SIGNAL]: stop osd.ID (TERM: clean shutdown; KILL: a crash).
stop_osd() {
    kill_daemon "$1" "osd.$2" "${3:-TERM}"
}

# restart_osd DIR ID [SIGNAL]
restart_osd() {
    stop_osd "$1" "$2" "${3:-TERM}" || return 1
    activate_osd "$1" "$2"
}

# run_cluster DIR NUM_OSDS: mon.a, mgr.x and osd.0..N-1. The OSDs are
# created in parallel (one by one with loop devices, whose setup rewrites
# ceph.conf), then started together.
run_cluster() {
    local dir=$1 n=$2 i pids=() rc=0
    run_mon "$dir" a || return 1
    run_mgr "$dir" x || return 1
    for ((i = 0; i < n; i++)); do
        if [ "$HS_DEVICES" = loop ]; then
            create_osd "$dir" "$i" || return 1
        else
            create_osd "$dir" "$i" &
            pids+=($!)
        fi
    done
    for i in "${pids[@]}"; do wait "$i" || rc=1; done
    [ $rc = 0 ] || return 1
    for ((i = 0; i < n; i++)); do start_osd "$dir" "$i" || return 1; done
    for ((i = 0; i < n; i++)); do
        wait_for_osd up "$i" || { tail -20 "$dir/osd.$i.log" >&2; return 1; }
        check_osd_objectstore "$i" || return 1
    done
}

# check_osd_objectstore ID: osd.ID reports the store under test (so a test
# never passes on a ceph-osd that quietly ran another store).
check_osd_objectstore() {
    local got
    got=$(osd_metadata_field "$1" osd_objectstore)
    [ "$got" = "$HS_OBJECTSTORE" ] || { fail "osd.$1 reports osd_objectstore '$got', not $HS_OBJECTSTORE"; return 1; }
}

# ---------------------------------------------------------------------------
# Cluster state

# create_pool NAME PG_NUM [SIZE]
create_pool() {
    local pool=$1 pgs=${2:-8} size=${3:-}
    ceph_cli osd pool create "$pool" "$pgs" "$pgs" > /dev/null || return 1
    if [ -n "$size" ]; then
        ceph_cli osd pool set "$pool" size "$size" --yes-i-really-mean-it > /dev/null || return 1
    fi
    ceph_cli osd pool application enable "$pool" rados > /dev/null || return 1
    wait_for_clean "$HS_TIMEOUT"
}

all_pgs_clean() {
    ceph_cli pg stat -f json | jq -e '
        (.pg_summary // .) as $s
        | ([$s.num_pg_by_state[]? | select(.name == "active+clean") | .num] | add // 0) == $s.num_pgs' \
        > /dev/null
}

wait_for_clean() {
    wait_until "${1:-$HS_TIMEOUT}" "all PGs active+clean" all_pgs_clean ||
        { ceph_cli pg stat >&2; return 1; }
}

# perf_dump ID: the OSD's perf counters (admin socket).
perf_dump() {
    ceph_cli daemon "osd.$1" perf dump
}

# osd_metadata_field ID FIELD
osd_metadata_field() {
    ceph_cli osd metadata "$1" -f json | jq -r --arg f "$2" '.[$f] // empty'
}

# ---------------------------------------------------------------------------
# Data

# Deterministic content: object NAME of SIZE bytes (the same bytes every run).
make_payload() {
    local name=$1 size=$2 out=$3
    # a seeded stream: the object name hashed, repeated through openssl-free means
    python3 -c '
import hashlib, sys
name, size = sys.argv[1], int(sys.argv[2])
out = bytearray()
block = hashlib.sha256(name.encode()).digest()
while len(out) < size:
    block = hashlib.sha256(block).digest()
    out += block * 128
sys.stdout.buffer.write(bytes(out[:size]))' "$name" "$size" > "$out"
}

# put_and_check POOL NAME SIZE SCRATCH: write an object and read it back.
put_and_check() {
    local pool=$1 name=$2 size=$3 scratch=$4
    make_payload "$name" "$size" "$scratch/in" || return 1
    rados_cli -p "$pool" put "$name" "$scratch/in" || { fail "rados put $name"; return 1; }
    rados_cli -p "$pool" get "$name" "$scratch/out" || { fail "rados get $name"; return 1; }
    cmp -s "$scratch/in" "$scratch/out" || { fail "$name read back differs"; return 1; }
}

# check_object POOL NAME SIZE SCRATCH: the object holds its deterministic content.
check_object() {
    local pool=$1 name=$2 size=$3 scratch=$4
    make_payload "$name" "$size" "$scratch/want" || return 1
    rados_cli -p "$pool" get "$name" "$scratch/got" || { fail "rados get $name"; return 1; }
    cmp -s "$scratch/want" "$scratch/got" || { fail "$name differs from what was written"; return 1; }
}

# ---------------------------------------------------------------------------
# Test driver (Ceph standalone style)

# Every TEST_* function of the calling script, in definition order.
test_functions() {
    declare -F | awk '{print $3}' | grep '^TEST_'
}

# require_hybridstore: inside a TEST_*, skips the test when the cluster runs
# the bluestore baseline (a test of the hybridstore engine itself).
require_hybridstore() {
    if [ "$HS_OBJECTSTORE" != hybridstore ]; then
        echo "SKIPPED: needs hybridstore (HS_OBJECTSTORE=$HS_OBJECTSTORE)"
        return "$HS_SKIP"
    fi
}

# run_tests DIR [TEST...]: setup, test, teardown for every test; prints a line
# per test, counts them in HS_PASSED / HS_SKIPPED / HS_FAILED and returns 1 if
# any failed.
HS_PASSED=0
HS_SKIPPED=0
HS_FAILED=0
run_tests() {
    local dir=$1 func rc
    shift
    local funcs=("$@")
    [ ${#funcs[@]} -gt 0 ] || mapfile -t funcs < <(test_functions)
    for func in "${funcs[@]}"; do
        declare -F "$func" > /dev/null || { fail "no test $func"; HS_FAILED=$((HS_FAILED + 1)); continue; }
        log "=== $func ($HS_OBJECTSTORE, devices: $HS_DEVICES)"
        setup "$dir" || return 1
        local start=$SECONDS
        "$func" "$dir"
        rc=$?
        case $rc in
        0)
            echo "TEST $func: passed ($((SECONDS - start))s, $HS_OBJECTSTORE)"
            HS_PASSED=$((HS_PASSED + 1))
            teardown "$dir" ;;
        "$HS_SKIP")
            echo "TEST $func: skipped"
            HS_SKIPPED=$((HS_SKIPPED + 1))
            teardown "$dir" ;;
        *)
            echo "TEST $func: FAILED ($((SECONDS - start))s)"
            HS_FAILED=$((HS_FAILED + 1))
            teardown "$dir" failed ;;
        esac
    done
    [ "$HS_FAILED" -eq 0 ]
}

# main NAME [TEST...]: the entry point of every standalone script. Exits 77
# (skipped) with the reason when the store under test cannot run here.
main() {
    local name=$1 reason dir
    shift
    reason=$(objectstore_unavailable_reason)
    if [ -n "$reason" ]; then
        echo "SKIPPED: $name: $reason"
        exit "$HS_SKIP"
    fi
    objectstore_unavailable_reason > /dev/null  # exports CEPH_OSD in this shell
    # shellcheck disable=SC2034  # read by conf_base through run()
    dir=$(mktemp -d "${TMPDIR:-/tmp}/hs-$name.XXXXXX") || exit 1
    trap 'teardown "$dir" interrupted; exit 1' INT TERM
    trap 'kill_daemons "$dir" KILL 2> /dev/null; loops_detach "$dir" 2> /dev/null' EXIT
    log "$name: ceph-osd $CEPH_OSD, objectstore $HS_OBJECTSTORE, dir $dir"
    run "$dir" "$@"
    local rc=$?
    rmdir "$dir" 2> /dev/null || true
    local counts="$HS_PASSED passed, $HS_SKIPPED skipped, $HS_FAILED failed"
    if [ $rc -ne 0 ] || [ "$HS_FAILED" -ne 0 ]; then
        echo "$name: FAILED ($counts)"
        exit 1
    elif [ "$HS_PASSED" -eq 0 ]; then
        echo "SKIPPED: $name: every test skipped ($counts)"
        exit "$HS_SKIP"
    fi
    echo "$name: passed on $HS_OBJECTSTORE ($counts)"
    exit 0
}
