// Extent maps kept in shards under keys of their own (format 3): a large
// object's map is split by shard, small overwrites rewrite one shard, and
// every way an onode leaves or changes its key (truncate to inline, remove,
// rename, clone, split, several syncs in one transaction) leaves no shard
// behind and none missing. fsck counts the shard records and flags orphans
// and missing ones; the damage cases write straight into RocksDB.
#include <rocksdb/db.h>

#include "hybridstore/kv/kv_schema.h"
#include "store_helpers.h"

using namespace hybridstore;
using hybridstore::test::StoreTest;

namespace {

constexpr uint64_t kObject = 4ull << 20;
constexpr uint64_t kShard = ExtentMap::kShardSpan;

class ExtentShardsTest : public StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    make_coll(coll_);
  }
  FsckReport fsck_report(bool deep = false) {
    FsckReport rep;
    EXPECT_EQ(store_->fsck(deep, &rep), 0);
    for (const auto& p : rep.problems) ADD_FAILURE() << "fsck: " << p;
    return rep;
  }
  std::string pattern(uint64_t len, uint64_t seed) {
    std::string s(len, '\0');
    std::mt19937_64 r(seed);
    for (auto& c : s) c = static_cast<char>(r());
    return s;
  }
  // A whole 4 MiB object, then 4 KiB overwrites at `offsets`; the model
  // follows.
  std::string write_big(const ObjectId& o, const std::vector<uint64_t>& offsets) {
    std::string model = pattern(kObject, 1);
    Transaction t;
    t.write(coll_, o, 0, model);
    apply(std::move(t));
    uint64_t n = 2;
    for (uint64_t off : offsets) {
      std::string d = pattern(4096, n++);
      Transaction w;
      w.write(coll_, o, off, d);
      apply(std::move(w));
      model.replace(off, d.size(), d);
    }
    return model;
  }
  std::unique_ptr<rocksdb::DB> open_db() {
    rocksdb::Options opt;
    opt.merge_operator = kv::make_merge_operator();
    rocksdb::DB* db = nullptr;
    EXPECT_TRUE(rocksdb::DB::Open(opt, dir_->path() + "/store/db", &db).ok());
    return std::unique_ptr<rocksdb::DB>(db);
  }
  void mount_again() {
    store_ = std::make_unique<HybridStore>(dir_->path() + "/store", config());
    std::string err;
    ASSERT_EQ(store_->mount(&err), 0) << err;
  }
};

TEST_F(ExtentShardsTest, ABigObjectKeepsOneShardPerQuarterMebibyteAndReadsBackAfterRemount) {
  const ObjectId o = obj("big");
  std::string model = write_big(o, {0, 5 * 4096, kShard + 4096, 3 * kShard, kObject - 4096});
  EXPECT_EQ(read_all(coll_, o), model);
  FsckReport rep = fsck_report(true);
  EXPECT_EQ(rep.extent_shards, kObject / kShard);
  remount();
  EXPECT_EQ(read_all(coll_, o), model);
  rep = fsck_report(true);
  EXPECT_EQ(rep.errors, 0u);
  EXPECT_EQ(rep.extent_shards, kObject / kShard);
  // A small object's map stays inside its onode.
  Transaction t;
  t.write(coll_, obj("small"), 0, pattern(3 * 4096, 9));
  apply(std::move(t));
  EXPECT_EQ(fsck_report().extent_shards, kObject / kShard);
}

TEST_F(ExtentShardsTest, TruncateRemoveRenameAndCloneLeaveNoShardBehind) {
  const ObjectId a = obj("a"), b = obj("b"), c = obj("c");
  std::string model = write_big(a, {4096, 2 * kShard});
  // Clone: both objects' shards, independent.
  {
    Transaction t;
    t.clone(coll_, a, b);
    apply(std::move(t));
  }
  EXPECT_EQ(fsck_report().extent_shards, 2 * kObject / kShard);
  // Rename b to c: c's shards replace b's.
  {
    Transaction t;
    t.collection_move_rename(coll_, b, coll_, c);
    apply(std::move(t));
  }
  EXPECT_EQ(fsck_report().extent_shards, 2 * kObject / kShard);
  // Truncate a to two blocks: its map goes back inside the onode.
  {
    Transaction t;
    t.truncate(coll_, a, 8192);
    apply(std::move(t));
  }
  EXPECT_EQ(fsck_report().extent_shards, kObject / kShard);
  EXPECT_EQ(read_all(coll_, a), model.substr(0, 8192));
  // Truncating c to 2 MiB keeps it in (eight) shards.
  {
    Transaction t;
    t.truncate(coll_, c, 2 << 20);
    apply(std::move(t));
  }
  EXPECT_EQ(fsck_report().extent_shards, (2u << 20) / kShard);
  remount();
  EXPECT_EQ(read_all(coll_, c), model.substr(0, 2 << 20));
  {
    Transaction t;
    t.remove(coll_, c);
    apply(std::move(t));
  }
  FsckReport rep = fsck_report(true);
  EXPECT_EQ(rep.errors, 0u);
  EXPECT_EQ(rep.extent_shards, 0u);
}

