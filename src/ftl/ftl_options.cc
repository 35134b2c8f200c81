#include "ftl/ftl_options.h"

#include <cerrno>
#include <cmath>

#include <fmt/format.h>

#include "hscommon/config.h"

namespace hybridstore::ftl {

int hubi_layout(uint32_t pages_per_block, uint32_t data_pages, uint32_t log_pages, uint32_t* d,
                uint32_t* l, std::string* error) {
  uint32_t k = pages_per_block;
  uint32_t ll = log_pages, dd = data_pages;
  if (!ll && !dd) {
    // The paper: 128 = 100 data + 26 log + 2 metadata.
    ll = std::max(1u, static_cast<uint32_t>(std::lround(k * 26.0 / 128.0)));
    dd = k > ll + 2 ? k - ll - 2 : 0;
  } else if (!dd) {
    dd = k > ll + 2 ? k - ll - 2 : 0;
  } else if (!ll) {
    ll = k > dd + 2 ? k - dd - 2 : 0;
  }
  if (dd < 1 || ll < 1 || 1 + dd + ll > k || dd >= 0xffff) {
    *error = fmt::format("hubi layout d = {}, l = {} does not fit {} pages per block (needs "
                         "1 + d + l <= {}, d >= 1, l >= 1)",
                         dd, ll, k, k);
    return -EINVAL;
  }
  *d = dd;
  *l = ll;
  return 0;
}

int ftl_options_from_config(const Config& cfg, FtlOptions* out, std::string* error) {
  FtlOptions o;
  o.geometry.page_size = static_cast<uint32_t>(cfg.get_size("hybridstore_nand_page_size"));
  o.geometry.pages_per_block =
      static_cast<uint32_t>(cfg.get_int("hybridstore_nand_pages_per_block"));
  o.geometry.oob_size = static_cast<uint32_t>(cfg.get_int("hybridstore_nand_oob_size"));
  uint64_t size = cfg.get_size("hybridstore_nand_size");
  uint64_t bb = uint64_t(o.geometry.page_size) * o.geometry.pages_per_block;
  if (size / bb > (1u << 24)) {
    *error = fmt::format("hybridstore_nand_size {} is too large for {} B blocks", size, bb);
    return -EINVAL;
  }
  o.geometry.block_count = static_cast<uint32_t>(size / bb);
  if (int r = o.geometry.validate(error); r < 0) {
    *error = "NAND geometry: " + *error;
    return r;
  }
  const std::string& timing = cfg.get_str("hybridstore_nand_timing");
  if (timing == "custom") {
    auto ns = [&](const char* name) {
      return static_cast<int64_t>(std::llround(cfg.get_double(name) * 1000.0));
    };
    o.nand.timing.t_read_ns = ns("hybridstore_nand_t_read_us");
    o.nand.timing.t_prog_ns = ns("hybridstore_nand_t_prog_us");
    o.nand.timing.t_erase_ns = ns("hybridstore_nand_t_erase_us");
    o.nand.timing.t_xfer_ns = ns("hybridstore_nand_t_xfer_us");
  } else if (!NandTiming::from_preset(timing, &o.nand.timing)) {
    *error = "hybridstore_nand_timing: unknown preset " + timing;
    return -EINVAL;
  }
  o.emulate_latency = cfg.get_bool("hybridstore_nand_emulate_latency");
  o.nand.endurance = static_cast<uint32_t>(cfg.get_int("hybridstore_nand_endurance"));
  o.nand.bitflip_rate = cfg.get_double("hybridstore_nand_bitflip_rate");
  if (!parse_policy(cfg.get_str("hybridstore_ftl_policy"), &o.policy)) {
    *error = "hybridstore_ftl_policy: unknown policy";
    return -EINVAL;
  }
  o.data_pages = static_cast<uint32_t>(cfg.get_int("hybridstore_ftl_data_pages"));
  o.log_pages = static_cast<uint32_t>(cfg.get_int("hybridstore_ftl_log_pages"));
  if (o.policy == PolicyKind::kHubi) {
    uint32_t d, l;
    if (int r = hubi_layout(o.geometry.pages_per_block, o.data_pages, o.log_pages, &d, &l, error);
        r < 0)
      return r;
  }
  o.partition_data =
      static_cast<uint32_t>(cfg.get_int("hybridstore_ftl_partition_data_blocks"));
  o.partition_log = static_cast<uint32_t>(cfg.get_int("hybridstore_ftl_partition_log_blocks"));
  o.bad_reserve_per_1024 =
      static_cast<uint32_t>(cfg.get_int("hybridstore_ftl_bad_block_reserve"));
  o.background_merge = cfg.get_bool("hybridstore_ftl_background_merge");
  o.merge_watermark = static_cast<uint32_t>(cfg.get_int("hybridstore_ftl_merge_watermark"));
  o.background_steps = static_cast<uint32_t>(cfg.get_int("hybridstore_ftl_background_steps"));
  o.wl_threshold = static_cast<uint32_t>(cfg.get_int("hybridstore_ftl_wl_threshold"));
  if (!parse_cache_mode(cfg.get_str("hybridstore_ftl_cache"), &o.cache)) {
    *error = "hybridstore_ftl_cache: unknown mode";
    return -EINVAL;
  }
  *out = o;
  return 0;
}

}  // namespace hybridstore::ftl
