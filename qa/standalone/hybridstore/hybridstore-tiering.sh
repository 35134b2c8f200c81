#!/usr/bin/env bash
# The two tiers under a real OSD: a tiny SSD filled past its size spills to
# the HDD (and everything reads back), and the migrator's moves show in the
# OSD's perf counters (section "hybridstore"; counter names are matched
# loosely, see HS_MIGRATION_COUNTER_RE).
# shellcheck source=qa/standalone/hybridstore-helpers.sh
source "$(dirname "$0")/../hybridstore-helpers.sh"

HS_MIGRATION_COUNTER_RE=${HS_MIGRATION_COUNTER_RE:-migrat|promot|demot}

run() {
    local dir=$1
    shift
    CEPH_MON=127.0.0.1:$(pick_mon_port 17500) || return 1
    export CEPH_MON
    run_tests "$dir" "$@"
}

# tier_df DIR ID: the stopped OSD's space per tier (hybridstore-tool df --json).
tier_df() {
    hybridstore_tool --path "$1/osd.$2" df --json
}

TEST_ssd_full_spills_to_hdd() {
    local dir=$1
    require_hybridstore || return $?
    # 256 MiB of SSD; 64 KiB objects (below the HDD placement threshold, so
    # they belong on the SSD) until about 400 MiB are written. --no-hints:
    # rados bench otherwise marks every object sequential and append-only,
    # and such objects go straight to the HDD.
    conf_set "$dir" osd "hybridstore ssd size" 256M
    conf_set "$dir" osd "hybridstore hdd size" 4G
    # RocksDB in the data directory, not the default kvfs on the SSD: 256 MiB
    # is too small for one under RocksDB's 64 MiB memtables (docs/kvfs.md
    # 2.4), and the SSD's space is what this fills.
    conf_set "$dir" osd "hybridstore kv location" directory
    conf_render "$dir"
    run_cluster "$dir" 1 || return 1
    create_pool fill 8 || return 1
    timeout 600 rados -p fill bench 300 write -b 65536 -t 16 --max-objects 6400 --no-cleanup --no-hints \
        --run-name spill > "$dir/bench-write.out" 2>&1 ||
        { tail -20 "$dir/bench-write.out" >&2; fail "rados bench write"; return 1; }
    local objects
    objects=$(rados_cli -p fill ls | wc -l)
    [ "$objects" -ge 6400 ] || { fail "only $objects of 6400 objects written"; return 1; }
    # rados bench seq reads every object back and checks its contents.
    timeout 600 rados -p fill bench 300 seq -t 16 --run-name spill > "$dir/bench-seq.out" 2>&1 ||
        { tail -20 "$dir/bench-seq.out" >&2; fail "rados bench seq (read back)"; return 1; }
    perf_dump 0 | jq -e 'has("hybridstore")' > /dev/null || { fail "no hybridstore perf section"; return 1; }
    stop_osd "$dir" 0 || return 1
    tier_df "$dir" 0 > "$dir/df.json" || return 1
    cat "$dir/df.json" >&2
    jq -e '.hdd.allocated > 0' "$dir/df.json" > /dev/null ||
        { fail "nothing on the HDD after filling the SSD"; return 1; }
    jq -e '.ssd.allocated > 0.5 * .ssd.total' "$dir/df.json" > /dev/null ||
        { fail "the SSD is less than half used"; return 1; }
    hybridstore_tool --path "$dir/osd.0" fsck || { fail "fsck after the spill"; return 1; }
    activate_osd "$dir" 0 || return 1
    timeout 600 rados -p fill bench 300 seq -t 16 --run-name spill > "$dir/bench-seq2.out" 2>&1 ||
        { fail "read back after restart"; return 1; }
}

# Sum of the counters of the hybridstore section whose names match RE (a
# counter is a number or an object with avgcount/sum).
migration_counter_sum() {
    perf_dump "$1" | jq --arg re "$HS_MIGRATION_COUNTER_RE" '
        [.hybridstore // {} | to_entries[] | select(.key | test($re))
         | .value | if type == "object" then (.avgcount // .sum // 0) else . end] | add // 0'
}

TEST_migration_visible_in_perf_counters() {
    local dir=$1 i
    require_hybridstore || return $?
    conf_set "$dir" osd "hybridstore tier policy" hot
    conf_set "$dir" osd "hybridstore tier migrate interval sec" 2
    conf_set "$dir" osd "hybridstore tier migrate idle sec" 1
    conf_set "$dir" osd "hybridstore tier heat persist interval sec" 1
    conf_render "$dir"
    run_cluster "$dir" 1 || return 1
    create_pool mig 8 || return 1
    perf_dump 0 | jq -e --arg re "$HS_MIGRATION_COUNTER_RE" \
        '.hybridstore | keys | any(test($re))' > /dev/null ||
        { perf_dump 0 | jq -c '.hybridstore | keys' >&2
          fail "no counter matching /$HS_MIGRATION_COUNTER_RE/ in the hybridstore section"; return 1; }
    local before
    before=$(migration_counter_sum 0)
    # Large objects start on the HDD; reading a few of them often makes them hot.
    for i in $(seq 1 12); do
        make_payload "big-$i" 4194304 "$dir/in" && rados_cli -p mig put "big-$i" "$dir/in" || return 1
    done
    for _ in $(seq 1 10); do
        for i in 1 2 3; do rados_cli -p mig get "big-$i" "$dir/out" || return 1; done
    done
    counters_changed() { [ "$(migration_counter_sum 0)" != "$before" ]; }
    wait_until 120 "migration counters to move" counters_changed ||
        { perf_dump 0 | jq '.hybridstore' >&2; return 1; }
    log "migration counters: $before -> $(migration_counter_sum 0)"
    for i in $(seq 1 12); do check_object mig "big-$i" 4194304 "$dir" || return 1; done
}

main hybridstore-tiering "$@"
