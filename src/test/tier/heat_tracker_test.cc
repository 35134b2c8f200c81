#include "hybridstore/tier/heat_tracker.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <thread>

#include "hscommon/encoding.h"

using namespace hybridstore;

namespace {

constexpr uint64_t kMs = 1000;
const AccessType R = AccessType::kRead;
const AccessType W = AccessType::kWrite;

HeatTrackerOptions opts(size_t cap = 100000, double decay = 0.5, unsigned shards = 8) {
  HeatTrackerOptions o;
  o.max_objects = cap;
  o.decay = decay;
  o.shards = shards;
  return o;
}

HeatSample get(const HeatTracker& t, const std::string& k) {
  HeatSample s;
  EXPECT_TRUE(t.lookup(k, &s)) << k;
  return s;
}

}  // namespace

TEST(HeatTracker, FirstAccessStartsOneSegment) {
  HeatTracker t(opts());
  t.record("obj", R, 8192, 4096, 1000, 65536);
  HeatSample s = get(t, "obj");
  EXPECT_EQ(s.frequency, 1);
  EXPECT_EQ(s.randomness, 1);
  EXPECT_EQ(s.size, 65536u);
  EXPECT_EQ(s.last_offset, 8192u);
  EXPECT_EQ(s.last_end, 12288u);
  EXPECT_EQ(s.last_time_us, 1000u);
  EXPECT_EQ(s.last_type, R);
}

TEST(HeatTracker, ContinuationMovesOnlyEndAndTime) {
  HeatTracker t(opts());
  t.record("o", R, 0, 4096, 0, 1 << 20);
  t.record("o", R, 4096, 4096, 100 * kMs, 1 << 20);
  t.record("o", R, 8192, 8192, 300 * kMs, 1 << 20);
  HeatSample s = get(t, "o");
  EXPECT_EQ(s.frequency, 3);
  EXPECT_EQ(s.randomness, 1);
  EXPECT_EQ(s.last_offset, 0u);  // the segment still starts where it started
  EXPECT_EQ(s.last_end, 16384u);
  EXPECT_EQ(s.last_time_us, 300 * kMs);
}

TEST(HeatTracker, ChangeOfTypeCountsAsRandom) {
  HeatTracker t(opts());
  t.record("o", R, 0, 4096, 0, 1 << 20);
  t.record("o", W, 4096, 4096, 10 * kMs, 1 << 20);  // contiguous, in time, but a write
  HeatSample s = get(t, "o");
  EXPECT_EQ(s.randomness, 2);
  EXPECT_EQ(s.last_type, W);
  EXPECT_EQ(s.last_offset, 4096u);
  EXPECT_EQ(s.last_end, 8192u);
}

TEST(HeatTracker, HalfSecondOrMoreBreaksContinuation) {
  HeatTracker t(opts());
  t.record("a", R, 0, 4096, 0, 1 << 20);
  t.record("a", R, 4096, 4096, 500 * kMs - 1, 1 << 20);  // just inside 0.5 s
  EXPECT_EQ(get(t, "a").randomness, 1);
  t.record("b", R, 0, 4096, 0, 1 << 20);
  t.record("b", R, 4096, 4096, 500 * kMs, 1 << 20);  // not "smaller than 0.5 s"
  HeatSample b = get(t, "b");
  EXPECT_EQ(b.randomness, 2);
  EXPECT_EQ(b.last_offset, 4096u);
}

TEST(HeatTracker, NonContiguousOffsetCountsAsRandom) {
  HeatTracker t(opts());
  t.record("o", R, 0, 4096, 0, 1 << 20);
  t.record("o", R, 8192, 4096, 1, 1 << 20);  // skips a block
  t.record("o", R, 8192, 4096, 2, 1 << 20);  // re-reads the same block
  t.record("o", R, 0, 4096, 3, 1 << 20);     // backwards
  EXPECT_EQ(get(t, "o").randomness, 4);
  EXPECT_EQ(get(t, "o").frequency, 4);
}

TEST(HeatTracker, ClockSteppingBackwardsCountsAsRandom) {
  HeatTracker t(opts());
  t.record("o", R, 0, 4096, 10 * kMs, 1 << 20);
  t.record("o", R, 4096, 4096, 5 * kMs, 1 << 20);
  EXPECT_EQ(get(t, "o").randomness, 2);
}

