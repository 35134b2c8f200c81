#!/usr/bin/env bash
# HybridStore on the Ceph a Debian release ships, built from Debian's own
# source inside a root of that release, packaged, installed over Debian's
# packages there, and proven with the installed packages.
#
#   qa/ceph/debian-proof.sh [--suite sid|trixie] [--parts LIST] [--out DIR] [-j N]
#
# sid is Tentacle (20.2.x), the default; trixie (Debian 13) is Reef 18.2.7.
# Parts, in order (--parts takes a comma-separated subset; default all):
#   chroot      src/tools/ceph-chroot create: the root, Ceph's build
#               dependencies, Debian's Ceph daemons (made once, then reused)
#   source      Debian's source of the root's Ceph (apt-get source
#               --download-only: the orig tarball, and the debian.tar when the
#               registry serves it) into $HS_SRC_DIR/SUITE
#   build       src/tools/ceph-integrate in the root: unpacks the tarball,
#               applies Debian's patches when there are some, configures with
#               debian/rules' options (--profile debian), builds ceph-osd,
#               ceph-objectstore-tool, libceph-common and ceph_test_objectstore
#   tools       the project's tools built in the root with its compiler
#   package     src/tools/ceph-package: ceph-osd V+hybridstoreN (N: commits),
#               hybridstore-tools and (sid) ceph-volume-hybridstore, with a
#               flat apt repository, into
#               $HS_REPO_DIR/SUITE (lintian must find no errors)
#   install     the packages installed by name from that repository over
#               Debian's in the root; the downgrade back to Debian's and the
#               upgrade again checked; Debian's stock ceph-osd unpacked
#               beside for the BlueStore baseline
#               and, when a git directory of ceph/fio is at HS_PROOF_FIO_GIT
#               (default $HS_SRC_DIR/SUITE/fio.git), Ceph's ObjectStore fio
#               engine and the fio it loads into (ceph-integrate --fio)
#   store-test  Ceph's ceph_test_objectstore on hybridstore (qa/ceph/store-test.sh)
#   objectstore-fio  qa/ceph/objectstore-fio.sh with the built engine, both
#               stores (SKIPPED when the build has no fio engine; HS_FIO_* as
#               that script takes them)
#   cluster     qa/ceph/cluster.sh with the installed ceph-osd (both stores)
#   tmpfs       qa/ceph/tmpfs-dir.sh: an OSD on a tmpfs data directory
#               rebooted and its disks moved to another host, primed from
#               the labels (both stores)
#   ceph-volume (sid) the ceph-volume module's unit tests
#               (src/ceph-volume/run-tests.sh), then qa/ceph/ceph-volume.sh:
#               ceph-volume raw prepare/activate/list/zap of a hybridstore
#               OSD on loop devices, and the refusals
#   standalone  Ceph's standalone scripts of that release (qa/ceph/ceph-standalone.sh)
#   hardware    qa/ceph/hybrid-hardware.sh, Debian's stock ceph-osd as the
#               BlueStore row (needs FUSE for the disk model)
#   thrash      qa/ceph/thrash.sh, both pools, both stores
#   powercut    qa/ceph/powercut.sh: power cuts of an OSD's disk models under
#               load, both stores (HS_POWERCUT_ROUNDS, 50 each)
# Each part's output goes to OUT (default $HS_PROOF_DIR/SUITE-<date>), with
# its time; SUMMARY.md lists every part's result, the release, the package
# versions and the root. A part that cannot run here is SKIPPED with the
# reason, never passed. Exit 0 when no part failed, 77 when the first part
# was skipped (no root, no registry), 1 otherwise.
#
# Environment: HS_CHROOT_BASE (/srv/hs-chroot), HS_SRC_DIR (/srv/hs-src),
# HS_REPO_DIR (/srv/hs-repo), HS_PROOF_DIR (/srv/hs-proof),
# HS_PROOF_STANDALONE_STORES and HS_PROOF_THRASH_STORES (both; or hybridstore,
# bluestore: the stores of those two parts), and every
# variable of the scripts it runs (HS_THRASH_MINUTES, HH_ROWS, ...).
set -u
HS_TOP=$(cd "$(dirname "$0")/../.." && pwd)
suite=sid
parts=chroot,source,build,tools,package,install,store-test,objectstore-fio,cluster,tmpfs,ceph-volume,standalone,hardware,thrash,powercut
out=
jobs=2
while [ $# -gt 0 ]; do
    case $1 in
    --suite) suite=$2; shift 2 ;;
    --parts) parts=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -j) jobs=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -u/p' "$0" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
