// The SSD tier's device on raw NAND (hybridstore_ssd_kind = nand): the
// BlockDevice contract through open_nand_block_device().
#include "ftl/nand_block_device.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include "common_helpers.h"
#include "ftl/nand_media.h"
#include "hscommon/config.h"

using namespace hybridstore;
using hybridstore::test::TempDir;

namespace {

Config small_config(const std::string& policy, bool background = false) {
  Config c;
  std::string err;
  EXPECT_EQ(c.set("hybridstore_ssd_kind", "nand", &err), 0) << err;
  EXPECT_EQ(c.set("hybridstore_nand_size", "16M", &err), 0) << err;
  EXPECT_EQ(c.set("hybridstore_nand_pages_per_block", "32", &err), 0) << err;
  EXPECT_EQ(c.set("hybridstore_ftl_policy", policy, &err), 0) << err;
  EXPECT_EQ(c.set("hybridstore_ftl_background_merge", background ? "true" : "false", &err), 0);
  return c;
}

class NandBlockDeviceTest
    : public testing::TestWithParam<std::pair<const char*, bool>> {
 protected:
  Config cfg() const { return small_config(GetParam().first, GetParam().second); }
};

}  // namespace

TEST_P(NandBlockDeviceTest, RandomAlignedWritesSurviveFlushAndReopen) {
  TempDir dir;
  std::string path = dir.file("ssd.nand"), err;
  std::mt19937_64 rng(17);
  std::map<uint64_t, std::string> written;  // offset -> one aligned unit
  uint64_t size;
  uint32_t align;
  {
    auto dev = ftl::open_nand_block_device(cfg(), path, true, &err);
    ASSERT_TRUE(dev) << err;
    EXPECT_EQ(dev->alignment(), 2048u);
    EXPECT_EQ(dev->backend(), std::string("nand:") + GetParam().first);
    size = dev->size();
    align = dev->alignment();
    ASSERT_GT(size, 8u << 20);
    for (int i = 0; i < 1500; ++i) {
      uint64_t units = 1 + rng() % 8;
      uint64_t off = (rng() % (size / align - units)) * align;
      std::string data = test::random_bytes(rng, units * align);
      ASSERT_EQ(dev->write(off, data.data(), data.size()), 0);
      for (uint64_t u = 0; u < units; ++u)
        written[off + u * align] = data.substr(u * align, align);
      if (i % 200 == 0) {
        ASSERT_EQ(dev->flush(), 0);
      }
    }
    ASSERT_EQ(dev->flush(), 0);
    std::string buf(align, '\0');
    for (auto& [off, data] : written) {
      ASSERT_EQ(dev->read(off, &buf[0], align), 0);
      ASSERT_EQ(buf, data) << "offset " << off;
    }
  }
  auto dev = ftl::open_nand_block_device(cfg(), path, false, &err);
  ASSERT_TRUE(dev) << err;
  EXPECT_EQ(dev->size(), size);
  std::string buf(align, '\0');
  for (auto& [off, data] : written) {
    ASSERT_EQ(dev->read(off, &buf[0], align), 0);
    ASSERT_EQ(buf, data) << "offset " << off << " after reopen";
  }
  // Never written ranges read as zeros.
  for (uint64_t off = 0; off < size; off += 97 * align)
    if (!written.count(off)) {
      ASSERT_EQ(dev->read(off, &buf[0], align), 0);
      EXPECT_EQ(buf, std::string(align, '\0'));
    }
}

