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
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "hybridstore/format/collection_id.h"
#include "hybridstore/format/object_id.h"

namespace hybridstore {

class HybridStore;

struct CleanerReport {
  size_t victims = 0;
  size_t units_freed = 0;
  size_t objects_moved = 0;
  size_t skipped = 0;  // live data whose owner changed or could not be moved
  uint64_t bytes_moved = 0;
};

class SsdCleaner {
 public:
  explicit SsdCleaner(HybridStore* store) : store_(store) {}
  // One pass; `force` cleans even when free units are plentiful (tests, tool).
  int run_pass(uint64_t max_bytes, bool force, CleanerReport* report);

 private:
  // Owner ids (ObjectIdHash of the object) back to objects, rebuilt from a
  // scan when an owner is not found.
  void rebuild_owners();
  HybridStore* store_;
  std::unordered_map<uint64_t, std::vector<std::pair<CollectionId, ObjectId>>> owners_;
  bool started_ = false;
};

}  // namespace hybridstore
