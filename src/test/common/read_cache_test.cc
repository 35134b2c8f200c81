// The data cache: what it serves, what a write through its device drops,
// its bound, and the read that races a write.
#include "hsio/read_cache.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <random>
#include <thread>

#include "common_helpers.h"

using namespace hybridstore;
using hybridstore::test::TempDir;

namespace {

constexpr uint64_t kDevSize = 8 << 20;

class ReadCacheTest : public ::testing::Test {
 protected:
  void SetUp() override { open(64 << 20); }
  void open(uint64_t capacity, bool direct = true) {
    dev_.reset();
    DeviceOpenOptions o;
    o.backend = IoBackend::kPosix;
    o.direct_io = direct;
    o.create = !std::filesystem::exists(path_);
    o.create_size = kDevSize;
    std::string err;
    auto inner = open_block_device(path_, o, &err);
    ASSERT_TRUE(inner) << err;
    cache_ = std::make_shared<ReadCache>(capacity);
    dev_ = std::make_unique<CachingBlockDevice>(std::move(inner), cache_, 0);
  }
  // Writes the file behind the device's back, as rot on the media would.
  void write_behind(uint64_t off, const std::string& bytes) {
    int fd = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(off)), static_cast<ssize_t>(bytes.size()));
    ::fsync(fd);
    ::close(fd);
  }
  std::string read(uint64_t off, uint64_t len) {
    AlignedBuffer b(len);
    EXPECT_EQ(dev_->read(off, b.data(), len), 0);
    return std::string(b.data(), len);
  }
  // What the engine's read path does: the cache, else the device and keep.
  std::string cached_read(uint64_t off, uint64_t len) {
    AlignedBuffer b(len);
    if (cache_->lookup(0, off, len, b.data())) return std::string(b.data(), len);
    std::vector<uint64_t> gens;
    cache_->snapshot(0, off, len, &gens);
    EXPECT_EQ(dev_->read(off, b.data(), len), 0);
    cache_->insert(0, off, len, b.data(), gens);
    return std::string(b.data(), len);
  }
  bool is_cached(uint64_t off, uint64_t len) {
    AlignedBuffer b(len);
    return cache_->lookup(0, off, len, b.data());
  }
  int write(uint64_t off, const std::string& bytes) {
    AlignedBuffer b(bytes.size());
    std::memcpy(b.data(), bytes.data(), bytes.size());
    return dev_->write(off, b.data(), bytes.size());
  }
  TempDir dir_;
  std::string path_ = dir_.file("dev");
  std::shared_ptr<ReadCache> cache_;
  std::unique_ptr<CachingBlockDevice> dev_;
};

}  // namespace

TEST_F(ReadCacheTest, WhatWasKeptIsServedWithoutTheDevice) {
  ASSERT_EQ(write(65536, std::string(16384, 'a')), 0);
  EXPECT_FALSE(is_cached(65536, 16384));
  EXPECT_EQ(cached_read(65536, 16384), std::string(16384, 'a'));
  write_behind(65536, std::string(16384, 'z'));
  EXPECT_EQ(cached_read(65536, 16384), std::string(16384, 'a'));
  const ReadCacheStats s = cache_->stats();
  EXPECT_EQ(s.hit_bytes, 16384u);
  EXPECT_EQ(s.cached_bytes, 16384u);
  // Reads through the device itself are never served by the cache.
  EXPECT_EQ(read(65536, 16384), std::string(16384, 'z'));
}

TEST_F(ReadCacheTest, ALookupIsAllOrNothing) {
  ASSERT_EQ(write(0, std::string(8192, 'a')), 0);
  cached_read(0, 4096);
  EXPECT_TRUE(is_cached(0, 4096));
  EXPECT_FALSE(is_cached(0, 8192));
  EXPECT_FALSE(is_cached(4096, 4096));
}

TEST_F(ReadCacheTest, AWriteThroughTheDeviceDropsTheBlocksItCovers) {
  ASSERT_EQ(write(0, std::string(65536, 'a')), 0);
  // Kept block by block: blocks kept together go together (below).
  for (uint64_t off = 0; off < 65536; off += 4096) cached_read(off, 4096);
  ASSERT_EQ(write(8192, std::string(4096, 'w')), 0);
  EXPECT_FALSE(is_cached(8192, 4096));
  EXPECT_TRUE(is_cached(0, 8192));
  EXPECT_TRUE(is_cached(12288, 65536 - 12288));
  std::string want(65536, 'a');
  want.replace(8192, 4096, std::string(4096, 'w'));
  EXPECT_EQ(cached_read(0, 65536), want);
}

