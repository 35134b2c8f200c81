#!/bin/sh
# src/tools/ceph-integrate without a Ceph tree: the releases it knows (the
# table the adapter keys on, HS_CEPH_RELEASE), its edits of a Pacific and a
# Reef layout (made once, so a second run changes nothing), its refusals
# (another release, missing submodules), and --from-git's export of a
# snapshot that lacks a blob. The trees are small fakes with the anchors the
# tool edits; no configure, no build.
set -eu
cd "$(dirname "$0")/../.."
exec python3 qa/short/ceph_integrate_check.py
