#include "hybridstore/tier/knapsack_planner.h"

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <numeric>

#include "hscommon/config.h"

namespace hybridstore {

bool parse_tier_policy(std::string_view name, TierPolicy* out) {
  if (name == "none") *out = TierPolicy::kNone;
  else if (name == "hro") *out = TierPolicy::kHro;
  else if (name == "hot") *out = TierPolicy::kHot;
  else if (name == "lru") *out = TierPolicy::kLru;
  else return false;
  return true;
}

const char* tier_policy_name(TierPolicy p) {
  switch (p) {
    case TierPolicy::kNone: return "none";
    case TierPolicy::kHro: return "hro";
    case TierPolicy::kHot: return "hot";
    case TierPolicy::kLru: return "lru";
  }
  return "?";
}

PlannerOptions planner_options_from_config(const Config& conf, uint64_t ssd_capacity,
                                           uint64_t alloc_unit) {
  PlannerOptions o;
  if (!parse_tier_policy(conf.get_str("hybridstore_tier_policy"), &o.policy))
    o.policy = TierPolicy::kNone;  // the registry only admits known names
  o.alloc_unit = alloc_unit ? alloc_unit : 1;
  double b = conf.get_double("hybridstore_tier_ssd_target_ratio") * static_cast<double>(ssd_capacity);
  uint64_t budget = b <= 0 ? 0 : static_cast<uint64_t>(b);
  o.ssd_budget = budget / o.alloc_unit * o.alloc_unit;
  o.max_candidates = plan_max_candidates(conf);
  return o;
}

size_t plan_max_candidates(const Config& conf) {
  const int64_t k = conf.get_int("hybridstore_tier_plan_max_candidates");
  if (k > 0) return static_cast<size_t>(k);
  // A store given a memory budget plans in bounded memory: every object's
  // candidate at once took a 1M-object OSD 430 MB above its 2 GiB target
  // for the seconds of a pass, which no cache can give back in time.
  if (conf.get_size("hybridstore_memory_target") > 0) return kPlanCandidatesUnderATarget;
  return 0;
}

bool random_requests_pay_for_copy(double randomness, uint64_t size, uint64_t break_even) {
  if (!break_even) return true;
  return (randomness - 1.0) * static_cast<double>(break_even) >= static_cast<double>(size);
}

uint64_t knapsack_weight(uint64_t size, uint64_t alloc_unit) {
  if (size == 0) return 0;
  if (alloc_unit <= 1) return size;
  uint64_t units = size / alloc_unit + (size % alloc_unit ? 1 : 0);
  return units * alloc_unit;
}

double hro_benefit(const TierCandidate& c, uint64_t alloc_unit) {
  uint64_t w = knapsack_weight(c.size, alloc_unit);
  if (w == 0 || c.frequency <= 0) return 0;
  // Evaluated as (f * R) / s, the same expression as the knapsack's density, so
  // the plan and greedy_knapsack() order ties identically.
  return c.frequency * c.randomness / static_cast<double>(w);
}

double policy_score(TierPolicy p, const TierCandidate& c, uint64_t alloc_unit) {
  switch (p) {
    case TierPolicy::kNone: return 0;
    case TierPolicy::kHro: return hro_benefit(c, alloc_unit);
    case TierPolicy::kHot: return c.frequency;
    case TierPolicy::kLru: return static_cast<double>(c.last_access_us);
  }
  return 0;
}

namespace {

// Candidates eligible for the SSD, sorted by descending score, ties by index.
std::vector<size_t> rank(const std::vector<double>& score, const std::vector<bool>& eligible) {
  std::vector<size_t> order;
  order.reserve(score.size());
  for (size_t i = 0; i < score.size(); ++i)
    if (eligible[i]) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (score[a] != score[b]) return score[a] > score[b];
    return a < b;
  });
  return order;
}

}  // namespace

