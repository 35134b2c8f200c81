// hybridstore-tool hfm: the HFM / ReHypar segment layout and map function of
// one extent, without a store.
//   hfm layout --extent-blocks S --rho R [--delta D]
//   hfm next   --extent-blocks S --rho R [--delta D] --pos P
#include <cstdio>
#include <string>

#include "hybridstore/sections/segment_map.h"
#include "tool_command.h"

namespace hybridstore::tool {
namespace {

struct HfmArgs {
  uint64_t extent_blocks = 0;
  std::string rho;
  uint32_t delta = 32;
  bool delta_given = false;
  int64_t pos = -1;
};

bool parse_rho(const std::string& s, PartitionMode* out) {
  if (s == "1" || s == "rho1") *out = PartitionMode::kRho1;
  else if (s == "2" || s == "rho2") *out = PartitionMode::kRho2;
  else if (s == "3" || s == "rho3") *out = PartitionMode::kRho3;
  else if (s == "bypass") *out = PartitionMode::kBypass;
  else return false;
  return true;
}

// Builds the segment map from the arguments; prints the error and returns false.
bool build_map(const HfmArgs& a, SegmentMap* m) {
  PartitionMode mode;
  if (!parse_rho(a.rho, &mode)) {
    fprintf(stderr, "hybridstore-tool hfm: unknown rho '%s' (expected 1, 2, 3 or bypass)\n",
            a.rho.c_str());
    return false;
  }
  if (mode != PartitionMode::kRho3 && a.delta_given) {
    fprintf(stderr, "hybridstore-tool hfm: --delta applies to rho 3 only\n");
    return false;
  }
  if (a.extent_blocks > SegmentMap::kMaxExtentBlocks) {
    fprintf(stderr, "hybridstore-tool hfm: extent of %llu blocks: must be a power of two "
            "between 2 and %u\n", static_cast<unsigned long long>(a.extent_blocks),
            SegmentMap::kMaxExtentBlocks);
    return false;
  }
  uint32_t delta = a.delta;
  if (mode == PartitionMode::kRho3 && !a.delta_given && a.extent_blocks < delta &&
      a.extent_blocks >= 2)
    delta = static_cast<uint32_t>(a.extent_blocks);
  std::string err;
  if (SegmentMap::make(static_cast<uint32_t>(a.extent_blocks), mode, delta, m, &err) < 0) {
    fprintf(stderr, "hybridstore-tool hfm: %s\n", err.c_str());
    return false;
  }
  return true;
}

void add_common(CLI::App* sub, HfmArgs* a) {
  sub->add_option("--extent-blocks,-s", a->extent_blocks, "extent size in blocks (power of two)")
      ->required();
  sub->add_option("--rho,-r", a->rho, "partitioning: 1, 2, 3 (or bypass)")->required();
  sub->add_option_function<uint32_t>(
      "--delta,-d",
      [a](const uint32_t& d) {
        a->delta = d;
        a->delta_given = true;
      },
      "rho 3 threshold in blocks (power of two; default 32, capped at the extent)");
}

int run_layout(const HfmArgs& a) {
  SegmentMap m;
  if (!build_map(a, &m)) return 1;
  if (m.mode() == PartitionMode::kRho3)
    printf("extent %u blocks, %s, delta %u: %d level%s\n", m.extent_blocks(),
           partition_mode_name(m.mode()), m.delta(), m.levels(), m.levels() == 1 ? "" : "s");
  else
    printf("extent %u blocks, %s: %d level%s\n", m.extent_blocks(),
           partition_mode_name(m.mode()), m.levels(), m.levels() == 1 ? "" : "s");
  for (const SegmentNode& n : m.nodes()) {
    std::string indent(static_cast<size_t>(n.level) * 2, ' ');
    std::string name = n.index < 0 ? "head" : "seg " + std::to_string(n.index);
    printf("%slevel %d %-7s [%u, %u)%s\n", indent.c_str(), n.level, name.c_str(), n.start,
           n.start + n.length,
           n.partitioned ? ("  -> level " + std::to_string(n.level + 1)).c_str() : "");
  }
  return 0;
}

int run_next(const HfmArgs& a) {
  SegmentMap m;
  if (!build_map(a, &m)) return 1;
  if (a.pos < 0 || static_cast<uint64_t>(a.pos) >= m.extent_blocks()) {
    fprintf(stderr, "hybridstore-tool hfm: --pos %lld out of range: must be 0..%u\n",
            static_cast<long long>(a.pos), m.extent_blocks() - 1);
    return 1;
  }
  MapPosition p = m.next(static_cast<uint32_t>(a.pos));
  printf("segment=%d level=%d start=%u\n", p.index, p.level, p.start);
  return 0;
}

ToolCommand hfm_command(
    "hfm", "HFM segment layout and map function of one extent (no store needed)",
    [](CLI::App* sub, GlobalArgs*) -> std::function<int()> {
      auto layout_args = std::make_shared<HfmArgs>();
      auto next_args = std::make_shared<HfmArgs>();
      sub->require_subcommand(1);
      CLI::App* layout = sub->add_subcommand("layout", "print the segment tree of an extent");
      add_common(layout, layout_args.get());
      CLI::App* next = sub->add_subcommand(
          "next", "print where the allocation after block POS starts: segment=I level=L "
                  "start=B (I = -1 for a head; start = extent size when full)");
      add_common(next, next_args.get());
      next->add_option("--pos,-p", next_args->pos,
                       "last block (0-based) of the previous allocation")
          ->required();
      return [layout, next, layout_args, next_args]() {
        if (layout->parsed()) return run_layout(*layout_args);
        if (next->parsed()) return run_next(*next_args);
        return 2;
      };
    });

}  // namespace
}  // namespace hybridstore::tool
