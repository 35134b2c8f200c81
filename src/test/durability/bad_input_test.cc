// Bad input the store must refuse with a clear error, without crashing and
// without changing what it holds: a corrupt superblock or label, corrupt
// records inside RocksDB, and transactions whose offsets overflow.
// (Devices, JSON files and options through hybridstore-tool: qa/short/bad_input.sh.)
#include <gtest/gtest.h>

#include <functional>

#include <rocksdb/db.h>

#include "crash_model.h"
#include "durability_helpers.h"
#include "hybridstore/format/store_format.h"
#include "hybridstore/kv/kv_schema.h"
#include "hybridstore/txn_json/txn_json.h"
#include "store_helpers.h"

using namespace hybridstore;
using namespace hybridstore::crashtest;

namespace {

class BadInputTest : public test::StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    make_coll(coll_);
    Transaction t;
    t.write(coll_, obj("a"), 0, test::random_bytes(rng_, 70000));
    t.setattr(coll_, obj("a"), "k", "v");
    t.omap_setkeys(coll_, obj("a"), {{"x", "1"}});
    t.write(coll_, obj("b"), 0, "bee");
    apply(std::move(t));
    std::string err;
    ASSERT_EQ(read_store_model(*store_, &before_, &err), 0) << err;
    ASSERT_EQ(store_->umount(), 0);
  }
  std::string store_path() { return dir_->path() + "/store"; }

  // Edits the store's RocksDB directly, as a bit rot or a bad tool would.
  void edit_db(const std::function<void(rocksdb::DB*)>& fn) {
    rocksdb::Options o;
    o.merge_operator = kv::make_merge_operator();
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(o, store_path() + "/db", &raw);
    ASSERT_TRUE(s.ok()) << s.ToString();
    std::unique_ptr<rocksdb::DB> db(raw);
    fn(db.get());
    ASSERT_TRUE(db->Close().ok());
  }
  std::string get(const std::string& key) {
    std::string v;
    edit_db([&](rocksdb::DB* db) { EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), key, &v).ok()) << key; });
    return v;
  }
  void put(const std::string& key, const std::string& v) {
    edit_db([&](rocksdb::DB* db) { ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), key, v).ok()); });
  }
  void del(const std::string& key) {
    edit_db([&](rocksdb::DB* db) { ASSERT_TRUE(db->Delete(rocksdb::WriteOptions(), key).ok()); });
  }
  // Mount must fail with a message containing `want`.
  void expect_mount_refused(const std::string& want) {
    HybridStore s(store_path(), config());
    std::string err;
    EXPECT_LT(s.mount(&err), 0);
    EXPECT_NE(err.find(want), std::string::npos) << "message: " << err;
    EXPECT_FALSE(s.is_mounted());
  }
  // The repaired store holds exactly what it held before, and fsck is clean.
  void expect_unchanged() {
    StoreModel now;
    store_ = test::recover_and_read(store_path(), config(), &now);
    ASSERT_TRUE(store_);
    EXPECT_EQ(diff_models(before_, now), "");
  }

  StoreModel before_;
};

}  // namespace

TEST_F(BadInputTest, CorruptSuperblockIsRefusedWithAClearErrorAndChangesNothing) {
  const std::string good = get(kv::superblock_key());
  ASSERT_GT(good.size(), 20u);
  // Flipped bytes anywhere in the record (version, length, body, checksum).
  for (size_t pos : {size_t(0), size_t(1), size_t(5), good.size() / 2, good.size() - 1}) {
    SCOPED_TRACE("byte " + std::to_string(pos));
    std::string bad = good;
    bad[pos] = static_cast<char>(bad[pos] ^ 0x40);
    put(kv::superblock_key(), bad);
    expect_mount_refused("superblock");
  }
  put(kv::superblock_key(), good.substr(0, good.size() / 2));
  expect_mount_refused("superblock");
  put(kv::superblock_key(), "");
  expect_mount_refused("superblock");
  // A well-formed superblock from a newer format than this build reads
  // (the next one's ring may hold onode deltas: docs/small-writes.md 9).
  for (uint32_t format : {kFormatNewest + 1, kFormatNewest + 7}) {
    Superblock sb;
    std::string why;
    ASSERT_EQ(decode_superblock(good, &sb, &why), 0) << why;
    sb.format_version = format;
    put(kv::superblock_key(), encode_superblock(sb));
    expect_mount_refused("newer than this build supports");
  }
  // Gone altogether, or the creation never finished.
  del(kv::superblock_key());
  expect_mount_refused("no superblock");
  put(kv::superblock_key(), good);
  del(kv::mkfs_done_key());
  expect_mount_refused("never completely created");
  put(kv::mkfs_done_key(), "yes");
  expect_unchanged();
}

TEST_F(BadInputTest, SuperblockOfAnotherStoreIsRefusedByTheLabels) {
  const std::string good = get(kv::superblock_key());
  Superblock sb;
  std::string why;
  ASSERT_EQ(decode_superblock(good, &sb, &why), 0) << why;
  sb.fsid = generate_uuid();
  put(kv::superblock_key(), encode_superblock(sb));
  expect_mount_refused("belongs to store");
  put(kv::superblock_key(), good);
  expect_unchanged();
}

