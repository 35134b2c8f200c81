// The SSD tier allocated through HFM data sections: the engine's side of
// section_allocator.h.
//
// An object's SSD data is placed by its section (static rule or size, see
// section_rules.h) at the block the section's segment map chooses. Extents
// are staged: their data travels as held deferred records (durable in
// RocksDB, readable from the overlay) until the allocator reports their write
// unit complete; then the engine writes the unit whole, in one aligned I/O.
// Pieces that land in holes of written extents are ordinary deferred writes.
//
// The allocator's state is persisted as records under the `A` key space,
// drained into the batch of the transaction that changed it. Transactions
// drain and submit in one order (lock() is held across both), so the last
// committed state always includes every committed allocation. After a crash
// it may also include allocations of transactions that never committed:
// open() returns to the allocator every live range the allocation bitmap
// (which changes with each transaction's own batch) does not mark.
//
// Data hotness (SFS): each allocation carries the hotness group of its
// object; an erase unit is only ever filled with one group. Group centres are
// refined from the hotness of recent allocations (at most three passes) and
// persisted.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/write_batch_base.h>

#include "hscommon/config.h"
#include "hscommon/perf_counters.h"
#include "hybridstore/sections/hole_cleaner.h"
#include "hybridstore/sections/section_allocator.h"
#include "hybridstore/sections/section_rules.h"
#include "hybridstore/tier/hotness_groups.h"

namespace hybridstore {

// Counter ids the sections update; without a set they count nothing.
// section_allocs/section_seals are indexed like the store's sections.
struct SectionPerf {
  PerfCounterSet* set = nullptr;
  int allocs = -1, seals = -1, write_units = -1, write_units_forced = -1, free_erase_units = -1;
  std::vector<int> section_allocs, section_seals;
};

class SsdSections {
 public:
  struct Piece {
    uint64_t offset;  // device bytes
    uint64_t length;
    bool staged;      // in a staged extent (held record); else in place
    // Whole write units handed over written: the caller writes them before
    // the allocation commits (allocate(direct = true) only).
    bool direct = false;
  };
  struct Region {
    uint64_t begin, end;  // device bytes, a whole write unit
  };

  // mkfs: writes the geometry record and the empty allocator into `batch`.
  static int format(const Config& cfg, uint64_t offset, uint64_t bytes, rocksdb::WriteBatchBase* batch,
                    std::string* error);
  // Device byte ranges (offset, length).
  using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;

  // mount: rebuilds from RocksDB and drops live ranges `used(offset, len)`
  // says are not allocated (crash leftovers); those changes are written at
  // once. Then takes `lent` (whole erase units the KV file system owns) out
  // of the free pool: -EIO when one still holds object data; the records of
  // a lent unit without any are deleted with the next drained batch.
  static int open(const Config& cfg, rocksdb::DB* db, uint64_t offset, uint64_t bytes,
                  const std::function<bool(uint64_t, uint64_t)>& marked_used, const Ranges& lent,
                  std::unique_ptr<SsdSections>* out, std::string* error);

  // Lending to the KV file system (docs/kvfs.md 2.5): whole erase units.
  // None of these takes lock(): a lend never waits behind a transaction.
  uint64_t lend_unit() const { return uint64_t(sa_->erase_unit_blocks()) * block_size_; }
  // Free whole erase units in bytes, floor included (what lend could take).
  uint64_t lendable() const { return uint64_t(sa_->free_erase_units()) * lend_unit(); }
  // Up to `want` bytes (at least one unit), as merged ranges in offset
  // order; -ENOSPC when no unit is free.
  int lend(uint64_t want, Ranges* out);
  // -EINVAL (nothing changed) when a range is not whole lent units.
  int take_back(const Ranges& ranges);
  Ranges lent() const;
  // Data lanes leave `bytes` (rounded down to whole units) to the kvfs.
  void set_floor(uint64_t bytes);

