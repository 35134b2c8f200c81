#include "hybridstore/tier/knapsack_planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <set>

#include "hscommon/config.h"

using namespace hybridstore;

namespace {

uint64_t weight_of(const std::vector<KnapsackItem>& items, const std::vector<size_t>& chosen) {
  uint64_t w = 0;
  for (size_t i : chosen) w += items[i].weight;
  return w;
}
double value_of(const std::vector<KnapsackItem>& items, const std::vector<size_t>& chosen) {
  double v = 0;
  for (size_t i : chosen) v += items[i].value;
  return v;
}

double brute_force(const std::vector<KnapsackItem>& items, uint64_t cap) {
  double best = 0;
  for (uint32_t m = 0; m < (1u << items.size()); ++m) {
    uint64_t w = 0;
    double v = 0;
    for (size_t i = 0; i < items.size(); ++i)
      if (m >> i & 1) {
        w += items[i].weight;
        v += items[i].value;
      }
    if (w <= cap) best = std::max(best, v);
  }
  return best;
}

// Heat-like candidates: sizes log-uniform 512 B .. 4 MiB, skewed frequency,
// randomness between 1 and f.
std::vector<TierCandidate> random_candidates(std::mt19937_64& rng, size_t n) {
  std::vector<TierCandidate> c(n);
  std::uniform_real_distribution<double> u(0, 1);
  for (auto& x : c) {
    x.size = static_cast<uint64_t>(512 * std::pow(8192.0, u(rng)));
    x.frequency = std::floor(std::pow(1000.0, u(rng) * u(rng)));
    x.randomness = x.frequency > 0 ? 1 + std::floor(u(rng) * x.frequency) : 0;
    x.last_access_us = rng() % 1000000;
    x.on_ssd = rng() % 4 == 0;
  }
  return c;
}

}  // namespace

TEST(KnapsackPlanner, PolicyNamesParseAndPrint) {
  for (const char* n : {"hro", "hot", "lru", "none"}) {
    TierPolicy p;
    ASSERT_TRUE(parse_tier_policy(n, &p)) << n;
    EXPECT_STREQ(tier_policy_name(p), n);
  }
  TierPolicy p;
  EXPECT_FALSE(parse_tier_policy("HRO", &p));
  EXPECT_FALSE(parse_tier_policy("", &p));
}

TEST(KnapsackPlanner, BenefitIsFrequencyPerAllocatedByteTimesRandomness) {
  TierCandidate c;
  c.size = 5000;  // takes two 4 KiB units
  c.frequency = 10;
  c.randomness = 4;
  EXPECT_DOUBLE_EQ(hro_benefit(c, 4096), 10.0 * 4 / 8192);
  EXPECT_DOUBLE_EQ(hro_benefit(c, 1), 10.0 * 4 / 5000);
  c.size = 0;
  EXPECT_EQ(hro_benefit(c, 4096), 0);
  EXPECT_EQ(knapsack_weight(0, 4096), 0u);
  EXPECT_EQ(knapsack_weight(1, 4096), 4096u);
  EXPECT_EQ(knapsack_weight(4096, 4096), 4096u);
}

TEST(KnapsackPlanner, RandomRequestsPayForACopyOncePositioningsSavedExceedTheStreamedBytes) {
  const uint64_t mib = 1 << 20;
  // A 4 MiB object written and read whole: two requests, one positioning saved.
  EXPECT_FALSE(random_requests_pay_for_copy(2, 4 * mib, mib));
  EXPECT_FALSE(random_requests_pay_for_copy(4.99, 4 * mib, mib));
  EXPECT_TRUE(random_requests_pay_for_copy(5, 4 * mib, mib));
  // 4 KiB objects pay with their second request, not their first.
  EXPECT_TRUE(random_requests_pay_for_copy(2, 4096, mib));
  EXPECT_FALSE(random_requests_pay_for_copy(1, 4096, mib));
  EXPECT_FALSE(random_requests_pay_for_copy(0, 4096, mib));
  // 0 turns the rule off.
  EXPECT_TRUE(random_requests_pay_for_copy(0, 4 * mib, 0));
}