case $suite in sid | trixie) ;; *) echo "unknown suite $suite (sid or trixie)" >&2; exit 2 ;; esac
known=",chroot,source,build,tools,package,install,store-test,objectstore-fio,cluster,tmpfs,ceph-volume,standalone,hardware,thrash,powercut,"
for p in ${parts//,/ }; do
    case $known in *",$p,"*) ;; *) echo "unknown part $p" >&2; exit 2 ;; esac
done
if [ "$(id -u)" != 0 ]; then
    echo "SKIPPED: qa/ceph/debian-proof.sh needs root (a chroot, mounts, loop devices)"
    exit 77
fi

base=${HS_CHROOT_BASE:-/srv/hs-chroot}
root=$base/$suite
src_dir=${HS_SRC_DIR:-/srv/hs-src}/$suite
repo=${HS_REPO_DIR:-/srv/hs-repo}/$suite
fio_git=${HS_PROOF_FIO_GIT:-$src_dir/fio.git}
out=${out:-${HS_PROOF_DIR:-/srv/hs-proof}/$suite-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out" "$src_dir" "$repo" || exit 1
out=$(cd "$out" && pwd)
summary=$out/SUMMARY.md
chroot_tool=$HS_TOP/src/tools/ceph-chroot
# Inside the root: the Ceph tree, its build and the project's build.
tree_parent=/srv/ceph
tools_build=/srv/ceph/hybridstore-build-$suite
binds=(--bind "$HS_TOP" --bind "$src_dir" --bind "$repo" --bind "$out")

in_root() { "$chroot_tool" run --suite "$suite" --root "$root" "${binds[@]}" -- "$@"; }
log() { echo "$(date +%H:%M:%S) $*"; }
declare -A result
order=()
run_part() {
    local name=$1; shift
    local start=$SECONDS rc
    log "== $name"
    "$@" > >(tee "$out/$name.log") 2>&1
    rc=$?
    local secs=$((SECONDS - start))
    case $rc in
    0) result[$name]="passed ($secs s)" ;;
    77) result[$name]="SKIPPED: $(grep -m1 -o 'SKIPPED.*' "$out/$name.log" | cut -c10-) ($secs s)" ;;
    *) result[$name]="FAILED, exit $rc ($secs s): see $name.log" ;;
    esac
    order+=("$name")
    log "== $name: ${result[$name]}"
    return "$rc"
}
wanted() { case ",$parts," in *",$1,"*) return 0 ;; esac; return 1; }

ceph_version() { in_root dpkg-query -W -f='${Version}' ceph-osd 2> /dev/null; }

# The tree and the build of the root's Ceph (known once the source part ran):
# /srv/ceph/ceph-20.2.4+ds and /srv/ceph/build-20.2.4.
upstream_version() { sed 's/-[^-]*$//' "$src_dir/VERSION" 2> /dev/null; }
tree_in_root() { echo "$tree_parent/ceph-$(upstream_version)"; }
build_in_root() { local u; u=$(upstream_version); echo "$tree_parent/build-${u%+ds}"; }

# --- parts -------------------------------------------------------------------
part_chroot() { "$chroot_tool" create --suite "$suite" --root "$root"; }

part_source() {
    local v
    in_root apt-get -o Acquire::Check-Valid-Until=false update -q > /dev/null || { echo "apt-get update failed in the root"; return 1; }
    v=$(in_root sh -c "apt-cache policy ceph-osd | sed -n 's/ *Candidate: //p'")
    [ -n "$v" ] || { echo "no ceph-osd candidate in the $suite root"; return 1; }
    v=${v%%+hybridstore*}
    echo "Debian's Ceph in $suite: $v"
    # A 404 for the .dsc or the debian.tar is final on this registry:
    # whatever arrived is kept, the orig tarball is required.
    in_root sh -c "cd '$src_dir' && apt-get -o Acquire::Check-Valid-Until=false source --download-only ceph=$v" || true
    ls -la "$src_dir"
    ls "$src_dir"/ceph_"${v%-*}".orig.tar.* > /dev/null 2>&1 || { echo "the orig tarball of $v did not arrive"; return 1; }
    echo "$v" > "$src_dir/VERSION"
}