TEST(HeatTracker, RandomStreamHasRandomnessEqualToFrequencySequentialHasOne) {
  HeatTracker t(opts());
  std::mt19937_64 rng(1);
  for (int i = 0; i < 100; ++i) {
    t.record("rand", R, (rng() % 1000) * 4096 + 1, 4096, i * kMs, 8 << 20);
    t.record("seq", R, static_cast<uint64_t>(i) * 4096, 4096, i * kMs, 8 << 20);
  }
  EXPECT_EQ(get(t, "rand").randomness, 100);
  EXPECT_EQ(get(t, "seq").randomness, 1);
  EXPECT_EQ(get(t, "seq").frequency, 100);
}

TEST(HeatTracker, KeysAreOpaqueBytes) {
  HeatTracker t(opts());
  const std::string a("obj\0a", 5), b("obj\0b", 5), c("obj", 3);
  t.record(a, R, 0, 1, 0, 10);
  t.record(a, R, 100, 1, 1, 10);
  t.record(b, R, 0, 1, 2, 10);
  t.record(c, R, 0, 1, 3, 10);
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(get(t, a).frequency, 2);
  EXPECT_EQ(get(t, b).frequency, 1);
  EXPECT_EQ(get(t, c).frequency, 1);
  HeatDelta d = t.export_dirty();
  HeatTracker u(opts());
  std::string err;
  ASSERT_EQ(u.import_state(d.state, &err), 0);
  for (auto& [k, v] : d.put) ASSERT_EQ(u.import_entry(k, v, &err), 0) << err;
  EXPECT_EQ(get(u, a).frequency, 2);
}

TEST(HeatTracker, SizeFollowsTheLatestRequest) {
  HeatTracker t(opts());
  t.record("o", W, 0, 4096, 0, 4096);
  t.record("o", W, 4096, 4096, 1, 8192);
  EXPECT_EQ(get(t, "o").size, 8192u);
}

TEST(HeatTracker, WindowsDecayOlderCounts) {
  HeatTracker t(opts(1000, 0.5));
  for (int i = 0; i < 8; ++i) t.record("o", R, i * 100000ull, 10, i, 1 << 20);  // f = R = 8
  t.advance_window();
  HeatSample s = get(t, "o");
  EXPECT_DOUBLE_EQ(s.frequency, 4);
  EXPECT_DOUBLE_EQ(s.randomness, 4);
  t.record("o", R, 1, 10, 100, 1 << 20);  // one new random access in the new window
  s = get(t, "o");
  EXPECT_DOUBLE_EQ(s.frequency, 5);
  EXPECT_DOUBLE_EQ(s.randomness, 5);
  t.advance_window();
  t.advance_window();
  EXPECT_DOUBLE_EQ(get(t, "o").frequency, 1.25);  // (4 + 1) / 4
}

TEST(HeatTracker, DecayZeroKeepsOnlyTheCurrentWindow) {
  HeatTracker t(opts(1000, 0.0));
  for (int i = 0; i < 5; ++i) t.record("o", R, i * 100000ull, 10, i, 1 << 20);
  t.advance_window();
  EXPECT_EQ(get(t, "o").frequency, 0);
  t.record("o", R, 0, 10, 100, 1 << 20);
  EXPECT_EQ(get(t, "o").frequency, 1);
  EXPECT_EQ(get(t, "o").randomness, 1);
}

TEST(HeatTracker, AdvanceToClosesTimeAlignedWindows) {
  HeatTrackerOptions o = opts(1000, 0.5);
  o.window_us = 1000000;  // 1 s windows
  HeatTracker t(o);
  EXPECT_EQ(t.advance_to(2500000), 0u);  // anchors in window 2
  t.record("o", R, 0, 10, 2600000, 100);
  EXPECT_EQ(t.advance_to(2999999), 0u);
  EXPECT_EQ(t.advance_to(5000000), 3u);  // windows 2, 3, 4 closed
  EXPECT_DOUBLE_EQ(get(t, "o").frequency, 0.125);
  EXPECT_EQ(t.window(), 3u);
}

TEST(HeatTracker, EvictionKeepsTheCapAndDropsTheColdest) {
  HeatTracker t(opts(64, 0.5, 1));
  // 32 hot objects (5 accesses each), then a stream of one-off objects.
  for (int h = 0; h < 32; ++h)
    for (int i = 0; i < 5; ++i) t.record("hot" + std::to_string(h), R, i * 100000ull, 1, i, 100);
  for (int c = 0; c < 1000; ++c) {
    t.record("cold" + std::to_string(c), R, 0, 1, 1000 + c, 100);
    ASSERT_LE(t.size(), 64u);
  }
  EXPECT_GT(t.evictions(), 900u);
  HeatSample s;
  for (int h = 0; h < 32; ++h) EXPECT_TRUE(t.lookup("hot" + std::to_string(h), &s)) << h;
  // Among equally cold objects the least recently accessed went first.
  EXPECT_FALSE(t.lookup("cold0", &s));
  EXPECT_TRUE(t.lookup("cold999", &s));
}

