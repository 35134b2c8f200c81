// KnapsackPlanner: which objects should live on the SSD (seed: HRO).
//
// Placement is a 0-1 knapsack: each object has a weight (its size on the SSD)
// and a value; choose the set of largest total value whose weight fits the SSD
// budget. HRO scores an object with v = f / s * R (accesses per byte times the
// randomness count) and fills the budget greedily in decreasing v; promote =
// chosen and not on the SSD, demote = on the SSD and not chosen (docs/algorithms.md).
//
// Reading of the objective. v divides by the size, so it is a value *per byte*;
// we take an object's knapsack value to be v * s = f * R, which makes "sort by
// v and fill" the textbook density greedy for the knapsack it claims to solve.
// (The paper writes the objective as sum(v_i x_i) while also sorting by v_i; the
// two only agree under this reading.) The greedy then has the classical bound
// OPT <= greedy + max single value, and exact_knapsack() measures the real gap.
// s is the allocated size (object size rounded up to the SSD allocation unit),
// the space the object actually takes.
//
// That bound is not enough in practice: with skewed heat one large object can
// be worth more than everything the density order packed before it, and the
// plain greedy leaves it out (hybridstore-bench tier measured up to 24-43%
// below the optimum on some sampled inputs, with a mean gap under 0.2%). So the
// hro planner adds a *repair*: it also tries forcing in each of the few most
// valuable objects the greedy skipped (repair_candidates, default 8),
// refilling greedily after it, and keeps the best. Never worse than the plain
// greedy; O(k n) on top of the sort.
//
// Policies (hybridstore_tier_policy):
//   hro  - rank by v = f * R / s (hot *and* random, per byte)
//   hot  - rank by f only: the paper's HOT baseline ("most frequently accessed")
//   lru  - rank by last access time, most recent first (recency, like dm-cache)
//   none - plan nothing: no promotion, no demotion
// Every policy fills the same budget greedily in its rank order, skipping
// objects that no longer fit and continuing with smaller ones (HRO Algorithm 2,
// plus the repair for hro);
// objects with no recorded access (f <= 0) or no data (size 0) are never chosen.
// Ties break by candidate index, so a plan is a pure function of its input.
#pragma once
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace hybridstore {

class Config;

enum class TierPolicy : uint8_t { kNone = 0, kHro = 1, kHot = 2, kLru = 3 };
bool parse_tier_policy(std::string_view name, TierPolicy* out);
const char* tier_policy_name(TierPolicy p);

struct TierCandidate {
  uint64_t size = 0;            // object bytes
  double frequency = 0;         // f (HeatSample::frequency)
  double randomness = 0;        // R (HeatSample::randomness)
  uint64_t last_access_us = 0;  // for lru
  bool on_ssd = false;          // current tier
};

// Whether an object's random requests (R) pay for copying it up from the HDD:
// each non-continuing request cost the HDD one positioning, worth
// `break_even` bytes of streaming, and the copy costs one positioning plus
// `size` bytes, so (R - 1) * break_even >= size. A 4 MiB object written once
// and read once whole (R = 2) does not pay with a 1 MiB break-even; a 4 KiB
// one does. break_even 0 = every object pays.
bool random_requests_pay_for_copy(double randomness, uint64_t size, uint64_t break_even);

struct PlannerOptions {
  TierPolicy policy = TierPolicy::kHro;
  uint64_t ssd_budget = 0;     // bytes of SSD the chosen set may occupy
  uint64_t alloc_unit = 4096;  // SSD allocation unit (weights round up to it)
  // hro only: after the greedy fill, also try forcing in each of this many of
  // the most valuable (f * R) objects the greedy left out, refilling greedily
  // after it, and keep the best plan. 0 = the paper's plain Algorithm 2.
  unsigned repair_candidates = 8;
  // The bounded planner's candidate cap (BoundedPlanner,
  // hybridstore_tier_plan_max_candidates); 0 = every object, today's pass.
  size_t max_candidates = 0;
};

// From hybridstore_tier_policy and hybridstore_tier_ssd_target_ratio: the
// budget is that share of `ssd_capacity`, in whole allocation units.
PlannerOptions planner_options_from_config(const Config& conf, uint64_t ssd_capacity,
                                           uint64_t alloc_unit);
// The candidate cap a pass uses: hybridstore_tier_plan_max_candidates when
// set; else, on a store with hybridstore_memory_target, the cap below (its
// pass costs ~13 MB above the mount at 1M objects, docs/memory.md); else 0,
// every object.
inline constexpr size_t kPlanCandidatesUnderATarget = 10000;
size_t plan_max_candidates(const Config& conf);

struct TierPlan {
  std::vector<size_t> chosen;   // candidate indices in rank order (a forced object first)
  std::vector<size_t> promote;  // chosen and not on the SSD, in rank order
  std::vector<size_t> demote;   // on the SSD and not chosen, in index order
  uint64_t chosen_bytes = 0;    // sum of weights of `chosen`; <= ssd_budget
  uint64_t promote_bytes = 0;   // object bytes to copy HDD -> SSD
  uint64_t demote_bytes = 0;    // object bytes to copy SSD -> HDD
  double chosen_value = 0;      // sum of f * R over `chosen`
};

// Space an object takes on the SSD: size rounded up to alloc_unit (0 for size 0).
uint64_t knapsack_weight(uint64_t size, uint64_t alloc_unit);
// HRO's benefit v = f / s * R with s = knapsack_weight(size); 0 for size 0.
double hro_benefit(const TierCandidate& c, uint64_t alloc_unit);
// The rank key of a policy (higher ranks first); kNone ranks nothing.
double policy_score(TierPolicy p, const TierCandidate& c, uint64_t alloc_unit);

// O(n log n + repair_candidates * n). Guarantees chosen_bytes <= ssd_budget.
TierPlan plan_tiers(const std::vector<TierCandidate>& candidates, const PlannerOptions& opts);

// ---- Bounded planning (docs/memory.md, issue 57) ----
//
// plan_tiers() needs every object at once. A BoundedPlanner is offered the
// objects one by one (a streaming pass) and keeps at most about
// 2 * max_candidates + repair_candidates of them:
//  - the max_candidates best by the policy's score among the objects it
//    could choose (size > 0, f > 0, score > 0);
//  - for hro, the repair_candidates most valuable by f * R among those (the
//    repair step's inputs, wherever they rank by density);
//  - the max_candidates coldest (lowest score) objects on the SSD, the only
//    ones it may demote.
// finish() runs plan_tiers over the kept objects, in the order they were
// offered, so with max_candidates >= the number offered the plan is
// plan_tiers's over all of them (ids instead of indices). Below that, an
// object on the SSD that was kept in neither set stays where it is, and
// what is lost against the global greedy is (a) the gap-filling the global
// greedy does below the max_candidates-th density once the budget is
// nearly full, at most one object's weight times that density, and (b)
// when the kept objects weigh less than the budget, the promotions of
// lower-density objects, left for the next pass. Ties break by offer
// order, as plan_tiers's by index. max_candidates = 0 keeps everything.
class BoundedPlanner {
 public:
  explicit BoundedPlanner(const PlannerOptions& opts);
  // Called with an object's handle each time one of the kept sets lets go
  // of it (a better object took its place); for a caller that holds the
  // objects' identities only while some set keeps them.
  void set_on_drop(std::function<void(uint64_t id)> fn) { on_drop_ = std::move(fn); }
  // An object; `id` is the caller's handle for it (e.g. its offer index).
  // Returns how many of the kept sets took it (0 to 3; 1 with
  // max_candidates 0); each will be matched by one on_drop or outlast it.
  unsigned offer(const TierCandidate& c, uint64_t id);
  // The kept objects, in offer order, with their handles; the planner is
  // empty afterwards (on_drop is not called for them).
  void take(std::vector<TierCandidate>* cands, std::vector<uint64_t>* ids);
  // take(), then plan_tiers over the kept objects with `ssd_budget` (the
  // options' when not given). The plan's indices refer to *ids.
  TierPlan finish(std::vector<uint64_t>* ids);
  TierPlan finish(std::vector<uint64_t>* ids, uint64_t ssd_budget);

  size_t offered() const { return seq_; }
  size_t kept() const;
  // Weight (knapsack_weight) of every object offered with on_ssd, kept or not.
  uint64_t on_ssd_weight() const { return on_ssd_weight_; }
  // Bytes the kept sets hold (their vectors' capacity).
  size_t memory_bytes() const;

 private:
  struct Held {
    TierCandidate c;
    uint64_t id = 0;
    uint64_t seq = 0;   // offer order
    double key = 0;     // the heap's ordering value
  };
  // Keeps the `cap` entries with the largest key (ties: earlier seq) in a
  // min-heap whose top is the first to go.
  bool keep_best(std::vector<Held>* heap, size_t cap, Held h);
  PlannerOptions opts_;
  std::vector<Held> best_;     // by score
  std::vector<Held> valued_;   // by f * R (hro repair)
  std::vector<Held> coldest_;  // on the SSD, by -score
  std::vector<Held> all_;      // max_candidates == 0: everything
  uint64_t seq_ = 0;
  uint64_t on_ssd_weight_ = 0;
  std::function<void(uint64_t)> on_drop_;
};

// ---- Generic 0-1 knapsack, for measuring the greedy against the optimum ----

struct KnapsackItem {
  double value = 0;
  uint64_t weight = 0;
};

// The knapsack the hro policy solves: value f * R, weight = knapsack_weight.
std::vector<KnapsackItem> hro_knapsack_items(const std::vector<TierCandidate>& candidates,
                                             uint64_t alloc_unit);

// Density greedy (value / weight, ties by index), skipping items that do not fit.
std::vector<size_t> greedy_knapsack(const std::vector<KnapsackItem>& items, uint64_t capacity);

struct ExactKnapsackResult {
  std::vector<size_t> chosen;  // feasible: total weight <= capacity
  double value = 0;            // value of `chosen`
  double upper_bound = 0;      // no feasible set is worth more than this
  uint64_t unit = 1;           // weight unit the DP ran in
  bool exact = false;          // value is the optimum (upper_bound == value)
};

// Dynamic programming over capacity in units of `unit` bytes: O(n * C/unit)
// time, n * C/unit bits of memory, bounded by `max_cells`.
//  - unit = gcd of all weights when C/unit * n fits max_cells: the answer is
//    exact (object sizes rounded to the allocation unit usually allow this).
//  - otherwise unit = ceil(C * n / max_cells): weights are rounded *up* to
//    whole units, so `chosen` stays feasible but may leave up to one unit per
//    chosen item unused, i.e. it is optimal for some capacity in
//    [C - |chosen| * unit, C]. A twin DP with weights rounded *down* (a
//    relaxation of the true problem) and the fractional (LP) bound give
//    `upper_bound`; the true optimum lies in [value, upper_bound].
// Items without value never count; weightless items with value are always
// taken. Returns 0, -EINVAL for a null `out`, or -E2BIG when max_cells cannot
// hold two capacity units per item.
int exact_knapsack(const std::vector<KnapsackItem>& items, uint64_t capacity,
                   uint64_t max_cells, ExactKnapsackResult* out);

}  // namespace hybridstore
