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
// A pass promotes only objects with at least hybridstore_tier_promote_min_accesses
// accesses in the heat window (2: an object written once is not hot), and
// whose random requests would have paid for their copy
// (hybridstore_tier_promote_break_even: a large object streamed in order once
// stays on the HDD, even while the SSD has room for it).
//
// Passes run on a background thread every hybridstore_tier_migrate_interval_sec,
// or once the store has been idle (fewer than hybridstore_tier_migrate_idle_ops
// client ops/s) for hybridstore_tier_migrate_idle_sec, or on demand
// (run_once, behind `hybridstore-tool migrate --now`). The same thread saves
// the heat history every hybridstore_tier_heat_persist_interval_sec. Client
// ops are every transaction and every read the store serves (note_op).
//
// Between passes, a small object read often on the HDD does not wait for the
// next pass (a day by default): the store queues it (request_promotion) once
// accesses in the current heat window reach hybridstore_tier_promote_hits,
// and the thread promotes queued objects within a second, load or not, as far
// as the SSD has room above the share the planner keeps free for new writes
// (1 - hybridstore_tier_ssd_target_ratio), at the migration bandwidth. Making
// room by demotion is the pass's job, not this path's: a promotion never
// evicts.
//
// Small random writes into objects on the HDD are absorbed by the SSD (the
// store decides, hybridstore_tier_absorb_max, and tells the migrator which
// objects now hold data on both tiers). While the SSD is fuller than its
// target ratio, the thread writes the absorbed data of such objects back to
// the HDD each second, coldest objects first, until it is not: by then a
// block has usually taken many overwrites on the SSD for one write on the
// HDD, and an object's blocks go down in one batch (the deferred writer
// sorts them). A pass's scan finds mixed objects too (after a restart, the
// list is empty). A pass's budget leaves out the SSD space absorbed data
// holds, so promotion and write-back do not take turns.
//
// With more than two tiers (fastest first, Migrator::Store::tier_order) the
// same is done for each pair of neighbours, fastest pair first: "the SSD"
// above is the faster tier of the pair, "the HDD" the slower, each pair has
// its faster tier's budget, and an object moves at most one step in a pass.
// Promotion on read moves an object one step up; absorbed writes go to the
// fastest tier and are written back to the tier the object lives on.
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
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "hscommon/config.h"
#include "hybridstore/format/collection_id.h"
#include "hybridstore/format/object_id.h"
#include "hybridstore/format/object_stat.h"
#include "hybridstore/format/onode.h"
#include "hybridstore/tier/knapsack_planner.h"

namespace hybridstore {

class HeatTracker;
struct HeatSample;

struct MigrationReport {
  size_t objects = 0;        // candidates considered
  size_t promoted = 0;       // moved to a faster tier (HDD -> SSD)
  size_t demoted = 0;        // moved to a slower tier
  size_t skipped = 0;        // gone, too large, no space, or still busy after retries
  size_t retries = 0;        // copies redone because the object was written meanwhile
  uint64_t bytes_moved = 0;
  uint64_t ssd_budget = 0;   // the fastest tier's
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
    // The store's tiers, fastest first.
    virtual TierOrder tier_order() = 0;
    // A tier's allocatable bytes, allocation unit and free bytes: the
    // planner's budget. Everything queued is durable when it returns (it is
    // statfs).
    virtual int tier_space(Tier t, uint64_t* total, uint64_t* unit, uint64_t* free) = 0;
    // Every object of every collection, in key order.
    virtual int for_each_object(
        const std::function<void(const CollectionId&, const ObjectId&, const ObjectStat&)>& fn) = 0;
    // The same objects for a pass with a bounded planner, read without
    // keeping them (the store's onode records in key ranges, not its onode
    // cache): a pass over millions of objects must neither hold them nor
    // evict the ones clients use.
    virtual int scan_objects(
        const std::function<void(const CollectionId&, const ObjectId&, const ObjectStat&)>& fn) {
      return for_each_object(fn);
    }
    // The same scan with each object's heat, for a store whose heat lives in
    // RocksDB with only a hot set in memory (hybridstore_tier_heat_mode =
    // on_demand): the heat records are read in the onodes' key order and
    // joined with them, each with the hot set's unwritten part added
    // (HeatTracker::lookup_merged); null for an object without heat.
    // -EOPNOTSUPP: the store has none such (the pass looks heat up in the
    // tracker).
    virtual int scan_objects_heat(
        const std::function<void(const CollectionId&, const ObjectId&, const ObjectStat&, const HeatSample*)>&) {
      return -EOPNOTSUPP;
    }
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
    // What the pass holds for its plan now (the mempool tier_plan), and
    // zeros when it ends.
    virtual void note_plan_memory(uint64_t /*items*/, uint64_t /*bytes*/) {}
    // A batch of promotions requested by reads finished.
    virtual void on_promotions(const MigrationReport&) {}
    // Absorbed objects written back to the HDD (report.demoted of them).
    virtual void on_destage(const MigrationReport&) {}
    virtual int stat(const CollectionId& c, const ObjectId& o, ObjectStat* st) = 0;
  };

