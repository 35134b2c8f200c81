// Allocation of the section allocator: geometry, erase units, placing objects.
// Staging and writes: section_allocator_staging.cc; releases and the cleaner's
// view: section_allocator_release.cc; persistence and rebuild:
// allocator_records.cc; usage, verify and dump: section_allocator_inspect.cc.
#include "hybridstore/sections/section_allocator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstdlib>

#include "hscommon/config.h"

namespace hybridstore {

const std::vector<Placement> ExtentDesc::kNoPlacements;
const std::vector<uint32_t> ExtentDesc::kNoRuns;

int make_allocator_geometry(const Config& cfg, uint64_t offset, uint64_t bytes,
                            AllocatorGeometry* out, std::string* error) {
  AllocatorGeometry g;
  g.block_size = static_cast<uint32_t>(cfg.get_size("hybridstore_ssd_block_size"));
  if (offset % g.block_size || bytes % g.block_size) {
    *error = fmt::format("SSD range [{}, +{}) is not aligned to the {}-byte block", offset,
                         bytes, g.block_size);
    return -EINVAL;
  }
  g.first_block = offset / g.block_size;
  g.blocks = bytes / g.block_size;
  g.erase_block_bytes = cfg.get_size("hybridstore_flash_erase_block");
  g.groups = static_cast<uint32_t>(cfg.get_int("hybridstore_ssd_hotness_groups"));
  int r = parse_sections(cfg.get_str("hybridstore_ssd_sections"),
                         SectionDefaults::from_config(cfg), &g.sections, error);
  if (r < 0) {
    *error = "hybridstore_ssd_sections: " + *error;
    return r;
  }
  *out = std::move(g);
  return 0;
}

AllocatorTuning AllocatorTuning::from_config(const Config& cfg) {
  AllocatorTuning t;
  t.staging_timeout_us =
      static_cast<uint64_t>(cfg.get_double("hybridstore_ssd_staging_timeout") * 1e6);
  t.max_staged_units = static_cast<uint32_t>(cfg.get_int("hybridstore_ssd_max_staged_units"));
  t.hole_fill_below = cfg.get_double("hybridstore_ssd_hole_fill_below");
  return t;
}

int SectionAllocator::create(const AllocatorGeometry& geo, const AllocatorTuning& tune,
                             std::unique_ptr<SectionAllocator>* out, std::string* error) {
  std::unique_ptr<SectionAllocator> a(new SectionAllocator());
  int r = a->init(geo, tune, error);
  if (r < 0) return r;
  *out = std::move(a);
  return 0;
}

int SectionAllocator::init(const AllocatorGeometry& geo, const AllocatorTuning& tune,
                           std::string* error) {
  geo_ = geo;
  tune_ = tune;
  if (!is_power_of_two(geo.block_size) || geo.block_size < 256 || geo.block_size > 65536) {
    *error = fmt::format("block size {} must be a power of two between 256 and 64K",
                         geo.block_size);
    return -EINVAL;
  }
  if (geo.groups < 1 || geo.groups > 16) {
    *error = fmt::format("{} hotness groups: must be 1..16", geo.groups);
    return -EINVAL;
  }
  if (geo.erase_block_bytes &&
      (!is_power_of_two(geo.erase_block_bytes) || geo.erase_block_bytes < geo.block_size ||
       geo.erase_block_bytes > kMaxExtentBytes)) {
    *error = fmt::format(
        "flash erase block {} must be 0 (unknown) or a power of two from the block size to 1G",
        geo.erase_block_bytes);
    return -EINVAL;
  }
  if (tune.max_staged_units < 1) {
    *error = "max staged units must be at least 1";
    return -EINVAL;
  }
  uint32_t erase_blocks = static_cast<uint32_t>(geo.erase_block_bytes / geo.block_size);
  secs_.assign(geo.sections.size(), SectionRt{});
  eu_blocks_ = 0;
  bool any = false;
  for (size_t i = 0; i < geo.sections.size(); ++i) {
    const SectionSpec& sp = geo.sections[i];
    if (sp.bypass()) continue;
    any = true;
    std::string merr;
    if (SegmentMap::make(sp.extent_blocks, sp.mode, sp.delta, &secs_[i].map, &merr) < 0) {
      *error = fmt::format("section '{}': {}", sp.name, merr);
      return -EINVAL;
    }
    if (sp.theta < 1 || sp.theta > sp.extent_blocks) {
      *error = fmt::format("section '{}': theta {} out of range", sp.name, sp.theta);
      return -EINVAL;
    }
    secs_[i].s = sp.extent_blocks;
    eu_blocks_ = std::max(eu_blocks_, std::max(sp.extent_blocks, erase_blocks));
  }
  if (!any) {
    *error = "no SSD section (all sections bypass)";
    return -EINVAL;
  }
  for (size_t i = 0; i < geo.sections.size(); ++i) {
    if (geo.sections[i].bypass()) continue;
    uint32_t wu = std::max(secs_[i].s, erase_blocks);
    secs_[i].extents_per_eu = eu_blocks_ / secs_[i].s;
    secs_[i].extents_per_wu = wu / secs_[i].s;
  }
  base_ = (geo.first_block + eu_blocks_ - 1) / eu_blocks_ * eu_blocks_;
  uint64_t end = geo.first_block + geo.blocks;
  uint64_t n = end > base_ ? (end - base_) / eu_blocks_ : 0;
  if (n == 0 || n > (1u << 30)) {
    *error = fmt::format("SSD range of {} blocks holds no erase unit of {} blocks (or too many)",
                         geo.blocks, eu_blocks_);
    return -EINVAL;
  }
  eus_.clear();
  eus_.resize(n);  // move-only descriptors: no copies of a prototype
  {
    std::lock_guard<std::mutex> pl(pool_mutex_);
    free_bits_.assign((n + 63) / 64, 0);
    lent_bits_.assign((n + 63) / 64, 0);
    for (uint64_t i = 0; i < n; ++i) free_bits_[i / 64] |= uint64_t(1) << (i % 64);
    free_count_ = static_cast<uint32_t>(n);
  }

  fallback_.assign(geo.sections.size(), {});
  for (size_t i = 0; i < geo.sections.size(); ++i) {
    if (geo.sections[i].bypass()) continue;
    std::vector<int> order;
    for (size_t j = 0; j < geo.sections.size(); ++j)
      if (!geo.sections[j].bypass()) order.push_back(static_cast<int>(j));
    int li = floor_log2(secs_[i].s);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      int da = std::abs(floor_log2(secs_[a].s) - li), db = std::abs(floor_log2(secs_[b].s) - li);
      if (static_cast<size_t>(a) == i) da = -1;
      if (static_cast<size_t>(b) == i) db = -1;
      if (da != db) return da < db;
      return secs_[a].s < secs_[b].s;
    });
    fallback_[i] = order;
  }

  lanes_.clear();
  lanes_.resize(geo.sections.size() * geo.groups);
  for (size_t i = 0; i < geo.sections.size(); ++i) {
    for (uint32_t g = 0; g < geo.groups; ++g) {
      Lane& l = lanes_[i * geo.groups + g];
      l.section = static_cast<int>(i);
      l.group = g;
      l.gaps.set_pool(&run_pool_);
      l.holes.set_pool(&run_pool_);
      if (!geo.sections[i].bypass()) l.table.init(secs_[i].map);
    }
  }
  return 0;
}

