#!/usr/bin/env bash
# The ansible checks of `make ansible-test`: yamllint, ansible-lint
# (offline), --syntax-check of every playbook, and real converges against
# this machine in throwaway namespaces (converge.sh): the hybridstore
# scenario always (OSDs started only with a hybridstore-capable CEPH_OSD;
# converge, second converge, --check, verify, purge), and the bluestore
# baseline with Debian's ceph-osd, whose OSDs start and run rados bench:
# ANSIBLE_TEST_BASELINE=1 (default: converge, verify, purge), full (also the
# second converge and --check), 0 (not run). Then site.yml on Tentacle from
# the HybridStore packages (tentacle.sh: the sid root as the host, OSDs by
# ceph-volume) when ANSIBLE_TEST_TENTACLE=1 (`make ansible-test-tentacle`
# runs it alone), which reports SKIPPED where there is no sid root or no
# package repository.
# Prints a summary; exits 1 on any failure.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
export ANSIBLE_VENV=${ANSIBLE_VENV:-$top/build/venv-ansible}
export PATH=$ANSIBLE_VENV/bin:$PATH
export ANSIBLE_CONFIG=$top/ansible/ansible.cfg
archive=${ANSIBLE_TEST_ARCHIVE:-$top/build/ansible-test}
mkdir -p "$archive/static"
export ANSIBLE_TEST_ARCHIVE=$archive
results=$archive/results
: > "$results"
failed=0

record() {  # record STATUS STEP DETAIL
    printf 'static|%s|%s|%s\n' "$1" "$2" "$3" >> "$results"
    echo "$1: $2${3:+ ($3)}"
    [ "$1" = FAILED ] && failed=1
    return 0
}

cd "$top/ansible" || exit 1
start=$SECONDS
if yamllint -s -c .yamllint . > "$archive/static/yamllint.log" 2>&1; then
    record passed yamllint "$((SECONDS - start))s"
else
    cat "$archive/static/yamllint.log"; record FAILED yamllint "see above"
fi

start=$SECONDS
if ansible-lint --offline -q > "$archive/static/ansible-lint.log" 2>&1; then
    record passed ansible-lint "production profile, $((SECONDS - start))s"
else
    cat "$archive/static/ansible-lint.log"; record FAILED ansible-lint "see above"
fi