part_build() {
    local v upstream orig debtar gitv args=()
    v=$(cat "$src_dir/VERSION" 2> /dev/null) || { echo "no source: run the source part first"; return 1; }
    upstream=${v%-*}                          # 20.2.4+ds
    orig=$(ls "$src_dir"/ceph_"$upstream".orig.tar.* | head -1)
    debtar=$(ls "$src_dir"/ceph_"$v".debian.tar.* 2> /dev/null | head -1)
    [ -n "$debtar" ] && args+=(--debian-tar "$debtar")
    # The commit and version Debian's own binaries report (its tarball has
    # no .git_version): the built OSD reports the same release.
    gitv=$(in_root ceph-mon --version)
    local sha ver
    sha=$(sed -n 's/.*(\([0-9a-f]\{40\}\)).*/\1/p' <<< "$gitv")
    ver=$(sed -n 's/^ceph version \([^ ]*\) .*/\1/p' <<< "$gitv")
    [ -n "$sha" ] && [ -n "$ver" ] && args+=(--git-version "$sha" "$ver")
    echo "source $orig${debtar:+, patches $debtar}; version $ver ($sha)"
    # The fio engine when a fio tree is at hand (its own bind: it may live
    # outside the source directory).
    if [ -d "$fio_git" ]; then
        binds+=(--bind "$fio_git")
        args+=(--fio "$fio_git" --target fio_ext --target fio_ceph_objectstore)
    else
        echo "no fio tree at $fio_git: the ObjectStore fio engine is not built"
    fi
    in_root python3 "$HS_TOP/src/tools/ceph-integrate" --from-orig "$orig" \
        --ceph-src "$(tree_in_root)" --build-dir "$(build_in_root)" --profile debian -j "$jobs" \
        "${args[@]}" --target ceph-osd --target ceph-objectstore-tool --target ceph-common \
        --target ceph_test_objectstore
}

part_tools() {
    in_root sh -c "cmake -S '$HS_TOP' -B '$tools_build' -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DHS_BUILD_TESTS=OFF > /dev/null && cmake --build '$tools_build' -j $jobs"
}

part_package() {
    local v deb
    v=$(cat "$src_dir/VERSION")
    deb=$src_dir/debs/ceph-osd_${v}_$(dpkg --print-architecture).deb
    mkdir -p "$src_dir/debs"
    [ -f "$deb" ] || in_root sh -c "cd '$src_dir/debs' && apt-get -o Acquire::Check-Valid-Until=false download ceph-osd=$v" ||
        { echo "Debian's ceph-osd $v could not be downloaded"; return 1; }
    # +hybridstoreN with N the project's commit count, so that the package of
    # a later commit upgrades the one already installed (apt compares versions
    # only); HS_PKG_REVISION sets it.
    local rev=${HS_PKG_REVISION:-$(git -C "$HS_TOP" rev-list --count HEAD 2> /dev/null || echo 1)}
    in_root python3 "$HS_TOP/src/tools/ceph-package" osd --ceph-build "$(build_in_root)" --debian-deb "$deb" --out "$repo" \
        --revision "$rev" && echo "$v+hybridstore$rev" > "$repo/ceph-osd.version" &&
        in_root python3 "$HS_TOP/src/tools/ceph-package" tools --tools-build "$tools_build" --out "$repo" \
            --version "$(python3 "$HS_TOP/src/tools/ceph-package" version)" || return 1
    # ceph-volume's hybridstore module is written against Tentacle's
    # ceph-volume (its objectstore seam); trixie's 18.2.7 has none
    if [ "$suite" = sid ]; then
        in_root python3 "$HS_TOP/src/tools/ceph-package" volume --out "$repo" \
            --version "$(python3 "$HS_TOP/src/tools/ceph-package" version)"
    fi
}

part_install() {
    local v hv volume_pkg=
    [ -e "$repo/ceph-volume-hybridstore_$(python3 "$HS_TOP/src/tools/ceph-package" version)_all.deb" ] &&
        volume_pkg=ceph-volume-hybridstore
    v=$(cat "$src_dir/VERSION")
    hv=$(cat "$repo/ceph-osd.version" 2> /dev/null) || { echo "no $repo/ceph-osd.version: run the package part first"; return 1; }
    in_root sh -c "
set -e
echo 'deb [trusted=yes] file:$repo ./' > /etc/apt/sources.list.d/hybridstore.list
apt-get -o Acquire::Check-Valid-Until=false update -q
DEBIAN_FRONTEND=noninteractive apt-get install -y -q ceph-osd=$hv hybridstore-tools $volume_pkg
dpkg-query -W ceph-osd hybridstore-tools $volume_pkg
ceph-osd --no-mon-config -c /dev/null --log-file /dev/null --osd-objectstore hybridstore --show-config-value osd_objectstore | grep -qx hybridstore
echo 'installed: ceph-osd knows hybridstore'
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --allow-downgrades ceph-osd=$v
! ceph-osd --no-mon-config -c /dev/null --log-file /dev/null --osd-objectstore hybridstore --show-config-value osd_objectstore 2>/dev/null | grep -qx hybridstore
echo 'downgraded: Debian ceph-osd $v is back and refuses hybridstore'
DEBIAN_FRONTEND=noninteractive apt-get install -y -q ceph-osd=$hv
dpkg-query -W ceph-osd
rm -rf /opt/debian-ceph-osd && dpkg-deb -x '$src_dir/debs/ceph-osd_${v}_'\$(dpkg --print-architecture).deb /opt/debian-ceph-osd
/opt/debian-ceph-osd/usr/bin/ceph-osd --version
"
}


