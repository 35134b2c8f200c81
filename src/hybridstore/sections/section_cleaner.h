// The cleaner of a tier on HFM data sections: reclaims the holes that
// removes and overwrites leave inside written extents.
//
// When free erase units run short (hybridstore_ssd_cleaner_start_free) it
// picks victims by the configured policy (SFS cost-hotness by default:
// (1 - u) / (2 u H), see hole_cleaner.h), moves each victim's live data into
// open extents through TierCleaner::Store::relocate, and the emptied erase
// units return to the free pool. It stops once enough units are free again
// (hybridstore_ssd_cleaner_stop_free) and moves at most `max_bytes` per pass,
// so cleaning never starves client I/O for long.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hybridstore/format/onode.h"
#include "hybridstore/tier/tier_cleaner.h"

namespace hybridstore {

class SsdSections;

class SectionCleaner final : public TierCleaner {
 public:
  // Both outlive the cleaner; `tier` is the tier `sections` manage.
  SectionCleaner(Store* store, Tier tier, SsdSections* sections) : store_(store), tier_(tier), sections_(sections) {}
  int run_pass(uint64_t max_bytes, bool force, CleanerReport* report) override;

 private:
  // Owner ids (ObjectIdHash of the object) back to objects, rebuilt from a
  // scan when an owner is not found.
  void rebuild_owners();
  Store* store_;
  const Tier tier_;
  SsdSections* sections_;
  std::unordered_map<uint64_t, std::vector<std::pair<CollectionId, ObjectId>>> owners_;
  bool started_ = false;
};

}  // namespace hybridstore