namespace {

struct Fill {
  std::vector<size_t> chosen;  // rank order (a forced item first)
  uint64_t used = 0;
  double value = 0;  // sum of f * R
};

// Walks `order`, taking every object that still fits; `forced` (if not SIZE_MAX)
// goes in first.
Fill fill_greedily(const std::vector<TierCandidate>& c, const std::vector<size_t>& order,
                   const std::vector<uint64_t>& weight, uint64_t budget, size_t forced) {
  Fill f;
  auto take = [&](size_t i) {
    f.used += weight[i];
    f.chosen.push_back(i);
    f.value += c[i].frequency * c[i].randomness;
  };
  if (forced != SIZE_MAX) take(forced);
  for (size_t i : order) {
    if (f.used == budget) break;
    if (i == forced || weight[i] > budget - f.used) continue;  // a smaller one may still fit
    take(i);
  }
  return f;
}

}  // namespace

TierPlan plan_tiers(const std::vector<TierCandidate>& cands, const PlannerOptions& opts) {
  TierPlan plan;
  if (opts.policy == TierPolicy::kNone) return plan;
  size_t n = cands.size();
  std::vector<double> score(n);
  std::vector<bool> eligible(n);
  std::vector<uint64_t> weight(n);
  for (size_t i = 0; i < n; ++i) {
    const TierCandidate& c = cands[i];
    score[i] = policy_score(opts.policy, c, opts.alloc_unit);
    eligible[i] = c.size > 0 && c.frequency > 0 && score[i] > 0;
    weight[i] = knapsack_weight(c.size, opts.alloc_unit);
  }
  std::vector<size_t> order = rank(score, eligible);
  Fill best = fill_greedily(cands, order, weight, opts.ssd_budget, SIZE_MAX);

  if (opts.policy == TierPolicy::kHro && opts.repair_candidates > 0) {
    // The most valuable objects the greedy left out, by f * R (ties by index).
    std::vector<bool> in(n, false);
    for (size_t i : best.chosen) in[i] = true;
    std::vector<size_t> skipped;
    for (size_t i : order)
      if (!in[i] && weight[i] <= opts.ssd_budget) skipped.push_back(i);
    auto value = [&](size_t i) { return cands[i].frequency * cands[i].randomness; };
    size_t k = std::min<size_t>(opts.repair_candidates, skipped.size());
    std::partial_sort(skipped.begin(), skipped.begin() + static_cast<ptrdiff_t>(k), skipped.end(),
                      [&](size_t a, size_t b) {
                        if (value(a) != value(b)) return value(a) > value(b);
                        return a < b;
                      });
    for (size_t j = 0; j < k; ++j) {
      if (value(skipped[j]) <= 0) break;
      Fill f = fill_greedily(cands, order, weight, opts.ssd_budget, skipped[j]);
      if (f.value > best.value) best = std::move(f);
    }
  }

  std::vector<bool> chosen(n, false);
  for (size_t i : best.chosen) {
    chosen[i] = true;
    if (!cands[i].on_ssd) {
      plan.promote.push_back(i);
      plan.promote_bytes += cands[i].size;
    }
  }
  plan.chosen = std::move(best.chosen);
  plan.chosen_bytes = best.used;
  plan.chosen_value = best.value;
  for (size_t i = 0; i < n; ++i) {
    if (cands[i].on_ssd && !chosen[i] && cands[i].size > 0) {
      plan.demote.push_back(i);
      plan.demote_bytes += cands[i].size;
    }
  }
  return plan;
}

BoundedPlanner::BoundedPlanner(const PlannerOptions& opts) : opts_(opts) {}

bool BoundedPlanner::keep_best(std::vector<Held>* heap, size_t cap, Held h) {
  if (cap == 0) return false;
  // a ranks before b: larger key, then earlier offer. The heap's top is the
  // entry that ranks last, the first to go.
  auto before = [](const Held& a, const Held& b) { return a.key != b.key ? a.key > b.key : a.seq < b.seq; };
  if (heap->size() < cap) {
    heap->push_back(std::move(h));
    std::push_heap(heap->begin(), heap->end(), before);
    return true;
  }
  if (!before(h, heap->front())) return false;
  std::pop_heap(heap->begin(), heap->end(), before);
  const uint64_t dropped = heap->back().id;
  heap->back() = std::move(h);
  std::push_heap(heap->begin(), heap->end(), before);
  if (on_drop_) on_drop_(dropped);
  return true;
}