TEST(KnapsackPlanner, PoliciesRankAsSpecified) {
  // 0: small, hot and random.  1: large, hottest by count, sequential.
  // 2: cold but the most recently used.  3: never accessed.
  std::vector<TierCandidate> c(4);
  c[0] = {64 << 10, 50, 50, 100, false};
  c[1] = {1 << 20, 400, 2, 200, false};
  c[2] = {256 << 10, 1, 1, 999, false};
  c[3] = {4 << 10, 0, 0, 0, false};
  PlannerOptions o;
  o.ssd_budget = 1 << 20;

  o.policy = TierPolicy::kHot;
  TierPlan hot = plan_tiers(c, o);
  EXPECT_EQ(hot.chosen, (std::vector<size_t>{1}));  // fills the SSD with the busiest object

  o.policy = TierPolicy::kHro;
  TierPlan hro = plan_tiers(c, o);
  EXPECT_EQ(hro.chosen, (std::vector<size_t>{0, 2}));  // v: 0 > 2 > 1 (1 no longer fits)

  o.policy = TierPolicy::kLru;
  TierPlan lru = plan_tiers(c, o);
  EXPECT_EQ(lru.chosen, (std::vector<size_t>{2, 0}));  // most recent first; 1 no longer fits

  o.policy = TierPolicy::kNone;
  TierPlan none = plan_tiers(c, o);
  EXPECT_TRUE(none.chosen.empty());
  EXPECT_TRUE(none.promote.empty());
  EXPECT_TRUE(none.demote.empty());
}

TEST(KnapsackPlanner, NoneNeverMovesAnything) {
  std::mt19937_64 rng(5);
  auto c = random_candidates(rng, 200);
  TierPlan p = plan_tiers(c, {TierPolicy::kNone, 1ull << 40, 4096});
  EXPECT_TRUE(p.promote.empty());
  EXPECT_TRUE(p.demote.empty());
}

TEST(KnapsackPlanner, SkipsWhatNoLongerFitsAndContinues) {
  std::vector<TierCandidate> c = {
      {8192, 100, 100, 0, false},  // v highest
      {8192, 90, 80, 0, false},    // does not fit after 0
      {4096, 10, 10, 0, false},    // fits the rest
  };
  TierPlan p = plan_tiers(c, {TierPolicy::kHro, 12288, 4096});
  EXPECT_EQ(p.chosen, (std::vector<size_t>{0, 2}));
  EXPECT_EQ(p.chosen_bytes, 12288u);
}

TEST(KnapsackPlanner, PromoteAndDemoteFollowTheCurrentTiers) {
  std::mt19937_64 rng(11);
  for (int iter = 0; iter < 200; ++iter) {
    auto c = random_candidates(rng, 1 + rng() % 300);
    uint64_t total = 0;
    for (auto& x : c) total += knapsack_weight(x.size, 4096);
    for (TierPolicy pol : {TierPolicy::kHro, TierPolicy::kHot, TierPolicy::kLru}) {
      PlannerOptions o{pol, total / (2 + rng() % 40), 4096};
      TierPlan p = plan_tiers(c, o);
      ASSERT_LE(p.chosen_bytes, o.ssd_budget);
      std::set<size_t> chosen(p.chosen.begin(), p.chosen.end());
      ASSERT_EQ(chosen.size(), p.chosen.size());
      uint64_t w = 0, pb = 0, db = 0;
      for (size_t i : p.chosen) {
        w += knapsack_weight(c[i].size, 4096);
        EXPECT_GT(c[i].frequency, 0);  // never-accessed objects are never chosen
      }
      EXPECT_EQ(w, p.chosen_bytes);
      std::set<size_t> promote(p.promote.begin(), p.promote.end());
      std::set<size_t> demote(p.demote.begin(), p.demote.end());
      for (size_t i = 0; i < c.size(); ++i) {
        bool ch = chosen.count(i) > 0;
        EXPECT_EQ(promote.count(i) > 0, ch && !c[i].on_ssd) << i;
        EXPECT_EQ(demote.count(i) > 0, !ch && c[i].on_ssd) << i;
        if (promote.count(i)) pb += c[i].size;
        if (demote.count(i)) db += c[i].size;
      }
      EXPECT_EQ(pb, p.promote_bytes);
      EXPECT_EQ(db, p.demote_bytes);
    }
  }
}

