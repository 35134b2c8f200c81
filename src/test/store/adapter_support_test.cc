// What the Ceph adapter needs from the engine, tested without Ceph: the
// OSD's fsid at mkfs, per-collection commit notification, reads that leave
// heat alone, queries before mount, fsck of an unmounted store, statistics
// of omap and metadata, maintenance calls and the log sink.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "hscommon/log.h"
#include "hybridstore/kv/kv_schema.h"
#include "hybridstore/tier/heat_tracker.h"
#include "hybridstore/store/test_hooks.h"
#include "store_helpers.h"

namespace hybridstore::test {
namespace {

class AdapterSupport : public StoreTest {};

TEST_F(AdapterSupport, MkfsTakesTheFsidItIsGiven) {
  const std::string osd_uuid = "0d6cdbf6-7a4c-4b40-8e7b-6f3c1d1f2a90";
  store_ = std::make_unique<HybridStore>(dir_->path(), config());
  EXPECT_EQ(store_->set_fsid("not-a-uuid"), -EINVAL);
  EXPECT_EQ(store_->set_fsid("00000000-0000-0000-0000-000000000000"), -EINVAL);
  ASSERT_EQ(store_->set_fsid(osd_uuid), 0);
  std::string err;
  ASSERT_EQ(store_->mkfs(&err), 0) << err;
  EXPECT_EQ(store_->fsid(), osd_uuid);  // before mount too: the OSD checks it after mkfs
  ASSERT_EQ(store_->mount(&err), 0) << err;
  EXPECT_EQ(store_->fsid(), osd_uuid);
  store_->umount();
  // A second mkfs with another fsid leaves the store as it is.
  store_ = std::make_unique<HybridStore>(dir_->path(), config());
  ASSERT_EQ(store_->set_fsid("1e7b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"), 0);
  ASSERT_EQ(store_->mkfs(&err), 0) << err;
  ASSERT_EQ(store_->mount(&err), 0) << err;
  EXPECT_EQ(store_->fsid(), osd_uuid);
}

TEST_F(AdapterSupport, MkfsWithoutAnFsidGeneratesOne) {
  make_store();
  EXPECT_EQ(store_->fsid().size(), 36u);
  EXPECT_NE(store_->fsid(), "00000000-0000-0000-0000-000000000000");
}

TEST_F(AdapterSupport, FlushCommitIsTrueWhenIdleAndCallsBackAfterOnCommitOtherwise) {
  make_store();
  make_coll(coll_);
  ASSERT_EQ(store_->flush(), 0);
  EXPECT_TRUE(store_->flush_commit(coll_, [] { FAIL() << "called although idle"; }));

  std::mutex m;
  std::condition_variable cv;
  std::vector<std::string> order;
  bool done = false;
  Transaction t;
  t.write(coll_, obj("a"), 0, std::string(4096, 'a'));
  t.register_on_commit([&] {
    std::lock_guard<std::mutex> l(m);
    order.push_back("on_commit");
  });
  ASSERT_EQ(store_->queue_transaction(std::move(t)), 0);
  bool idle = store_->flush_commit(coll_, [&] {
    std::lock_guard<std::mutex> l(m);
    order.push_back("flush_commit");
    done = true;
    cv.notify_all();
  });
  if (!idle) {
    std::unique_lock<std::mutex> l(m);
    ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(60), [&] { return done; }));
    EXPECT_EQ(order, (std::vector<std::string>{"on_commit", "flush_commit"}));
  } else {
    // Committed before flush_commit looked: then it must not call back.
    ASSERT_EQ(store_->flush(), 0);
    EXPECT_FALSE(done);
  }
  // Another collection with nothing queued is idle meanwhile.
  EXPECT_TRUE(store_->flush_commit(CollectionId("9.0_head"), [] {}));
}

