#!/usr/bin/env python3
"""Checks of src/tools/ceph-package and src/tools/ceph-chroot (see ceph_packaging.sh)."""
import gzip
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from importlib.machinery import SourceFileLoader

pkg = SourceFileLoader("ceph_package", os.path.abspath("src/tools/ceph-package")).load_module()
chroot = SourceFileLoader("ceph_chroot", os.path.abspath("src/tools/ceph-chroot")).load_module()
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def newer(a, b):
    return subprocess.run(["dpkg", "--compare-versions", a, "gt", b]).returncode == 0


# Debian's control of ceph-osd 20.2.4+ds-2 as `dpkg-deb -f` prints it (abridged).
DEBIAN = """Package: ceph-osd
Source: ceph
Version: 20.2.4+ds-2
Architecture: amd64
Maintainer: Ceph Packaging Team <team+ceph@tracker.debian.org>
Installed-Size: 71625
Pre-Depends: ceph-common (= 20.2.4+ds-2)
Depends: ceph-base (= 20.2.4+ds-2), ceph-volume (= 20.2.4+ds-2), lvm2, sudo, libaio1t64 (>= 0.3.93), libboost-thread1.92.0 (>= 1.92.0), librados2 (>= 20.2.4+ds), libstdc++6 (>= 14)
Recommends: smartmontools
Section: admin
Priority: optional
Description: OSD server for the ceph storage system
 Ceph is a massively scalable, open-source, distributed
 storage system.
"""

fields = pkg.parse_control(DEBIAN)
check(pkg.get(fields, "Depends").startswith("ceph-base") and "\n" in pkg.get(fields, "Description"),
      "a Debian control parses, continuation lines kept")
check(pkg.format_control(fields) == DEBIAN, "and formats back to the same bytes")
v = pkg.hybrid_version("20.2.4+ds-2", 1)
check(v == "20.2.4+ds-2+hybridstore1", f"the version is Debian's +hybridstore1: {v}")
check(newer(v, "20.2.4+ds-2"), "it sorts above Debian's")
check(newer("20.2.4+ds-3", v), "and below Debian's next revision")
check(newer(pkg.hybrid_version("20.2.4+ds-2", 2), v), "+hybridstore2 sorts above +hybridstore1")
for bad in ("x1", "1.0 2"):
    try:
        pkg.hybrid_version(bad, 1)
        check(False, f"{bad!r} is refused as a version")
    except pkg.Refused:
        check(True, f"{bad!r} is refused as a version")
out = pkg.osd_control(fields, 1, ["libc6 (>= 2.43)", "libstdc++6 (>= 14)"])
deps = pkg.split_deps(pkg.get(out, "Depends"))
check(pkg.get(out, "Version") == v and pkg.get(out, "Package") == "ceph-osd", "the OSD package keeps its name")
check(deps[:4] == ["ceph-base (= 20.2.4+ds-2)", "ceph-volume (= 20.2.4+ds-2)", "lvm2", "sudo"],
      f"Debian's fixed dependencies are kept, on exactly its version: {deps[:4]}")
check("libaio1t64 (>= 0.3.93)" not in deps and "libc6 (>= 2.43)" in deps,
      "library dependencies are those of the new binaries")
check(pkg.get(out, "Pre-Depends") == "ceph-common (= 20.2.4+ds-2)", "Pre-Depends kept")
check(pkg.get(out, "XSBC-Original-Maintainer") == "Ceph Packaging Team <team+ceph@tracker.debian.org>",
      "Debian's maintainer recorded as Original-Maintainer")
check(pkg.get(out, "Installed-Size") is None, "Installed-Size left for the build to compute")
check("hybridstore" in pkg.get(out, "Description"), "the description says what the build adds")
try:
    pkg.osd_control(pkg.put(fields, "Package", "ceph-mon"), 1, [])
    check(False, "a package other than ceph-osd is refused")
except pkg.Refused:
    check(True, "a package other than ceph-osd is refused")
try:
    pkg.parse_control(" leading continuation\n")
    check(False, "a control starting with a continuation line is refused")
except pkg.Refused:
    check(True, "a control starting with a continuation line is refused")

