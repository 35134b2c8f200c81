// Attach treats the flash as untrusted: damaged headers and tags anywhere are
// skipped or rejected, never followed into a crash or a wrong mapping.
#include "ftl/attach_scan.h"

#include <gtest/gtest.h>

#include <random>

#include "ftl/ftl_helpers.h"

using namespace hybridstore::ftl;
using namespace hybridstore::ftl::test;

namespace {

class AttachScanTest : public testing::TestWithParam<PolicyKind> {};

// Fills a small flash with versioned data and closes it cleanly.
std::shared_ptr<NandMedia> written_flash(const FtlOptions& o, Reference* ref) {
  std::shared_ptr<NandMedia> media;
  auto ftl = format_fresh(o, &media);
  std::mt19937_64 rng(5);
  uint64_t v = 0;
  for (int i = 0; i < 1500; ++i) {
    uint64_t s = rng() % ftl->sector_count();
    std::string p = page_content(s, ++v, ftl->sector_size());
    EXPECT_EQ(ftl->write_sectors(s, 1, p.data()), 0);
    ref->wrote(s, v);
  }
  EXPECT_EQ(ftl->close(), 0);
  return media;
}

}  // namespace

TEST_P(AttachScanTest, ScanReportsWhatACleanFlashHolds) {
  FtlOptions o = small_options(GetParam());
  Reference ref;
  auto media = written_flash(o, &ref);
  NandModel nand(media, NandModelOptions{});
  FlashIo io(&nand);
  ScanResult scan;
  std::string err;
  ASSERT_EQ(scan_flash(&io, &scan, &err), 0) << err;
  EXPECT_TRUE(scan.formatted);
  EXPECT_EQ(scan.image.policy, GetParam());
  EXPECT_EQ(scan.torn, 0u);
  EXPECT_EQ(scan.incomplete, 0u);
  EXPECT_EQ(scan.damaged_tags, 0u);
  EXPECT_EQ(scan.bad + scan.empty + scan.needs_erase + scan.lebs + scan.log_blocks,
            media->geometry().block_count);
}

TEST_P(AttachScanTest, UnformattedFlashIsReportedNotGuessed) {
  FtlOptions o = small_options(GetParam());
  auto media = NandMedia::create_memory(o.geometry);
  std::string err;
  auto ftl = reattach(media, o, &err);
  EXPECT_FALSE(ftl);
  EXPECT_NE(err.find("format"), std::string::npos) << err;
}

TEST_P(AttachScanTest, RandomDamageNeverCrashesAttachOrBreaksInvariants) {
  FtlOptions o = small_options(GetParam());
  const NandGeometry& g = o.geometry;
  std::mt19937_64 rng(23);
  for (int round = 0; round < 25; ++round) {
    Reference ref;
    auto media = written_flash(o, &ref);
    // Flip bytes in EC headers, data and OOB of random pages.
    std::string data(g.page_size, 0), oob(g.oob_size, 0);
    for (int k = 0; k < 12; ++k) {
      uint32_t b = rng() % g.block_count, p = rng() % 3 == 0 ? 0 : rng() % g.pages_per_block;
      media->read(b, p, &data[0], &oob[0]);
      if (rng() % 2) data[rng() % 64] ^= static_cast<char>(1 + rng() % 255);
      else oob[2 + rng() % (g.oob_size - 2)] ^= static_cast<char>(1 + rng() % 255);
      media->write(b, p, data.data(), oob.data());
    }
    std::string err;
    auto ftl = reattach(media, o, &err);
    if (!ftl) continue;  // rejected with an error: acceptable for damaged media
    ASSERT_EQ(ftl->check(&err), 0) << err;
    // Every sector reads as some version of itself, zeros, or an error.
    std::string buf(g.page_size, 0);
    for (uint64_t s = 0; s < ftl->sector_count(); ++s) {
      int r = ftl->read_sectors(s, 1, &buf[0]);
      if (r < 0) {
        ASSERT_EQ(r, -EIO);
        continue;
      }
      uint64_t got_s;
      memcpy(&got_s, &buf[0], 8);
      if (buf != std::string(g.page_size, '\0')) {
        ASSERT_EQ(got_s, s) << "sector " << s;
      }
    }
    // And it still takes writes.
    std::string p = page_content(1, 1, g.page_size);
    int w = ftl->write_sectors(1, 1, p.data());
    ASSERT_TRUE(w == 0 || w == -EIO || w == -ENOSPC) << w;
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, AttachScanTest,
                         testing::Values(PolicyKind::kUbi, PolicyKind::kPubi, PolicyKind::kHubi),
                         [](const testing::TestParamInfo<PolicyKind>& i) {
                           return std::string(policy_name(i.param));
                         });
