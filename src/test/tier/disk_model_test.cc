// The disk model behind hybridstore-diskmodel, driven on its virtual clock:
// no sleeping and no FUSE, so every figure here is exact and repeatable.
#include "testing/disk_model_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <numeric>
#include <random>
#include <sstream>

using namespace hybridstore;

namespace {

constexpr uint64_t kSeed = 20240611;
constexpr uint64_t kGiB = 1ull << 30;

DiskProfile builtin(const std::string& name) {
  DiskProfileSet set;
  std::string err;
  EXPECT_TRUE(DiskProfileSet::parse(DiskProfileSet::builtin_text(), "built-in", &set, &err)) << err;
  DiskProfile p;
  EXPECT_TRUE(set.get(name, &p, &err)) << err;
  return p;
}

DiskProfile with(DiskProfile p, const std::vector<std::pair<std::string, std::string>>& kv) {
  std::string err;
  for (const auto& [k, v] : kv) EXPECT_TRUE(p.set(k, v, &err)) << err;
  EXPECT_TRUE(p.validate(&err)) << err;
  return p;
}

std::mt19937_64 seeded_rng(const char* test) {
  std::printf("[ %s ] seed %llu\n", test, static_cast<unsigned long long>(kSeed));
  return std::mt19937_64(kSeed);
}

struct Closed {
  uint64_t elapsed_ns = 0;  // from the first completion counted to the last
  uint64_t counted = 0;
  std::vector<uint64_t> latency_ns;
  std::vector<DiskCompletion> order;
};

// Keeps `qd` requests outstanding, each new one arriving when another
// completes; counts the last `n` of `warm + n` requests.
Closed run_closed(DiskModelQueue& m, unsigned qd, uint64_t warm, uint64_t n,
                  const std::function<DiskRequest(uint64_t id)>& next) {
  Closed out;
  std::map<uint64_t, uint64_t> arrival;
  uint64_t id = 0, t = 0, completed = 0, t0 = 0;
  std::vector<DiskCompletion> done;
  auto issue = [&](uint64_t now) {
    DiskRequest r = next(id);
    r.id = id++;
    arrival[r.id] = now;
    if (m.submit(r, now)) done.push_back({r.id, now});
  };
  for (unsigned i = 0; i < qd; ++i) issue(0);
  while (completed < warm + n) {
    std::vector<DiskCompletion> d;
    d.swap(done);
    uint64_t next_t = m.advance(t, &d);
    if (d.empty()) {
      EXPECT_NE(next_t, DiskModelQueue::kNever);
      if (next_t == DiskModelQueue::kNever) break;
      t = next_t;
      continue;
    }
    for (const auto& c : d) {
      ++completed;
      if (completed == warm) t0 = c.time_ns;
      if (completed > warm) {
        out.latency_ns.push_back(c.time_ns - arrival[c.id]);
        out.order.push_back(c);
        out.elapsed_ns = c.time_ns - t0;
        ++out.counted;
      }
      issue(c.time_ns);
    }
  }
  return out;
}

double mean(const std::vector<uint64_t>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

}  // namespace

TEST(DiskModel, BuiltinProfilesMatchTheFile) {
  // The tool falls back on the compiled-in copy; it must say the same thing.
  std::string here = __FILE__;
  std::string path = here.substr(0, here.rfind("/src/test/")) + "/qa/devclass/profiles.conf";
  std::ifstream f(path);
  if (!f) GTEST_SKIP() << path << " not found";
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(), std::string(DiskProfileSet::builtin_text()))
      << "update kBuiltinProfiles in disk_model_queue.cc from " << path;
  DiskProfileSet set;
  std::string err;
  ASSERT_TRUE(DiskProfileSet::parse(ss.str(), path, &set, &err)) << err;
  EXPECT_EQ(set.names(), (std::vector<std::string>{"hdd", "none", "ssd"}));
}