TEST(KnapsackPlanner, PlainHroPlanIsTheDensityGreedyOfItsKnapsack) {
  std::mt19937_64 rng(13);
  for (int iter = 0; iter < 100; ++iter) {
    auto c = random_candidates(rng, 1 + rng() % 500);
    uint64_t budget = (1 + rng() % 64) << 20;
    TierPlan p = plan_tiers(c, {TierPolicy::kHro, budget, 4096, 0});  // no repair
    auto items = hro_knapsack_items(c, 4096);
    auto g = greedy_knapsack(items, budget);
    EXPECT_EQ(g, p.chosen);
    EXPECT_DOUBLE_EQ(value_of(items, g), p.chosen_value);
  }
}

TEST(KnapsackPlanner, RepairRescuesAValuableObjectTheDensityOrderSkips) {
  // Five small dense objects fill half the budget first; the big object is
  // less dense but worth as much as all five, and no longer fits after them.
  std::vector<TierCandidate> c;
  for (int i = 0; i < 5; ++i) c.push_back({10 * 4096, 30, 1, 0, false});  // value 30 each
  c.push_back({60 * 4096, 150, 1, 0, false});                            // value 150
  PlannerOptions o{TierPolicy::kHro, 100 * 4096, 4096, 0};
  TierPlan plain = plan_tiers(c, o);
  EXPECT_EQ(plain.chosen_value, 150);  // the five small ones
  o.repair_candidates = 8;
  TierPlan repaired = plan_tiers(c, o);
  EXPECT_EQ(repaired.chosen_value, 270);  // the big one plus four small ones: optimal
  EXPECT_EQ(repaired.chosen.front(), 5u);
  EXPECT_LE(repaired.chosen_bytes, o.ssd_budget);
  ExactKnapsackResult ex;
  ASSERT_EQ(exact_knapsack(hro_knapsack_items(c, 4096), o.ssd_budget, 1 << 20, &ex), 0);
  EXPECT_EQ(ex.value, 270);
}

TEST(KnapsackPlanner, RepairNeverLosesValueOrBreaksTheBudget) {
  std::mt19937_64 rng(29);
  for (int iter = 0; iter < 200; ++iter) {
    auto c = random_candidates(rng, 1 + rng() % 400);
    uint64_t total = 0;
    for (auto& x : c) total += knapsack_weight(x.size, 4096);
    uint64_t budget = total / (2 + rng() % 40);
    TierPlan plain = plan_tiers(c, {TierPolicy::kHro, budget, 4096, 0});
    TierPlan rep = plan_tiers(c, {TierPolicy::kHro, budget, 4096, 8});
    EXPECT_GE(rep.chosen_value, plain.chosen_value);
    EXPECT_LE(rep.chosen_bytes, budget);
    std::set<size_t> uniq(rep.chosen.begin(), rep.chosen.end());
    EXPECT_EQ(uniq.size(), rep.chosen.size());
  }
}

TEST(KnapsackPlanner, ExactMatchesBruteForceOnTinyInstances) {
  std::mt19937_64 rng(17);
  for (int iter = 0; iter < 300; ++iter) {
    size_t n = 1 + rng() % 12;
    std::vector<KnapsackItem> items(n);
    for (auto& it : items) {
      it.weight = (1 + rng() % 20) * 4096;
      it.value = static_cast<double>(rng() % 100);
    }
    uint64_t cap = (rng() % 60) * 4096;
    ExactKnapsackResult r;
    ASSERT_EQ(exact_knapsack(items, cap, 1 << 20, &r), 0);
    EXPECT_TRUE(r.exact);
    EXPECT_LE(weight_of(items, r.chosen), cap);
    EXPECT_DOUBLE_EQ(value_of(items, r.chosen), r.value);
    EXPECT_DOUBLE_EQ(r.value, brute_force(items, cap)) << iter;
  }
}

