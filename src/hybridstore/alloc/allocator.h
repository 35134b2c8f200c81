// Space allocation on one device.
//
// Allocator is the interface of an extent allocator; a tier reaches its
// space through TierSpace (space/tier_space.h), whose disk implementation
// holds one of these and whose flash one holds HFM sections instead.
// ExtentAllocator is the general one:
// a free-extent tree indexed by offset and by size, allocating next-fit from
// a cursor (so consecutive allocations land next to each other, which keeps
// HDD objects and collections contiguous) or right after a locality hint,
// falling back to best fit, then to several pieces when no single free
// extent is large enough. All sizes and offsets are multiples of unit().
// Thread-safe.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <vector>

namespace hybridstore {

struct Interval {
  uint64_t offset;
  uint64_t length;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual uint64_t unit() const = 0;
  // Allocates exactly `want` bytes (a multiple of unit()), preferring space
  // that starts at `hint` (0 = no hint). All or nothing: -ENOSPC leaves the
  // allocator unchanged.
  virtual int allocate(uint64_t want, uint64_t hint, std::vector<Interval>* out) = 0;
  virtual void release(const std::vector<Interval>& ext) = 0;
  // Mount-time setup: mark space free or used.
  virtual void init_add_free(uint64_t offset, uint64_t length) = 0;
  virtual uint64_t free_bytes() const = 0;
  virtual uint64_t capacity() const = 0;
  // 0 when free space is one extent, towards 1 as it splinters.
  virtual double fragmentation() const = 0;
  virtual void for_each_free(const std::function<void(uint64_t, uint64_t)>& fn) const = 0;
};

class ExtentAllocator final : public Allocator {
 public:
  ExtentAllocator(uint64_t capacity, uint64_t unit);

  uint64_t unit() const override { return unit_; }
  int allocate(uint64_t want, uint64_t hint, std::vector<Interval>* out) override;
  void release(const std::vector<Interval>& ext) override;
  void init_add_free(uint64_t offset, uint64_t length) override;
  uint64_t free_bytes() const override;
  uint64_t capacity() const override { return capacity_; }
  double fragmentation() const override;
  void for_each_free(const std::function<void(uint64_t, uint64_t)>& fn) const override;
  size_t free_extent_count() const;

  // `align`-aligned pieces (align a multiple of unit()) for the KV file
  // system, carved out of the largest free extents: the unaligned slivers
  // around them stay free. Takes min(want, every aligned byte found) rounded
  // down to `align`, or nothing (-ENOSPC when not even one piece fits). The
  // floor does not apply: it is kept for exactly this caller.
  int allocate_aligned(uint64_t want, uint64_t align, std::vector<Interval>* out);
  // allocate() refuses (-ENOSPC) to leave less than `bytes` free, so that
  // space stays for allocate_aligned (docs/kvfs.md 2.5, the floor).
  void set_floor(uint64_t bytes);

 private:
  void insert_free_locked(uint64_t off, uint64_t len);  // merges with neighbours
  void remove_free_locked(std::map<uint64_t, uint64_t>::iterator it);
  void take_locked(uint64_t off, uint64_t len);  // carves [off, off+len) out of a free extent

  const uint64_t capacity_;
  const uint64_t unit_;
  mutable std::mutex mutex_;
  std::map<uint64_t, uint64_t> by_offset_;            // offset -> length
  std::set<std::pair<uint64_t, uint64_t>> by_size_;   // (length, offset)
  uint64_t free_ = 0;
  uint64_t cursor_ = 0;  // next-fit position: the end of the last allocation
  uint64_t floor_ = 0;
};

}  // namespace hybridstore
