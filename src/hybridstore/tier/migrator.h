// The migrator: keeps the objects that gain most from the SSD on the SSD.
//
// Heat comes from the HeatTracker the engine feeds on every read and write.
// A migration pass lists every object with its size and tier, asks the
// knapsack planner (policy hybridstore_tier_policy) which set should live on
// the SSD within hybridstore_tier_ssd_target_ratio of its space, demotes what
// fell out — as much as the promotions need room for, coldest first — then
// promotes what came in, each object
// through HybridStore::migrate — copy, verify, switch in one commit, free
// after — at no more than hybridstore_tier_migrate_bandwidth bytes/s. An
// object written while being copied is retried, never lost.
//
// Passes run on a background thread every hybridstore_tier_migrate_interval_sec,
// or once the store has been idle (fewer than hybridstore_tier_migrate_idle_ops
// client ops/s) for hybridstore_tier_migrate_idle_sec, or on demand
// (run_once, behind `hybridstore-tool migrate --now`). The same thread saves
// the heat history every hybridstore_tier_heat_persist_interval_sec.
//
// It reaches the store only through Migrator::Store (the store implements it).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "hybridstore/common/config.h"
#include "hybridstore/format/collection_id.h"
#include "hybridstore/format/object_id.h"
#include "hybridstore/format/object_stat.h"
#include "hybridstore/format/onode.h"
#include "hybridstore/tier/knapsack_planner.h"

namespace hybridstore {

class HeatTracker;

struct MigrationReport {
  size_t objects = 0;        // candidates considered
  size_t promoted = 0;       // moved HDD -> SSD
  size_t demoted = 0;        // moved SSD -> HDD
  size_t skipped = 0;        // gone, too large, no space, or still busy after retries
  size_t retries = 0;        // copies redone because the object was written meanwhile
  uint64_t bytes_moved = 0;
  uint64_t ssd_budget = 0;
  double seconds = 0;
  std::string policy;
};

class Migrator {
 public:
  // What migration needs from the store it runs in.
  class Store {
   public:
    virtual ~Store() = default;
    virtual const Config& config() const = 0;
    virtual HeatTracker* heat() = 0;
    // The SSD tier's allocatable bytes and allocation unit: the planner's
    // budget. Everything queued is durable when it returns (it is statfs).
    virtual int ssd_space(uint64_t* total, uint64_t* unit) = 0;
    // Every object of every collection, in key order.
    virtual int for_each_object(
        const std::function<void(const CollectionId&, const ObjectId&, const ObjectStat&)>& fn) = 0;
    // Moves all of an object's data to `target`: 0, or -EAGAIN when it was
    // written while being copied (nothing moved), or another negative errno.
    virtual int migrate(const CollectionId& c, const ObjectId& o, Tier target) = 0;
    // The store's once-a-second chores, run on the migrator thread: staging
    // timeouts of the SSD sections, then a cleaner pass if free erase units
    // run short.
    virtual void tick() = 0;
    virtual int save_heat() = 0;
    // A pass finished (for the store's counters).
    virtual void on_pass(const MigrationReport&) {}
  };

  // `store` outlives the migrator.
  Migrator(Store* store, const Config& cfg);
  ~Migrator();

  void start();
  void stop();
  // A client op happened (for the idle trigger).
  void note_op() { ops_.fetch_add(1, std::memory_order_relaxed); }
  // Plans and moves now, on the caller's thread.
  int run_once(MigrationReport* report);

 private:
  void run();
  void throttle(uint64_t bytes, double started);

  Store* store_;
  TierPolicy policy_ = TierPolicy::kHro;
  uint64_t interval_us_, idle_ops_, idle_us_, bandwidth_, persist_us_;
  std::atomic<uint64_t> ops_{0};
  std::mutex pass_mutex_;  // one pass at a time
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace hybridstore
