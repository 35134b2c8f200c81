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
#   src/ceph-volume/run-tests.sh --debs [PYTEST ARGS...]
#
# --debs (`make test`, CI: no sid root) runs the module's tests with this
# host's Python instead (bookworm's, with python3-pytest, python3-yaml and
# python3-packaging from `make deps`) against Tentacle's ceph-volume code
# taken from sid's packages without a root: `apt-get download` of
# ceph-volume and python3-ceph-common (ceph.deployment) at the pinned
# version through a private apt configuration, `dpkg-deb -x` into
# HS_CEPH_VOLUME_DEBS_DIR/VERSION (build/ceph-volume-debs; kept, so a second
# run downloads nothing), PYTHONPATH set to its dist-packages. No root
# needed. SKIPPED (77), with the reason, when sid or the pinned version is
# unreachable or pytest is missing; a test failure exits 1.
#
# Environment: HS_CHROOT (/srv/hs-chroot/sid), HS_CHROOT_SUITE (sid);
# with --debs: HS_CEPH_VOLUME_VERSION (20.2.4+ds-2), HS_CEPH_VOLUME_DEBS_DIR
# (TOP/build/ceph-volume-debs), HS_DEBIAN_MIRROR (http://deb.debian.org/debian),
# HS_PYTHON (/usr/bin/python3).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
root=${HS_CHROOT:-/srv/hs-chroot/sid}
suite=${HS_CHROOT_SUITE:-sid}
ceph_suite=
debs=
case "${1:-}" in
-h | --help) sed -n '2,/^set -u/p' "$0" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//'; exit 0 ;;
--ceph-suite) ceph_suite=${2:?--ceph-suite needs a directory}; shift 2 ;;
--debs) debs=1; shift ;;
esac
skip() { echo "SKIPPED: $*"; exit 77; }

if [ -n "$debs" ]; then
    fetch_skip() { rm -rf "$apt" "$dest.tmp"; skip "$@"; }
    version=${HS_CEPH_VOLUME_VERSION:-20.2.4+ds-2}
    cache=${HS_CEPH_VOLUME_DEBS_DIR:-$top/build/ceph-volume-debs}
    mirror=${HS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
    python=${HS_PYTHON:-/usr/bin/python3}
    dest=$cache/$version
    site=$dest/usr/lib/python3/dist-packages
    "$python" -c 'import pytest' 2> /dev/null ||
        skip "no pytest for $python (apt-get install python3-pytest, or make deps)"
    if [ ! -f "$dest/.complete" ]; then
        command -v apt-get > /dev/null && command -v dpkg-deb > /dev/null ||
            skip "apt-get and dpkg-deb are needed to fetch ceph-volume $version"
        apt=$cache/apt
        rm -rf "$apt" "$dest.tmp"
        mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs" "$dest.tmp" || exit 1
        # only the Packages index: no translations, no DEP-11, no Contents
        echo "deb [target=Packages] $mirror sid main" > "$apt/sources.list"
        aptopts=(-o Dir::Etc::sourcelist="$apt/sources.list" -o Dir::Etc::sourceparts=-
            -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache"
            -o Dir::State::status=/dev/null -o Debug::NoLocking=1
            -o Acquire::Check-Valid-Until=false -o Acquire::Languages=none
            -o Acquire::http::Timeout=20 -o Acquire::Retries=1 -o APT::Sandbox::User="$(id -un)")
        echo "== fetching ceph-volume $version from sid ($mirror) into $dest"
        if ! out=$(timeout 120 apt-get "${aptopts[@]}" --error-on=any -q update 2>&1); then
            fetch_skip "sid's package index is unreachable ($mirror): $(printf '%s\n' "$out" | grep -E '^(E|W|Err):' | head -2 | tr '\n' ' ')"
        fi
        if ! out=$(cd "$apt/debs" && timeout 120 apt-get "${aptopts[@]}" -q download \
            "ceph-volume=$version" "python3-ceph-common=$version" 2>&1); then
            served=$(apt-cache "${aptopts[@]}" policy ceph-volume 2> /dev/null | sed -n 's/^ *Candidate: //p')
            fetch_skip "ceph-volume $version not downloadable from sid (sid serves ${served:-none}; HS_CEPH_VOLUME_VERSION picks another): $(printf '%s\n' "$out" | grep -E '^(E|W|Err):' | head -2 | tr '\n' ' ')"
        fi
        for deb in "$apt/debs"/*.deb; do
            dpkg-deb -x "$deb" "$dest.tmp" || exit 1
            echo "   $(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version)"
        done
        touch "$dest.tmp/.complete"
        rm -rf "$dest" && mv "$dest.tmp" "$dest" && rm -rf "$apt" || exit 1
    fi
    [ -d "$site/ceph_volume" ] && [ -d "$site/ceph/deployment" ] || { echo "$site has no ceph_volume or ceph.deployment" >&2; exit 1; }
    echo "== the hybridstore module's tests (ceph-volume $version from sid, $("$python" -c 'import sys; print("Python %d.%d.%d" % sys.version_info[:3])') $python)"
    log=$(mktemp "${TMPDIR:-/tmp}/hs-ceph-volume-test.XXXXXX") || exit 1
    trap 'rm -f "$log"' EXIT
    (cd "$here" && PYTHONPATH="$site:$here${PYTHONPATH:+:$PYTHONPATH}" \
        "$python" -m pytest -q -p no:cacheprovider tests "$@") 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
    # the module must have been tested against the downloaded ceph-volume
    # (bookworm's python3-ceph-common, Pacific's, may be installed too)
    for m in ceph_volume ceph.deployment; do
        loaded=$(cd "$here" && PYTHONPATH="$site:$here" "$python" -c "import $m; print($m.__file__)")
        case $loaded in "$site"/*) ;; *) echo "$m was imported from $loaded, not $site" >&2; exit 1 ;; esac
    done
    summary=$(grep -E '[0-9]+ (passed|failed)' "$log" | tail -1 | sed 's/=//g; s/^ *//; s/ *$//')
    echo "ceph-volume module tests: ${summary:-no summary} (ceph-volume $version from sid, $python)"
    [ "$status" = 0 ] && exit 0
    exit 1
fi

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
