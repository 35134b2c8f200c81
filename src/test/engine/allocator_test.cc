#include "hybridstore/alloc/allocator.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "common_helpers.h"

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

// Lending to the KV file system (docs/kvfs.md 2.5): aligned pieces from the
// largest extents, slivers left free, all or nothing up to what fits.
TEST(ExtentAllocator, AlignedPiecesComeFromTheLargestExtentsAndLeaveSliversFree) {
  const uint64_t unit = 4096, g = 16 * unit;
  ExtentAllocator a(1 << 22, unit);
  // Free: a small extent (no aligned piece), one holding one aligned piece
  // with slivers on both sides, and a large one holding three.
  a.init_add_free(unit, 4 * unit);
  a.init_add_free(g + 4 * unit, 2 * g);  // aligned [2g, 3g), slivers around it
  a.init_add_free(8 * g, 3 * g);
  const uint64_t free_before = a.free_bytes();
  std::vector<Interval> got;
  ASSERT_EQ(a.allocate_aligned(3 * g, g, &got), 0);
  ASSERT_EQ(got.size(), 1u) << "the largest extent alone holds three pieces";
  EXPECT_EQ(got[0].offset, 8 * g);
  EXPECT_EQ(got[0].length, 3 * g);
  std::vector<Interval> more;
  // Asks for more than remains aligned: gets what there is (one piece).
  ASSERT_EQ(a.allocate_aligned(5 * g, g, &more), 0);
  ASSERT_EQ(more.size(), 1u);
  EXPECT_EQ(more[0].offset, 2 * g);
  EXPECT_EQ(more[0].length, g);
  EXPECT_EQ(a.free_bytes(), free_before - 4 * g) << "the slivers stay free";
  std::vector<Interval> none;
  EXPECT_EQ(a.allocate_aligned(g, g, &none), -ENOSPC);
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(a.allocate_aligned(g / 2, g, &none), -EINVAL) << "less than one piece";
  // Given back, the space merges with the slivers again.
  a.release(more);
  a.release(got);
  EXPECT_EQ(a.free_bytes(), free_before);
  EXPECT_EQ(a.free_extent_count(), 3u);
}

TEST(ExtentAllocator, TheFloorStopsAllocateButNotAllocateAligned) {
  const uint64_t unit = 4096, g = 16 * unit;
  ExtentAllocator a(8 * g, unit);
  a.init_add_free(0, 8 * g);
  a.set_floor(2 * g);
  std::vector<Interval> got;
  ASSERT_EQ(a.allocate(6 * g, 0, &got), 0);
  std::vector<Interval> refused;
  EXPECT_EQ(a.allocate(unit, 0, &refused), -ENOSPC) << "would cut into the floor";
  EXPECT_TRUE(refused.empty());
  std::vector<Interval> lent;
  ASSERT_EQ(a.allocate_aligned(2 * g, g, &lent), 0);
  EXPECT_EQ(a.free_bytes(), 0u);
  a.set_floor(0);
  a.release(lent);
  ASSERT_EQ(a.allocate(unit, 0, &refused), 0);
}

TEST(ExtentAllocator, RandomLendingNeverOverlapsAllocations) {
  const uint64_t unit = 4096, g = 8 * unit, cap = unit * 4096;
  const uint64_t seed = test::test_seed(4242);
  SCOPED_TRACE("seed " + std::to_string(seed));
  ExtentAllocator a(cap, unit);
  a.init_add_free(0, cap);
  std::mt19937_64 rng(seed);
  std::vector<std::pair<bool, std::vector<Interval>>> live;  // (lent, pieces)
  std::vector<bool> used(cap / unit, false);
  for (int i = 0; i < 5000; ++i) {
    if (live.empty() || rng() % 3) {
      const bool lend = rng() % 4 == 0;
      std::vector<Interval> got;
      int r = lend ? a.allocate_aligned((1 + rng() % 4) * g, g, &got)
                   : a.allocate((1 + rng() % 40) * unit, 0, &got);
      if (r < 0) continue;
      for (auto& x : got) {
        if (lend) {
          ASSERT_EQ(x.offset % g, 0u);
          ASSERT_EQ(x.length % g, 0u);
        }
        for (uint64_t u = x.offset / unit; u < (x.offset + x.length) / unit; ++u) {
          ASSERT_FALSE(used[u]) << "unit " << u << " handed out twice";
          used[u] = true;
        }
      }
      live.emplace_back(lend, got);
    } else {
      size_t k = rng() % live.size();
      for (auto& x : live[k].second)
        for (uint64_t u = x.offset / unit; u < (x.offset + x.length) / unit; ++u) used[u] = false;
      a.release(live[k].second);
      live.erase(live.begin() + static_cast<long>(k));
    }
  }
  uint64_t in_use = 0;
  for (bool b : used) in_use += b;
  EXPECT_EQ(a.free_bytes(), cap - in_use * unit);
}
