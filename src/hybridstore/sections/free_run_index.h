// A best-fit index of free block runs inside extents of one lane.
//
// The allocator keeps two: runs of extents still staged in memory (the
// rounding gaps the map function leaves, sealed tails, and space freed before
// the write) and, for sections with holes=fill, holes inside written extents.
// Runs are bucketed by length: exact buckets for 1..64 blocks, then one bucket
// per power of two; a bitmap of non-empty buckets makes a lookup a few word
// operations plus at most kClassProbe list steps.
//
// Node ids are stable until the node is removed; each run is listed in its
// extent's `runs` so the allocator can drop an extent's runs when it changes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "hybridstore/sections/extent_state.h"

namespace hybridstore {

class FreeRunIndex {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  struct Run {
    ExtentDesc* extent = nullptr;
    uint32_t start = 0;
    uint32_t len = 0;
    uint32_t prev = kNone, next = kNone;
    uint16_t bucket = 0;
    bool live = false;
  };

  // Run nodes, shared by the indices of one allocator so that a run can move
  // from one index to another (staged gap -> hole when its extent is written)
  // without changing its id.
  // Nodes live in fixed chunks: growing the pool never moves or copies the
  // existing ones (a single vector would copy every node when it grows, a
  // multi-millisecond stall on the allocation path).
  class Pool {
   public:
    uint32_t alloc();
    void release(uint32_t id);
    Run& operator[](uint32_t id) { return chunks_[id >> kChunkBits][id & kChunkMask]; }
    const Run& operator[](uint32_t id) const {
      return chunks_[id >> kChunkBits][id & kChunkMask];
    }

   private:
    static constexpr uint32_t kChunkBits = 12;
    static constexpr uint32_t kChunkMask = (1u << kChunkBits) - 1;
    std::vector<std::unique_ptr<Run[]>> chunks_;
    uint32_t size_ = 0;
    std::vector<uint32_t> free_ids_;
  };

  FreeRunIndex() {
    for (auto& h : heads_) h = kNone;
  }
  // Must be called before use; the pool outlives the index.
  void set_pool(Pool* pool) { pool_ = pool; }

  // Adds [start, start + len) of `e` (len > 0) and lists it in e->runs.
  uint32_t add(ExtentDesc* e, uint32_t start, uint32_t len);
  // Removes a run and unlists it from its extent.
  void remove(uint32_t id);
  // Removes every run of `e` that lies inside [lo, hi).
  void remove_within(ExtentDesc* e, uint32_t lo, uint32_t hi);
  // Removes every run of `e` (all of them must be in this index).
  void remove_all(ExtentDesc* e);
  // Moves every run of `e` into `to` (all of them must be in this index).
  void transfer_all(ExtentDesc* e, FreeRunIndex* to);
  // Shortens a run from the front (after placing `n` blocks at its start).
  void consume_front(uint32_t id, uint32_t n);

  // The smallest run of at least `len` blocks that `accept` allows, or kNone.
  // `accept` filters extents (e.g. an EU being cleaned); it is called only on
  // candidates.
  template <typename Accept>
  uint32_t best_fit(uint32_t len, Accept accept) const;
  uint32_t best_fit(uint32_t len) const {
    return best_fit(len, [](const ExtentDesc*) { return true; });
  }

  const Run& run(uint32_t id) const { return (*pool_)[id]; }
  uint64_t total_blocks() const { return total_; }
  size_t size() const { return count_; }

 private:
  static constexpr int kExact = 64;
  static constexpr int kBuckets = kExact + 32;
  static constexpr int kClassProbe = 16;

  static int bucket_of(uint32_t len);
  void link(uint32_t id);
  void unlink(uint32_t id);

  Pool* pool_ = nullptr;
  uint32_t heads_[kBuckets];
  uint64_t nonempty_[2] = {0, 0};
  uint64_t total_ = 0;
  size_t count_ = 0;
};

template <typename Accept>
uint32_t FreeRunIndex::best_fit(uint32_t len, Accept accept) const {
  if (len == 0) return kNone;
  for (int b = bucket_of(len); b < kBuckets;) {
    // Next non-empty bucket at or after b.
    uint64_t w = nonempty_[b / 64] & (~uint64_t(0) << (b % 64));
    if (!w) {
      b = (b / 64 + 1) * 64;
      continue;
    }
    b = (b / 64) * 64 + __builtin_ctzll(w);
    if (b >= kBuckets) break;
    uint32_t best = kNone;
    int probes = 0;
    for (uint32_t id = heads_[b]; id != kNone && probes < kClassProbe; id = (*pool_)[id].next) {
      const Run& r = (*pool_)[id];
      ++probes;
      if (r.len < len || !accept(r.extent)) continue;
      if (best == kNone || r.len < (*pool_)[best].len) best = id;
      if (b < kExact) break;  // exact bucket: every run has the same length
    }
    if (best != kNone) return best;
    ++b;
  }
  return kNone;
}

}  // namespace hybridstore
