// The factory gives each tier the space its superblock names, and the store's
// behaviour per tier (how new data is written, reuse of freed space,
// redirected overwrites, cleaning, bypass) follows from that space, not from
// the tier's name.
#include <gtest/gtest.h>

#include <rocksdb/db.h>

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

// Lending to the KV file system (docs/kvfs.md 2.5) on both spaces, over a
// RocksDB holding what mkfs writes.
namespace {

struct LendingCase {
  const char* name;
  std::map<std::string, std::string> mkfs;
};

class TierSpaceLending : public ::testing::TestWithParam<LendingCase> {
 protected:
  void SetUp() override {
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, dir_.file("db"), &raw).ok());
    db_.reset(raw);
    sb_ = superblock(GetParam().mkfs);
    std::string err;
    ASSERT_EQ(cfg_.set("hybridstore_ssd_block_size", "4096", &err), 0) << err;
    rocksdb::WriteBatch b;
    ASSERT_EQ(format_tier_space(Tier::kSsd, cfg_, sb_, &b, &err), 0) << err;
    ASSERT_TRUE(db_->Write(rocksdb::WriteOptions(), &b).ok());
  }
  std::unique_ptr<TierSpace> load(const std::vector<Interval>& lent, int* r, std::string* err) {
    auto sp = make_tier_space(Tier::kSsd, file_device(dir_, "ssd" + std::to_string(opened_++)), sb_);
    sp->configure(cfg_);
    *r = sp->load(db_.get(), cfg_, lent, err);
    return sp;
  }
  std::unique_ptr<TierSpace> load(const std::vector<Interval>& lent = {}) {
    int r;
    std::string err;
    auto sp = load(lent, &r, &err);
    EXPECT_EQ(r, 0) << err;
    return sp;
  }
  // Free runs as (offset, length), merged.
  static std::vector<std::pair<uint64_t, uint64_t>> free_runs(const TierSpace& sp) {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    sp.for_each_free([&](uint64_t off, uint64_t len) {
      if (!out.empty() && out.back().first + out.back().second == off)
        out.back().second += len;
      else
        out.emplace_back(off, len);
    });
    return out;
  }
  static bool overlaps(const std::vector<std::pair<uint64_t, uint64_t>>& runs, const Interval& i) {
    for (const auto& [off, len] : runs)
      if (off < i.offset + i.length && i.offset < off + len) return true;
    return false;
  }

  TempDir dir_{"tierspace-lend"};
  std::unique_ptr<rocksdb::DB> db_;
  Superblock sb_;
  Config cfg_;
  int opened_ = 0;
};

TEST_P(TierSpaceLending, LendAndTakeBackRoundTrip) {
  auto sp = load();
  const uint64_t g = sp->lend_unit();
  ASSERT_GT(g, 0u);
  ASSERT_EQ(g % sp->unit(), 0u);
  const TierSpace::Usage before = sp->usage();
  const auto free_before = free_runs(*sp);
  std::vector<Interval> got;
  EXPECT_EQ(sp->lend(g - 1, &got), -EINVAL);
  ASSERT_EQ(sp->lend(3 * g, &got), 0);
  uint64_t lent = 0;
  for (const auto& i : got) {
    EXPECT_EQ(i.offset % g, 0u);
    EXPECT_EQ(i.length % g, 0u);
    EXPECT_GE(i.offset, sp->reserved());
    EXPECT_LE(i.offset + i.length, sp->size());
    EXPECT_FALSE(overlaps(free_runs(*sp), i)) << "lent space is not free";
    lent += i.length;
  }
  EXPECT_EQ(lent, 3 * g);
  EXPECT_EQ(sp->usage().free, before.free - lent);
  EXPECT_EQ(sp->usage().allocated, before.allocated) << "lent space is no object's";
  EXPECT_EQ(sp->verify(), "");
  uint64_t listed = 0;
  for (const auto& i : sp->lent()) listed += i.length;
  EXPECT_EQ(listed, lent);
  sp->take_back(got);
  EXPECT_EQ(sp->usage().free, before.free);
  EXPECT_TRUE(sp->lent().empty());
  EXPECT_EQ(free_runs(*sp), free_before);
  EXPECT_EQ(sp->verify(), "");
}

TEST_P(TierSpaceLending, LendsWhatThereIsAndThenRefuses) {
  auto sp = load();
  const uint64_t g = sp->lend_unit();
  std::vector<Interval> all;
  ASSERT_EQ(sp->lend(sp->size(), &all), 0);
  uint64_t lent = 0;
  for (const auto& i : all) lent += i.length;
  EXPECT_EQ(lent, (sp->size() / g) * g - (sp->reserved() + g - 1) / g * g) << "every aligned byte after the head";
  EXPECT_EQ(sp->lendable(), 0u);
  std::vector<Interval> none;
  EXPECT_EQ(sp->lend(g, &none), -ENOSPC);
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(sp->verify(), "");
  sp->take_back(all);
  EXPECT_EQ(sp->lendable(), lent) << "what lend would take, at most";
  EXPECT_EQ(sp->verify(), "");
}

