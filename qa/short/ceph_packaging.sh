#!/bin/sh
# src/tools/ceph-package and src/tools/ceph-chroot without a Ceph build or a
# Debian root: the control file of the hybridstore ceph-osd made from a
# Debian one (version above Debian's and below its next revision, Debian's
# fixed dependencies kept), the flat repository's index over small packages
# built here, and the chroot tool's argument handling and its SKIPPED answers
# (no root, no registry). Nothing is downloaded, built or mounted.
set -eu
cd "$(dirname "$0")/../.."
exec python3 qa/short/ceph_packaging_check.py