unsigned BoundedPlanner::offer(const TierCandidate& c, uint64_t id) {
  Held h;
  h.c = c;
  h.id = id;
  h.seq = seq_++;
  if (c.on_ssd) on_ssd_weight_ += knapsack_weight(c.size, opts_.alloc_unit);
  if (opts_.max_candidates == 0) {
    all_.push_back(h);
    return 1;
  }
  unsigned kept = 0;
  const double score = policy_score(opts_.policy, c, opts_.alloc_unit);
  if (c.size > 0 && c.frequency > 0 && score > 0) {
    h.key = score;
    kept += keep_best(&best_, opts_.max_candidates, h);
    if (opts_.policy == TierPolicy::kHro && opts_.repair_candidates > 0) {
      h.key = c.frequency * c.randomness;
      kept += keep_best(&valued_, opts_.repair_candidates, h);
    }
  }
  if (c.on_ssd && c.size > 0) {
    h.key = -score;  // the coldest rank first
    kept += keep_best(&coldest_, opts_.max_candidates, h);
  }
  return kept;
}

size_t BoundedPlanner::kept() const { return best_.size() + valued_.size() + coldest_.size() + all_.size(); }

size_t BoundedPlanner::memory_bytes() const {
  return (best_.capacity() + valued_.capacity() + coldest_.capacity() + all_.capacity()) * sizeof(Held);
}

void BoundedPlanner::take(std::vector<TierCandidate>* cands, std::vector<uint64_t>* ids) {
  std::vector<Held> held = std::move(all_);
  for (auto* v : {&best_, &valued_, &coldest_}) {
    held.insert(held.end(), v->begin(), v->end());
    std::vector<Held>().swap(*v);
  }
  all_ = std::vector<Held>();
  std::sort(held.begin(), held.end(), [](const Held& a, const Held& b) { return a.seq < b.seq; });
  held.erase(std::unique(held.begin(), held.end(), [](const Held& a, const Held& b) { return a.seq == b.seq; }),
             held.end());
  cands->clear();
  cands->reserve(held.size());
  ids->clear();
  ids->reserve(held.size());
  for (const Held& h : held) {
    cands->push_back(h.c);
    ids->push_back(h.id);
  }
  seq_ = 0;
  on_ssd_weight_ = 0;
}

TierPlan BoundedPlanner::finish(std::vector<uint64_t>* ids) { return finish(ids, opts_.ssd_budget); }

TierPlan BoundedPlanner::finish(std::vector<uint64_t>* ids, uint64_t ssd_budget) {
  std::vector<TierCandidate> cands;
  take(&cands, ids);
  PlannerOptions po = opts_;
  po.ssd_budget = ssd_budget;
  return plan_tiers(cands, po);
}

std::vector<KnapsackItem> hro_knapsack_items(const std::vector<TierCandidate>& cands,
                                             uint64_t alloc_unit) {
  std::vector<KnapsackItem> items(cands.size());
  for (size_t i = 0; i < cands.size(); ++i) {
    items[i].weight = knapsack_weight(cands[i].size, alloc_unit);
    items[i].value =
        cands[i].size > 0 && cands[i].frequency > 0 ? cands[i].frequency * cands[i].randomness : 0;
  }
  return items;
}

std::vector<size_t> greedy_knapsack(const std::vector<KnapsackItem>& items, uint64_t capacity) {
  std::vector<double> density(items.size());
  std::vector<bool> eligible(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    eligible[i] = items[i].value > 0;
    density[i] = items[i].weight == 0 ? items[i].value * 1e300
                                      : items[i].value / static_cast<double>(items[i].weight);
  }
  std::vector<size_t> out;
  uint64_t used = 0;
  for (size_t i : rank(density, eligible)) {
    if (items[i].weight > capacity - used) continue;
    used += items[i].weight;
    out.push_back(i);
  }
  return out;
}