  // `store` outlives the migrator.
  Migrator(Store* store, const Config& cfg);
  ~Migrator();

  void start();
  void stop();
  // `n` client ops happened (for the idle trigger).
  void note_op(uint64_t n = 1) { ops_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t client_ops() const { return ops_.load(std::memory_order_relaxed); }
  // Plans and moves now, on the caller's thread.
  int run_once(MigrationReport* report);

  // A hot object on the HDD holding `bytes`: promote it soon. Cheap and
  // non-blocking (the caller is a reader); an object already queued, or one
  // past the queue's bound, is dropped (its reads will queue it again).
  void request_promotion(const CollectionId& c, const ObjectId& o, uint64_t bytes);
  // Promotes what is queued now, on the caller's thread (the background
  // thread does it within a second of a request). Returns promotions made.
  size_t promote_queued();
  struct PromotionStats {
    // skipped: gone, empty or already on the fastest tier when its turn came.
    uint64_t requested = 0, promoted = 0, bytes = 0, no_room = 0, failed = 0, dropped = 0, skipped = 0;
  };
  PromotionStats promotion_stats() const;
  // `o` holds absorbed small writes on the SSD while it lies on the HDD.
  void note_absorbed(const CollectionId& c, const ObjectId& o);
  // Writes absorbed objects back while the SSD is over its target (or all of
  // them with `all`): how many were written back.
  size_t destage(bool all = false);
  size_t absorbed_count() const;
  // No pass, promotion or write-back moves an object while the lock is held
  // (fsck reads the store's state piece by piece).
  std::unique_lock<std::mutex> hold_moves() { return std::unique_lock<std::mutex>(pass_mutex_); }

 private:
  struct Pass;
  void run();
  void throttle(uint64_t bytes, double started);
  // The steps of a pass: every object with its heat and home rank, then
  // each pair of neighbouring tiers planned and moved, fastest pair first.
  int scan(Pass* pass);
  int plan_pair(Pass* pass, int upper);
  // An object's candidate in the pair where it lies on the faster tier
  // (on_faster) or the slower, with the pass's promotion rules applied.
  TierCandidate candidate_for_pair(const TierCandidate& heat, bool on_faster) const;
  // Moves one of the pass's objects to `to_rank`, retrying a copy the
  // object's writes spoiled.
  void move(Pass* pass, size_t idx, int to_rank, bool up);
  struct PendingPromotion {
    CollectionId c;
    ObjectId o;
    uint64_t bytes = 0;
  };

  Store* store_;
  TierPolicy policy_ = TierPolicy::kHro;
  uint64_t interval_us_, idle_ops_, idle_us_, bandwidth_, persist_us_;
  std::atomic<uint64_t> ops_{0};
  double ssd_target_ratio_ = 0.9;
  double min_accesses_ = 0;  // hybridstore_tier_promote_min_accesses
  uint64_t break_even_ = 0;  // hybridstore_tier_promote_break_even
  std::mutex pass_mutex_;  // one pass (or promotion batch) at a time
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
  // Guarded by mutex_.
  std::vector<PendingPromotion> promote_queue_;
  std::unordered_set<std::string> promote_queued_keys_;
  PromotionStats promotion_stats_;
  std::unordered_map<std::string, std::pair<CollectionId, ObjectId>> absorbed_;
};

}  // namespace hybridstore
