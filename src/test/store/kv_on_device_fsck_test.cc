// fsck's rows of docs/kvfs.md section 6 that set the KV file system against
// RocksDB, on a store whose RocksDB is on its SSD: the kvfs's files against
// RocksDB's (a missing one is an error, an orphan a warning that repair
// deletes), the commit journal's ring against RocksDB's journal number,
// and the deep rows (every file read, RocksDB's checksums). The damage is
// done behind the store's back through StoreTestHooks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "hscommon/encoding.h"
#include "hsio/block_device.h"
#include "hybridstore/format/store_format.h"
#include "hybridstore/kv/commit_journal.h"
#include "hybridstore/store/test_hooks.h"
#include "store_helpers.h"

using namespace hybridstore;
using namespace hybridstore::test;

namespace {

class KvOnDeviceFsckTest : public StoreTest {
 protected:
  Config config() override {
    Config c = small_store_config();
    std::string err;
    EXPECT_EQ(c.set("hybridstore_kv_location", "device", &err), 0) << err;
    // Only the test's own compaction: an automatic one would take a table
    // the test damaged out of the live set (RocksDB still reads a table
    // unlinked under it) or stop the store on the byte it flipped.
    EXPECT_EQ(c.set("hybridstore_rocksdb_options",
                    c.get_str("hybridstore_rocksdb_options") + ";disable_auto_compactions=true", &err),
              0)
        << err;
    return c;
  }

  // Enough objects that a compaction leaves RocksDB a table of several
  // blocks.
  void fill(int n) {
    make_coll(coll_);
    for (int i = 0; i < n; ++i) {
      Transaction t;
      const ObjectId o = obj("o" + std::to_string(i));
      t.write(coll_, o, 0, std::string(4096, static_cast<char>('a' + i % 26)));
      t.omap_setkeys(coll_, o, {{"key-" + std::to_string(i), std::string(200, 'v')}});
      apply(std::move(t));
    }
    ASSERT_EQ(store_->flush(), 0);
    ASSERT_EQ(store_->compact(), 0);
  }

  std::vector<std::string> names(const std::string& dir = "db") {
    std::vector<std::string> v;
    EXPECT_EQ(StoreTestHooks::kvfs_list(*store_, dir, &v), 0);
    return v;
  }

  // The largest table in the kvfs: after a compaction, a live one.
  std::string largest_table() {
    std::string best;
    uint64_t best_len = 0;
    for (const std::string& n : names()) {
      if (n.size() < 4 || n.substr(n.size() - 4) != ".sst") continue;
      std::vector<Interval> ex;
      if (StoreTestHooks::kvfs_extents(*store_, "db", n, &ex) != 0) continue;
      uint64_t len = 0;
      for (const Interval& e : ex) len += e.length;
      if (len > best_len) best = n, best_len = len;
    }
    return best;
  }

  FsckReport fsck(bool deep) {
    FsckReport rep;
    last_result_ = store_->fsck(deep, &rep);
    return rep;
  }

  static bool mentions(const FsckReport& rep, const std::string& what) {
    return std::any_of(rep.problems.begin(), rep.problems.end(),
                       [&](const std::string& p) { return p.find(what) != std::string::npos; });
  }

  static std::string all(const FsckReport& rep) {
    std::string s;
    for (const std::string& p : rep.problems) s += p + "\n";
    return s;
  }

  // The store is left damaged: unmounted here, so TearDown's fsck does not
  // meet it.
  void drop_store() {
    EXPECT_EQ(store_->umount(), 0);
    store_.reset();
  }

  int last_result_ = 0;
};

}  // namespace