// ---------------------------------------------------------------- bookkeeping

void SectionAllocator::mark(ExtentDesc* e) {
  assert(!e->evicted);  // its record would lose the placements
  if (!track_ || e->dirty) return;
  e->dirty = true;
  dirty_extents_.push_back(DirtyExtent{e->eu, e->idx, eus_[e->eu].generation});
}

void SectionAllocator::mark(uint32_t eu) {
  EraseUnit& u = eus_[eu];
  if (!track_ || u.dirty) return;
  u.dirty = true;
  dirty_eus_.push_back(eu);
}

void SectionAllocator::account(ExtentDesc* e, const Placement& p, int sign, uint64_t now) {
  EraseUnit& u = eus_[e->eu];
  Lane& l = lanes_[u.lane];
  uint64_t w = uint64_t(p.writes) * p.blocks;
  unsigned __int128 b = static_cast<unsigned __int128>(p.born_us) * p.blocks;
  if (sign > 0) {
    e->live += p.blocks;
    u.live += p.blocks;
    l.live_blocks += p.blocks;
    l.live_bytes += p.bytes;
    u.sum_writes += w;
    u.sum_born += b;
    if (now > u.last_modified_us) {
      u.last_modified_us = now;
      mark(e->eu);
    }
  } else {
    e->live -= p.blocks;
    u.live -= p.blocks;
    l.live_blocks -= p.blocks;
    l.live_bytes -= p.bytes;
    u.sum_writes -= w;
    u.sum_born -= b;
  }
}

