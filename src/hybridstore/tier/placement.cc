#include "hybridstore/tier/placement.h"

#include <algorithm>

namespace hybridstore {

TierPlacement::TierPlacement(const Config& cfg)
    : hdd_threshold_(cfg.get_size("hybridstore_placement_hdd_threshold")) {}

Tier TierPlacement::choose(const Onode& o, uint64_t write_end) const {
  if (!o.extents.empty()) {
    uint64_t ssd = o.extents.bytes_on(Tier::kSsd);
    uint64_t hdd = o.extents.bytes_on(Tier::kHdd);
    return hdd > ssd ? Tier::kHdd : Tier::kSsd;
  }
  if (std::max(o.size, write_end) >= hdd_threshold_) return Tier::kHdd;
  if (o.expected_object_size >= hdd_threshold_) return Tier::kHdd;
  return Tier::kSsd;
}

}  // namespace hybridstore
