#include "hybridstore/free_run_index.h"

#include <algorithm>
#include <cassert>

#include "hybridstore/segment_map.h"

namespace hybridstore {

int FreeRunIndex::bucket_of(uint32_t len) {
  if (len <= kExact) return static_cast<int>(len) - 1;
  return kExact + floor_log2(len) - 6;
}

void FreeRunIndex::link(uint32_t id) {
  Run& r = nodes_[id];
  r.bucket = static_cast<uint16_t>(bucket_of(r.len));
  r.prev = kNone;
  r.next = heads_[r.bucket];
  if (r.next != kNone) nodes_[r.next].prev = id;
  heads_[r.bucket] = id;
  nonempty_[r.bucket / 64] |= uint64_t(1) << (r.bucket % 64);
}

void FreeRunIndex::unlink(uint32_t id) {
  Run& r = nodes_[id];
  if (r.prev != kNone) nodes_[r.prev].next = r.next; else heads_[r.bucket] = r.next;
  if (r.next != kNone) nodes_[r.next].prev = r.prev;
  if (heads_[r.bucket] == kNone) nonempty_[r.bucket / 64] &= ~(uint64_t(1) << (r.bucket % 64));
}

uint32_t FreeRunIndex::add(ExtentDesc* e, uint32_t start, uint32_t len) {
  assert(len > 0);
  uint32_t id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = static_cast<uint32_t>(nodes_.size());
    nodes_.emplace_back();
  }
  Run& r = nodes_[id];
  r.extent = e;
  r.start = start;
  r.len = len;
  r.live = true;
  link(id);
  e->runs.push_back(id);
  total_ += len;
  ++count_;
  return id;
}

void FreeRunIndex::remove(uint32_t id) {
  Run& r = nodes_[id];
  assert(r.live);
  unlink(id);
  auto& runs = r.extent->runs;
  auto it = std::find(runs.begin(), runs.end(), id);
  assert(it != runs.end());
  *it = runs.back();
  runs.pop_back();
  total_ -= r.len;
  --count_;
  r.live = false;
  r.extent = nullptr;
  free_ids_.push_back(id);
}

void FreeRunIndex::remove_within(ExtentDesc* e, uint32_t lo, uint32_t hi) {
  for (size_t i = 0; i < e->runs.size();) {
    const Run& r = nodes_[e->runs[i]];
    if (r.start >= lo && r.start + r.len <= hi) {
      remove(e->runs[i]);  // swaps the last id into slot i
    } else {
      ++i;
    }
  }
}

void FreeRunIndex::consume_front(uint32_t id, uint32_t n) {
  Run& r = nodes_[id];
  assert(n <= r.len);
  if (n == r.len) {
    remove(id);
    return;
  }
  unlink(id);
  r.start += n;
  r.len -= n;
  total_ -= n;
  link(id);
}

}  // namespace hybridstore
