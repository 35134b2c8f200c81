// Format 7 (hybridstore_small_write_journal=on, docs/small-writes.md step 6):
// every onode record carries the object's incarnation and version. A
// transaction raises the version of each object it changes by exactly one;
// an object made (created, cloned to, renamed to, made again after a
// remove) gets a fresh incarnation from a store-wide counter that no crash
// or remount hands out twice. A store of an older format reaches 7 at a
// read-write mount with the option and keeps its objects; a format-7 store
// mounted with the default stays 7 and goes on writing versions.
#include <gtest/gtest.h>

#include <rocksdb/db.h>

#include <filesystem>
#include <set>

#include "hscommon/encoding.h"
#include "hybridstore/format/onode.h"
#include "hybridstore/format/store_format.h"
#include "hybridstore/kv/kv_schema.h"
#include "store_helpers.h"

using namespace hybridstore;
using namespace hybridstore::test;

namespace {

struct Stored {
  uint64_t incarnation = 0;
  uint64_t version = 0;
};

class OnodeVersionsTest : public StoreTest {
 protected:
  Config config() override {
    Config c = small_store_config();
    std::string err;
    // RocksDB in <store>/db, so the test reads the records as they are.
    EXPECT_EQ(c.set("hybridstore_kv_location", "directory", &err), 0) << err;
    EXPECT_EQ(c.set("hybridstore_small_write_journal", mode_, &err), 0) << err;
    return c;
  }
  std::string path() const { return dir_->path() + "/store"; }

  // The onode records of `names` in coll_, read from RocksDB with the store
  // unmounted (the store is mounted again afterwards).
  std::map<std::string, Stored> stored(const std::vector<std::string>& names) {
    EXPECT_EQ(store_->umount(), 0);
    std::map<std::string, Stored> out;
    {
      rocksdb::Options o;
      o.merge_operator = kv::make_merge_operator();
      rocksdb::DB* raw = nullptr;
      rocksdb::Status s = rocksdb::DB::OpenForReadOnly(o, path() + "/db", &raw);
      EXPECT_TRUE(s.ok()) << s.ToString();
      std::unique_ptr<rocksdb::DB> db(raw);
      for (const auto& n : names) {
        std::string v;
        if (!db || !db->Get(rocksdb::ReadOptions(), kv::onode_key(coll_, obj(n)), &v).ok()) continue;
        Onode on;
        std::vector<ShardRef> refs;
        std::string why;
        EXPECT_TRUE(decode_onode(v, &on, &why, kMaxTiers, &refs)) << n << ": " << why;
        out[n] = Stored{on.incarnation, on.version};
      }
    }
    store_ = std::make_unique<HybridStore>(path(), config());
    std::string err;
    EXPECT_EQ(store_->mount(&err), 0) << err;
    return out;
  }
  uint32_t format() {
    StoreStats st;
    EXPECT_EQ(store_->statfs(&st), 0);
    return st.format_version;
  }

  std::string mode_ = "on";
};

TEST_F(OnodeVersionsTest, EachTransactionRaisesTheVersionOnceAndEachNewLifeHasItsOwnIncarnation) {
  make_coll(coll_);
  EXPECT_EQ(format(), kFormatOnodeVersions);
  {
    Transaction t;
    t.write(coll_, obj("a"), 0, std::string(8192, 'a'));
    apply(std::move(t));
  }
  {
    Transaction t;  // an overwrite in place: the ring's path
    t.write(coll_, obj("a"), 4096, std::string(4096, 'b'));
    apply(std::move(t));
  }
  {
    Transaction t;  // several ops on one object: one version
    t.setattr(coll_, obj("a"), "_", "x");
    t.write(coll_, obj("a"), 0, std::string(4096, 'c'));
    t.omap_setkeys(coll_, obj("a"), {{"k", "v"}});
    apply(std::move(t));
  }
  {
    Transaction t;
    t.clone(coll_, obj("a"), obj("b"));
    t.touch(coll_, obj("c"));
    apply(std::move(t));
  }
  auto s = stored({"a", "b", "c"});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s["a"].version, 3u);
  EXPECT_EQ(s["b"].version, 1u);
  EXPECT_EQ(s["c"].version, 1u);
  std::set<uint64_t> lives{s["a"].incarnation, s["b"].incarnation, s["c"].incarnation};
  EXPECT_EQ(lives.size(), 3u) << "every object made has an incarnation of its own";
  EXPECT_EQ(lives.count(0), 0u);