TEST(KnapsackPlanner, ExactIsAtLeastGreedyAndGreedyIsWithinOneItemOfIt) {
  std::mt19937_64 rng(19);
  for (int iter = 0; iter < 150; ++iter) {
    auto c = random_candidates(rng, 20 + rng() % 400);
    auto items = hro_knapsack_items(c, 4096);
    uint64_t total = 0;
    for (auto& it : items) total += it.weight;
    uint64_t cap = total / (5 + rng() % 30);
    auto g = greedy_knapsack(items, cap);
    ExactKnapsackResult r;
    ASSERT_EQ(exact_knapsack(items, cap, 64ull << 20, &r), 0);
    ASSERT_TRUE(r.exact);
    double gv = value_of(items, g);
    TierPlan rep = plan_tiers(c, {TierPolicy::kHro, cap, 4096});
    EXPECT_GE(r.value, rep.chosen_value * (1 - 1e-12));  // the planner never beats the optimum
    EXPECT_GE(rep.chosen_value, gv);
    EXPECT_LE(weight_of(items, g), cap);
    EXPECT_LE(weight_of(items, r.chosen), cap);
    EXPECT_GE(r.value, gv * (1 - 1e-12));
    // Classical bound: OPT <= greedy + the largest value of any item that fits.
    double vmax = 0;
    for (auto& it : items)
      if (it.weight <= cap) vmax = std::max(vmax, it.value);
    EXPECT_LE(r.value, gv + vmax + 1e-9);
  }
}

TEST(KnapsackPlanner, ScaledDpStaysFeasibleAndBracketsTheOptimum) {
  std::mt19937_64 rng(23);
  for (int iter = 0; iter < 60; ++iter) {
    size_t n = 30 + rng() % 70;
    std::vector<KnapsackItem> items(n);
    for (auto& it : items) {
      it.weight = 1 + rng() % 5000;  // arbitrary byte sizes: gcd 1, too fine for a small DP
      it.value = static_cast<double>(1 + rng() % 1000);
    }
    uint64_t cap = 10000 + rng() % 40000;
    ExactKnapsackResult exact, scaled;
    ASSERT_EQ(exact_knapsack(items, cap, 1ull << 32, &exact), 0);
    ASSERT_TRUE(exact.exact);
    ASSERT_EQ(exact_knapsack(items, cap, n * 200, &scaled), 0);  // ~200 capacity units
    EXPECT_GT(scaled.unit, 1u);
    EXPECT_LE(weight_of(items, scaled.chosen), cap);
    EXPECT_DOUBLE_EQ(value_of(items, scaled.chosen), scaled.value);
    EXPECT_LE(scaled.value, exact.value + 1e-9);
    EXPECT_GE(scaled.upper_bound, exact.value - 1e-9);
  }
}

TEST(KnapsackPlanner, ExactHandlesEdgeCases) {
  ExactKnapsackResult r;
  EXPECT_EQ(exact_knapsack({}, 100, 1000, &r), 0);
  EXPECT_EQ(r.value, 0);
  EXPECT_TRUE(r.chosen.empty());
  // Too heavy, worthless and weightless items.
  std::vector<KnapsackItem> items = {{5, 200}, {0, 10}, {3, 0}, {4, 100}};
  ASSERT_EQ(exact_knapsack(items, 100, 1000, &r), 0);
  EXPECT_EQ(r.chosen, (std::vector<size_t>{2, 3}));
  EXPECT_EQ(r.value, 7);
  EXPECT_EQ(exact_knapsack(items, 100, 1, &r), -E2BIG);
  EXPECT_EQ(exact_knapsack(items, 100, 1000, nullptr), -EINVAL);
}

