#include <gtest/gtest.h>

#include <cerrno>

#include "hscommon/config.h"
#include "hybridstore/tier/heat_tracker.h"
#include "hybridstore/tier/hotness_groups.h"
#include "hybridstore/tier/knapsack_planner.h"

using namespace hybridstore;

TEST(TieringOptions, DefaultsGiveThePaperSetup) {
  Config c;
  HeatTrackerOptions h = heat_tracker_options_from_config(c);
  EXPECT_EQ(h.continuation_us, 500000u);  // HRO's 0.5 s
  EXPECT_EQ(h.window_us, 86400000000ull);  // a day, as HRO plans once a day
  EXPECT_EQ(h.max_objects, 1000000u);
  EXPECT_DOUBLE_EQ(h.decay, 0.5);
  PlannerOptions p = planner_options_from_config(c, 10ull << 30, 4096);
  EXPECT_EQ(p.policy, TierPolicy::kHro);
  EXPECT_EQ(p.ssd_budget % 4096, 0u);
  EXPECT_NEAR(static_cast<double>(p.ssd_budget), 0.9 * (10ull << 30), 4096);
  HotnessGroupOptions g = hotness_group_options_from_config(c);
  EXPECT_EQ(g.groups, 4u);
  EXPECT_EQ(g.max_iterations, 3u);
  EXPECT_EQ(c.get_str("hybridstore_device_model"), "none");
}

TEST(TieringOptions, BadValuesAreRejectedByName) {
  Config c;
  std::string err;
  EXPECT_EQ(c.set("hybridstore_tier_policy", "arc", &err), -EINVAL);
  EXPECT_NE(err.find("hybridstore_tier_policy"), std::string::npos);
  EXPECT_EQ(c.set("hybridstore_tier_ssd_target_ratio", "1.5", &err), -EINVAL);
  EXPECT_EQ(c.set("hybridstore_tier_heat_decay", "-0.1", &err), -EINVAL);
  EXPECT_EQ(c.set("hybridstore_sfs_refine_iterations", "4", &err), -EINVAL);  // SFS: at most 3
  EXPECT_EQ(c.set("hybridstore_tier_heat_max_objects", "10", &err), -EINVAL);
  ASSERT_EQ(c.set("hybridstore_tier_policy", "lru", &err), 0) << err;
  ASSERT_EQ(c.set("hybridstore_tier_ssd_target_ratio", "0.5", &err), 0) << err;
  PlannerOptions p = planner_options_from_config(c, 1 << 20, 4096);
  EXPECT_EQ(p.policy, TierPolicy::kLru);
  EXPECT_EQ(p.ssd_budget, 512u << 10);
}
