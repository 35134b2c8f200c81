#include "hybridstore/sections/map_table.h"

#include <cassert>

namespace hybridstore {

void MapTable::init(const SegmentMap& map) {
  map_ = map;
  width_ = map.entries_per_level();
  uint32_t s = map.extent_blocks();
  buckets_.assign(s, Bucket{});
  entry_of_.assign(s, -1);
  ordinal_.assign(s, 0);
  entries_.assign(static_cast<size_t>(map.levels()) * width_, Entry{});
  level_nonempty_.assign(map.levels(), 0);
  size_ = 0;
  clean_ = 0;
  for (uint32_t b = 0; b < s; ++b) {
    SegmentLabel l;
    if (!map.label_of(b, &l)) continue;
    int id = entry_id(l.level, l.index);
    entry_of_[b] = id;
    ordinal_[b] = static_cast<uint32_t>(entries_[id].starts.size());
    entries_[id].starts.push_back(b);
  }
  for (auto& e : entries_) e.nonempty.assign((e.starts.size() + 63) / 64, 0);
}

void MapTable::insert(ExtentDesc* e) {
  uint32_t b = e->tail;
  assert(b < buckets_.size() && entry_of_[b] >= 0);
  Bucket& bk = buckets_[b];
  ExtentDetail& d = e->more();
  d.next = nullptr;
  d.prev = bk.tail;
  if (bk.tail) {
    bk.tail->detail->next = e;
  } else {
    bk.head = e;
    int id = entry_of_[b];
    Entry& en = entries_[id];
    uint32_t o = ordinal_[b];
    en.nonempty[o / 64] |= uint64_t(1) << (o % 64);
    level_nonempty_[id / width_] |= uint64_t(1) << (id % width_);
  }
  bk.tail = e;
  ++size_;
  if (b == 0) ++clean_;
}

void MapTable::remove(ExtentDesc* e) {
  uint32_t b = e->tail;
  Bucket& bk = buckets_[b];
  ExtentDetail& d = *e->detail;  // every extent in the table has one
  if (d.prev) d.prev->detail->next = d.next; else bk.head = d.next;
  if (d.next) d.next->detail->prev = d.prev; else bk.tail = d.prev;
  d.prev = d.next = nullptr;
  --size_;
  if (b == 0) --clean_;
  if (!bk.head) {
    int id = entry_of_[b];
    Entry& en = entries_[id];
    uint32_t o = ordinal_[b];
    en.nonempty[o / 64] &= ~(uint64_t(1) << (o % 64));
    bool any = false;
    for (uint64_t w : en.nonempty) any |= (w != 0);
    if (!any) level_nonempty_[id / width_] &= ~(uint64_t(1) << (id % width_));
  }
}

ExtentDesc* MapTable::entry_first(const Entry& en) const {
  for (size_t w = 0; w < en.nonempty.size(); ++w) {
    if (en.nonempty[w]) {
      uint32_t o = static_cast<uint32_t>(w * 64 + __builtin_ctzll(en.nonempty[w]));
      return buckets_[en.starts[o]].head;
    }
  }
  return nullptr;
}

ExtentDesc* MapTable::pick(SelectionPolicy policy, uint32_t blocks, uint64_t hint) const {
  const uint32_t s = map_.extent_blocks();
  ExtentDesc* best = nullptr;
  uint32_t best_free = 0;
  uint64_t best_dist = 0;
  for (size_t level = 0; level < level_nonempty_.size(); ++level) {
    uint64_t mask = level_nonempty_[level];
    while (mask) {
      int bit = __builtin_ctzll(mask);
      mask &= mask - 1;
      ExtentDesc* c = entry_first(entries_[level * width_ + bit]);
      uint32_t free = s - c->tail;
      if (free < blocks) continue;
      if (!best) {
        best = c;
        best_free = free;
        best_dist = c->last_hint() > hint ? c->last_hint() - hint : hint - c->last_hint();
        continue;
      }
      bool older = c->entered_us() < best->entered_us() ||
                   (c->entered_us() == best->entered_us() && c->seq() < best->seq());
      if (policy == SelectionPolicy::kHfm) {
        if (older) best = c;
        continue;
      }
      uint64_t dist = c->last_hint() > hint ? c->last_hint() - hint : hint - c->last_hint();
      if (free < best_free || (free == best_free && dist < best_dist) ||
          (free == best_free && dist == best_dist && older)) {
        best = c;
        best_free = free;
        best_dist = dist;
      }
    }
  }
  return best;
}

SegmentLabel MapTable::entry_label(uint32_t start) const {
  int id = entry_of_.at(start);
  return SegmentLabel{id % width_ - 1, id / width_};
}

std::vector<const ExtentDesc*> MapTable::entry_extents(int level, int index) const {
  std::vector<const ExtentDesc*> out;
  const Entry& en = entries_.at(entry_id(level, index));
  for (uint32_t b : en.starts)
    for (const ExtentDesc* e = buckets_[b].head; e; e = e->next()) out.push_back(e);
  return out;
}

}  // namespace hybridstore
