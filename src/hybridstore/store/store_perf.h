// The store's performance counters: one PerfCounterSet, group "hybridstore",
// registered when the HybridStore is constructed (before mkfs or mount), so
// a client can build its own view of the schema (the Ceph adapter makes
// Ceph PerfCounters from it) before the store is mounted.
//
// Names follow BlueStore's where the concept is the same (commit_lat,
// kv_flush_lat, state_*_lat, deferred_write_ops, onode_hits, ...); the rest
// are HybridStore's own (tiers, sections, migration, cleaning, FTL). The
// components get the ids they update (CommitterPerf, DeferredPerf,
// SectionPerf, FtlPerf) at mount; every update is an atomic add.
#pragma once
#include <string>
#include <vector>

#include "hscommon/config.h"
#include "hscommon/perf_counters.h"
#include "hybridstore/kv/deferred.h"
#include "hybridstore/kv/kv_committer.h"
#include "hybridstore/sections/ssd_sections.h"

namespace hybridstore {

struct StorePerf {
  // Per-section counters are registered for the sections `cfg` names; a
  // store made with other sections counts those in the totals only.
  // Per-tier counters for `tiers` tiers (ids -1 beyond).
  StorePerf(const Config& cfg, int tiers);

  PerfCounterSet set{"hybridstore"};

  // Transactions (txn_pipeline.cc) and the group committer.
  int txc, kv_commit_groups;
  int submit_lat, throttle_lat, state_prepare_lat, state_aio_wait_lat, state_kv_queued_lat,
      state_kv_committing_lat, commit_lat, kv_flush_lat, kv_commit_lat, kv_sync_lat;
  // Deferred writes.
  int deferred_write_ops, deferred_write_bytes, deferred_ring_ops, deferred_queue_bytes, deferred_apply_ops,
      deferred_apply_bytes, deferred_apply_lat;
  // Reads and the onode cache.
  int read_lat, read_bytes, read_eio, csum_errors, onode_hits, onode_misses;
  // The data cache (hybridstore_data_cache_size).
  int data_cache_hit_bytes, data_cache_miss_bytes, data_cache_bytes;
  // Tiers: space (gauges), objects by the tier holding most of their data
  // (gauges, persisted with the store's statistics), data placed and read.
  PerTier<int> bytes_used, bytes_total, objects, write_bytes, device_read_bytes;
  int tier_spill_ops;
  // Writes that went on while their transaction was queued.
  int async_write_ops, async_write_bytes;
  // SSD sections.
  int section_allocs, section_seals, write_units, write_units_forced, free_erase_units, ssd_direct_unit_bytes;
  std::vector<std::pair<std::string, std::pair<int, int>>> per_section;  // name -> (allocs, seals)
  // Migration and cleaning.
  int migration_passes, migration_lat, migrate_up_ops, migrate_up_bytes, migrate_down_ops,
      migrate_down_bytes, migrate_retries, migrate_skipped, promote_on_read_ops, promote_on_read_bytes,
      tier_absorb_ops, tier_absorb_bytes, destage_ops, destage_bytes;
  int cleaner_passes, cleaner_lat, cleaner_victims, cleaner_units_freed, cleaner_objects_moved,
      cleaner_bytes_moved;
  // RocksDB and the journal in the KV file system on the fastest tier:
  // what it owns and uses (gauges), and its growth into the tier.
  int kvfs_owned_bytes, kvfs_used_bytes, kvfs_grows, kvfs_grow_bytes, kvfs_nospace;
  // Counted by the kvfs, added once a second.
  int kvfs_syncs, kvfs_log_flushes, kvfs_compactions, kvfs_returns, kvfs_return_bytes;
  // The onode checkpointer's rounds (hybridstore_small_write_journal=on):
  // rounds, dirty onodes written, onodes left for a later round, the
  // collection lock holds they took, a round's time. Against txc, what a
  // checkpoint costs per op (small-writes.md 12).
  int small_write_ckpt_rounds, small_write_ckpt_onodes, small_write_ckpt_postponed, small_write_ckpt_holds,
      small_write_ckpt_lat;
  // Raw NAND under the embedded FTL.
  int ftl_merges, ftl_erases, ftl_pages_copied, ftl_host_pages_written;

};

// The ids each component updates, in the store's set.
CommitterPerf committer_counters(StorePerf* p);
DeferredPerf deferred_counters(StorePerf* p);
// Ids of the sections named, in that order (-1 for a section not registered).
SectionPerf section_counters(StorePerf* p, const std::vector<std::string>& names);

}  // namespace hybridstore
