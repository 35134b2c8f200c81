#include "hybridstore/sections/free_run_index.h"

#include <algorithm>
#include <cassert>

#include "hybridstore/sections/segment_map.h"

namespace hybridstore {

uint32_t FreeRunIndex::Pool::alloc() {
  if (!free_ids_.empty()) {
    uint32_t id = free_ids_.back();
    free_ids_.pop_back();
    return id;
  }
  if ((size_ & kChunkMask) == 0) chunks_.emplace_back(new Run[kChunkMask + 1]);
  return size_++;
}

void FreeRunIndex::Pool::release(uint32_t id) {
  Run& r = (*this)[id];
  r.live = false;
  r.extent = nullptr;
  free_ids_.push_back(id);
}

int FreeRunIndex::bucket_of(uint32_t len) {
  if (len <= kExact) return static_cast<int>(len) - 1;
  return kExact + floor_log2(len) - 6;
}

void FreeRunIndex::link(uint32_t id) {
  Run& r = (*pool_)[id];
  r.bucket = static_cast<uint16_t>(bucket_of(r.len));
  r.prev = kNone;
  r.next = heads_[r.bucket];
  if (r.next != kNone) (*pool_)[r.next].prev = id;
  heads_[r.bucket] = id;
  nonempty_[r.bucket / 64] |= uint64_t(1) << (r.bucket % 64);
  total_ += r.len;
  ++count_;
}

void FreeRunIndex::unlink(uint32_t id) {
  Run& r = (*pool_)[id];
  if (r.prev != kNone) (*pool_)[r.prev].next = r.next; else heads_[r.bucket] = r.next;
  if (r.next != kNone) (*pool_)[r.next].prev = r.prev;
  if (heads_[r.bucket] == kNone) nonempty_[r.bucket / 64] &= ~(uint64_t(1) << (r.bucket % 64));
  total_ -= r.len;
  --count_;
}

uint32_t FreeRunIndex::add(ExtentDesc* e, uint32_t start, uint32_t len) {
  assert(len > 0);
  uint32_t id = pool_->alloc();
  Run& r = (*pool_)[id];
  r.extent = e;
  r.start = start;
  r.len = len;
  r.live = true;
  link(id);
  e->runs_mut().push_back(id);
  return id;
}

void FreeRunIndex::remove(uint32_t id) {
  Run& r = (*pool_)[id];
  assert(r.live);
  unlink(id);
  auto& runs = r.extent->detail->runs;  // listed there, so it has a detail
  auto it = std::find(runs.begin(), runs.end(), id);
  assert(it != runs.end());
  *it = runs.back();
  runs.pop_back();
  pool_->release(id);
}

void FreeRunIndex::remove_within(ExtentDesc* e, uint32_t lo, uint32_t hi) {
  if (!e->detail) return;
  auto& runs = e->detail->runs;
  for (size_t i = 0; i < runs.size();) {
    uint32_t id = runs[i];
    const Run& r = (*pool_)[id];
    if (r.start >= lo && r.start + r.len <= hi) {
      unlink(id);
      pool_->release(id);
      runs[i] = runs.back();
      runs.pop_back();
    } else {
      ++i;
    }
  }
}

void FreeRunIndex::remove_all(ExtentDesc* e) {
  if (!e->detail) return;
  for (uint32_t id : e->detail->runs) {
    unlink(id);
    pool_->release(id);
  }
  e->detail->runs.clear();
}

void FreeRunIndex::transfer_all(ExtentDesc* e, FreeRunIndex* to) {
  for (uint32_t id : e->runs()) {
    unlink(id);
    to->link(id);
  }
}

void FreeRunIndex::consume_front(uint32_t id, uint32_t n) {
  Run& r = (*pool_)[id];
  assert(n <= r.len);
  if (n == r.len) {
    remove(id);
    return;
  }
  unlink(id);
  r.start += n;
  r.len -= n;
  link(id);
}

}  // namespace hybridstore
