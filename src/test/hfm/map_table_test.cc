// The map table against a brute-force model of HFM / ReHypar extent choice.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <random>

#include "hybridstore/sections/map_table.h"

namespace hybridstore {
namespace {

SegmentMap make(uint32_t s, PartitionMode m, uint32_t delta) {
  SegmentMap map;
  std::string err;
  EXPECT_EQ(SegmentMap::make(s, m, delta, &map, &err), 0) << err;
  return map;
}

// The paper's rule, computed from scratch: group open extents by the entry of
// their tail; an entry's first descriptor has the largest free tail, earliest
// bucket position on ties; pick among first descriptors with free >= len.
const ExtentDesc* brute_pick(const SegmentMap& m, const std::vector<ExtentDesc*>& in,
                             SelectionPolicy pol, uint32_t len, uint64_t hint) {
  std::map<std::pair<int, int>, const ExtentDesc*> first;
  for (const ExtentDesc* e : in) {
    SegmentLabel l;
    m.label_of(e->tail, &l);
    auto& f = first[{l.level, l.index}];
    if (!f || e->tail < f->tail || (e->tail == f->tail && e->seq() < f->seq())) f = e;
  }
  const ExtentDesc* best = nullptr;
  auto dist = [&](const ExtentDesc* e) {
    return e->last_hint() > hint ? e->last_hint() - hint : hint - e->last_hint();
  };
  auto older = [](const ExtentDesc* a, const ExtentDesc* b) {
    return a->entered_us() < b->entered_us() || (a->entered_us() == b->entered_us() && a->seq() < b->seq());
  };
  for (auto& [k, e] : first) {
    uint32_t free = m.extent_blocks() - e->tail;
    if (free < len) continue;
    if (!best) {
      best = e;
      continue;
    }
    if (pol == SelectionPolicy::kHfm) {
      if (older(e, best)) best = e;
    } else {
      uint32_t bf = m.extent_blocks() - best->tail;
      if (free < bf || (free == bf && dist(e) < dist(best)) ||
          (free == bf && dist(e) == dist(best) && older(e, best)))
        best = e;
    }
  }
  return best;
}

void run(const SegmentMap& m, uint64_t seed) {
  std::mt19937_64 rng(seed);
  MapTable t(m);
  std::deque<ExtentDesc> pool(400);
  std::vector<ExtentDesc*> in;
  std::vector<uint32_t> starts;
  for (uint32_t b = 0; b < m.extent_blocks(); ++b) {
    SegmentLabel l;
    if (m.label_of(b, &l)) starts.push_back(b);
  }
  uint64_t seq = 0;
  for (int step = 0; step < 4000; ++step) {
    if (in.size() < pool.size() && (in.empty() || rng() % 3)) {
      ExtentDesc* e = nullptr;
      for (auto& p : pool)
        if (std::find(in.begin(), in.end(), &p) == in.end()) {
          e = &p;
          break;
        }
      e->tail = starts[rng() % starts.size()];
      e->more().entered_us = rng() % 50;
      e->more().last_hint = rng() % 1000;
      e->more().seq = ++seq;
      t.insert(e);
      in.push_back(e);
    } else {
      size_t i = rng() % in.size();
      t.remove(in[i]);
      in.erase(in.begin() + i);
    }
    ASSERT_EQ(t.size(), in.size());
    size_t clean = 0;
    for (auto* e : in) clean += e->tail == 0;
    ASSERT_EQ(t.clean_count(), clean);
    uint32_t len = 1 + static_cast<uint32_t>(rng() % m.extent_blocks());
    uint64_t hint = rng() % 1000;
    for (SelectionPolicy pol : {SelectionPolicy::kHfm, SelectionPolicy::kReHypar})
      ASSERT_EQ(t.pick(pol, len, hint), brute_pick(m, in, pol, len, hint))
          << "step " << step << " len " << len;
  }
}

TEST(MapTable, PicksMatchBruteForceRho1) { run(make(64, PartitionMode::kRho1, 0), 1); }
TEST(MapTable, PicksMatchBruteForceRho2) { run(make(64, PartitionMode::kRho2, 0), 2); }
TEST(MapTable, PicksMatchBruteForceRho3) { run(make(512, PartitionMode::kRho3, 32), 3); }
TEST(MapTable, PicksMatchBruteForceRho3Delta4) { run(make(256, PartitionMode::kRho3, 4), 4); }

TEST(MapTable, EntriesHoldLargestFreeFirstAndCleanAtTheHead) {
  SegmentMap m = make(512, PartitionMode::kRho3, 32);
  MapTable t(m);
  ExtentDesc a, b, c, clean;
  // 336 and 400 are both segment 4 of level 2 (under different parents).
  SegmentLabel la, lb;
  ASSERT_TRUE(m.label_of(336, &la));
  ASSERT_TRUE(m.label_of(400, &lb));
  ASSERT_EQ(la.level, lb.level);
  ASSERT_EQ(la.index, lb.index);
  a.tail = 400, a.more().seq = 1;
  b.tail = 336, b.more().seq = 2;
  c.tail = 336, c.more().seq = 3;
  clean.tail = 0, clean.more().seq = 4;
  t.insert(&a);
  t.insert(&b);
  t.insert(&c);
  t.insert(&clean);
  auto v = t.entry_extents(la.level, la.index);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0], &b);  // most free space, then first in
  EXPECT_EQ(v[1], &c);
  EXPECT_EQ(v[2], &a);
  EXPECT_EQ(t.clean_head(), &clean);
  EXPECT_EQ(t.entry_extents(0, -1).size(), 1u);
  t.remove(&b);
  EXPECT_EQ(t.entry_extents(la.level, la.index)[0], &c);
}

}  // namespace
}  // namespace hybridstore
