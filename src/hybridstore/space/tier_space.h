// One tier's space: its device, how space on it is handed out and given
// back, how new data reaches it, its checksum block, its cleaner and its
// counters. The store holds one TierSpace per tier and talks to the tiers
// only through this interface; which implementation a tier gets is decided
// once, by the factory below, from what mkfs recorded in the superblock.
//
// Two implementations:
//   ExtentSpace   extents from an ExtentAllocator (a disk tier, or an SSD
//                 made before HFM sections existed); data is written in place,
//                 small writes to the slowest tier deferred.
//   SectionSpace  HFM data sections with recursive segment maps and the SFS
//                 cleaner (a flash tier); new data is staged in the KV batch
//                 and written in whole write units.
// Both keep the persistent allocation bitmap (BitmapFreelist) that fsck
// compares with the objects' extents.
//
// What differs between tiers is decided here, by the space, never by the
// store testing a tier's name or device kind: how new data is written
// (write_new), whether small overwrites stay in place, when freed space may
// be reused, whether a move rewrites an object whole, and whether the tier
// needs a cleaner.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hybridstore/alloc/allocator.h"
#include "hybridstore/alloc/freelist.h"
#include "hscommon/config.h"
#include "hybridstore/format/onode.h"
#include "hybridstore/format/placement_key.h"
#include "hybridstore/format/store_format.h"
#include "hsio/block_device.h"
#include "hybridstore/tier/tier_cleaner.h"

namespace rocksdb {
class DB;
class WriteBatchBase;
}  // namespace rocksdb

namespace hybridstore {

class DeferredWriter;
class PerfCounterSet;
struct SectionPerf;

// One device write of a transaction's new data, made once every op of the
// transaction succeeded. The space is new: nothing refers to it until the
// transaction commits.
struct TierWrite {
  Tier tier;
  uint64_t offset;
  const char* data;
  uint64_t len;
  // Must be on the device before the transaction is queued: that is what
  // orders it against the tier's older records (a staged tier's whole write
  // units, DeferredWriter::range_quiet). Other writes may go on while the
  // transaction is queued; its commit waits for them.
  bool before_queue = false;
};

// Where a space puts a transaction's new data: records ride in the
// transaction's `batch` (staged with `deferred`, their numbers appended to
// `records`), device writes wait in `writes`.
struct TxnWrites {
  rocksdb::WriteBatchBase* batch;
  DeferredWriter* deferred;
  std::vector<uint64_t>* records;
  std::vector<TierWrite>* writes;
};

// The store's counters a space updates, given once it is loaded.
struct SpaceCounters {
  PerfCounterSet* set = nullptr;
  int direct_unit_bytes = -1;  // whole write units written before their commit
  // The ids of the counters of the sections named, in that order.
  std::function<SectionPerf(const std::vector<std::string>& names)> sections;
};

// The layout mkfs gives `tier`, from the mkfs options: the SSD tier may be
// raw NAND and may have HFM sections (hybridstore_ssd_kind/_allocator); the
// HDD and the extra tiers are extents on a file or block device.
TierLayout tier_layout(Tier tier, const std::map<std::string, std::string>& mkfs_options);
// The allocation unit mkfs gives a tier of that layout.
uint64_t tier_alloc_unit(Tier tier, const TierLayout& layout, const Config& cfg);
// "nand" or "" (what store probes report as a device's kind).
const char* device_kind_name(DeviceKind kind);
// The media the layout alone implies: raw flash behind the FTL is
// solid-state whatever disk holds its file; of a file or block device only
// the kernel knows (kUnknown).
Media layout_media(const TierLayout& layout);

// Counters the NAND device keeps (the FTL's merges, erases, page copies).
struct NandCounters {
  PerfCounterSet* set = nullptr;
  int merges = -1, erases = -1, pages_copied = -1, host_pages_written = -1;
};

// Opens (with `create`, mkfs: creates) the device of a tier.
std::unique_ptr<BlockDevice> open_tier_device(const TierLayout& layout, const Config& cfg, const std::string& path,
                                              const DeviceOpenOptions& options, bool create,
                                              const NandCounters* counters, std::string* error);

class TierSpace {
 public:
  using Range = std::function<void(uint64_t offset, uint64_t length)>;
  struct Region {
    uint64_t begin, end;  // device bytes, one whole write unit
  };
  enum class Drain { kCommit, kTick, kFlush };

  struct Request {
    ObjectPlacementKey key;
    uint64_t object_size = 0;
    uint64_t length = 0;  // a multiple of unit()
    uint64_t hint = 0;    // device offset the new space should follow (0 = none)
    uint64_t owner = 0;   // the object's hash: the cleaner finds live data by it
    // The object's hotness, asked only by a space that groups data by it.
    std::function<double()> hotness;
  };

  struct Usage {
    uint64_t total = 0;      // bytes after the reserved head
    uint64_t free = 0;       // what can still be handed out
    uint64_t allocated = 0;  // live object data
    uint64_t consumed = 0;   // allocated plus space held but not yet reusable
    double fragmentation = 0;
  };

  virtual ~TierSpace();
  TierSpace(const TierSpace&) = delete;
  TierSpace& operator=(const TierSpace&) = delete;

  Tier tier() const { return tier_; }
  BlockDevice* device() const { return dev_.get(); }
  const TierLayout& layout() const { return layout_; }
  uint64_t size() const { return size_; }
  uint64_t reserved() const { return reserved_; }
  uint64_t unit() const { return unit_; }
  uint32_t csum_block() const { return csum_block_; }
  const BitmapFreelist& freelist() const { return freelist_; }