TEST(DiskModel, ProfilesRefuseWhatTheyDoNotKnow) {
  DiskProfileSet set;
  std::string err;
  EXPECT_FALSE(DiskProfileSet::parse("[x]\nrpm = 7200\n", "t", &set, &err));
  EXPECT_NE(err.find("kind"), std::string::npos) << err;
  EXPECT_FALSE(DiskProfileSet::parse("[x]\nkind = hdd\nrpn = 7200\n", "t", &set, &err));
  EXPECT_NE(err.find("unknown key"), std::string::npos) << err;
  EXPECT_FALSE(DiskProfileSet::parse("[x]\nkind = hdd\nseek_avg_read_ms = 30\n", "t", &set, &err));
  EXPECT_NE(err.find("seek"), std::string::npos) << err;
  EXPECT_FALSE(DiskProfileSet::parse("rpm = 1\n", "t", &set, &err));
  ASSERT_TRUE(DiskProfileSet::parse("[x]  # c\nkind = ssd # c\nchannels = 4\n", "t", &set, &err)) << err;
  DiskProfile p;
  ASSERT_TRUE(set.get("x", &p, &err));
  EXPECT_EQ(p.channels, 4u);
  EXPECT_FALSE(set.get("y", &p, &err));

  uint64_t v = 0;
  EXPECT_TRUE(parse_disk_size("64G", &v));
  EXPECT_EQ(v, 64 * kGiB);
  EXPECT_TRUE(parse_disk_size("1MiB", &v));
  EXPECT_EQ(v, 1u << 20);
  EXPECT_TRUE(parse_disk_size("4096", &v));
  EXPECT_EQ(v, 4096u);
  EXPECT_FALSE(parse_disk_size("4Q", &v));
  EXPECT_FALSE(parse_disk_size("", &v));
}

TEST(DiskModel, ZonedRateFallsFromTheOuterEdge) {
  DiskProfile p = with(builtin("hdd"), {{"stroke_share", "1"}});
  DiskModelQueue m(p, 64 * kGiB);
  EXPECT_NEAR(m.rate_at(0), p.rate_outer_mbps * 1e6, 1e3);
  EXPECT_NEAR(m.rate_at(64 * kGiB), p.rate_inner_mbps * 1e6, 1e3);
  EXPECT_NEAR(m.rate_at(32 * kGiB), (p.rate_outer_mbps + p.rate_inner_mbps) / 2 * 1e6, 1e3);
  const uint64_t mib = 1 << 20;
  double outer = m.transfer_ns(0, mib), inner = m.transfer_ns(64 * kGiB - mib, mib);
  EXPECT_NEAR(outer, mib / (p.rate_outer_mbps * 1e6) * 1e9, outer * 1e-3);
  EXPECT_NEAR(inner / outer, p.rate_outer_mbps / p.rate_inner_mbps, 0.01);
  // A half-stroke image sees only the faster half of the zones.
  DiskModelQueue half(with(p, {{"stroke_share", "0.5"}}), 64 * kGiB);
  EXPECT_NEAR(half.rate_at(64 * kGiB), (p.rate_outer_mbps + p.rate_inner_mbps) / 2 * 1e6, 1e3);
}

TEST(DiskModel, ContiguousRequestsCostOnlyTheirTransfer) {
  for (const char* cache : {"0", "64M"}) {
    DiskModelQueue m(with(builtin("hdd"), {{"cache_bytes", cache}}), 64 * kGiB);
    const uint64_t base = 10 * kGiB, len = 128 << 10;
    // The first read positions the head; each next one starts where it ended.
    Closed r = run_closed(m, 1, 1, 200, [&](uint64_t id) {
      return DiskRequest{0, DiskOp::kRead, base + id * len, len};
    });
    ASSERT_EQ(r.latency_ns.size(), 200u);
    for (size_t i = 0; i < r.latency_ns.size(); ++i) {
      double want = m.transfer_ns(base + (i + 1) * len, len);
      ASSERT_NEAR(static_cast<double>(r.latency_ns[i]), want, 2.0) << i;
    }
    EXPECT_EQ(m.stats().seeks + m.stats().rotational_only, 1u);
  }
  // Writes without the cache stream only while queued back to back.
  DiskModelQueue w(with(builtin("hdd"), {{"cache_bytes", "0"}}), 64 * kGiB);
  const uint64_t len = 64 << 10;
  for (uint64_t i = 0; i < 64; ++i) ASSERT_FALSE(w.submit({i, DiskOp::kWrite, i * len, len}, 0));
  std::vector<DiskCompletion> done;
  uint64_t end = w.drain(&done);
  ASSERT_EQ(done.size(), 64u);
  EXPECT_NEAR(static_cast<double>(end), w.transfer_ns(0, 64 * len), 64.0);  // the head starts at 0
  EXPECT_EQ(w.stats().contiguous, 64u);
}

