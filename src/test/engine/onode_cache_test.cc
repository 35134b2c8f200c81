// The onode cache stays within its capacity whether entries come from
// transactions or from reads, and never evicts what RocksDB does not hold yet.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "hybridstore/kv/onode_cache.h"
#include "hybridstore/store/test_hooks.h"
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

TEST(OnodeCache, ALargeCacheIsShardedAndHoldsExactlyItsCapacity) {
  OnodeCache small(64);
  EXPECT_EQ(small.shard_count(), 1u);  // exact LRU, as the tests above rely on
  OnodeCache cache(4096);
  ASSERT_GT(cache.shard_count(), 1u);
  for (int i = 0; i < 20000; ++i) cache.put_clean(kColl, oid(i), std::make_shared<Onode>(), 0);
  EXPECT_EQ(cache.size(), 4096u);
  OnodeRef out;
  // The newest of every shard survive, the oldest go.
  for (int i = 19990; i < 20000; ++i) EXPECT_EQ(cache.get(kColl, oid(i), &out), OnodeCache::Lookup::kHit) << i;
  for (int i = 0; i < 10; ++i) EXPECT_EQ(cache.get(kColl, oid(i), &out), OnodeCache::Lookup::kMiss) << i;
  // Same object name in another collection is another entry.
  EXPECT_EQ(cache.get(CollectionId("2.0_head"), oid(19999), &out), OnodeCache::Lookup::kMiss);
  EXPECT_EQ(cache.drop_committed(0), 4096u);
  EXPECT_EQ(cache.size(), 0u);
}

TEST(OnodeCache, PinnedEntriesSurviveInEveryShard) {
  OnodeCache cache(2048);
  ASSERT_GT(cache.shard_count(), 1u);
  for (int i = 0; i < 500; ++i) cache.put_pending(kColl, oid(i), i % 7 ? std::make_shared<Onode>() : nullptr, 9);
  for (int i = 1000; i < 20000; ++i) cache.put_clean(kColl, oid(i), std::make_shared<Onode>(), 8);
  OnodeRef out;
  for (int i = 0; i < 500; ++i)
    EXPECT_EQ(cache.get(kColl, oid(i), &out), i % 7 ? OnodeCache::Lookup::kHit : OnodeCache::Lookup::kTombstone) << i;
  EXPECT_LE(cache.size(), 2048u + 500u);
  EXPECT_EQ(cache.drop_committed(8), cache.size() - 500u);
  cache.trim(9);
  EXPECT_EQ(cache.size(), 500u);  // within capacity now: nothing more to evict
  EXPECT_EQ(cache.drop_committed(9), 500u);
}

TEST(OnodeCache, ConcurrentReadersAndWritersKeepEveryEntryConsistent) {
  OnodeCache cache(1024);
  constexpr int kObjects = 5000;
  std::atomic<uint64_t> committed{0};
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng(100 + t);
      for (int n = 0; n < 20000; ++n) {
        int i = static_cast<int>(rng() % kObjects);
        OnodeRef out;
        switch (rng() % 4) {
          case 0: {  // a transaction installs size = i, then commits
            auto on = std::make_shared<Onode>();
            on->size = static_cast<uint64_t>(i);
            uint64_t seq = ++committed;
            cache.put_pending(kColl, oid(i), on, seq);
            cache.trim(committed.load());
            break;
          }
          case 1: {
            auto on = std::make_shared<Onode>();
            on->size = static_cast<uint64_t>(i);
            cache.put_clean(kColl, oid(i), on, committed.load());
            break;
          }
          default:
            if (cache.get(kColl, oid(i), &out) == OnodeCache::Lookup::kHit && out->size != static_cast<uint64_t>(i))
              ++wrong;
        }
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_LE(cache.size(), 1024u);
}

// An onode of `extents` 4 KiB extents with gaps between them, as 4 KiB
// overwrites leave an RBD object.
OnodeRef fragmented(int extents) {
  auto on = std::make_shared<Onode>();
  for (int i = 0; i < extents; ++i) {
    DataExtent e;
    e.logical = static_cast<uint64_t>(i) * 8192;
    e.length = 4096;
    e.physical = static_cast<uint64_t>(i) * 4096;
    e.csums = {static_cast<uint32_t>(i)};
    on->extents.insert(e);
  }
  on->size = static_cast<uint64_t>(extents) * 8192;
  return on;
}

TEST(OnodeCache, ACacheBoundedInBytesStaysWithinThemWhateverTheOnodesHold) {
  const uint64_t cap = 256 << 10;
  OnodeCache cache(1000, cap);
  const size_t each = onode_memory_bytes(*fragmented(64));
  EXPECT_GT(each, 64u * 100);  // an extent and its checksum cost ~100 bytes
  for (int i = 0; i < 500; ++i) {
    cache.put_clean(kColl, oid(i), fragmented(64), /*committed_seq=*/0);
    ASSERT_LE(cache.bytes(), cap) << i;
  }
  // The count bound was never reached: the bytes evicted.
  EXPECT_LT(cache.size(), 500u);
  EXPECT_GE(cache.size(), cap / each / 2);
  EXPECT_GE(cache.bytes(), cap / 2);
  OnodeRef out;
  EXPECT_EQ(cache.get(kColl, oid(499), &out), OnodeCache::Lookup::kHit);
  EXPECT_EQ(cache.get(kColl, oid(0), &out), OnodeCache::Lookup::kMiss);
  // Pinned entries are charged and stay; a committed cache trims back.
  for (int i = 1000; i < 1100; ++i) cache.put_pending(kColl, oid(i), fragmented(64), /*seq=*/9);
  EXPECT_GT(cache.bytes(), cap);
  for (int i = 1000; i < 1100; ++i) EXPECT_EQ(cache.get(kColl, oid(i), &out), OnodeCache::Lookup::kHit) << i;
  cache.trim(9);
  EXPECT_LE(cache.bytes(), cap);
  // What was evicted or dropped is no longer charged.
  cache.drop_committed(9);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.bytes(), 0u);
}