  // Mount: the options that shape how the space writes
  // (hybridstore_deferred_max, hybridstore_ssd_small_overwrites,
  // hybridstore_ssd_direct_units).
  virtual void configure(const Config& cfg);
  // Mount: the device checks that depend on the layout.
  virtual int check_device(std::string* error) const;
  // Mount: builds the in-memory state from the allocation bitmap and the
  // tier's own records. `lent`: the ranges the KV file system owns (its log
  // is their only record), neither free nor object data; -EIO when object
  // data the bitmap marks lies in one (a section tier tells).
  virtual int load(rocksdb::DB* db, const Config& cfg, const std::vector<Interval>& lent, std::string* error) = 0;
  // Mount, once loaded: the counters it updates.
  virtual void set_counters(const SpaceCounters& counters);

  // New space for `req.length` bytes of `data`, all of it or nothing
  // (-ENOSPC), and the data handed to `to` the way this tier takes it:
  // device writes before the commit, records applied in place later, or
  // records held until their write unit is complete. `data` must stay
  // valid until the writes are made.
  virtual int write_new(const Request& req, const char* data, const TxnWrites& to, std::vector<PExtent>* out) = 0;
  // Whether a write of `len` bytes over data this tier already holds goes
  // where that data lies, as a deferred record applied after the commit;
  // otherwise it goes to new space like new data.
  virtual bool overwrites_in_place(uint64_t len) const;
  // Freed space may be handed out again as soon as the freeing transaction
  // commits. Elsewhere it waits for the deferred writer: a deferred write
  // staged before the free may still land there.
  virtual bool reuse_at_commit() const;
  // A move of an object to this tier rewrites all of it, not only what lies
  // elsewhere: on a staged tier one contiguous allocation takes whole write
  // units (written at once), where the pieces between a few blocks already
  // there (small writes the tier absorbed) would each be staged apart.
  virtual bool moves_rewrite_whole() const;
  // Gives space back in memory (the bitmap change rode in the transaction).
  virtual void release(uint64_t offset, uint64_t length) = 0;
  // True when an object belongs on the next slower tier whatever its heat
  // (a bypass section).
  virtual bool bypass(const ObjectPlacementKey& key, uint64_t object_size) const;

  // Lending to the KV file system (docs/kvfs.md 2.5). Thread-safe, and a
  // lend never waits for a transaction: it takes only the allocator's own
  // lock (an extent tier) or the pool's (a section tier).
  // G: what lend() hands out is made of G-aligned multiples of it.
  virtual uint64_t lend_unit() const = 0;
  // Up to `want` bytes (rounded down to G, at least G), in G-aligned
  // intervals in offset order; -ENOSPC when the tier has no such space, or
  // -EINVAL for less than G. The floor does not apply.
  virtual int lend(uint64_t want, std::vector<Interval>* out) = 0;
  // Ranges lend() handed out, free again.
  virtual void take_back(const std::vector<Interval>& ranges) = 0;
  // At most what lend() could hand out now, floor included: free bytes in
  // whole G (an extent tier does not look for G-aligned runs) or free
  // whole erase units (a section tier).
  virtual uint64_t lendable() const = 0;
  // New object data may not leave less than `bytes` free: the kvfs grows
  // into it. usage().free leaves it out.
  virtual void set_floor(uint64_t bytes) = 0;
  virtual uint64_t floor() const = 0;
  // What is lent now (tests, fsck, the migrator's room for objects).
  virtual std::vector<Interval> lent() const = 0;

  virtual Usage usage() const = 0;
  // Every run the in-memory state holds free (fsck); lent ranges are not.
  virtual void for_each_free(const Range& fn) const = 0;
  // The first inconsistency in the tier's own records, or "".
  virtual std::string verify() const;
  // What the space holds, for people (the tool's sections report); "" when
  // it has nothing to say beyond usage().
  virtual std::string report();
  // The heap the space's in-memory state holds, for the store's mempools:
  // items (what it counts them in) and bytes; zeros where it is small.
  virtual void memory(uint64_t* items, uint64_t* bytes);

  // Commit-ordered state (a staged tier's allocator records): drained into
  // `batch` with the write units completed since the last drain. The returned
  // lock is held until `batch` is submitted, so drained states commit in the
  // order they were drained. An empty lock when the tier keeps none.
  virtual bool keeps_state() const;
  virtual std::unique_lock<std::mutex> drain_state(Drain how, rocksdb::WriteBatchBase* batch,
                                                   std::vector<Region>* regions);

  // The cleaner a space needs when what it frees is not reusable until live
  // data is moved out (HFM sections); null for a space that needs none.
  // `store` outlives the cleaner, and the cleaner outlives no mount.
  virtual std::unique_ptr<TierCleaner> make_cleaner(TierCleaner::Store* store);

 protected:
  TierSpace(Tier tier, TierLayout layout, std::unique_ptr<BlockDevice> dev, const Superblock& super);
  // Calls `used(offset, length)` for each run the allocation bitmap marks.
  int load_bitmap(rocksdb::DB* db, const Range& used, std::string* error) const;

 private:
  const Tier tier_;
  const TierLayout layout_;
  std::unique_ptr<BlockDevice> dev_;
  const uint64_t size_, reserved_, unit_;
  const uint32_t csum_block_;
  BitmapFreelist freelist_;
};

// Builds the space of `tier` over its opened device, from the superblock.
std::unique_ptr<TierSpace> make_tier_space(Tier tier, std::unique_ptr<BlockDevice> dev, const Superblock& super);

// mkfs: writes the initial records of a tier's space management into `batch`.
int format_tier_space(Tier tier, const Config& cfg, const Superblock& super, rocksdb::WriteBatchBase* batch,
                      std::string* error);

}  // namespace hybridstore