TEST_F(ExtentShardsTest, ASplitThatSyncsMidTransactionLeavesExactlyTheShardsOfTheEnd) {
  // Split lists the collection through the batch, so the onodes are written
  // to it once mid-transaction and again at the end; what the first write
  // put there must not outlive the second.
  auto hashed = [&](const std::string& name, uint32_t hash) {
    ObjectId o = obj(name);
    o.hash = hash;
    return o;
  };
  std::vector<ObjectId> objs;
  for (uint32_t i = 0; i < 6; ++i) objs.push_back(hashed("s" + std::to_string(i), i));
  for (const auto& o : objs) write_big(o, {});
  const CollectionId dest("1.1_head");
  Transaction t;
  for (const auto& o : objs) t.write(coll_, o, kShard, pattern(4096, 77));  // sharded, changed
  t.create_collection(dest, 1);
  t.split_collection(coll_, 1, 1, dest);
  // Shrunk to inline after the split's sync wrote their shards.
  for (const auto& o : objs) t.truncate(o.matches(1, 1) ? dest : coll_, o, 4096);
  apply(std::move(t));
  EXPECT_EQ(fsck_report().extent_shards, 0u);
  for (const auto& o : objs) EXPECT_EQ(read_all(o.matches(1, 1) ? dest : coll_, o).size(), 4096u);

  // The other way round: inline before the split, sharded after it.
  std::vector<ObjectId> more;
  for (uint32_t i = 0; i < 6; ++i) more.push_back(hashed("m" + std::to_string(i), 2 * i));
  const CollectionId dest2("1.2_head");
  Transaction one;
  for (const auto& o : more) one.write(coll_, o, 0, pattern(4096, 3));
  one.create_collection(dest2, 2);
  one.split_collection(coll_, 2, 2, dest2);
  for (const auto& o : more) one.write(o.matches(2, 2) ? dest2 : coll_, o, 0, pattern(kObject, 4));
  apply(std::move(one));
  size_t moved = 0;
  for (const auto& o : more) moved += o.matches(2, 2);
  ASSERT_GT(moved, 0u);
  ASSERT_LT(moved, more.size());
  remount();
  for (const auto& o : more) EXPECT_EQ(read_all(o.matches(2, 2) ? dest2 : coll_, o), pattern(kObject, 4));
  FsckReport rep = fsck_report(true);
  EXPECT_EQ(rep.errors, 0u);
  EXPECT_EQ(rep.extent_shards, more.size() * (kObject / kShard));
}

TEST_F(ExtentShardsTest, AMissingShardIsAnErrorNeverZerosAndAnOrphanIsFound) {
  const ObjectId o = obj("victim");
  write_big(o, {});
  ASSERT_EQ(store_->umount(), 0);
  {
    auto db = open_db();
    const std::string okey = kv::onode_key(coll_, o);
    ASSERT_TRUE(db->Delete(rocksdb::WriteOptions(), kv::extent_shard_key(okey, 3)).ok());
    // A shard of an object that does not exist.
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), kv::extent_shard_key(kv::onode_key(coll_, obj("ghost")), 0), "x").ok());
  }
  mount_again();
  std::string out;
  EXPECT_EQ(store_->read(coll_, o, 0, kObject, &out), -EIO);
  // The object and the orphan; an unreadable object's space and counts
  // are reported too (leaked, statistics), as for any corrupt onode.
  FsckReport rep;
  const int errors = store_->fsck(false, &rep);
  EXPECT_EQ(errors, static_cast<int>(rep.errors));
  EXPECT_GE(rep.errors, 2u);
  bool missing = false, orphan = false;
  for (const auto& p : rep.problems) {
    missing |= p.find("extent shard 3 is missing") != std::string::npos;
    orphan |= p.find("ghost") != std::string::npos && p.find("belongs to no onode") != std::string::npos;
  }
  EXPECT_TRUE(missing);
  EXPECT_TRUE(orphan);
  // Repair drops the object (its remaining shards with it) and the orphan.
  ASSERT_EQ(store_->umount(), 0);
  store_ = std::make_unique<HybridStore>(dir_->path() + "/store", config());
  std::string err;
  std::vector<std::string> dropped, changes;
  ASSERT_EQ(store_->mount_for_repair(&err, &dropped), 0) << err;
  FsckReport found;
  EXPECT_GT(store_->repair(&found, &changes), 0);
  ASSERT_EQ(store_->umount(), 0);
  mount_again();
  rep = fsck_report(true);
  EXPECT_EQ(rep.errors, 0u);
  EXPECT_EQ(rep.extent_shards, 0u);
  EXPECT_EQ(store_->read(coll_, o, 0, 4096, &out), -ENOENT);
}