TEST_F(KvOnDeviceFsckTest, ACleanStoreIsCleanShallowAndDeepAndCountsItsRing) {
  fill(300);
  for (bool deep : {false, true}) {
    FsckReport rep = fsck(deep);
    EXPECT_EQ(last_result_, 0) << all(rep);
    EXPECT_EQ(rep.errors, 0u) << all(rep);
    EXPECT_EQ(rep.warnings, 0u) << all(rep);
    EXPECT_EQ(rep.kvfs_orphans, 0u);
    // Every transaction went through the ring.
    EXPECT_GT(rep.kvfs_ring_records, 0u);
    EXPECT_GE(rep.kvfs_ring_seq, 300u);
    if (deep) {
      EXPECT_GT(rep.bytes_verified, 0u);
    }
  }
  remount();
  FsckReport rep = fsck(true);
  EXPECT_EQ(rep.errors + rep.warnings, 0u) << all(rep);
}

TEST_F(KvOnDeviceFsckTest, AnOrphanIsAWarningAndRepairDeletesIt) {
  fill(50);
  ASSERT_EQ(StoreTestHooks::kvfs_write(*store_, "db", "stray-file", std::string(10000, 'x')), 0);
  FsckReport rep = fsck(false);
  EXPECT_EQ(last_result_, 0) << all(rep);
  EXPECT_EQ(rep.errors, 0u) << all(rep);
  EXPECT_EQ(rep.warnings, 1u) << all(rep);
  EXPECT_EQ(rep.kvfs_orphans, 1u);
  EXPECT_TRUE(mentions(rep, "db/stray-file (10000 bytes) is no file RocksDB uses")) << all(rep);

  ASSERT_EQ(store_->umount(), 0);
  store_ = std::make_unique<HybridStore>(dir_->path() + "/store", config());
  std::string err;
  std::vector<std::string> dropped, changes;
  ASSERT_EQ(store_->mount_for_repair(&err, &dropped), 0) << err;
  FsckReport found;
  EXPECT_EQ(store_->repair(&found, &changes), 1);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_NE(changes[0].find("deleted orphan kvfs file db/stray-file"), std::string::npos) << changes[0];
  remount();
  const std::vector<std::string> left = names();
  EXPECT_EQ(std::count(left.begin(), left.end(), "stray-file"), 0);
  rep = fsck(true);
  EXPECT_EQ(rep.errors + rep.warnings, 0u) << all(rep);
  EXPECT_EQ(rep.kvfs_orphans, 0u);
}

TEST_F(KvOnDeviceFsckTest, ALiveTableMissingFromTheKvfsIsAnErrorNamingIt) {
  fill(300);
  const std::string table = largest_table();
  ASSERT_FALSE(table.empty());
  ASSERT_EQ(StoreTestHooks::kvfs_unlink(*store_, "db", table), 0);
  FsckReport rep = fsck(false);
  EXPECT_GE(last_result_, 1);
  EXPECT_EQ(rep.errors, 1u) << all(rep);
  EXPECT_TRUE(mentions(rep, "live table db/" + table + " is missing from the KV file system")) << all(rep);
  drop_store();
}

TEST_F(KvOnDeviceFsckTest, AFlippedByteInALiveTableIsADeepErrorNamingIt) {
  fill(300);
  const std::string table = largest_table();
  ASSERT_FALSE(table.empty());
  std::vector<Interval> ex;
  ASSERT_EQ(StoreTestHooks::kvfs_extents(*store_, "db", table, &ex), 0);
  ASSERT_FALSE(ex.empty());
  // Inside the table's first data block, which RocksDB checksums.
  BlockDevice* dev = StoreTestHooks::device(*store_, Tier::kSsd);
  AlignedBuffer block(4096);
  ASSERT_EQ(dev->read(ex[0].offset, block.data(), 4096), 0);
  block.data()[100] ^= 0x40;
  ASSERT_EQ(dev->write(ex[0].offset, block.data(), 4096), 0);
  ASSERT_EQ(dev->flush(), 0);

  FsckReport shallow = fsck(false);
  EXPECT_EQ(shallow.errors + shallow.warnings, 0u) << all(shallow);
  FsckReport deep = fsck(true);
  EXPECT_GE(last_result_, 1);
  EXPECT_EQ(deep.errors, 1u) << all(deep);
  EXPECT_TRUE(mentions(deep, "RocksDB table db/" + table + " fails verification")) << all(deep);
  drop_store();
}

