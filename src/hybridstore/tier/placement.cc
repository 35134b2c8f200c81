#include "hybridstore/tier/placement.h"

#include <algorithm>

namespace hybridstore {

bool absorb_pays(Media fastest, Media below) {
  if (fastest == Media::kUnknown) fastest = Media::kSolidState;  // the roles
  if (below == Media::kUnknown) below = Media::kRotational;
  return fastest == Media::kSolidState && below == Media::kRotational;
}

TierPlacement::TierPlacement(const Config& cfg, const Tier* order, int tiers)
    : hdd_threshold_(cfg.get_size("hybridstore_placement_hdd_threshold")), tiers_(tiers) {
  std::copy(order, order + tiers, order_);
}

Tier TierPlacement::choose(const Onode& o, uint64_t write_end) const {
  if (!o.extents.empty()) {
    // The tier holding most of the object, the faster on a tie.
    uint64_t bytes[kMaxTiers];
    for (int t = 0; t < kMaxTiers; ++t) bytes[t] = o.extents.bytes_on(tier_at(t));
    const int r = heaviest_rank(bytes, order_, tiers_);
    return order_[r < 0 ? 0 : r];
  }
  if (std::max(o.size, write_end) >= hdd_threshold_) return slowest();
  if (o.expected_object_size >= hdd_threshold_) return slowest();
  return fastest();
}

}  // namespace hybridstore
