// The FTL's block interface: what a user of sectors and LEBs relies on, for
// every mapping policy and cache mode.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "ftl/ftl_helpers.h"

using namespace hybridstore::ftl;
using namespace hybridstore::ftl::test;

namespace {

struct Variant {
  PolicyKind policy;
  CacheMode cache;
  bool background;
};

std::string name_of(const testing::TestParamInfo<Variant>& i) {
  return std::string(policy_name(i.param.policy)) + "_" + cache_mode_name(i.param.cache) +
         (i.param.background ? "_bg" : "");
}

class BlockInterfaceTest : public testing::TestWithParam<Variant> {
 protected:
  FtlOptions opts() const {
    FtlOptions o = small_options(GetParam().policy);
    o.cache = GetParam().cache;
    o.background_merge = GetParam().background;
    return o;
  }
};

}  // namespace

TEST_P(BlockInterfaceTest, RandomWritesReadBackBeforeAndAfterCleanReattach) {
  std::shared_ptr<NandMedia> media;
  auto ftl = format_fresh(opts(), &media);
  ASSERT_TRUE(ftl);
  std::mt19937_64 rng(7);
  Reference ref;
  uint32_t ss = ftl->sector_size();
  uint64_t n = ftl->sector_count();
  uint64_t version = 0;
  for (int i = 0; i < 3000; ++i) {
    uint64_t s = rng() % n;
    uint64_t count = 1 + rng() % 4;
    if (s + count > n) count = n - s;
    std::string buf;
    for (uint64_t k = 0; k < count; ++k) {
      buf += page_content(s + k, ++version, ss);
      ref.wrote(s + k, version);
    }
    ASSERT_EQ(ftl->write_sectors(s, count, buf.data()), 0) << "write " << i;
  }
  EXPECT_EQ(verify(ftl.get(), ref), "");
  std::string err;
  ASSERT_EQ(ftl->check(&err), 0) << err;
  ASSERT_EQ(ftl->close(), 0);
  ftl.reset();
  auto again = reattach(media, opts(), &err);
  ASSERT_TRUE(again) << err;
  EXPECT_EQ(verify(again.get(), ref), "");
  ASSERT_EQ(again->check(&err), 0) << err;
}

TEST_P(BlockInterfaceTest, WholeLebWritesAndReadsRoundTrip) {
  std::shared_ptr<NandMedia> media;
  auto ftl = format_fresh(opts(), &media);
  ASSERT_TRUE(ftl);
  uint32_t ppl = ftl->pages_per_leb();
  Reference ref;
  uint64_t version = 100;
  for (uint32_t round = 0; round < 3; ++round)
    for (uint32_t leb = 0; leb < ftl->leb_count(); leb += 2) {
      std::string buf;
      for (uint32_t p = 0; p < ppl; ++p) {
        uint64_t s = uint64_t(leb) * ppl + p;
        buf += page_content(s, ++version, ftl->sector_size());
        ref.wrote(s, version);
      }
      ASSERT_EQ(ftl->write_leb(leb, buf.data()), 0);
    }
  std::string out(ftl->leb_bytes(), '\0');
  ASSERT_EQ(ftl->read_leb(2, &out[0]), 0);
  EXPECT_EQ(out.substr(0, ftl->sector_size()),
            page_content(2ull * ppl, ref.version(2ull * ppl), ftl->sector_size()));
  EXPECT_EQ(verify(ftl.get(), ref), "");
}

TEST_P(BlockInterfaceTest, TrimmedSectorsReadAsZeros) {
  std::shared_ptr<NandMedia> media;
  auto ftl = format_fresh(opts(), &media);
  ASSERT_TRUE(ftl);
  uint32_t ss = ftl->sector_size(), ppl = ftl->pages_per_leb();
  Reference ref;
  uint64_t n = 4ull * ppl;
  std::string buf;
  for (uint64_t s = 0; s < n; ++s) {
    buf += page_content(s, 1, ss);
    ref.wrote(s, 1);
  }
  ASSERT_EQ(ftl->write_sectors(0, n, buf.data()), 0);
  ASSERT_EQ(ftl->trim_sectors(3, 2), 0);          // part of LEB 0
  ASSERT_EQ(ftl->trim_sectors(ppl, ppl), 0);      // all of LEB 1
  for (uint64_t s : {3ull, 4ull}) ref.trimmed(s);
  for (uint64_t s = ppl; s < 2ull * ppl; ++s) ref.trimmed(s);
  EXPECT_EQ(verify(ftl.get(), ref), "");
  // Trimmed pages written again hold the new data.
  std::string p = page_content(4, 9, ss);
  ASSERT_EQ(ftl->write_sectors(4, 1, p.data()), 0);
  ref.wrote(4, 9);
  EXPECT_EQ(verify(ftl.get(), ref), "");
  std::string err;
  EXPECT_EQ(ftl->check(&err), 0) << err;
}

TEST_P(BlockInterfaceTest, RejectsRangesPastTheEnd) {
  std::shared_ptr<NandMedia> media;
  auto ftl = format_fresh(opts(), &media);
  ASSERT_TRUE(ftl);
  std::string buf(2 * ftl->sector_size(), 'x');
  uint64_t n = ftl->sector_count();
  EXPECT_EQ(ftl->write_sectors(n - 1, 2, buf.data()), -EINVAL);
  EXPECT_EQ(ftl->read_sectors(n, 1, &buf[0]), -EINVAL);
  EXPECT_EQ(ftl->trim_sectors(n - 1, 2), -EINVAL);
  EXPECT_EQ(ftl->write_leb(ftl->leb_count(), buf.data()), -EINVAL);
}

TEST_P(BlockInterfaceTest, UnwrittenSectorsReadAsZeros) {
  std::shared_ptr<NandMedia> media;
  auto ftl = format_fresh(opts(), &media);
  ASSERT_TRUE(ftl);
  Reference ref;
  EXPECT_EQ(verify(ftl.get(), ref), "");
}

INSTANTIATE_TEST_SUITE_P(
    Policies, BlockInterfaceTest,
    testing::Values(Variant{PolicyKind::kUbi, CacheMode::kOff, false},
                    Variant{PolicyKind::kUbi, CacheMode::kLazy, false},
                    Variant{PolicyKind::kPubi, CacheMode::kOff, false},
                    Variant{PolicyKind::kPubi, CacheMode::kMtdblock, false},
                    Variant{PolicyKind::kHubi, CacheMode::kOff, false},
                    Variant{PolicyKind::kHubi, CacheMode::kLazy, false},
                    Variant{PolicyKind::kHubi, CacheMode::kMtdblock, false},
                    Variant{PolicyKind::kHubi, CacheMode::kOff, true},
                    Variant{PolicyKind::kHubi, CacheMode::kLazy, true}),
    name_of);
