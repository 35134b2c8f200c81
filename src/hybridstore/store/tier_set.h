// The store's tiers, in the order mkfs recorded (fastest first): each tier's
// space (space/tier_space.h: its device, how its space is handed out and
// written), the data cache the devices read through, and the order every
// decision about placing or moving data goes by. Mount opens it from the
// superblock; everything else reaches a tier through it.
//
// A tier is named by its id (Tier: its device, block.<name>, and options,
// hybridstore_<name>_*); which is faster than which is its rank, its place
// in the order (format/tier.h). Only the order says that: never the id.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "hscommon/config.h"
#include "hsio/block_device.h"
#include "hsio/read_cache.h"
#include "hybridstore/format/onode.h"
#include "hybridstore/format/store_format.h"
#include "hybridstore/space/tier_space.h"
#include "hybridstore/tier/tier_cleaner.h"

namespace rocksdb {
class DB;
class WriteBatchBase;
}  // namespace rocksdb

namespace hybridstore {

class DeferredWriter;
struct StorePerf;
struct StoreStats;


// The label of tier t of store sb with mkfs_done set (record version 2):
// what mkfs commits and the format upgrade writes. What only the label
// holds (device size, creation time, description, flags, kvfs identity,
// meta keys) comes from `prev`; the SSD's also carries the tier table and
// the path_block.<tier> hints (the devices' resolved paths).
DeviceLabel store_tier_label(const std::string& store_path, const Superblock& sb, Tier t, const DeviceLabel& prev);

class TierSet {
 public:
  explicit TierSet(StorePerf* perf) : perf_(perf) {}
  ~TierSet();
  TierSet(const TierSet&) = delete;
  TierSet& operator=(const TierSet&) = delete;

  // Mount: opens each tier's device as the superblock describes it, checks
  // its label, puts the test hooks, the asynchronous writer and the data
  // cache around it, and builds its space. `ssd_base`: the SSD's device,
  // opened and wrapped by the test hooks already, which the KV file system
  // shares (docs/kvfs.md 5.2): the SSD's stack is built over it.
  int open(const std::string& store_path, const Superblock& super, const Config& cfg, std::string* error,
           std::shared_ptr<BlockDevice> ssd_base = nullptr);
  // Mount, once deferred writes are replayed: each space's state, and the
  // counters the spaces update. `lent`: what the KV file system owns.
  int load(rocksdb::DB* db, const Config& cfg, const PerTier<std::vector<Interval>>& lent, std::string* error);
  // Sets the space gauges (bytes used and total per tier).
  void set_gauges();
  // Umount of a store that did not fail: every device flushed.
  void flush_devices();

  int count() const { return order_.count(); }
  // The ids of the store's tiers, 0 .. count()-1.
  TierIds ids() const { return tier_ids(order_.count()); }
  const TierOrder& order() const { return order_; }
  Tier fastest() const { return order_.fastest(); }
  Tier slowest() const { return order_.slowest(); }
  // The tier an object counts on: the one holding most of its data, the
  // faster on a tie; none when it holds no data.
  std::optional<Tier> home(const Onode& o) const;

  TierSpace& space(Tier t) const { return *spaces_[t]; }
  BlockDevice* device(Tier t) const { return spaces_[t]->device(); }
  PerTier<BlockDevice*> devices() const;  // null past count()
  uint64_t coarsest_unit() const { return coarsest_unit_; }  // punches land on it
  uint64_t finest_unit() const { return finest_unit_; }
  // Blocks read from every tier's device; null when hybridstore_data_cache_size is 0.
  ReadCache* read_cache() const { return read_cache_.get(); }

  // The label mount read from each tier's device, and what it found of
  // the two copies (for fsck and the format upgrade).
  const DeviceLabel& label(Tier t) const { return labels_[t]; }
  const LabelPairStatus& label_status(Tier t) const { return label_status_[t]; }
  // Writes *l as tier t's label pair (through the store's device stack, so
  // the test hooks see it) and keeps it as the tier's label.
  int write_label(Tier t, DeviceLabel* l, std::string* error);

  // Space a transaction took: counted as used.
  void count_allocated(Tier t, uint64_t bytes);
  // Gives space back to the tier that owns it.
  void release(const PExtent& e);
  // Whether any tier keeps commit-ordered state (TierSpace::keeps_state).
  bool keeps_state() const;

  // The staged tiers' state drained into one batch, under their locks
  // (taken fastest tier first), with the write units it completed. The
  // locks are held until the state goes: the batch must be submitted, and
  // its regions queued, before that, so states commit in the order they
  // were drained.
  class Drained {
   public:
    Drained() = default;
    Drained(Drained&&) = default;
    Drained& operator=(Drained&&) = default;
    ~Drained();
    // The completed write units, to be written once every record in them
    // has committed: queued before the locks drop, so an allocation made
    // after that sees them (DeferredWriter::range_quiet).
    void queue_regions(DeferredWriter* deferred) const;

   private:
    friend class TierSet;
    PerTier<std::vector<TierSpace::Region>> regions_;
    PerTier<std::unique_lock<std::mutex>> locks_;
  };
  Drained drain_state(TierSpace::Drain how, rocksdb::WriteBatchBase* batch) const;

  // Each tier's usage, unit and device, into st->tier (and the order).
  void usage(StoreStats* st) const;
  // The reports of the spaces that have one.
  std::string report() const;
  // TierSpace::memory of every tier, summed.
  void memory(uint64_t* items, uint64_t* bytes) const;
  // The cleaners of the tiers whose spaces need one.
  std::vector<std::unique_ptr<TierCleaner>> make_cleaners(TierCleaner::Store* store) const;

 private:
  StorePerf* perf_;
  TierOrder order_;
  PerTier<std::unique_ptr<TierSpace>> spaces_;  // by id, 0 .. count()-1
  PerTier<DeviceLabel> labels_;
  PerTier<LabelPairStatus> label_status_;
  std::shared_ptr<ReadCache> read_cache_;
  uint64_t coarsest_unit_ = 4096;
  uint64_t finest_unit_ = 4096;
};

}  // namespace hybridstore
