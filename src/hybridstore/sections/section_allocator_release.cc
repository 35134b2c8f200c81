// Releases of the section allocator (holes, the map position of open extents,
// units back to the pool) and the accounting the cleaner reads.
#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cerrno>

#include "hybridstore/sections/section_allocator.h"

namespace hybridstore {

// ---------------------------------------------------------------- release

int SectionAllocator::release_in_extent(ExtentDesc* e, uint32_t a, uint32_t b, uint64_t now,
                                        bool apply) {
  if (!apply) {
    const std::vector<Placement>& pl = e->placements();
    // First placement with end > a.
    auto it = std::upper_bound(pl.begin(), pl.end(), a,
                               [](uint32_t v, const Placement& p) { return v < p.end(); });
    uint32_t cursor = a;
    for (auto j = it; cursor < b; ++j) {
      if (j == pl.end() || j->start > cursor) return -EINVAL;
      cursor = j->end();
    }
    return 0;
  }
  auto& pl = e->placements_mut();
  // First placement with end > a.
  auto it = std::upper_bound(pl.begin(), pl.end(), a,
                             [](uint32_t v, const Placement& p) { return v < p.end(); });
  EraseUnit& u = eus_[e->eu];
  Lane& l = lanes_[u.lane];
  const SectionRt& rt = secs_[l.section];
  const uint32_t bs = geo_.block_size;
  size_t first = static_cast<size_t>(it - pl.begin());
  size_t last = first;
  while (last < pl.size() && pl[last].start < b) ++last;
  std::vector<Placement> keep;
  for (size_t k = first; k < last; ++k) {
    Placement p = pl[k];
    account(e, p, -1, now);
    if (p.start < a) {
      Placement left = p;
      left.blocks = a - p.start;
      left.bytes = left.blocks * bs;
      keep.push_back(left);
    }
    if (p.end() > b) {
      Placement right = p;
      right.start = b;
      right.blocks = p.end() - b;
      right.bytes = p.bytes - (b - p.start) * bs;
      keep.push_back(right);
    }
  }
  for (auto& p : keep) account(e, p, +1, 0);
  pl.erase(pl.begin() + first, pl.begin() + last);
  pl.insert(pl.begin() + first, keep.begin(), keep.end());

  // The free run around the released range.
  auto prev_end = [&](uint32_t at) {
    auto j = std::upper_bound(pl.begin(), pl.end(), at,
                              [](uint32_t v, const Placement& p) { return v < p.end(); });
    return j == pl.begin() ? 0u : std::prev(j)->end();
  };
  auto next_start = [&](uint32_t at, uint32_t limit) {
    auto j = std::lower_bound(pl.begin(), pl.end(), at,
                              [](const Placement& p, uint32_t v) { return p.start < v; });
    return j == pl.end() ? limit : j->start;
  };
  const SectionSpec& sp = geo_.sections[l.section];
  if (e->state == ExtentState::kOpen) {
    uint32_t top = pl.empty() ? 0 : pl.back().end();
    uint32_t new_tail = top == 0 ? 0 : rt.map.next(top - 1).start;
    if (new_tail != e->tail) {
      // The highest placement went: the tail moves down to the map position of
      // the new highest one, as if it had been the last allocation.
      l.table.remove(e);
      if (sp.fill_gaps) {
        l.gaps.remove_within(e, top, rt.s);
        if (new_tail > top) l.gaps.add(e, top, new_tail - top);
      }
      e->tail = new_tail;
      if (new_tail == 0) e->detail->entered_us = now;
      e->detail->seq = ++seq_;
      l.table.insert(e);
    } else {
      refresh_runs(e, prev_end(a), next_start(b, e->tail));
    }
  } else if (e->state == ExtentState::kSealed && e->live == 0) {
    // Still staged and now empty: back to the clean head of the map table.
    l.gaps.remove_all(e);
    e->state = ExtentState::kOpen;
    e->tail = 0;
    e->detail->entered_us = now;
    e->detail->seq = ++seq_;
    ++u.open;
    ++u.wu_open[e->idx / rt.extents_per_wu];
    l.table.insert(e);
  } else {
    refresh_runs(e, prev_end(a), next_start(b, rt.s));
  }
  e->compact();
  mark(e);
  return 0;
}

int SectionAllocator::release(uint64_t block, uint64_t blocks, uint64_t now_us) {
  const uint64_t end_all = base_ + uint64_t(eus_.size()) * eu_blocks_;
  if (blocks == 0 || block < base_ || block >= end_all || blocks > end_all - block)
    return -EINVAL;
  scratch_.clear();
  const uint64_t end = block + blocks;
  for (uint64_t cur = block; cur < end;) {
    uint32_t eu = static_cast<uint32_t>((cur - base_) / eu_blocks_);
    EraseUnit& u = eus_[eu];
    if (u.lane < 0) return -EINVAL;
    const SectionRt& rt = rt_of(u);
    uint64_t off = cur - erase_unit_block(eu);
    uint32_t idx = static_cast<uint32_t>(off / rt.s);
    if (idx >= u.next_untaken) return -EINVAL;
    ExtentDesc* e = &u.extents[idx];
    uint32_t a = static_cast<uint32_t>(off - uint64_t(idx) * rt.s);
    uint32_t b = static_cast<uint32_t>(std::min<uint64_t>(rt.s, a + (end - cur)));
    if (load_placements(e, nullptr) < 0) return -EIO;
    if (release_in_extent(e, a, b, now_us, false) < 0) return -EINVAL;
    scratch_.push_back({e, {a, b}});
    cur += b - a;
  }
  for (auto& [e, r] : scratch_) release_in_extent(e, r.first, r.second, now_us, true);
  uint32_t last = UINT32_MAX;
  for (auto& [e, r] : scratch_) {
    (void)r;
    uint32_t eu = e->eu;  // read before a free invalidates e
    if (eu != last) {
      last = eu;
      // A lane's current unit emptied by releases (a failed transaction's
      // allocations returned, short-lived objects) goes back to the pool
      // too: free space stays exact and any section may take the unit.
      EraseUnit& u = eus_[eu];
      if (u.current && u.live == 0 && u.lane >= 0) {
        lanes_[u.lane].current = -1;
        u.current = false;
      }
      maybe_free_eu(eu);
    }
  }
  return 0;
}

// ---------------------------------------------------------------- cleaner support

EraseUnitInfo SectionAllocator::erase_unit_info(uint32_t eu) const {
  EraseUnitInfo i;
  const EraseUnit& u = eus_.at(eu);
  i.capacity_blocks = eu_blocks_;
  if (u.lane < 0) return i;
  i.owned = true;
  i.section = lanes_[u.lane].section;
  i.group = lanes_[u.lane].group;
  i.live_blocks = u.live;
  i.written = u.unwritten_wus == 0 && !u.current;
  i.cleaning = u.cleaning;
  i.last_modified_us = u.last_modified_us;
  if (u.live) {
    i.mean_writes = double(u.sum_writes) / u.live;
    i.mean_born_us = double(u.sum_born) / u.live;
  }
  return i;
}

int SectionAllocator::live_ranges(uint32_t eu, std::vector<LiveRange>* out, std::string* error,
                                  bool resident_only) const {
  out->clear();
  const EraseUnit& u = eus_.at(eu);
  if (u.lane < 0) return 0;
  std::vector<Placement> scratch;
  for (uint32_t i = 0; i < u.next_untaken; ++i) {
    const ExtentDesc& e = u.extents[i];
    if (resident_only && e.evicted) continue;
    const std::vector<Placement>* pl = placements_of(e, &scratch, error);
    if (!pl) return -EIO;
    uint64_t base = extent_block(e);
    for (const Placement& p : *pl)
      out->push_back(LiveRange{base + p.start, p.blocks, p.bytes, p.writes, p.owner, p.born_us});
  }
  return 0;
}

int SectionAllocator::begin_cleaning(uint32_t eu) {
  if (eu >= eus_.size()) return -EINVAL;
  EraseUnit& u = eus_[eu];
  if (u.lane < 0 || u.cleaning || u.unwritten_wus != 0 || u.current) return -EINVAL;
  Lane& l = lanes_[u.lane];
  for (uint32_t i = 0; i < u.next_untaken; ++i) {
    l.holes.remove_all(&u.extents[i]);
    u.extents[i].compact();
  }
  u.cleaning = true;
  return 0;
}

int SectionAllocator::end_cleaning(uint32_t eu) {
  if (eu >= eus_.size()) return -EINVAL;
  EraseUnit& u = eus_[eu];
  if (u.lane < 0 || !u.cleaning) return -EINVAL;
  u.cleaning = false;
  Lane& l = lanes_[u.lane];
  if (holes_indexed(l, u)) {
    const SectionRt& rt = secs_[l.section];
    // Cleaning read the placements without keeping them; indexing needs
    // them in hand (an unreadable extent keeps its holes unindexed).
    for (uint32_t i = 0; i < u.next_untaken; ++i)
      if (load_placements(&u.extents[i], nullptr) == 0) add_free_runs(l.holes, &u.extents[i], 0, rt.s);
  }
  return 0;
}

const MapTable& SectionAllocator::map_table(int section, uint32_t group) const {
  return lanes_.at(section * geo_.groups + group).table;
}

}  // namespace hybridstore