TEST(HeatTracker, DecayedHeatCanBeEvicted) {
  HeatTracker t(opts(16, 0.5, 1));
  for (int i = 0; i < 4; ++i) t.record("old", R, i * 100000ull, 1, i, 100);  // f = 4
  for (int w = 0; w < 4; ++w) t.advance_window();                            // f = 0.25
  for (int c = 0; c < 15; ++c)
    for (int i = 0; i < 2; ++i) t.record("new" + std::to_string(c), R, i * 100000ull, 1, 100 + i, 100);
  t.record("one-more", R, 0, 1, 200, 100);
  HeatSample s;
  EXPECT_FALSE(t.lookup("old", &s));
  EXPECT_TRUE(t.lookup("new0", &s));
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HS_MALLOC_REPLACED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HS_MALLOC_REPLACED 1
#endif
#endif

TEST(HeatTracker, MemoryPerTrackedObjectIsBoundedAndEstimated) {
#ifdef HS_MALLOC_REPLACED
  GTEST_SKIP() << "measures glibc malloc (mallinfo2); a sanitizer replaces the allocator";
#endif
  const int n = 50000;
  const size_t key_len = 40;  // a Ceph-like object key
  struct mallinfo2 before = mallinfo2();
  auto t = std::make_unique<HeatTracker>(opts(1000000, 0.5, 32));
  std::string key(key_len, 'k');
  for (int i = 0; i < n; ++i) {
    std::snprintf(key.data(), key_len, "rbd_data.1234abcd.%016x", i);
    key[key_len - 1] = 'x';
    t->record(key, R, 0, 4096, i, 4 << 20);
  }
  struct mallinfo2 after = mallinfo2();
  double measured = static_cast<double>(after.uordblks - before.uordblks) / n;
  double estimated = static_cast<double>(t->memory_bytes()) / n;
  std::printf("heat tracker: %.1f bytes per object measured, %.1f estimated (%zu-byte keys)\n",
              measured, estimated, key_len);
  // 16 bytes of it are the on-demand delta (heat_tracker.h), kept in load
  // mode too.
  EXPECT_LT(measured, 216.0);
  EXPECT_NEAR(estimated, measured, measured * 0.25);
  // Keys up to 15 bytes live inside the entry (small-string buffer); longer
  // ones add one heap block of length + 1, malloc-rounded (41 -> 64 bytes).
  EXPECT_EQ(HeatTracker::bytes_per_entry(15), HeatTracker::bytes_per_entry(1));
  EXPECT_EQ(HeatTracker::bytes_per_entry(key_len) - HeatTracker::bytes_per_entry(8), 64u);
  std::printf("heat tracker: %zu bytes per object with keys of <= 15 bytes\n",
              HeatTracker::bytes_per_entry(8));
}

TEST(HeatTracker, PersistenceRoundTripRestoresEveryEntry) {
  HeatTracker a(opts(1000, 0.5));
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string k = "obj" + std::to_string(rng() % 50);
    a.record(k, rng() % 2 ? R : W, (rng() % 16) * 4096, 4096, i * 100 * kMs, 1 << 20);
    if (i == 1000) a.advance_window();
  }
  HeatDelta d = a.export_dirty();
  EXPECT_FALSE(d.full);
  EXPECT_EQ(d.put.size(), 50u);
  a.advance_window();  // state exported after this must carry the new window
  HeatDelta d2 = a.export_dirty();
  EXPECT_TRUE(d2.put.empty());  // nothing changed since the last export
  EXPECT_TRUE(d2.erase.empty());

  HeatTracker b(opts(1000, 0.5));
  std::string err;
  ASSERT_EQ(b.import_state(d2.state, &err), 0) << err;
  for (auto& [k, v] : d.put) ASSERT_EQ(b.import_entry(k, v, &err), 0) << err;
  EXPECT_EQ(b.window(), a.window());
  auto sa = a.snapshot(), sb = b.snapshot();
  ASSERT_EQ(sa.size(), sb.size());
  std::map<std::string, HeatSample> mb;
  for (auto& s : sb) mb[s.key] = s;
  for (auto& s : sa) {
    const HeatSample& o = mb[s.key];
    EXPECT_NEAR(o.frequency, s.frequency, 1e-4 * s.frequency) << s.key;
    EXPECT_NEAR(o.randomness, s.randomness, 1e-4 * s.randomness) << s.key;
    EXPECT_EQ(o.size, s.size);
    EXPECT_EQ(o.last_type, s.last_type);
    EXPECT_EQ(o.last_time_us, s.last_time_us);
    EXPECT_EQ(o.last_offset, s.last_offset);
    EXPECT_EQ(o.last_end, s.last_end);
  }
  // The restored tracker continues a sequential stream seamlessly.
  HeatSample last = mb["obj0"];
  b.record("obj0", last.last_type, last.last_end, 4096, last.last_time_us + 1, 1 << 20);
  EXPECT_NEAR(get(b, "obj0").randomness, last.randomness, 1e-4 * last.randomness);
}

