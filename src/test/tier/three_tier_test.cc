// A store of three tiers, fastest first: the SSD (raw NAND behind the FTL, or
// a file), an extra tier (tier2, a file) and the HDD (a file). Placement uses
// the ends of the order, migration moves objects one step between neighbours,
// a kill during migration loses nothing, and fsck checks every tier.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "hscommon/encoding.h"
#include "hybridstore/format/store_format.h"
#include "hybridstore/tier/migrator.h"
#include "store_helpers.h"

using namespace hybridstore;
using hybridstore::test::TierStoreTest;

namespace {

constexpr int kSsd = 0, kHdd = 1, kTier2 = 2;

class ThreeTierTest : public TierStoreTest {
 protected:
  void fixture_options(Config* c) override {
    std::string err;
    EXPECT_EQ(c->set("hybridstore_tiers", "3", &err), 0) << err;
    EXPECT_EQ(c->set("hybridstore_tier2_size", "256M", &err), 0) << err;
    // Whole objects move here (absorb_test covers split objects).
    c->set("hybridstore_tier_absorb_max", "0", &err);
    // Passes alone decide (no promotion on reads racing them).
    c->set("hybridstore_tier_promote_hits", "0", &err);
    // Room for about four of the 256 KiB objects below on each faster tier.
    c->set("hybridstore_tier_ssd_target_ratio", "0.0045", &err);
  }
  // The tier holding all of the object's data, or -1 when it is split.
  int tier_of(const ObjectId& o) {
    ObjectStat s = st(o);
    for (int t = 0; t < kMaxTiers; ++t)
      if (s.allocated && s.bytes_on[t] == s.allocated) return t;
    return -1;
  }
  void put(const ObjectId& o, const std::string& data, bool large_hint) {
    Transaction t;
    t.touch(coll_, o);
    if (large_hint) t.set_alloc_hint(coll_, o, 64ull << 20, 0, kHintSequentialWrite);
    t.write(coll_, o, 0, data);
    apply(std::move(t));
  }
  void read_hot(const std::vector<ObjectId>& objs, uint64_t seed) {
    std::mt19937_64 rng(seed);
    for (int n = 0; n < 400; ++n) {
      std::string out;
      store_->read(coll_, objs[n % objs.size()], (rng() % 60) * 4096, 4096, &out);
    }
  }
};

TEST_F(ThreeTierTest, MkfsRecordsTheOrderAndNewDataGoesToTheEnds) {
  StoreStats ss;
  ASSERT_EQ(store_->statfs(&ss), 0);
  EXPECT_EQ(ss.format_version, kFormatVersion);
  ASSERT_EQ(ss.tiers, 3);
  EXPECT_EQ(ss.order[0], Tier::kSsd);
  EXPECT_EQ(ss.order[1], tier_at(kTier2));
  EXPECT_EQ(ss.order[2], Tier::kHdd);
  EXPECT_GT(ss.tier[kTier2].total, 200ull << 20);
  EXPECT_TRUE(std::filesystem::exists(dir_->path() + "/store/block.tier2"));

  const std::string small = hybridstore::test::random_bytes(rng_, 20000);
  const std::string large = hybridstore::test::random_bytes(rng_, 2 << 20);
  put(obj("small"), small, false);
  put(obj("large"), large, true);
  EXPECT_EQ(tier_of(obj("small")), kSsd);
  EXPECT_EQ(tier_of(obj("large")), kHdd);
  ASSERT_EQ(store_->statfs(&ss), 0);
  EXPECT_EQ(ss.tier[kTier2].allocated, 0u);  // the middle tier fills by migration only
  EXPECT_EQ(counter("tier2_objects"), 0u);
  EXPECT_EQ(counter("ssd_objects"), 1u);
  EXPECT_EQ(counter("hdd_objects"), 1u);

  // Any tier can hold any object, and the move survives a remount.
  ASSERT_EQ(store_->migrate(coll_, obj("small"), tier_at(kTier2)), 0);
  EXPECT_EQ(tier_of(obj("small")), kTier2);
  EXPECT_EQ(counter("tier2_objects"), 1u);
  EXPECT_EQ(store_->migrate(coll_, obj("small"), tier_at(3)), -EINVAL);  // no such tier here
  remount();
  EXPECT_EQ(tier_of(obj("small")), kTier2);
  EXPECT_EQ(read_all(coll_, obj("small")), small);
  EXPECT_EQ(read_all(coll_, obj("large")), large);
  EXPECT_EQ(fsck_errors(true), 0);
}

TEST_F(ThreeTierTest, PassesPromoteAndDemoteOneStepAtATime) {
  std::vector<ObjectId> objs;
  std::vector<std::string> data;
  for (int i = 0; i < 10; ++i) {
    objs.push_back(obj("p" + std::to_string(i)));
    data.push_back(std::string(256 << 10, static_cast<char>('a' + i)));
    put(objs[i], data[i], true);
    ASSERT_EQ(tier_of(objs[i]), kHdd);
  }
  const std::vector<ObjectId> first(objs.begin(), objs.begin() + 4), second(objs.begin() + 4, objs.begin() + 8);

  // Pass 1: the hot four climb one step, from the HDD to tier2.
  read_hot(first, 1);
  MigrationReport rep;
  ASSERT_EQ(store_->migrate_now(&rep), 0);
  EXPECT_EQ(rep.objects, 10u);
  EXPECT_EQ(rep.promoted, 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(tier_of(objs[i]), kTier2) << i;
  for (int i = 4; i < 10; ++i) EXPECT_EQ(tier_of(objs[i]), kHdd) << i;

  // Pass 2: still hot, they climb to the SSD.
  read_hot(first, 2);
  ASSERT_EQ(store_->migrate_now(&rep), 0);
  EXPECT_EQ(rep.promoted, 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(tier_of(objs[i]), kSsd) << i;

  // Passes 3 and 4: four others turn hot and climb; the SSD has room for
  // four, so the first four, cold now, step down to tier2, not to the HDD.
  read_hot(second, 3);
  ASSERT_EQ(store_->migrate_now(&rep), 0);
  for (int i = 4; i < 8; ++i) EXPECT_EQ(tier_of(objs[i]), kTier2) << i;
  read_hot(second, 4);
  ASSERT_EQ(store_->migrate_now(&rep), 0);
  // The planner's budget is a knapsack's (HRO weighs objects by their units),
  // so it may keep one object fewer than four: at least three move.
  EXPECT_GE(rep.promoted, 3u);
  EXPECT_GE(rep.demoted, 3u);
  int up = 0, down = 0;
  for (int i = 0; i < 8; ++i) {
    EXPECT_NE(tier_of(objs[i]), kHdd) << i << ": a step down from the SSD is tier2";
    if (i >= 4) up += tier_of(objs[i]) == kSsd;
    if (i < 4) down += tier_of(objs[i]) == kTier2;
  }
  EXPECT_GE(up, 3);
  EXPECT_GE(down, 3);
  for (int i = 8; i < 10; ++i) EXPECT_EQ(tier_of(objs[i]), kHdd) << i;

  remount();
  for (int i = 0; i < 10; ++i) EXPECT_EQ(read_all(coll_, objs[i]), data[i]) << i;
  EXPECT_EQ(fsck_errors(true), 0);
}

// NAND behind the embedded FTL, an SSD file and an HDD file: a kill at any
// point of migrations among the three leaves every object whole on one tier.
TEST_F(ThreeTierTest, OnNandAKillDuringMigrationLeavesEveryObjectWholeAndFsckClean) {
  ASSERT_EQ(store_->umount(), 0);
  extra_ = {{"hybridstore_ssd_kind", "nand"}, {"hybridstore_nand_size", "64M"}};
  dir_ = std::make_unique<hybridstore::test::TempDir>("store3");
  make_store();
  make_coll(coll_);
  StoreProbe probe;
  ASSERT_EQ(HybridStore::probe(dir_->path() + "/store", config(), &probe, nullptr), 0);
  EXPECT_EQ(probe.tiers, 3);
  EXPECT_EQ(probe.tier[kSsd].kind, "nand");
  EXPECT_EQ(probe.slowest, Tier::kHdd);

  const int kObjects = 9;
  std::vector<std::string> model(kObjects);
  for (int i = 0; i < kObjects; ++i) {
    model[i] = hybridstore::test::random_bytes(rng_, 64 << 10);
    put(obj("k" + std::to_string(i)), model[i], i % 2 == 0);
  }
  ASSERT_EQ(store_->umount(), 0);
  store_.reset();
  const std::string path = dir_->path() + "/store";
  const uint64_t seed = 20261128;
  printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 4; ++round) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      HybridStore s(path, config());
      std::string err;
      if (s.mount(&err) < 0) _exit(2);
      for (int n = 0;; ++n) s.migrate(coll_, obj("k" + std::to_string(n % kObjects)), tier_at((n / kObjects) % 3));
    }
    usleep(static_cast<useconds_t>(50000 + rng() % 150000));
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    store_ = std::make_unique<HybridStore>(path, config());
    std::string err;
    ASSERT_EQ(store_->mount(&err), 0) << err;
    for (int i = 0; i < kObjects; ++i) {
      ObjectId o = obj("k" + std::to_string(i));
      EXPECT_GE(tier_of(o), 0) << "round " << round << " object " << i << " split across tiers";
      EXPECT_EQ(read_all(coll_, o), model[i]) << "round " << round << " object " << i;
    }
    EXPECT_EQ(fsck_errors(true), 0) << "round " << round;
    ASSERT_EQ(store_->umount(), 0);
    store_.reset();
  }
  store_ = std::make_unique<HybridStore>(path, config());
  std::string err;
  ASSERT_EQ(store_->mount(&err), 0) << err;
}

