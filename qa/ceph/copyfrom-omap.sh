#!/usr/bin/env bash
# The fewest ops that leave a replicated PG inconsistent through Ceph's own
# PrimaryLogPG::finish_copyfrom, on any store (docs/ceph.md, Known issues):
# a copy_from onto an object that has omap, from one that has none, while a
# replica is down; the replica is brought back, recovered from the log, and
# deep scrub finds its stale omap.
#
#   CEPH_OSD=/usr/bin/ceph-osd qa/ceph/copyfrom-omap.sh [bluestore|hybridstore] [OUTDIR]
#
# The steps (one pool: size 3, min_size 2, 1 PG; noout so that recovery is
# the log's and not a backfill):
#   1. put dst (4 KiB) with an omap key and an omap header; put src (4 KiB),
#      no omap; every PG active+clean
#   2. stop one replica of the PG (not the primary) by its pid file
#   3. `rados cp src dst`: a copy_from, acknowledged by the two others
#   4. start the replica again; every PG active+clean (recovery from the log)
#   5. deep-scrub the PG; list-inconsistent-obj
#   6. stop every OSD; on each, ceph-objectstore-tool lists dst's omap keys
# Prints what each replica holds after recovery and the scrub's verdict.
# Exit 0 when the PG scrubs clean (the bug is fixed in this ceph-osd), 1 when
# scrub reports dst inconsistent (the bug is there), 2 on a setup failure,
# 77 SKIPPED (no ceph-osd, tools missing).
set -u
store=${1:-bluestore}
out=${2:-$PWD/copyfrom-omap-$(date +%Y%m%d-%H%M%S)}
export HS_OBJECTSTORE=$store HS_SSD_SIZE=${HS_SSD_SIZE:-1G} HS_HDD_SIZE=${HS_HDD_SIZE:-4G}
source "$(dirname "$0")/common.sh"
# shellcheck source=qa/standalone/hybridstore-helpers.sh
source "$HS_TOP/qa/standalone/hybridstore-helpers.sh"

case $store in bluestore | hybridstore) ;; *) echo "unknown store $store" >&2; exit 2 ;; esac
CEPH_OSD=${CEPH_OSD:-$(command -v ceph-osd)}
[ -n "$CEPH_OSD" ] && [ -x "$CEPH_OSD" ] || skip "no ceph-osd (set CEPH_OSD)"
export CEPH_OSD
if [ "$store" = hybridstore ]; then
    osd_knows_hybridstore "$CEPH_OSD" || skip "$CEPH_OSD does not know hybridstore"
fi
cot=${CEPH_OBJECTSTORE_TOOL:-$(dirname "$CEPH_OSD")/ceph-objectstore-tool}
[ -x "$cot" ] || skip "no ceph-objectstore-tool beside $CEPH_OSD (set CEPH_OBJECTSTORE_TOOL)"
for b in ceph-mon ceph-mgr ceph rados monmaptool uuidgen jq; do
    command -v "$b" > /dev/null || skip "$b is not installed"
done

mkdir -p "$out" && out=$(cd "$out" && pwd)
dir=$out/cluster
export CEPH_MON
CEPH_MON=127.0.0.1:$(pick_mon_port 18500) || exit 2
cleanup() { teardown "$dir" "${failed:-}" > /dev/null 2>&1; }
trap cleanup EXIT
report=$out/REPORT.md
say() { echo "$*" | tee -a "$report"; }
: > "$report"
setup "$dir" || exit 2
run_cluster "$dir" 3 || { failed=1; exit 2; }
ceph_cli osd set noout > /dev/null
create_pool cf 1 3 || { failed=1; exit 2; }
ceph_cli osd pool set cf min_size 2 > /dev/null
ceph_cli osd pool set cf pg_autoscale_mode off > /dev/null
pgid=$(ceph_cli pg ls-by-pool cf -f json | jq -r '(.pg_stats // .)[0].pgid')

head -c 4096 /dev/urandom > "$out/dst.bin"
head -c 4096 /dev/urandom > "$out/src.bin"
rados_cli -p cf put dst "$out/dst.bin" && rados_cli -p cf setomapval dst key-before value &&
    rados_cli -p cf setomapheader dst header-before && rados_cli -p cf put src "$out/src.bin" ||
    { failed=1; exit 2; }
wait_for_clean || { failed=1; exit 2; }
acting=$(ceph_cli pg map "$pgid" -f json | jq -r '.acting | map(tostring) | join(" ")')
primary=${acting%% *}
replica=$(for o in $acting; do [ "$o" != "$primary" ] && echo "$o"; done | head -1)
say "# copy_from onto an object with omap, from one without, a replica down"
say ""
say "- ceph-osd: $CEPH_OSD ($("$CEPH_OSD" --version | head -1)); store: $store"
say "- pool cf: size 3, min_size 2, PG $pgid, acting [$acting], primary osd.$primary; the stopped replica: osd.$replica"
say "- before: dst has omap keys [$(rados_cli -p cf listomapkeys dst | tr '\n' ' ')], src has [$(rados_cli -p cf listomapkeys src | tr '\n' ' ')]"

stop_osd "$dir" "$replica" || { failed=1; exit 2; }
wait_for_osd down "$replica" || { failed=1; exit 2; }
rados_cli -p cf cp src dst || { failed=1; say "rados cp failed"; exit 2; }
say "- rados cp src dst with osd.$replica down: dst now has omap keys [$(rados_cli -p cf listomapkeys dst | tr '\n' ' ')]"
activate_osd "$dir" "$replica" || { failed=1; exit 2; }
wait_for_clean || { failed=1; exit 2; }
say "- osd.$replica back, every PG active+clean"

before=$(ceph_cli pg "$pgid" query -f json | jq -r '.info.stats.last_deep_scrub_stamp')
ceph_cli pg deep-scrub "$pgid" > /dev/null
scrubbed() { [ "$(ceph_cli pg "$pgid" query -f json | jq -r '.info.stats.last_deep_scrub_stamp')" != "$before" ]; }
wait_until 300 "deep scrub of $pgid" scrubbed || { failed=1; exit 2; }
rados_cli list-inconsistent-obj "$pgid" --format=json-pretty > "$out/inconsistent.json" 2>&1
errors=$(jq -r '[.inconsistents[]? | .object.name + ": " + ((.errors + .union_shard_errors) | join(","))
    + " (omap digest by shard: " + ([.shards[] | "osd.\(.osd) \(.omap_digest)"] | join(", ")) + ")"] | join("; ")' \
    "$out/inconsistent.json" 2> /dev/null)
say "- deep scrub: ${errors:-no inconsistent object}"

# What each OSD's store holds for dst.
ceph_cli osd set noup > /dev/null
for o in $acting; do stop_osd "$dir" "$o"; done
say ""
say "| OSD | role | dst's omap keys in its store |"
say "|---|---|---|"
for o in $acting; do
    role=replica
    [ "$o" = "$primary" ] && role=primary
    [ "$o" = "$replica" ] && role="replica, down during the copy"
    keys=$("$cot" --no-mon-config --data-path "$dir/osd.$o" --pgid "$pgid" dst list-omap 2> "$out/cot.$o.err" |
        tr '\n' ' ')
    say "| osd.$o | $role | ${keys:-(none)} |"
done
if [ -n "$errors" ]; then
    say ""
    say "Result: dst is inconsistent after recovery (the finish_copyfrom bug)."
    exit 1
fi
say ""
say "Result: the PG scrubs clean."
exit 0
