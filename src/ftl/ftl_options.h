// Everything that configures an FTL instance, and its reading from the
// hybridstore_* option registry (src/hsoptions/options_ftl.cc).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ftl/leb_cache.h"
#include "ftl/nand_geometry.h"
#include "ftl/nand_model.h"
#include "ftl/peb_headers.h"

namespace hybridstore {
class Config;
}

namespace hybridstore::ftl {

struct FtlOptions {
  NandGeometry geometry;
  NandModelOptions nand;
  // Used by format only; attach reads them from the EC headers.
  PolicyKind policy = PolicyKind::kHubi;
  uint32_t data_pages = 0;      // hubi d; 0 = the paper's proportions (100 of 128)
  uint32_t log_pages = 0;       // hubi l; 0 = the paper's proportions (26 of 128)
  uint32_t partition_data = 16; // pubi D
  uint32_t partition_log = 4;   // pubi L
  uint32_t bad_reserve_per_1024 = 20;  // PEBs kept for grown bad blocks (UBI's default)
  std::vector<uint32_t> factory_bad;   // format of fresh media: blocks the factory marked
  // Runtime.
  bool background_merge = false;
  uint32_t merge_watermark = 0;        // 0 = l / 8
  uint32_t background_steps = 0;       // per host page; 0 = derived
  uint32_t wl_threshold = 256;         // UBI's advice for MLC
  CacheMode cache = CacheMode::kLazy;
  // NandBlockDevice: sleep for the NAND time each request costs.
  bool emulate_latency = false;
};

// The hubi layout for a block of k pages: explicit d and l if given, else the
// paper's proportions (k = 128: d = 100, l = 26, 2 pages of metadata).
// -EINVAL when they do not fit (1 + d + l > k, d = 0).
int hubi_layout(uint32_t pages_per_block, uint32_t data_pages, uint32_t log_pages, uint32_t* d,
                uint32_t* l, std::string* error);

// Reads hybridstore_nand_* and hybridstore_ftl_* options.
int ftl_options_from_config(const Config& cfg, FtlOptions* out, std::string* error);

}  // namespace hybridstore::ftl
