#include "hybridstore/store/store_perf.h"

#include <algorithm>
#include <tuple>

#include "hybridstore/sections/section_config.h"

namespace hybridstore {

StorePerf::StorePerf(const Config& cfg, int tiers) {
  using K = PerfKind;
  auto c = [&](const char* n, const char* d) { return set.add(n, K::kCounter, d); };
  auto g = [&](const char* n, const char* d) { return set.add(n, K::kGauge, d); };
  auto l = [&](const char* n, const char* d) { return set.add(n, K::kLatency, d); };

  txc = c("txc", "transactions committed (durable)");
  kv_commit_groups = c("kv_commit_groups", "commit groups: one device flush and one RocksDB sync each");
  submit_lat = l("submit_lat", "queue_transaction: from entry until the transaction is applied and queued");
  throttle_lat = l("throttle_lat", "waiting for the deferred queue to drain below its limit");
  state_prepare_lat = l("state_prepare_lat", "locking the collections and applying the ops to the overlay");
  state_aio_wait_lat = l("state_aio_wait_lat", "writing the transaction's new data to the devices");
  state_kv_queued_lat = l("state_kv_queued_lat", "queued until the committer takes the transaction's group");
  state_kv_committing_lat = l("state_kv_committing_lat", "the group's device flush and RocksDB sync, per transaction");
  commit_lat = l("commit_lat", "from queue_transaction until the transaction is durable");
  kv_flush_lat = l("kv_flush_lat", "device flushes of one commit group");
  kv_commit_lat = l("kv_commit_lat", "RocksDB writes and WAL sync of one commit group");
  kv_sync_lat = l("kv_sync_lat", "device flush plus RocksDB sync of one commit group");

  deferred_write_ops = c("deferred_write_ops", "writes staged through RocksDB and applied later (small overwrites, SSD section data)");
  deferred_write_bytes = c("deferred_write_bytes", "bytes of deferred writes staged");
  deferred_ring_ops = c("deferred_ring_ops",
                        "deferred writes whose data rode in the commit journal's record instead of RocksDB "
                        "(hybridstore_small_write_journal=data)");
  deferred_queue_bytes = g("deferred_queue_bytes", "bytes staged and not yet on their devices");
  deferred_apply_ops = c("deferred_apply_ops", "deferred records applied to the devices");
  deferred_apply_bytes = c("deferred_apply_bytes", "bytes of deferred records applied");
  deferred_apply_lat = l("deferred_apply_lat", "one batch of deferred writes: device writes, flush, record deletion");

  read_lat = l("read_lat", "object reads");
  read_bytes = c("read_bytes", "bytes returned by object reads");
  read_eio = c("read_eio", "object reads that returned EIO");
  csum_errors = c("csum_errors", "checksum mismatches found reading object data");
  data_cache_hit_bytes = c("data_cache_hit_bytes", "device bytes a read found in the data cache");
  data_cache_miss_bytes = c("data_cache_miss_bytes", "device bytes a read looked for in the data cache and read from the device");
  data_cache_bytes = g("data_cache_bytes", "object data held in the data cache");
  onode_hits = c("onode_hits", "onode lookups served by the cache");
  onode_misses = c("onode_misses", "onode lookups that went to RocksDB");
  small_write_ckpt_rounds = c("small_write_ckpt_rounds",
                              "checkpoint rounds that wrote dirty onodes to RocksDB (hybridstore_small_write_journal=on)");
  small_write_ckpt_onodes = c("small_write_ckpt_onodes", "dirty onodes the checkpoint rounds wrote to RocksDB");
  small_write_ckpt_postponed = c("small_write_ckpt_postponed",
                                 "dirty onodes a round left for the next one (a put of theirs not yet committed)");
  small_write_ckpt_holds = c("small_write_ckpt_holds",
                             "times the checkpoint rounds took a collection's lock (32 dirty onodes at most each)");
  small_write_ckpt_lat = l("small_write_ckpt_lat", "one checkpoint round: its onode writes and its synced tail mark");
  kvfs_owned_bytes = g("kvfs_owned_bytes", "bytes of the fastest tier the KV file system under RocksDB owns");
  kvfs_used_bytes = g("kvfs_used_bytes", "of those, bytes its files, journal ring and log hold");
  kvfs_grows = c("kvfs_grows", "times the KV file system grew into the fastest tier");
  kvfs_grow_bytes = c("kvfs_grow_bytes", "bytes the fastest tier lent the KV file system as it grew");
  kvfs_nospace = c("kvfs_nospace", "growths the fastest tier refused (no free space above the floor's)");
  kvfs_syncs = c("kvfs_syncs", "file syncs RocksDB asked of the KV file system (added once a second)");
  kvfs_log_flushes = c("kvfs_log_flushes", "groups of records the KV file system wrote to its log (added once a second)");
  kvfs_compactions = c("kvfs_compactions", "compactions of the KV file system's log (added once a second)");
  kvfs_returns = c("kvfs_returns", "times the KV file system gave free space back to the fastest tier");
  kvfs_return_bytes = c("kvfs_return_bytes", "bytes the KV file system gave back to the fastest tier");

  // The Ceph bridge takes the counter names when the store object is made,
  // before mount: the caller counts the tiers then (counted_tiers).
  const int counted = std::clamp(tiers, 2, kMaxTiers);
  for (Tier t : tier_ids(kMaxTiers))
    bytes_used[t] = bytes_total[t] = objects[t] = write_bytes[t] = device_read_bytes[t] = -1;
  for (Tier t : tier_ids(counted)) {
    std::string tn = tier_name(t);
    bytes_used[t] = set.add(tn + "_bytes_used", K::kGauge, "bytes allocated on the " + tn + " tier");
    bytes_total[t] = set.add(tn + "_bytes_total", K::kGauge, "allocatable bytes of the " + tn + " tier");
    objects[t] = set.add(tn + "_objects", K::kGauge, "objects holding most of their data on the " + tn + " tier");
    write_bytes[t] = set.add(tn + "_write_bytes", K::kCounter,
                             "bytes of data placed on the " + tn + " tier (writes, migrations, cleaning)");
    device_read_bytes[t] = set.add(tn + "_read_bytes", K::kCounter, "bytes read from the " + tn + " device for objects");
  }
  tier_spill_ops = c("tier_spill_ops", "writes that went to the other tier because the preferred one was full");
  async_write_ops = c("async_write_ops",
                      "batches of new data written while their transaction was queued (hybridstore_async_write_min)");
  async_write_bytes = c("async_write_bytes", "bytes of those batches");

  section_allocs = c("ssd_section_allocs", "SSD section allocations");
  section_seals = c("ssd_section_seals", "SSD section extents sealed");
  write_units = c("ssd_write_units", "SSD write units written whole");
  write_units_forced = c("ssd_write_units_forced", "SSD write units written partly filled (timeout, cap, sync)");
  ssd_direct_unit_bytes = c("ssd_direct_unit_bytes",
                            "bytes of whole SSD write units written before their transaction committed, not staged");
  free_erase_units = g("ssd_free_erase_units", "SSD erase units free");
  std::vector<SectionSpec> specs;
  std::string err;
  if (parse_sections(cfg.get_str("hybridstore_ssd_sections"), SectionDefaults::from_config(cfg), &specs, &err) == 0)
    for (const auto& sp : specs) {
      if (sp.bypass()) continue;
      int a = set.add("section_" + sp.name + "_allocs", K::kCounter, "allocations in SSD section " + sp.name);
      int s = set.add("section_" + sp.name + "_seals", K::kCounter, "extents sealed in SSD section " + sp.name);
      per_section.push_back({sp.name, {a, s}});
    }

  migration_passes = c("migration_passes", "migrator passes (plan and move)");
  migration_lat = l("migration_lat", "one migrator pass");
  migrate_up_ops = c("migrate_up_ops", "objects moved HDD -> SSD");
  migrate_up_bytes = c("migrate_up_bytes", "bytes moved HDD -> SSD");
  migrate_down_ops = c("migrate_down_ops", "objects moved SSD -> HDD");
  migrate_down_bytes = c("migrate_down_bytes", "bytes moved SSD -> HDD");
  migrate_retries = c("migrate_retries", "migration copies redone because the object was written meanwhile");
  migrate_skipped = c("migrate_skipped", "planned migrations not done (gone, no space, busy)");
  promote_on_read_ops = c("promote_on_read_ops", "objects promoted between passes because reads found them hot on the HDD");
  promote_on_read_bytes = c("promote_on_read_bytes", "bytes those promotions moved");
  tier_absorb_ops = c("tier_absorb_ops", "small random writes into objects on the HDD that the SSD took");
  tier_absorb_bytes = c("tier_absorb_bytes", "bytes those writes put on the SSD");
  destage_ops = c("destage_ops", "objects whose absorbed writes were written back to the HDD");
  destage_bytes = c("destage_bytes", "absorbed bytes those write-backs took to the HDD");
  cleaner_passes = c("cleaner_passes", "SSD cleaner passes that cleaned");
  cleaner_lat = l("cleaner_lat", "one SSD cleaner pass that cleaned");
  cleaner_victims = c("cleaner_victims", "erase units picked for cleaning");
  cleaner_units_freed = c("cleaner_units_freed", "erase units emptied by cleaning");
  cleaner_objects_moved = c("cleaner_objects_moved", "objects whose data the cleaner relocated");
  cleaner_bytes_moved = c("cleaner_bytes_moved", "bytes the cleaner relocated");

  ftl_merges = c("ftl_merges", "FTL merges (raw NAND SSD only)");
  ftl_erases = c("ftl_erases", "NAND block erases (raw NAND SSD only)");
  ftl_pages_copied = c("ftl_pages_copied", "NAND pages copied by merges and relocation (raw NAND SSD only)");
  ftl_host_pages_written = c("ftl_host_pages_written", "NAND pages written for the host (raw NAND SSD only)");
}

CommitterPerf committer_counters(StorePerf* s) {
  CommitterPerf p;
  p.set = &s->set;
  p.txc = s->txc;
  p.groups = s->kv_commit_groups;
  p.commit_lat = s->commit_lat;
  p.kv_queued_lat = s->state_kv_queued_lat;
  p.kv_committing_lat = s->state_kv_committing_lat;
  p.kv_flush_lat = s->kv_flush_lat;
  p.kv_commit_lat = s->kv_commit_lat;
  p.kv_sync_lat = s->kv_sync_lat;
  return p;
}

DeferredPerf deferred_counters(StorePerf* s) {
  DeferredPerf p;
  p.set = &s->set;
  p.write_ops = s->deferred_write_ops;
  p.write_bytes = s->deferred_write_bytes;
  p.ring_ops = s->deferred_ring_ops;
  p.queue_bytes = s->deferred_queue_bytes;
  p.apply_ops = s->deferred_apply_ops;
  p.apply_bytes = s->deferred_apply_bytes;
  p.apply_lat = s->deferred_apply_lat;
  return p;
}

SectionPerf section_counters(StorePerf* perf, const std::vector<std::string>& names) {
  SectionPerf p;
  p.set = &perf->set;
  p.allocs = perf->section_allocs;
  p.seals = perf->section_seals;
  p.write_units = perf->write_units;
  p.write_units_forced = perf->write_units_forced;
  p.free_erase_units = perf->free_erase_units;
  for (const auto& n : names) {
    int a = -1, s = -1;
    for (const auto& [name, ids] : perf->per_section)
      if (name == n) std::tie(a, s) = ids;
    p.section_allocs.push_back(a);
    p.section_seals.push_back(s);
  }
  return p;
}

}  // namespace hybridstore
