// Placement: which tier receives new data of an object.
//
// The rule of the engine core: an object goes to the HDD when its alloc hint
// says sequential or large, or when its size reaches
// hybridstore_placement_hdd_threshold; otherwise to the SSD. An object that
// already has data stays on the tier holding most of it, so objects are kept
// whole. When the chosen tier is full the data spills to the other one; only
// when both are full does the write fail with -ENOSPC. (Later components —
// HFM sections, the tiering planner — refine where on the SSD and which
// objects deserve it.)
#pragma once
#include <cstdint>

#include "hybridstore/common/config.h"
#include "hybridstore/format/onode.h"

namespace hybridstore {

class TierPlacement {
 public:
  explicit TierPlacement(const Config& cfg);
  // Preferred tier for data written to `o` reaching `write_end`.
  Tier choose(const Onode& o, uint64_t write_end) const;
  uint64_t hdd_threshold() const { return hdd_threshold_; }

 private:
  uint64_t hdd_threshold_;
};

}  // namespace hybridstore
