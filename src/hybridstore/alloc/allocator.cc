#include "hybridstore/alloc/allocator.h"

#include <algorithm>
#include <cerrno>
#include <cmath>

namespace hybridstore {

ExtentAllocator::ExtentAllocator(uint64_t capacity, uint64_t unit)
    : capacity_(capacity / unit * unit), unit_(unit) {}

void ExtentAllocator::remove_free_locked(std::map<uint64_t, uint64_t>::iterator it) {
  by_size_.erase({it->second, it->first});
  free_ -= it->second;
  by_offset_.erase(it);
}

void ExtentAllocator::insert_free_locked(uint64_t off, uint64_t len) {
  if (len == 0) return;
  auto next = by_offset_.lower_bound(off);
  if (next != by_offset_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == off) {
      off = prev->first;
      len += prev->second;
      remove_free_locked(prev);
    }
  }
  next = by_offset_.lower_bound(off);
  if (next != by_offset_.end() && off + len == next->first) {
    len += next->second;
    remove_free_locked(next);
  }
  by_offset_[off] = len;
  by_size_.insert({len, off});
  free_ += len;
}

void ExtentAllocator::take_locked(uint64_t off, uint64_t len) {
  auto it = by_offset_.upper_bound(off);
  --it;  // the free extent holding off
  uint64_t f_off = it->first, f_len = it->second;
  remove_free_locked(it);
  if (off > f_off) insert_free_locked(f_off, off - f_off);
  if (off + len < f_off + f_len) insert_free_locked(off + len, f_off + f_len - off - len);
}

int ExtentAllocator::allocate(uint64_t want, uint64_t hint, std::vector<Interval>* out) {
  if (want == 0) return 0;
  want = (want + unit_ - 1) / unit_ * unit_;
  std::lock_guard<std::mutex> l(mutex_);
  if (want > free_ || free_ - want < floor_) return -ENOSPC;

  // 1. Right after the hint, so an object grows contiguously.
  if (hint) {
    auto it = by_offset_.find(hint);
    if (it != by_offset_.end() && it->second >= want) {
      take_locked(hint, want);
      out->push_back({hint, want});
      cursor_ = hint + want;
      return 0;
    }
  }
  // 2. Next fit from the cursor, looking at a bounded number of extents so
  //    the cost stays small however fragmented the device is.
  auto it = by_offset_.lower_bound(cursor_);
  if (it != by_offset_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second > cursor_) it = prev;
  }
  for (int steps = 0; it != by_offset_.end() && steps < 32; ++it, ++steps) {
    uint64_t start = std::max(it->first, cursor_);
    if (it->first + it->second >= start + want) {
      take_locked(start, want);
      out->push_back({start, want});
      cursor_ = start + want;
      return 0;
    }
  }
  // 3. Best fit anywhere.
  auto bs = by_size_.lower_bound({want, 0});
  if (bs != by_size_.end()) {
    uint64_t off = bs->second;
    take_locked(off, want);
    out->push_back({off, want});
    cursor_ = off + want;
    return 0;
  }
  // 4. No single extent is large enough: take the largest pieces first, so
  //    the object ends up in as few pieces as possible.
  uint64_t left = want;
  while (left > 0) {
    auto largest = std::prev(by_size_.end());
    uint64_t off = largest->second;
    uint64_t n = std::min(largest->first, left);
    take_locked(off, n);
    out->push_back({off, n});
    left -= n;
    cursor_ = off + n;
  }
  return 0;
}

int ExtentAllocator::allocate_aligned(uint64_t want, uint64_t align, std::vector<Interval>* out) {
  if (align == 0 || align % unit_ != 0) return -EINVAL;
  want = want / align * align;
  if (want == 0) return -EINVAL;
  std::lock_guard<std::mutex> l(mutex_);
  // Largest extents first: they hold the most aligned space and splitting
  // them costs the least. An extent shorter than `align` holds none, and
  // every later one is shorter still.
  std::vector<Interval> found;
  uint64_t total = 0;
  for (auto it = by_size_.rbegin(); it != by_size_.rend() && total < want && it->first >= align; ++it) {
    const uint64_t off = it->second, end = off + it->first;
    const uint64_t a = (off + align - 1) / align * align, e = end / align * align;
    if (e <= a) continue;
    const uint64_t n = std::min(e - a, want - total);
    found.push_back({a, n});
    total += n;
  }
  if (found.empty()) return -ENOSPC;
  // Taking changes by_size_, so it waits until the walk is over; the pieces
  // lie in distinct extents, so no take splits another's extent.
  for (const auto& f : found) take_locked(f.offset, f.length);
  std::sort(found.begin(), found.end(), [](const Interval& x, const Interval& y) { return x.offset < y.offset; });
  out->insert(out->end(), found.begin(), found.end());
  return 0;
}

void ExtentAllocator::set_floor(uint64_t bytes) {
  std::lock_guard<std::mutex> l(mutex_);
  floor_ = bytes;
}

void ExtentAllocator::release(const std::vector<Interval>& ext) {
  std::lock_guard<std::mutex> l(mutex_);
  for (const auto& e : ext) insert_free_locked(e.offset, e.length);
}

void ExtentAllocator::init_add_free(uint64_t offset, uint64_t length) {
  std::lock_guard<std::mutex> l(mutex_);
  insert_free_locked(offset, length);
}

uint64_t ExtentAllocator::free_bytes() const {
  std::lock_guard<std::mutex> l(mutex_);
  return free_;
}

size_t ExtentAllocator::free_extent_count() const {
  std::lock_guard<std::mutex> l(mutex_);
  return by_offset_.size();
}

double ExtentAllocator::fragmentation() const {
  // Like BlueStore's score: free space held in one extent scores 0; the same
  // space in unit-sized crumbs scores close to 1.
  std::lock_guard<std::mutex> l(mutex_);
  if (free_ == 0 || by_offset_.size() <= 1) return 0.0;
  double ideal = std::log2(static_cast<double>(free_));
  double actual = 0;
  for (const auto& [off, len] : by_offset_)
    actual += static_cast<double>(len) / free_ * std::log2(static_cast<double>(len));
  double worst = std::log2(static_cast<double>(unit_));
  if (ideal <= worst) return 0.0;
  return std::clamp((ideal - actual) / (ideal - worst), 0.0, 1.0);
}

void ExtentAllocator::for_each_free(const std::function<void(uint64_t, uint64_t)>& fn) const {
  std::lock_guard<std::mutex> l(mutex_);
  for (const auto& [off, len] : by_offset_) fn(off, len);
}

}  // namespace hybridstore
