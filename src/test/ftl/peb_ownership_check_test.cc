// The PEB-ownership invariants every mapping policy's check() relies on: a
// corrupt mapping must be reported, never read out of bounds.
#include <gtest/gtest.h>

#include "ftl/ftl_helpers.h"
#include "ftl/mapping_policy.h"

using namespace hybridstore::ftl;
using namespace hybridstore::ftl::test;

namespace {

class PebOwnershipCheckTest : public testing::Test {
 protected:
  void SetUp() override {
    ftl_ = format_fresh(small_options(PolicyKind::kPubi, 64), &media_);
    ASSERT_TRUE(ftl_);
    std::string leb(ftl_->leb_bytes(), 'x');
    ASSERT_EQ(ftl_->write_leb(0, leb.data()), 0);
    ctx_.wl = ftl_->wear_leveler();
    for (uint32_t p = 0; p < ctx_.wl->peb_count(); ++p)
      if (ctx_.wl->state(p) == PebState::kUsed && ctx_.wl->owner(p) == 0) leb0_peb_ = p;
    ASSERT_NE(leb0_peb_, kNoOwner);
  }
  std::shared_ptr<NandMedia> media_;
  std::unique_ptr<Ftl> ftl_;
  FtlContext ctx_;
  uint32_t leb0_peb_ = kNoOwner;
};

}  // namespace

TEST_F(PebOwnershipCheckTest, APebBeyondTheChipIsAnErrorNotAnOutOfBoundsRead) {
  PebOwnershipCheck owners(ctx_);
  std::string err;
  EXPECT_EQ(owners.claim_for_leb(0, ctx_.wl->peb_count(), &err), -EINVAL);
  EXPECT_NE(err.find("out of range"), std::string::npos) << err;
  EXPECT_EQ(owners.claim(ctx_.wl->peb_count() + 7, "log block", &err), -EINVAL);
  EXPECT_NE(err.find("log block"), std::string::npos) << err;
}

TEST_F(PebOwnershipCheckTest, APebClaimedTwiceIsReported) {
  PebOwnershipCheck owners(ctx_);
  std::string err;
  ASSERT_EQ(owners.claim_for_leb(0, leb0_peb_, &err), 0) << err;
  EXPECT_EQ(owners.claim(leb0_peb_, "merge target", &err), -EINVAL);
  EXPECT_NE(err.find("reused"), std::string::npos) << err;
}

TEST_F(PebOwnershipCheckTest, APebOwnedByAnotherLebIsReported) {
  PebOwnershipCheck owners(ctx_);
  std::string err;
  EXPECT_EQ(owners.claim_for_leb(1, leb0_peb_, &err), -EINVAL);
  EXPECT_NE(err.find("not used by it"), std::string::npos) << err;
}

TEST_F(PebOwnershipCheckTest, AUsedPebNobodyClaimsIsALeak) {
  std::string err;
  {
    PebOwnershipCheck owners(ctx_);
    EXPECT_EQ(owners.finish(&err), -EINVAL);
    EXPECT_NE(err.find("leak"), std::string::npos) << err;
  }
  // The policy's own check claims every PEB it holds: the whole FTL is clean.
  EXPECT_EQ(ftl_->check(&err), 0) << err;
}
