#!/bin/sh
# src/tools/ceph-integrate without a Ceph tree: the releases it knows (16
# and 18; Squid is refused), the adapter's version table (every release and
# point-release feature its sources key on, 19 included, is in the table of
# hybrid_object_store.h, and Squid's overrides sit behind release 19), its
# edits of a Pacific and a Reef layout (made once, so a second run changes
# nothing), its refusals (another release, missing submodules), and
# --from-git's export of a snapshot that lacks a blob. The trees are small
# fakes with the anchors the tool edits; no configure, no build.
set -eu
cd "$(dirname "$0")/../.."
exec python3 qa/short/ceph_integrate_check.py