void SectionAllocator::add_free_runs(FreeRunIndex& idx, ExtentDesc* e, uint32_t lo,
                                     uint32_t hi) {
  uint32_t cursor = lo;
  const std::vector<Placement>& pl = e->placements();
  auto it = std::upper_bound(pl.begin(), pl.end(), lo,
                             [](uint32_t v, const Placement& p) { return v < p.end(); });
  for (; it != pl.end() && it->start < hi; ++it) {
    if (it->start > cursor) idx.add(e, cursor, it->start - cursor);
    cursor = std::max(cursor, it->end());
  }
  if (cursor < hi) idx.add(e, cursor, hi - cursor);
}

void SectionAllocator::refresh_runs(ExtentDesc* e, uint32_t lo, uint32_t hi) {
  EraseUnit& u = eus_[e->eu];
  Lane& l = lanes_[u.lane];
  if (e->state == ExtentState::kWritten) {
    if (!holes_indexed(l, u)) return;
    l.holes.remove_within(e, lo, hi);
    add_free_runs(l.holes, e, lo, hi);
  } else {
    if (!geo_.sections[l.section].fill_gaps) return;
    l.gaps.remove_within(e, lo, hi);
    add_free_runs(l.gaps, e, lo, hi);
  }
}

// ---------------------------------------------------------------- erase units

int SectionAllocator::take_eu(Lane& l) {
  uint32_t eu = 0;
  {
    std::lock_guard<std::mutex> pl(pool_mutex_);
    // The last floor_units_ free units are the kvfs's to grow into.
    if (free_count_ <= floor_units_) return -ENOSPC;
    for (size_t w = 0; w < free_bits_.size(); ++w) {
      if (free_bits_[w]) {
        eu = static_cast<uint32_t>(w * 64 + __builtin_ctzll(free_bits_[w]));
        break;
      }
    }
    free_bits_[eu / 64] &= ~(uint64_t(1) << (eu % 64));
    --free_count_;
  }
  const SectionRt& rt = secs_[l.section];
  EraseUnit& u = eus_[eu];
  u.lane = static_cast<int32_t>(&l - lanes_.data());
  u.next_untaken = 0;
  u.live = 0;
  u.open = 0;
  u.current = true;
  u.cleaning = false;
  u.last_modified_us = 0;
  u.sum_writes = 0;
  u.sum_born = 0;
  uint32_t wus = rt.extents_per_eu / rt.extents_per_wu;
  u.unwritten_wus = wus;
  u.wu_written.assign(wus, 0);
  u.wu_first_us.assign(wus, 0);
  u.wu_open.assign(wus, 0);
  // All descriptors are built (and their memory touched) here, once per unit,
  // rather than one page fault at a time on the allocation path; a freed unit
  // keeps them, reset, for its next owner of the same section.
  if (u.extents.size() != rt.extents_per_eu) {
    u.extents.clear();
    u.extents.resize(rt.extents_per_eu);
    for (uint32_t i = 0; i < rt.extents_per_eu; ++i) {
      u.extents[i].eu = eu;
      u.extents[i].idx = i;
    }
  }
  l.current = static_cast<int32_t>(eu);
  ++l.eus;
  mark(eu);
  return static_cast<int>(eu);
}

void SectionAllocator::maybe_free_eu(uint32_t eu) {
  EraseUnit& u = eus_[eu];
  if (u.lane < 0 || u.live != 0 || u.current) return;
  Lane& l = lanes_[u.lane];
  const SectionRt& rt = secs_[l.section];
  for (uint32_t i = 0; i < u.next_untaken; ++i) {
    ExtentDesc* e = &u.extents[i];
    if (e->state == ExtentState::kOpen) l.table.remove(e);
    // An extent's runs live in one index, chosen by whether it is written.
    if (e->state == ExtentState::kWritten)
      l.holes.remove_all(e);
    else
      l.gaps.remove_all(e);
    if (track_) deleted_extents_.emplace_back(eu, i);
    *e = ExtentDesc();
    e->eu = eu;
    e->idx = i;
  }
  uint32_t started = (u.next_untaken + rt.extents_per_wu - 1) / rt.extents_per_wu;
  for (uint32_t w = 0; w < started; ++w)
    if (!u.wu_written[w]) --l.staged_count;
  --l.eus;
  u.lane = -1;
  u.wu_written.clear();
  u.wu_first_us.clear();
  u.wu_open.clear();
  u.generation++;
  u.next_untaken = 0;
  u.open = 0;
  u.unwritten_wus = 0;
  u.cleaning = false;
  u.sum_writes = 0;
  u.sum_born = 0;
  {
    std::lock_guard<std::mutex> pl(pool_mutex_);
    free_bits_[eu / 64] |= uint64_t(1) << (eu % 64);
    ++free_count_;
  }
  mark(eu);
}