TEST_F(ExtentShardsTest, AShardFromAnotherMomentIsRefused) {
  // A shard the onode was not written with (an older copy put back) fails
  // the onode's crc for it: the object reads as damaged, not as old data.
  const ObjectId o = obj("stale");
  write_big(o, {});
  ASSERT_EQ(store_->umount(), 0);
  std::string old_shard;
  const std::string okey = kv::onode_key(coll_, o);
  {
    auto db = open_db();
    ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), kv::extent_shard_key(okey, 2), &old_shard).ok());
  }
  mount_again();
  {
    Transaction t;
    t.write(coll_, o, 2 * kShard + 8192, pattern(4096, 5));
    apply(std::move(t));
  }
  ASSERT_EQ(store_->umount(), 0);
  {
    auto db = open_db();
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), kv::extent_shard_key(okey, 2), old_shard).ok());
  }
  mount_again();
  std::string out;
  EXPECT_EQ(store_->read(coll_, o, 0, 4096, &out), -EIO);
  FsckReport rep;
  EXPECT_GT(store_->fsck(false, &rep), 0);
  ASSERT_FALSE(rep.problems.empty());
  EXPECT_NE(rep.problems[0].find("stale"), std::string::npos) << rep.problems[0];
  EXPECT_NE(rep.problems[0].find("extent shard 2"), std::string::npos) << rep.problems[0];
  ASSERT_EQ(store_->umount(), 0);  // left damaged: no fsck at teardown
}

}  // namespace

namespace {
class InlineOnlyTest : public ExtentShardsTest {
 protected:
  Config config() override {
    Config c = hybridstore::test::small_store_config();
    std::string err;
    EXPECT_EQ(c.set("hybridstore_extent_map_inline_max", inline_max_, &err), 0) << err;
    return c;
  }
  std::string inline_max_ = "0";
};
}  // namespace

TEST_F(InlineOnlyTest, AtZeroMapsStayInTheOnodeAndShardedOnesStillReadAndShrink) {
  const ObjectId a = obj("a"), b = obj("b");
  std::string ma = write_big(a, {8192});
  FsckReport rep = fsck_report();
  EXPECT_EQ(rep.extent_shards, 0u);
  EXPECT_LT(rep.extents, kObject / kShard) << "not cut at shard boundaries";
  // The same store with shards on: b is sharded, a is not until written.
  inline_max_ = "1K";
  remount();
  std::string mb = write_big(b, {4096});
  EXPECT_EQ(fsck_report().extent_shards, kObject / kShard);
  {
    Transaction t;
    t.write(coll_, a, 2 * kShard, pattern(4096, 40));
    apply(std::move(t));
    ma.replace(2 * kShard, 4096, pattern(4096, 40));
  }
  EXPECT_GT(fsck_report().extent_shards, kObject / kShard);
  // And off again: a sharded onode reads, and goes inline when written.
  inline_max_ = "0";
  remount();
  EXPECT_EQ(read_all(coll_, a), ma);
  EXPECT_EQ(read_all(coll_, b), mb);
  {
    Transaction t;
    t.write(coll_, a, 0, pattern(4096, 41));
    t.write(coll_, b, 0, pattern(4096, 42));
    apply(std::move(t));
    ma.replace(0, 4096, pattern(4096, 41));
    mb.replace(0, 4096, pattern(4096, 42));
  }
  rep = fsck_report(true);
  EXPECT_EQ(rep.errors, 0u);
  EXPECT_EQ(rep.extent_shards, 0u);
  remount();
  EXPECT_EQ(read_all(coll_, a), ma);
  EXPECT_EQ(read_all(coll_, b), mb);
}
