// Options of the tiering component (heat tracker, knapsack planner, migrator,
// promotion, absorbed small writes, SFS hotness grouping); each entry documents
// itself in the registry. The device timing models' options are test-only
// (src/testing/test_options.cc).
#include "hsoptions/option_tables.h"

namespace hybridstore {

void add_tiering_options(std::vector<OptionSpec>* v) {
  using T = OptionType;
  // Planner.
  v->push_back({"hybridstore_tier_policy", T::kString, "hro",
                "which objects the migrator keeps on the SSD: hro (benefit f/s*R, hot and "
                "random), hot (access frequency only), lru (most recently accessed), none (no "
                "migration)",
                "", "", {"hro", "hot", "lru", "none"}});
  v->push_back({"hybridstore_tier_ssd_target_ratio", T::kDouble, "0.9",
                "fraction of the SSD tier the planner may fill with migrated objects (the rest "
                "absorbs new writes between migrations)",
                "0", "1"});
  v->push_back({"hybridstore_tier_plan_max_candidates", T::kInt, "10000",
                "the bounded planner's candidate cap (docs/memory.md): a pass keeps at most this many "
                "objects by benefit, as many of the coldest on the faster tier and a few of the most "
                "valuable, about 64 bytes each, and plans over them, holding only those objects during the "
                "pass, so its memory does not grow with the object count; 0 = plan over every object at "
                "once (10,000 all the same when hybridstore_memory_target is set). Its scan reads the onode "
                "records from RocksDB in key ranges, not through the onode cache, which it leaves as it was",
                "0", "1000000000"});
  // Heat tracker.
  v->push_back({"hybridstore_tier_heat_max_objects", T::kInt, "1000000",
                "objects whose heat is tracked (load mode); beyond it the coldest (lowest decayed access "
                "count) are forgotten. About 136 bytes of memory each, plus the key if longer than 15 bytes",
                "1024", "1000000000"});
  v->push_back({"hybridstore_tier_heat_mode", T::kString, "on_demand",
                "where the heat lives (docs/memory.md): on_demand (the default) = the mount reads none, "
                "memory holds the recently accessed objects up to hybridstore_tier_heat_memory and "
                "adds what leaves it to the stored records with RocksDB merges, and a migration pass "
                "reads the records with the onodes; load = every object's record read into memory at "
                "mount (up to hybridstore_tier_heat_max_objects), memory and mount time growing with the "
                "object count",
                "", "", {"load", "on_demand"}});
  v->push_back({"hybridstore_tier_heat_memory", T::kSize, "64M",
                "on_demand heat: the hot set's bytes; the coldest entries go to RocksDB beyond it "
                "(about 140 bytes an object, plus the key if longer than 15 bytes)",
                "64K", ""});
  v->push_back({"hybridstore_tier_heat_window_sec", T::kInt, "86400",
                "length of a heat window: access counts are per window, older windows decay",
                "1", ""});
  v->push_back({"hybridstore_tier_heat_decay", T::kDouble, "0.5",
                "weight of a window's counts per window of age (0 keeps only the current "
                "window, 1 never forgets)",
                "0", "1"});
  v->push_back({"hybridstore_tier_heat_continuation_ms", T::kInt, "500",
                "a request of the same type that starts where the object's last request ended "
                "within this time continues it (sequential); otherwise it counts as random (HRO)",
                "1", "60000"});
  v->push_back({"hybridstore_tier_heat_persist_interval_sec", T::kInt, "60",
                "how often changed heat entries are written to RocksDB (0 = only at umount)",
                "0", ""});
  // Migrator (run by the engine).
  v->push_back({"hybridstore_tier_migrate_interval_sec", T::kInt, "86400",
                "plan and migrate at this interval (0 = no periodic migration)", "0", ""});
  v->push_back({"hybridstore_tier_migrate_idle_ops", T::kInt, "20",
                "the store counts as idle while it serves fewer client ops per second than this "
                "(0 = never idle)",
                "0", ""});
  v->push_back({"hybridstore_tier_migrate_idle_sec", T::kInt, "300",
                "migrate once the store has been idle this long (and not since the last "
                "migration)",
                "1", ""});
  v->push_back({"hybridstore_tier_migrate_bandwidth", T::kSize, "64M",
                "bytes per second the migrator may copy between tiers (0 = unlimited)", "0", ""});
  v->push_back({"hybridstore_tier_promote_min_accesses", T::kInt, "2",
                "a migration pass promotes only objects with at least this many accesses in the "
                "heat window (an object written once and not read since is not hot, and copying "
                "it up costs the HDD a read and takes SSD room small writes need)",
                "0", "1000000"});
  v->push_back({"hybridstore_tier_promote_break_even", T::kSize, "1M",
                "the bytes the HDD streams in the time one random access costs it: an object on "
                "the HDD is promoted (by a pass or on its reads) only once its random requests "
                "in the heat window, each of which cost the HDD a positioning, would have paid "
                "for copying it, (requests - 1) x this >= its size; an object written and read "
                "whole, in order, stays on the HDD, which streams it about as fast (0 = no such "
                "rule)",
                "0", "1G"});
  v->push_back({"hybridstore_tier_promote_hits", T::kInt, "3",
                "an object mostly on the HDD, no larger than hybridstore_tier_promote_max_size, is "
                "promoted to the SSD within a second once a read finds its accesses (reads and "
                "writes) in the current heat window at this count, without waiting for a "
                "migration pass, while the SSD has room above the share kept for new writes (0 = "
                "only passes promote)",
                "0", "1000000"});
  v->push_back({"hybridstore_tier_absorb_max", T::kSize, "64K",
                "a write of at most this many bytes into an object that lies on the HDD, and that "
                "does not continue the object's previous write, goes to the SSD instead (the "
                "object then holds data on both tiers until the migrator writes that data back); "
                "0 = small random writes go to the HDD (deferred) like any other",
                "0", "16M"});
  v->push_back({"hybridstore_tier_absorb", T::kString, "auto",
                "which objects' small writes the SSD absorbs (hybridstore_tier_absorb_max): auto, "
                "those of objects on a rotational device while the SSD is solid-state (as the "
                "kernel or the FTL says; a device nothing is known of counts as its role: the "
                "fastest tier solid-state, the others disks), so that tiers on one kind of device "
                "write in place instead of moving data nowhere faster; always, whatever the "
                "devices are",
                "", "", {"auto", "always"}});
  v->push_back({"hybridstore_tier_absorb_min_free", T::kDouble, "0.05",
                "small writes are absorbed by the SSD only while this fraction of it is free; the "
                "migrator writes absorbed data back to the HDD, coldest objects first, once the "
                "SSD is fuller than hybridstore_tier_ssd_target_ratio",
                "0", "1"});
  v->push_back({"hybridstore_tier_promote_max_size", T::kSize, "1M",
                "largest object promoted on its reads (larger ones wait for a migration pass, "
                "which weighs their size against their heat)",
                "4K", "4G"});
  // SFS hotness grouping of data written to the SSD.
  v->push_back({"hybridstore_sfs_groups", T::kInt, "4",
                "hotness groups for SSD writes (4: hot, warm, cold, read-only); a flash erase "
                "block holds one group only",
                "1", "16"});
  v->push_back({"hybridstore_sfs_refine_iterations", T::kInt, "3",
                "at most this many k-means passes when the group centres are refined", "1", "3"});
}

}  // namespace hybridstore