uint64_t SectionAllocator::fresh_available(const Lane& l) const {
  const SectionRt& rt = secs_[l.section];
  uint64_t n = l.table.clean_count() + uint64_t(takeable_units()) * rt.extents_per_eu;
  if (l.current >= 0) n += rt.extents_per_eu - eus_[l.current].next_untaken;
  return n;
}

ExtentDesc* SectionAllocator::take_fresh(Lane& l, uint64_t now, AllocEvents* ev) {
  if (ExtentDesc* e = l.table.clean_head()) {
    l.table.remove(e);
    return e;
  }
  const SectionRt& rt = secs_[l.section];
  if (l.current < 0 || eus_[l.current].next_untaken % rt.extents_per_wu == 0) {
    // About to start a write unit: keep the staged ones under the cap first.
    enforce_staging_cap(l, ev);
  }
  if (l.current < 0 && take_eu(l) < 0) return nullptr;
  uint32_t eu = static_cast<uint32_t>(l.current);
  EraseUnit& u = eus_[eu];
  uint32_t idx = u.next_untaken++;
  ExtentDesc* e = &u.extents[idx];
  e->state = ExtentState::kOpen;
  e->tail = 0;
  e->more().entered_us = now;
  ++u.open;
  ++u.wu_open[idx / rt.extents_per_wu];
  if (idx % rt.extents_per_wu == 0) {
    uint32_t wu = idx / rt.extents_per_wu;
    u.wu_first_us[wu] = now;
    l.staged.push_back(StagedRef{eu, wu, u.generation, now});
    ++l.staged_count;
  }
  if (u.next_untaken == rt.extents_per_eu) {
    u.current = false;
    l.current = -1;
  }
  mark(eu);
  mark(e);
  return e;
}

// ---------------------------------------------------------------- placing

void SectionAllocator::place_at_tail(Lane& l, ExtentDesc* e, const AllocRequest& req,
                                     uint32_t blocks, uint32_t bytes, AllocEvents* ev,
                                     AllocPiece* out) {
  const SectionRt& rt = secs_[l.section];
  const SectionSpec& sp = geo_.sections[l.section];
  uint32_t start = e->tail;
  assert(start + blocks <= rt.s);
  Placement p{start, blocks, bytes, req.writes, req.owner, req.born_us};
  e->placements_mut().push_back(p);
  account(e, p, +1, req.now_us);
  e->detail->last_hint = req.hint;
  MapPosition nx = rt.map.next(start + blocks - 1);
  if (sp.fill_gaps && nx.start > start + blocks)
    l.gaps.add(e, start + blocks, nx.start - start - blocks);
  e->tail = nx.start;
  *out = AllocPiece{extent_block(*e) + start, blocks, bytes, false};
  mark(e);
  if (rt.s - e->tail < sp.theta) {
    seal(e, false, ev);
  } else {
    e->detail->seq = ++seq_;
    l.table.insert(e);
  }
}

bool SectionAllocator::place_in_run(Lane& l, FreeRunIndex& idx, uint32_t run,
                                    const AllocRequest& req, uint32_t blocks, uint32_t bytes,
                                    AllocPiece* out) {
  ExtentDesc* e = idx.run(run).extent;
  uint32_t start = idx.run(run).start;
  // A hole of a written extent whose placements are still in its record:
  // they come back first. Unreadable, the hole stays unused.
  if (load_placements(e, nullptr) < 0) return false;
  idx.consume_front(run, blocks);
  Placement p{start, blocks, bytes, req.writes, req.owner, req.born_us};
  std::vector<Placement>& pl = e->placements_mut();
  auto it = std::upper_bound(pl.begin(), pl.end(), start,
                             [](uint32_t v, const Placement& q) { return v < q.start; });
  pl.insert(it, p);
  account(e, p, +1, req.now_us);
  // The hint steers the map table's choice; a written extent is in no table.
  if (e->state != ExtentState::kWritten) e->detail->last_hint = req.hint;
  *out = AllocPiece{extent_block(*e) + start, blocks, bytes, &idx == &l.holes};
  mark(e);
  return true;
}