TEST_P(TierSpaceLending, LoadLeavesTheKvFsRangesOut) {
  auto probe = load();
  const uint64_t g = probe->lend_unit();
  const uint64_t base = (probe->reserved() + g - 1) / g * g;
  probe.reset();
  const std::vector<Interval> lent{{base + 2 * g, g}, {base + 5 * g, 2 * g}};
  auto sp = load(lent);
  const auto runs = free_runs(*sp);
  for (const auto& i : lent) EXPECT_FALSE(overlaps(runs, i)) << i.offset;
  EXPECT_TRUE(overlaps(runs, {base + 3 * g, g})) << "what lies between stays free";
  const auto listed = sp->lent();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].offset, lent[0].offset);
  EXPECT_EQ(listed[1].length, lent[1].length);
  EXPECT_EQ(sp->usage().free, sp->size() - sp->reserved() - 3 * g);
  EXPECT_EQ(sp->verify(), "");
  // Given back after a remount, they are free again.
  sp->take_back(lent);
  for (const auto& i : lent) EXPECT_TRUE(overlaps(free_runs(*sp), i));
  EXPECT_EQ(sp->usage().free, sp->size() - sp->reserved());
  // Ranges that cannot be the kvfs's: outside the space, or misaligned.
  int r;
  std::string err;
  load({{sp->size(), g}}, &r, &err);
  EXPECT_EQ(r, -EIO);
  load({{base + 4096 + 512, g}}, &r, &err);
  EXPECT_EQ(r, -EIO) << err;
}

TEST_P(TierSpaceLending, TheFloorIsLeftOutOfFreeAndLentAll) {
  auto sp = load();
  const uint64_t g = sp->lend_unit();
  const uint64_t free = sp->usage().free;
  sp->set_floor(4 * g);
  EXPECT_EQ(sp->usage().free, free - 4 * g);
  sp->set_floor(free + g);
  EXPECT_EQ(sp->usage().free, 0u) << "never below zero";
  EXPECT_GE(sp->lendable(), 2 * g) << "the floor stays lendable";
  std::vector<Interval> got;
  EXPECT_EQ(sp->lend(2 * g, &got), 0) << "the floor is the kvfs's";
  sp->set_floor(0);
  sp->take_back(got);
  EXPECT_EQ(sp->usage().free, free);
}

INSTANTIATE_TEST_SUITE_P(BothSpaces, TierSpaceLending,
                         ::testing::Values(LendingCase{"extents", {}},
                                           LendingCase{"sections", {{"hybridstore_ssd_allocator", "hfm"}}}),
                         [](const ::testing::TestParamInfo<LendingCase>& i) { return std::string(i.param.name); });

// An extent tier refuses new data that would cut into the floor; the
// store then spills it (space_test has the whole store).
TEST(TierSpaceFloor, ExtentSpaceRefusesDataBelowTheFloor) {
  TempDir dir("tierspace-floor");
  rocksdb::Options o;
  o.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(o, dir.file("db"), &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  const Superblock sb = superblock({});
  auto sp = make_tier_space(Tier::kSsd, file_device(dir, "ssd"), sb);
  Config cfg;
  sp->configure(cfg);
  std::string err;
  ASSERT_EQ(sp->load(db.get(), cfg, {}, &err), 0) << err;
  const uint64_t g = sp->lend_unit(), free = sp->usage().free;
  sp->set_floor(2 * g);
  std::string data(free - 2 * g, 'x');
  rocksdb::WriteBatch batch;
  std::vector<uint64_t> records;
  std::vector<TierWrite> writes;
  TxnWrites to{&batch, nullptr, &records, &writes};
  TierSpace::Request req;
  req.length = data.size();
  std::vector<PExtent> out;
  ASSERT_EQ(sp->write_new(req, data.data(), to, &out), 0);
  EXPECT_EQ(sp->usage().free, 0u);
  TierSpace::Request one;
  one.length = sp->unit();
  std::vector<PExtent> refused;
  EXPECT_EQ(sp->write_new(one, data.data(), to, &refused), -ENOSPC);
  std::vector<Interval> got;
  ASSERT_EQ(sp->lend(2 * g, &got), 0);
  sp->take_back(got);
  sp->set_floor(0);
  EXPECT_EQ(sp->write_new(one, data.data(), to, &refused), 0);
}

}  // namespace
