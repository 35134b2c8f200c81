#include "hybridstore/sections/hole_cleaner.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "hscommon/config.h"

namespace hybridstore {

const char* victim_policy_name(VictimPolicy p) {
  switch (p) {
    case VictimPolicy::kGreedy: return "greedy";
    case VictimPolicy::kCostBenefit: return "cost-benefit";
    case VictimPolicy::kCostHotness: return "cost-hotness";
  }
  return "?";
}

bool parse_victim_policy(std::string_view s, VictimPolicy* out) {
  if (s == "greedy") *out = VictimPolicy::kGreedy;
  else if (s == "cost-benefit") *out = VictimPolicy::kCostBenefit;
  else if (s == "cost-hotness") *out = VictimPolicy::kCostHotness;
  else return false;
  return true;
}

CleanerConfig CleanerConfig::from_config(const Config& cfg) {
  CleanerConfig c;
  parse_victim_policy(cfg.get_str("hybridstore_ssd_cleaner_policy"), &c.policy);
  c.start_free = cfg.get_double("hybridstore_ssd_cleaner_start_free");
  c.stop_free = std::max(c.start_free, cfg.get_double("hybridstore_ssd_cleaner_stop_free"));
  c.max_live = cfg.get_double("hybridstore_ssd_cleaner_max_live");
  c.hotness_exponent = cfg.get_double("hybridstore_ssd_cleaner_hotness_exponent");
  return c;
}

bool HoleCleaner::should_start(const SectionAllocator& a) const {
  return a.takeable_units() < cfg_.start_free * a.erase_unit_count();
}

bool HoleCleaner::should_continue(const SectionAllocator& a) const {
  return a.takeable_units() < cfg_.stop_free * a.erase_unit_count();
}

double HoleCleaner::hotness(const EraseUnitInfo& u, uint64_t now_us) {
  if (u.live_blocks == 0) return 0;
  double age_s = (double(now_us) - u.mean_born_us) / 1e6;
  // A unit written this very microsecond has no measurable age yet.
  age_s = std::max(age_s, 1e-6);
  return u.mean_writes / age_s;
}

double HoleCleaner::score(VictimPolicy p, const EraseUnitInfo& u, uint64_t now_us,
                          double hotness_exponent) {
  if (u.live_blocks == 0) return std::numeric_limits<double>::infinity();
  double util = double(u.live_blocks) / u.capacity_blocks;
  switch (p) {
    case VictimPolicy::kGreedy:
      return 1 - util;
    case VictimPolicy::kCostBenefit: {
      double age_s = now_us > u.last_modified_us ? double(now_us - u.last_modified_us) / 1e6 : 0;
      return (1 - util) * age_s / (1 + util);
    }
    case VictimPolicy::kCostHotness: {
      double h = std::max(hotness(u, now_us), 1e-12);
      double weight = hotness_exponent == 1 ? h
                      : hotness_exponent == 0.5 ? std::sqrt(h)
                                                : std::pow(h, hotness_exponent);
      return (1 - util) / (2 * util * weight);
    }
  }
  return 0;
}

size_t HoleCleaner::pick_victims(const SectionAllocator& a, uint64_t now_us, size_t max,
                                 std::vector<VictimCandidate>* out, int section) const {
  out->clear();
  const uint32_t n = a.erase_unit_count();
  if (n == 0 || max == 0) return 0;
  const uint32_t scan = cfg_.scan_limit == 0 || cfg_.scan_limit > n ? n : cfg_.scan_limit;
  std::vector<VictimCandidate> best;
  auto better = [](const VictimCandidate& x, const VictimCandidate& y) {
    return x.score > y.score || (x.score == y.score && x.eu < y.eu);
  };  // used as the heap order, it keeps the worst kept candidate on top
  uint32_t eu = cursor_ % n;
  for (uint32_t k = 0; k < scan; ++k, eu = (eu + 1 == n ? 0 : eu + 1)) {
    EraseUnitInfo info = a.erase_unit_info(eu);
    if (!info.owned || !info.written || info.cleaning) continue;
    if (section >= 0 && info.section != section) continue;
    double util = double(info.live_blocks) / info.capacity_blocks;
    if (util > cfg_.max_live) continue;
    VictimCandidate c{eu, score(cfg_.policy, info, now_us, cfg_.hotness_exponent), util,
                      hotness(info, now_us),
                      now_us > info.last_modified_us
                          ? double(now_us - info.last_modified_us) / 1e6 : 0};
    if (best.size() < max) {
      best.push_back(c);
      std::push_heap(best.begin(), best.end(), better);
    } else if (better(c, best.front())) {
      std::pop_heap(best.begin(), best.end(), better);
      best.back() = c;
      std::push_heap(best.begin(), best.end(), better);
    }
  }
  cursor_ = eu;
  std::sort(best.begin(), best.end(), better);
  *out = std::move(best);
  return out->size();
}

}  // namespace hybridstore
