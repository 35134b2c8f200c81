#!/bin/sh
# Every qa/ceph script a make target or a user runs by its path: executable,
# answers --help (and runs nothing), and, if it needs the Ceph build
# (require_ceph_build), without one says SKIPPED and exits 77 (never passes).
# A script that lost its executable bit made `make ceph-hybrid-proof` fail
# before it started; one without --help took "--help" for its output
# directory and started a benchmark.
set -eu
cd "$(dirname "$0")/../.."
fail=0
for s in qa/ceph/*.sh; do
  case "$s" in qa/ceph/common.sh) continue ;; esac
  if [ ! -x "$s" ]; then
    echo "FAIL: $s is not executable"; fail=1; continue
  fi
  if ! "$s" --help > /tmp/hs-ceph-script-help.$$ 2>&1; then
    echo "FAIL: $s --help exits non-zero:"; sed 's/^/    /' /tmp/hs-ceph-script-help.$$; fail=1
  elif [ ! -s /tmp/hs-ceph-script-help.$$ ]; then
    echo "FAIL: $s --help prints nothing"; fail=1
  fi
  # hybrid-hardware.sh also runs on Debian's ceph-osd alone: not started here.
  grep -q '^require_ceph_build\|^CEPH_BUILD=.*skip\|skip "CEPH_BUILD is not set' "$s" || { echo "ok: $s (--help)"; continue; }
  rc=0
  env -u CEPH_BUILD "$s" > /tmp/hs-ceph-script-skip.$$ 2>&1 < /dev/null || rc=$?
  if [ "$rc" != 77 ] || ! grep -q '^SKIPPED' /tmp/hs-ceph-script-skip.$$; then
    echo "FAIL: $s without CEPH_BUILD exited $rc, not 77 with SKIPPED:"; tail -3 /tmp/hs-ceph-script-skip.$$ | sed 's/^/    /'; fail=1
  else
    echo "ok: $s ($(head -1 /tmp/hs-ceph-script-skip.$$))"
  fi
done
rm -f /tmp/hs-ceph-script-help.$$ /tmp/hs-ceph-script-skip.$$
exit $fail