TEST_F(AdapterSupport, ReadsFlaggedNoHeatLeaveTheObjectsHeatAlone) {
  make_store();
  make_coll(coll_);
  Transaction t;
  t.write(coll_, obj("cold"), 0, std::string(8192, 'c'));
  apply(std::move(t));
  const std::string key = kv::onode_key(coll_, obj("cold"));
  HeatSample before;
  ASSERT_TRUE(StoreTestHooks::heat(*store_, key, &before));
  std::string out;
  for (int i = 0; i < 20; ++i) ASSERT_EQ(store_->read(coll_, obj("cold"), 0, 8192, &out, kReadNoHeat), 8192);
  HeatSample after;
  ASSERT_TRUE(StoreTestHooks::heat(*store_, key, &after));
  EXPECT_DOUBLE_EQ(after.frequency, before.frequency);
  // A client read does count.
  ASSERT_EQ(store_->read(coll_, obj("cold"), 0, 8192, &out), 8192);
  ASSERT_TRUE(StoreTestHooks::heat(*store_, key, &after));
  EXPECT_GT(after.frequency, before.frequency);
}

TEST_F(AdapterSupport, ProbeAnswersBeforeMkfsBeforeMountAndWhileMounted) {
  StoreProbe p;
  std::string err;
  EXPECT_EQ(HybridStore::probe(dir_->path() + "/nothing-here", config(), &p, &err), -ENOENT);
  EXPECT_FALSE(p.exists);
  const uint64_t unit_before_mkfs = p.min_alloc_size;
  EXPECT_GT(unit_before_mkfs, 0u);

  const std::string path = dir_->path() + "/store";  // where the fixture made it
  const std::string fsid = store_->fsid();
  ASSERT_EQ(HybridStore::probe(path, config(), &p, &err), 0) << err;
  EXPECT_TRUE(p.exists);
  EXPECT_EQ(p.fsid, fsid);
  // Our own mount holds the lock another process would find.
  EXPECT_TRUE(p.in_use);
  EXPECT_EQ(p.min_alloc_size, unit_before_mkfs);
  EXPECT_EQ(p.tiers, 2);
  for (int t = 0; t < p.tiers; ++t) {
    EXPECT_TRUE(p.tier[t].exists) << t;
    EXPECT_FALSE(p.tier[t].is_block) << t;
    EXPECT_EQ(p.tier[t].kind, "file") << t;
    EXPECT_GT(p.tier[t].size, 0u) << t;
  }
  store_->umount();
  ASSERT_EQ(HybridStore::probe(path, config(), &p, &err), 0) << err;
  EXPECT_FALSE(p.in_use);
  EXPECT_EQ(p.fsid, fsid);
}

TEST_F(AdapterSupport, FsckOfAnUnmountedStoreMountsAndUnmountsItself) {
  make_store();
  make_coll(coll_);
  Transaction t;
  t.write(coll_, obj("x"), 0, std::string(10000, 'x'));
  apply(std::move(t));
  store_->umount();
  FsckReport rep;
  EXPECT_EQ(store_->fsck(true, &rep), 0);
  EXPECT_EQ(rep.objects, 1u);
  EXPECT_GT(rep.bytes_verified, 0u);
  EXPECT_FALSE(store_->is_mounted());
  std::string err;
  ASSERT_EQ(store_->mount(&err), 0) << err;
}

TEST_F(AdapterSupport, StatfsCountsOmapAndMetadataAndMaintenanceCallsWork) {
  make_store();
  make_coll(coll_);
  std::map<std::string, std::string> kv;
  for (int i = 0; i < 2000; ++i) kv["key" + std::to_string(i)] = std::string(200, 'v');
  Transaction t;
  t.touch(coll_, obj("o"));
  t.omap_setkeys(coll_, obj("o"), kv);
  apply(std::move(t));
  ASSERT_EQ(store_->flush(), 0);
  ASSERT_EQ(store_->compact(), 0);
  StoreStats st;
  ASSERT_EQ(store_->statfs(&st), 0);
  EXPECT_GT(st.omap_bytes, 100000u);
  EXPECT_GT(st.metadata_bytes, 0u);
  EXPECT_FALSE(st.read_only);
  EXPECT_NE(store_->kv_statistics().find("Compaction"), std::string::npos);
  store_->drop_caches();
  std::string v;
  std::map<std::string, std::string> got;
  std::string header;
  ASSERT_EQ(store_->omap_get(coll_, obj("o"), &header, &got), 0);
  EXPECT_EQ(got.size(), 2000u);
}

// The block cache is sized by its option, and its capacity and use are in
// the statistics the adapter dumps.
class BlockCacheSize : public StoreTest {
 protected:
  Config config() override {
    Config c = small_store_config();
    std::string err;
    EXPECT_EQ(c.set("hybridstore_kv_block_cache_size", "48M", &err), 0) << err;
    return c;
  }
};

