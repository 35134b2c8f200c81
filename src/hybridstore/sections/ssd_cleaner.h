// The SSD cleaner: reclaims holes that removes and overwrites leave inside
// written extents of the data sections.
//
// When free erase units run short (hybridstore_ssd_cleaner_start_free) it
// picks victims by the configured policy (SFS cost-hotness by default:
// (1 - u) / (2 u H), see hole_cleaner.h), moves each victim's live data into
// open extents through HybridStore::relocate — a transaction per object:
// copy, verify, switch, free after, so a crash leaves every object whole — and
// the emptied erase units return to the free pool. It stops once enough units
// are free again (hybridstore_ssd_cleaner_stop_free) and moves at most
// `max_bytes` per pass, so cleaning never starves client I/O for long.
//
// It reaches the store only through SsdCleaner::Store (the store implements it).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "hybridstore/format/collection_id.h"
#include "hybridstore/format/object_id.h"
#include "hybridstore/format/object_stat.h"

namespace hybridstore {

class SsdSections;

struct CleanerReport {
  size_t victims = 0;
  size_t units_freed = 0;
  size_t objects_moved = 0;
  size_t skipped = 0;  // live data whose owner changed or could not be moved
  uint64_t bytes_moved = 0;
};

class SsdCleaner {
 public:
  // What cleaning needs from the store that owns the sections.
  class Store {
   public:
    virtual ~Store() = default;
    // Waits until everything queued is durable (freed space reached the sections).
    virtual int flush() = 0;
    // Every object of every collection, in key order.
    virtual int for_each_object(
        const std::function<void(const CollectionId&, const ObjectId&, const ObjectStat&)>& fn) = 0;
    // HybridStore::relocate: 0, -EAGAIN (written while copied), or an errno.
    virtual int relocate(const CollectionId& c, const ObjectId& o, uint64_t ssd_begin, uint64_t ssd_end) = 0;
  };

  // Both outlive the cleaner; `sections` is null when the SSD uses plain extents.
  SsdCleaner(Store* store, SsdSections* sections) : store_(store), ssd_(sections) {}
  // One pass; `force` cleans even when free units are plentiful (tests, tool).
  int run_pass(uint64_t max_bytes, bool force, CleanerReport* report);

 private:
  // Owner ids (ObjectIdHash of the object) back to objects, rebuilt from a
  // scan when an owner is not found.
  void rebuild_owners();
  Store* store_;
  SsdSections* ssd_;
  std::unordered_map<uint64_t, std::vector<std::pair<CollectionId, ObjectId>>> owners_;
  bool started_ = false;
};

}  // namespace hybridstore