TEST(KnapsackPlanner, PlansAreDeterministicUnderTies) {
  std::vector<TierCandidate> c(10, TierCandidate{4096, 5, 5, 7, false});
  TierPlan a = plan_tiers(c, {TierPolicy::kHro, 5 * 4096, 4096});
  EXPECT_EQ(a.chosen, (std::vector<size_t>{0, 1, 2, 3, 4}));
  TierPlan b = plan_tiers(c, {TierPolicy::kLru, 3 * 4096, 4096});
  EXPECT_EQ(b.chosen, (std::vector<size_t>{0, 1, 2}));
}

// ---- BoundedPlanner (docs/memory.md, step 1) ----

namespace {

TierPlan bounded_plan(const std::vector<TierCandidate>& c, const PlannerOptions& po, size_t* kept = nullptr,
                      size_t* mem = nullptr) {
  BoundedPlanner bp(po);
  for (size_t i = 0; i < c.size(); ++i) bp.offer(c[i], i);
  if (kept) *kept = bp.kept();
  if (mem) *mem = bp.memory_bytes();
  std::vector<uint64_t> ids;
  TierPlan p = bp.finish(&ids);
  for (auto* v : {&p.chosen, &p.promote, &p.demote})
    for (size_t& i : *v) i = ids[i];
  return p;
}

// Heat as a store holds it: 4 KiB to 1 MiB objects, Zipf(0.9) accesses over
// a random order, a quarter on the SSD; with the default scale most objects
// have f = 0 (never read), with a large one every object has some heat.
std::vector<TierCandidate> zipf_candidates(std::mt19937_64& rng, size_t n, double scale = 10000) {
  std::vector<TierCandidate> c(n);
  std::vector<size_t> rank(n);
  std::iota(rank.begin(), rank.end(), 1);
  std::shuffle(rank.begin(), rank.end(), rng);
  std::uniform_real_distribution<double> u(0, 1);
  for (size_t i = 0; i < n; ++i) {
    auto& x = c[i];
    x.size = 4096 * static_cast<uint64_t>(std::pow(256.0, u(rng) * u(rng)));
    x.frequency = std::floor(scale / std::pow(static_cast<double>(rank[i]), 0.9));
    x.randomness = x.frequency > 0 ? 1 + std::floor(u(rng) * x.frequency) : 0;
    x.on_ssd = rng() % 4 == 0;
  }
  return c;
}

}  // namespace

TEST(BoundedPlanner, WithRoomForEveryObjectItIsPlanTiers) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 6; ++round) {
    auto c = round % 2 ? random_candidates(rng, 3000) : zipf_candidates(rng, 3000);
    uint64_t total = 0;
    for (const auto& x : c) total += knapsack_weight(x.size, 4096);
    for (TierPolicy pol : {TierPolicy::kHro, TierPolicy::kHot, TierPolicy::kLru}) {
      PlannerOptions po;
      po.policy = pol;
      po.ssd_budget = total / (round + 2) / 4096 * 4096;
      TierPlan want = plan_tiers(c, po);
      for (size_t k : {size_t(0), c.size(), 10 * c.size()}) {
        po.max_candidates = k;
        TierPlan got = bounded_plan(c, po);
        EXPECT_EQ(got.chosen, want.chosen) << "round " << round << " k " << k;
        EXPECT_EQ(got.promote, want.promote);
        EXPECT_EQ(got.demote, want.demote);
        EXPECT_EQ(got.chosen_bytes, want.chosen_bytes);
        EXPECT_DOUBLE_EQ(got.chosen_value, want.chosen_value);
      }
    }
  }
}