TEST(DiskModel, RandomReadsCostSeekPlusHalfARevolutionOnAverage) {
  auto rng = seeded_rng("RandomReads");
  // Uniform zones make cylinders uniform in bytes, so uniform offsets give the
  // datasheet's average seek (taken over uniform cylinder pairs).
  DiskProfile p = with(builtin("hdd"), {{"stroke_share", "1"},
                                        {"rate_inner_mbps", std::to_string(builtin("hdd").rate_outer_mbps)}});
  const uint64_t size = 64 * kGiB, len = 4096;
  DiskModelQueue m(p, size);
  std::vector<uint64_t> offs;
  Closed r = run_closed(m, 1, 10, 20000, [&](uint64_t) {
    uint64_t off = (rng() % (size / len)) * len;
    offs.push_back(off);
    return DiskRequest{0, DiskOp::kRead, off, len};
  });
  const double rev = m.revolution_ns();
  const double want = p.seek_avg_read_ms * 1e6 + rev / 2 + m.transfer_ns(0, len);
  EXPECT_NEAR(mean(r.latency_ns), want, want * 0.03)
      << "seek avg " << p.seek_avg_read_ms << " ms, half a revolution " << rev / 2e6 << " ms";
  EXPECT_NEAR(m.mean_random_seek_ms(), p.seek_avg_read_ms, 1e-6);

  // Zoned: the rotational part alone (latency - seek of the actual distance
  // - transfer) is uniform over one revolution.
  DiskModelQueue z(builtin("hdd"), size);
  std::vector<uint64_t> zoffs;
  Closed rz = run_closed(z, 1, 0, 20000, [&](uint64_t) {
    uint64_t off = (rng() % (size / len)) * len;
    zoffs.push_back(off);
    return DiskRequest{0, DiskOp::kRead, off, len};
  });
  double rot = 0;
  for (size_t i = 1; i < rz.latency_ns.size(); ++i) {
    uint64_t a = z.cylinder_of(zoffs[i - 1] + len), b = z.cylinder_of(zoffs[i]);
    double seek = z.seek_ms(a > b ? a - b : b - a, false) * 1e6;
    rot += static_cast<double>(rz.latency_ns[i]) - seek - z.transfer_ns(zoffs[i], len);
  }
  rot /= static_cast<double>(rz.latency_ns.size() - 1);
  EXPECT_NEAR(rot, rev / 2, rev * 0.02);
}

