// A read cache of device blocks, shared by the devices of one store.
//
// BlueStore keeps what it read in its own cache (its devices are opened
// O_DIRECT, so the kernel's page cache holds nothing); so does this store.
// The engine looks blocks up before it reads a device and keeps what it
// read once the extent's checksums vouched for it, so a hit needs no
// verification. Invalidation sits on the BlockDevice interface
// (CachingBlockDevice): every write any part of the engine makes (commits,
// deferred records applied, staged units, moves, the section cleaner,
// discards) goes through a device, so none can miss it. Blocks are 4 KiB,
// indexed, and evicted least recently used first, by 64 KiB stripe.
//
// A read racing a write of the same blocks must not leave the old bytes
// behind: a write bumps the generation of the stripes it covers before it is
// issued and after it completes (dropping their blocks both times), and a
// read keeps what it read only if its stripes' generations did not move
// since it took them (snapshot, before reading the device).
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "hsio/forwarding_device.h"

namespace hybridstore {

struct ReadCacheStats {
  uint64_t hit_bytes = 0;
  uint64_t miss_bytes = 0;     // looked up, then read from a device
  uint64_t cached_bytes = 0;   // held now
  uint64_t dropped_inserts = 0;  // reads that raced a write: not cached
};

class ReadCache {
 public:
  static constexpr uint64_t kBlock = 4096;
  explicit ReadCache(uint64_t capacity_bytes);
  ~ReadCache();
  ReadCache(const ReadCache&) = delete;
  ReadCache& operator=(const ReadCache&) = delete;

  uint64_t capacity() const { return capacity_.load(std::memory_order_relaxed); }
  // A new capacity at run time (the memory tuner's, docs/memory.md): a
  // smaller one evicts at once, least recently used stripes first. The
  // shards stay as the first capacity made them, so a cache made tiny and
  // grown back spreads over as few shards as it started with.
  void set_capacity(uint64_t capacity_bytes);
  ReadCacheStats stats() const;
  // Counted as they happen (the store's perf counters): bytes hit, bytes
  // missed, and the change in bytes held.
  struct Observer {
    std::function<void(uint64_t)> hit, miss;
    std::function<void(int64_t)> held;
  };
  void set_observer(Observer o) { observer_ = std::move(o); }

  // While one lives, this thread's reads go to the devices and leave the
  // cache alone: a deep fsck must check the media, not what was read before.
  class Bypass {
   public:
    Bypass() : was_(bypass_) { bypass_ = true; }
    ~Bypass() { bypass_ = was_; }
    Bypass(const Bypass&) = delete;
    Bypass& operator=(const Bypass&) = delete;
   private:
    bool was_;
  };
  static bool bypassed() { return bypass_; }

  // ---- for readers (the engine's read path) and CachingBlockDevice
  // True (and `out` filled) when every block of [offset, offset+len) of
  // device `dev` is cached. offset and len are multiples of kBlock.
  bool lookup(int dev, uint64_t offset, uint64_t len, char* out);
  // The same without a copy: the cached bytes themselves, in order, as few
  // pieces as the chunks they lie in allow. Each piece keeps its memory
  // alive for as long as it is held; the cache never changes it.
  struct Piece {
    std::shared_ptr<char> owner;
    const char* data;
    uint64_t len;
  };
  bool lookup_refs(int dev, uint64_t offset, uint64_t len, std::vector<Piece>* out);
  // The generations of the stripes covering the range, for insert.
  void snapshot(int dev, uint64_t offset, uint64_t len, std::vector<uint64_t>* gens) const;
  // Caches the range read from the device, unless a write to its stripes
  // began since `gens` was taken.
  void insert(int dev, uint64_t offset, uint64_t len, const char* data, const std::vector<uint64_t>& gens);
  // A write to the range: bump the stripes and drop their blocks, with the
  // blocks kept in the same chunk (called before the write is issued and
  // again after it completes).
  void invalidate(int dev, uint64_t offset, uint64_t len);

