// One tier's space: its device, how space on it is handed out and given
// back, how new data reaches it, its checksum block and its counters. The
// store holds one TierSpace per tier and talks to the tiers only through
// this interface; which implementation a tier gets is decided once, by the
// factory below, from what mkfs recorded in the superblock.
//
// Two implementations:
//   ExtentSpace   extents from an ExtentAllocator (a disk tier, or an SSD
//                 made before HFM sections existed); data is written in place.
//   SectionSpace  HFM data sections with recursive segment maps and the SFS
//                 cleaner (a flash tier); new data is staged in the KV batch
//                 and written in whole write units.
// Both keep the persistent allocation bitmap (BitmapFreelist) that fsck
// compares with the objects' extents.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hybridstore/alloc/freelist.h"
#include "hscommon/config.h"
#include "hybridstore/format/onode.h"
#include "hybridstore/format/store_format.h"
#include "hsio/block_device.h"
#include "hybridstore/sections/section_rules.h"

namespace rocksdb {
class DB;
class WriteBatchBase;
}  // namespace rocksdb

namespace hybridstore {

class SsdSections;
class PerfCounterSet;

// How new data reaches a tier's device.
enum class WriteRoute {
  // Staged in the transaction's KV batch when it is allocated, written later
  // in whole write units (flash sections). Every write is a KV record applied
  // in staging order.
  kStaged,
  // Written before the commit, except writes up to hybridstore_deferred_max,
  // which ride in the batch and join a sorted batch later (a disk: a small
  // synchronous write would cost a seek).
  kDeferSmall,
  // Always written before the commit.
  kDirect,
};

// The layout mkfs gives `tier`, from the mkfs options: the SSD tier may be
// raw NAND and may have HFM sections (hybridstore_ssd_kind/_allocator); the
// HDD and the extra tiers are extents on a file or block device.
TierLayout tier_layout(Tier tier, const std::map<std::string, std::string>& mkfs_options);
// The allocation unit mkfs gives a tier of that layout.
uint64_t tier_alloc_unit(Tier tier, const TierLayout& layout, const Config& cfg);
// "nand" or "" (what store probes report as a device's kind).
const char* device_kind_name(DeviceKind kind);

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
  using Stage = std::function<void(const std::vector<PExtent>&)>;
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
    double hotness = 0;
    uint64_t owner = 0;   // the object's hash: the cleaner finds live data by it
    // A staged tier may hand whole write units over for writing now, from
    // the data in hand, instead of staging them (PExtent::direct).
    bool direct = false;
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
  WriteRoute route() const { return route_; }
  const BitmapFreelist& freelist() const { return freelist_; }

  // Freed space may be handed out again as soon as the freeing transaction
  // commits. Elsewhere it waits for the deferred writer: a deferred write
  // staged before the free may still land there.
  bool reuse_at_commit() const { return route_ == WriteRoute::kStaged; }
  // Whether small overwrites go to new space instead of in place:
  // hybridstore_ssd_small_overwrites = `mode` (auto: on raw flash, where an
  // in-place page write costs the FTL a merge). Only a staged tier can: a
  // redirected write elsewhere would reach the device before the commit.
  void set_small_overwrites(const std::string& mode);
  bool redirects_small_overwrites() const { return redirect_small_overwrites_; }

  // Mount: the device checks that depend on the layout.
  virtual int check_device(std::string* error) const;
  // Mount: builds the in-memory state from the allocation bitmap and the
  // tier's own records.
  virtual int load(rocksdb::DB* db, const Config& cfg, std::string* error) = 0;

  // Space for `req.length` bytes: all of it or nothing (-ENOSPC). Staged
  // tiers call `stage` with the pieces under their lock, before a write unit
  // they complete can be handed out; others do not call it.
  virtual int allocate(const Request& req, const Stage& stage, std::vector<PExtent>* out) = 0;
  // Gives space back in memory (the bitmap change rode in the transaction).
  virtual void release(uint64_t offset, uint64_t length) = 0;
  // True when an object belongs on the next slower tier whatever its heat
  // (a bypass section).
  virtual bool bypass(const ObjectPlacementKey& key, uint64_t object_size) const;

  virtual Usage usage() const = 0;
  // Every run the in-memory state holds free (fsck).
  virtual void for_each_free(const Range& fn) const = 0;
  // The first inconsistency in the tier's own records, or "".
  virtual std::string verify() const;

  // Commit-ordered state (a staged tier's allocator records): drained into
  // `batch` with the write units completed since the last drain. The returned
  // lock is held until `batch` is submitted, so drained states commit in the
  // order they were drained. An empty lock when the tier keeps none.
  virtual bool keeps_state() const;
  virtual std::unique_lock<std::mutex> drain_state(Drain how, rocksdb::WriteBatchBase* batch,
                                                   std::vector<Region>* regions);

  // The HFM sections behind a flash tier (the cleaner, reports and section
  // counters work on them); null for other tiers.
  virtual SsdSections* sections() const;

 protected:
  TierSpace(Tier tier, TierLayout layout, std::unique_ptr<BlockDevice> dev, const Superblock& super,
            WriteRoute route);
  // Calls `used(offset, length)` for each run the allocation bitmap marks.
  int load_bitmap(rocksdb::DB* db, const Range& used, std::string* error) const;

 private:
  const Tier tier_;
  const TierLayout layout_;
  std::unique_ptr<BlockDevice> dev_;
  const uint64_t size_, reserved_, unit_;
  const uint32_t csum_block_;
  const WriteRoute route_;
  BitmapFreelist freelist_;
  bool redirect_small_overwrites_ = false;
};

// Builds the space of `tier` over its opened device, from the superblock.
std::unique_ptr<TierSpace> make_tier_space(Tier tier, std::unique_ptr<BlockDevice> dev, const Superblock& super);

// mkfs: writes the initial records of a tier's space management into `batch`.
int format_tier_space(Tier tier, const TierLayout& layout, const Config& cfg, const Superblock& super,
                      rocksdb::WriteBatchBase* batch, std::string* error);

}  // namespace hybridstore
