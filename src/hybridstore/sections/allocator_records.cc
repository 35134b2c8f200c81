// Persistence of the section allocator: the records the engine keeps in
// RocksDB, and the rebuild of every in-memory structure from them at mount.
//
// Records (all sealed with seal_record: version byte, length, crc32c seeded
// with a per-kind tag):
//   geometry    written at mkfs: block size, erase block, range, groups, the
//               canonical section text. Mount refuses a different geometry.
//   erase unit  one per owned EU, key [1][eu]: lane, extents handed out,
//               whether it is its lane's current unit, last modification, and
//               per write unit "written" and the time its first extent was taken.
//   extent      one per handed-out extent, key [2][eu][extent]: state, tail,
//               time in table, map-table order, locality hint and its
//               placements (start, blocks, bytes, writes, owner, born) - the
//               extent's bitmap in run-length form, plus the back references
//               the cleaner needs.
// An EU that goes back to the free pool has its EU record and all its extent
// records deleted (drain_records emits deletes before puts).
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <map>

#include "hscommon/encoding.h"
#include "hybridstore/sections/section_allocator.h"

namespace hybridstore {

namespace {

constexpr uint32_t kGeometryTag = 0x48535347;  // "HSSG"
constexpr uint32_t kEraseUnitTag = 0x48534555;  // "HSEU"
constexpr uint32_t kExtentTag = 0x48534558;     // "HSEX"
constexpr uint8_t kVersion = 1;
constexpr size_t kKeySize = 9;

}  // namespace

std::string PersistOp::key() const {
  std::string k;
  k.push_back(static_cast<char>(type));
  put_be32(&k, eu);
  put_be32(&k, type == Type::kExtent ? extent : 0);
  return k;
}

std::string SectionAllocator::encode_eu(uint32_t eu) const {
  const EraseUnit& u = eus_[eu];
  const Lane& l = lanes_[u.lane];
  std::string b;
  put_varint(&b, static_cast<uint64_t>(l.section));
  put_varint(&b, l.group);
  put_varint(&b, u.next_untaken);
  put_u8(&b, u.current ? 1 : 0);
  put_varint(&b, u.last_modified_us);
  put_varint(&b, u.wu_written.size());
  for (size_t w = 0; w < u.wu_written.size(); ++w) {
    put_u8(&b, u.wu_written[w]);
    put_varint(&b, u.wu_first_us[w]);
  }
  return seal_record(kEraseUnitTag, kVersion, b);
}

std::string SectionAllocator::encode_extent(const ExtentDesc& e) const {
  std::string b;
  put_u8(&b, static_cast<uint8_t>(e.state));
  put_varint(&b, e.tail);
  put_varint(&b, e.entered_us());
  put_varint(&b, e.seq());
  put_varint(&b, e.last_hint());
  put_varint(&b, e.placements().size());
  uint32_t prev_end = 0;
  for (const Placement& p : e.placements()) {
    put_varint(&b, p.start - prev_end);
    put_varint(&b, p.blocks);
    put_varint(&b, p.bytes);
    put_varint(&b, p.writes);
    put_varint(&b, p.owner);
    put_varint(&b, p.born_us);
    prev_end = p.end();
  }
  return seal_record(kExtentTag, kVersion, b);
}

void SectionAllocator::drain_records(std::vector<PersistOp>* out) {
  for (auto [eu, idx] : deleted_extents_)
    out->push_back(PersistOp{PersistOp::Kind::kDelete, PersistOp::Type::kExtent, eu, idx, {}});
  deleted_extents_.clear();
  for (uint32_t eu : dirty_eus_) {
    EraseUnit& u = eus_[eu];
    u.dirty = false;
    if (u.lane >= 0)
      out->push_back(PersistOp{PersistOp::Kind::kPut, PersistOp::Type::kEraseUnit, eu, 0,
                               encode_eu(eu)});
    else
      out->push_back(PersistOp{PersistOp::Kind::kDelete, PersistOp::Type::kEraseUnit, eu, 0, {}});
  }
  dirty_eus_.clear();
  for (const DirtyExtent& d : dirty_extents_) {
    EraseUnit& u = eus_[d.eu];
    if (u.lane < 0 || u.generation != d.generation || d.idx >= u.extents.size()) continue;
    ExtentDesc& e = u.extents[d.idx];
    if (!e.dirty) continue;
    e.dirty = false;
    if (e.state == ExtentState::kUntaken) continue;
    // Never so (mark() asserts): what changed would go, its placements stay.
    if (e.evicted && load_placements(&e, nullptr) < 0) continue;
    out->push_back(PersistOp{PersistOp::Kind::kPut, PersistOp::Type::kExtent, d.eu, d.idx,
                             encode_extent(e)});
  }
  dirty_extents_.clear();
}

std::string SectionAllocator::geometry_record() const {
  std::string b;
  put_varint(&b, geo_.block_size);
  put_varint(&b, geo_.erase_block_bytes);
  put_varint(&b, geo_.first_block);
  put_varint(&b, geo_.blocks);
  put_varint(&b, geo_.groups);
  put_bytes(&b, format_sections(geo_.sections, geo_.block_size));
  return seal_record(kGeometryTag, kVersion, b);
}

int SectionAllocator::check_geometry_record(std::string_view record, std::string* error) const {
  uint8_t version;
  std::string_view body;
  if (int r = open_stored_record(kGeometryTag, kVersion, record, "section geometry record", &version, &body, error);
      r < 0)
    return r;
  Decoder d(body);
  uint64_t bs, eb, first, blocks, groups;
  std::string sections;
  if (!d.get_varint(&bs) || !d.get_varint(&eb) || !d.get_varint(&first) ||
      !d.get_varint(&blocks) || !d.get_varint(&groups) || !d.get_bytes(&sections, 1 << 16) ||
      !d.done()) {
    *error = "section geometry record: malformed body";
    return -EIO;
  }
  std::string mine = format_sections(geo_.sections, geo_.block_size);
  if (bs != geo_.block_size)
    *error = fmt::format("hybridstore_ssd_block_size is {} but the store was made with {}",
                         geo_.block_size, bs);
  else if (eb != geo_.erase_block_bytes)
    *error = fmt::format("hybridstore_flash_erase_block is {} but the store was made with {}",
                         geo_.erase_block_bytes, eb);
  else if (first != geo_.first_block || blocks != geo_.blocks)
    *error = fmt::format("SSD range [{}, +{}) differs from the store's [{}, +{})",
                         geo_.first_block, geo_.blocks, first, blocks);
  else if (groups != geo_.groups)
    *error = fmt::format("{} hotness groups configured but the store has {}", geo_.groups, groups);
  else if (sections != mine)
    *error = fmt::format("hybridstore_ssd_sections is '{}' but the store was made with '{}'",
                         mine, sections);
  else
    return 0;
  return -EINVAL;
}

namespace {

struct ExtentRecord {
  uint32_t eu, idx;
  std::string_view value;
};

// Checks an allocator record's key - its size, its kind, its erase unit
// among the `eu_count` units - and splits it.
int parse_record_key(std::string_view key, size_t eu_count, PersistOp::Type* type, uint32_t* eu, uint32_t* idx,
                     std::string* error) {
  if (key.size() != kKeySize) {
    *error = fmt::format("allocator record key of {} bytes (expected {})", key.size(), kKeySize);
    return -EIO;
  }
  const uint8_t t = static_cast<uint8_t>(key[0]);
  *eu = get_be32(key.data() + 1);
  *idx = get_be32(key.data() + 5);
  if (*eu >= eu_count) {
    *error = fmt::format("allocator record for erase unit {} beyond the {} units", *eu, eu_count);
    return -EIO;
  }
  if (t == static_cast<uint8_t>(PersistOp::Type::kEraseUnit) && *idx == 0) {
    *type = PersistOp::Type::kEraseUnit;
  } else if (t == static_cast<uint8_t>(PersistOp::Type::kExtent)) {
    *type = PersistOp::Type::kExtent;
  } else {
    *error = fmt::format("allocator record of unknown type {}", t);
    return -EIO;
  }
  return 0;
}

// The records of a vector, in key order whatever the vector's.
class SortedRecords : public AllocatorRecordSource {
 public:
  explicit SortedRecords(const std::vector<std::pair<std::string, std::string>>& records) {
    order_.reserve(records.size());
    for (const auto& r : records) order_.push_back(&r);
    std::sort(order_.begin(), order_.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
  }
  int next(std::string_view* key, std::string_view* value, std::string*) override {
    if (at_ == order_.size()) return 0;
    *key = order_[at_]->first;
    *value = order_[at_]->second;
    ++at_;
    return 1;
  }

 private:
  std::vector<const std::pair<std::string, std::string>*> order_;
  size_t at_ = 0;
};

// The fields an erase unit record starts with; its write-unit list follows.
struct EraseUnitHead {
  uint64_t section, group, next_untaken, last_mod, wus;
  uint8_t current;
};

// Opens erase unit `eu`'s record and reads its head, which must name a
// section and group of `geo`; *wu_list gets the rest.
int read_eu_head(uint32_t eu, std::string_view value, const AllocatorGeometry& geo, EraseUnitHead* h,
                 std::string_view* wu_list, std::string* error) {
  uint8_t version;
  std::string_view body;
  if (int r = open_stored_record(kEraseUnitTag, kVersion, value, fmt::format("erase unit {} record", eu), &version,
                                 &body, error);
      r < 0)
    return r;
  Decoder d(body);
  if (!d.get_varint(&h->section) || !d.get_varint(&h->group) || !d.get_varint(&h->next_untaken) ||
      !d.get_u8(&h->current) || !d.get_varint(&h->last_mod) || !d.get_varint(&h->wus)) {
    *error = fmt::format("erase unit {} record: malformed", eu);
    return -EIO;
  }
  if (h->section >= geo.sections.size() || geo.sections[h->section].bypass() || h->group >= geo.groups ||
      h->current > 1) {
    *error = fmt::format("erase unit {} record: section {} group {} not configured", eu, h->section, h->group);
    return -EINVAL;
  }
  *wu_list = d.rest();
  return 0;
}

// The write-unit list of erase unit `eu`'s record, into `u`: whether each
// unit was written (only a unit its extents fill may be) and when its first
// extent was taken.
int read_wu_list(uint32_t eu, std::string_view wu_list, const EraseUnitHead& h, uint32_t extents_per_wu,
                 EraseUnit* u, std::string* error) {
  Decoder d(wu_list);
  u->unwritten_wus = 0;
  for (uint64_t w = 0; w < h.wus; ++w) {
    uint8_t written;
    uint64_t first;
    if (!d.get_u8(&written) || !d.get_varint(&first) || written > 1) {
      *error = fmt::format("erase unit {} record: malformed write-unit list", eu);
      return -EIO;
    }
    uint64_t hi = (w + 1) * extents_per_wu;
    if (written && hi > h.next_untaken) {
      *error = fmt::format("erase unit {}: write unit {} written before it was filled", eu, w);
      return -EIO;
    }
    u->wu_written[w] = written;
    u->wu_first_us[w] = first;
    if (!written) ++u->unwritten_wus;
  }
  if (!d.done()) {
    *error = fmt::format("erase unit {} record: trailing bytes", eu);
    return -EIO;
  }
  return 0;
}

// The `n` placements of extent record `x`, into e's placements: in order,
// apart, below `limit`, each with a plausible byte count for blocks of
// `block_size`. *end gets the end of the last one (0 when there is none).
int read_placements(Decoder* d, const ExtentRecord& x, uint64_t n, uint64_t limit, uint32_t block_size,
                    ExtentDesc* e, uint64_t* end, std::string* error) {
  std::vector<Placement>& pl = e->placements_mut();
  pl.clear();
  pl.reserve(n);  // n <= the extent's blocks, checked by the caller
  uint64_t prev_end = 0;
  for (uint64_t k = 0; k < n; ++k) {
    uint64_t gap, blocks, bytes, writes, owner, born;
    if (!d->get_varint(&gap) || !d->get_varint(&blocks) || !d->get_varint(&bytes) ||
        !d->get_varint(&writes) || !d->get_varint(&owner) || !d->get_varint(&born)) {
      *error = fmt::format("extent {}/{} record: malformed placement", x.eu, x.idx);
      return -EIO;
    }
    if (gap > limit) {
      *error = fmt::format("extent {}/{}: placement {} starts past the extent", x.eu, x.idx, k);
      return -EIO;
    }
    uint64_t start = prev_end + gap;
    if (blocks == 0 || start > limit || blocks > limit - start || writes > UINT32_MAX ||
        bytes > blocks * block_size || bytes <= (blocks - 1) * block_size) {
      *error = fmt::format("extent {}/{}: placement {} [{}, +{}) of {} bytes is invalid",
                           x.eu, x.idx, k, start, blocks, bytes);
      return -EIO;
    }
    pl.push_back(Placement{static_cast<uint32_t>(start), static_cast<uint32_t>(blocks),
                           static_cast<uint32_t>(bytes), static_cast<uint32_t>(writes), owner, born});
    prev_end = start + blocks;
  }
  *end = prev_end;
  return 0;
}

// Extent record `x` into `e`, checked against its extent of `s` blocks laid
// out by `map`: its state must agree with whether its write unit was
// written, an open extent's tail must be where its last placement's segment
// ends, any other's the extent's end.
int read_extent(const ExtentRecord& x, uint32_t s, const SegmentMap& map, uint32_t block_size, bool written_wu,
                ExtentDesc* e, std::string* error) {
  uint8_t version;
  std::string_view body;
  if (int r = open_stored_record(kExtentTag, kVersion, x.value, fmt::format("extent {}/{} record", x.eu, x.idx),
                                 &version, &body, error);
      r < 0)
    return r;
  Decoder d(body);
  uint8_t state;
  uint64_t tail, entered, seq, hint, n;
  if (!d.get_u8(&state) || !d.get_varint(&tail) || !d.get_varint(&entered) ||
      !d.get_varint(&seq) || !d.get_varint(&hint) || !d.get_varint(&n) ||
      n > s) {
    *error = fmt::format("extent {}/{} record: malformed", x.eu, x.idx);
    return -EIO;
  }
  ExtentState st = static_cast<ExtentState>(state);
  if ((st != ExtentState::kOpen && st != ExtentState::kSealed &&
       st != ExtentState::kWritten) ||
      (written_wu != (st == ExtentState::kWritten))) {
    *error = fmt::format("extent {}/{}: state {} contradicts its write unit", x.eu, x.idx,
                         state);
    return -EIO;
  }
  uint64_t limit = st == ExtentState::kOpen ? tail : s;
  if (tail > s || (st != ExtentState::kOpen && tail != s) ||
      (st == ExtentState::kOpen && tail == s)) {
    *error = fmt::format("extent {}/{}: tail {} out of range", x.eu, x.idx, tail);
    return -EIO;
  }
  e->state = st;
  e->tail = static_cast<uint32_t>(tail);
  // A written extent is in no map table: what a record of an older build
  // says of its table state is dropped (ExtentDetail).
  if (st != ExtentState::kWritten) {
    ExtentDetail& d = e->more();
    d.entered_us = entered;
    d.seq = seq;
    d.last_hint = hint;
  }
  uint64_t prev_end = 0;
  if (int r = read_placements(&d, x, n, limit, block_size, e, &prev_end, error); r < 0) return r;
  if (!d.done()) {
    *error = fmt::format("extent {}/{} record: trailing bytes", x.eu, x.idx);
    return -EIO;
  }
  if (st == ExtentState::kOpen) {
    uint32_t expect =
        e->placements().empty() ? 0 : map.next(static_cast<uint32_t>(prev_end) - 1).start;
    if (expect != tail) {
      *error = fmt::format("extent {}/{}: tail {} is not the map position {} of its last "
                           "placement",
                           x.eu, x.idx, tail, expect);
      return -EIO;
    }
  }
  return 0;
}

// Sorts the open extents by map-table position, which no two may share.
int order_open(std::vector<ExtentDesc*>* open, std::string* error) {
  std::sort(open->begin(), open->end(),
            [](const ExtentDesc* a, const ExtentDesc* b) { return a->seq() < b->seq(); });
  for (size_t i = 1; i < open->size(); ++i) {
    if ((*open)[i]->seq() == (*open)[i - 1]->seq()) {
      *error = "two open extents share a map-table position";
      return -EIO;
    }
  }
  return 0;
}

}  // namespace

int SectionAllocator::rebuild(const AllocatorGeometry& geo, const AllocatorTuning& tune,
                              const std::vector<std::pair<std::string, std::string>>& records,
                              uint64_t now_us, std::unique_ptr<SectionAllocator>* out,
                              std::string* error, const RebuildOptions& opts) {
  SortedRecords sorted(records);
  return rebuild(geo, tune, &sorted, now_us, out, error, opts);
}

int SectionAllocator::rebuild(const AllocatorGeometry& geo, const AllocatorTuning& tune,
                              AllocatorRecordSource* records, uint64_t now_us,
                              std::unique_ptr<SectionAllocator>* out, std::string* error,
                              const RebuildOptions& opts) {
  (void)now_us;
  std::unique_ptr<SectionAllocator> a(new SectionAllocator());
  int r = a->init(geo, tune, error);
  if (r < 0) return r;
  bool track = a->track_;
  a->track_ = false;  // restoring writes nothing back
  a->placement_store_ = opts.placements;
  r = a->restore(records, opts, error);
  if (r < 0) return r;
  a->track_ = track;
  // Units left without live data (a crash between the last release and the
  // record deletes is not possible - they share a batch - but be lenient):
  // return them to the pool and let the next drain delete their records.
  for (uint32_t eu = 0; eu < a->eus_.size(); ++eu) {
    const EraseUnit& u = a->eus_[eu];
    if (u.lane >= 0 && u.live == 0 && !u.current) a->maybe_free_eu(eu);
  }
  *out = std::move(a);
  return 0;
}

int SectionAllocator::restore(AllocatorRecordSource* records, const RebuildOptions& opts, std::string* error) {
  // Keys in byte order put every erase unit record (kind 1) before the
  // extent records (kind 2), which need their unit's owner and geometry.
  std::string prev;
  bool units_done = false;
  for (;;) {
    std::string_view key, value;
    int r = records->next(&key, &value, error);
    if (r < 0) return r;
    if (r == 0) break;
    if (!prev.empty() && key <= std::string_view(prev)) {
      *error = key == std::string_view(prev) ? "duplicate allocator record key" : "allocator records out of key order";
      return -EIO;
    }
    prev.assign(key);
    PersistOp::Type type;
    uint32_t eu, idx;
    if (int r2 = parse_record_key(key, eus_.size(), &type, &eu, &idx, error); r2 < 0) return r2;
    if (type == PersistOp::Type::kEraseUnit) {
      if (int r2 = restore_eu(eu, value, error); r2 < 0) return r2;
      continue;
    }
    if (!units_done) {
      if (int r2 = restore_current_units(error); r2 < 0) return r2;
      units_done = true;
    }
    if (int r2 = restore_extent(eu, idx, value, opts, error); r2 < 0) return r2;
  }
  if (!units_done) {
    if (int r = restore_current_units(error); r < 0) return r;
  }
  return index_restored(error);
}

int SectionAllocator::restore_eu(uint32_t eu, std::string_view value, std::string* error) {
  EraseUnitHead h;
  std::string_view wu_list;
  if (int r = read_eu_head(eu, value, geo_, &h, &wu_list, error); r < 0) return r;
  const SectionRt& rt = secs_[h.section];
  if (h.next_untaken > rt.extents_per_eu || h.wus != rt.extents_per_eu / rt.extents_per_wu) {
    *error = fmt::format("erase unit {} record: {} extents / {} write units do not match the "
                         "section's geometry",
                         eu, h.next_untaken, h.wus);
    return -EIO;
  }
  Lane& l = lanes_[h.section * geo_.groups + h.group];
  if (take_eu(l) < 0) return -EIO;  // cannot happen: the pool is full here
  // take_eu picked the lowest free unit; move the ownership to `eu`.
  uint32_t got = static_cast<uint32_t>(l.current);
  if (got != eu) {
    if (eus_[eu].lane >= 0) {
      *error = fmt::format("erase unit {} owned twice", eu);
      return -EIO;
    }
    std::swap(eus_[got], eus_[eu]);
    {
      std::lock_guard<std::mutex> pl(pool_mutex_);
      free_bits_[eu / 64] &= ~(uint64_t(1) << (eu % 64));
      free_bits_[got / 64] |= uint64_t(1) << (got % 64);
    }
    for (auto& e : eus_[eu].extents) e.eu = eu;
  }
  EraseUnit& u = eus_[eu];
  u.next_untaken = static_cast<uint32_t>(h.next_untaken);
  u.last_modified_us = h.last_mod;
  u.current = h.current != 0;
  l.current = -1;
  return read_wu_list(eu, wu_list, h, rt.extents_per_wu, &u, error);
}

int SectionAllocator::restore_current_units(std::string* error) {
  for (size_t li = 0; li < lanes_.size(); ++li) lanes_[li].current = -1;
  for (uint32_t eu = 0; eu < eus_.size(); ++eu) {
    EraseUnit& u = eus_[eu];
    if (u.lane < 0 || !u.current) continue;
    Lane& l = lanes_[u.lane];
    if (l.current >= 0 || u.next_untaken >= secs_[l.section].extents_per_eu) {
      *error = fmt::format("erase unit {}: inconsistent 'current' flag", eu);
      return -EIO;
    }
    l.current = static_cast<int32_t>(eu);
  }
  return 0;
}

int SectionAllocator::restore_extent(uint32_t eu, uint32_t idx, std::string_view value, const RebuildOptions& opts,
                                     std::string* error) {
  const ExtentRecord x{eu, idx, value};
  EraseUnit& u = eus_[x.eu];
  if (u.lane < 0) {
    *error = fmt::format("extent record {}/{} in a free erase unit", x.eu, x.idx);
    return -EIO;
  }
  const SectionRt& rt = secs_[lanes_[u.lane].section];
  if (x.idx >= u.next_untaken) {
    *error = fmt::format("extent record {}/{} was never handed out", x.eu, x.idx);
    return -EIO;
  }
  ExtentDesc& e = u.extents[x.idx];
  const bool written_wu = u.wu_written[wu_of(u, x.idx)] != 0;
  if (int r = read_extent(x, rt.s, rt.map, geo_.block_size, written_wu, &e, error); r < 0) return r;
  for (const Placement& p : e.placements()) account(&e, p, +1, 0);
  seq_ = std::max(seq_, e.seq());
  if (e.state == ExtentState::kWritten) settle_written(&e, opts);
  return 0;
}

void SectionAllocator::settle_written(ExtentDesc* e, const RebuildOptions& opts) {
  EraseUnit& u = eus_[e->eu];
  Lane& l = lanes_[u.lane];
  // Here rather than in index_restored, while the placements are in hand;
  // written extents come in the same (unit, index) order either way.
  if (holes_indexed(l, u)) add_free_runs(l.holes, e, 0, secs_[l.section].s);
  if (opts.placements && !e->placements().empty()) {
    const uint64_t base = extent_block(*e);
    bool kept = false;
    if (opts.keep)
      for (const Placement& p : e->placements())
        if (opts.keep(base + p.start, p.blocks)) kept = true;
    if (!kept) {
      e->stored = static_cast<uint32_t>(e->placements().size());
      e->evicted = true;
      std::vector<Placement>().swap(e->detail->placements);
    }
  }
  e->compact();
}

int SectionAllocator::read_back(const ExtentDesc& e, std::vector<Placement>* out, std::string* error) const {
  std::string value, why;
  if (!placement_store_) {
    why = "no placement store";
  } else if (placement_store_->read_extent_record(e.eu, e.idx, &value, &why) == 0) {
    const SectionRt& rt = rt_of(eus_[e.eu]);
    ExtentDesc got;
    if (read_extent(ExtentRecord{e.eu, e.idx, value}, rt.s, rt.map, geo_.block_size, true, &got, &why) == 0) {
      uint64_t live = 0;
      for (const Placement& p : got.placements()) live += p.blocks;
      if (got.placements().size() == e.stored && live == e.live) {
        *out = std::move(got.detail->placements);
        return 0;
      }
      why = fmt::format("it holds {} placements of {} blocks, the extent {} of {}", got.placements().size(), live,
                        e.stored, e.live);
    }
  }
  if (error) *error = fmt::format("extent {}/{}: reading its placements back: {}", e.eu, e.idx, why);
  return -EIO;
}

int SectionAllocator::load_placements(ExtentDesc* e, std::string* error) {
  if (!e->evicted) return 0;
  std::vector<Placement> back;
  if (int r = read_back(*e, &back, error); r < 0) return r;
  e->placements_mut() = std::move(back);
  e->evicted = false;
  e->stored = 0;
  return 0;
}

const std::vector<Placement>* SectionAllocator::placements_of(const ExtentDesc& e, std::vector<Placement>* scratch,
                                                              std::string* error) const {
  if (!e.evicted) return &e.placements();
  return read_back(e, scratch, error) == 0 ? scratch : nullptr;
}

void SectionAllocator::evicted(uint64_t* extents, uint64_t* placements) const {
  *extents = *placements = 0;
  for (const EraseUnit& u : eus_)
    for (const ExtentDesc& e : u.extents)
      if (e.evicted) ++*extents, *placements += e.stored;
}

int SectionAllocator::index_restored(std::string* error) {
  // Every handed-out extent must have come back.
  std::vector<ExtentDesc*> open;
  for (uint32_t eu = 0; eu < eus_.size(); ++eu) {
    EraseUnit& u = eus_[eu];
    if (u.lane < 0) continue;
    Lane& l = lanes_[u.lane];
    const SectionRt& rt = secs_[l.section];
    const SectionSpec& sp = geo_.sections[l.section];
    u.open = 0;
    for (uint32_t i = 0; i < u.next_untaken; ++i) {
      ExtentDesc* e = &u.extents[i];
      if (e->state == ExtentState::kUntaken) {
        *error = fmt::format("extent {}/{} has no record", eu, i);
        return -EIO;
      }
      if (e->state == ExtentState::kOpen) {
        ++u.open;
        ++u.wu_open[i / rt.extents_per_wu];
        open.push_back(e);
        if (sp.fill_gaps) add_free_runs(l.gaps, e, 0, e->tail);
      } else if (e->state == ExtentState::kSealed) {
        if (sp.fill_gaps) add_free_runs(l.gaps, e, 0, rt.s);
      }  // written: indexed by settle_written
    }
    uint32_t started = (u.next_untaken + rt.extents_per_wu - 1) / rt.extents_per_wu;
    for (uint32_t w = 0; w < started; ++w) {
      if (u.wu_written[w]) continue;
      ++l.staged_count;
      l.staged.push_back(StagedRef{eu, w, u.generation, u.wu_first_us[w]});
    }
    for (uint32_t w = started; w < u.wu_written.size(); ++w) {
      if (u.wu_first_us[w] != 0) {
        *error = fmt::format("erase unit {}: write unit {} has a start time but no extents",
                             eu, w);
        return -EIO;
      }
    }
  }
  if (int r = order_open(&open, error); r < 0) return r;
  for (ExtentDesc* e : open) lanes_[eus_[e->eu].lane].table.insert(e);
  for (Lane& l : lanes_) {
    std::sort(l.staged.begin(), l.staged.end(), [](const StagedRef& a, const StagedRef& b) {
      if (a.first_us != b.first_us) return a.first_us < b.first_us;
      if (a.eu != b.eu) return a.eu < b.eu;
      return a.wu < b.wu;
    });
  }
  return 0;
}

}  // namespace hybridstore
