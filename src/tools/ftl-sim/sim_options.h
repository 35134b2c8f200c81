// Command-line options shared by the ftl-sim commands: geometry, timing,
// policy and FTL knobs.
#pragma once
#include <CLI/CLI.hpp>

#include <string>

#include "ftl/ftl_options.h"

namespace hybridstore::ftl::sim {

struct CommonArgs {
  std::string policy = "hubi";
  std::string timing = "paper";
  std::string cache = "lazy";
  std::string size;  // e.g. 256M; overrides blocks
  uint32_t page_size = 2048, pages_per_block = 128, oob_size = 64, blocks = 1024;
  uint32_t data_pages = 0, log_pages = 0;  // 0 = the paper's proportions (100 + 26 of 128)
  uint32_t partition_data = 16, partition_log = 4;
  double t_r = -1, t_w = -1, t_e = -1, t_x = -1;  // override the preset (us)
  bool background = false;
  uint32_t watermark = 0, background_steps = 0, wl_threshold = 256;
  uint64_t seed = 1;
};

void add_common_options(CLI::App* app, CommonArgs* a);
// 0, or -EINVAL with *error.
int to_ftl_options(const CommonArgs& a, FtlOptions* o, std::string* error);

}  // namespace hybridstore::ftl::sim
