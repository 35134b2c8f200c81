// Cleaning write amplification of the section allocator: the SSD is filled to
// a fixed live fraction with 4 KiB objects, then objects are overwritten out
// of place with a hot/cold skew (10% of objects take 90% of the writes). When
// free erase units run low, the cleaner picks victims and moves their live
// objects, exactly as the engine will (begin_cleaning, live_ranges, allocate,
// release). WA = (user bytes + moved bytes) / user bytes over the measured
// phase, after a warm-up.
//
// Geometry follows the reference simulation in anchors-algorithms.md 2.5:
// 4096 erase units of 64 objects (256 KiB units, 4 KiB objects).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <stdexcept>

#include "alloc_bench.h"
#include "hybridstore/sections/hole_cleaner.h"
#include "hybridstore/sections/section_allocator.h"
#include "hybridstore/tier/hotness_groups.h"

namespace hybridstore::bench {

const char* cleaning_scheme_name(CleaningScheme s) {
  switch (s) {
    case CleaningScheme::kGreedySingleLog: return "greedy, one log";
    case CleaningScheme::kCostBenefitSingleLog: return "cost-benefit, one log";
    case CleaningScheme::kCostBenefitSepGc: return "cost-benefit, separate log for cleaned data";
    case CleaningScheme::kCostHotnessGrouped: return "cost-hotness, 4 hotness groups (SFS)";
    case CleaningScheme::kCostHotnessPaper:
      return "cost-hotness with the paper's 1 / H, 4 hotness groups";
    case CleaningScheme::kCostBenefitOracle: return "cost-benefit, true hot/cold class (oracle)";
  }
  return "?";
}

namespace {

// How a scheme places and picks: its lanes (groups), its victim policy.
struct SchemeSetup {
  uint32_t groups = 1;
  VictimPolicy policy = VictimPolicy::kCostBenefit;
  double hotness_exponent = CleanerConfig::kDefaultHotnessExponent;
  bool by_hotness = false;  // groups chosen by HotnessGroups
};

SchemeSetup setup_for(CleaningScheme scheme) {
  SchemeSetup su;
  switch (scheme) {
    case CleaningScheme::kGreedySingleLog: su.policy = VictimPolicy::kGreedy; break;
    case CleaningScheme::kCostBenefitSingleLog: break;
    case CleaningScheme::kCostBenefitSepGc: su.groups = 2; break;
    case CleaningScheme::kCostHotnessPaper:
      su.hotness_exponent = 1;
      [[fallthrough]];
    case CleaningScheme::kCostHotnessGrouped:
      su.groups = 4;
      su.policy = VictimPolicy::kCostHotness;
      su.by_hotness = true;
      break;
    case CleaningScheme::kCostBenefitOracle: su.groups = 2; break;
  }
  return su;
}

constexpr uint32_t kObject = 4096, kBlock = 1024, kUnit = 256 << 10;

// One section of 8 KiB extents whose holes are cleaned, over `erase_units`
// units, with `groups` lanes; records are not kept.
std::unique_ptr<SectionAllocator> make_allocator(const CleaningSpec& spec, uint32_t groups) {
  AllocatorGeometry g;
  g.block_size = kBlock;
  g.blocks = uint64_t(spec.erase_units) * (kUnit / kBlock);
  g.erase_block_bytes = kUnit;
  g.groups = groups;
  SectionDefaults d;
  std::string err;
  std::unique_ptr<SectionAllocator> a;
  AllocatorTuning tune;
  tune.staging_timeout_us = UINT64_MAX / 2;
  if (parse_sections("log:8K:rho1:holes=clean", d, &g.sections, &err) < 0 ||
      SectionAllocator::create(g, tune, &a, &err) < 0)
    throw std::runtime_error("cleaning: " + err);
  a->set_track_records(false);
  return a;
}

struct CleaningCounts {
  uint64_t user = 0, moved = 0, victims = 0;
  double util_sum = 0;
};

// Cleans a few victims per scan until `reserve` + slack units are free again,
// moving each victim's live objects with `place`; counts them when measuring.
// `place(id, cleaning)` allocates the object's new home.
template <typename Place>
void clean_to_reserve(SectionAllocator* a, HoleCleaner& cleaner, const CleaningSpec& spec,
                      uint32_t reserve, uint64_t now, bool measuring, const Place& place,
                      CleaningCounts* counts) {
  std::vector<VictimCandidate> victims;
  std::vector<LiveRange> live;
  while (a->free_erase_units() < reserve + spec.slack) {
    if (cleaner.pick_victims(*a, now, spec.victims_per_pass, &victims) == 0)
      throw std::runtime_error("cleaning: no victim");
    for (const auto& v : victims) {
      if (a->begin_cleaning(v.eu) != 0) continue;
      a->live_ranges(v.eu, &live);
      for (const LiveRange& r : live) {
        place(r.owner, true);
        a->release(r.block, r.blocks, now);
        if (measuring) ++counts->moved;
      }
      if (measuring) {
        ++counts->victims;
        counts->util_sum += v.utilization;
      }
    }
  }
}

}  // namespace

CleaningResult run_cleaning(const CleaningSpec& spec, CleaningScheme scheme, uint64_t seed,
                            const Progress& progress) {
  auto t0 = std::chrono::steady_clock::now();
  const uint32_t per_unit = kUnit / kObject;

  const SchemeSetup su = setup_for(scheme);
  const uint32_t groups = su.groups;
  const bool by_hotness = su.by_hotness;

  std::unique_ptr<SectionAllocator> a = make_allocator(spec, groups);
  CleanerConfig ccfg;
  ccfg.policy = su.policy;
  ccfg.max_live = 1.0;
  ccfg.hotness_exponent = su.hotness_exponent;
  HoleCleaner cleaner(ccfg);
  HotnessGroupOptions gopts;
  gopts.groups = groups;
  HotnessGroups grouping(gopts);

  const uint64_t n = static_cast<uint64_t>(spec.fill * spec.erase_units * per_unit);
  const uint64_t n_hot = static_cast<uint64_t>(spec.hot_objects * n);
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> perm(n);
  for (uint64_t i = 0; i < n; ++i) perm[i] = i;
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<uint8_t> hot(n, 0);
  for (uint64_t i = 0; i < n_hot; ++i) hot[perm[i]] = 1;
  std::vector<uint64_t> where(n), born(n);
  std::vector<uint32_t> writes(n, 0);

  uint64_t now = 1;
  auto hotness = [&](uint64_t id) { return double(writes[id]) / (double(now - born[id]) + 1); };
  auto group_for = [&](uint64_t id, bool cleaning) -> uint32_t {
    switch (scheme) {
      case CleaningScheme::kCostBenefitSepGc: return cleaning ? 1 : 0;
      case CleaningScheme::kCostBenefitOracle: return hot[id] ? 0 : 1;
      default: return by_hotness ? grouping.classify(hotness(id)) : 0;
    }
  };
  std::vector<AllocPiece> pieces;
  AllocEvents ev;
  auto place = [&](uint64_t id, bool cleaning) {
    AllocRequest r;
    r.bytes = kObject;
    r.group = group_for(id, cleaning);
    r.owner = id;
    r.writes = writes[id];
    r.born_us = born[id];
    r.now_us = now;
    if (a->allocate(r, &pieces, &ev) != 0 || pieces.size() != 1)
      throw std::runtime_error("cleaning: allocation failed; the reserve is too small");
    a->collect(&ev);  // completed units are written (and become cleanable)
    ev.clear();
    where[id] = pieces[0].block;
  };

  for (uint64_t id = 0; id < n; ++id) {
    born[id] = now;
    writes[id] = 1;
    place(id, false);
    ++now;
  }
  // Keep enough free units for every lane's open unit plus the victims' data.
  const uint32_t reserve = 4 + 2 * groups;
  const uint64_t warm = static_cast<uint64_t>(spec.warmup_capacity * n);
  const uint64_t total = warm + static_cast<uint64_t>(spec.measure_capacity * n);
  const uint64_t refine_every = std::max<uint64_t>(n / 8, 1);
  std::vector<double> samples;
  CleaningResult res;
  res.scheme = cleaning_scheme_name(scheme);
  CleaningCounts counts;
  for (uint64_t w = 0; w < total; ++w, ++now) {
    const bool measuring = w >= warm;
    if (by_hotness && w % refine_every == 0) {
      samples.clear();
      for (int k = 0; k < 4096; ++k) samples.push_back(hotness(rng() % n));
      grouping.refine(samples);
    }
    uint64_t id = (rng() % 1'000'000 < spec.hot_writes * 1'000'000)
                      ? perm[rng() % n_hot]
                      : perm[n_hot + rng() % (n - n_hot)];
    ++writes[id];
    uint64_t old = where[id];
    place(id, false);
    a->release(old, kObject / kBlock, now);
    if (measuring) ++counts.user;
    if (a->free_erase_units() < reserve + (spec.slack ? 0 : 1))
      clean_to_reserve(a.get(), cleaner, spec, reserve, now, measuring, place, &counts);
    if (progress && (w + 1) % 1'000'000 == 0)
      progress(std::string("cleaning: ") + cleaning_scheme_name(scheme) + ": " +
               std::to_string((w + 1) / 1000) + "k of " + std::to_string(total / 1000) +
               "k writes");
  }
  res.user_writes = counts.user;
  res.moved_objects = counts.moved;
  res.victims = counts.victims;
  res.wa = counts.user ? double(counts.user + counts.moved) / double(counts.user) : 0;
  res.mean_victim_util = counts.victims ? counts.util_sum / double(counts.victims) : 0;
  res.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace hybridstore::bench
