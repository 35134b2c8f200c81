#include "hsio/read_cache.h"

#include <algorithm>
#include <cstring>

namespace hybridstore {

thread_local bool ReadCache::bypass_ = false;

ReadCache::ReadCache(uint64_t capacity_bytes)
    : capacity_(capacity_bytes),
      // A shard evicts whole stripes, so it must hold one: a small cache
      // uses fewer shards.
      shards_used_(static_cast<int>(std::clamp<uint64_t>(capacity_bytes / kStripe, 1, kShards))),
      shard_capacity_(std::max<uint64_t>(capacity_bytes / shards_used_, kBlock)) {}

ReadCache::~ReadCache() = default;

uint64_t ReadCache::evict_locked(Shard& sh, uint64_t cap) {
  uint64_t dropped = 0;
  while (sh.bytes > cap && !sh.lru.empty()) {
    Entry& old = sh.lru.back();
    sh.bytes -= old.held * kBlock;
    dropped += old.held * kBlock;
    sh.index.erase(old.key);
    sh.lru.pop_back();
  }
  return dropped;
}

void ReadCache::set_capacity(uint64_t capacity_bytes) {
  capacity_.store(capacity_bytes, std::memory_order_relaxed);
  const uint64_t cap = std::max<uint64_t>(capacity_bytes / static_cast<uint64_t>(shards_used_), kBlock);
  shard_capacity_.store(cap, std::memory_order_relaxed);
  uint64_t dropped = 0;
  for (int i = 0; i < shards_used_; ++i) {
    std::lock_guard<std::mutex> l(shards_[i].mu);
    dropped += evict_locked(shards_[i], cap);
  }
  if (dropped && observer_.held) observer_.held(-static_cast<int64_t>(dropped));
}

ReadCache::Shard& ReadCache::shard_of(int dev, uint64_t block) const {
  // A stripe's blocks share a shard: one lock and one generation cover a
  // read of up to a stripe, and neighbouring stripes spread over shards.
  const uint64_t h = stripe_of(block) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(dev) * 0xC2B2AE3D27D4EB4Full;
  return shards_[(h >> 32) % static_cast<uint64_t>(shards_used_)];
}

void ReadCache::for_each_stripe(int dev, uint64_t offset, uint64_t len,
                                const std::function<void(Shard&)>& f) const {
  if (len == 0) return;
  const uint64_t first = offset / kStripe, last = (offset + len - 1) / kStripe;
  for (uint64_t s = first; s <= last; ++s) f(shard_of(dev, s * kStripe / kBlock));
}

// Both lookups walk the range stripe by stripe under each stripe's shard
// lock, all or nothing: a partial hit would split the device read into
// pieces. `take(b, slot)` gets block b of the range.
template <typename Take>
bool ReadCache::take_cached(int dev, uint64_t offset, uint64_t len, Take&& take) {
  const uint64_t first = offset / kBlock, n = len / kBlock;
  uint64_t b = 0;
  while (b < n) {
    const uint64_t block = first + b;
    const uint64_t stripe = stripe_of(block);
    Shard& sh = shard_of(dev, block);
    std::lock_guard<std::mutex> l(sh.mu);
    auto it = sh.index.find(Key{dev, stripe});
    if (it == sh.index.end()) return counted(false, len);
    Entry& e = *it->second;
    const uint64_t stripe_end = (stripe + 1) * kStripeBlocks;
    for (; b < n && first + b < stripe_end; ++b) {
      const Slot& slot = e.blocks[first + b - stripe * kStripeBlocks];
      if (!slot.data) return counted(false, len);
      take(b, slot);
    }
    sh.lru.splice(sh.lru.begin(), sh.lru, it->second);
  }
  return counted(true, len);
}

bool ReadCache::counted(bool hit, uint64_t len) {
  (hit ? hit_bytes_ : miss_bytes_).fetch_add(len, std::memory_order_relaxed);
  const auto& observe = hit ? observer_.hit : observer_.miss;
  if (observe) observe(len);
  return hit;
}

bool ReadCache::lookup(int dev, uint64_t offset, uint64_t len, char* out) {
  return take_cached(dev, offset, len,
                     [&](uint64_t b, const Slot& slot) { std::memcpy(out + b * kBlock, slot.data, kBlock); });
}

bool ReadCache::lookup_refs(int dev, uint64_t offset, uint64_t len, std::vector<Piece>* out) {
  const size_t start = out->size();
  const bool hit = take_cached(dev, offset, len, [&](uint64_t, const Slot& slot) {
    if (out->size() > start) {
      Piece& last = out->back();
      if (last.owner == slot.chunk && last.data + last.len == slot.data) {
        last.len += kBlock;
        return;
      }
    }
    out->push_back(Piece{slot.chunk, slot.data, kBlock});
  });
  if (!hit) out->resize(start);
  return hit;
}

uint32_t ReadCache::drop_chunk(Entry& e, uint64_t i) {
  if (!e.blocks[i].data) return 0;
  const std::shared_ptr<char> chunk = e.blocks[i].chunk;
  uint32_t dropped = 0;
  for (auto& slot : e.blocks)
    if (slot.data && slot.chunk == chunk) {
      slot = Slot{};
      ++dropped;
    }
  e.held -= dropped;
  return dropped;
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
    const Key k{dev, stripe};
    auto it = sh.index.find(k);
    if (it == sh.index.end()) {
      sh.lru.push_front(Entry{k, {}, 0});
      it = sh.index.emplace(k, sh.lru.begin()).first;
    } else {
      sh.lru.splice(sh.lru.begin(), sh.lru, it->second);
    }
    Entry& e = *it->second;
    // The blocks not cached yet, in one chunk. A cached one holds what this
    // read found (no write began since either was read): it stays, and so
    // does any reader's piece of it.
    const uint64_t run_end = std::min(n, stripe_end - first);
    uint64_t missing = 0;
    for (uint64_t i = b; i < run_end; ++i) missing += !e.blocks[first + i - stripe * kStripeBlocks].data;
    if (missing > 0) {
      std::shared_ptr<char> chunk(new char[missing * kBlock], std::default_delete<char[]>());
      char* at = chunk.get();
      for (; b < run_end; ++b) {
        Slot& slot = e.blocks[first + b - stripe * kStripeBlocks];
        if (slot.data) continue;
        std::memcpy(at, data + b * kBlock, kBlock);
        slot = Slot{chunk, at};
        at += kBlock;
      }
      e.held += static_cast<uint32_t>(missing);
      sh.bytes += missing * kBlock;
      held += static_cast<int64_t>(missing * kBlock);
    }
    b = run_end;
    // Whole stripes out, least recently used first (the one just filled
    // last: it is at the front).
    held -= static_cast<int64_t>(evict_locked(sh, shard_capacity_.load(std::memory_order_relaxed)));
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
    auto it = sh.index.find(Key{dev, s});
    if (it == sh.index.end()) continue;
    Entry& e = *it->second;
    const uint64_t lo = std::max(first, s * kStripeBlocks);
    const uint64_t hi = std::min(last, (s + 1) * kStripeBlocks - 1);
    for (uint64_t block = lo; block <= hi; ++block) {
      const uint32_t dropped = drop_chunk(e, block - s * kStripeBlocks);
      sh.bytes -= dropped * kBlock;
      held -= static_cast<int64_t>(dropped * kBlock);
    }
    if (e.held == 0) {
      sh.lru.erase(it->second);
      sh.index.erase(it);
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
    : ForwardingBlockDevice(std::move(inner), "cached"), cache_(std::move(cache)), dev_(dev) {}

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

void CachingBlockDevice::write_many_async(std::vector<WriteIo> ios, WriteDone done) {
  // Dropped now, while the caller still holds back readers of the range;
  // again at the end, for a read that raced the write.
  for (const auto& io : ios) invalidate(io.offset, io.len);
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  ranges.reserve(ios.size());
  for (const auto& io : ios) ranges.emplace_back(io.offset, io.len);
  inner_->write_many_async(std::move(ios), [this, ranges = std::move(ranges), done = std::move(done)](int r) {
    for (const auto& [offset, len] : ranges) invalidate(offset, len);
    done(r);
  });
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
