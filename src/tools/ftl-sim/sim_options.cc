#include "sim_options.h"

#include <cerrno>
#include <cmath>

#include "hscommon/config.h"

namespace hybridstore::ftl::sim {

void add_common_options(CLI::App* app, CommonArgs* a) {
  app->add_option("--policy", a->policy, "mapping policy")
      ->check(CLI::IsMember({"ubi", "pubi", "hubi"}))
      ->capture_default_str();
  app->add_option("--timing", a->timing, "NAND timing preset (paper = hUBI Table I)")
      ->check(CLI::IsMember({"paper", "none"}))
      ->capture_default_str();
  app->add_option("--cache", a->cache,
                  "one-LEB write-back cache: off, lazy, or mtdblock (fills the LEB on a miss)")
      ->check(CLI::IsMember({"off", "lazy", "mtdblock"}))
      ->capture_default_str();
  app->add_option("--page-size", a->page_size, "NAND page size in bytes")->capture_default_str();
  app->add_option("--pages-per-block", a->pages_per_block, "pages per erase block (k)")
      ->capture_default_str();
  app->add_option("--oob-size", a->oob_size, "OOB bytes per page")->capture_default_str();
  app->add_option("--blocks", a->blocks, "number of erase blocks")->capture_default_str();
  app->add_option("--size", a->size, "raw flash size (e.g. 1G); overrides --blocks");
  app->add_option("--data-pages", a->data_pages, "hubi data-area pages per block (d; 0 = paper proportions)")
      ->capture_default_str();
  app->add_option("--log-pages", a->log_pages, "hubi log-area pages per block (l; 0 = paper proportions)")
      ->capture_default_str();
  app->add_option("--partition-data", a->partition_data, "pubi data blocks per partition (D)")
      ->capture_default_str();
  app->add_option("--partition-log", a->partition_log, "pubi log blocks per partition (L)")
      ->capture_default_str();
  app->add_option("--t-read", a->t_r, "override t_r (us)");
  app->add_option("--t-prog", a->t_w, "override t_w (us)");
  app->add_option("--t-erase", a->t_e, "override t_e (us)");
  app->add_option("--t-xfer", a->t_x, "override t_x (us)");
  app->add_flag("--background-merge", a->background,
                "hubi beyond the paper: merges and erases run in background steps");
  app->add_option("--merge-watermark", a->watermark,
                  "background mode: free log pages left when a merge is queued (0 = l/8)")
      ->capture_default_str();
  app->add_option("--background-steps", a->background_steps,
                  "background mode: steps after each written page (0 = derived)")
      ->capture_default_str();
  app->add_option("--wl-threshold", a->wl_threshold, "wear-levelling threshold")
      ->capture_default_str();
  app->add_option("--seed", a->seed, "random seed (workload and faults)")->capture_default_str();
}

int to_ftl_options(const CommonArgs& a, FtlOptions* o, std::string* error) {
  FtlOptions f;
  f.geometry.page_size = a.page_size;
  f.geometry.pages_per_block = a.pages_per_block;
  f.geometry.oob_size = a.oob_size;
  f.geometry.block_count = a.blocks;
  if (!a.size.empty()) {
    uint64_t bytes;
    if (!parse_size(a.size, &bytes)) {
      *error = "--size: not a size: " + a.size;
      return -EINVAL;
    }
    f.geometry.block_count = static_cast<uint32_t>(bytes / f.geometry.block_bytes());
  }
  if (int r = f.geometry.validate(error); r < 0) return r;
  if (!NandTiming::from_preset(a.timing, &f.nand.timing)) {
    *error = "--timing: unknown preset " + a.timing;
    return -EINVAL;
  }
  auto over = [](double us, int64_t* ns) {
    if (us >= 0) *ns = static_cast<int64_t>(std::llround(us * 1000));
  };
  over(a.t_r, &f.nand.timing.t_read_ns);
  over(a.t_w, &f.nand.timing.t_prog_ns);
  over(a.t_e, &f.nand.timing.t_erase_ns);
  over(a.t_x, &f.nand.timing.t_xfer_ns);
  f.nand.seed = a.seed;
  if (!parse_policy(a.policy, &f.policy) || !parse_cache_mode(a.cache, &f.cache)) {
    *error = "unknown policy or cache mode";
    return -EINVAL;
  }
  f.data_pages = a.data_pages;
  f.log_pages = a.log_pages;
  if (f.policy == PolicyKind::kHubi) {
    uint32_t d, l;
    if (int r = hubi_layout(a.pages_per_block, a.data_pages, a.log_pages, &d, &l, error); r < 0)
      return r;
  }
  f.partition_data = a.partition_data;
  f.partition_log = a.partition_log;
  f.background_merge = a.background;
  f.merge_watermark = a.watermark;
  f.background_steps = a.background_steps;
  f.wl_threshold = a.wl_threshold;
  *o = f;
  return 0;
}

}  // namespace hybridstore::ftl::sim