  // Made again under the same name: a new life, counted from 1. Renamed:
  // the object under its new name is a new life too.
  {
    Transaction t;
    t.remove(coll_, obj("b"));
    apply(std::move(t));
  }
  {
    Transaction t;
    t.touch(coll_, obj("b"));
    apply(std::move(t));
  }
  {
    Transaction t;
    t.collection_move_rename(coll_, obj("c"), coll_, obj("d"));
    apply(std::move(t));
  }
  // The same object removed and made again within one transaction.
  {
    Transaction t;
    t.remove(coll_, obj("a"));
    t.write(coll_, obj("a"), 0, std::string(4096, 'e'));
    apply(std::move(t));
  }
  auto again = stored({"a", "b", "c", "d"});
  EXPECT_EQ(again.count("c"), 0u);
  ASSERT_EQ(again.size(), 3u);
  EXPECT_EQ(again["b"].version, 1u);
  EXPECT_EQ(again["d"].version, 1u);
  EXPECT_EQ(again["a"].version, 1u);
  for (const char* n : {"a", "b", "d"}) EXPECT_EQ(lives.count(again[n].incarnation), 0u) << n << " reuses a life";
  std::set<uint64_t> now{again["a"].incarnation, again["b"].incarnation, again["d"].incarnation};
  EXPECT_EQ(now.size(), 3u);

  // The counter outlives mounts: what a remount hands out was never handed
  // out before, even though the earlier mounts' blocks were not used up.
  uint64_t highest = 0;
  for (uint64_t l : lives) highest = std::max(highest, l);
  for (uint64_t l : now) highest = std::max(highest, l);
  {
    Transaction t;
    t.touch(coll_, obj("e"));
    apply(std::move(t));
  }
  auto e = stored({"e"});
  EXPECT_GT(e["e"].incarnation, highest);
  EXPECT_EQ(read_all(coll_, obj("a")), std::string(4096, 'e'));
  EXPECT_EQ(fsck_errors(true), 0);
}

// The default (data) on a format-7 store: the store stays 7, and onodes go
// on carrying versions, which a later mount with `on` relies on.
TEST_F(OnodeVersionsTest, AFormat7StoreMountedWithTheDefaultStays7AndKeepsCounting) {
  make_coll(coll_);
  {
    Transaction t;
    t.write(coll_, obj("a"), 0, std::string(8192, 'a'));
    apply(std::move(t));
  }
  mode_ = "data";
  remount();
  EXPECT_EQ(format(), kFormatOnodeVersions);
  {
    Transaction t;
    t.write(coll_, obj("a"), 0, std::string(4096, 'b'));
    apply(std::move(t));
  }
  auto s = stored({"a"});
  EXPECT_EQ(s["a"].version, 2u);
  EXPECT_NE(s["a"].incarnation, 0u);
  EXPECT_EQ(fsck_errors(true), 0);
}

// A format-6 store (the default's) mounted with `on` is upgraded to 7:
// its objects keep their bytes and read as incarnation 0, version 0 until a
// transaction changes them; objects made afterwards get incarnations.
TEST_F(OnodeVersionsTest, AFormat6StoreMountedWithOnIsUpgradedTo7AndKeepsItsObjects) {
  // A store made with the default instead of the fixture's.
  ASSERT_EQ(store_->umount(), 0);
  store_.reset();
  std::filesystem::remove_all(path());
  mode_ = "data";
  make_store();
  make_coll(coll_);
  EXPECT_EQ(format(), kFormatSmallWriteJournal);
  {
    Transaction t;
    t.write(coll_, obj("old"), 0, std::string(8192, 'o'));
    t.write(coll_, obj("kept"), 0, std::string(4096, 'k'));
    apply(std::move(t));
  }
  auto before = stored({"old", "kept"});
  EXPECT_EQ(before["old"].version, 0u);
  EXPECT_EQ(before["old"].incarnation, 0u);
  mode_ = "on";
  remount();
  EXPECT_EQ(format(), kFormatOnodeVersions);
  {
    Transaction t;
    t.write(coll_, obj("old"), 4096, std::string(4096, 'p'));
    t.touch(coll_, obj("new"));
    apply(std::move(t));
  }
  auto after = stored({"old", "kept", "new"});
  EXPECT_EQ(after["kept"].version, 0u);
  EXPECT_EQ(after["old"].version, 1u);
  EXPECT_EQ(after["old"].incarnation, 0u);
  EXPECT_EQ(after["new"].version, 1u);
  EXPECT_NE(after["new"].incarnation, 0u);
  EXPECT_EQ(read_all(coll_, obj("old")), std::string(4096, 'o') + std::string(4096, 'p'));
  EXPECT_EQ(read_all(coll_, obj("kept")), std::string(4096, 'k'));
  EXPECT_EQ(fsck_errors(true), 0);
}

}  // namespace