namespace {

// Max value with sum(w[i]) <= cap over the listed items; if `take` is given,
// records the decisions so the chosen set can be rebuilt.
double knapsack_dp(const std::vector<KnapsackItem>& items, const std::vector<size_t>& idx,
                   const std::vector<uint64_t>& w, uint64_t cap, std::vector<size_t>* chosen) {
  std::vector<double> best(cap + 1, 0.0);
  std::vector<uint64_t> take;
  size_t row = cap + 1;
  if (chosen) take.assign((idx.size() * row + 63) / 64, 0);
  for (size_t k = 0; k < idx.size(); ++k) {
    uint64_t wk = w[k];
    double v = items[idx[k]].value;
    if (wk > cap) continue;
    for (uint64_t c = cap + 1; c-- > wk;) {
      double cand = best[c - wk] + v;
      if (cand > best[c]) {
        best[c] = cand;
        if (chosen) {
          size_t bit = k * row + c;
          take[bit / 64] |= uint64_t{1} << (bit % 64);
        }
      }
    }
  }
  if (chosen) {
    uint64_t c = cap;
    for (size_t k = idx.size(); k-- > 0;) {
      size_t bit = k * row + c;
      if (take[bit / 64] >> (bit % 64) & 1) {
        chosen->push_back(idx[k]);
        c -= w[k];
      }
    }
    std::reverse(chosen->begin(), chosen->end());
  }
  return best[cap];
}

// Fractional (LP relaxation) optimum: an upper bound on the 0-1 optimum.
double lp_bound(const std::vector<KnapsackItem>& items, const std::vector<size_t>& idx,
                uint64_t capacity) {
  std::vector<size_t> order(idx);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    // a/wa > b/wb without division (weights are > 0 here).
    return items[a].value * static_cast<double>(items[b].weight) >
           items[b].value * static_cast<double>(items[a].weight);
  });
  double v = 0;
  uint64_t left = capacity;
  for (size_t i : order) {
    if (items[i].weight <= left) {
      left -= items[i].weight;
      v += items[i].value;
    } else {
      v += items[i].value * static_cast<double>(left) / static_cast<double>(items[i].weight);
      break;
    }
  }
  return v;
}

}  // namespace

int exact_knapsack(const std::vector<KnapsackItem>& items, uint64_t capacity, uint64_t max_cells,
                   ExactKnapsackResult* out) {
  if (!out) return -EINVAL;
  *out = ExactKnapsackResult{};
  // Items of no value never help; weightless ones with value are always taken;
  // items heavier than the knapsack can never be taken.
  std::vector<size_t> idx;
  double free_value = 0;
  std::vector<size_t> free_items;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!(items[i].value > 0)) continue;
    if (items[i].weight == 0) {
      free_items.push_back(i);
      free_value += items[i].value;
    } else if (items[i].weight <= capacity) {
      idx.push_back(i);
    }
  }
  uint64_t g = 0;
  for (size_t i : idx) g = std::gcd(g, items[i].weight);
  if (idx.empty() || g == 0) {
    out->chosen = free_items;
    out->value = out->upper_bound = free_value;
    out->exact = true;
    return 0;
  }
  uint64_t n = idx.size();
  uint64_t exact_units = capacity / g;
  std::vector<uint64_t> w_up(n), w_down(n);
  std::vector<size_t> chosen;
  if (exact_units + 1 <= max_cells / n) {
    for (size_t k = 0; k < n; ++k) w_up[k] = items[idx[k]].weight / g;
    out->value = knapsack_dp(items, idx, w_up, exact_units, &chosen) + free_value;
    out->upper_bound = out->value;
    out->unit = g;
    out->exact = true;
  } else {
    uint64_t units = max_cells / n;
    if (units < 2) return -E2BIG;
    units -= 1;  // the DP row holds units + 1 cells
    uint64_t unit = capacity / units + (capacity % units ? 1 : 0);
    uint64_t cap_units = capacity / unit;
    for (size_t k = 0; k < n; ++k) {
      uint64_t wb = items[idx[k]].weight;
      w_up[k] = wb / unit + (wb % unit ? 1 : 0);
      w_down[k] = wb / unit;
    }
    out->value = knapsack_dp(items, idx, w_up, cap_units, &chosen) + free_value;
    double relaxed = knapsack_dp(items, idx, w_down, cap_units, nullptr);
    double lp = lp_bound(items, idx, capacity);
    out->upper_bound = std::max(out->value, std::min(relaxed, lp) + free_value);
    out->unit = unit;
    out->exact = out->upper_bound <= out->value;
  }
  out->chosen = std::move(chosen);
  out->chosen.insert(out->chosen.end(), free_items.begin(), free_items.end());
  std::sort(out->chosen.begin(), out->chosen.end());
  return 0;
}

}  // namespace hybridstore