TEST(DiskModel, ElevatorServesOutOfOrderPiecesInOneSweep) {
  auto rng = seeded_rng("Elevator");
  for (const char* sched : {"clook", "satf"}) {
    DiskModelQueue m(with(builtin("hdd"), {{"scheduler", sched}, {"cache_bytes", "0"}}), 64 * kGiB);
    // Keep the actuator busy far away while the pieces arrive.
    ASSERT_FALSE(m.submit({1000, DiskOp::kRead, 60 * kGiB, 4096}, 0));
    std::vector<DiskCompletion> done;
    m.advance(0, &done);
    const uint64_t base = 20 * kGiB, len = 64 << 10, n = 32;
    std::vector<uint64_t> idx(n);
    std::iota(idx.begin(), idx.end(), 0);
    std::shuffle(idx.begin(), idx.end(), rng);
    for (uint64_t i : idx) ASSERT_FALSE(m.submit({i, DiskOp::kRead, base + i * len, len}, 1000));
    const uint64_t positioned_before = m.stats().seeks + m.stats().rotational_only;
    uint64_t end = m.drain(&done);
    ASSERT_EQ(done.size(), n + 1);
    const uint64_t positionings = m.stats().seeks + m.stats().rotational_only - positioned_before;
    if (std::string(sched) == "clook") {
      // One seek to the lowest piece, then a single pass in offset order.
      EXPECT_EQ(positionings, 1u);
      for (uint64_t i = 0; i < n; ++i) EXPECT_EQ(done[i + 1].id, i);
    } else {
      // The nearest by rotation may come first: it streams to the end of the
      // batch and comes back for the pieces before, a few times, not n.
      EXPECT_LE(positionings, 4u);
    }
    // n transfers and those few positionings.
    const double xfer = m.transfer_ns(base, n * len);
    const double first_end = static_cast<double>(done[0].time_ns);
    EXPECT_LT(static_cast<double>(end) - first_end,
              xfer + static_cast<double>(positionings) *
                         (m.seek_ms(m.cylinders() / 2, false) * 1e6 + m.revolution_ns()))
        << sched;
    EXPECT_EQ(m.stats().contiguous, n - positionings);
  }
}

TEST(DiskModel, QueueDepthLetsTheSchedulerShortenSeeks) {
  auto rng = seeded_rng("QueueDepth");
  const uint64_t size = 64 * kGiB, len = 4096;
  auto gen = [&](uint64_t) { return DiskRequest{0, DiskOp::kRead, (rng() % (size / len)) * len, len}; };
  for (const char* sched : {"clook", "satf"}) {
    DiskProfile p = with(builtin("hdd"), {{"scheduler", sched}});
    DiskModelQueue m1(p, size), m16(p, size);
    Closed q1 = run_closed(m1, 1, 100, 5000, gen);
    Closed q16 = run_closed(m16, 16, 100, 5000, gen);
    double iops1 = q1.counted / (q1.elapsed_ns / 1e9), iops16 = q16.counted / (q16.elapsed_ns / 1e9);
    std::printf("  %s: QD1 %.0f IOPS, QD16 %.0f IOPS (virtual clock)\n", sched, iops1, iops16);
    EXPECT_GT(iops16, iops1 * (std::string(sched) == "satf" ? 2.0 : 1.3)) << sched;
  }
}

TEST(DiskModel, WriteCacheCompletesWritesOnArrivalAndFlushWaitsForTheDestage) {
  auto rng = seeded_rng("WriteCache");
  const uint64_t size = 64 * kGiB, len = 4096;
  DiskModelQueue m(builtin("hdd"), size);
  for (uint64_t i = 0; i < 100; ++i)
    ASSERT_TRUE(m.submit({i, DiskOp::kWrite, (rng() % (size / len)) * len, len}, 0)) << i;
  EXPECT_EQ(m.dirty_bytes(), 100 * len);
  EXPECT_EQ(m.stats().ops[1].on_arrival, 100u);
  ASSERT_FALSE(m.submit({200, DiskOp::kFlush, 0, 0}, 0));
  // Requests after a flush wait for it.
  ASSERT_FALSE(m.submit({201, DiskOp::kRead, 5 * kGiB, len}, 0));
  std::vector<DiskCompletion> done;
  m.drain(&done);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].id, 200u);
  EXPECT_EQ(done[1].id, 201u);
  EXPECT_EQ(m.dirty_bytes(), 0u);
  EXPECT_EQ(m.stats().destages, 100u);
  // The flush took the destage: 100 positioned writes, a few ms each at least
  // (the track-to-track seek, or some rotation).
  EXPECT_EQ(done[0].time_ns, m.stats().destage_ns);
  EXPECT_GT(done[0].time_ns, 100 * 300000u);
  EXPECT_GT(done[1].time_ns, done[0].time_ns);

  // Without the cache a write completes after its service, and a flush
  // behind it has nothing left to wait for.
  DiskModelQueue nc(with(builtin("hdd"), {{"cache_bytes", "0"}}), size);
  ASSERT_FALSE(nc.submit({1, DiskOp::kWrite, 7 * kGiB, len}, 0));
  ASSERT_FALSE(nc.submit({2, DiskOp::kFlush, 0, 0}, 0));
  done.clear();
  nc.drain(&done);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_GT(done[0].time_ns, 0u);
  EXPECT_EQ(done[1].time_ns, done[0].time_ns);
  EXPECT_EQ(nc.stats().destages, 0u);
}

