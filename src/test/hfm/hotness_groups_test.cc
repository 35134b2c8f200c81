// SFS hotness grouping: k-means-like refinement and persistence of centres.
#include <gtest/gtest.h>

#include <random>

#include "hybridstore/hotness_groups.h"

namespace hybridstore {
namespace {

std::vector<double> clusters(std::mt19937_64& rng, std::vector<std::pair<double, int>> spec) {
  std::vector<double> out;
  std::normal_distribution<double> noise(0, 0.1);
  for (auto [centre, n] : spec)
    for (int i = 0; i < n; ++i) out.push_back(std::pow(10.0, centre + noise(rng)));
  return out;
}

TEST(HotnessGroups, SeparatesNaturalGroupsHottestFirst) {
  std::mt19937_64 rng(1);
  // A small hot group and a large cold one: equal-height splits would cut the
  // cold group in three; the refinement moves centres to the group means.
  auto s = clusters(rng, {{2, 100}, {-3, 900}});
  HotnessGrouping g(2);
  EXPECT_LE(g.refine(s), HotnessGrouping::kMaxIterations);
  EXPECT_EQ(g.group_of(100), 0u);
  EXPECT_EQ(g.group_of(1e-3), 1u);
  EXPECT_NEAR(g.centres()[0], 2, 0.1);
  EXPECT_NEAR(g.centres()[1], -3, 0.1);
}

TEST(HotnessGroups, FourGroupsFromFourClusters) {
  std::mt19937_64 rng(2);
  auto s = clusters(rng, {{3, 50}, {1, 200}, {-1, 300}, {-4, 450}});
  HotnessGrouping g(4);
  for (int round = 0; round < 3; ++round) g.refine(s);
  EXPECT_EQ(g.group_of(1e3), 0u);
  EXPECT_EQ(g.group_of(10), 1u);
  EXPECT_EQ(g.group_of(0.1), 2u);
  EXPECT_EQ(g.group_of(1e-4), 3u);
  EXPECT_EQ(g.group_of(0), 3u);  // never written counts as coldest
}

TEST(HotnessGroups, UnseededGroupingPutsEverythingInGroupZero) {
  HotnessGrouping g(4);
  EXPECT_FALSE(g.seeded());
  EXPECT_EQ(g.group_of(123), 0u);
}

TEST(HotnessGroups, CentresPersistAndDamageIsRejected) {
  std::mt19937_64 rng(3);
  HotnessGrouping g(3);
  g.refine(clusters(rng, {{2, 10}, {0, 10}, {-2, 10}}));
  std::string rec = g.encode();
  HotnessGrouping h;
  std::string err;
  ASSERT_EQ(HotnessGrouping::decode(rec, &h, &err), 0) << err;
  EXPECT_EQ(h.centres(), g.centres());
  EXPECT_EQ(h.group_of(100), g.group_of(100));
  for (size_t i = 0; i < rec.size(); ++i) {
    std::string bad = rec;
    bad[i] ^= 0x20;
    EXPECT_EQ(HotnessGrouping::decode(bad, &h, &err), -EIO) << "byte " << i;
  }
  EXPECT_EQ(HotnessGrouping::decode(rec.substr(0, rec.size() - 1), &h, &err), -EIO);
}

}  // namespace
}  // namespace hybridstore