# A flat repository over two small packages built here.
with tempfile.TemporaryDirectory() as tmp:
    repo = os.path.join(tmp, "repo")
    os.makedirs(repo)
    for name, ver in (("hs-a", "1.0"), ("hs-b", "2.0+x1")):
        root = os.path.join(tmp, name)
        os.makedirs(os.path.join(root, "DEBIAN"))
        os.makedirs(os.path.join(root, "usr", "share", "doc", name))
        with open(os.path.join(root, "usr", "share", "doc", name, "README"), "w") as f:
            f.write("x\n")
        pkg.add_changelog_entry(root, name, ver, ["first"])
        ctl = [("Package", name), ("Version", ver), ("Architecture", "all"), ("Maintainer", pkg.MAINTAINER),
               ("Installed-Size", str(pkg.dir_kb(root))), ("Description", "test\n a test package")]
        pkg.build_deb(root, repo, ctl)
    pkg.write_repo(repo)
    text = open(os.path.join(repo, "Packages")).read()
    check(text.count("Package: ") == 2 and "Filename: ./hs-a_1.0_all.deb" in text, "Packages lists both")
    with gzip.open(os.path.join(repo, "Packages.gz"), "rt") as f:
        check(f.read() == text, "Packages.gz is Packages")
    rel = open(os.path.join(repo, "Release")).read()
    data = open(os.path.join(repo, "Packages"), "rb").read()
    check(f" {hashlib.sha256(data).hexdigest()} {len(data)} Packages" in rel, "Release carries Packages' sha256")
    deb = os.path.join(repo, "hs-b_2.0+x1_all.deb")
    sha = hashlib.sha256(open(deb, "rb").read()).hexdigest()
    check(f"SHA256: {sha}" in text, "Packages carries each package's sha256")
    listing = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True, text=True).stdout
    check("./usr/share/doc/hs-b/changelog.gz" in listing, "the package has its changelog")
    md5 = subprocess.run(["dpkg-deb", "-I", deb, "md5sums"], capture_output=True, text=True).stdout
    check("usr/share/doc/hs-b/README" in md5, "md5sums lists the files")
    with gzip.open(os.path.join(tmp, "hs-b", "usr/share/doc/hs-b/changelog.gz"), "rt") as f:
        check(f.read().startswith("hs-b (2.0+x1) unstable; urgency=medium"), "the changelog's entry names the version")

    # ceph-package refuses a Ceph build without the binaries.
    r = subprocess.run([sys.executable, "src/tools/ceph-package", "osd", "--ceph-build", tmp, "--debian-deb",
                        deb, "--out", repo], capture_output=True, text=True)
    check(r.returncode == 2 and "refused" in r.stderr, "ceph-package osd refuses a build without ceph-osd")
    r = subprocess.run([sys.executable, "src/tools/ceph-package", "--help"], capture_output=True, text=True)
    check(r.returncode == 0 and "osd" in r.stdout and "tools" in r.stdout, "ceph-package --help")

    # ceph-chroot: arguments and SKIPPED answers.
    r = subprocess.run([sys.executable, "src/tools/ceph-chroot", "--help"], capture_output=True, text=True)
    check(r.returncode == 0 and "create" in r.stdout and "run" in r.stdout, "ceph-chroot --help")
    r = subprocess.run([sys.executable, "src/tools/ceph-chroot", "create", "--suite", "bookworm"],
                       capture_output=True, text=True)
    check(r.returncode == 2 and "invalid choice" in r.stderr, "an unknown suite is refused")
    real = chroot.os.geteuid
    try:
        chroot.os.geteuid = lambda: 1000
        check("needs root" in (chroot.skip_reason("sid") or ""), "without root: skipped, saying so")
    finally:
        chroot.os.geteuid = real
    env = dict(os.environ, HS_DEBIAN_MIRROR="http://127.0.0.1:9/debian", HS_CHROOT_BASE=os.path.join(tmp, "roots"))
    r = subprocess.run([sys.executable, "src/tools/ceph-chroot", "create", "--suite", "sid"], env=env,
                       capture_output=True, text=True)
    if os.geteuid() == 0:
        check(r.returncode == 77 and "SKIPPED" in r.stdout and "not reachable" in r.stdout,
              "an unreachable registry: SKIPPED (77), saying why")
    else:
        check(r.returncode == 77 and "needs root" in r.stdout, "not root: SKIPPED (77)")
    check(not os.path.exists(os.path.join(tmp, "roots", "sid")), "and nothing was made")
    busy = os.path.join(tmp, "roots", "trixie")
    os.makedirs(busy)
    open(os.path.join(busy, "file"), "w").close()
    r = subprocess.run([sys.executable, "src/tools/ceph-chroot", "create", "--suite", "trixie"], env=env,
                       capture_output=True, text=True)
    if os.geteuid() == 0:
        check(r.returncode == 2 and "not made by this tool" in r.stderr,
              "a non-empty directory not made by the tool is refused")
    r = subprocess.run([sys.executable, "src/tools/ceph-chroot", "run", "--suite", "sid", "--", "true"], env=env,
                       capture_output=True, text=True)
    check(r.returncode in (2, 77) and ("create" in r.stderr or "SKIPPED" in r.stdout),
          "run without a root says to make one")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("ceph-package, ceph-chroot: all checks passed")
