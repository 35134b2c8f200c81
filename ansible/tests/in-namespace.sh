#!/usr/bin/env bash
# Runs inside the throwaway namespace of converge.sh (pid 1 of a new pid
# namespace, in a private mount namespace): converge, converge again, check
# mode, verify, purge. Everything written to the ceph directories lands in
# tmpfs and vanishes with the namespace.
#   in-namespace.sh WORK SCENARIO START_OSDS RESULTS_FILE
# TARGET_ROOT (tentacle.sh): the managed host is that root (the sid root's
# overlay, reached through a chroot python3): no tmpfs over this machine's
# ceph directories, and verify.sh and the state checks run in that root.
# OBJECTSTORE: the store verify.sh expects (default: SCENARIO).
set -uo pipefail
work=$1
scenario=$2
start=$3
results=$4
here=$(cd "$(dirname "$0")" && pwd)
ansible_dir=$(cd "$here/.." && pwd)
failed=0

result() {
    printf '%s|%s|%s|%s\n' "$scenario" "$1" "$2" "$3" >> "$results"
    echo "$1: $scenario: $2${3:+ ($3)}"
    [ "$1" = FAILED ] && failed=1
    return 0
}

troot=${TARGET_ROOT:-}
in_target() { if [ -n "$troot" ]; then chroot "$troot" "$@"; else "$@"; fi; }
if [ -z "$troot" ]; then
    for d in /etc/ceph /var/lib/ceph /var/log/ceph /run/ceph; do
        mkdir -p "$d"  # (they exist once Debian's ceph packages are installed)
        mount -t tmpfs -o mode=0755 "hs-ansible-test" "$d" || { result FAILED namespace "tmpfs on $d"; exit 1; }
    done
fi

playbook() {  # playbook LOG PLAYBOOK [ARGS...]
    local log=$work/$1
    shift
    (cd "$ansible_dir" && ansible-playbook -i "$work/inventory.ini" -e "@$work/vars.yml" "$@") > "$log" 2>&1
}

recap() {  # recap LOG FIELD: the sum of FIELD=N over the PLAY RECAP lines
    sed -n '/PLAY RECAP/,$p' "$work/$1" | grep -o "$2=[0-9]*" | cut -d= -f2 | awk '{s += $1} END {print s + 0}'
}

timed() {  # timed STEP COMMAND...: runs COMMAND, records passed/FAILED with seconds
    local step=$1 start=$SECONDS
    shift
    if "$@"; then
        result passed "$step" "$((SECONDS - start))s"
    else
        result FAILED "$step" "$((SECONDS - start))s, log: $step.log"
        return 1
    fi
}

# --- first converge
converged=0
if timed converge playbook converge.log site.yml; then converged=1; else tail -40 "$work/converge.log"; fi

if [ "$converged" = 1 ] && [ "${QUICK:-0}" = 1 ]; then
    result SKIPPED "second converge, check mode" "quick run (ANSIBLE_TEST_BASELINE=1): the hybridstore scenario checks them"
fi
if [ "$converged" = 1 ] && [ "${QUICK:-0}" != 1 ]; then
    # --- idempotence: a second converge changes nothing
    start_s=$SECONDS
    if playbook converge-again.log site.yml; then
        changed=$(recap converge-again.log changed)
        if [ "$changed" = 0 ]; then
            result passed "second converge" "changed=0, $((SECONDS - start_s))s"
        else
            result FAILED "second converge" "changed=$changed, log: converge-again.log"
            grep -B3 '^changed:' "$work/converge-again.log" | head -40
        fi
    else
        result FAILED "second converge" "log: converge-again.log"
        tail -30 "$work/converge-again.log"
    fi

    # --- check mode on the converged host: no failure, no change
    if playbook check.log site.yml --check; then
        changed=$(recap check.log changed)
        [ "$changed" = 0 ] && result passed "check mode" "changed=0" ||
            result FAILED "check mode" "changed=$changed, log: check.log"
    else
        result FAILED "check mode" "log: check.log"
        tail -30 "$work/check.log"
    fi
