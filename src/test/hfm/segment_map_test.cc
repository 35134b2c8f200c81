// Segment partitioning and the map function (docs/algorithms.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "hybridstore/sections/segment_map.h"

namespace hybridstore {
namespace {

SegmentMap make(uint32_t s, PartitionMode m, uint32_t delta = 0) {
  SegmentMap map;
  std::string err;
  EXPECT_EQ(SegmentMap::make(s, m, delta, &map, &err), 0) << err;
  return map;
}

struct Expect {
  uint32_t s;
  PartitionMode mode;
  uint32_t delta;
  uint32_t pos;
  int index, level;
  uint32_t start;
};

TEST(SegmentMap, WorkedExamplesFromThePapers) {
  const Expect cases[] = {
      {8, PartitionMode::kRho1, 0, 3, 2, 0, 4},
      {64, PartitionMode::kRho2, 0, 35, 2, 1, 36},
      {512, PartitionMode::kRho3, 32, 161, 1, 2, 162},
      {256, PartitionMode::kRho3, 32, 107, 4, 2, 112},
  };
  for (const auto& c : cases) {
    MapPosition p = make(c.s, c.mode, c.delta).next(c.pos);
    EXPECT_EQ(p.index, c.index) << "s=" << c.s << " pos=" << c.pos;
    EXPECT_EQ(p.level, c.level) << "s=" << c.s << " pos=" << c.pos;
    EXPECT_EQ(p.start, c.start) << "s=" << c.s << " pos=" << c.pos;
  }
}

TEST(SegmentMap, LevelCountsMatchThePaper) {
  EXPECT_EQ(make(8, PartitionMode::kRho1).levels(), 1);
  EXPECT_EQ(make(64, PartitionMode::kRho2).levels(), 2);
  // HFM(3): 512 blocks, delta 32 -> five map tables mt_0..mt_4.
  EXPECT_EQ(make(512, PartitionMode::kRho3, 32).levels(), 5);
  EXPECT_EQ(make(256, PartitionMode::kRho3, 32).levels(), 4);
  EXPECT_EQ(make(32, PartitionMode::kRho3, 32).levels(), 1);
}

TEST(SegmentMap, PaperPartitionOfHfm3) {
  // Fig. 2(c): sg_0^8 -> level 1 from 256; sg_1^6 at 320 -> level 2; sg_2^5 at 352 -> level 3.
  SegmentMap m = make(512, PartitionMode::kRho3, 32);
  SegmentLabel l;
  ASSERT_TRUE(m.label_of(320, &l));
  EXPECT_EQ(l.level, 1);
  EXPECT_EQ(l.index, 6);
  ASSERT_TRUE(m.label_of(352, &l));
  EXPECT_EQ(l.level, 2);
  EXPECT_EQ(l.index, 5);
  ASSERT_TRUE(m.label_of(368, &l));  // sg_3^4 at 352 + 16
  EXPECT_EQ(l.level, 3);
  EXPECT_EQ(l.index, 4);
}

TEST(SegmentMap, LastChildOfAPartitionClimbsToTheParentLevel) {
  SegmentMap m = make(512, PartitionMode::kRho3, 32);
  MapPosition p = m.next(255);
  EXPECT_EQ(p.start, 256u);
  EXPECT_EQ(p.level, 0);
  EXPECT_EQ(p.index, 8);
  p = m.next(511);
  EXPECT_EQ(p.start, 512u);  // full
  EXPECT_EQ(p.index, 9);
  EXPECT_EQ(p.level, 0);
}

// Leaves of the tree in block order, built from nodes() (an independent walk).
std::vector<SegmentNode> leaves(const SegmentMap& m) {
  std::vector<SegmentNode> out;
  for (const auto& n : m.nodes())
    if (!n.partitioned) out.push_back(n);
  std::sort(out.begin(), out.end(),
            [](const SegmentNode& a, const SegmentNode& b) { return a.start < b.start; });
  return out;
}

void check_map(const SegmentMap& m) {
  const uint32_t s = m.extent_blocks();
  // Every partition's children tile the parent; the leaves tile the extent.
  auto nodes = m.nodes();
  std::map<std::pair<int, uint32_t>, uint64_t> covered;  // (child level, parent start)
  for (const auto& n : nodes) {
    ASSERT_LE(n.start + n.length, s);
    if (n.partitioned) covered[{n.level + 1, n.start}] += 0;
  }
  for (const auto& n : nodes) {
    auto it = covered.find({n.level, n.start - (n.index < 0 ? 0 : n.length)});
    if (n.level > 0) {
      ASSERT_NE(it, covered.end()) << "segment without a partitioned parent";
      it->second += n.length;
    }
  }
  for (const auto& n : nodes) {
    if (n.partitioned) {
      uint64_t got = covered[{n.level + 1, n.start}];
      EXPECT_EQ(got, n.length);
    }
  }
  auto lv = leaves(m);
  uint32_t cursor = 0;
  for (const auto& l : lv) {
    ASSERT_EQ(l.start, cursor) << "leaves leave a gap or overlap";
    cursor += l.length;
  }
  ASSERT_EQ(cursor, s);
  // The map start is past pos: it is the end of the leaf holding pos, and it
  // carries the label of the shallowest segment beginning there.
  std::set<std::tuple<uint32_t, int, int>> named;
  for (const auto& n : nodes) named.insert({n.start, n.level, n.index});
  size_t li = 0;
  for (uint32_t pos = 0; pos < s; ++pos) {
    while (lv[li].start + lv[li].length <= pos) ++li;
    MapPosition p = m.next(pos);
    ASSERT_GT(p.start, pos);
    ASSERT_EQ(p.start, lv[li].start + lv[li].length) << "pos " << pos;
    SegmentLabel l;
    ASSERT_TRUE(m.label_of(p.start, &l));
    ASSERT_EQ(l.index, p.index);
    ASSERT_EQ(l.level, p.level);
    if (p.start < s) {
      ASSERT_TRUE(named.count({p.start, p.level, p.index})) << "label names no segment";
    }
  }
}

TEST(SegmentMap, EverySizeAndDeltaTilesTheExtentAndMapsPastPos) {
  for (uint32_t s = 2; s <= 4096; s *= 2) {
    SCOPED_TRACE(testing::Message() << "s=" << s);
    check_map(make(s, PartitionMode::kRho1));
    check_map(make(s, PartitionMode::kRho2));
    for (uint32_t delta = 2; delta <= s; delta *= 2) {
      SCOPED_TRACE(testing::Message() << "delta=" << delta);
      SegmentMap m = make(s, PartitionMode::kRho3, delta);
      check_map(m);
      // rho 3 leaves are shorter than delta, except the level-0 ones when the
      // extent is not split at all.
      for (const auto& n : m.nodes()) {
        if (!n.partitioned && n.level > 0) {
          EXPECT_LT(n.length, delta);
        }
      }
    }
  }
}

TEST(SegmentMap, DeltaTwoIsPlainBumpAllocation) {
  SegmentMap m = make(1024, PartitionMode::kRho3, 2);
  for (uint32_t pos = 0; pos < 1024; ++pos) EXPECT_EQ(m.next(pos).start, pos + 1);
}

TEST(SegmentMap, RejectsBadGeometry) {
  SegmentMap m;
  std::string err;
  EXPECT_EQ(SegmentMap::make(12, PartitionMode::kRho1, 0, &m, &err), -EINVAL);
  EXPECT_NE(err.find("power of two"), std::string::npos);
  EXPECT_EQ(SegmentMap::make(1, PartitionMode::kRho1, 0, &m, &err), -EINVAL);
  EXPECT_EQ(SegmentMap::make(64, PartitionMode::kRho3, 3, &m, &err), -EINVAL);
  EXPECT_EQ(SegmentMap::make(64, PartitionMode::kRho3, 128, &m, &err), -EINVAL);
  EXPECT_EQ(SegmentMap::make(64, PartitionMode::kBypass, 0, &m, &err), -EINVAL);
  EXPECT_EQ(SegmentMap::make(64, static_cast<PartitionMode>(7), 0, &m, &err), -EINVAL);
}

TEST(SegmentMap, LabelOfRejectsBlocksInsideASegment) {
  SegmentMap m = make(8, PartitionMode::kRho1);
  SegmentLabel l;
  EXPECT_FALSE(m.label_of(3, &l));
  EXPECT_FALSE(m.label_of(9, &l));
  EXPECT_TRUE(m.label_of(0, &l));
  EXPECT_EQ(l.index, -1);
}

}  // namespace
}  // namespace hybridstore
