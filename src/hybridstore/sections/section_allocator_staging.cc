// Staging of the section allocator: sealing extents, collecting write units
// until a whole flash erase block can be written, the staging cap and timeout,
// and the WriteRegion events that ask the engine to write.
#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cerrno>

#include "hybridstore/sections/section_allocator.h"

namespace hybridstore {

void SectionAllocator::enforce_staging_cap(Lane& l, AllocEvents* ev) {
  const uint32_t lane = static_cast<uint32_t>(&l - lanes_.data());
  while (l.staged_count >= tune_.max_staged_units + 1) {
    bool forced = false;
    for (size_t i = 0; i < l.staged.size(); ++i) {
      StagedRef ref = l.staged[i];
      const EraseUnit& u = eus_[ref.eu];
      bool valid = u.generation == ref.generation && u.lane == static_cast<int32_t>(lane) &&
                   !u.wu_written[ref.wu];
      if (!valid) {
        if (i == 0) {
          l.staged.pop_front();
          --i;
        }
        continue;
      }
      const SectionRt& rt = secs_[l.section];
      bool is_current = u.current && u.next_untaken < (ref.wu + 1) * rt.extents_per_wu;
      if (is_current) continue;
      if (i == 0) l.staged.pop_front();
      force_wu(ref.eu, ref.wu, ev);
      forced = true;
      break;
    }
    if (!forced) break;
  }
}

// ---------------------------------------------------------------- sealing and writing

void SectionAllocator::seal(ExtentDesc* e, bool in_table, AllocEvents* ev) {
  EraseUnit& u = eus_[e->eu];
  Lane& l = lanes_[u.lane];
  const SectionRt& rt = secs_[l.section];
  if (in_table) l.table.remove(e);
  e->state = ExtentState::kSealed;
  --u.open;
  --u.wu_open[e->idx / rt.extents_per_wu];
  uint32_t top = e->placements().empty() ? 0 : e->placements().back().end();
  e->tail = rt.s;
  // A sealed extent takes no placement at its tail again, and its vector's
  // doubling slack is a third of the section state at millions of small
  // objects (docs/memory.md, step 8).
  if (e->detail) e->detail->placements.shrink_to_fit();
  if (geo_.sections[l.section].fill_gaps) {
    l.gaps.remove_within(e, top, rt.s);
    if (top < rt.s) l.gaps.add(e, top, rt.s - top);
  }
  mark(e);
  ev->sealed.push_back(extent_block(*e));
  uint32_t wu = wu_of(u, e->idx);
  if (wu_complete(e->eu, wu)) ready_.push_back(StagedRef{e->eu, wu, u.generation, 0});
}

bool SectionAllocator::wu_complete(uint32_t eu, uint32_t wu) const {
  const EraseUnit& u = eus_[eu];
  if (u.lane < 0 || u.wu_written[wu]) return false;
  const SectionRt& rt = secs_[lanes_[u.lane].section];
  uint32_t hi = (wu + 1) * rt.extents_per_wu;
  return u.next_untaken >= hi && u.wu_open[wu] == 0;
}

void SectionAllocator::hand_over_whole_units(std::vector<AllocPiece>* pieces, size_t from) {
  std::vector<AllocPiece> out(pieces->begin(), pieces->begin() + static_cast<long>(from));
  for (size_t i = from; i < pieces->size(); ++i) {
    const AllocPiece p = (*pieces)[i];
    if (p.in_place || p.direct) {
      out.push_back(p);
      continue;
    }
    const uint64_t bs = geo_.block_size;
    uint64_t b = p.block, end = p.block + p.blocks, bytes_left = p.bytes;
    auto emit_piece = [&](uint64_t upto, bool direct) {
      if (upto <= b) return;
      // Every block but the piece's last is full of object data.
      uint64_t n = upto - b;
      uint64_t bytes = upto == end ? bytes_left : n * bs;
      out.push_back(AllocPiece{b, n, bytes, false, direct});
      bytes_left -= bytes;
      b = upto;
    };
    while (b < end) {
      const uint32_t eu = static_cast<uint32_t>((b - base_) / eu_blocks_);
      EraseUnit& u = eus_[eu];
      const SectionRt& rt = rt_of(u);
      const uint64_t wu_blocks = uint64_t(rt.extents_per_wu) * rt.s;
      const uint64_t in_eu = b - erase_unit_block(eu);
      const uint64_t wu_start = erase_unit_block(eu) + in_eu / wu_blocks * wu_blocks;
      if (wu_start != b) {  // starts inside a unit: up to the next one, staged
        emit_piece(std::min(end, wu_start + wu_blocks), false);
        continue;
      }
      if (b + wu_blocks > end) {  // the unit's rest is not ours
        emit_piece(end, false);
        continue;
      }
      const uint32_t wu = static_cast<uint32_t>(in_eu / wu_blocks);
      // Filled by this request alone: every extent of it sealed around one
      // placement that spans it, and no region handed out for it yet.
      bool whole = wu_complete(eu, wu);
      for (uint32_t x = wu * rt.extents_per_wu; whole && x < (wu + 1) * rt.extents_per_wu; ++x) {
        const ExtentDesc& e = u.extents[x];
        const std::vector<Placement>& pl = e.placements();
        whole = pl.size() == 1 && pl[0].start == 0 && pl[0].blocks == rt.s;
      }
      if (whole) {
        AllocEvents none;
        emit(eu, wu, false, &none);  // written: the caller writes it now
      }
      emit_piece(b + wu_blocks, whole);
    }
  }
  // Adjacent direct pieces merge again (one I/O for a run of units).
  pieces->clear();
  for (const auto& p : out) {
    if (!pieces->empty() && p.direct && pieces->back().direct &&
        pieces->back().block + pieces->back().blocks == p.block) {
      pieces->back().blocks += p.blocks;
      pieces->back().bytes += p.bytes;
    } else {
      pieces->push_back(p);
    }
  }
}

void SectionAllocator::emit(uint32_t eu, uint32_t wu, bool forced, AllocEvents* ev) {
  EraseUnit& u = eus_[eu];
  Lane& l = lanes_[u.lane];
  const SectionRt& rt = secs_[l.section];
  uint32_t lo = wu * rt.extents_per_wu, hi = lo + rt.extents_per_wu;
  WriteRegion r{erase_unit_block(eu) + uint64_t(lo) * rt.s, rt.extents_per_wu * rt.s,
                l.section, l.group, forced, {}};
  const bool holes = holes_indexed(l, u);
  const bool fill_gaps = geo_.sections[l.section].fill_gaps;
  for (uint32_t i = lo; i < hi; ++i) {
    ExtentDesc* e = &u.extents[i];
    if (e->live) r.extents.emplace_back(extent_block(*e), rt.s);
    e->state = ExtentState::kWritten;
    // A staged extent's runs are all its free intervals when gaps are indexed:
    // they become holes as they are.
    if (fill_gaps) {
      if (holes) l.gaps.transfer_all(e, &l.holes); else l.gaps.remove_all(e);
    } else if (holes) {
      add_free_runs(l.holes, e, 0, rt.s);
    }
    // Written, it never re-enters the map table: its table state goes, and
    // with it the detail when it holds nothing else.
    if (e->detail) {
      e->detail->entered_us = e->detail->seq = e->detail->last_hint = 0;
      e->compact();
    }
    mark(e);
  }
  u.wu_written[wu] = 1;
  --u.unwritten_wus;
  --l.staged_count;
  mark(eu);
  if (!r.extents.empty()) ev->regions.push_back(std::move(r));
}

void SectionAllocator::collect(AllocEvents* ev) {
  for (const StagedRef& ref : ready_) {
    const EraseUnit& u = eus_[ref.eu];
    // Re-checked: since the unit completed, a release may have reopened one of
    // its extents, or its unit may have been freed.
    if (u.generation == ref.generation && wu_complete(ref.eu, ref.wu))
      emit(ref.eu, ref.wu, false, ev);
  }
  ready_.clear();
}

void SectionAllocator::force_wu(uint32_t eu, uint32_t wu, AllocEvents* ev) {
  EraseUnit& u = eus_[eu];
  if (u.lane < 0 || u.wu_written[wu]) return;
  Lane& l = lanes_[u.lane];
  const SectionRt& rt = secs_[l.section];
  uint32_t lo = wu * rt.extents_per_wu, hi = lo + rt.extents_per_wu;
  const bool was_complete = wu_complete(eu, wu);
  // Pad the untaken rest of the unit first so that the seals below complete it.
  if (u.next_untaken < hi) {
    for (uint32_t i = u.next_untaken; i < hi; ++i) {
      ExtentDesc* e = &u.extents[i];
      e->state = ExtentState::kSealed;
      e->tail = rt.s;
      if (geo_.sections[l.section].fill_gaps) l.gaps.add(e, 0, rt.s);
      mark(e);
    }
    u.next_untaken = hi;
    if (hi == rt.extents_per_eu && u.current) {
      u.current = false;
      l.current = -1;
    }
    mark(eu);
  }
  for (uint32_t i = lo; i < hi; ++i) {
    ExtentDesc* e = &u.extents[i];
    if (e->state == ExtentState::kOpen) seal(e, true, ev);
  }
  emit(eu, wu, !was_complete, ev);
  maybe_free_eu(eu);
}

void SectionAllocator::tick(uint64_t now_us, AllocEvents* ev) {
  collect(ev);
  for (size_t li = 0; li < lanes_.size(); ++li) {
    Lane& l = lanes_[li];
    while (!l.staged.empty()) {
      StagedRef ref = l.staged.front();
      const EraseUnit& u = eus_[ref.eu];
      bool valid = u.generation == ref.generation && u.lane == static_cast<int32_t>(li) &&
                   !u.wu_written[ref.wu];
      if (!valid) {
        l.staged.pop_front();
        continue;
      }
      if (ref.first_us + tune_.staging_timeout_us > now_us) break;
      l.staged.pop_front();
      force_wu(ref.eu, ref.wu, ev);
    }
  }
}

void SectionAllocator::flush(uint64_t now_us, AllocEvents* ev) {
  (void)now_us;
  collect(ev);
  for (size_t li = 0; li < lanes_.size(); ++li) {
    Lane& l = lanes_[li];
    std::deque<StagedRef> refs;
    refs.swap(l.staged);
    for (const StagedRef& ref : refs) {
      const EraseUnit& u = eus_[ref.eu];
      if (u.generation == ref.generation && u.lane == static_cast<int32_t>(li))
        force_wu(ref.eu, ref.wu, ev);
    }
  }
}

}  // namespace hybridstore