TEST_F(ReadCacheTest, WritesOfEveryKindDropBlocks) {
  ASSERT_EQ(write(0, std::string(4 * 4096, 'a')), 0);
  for (uint64_t off = 0; off < 4 * 4096; off += 4096) cached_read(off, 4096);
  AlignedBuffer b(4096);
  std::memset(b.data(), 'x', 4096);
  ASSERT_EQ(dev_->write_many({WriteIo{0, b.data(), 4096}}), 0);
  ASSERT_EQ(dev_->write_durable(4096, b.data(), 4096), 0);
  ASSERT_EQ(dev_->discard(8192, 4096), 0);
  EXPECT_FALSE(is_cached(0, 4096));
  EXPECT_FALSE(is_cached(4096, 4096));
  EXPECT_FALSE(is_cached(8192, 4096));
  EXPECT_TRUE(is_cached(12288, 4096));
}

TEST_F(ReadCacheTest, AnUnalignedWriteDropsTheWholeBlockAroundIt) {
  open(64 << 20, /*direct=*/false);  // byte-aligned I/O, as without O_DIRECT
  ASSERT_EQ(write(0, std::string(8192, 'a')), 0);
  cached_read(0, 4096);
  cached_read(4096, 4096);
  ASSERT_EQ(dev_->write(100, "0123456789", 10), 0);
  EXPECT_FALSE(is_cached(0, 4096));
  EXPECT_TRUE(is_cached(4096, 4096));  // the next block stayed
  std::string want(4096, 'a');
  want.replace(100, 10, "0123456789");
  EXPECT_EQ(cached_read(0, 4096), want);
}

TEST_F(ReadCacheTest, WhatWasReadWhileAWriteBeganIsNotKept) {
  ASSERT_EQ(write(0, std::string(4096, 'a')), 0);
  std::vector<uint64_t> gens;
  cache_->snapshot(0, 0, 4096, &gens);
  AlignedBuffer b(4096);
  ASSERT_EQ(dev_->read(0, b.data(), 4096), 0);
  ASSERT_EQ(write(0, std::string(4096, 'n')), 0);  // lands between the read and the keep
  cache_->insert(0, 0, 4096, b.data(), gens);
  EXPECT_FALSE(is_cached(0, 4096));
  EXPECT_EQ(cache_->stats().dropped_inserts, 1u);
  EXPECT_EQ(cached_read(0, 4096), std::string(4096, 'n'));
}

TEST_F(ReadCacheTest, ItHoldsNoMoreThanItsCapacity) {
  open(256 << 10);
  ASSERT_EQ(write(0, std::string(4 << 20, 'c')), 0);
  for (uint64_t off = 0; off < (4u << 20); off += 65536) cached_read(off, 65536);
  const ReadCacheStats s = cache_->stats();
  EXPECT_LE(s.cached_bytes, 256u << 10);
  EXPECT_GT(s.cached_bytes, 0u);
  EXPECT_EQ(s.miss_bytes, 4u << 20);
}

TEST(ReadCacheBypass, NestsAndEnds) {
  EXPECT_FALSE(ReadCache::bypassed());
  {
    ReadCache::Bypass a;
    {
      ReadCache::Bypass b;
      EXPECT_TRUE(ReadCache::bypassed());
    }
    EXPECT_TRUE(ReadCache::bypassed());
    std::thread([] { EXPECT_FALSE(ReadCache::bypassed()); }).join();  // per thread
  }
  EXPECT_FALSE(ReadCache::bypassed());
}

// Readers and writers on the same blocks at once: afterwards every block
// the cache serves is what the device holds.
TEST_F(ReadCacheTest, ReadsRacingWritesLeaveNothingStale) {
  const uint64_t seed = 7;
  std::cout << "seed " << seed << std::endl;
  constexpr uint64_t kSpan = 32 * 4096;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w)
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(seed + w);
      AlignedBuffer b(16384);
      for (int i = 0; i < 3000; ++i) {
        const uint64_t len = 4096 * (1 + rng() % 4), off = 4096 * (rng() % (kSpan / 4096 - len / 4096 + 1));
        std::memset(b.data(), static_cast<int>('A' + (w * 3000 + i) % 50), len);
        ASSERT_EQ(dev_->write(off, b.data(), len), 0);
      }
    });
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      std::mt19937_64 rng(seed + 100 + r);
      while (!stop.load()) {
        const uint64_t len = 4096 * (1 + rng() % 8), off = 4096 * (rng() % (kSpan / 4096 - len / 4096 + 1));
        cached_read(off, len);
      }
    });
  threads[0].join();
  threads[1].join();
  stop = true;
  for (size_t i = 2; i < threads.size(); ++i) threads[i].join();
  const std::string media = read(0, kSpan);
  for (uint64_t off = 0; off < kSpan; off += 4096)
    EXPECT_EQ(cached_read(off, 4096), media.substr(off, 4096)) << "block at " << off;
  EXPECT_GT(cache_->stats().hit_bytes, 0u);
}