TEST(DiskModel, WriteCacheHitsAndBackPressure) {
  const uint64_t size = 64 * kGiB;
  DiskModelQueue m(with(builtin("hdd"), {{"cache_bytes", "1M"}, {"cache_segments", "0"}}), size);
  ASSERT_TRUE(m.submit({1, DiskOp::kWrite, kGiB, 8192}, 0));
  EXPECT_TRUE(m.submit({2, DiskOp::kRead, kGiB + 4096, 4096}, 0));  // inside dirty data
  EXPECT_EQ(m.stats().read_hits, 1u);
  // 64 KiB writes far apart: 15 more fit in 1 MiB, the rest wait for room.
  unsigned absorbed = 0;
  for (uint64_t i = 0; i < 31; ++i) absorbed += m.submit({10 + i, DiskOp::kWrite, (2 + i) * kGiB, 65536}, 0);
  EXPECT_EQ(absorbed, 15u);
  std::vector<DiskCompletion> done;
  m.drain(&done);
  EXPECT_EQ(done.size(), 16u);
  EXPECT_GT(m.stats().cache_waits, 0u);
  EXPECT_LE(m.stats().max_dirty_bytes, 1u << 20);
  // A write that waited completed when a destage made room, not on arrival.
  for (const auto& c : done) EXPECT_GT(c.time_ns, 0u);
  EXPECT_EQ(m.dirty_bytes(), 0u);
}

TEST(DiskModel, LateAdvanceChangesNothing) {
  // The real-time driver wakes up late; decisions are still taken at model
  // time, so the completions are the same as when every event is met exactly.
  auto rng = seeded_rng("LateAdvance");
  const uint64_t size = 64 * kGiB;
  struct Arrival {
    uint64_t t;
    DiskRequest r;
  };
  std::vector<Arrival> arrivals;
  uint64_t t = 0;
  for (uint64_t i = 0; i < 3000; ++i) {
    t += rng() % 4000000;
    DiskOp op = (rng() % 10) < 6 ? DiskOp::kRead : ((rng() % 20) == 0 ? DiskOp::kFlush : DiskOp::kWrite);
    uint64_t len = op == DiskOp::kFlush ? 0 : 4096ull << (rng() % 6);
    arrivals.push_back({t, {i, op, op == DiskOp::kFlush ? 0 : (rng() % (size / 4096)) * 4096, len}});
  }
  for (const char* kind : {"hdd", "ssd"}) {
    auto run = [&](uint64_t lateness) {
      DiskModelQueue m(builtin(kind), size);
      std::vector<DiskCompletion> all;
      uint64_t now = 0;
      for (const auto& a : arrivals) {
        // Meet each event `lateness` ns after it is due, but never run past
        // the next arrival (the driver's clock stamps arrivals too).
        for (;;) {
          uint64_t next = m.advance(now, &all);
          if (next == DiskModelQueue::kNever || next > a.t) break;
          now = std::min(a.t, next + lateness);
        }
        if (m.submit(a.r, a.t)) all.push_back({a.r.id, a.t});
        now = a.t;
      }
      m.drain(&all);
      std::sort(all.begin(), all.end(),
                [](auto& a, auto& b) { return a.id < b.id; });
      return all;
    };
    auto exact = run(0), late = run(3000000);
    ASSERT_EQ(exact.size(), arrivals.size()) << kind;
    ASSERT_EQ(late.size(), arrivals.size()) << kind;
    for (size_t i = 0; i < exact.size(); ++i) {
      ASSERT_EQ(exact[i].id, late[i].id);
      ASSERT_EQ(exact[i].time_ns, late[i].time_ns) << kind << " request " << i;
    }
  }
}

