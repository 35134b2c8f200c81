// Victim choice for reclaiming holes in the SSD sections.
//
// Removes and overwrites leave holes inside written extents. The cleaner's
// unit is the erase unit (SFS: the segment): a victim's live data is moved into
// open extents and the victim returns to the free pool. This class decides
// which units to clean and when; the engine moves the data:
//
//   HoleCleaner c(CleanerConfig::from_config(cfg));
//   if (c.should_start(alloc)) {
//     while (c.should_continue(alloc) && c.pick_victims(alloc, now, 1, &v)) {
//       alloc.begin_cleaning(v[0].eu);                 // its holes take no new data
//       alloc.live_ranges(v[0].eu, &ranges);           // (block, blocks, owner, ...)
//       for each range: allocate a new home (group from its hotness), copy the
//         data, switch the owner's extent map in the same RocksDB batch as
//         drain_records(), then alloc.release(old range) - the unit goes back
//         to the pool with its last live block.
//     }
//   }
//
// Policies (u = live fraction of the unit, H = its hotness):
//   greedy        1 - u                             (most free space first)
//   cost-benefit  (1 - u) * age / (1 + u)           (Sprite LFS; age = now - the
//                                                    unit's latest placement)
//   cost-hotness  (1 - u) / (2 u H^e)               (SFS, docs/algorithms.md, has e = 1;
//                                                    ours e = 1/2 by default)
// The exponent decides how much free space hot data keeps. Victims of
// different hotness are taken at equal scores, so (1 - u) / u at each group's
// victims - about twice the group's free space per live block - grows as H^e.
// Cleaning moves least when that free space grows as the square root of the
// update rate (a group moves about its writes / (2 x free space per live
// block); the sum is least for a fixed total when each group's share goes as
// the square root of its writes x live blocks), hence e = 1/2. With e = 1 hot
// units wait until nearly empty while cold ones are cleaned fuller: the
// cleaning bench (4 hotness groups, 80% full, 10% of the objects taking 90% of
// the writes) gives WA 1.65 with e = 1, 1.52 with e = 1/2 (oracle split 1.51).
// Block hotness is writes / age (SFS); the unit's hotness is approximated by
// mean writes / (now - mean creation time) over its live blocks, which the
// allocator keeps as exact sums per unit.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "hybridstore/sections/section_allocator.h"

namespace hybridstore {

class Config;

enum class VictimPolicy : uint8_t { kGreedy = 0, kCostBenefit = 1, kCostHotness = 2 };
const char* victim_policy_name(VictimPolicy p);
bool parse_victim_policy(std::string_view s, VictimPolicy* out);

struct CleanerConfig {
  VictimPolicy policy = VictimPolicy::kCostHotness;
  double start_free = 0.05;  // start when free erase units / all drops below
  double stop_free = 0.08;   // keep going until free erase units / all reaches
  // ("free": above the kvfs's floor, SectionAllocator::takeable_units)
  double max_live = 0.95;    // never pick a unit fuller than this
  uint32_t scan_limit = 0;   // units examined per pick (0 = all), from a rotating cursor
  // e in cost-hotness's (1 - u) / (2 u H^e); 1 is the SFS paper's formula.
  static constexpr double kDefaultHotnessExponent = 0.5;
  double hotness_exponent = kDefaultHotnessExponent;

  static CleanerConfig from_config(const Config& cfg);
};

struct VictimCandidate {
  uint32_t eu;
  double score;
  double utilization;  // live fraction u
  double hotness;      // writes per second of age
  double age_s;        // since the unit's latest placement
};

class HoleCleaner {
 public:
  explicit HoleCleaner(const CleanerConfig& cfg) : cfg_(cfg) {}

  const CleanerConfig& config() const { return cfg_; }

  bool should_start(const SectionAllocator& a) const;
  bool should_continue(const SectionAllocator& a) const;

  // Up to `max` victims, best first: written units not being cleaned, with
  // live fraction <= max_live, of `section` (or any when -1). Returns how many.
  size_t pick_victims(const SectionAllocator& a, uint64_t now_us, size_t max,
                      std::vector<VictimCandidate>* out, int section = -1) const;

  // Hotness of a unit (writes per second of age) and the policy's score;
  // higher scores are better victims. Empty units score +infinity.
  static double hotness(const EraseUnitInfo& u, uint64_t now_us);
  static double score(VictimPolicy p, const EraseUnitInfo& u, uint64_t now_us,
                      double hotness_exponent = CleanerConfig::kDefaultHotnessExponent);

 private:
  CleanerConfig cfg_;
  mutable uint32_t cursor_ = 0;
};

}  // namespace hybridstore
