#include "testing/device_model.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <random>

#include "common_helpers.h"
#include "hscommon/config.h"

using namespace hybridstore;
using hybridstore::test::TempDir;

TEST(HddModel, SeekCurveHitsTheThreeAnchorPoints) {
  for (uint64_t cap : {750000000000ull, 64ull << 30, 1ull << 30}) {
    HddModelParams p;
    p.capacity_bytes = cap;
    HddModel m(p);
    uint64_t n = m.cylinders();
    EXPECT_DOUBLE_EQ(m.seek_ms(0), 0.0);
    EXPECT_NEAR(m.seek_ms(1), 2.0, 1e-9) << cap;       // track to track
    EXPECT_NEAR(m.seek_ms(n - 1), 21.0, 1e-9) << cap;  // full stroke
    EXPECT_NEAR(m.mean_random_seek_ms(), 8.9, 1e-6) << cap;  // average over random seeks
    for (uint64_t d = 1; d + 1 < n; d += std::max<uint64_t>(1, n / 1000))
      ASSERT_LT(m.seek_ms(d), m.seek_ms(d + 1)) << d;  // strictly increasing
  }
  HddModel m;
  EXPECT_EQ(m.cylinders(), 150000u);  // 750 GB / (833 KB track x 6 surfaces)
}

TEST(HddModel, InvalidSeekParametersAreRefused) {
  HddModelParams p;
  p.seek_avg_ms = 30;  // above full stroke
  std::string why;
  EXPECT_FALSE(HddModel::valid_params(p, &why));
  EXPECT_NE(why.find("seek"), std::string::npos);
  HddModel m(p);  // falls back to the defaults
  EXPECT_NEAR(m.mean_random_seek_ms(), 8.9, 1e-6);
}

TEST(HddModel, SequentialStreamCostsOnlyTransfer) {
  HddModel m;
  m.access(IoDir::kRead, 1 << 30, 4096);
  for (int i = 1; i <= 100; ++i) {
    ModeledIo io = m.access(IoDir::kRead, (1ull << 30) + i * 65536ull - 61440, 65536);
    ASSERT_TRUE(io.sequential);
    EXPECT_EQ(io.seek_ns, 0u);
    EXPECT_EQ(io.service_ns, 655360u);  // 64 KiB at 100 MB/s
  }
}

TEST(HddModel, RandomAccessPaysSeekAndHalfARevolutionOnAverage) {
  HddModel m;
  std::mt19937_64 rng(1);
  const int n = 20000;
  double total_ms = 0, seek_ms = 0;
  uint64_t prev_cyl = 0;
  m.access(IoDir::kRead, 0, 4096);
  for (int i = 0; i < n; ++i) {
    uint64_t off = (rng() % (750000000000ull / 4096)) * 4096;
    uint64_t cyl = m.cylinder_of(off);
    seek_ms += m.seek_ms(cyl > prev_cyl ? cyl - prev_cyl : prev_cyl - cyl);
    prev_cyl = cyl;
    ModeledIo io = m.access(IoDir::kRead, off, 4096);
    EXPECT_FALSE(io.sequential);
    total_ms += io.service_ns / 1e6;
  }
  double transfer_ms = 4096 / 100e6 * 1e3;
  double rotation_ms = total_ms / n - seek_ms / n - transfer_ms;
  EXPECT_NEAR(seek_ms / n, 8.9, 0.2);
  EXPECT_NEAR(rotation_ms, m.revolution_ms() / 2, 0.15);  // 4.17 ms at 7200 rpm
  EXPECT_NEAR(m.revolution_ms(), 8.333, 0.001);
}

TEST(HddModel, ShortForwardSkipOnTheSameTrackIsCheap) {
  HddModel m;
  m.access(IoDir::kRead, 0, 4096);
  ModeledIo io = m.access(IoDir::kRead, 8192, 4096);  // 4 KiB further on the same track
  EXPECT_FALSE(io.sequential);
  EXPECT_EQ(io.seek_cylinders, 0u);
  EXPECT_LT(io.seek_ns, 100000u);  // waits for 4 KiB to pass: ~41 us
}

TEST(HddModel, TimesAreDeterministic) {
  std::mt19937_64 rng(4);
  std::vector<std::pair<uint64_t, uint64_t>> reqs;
  for (int i = 0; i < 1000; ++i) reqs.push_back({rng() % (1ull << 38), 4096 * (1 + rng() % 64)});
  HddModel a, b;
  for (auto& [o, l] : reqs) ASSERT_EQ(a.access(IoDir::kWrite, o, l).service_ns,
                                      b.access(IoDir::kWrite, o, l).service_ns);
}

TEST(SsdModel, LatenciesFollowThePaperTable) {
  SsdModel m;
  EXPECT_EQ(m.access(IoDir::kRead, 1 << 20, 4096).service_ns, 270000u);   // first: random
  EXPECT_EQ(m.access(IoDir::kRead, (1 << 20) + 4096, 4096).service_ns, 20000u);  // sequential
  EXPECT_EQ(m.access(IoDir::kWrite, (1 << 20) + 8192, 4096).service_ns, 375000u);  // type change
  EXPECT_EQ(m.access(IoDir::kWrite, (1 << 20) + 12288, 4096).service_ns, 70000u);
  EXPECT_EQ(m.access(IoDir::kRead, 0, 65536).service_ns, 270000u + 15 * 20000u);  // 16 pages
  EXPECT_EQ(m.access(IoDir::kWrite, 1 << 30, 100).service_ns, 375000u);  // partial page
  m.reset();
  EXPECT_EQ(m.access(IoDir::kWrite, (1 << 30) + 100, 4096).service_ns, 375000u);
}

