#!/usr/bin/env bash
# The hybridstore ceph-volume module's unit tests (src/ceph-volume/tests:
# every process call answered by mocks, no device, no cluster), run by the
# Python of a Debian root with ceph-volume installed: the sid root of
# src/tools/ceph-chroot (Ceph 20.2.4 Tentacle). `make ceph-volume-test`.
#
#   src/ceph-volume/run-tests.sh [--ceph-suite DIR] [PYTEST ARGS...]
#
# --ceph-suite DIR also runs ceph-volume's own unit tests from DIR, a
# directory holding Ceph's src/ceph-volume of the installed release (copied
# to a scratch directory first, nothing written in DIR), twice: as they are,
# and with this module registered (its plugin imported before any test, as
# ceph-volume loads it before every subcommand). HS_CEPH_SUITE_TESTS names
# the test paths of that suite (default: all of ceph_volume/tests),
# HS_CEPH_SUITE_PASSES which passes to run ("plain registered", the default).
# Exit 0: passed; 1: a failure; 77: SKIPPED (not root, no root directory, no
# ceph-volume or pytest in it).
#
# Environment: HS_CHROOT (/srv/hs-chroot/sid), HS_CHROOT_SUITE (sid).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
root=${HS_CHROOT:-/srv/hs-chroot/sid}
suite=${HS_CHROOT_SUITE:-sid}
ceph_suite=
case "${1:-}" in
-h | --help) sed -n '2,/^set -u/p' "$0" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//'; exit 0 ;;
--ceph-suite) ceph_suite=${2:?--ceph-suite needs a directory}; shift 2 ;;
esac
skip() { echo "SKIPPED: $*"; exit 77; }

[ "$(id -u)" = 0 ] || skip "entering the root ($root) needs root"
[ -d "$root" ] || skip "no Debian root at $root (src/tools/ceph-chroot create --suite $suite)"
[ -d "$root/usr/lib/python3/dist-packages/ceph_volume" ] || skip "ceph-volume is not installed in $root"
[ -d "$root/usr/lib/python3/dist-packages/pytest" ] ||
    skip "pytest is not installed in $root (apt-get install python3-pytest there)"
if [ -n "$ceph_suite" ]; then
    [ -d "$ceph_suite/ceph_volume/tests" ] || { echo "$ceph_suite has no ceph_volume/tests" >&2; exit 2; }
fi

in_root() {
    "$top/src/tools/ceph-chroot" run --suite "$suite" --root "$root" --bind "$top" "$@"
}

status=0
echo "== the hybridstore module's tests ($(sed -n 's/^Version: //p' "$root/usr/lib/python3/dist-packages/ceph_volume-"*/PKG-INFO 2> /dev/null | head -1) ceph-volume in $root)"
in_root --cwd "$here" -- python3 -m pytest -q -p no:cacheprovider tests "$@" || status=1

if [ -n "$ceph_suite" ]; then
    scratch=$(mktemp -d "${TMPDIR:-/tmp}/hs-ceph-volume-suite.XXXXXX")
    # ceph-chroot makes the bind's mount point inside the root: removed too
    trap 'rm -rf "$scratch"; [ -n "$made" ] && rmdir "$made" 2> /dev/null' EXIT
    made=
    [ -e "$root$scratch" ] || made=$root$scratch
    cp -a "$ceph_suite/." "$scratch/" || exit 1
    # the suite imports ceph_volume from its own tree: the module must load
    # against the same one
    read -r -a tests <<< "${HS_CEPH_SUITE_TESTS:-ceph_volume/tests}"
    passes=" ${HS_CEPH_SUITE_PASSES:-plain registered} "
    if [[ $passes == *" plain "* ]]; then
        echo "== ceph-volume's own tests, as they are (${tests[*]})"
        in_root --bind "$scratch" --cwd "$scratch" -- python3 -m pytest -q -p no:cacheprovider "${tests[@]}" || status=1
    fi
    if [[ $passes == *" registered "* ]]; then
        echo "== ceph-volume's own tests, with hybridstore registered (${tests[*]})"
        in_root --bind "$scratch" --cwd "$scratch" -- env PYTHONPATH="$scratch:$here:$here/tests" \
            python3 -m pytest -q -p no:cacheprovider -p hybridstore_registered "${tests[@]}" || status=1
    fi
fi
exit $status
