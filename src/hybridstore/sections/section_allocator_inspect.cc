// Inspection of the section allocator: space usage per section, the full
// invariant check (tests, fsck) and a canonical dump (rebuild comparisons).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "hybridstore/sections/section_allocator.h"

namespace hybridstore {

uint64_t SectionAllocator::live_blocks() const {
  // Only lanes of placing sections own erase units (a bypass section's takes
  // no allocation), and verify() holds each lane's count to its extents'.
  uint64_t n = 0;
  for (const Lane& l : lanes_) n += l.live_blocks;
  return n;
}

void SectionAllocator::memory(uint64_t* placements, uint64_t* bytes) const {
  uint64_t n = 0, b = eus_.capacity() * sizeof(EraseUnit) + lanes_.capacity() * sizeof(Lane);
  for (const EraseUnit& u : eus_) {
    b += u.extents.capacity() * sizeof(ExtentDesc) + u.wu_written.capacity() + u.wu_first_us.capacity() * 8 +
         u.wu_open.capacity() * 2;
    for (const ExtentDesc& e : u.extents) {
      if (!e.detail) continue;
      n += e.placements().size();
      b += sizeof(ExtentDetail) + e.placements().capacity() * sizeof(Placement) +
           e.runs().capacity() * sizeof(uint32_t);
    }
  }
  *placements = n;
  *bytes = b;
}

std::vector<SectionUsage> SectionAllocator::usage() const {
  std::vector<SectionUsage> out(geo_.sections.size());
  for (size_t i = 0; i < out.size(); ++i) out[i].name = geo_.sections[i].name;
  for (const EraseUnit& u : eus_) {
    if (u.lane < 0) continue;
    const Lane& l = lanes_[u.lane];
    const SectionRt& rt = secs_[l.section];
    SectionUsage& su = out[l.section];
    ++su.erase_units;
    su.consumed_blocks += eu_blocks_;
    su.untaken_blocks += uint64_t(rt.extents_per_eu - u.next_untaken) * rt.s;
    for (uint32_t i = 0; i < u.next_untaken; ++i) {
      const ExtentDesc& e = u.extents[i];
      su.live_blocks += e.live;
      su.placements += e.evicted ? e.stored : e.placements().size();
      switch (e.state) {
        case ExtentState::kOpen:
          ++su.extents_open;
          su.open_tail_blocks += rt.s - e.tail;
          su.staged_free_blocks += e.tail - e.live;
          break;
        case ExtentState::kSealed:
          ++su.extents_sealed;
          su.staged_free_blocks += rt.s - e.live;
          break;
        default:
          ++su.extents_written;
          su.hole_blocks += rt.s - e.live;
          break;
      }
    }
  }
  // Bytes from the lanes' exact counters: an extent whose placements are in
  // its record has no bytes in memory.
  for (const Lane& l : lanes_)
    if (!geo_.sections[l.section].bypass()) out[l.section].live_bytes += l.live_bytes;
  return out;
}

std::string SectionAllocator::verify() const {
  std::vector<LaneTally> tally(lanes_.size());
  uint32_t free_eus = 0;
  // Held throughout: a lend on another thread must not move a unit between
  // the bits and the count while they are compared.
  std::lock_guard<std::mutex> pl(pool_mutex_);
  for (uint32_t eu = 0; eu < eus_.size(); ++eu) {
    const EraseUnit& u = eus_[eu];
    bool free_bit = (free_bits_[eu / 64] >> (eu % 64)) & 1;
    bool lent = (lent_bits_[eu / 64] >> (eu % 64)) & 1;
    if (u.lane < 0) {
      if (lent) {
        if (free_bit) return fmt::format("eu {} lent but in the pool", eu);
        continue;
      }
      if (!free_bit) return fmt::format("eu {} free but not in the pool", eu);
      ++free_eus;
      continue;
    }
    if (free_bit) return fmt::format("eu {} owned but in the pool", eu);
    if (lent) return fmt::format("eu {} owned by a lane and lent", eu);
    const Lane& l = lanes_[u.lane];
    const SectionRt& rt = secs_[l.section];
    const SectionSpec& sp = geo_.sections[l.section];
    LaneTally& lt = tally[u.lane];
    ++lt.eus;
    if (u.current) {
      if (lt.current >= 0) return fmt::format("lane {} has two current units", u.lane);
      lt.current = static_cast<int32_t>(eu);
    }
    if (u.extents.size() != rt.extents_per_eu || u.next_untaken > rt.extents_per_eu)
      return fmt::format("eu {} extent count", eu);
    for (uint32_t i = u.next_untaken; i < rt.extents_per_eu; ++i) {
      const ExtentDesc& e = u.extents[i];
      if (e.state != ExtentState::kUntaken || e.detail || e.eu != eu || e.idx != i)
        return fmt::format("eu {} extent {} beyond next_untaken is not pristine", eu, i);
    }
    uint64_t live = 0, sw = 0;
    unsigned __int128 sb = 0;
    uint32_t open = 0, unwritten = 0;
    for (uint32_t w = 0; w < u.wu_written.size(); ++w) {
      if (!u.wu_written[w]) {
        ++unwritten;
        if (w * rt.extents_per_wu < u.next_untaken) ++lt.staged;
      }
    }
    for (uint32_t i = 0; i < u.next_untaken; ++i) {
      const ExtentDesc& e = u.extents[i];
      if (e.eu != eu || e.idx != i) return fmt::format("eu {} extent {} misnumbered", eu, i);
      bool written = u.wu_written[i / rt.extents_per_wu];
      if (written != (e.state == ExtentState::kWritten))
        return fmt::format("eu {} extent {} state {} vs write unit", eu, i, int(e.state));
      uint32_t limit = e.state == ExtentState::kOpen ? e.tail : rt.s;
      if (e.state != ExtentState::kOpen && e.tail != rt.s)
        return fmt::format("eu {} extent {} closed with tail {}", eu, i, e.tail);
      if (e.evicted && (e.state != ExtentState::kWritten || e.dirty || !e.placements().empty() || e.stored == 0))
        return fmt::format("eu {} extent {} evicted but not a clean written extent", eu, i);
      // A written extent keeps a detail only for what it holds, and no
      // table state; any other taken extent has one.
      if (e.state == ExtentState::kWritten && e.detail &&
          ((e.placements().empty() && e.runs().empty()) || e.entered_us() || e.seq() || e.last_hint()))
        return fmt::format("eu {} extent {} written with a detail it does not need", eu, i);
      if (e.state != ExtentState::kWritten && !e.detail)
        return fmt::format("eu {} extent {} state {} without its detail", eu, i, int(e.state));
      std::vector<Placement> scratch;
      std::string why;
      const std::vector<Placement>* pl = placements_of(e, &scratch, &why);
      if (!pl) return why;
      uint32_t prev = 0, elive = 0;
      for (const Placement& p : *pl) {
        if (p.blocks == 0 || p.start < prev || p.end() > limit)
          return fmt::format("eu {} extent {} placement [{}, {}) overlaps or passes {}", eu, i,
                             p.start, p.end(), limit);
        if (p.bytes > uint64_t(p.blocks) * geo_.block_size ||
            p.bytes <= uint64_t(p.blocks - 1) * geo_.block_size)
          return fmt::format("eu {} extent {} placement bytes {}", eu, i, p.bytes);
        prev = p.end();
        elive += p.blocks;
        sw += uint64_t(p.writes) * p.blocks;
        sb += static_cast<unsigned __int128>(p.born_us) * p.blocks;
        lt.bytes += p.bytes;
      }
      if (elive != e.live) return fmt::format("eu {} extent {} live {} != {}", eu, i, e.live, elive);
      live += elive;
      if (e.state == ExtentState::kOpen) {
        ++open;
        ++lt.open;
        uint32_t expect = pl->empty() ? 0 : rt.map.next(prev - 1).start;
        if (expect != e.tail)
          return fmt::format("eu {} extent {} tail {} != map position {}", eu, i, e.tail, expect);
        if (rt.s - e.tail < sp.theta && !pl->empty())
          return fmt::format("eu {} extent {} open with tail below theta", eu, i);
      }
      if (std::string bad = verify_free_runs(l, u, e, *pl, limit); !bad.empty()) return bad;
    }
    if (live != u.live) return fmt::format("eu {} live {} != {}", eu, u.live, live);
    if (sw != u.sum_writes || sb != u.sum_born) return fmt::format("eu {} hotness sums", eu);
    if (open != u.open) return fmt::format("eu {} open {} != {}", eu, u.open, open);
    for (uint32_t w = 0; w < u.wu_open.size(); ++w) {
      uint32_t n = 0;
      for (uint32_t i = w * rt.extents_per_wu;
           i < std::min(u.next_untaken, (w + 1) * rt.extents_per_wu); ++i)
        n += u.extents[i].state == ExtentState::kOpen;
      if (n != u.wu_open[w]) return fmt::format("eu {} write unit {} open count", eu, w);
    }
    if (unwritten != u.unwritten_wus) return fmt::format("eu {} unwritten count", eu);
    if (live == 0 && !u.current) return fmt::format("eu {} owned without live data", eu);
    lt.live += live;
  }
  if (free_eus != free_count_) return "free unit count";
  for (size_t li = 0; li < lanes_.size(); ++li) {
    if (geo_.sections[lanes_[li].section].bypass()) continue;
    if (std::string why = verify_lane(li, tally[li]); !why.empty()) return why;
  }
  return {};
}

// Free runs listed for the extent must be exactly its free intervals (below
// `limit`) when it is indexed, and none otherwise.
std::string SectionAllocator::verify_free_runs(const Lane& l, const EraseUnit& u, const ExtentDesc& e,
                                               const std::vector<Placement>& placements, uint32_t limit) const {
  const SectionSpec& sp = geo_.sections[l.section];
  bool indexed = (e.state != ExtentState::kWritten && sp.fill_gaps) ||
                 (e.state == ExtentState::kWritten && holes_indexed(l, u));
  std::set<std::pair<uint32_t, uint32_t>> expect, have;
  if (indexed) {
    uint32_t cursor = 0;
    for (const Placement& p : placements) {
      if (p.start > cursor) expect.insert({cursor, p.start - cursor});
      cursor = p.end();
    }
    if (cursor < limit) expect.insert({cursor, limit - cursor});
  }
  const FreeRunIndex& idx = e.state == ExtentState::kWritten ? l.holes : l.gaps;
  for (uint32_t id : e.runs()) {
    const auto& r = idx.run(id);
    if (!r.live || r.extent != &e)
      return fmt::format("eu {} extent {} lists a run it does not own", e.eu, e.idx);
    have.insert({r.start, r.len});
  }
  if (have != expect)
    return fmt::format("eu {} extent {}: {} free runs indexed, {} expected", e.eu, e.idx,
                       have.size(), expect.size());
  return {};
}

// A lane's counters against what verify() counted over its erase units, and
// its map table: every extent in it open and filed under the label of its tail.
std::string SectionAllocator::verify_lane(size_t li, const LaneTally& t) const {
  const Lane& l = lanes_[li];
  if (l.live_blocks != t.live || l.live_bytes != t.bytes)
    return fmt::format("lane {} live counters", li);
  if (l.eus != t.eus) return fmt::format("lane {} unit count", li);
  if (l.current != t.current) return fmt::format("lane {} current unit", li);
  if (l.staged_count != t.staged)
    return fmt::format("lane {} staged {} != {}", li, l.staged_count, t.staged);
  if (l.table.size() != t.open)
    return fmt::format("lane {} map table holds {} extents, {} open", li, l.table.size(), t.open);
  const SegmentMap& m = secs_[l.section].map;
  size_t seen = 0;
  for (int level = 0; level < m.levels(); ++level) {
    for (int index = -1; index <= m.order(); ++index) {
      auto v = l.table.entry_extents(level, index);
      uint32_t prev_tail = 0;
      for (size_t k = 0; k < v.size(); ++k) {
        const ExtentDesc* e = v[k];
        if (e->state != ExtentState::kOpen) return "closed extent in the map table";
        SegmentLabel lab;
        if (!m.label_of(e->tail, &lab) || lab.level != level || lab.index != index)
          return fmt::format("extent filed under ({}, {}) with tail {}", index, level, e->tail);
        if (k && e->tail < prev_tail) return "map-table entry not ordered by free space";
        prev_tail = e->tail;
        ++seen;
      }
    }
  }
  if (seen != l.table.size()) return fmt::format("lane {} map table walk", li);
  return {};
}

std::string SectionAllocator::dump() const {
  // seq_ is left out: after a rebuild it only has to exceed every extent's seq.
  std::string out =
      fmt::format("eu_blocks {} eus {} free {}\n", eu_blocks_, eus_.size(), free_count_.load());
  for (uint32_t eu = 0; eu < eus_.size(); ++eu) {
    const EraseUnit& u = eus_[eu];
    if (u.lane < 0) continue;
    out += fmt::format("eu {} lane {} next {} live {} open {} current {} mod {} wu", eu, u.lane,
                       u.next_untaken, u.live, u.open, u.current, u.last_modified_us);
    for (size_t w = 0; w < u.wu_written.size(); ++w)
      out += fmt::format(" {}@{}", int(u.wu_written[w]), u.wu_first_us[w]);
    out += '\n';
    for (uint32_t i = 0; i < u.next_untaken; ++i) {
      const ExtentDesc& e = u.extents[i];
      out += fmt::format("  ext {} st {} tail {} live {} in {} seq {} hint {} runs {}:", i,
                         int(e.state), e.tail, e.live, e.entered_us(), e.seq(), e.last_hint(),
                         e.runs().size());
      // The same text whether the placements are in memory or in the record.
      std::vector<Placement> scratch;
      std::string why;
      const std::vector<Placement>* pl = placements_of(e, &scratch, &why);
      if (!pl) {
        out += " (" + why + ")\n";
        continue;
      }
      for (const Placement& p : *pl)
        out += fmt::format(" [{}+{} {}B w{} o{} b{}]", p.start, p.blocks, p.bytes, p.writes,
                           p.owner, p.born_us);
      out += '\n';
    }
  }
  for (size_t li = 0; li < lanes_.size(); ++li) {
    const Lane& l = lanes_[li];
    if (geo_.sections[l.section].bypass()) continue;
    out += fmt::format("lane {} live {} bytes {} eus {} current {} staged {} gaps {} holes {}\n",
                       li, l.live_blocks, l.live_bytes, l.eus, l.current, l.staged_count,
                       l.gaps.total_blocks(), l.holes.total_blocks());
    const SegmentMap& m = secs_[l.section].map;
    for (int level = 0; level < m.levels(); ++level)
      for (int index = -1; index <= m.order(); ++index) {
        auto v = l.table.entry_extents(level, index);
        if (v.empty()) continue;
        out += fmt::format("  mt{} ent{}:", level, index);
        for (const ExtentDesc* e : v) out += fmt::format(" {}/{}", e->eu, e->idx);
        out += '\n';
      }
  }
  return out;
}

}  // namespace hybridstore
