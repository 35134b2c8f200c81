// The heat a mounted store records of its objects (tier/heat_tracker.h: how
// often and how randomly each is read and written) and what the store does
// with it between the migrator's passes: a small object read often while it
// lies below the fastest tier is queued for promotion at once. The history
// is saved periodically and at umount (`H` keys); with
// hybridstore_tier_heat_mode = load it is read whole at mount, with
// on_demand memory holds a bounded hot set and what leaves it is merged
// into the stored records (tier/heat_tracker.h).
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "hscommon/config.h"
#include "hybridstore/format/collection_id.h"
#include "hybridstore/format/object_id.h"
#include "hybridstore/format/onode.h"
#include "hybridstore/tier/heat_tracker.h"

namespace rocksdb {
class DB;
}  // namespace rocksdb

namespace hybridstore {

class KvCommitter;
class Migrator;
class TierSet;

class ObjectHeat {
 public:
  ObjectHeat(const Config& cfg, const TierSet* tiers);
  ~ObjectHeat();

  // The history in RocksDB: loaded at mount (a damaged record costs its
  // history, never the mount), saved by the migrator's thread and at
  // umount. A failed save fails the store.
  void load(rocksdb::DB* db);
  int save(rocksdb::DB* db, KvCommitter* committer);
  // Before the database closes: on demand, entries leaving memory are no
  // longer written.
  void detach();
  bool on_demand() const { return tracker_->options().on_demand; }
  // On demand: the key prefix of the objects' records (+ onode key), for a
  // scan that reads them in onode order.
  static std::string record_prefix();

  // A client's access to the object. `counts`: false for an access that
  // must not make the object hotter (a write the fastest tier absorbs).
  void note(const CollectionId& c, const ObjectId& o, AccessType type, uint64_t off, uint64_t len, uint64_t size,
            bool counts = true);
  void note(const std::string& onode_key, AccessType type, uint64_t off, uint64_t len, uint64_t size,
            bool counts = true);
  void forget(const std::string& onode_key);
  // The object's access frequency (0 when it has no history): the SSD
  // sections group data by it.
  double hotness(const CollectionId& c, const ObjectId& o) const;
  // True when a write at `off` continues the object's previous write (HRO's
  // continuation: same type, starts where it ended, soon after).
  bool write_continues(const CollectionId& c, const ObjectId& o, uint64_t off) const;

  // The migrator promotions and absorbed objects are handed to, while it
  // runs (mount to umount); null otherwise.
  void set_migrator(Migrator* m) { migrator_.store(m, std::memory_order_release); }
  // After a read: queues the object for promotion when it is small, lives
  // below the fastest tier and was read often enough, randomly enough, to
  // pay for its copy.
  void maybe_promote(const CollectionId& c, const ObjectId& o, const std::string& onode_key, const Onode& on);
  // The object now holds absorbed writes on the fastest tier.
  void note_absorbed(const CollectionId& c, const ObjectId& o);

  HeatTracker* tracker() { return tracker_.get(); }

 private:
  const TierSet* tiers_;
  std::unique_ptr<HeatTracker> tracker_;
  std::atomic<uint64_t> spill_errors_{0};
  std::atomic<Migrator*> migrator_{nullptr};
  const uint64_t promote_hits_;        // hybridstore_tier_promote_hits
  const uint64_t promote_max_size_;    // hybridstore_tier_promote_max_size
  const uint64_t promote_break_even_;  // hybridstore_tier_promote_break_even
};

}  // namespace hybridstore
