#include "testing/workload_profiles.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "hybridstore/tier/heat_tracker.h"

using namespace hybridstore;

namespace {

WorkloadOptions small(uint64_t seed, unsigned days = 2, double scale = 0.05) {
  WorkloadOptions o;
  o.seed = seed;
  o.days = days;
  o.scale = scale;
  return o;
}

bool same(const WorkloadRequest& a, const WorkloadRequest& b) {
  return a.time_us == b.time_us && a.day == b.day && a.object == b.object && a.op == b.op &&
         a.offset == b.offset && a.length == b.length;
}

}  // namespace

TEST(WorkloadProfiles, TheThreePaperProfilesExist) {
  for (const char* n : {"mail", "office", "research"}) {
    const WorkloadProfile* p = find_workload_profile(n);
    ASSERT_NE(p, nullptr) << n;
    EXPECT_NEAR(p->paper.metadata_share + p->paper.read_share + p->paper.write_share, 1.0, 1e-9);
  }
  EXPECT_EQ(find_workload_profile("web"), nullptr);
}

TEST(WorkloadProfiles, SameSeedGivesTheSameStream) {
  const WorkloadProfile& p = *find_workload_profile("office");
  WorkloadGenerator a(p, small(7)), b(p, small(7)), c(p, small(8));
  EXPECT_EQ(a.object_sizes(), b.object_sizes());
  EXPECT_NE(a.object_sizes(), c.object_sizes());
  WorkloadRequest ra, rb, rc;
  int differ = 0;
  uint64_t n = 0;
  while (a.next(&ra)) {
    ASSERT_TRUE(b.next(&rb));
    ASSERT_TRUE(same(ra, rb)) << n;
    if (c.next(&rc) && !same(ra, rc)) ++differ;
    ++n;
  }
  EXPECT_FALSE(b.next(&rb));
  EXPECT_EQ(n, 2 * a.ops_per_day());
  EXPECT_GT(differ, static_cast<int>(n / 2));
}

TEST(WorkloadProfiles, OpMixMatchesTableOne) {
  for (const auto& p : workload_profiles()) {
    WorkloadGenerator g(p, small(1, 1, 0.1));
    std::map<WorkloadOp, double> count;
    WorkloadRequest r;
    double n = 0;
    while (g.next(&r)) {
      count[r.op] += 1;
      n += 1;
    }
    EXPECT_NEAR(count[WorkloadOp::kMetadata] / n, p.paper.metadata_share, 0.01) << p.name;
    EXPECT_NEAR(count[WorkloadOp::kRead] / n, p.paper.read_share, 0.01) << p.name;
    EXPECT_NEAR(count[WorkloadOp::kWrite] / n, p.paper.write_share, 0.01) << p.name;
  }
}

TEST(WorkloadProfiles, RequestsStayInsideObjectsAndTimeMovesForward) {
  for (const auto& p : workload_profiles()) {
    WorkloadGenerator g(p, small(3, 3));
    const auto& sizes = g.object_sizes();
    WorkloadRequest r;
    uint64_t last_t = 0;
    uint32_t last_day = 0;
    while (g.next(&r)) {
      ASSERT_LT(r.object, sizes.size());
      ASSERT_GE(r.time_us, last_t);
      ASSERT_GE(r.day, last_day);
      ASSERT_GE(r.time_us, r.day * 86400000000ull);
      if (r.op != WorkloadOp::kMetadata) {
        ASSERT_GT(r.length, 0u);
        ASSERT_LE(r.offset + r.length, sizes[r.object]) << p.name;
      }
      last_t = r.time_us;
      last_day = r.day;
    }
    EXPECT_EQ(last_day, 2u);
  }
}

TEST(WorkloadProfiles, FewHotFilesAttractMostAccesses) {
  const WorkloadProfile& p = *find_workload_profile("office");
  WorkloadGenerator g(p, small(5, 1, 0.1));
  std::vector<uint64_t> hits(g.object_sizes().size());
  WorkloadRequest r;
  uint64_t total = 0;
  while (g.next(&r)) {
    if (r.op == WorkloadOp::kMetadata) continue;
    ++hits[r.object];
    ++total;
  }
  std::sort(hits.rbegin(), hits.rend());
  uint64_t top = 0;
  for (size_t i = 0; i < hits.size() * 3 / 100; ++i) top += hits[i];
  EXPECT_GT(static_cast<double>(top) / total, 0.5);  // < 3% of files, the majority of I/O
}

TEST(WorkloadProfiles, RandomnessCountSeparatesRandomFromSequentialFiles) {
  // Driven through the heat tracker, the generated runs of sequential files
  // continue within 0.5 s (R << f) and random files do not (R ~ f).
  const WorkloadProfile& p = *find_workload_profile("office");
  WorkloadGenerator g(p, small(6, 1, 0.1));
  HeatTracker t(HeatTrackerOptions{});
  WorkloadRequest r;
  while (g.next(&r)) {
    if (r.op == WorkloadOp::kMetadata) continue;
    t.record(std::to_string(r.object),
             r.op == WorkloadOp::kRead ? AccessType::kRead : AccessType::kWrite, r.offset, r.length,
             r.time_us, g.object_sizes()[r.object]);
  }
  double rnd_f = 0, rnd_r = 0, seq_f = 0, seq_r = 0;
  for (const auto& s : t.snapshot()) {
    uint32_t id = static_cast<uint32_t>(std::stoul(s.key));
    if (s.frequency < 20) continue;
    if (g.object_is_random(id)) {
      rnd_f += s.frequency;
      rnd_r += s.randomness;
    } else if (g.object_sizes()[id] > 256 * 1024) {
      seq_f += s.frequency;
      seq_r += s.randomness;
    }
  }
  ASSERT_GT(rnd_f, 0);
  ASSERT_GT(seq_f, 0);
  EXPECT_GT(rnd_r / rnd_f, 0.8);
  EXPECT_LT(seq_r / seq_f, 0.3);
}
