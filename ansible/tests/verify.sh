#!/usr/bin/env bash
# Checks the cluster converge.sh (or tentacle.sh) deployed (runs in its
# namespace, or in the managed root):
#   verify.sh WORK SCENARIO START_OSDS RESULTS_FILE [OBJECTSTORE]
# OBJECTSTORE defaults to SCENARIO. Scenario tentacle (tentacle.sh): the
# packages came from the HybridStore repository and ceph-volume made the
# OSDs; that is checked too.
set -uo pipefail
work=$1
scenario=$2
start=$3
results=$4
objectstore=${5:-$scenario}
failed=0
tool=$(sed -n 's/^hybridstore_tool_binary: //p' "$work/vars.yml")

result() {
    printf '%s|%s|%s|%s\n' "$scenario" "$1" "$2" "$3" >> "$results"
    echo "$1: $scenario: $2${3:+ ($3)}"
    [ "$1" = FAILED ] && failed=1
    return 0
}
check() {  # check STEP DETAIL COMMAND...
    local step=$1 detail=$2
    shift 2
    if "$@"; then result passed "$step" "$detail"; else result FAILED "$step" "$detail"; fi
}
c() { timeout 60 ceph "$@"; }

check "mon quorum" "1 of 1 monitors" \
    test "$(c quorum_status -f json | jq '.quorum_names | length')" = 1
check "mgr available" "ceph mgr stat" \
    test "$(c mgr stat -f json | jq -r .available)" = true
check "OSDs registered" "ceph osd new for each SSD/HDD pair" \
    test "$(c osd ls -f json | jq length)" = 2

osd_dirs_ok() {
    local d n=0
    for d in /var/lib/ceph/osd/ceph-*; do
        [ "$(cat "$d/type")" = "$objectstore" ] || { echo "$d/type: $(cat "$d/type")"; return 1; }
        [ -s "$d/keyring" ] || { echo "$d: no keyring"; return 1; }
        n=$((n + 1))
    done
    [ $n = 2 ]
}
check "OSD directories" "type file, keyring, device links" osd_dirs_ok

labels_ok() {
    local d
    for d in /var/lib/ceph/osd/ceph-*; do
        "$tool" --path "$d" show-label > "$work/labels.json" || return 1
        jq -e '[.[] | .role] | sort == ["hdd", "ssd"]' "$work/labels.json" > /dev/null || return 1
        jq -e '[.[] | .fsid] | unique | length == 1' "$work/labels.json" > /dev/null || return 1
    done
}
fsck_ok() {
    local d
    for d in /var/lib/ceph/osd/ceph-*; do "$tool" --path "$d" fsck > /dev/null || return 1; done
}

if [ "$objectstore" = hybridstore ] && [ "$start" != true ]; then
    check "device labels" "hybridstore-tool show-label: an ssd and an hdd label of one store per OSD" labels_ok
    check "store fsck" "hybridstore-tool fsck" fsck_ok
    result SKIPPED "OSDs start, rados bench" \
        "no hybridstore-capable ceph-osd given: set CEPH_OSD=/path/to/ceph-osd or CEPH_BUILD=dir"
else
    check "OSDs up" "2 of 2" test "$(c osd stat -f json | jq .num_up_osds)" = 2
    for id in $(c osd ls -f json | jq '.[]'); do
        check "osd.$id objectstore" "ceph osd metadata: $objectstore" \
            test "$(c osd metadata "$id" -f json | jq -r .osd_objectstore)" = "$objectstore"
    done
    check "rados bench" "smoke test of the ceph-client role ran" grep -q 'Bandwidth' "$work/converge.log"
    if [ "$objectstore" = bluestore ]; then
        check "device roles" "block.db on the rotational=0 SSD, block on the HDD" \
            test "$(c osd metadata 0 -f json | jq -r '.bluefs_db_rotational + .bluestore_bdev_rotational')" = 01
    else
        check "perf counters" "a hybridstore section in perf dump" \
            bash -c 'timeout 60 ceph daemon osd.0 perf dump | jq -e "has(\"hybridstore\")" > /dev/null'
    fi
fi

if [ "$scenario" = tentacle ]; then
    # what the packages and ceph-volume left on the host
    packages_ok() {
        local v
        v=$(dpkg-query -W -f '${Version}' ceph-osd) || return 1
        echo "ceph-osd $v"
        case $v in *+hybridstore*) ;; *) return 1 ;; esac
        dpkg-query -W hybridstore-tools ceph-volume-hybridstore || return 1
        # the installed version's line of the version table ends in its priority
        apt-cache policy ceph-osd | grep -F "*** $v " | grep -q ' 1001$'
    }
    check "packages" "ceph-osd +hybridstore (pinned, priority 1001), hybridstore-tools, ceph-volume-hybridstore installed" packages_ok
    raw_list_ok() {
        local fsid
        fsid=$(timeout 60 ceph fsid) || return 1
        ceph-volume raw list --format json > "$work/raw-list.json" 2> /dev/null || return 1
        cat "$work/raw-list.json"
        # (raw list shows every labelled device of the machine: other
        # clusters' too)
        [ "$(jq --arg f "$fsid" '[.[] | select(.ceph_fsid == $f and .type == "hybridstore" and .device_ssd != null)]
               | length' "$work/raw-list.json")" = 2 ]
    }
    check "ceph-volume raw list" "2 hybridstore OSDs, each an HDD and an SSD" raw_list_ok
    tmpfs_ok() {
        local d
        for d in /var/lib/ceph/osd/ceph-*; do
            [ "$(findmnt -n -o FSTYPE --target "$d")" = tmpfs ] || { echo "$d is not a tmpfs"; return 1; }
        done
    }
    check "OSD data directories" "tmpfs mounts made by ceph-volume raw activate" tmpfs_ok
    versions_ok() {
        local v
        v=$(timeout 60 ceph versions -f json | jq -r '.overall | keys[]') || return 1
        echo "$v"
        [ -n "$v" ] && ! echo "$v" | grep -qv '^ceph version 20\.2\.4 '
    }
    check "versions" "every daemon runs 20.2.4 (Tentacle)" versions_ok
fi
exit $failed