start=$SECONDS
syntax_ok=true
for pb in site.yml infrastructure-playbooks/*.yml; do
    if ! ansible-playbook -i inventory.example --syntax-check "$pb" > "$archive/static/syntax.log" 2>&1 ||
       ! ansible-playbook -i inventory.example --list-tasks "$pb" > /dev/null 2>> "$archive/static/syntax.log"; then
        cat "$archive/static/syntax.log"
        syntax_ok=false
    fi
done
$syntax_ok && record passed syntax-check "every playbook, $((SECONDS - start))s" || record FAILED syntax-check "see above"

# Rendered files: ceph.conf with ceph_conf_overrides merged (an override
# spelled with underscores replaces the rendered key), two monitors' addresses,
# and the ceph-osd@ drop-in of the systemd mode (this machine has no systemd).
start=$SECONDS
render=$(mktemp -d /tmp/hs-ansible-render.XXXXXX)
render_ok() {
    local conf=$render/ceph.conf dropin=$render/10-hybridstore.conf volume=$render/10-hybridstore-volume.conf
    RENDER_DIR=$render ansible-playbook -i tests/render-inventory.ini tests/render.yml --limit mon-a \
        > "$render/render.log" 2>&1 || { cat "$render/render.log"; return 1; }
    [ "$(ceph-conf -c "$conf" --lookup osd_pool_default_size)" = 2 ] &&
        [ "$(grep -c 'osd pool default size' "$conf")" = 1 ] &&
        [ "$(ceph-conf -c "$conf" -s osd --lookup hybridstore_fsck_on_mount)" = true ] &&
        [ "$(ceph-conf -c "$conf" --lookup mon_host)" = \
          "[v2:10.0.0.11:3400,v1:10.0.0.11:6789],[v2:10.0.0.12:3400,v1:10.0.0.12:6789]" ] &&
        grep -qx 'ExecStart=' "$dropin" &&
        grep -qx 'ExecStart=/opt/hybridstore/bin/ceph-osd -f --cluster ${CLUSTER} --id %i --setuser ceph --setgroup ceph' \
            "$dropin" &&
        ! grep -q ExecStartPre "$dropin" &&
        [ "$(grep -c '^ExecStartPre=' "$volume")" = 3 ] &&
        grep -qx "ExecStartPre=/bin/sh -c 'mountpoint -q /var/lib/ceph/osd/\${CLUSTER}-%i || exec /usr/sbin/ceph-volume --cluster \${CLUSTER} raw activate --osd-id %i --no-systemd'" \
            "$volume" &&
        grep -qx 'ExecStart=/usr/bin/ceph-osd -f --cluster ${CLUSTER} --id %i --setuser ceph --setgroup ceph' \
            "$volume" || { cat "$conf" "$dropin" "$volume"; return 1; }
}
if render_ok; then
    record passed render "ceph.conf overrides, mon host, ceph-osd@ drop-ins (manual ExecStart, ceph-volume activate); $((SECONDS - start))s"
else
    record FAILED render "see above"
fi
rm -rf "$render"

if [ "$(id -u)" != 0 ]; then
    record SKIPPED converge "needs root (namespaces, loop devices)"
    record SKIPPED tentacle "needs root (overlay of the sid root, chroot, loop devices)"
else
    # The two scenarios run side by side (own namespaces, ports and devices);
    # their output is shown one after the other.
    logs=$(mktemp -d /tmp/hs-ansible-out.XXXXXX)
    start=$SECONDS
    pids=()
    timeout --signal=TERM --kill-after=60 1200 bash "$here/converge.sh" hybridstore "$results" \
        > "$logs/hybridstore" 2>&1 &
    pids+=($!)
    case ${ANSIBLE_TEST_BASELINE:-1} in
    0) record SKIPPED "bluestore baseline" "ANSIBLE_TEST_BASELINE=0" ;;
    *)
        # 1: converge, verify, purge; full: also the second converge and --check
        QUICK=$([ "${ANSIBLE_TEST_BASELINE:-1}" = full ] && echo 0 || echo 1) \
            timeout --signal=TERM --kill-after=60 1200 bash "$here/converge.sh" bluestore "$results" \
            > "$logs/bluestore" 2>&1 &
        pids+=($!) ;;
    esac
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
    cat "$logs"/hybridstore "$logs"/bluestore 2> /dev/null
    rm -rf "$logs"
    echo "converges: $((SECONDS - start))s"
    # after the others, not beside them: three clusters at once are too
    # much for a 2-core machine's wait loops
    # Off unless asked: it needs the packages of a built ceph-osd, and a
    # machine that has them (this one, after debian-proof.sh) would add 5-25
    # min to `make test`; `make ansible-test-tentacle` runs it on its own.
    if [ "${ANSIBLE_TEST_TENTACLE:-0}" = 0 ]; then
        record SKIPPED tentacle "not asked for (make ansible-test-tentacle, or ANSIBLE_TEST_TENTACLE=1)"
    else
        start=$SECONDS
        # (about 5 min; 25 on this machine under a load average of 10-15)
        timeout --signal=TERM --kill-after=60 2700 bash "$here/tentacle.sh" "$results"
        case $? in 0|77) ;; *) failed=1 ;; esac
        echo "tentacle: $((SECONDS - start))s"
    fi
fi

echo
printf '%-12s %-8s %-22s %s\n' SCENARIO RESULT STEP DETAIL
for s in static hybridstore bluestore tentacle; do
    grep "^$s|" "$results" | while IFS='|' read -r scenario status step detail; do
        printf '%-12s %-8s %-22s %s\n' "$scenario" "$status" "$step" "$detail"
    done
done
echo "logs: $archive/<scenario>/"
grep -q '|FAILED|' "$results" && failed=1
exit $failed