 private:
  static constexpr int kShards = 64;
  static constexpr uint64_t kStripe = 64 * 1024;  // blocks of one stripe share a shard
  static constexpr uint64_t kStripeBlocks = kStripe / kBlock;
  // The index and the LRU order hold stripes, not blocks: a 4 MiB read looks
  // up and reorders 64 entries, not 1,024 (the per-block index cost as much
  // CPU as the copy: docs/benchmarks.md). Memory is still held, and counted,
  // by the block.
  struct Key {
    int dev;
    uint64_t stripe;
    bool operator==(const Key& o) const { return dev == o.dev && stripe == o.stripe; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return std::hash<uint64_t>()(k.stripe * 8 + static_cast<uint64_t>(k.dev)); }
  };
  // The blocks one insert kept of a stripe share one allocation (a chunk),
  // so a stripe read whole is handed out as one piece. A chunk is never
  // written once kept: readers may hold it (lookup_refs). When any of its
  // blocks is dropped, all of them are, so the memory counted is the memory
  // held.
  struct Slot {
    std::shared_ptr<char> chunk;  // null: not cached
    char* data = nullptr;
  };
  struct Entry {
    Key key;
    Slot blocks[kStripeBlocks];
    uint32_t held = 0;  // cached blocks
  };
  // Drops block `i` of `e` and every block sharing its chunk; returns the
  // number of blocks dropped.
  static uint32_t drop_chunk(Entry& e, uint64_t i);
  struct Shard {
    mutable std::mutex mu;
    uint64_t gen = 0;
    std::list<Entry> lru;  // front: most recently used
    std::unordered_map<Key, std::list<Entry>::iterator, KeyHash> index;
    uint64_t bytes = 0;
  };
  Shard& shard_of(int dev, uint64_t block) const;
  static uint64_t stripe_of(uint64_t block) { return block * kBlock / kStripe; }
  // Shards of the stripes covering [offset, offset+len), in stripe order.
  void for_each_stripe(int dev, uint64_t offset, uint64_t len, const std::function<void(Shard&)>& f) const;
  // The walk of lookup and lookup_refs: true, having handed every block of
  // the range to `take`, when all are cached.
  template <typename Take>
  bool take_cached(int dev, uint64_t offset, uint64_t len, Take&& take);
  // Counts a lookup as a hit or a miss of `len` bytes; returns `hit`.
  bool counted(bool hit, uint64_t len);

  static thread_local bool bypass_;
  Observer observer_;  // set before use
  std::atomic<uint64_t> capacity_;
  int shards_used_;
  std::atomic<uint64_t> shard_capacity_;
  // Drops whole stripes, least recently used first, until the shard is
  // within `cap`; returns the bytes dropped.
  static uint64_t evict_locked(Shard& sh, uint64_t cap);
  mutable Shard shards_[kShards];
  std::atomic<uint64_t> hit_bytes_{0}, miss_bytes_{0}, dropped_inserts_{0};
};

// A device whose writes and discards drop what they cover from `cache` (as
// device number `dev` of it); reads pass through (the engine consults the
// cache itself, knowing what it verified).
class CachingBlockDevice final : public ForwardingBlockDevice {
 public:
  CachingBlockDevice(std::unique_ptr<BlockDevice> inner, std::shared_ptr<ReadCache> cache, int dev);

  int write(uint64_t offset, const char* buf, uint64_t len) override;
  int write_many(const std::vector<WriteIo>& ios) override;
  void write_many_async(std::vector<WriteIo> ios, WriteDone done) override;
  int write_durable(uint64_t offset, const char* buf, uint64_t len) override;
  int discard(uint64_t offset, uint64_t len) override;

 private:
  void invalidate(uint64_t offset, uint64_t len);
  std::shared_ptr<ReadCache> cache_;
  int dev_;
};

}  // namespace hybridstore
