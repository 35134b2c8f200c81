// The factory gives each tier the space its superblock names, and the store's
// behaviour per tier (how new data is written, reuse of freed space,
// redirected overwrites, cleaning, bypass) follows from that space, not from
// the tier's name.
#include <gtest/gtest.h>

#include <cerrno>

#include "common_helpers.h"
#include "hybridstore/space/tier_space.h"
#include "store_helpers.h"

using namespace hybridstore;
using namespace hybridstore::test;

namespace {

Superblock superblock(const std::map<std::string, std::string>& mkfs_options) {
  Superblock sb;
  for (Tier t : tier_ids(sb.tiers())) sb.tier[t] = {64ull << 20, 4096, 65536, format1_tier_layout(t, mkfs_options)};
  sb.csum_block = 4096;
  sb.mkfs_options = mkfs_options;
  return sb;
}

std::unique_ptr<BlockDevice> file_device(const TempDir& dir, const std::string& name) {
  DeviceOpenOptions o;
  o.create = true;
  o.create_size = 64ull << 20;
  o.direct_io = false;
  std::string err;
  auto dev = open_block_device(dir.file(name), o, &err);
  EXPECT_TRUE(dev) << err;
  return dev;
}

}  // namespace

TEST(TierSpaceLayout, AStoreThatPredatesTheOptionsKeepsExtentsOnABlockDevice) {
  const TierLayout l = tier_layout(Tier::kSsd, {});
  EXPECT_EQ(l.device, DeviceKind::kBlock);
  EXPECT_EQ(l.space, SpaceKind::kExtents);
  const TierLayout n = tier_layout(Tier::kSsd, {{"hybridstore_ssd_kind", "nand"}, {"hybridstore_ssd_allocator", "hfm"}});
  EXPECT_EQ(n.device, DeviceKind::kNand);
  EXPECT_EQ(n.space, SpaceKind::kSections);
  EXPECT_STREQ(device_kind_name(n.device), "nand");
  // The options name the SSD's layout only: the HDD is extents on a block device.
  const TierLayout h = tier_layout(Tier::kHdd, {{"hybridstore_ssd_kind", "nand"}, {"hybridstore_ssd_allocator", "hfm"}});
  EXPECT_EQ(h.device, DeviceKind::kBlock);
  EXPECT_EQ(h.space, SpaceKind::kExtents);
}

TEST(TierSpaceFactory, EachTierGetsTheSpaceItsLayoutNames) {
  TempDir dir("tierspace");
  const Superblock sb = superblock({{"hybridstore_ssd_allocator", "hfm"}, {"hybridstore_ssd_kind", "file"}});
  auto ssd = make_tier_space(Tier::kSsd, file_device(dir, "ssd"), sb);
  auto hdd = make_tier_space(Tier::kHdd, file_device(dir, "hdd"), sb);
  // Sections: freed space is reusable at commit, state rides in the commits,
  // a move rewrites the object whole, holes need a cleaner.
  EXPECT_TRUE(ssd->reuse_at_commit());
  EXPECT_TRUE(ssd->keeps_state());
  EXPECT_TRUE(ssd->moves_rewrite_whole());
  EXPECT_NE(ssd->make_cleaner(nullptr), nullptr);
  EXPECT_FALSE(hdd->reuse_at_commit());
  EXPECT_FALSE(hdd->keeps_state());
  EXPECT_FALSE(hdd->moves_rewrite_whole());
  EXPECT_EQ(hdd->make_cleaner(nullptr), nullptr);
  EXPECT_EQ(hdd->report(), "");
  EXPECT_EQ(ssd->unit(), 4096u);
  EXPECT_EQ(ssd->reserved(), 65536u);

  // An SSD of plain extents: in place, nothing to clean.
  auto plain = make_tier_space(Tier::kSsd, file_device(dir, "plain"), superblock({}));
  EXPECT_FALSE(plain->reuse_at_commit());
  EXPECT_EQ(plain->make_cleaner(nullptr), nullptr);
}

TEST(TierSpaceFactory, SmallOverwritesStayInPlaceUnlessAStagedTierRedirectsThem) {
  TempDir dir("tierspace");
  const Superblock sb = superblock({{"hybridstore_ssd_allocator", "hfm"}});
  auto staged = make_tier_space(Tier::kSsd, file_device(dir, "ssd"), sb);
  auto disk = make_tier_space(Tier::kHdd, file_device(dir, "hdd"), sb);
  Config cfg;
  std::string err;
  ASSERT_EQ(cfg.set("hybridstore_deferred_max", "65536", &err), 0) << err;
  ASSERT_EQ(cfg.set("hybridstore_ssd_small_overwrites", "auto", &err), 0) << err;
  staged->configure(cfg);
  disk->configure(cfg);
  EXPECT_TRUE(staged->overwrites_in_place(4096)) << "auto redirects on raw flash only";
  EXPECT_FALSE(staged->overwrites_in_place(65536)) << "a write of the limit's size goes to new space";
  EXPECT_TRUE(disk->overwrites_in_place(4096));
  ASSERT_EQ(cfg.set("hybridstore_ssd_small_overwrites", "redirect", &err), 0) << err;
  staged->configure(cfg);
  disk->configure(cfg);
  EXPECT_FALSE(staged->overwrites_in_place(4096));
  EXPECT_TRUE(disk->overwrites_in_place(4096)) << "a redirected write would reach the disk before the commit";
}

// Through a whole store: the extents space hands out, takes back and reports
// what the store's statistics and fsck see.
class TierSpaceStoreTest : public StoreTest {};

TEST_F(TierSpaceStoreTest, UsageFollowsWritesAndRemovesOnEveryTier) {
  make_store();
  CollectionId c("1.0_head");
  make_coll(c);
  StoreStats before;
  ASSERT_EQ(store_->statfs(&before), 0);
  Transaction t;
  // A small object for the SSD, a large sequential one for the HDD.
  t.write(c, obj("small"), 0, std::string(8192, 'a'));
  t.set_alloc_hint(c, obj("big"), 64 << 20, 4096, kHintSequentialWrite);
  t.write(c, obj("big"), 0, std::string(4 << 20, 'b'));
  apply(std::move(t));
  StoreStats mid;
  ASSERT_EQ(store_->statfs(&mid), 0);
  for (int i = 0; i < 2; ++i) EXPECT_GT(mid.tier[i].allocated, before.tier[i].allocated) << i;
  Transaction rm;
  rm.remove(c, obj("small"));
  rm.remove(c, obj("big"));
  apply(std::move(rm));
  StoreStats after;
  ASSERT_EQ(store_->statfs(&after), 0);
  for (int i = 0; i < 2; ++i) EXPECT_EQ(after.tier[i].allocated, before.tier[i].allocated) << i;
  EXPECT_EQ(fsck_errors(true), 0);
}