fi
if [ "$converged" = 1 ]; then
    # --- the cluster as deployed
    in_target bash "$here/verify.sh" "$work" "$scenario" "$start" "$results" "${OBJECTSTORE:-$scenario}" \
        > "$work/verify.log" 2>&1 || failed=1
    grep -E '^(passed|FAILED|SKIPPED):' "$work/verify.log"
fi

# --- day 2 (tentacle.sh, DAY2_SPARE = '{"ssd": DEV, "hdd": DEV}'): osd.1
# replaced onto the spare pair, keeping its id; again (nothing to do);
# site.yml (changed=0); the old pair, zapped, back as a new OSD
# (add-osd.yml); then osd.1 removed for good (shrink-osd.yml).
# safe-to-destroy is not waited for: with two OSDs and size 2 the data has
# nowhere else to go.
set_devices() {  # set_devices JSON: osd_devices of vars.yml
    python3 - "$work/vars.yml" "$1" <<'PY'
import re, sys
path, devs = sys.argv[1], sys.argv[2]
text = open(path).read()
m = re.search(r'^osd_devices: (.*)$', text, re.M)
open(path, 'w').write(text[:m.start(1)] + devs + text[m.end(1):])
PY
}
no_label() {  # no_label DEV...: none of them holds a hybridstore label
    local args=() d
    for d in "$@"; do args+=(--dev "$d"); done
    [ -z "$(in_target hybridstore-tool show-label "${args[@]}" 2> /dev/null | jq -c '.[] | objects | select(.fsid != null)')" ]
}
day2() {
    local old_hdd old_ssd uuid_before uuid_after l p0 spare_ssd spare_hdd fsid
    spare_ssd=$(echo "$DAY2_SPARE" | jq -r .ssd)
    spare_hdd=$(echo "$DAY2_SPARE" | jq -r .hdd)
    p0=$(sed -n 's/^osd_devices: //p' "$work/vars.yml" | jq -c '.[0]')
    fsid=$(in_target ceph fsid)
    # (raw list shows every labelled device of the machine: other clusters' too)
    cv_list() { in_target ceph-volume raw list --format json | jq -c --arg f "$fsid" '[.[] | select(.ceph_fsid == $f)]'; }
    old_ssd=$(cv_list | jq -r '.[] | select(.osd_id == 1) | .device_ssd')
    old_hdd=$(cv_list | jq -r '.[] | select(.osd_id == 1) | .device')
    uuid_before=$(in_target ceph osd dump -f json | jq -r '.osds[] | select(.osd == 1) | .uuid')
    # osd_devices: the second pair becomes the spare one, with osd_id 1
    set_devices "[$p0, {\"ssd\": \"$spare_ssd\", \"hdd\": \"$spare_hdd\", \"osd_id\": 1}]" || return 1
    if timed replace-osd playbook replace-osd.log infrastructure-playbooks/replace-osd.yml \
            -e osd_to_replace=1 -e ireallymeanit=yes -e osd_wait_safe_to_destroy=false; then
        uuid_after=$(in_target ceph osd dump -f json | jq -r '.osds[] | select(.osd == 1) | .uuid')
        l=$(cv_list | jq -c '[.[] | select(.osd_id == 1) | {device, device_ssd}]')
        if [ "$uuid_after" != "$uuid_before" ] &&
           [ "$l" = "[{\"device\":\"$spare_hdd\",\"device_ssd\":\"$spare_ssd\"}]" ] &&
           [ "$(in_target ceph osd stat -f json | jq .num_up_osds)" = 2 ] && no_label "$old_ssd" "$old_hdd"; then
            result passed "osd.1 replaced" "same id, new uuid, on $spare_hdd + $spare_ssd, up; old $old_hdd + $old_ssd zapped"
        else
            result FAILED "osd.1 replaced" "uuid $uuid_before -> $uuid_after, raw list $l, log: replace-osd.log"
        fi
    else
        tail -30 "$work/replace-osd.log"
    fi
    if playbook replace-again.log infrastructure-playbooks/replace-osd.yml \
            -e osd_to_replace=1 -e ireallymeanit=yes -e osd_wait_safe_to_destroy=false &&
       [ "$(recap replace-again.log changed)" = 0 ]; then
        result passed "replace-osd again" "nothing to do, changed=0"
    else
        result FAILED "replace-osd again" "changed=$(recap replace-again.log changed), log: replace-again.log"
    fi
    if playbook converge-replaced.log site.yml && [ "$(recap converge-replaced.log changed)" = 0 ]; then
        result passed "site.yml after replace" "changed=0"
    else
        result FAILED "site.yml after replace" "changed=$(recap converge-replaced.log changed), log: converge-replaced.log"
    fi
    # the old pair, zapped, as a third entry: a new OSD
    set_devices "[$p0, {\"ssd\": \"$spare_ssd\", \"hdd\": \"$spare_hdd\", \"osd_id\": 1}, {\"ssd\": \"$old_ssd\", \"hdd\": \"$old_hdd\"}]" ||
        return 1
    if timed add-osd playbook add-osd.log infrastructure-playbooks/add-osd.yml; then
        l=$(cv_list | jq -r '.[] | select(.osd_id == 2) | .device + " " + .device_ssd')
        if [ "$(in_target ceph osd ls -f json | jq -c .)" = "[0,1,2]" ] && [ "$l" = "$old_hdd $old_ssd" ] &&
           [ "$(in_target ceph osd stat -f json | jq .num_up_osds)" = 3 ]; then
            result passed "osd.2 added" "on the old pair $old_hdd + $old_ssd, 3 of 3 up"
        else
            result FAILED "osd.2 added" "osd ls $(in_target ceph osd ls -f json), osd.2 on '$l', log: add-osd.log"
        fi
    else
        tail -30 "$work/add-osd.log"
    fi
    if timed shrink-osd playbook shrink-osd.log infrastructure-playbooks/shrink-osd.yml \
            -e osd_to_kill=1 -e ireallymeanit=yes -e osd_wait_safe_to_destroy=false; then
        if [ "$(in_target ceph osd ls -f json | jq -c .)" = "[0,2]" ] &&
           ! mountpoint -q "$troot/var/lib/ceph/osd/ceph-1" && [ ! -e "$troot/var/lib/ceph/osd/ceph-1" ] &&
           no_label "$spare_ssd" "$spare_hdd"; then
            result passed "osd.1 removed" "osd ls [0,2], its data directory unmounted and removed, $spare_hdd + $spare_ssd zapped"
        else
            result FAILED "osd.1 removed" "osd ls $(in_target ceph osd ls -f json), log: shrink-osd.log"
        fi
    else
        tail -30 "$work/shrink-osd.log"
    fi
    # the inventory without the removed pair, for the purge
    set_devices "[$p0, {\"ssd\": \"$old_ssd\", \"hdd\": \"$old_hdd\"}]"
}
if [ "$converged" = 1 ] && [ -n "${DAY2_SPARE:-}" ]; then
    day2
fi

# --- purge: stops the daemons by their pid files and removes the state
if playbook purge.log infrastructure-playbooks/purge-cluster.yml -e ireallymeanit=yes; then
    left=$(ps -eo pid=,comm= | awk '$2 ~ /^ceph-(mon|mgr|osd)$/' | wc -l)
    if [ "$left" = 0 ] && [ ! -e "$troot/etc/ceph/ceph.conf" ] && [ -z "$(ls "$troot"/var/lib/ceph/osd 2> /dev/null)" ]; then
        result passed purge "daemons stopped by pid file, state removed"
    else
        result FAILED purge "$left ceph daemons still running or state left, log: purge.log"
    fi
else
    result FAILED purge "log: purge.log"
    tail -20 "$work/purge.log"
fi
exit $failed
