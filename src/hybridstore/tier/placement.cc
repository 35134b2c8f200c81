#include "hybridstore/tier/placement.h"

#include <algorithm>

namespace hybridstore {

bool absorb_pays(Media fastest, Media below) {
  if (fastest == Media::kUnknown) fastest = Media::kSolidState;  // the roles
  if (below == Media::kUnknown) below = Media::kRotational;
  return fastest == Media::kSolidState && below == Media::kRotational;
}

TierPlacement::TierPlacement(const Config& cfg, const TierOrder& order)
    : hdd_threshold_(cfg.get_size("hybridstore_placement_hdd_threshold")), order_(order) {}

Tier TierPlacement::choose(const Onode& o, uint64_t write_end) const {
  if (!o.extents.empty()) {
    // The tier holding most of the object, the faster on a tie.
    const int r = order_.heaviest(o.extents.bytes_by_tier());
    return order_[r < 0 ? 0 : r];
  }
  if (std::max(o.size, write_end) >= hdd_threshold_) return slowest();
  if (o.expected_object_size >= hdd_threshold_) return slowest();
  return fastest();
}

}  // namespace hybridstore
