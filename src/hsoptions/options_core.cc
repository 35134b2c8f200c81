// Options of the engine core: devices, allocation, placement, RocksDB, caches.
#include "hsoptions/option_tables.h"

namespace hybridstore {

// Long on purpose: a table, one entry per option and nothing else; cut up, the core's options would scatter.
void add_core_options(std::vector<OptionSpec>* v) {
  using T = OptionType;
  v->push_back({"hybridstore_ssd_path", T::kString, "",
                "SSD device (file or block device); empty means <store>/block.ssd"});
  v->push_back({"hybridstore_hdd_path", T::kString, "",
                "HDD device (file or block device); empty means <store>/block.hdd"});
  v->push_back({"hybridstore_block_create", T::kBool, "true",
                "mkfs creates missing device files as sparse files of the configured size"});
  v->push_back({"hybridstore_mkfs_overwrite", T::kBool, "false",
                "mkfs writes over devices that carry a store already (a label of a finished mkfs); "
                "without it mkfs refuses them, so a data directory made again cannot wipe a live store's "
                "devices (hybridstore-tool zap clears a device)"});
  v->push_back({"hybridstore_block_preallocate", T::kString, "auto",
                "how mkfs lays out a device file it creates: none (sparse), fallocate (blocks "
                "reserved, unwritten), zero (written with zeros, as fio lays out its files; "
                "the first write to a block then changes no filesystem metadata, so a flush "
                "after it is a plain device flush), or auto: zero for the file that will hold "
                "RocksDB and the commit journal (hybridstore_kv_location=device), none for "
                "the others", "", "", {"auto", "none", "fallocate", "zero"}});
  v->push_back({"hybridstore_ssd_size", T::kSize, "8G",
                "size of a device file mkfs creates for the SSD tier", "64M", "", {}, true});
  v->push_back({"hybridstore_hdd_size", T::kSize, "64G",
                "size of a device file mkfs creates for the HDD tier", "64M", "", {}, true});
  v->push_back({"hybridstore_ssd_allocator", T::kString, "hfm",
                "how the SSD tier allocates: hfm (data sections with segment maps, "
                "hybridstore_ssd_* section options) or extent (plain extents of "
                "hybridstore_ssd_alloc_unit)", "", "", {"hfm", "extent"}, true});
  v->push_back({"hybridstore_ssd_alloc_unit", T::kSize, "4K",
                "allocation unit of the SSD tier when hybridstore_ssd_allocator=extent", "4K", "1M", {},
                true, true});
  v->push_back({"hybridstore_hdd_alloc_unit", T::kSize, "4K",
                "allocation unit of the HDD tier", "4K", "4M", {}, true, true});
  v->push_back({"hybridstore_tiers", T::kInt, "2",
                "tiers of the store, fastest first: the SSD (hybridstore_ssd_*), then the extra "
                "tiers hybridstore_tier2_* and hybridstore_tier3_* in that order, then the HDD "
                "(hybridstore_hdd_*). New objects go to the fastest or, when large, the slowest "
                "tier; migration moves objects between neighbours in that order",
                "2", "4", {}, true});
  for (int t = 2; t <= 3; ++t) {
    const std::string n = "hybridstore_tier" + std::to_string(t);
    v->push_back({n + "_path", T::kString, "",
                  "device of extra tier " + std::to_string(t) + " (file or block device), used when "
                  "hybridstore_tiers > " + std::to_string(t) + "; empty means <store>/block.tier" +
                  std::to_string(t)});
    v->push_back({n + "_size", T::kSize, "16G",
                  "size of a device file mkfs creates for extra tier " + std::to_string(t), "64M", "", {},
                  true});
    v->push_back({n + "_alloc_unit", T::kSize, "4K",
                  "allocation unit of extra tier " + std::to_string(t), "4K", "1M", {}, true, true});
  }
  v->push_back({"hybridstore_io_backend", T::kString, "auto",
                "device I/O: io_uring, plain pread/pwrite, or io_uring when available",
                "", "", {"auto", "uring", "posix"}});
  v->push_back({"hybridstore_direct_io", T::kBool, "true",
                "open devices with O_DIRECT where the filesystem allows it"});
  v->push_back({"hybridstore_uring_depth", T::kInt, "128", "io_uring queue depth per device",
                "8", "4096", {}, false, true});
  v->push_back({"hybridstore_placement_hdd_threshold", T::kSize, "1M",
                "objects whose size or expected size reaches this are placed on the HDD",
                "4K", ""});
  v->push_back({"hybridstore_max_object_size", T::kSize, "4G",
                "largest object offset+length accepted (writes past it fail with E2BIG)", "1M",
                "4G"});
  v->push_back({"hybridstore_csum_block", T::kSize, "4K",
                "bytes covered by one crc32c of object data", "512", "1M", {}, true, true});
  v->push_back({"hybridstore_deferred_max", T::kSize, "64K",
                "writes smaller than this into space an object owns, and small writes to the HDD, "
                "are deferred: acknowledged through RocksDB and applied to the device later in "
                "batches (BlueStore's bluestore_prefer_deferred_size_hdd draws the same line); "
                "larger ones go to new space, written before the commit",
                "0", "16M"});
  v->push_back({"hybridstore_extent_map_inline_max", T::kSize, "1K",
                "an object's extent map whose encoding is larger than this is stored in shards of "
                "256 KiB of the object, each under a key of its own, and new data is cut into "
                "extents at those boundaries: a small overwrite of a large object then rewrites "
                "one shard instead of every checksum of the object. 0: maps stay in the onode "
                "(and extents are not cut). Both kinds of onode read either way",
                "0", "1M"});
  v->push_back({"hybridstore_ssd_small_overwrites", T::kString, "auto",
                "how an overwrite of SSD section data no larger than hybridstore_deferred_max is "
                "written: in-place (deferred, applied where the data lies), redirect (to new "
                "extents, staged and written out in whole units like new data; the old space is "
                "freed), or auto: redirect on raw NAND, where an in-place write costs the FTL a "
                "read-modify-write of flash pages and a log-block merge, in place otherwise",
                "", "", {"auto", "in-place", "redirect"}});
  v->push_back({"hybridstore_deferred_batch_bytes", T::kSize, "4M",
                "deferred writes are applied once this much is committed", "64K", "1G"});
  // One thread queueing 16 sequential 4 MiB writes waited for each write
  // before preparing the next: 243 IOPS against BlueStore's 447 (fio's
  // ObjectStore engine, docs/benchmarks.md).
  v->push_back({"hybridstore_async_write_min", T::kSize, "64K",
                "a transaction's writes to new space on a tier without staging, from this many bytes "
                "on, go on while the transaction is queued (its commit waits for them; reads of "
                "what they cover wait too); 0 = every write completes before queue_transaction returns",
                "0", ""});
  v->push_back({"hybridstore_async_write_threads", T::kInt, "4",
                "threads per device writing hybridstore_async_write_min writes (each write one of "
                "them, so this many at once on the device); 0 = none, writes complete before "
                "queue_transaction returns",
                "0", "64"});
  v->push_back({"hybridstore_deferred_max_delay_ms", T::kInt, "20",
                "...or once the oldest committed deferred write is this old", "1", "60000"});
  v->push_back({"hybridstore_deferred_max_pending", T::kSize, "256M",
                "transactions wait while this many deferred bytes are not yet applied", "1M", ""});
  v->push_back({"hybridstore_commit_journal_size", T::kSize, "16M",
                "ring file <store>/journal that makes each commit group durable with one write and "
                "flush instead of a RocksDB WAL sync; a read-write mount with this option set makes a ring "
                "of another size again at this one once it has replayed it; 0 = sync RocksDB per group (a journal left "
                "by an earlier mount is still replayed)",
                "0", "1G"});
  v->push_back({"hybridstore_commit_checkpointer", T::kBool, "true",
                "a thread syncs RocksDB's WAL to free commit journal ring space, off the commit path "
                "(docs/small-writes.md 6.2); false: the group that needs the space syncs inline, as "
                "before (for A/B runs)"});
  v->push_back({"hybridstore_small_write_journal", T::kString, "data",
                "data: small in-place overwrites (whole 4 KiB blocks) ride in the commit journal's "
                "record instead of a deferred record in RocksDB, and reach their place later "
                "(docs/small-writes.md step 5); makes the store format 6 at mkfs or at its next "
                "read-write mount, which older builds refuse; left at this default, it yields to "
                "hybridstore_commit_journal_size=0. off: through RocksDB as a deferred record, "
                "the store's format unchanged. on: as data, and a transaction's changes to objects it "
                "finds in the onode cache (checksums of overwritten blocks, attributes, sizes) ride in "
                "the record as onode deltas instead of onode puts into RocksDB, which a checkpointer "
                "writes later (format 7, step 6 of docs/small-writes.md); older builds refuse a "
                "format-7 store",
                "", "", {"off", "data", "on"}});
  v->push_back({"hybridstore_small_write_checkpoint_ms", T::kInt, "1000",
                "with hybridstore_small_write_journal=on: how often onodes that only the commit "
                "journal's deltas carry are written to RocksDB (sooner when the ring's needed span "
                "passes half of it, or dirty onodes half their bound)",
                "10", "600000"});
  v->push_back({"hybridstore_small_write_dirty_max", T::kInt, "65536",
                "with hybridstore_small_write_journal=on: onodes that may wait in memory for a "
                "checkpoint; past it, transactions wait for one",
                "16", ""});
  v->push_back({"hybridstore_small_write_dirty_bytes", T::kSize, "64M",
                "with hybridstore_small_write_journal=on: heap the onodes waiting in memory for a "
                "checkpoint may hold (the onode cache cannot evict them); a round starts at half of "
                "it, and past it transactions wait for one",
                "1M", ""});
  v->push_back({"hybridstore_commit_lanes", T::kInt, "4",
                "commit groups in flight at once through the commit journal (their flushes overlap; "
                "they are acknowledged in order)",
                "1", "16"});
  v->push_back({"hybridstore_onode_cache_size", T::kInt, "200000",
                "onodes kept in memory across all collections (in up to 16 shards by object hash, each "
                "evicting its least recently used)",
                "64", ""});
  v->push_back({"hybridstore_onode_cache_bytes", T::kSize, "0",
                "bound on the onode cache's memory, from an estimate of each onode's heap (its extent "
                "map and attributes, the entry and key); evicts least recently used to stay within "
                "it, with hybridstore_onode_cache_size still the bound on the count; 0 = count only",
                "0", ""});
  // RocksDB's own 8 MiB held the table blocks of about 30,000 onodes: past
  // that, a read the onode cache missed also read and checksummed a table
  // block (NAND random reads, 140,000 objects: 8.9 us of CPU a read at 8 MiB,
  // 7.0 at 32 MiB and above; docs/benchmarks.md, items 18 and 29).
  v->push_back({"hybridstore_data_cache_size", T::kSize, "1G",
                "object data kept in memory after it was read, in 4 KiB blocks shared by the "
                "tiers, least recently used out (the devices are opened O_DIRECT, so the kernel "
                "caches none); writes drop what they cover; 0 = none",
                "0", ""});
  v->push_back({"hybridstore_kv_block_cache_size", T::kSize, "128M",
                "RocksDB block cache (LRU, grows as used): table blocks of onodes and omap the onode "
                "cache misses (RocksDB's own default is 8 MiB); left at its default, 1 GiB for a store "
                "whose RocksDB is on the device, where the kernel's page cache no longer holds its tables",
                "1M", ""});
  v->push_back({"hybridstore_memory_target", T::kSize, "0",
                "the process's heap the store aims at (as osd_memory_target): the onode cache, the "
                "RocksDB block cache and the data cache (when hybridstore_data_cache_size is not 0) "
                "are sized from what the rest leaves at mount, in place of "
                "hybridstore_onode_cache_bytes and hybridstore_kv_block_cache_size, then shrunk "
                "while the heap (tcmalloc's allocated bytes, else mallinfo2) is above it and grown "
                "back below, every second, each cache kept at or above its minimum (docs/memory.md); "
                "0 = off, each cache sized by its own option",
                "0", ""});
  v->push_back({"hybridstore_rocksdb_options", T::kString,
                "write_buffer_size=64M;max_write_buffer_number=4;compression=kNoCompression",
                "RocksDB options string (RocksDB's GetOptionsFromString format)"});
  v->push_back({"hybridstore_fsck_on_mount", T::kBool, "false", "run a shallow fsck at mount"});
  v->push_back({"hybridstore_fsck_on_umount", T::kBool, "false", "run a shallow fsck at umount"});
  v->push_back({"hybridstore_log_level", T::kString, "warn", "log verbosity", "", "",
                {"error", "warn", "info", "debug"}});
  v->push_back({"hybridstore_log_file", T::kString, "", "log file; empty means stderr"});
}

}  // namespace hybridstore