TEST(OnodeCache, TheCountStaysAnUpperBoundUnderABoundInBytes) {
  OnodeCache cache(64, 64 << 20);
  for (int i = 0; i < 1000; ++i) cache.put_clean(kColl, oid(i), std::make_shared<Onode>(), 0);
  EXPECT_LE(cache.size(), 64u);
  EXPECT_GT(cache.bytes(), 0u);
  // A sharded cache divides the bytes among its shards.
  OnodeCache big(4096, 1 << 20);
  EXPECT_GT(big.shard_count(), 1u);
  for (int i = 0; i < 2000; ++i) big.put_clean(kColl, oid(i), fragmented(16), 0);
  EXPECT_LE(big.bytes(), 1u << 20);
  EXPECT_LT(big.size(), 2000u);
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
  EXPECT_LE(StoreTestHooks::cached_onodes(*store_), 64u);
}

class OnodeCacheBytesStoreTest : public hybridstore::test::StoreTest {
 protected:
  Config config() override {
    Config c = hybridstore::test::small_store_config();
    std::string err;
    EXPECT_EQ(c.set("hybridstore_onode_cache_size", "1000", &err), 0) << err;
    EXPECT_EQ(c.set("hybridstore_onode_cache_bytes", "256K", &err), 0) << err;
    return c;
  }
};

// Fragmented objects (a 4 KiB write every other 4 KiB, 64 extents each)
// fill a cache bounded in bytes with fewer onodes than its count allows,
// whether they come from transactions or from reads.
TEST_F(OnodeCacheBytesStoreTest, FragmentedOnodesKeepTheCacheWithinItsBytes) {
  make_coll(coll_);
  const std::string block(4096, 'f');
  for (int i = 0; i < 100; ++i) {
    Transaction t;
    for (int e = 0; e < 64; ++e) t.write(coll_, obj("f" + std::to_string(i)), static_cast<uint64_t>(e) * 8192, block);
    apply(std::move(t));
  }
  ASSERT_EQ(store_->flush(), 0);
  std::shared_ptr<const Onode> on;
  ASSERT_EQ(StoreTestHooks::onode(*store_, coll_, obj("f0"), &on), 0);
  EXPECT_EQ(on->extents.size(), 64u);
  store_->drop_caches();
  for (int i = 0; i < 100; ++i) ASSERT_EQ(read_all(coll_, obj("f" + std::to_string(i))).size(), 64u * 8192 - 4096);
  EXPECT_LE(StoreTestHooks::cached_onode_bytes(*store_), 256u << 10);
  EXPECT_LT(StoreTestHooks::cached_onodes(*store_), 100u);
  EXPECT_GT(StoreTestHooks::cached_onodes(*store_), 10u);
  remount();
  for (int i = 0; i < 100; ++i) ASSERT_EQ(read_all(coll_, obj("f" + std::to_string(i))).size(), 64u * 8192 - 4096);
  EXPECT_LE(StoreTestHooks::cached_onode_bytes(*store_), 256u << 10);
  EXPECT_LT(StoreTestHooks::cached_onodes(*store_), 100u);
}

}  // namespace
