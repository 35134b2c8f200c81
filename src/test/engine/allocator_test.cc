#include "hybridstore/alloc/allocator.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

using namespace hybridstore;

TEST(ExtentAllocator, AllocatesContiguouslyNextFit) {
  ExtentAllocator a(1 << 20, 4096);
  a.init_add_free(0, 1 << 20);
  std::vector<Interval> x, y;
  ASSERT_EQ(a.allocate(8192, 0, &x), 0);
  ASSERT_EQ(a.allocate(8192, 0, &y), 0);
  ASSERT_EQ(x.size(), 1u);
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].offset, x[0].offset + 8192);
  EXPECT_EQ(a.free_bytes(), (1u << 20) - 16384);
}

TEST(ExtentAllocator, HintExtendsInPlace) {
  ExtentAllocator a(1 << 20, 4096);
  a.init_add_free(0, 1 << 20);
  std::vector<Interval> first, x, y, z;
  ASSERT_EQ(a.allocate(4096, 0, &first), 0);
  ASSERT_EQ(a.allocate(4096, 0, &x), 0);
  ASSERT_EQ(a.allocate(4096, 0, &y), 0);  // moves the cursor past x
  a.release(x);
  ASSERT_EQ(a.allocate(4096, x[0].offset, &z), 0);
  EXPECT_EQ(z[0].offset, x[0].offset);
}

TEST(ExtentAllocator, ReleaseMergesNeighbours) {
  ExtentAllocator a(1 << 20, 4096);
  a.init_add_free(0, 1 << 20);
  std::vector<Interval> all;
  for (int i = 0; i < 256; ++i) ASSERT_EQ(a.allocate(4096, 0, &all), 0);
  EXPECT_EQ(a.free_bytes(), 0u);
  std::vector<Interval> more;
  EXPECT_EQ(a.allocate(4096, 0, &more), -ENOSPC);
  std::shuffle(all.begin(), all.end(), std::mt19937_64(1));
  a.release(all);
  EXPECT_EQ(a.free_extent_count(), 1u);
  EXPECT_DOUBLE_EQ(a.fragmentation(), 0.0);
}

TEST(ExtentAllocator, FragmentedSpaceStillServesLargeRequestsInPieces) {
  ExtentAllocator a(1 << 20, 4096);
  a.init_add_free(0, 1 << 20);
  std::vector<Interval> all;
  for (int i = 0; i < 256; ++i) ASSERT_EQ(a.allocate(4096, 0, &all), 0);
  std::vector<Interval> odd;
  for (size_t i = 1; i < all.size(); i += 2) odd.push_back(all[i]);
  a.release(odd);
  EXPECT_GT(a.fragmentation(), 0.5);
  std::vector<Interval> big;
  ASSERT_EQ(a.allocate(64 * 4096, 0, &big), 0);
  uint64_t total = 0;
  for (auto& i : big) total += i.length;
  EXPECT_EQ(total, 64u * 4096);
  std::vector<Interval> toomuch;
  EXPECT_EQ(a.allocate(65 * 4096, 0, &toomuch), -ENOSPC);
  EXPECT_TRUE(toomuch.empty());
}

TEST(ExtentAllocator, RandomAllocFreeNeverDoubleAllocates) {
  const uint64_t unit = 4096, cap = 4096 * 2048;
  ExtentAllocator a(cap, unit);
  a.init_add_free(0, cap);
  std::mt19937_64 rng(9);
  std::vector<std::vector<Interval>> live;
  std::vector<bool> used(cap / unit, false);
  for (int i = 0; i < 5000; ++i) {
    if (live.empty() || rng() % 3) {
      std::vector<Interval> got;
      uint64_t want = (1 + rng() % 40) * unit;
      if (a.allocate(want, 0, &got) < 0) continue;
      for (auto& g : got)
        for (uint64_t u = g.offset / unit; u < (g.offset + g.length) / unit; ++u) {
          ASSERT_FALSE(used[u]) << "unit " << u << " handed out twice";
          used[u] = true;
        }
      live.push_back(got);
    } else {
      size_t k = rng() % live.size();
      for (auto& g : live[k])
        for (uint64_t u = g.offset / unit; u < (g.offset + g.length) / unit; ++u) used[u] = false;
      a.release(live[k]);
      live.erase(live.begin() + static_cast<long>(k));
    }
  }
  uint64_t in_use = 0;
  for (bool b : used) in_use += b;
  EXPECT_EQ(a.free_bytes(), cap - in_use * unit);
}