namespace {
std::string join(const std::vector<ReadCache::Piece>& pieces) {
  std::string s;
  for (const auto& p : pieces) s.append(p.data, p.len);
  return s;
}
}  // namespace

TEST_F(ReadCacheTest, RefsAreTheCachedBytesOnePieceAStripeReadWhole) {
  std::string data = std::string(65536, 'a') + std::string(65536, 'b');
  ASSERT_EQ(write(0, data), 0);
  std::vector<ReadCache::Piece> pieces;
  EXPECT_FALSE(cache_->lookup_refs(0, 0, data.size(), &pieces));
  EXPECT_TRUE(pieces.empty());
  cached_read(0, data.size());
  ASSERT_TRUE(cache_->lookup_refs(0, 0, data.size(), &pieces));
  ASSERT_EQ(pieces.size(), 2u);  // one chunk per stripe
  EXPECT_EQ(join(pieces), data);
  // Blocks kept by separate reads are separate chunks, in order.
  ASSERT_EQ(write(131072, std::string(8192, 'c')), 0);
  cached_read(131072, 4096);
  cached_read(135168, 4096);
  pieces.clear();
  ASSERT_TRUE(cache_->lookup_refs(0, 131072, 8192, &pieces));
  EXPECT_EQ(pieces.size(), 2u);
  EXPECT_EQ(join(pieces), std::string(8192, 'c'));
}

TEST_F(ReadCacheTest, AWriteDropsTheBlocksKeptWithThoseItCovers) {
  ASSERT_EQ(write(0, std::string(65536, 'a')), 0);
  cached_read(0, 32768);
  cached_read(32768, 32768);
  ASSERT_EQ(write(8192, std::string(4096, 'w')), 0);
  EXPECT_FALSE(is_cached(0, 4096)) << "kept with the block written";
  EXPECT_TRUE(is_cached(32768, 32768)) << "kept apart";
  EXPECT_EQ(cache_->stats().cached_bytes, 32768u);
}

TEST_F(ReadCacheTest, APieceHeldOutlivesTheWriteThatDropsItAndNeverChanges) {
  ASSERT_EQ(write(0, std::string(65536, 'o')), 0);
  cached_read(0, 65536);
  std::vector<ReadCache::Piece> held;
  ASSERT_TRUE(cache_->lookup_refs(0, 0, 65536, &held));
  // One block rewritten: its whole chunk leaves the cache (the memory
  // counted is the memory held) ...
  ASSERT_EQ(write(12288, std::string(4096, 'n')), 0);
  EXPECT_EQ(cache_->stats().cached_bytes, 0u);
  EXPECT_FALSE(is_cached(0, 4096));
  // ... and comes back from the device with the new block, in new memory.
  std::string now = std::string(12288, 'o') + std::string(4096, 'n') + std::string(49152, 'o');
  EXPECT_EQ(cached_read(0, 65536), now);
  std::vector<ReadCache::Piece> fresh;
  ASSERT_TRUE(cache_->lookup_refs(0, 0, 65536, &fresh));
  EXPECT_EQ(join(fresh), now);
  EXPECT_EQ(join(held), std::string(65536, 'o')) << "a piece handed out changed";
}

TEST_F(ReadCacheTest, KeepingAgainLeavesCachedBlocksAndTheirReadersAlone) {
  ASSERT_EQ(write(0, std::string(16384, 'k')), 0);
  cached_read(4096, 4096);
  std::vector<ReadCache::Piece> held;
  ASSERT_TRUE(cache_->lookup_refs(0, 4096, 4096, &held));
  const char* where = held[0].data;
  cached_read(0, 16384);  // hits: nothing kept again
  std::vector<uint64_t> gens;
  cache_->snapshot(0, 0, 16384, &gens);
  AlignedBuffer b(16384);
  std::memset(b.data(), 'k', 16384);
  cache_->insert(0, 0, 16384, b.data(), gens);  // blocks 0, 2, 3 new; 1 stays
  std::vector<ReadCache::Piece> all;
  ASSERT_TRUE(cache_->lookup_refs(0, 0, 16384, &all));
  EXPECT_EQ(join(all), std::string(16384, 'k'));
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[1].data, where);
  EXPECT_EQ(cache_->stats().cached_bytes, 16384u);
}
