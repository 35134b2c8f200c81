#include "hsio/read_cache.h"

#include <algorithm>
#include <cstring>

namespace hybridstore {

thread_local bool ReadCache::bypass_ = false;

ReadCache::ReadCache(uint64_t capacity_bytes)
    : capacity_(capacity_bytes), shard_capacity_(std::max<uint64_t>(capacity_bytes / kShards, kBlock)) {}

ReadCache::~ReadCache() = default;

ReadCache::Shard& ReadCache::shard_of(int dev, uint64_t block) const {
  // A stripe's blocks share a shard: one lock and one generation cover a
  // read of up to a stripe, and neighbouring stripes spread over shards.
  const uint64_t h = stripe_of(block) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(dev) * 0xC2B2AE3D27D4EB4Full;
  return shards_[(h >> 32) % kShards];
}

void ReadCache::for_each_stripe(int dev, uint64_t offset, uint64_t len,
                                const std::function<void(Shard&)>& f) const {
  if (len == 0) return;
  const uint64_t first = offset / kStripe, last = (offset + len - 1) / kStripe;
  for (uint64_t s = first; s <= last; ++s) f(shard_of(dev, s * kStripe / kBlock));
}

bool ReadCache::lookup(int dev, uint64_t offset, uint64_t len, char* out) {
  const uint64_t first = offset / kBlock, n = len / kBlock;
  // All or nothing: a partial hit would split the device read into pieces.
  uint64_t b = 0;
  while (b < n) {
    const uint64_t block = first + b;
    Shard& sh = shard_of(dev, block);
    std::lock_guard<std::mutex> l(sh.mu);
    // The blocks of this stripe under one lock.
    const uint64_t stripe_end = (stripe_of(block) + 1) * (kStripe / kBlock);
    for (; b < n && first + b < stripe_end; ++b) {
      auto it = sh.index.find(Key{dev, first + b});
      if (it == sh.index.end()) {
        miss_bytes_.fetch_add(len, std::memory_order_relaxed);
        if (observer_.miss) observer_.miss(len);
        return false;
      }
      sh.lru.splice(sh.lru.begin(), sh.lru, it->second);
      std::memcpy(out + b * kBlock, it->second->data.get(), kBlock);
    }
  }
  hit_bytes_.fetch_add(len, std::memory_order_relaxed);
  if (observer_.hit) observer_.hit(len);
  return true;
}

void ReadCache::snapshot(int dev, uint64_t offset, uint64_t len, std::vector<uint64_t>* gens) const {
  gens->clear();
  for_each_stripe(dev, offset, len, [&](Shard& sh) {
    std::lock_guard<std::mutex> l(sh.mu);
    gens->push_back(sh.gen);
  });
}

void ReadCache::insert(int dev, uint64_t offset, uint64_t len, const char* data, const std::vector<uint64_t>& gens) {
  const uint64_t first = offset / kBlock, n = len / kBlock;
  const uint64_t first_stripe = offset / kStripe;
  int64_t held = 0;
  uint64_t b = 0;
  while (b < n) {
    const uint64_t block = first + b;
    const uint64_t stripe = stripe_of(block);
    const uint64_t stripe_end = (stripe + 1) * (kStripe / kBlock);
    Shard& sh = shard_of(dev, block);
    std::lock_guard<std::mutex> l(sh.mu);
    if (sh.gen != gens[stripe - first_stripe]) {
      // A write to these blocks began while they were read: what was read
      // may be either version.
      dropped_inserts_.fetch_add(1, std::memory_order_relaxed);
      b = std::min(n, stripe_end - first);
      continue;
    }
    for (; b < n && first + b < stripe_end; ++b) {
      const Key k{dev, first + b};
      auto it = sh.index.find(k);
      if (it != sh.index.end()) {
        std::memcpy(it->second->data.get(), data + b * kBlock, kBlock);
        sh.lru.splice(sh.lru.begin(), sh.lru, it->second);
        continue;
      }
      Entry e{k, std::unique_ptr<char[]>(new char[kBlock])};
      std::memcpy(e.data.get(), data + b * kBlock, kBlock);
      sh.lru.push_front(std::move(e));
      sh.index.emplace(k, sh.lru.begin());
      sh.bytes += kBlock;
      held += kBlock;
      while (sh.bytes > shard_capacity_ && !sh.lru.empty()) {
        sh.index.erase(sh.lru.back().key);
        sh.lru.pop_back();
        sh.bytes -= kBlock;
        held -= kBlock;
      }
    }
  }
  if (held && observer_.held) observer_.held(held);
}

void ReadCache::invalidate(int dev, uint64_t offset, uint64_t len) {
  if (len == 0) return;
  const uint64_t first = offset / kBlock, last = (offset + len - 1) / kBlock;
  int64_t held = 0;
  for (uint64_t s = offset / kStripe; s <= (offset + len - 1) / kStripe; ++s) {
    Shard& sh = shard_of(dev, s * kStripe / kBlock);
    std::lock_guard<std::mutex> l(sh.mu);
    ++sh.gen;
    if (sh.index.empty()) continue;
    const uint64_t lo = std::max(first, s * (kStripe / kBlock));
    const uint64_t hi = std::min(last, (s + 1) * (kStripe / kBlock) - 1);
    for (uint64_t block = lo; block <= hi; ++block) {
      auto it = sh.index.find(Key{dev, block});
      if (it == sh.index.end()) continue;
      sh.lru.erase(it->second);
      sh.index.erase(it);
      sh.bytes -= kBlock;
      held -= kBlock;
    }
  }
  if (held && observer_.held) observer_.held(held);
}

ReadCacheStats ReadCache::stats() const {
  ReadCacheStats s;
  s.hit_bytes = hit_bytes_.load(std::memory_order_relaxed);
  s.miss_bytes = miss_bytes_.load(std::memory_order_relaxed);
  s.dropped_inserts = dropped_inserts_.load(std::memory_order_relaxed);
  for (const Shard& sh : shards_) {
    std::lock_guard<std::mutex> l(sh.mu);
    s.cached_bytes += sh.bytes;
  }
  return s;
}

// ---------------------------------------------------------------- device

CachingBlockDevice::CachingBlockDevice(std::unique_ptr<BlockDevice> inner, std::shared_ptr<ReadCache> cache, int dev)
    : inner_(std::move(inner)), cache_(std::move(cache)), dev_(dev) {}

int CachingBlockDevice::read(uint64_t offset, char* buf, uint64_t len) { return inner_->read(offset, buf, len); }

int CachingBlockDevice::read_many(const std::vector<ReadIo>& ios) { return inner_->read_many(ios); }

void CachingBlockDevice::invalidate(uint64_t offset, uint64_t len) {
  // Whole blocks around a write that is not on block boundaries.
  const uint64_t a = offset / ReadCache::kBlock * ReadCache::kBlock;
  const uint64_t b = (offset + len + ReadCache::kBlock - 1) / ReadCache::kBlock * ReadCache::kBlock;
  cache_->invalidate(dev_, a, b - a);
}

int CachingBlockDevice::write(uint64_t offset, const char* buf, uint64_t len) {
  invalidate(offset, len);
  int r = inner_->write(offset, buf, len);
  invalidate(offset, len);
  return r;
}

int CachingBlockDevice::write_many(const std::vector<WriteIo>& ios) {
  for (const auto& io : ios) invalidate(io.offset, io.len);
  int r = inner_->write_many(ios);
  for (const auto& io : ios) invalidate(io.offset, io.len);
  return r;
}

int CachingBlockDevice::write_durable(uint64_t offset, const char* buf, uint64_t len) {
  invalidate(offset, len);
  int r = inner_->write_durable(offset, buf, len);
  invalidate(offset, len);
  return r;
}

int CachingBlockDevice::discard(uint64_t offset, uint64_t len) {
  invalidate(offset, len);
  int r = inner_->discard(offset, len);
  invalidate(offset, len);
  return r;
}

}  // namespace hybridstore