TEST(ThreeTierFormat, TheSuperblockKeepsTiersAndOrderAndRejectsNonsense) {
  Superblock sb;
  sb.order = TierOrder{Tier::kSsd, Tier::kTier2, Tier::kHdd};
  for (Tier t : tier_ids(3)) {
    sb.tier[t].size = 1ull << 30;
    sb.tier[t].reserved = 65536;
  }
  sb.tier[Tier::kSsd].layout = {DeviceKind::kNand, SpaceKind::kSections};
  Superblock back;
  std::string why;
  ASSERT_EQ(decode_superblock(encode_superblock(sb), &back, &why), 0) << why;
  EXPECT_EQ(back.tiers(), 3);
  EXPECT_EQ(back.order[1], Tier::kTier2);
  EXPECT_EQ(back.tier[Tier::kSsd].layout.device, DeviceKind::kNand);
  EXPECT_EQ(back.tier[Tier::kSsd].layout.space, SpaceKind::kSections);
  EXPECT_EQ(back.tier[Tier::kHdd].layout.space, SpaceKind::kExtents);

  // An order that names a tier twice, or one the store does not have.
  Superblock twice = sb;
  twice.order = TierOrder{Tier::kSsd, Tier::kTier2, Tier::kSsd};
  EXPECT_EQ(decode_superblock(encode_superblock(twice), &back, &why), -EIO);
  EXPECT_NE(why.find("order"), std::string::npos) << why;
  Superblock missing = sb;
  missing.order = TierOrder{Tier::kSsd, Tier::kTier3, Tier::kHdd};
  EXPECT_EQ(decode_superblock(encode_superblock(missing), &back, &why), -EIO);
  // A tier count out of range, written over a good record's (the fifth
  // byte after the version, the fsid and the creation time).
  auto with_tier_count = [&](uint8_t n) {
    const std::string good = encode_superblock(sb);
    const uint32_t kSuperTag = 0x53555052;  // "SUPR"
    uint8_t ver;
    std::string_view body;
    // Record version 3 since format 4 (the RocksDB location at the end).
    EXPECT_EQ(open_stored_record(kSuperTag, 3, good, "superblock", &ver, &body, &why), 0) << why;
    if (body.size() <= 4 + 16 + 8) return std::string();
    std::string changed(body);
    changed[4 + 16 + 8] = static_cast<char>(n);
    return seal_record(kSuperTag, ver, changed);
  };
  EXPECT_LT(decode_superblock(with_tier_count(kMaxTiers + 1), &back, &why), 0);
  Superblock one = sb;
  one.order = TierOrder{Tier::kSsd};
  EXPECT_LT(decode_superblock(encode_superblock(one), &back, &why), 0);
  EXPECT_LT(decode_superblock(with_tier_count(1), &back, &why), 0);
  // Sections and NAND are the SSD's, and an SSD with them comes first.
  Superblock sections_below = sb;
  sections_below.tier[Tier::kHdd].layout = {DeviceKind::kBlock, SpaceKind::kSections};
  EXPECT_EQ(decode_superblock(encode_superblock(sections_below), &back, &why), -EIO);
  Superblock nand_not_first = sb;
  nand_not_first.order = TierOrder{Tier::kTier2, Tier::kSsd, Tier::kHdd};
  EXPECT_EQ(decode_superblock(encode_superblock(nand_not_first), &back, &why), -EIO);
  EXPECT_NE(why.find("fastest"), std::string::npos) << why;
}

}  // namespace
