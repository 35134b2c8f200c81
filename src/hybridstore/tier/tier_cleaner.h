// Cleaning: what a tier needs when its space leaves room behind that only
// moving live data out can reclaim (holes in the written erase units of HFM
// sections). The tier's space makes its cleaner (TierSpace::make_cleaner),
// so a tier whose space needs none has none; the store runs every cleaner a
// pass at a time, on the migrator's thread or on demand (`clean_now`).
//
// A cleaner moves data through TierCleaner::Store, which the store
// implements: a relocation is a transaction per object (copy, verify,
// switch, free after), so a crash leaves every object whole.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>

#include "hybridstore/format/collection_id.h"
#include "hybridstore/format/object_id.h"
#include "hybridstore/format/object_stat.h"

namespace hybridstore {

struct CleanerReport {
  size_t victims = 0;
  size_t units_freed = 0;
  size_t objects_moved = 0;
  size_t skipped = 0;  // live data whose owner changed or could not be moved
  uint64_t bytes_moved = 0;
  // Scans of the store's objects made to find the owners of the victims'
  // live data, and the most objects one pass kept from them (bounded by
  // its victims, not by the objects on the tier).
  size_t owner_scans = 0;
  size_t owners_held = 0;
};

class TierCleaner {
 public:
  // What cleaning needs from the store that holds the tier.
  class Store {
   public:
    virtual ~Store() = default;
    // Waits until everything queued is durable (freed space reached the tier).
    virtual int flush() = 0;
    // Every object of every collection, in key order.
    virtual int for_each_object(
        const std::function<void(const CollectionId&, const ObjectId&, const ObjectStat&)>& fn) = 0;
    // Rewrites the object's data on `tier` that lies in the device range
    // [begin, end) elsewhere on that tier: 0, -EAGAIN (written while it was
    // copied: nothing moved), or another negative errno.
    virtual int relocate(const CollectionId& c, const ObjectId& o, Tier tier, uint64_t begin, uint64_t end) = 0;
  };

  virtual ~TierCleaner() = default;
  // One pass, moving at most `max_bytes`; `force` cleans even when the tier
  // has room enough (tests, the tool).
  virtual int run_pass(uint64_t max_bytes, bool force, CleanerReport* report) = 0;
};

}  // namespace hybridstore
