// Wear levelling keeps the spread of erase counters bounded even when a few
// LEBs take every write and the rest hold cold data.
#include <gtest/gtest.h>

#include <random>

#include "ftl/ftl_helpers.h"

using namespace hybridstore::ftl;
using namespace hybridstore::ftl::test;

namespace {

// Fills the device (cold data), then rewrites pages of 3 LEBs only.
uint64_t hot_spot_spread(PolicyKind policy, uint32_t threshold, uint64_t* min_ec) {
  FtlOptions o = small_options(policy, 64);
  o.wl_threshold = threshold;
  std::shared_ptr<NandMedia> media;
  auto ftl = format_fresh(o, &media);
  EXPECT_TRUE(ftl);
  uint32_t ss = ftl->sector_size(), ppl = ftl->pages_per_leb();
  std::string leb(ftl->leb_bytes(), 'c');
  for (uint32_t l = 0; l < ftl->leb_count(); ++l) EXPECT_EQ(ftl->write_leb(l, leb.data()), 0);
  std::mt19937_64 rng(11);
  std::string page(ss, 'h');
  while (ftl->wear_leveler()->erase_count_total() < 6000) {
    uint64_t s = (rng() % 3) * ppl + rng() % ppl;
    EXPECT_EQ(ftl->write_sectors(s, 1, page.data()), 0);
    if (testing::Test::HasFailure()) break;
  }
  std::string err;
  EXPECT_EQ(ftl->check(&err), 0) << err;
  auto sp = ftl->wear_leveler()->ec_spread();
  *min_ec = sp.min;
  return sp.max - sp.min;
}

class WearLevelingTest : public testing::TestWithParam<PolicyKind> {};

}  // namespace

TEST_P(WearLevelingTest, EraseCounterSpreadStaysNearTheThreshold) {
  uint64_t min_ec = 0;
  uint64_t spread = hot_spot_spread(GetParam(), 16, &min_ec);
  EXPECT_LE(spread, 2u * 16 + 8) << "cold blocks must be brought into circulation";
  EXPECT_GT(min_ec, 20u) << "every block, cold ones included, takes erases";
}

TEST_P(WearLevelingTest, WithoutWearLevellingTheSpreadGrows) {
  // The same workload with the threshold out of reach: the check above is
  // only meaningful if this one diverges.
  uint64_t min_ec = 0;
  uint64_t spread = hot_spot_spread(GetParam(), 1000000, &min_ec);
  EXPECT_GT(spread, 4u * 16);
}

INSTANTIATE_TEST_SUITE_P(Policies, WearLevelingTest,
                         testing::Values(PolicyKind::kUbi, PolicyKind::kPubi, PolicyKind::kHubi),
                         [](const testing::TestParamInfo<PolicyKind>& i) {
                           return std::string(policy_name(i.param));
                         });