TEST_F(BadInputTest, EverySingleBitFlipInALabelIsRejected) {
  DeviceLabel l;
  l.fsid = generate_uuid();
  l.role = Tier::kHdd;
  l.size = 1ull << 40;
  l.created_us = 123456789;
  l.description = "hybridstore hdd";
  std::string good;
  ASSERT_EQ(encode_label(l, &good), 0);
  // The significant bytes: magic, length and the sealed record.
  size_t used = good.find_last_not_of('\0') + 1;
  int rejected = 0;
  for (size_t i = 0; i < used; ++i)
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      DeviceLabel out;
      std::string why;
      if (decode_label(bad, &out, &why) < 0) {
        ++rejected;
        EXPECT_FALSE(why.empty());
      } else {
        ADD_FAILURE() << "a flip of bit " << bit << " of byte " << i << " decoded as a label";
      }
    }
  EXPECT_EQ(rejected, static_cast<int>(used * 8));
  for (size_t n : {size_t(0), size_t(10), size_t(21), size_t(40), used - 1}) {
    DeviceLabel out;
    std::string why;
    EXPECT_LT(decode_label(std::string_view(good).substr(0, n), &out, &why), 0) << "truncated to " << n;
  }
}

TEST_F(BadInputTest, CorruptOnodeReadsAsEioIsNamedByFsckAndIsNeverTakenForAbsent) {
  const std::string key = kv::onode_key(coll_, obj("a"));
  const std::string good = get(key);
  std::string bad = good;
  bad[bad.size() / 2] = static_cast<char>(bad[bad.size() / 2] ^ 1);
  put(key, bad);
  std::string err;
  store_ = std::make_unique<HybridStore>(store_path(), config());
  ASSERT_EQ(store_->mount(&err), 0) << err;
  std::string out;
  EXPECT_EQ(store_->read(coll_, obj("a"), 0, 0, &out), -EIO);
  EXPECT_EQ(read_all(coll_, obj("b")), "bee") << "the other objects are fine";
  // A write must not silently replace the unreadable object with a new one.
  Transaction t;
  t.write(coll_, obj("a"), 0, "overwrite");
  EXPECT_EQ(try_apply(std::move(t)), -EIO);
  FsckReport rep;
  EXPECT_GT(store_->fsck(false, &rep), 0);
  ASSERT_FALSE(rep.problems.empty());
  EXPECT_NE(rep.problems[0].find(obj("a").to_string()), std::string::npos) << rep.problems[0];
  ASSERT_EQ(store_->umount(), 0);
  store_.reset();
  put(key, good);
  expect_unchanged();
}

TEST_F(BadInputTest, CorruptCollectionRecordOrNidRecordRefusesMount) {
  const std::string ckey = kv::collection_key(coll_);
  const std::string cgood = get(ckey);
  put(ckey, cgood.substr(0, cgood.size() - 1));
  expect_mount_refused("corrupt collection record");
  put(ckey, cgood);
  const std::string ngood = get(kv::nid_max_key());
  put(kv::nid_max_key(), "short");
  expect_mount_refused("nid_max");
  put(kv::nid_max_key(), ngood);
  expect_unchanged();
}

TEST_F(BadInputTest, OffsetsThatOverflowAreRefusedAndChangeNothing) {
  std::string err;
  store_ = std::make_unique<HybridStore>(store_path(), config());
  ASSERT_EQ(store_->mount(&err), 0) << err;
  const uint64_t huge = UINT64_MAX;
  std::vector<std::pair<std::string, Transaction>> cases;
  {
    Transaction t;
    t.write(coll_, obj("a"), huge, "xy");
    cases.emplace_back("write", std::move(t));
  }
  {
    Transaction t;
    t.zero(coll_, obj("a"), huge, 2);
    cases.emplace_back("zero", std::move(t));
  }
  {
    Transaction t;
    t.truncate(coll_, obj("a"), huge);
    cases.emplace_back("truncate", std::move(t));
  }
  {
    Transaction t;  // the destination end wraps around to 1
    t.clone_range(coll_, obj("a"), obj("c"), 0, 2, huge);
    cases.emplace_back("clone_range to a wrapping offset", std::move(t));
  }
  {
    Transaction t;
    t.clone_range(coll_, obj("a"), obj("c"), huge, 2, 0);
    cases.emplace_back("clone_range from a wrapping offset", std::move(t));
  }
  for (auto& [what, t] : cases) {
    TxnError e;
    int r = store_->queue_transaction(std::move(t), &e);
    EXPECT_TRUE(r == -E2BIG || r == -EINVAL) << what << ": " << r;
    EXPECT_NE(e.message.find("~"), std::string::npos) << what << ": the message names the range: " << e.message;
  }
  StoreModel now;
  ASSERT_EQ(read_store_model(*store_, &now, &err), 0) << err;
  EXPECT_EQ(diff_models(before_, now), "");
  EXPECT_EQ(fsck_errors(true), 0);
}

TEST(BadJsonTest, ARejectedTransactionFileYieldsNoTransactions) {
  // Found by fuzz_txn_json: a bad second transaction left the first in the
  // output, which a caller could have applied as half of the file.
  const char* files[] = {
      R"([{"ops": [{"op": "nop"}]}, {"ops": [], "extra": 1}])",
      R"([{"ops": [{"op": "nop"}]}, [1]])",
      R"([{"ops": [{"op": "nop"}]}, {"ops": [{"op": "nope"}]}])",
  };
  for (const char* f : files) {
    std::vector<Transaction> out;
    std::string err;
    EXPECT_EQ(parse_json_transactions(f, "", &out, &err), -EINVAL) << f;
    EXPECT_TRUE(out.empty()) << f;
    EXPECT_NE(err.find("transaction 1"), std::string::npos) << err;
  }
}
