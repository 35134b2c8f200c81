#include "hybridstore/tier/hotness_groups.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <atomic>
#include <random>
#include <thread>

#include "hscommon/encoding.h"

using namespace hybridstore;

namespace {

// Four natural clusters of segment hotness with unequal populations, around
// 50, 5, 0.5 and 0.001 writes per second.
std::vector<double> clustered_sample(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(1.0, 0.05);
  std::vector<double> v;
  for (int i = 0; i < 40; ++i) v.push_back(50 * noise(rng));
  for (int i = 0; i < 300; ++i) v.push_back(5 * noise(rng));
  for (int i = 0; i < 900; ++i) v.push_back(0.5 * noise(rng));
  for (int i = 0; i < 2000; ++i) v.push_back(0.001 * noise(rng));
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

}  // namespace

TEST(HotnessGroups, BlockHotnessIsWritesPerSecondOfAge) {
  EXPECT_DOUBLE_EQ(block_hotness(10, 5000000), 2.0);
  EXPECT_DOUBLE_EQ(block_hotness(0, 5000000), 0.0);
  EXPECT_DOUBLE_EQ(block_hotness(3, 0), 3.0);       // younger than 1 s counts as 1 s
  EXPECT_DOUBLE_EQ(block_hotness(3, 200000), 3.0);
  EXPECT_DOUBLE_EQ(segment_hotness({1, 2, 3, 6}), 3.0);
  EXPECT_EQ(segment_hotness({}), 0.0);
}

TEST(HotnessGroups, CostHotnessPrefersEmptyAndColdSegments) {
  EXPECT_DOUBLE_EQ(cost_hotness(0.5, 2.0), 0.5 / (2 * 0.5 * 2.0));
  EXPECT_TRUE(std::isinf(cost_hotness(0.0, 1.0)));
  EXPECT_TRUE(std::isinf(cost_hotness(0.5, 0.0)));
  EXPECT_EQ(cost_hotness(1.0, 1.0), 0.0);
  EXPECT_GT(cost_hotness(0.5, 0.1), cost_hotness(0.5, 10));  // colder is the better victim
  EXPECT_GT(cost_hotness(0.2, 1), cost_hotness(0.8, 1));     // emptier is the better victim
}

TEST(HotnessGroups, ClassifyBeforeAnyCentresIsGroupZero) {
  HotnessGroups g;
  EXPECT_FALSE(g.has_centres());
  EXPECT_EQ(g.classify(123.0), 0u);
  EXPECT_STREQ(HotnessGroups::group_name(0, 4), "hot");
  EXPECT_STREQ(HotnessGroups::group_name(3, 4), "read-only");
}

TEST(HotnessGroups, FindsNaturalClustersWithinThreeIterations) {
  HotnessGroups g;
  auto v = clustered_sample(1);
  unsigned passes = g.refine(v);
  EXPECT_GE(passes, 1u);
  EXPECT_LE(passes, 3u);
  auto c = g.centres();
  ASSERT_EQ(c.size(), 4u);
  EXPECT_NEAR(c[0], 50, 2.5);
  EXPECT_NEAR(c[1], 5, 0.25);
  EXPECT_NEAR(c[2], 0.5, 0.025);
  EXPECT_NEAR(c[3], 0.001, 0.001);
  // Each natural cluster lands whole in one group, in hotness order — where
  // equal-count partitions would have split the big cold cluster.
  std::mt19937_64 rng(9);
  std::normal_distribution<double> noise(1.0, 0.05);
  for (int i = 0; i < 200; ++i) {
    EXPECT_EQ(g.classify(50 * noise(rng)), 0u);
    EXPECT_EQ(g.classify(5 * noise(rng)), 1u);
    EXPECT_EQ(g.classify(0.5 * noise(rng)), 2u);
    EXPECT_EQ(g.classify(0.001 * noise(rng)), 3u);
  }
}

TEST(HotnessGroups, NeverMoreThanTheIterationLimit) {
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> u(0, 100);
  for (unsigned limit : {1u, 2u, 3u}) {
    HotnessGroupOptions o;
    o.max_iterations = limit;
    o.tolerance = 0;  // would iterate forever if allowed
    HotnessGroups g(o);
    std::vector<double> v(5000);
    for (auto& x : v) x = u(rng) * u(rng) / 100;
    EXPECT_LE(g.refine(v), limit);
  }
}

TEST(HotnessGroups, CentresAreStableOnceConverged) {
  HotnessGroups g;
  auto v = clustered_sample(3);
  g.refine(v);
  g.refine(v);  // fully converged after this
  auto c1 = g.centres();
  EXPECT_EQ(g.refine(v), 1u);  // seeded from its own centres: nothing moves
  auto c2 = g.centres();
  for (size_t i = 0; i < c1.size(); ++i) EXPECT_NEAR(c1[i], c2[i], 1e-3 * (50 - 0.001));
  // A fresh sample of the same distribution barely moves them.
  g.refine(clustered_sample(4));
  auto c3 = g.centres();
  for (size_t i = 0; i < c1.size(); ++i) EXPECT_NEAR(c3[i], c1[i], 0.05 * c1[i] + 1e-3);
}

TEST(HotnessGroups, EmptyOrInvalidSamplesChangeNothing) {
  HotnessGroups g;
  EXPECT_EQ(g.refine({}), 0u);
  EXPECT_EQ(g.refine({NAN, -1.0, INFINITY}), 0u);
  EXPECT_FALSE(g.has_centres());
  EXPECT_EQ(g.refine({7.0}), 1u);  // fewer values than groups still yields centres
  EXPECT_EQ(g.centres().size(), 4u);
}

TEST(HotnessGroups, CentresPersistAcrossMounts) {
  HotnessGroups a;
  auto v = clustered_sample(5);
  a.refine(v);
  std::string rec = a.encode();
  HotnessGroups b;  // "after mount"
  std::string err;
  ASSERT_EQ(b.decode(rec, &err), 0) << err;
  EXPECT_EQ(b.centres(), a.centres());
  for (double h : {60.0, 4.0, 0.6, 0.0001}) EXPECT_EQ(b.classify(h), a.classify(h));
  // Loaded centres are good seeds: refinement settles in one or two passes.
  EXPECT_LE(b.refine(v), 2u);
}

TEST(HotnessGroups, DecodeRejectsGarbage) {
  HotnessGroups a;
  a.refine(clustered_sample(6));
  const std::string good = a.encode();
  HotnessGroups b;
  std::string err;
  for (size_t n = 0; n < good.size(); ++n) EXPECT_EQ(b.decode(good.substr(0, n), &err), -EIO);
  for (size_t i = 0; i < good.size() * 8; ++i) {
    std::string bad = good;
    bad[i / 8] ^= static_cast<char>(1 << (i % 8));
    EXPECT_EQ(b.decode(bad, &err), -EIO) << i;
  }
  auto sealed = [](std::vector<double> c, uint64_t n) {
    std::string body;
    put_varint(&body, n);
    for (double x : c) {
      uint64_t bits;
      std::memcpy(&bits, &x, 8);
      put_fixed64(&body, bits);
    }
    return seal_record(0x53465343, 1, body);
  };
  EXPECT_EQ(b.decode(sealed({4, 3, 2, 1}, 4), &err), 0) << err;
  EXPECT_EQ(b.decode(sealed({1, 2, 3, 4}, 4), &err), -EIO);  // not descending
  EXPECT_EQ(b.decode(sealed({4, NAN, 2, 1}, 4), &err), -EIO);
  EXPECT_EQ(b.decode(sealed({4, 3, 2, -1}, 4), &err), -EIO);
  EXPECT_EQ(b.decode(sealed({3, 2, 1}, 3), &err), -EINVAL);  // other group count
  EXPECT_NE(err.find("configured"), std::string::npos);
  EXPECT_EQ(b.decode(sealed({4, 3, 2}, 4), &err), -EIO);  // short
  EXPECT_EQ(b.decode(sealed({4, 3, 2, 1, 0}, 4), &err), -EIO);  // trailing
  EXPECT_EQ(b.decode(sealed({}, 1000), &err), -EIO);
  EXPECT_EQ(b.centres(), (std::vector<double>{4, 3, 2, 1}));  // last good value kept
}

TEST(HotnessGroups, ClassifyIsSafeWhileRefining) {
  HotnessGroups g;
  auto v = clustered_sample(8);
  g.refine(v);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; i < 50; ++i) g.refine(clustered_sample(100 + i));
    stop = true;
  });
  uint64_t n = 0;
  while (!stop) {
    ASSERT_LT(g.classify(static_cast<double>(n % 100)), 4u);
    ++n;
  }
  writer.join();
  EXPECT_GT(n, 0u);
}
