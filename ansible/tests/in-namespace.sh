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