part_store_test() {
    # CEPH_ARGS reaches the suite's Ceph options (say, --hybridstore-kv-location device).
    in_root env CEPH_BUILD="$(build_in_root)" CEPH_ARGS="${CEPH_ARGS:-}" bash "$HS_TOP/qa/ceph/store-test.sh" \
        "$out/store-test"
}
part_objectstore_fio() {
    in_root env CEPH_BUILD="$(build_in_root)" bash "$HS_TOP/qa/ceph/objectstore-fio.sh" "$out/objectstore-fio"
}
part_cluster() {
    in_root env CEPH_BUILD=installed HS_CEPH_TREE="$(tree_in_root)" HYBRIDSTORE_TOOL=/usr/bin/hybridstore-tool \
        bash "$HS_TOP/qa/ceph/cluster.sh" both "$out/cluster-report.md"
}
part_tmpfs() {
    in_root env CEPH_BUILD=installed HYBRIDSTORE_TOOL=/usr/bin/hybridstore-tool \
        bash "$HS_TOP/qa/ceph/tmpfs-dir.sh" both "$out/tmpfs-report.md"
}
part_ceph_volume() {
    [ "$suite" = sid ] || { echo "SKIPPED: the ceph-volume module is written against Tentacle's ceph-volume (20.2); $suite has another"; return 77; }
    local rc=0
    HS_CHROOT=$root HS_CHROOT_SUITE=$suite bash "$HS_TOP/src/ceph-volume/run-tests.sh" || rc=$?
    [ $rc = 0 ] || [ $rc = 77 ] || return $rc
    in_root env CEPH_BUILD=installed HYBRIDSTORE_TOOL=/usr/bin/hybridstore-tool \
        bash "$HS_TOP/qa/ceph/ceph-volume.sh" "$out/ceph-volume-report.md"
}
part_standalone() {
    in_root env CEPH_OSD=/usr/bin/ceph-osd HS_CEPH_TREE="$(tree_in_root)" HYBRIDSTORE_TOOL=/usr/bin/hybridstore-tool \
        bash "$HS_TOP/qa/ceph/ceph-standalone.sh" "${HS_PROOF_STANDALONE_STORES:-both}" "$out/standalone"
}
part_hardware() {
    in_root env CEPH_BUILD=installed HS_CEPH_TREE="$(tree_in_root)" HH_DEBIAN_OSD=/opt/debian-ceph-osd/usr/bin/ceph-osd \
        DEVCLASS_TOOL=/usr/bin/hybridstore-diskmodel bash "$HS_TOP/qa/ceph/hybrid-hardware.sh" "$out/hardware"
}
part_thrash() {
    in_root env CEPH_BUILD=installed HS_CEPH_TREE="$(tree_in_root)" bash "$HS_TOP/qa/ceph/thrash.sh" "${HS_PROOF_THRASH_STORES:-both}" "$out/thrash"
}
part_powercut() {
    in_root env CEPH_BUILD=installed HYBRIDSTORE_TOOL=/usr/bin/hybridstore-tool DEVCLASS_TOOL=/usr/bin/hybridstore-diskmodel \
        bash "$HS_TOP/qa/ceph/powercut.sh" "${HS_PROOF_POWERCUT_STORES:-both}" "$out/powercut"
}

failed=0
first=1
for p in chroot source build tools package install store-test objectstore-fio cluster tmpfs ceph-volume standalone hardware thrash powercut; do
    wanted "$p" || continue
    run_part "$p" "part_${p//-/_}"
    rc=$?
    if [ "$rc" = 77 ] && [ "$first" = 1 ]; then
        echo "SKIPPED: the first part ($p) cannot run here"
        exit 77
    fi
    [ "$rc" != 0 ] && [ "$rc" != 77 ] && failed=1
    first=0
    # A failed build, package or install leaves nothing to prove.
    if [ "$rc" != 0 ] && [[ " chroot source build tools package install " == *" $p "* ]]; then break; fi
done

{
    echo "# HybridStore on Debian $suite: $(date -u +%Y-%m-%dT%H:%MZ)"
    echo
    echo "- root: $root ($("$chroot_tool" info --suite "$suite" --root "$root" 2> /dev/null | sed -n 's/ *"ceph": "\(.*\)",/\1/p'))"
    echo "- packages: $(in_root dpkg-query -W -f='${Package} ${Version}; ' ceph-osd ceph-mon ceph-mgr ceph-common hybridstore-tools 2> /dev/null)"
    echo "- project: $(git -C "$HS_TOP" rev-parse --short=12 HEAD)"
    echo
    echo "| part | result |"
    echo "|---|---|"
    for p in "${order[@]}"; do echo "| $p | ${result[$p]} |"; done
} > "$summary"
cat "$summary"
exit "$failed"