// The store saves shard by shard (to bound its heap): the parts add up to
// what one export gives a tracker fed the same accesses.
TEST(HeatTracker, AnExportInShardsIsTheWholeExport) {
  // 256: evictions overflow the erasure list, a full export; 1000: none,
  // the forgotten object's erasure carried.
  for (const size_t cap : {256u, 1000u}) {
    HeatTracker whole(opts(cap, 0.5)), parts(opts(cap, 0.5));
    const uint64_t seed = 11;
    std::printf("cap %zu, seed %llu\n", cap, static_cast<unsigned long long>(seed));
    std::mt19937_64 rng(seed);
    for (int i = 0; i < 3000; ++i) {
      const std::string k = "obj" + std::to_string(rng() % 400);
      const AccessType type = rng() % 2 ? R : W;
      const uint64_t off = (rng() % 16) * 4096;
      for (HeatTracker* t : {&whole, &parts}) t->record(k, type, off, 4096, i * kMs, 1 << 20);
      // Erasures are of records already saved: a first export halfway.
      if (i == 1000)
        for (HeatTracker* t : {&whole, &parts}) t->export_dirty();
      if (i == 1500)
        for (HeatTracker* t : {&whole, &parts}) t->forget("obj7");
    }
    const HeatDelta d = whole.export_dirty();
    HeatDelta p;
    p.full = parts.begin_export();
    ASSERT_GT(parts.shards(), 1u);
    for (unsigned i = 0; i < parts.shards(); ++i) parts.export_shard(i, p.full, &p);
    std::printf("full %d, %zu puts, %zu erasures\n", d.full, d.put.size(), d.erase.size());
    EXPECT_EQ(d.full, cap == 256u);
    if (!d.full) {
      EXPECT_FALSE(d.erase.empty());
    }
    EXPECT_EQ(p.full, d.full);
    auto sorted = [](auto v) {
      std::sort(v.begin(), v.end());
      return v;
    };
    EXPECT_EQ(sorted(p.put), sorted(d.put));
    EXPECT_EQ(sorted(p.erase), sorted(d.erase));
    EXPECT_EQ(parts.export_state(), d.state);
    // And both are clean afterwards.
    EXPECT_TRUE(parts.export_dirty().put.empty());
  }
}

TEST(HeatTracker, ExportCarriesErasuresOfForgottenAndEvictedObjects) {
  HeatTracker t(opts(64, 0.5, 1));
  t.record("gone", R, 0, 1, 0, 1);
  t.export_dirty();
  t.forget("gone");
  for (int c = 0; c < 70; ++c) t.record("c" + std::to_string(c), R, 0, 1, 10 + c, 1);
  HeatDelta d = t.export_dirty();
  EXPECT_FALSE(d.full);
  EXPECT_NE(std::find(d.erase.begin(), d.erase.end(), "gone"), d.erase.end());
  EXPECT_GE(d.erase.size(), 1u + 6u);  // forgotten + at least the overflow evicted
  // Every erased key is really gone; every put key is really tracked.
  HeatSample s;
  for (auto& k : d.erase) {
    if (std::none_of(d.put.begin(), d.put.end(), [&](auto& p) { return p.first == k; })) {
      EXPECT_FALSE(t.lookup(k, &s)) << k;
    }
  }
  for (auto& [k, v] : d.put) EXPECT_TRUE(t.lookup(k, &s)) << k;
}

TEST(HeatTracker, TooManyErasuresForceAFullExport) {
  HeatTracker t(opts(64, 0.5, 1));  // remembers at most 64 erasures per shard
  for (int c = 0; c < 500; ++c) t.record("c" + std::to_string(c), R, 0, 1, c, 1);
  HeatDelta d = t.export_dirty();
  EXPECT_TRUE(d.full);
  EXPECT_TRUE(d.erase.empty());
  EXPECT_EQ(d.put.size(), t.size());
  HeatDelta d2 = t.export_dirty();
  EXPECT_FALSE(d2.full);
  EXPECT_TRUE(d2.put.empty());
}

