// The memory target (docs/memory.md, design section 3 and step 6): the
// store's caches sized from one total, hybridstore_memory_target, and kept
// there by a tuner on the store's once-a-second tick.
//
// At mount the parts that are not caches (memtables, heat, the SSD
// sections' state, the journal's buffer, RocksDB's table readers...) are
// measured as the heap less what the tunable caches hold, and the caches
// share what the target leaves above them, by ratio, each at least its
// minimum: that share is also the most a cache is given back later. Every
// few ticks the tuner reads the heap: above the target it takes the excess
// from the caches, in proportion to what each holds above its minimum (so
// all reach their minimums together, and none goes below); below the
// target by more than a chunk it gives a chunk back, by ratio, up to each
// cache's share. A grow only follows a reading a chunk below the target,
// so a chunk given back cannot by itself push the next reading over.
//
// As bluestore_cache_autotune, from the heap rather than from each cache's
// wish list: what the tuner cannot see (a pass's planner, a burst of
// memtables) is there in the reading, and the caches make room for it.
//
// The heap reading is a function the store supplies (read_heap_bytes) and
// a test replaces, so the tuner is deterministic under test.
#pragma once
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace hybridstore {

// The process's heap as memory it holds: on tcmalloc (found at run time,
// so a binary built without it needs nothing), its free pages are released
// to the system first and the heap still mapped is returned (heap size less
// unmapped bytes, as Ceph's own cache autotuner reads it); else glibc's
// mallinfo2 (in-use arena bytes and mmapped blocks); 0 when neither
// answers. *source names which.
uint64_t read_heap_bytes(const char** source = nullptr);

class MemoryTuner {
 public:
  struct Cache {
    std::string name;
    uint64_t min_bytes = 0;
    unsigned ratio = 1;  // parts of what the target leaves above the fixed parts
    std::function<uint64_t()> used;            // bytes it holds now
    std::function<void(uint64_t)> set_capacity;
  };
  using HeapReader = std::function<uint64_t()>;
  // Reads the heap every `interval_ticks` ticks; grows by `chunk` at most
  // per reading (0: target / 32, at least 4 MiB). Sets every cache's
  // capacity before it returns. A `heap` answering 0 means "unknown": the
  // tuner then leaves the caches as they are.
  MemoryTuner(uint64_t target, std::vector<Cache> caches, HeapReader heap, unsigned interval_ticks = 5,
              uint64_t chunk = 0);

  // The store's once-a-second tick: true when this tick read the heap.
  bool tick();

  uint64_t target() const { return target_; }
  // Measured at construction: the heap less what the caches held.
  uint64_t fixed_bytes() const { return fixed_; }
  // The last reading (at construction, then every interval).
  uint64_t last_heap() const;
  // Per cache, in the order given: its capacity now, its share (the most it
  // is given), its minimum.
  struct Size {
    std::string name;
    uint64_t capacity, share, min;
  };
  std::vector<Size> sizes() const;
  // How many readings shrank and how many grew the caches.
  uint64_t shrinks() const;
  uint64_t grows() const;

 private:
  void shrink_locked(uint64_t excess);
  void grow_locked(uint64_t room);

  const uint64_t target_;
  std::vector<Cache> caches_;
  HeapReader heap_;
  const unsigned interval_;
  uint64_t chunk_;
  uint64_t fixed_ = 0;
  mutable std::mutex mutex_;
  std::vector<uint64_t> capacity_, share_;
  unsigned ticks_ = 0;
  uint64_t last_heap_ = 0;
  uint64_t shrinks_ = 0, grows_ = 0;
};

}  // namespace hybridstore
