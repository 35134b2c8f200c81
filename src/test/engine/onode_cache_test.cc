// The onode cache stays within its capacity whether entries come from
// transactions or from reads, and never evicts what RocksDB does not hold yet.
#include <gtest/gtest.h>

#include "hybridstore/kv/onode_cache.h"
#include "hybridstore/store/store_impl.h"
#include "store_helpers.h"

using namespace hybridstore;

namespace {

ObjectId oid(int i) { return ObjectId::from_name("o" + std::to_string(i), 1); }
const CollectionId kColl("1.0_head");

TEST(OnodeCache, EntriesCachedByReadsStayWithinCapacity) {
  OnodeCache cache(64);
  for (int i = 0; i < 1000; ++i) cache.put_clean(kColl, oid(i), std::make_shared<Onode>(), /*committed_seq=*/0);
  EXPECT_LE(cache.size(), 64u);
  // The most recent ones are the ones kept.
  OnodeRef out;
  EXPECT_EQ(cache.get(kColl, oid(999), &out), OnodeCache::Lookup::kHit);
  EXPECT_EQ(cache.get(kColl, oid(0), &out), OnodeCache::Lookup::kMiss);
}

TEST(OnodeCache, ReadsNeverEvictEntriesOfUncommittedTransactions) {
  OnodeCache cache(64);
  for (int i = 0; i < 10; ++i) cache.put_pending(kColl, oid(i), std::make_shared<Onode>(), /*seq=*/5);
  cache.put_pending(kColl, oid(10), nullptr, 5);  // removed, not yet durable
  for (int i = 100; i < 1100; ++i) cache.put_clean(kColl, oid(i), std::make_shared<Onode>(), /*committed_seq=*/4);
  OnodeRef out;
  for (int i = 0; i < 10; ++i) EXPECT_EQ(cache.get(kColl, oid(i), &out), OnodeCache::Lookup::kHit) << i;
  EXPECT_EQ(cache.get(kColl, oid(10), &out), OnodeCache::Lookup::kTombstone);
  EXPECT_LE(cache.size(), 64u + 11u);
  // Once committed they may go like any other.
  cache.trim(5);
  for (int i = 1100; i < 1200; ++i) cache.put_clean(kColl, oid(i), std::make_shared<Onode>(), 5);
  EXPECT_LE(cache.size(), 64u);
}

TEST(OnodeCache, ACleanEntryNeverReplacesANewerOne) {
  OnodeCache cache(64);
  auto newer = std::make_shared<Onode>();
  newer->size = 7;
  cache.put_pending(kColl, oid(1), newer, 3);
  cache.put_clean(kColl, oid(1), std::make_shared<Onode>(), 0);
  OnodeRef out;
  ASSERT_EQ(cache.get(kColl, oid(1), &out), OnodeCache::Lookup::kHit);
  EXPECT_EQ(out->size, 7u);
}

class OnodeCacheStoreTest : public hybridstore::test::StoreTest {
 protected:
  Config config() override {
    Config c = hybridstore::test::small_store_config();
    std::string err;
    EXPECT_EQ(c.set("hybridstore_onode_cache_size", "64", &err), 0) << err;
    return c;
  }
};

// A store that only reads (no transaction trims the cache) once kept every
// onode it read: memory grew with the number of objects read.
TEST_F(OnodeCacheStoreTest, AStoreThatOnlyReadsKeepsItsOnodeCacheWithinCapacity) {
  make_coll(coll_);
  for (int i = 0; i < 300; ++i) {
    Transaction t;
    t.write(coll_, obj("r" + std::to_string(i)), 0, std::string(100, static_cast<char>('a' + i % 26)));
    apply(std::move(t));
  }
  remount();
  for (int i = 0; i < 300; ++i)
    ASSERT_EQ(read_all(coll_, obj("r" + std::to_string(i))), std::string(100, static_cast<char>('a' + i % 26)));
  EXPECT_LE(store_->impl()->cache_->size(), 64u);
}

}  // namespace
