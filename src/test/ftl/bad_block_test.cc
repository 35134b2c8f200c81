// Bad blocks, factory-marked or grown (program or erase failures), are never
// used again, and the data that lived on a failing block survives.
#include <gtest/gtest.h>

#include <random>

#include "ftl/ftl_helpers.h"

using namespace hybridstore::ftl;
using namespace hybridstore::ftl::test;

namespace {

class BadBlockTest : public testing::TestWithParam<PolicyKind> {
 protected:
  // Random single-page writes over the whole device, recorded in `ref`.
  void churn(Ftl* ftl, Reference* ref, uint64_t* version, int n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    for (int i = 0; i < n; ++i) {
      uint64_t s = rng() % ftl->sector_count();
      std::string p = page_content(s, ++*version, ftl->sector_size());
      ASSERT_EQ(ftl->write_sectors(s, 1, p.data()), 0);
      ref->wrote(s, *version);
    }
  }
  static int32_t used_peb(Ftl* ftl) {
    WearLeveler* wl = ftl->wear_leveler();
    for (uint32_t p = 0; p < wl->peb_count(); ++p)
      if (wl->state(p) == PebState::kUsed && wl->owner(p) < ftl->leb_count())
        return static_cast<int32_t>(p);
    return -1;
  }
};

}  // namespace

TEST_P(BadBlockTest, FactoryBadBlocksAreNeverProgrammedOrErased) {
  FtlOptions o = small_options(GetParam());
  o.factory_bad = {3, 10, 20};
  std::shared_ptr<NandMedia> media;
  auto ftl = format_fresh(o, &media);
  ASSERT_TRUE(ftl);
  Reference ref;
  uint64_t v = 0;
  churn(ftl.get(), &ref, &v, 3000, 1);
  for (uint32_t b : o.factory_bad) {
    EXPECT_EQ(ftl->wear_leveler()->state(b), PebState::kBad);
    EXPECT_EQ(ftl->nand()->wear(b), 0u);
    NandBlockState st;
    ASSERT_TRUE(media->get_state(b, &st));
    EXPECT_EQ(st.write_ptr, 0u) << "block " << b << " was programmed";
  }
  ASSERT_EQ(ftl->close(), 0);
  ftl.reset();
  std::string err;
  auto again = reattach(media, o, &err);
  ASSERT_TRUE(again) << err;
  for (uint32_t b : o.factory_bad) EXPECT_EQ(again->wear_leveler()->state(b), PebState::kBad);
  EXPECT_EQ(verify(again.get(), ref), "");
}

TEST_P(BadBlockTest, AProgramFailureRetiresTheBlockAndKeepsItsData) {
  FtlOptions o = small_options(GetParam());
  std::shared_ptr<NandMedia> media;
  auto ftl = format_fresh(o, &media);
  ASSERT_TRUE(ftl);
  Reference ref;
  uint64_t v = 0;
  churn(ftl.get(), &ref, &v, 600, 2);
  // A few blocks in use fail their next program (they go bad with data still
  // on them) and so do two free ones (a merge target fails half-way); no more
  // than the bad-block reserve can absorb.
  std::vector<uint32_t> armed;
  WearLeveler* wl = ftl->wear_leveler();
  size_t used = 0, free = 0;
  for (uint32_t p = 0; p < wl->peb_count(); p += 3) {
    bool take = (wl->state(p) == PebState::kUsed && used < 3 && ++used) ||
                (wl->state(p) == PebState::kFree && free < 2 && ++free);
    if (take) {
      ftl->nand()->inject_program_failure(p);
      armed.push_back(p);
    }
  }
  churn(ftl.get(), &ref, &v, 400, 3);
  ASSERT_GT(wl->grown_bad(), 0u);
  EXPECT_EQ(verify(ftl.get(), ref), "");
  std::string err;
  ASSERT_EQ(ftl->check(&err), 0) << err;
  std::vector<uint32_t> bad;
  for (uint32_t p : armed)
    if (wl->state(p) == PebState::kBad) bad.push_back(p);
  ASSERT_FALSE(bad.empty());
  std::vector<uint32_t> wear_before;
  for (uint32_t p : bad) wear_before.push_back(ftl->nand()->wear(p));
  churn(ftl.get(), &ref, &v, 1500, 4);
  for (size_t i = 0; i < bad.size(); ++i) {
    EXPECT_EQ(wl->state(bad[i]), PebState::kBad);
    EXPECT_EQ(ftl->nand()->wear(bad[i]), wear_before[i]) << "bad PEB " << bad[i] << " erased";
    EXPECT_TRUE(ftl->nand()->is_bad(bad[i]));
  }
  ASSERT_EQ(ftl->close(), 0);
  ftl.reset();
  auto again = reattach(media, o, &err);
  ASSERT_TRUE(again) << err;
  for (uint32_t p : bad) EXPECT_EQ(again->wear_leveler()->state(p), PebState::kBad);
  EXPECT_EQ(verify(again.get(), ref), "");
}

TEST_P(BadBlockTest, AnEraseFailureRetiresTheBlock) {
  FtlOptions o = small_options(GetParam());
  std::shared_ptr<NandMedia> media;
  auto ftl = format_fresh(o, &media);
  ASSERT_TRUE(ftl);
  Reference ref;
  uint64_t v = 0;
  churn(ftl.get(), &ref, &v, 300, 5);
  int32_t victim = used_peb(ftl.get());
  ASSERT_GE(victim, 0);
  ftl->nand()->inject_erase_failure(static_cast<uint32_t>(victim));
  churn(ftl.get(), &ref, &v, 3000, 6);
  EXPECT_EQ(ftl->wear_leveler()->state(victim), PebState::kBad);
  EXPECT_TRUE(ftl->nand()->is_bad(victim));
  EXPECT_EQ(verify(ftl.get(), ref), "");
  std::string err;
  EXPECT_EQ(ftl->check(&err), 0) << err;
}

INSTANTIATE_TEST_SUITE_P(Policies, BadBlockTest,
                         testing::Values(PolicyKind::kUbi, PolicyKind::kPubi, PolicyKind::kHubi),
                         [](const testing::TestParamInfo<PolicyKind>& i) {
                           return std::string(policy_name(i.param));
                         });

TEST_P(BadBlockTest, CorrectedBitFlipsMoveTheDataToAFreshBlock) {
  FtlOptions o = small_options(GetParam());
  std::shared_ptr<NandMedia> media;
  auto ftl = format_fresh(o, &media);
  ASSERT_TRUE(ftl);
  Reference ref;
  uint64_t v = 0;
  churn(ftl.get(), &ref, &v, 300, 7);
  ASSERT_EQ(ftl->close(), 0);
  ftl.reset();
  // The same flash, now with every page read needing the ECC.
  FtlOptions flaky = o;
  flaky.nand.bitflip_rate = 1.0;
  std::string err;
  auto f = reattach(media, flaky, &err);
  ASSERT_TRUE(f) << err;
  uint64_t before = f->context().stats.merges[static_cast<int>(MergeKind::kRelocate)];
  EXPECT_EQ(verify(f.get(), ref), "");  // corrected reads return good data
  churn(f.get(), &ref, &v, 1, 8);       // maintenance runs after a write
  EXPECT_GT(f->context().stats.merges[static_cast<int>(MergeKind::kRelocate)], before);
  EXPECT_EQ(verify(f.get(), ref), "");
  EXPECT_EQ(f->check(&err), 0) << err;
}