  uint32_t block_size() const { return block_size_; }
  // Names of the store's sections, in allocator order.
  std::vector<std::string> section_names() const;
  void set_perf(SectionPerf p);
  // True when the object belongs on the HDD (a bypass section).
  bool bypass(const ObjectPlacementKey& key, uint64_t object_bytes) const;
  // Allocates `len` bytes (block multiple) for an object; -ENOSPC when the
  // SSD has no room (nothing stays allocated).
  // `stage` runs under the sections' lock with the pieces, before any write
  // unit they complete can be handed out.
  // With `direct`, write units the allocation fills alone come back as
  // direct pieces (see Piece::direct).
  int allocate(const ObjectPlacementKey& key, uint64_t object_bytes, uint64_t len, double hotness, uint64_t owner,
               std::vector<Piece>* out, const std::function<void(const std::vector<Piece>&)>& stage,
               bool direct = false);
  // Returns space; applied at the next allocate/finish (callable from any
  // thread, takes no lock that a transaction holds).
  void release(uint64_t offset, uint64_t len);

  // The caller holds lock() across finish_locked and the submission of
  // `batch`, so drained states commit in the order they were drained.
  std::mutex& lock() { return mutex_; }
  // Regions completed and allocator records changed since the last call.
  void finish_locked(rocksdb::WriteBatchBase* batch, std::vector<Region>* regions);
  // Staging timeout (tick) or everything staged (flush): regions to write and
  // the changed records, into `batch`. As with finish_locked, the caller
  // holds lock() until `batch` is submitted to the committer: written past
  // it, the batch could land before an older state still queued there, which
  // would then put back records without the allocations made in between.
  void tick_locked(rocksdb::WriteBatchBase* batch, std::vector<Region>* regions);
  void flush_locked(rocksdb::WriteBatchBase* batch, std::vector<Region>* regions);

  // Free = blocks the allocator could still hand out (free erase units,
  // open tails, gaps, holes); allocated = live object blocks.
  uint64_t live_bytes();
  uint64_t consumed_bytes();
  void for_each_live(const std::function<void(uint64_t offset, uint64_t len)>& fn);
  std::string report();
  std::string verify();
  void memory(uint64_t* placements, uint64_t* bytes);

  // Cleaning (hole_cleaner.h): whether free erase units ran short, the best
  // victims (marked as being cleaned: their holes take no new data), and the
  // live data to move out of one.
  bool cleaning_needed(bool started);
  std::vector<uint32_t> begin_cleaning(size_t max_victims);
  void end_cleaning(uint32_t eu);
  struct Live {
    uint64_t offset, length, owner;
  };
  std::vector<Live> live_in(uint32_t eu);
  bool erase_unit_free(uint32_t eu);

 private:
  SsdSections() = default;
  void apply_releases_locked();
  // Whole erase units of `ranges`; false when one is not.
  bool units_of(const Ranges& ranges, std::vector<uint32_t>* eus) const;
  Ranges ranges_of(std::vector<uint32_t> eus) const;
  uint64_t now_us() const;
  void drain_locked(rocksdb::WriteBatchBase* batch, std::vector<Region>* regions, const AllocEvents& ev);
  uint32_t group_of_locked(double hotness);
  // Seals and handed-out regions of `ev`, and the free erase units now.
  void count_locked(const AllocEvents& ev, const std::vector<WriteRegion>& regions);

  // While it lives (under mutex_), evicted placements are read through one
  // iterator, for a walk of the units in order.
  class WalkInKeyOrder {
   public:
    explicit WalkInKeyOrder(SsdSections* s);
    ~WalkInKeyOrder();

   private:
    SsdSections* s_;
    std::unique_ptr<PlacementStore> walk_;
    PlacementStore* old_ = nullptr;
  };

  std::mutex mutex_;
  rocksdb::DB* db_ = nullptr;  // when placements are left in their records
  // Before sa_, so that it outlives the allocator that reads through it.
  std::unique_ptr<PlacementStore> placements_;
  std::unique_ptr<SectionAllocator> sa_;
  SectionRouter router_;
  uint32_t block_size_ = 256;
  uint64_t split_ = UINT64_MAX;  // staged pieces never cross a multiple of this
  std::unique_ptr<HotnessGroups> groups_;
  std::unique_ptr<HoleCleaner> cleaner_;
  std::vector<double> hotness_sample_;
  std::vector<WriteRegion> forced_;  // regions allocate() reported, not yet handed out
  bool groups_dirty_ = false;
  SectionPerf perf_;

  std::mutex release_mutex_;  // only for pending_release_
  std::vector<std::pair<uint64_t, uint64_t>> pending_release_;  // blocks
};

}  // namespace hybridstore
