#include "hybridstore/store/data_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "hscommon/crc32c.h"
#include "hscommon/log.h"
#include "hybridstore/kv/deferred.h"
#include "hybridstore/store/data_reader.h"
#include "hybridstore/store/object_heat.h"
#include "hybridstore/store/store_perf.h"
#include "hybridstore/store/tier_set.h"

namespace hybridstore {

namespace {
uint64_t align_down(uint64_t v, uint64_t a) { return v / a * a; }
uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// True when [a, b) is entirely allocated, on `tier` only, so it can be
// overwritten where it lies.
bool owned_on(const Onode& o, Tier tier, uint64_t a, uint64_t b) {
  uint64_t pos = a;
  for (const DataExtent* e : o.extents.overlapping(a, b)) {
    if (e->tier != tier || e->logical > pos) return false;
    pos = e->logical_end();
  }
  return pos >= b;
}
}  // namespace

DataWriter::DataWriter(TierSet* tiers, const DataReader* reader, DeferredWriter* deferred, ObjectHeat* heat,
                       WriteTracker* tracker, const Config& cfg, StorePerf* perf, bool ring_data)
    : tiers_(tiers),
      reader_(reader),
      deferred_(deferred),
      heat_(heat),
      tracker_(tracker),
      perf_(perf),
      placement_(cfg, tiers->order()),
      async_write_min_(cfg.get_int("hybridstore_async_write_threads") > 0 ? cfg.get_size("hybridstore_async_write_min")
                                                                          : 0),
      cut_at_shards_(cfg.get_size("hybridstore_extent_map_inline_max") > 0),
      absorb_max_(cfg.get_size("hybridstore_tier_absorb_max")),
      absorb_min_free_(cfg.get_double("hybridstore_tier_absorb_min_free")),
      ring_data_(ring_data) {
  const bool always = cfg.get_str("hybridstore_tier_absorb") == "always";
  const Tier fastest = tiers->fastest();
  const Media top = tiers->device(fastest)->media();
  std::string said;
  for (Tier tier : tiers->ids()) {
    if (tier == fastest) continue;
    const Media m = tiers->device(tier)->media();
    absorb_from_[tier] = absorb_max_ > 0 && (always || absorb_pays(top, m));
    said += fmt::format("{}{} ({}): {}", said.empty() ? "" : "; ", tier_name(tier), media_name(m),
                        absorb_from_[tier] ? "absorbed" : "written in place");
  }
  HS_INFO("small writes into objects below the {} ({}, hybridstore_tier_absorb={}): {}", tier_name(fastest),
          media_name(top), always ? "always" : "auto", said);
}

// ---------------------------------------------------------------- space

int DataWriter::allocate_on(TxnContext& tx, Tier tier, uint64_t len, uint64_t hint, std::vector<PExtent>* out,
                            const CollectionId& c, const ObjectId& oid, uint64_t object_size, const char* data) {
  TierSpace& sp = tiers_->space(tier);
  TierSpace::Request req;
  req.key = placement_key(c, oid);
  req.object_size = object_size;
  req.length = len;
  req.hint = hint;
  req.owner = ObjectIdHash()(oid);
  req.hotness = [&] { return heat_->hotness(c, oid); };
  std::vector<PExtent> got;
  const TxnWrites to{tx.batch.get(), deferred_, &tx.deferred, &tx.writes};
  if (int r = sp.write_new(req, data, to, &got); r < 0) return r;
  tiers_->count_allocated(tier, len);
  for (const auto& p : got) {
    out->push_back(p);
    tx.allocated.push_back(p);
    sp.freelist().toggle(tx.batch.get(), p.offset, p.length);
  }
  return 0;
}

void DataWriter::release(TxnContext& tx, const PExtent& e) {
  tx.released.push_back(e);
  tiers_->space(e.tier).freelist().toggle(tx.batch.get(), e.offset, e.length);
}

void DataWriter::release_all(TxnContext& tx, Onode& o) {
  std::vector<PExtent> freed;
  o.extents.punch(0, UINT64_MAX, &freed);
  for (const auto& e : freed) release(tx, e);
}

int DataWriter::add_extents(TxnContext& tx, Tier tier, uint64_t logical, AlignedBuffer owned, uint64_t len,
                            const std::vector<PExtent>& where, ExtentMap* into) {
  const TierSpace& sp = tiers_->space(tier);
  const uint32_t cb = sp.csum_block();
  const char* buf = owned.data();
  uint64_t pos = 0;
  std::vector<DataExtent> made;
  // An extent ends where an extent-map shard does (when the tier's unit
  // allows): a 4 MiB object is then 16 extents, and a small overwrite
  // changes the checksums, and rewrites the stored shard, of one of them.
  const bool cut_at_shards = cut_at_shards_ && ExtentMap::kShardSpan % sp.unit() == 0;
  for (const auto& p : where) {
    for (uint64_t done = 0; done < p.length;) {
      const uint64_t at = logical + pos + done;
      uint64_t n = p.length - done;
      if (cut_at_shards) n = std::min(n, (at / ExtentMap::kShardSpan + 1) * ExtentMap::kShardSpan - at);
      DataExtent e;
      e.logical = at;
      e.length = n;
      e.tier = tier;
      e.physical = p.offset + done;
      e.csum_block = cb;
      e.csums.resize(n / cb);
      crc32c_blocks(buf + pos + done, cb, e.csums.size(), e.csums.data());
      made.push_back(std::move(e));
      done += n;
    }
    pos += p.length;
  }
  if (pos != len) return -EINVAL;
  // The space took the data when it was allocated (allocate_on): what it
  // writes later, before the commit, is read from this buffer.
  tx.buffers.push_back(std::move(owned));
  for (auto& e : made) into->insert(std::move(e));
  return 0;
}

int DataWriter::write_pending(TxnContext& tx) {
  for (Tier t : tiers_->ids()) {
    std::vector<WriteIo> ios;
    uint64_t bytes = 0;
    bool before_queue = false;
    for (const auto& w : tx.writes)
      if (w.tier == t) {
        ios.push_back({w.offset, w.data, w.len});
        bytes += w.len;
        before_queue |= w.before_queue;
      }
    if (ios.empty()) continue;
    BlockDevice* dev = tiers_->device(t);
    // Large writes to new space run while the caller goes on; the commit
    // waits for them. Not those the space orders against its records by
    // their being written before the commit is queued.
    if (async_write_min_ > 0 && bytes >= async_write_min_ && !before_queue) {
      if (!tx.pending) {
        tx.pending = std::make_shared<PendingWrites>(tracker_);
        // The buffers the writes come from live until the commit.
        tx.pending->buffers = std::move(tx.buffers);
      }
      tx.pending->add();
      perf_->set.inc(perf_->async_write_ops, 1);
      perf_->set.inc(perf_->async_write_bytes, bytes);
      dev->write_many_async(std::move(ios), [p = tx.pending, t](int r) { p->finish(t, r); });
      continue;
    }
    if (int r = dev->write_many(ios); r < 0) {
      HS_ERROR("write to {} device failed: {}", tier_name(t), strerror(-r));
      return -EIO;
    }
    tracker_->note_write(t);
  }
  return 0;
}

// ---------------------------------------------------------------- writes

void DataWriter::overwrite_in_place(TxnContext& tx, Tier tier, Onode& o, uint64_t a, const char* buf, uint64_t len) {
  const uint64_t b = a + len;
  std::vector<uint64_t> starts;
  for (const DataExtent* e : o.extents.overlapping(a, b)) starts.push_back(e->logical);
  for (uint64_t start : starts) {
    DataExtent& e = *o.extents.mutable_extent(start);
    uint64_t x = std::max(a, e.logical), y = std::min(b, e.logical_end());
    const char* src = buf + (x - a);
    for (uint64_t blk = (x - e.logical) / e.csum_block; blk < (y - e.logical) / e.csum_block; ++blk)
      e.csums[blk] = crc32c(0, buf + (e.logical + blk * e.csum_block - a), e.csum_block);
    const uint64_t at = e.physical + (x - e.logical);
    // Whole 4 KiB blocks ride in the commit journal's record (its data
    // blocks); anything else is a D record, as without the option.
    bool ring = ring_data_ && at % kJournalBlock == 0 && (y - x) % kJournalBlock == 0 && y > x;
    if (!ring) {
      tx.deferred.push_back(deferred_->stage(tx.batch.get(), tier, at, std::string(src, y - x)));
      continue;
    }
    std::shared_ptr<const std::string> bytes;
    const uint64_t seq = deferred_->stage_ring(tx.batch.get(), tier, at, std::string(src, y - x), &ring, &bytes);
    tx.deferred.push_back(seq);
    if (!ring) continue;
    std::vector<uint32_t> crcs;
    if (e.csum_block == kJournalBlock && (x - e.logical) % kJournalBlock == 0) {
      const auto first = e.csums.begin() + static_cast<std::ptrdiff_t>((x - e.logical) / kJournalBlock);
      crcs.assign(first, first + static_cast<std::ptrdiff_t>((y - x) / kJournalBlock));
    }
    tx.ring.push_back({seq, tier, at, std::move(bytes), std::move(crcs)});
  }
}

bool DataWriter::fastest_can_absorb(uint64_t len) const {
  const TierSpace::Usage u = tiers_->space(tiers_->fastest()).usage();
  return u.free > len && static_cast<double>(u.free - len) >= absorb_min_free_ * static_cast<double>(u.total);
}

bool DataWriter::absorbable(const CollectionId& c, const ObjectId& oid, const Onode& o, uint64_t off,
                            uint64_t len) const {
  if (!absorb_max_ || len > absorb_max_ || o.extents.empty()) return false;
  const Tier home = placement_.choose(o, off + len);
  return home != tiers_->fastest() && absorb_from_[home] && !heat_->write_continues(c, oid, off);
}

Tier DataWriter::preferred_tier(const CollectionId& c, const ObjectId& oid, const Onode& o, uint64_t end,
                                uint64_t len, bool absorbable, bool* absorbed) const {
  Tier preferred = placement_.choose(o, end);
  // A small random write into an object on the HDD costs the HDD a seek now
  // (or later, deferred); on the SSD it costs almost nothing, overwrites of
  // it stay there, and the migrator writes it back, with the object's other
  // absorbed blocks, only if the SSD needs the room.
  *absorbed = false;
  if (absorbable && preferred != tiers_->fastest() && fastest_can_absorb(len)) {
    preferred = tiers_->fastest();
    *absorbed = true;
  }
  if (o.extents.empty() && preferred != tiers_->slowest() &&
      tiers_->space(preferred).bypass(placement_key(c, oid), std::max(o.size, end)))
    preferred = tiers_->order().next(preferred, +1);  // a bypass section: straight to the slower tier
  return preferred;
}

void DataWriter::widen_to_units(const Onode& o, uint64_t* a, uint64_t* b) const {
  for (bool changed = true; changed;) {
    changed = false;
    for (const DataExtent* e : o.extents.overlapping(*a, *a + 1)) {
      uint64_t na = std::max(e->logical, align_down(*a, tiers_->space(e->tier).unit()));
      if (na < *a) *a = na, changed = true;
    }
    for (const DataExtent* e : o.extents.overlapping(*b - 1, *b)) {
      uint64_t nb = std::min(e->logical_end(), align_up(*b, tiers_->space(e->tier).unit()));
      if (nb > *b) *b = nb, changed = true;
    }
  }
}

int DataWriter::write(TxnContext& tx, const CollectionId& c, const ObjectId& oid, Onode& o, uint64_t off,
                      std::string_view data) {
  return write(tx, c, oid, o, off, ScatterData::view(data));
}

int DataWriter::write(TxnContext& tx, const CollectionId& c, const ObjectId& oid, Onode& o, uint64_t off,
                      const ScatterData& data, bool absorbable) {
  const uint64_t end = off + data.size();
  bool absorbed;
  const Tier preferred = preferred_tier(c, oid, o, end, data.size(), absorbable, &absorbed);
  Tier tiers[kMaxTiers];
  const int ntiers = tiers_->order().spill_order(preferred, tiers);
  for (int ti = 0; ti < ntiers; ++ti) {
    const Tier tier = tiers[ti];
    const uint64_t g = tiers_->space(tier).unit();
    uint64_t a = align_down(off, g), b = align_up(end, g);
    widen_to_units(o, &a, &b);
    const uint64_t len = b - a;
    const bool in_place = tiers_->space(tier).overwrites_in_place(len) && owned_on(o, tier, a, b);
    std::vector<PExtent> where;
    uint64_t hint = 0;
    if (a > 0) {
      for (const DataExtent* e : o.extents.overlapping(a - 1, a))
        if (e->tier == tier) hint = e->physical + (a - e->logical);
    }
    AlignedBuffer buf(len, 4096, AlignedBuffer::kUninitialized);
    // Read-modify-write of the partial units at either end (holes and bytes
    // past the object's end are zeros, which keeps the zero-tail invariant).
    if (a < off) {
      if (o.extents.any_in(a, off)) {
        if (int rr = reader_->read(c, oid, o, a, off - a, buf.data(), &tx.writes); rr < 0) return rr;
      } else {
        std::memset(buf.data(), 0, off - a);
      }
    }
    if (end < b) {
      if (o.extents.any_in(end, b)) {
        if (int rr = reader_->read(c, oid, o, end, b - end, buf.data() + (end - a), &tx.writes); rr < 0) return rr;
      } else {
        std::memset(buf.data() + (end - a), 0, b - end);
      }
    }
    data.copy_out(0, data.size(), buf.data() + (off - a));

    if (in_place) {
      overwrite_in_place(tx, tier, o, a, buf.data(), len);
      set_object_size(tx, o, std::max(o.size, end));
      return 0;
    }
    // An absorbed write is placed by its own size: in the section of an
    // object its size, not in the lanes the whole object (4 MiB) would take,
    // whose write units a later promotion of the object should fill alone.
    const uint64_t placed_as = absorbed && tier == tiers_->fastest() ? len : std::max(o.size, end);
    int r = allocate_on(tx, tier, len, hint, &where, c, oid, placed_as, buf.data());
    if (r == -ENOSPC) {
      if (tier == preferred) perf_->set.inc(perf_->tier_spill_ops);
      continue;  // spill to the next tier
    }
    if (r < 0) return r;
    std::vector<PExtent> freed;
    o.extents.punch(a, b, &freed);
    if (int rr = add_extents(tx, tier, a, std::move(buf), len, where, &o.extents); rr < 0) return rr;
    for (const auto& e : freed) release(tx, e);
    set_object_size(tx, o, std::max(o.size, end));
    if (absorbed && tier == tiers_->fastest()) {
      perf_->set.inc(perf_->tier_absorb_ops);
      perf_->set.inc(perf_->tier_absorb_bytes, len);
      heat_->note_absorbed(c, oid);
    }
    return 0;
  }
  return -ENOSPC;
}

int DataWriter::zero(TxnContext& tx, const CollectionId& c, const ObjectId& oid, Onode& o, uint64_t off,
                     uint64_t len) {
  const uint64_t end = off + len;
  if (off < o.size) {
    const uint64_t zend = std::min(end, o.size);
    const uint64_t U = tiers_->coarsest_unit();
    // Whole units are punched out (holes read as zeros); nothing lies past
    // the end of the object, so a zero reaching it punches to infinity.
    uint64_t ia = align_up(off, U);
    uint64_t ib = end >= o.size ? UINT64_MAX : align_down(end, U);
    auto zero_write = [&](uint64_t zb, uint64_t ze) -> int {
      if (zb >= ze || !o.extents.any_in(zb, ze)) return 0;
      std::string zeros(ze - zb, '\0');
      return write(tx, c, oid, o, zb, zeros);
    };
    if (ia < ib) {
      std::vector<PExtent> freed;
      o.extents.punch(ia, ib, &freed);
      for (const auto& e : freed) release(tx, e);
      if (int r = zero_write(off, std::min(ia, zend)); r < 0) return r;
      if (ib != UINT64_MAX)
        if (int r = zero_write(std::max(ib, off), zend); r < 0) return r;
    } else {
      if (int r = zero_write(off, zend); r < 0) return r;
    }
  }
  set_object_size(tx, o, std::max(o.size, end));
  return 0;
}

int DataWriter::truncate(TxnContext& tx, const CollectionId& c, const ObjectId& oid, Onode& o, uint64_t size) {
  if (size < o.size) {
    const uint64_t cut = align_up(size, tiers_->coarsest_unit());
    // Bytes past the new end inside the last kept unit must read as zeros
    // after a later extension: rewrite them.
    uint64_t zend = std::min(cut, o.size);
    if (size < zend && o.extents.any_in(size, zend)) {
      std::string zeros(zend - size, '\0');
      if (int r = write(tx, c, oid, o, size, zeros); r < 0) return r;
    }
    // Nothing may lie past the last unit holding the new end; the zero
    // rewrite may have put finer-unit (SSD section) blocks up to `cut`.
    // An extent holding the end is cut at its own tier's unit; any other
    // extent past the end starts on its unit, so the finest unit cuts none.
    uint64_t keep = align_up(size, tiers_->finest_unit());
    if (auto at = o.extents.overlapping(size ? size - 1 : 0, size); size && !at.empty())
      keep = align_up(size, tiers_->space(at.front()->tier).unit());
    std::vector<PExtent> freed;
    o.extents.punch(keep, UINT64_MAX, &freed);
    for (const auto& e : freed) release(tx, e);
  }
  set_object_size(tx, o, size);
  return 0;
}

}  // namespace hybridstore