TEST_P(NandBlockDeviceTest, ConcurrentWritersAndReadersSeeTheirOwnData) {
  TempDir dir;
  std::string err;
  auto dev = ftl::open_nand_block_device(cfg(), dir.file("ssd.nand"), true, &err);
  ASSERT_TRUE(dev) << err;
  uint32_t a = dev->alignment();
  uint64_t per_thread = dev->size() / 4 / a;
  std::vector<std::thread> ts;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      std::map<uint64_t, std::string> mine;
      for (int i = 0; i < 300; ++i) {
        uint64_t off = (t * per_thread + rng() % per_thread) * a;
        std::string d = test::random_bytes(rng, a);
        if (dev->write(off, d.data(), a) != 0) ++failures;
        mine[off] = d;
        if (i % 50 == 0 && dev->flush() != 0) ++failures;
      }
      std::string buf(a, '\0');
      for (auto& [off, d] : mine)
        if (dev->read(off, &buf[0], a) != 0 || buf != d) ++failures;
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_P(NandBlockDeviceTest, DiscardedRangesReadAsZeros) {
  TempDir dir;
  std::string err;
  auto dev = ftl::open_nand_block_device(cfg(), dir.file("ssd.nand"), true, &err);
  ASSERT_TRUE(dev) << err;
  uint32_t a = dev->alignment();
  std::string d(8 * a, 'x');
  ASSERT_EQ(dev->write(0, d.data(), d.size()), 0);
  ASSERT_EQ(dev->discard(a + 100, 3 * a), 0);  // whole sectors 2..3 only
  std::string buf(8 * a, '\0');
  ASSERT_EQ(dev->read(0, &buf[0], buf.size()), 0);
  EXPECT_EQ(buf.substr(0, 2 * a), std::string(2 * a, 'x'));
  EXPECT_EQ(buf.substr(2 * a, 2 * a), std::string(2 * a, '\0'));
  EXPECT_EQ(buf.substr(4 * a), std::string(4 * a, 'x'));
}

INSTANTIATE_TEST_SUITE_P(Policies, NandBlockDeviceTest,
                         testing::Values(std::make_pair("hubi", false),
                                         std::make_pair("hubi", true),
                                         std::make_pair("pubi", false),
                                         std::make_pair("ubi", false)),
                         [](const auto& i) {
                           return std::string(i.param.first) + (i.param.second ? "_bg" : "");
                         });

TEST(NandBlockDeviceOpenTest, MisalignedIoIsRejected) {
  TempDir dir;
  std::string err;
  auto dev = ftl::open_nand_block_device(small_config("hubi"), dir.file("f"), true, &err);
  ASSERT_TRUE(dev) << err;
  std::string d(4096, 'x');
  EXPECT_EQ(dev->write(100, d.data(), 2048), -EINVAL);
  EXPECT_EQ(dev->write(0, d.data(), 1000), -EINVAL);
  EXPECT_EQ(dev->read(2048, &d[0], 3000), -EINVAL);
}

TEST(NandBlockDeviceOpenTest, MissingFileWithoutCreateFails) {
  TempDir dir;
  std::string err;
  auto dev = ftl::open_nand_block_device(small_config("hubi"), dir.file("none"), false, &err);
  EXPECT_FALSE(dev);
  EXPECT_NE(err.find("no such flash file"), std::string::npos) << err;
}

TEST(NandBlockDeviceOpenTest, AnExistingFlashKeepsItsPolicyAndGeometry) {
  TempDir dir;
  std::string err;
  uint64_t size;
  {
    auto dev = ftl::open_nand_block_device(small_config("pubi"), dir.file("f"), true, &err);
    ASSERT_TRUE(dev) << err;
    size = dev->size();
  }
  Config other = small_config("hubi");
  ASSERT_EQ(other.set("hybridstore_nand_size", "32M", &err), 0);
  auto dev = ftl::open_nand_block_device(other, dir.file("f"), true, &err);
  ASSERT_TRUE(dev) << err;
  EXPECT_EQ(dev->backend(), "nand:pubi");
  EXPECT_EQ(dev->size(), size);
}

// A store tells raw NAND from a file by the image header alone, before it
// knows any option: a flash file is one however it was made; a file of
// other bytes, a short one, one whose header lost a bit, or none, is not.
TEST(NandBlockDeviceOpenTest, AFlashImageIsKnownByItsHeader) {
  TempDir dir;
  std::string err;
  ASSERT_TRUE(ftl::open_nand_block_device(small_config("pubi"), dir.file("f"), true, &err)) << err;
  EXPECT_TRUE(ftl::looks_like_flash_image(dir.file("f")));
  EXPECT_FALSE(ftl::looks_like_flash_image(dir.file("none")));
  {
    std::FILE* f = std::fopen(dir.file("short").c_str(), "w");
    std::fputs("HYBRIDSTORE", f);
    std::fclose(f);
  }
  EXPECT_FALSE(ftl::looks_like_flash_image(dir.file("short")));
  {
    std::FILE* f = std::fopen(dir.file("zeros").c_str(), "w");
    const std::string zeros(8192, '\0');
    std::fwrite(zeros.data(), 1, zeros.size(), f);
    std::fclose(f);
  }
  EXPECT_FALSE(ftl::looks_like_flash_image(dir.file("zeros")));
  for (long at : {0L, 5L, 12L, 20L}) {
    std::filesystem::copy_file(dir.file("f"), dir.file("flipped"), std::filesystem::copy_options::overwrite_existing);
    std::FILE* f = std::fopen(dir.file("flipped").c_str(), "r+");
    std::fseek(f, at, SEEK_SET);
    const int c = std::fgetc(f);
    std::fseek(f, at, SEEK_SET);
    std::fputc(c ^ 0x10, f);
    std::fclose(f);
    EXPECT_FALSE(ftl::looks_like_flash_image(dir.file("flipped"))) << "bit flipped at " << at;
  }
}

TEST(NandBlockDeviceOpenTest, DefaultOptionsGiveAUsableDevice) {
  Config c;
  ftl::FtlOptions o;
  std::string err;
  ASSERT_EQ(ftl::ftl_options_from_config(c, &o, &err), 0) << err;
  EXPECT_EQ(c.get_str("hybridstore_ssd_kind"), "file");
  EXPECT_EQ(o.geometry.total_bytes(), 1ull << 30);
  EXPECT_EQ(o.policy, ftl::PolicyKind::kHubi);
  EXPECT_TRUE(o.nand.timing.is_zero());
  EXPECT_EQ(o.geometry.validate(&err), 0);
}

TEST(NandBlockDeviceOpenTest, EmulatedLatencyMakesRequestsTakeTheirNandTime) {
  TempDir dir;
  std::string err;
  Config c = small_config("hubi");
  ASSERT_EQ(c.set("hybridstore_nand_timing", "paper", &err), 0);
  ASSERT_EQ(c.set("hybridstore_nand_emulate_latency", "true", &err), 0);
  ASSERT_EQ(c.set("hybridstore_ftl_cache", "off", &err), 0);
  auto dev = ftl::open_nand_block_device(c, dir.file("f"), true, &err);
  ASSERT_TRUE(dev) << err;
  // 20 page programs at t_x + t_w = 0.85 ms each: at least 17 ms of wall time.
  std::string d(20 * 2048, 'x');
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(dev->write(0, d.data(), d.size()), 0);
  auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0);
  EXPECT_GE(ms.count(), 17.0);
}
