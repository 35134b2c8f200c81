#!/usr/bin/env bash
# Workunit: Ceph's own standalone scripts (qa/standalone of a Ceph tree),
# unmodified, against hybridstore OSDs on this node, through
# qa/ceph/ceph-standalone.sh and its PATH shim. The scripts start and stop
# their own daemons; nothing of the job's cluster is used.
#
# Environment (the facets under qa/suites/hybridstore/standalone set them):
#   HS_STANDALONE_SCRIPTS  the scripts, paths under qa/standalone/
#   HS_STANDALONE_TESTS    only these TEST_ names (default: every test)
#   CEPH_BUILD             a Ceph build with HybridStore (local runs); or
#   HS_CEPH_TREE           a Ceph source tree of the installed release, the
#                          ceph-osd then being CEPH_OSD or the one on PATH
# Exits 77 (skipped, with the reason on a SKIPPED: line) when neither gives
# a ceph-osd that knows hybridstore and a tree with qa/standalone.
set -u
top=$(cd "$(dirname "$0")/../../.." && pwd)
[ -n "${HS_STANDALONE_SCRIPTS:-}" ] || { echo "HS_STANDALONE_SCRIPTS is not set (the facet names the scripts)" >&2; exit 2; }
out=${TESTDIR:-${TMPDIR:-/tmp}}/ceph-standalone-$$
exec "$top/qa/ceph/ceph-standalone.sh" hybridstore "$out"