TEST(HeatTracker, ImportRejectsGarbageWithoutCrashing) {
  HeatTracker a(opts());
  a.record("o", W, 4096, 8192, 123456, 1 << 20);
  HeatDelta d = a.export_dirty();
  ASSERT_EQ(d.put.size(), 1u);
  const std::string good = d.put[0].second;
  HeatTracker b(opts());
  std::string err;
  ASSERT_EQ(b.import_state(d.state, &err), 0);
  ASSERT_EQ(b.import_entry("o", good, &err), 0) << err;
  // Every truncation and every single-bit flip is rejected.
  for (size_t n = 0; n < good.size(); ++n)
    EXPECT_EQ(b.import_entry("x", good.substr(0, n), &err), -EIO) << n;
  for (size_t i = 0; i < good.size() * 8; ++i) {
    std::string bad = good;
    bad[i / 8] ^= static_cast<char>(1 << (i % 8));
    EXPECT_EQ(b.import_entry("x", bad, &err), -EIO) << i;
  }
  // Random bytes.
  std::mt19937_64 rng(3);
  for (int i = 0; i < 2000; ++i) {
    std::string junk(rng() % 64, '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    EXPECT_EQ(b.import_entry("x", junk, &err), -EIO);
    EXPECT_EQ(b.import_state(junk, &err), -EIO);
  }
  HeatSample s;
  EXPECT_FALSE(b.lookup("x", &s));
}

TEST(HeatTracker, ImportRejectsWellFramedButImpossibleEntries) {
  auto entry = [](uint64_t cur_f, uint64_t cur_r, float hf, float hr, uint64_t epoch, uint8_t type,
                  bool trailing = false) {
    std::string body;
    put_varint(&body, 4096);  // size
    put_varint(&body, 0);     // last offset
    put_varint(&body, 4096);  // length
    put_varint(&body, 1);     // time
    put_varint(&body, cur_f);
    put_varint(&body, cur_r);
    uint32_t u;
    std::memcpy(&u, &hf, 4);
    put_fixed32(&body, u);
    std::memcpy(&u, &hr, 4);
    put_fixed32(&body, u);
    put_varint(&body, epoch);
    put_u8(&body, type);
    if (trailing) put_u8(&body, 0);
    return seal_record(0x48454154, 1, body);
  };
  HeatTracker t(opts());
  std::string err;
  EXPECT_EQ(t.import_entry("ok", entry(3, 2, 1.5f, 1.0f, 0, 1), &err), 0) << err;
  EXPECT_EQ(t.import_entry("x", entry(3, 4, 0, 0, 0, 0), &err), -EIO);  // R > f
  EXPECT_NE(err.find("randomness"), std::string::npos);
  EXPECT_EQ(t.import_entry("x", entry(3, 2, NAN, 0, 0, 0), &err), -EIO);
  EXPECT_EQ(t.import_entry("x", entry(3, 2, -1.0f, 0, 0, 0), &err), -EIO);
  EXPECT_EQ(t.import_entry("x", entry(3, 2, 1.0f, 5.0f, 0, 0), &err), -EIO);
  EXPECT_EQ(t.import_entry("x", entry(3, 2, 0, 0, 9, 0), &err), -EIO);  // future window
  EXPECT_EQ(t.import_entry("x", entry(3, 2, 0, 0, 0, 7), &err), -EIO);  // bad type
  EXPECT_EQ(t.import_entry("x", entry(3, 2, 0, 0, 0, 0, true), &err), -EIO);
  EXPECT_EQ(t.import_entry("x", seal_record(0x48454154, 3, "future version"), &err), -EOPNOTSUPP);
  EXPECT_EQ(t.size(), 1u);
}

TEST(HeatTracker, ConcurrentRecordsLoseNoAccess) {
  HeatTracker t(opts(100000, 0.5, 16));
  const int threads = 4, per = 20000;
  std::vector<std::thread> th;
  for (int i = 0; i < threads; ++i)
    th.emplace_back([&, i] {
      for (int j = 0; j < per; ++j)
        t.record("k" + std::to_string(j % 500), (i + j) % 2 ? R : W, j, 1, j, 100);
    });
  for (auto& x : th) x.join();
  double total = 0;
  for (auto& s : t.snapshot()) {
    total += s.frequency;
    EXPECT_LE(s.randomness, s.frequency);
  }
  EXPECT_EQ(total, threads * per);
  EXPECT_EQ(t.size(), 500u);
}