TEST(DeviceModel, RandomCostsFarMoreOnTheHddThanOnTheSsd) {
  HddModel hdd;
  SsdModel ssd;
  std::mt19937_64 rng(8);
  double h = 0, s = 0;
  for (int i = 0; i < 2000; ++i) {
    uint64_t off = (rng() % (1ull << 26)) * 4096;
    h += hdd.access(IoDir::kRead, off, 4096).service_ns;
    s += ssd.access(IoDir::kRead, off, 4096).service_ns;
  }
  EXPECT_GT(h / s, 30.0);  // HRO Fig. 2(c): one to two orders of magnitude
}

TEST(DeviceModel, ConfigSelectsTheModel) {
  Config c;
  EXPECT_EQ(make_device_model(c, DeviceRole::kHdd, 1ull << 36), nullptr);  // default: none
  std::string err;
  ASSERT_EQ(c.set("hybridstore_device_model", "paper", &err), 0) << err;
  ASSERT_EQ(c.set("hybridstore_model_hdd_rpm", "15000", &err), 0) << err;
  ASSERT_EQ(c.set("hybridstore_model_ssd_rand_read_us", "100", &err), 0) << err;
  auto hdd = make_device_model(c, DeviceRole::kHdd, 1ull << 36);
  ASSERT_NE(hdd, nullptr);
  EXPECT_NE(hdd->describe().find("15000 rpm"), std::string::npos);
  auto ssd = make_device_model(c, DeviceRole::kSsd, 1ull << 36);
  ASSERT_NE(ssd, nullptr);
  EXPECT_EQ(ssd->access(IoDir::kRead, 0, 4096).service_ns, 100000u);
  EXPECT_EQ(c.set("hybridstore_device_model", "fast", &err), -EINVAL);
}

TEST(ModeledBlockDevice, ForwardsDataUnchangedAndChargesModelledTime) {
  TempDir dir("devmodel");
  DeviceOpenOptions oo;
  oo.create = true;
  oo.create_size = 16 << 20;
  oo.direct_io = false;
  oo.backend = IoBackend::kPosix;
  std::string err;
  auto inner = open_block_device(dir.file("hdd"), oo, &err);
  ASSERT_NE(inner, nullptr) << err;
  auto clock = std::make_shared<VirtualClock>();
  HddModelParams p;
  p.capacity_bytes = 16 << 20;
  ModeledBlockDevice dev(std::move(inner), std::make_unique<HddModel>(p), clock);
  EXPECT_EQ(dev.size(), 16u << 20);
  EXPECT_NE(dev.backend().find("modeled"), std::string::npos);

  HddModel twin(p);  // replays the same requests to know the expected times
  std::mt19937_64 rng(2);
  std::string a = test::random_bytes(rng, 65536), b = test::random_bytes(rng, 8192);
  uint64_t expect = 0;
  ASSERT_EQ(dev.write(1 << 20, a.data(), a.size()), 0);
  expect += twin.access(IoDir::kWrite, 1 << 20, a.size()).service_ns;
  ASSERT_EQ(dev.write_many({{8 << 20, b.data(), b.size()}, {(1 << 20) + 65536, b.data(), b.size()}}), 0);
  expect += twin.access(IoDir::kWrite, 8 << 20, b.size()).service_ns;
  expect += twin.access(IoDir::kWrite, (1 << 20) + 65536, b.size()).service_ns;
  std::string ra(65536, '\0'), rb(8192, '\0');
  ASSERT_EQ(dev.read(1 << 20, ra.data(), ra.size()), 0);
  expect += twin.access(IoDir::kRead, 1 << 20, ra.size()).service_ns;
  ASSERT_EQ(dev.read_many({{8 << 20, rb.data(), rb.size()}}), 0);
  expect += twin.access(IoDir::kRead, 8 << 20, rb.size()).service_ns;
  EXPECT_EQ(ra, a);
  EXPECT_EQ(rb, b);
  ASSERT_EQ(dev.flush(), 0);

  ModeledDeviceStats st = dev.stats();
  EXPECT_EQ(st.writes, 3u);
  EXPECT_EQ(st.reads, 2u);
  EXPECT_EQ(st.bytes_written, 65536u + 2 * 8192);
  EXPECT_EQ(st.bytes_read, 65536u + 8192);
  EXPECT_EQ(st.busy_ns, expect);
  EXPECT_EQ(st.read_ns + st.write_ns, st.busy_ns);
  EXPECT_EQ(clock->now_ns(), expect);
  // Seek distances from the previous request's end to the next start: 1M+64K
  // -> 8M, 8M+8K -> 1M+64K, 1M+72K -> 1M, 1M+64K -> 8M (the first request has none).
  uint64_t d1 = (8 << 20) - ((1 << 20) + 65536);
  uint64_t d2 = (8 << 20) + 8192 - ((1 << 20) + 65536);
  uint64_t d3 = 8192 + 65536;
  uint64_t d4 = (8 << 20) - ((1 << 20) + 65536);
  EXPECT_EQ(st.seek_distance_bytes, d1 + d2 + d3 + d4);

  // A failed request is not charged.
  char buf[4096];
  EXPECT_LT(dev.read(32 << 20, buf, sizeof buf), 0);
  EXPECT_EQ(dev.stats().reads, 2u);
  EXPECT_EQ(clock->now_ns(), expect);
  dev.reset_stats();
  EXPECT_EQ(dev.stats().busy_ns, 0u);
}
