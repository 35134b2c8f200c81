#!/usr/bin/env bash
# The main job on a fresh machine: a store under ./demo-store with the
# embedded defaults and an SSD smaller than the data the runs write, a
# mixed-size write, a verified rand read-back and a mixed tiering run
# (hybridstore-bench demo), then the usage per tier, the perf counter deltas
# and a plotted report under ./demo-report.
#
# Where the machine allows (root, FUSE, loop devices: qa/devclass), the HDD
# tier is a loop device served by the 7,200-rpm disk model, so the report
# shows what the tiers and the migrator buy; elsewhere both tiers are plain
# files on this machine's disk, and the summary says so.
# DEMO_CLASSES=off forces plain files.
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/.."
start=$(date +%s)
store=${DEMO_DIR:-demo-store}
devices=$store.devices
args=()
classes="off (plain files on this machine's disk: both tiers as fast as each other)"
# shellcheck source=qa/devclass/devclass.sh
source qa/devclass/devclass.sh
cleanup() { [ -d "$devices" ] && devclass_detach_all "$devices" && rm -rf "$devices"; }
if [ "${DEMO_CLASSES:-on}" = off ]; then
    classes="off (DEMO_CLASSES=off)"
elif no_classes=$(HS_BUILD_DIR=$BUILD devclass_available 2>&1); then
    trap cleanup EXIT
    mkdir -p "$devices"
    hdd=$(HS_BUILD_DIR=$BUILD devclass_attach "$devices" hdd hdd 64G)
    # The SSD file's disk may call itself rotational (a VM's virtio disk
    # does) though it is far faster than the modelled HDD: absorb the small
    # writes as on a real SSD rather than by what the flag says.
    args+=(--set "hybridstore_hdd_path=$hdd" --set hybridstore_tier_absorb=always)
    classes="on: the HDD is $hdd, a 64 GiB loop device served by the hdd profile of qa/devclass/profiles.conf (7,200 rpm); the SSD is a file on this machine's disk"
else
    classes="off ($no_classes): both tiers are plain files on this machine's disk"
fi
echo "device classes: $classes"
"$BUILD/bin/hybridstore-bench" demo --dir "$store" --report "${DEMO_REPORT:-demo-report}" \
    --classes "$classes" "${args[@]}"
echo "demo took $(( $(date +%s) - start )) s"