TEST(BoundedPlanner, KeepsItsBoundAndNearlyAllOfTheGlobalPlansValue) {
  std::mt19937_64 rng(7);
  const size_t n = 100000;
  auto c = zipf_candidates(rng, n, 1e7);  // every object has some heat: the kept set binds
  uint64_t total = 0, on_ssd = 0;
  for (const auto& x : c) {
    total += knapsack_weight(x.size, 4096);
    if (x.on_ssd) on_ssd += knapsack_weight(x.size, 4096);
  }
  PlannerOptions po;
  po.ssd_budget = total / 20 / 4096 * 4096;  // the tier bench's 5%
  const TierPlan global = plan_tiers(c, po);
  const size_t m = global.chosen.size();
  ASSERT_GT(m, 100u);
  for (double mult : {0.5, 1.0, 2.0, 4.0}) {
    po.max_candidates = static_cast<size_t>(mult * static_cast<double>(m));
    size_t kept = 0, mem = 0;
    BoundedPlanner probe(po);
    for (size_t i = 0; i < n; ++i) probe.offer(c[i], i);
    EXPECT_EQ(probe.on_ssd_weight(), on_ssd);
    TierPlan p = bounded_plan(c, po, &kept, &mem);
    EXPECT_LE(kept, 2 * po.max_candidates + po.repair_candidates);
    EXPECT_LE(mem, 2 * (2 * po.max_candidates + po.repair_candidates) * 64 + 4096);
    EXPECT_LE(p.chosen_bytes, po.ssd_budget);
    for (size_t i : p.demote) EXPECT_TRUE(c[i].on_ssd);
    for (size_t i : p.promote) EXPECT_FALSE(c[i].on_ssd);
    const double ratio = p.chosen_value / global.chosen_value;
    std::printf("bounded planner, %zu objects, K = %.1f x %zu chosen: kept %zu (%zu KiB), value %.5f of the global "
                "plan's, %zu promotions vs %zu, %zu demotions vs %zu\n",
                n, mult, m, kept, mem >> 10, ratio, p.promote.size(), global.promote.size(), p.demote.size(),
                global.demote.size());
    // Below the chosen count the kept set cannot fill the budget; at it
    // and above, only the gap-filling below the K-th density is lost.
    if (mult >= 1) {
      EXPECT_GE(ratio, mult == 1 ? 0.95 : 0.99);
    }
  }
}

// Bounded by default, so a pass's memory does not grow with the objects;
// 0 asks for every object at once, but not under a memory target.
TEST(BoundedPlanner, OptionDefaultsToABoundAndZeroToEveryObject) {
  Config conf;
  EXPECT_EQ(planner_options_from_config(conf, 1ull << 30, 4096).max_candidates, 10000u);
  std::string err;
  ASSERT_EQ(conf.set("hybridstore_tier_plan_max_candidates", "5000", &err), 0) << err;
  EXPECT_EQ(planner_options_from_config(conf, 1ull << 30, 4096).max_candidates, 5000u);
  ASSERT_EQ(conf.set("hybridstore_tier_plan_max_candidates", "0", &err), 0) << err;
  EXPECT_EQ(planner_options_from_config(conf, 1ull << 30, 4096).max_candidates, 0u);
  ASSERT_EQ(conf.set("hybridstore_memory_target", "1G", &err), 0) << err;
  EXPECT_EQ(planner_options_from_config(conf, 1ull << 30, 4096).max_candidates, 10000u);
}

TEST(BoundedPlanner, AMemoryTargetBoundsThePassUnlessTheOptionSaysOtherwise) {
  Config conf;
  std::string err;
  ASSERT_EQ(conf.set("hybridstore_memory_target", "2G", &err), 0) << err;
  EXPECT_EQ(plan_max_candidates(conf), kPlanCandidatesUnderATarget);
  EXPECT_EQ(planner_options_from_config(conf, 1ull << 30, 4096).max_candidates, kPlanCandidatesUnderATarget);
  ASSERT_EQ(conf.set("hybridstore_tier_plan_max_candidates", "5000", &err), 0) << err;
  EXPECT_EQ(plan_max_candidates(conf), 5000u);
  ASSERT_EQ(conf.set("hybridstore_memory_target", "0", &err), 0) << err;
  ASSERT_EQ(conf.set("hybridstore_tier_plan_max_candidates", "0", &err), 0) << err;
  EXPECT_EQ(plan_max_candidates(conf), 0u);
}
