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
//
// A placement names its object by a 64-bit hash (ObjectIdHash), not by key.
// Each pass finds the objects behind its victims' live data with one scan
// of the store's objects that keeps only those owners, and forgets them at
// the end of the pass: its memory is bounded by the victims (at most 4
// erase units' live ranges), where a map of every object on the tier would
// be about 250 B an object, gigabytes at tens of millions.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
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
  using Owners = std::unordered_map<uint64_t, std::vector<std::pair<CollectionId, ObjectId>>>;
  // The objects on the tier whose owner id (ObjectIdHash) is in `wanted`,
  // from one scan of the store's objects.
  void find_owners(const std::unordered_set<uint64_t>& wanted, Owners* out);
  Store* store_;
  const Tier tier_;
  SsdSections* sections_;
  bool started_ = false;
};

}  // namespace hybridstore