bool SectionAllocator::place_small(Lane& l, const AllocRequest& req, uint32_t blocks,
                                   uint32_t bytes, AllocEvents* ev, AllocPiece* out) {
  const SectionSpec& sp = geo_.sections[l.section];
  if (sp.fill_gaps) {
    uint32_t id = l.gaps.best_fit(blocks);
    if (id != FreeRunIndex::kNone && place_in_run(l, l.gaps, id, req, blocks, bytes, out)) return true;
  }
  // Short of clean space (holes=fill): holes of written extents compete with
  // the open tails, and the tighter fit wins - a hole that only this object
  // fits is worth more than the flexible tail.
  const bool fill = sp.holes == HoleMode::kFill;
  const bool short_of_space = fill && free_fraction() < tune_.hole_fill_below;
  Lane* run_lane = nullptr;
  FreeRunIndex* run_index = nullptr;
  uint32_t run = short_of_space ? best_free_run(l, blocks, &run_lane, &run_index)
                                : FreeRunIndex::kNone;
  ExtentDesc* e = l.table.pick(sp.policy, blocks, req.hint);
  if (run != FreeRunIndex::kNone && (!e || run_index->run(run).len <= secs_[l.section].s - e->tail) &&
      place_in_run(*run_lane, *run_index, run, req, blocks, bytes, out))
    return true;
  if (e) {
    l.table.remove(e);
    place_at_tail(l, e, req, blocks, bytes, ev, out);
    return true;
  }
  if (ExtentDesc* f = take_fresh(l, req.now_us, ev)) {
    place_at_tail(l, f, req, blocks, bytes, ev, out);
    return true;
  }
  if (fill) {
    run = best_free_run(l, blocks, &run_lane, &run_index);
    if (run != FreeRunIndex::kNone) return place_in_run(*run_lane, *run_index, run, req, blocks, bytes, out);
  }
  return false;
}

uint32_t SectionAllocator::best_free_run(Lane& l, uint32_t blocks, Lane** lane,
                                         FreeRunIndex** index) {
  // Free space is free space: when clean space is short, the tightest run of
  // any holes=fill section of the same hotness group takes the object - holes
  // of written extents, and staged gaps of the other sections (this lane's
  // own gaps were tried first) - so small objects also plug what larger ones
  // left behind elsewhere. On equal length a staged gap wins: no in-place write.
  uint32_t best = FreeRunIndex::kNone;
  uint32_t best_len = UINT32_MAX;
  auto consider = [&](Lane& o, FreeRunIndex& idx) {
    uint32_t id = idx.best_fit(blocks);
    if (id == FreeRunIndex::kNone) return;
    uint32_t len = idx.run(id).len;
    if (len < best_len || (len == best_len && &idx == &o.gaps)) {
      best = id;
      best_len = len;
      *lane = &o;
      *index = &idx;
    }
  };
  for (size_t s = 0; s < secs_.size(); ++s) {
    if (geo_.sections[s].bypass() || geo_.sections[s].holes != HoleMode::kFill) continue;
    Lane& o = lanes_[s * geo_.groups + l.group];
    if (&o != &l) consider(o, o.gaps);
    consider(o, o.holes);
  }
  return best;
}

int SectionAllocator::allocate(const AllocRequest& req, std::vector<AllocPiece>* pieces,
                               AllocEvents* ev) {
  pieces->clear();
  if (req.section < 0 || req.section >= section_count() ||
      geo_.sections[req.section].bypass() || req.group >= geo_.groups || req.bytes == 0 ||
      req.bytes > (uint64_t(1) << 50))
    return -EINVAL;
  if (!allocate_in(req.section, req, req.bytes, pieces, ev)) {
    for (const auto& p : *pieces) release(p.block, p.blocks, req.now_us);
    pieces->clear();
    return -ENOSPC;
  }
  if (req.direct) hand_over_whole_units(pieces, 0);
  return 0;
}