TEST_F(BlockCacheSize, TheOptionSizesRocksDBsBlockCache) {
  make_store();
  const std::string stats = store_->kv_statistics();
  EXPECT_NE(stats.find("Block cache: capacity 50331648 bytes, usage "), std::string::npos) << stats;
  Config bad = small_store_config();
  std::string err;
  EXPECT_NE(bad.set("hybridstore_kv_block_cache_size", "512K", &err), 0);
  EXPECT_NE(bad.set("hybridstore_kv_block_cache_size", "lots", &err), 0);
}

TEST_F(AdapterSupport, AListingStoppedByItsEndNamesTheNextObjectAndAnExhaustedOneMax) {
  make_coll(coll_);
  std::vector<ObjectId> objs;
  Transaction t;
  for (int i = 0; i < 5; ++i) {
    objs.push_back(obj("o" + std::to_string(i)));
    t.touch(coll_, objs.back());
  }
  apply(std::move(t));
  std::sort(objs.begin(), objs.end());
  std::vector<ObjectId> out;
  ObjectId next;
  ASSERT_EQ(store_->collection_list(coll_, objs[0], objs[3], 100, &out, &next), 0);
  EXPECT_EQ(out, std::vector<ObjectId>(objs.begin(), objs.begin() + 3));
  EXPECT_EQ(next, objs[3]);
  // An end that is not an object: *next is the first object after it.
  ObjectId between = objs[2];
  between.name.clear();  // same hash as objs[2], sorts just before it
  ASSERT_LT(objs[1], between);
  out.clear();
  ASSERT_EQ(store_->collection_list(coll_, objs[0], between, 100, &out, &next), 0);
  EXPECT_EQ(out, std::vector<ObjectId>(objs.begin(), objs.begin() + 2));
  EXPECT_EQ(next, objs[2]);
  out.clear();
  ASSERT_EQ(store_->collection_list(coll_, objs[3], ObjectId::make_max(), 100, &out, &next), 0);
  EXPECT_EQ(out.size(), 2u);
  EXPECT_TRUE(next.max);
  // An end past the last object: nothing remains, so max.
  out.clear();
  ObjectId past = objs[4];
  past.name += "~";
  ASSERT_EQ(store_->collection_list(coll_, objs[0], past, 100, &out, &next), 0);
  EXPECT_EQ(out.size(), 5u);
  EXPECT_TRUE(next.max);
}

// ceph-osd runs the engine on Ceph's RocksDB 6.8 and hybridstore-tool on
// Debian's 7.x: every table file must use a checksum and format both read.
TEST_F(AdapterSupport, TableFilesAreReadableByCephsRocksDB) {
  make_coll(coll_);
  for (int i = 0; i < 200; ++i) {
    Transaction t;
    t.write(coll_, obj("t" + std::to_string(i)), 0, std::string(4096, static_cast<char>(i)));
    t.omap_setkeys(coll_, obj("t" + std::to_string(i)), {{"k", std::string(100, 'v')}});
    apply(std::move(t));
  }
  ASSERT_EQ(store_->compact(), 0);
  store_->umount();
  int tables = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_->path() + "/store/db")) {
    if (e.path().extension() != ".sst") continue;
    // The footer of format versions 1 to 5: checksum type (1 byte), two
    // block handles padded to 40 bytes, format version (4), magic (8).
    std::ifstream in(e.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_GE(bytes.size(), 53u) << e.path();
    const std::string footer = bytes.substr(bytes.size() - 53);
    EXPECT_EQ(static_cast<uint8_t>(footer[0]), 1u) << e.path() << ": checksum type is not crc32c";
    uint32_t version = 0;
    for (int b = 3; b >= 0; --b) version = (version << 8) | static_cast<uint8_t>(footer[41 + b]);
    EXPECT_EQ(version, 4u) << e.path();
    ++tables;
  }
  EXPECT_GT(tables, 0);
}

TEST(LogSink, LinesGoToTheSinkWhileOneIsSet) {
  std::vector<std::string> lines;
  set_log_sink([&](LogLevel, const std::string& msg) { lines.push_back(msg); });
  HS_ERROR("sink test {}", 42);
  set_log_sink(nullptr);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "sink test 42");
}

}  // namespace
}  // namespace hybridstore::test
