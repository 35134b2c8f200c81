// The values the store's API hands out and takes: statistics, what a store
// directory holds, fsck's report, read flags, read pieces and the omap
// iterator. Plain types, apart from the API (hybrid_store.h), so that the
// store's parts, which fill them in, need not see the facade.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hybridstore/format/tier.h"

namespace hybridstore {

// A holder of memory as Ceph's dump_mempools shows one (HybridStore::mempools).
struct MemPoolStat {
  std::string name;
  uint64_t items = 0;
  uint64_t bytes = 0;
};

struct TierStats {
  uint64_t total = 0;      // allocatable bytes
  uint64_t free = 0;
  uint64_t allocated = 0;  // bytes objects hold
  uint64_t consumed = 0;   // allocated plus space held but not reusable yet (SSD sections)
  uint64_t unit = 0;
  double fragmentation = 0;
  std::string device;
  std::string backend;
};

struct StoreStats {
  uint32_t format_version = 0;  // of the store on disk
  int tiers = 2;  // tier[0 .. tiers-1] are filled, by tier id
  TierOrder order{Tier::kSsd, Tier::kHdd};  // by rank, fastest first
  PerTier<TierStats> tier;
  uint64_t objects = 0;
  uint64_t data_bytes = 0;  // sum of object sizes
  uint64_t transactions_committed = 0;
  uint64_t commit_groups = 0;
  uint64_t deferred_staged = 0;         // deferred writes acknowledged through RocksDB
  uint64_t deferred_in_ring = 0;        // ... of which rode in the commit journal instead (format 6)
  uint64_t deferred_applied = 0;        // ... and since written to their devices
  uint64_t deferred_device_writes = 0;  // device writes those took (adjacent ones merged)
  uint64_t deferred_pending_bytes = 0;
  // What the mount wrote of deferred writes acknowledged before it (after a
  // crash): pieces from the commit journal's ring, and D records.
  uint64_t mount_replayed_from_ring = 0;
  uint64_t mount_replayed_from_records = 0;
  // The onode deltas in the ring at mount (format 7): objects' changes the
  // stored onode lacked, and those it had already.
  uint64_t mount_onode_deltas_applied = 0;
  uint64_t mount_onode_deltas_included = 0;
  uint64_t omap_bytes = 0;      // approximate: RocksDB's size of the omap key range
  uint64_t metadata_bytes = 0;  // the rest of RocksDB (onodes, allocation state, logs)
  // RocksDB and the commit journal in the KV file system on the fastest
  // tier (hybridstore_kv_location=device): the bytes of the tier it owns,
  // and of those what its files, ring and log hold (the tier's total counts
  // the owned bytes; its free and allocated bytes do not).
  bool kv_on_device = false;
  uint64_t commit_journal_bytes = 0;  // the commit journal's ring (0: none)
  uint64_t kvfs_owned = 0;
  uint64_t kvfs_used = 0;
  bool read_only = false;       // after an I/O error (see README's guarantees)
};

// Read flags (HybridStore::read).
enum ReadFlags : uint32_t {
  // Not a client access: scrub, recovery, backfill. The object's heat is left
  // alone, so background reads do not pull cold data onto the SSD.
  kReadNoHeat = 1,
  // From the media: the data cache neither answers nor keeps this read
  // (deep scrub checks what the disk holds; background reads do not push
  // clients' data out).
  kReadUncached = 2,
};

// What a store directory holds, read without mounting it (what the Ceph
// adapter answers before mount: devices, rotational, min_alloc_size).
struct StoreProbe {
  struct Device {
    std::string path;      // as configured or <store>/block.{ssd,hdd,tier2,tier3}
    std::string resolved;  // symlinks followed
    bool exists = false;
    bool is_block = false;
    std::string kind;      // "block", "file" or "nand" (raw flash through the FTL)
    uint64_t size = 0;
    bool rotational = true;
    // Kernel devices behind it ("sdb", "nvme0n1", "loop3"): the device
    // itself, or the one holding the file.
    std::vector<std::string> kernel_devices;
  };
  int tiers = 2;  // tier[0 .. tiers-1], by tier id
  Tier slowest = Tier::kHdd;  // the capacity tier
  PerTier<Device> tier;
  uint32_t format_version = 0;  // of the superblock on disk (0: none read)
  bool exists = false;          // mkfs has completed here
  bool in_use = false;          // another process has it mounted
  std::string fsid;
  uint64_t min_alloc_size = 0;  // the finest allocation unit of either tier
  bool kv_rotational = true;    // the filesystem RocksDB lives on
};

// What `HybridStore::prime_dir` makes a store directory from (docs/kvfs.md
// 5.5).
struct PrimeRequest {
  std::string dir;
  // The SSD first; the other tiers' devices in any order. A tier without
  // one here is found through the SSD label's path_block.<tier> hint.
  std::vector<std::string> devices;
  // Link the SSD only, even if other tiers' devices cannot be found.
  bool ssd_only = false;
};

// HybridStore::move_kv_to_device (docs/kvfs.md 7.3).
struct MoveKvOptions {
  // What is checked before the commit: "files" (crc32c of every copy
  // against its source), "keys" (that, and every key and value of the two
  // databases compared) or "none".
  std::string verify = "files";
  // Bytes lent to the KV file system; 0: the automatic size. Never less
  // than the copy needs (1.25 times the database, the ring, two log
  // segments).
  uint64_t kvfs_size = 0;
  // Tests: called at the end of each step M1..M9 (the step's number), while
  // the move's devices are still open, so that a power cut can fall between
  // steps; false stops the move there (-EINTR), as if its process died.
  std::function<bool(int step)> after_step;
};

struct MoveKvReport {
  uint64_t db_bytes = 0;   // D: the database's files, as copied
  uint64_t files = 0;      // files copied
  uint64_t kvfs_bytes = 0;  // K: what the KV file system was lent
  uint64_t keys_compared = 0;  // verify=keys
  std::vector<std::string> meta_imported;  // label meta keys taken from the directory's files
};

struct FsckReport {
  uint64_t errors = 0;
  uint64_t warnings = 0;
  uint64_t collections = 0;
  uint64_t objects = 0;
  uint64_t extents = 0;
  uint64_t extent_shards = 0;  // extent maps stored in shards: the shard records
  uint64_t omap_entries = 0;
  uint64_t bytes_verified = 0;  // deep only
  PerTier<uint64_t> leaked_bytes;
  // RocksDB on the fastest tier: the bytes its KV file system owns and what
  // its files, ring and log hold (0 for a directory store).
  uint64_t kvfs_owned = 0;
  uint64_t kvfs_used = 0;
  // kvfs files RocksDB does not use (repair deletes them), and the commit
  // journal's ring as a mount would read it: the records of the walk from
  // the tail RocksDB keeps, the last number it reached, and the ring
  // position where it stopped (where the next record goes).
  uint64_t kvfs_orphans = 0;
  uint64_t kvfs_ring_records = 0;
  uint64_t kvfs_ring_seq = 0;
  uint64_t kvfs_ring_walk_end = 0;
  std::vector<std::string> problems;  // one line each
};

// The KV file system under a device store's RocksDB as read from its SSD
// without mounting and without writing (HybridStore::kvfs_inspect, the
// tool's `kvfs` commands). Ranges are (device offset, length).
using DeviceRange = std::pair<uint64_t, uint64_t>;
struct KvFsFileView {
  std::string dir, name;
  uint64_t ino = 0, size = 0, mtime = 0;
  std::vector<DeviceRange> extents;  // in file order
  bool inline_tail = false;          // its last partial block is in the log
};
struct KvFsSlotView {
  bool valid = false;  // decodes and belongs to this kvfs
  bool blank = false;  // all zeros: never written
  std::string why;     // when not valid
  uint64_t generation = 0, log_id = 0, log_first_seq = 0, created_us = 0;
  DeviceRange log_segment;
};
struct KvFsView {
  std::string device;  // the SSD's path
  std::string kvfs_uuid;
  uint64_t device_size = 0, head = 0;
  uint64_t block = 0, alloc_unit = 0, lend_unit = 0;  // b, A, G
  int current_slot = -1;
  uint64_t generation = 0;
  std::vector<KvFsSlotView> slots;
  std::vector<DeviceRange> chunks, journal, log_segments;
  uint64_t owned = 0, used = 0, free = 0;  // used: files, ring and log
  std::vector<KvFsFileView> files;
  std::vector<std::string> log;  // with KvFsInspectRequest::log: "seq: RECORD ..."
  std::string damage;  // where the log stopped at damage; "" when it replayed to its end
};
struct KvFsInspectRequest {
  bool log = false;
  // Not empty: every file is copied to export_dir/<dir>/<name> (the
  // directories are made; existing files are replaced).
  std::string export_dir;
};

// Iterates one object's omap keys in byte order (never the header).
class OmapIterator {
 public:
  virtual ~OmapIterator() = default;
  virtual void seek_to_first() = 0;
  virtual void lower_bound(const std::string& key) = 0;  // first key >= key
  virtual void upper_bound(const std::string& key) = 0;  // first key > key
  virtual bool valid() const = 0;
  virtual void next() = 0;
  virtual std::string key() const = 0;
  virtual std::string value() const = 0;
  virtual int status() const = 0;  // 0 or -EIO
};

// A range of an object's data as the data cache holds it
// (HybridStore::read_shared): the piece keeps its memory alive while held,
// and nothing changes it.
struct ReadPiece {
  std::shared_ptr<const char> owner;
  const char* data;
  uint64_t len;
};

}  // namespace hybridstore