int SectionAllocator::remainder_section(int section, uint32_t blocks) const {
  // Among the sections with smaller extents: the smallest that holds the
  // remainder in one extent, else the largest (which splits it again).
  int best = -1;
  for (int j : fallback_[section]) {
    if (secs_[j].s >= secs_[section].s) continue;
    if (secs_[j].s >= blocks) {
      if (best < 0 || secs_[best].s < blocks || secs_[j].s < secs_[best].s) best = j;
    } else if (best < 0 || (secs_[best].s < blocks && secs_[j].s > secs_[best].s)) {
      best = j;
    }
  }
  return best;
}

bool SectionAllocator::allocate_in(int section, const AllocRequest& req, uint64_t bytes,
                                   std::vector<AllocPiece>* pieces, AllocEvents* ev) {
  Lane& l = lanes_[section * geo_.groups + req.group];
  const SectionRt& rt = secs_[section];
  const SectionSpec& sp = geo_.sections[section];
  const uint64_t bs = geo_.block_size;
  const uint64_t blocks = (bytes + bs - 1) / bs;
  AllocPiece piece;
  if (blocks < rt.s) {
    if (!place_small(l, req, static_cast<uint32_t>(blocks), static_cast<uint32_t>(bytes), ev,
                     &piece))
      return false;
    pieces->push_back(piece);
    return true;
  }
  const uint64_t q = blocks / rt.s;
  const uint32_t r = static_cast<uint32_t>(blocks % rt.s);
  const bool fill = sp.holes == HoleMode::kFill;
  if (!fill && fresh_available(l) < q) return false;
  uint64_t left = bytes;
  for (uint64_t k = 0; k < q; ++k) {
    uint32_t b = static_cast<uint32_t>((r == 0 && k + 1 == q) ? left : uint64_t(rt.s) * bs);
    ExtentDesc* e = take_fresh(l, req.now_us, ev);
    if (!e) {
      // Out of clean extents: whole free extents inside written units take
      // the data in place (holes=fill).
      uint32_t id = fill ? l.holes.best_fit(rt.s) : FreeRunIndex::kNone;
      if (id == FreeRunIndex::kNone || !place_in_run(l, l.holes, id, req, rt.s, b, &piece)) return false;
      pieces->push_back(piece);
      left -= b;
      continue;
    }
    left -= b;
    Placement p{0, rt.s, b, req.writes, req.owner, req.born_us};
    e->placements_mut().push_back(p);
    account(e, p, +1, req.now_us);
    e->detail->last_hint = req.hint;
    e->tail = rt.s;
    mark(e);
    uint64_t block = extent_block(*e);
    seal(e, false, ev);
    if (!pieces->empty() && !pieces->back().in_place &&
        pieces->back().block + pieces->back().blocks == block) {  // contiguous: one piece
      pieces->back().blocks += rt.s;
      pieces->back().bytes += b;
    } else {
      pieces->push_back(AllocPiece{block, rt.s, b, false});
    }
  }
  if (r == 0) return true;
  switch (sp.remainder) {
    case RemainderMode::kFresh:
      // docs/algorithms.md: the head of one more clean extent; its tail re-enters
      // the map table through the map function.
      if (ExtentDesc* e = take_fresh(l, req.now_us, ev)) {
        place_at_tail(l, e, req, r, static_cast<uint32_t>(left), ev, &piece);
        pieces->push_back(piece);
        return true;
      }
      break;
    case RemainderMode::kDown: {
      int j = remainder_section(section, r);
      if (j < 0) break;
      size_t mark_pieces = pieces->size();
      if (allocate_in(j, req, left, pieces, ev)) return true;
      for (size_t i = mark_pieces; i < pieces->size(); ++i)
        release((*pieces)[i].block, (*pieces)[i].blocks, req.now_us);
      pieces->resize(mark_pieces);
      break;
    }
    case RemainderMode::kTable:
      break;
  }
  if (!place_small(l, req, r, static_cast<uint32_t>(left), ev, &piece)) return false;
  pieces->push_back(piece);
  return true;
}

int SectionAllocator::allocate_with_fallback(const AllocRequest& req,
                                             std::vector<AllocPiece>* pieces, AllocEvents* ev,
                                             int* used) {
  if (req.section < 0 || req.section >= section_count() || geo_.sections[req.section].bypass())
    return -EINVAL;
  for (int s : fallback_[req.section]) {
    AllocRequest r = req;
    r.section = s;
    int rc = allocate(r, pieces, ev);
    if (rc != -ENOSPC) {
      if (rc == 0 && used) *used = s;
      return rc;
    }
  }
  return -ENOSPC;
}

}  // namespace hybridstore
