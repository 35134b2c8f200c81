#include "hybridstore/tier/placement.h"

#include <algorithm>

namespace hybridstore {

TierPlacement::TierPlacement(const Config& cfg, const Tier* order, int tiers)
    : hdd_threshold_(cfg.get_size("hybridstore_placement_hdd_threshold")), tiers_(tiers) {
  std::copy(order, order + tiers, order_);
}

Tier TierPlacement::choose(const Onode& o, uint64_t write_end) const {
  if (!o.extents.empty()) {
    // The tier holding most of the object, the faster on a tie.
    Tier home = order_[0];
    uint64_t most = 0;
    for (int r = 0; r < tiers_; ++r)
      if (uint64_t b = o.extents.bytes_on(order_[r]); b > most) {
        most = b;
        home = order_[r];
      }
    return home;
  }
  if (std::max(o.size, write_end) >= hdd_threshold_) return slowest();
  if (o.expected_object_size >= hdd_threshold_) return slowest();
  return fastest();
}

}  // namespace hybridstore
