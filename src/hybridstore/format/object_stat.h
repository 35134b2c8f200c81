// What stat() reports of one object: its size and the device space its extent
// map holds on each tier. Defined here rather than with the facade because the
// migrator and the SSD cleaner, which sit below the store, walk objects by it.
#pragma once
#include <cstdint>

#include "hybridstore/format/onode.h"

namespace hybridstore {

struct ObjectStat {
  uint64_t size = 0;
  uint64_t allocated = 0;  // bytes of device space held
  PerTier<uint64_t> bytes_on;  // by tier id
  uint32_t blksize = 4096;
  uint64_t omap_id = 0;
};

}  // namespace hybridstore
