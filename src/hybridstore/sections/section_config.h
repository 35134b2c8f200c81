// Data sections of the SSD tier: parsing and formatting `hybridstore_ssd_sections`.
//
// A section is `name:extent:field:field...` or `name:bypass`; sections are
// separated by commas, e.g.
//   small:8K:rho1,mid:64K:rho2,large:512K:rho3:delta32,backup:bypass
// Fields after the extent size (each may also be written key=value):
//   rho1 | rho2 | rho3      partitioning mode (required)
//   delta<N>                rho 3 threshold in blocks (power of two; default 32,
//                           capped at the extent)
//   theta<N> | theta<size>  seal an extent when its free tail drops below N
//                           blocks (or below a byte size such as theta2K)
//   hfm | rehypar           extent selection policy (policy=...)
//   holes=fill|clean        fill: when clean space is short, holes in written
//                           extents take new data in place (F2FS-style slack
//                           reuse); clean: holes only come back through the
//                           cleaner (pure log-structured)
//   gaps=on|off             let small objects fill the rounding gaps the map
//                           function leaves in extents that are still staged
//   remainder=down|table|fresh
//                           where the part of a large object beyond its whole
//                           extents goes: down = to the next smaller section
//                           (default), table = this section's map table,
//                           fresh = a clean extent (the papers)
// Sizes accept K/M/G suffixes; the extent must be a power-of-two number of
// allocation blocks (hybridstore_ssd_block_size), at least 2.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hybridstore/sections/segment_map.h"

namespace hybridstore {

class Config;

enum class SelectionPolicy : uint8_t { kHfm = 0, kReHypar = 1 };
enum class HoleMode : uint8_t { kFill = 0, kClean = 1 };
enum class RemainderMode : uint8_t { kDown = 0, kTable = 1, kFresh = 2 };

const char* selection_policy_name(SelectionPolicy p);
const char* hole_mode_name(HoleMode m);
const char* remainder_mode_name(RemainderMode m);

struct SectionSpec {
  std::string name;
  PartitionMode mode = PartitionMode::kRho1;
  uint32_t extent_blocks = 0;  // 0 for bypass
  uint32_t delta = 0;          // blocks, rho 3 only
  uint32_t theta = 1;          // blocks; >= 1 (1 = seal only when full)
  SelectionPolicy policy = SelectionPolicy::kReHypar;
  HoleMode holes = HoleMode::kFill;
  bool fill_gaps = true;
  RemainderMode remainder = RemainderMode::kDown;

  bool bypass() const { return mode == PartitionMode::kBypass; }
};

// Values a section takes when its text does not say.
struct SectionDefaults {
  uint32_t block_size = 1024;       // bytes per allocation block
  double theta_ratio = 1.0 / 32;    // theta = max(1, ratio * extent blocks)
  SelectionPolicy policy = SelectionPolicy::kReHypar;
  HoleMode holes = HoleMode::kFill;
  uint32_t delta = 32;

  // From hybridstore_ssd_block_size, hybridstore_ssd_section_theta_ratio and
  // hybridstore_ssd_section_policy.
  static SectionDefaults from_config(const Config& cfg);
};

constexpr size_t kMaxSections = 16;
constexpr uint64_t kMaxExtentBytes = 1ull << 30;

// Parses the whole option value. Returns 0, or -EINVAL with *error naming the
// offending section and field.
int parse_sections(std::string_view text, const SectionDefaults& defaults,
                   std::vector<SectionSpec>* out, std::string* error);

// Canonical text of one section / all sections (round-trips through parse).
std::string format_section(const SectionSpec& s, uint32_t block_size);
std::string format_sections(const std::vector<SectionSpec>& v, uint32_t block_size);

// "8K", "512K", "1536" (exact; round-trips through parse_size).
std::string format_size_exact(uint64_t bytes);

// The segment map of a non-bypass section (its spec was validated by parse).
SegmentMap section_segment_map(const SectionSpec& s);

}  // namespace hybridstore