TEST(DiskModel, SsdScalesWithQueueDepth) {
  auto rng = seeded_rng("Ssd");
  const uint64_t size = 64 * kGiB, len = 4096;
  DiskProfile p = builtin("ssd");
  auto gen = [&](uint64_t) { return DiskRequest{0, DiskOp::kRead, (rng() % (size / len)) * len, len}; };
  DiskModelQueue m1(p, size), m16(p, size);
  Closed q1 = run_closed(m1, 1, 100, 5000, gen);
  Closed q16 = run_closed(m16, 16, 100, 20000, gen);
  double iops1 = q1.counted / (q1.elapsed_ns / 1e9), iops16 = q16.counted / (q16.elapsed_ns / 1e9);
  std::printf("  ssd: QD1 %.0f IOPS, QD16 %.0f IOPS (virtual clock)\n", iops1, iops16);
  const double lat1 = (p.read_us + 1e6 / p.read_iops) * 1e3;
  EXPECT_NEAR(mean(q1.latency_ns), lat1, 2.0);
  EXPECT_GT(iops16, 6 * iops1);
  EXPECT_NEAR(iops16, p.read_iops, p.read_iops * 0.02);  // the front end's limit
  // 4 MiB sequential reads run at the link's rate.
  DiskModelQueue s(p, size);
  uint64_t mib4 = 4 << 20;
  Closed seq = run_closed(s, 1, 5, 100, [&](uint64_t id) { return DiskRequest{0, DiskOp::kRead, id * mib4, mib4}; });
  double mbps = seq.counted * mib4 / (seq.elapsed_ns / 1e9) / 1e6;
  EXPECT_NEAR(mbps, p.read_mbps, p.read_mbps * 0.03);
  // A flush waits for the writes before it and holds back what follows.
  DiskModelQueue f(p, size);
  ASSERT_FALSE(f.submit({1, DiskOp::kWrite, 0, mib4}, 0));
  ASSERT_FALSE(f.submit({2, DiskOp::kFlush, 0, 0}, 0));
  ASSERT_FALSE(f.submit({3, DiskOp::kRead, 0, 4096}, 0));
  std::vector<DiskCompletion> done;
  f.drain(&done);
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0].id, 1u);
  EXPECT_EQ(done[1].id, 2u);
  EXPECT_EQ(done[2].id, 3u);
  EXPECT_GE(done[1].time_ns, done[0].time_ns);
}

TEST(DiskModel, SameInputSameOutput) {
  for (const char* kind : {"hdd", "ssd"}) {
    auto once = [&] {
      std::mt19937_64 rng(kSeed);
      DiskModelQueue m(builtin(kind), 64 * kGiB);
      return run_closed(m, 8, 0, 3000, [&](uint64_t id) {
        DiskOp op = id % 3 == 0 ? DiskOp::kWrite : DiskOp::kRead;
        return DiskRequest{0, op, (rng() % (16 * kGiB / 4096)) * 4096, 4096ull << (rng() % 4)};
      });
    };
    Closed a = once(), b = once();
    ASSERT_EQ(a.order.size(), b.order.size());
    for (size_t i = 0; i < a.order.size(); ++i) {
      ASSERT_EQ(a.order[i].id, b.order[i].id) << kind;
      ASSERT_EQ(a.order[i].time_ns, b.order[i].time_ns) << kind;
    }
  }
}

TEST(DiskModel, NoneCompletesEverythingOnArrival) {
  DiskModelQueue m(builtin("none"), kGiB);
  EXPECT_TRUE(m.submit({1, DiskOp::kRead, 0, 4096}, 5));
  EXPECT_TRUE(m.submit({2, DiskOp::kFlush, 0, 0}, 6));
  std::vector<DiskCompletion> done;
  EXPECT_EQ(m.advance(10, &done), DiskModelQueue::kNever);
  EXPECT_TRUE(done.empty());
  EXPECT_EQ(m.stats().ops[0].count, 1u);
}
