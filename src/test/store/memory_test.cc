// The store's memory (docs/memory.md, steps 3 and 6): the mempools each
// holder reports, and the memory target's tuner, first alone with heap
// readings a test makes up, then in a mounted store.
#include <atomic>
#include <map>
#include <regex>

#include "hsio/block_device.h"
#include "hsio/buffer_pool_stats.h"
#include "hybridstore/store/test_hooks.h"
#include "hybridstore/tier/migrator.h"
#include "store_helpers.h"

using namespace hybridstore;
using hybridstore::test::StoreTest;

namespace {

constexpr uint64_t MiB = 1ull << 20;

// Two caches that hold nothing, so the heap at construction is all fixed.
struct FakeCaches {
  uint64_t cap[2] = {0, 0};
  uint64_t lowest[2] = {UINT64_MAX, UINT64_MAX};
  std::vector<MemoryTuner::Cache> make() {
    std::vector<MemoryTuner::Cache> v;
    for (int i = 0; i < 2; ++i)
      v.push_back({i ? "b" : "a", i ? 8 * MiB : 4 * MiB, i ? 3u : 1u, [] { return uint64_t(0); },
                   [this, i](uint64_t c) {
                     cap[i] = c;
                     lowest[i] = std::min(lowest[i], c);
                   }});
    return v;
  }
};

TEST(MemoryTunerTest, SizesTheCachesFromWhatTheFixedPartsLeave) {
  FakeCaches f;
  MemoryTuner t(100 * MiB, f.make(), [] { return 20 * MiB; });
  EXPECT_EQ(t.fixed_bytes(), 20 * MiB);
  // 80 MiB left, in parts 1:3.
  EXPECT_EQ(f.cap[0], 20 * MiB);
  EXPECT_EQ(f.cap[1], 60 * MiB);
}

TEST(MemoryTunerTest, AboveTheTargetShrinksToTheMinimumsAndNoFurther) {
  FakeCaches f;
  std::atomic<uint64_t> heap{20 * MiB};
  MemoryTuner t(100 * MiB, f.make(), [&] { return heap.load(); }, 5, 4 * MiB);
  heap = 110 * MiB;
  // Readings come every 5th tick only.
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(t.tick());
  EXPECT_TRUE(t.tick());
  // 10 MiB out (less a byte per cache, rounded down), in proportion to
  // what each held above its minimum (16, 52).
  EXPECT_GE(f.cap[0] + f.cap[1], 70 * MiB);
  EXPECT_LE(f.cap[0] + f.cap[1], 70 * MiB + 2);
  EXPECT_LT(f.cap[0], 20 * MiB);
  EXPECT_LT(f.cap[1], 60 * MiB);
  heap = 10000 * MiB;
  for (int i = 0; i < 50; ++i) t.tick();
  EXPECT_EQ(f.cap[0], 4 * MiB);
  EXPECT_EQ(f.cap[1], 8 * MiB);
  EXPECT_EQ(f.lowest[0], 4 * MiB);
  EXPECT_EQ(f.lowest[1], 8 * MiB);
  for (const MemoryTuner::Size& z : t.sizes()) EXPECT_EQ(z.capacity, z.min) << z.name;
}

TEST(MemoryTunerTest, BelowTheTargetGrowsBackInChunksUpToTheShares) {
  FakeCaches f;
  std::atomic<uint64_t> heap{20 * MiB};
  MemoryTuner t(100 * MiB, f.make(), [&] { return heap.load(); }, 1, 4 * MiB);
  heap = 1000 * MiB;
  t.tick();
  ASSERT_EQ(f.cap[0] + f.cap[1], 12 * MiB);
  heap = 30 * MiB;
  t.tick();
  EXPECT_EQ(f.cap[0] + f.cap[1], 16 * MiB);  // one chunk
  for (int i = 0; i < 100; ++i) t.tick();
  EXPECT_EQ(f.cap[0], 20 * MiB);
  EXPECT_EQ(f.cap[1], 60 * MiB);
  EXPECT_GT(t.grows(), 10u);
  // Within a chunk of the target: left as it is.
  heap = 97 * MiB;
  const uint64_t grows = t.grows(), shrinks = t.shrinks();
  for (int i = 0; i < 10; ++i) t.tick();
  EXPECT_EQ(t.grows(), grows);
  EXPECT_EQ(t.shrinks(), shrinks);
}

TEST(MemoryTunerTest, NoReadingChangesNothing) {
  FakeCaches f;
  std::atomic<uint64_t> heap{20 * MiB};
  MemoryTuner t(100 * MiB, f.make(), [&] { return heap.load(); }, 1);
  heap = 0;
  for (int i = 0; i < 10; ++i) t.tick();
  EXPECT_EQ(f.cap[0], 20 * MiB);
  EXPECT_EQ(f.cap[1], 60 * MiB);
}

TEST(MemoryTunerTest, TheHeapIsRead) {
  const char* source = nullptr;
  EXPECT_GT(read_heap_bytes(&source), 0u);
  ASSERT_NE(source, nullptr);
  EXPECT_STRNE(source, "none");
}

std::map<std::string, MemPoolStat> pools(HybridStore& s) {
  std::map<std::string, MemPoolStat> m;
  for (const MemPoolStat& p : s.mempools()) m[p.name] = p;
  return m;
}

uint64_t block_cache_capacity(HybridStore& s) {
  std::smatch m;
  const std::string stats = s.kv_statistics();
  if (!std::regex_search(stats, m, std::regex("Block cache: capacity ([0-9]+) bytes"))) return 0;
  return std::stoull(m[1]);
}

class MemoryStoreTest : public StoreTest {
 protected:
  Config config() override {
    Config c = hybridstore::test::small_store_config();
    std::string err;
    c.set("hybridstore_data_cache_size", "64M", &err);
    c.set("hybridstore_kv_block_cache_size", "64M", &err);
    for (const auto& [k, v] : extra_) EXPECT_EQ(c.set(k, v, &err), 0) << err;
    return c;
  }
  void SetUp() override {
    StoreTest::SetUp();
    make_coll(coll_);
  }
  void write_objects(int n) {
    for (int i = 0; i < n; i += 50) {
      Transaction t;
      for (int j = i; j < std::min(n, i + 50); ++j) t.write(coll_, obj("o" + std::to_string(j)), 0, std::string(4096, 'x'));
      apply(std::move(t));
    }
    ASSERT_EQ(store_->flush(), 0);
  }
  std::vector<std::pair<std::string, std::string>> extra_;
};

TEST_F(MemoryStoreTest, EveryPoolIsThereAndMovesTheRightWay) {
  for (const char* name :
       {"onode_cache", "heat", "kv_block_cache", "kv_memtables", "kv_table_readers", "tier_sections", "data_cache",
        "io_buffers_idle", "tier_plan"})
    EXPECT_EQ(pools(*store_).count(name), 1u) << name;
  write_objects(400);
  EXPECT_GT(pools(*store_)["kv_memtables"].bytes, 0u);
  // Into table files, then nothing cached: the stats below read RocksDB.
  ASSERT_EQ(store_->compact(), 0);
  store_->drop_caches();
  const auto before = pools(*store_);
  EXPECT_EQ(before.at("onode_cache").items, 0u);
  ObjectStat st;
  for (int i = 0; i < 200; ++i) ASSERT_EQ(store_->stat(coll_, obj("o" + std::to_string(i)), &st), 0);
  const auto after = pools(*store_);
  EXPECT_EQ(after.at("onode_cache").items, 200u);
  // The estimate of a 4 KiB onode is some hundreds of bytes (memory.md: ~840 B).
  EXPECT_GT(after.at("onode_cache").bytes, 200u * 200);
  EXPECT_LT(after.at("onode_cache").bytes, 200u * 4000);
  EXPECT_GT(after.at("kv_block_cache").bytes, before.at("kv_block_cache").bytes);
  EXPECT_GT(after.at("heat").items, 0u);
  EXPECT_GT(after.at("heat").bytes, 0u);
  // 4 KiB objects go to the SSD's sections: one placement each.
  EXPECT_GE(after.at("tier_sections").items, 400u);
  EXPECT_GT(after.at("tier_sections").bytes, 400u * 32);
  // From the devices, not from write units still staged in memory.
  ASSERT_EQ(StoreTestHooks::write_out_staged(*store_), 0);
  for (int i = 0; i < 100; ++i) read_all(coll_, obj("o" + std::to_string(i)));
  EXPECT_GE(pools(*store_).at("data_cache").bytes, before.at("data_cache").bytes + 100 * 4096);
  // The pass's planner is counted while it runs only.
  MigrationReport rep;
  ASSERT_EQ(store_->migrate_now(&rep), 0);
  EXPECT_EQ(pools(*store_).at("tier_plan").bytes, 0u);
}

TEST_F(MemoryStoreTest, WithoutATargetTheCachesKeepTheirOptions) {
  EXPECT_TRUE(StoreTestHooks::memory_sizes(*store_).empty());
  EXPECT_EQ(block_cache_capacity(*store_), 64 * MiB);
  for (int i = 0; i < 20; ++i) StoreTestHooks::tick(*store_);
  EXPECT_EQ(block_cache_capacity(*store_), 64 * MiB);
}

TEST_F(MemoryStoreTest, WithATargetTheCachesFollowTheHeap) {
  extra_ = {{"hybridstore_memory_target", "256M"}};
  store_->umount();
  store_.reset();
  make_store();
  std::vector<MemoryTuner::Size> sizes = StoreTestHooks::memory_sizes(*store_);
  ASSERT_EQ(sizes.size(), 3u);  // onode, block, data cache
  // Sized from what the real heap left: the block cache no longer its option.
  std::atomic<uint64_t> heap{64 * MiB};
  StoreTestHooks::set_heap_reader(*store_, [&] { return heap.load(); });
  sizes = StoreTestHooks::memory_sizes(*store_);
  ASSERT_EQ(sizes.size(), 3u);
  uint64_t shared = 0;
  for (const auto& z : sizes) {
    EXPECT_EQ(z.capacity, z.share) << z.name;
    shared += z.share;
  }
  // 256 MiB less the fixed 64 (less what the caches held then): 192 MiB
  // and a little, shared out by whole bytes.
  EXPECT_GE(shared, 191 * MiB);
  EXPECT_LT(shared, 200 * MiB);
  EXPECT_EQ(block_cache_capacity(*store_), sizes[1].capacity);
  write_objects(200);
  heap = 100000 * MiB;
  // The migrator's thread ticks too: enough of this thread's ticks for the
  // readings to walk all the way down whatever it adds.
  for (int i = 0; i < 100; ++i) StoreTestHooks::tick(*store_);
  for (const auto& z : StoreTestHooks::memory_sizes(*store_)) EXPECT_EQ(z.capacity, z.min) << z.name;
  EXPECT_EQ(block_cache_capacity(*store_), 16 * MiB);
  EXPECT_LE(StoreTestHooks::cached_onode_bytes(*store_), 8 * MiB);
  heap = 32 * MiB;
  for (int i = 0; i < 1000; ++i) StoreTestHooks::tick(*store_);
  for (const auto& z : StoreTestHooks::memory_sizes(*store_)) EXPECT_EQ(z.capacity, z.share) << z.name;
  EXPECT_EQ(block_cache_capacity(*store_), StoreTestHooks::memory_sizes(*store_)[1].share);
  // Off again: each cache back to its option.
  ASSERT_EQ(store_->set_memory_target(0), 0);
  EXPECT_TRUE(StoreTestHooks::memory_sizes(*store_).empty());
  EXPECT_EQ(block_cache_capacity(*store_), 64 * MiB);
}

uint64_t idle_io_bytes() {
  uint64_t buffers = 0, bytes = 0;
  aligned_buffer_pool_idle(&buffers, &bytes);
  return bytes;
}

// Frees `n` buffers of 1 MiB into the pool of idle I/O buffers.
void leave_idle_buffers(int n) {
  std::vector<AlignedBuffer> held;
  for (int i = 0; i < n; ++i) held.emplace_back(1 << 20, 4096, AlignedBuffer::kUninitialized);
}

TEST_F(MemoryStoreTest, ATargetBoundsTheIdleIoBuffers) {
  leave_idle_buffers(64);
  ASSERT_GE(idle_io_bytes(), 64 * MiB);
  // 256 MiB / 32 is below the floor the journal replay needs: 16 MiB.
  ASSERT_EQ(store_->set_memory_target(256 * MiB), 0);
  EXPECT_LE(idle_io_bytes(), 16 * MiB);
  leave_idle_buffers(64);
  EXPECT_LE(idle_io_bytes(), 16 * MiB);
  // Off again: the pool keeps what it kept before (up to 256 MiB).
  ASSERT_EQ(store_->set_memory_target(0), 0);
  leave_idle_buffers(64);
  EXPECT_GE(idle_io_bytes(), 64 * MiB);
}

}  // namespace