// fsck reads the ring as a mount does, walking from the tail RocksDB
// keeps: a record of this store off the walk (client bytes a later lap
// left) is no record, and one where the walk ends, numbered next but past
// everything RocksDB holds, is an error.
TEST_F(KvOnDeviceFsckTest, RingRecordsOnTheWalkAboveRocksDBsNumberAreAnError) {
  fill(20);
  FsckReport before = fsck(false);
  ASSERT_EQ(before.errors, 0u) << all(before);
  ASSERT_GT(before.kvfs_ring_records, 0u);
  std::vector<Interval> ring;
  ASSERT_EQ(StoreTestHooks::kvfs_ring(*store_, &ring), 0);
  ASSERT_FALSE(ring.empty());
  auto device_offset = [&](uint64_t pos) {
    for (const Interval& i : ring) {
      if (pos < i.length) return i.offset + pos;
      pos -= i.length;
    }
    ADD_FAILURE() << "position past the ring";
    return uint64_t{0};
  };
  Uuid fsid;
  ASSERT_TRUE(parse_uuid(store_->fsid(), &fsid));
  BlockDevice* dev = StoreTestHooks::device(*store_, Tier::kSsd);
  auto put_record = [&](uint64_t pos, uint64_t seq) {
    const std::string rec = encode_journal_record(fsid, std::vector<JournalEntry>{{seq, std::string()}});
    ASSERT_EQ(rec.size(), 4096u);
    AlignedBuffer block(4096);
    memcpy(block.data(), rec.data(), rec.size());
    ASSERT_EQ(dev->write(device_offset(pos), block.data(), 4096), 0);
    ASSERT_EQ(dev->flush(), 0);
  };
  // Off the walk: the ring's last block (a few transactions never reach it).
  uint64_t ring_size = 0;
  for (const Interval& i : ring) ring_size += i.length;
  ASSERT_GT(ring_size - 4096, before.kvfs_ring_walk_end);
  put_record(ring_size - 4096, before.kvfs_ring_seq + 1);
  FsckReport off = fsck(false);
  EXPECT_EQ(off.errors, 0u) << all(off);
  EXPECT_EQ(off.kvfs_ring_seq, before.kvfs_ring_seq);
  EXPECT_EQ(off.kvfs_ring_records, before.kvfs_ring_records);
  // Where the walk ends, numbered next.
  put_record(before.kvfs_ring_walk_end, before.kvfs_ring_seq + 1);
  FsckReport on = fsck(false);
  EXPECT_EQ(on.errors, 1u) << all(on);
  EXPECT_EQ(on.kvfs_ring_seq, before.kvfs_ring_seq + 1);
  EXPECT_EQ(on.kvfs_ring_records, before.kvfs_ring_records + 1);
  EXPECT_TRUE(mentions(on, "ring holds number " + std::to_string(before.kvfs_ring_seq + 1))) << all(on);
  drop_store();
}

TEST_F(KvOnDeviceFsckTest, ADirectoryStoreHasNoKvfsRows) {
  store_.reset();
  dir_ = std::make_unique<TempDir>("store");
  store_ = std::make_unique<HybridStore>(dir_->path() + "/store", small_store_config());
  std::string err;
  ASSERT_EQ(store_->mkfs(&err), 0) << err;
  ASSERT_EQ(store_->mount(&err), 0) << err;
  std::vector<std::string> v;
  EXPECT_EQ(StoreTestHooks::kvfs_list(*store_, "db", &v), -ENOTSUP);
  FsckReport rep = fsck(true);
  EXPECT_EQ(rep.errors + rep.warnings, 0u) << all(rep);
  EXPECT_EQ(rep.kvfs_ring_records, 0u);
}
