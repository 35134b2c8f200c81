// The data path: copy-on-write writes, zeroing, truncation and clones, all
// allocating fresh space so that committed data is never overwritten before
// the metadata that stops referencing it is durable; plus checksummed reads.
//
// Granularity: new data is written in units of the target tier's allocation
// unit. A range cutting into an extent whose tier has a coarser unit is first
// widened to that unit, so every extent always starts and ends on its own
// unit and every cut lands on a checksum-block boundary.
#include <algorithm>
#include <limits>
#include <cstring>

#include "hscommon/crc32c.h"
#include "hscommon/log.h"
#include "hybridstore/kv/kv_schema.h"
#include "hybridstore/store/store_impl.h"

namespace hybridstore {

namespace {
uint64_t align_down(uint64_t v, uint64_t a) { return v / a * a; }
uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
// Large copies (clone, clone_range) go in pieces of this size, bounding memory.
constexpr uint64_t kCopyChunk = 8ull << 20;
}  // namespace

// ---------------------------------------------------------------- reads

int StoreImpl::read_data(const CollectionId& c, const ObjectId& oid, const Onode& o, uint64_t off,
                         uint64_t len, char* out, const TxnContext* tx) {
  uint64_t end = off + len;
  ReadCache* cache = read_cache_ && !ReadCache::bypassed() ? read_cache_.get() : nullptr;
  struct Pending {
    const DataExtent* e;
    uint64_t first_block, last_block;  // csum blocks [first, last) of the extent
    uint64_t phys_begin;               // aligned physical start of the buffer
    char* data;                        // where the blocks are read: `own`, or `out` itself
    uint64_t size;
    AlignedBuffer own;
    bool cached = false;               // served by the data cache (verified when it was kept)
    bool keep = false;                 // exactly whole checksum blocks of 4 KiB units: cacheable
    std::vector<uint64_t> gens;        // the cache's generations before the device read
  };
  std::vector<Pending> reads;
  // Holes read as zeros; the rest of `out` is copied from the extents below
  // (extents are in order and never overlap).
  uint64_t zeroed_to = off;
  for (const DataExtent* e : o.extents.overlapping(off, end)) {
    if (e->logical > zeroed_to) std::memset(out + (zeroed_to - off), 0, e->logical - zeroed_to);
    zeroed_to = std::max(zeroed_to, std::min(end, e->logical_end()));
    uint64_t cb = e->csum_block;
    uint64_t b = std::max(off, e->logical) - e->logical;
    uint64_t f = std::min(end, e->logical_end()) - e->logical;
    Pending p{e, b / cb, (f + cb - 1) / cb, 0, nullptr, 0, {}, false, false, {}};
    BlockDevice* dev = space(e->tier).device();
    uint64_t a = dev->alignment();
    uint64_t pb = align_down(e->physical + p.first_block * cb, a);
    uint64_t pe = align_up(e->physical + p.last_block * cb, a);
    p.phys_begin = pb;
    p.size = pe - pb;
    // When the blocks to read are exactly this piece of the result and the
    // caller's memory is aligned for direct I/O, they are read in place:
    // no bounce buffer and no copy (4 MiB reads into the Ceph adapter's
    // aligned buffers).
    char* dst = out + (e->logical + b - off);
    if (pb == e->physical + b && p.size == f - b && reinterpret_cast<uintptr_t>(dst) % 4096 == 0) {
      p.data = dst;
    } else {
      p.own = AlignedBuffer(p.size, 4096, AlignedBuffer::kUninitialized);
      p.data = p.own.data();
    }
    // The cache holds what lies on the device, in blocks their checksums
    // vouched for: not a transaction's own writes (nor, below, staged
    // records patched over the device's bytes).
    p.keep = cache && !tx && pb == e->physical + p.first_block * cb &&
             p.size == (p.last_block - p.first_block) * cb && pb % ReadCache::kBlock == 0 &&
             p.size % ReadCache::kBlock == 0;
    reads.push_back(std::move(p));
  }
  if (zeroed_to < end) std::memset(out + (zeroed_to - off), 0, end - zeroed_to);
  // Deferred writes not yet on the device: snapshot them before reading the
  // device and patch after. Taken in this order, a record the applier writes
  // and drops in between is either in the snapshot or already on the device.
  std::vector<DeferredWriter::Snapshot> staged(reads.size());
  for (size_t i = 0; i < reads.size(); ++i) {
    Pending& p = reads[i];
    staged[i] = deferred_->snapshot(p.e->tier, p.phys_begin, p.size);
    // Where a record is staged the device is behind (and so is the cache).
    if (!staged[i].pieces.empty()) p.keep = false;
    if (!p.keep) continue;
    if (cache->lookup(tier_index(p.e->tier), p.phys_begin, p.size, p.data))
      p.cached = true;
    else
      cache->snapshot(tier_index(p.e->tier), p.phys_begin, p.size, &p.gens);
  }
  for (int t = 0; t < tiers(); ++t) {
    std::vector<ReadIo> ios;
    for (auto& p : reads) {
      if (tier_index(p.e->tier) != t || p.cached) continue;
      // Neighbouring extents read into neighbouring memory (a 4 MiB object
      // is 16 extents, one per map shard) make one request.
      if (!ios.empty() && ios.back().offset + ios.back().len == p.phys_begin &&
          ios.back().buf + ios.back().len == p.data) {
        ios.back().len += p.size;
        continue;
      }
      ios.push_back({p.phys_begin, p.data, p.size});
    }
    if (ios.empty()) continue;
    uint64_t bytes = 0;
    for (const auto& io : ios) bytes += io.len;
    perf_->set.inc(perf_->device_read_bytes[t], bytes);
    if (int r = dev(t)->read_many(ios); r < 0) {
      HS_ERROR("read error on {} device for object {} in {}: {}", tier_name(static_cast<Tier>(t)),
               oid.to_string(), c.name, strerror(-r));
      return -EIO;
    }
  }
  for (size_t i = 0; i < reads.size(); ++i) {
    auto& r = reads[i];
    if (r.cached) continue;
    // This transaction's own direct writes are not on the device yet. They
    // go first: they can only be to space it allocated itself, and any
    // staged record on that space is a later op of the same transaction
    // overwriting them in place (no record of an earlier transaction can
    // still cover space that was free).
    if (tx)
      for (const auto& w : tx->writes) {
        if (w.tier != r.e->tier) continue;
        uint64_t b = std::max(w.offset, r.phys_begin), f = std::min(w.offset + w.len, r.phys_begin + r.size);
        if (b < f) std::memcpy(r.data + (b - r.phys_begin), w.data + (b - w.offset), f - b);
      }
    DeferredWriter::patch(staged[i], r.phys_begin, r.data, r.size);
  }
  for (auto& p : reads) {
    const DataExtent& e = *p.e;
    uint64_t cb = e.csum_block;
    if (p.cached) {
      uint64_t lb = std::max(off, e.logical);
      uint64_t le = std::min(end, e.logical_end());
      const char* from = p.data + (e.physical + (lb - e.logical) - p.phys_begin);
      if (from != out + (lb - off)) std::memcpy(out + (lb - off), from, le - lb);
      continue;
    }
    std::vector<uint32_t> got(p.last_block - p.first_block);
    crc32c_blocks(p.data + (e.physical + p.first_block * cb - p.phys_begin), cb, got.size(), got.data());
    for (uint64_t blk = p.first_block; blk < p.last_block; ++blk) {
      if (got[blk - p.first_block] != e.csums[blk]) {
        perf_->set.inc(perf_->csum_errors);
        HS_ERROR("checksum mismatch in object {} of {} at offset {} ({} device offset {})",
                 oid.to_string(), c.name, e.logical + blk * cb, tier_name(e.tier), e.physical + blk * cb);
        return -EIO;
      }
    }
    if (p.keep) cache->insert(tier_index(e.tier), p.phys_begin, p.size, p.data, p.gens);
    uint64_t lb = std::max(off, e.logical);
    uint64_t le = std::min(end, e.logical_end());
    const char* from = p.data + (e.physical + (lb - e.logical) - p.phys_begin);
    if (from != out + (lb - off)) std::memcpy(out + (lb - off), from, le - lb);
  }
  return 0;
}

bool StoreImpl::read_data_cached(const Onode& o, uint64_t off, uint64_t len,
                                 std::vector<HybridStore::ReadPiece>* out) {
  ReadCache* cache = read_cache_ && !ReadCache::bypassed() ? read_cache_.get() : nullptr;
  if (!cache || len == 0) return false;
  const uint64_t end = off + len;
  std::vector<ReadCache::Piece> got;
  uint64_t pos = off;
  for (const DataExtent* e : o.extents.overlapping(off, end)) {
    if (e->logical > pos) return false;  // a hole: read_data zero-fills it
    const uint64_t cb = e->csum_block;
    const uint64_t b = std::max(off, e->logical) - e->logical;
    const uint64_t f = std::min(end, e->logical_end()) - e->logical;
    const uint64_t first_block = b / cb, last_block = (f + cb - 1) / cb;
    // Exactly the blocks read_data would keep and look up.
    const uint64_t pb = e->physical + first_block * cb, size = (last_block - first_block) * cb;
    if (pb % ReadCache::kBlock != 0 || size % ReadCache::kBlock != 0) return false;
    // Where a record is staged the device is behind, and so is the cache.
    if (!deferred_->snapshot(e->tier, pb, size).pieces.empty()) return false;
    const size_t from = got.size();
    if (!cache->lookup_refs(tier_index(e->tier), pb, size, &got)) return false;
    // Trim the blocks to the part of the extent asked for.
    uint64_t skip = b - first_block * cb, want = f - b;
    size_t keep = from;
    for (size_t i = from; i < got.size() && want > 0; ++i) {
      ReadCache::Piece p = got[i];
      if (skip >= p.len) {
        skip -= p.len;
        continue;
      }
      p.data += skip;
      p.len -= skip;
      skip = 0;
      p.len = std::min(p.len, want);
      want -= p.len;
      got[keep++] = std::move(p);
    }
    got.resize(keep);
    pos = e->logical_end();
  }
  if (pos < end) return false;
  for (auto& p : got) out->push_back(HybridStore::ReadPiece{std::move(p.owner), p.data, p.len});
  return true;
}

int StoreImpl::read_extent_raw(const DataExtent& e, std::string* out) {
  Onode tmp;
  DataExtent copy = e;
  copy.logical = 0;
  tmp.extents.insert(copy);
  out->resize(e.length);
  return read_data(CollectionId("-"), ObjectId::from_name("-"), tmp, 0, e.length, out->data());
}

// ---------------------------------------------------------------- space

int OpApplier::allocate_on(Tier tier, uint64_t len, uint64_t hint, std::vector<PExtent>* out, const CollectionId& c,
                           const ObjectId& oid, uint64_t object_size, const char* data) {
  TierSpace& sp = s.space(tier);
  TierSpace::Request req;
  req.key = placement_key(c, oid);
  req.object_size = object_size;
  req.length = len;
  req.hint = hint;
  req.owner = ObjectIdHash()(oid);
  req.hotness = [&] {
    HeatSample h;
    return s.heat_->lookup(kv::onode_key(c, oid), &h) ? h.frequency : 0.0;
  };
  std::vector<PExtent> got;
  const TxnWrites to{tx.batch.get(), s.deferred_.get(), &tx.deferred, &tx.writes};
  if (int r = sp.write_new(req, data, to, &got); r < 0) return r;
  const int t = tier_index(tier);
  s.perf_->set.inc(s.perf_->write_bytes[t], len);
  s.perf_->set.inc(s.perf_->bytes_used[t], len);
  for (const auto& p : got) {
    out->push_back(p);
    tx.allocated.push_back(p);
    sp.freelist().toggle(tx.batch.get(), p.offset, p.length);
  }
  return 0;
}

void OpApplier::release(const PExtent& e) {
  tx.released.push_back(e);
  s.space(e.tier).freelist().toggle(tx.batch.get(), e.offset, e.length);
}

void OpApplier::release_all_data(Onode& o) {
  std::vector<PExtent> freed;
  o.extents.punch(0, UINT64_MAX, &freed);
  for (const auto& e : freed) release(e);
}

int OpApplier::store_new_extents(Tier tier, uint64_t logical, AlignedBuffer owned, uint64_t len,
                                 const std::vector<PExtent>& where, ExtentMap* into) {
  uint32_t cb = s.space(tier).csum_block();
  const char* buf = owned.data();
  uint64_t pos = 0;
  std::vector<DataExtent> made;
  // An extent ends where an extent-map shard does (when the tier's unit
  // allows): a 4 MiB object is then 16 extents, and a small overwrite
  // changes the checksums, and rewrites the stored shard, of one of them.
  const uint64_t unit = s.space(tier).unit();
  const bool cut_at_shards = s.extent_map_inline_max_ > 0 && ExtentMap::kShardSpan % unit == 0;
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

int OpApplier::write_pending() {
  for (int t = 0; t < s.tiers(); ++t) {
    std::vector<WriteIo> ios;
    uint64_t bytes = 0;
    bool before_queue = false;
    for (const auto& w : tx.writes)
      if (tier_index(w.tier) == t) {
        ios.push_back({w.offset, w.data, w.len});
        bytes += w.len;
        before_queue |= w.before_queue;
      }
    if (ios.empty()) continue;
    // Large writes to new space run while the caller goes on; the commit
    // waits for them. Not those the space orders against its records by
    // their being written before the commit is queued.
    if (s.async_write_min_ > 0 && bytes >= s.async_write_min_ && !before_queue) {
      if (!tx.pending) {
        tx.pending = std::make_shared<PendingWrites>(&s.write_tracker_);
        // The buffers the writes come from live until the commit.
        tx.pending->buffers = std::move(tx.buffers);
      }
      tx.pending->add();
      s.perf_->set.inc(s.perf_->async_write_ops, 1);
      s.perf_->set.inc(s.perf_->async_write_bytes, bytes);
      s.dev(t)->write_many_async(std::move(ios), [p = tx.pending, t](int r) { p->finish(t, r); });
      continue;
    }
    if (int r = s.dev(t)->write_many(ios); r < 0) {
      HS_ERROR("write to {} device failed: {}", tier_name(static_cast<Tier>(t)), strerror(-r));
      return -EIO;
    }
    s.write_tracker_.note_write(t);
  }
  return 0;
}

// ---------------------------------------------------------------- writes

void OpApplier::overwrite_deferred(Tier tier, Onode& o, uint64_t a, const char* buf, uint64_t len) {
  const uint64_t b = a + len;
  std::vector<uint64_t> starts;
  for (const DataExtent* e : o.extents.overlapping(a, b)) starts.push_back(e->logical);
  for (uint64_t start : starts) {
    DataExtent& e = *o.extents.mutable_extent(start);
    uint64_t x = std::max(a, e.logical), y = std::min(b, e.logical_end());
    const char* src = buf + (x - a);
    for (uint64_t blk = (x - e.logical) / e.csum_block; blk < (y - e.logical) / e.csum_block; ++blk)
      e.csums[blk] = crc32c(0, buf + (e.logical + blk * e.csum_block - a), e.csum_block);
    tx.deferred.push_back(s.deferred_->stage(tx.batch.get(), tier, e.physical + (x - e.logical), std::string(src, y - x)));
  }
}

// True when [a, b) is entirely allocated, on `tier` only, so it can be
// overwritten where it lies.
static bool owned_on(const Onode& o, Tier tier, uint64_t a, uint64_t b) {
  uint64_t pos = a;
  for (const DataExtent* e : o.extents.overlapping(a, b)) {
    if (e->tier != tier || e->logical > pos) return false;
    pos = e->logical_end();
  }
  return pos >= b;
}

int OpApplier::write_data(const CollectionId& c, const ObjectId& oid, Onode& o, uint64_t off,
                          std::string_view data) {
  return write_data(c, oid, o, off, ScatterData::view(data));
}

int OpApplier::write_data(const CollectionId& c, const ObjectId& oid, Onode& o, uint64_t off,
                          const ScatterData& data, bool absorbable) {
  const uint64_t end = off + data.size();
  Tier preferred = s.placement_->choose(o, end);
  // A small random write into an object on the HDD costs the HDD a seek now
  // (or later, deferred); on the SSD it costs almost nothing, overwrites of
  // it stay there, and the migrator writes it back, with the object's other
  // absorbed blocks, only if the SSD needs the room.
  bool absorbed = false;
  if (absorbable && preferred != s.fastest() && s.fastest_can_absorb(data.size())) {
    preferred = s.fastest();
    absorbed = true;
  }
  if (o.extents.empty() && preferred != s.slowest() &&
      s.space(preferred).bypass(placement_key(c, oid), std::max(o.size, end)))
    preferred = s.next_tier(preferred, +1);  // a bypass section: straight to the slower tier
  Tier tiers[kMaxTiers];
  const int ntiers = s.spill_order(preferred, tiers);
  for (int ti = 0; ti < ntiers; ++ti) {
    const Tier tier = tiers[ti];
    const uint64_t g = s.space(tier).unit();
    uint64_t a = align_down(off, g), b = align_up(end, g);
    // Widen to the unit of any coarser-grained extent the range cuts into.
    for (bool changed = true; changed;) {
      changed = false;
      for (const DataExtent* e : o.extents.overlapping(a, a + 1)) {
        uint64_t na = std::max(e->logical, align_down(a, s.space(e->tier).unit()));
        if (na < a) a = na, changed = true;
      }
      for (const DataExtent* e : o.extents.overlapping(b - 1, b)) {
        uint64_t nb = std::min(e->logical_end(), align_up(b, s.space(e->tier).unit()));
        if (nb > b) b = nb, changed = true;
      }
    }
    const uint64_t len = b - a;
    const bool in_place = s.space(tier).overwrites_in_place(len) && owned_on(o, tier, a, b);
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
        if (int rr = s.read_data(c, oid, o, a, off - a, buf.data(), &tx); rr < 0) return rr;
      } else {
        std::memset(buf.data(), 0, off - a);
      }
    }
    if (end < b) {
      if (o.extents.any_in(end, b)) {
        if (int rr = s.read_data(c, oid, o, end, b - end, buf.data() + (end - a), &tx); rr < 0) return rr;
      } else {
        std::memset(buf.data() + (end - a), 0, b - end);
      }
    }
    data.copy_out(0, data.size(), buf.data() + (off - a));

    if (in_place) {
      overwrite_deferred(tier, o, a, buf.data(), len);
      set_size(o, std::max(o.size, end));
      return 0;
    }
    // An absorbed write is placed by its own size: in the section of an
    // object its size, not in the lanes the whole object (4 MiB) would take,
    // whose write units a later promotion of the object should fill alone.
    const uint64_t placed_as = absorbed && tier == s.fastest() ? len : std::max(o.size, end);
    int r = allocate_on(tier, len, hint, &where, c, oid, placed_as, buf.data());
    if (r == -ENOSPC) {
      if (tier == preferred) s.perf_->set.inc(s.perf_->tier_spill_ops);
      continue;  // spill to the next tier
    }
    if (r < 0) return r;
    std::vector<PExtent> freed;
    o.extents.punch(a, b, &freed);
    if (int rr = store_new_extents(tier, a, std::move(buf), len, where, &o.extents); rr < 0) return rr;
    for (const auto& e : freed) release(e);
    set_size(o, std::max(o.size, end));
    if (absorbed && tier == s.fastest()) {
      s.perf_->set.inc(s.perf_->tier_absorb_ops);
      s.perf_->set.inc(s.perf_->tier_absorb_bytes, len);
      if (Migrator* m = s.promoter_.load(std::memory_order_acquire)) m->note_absorbed(c, oid);
    }
    return 0;
  }
  return -ENOSPC;
}

int OpApplier::zero_range(const CollectionId& c, const ObjectId& oid, Onode& o, uint64_t off, uint64_t len) {
  const uint64_t end = off + len;
  if (off < o.size) {
    const uint64_t zend = std::min(end, o.size);
    const uint64_t U = s.max_unit_;
    // Whole units are punched out (holes read as zeros); nothing lies past
    // the end of the object, so a zero reaching it punches to infinity.
    uint64_t ia = align_up(off, U);
    uint64_t ib = end >= o.size ? UINT64_MAX : align_down(end, U);
    auto zero_write = [&](uint64_t zb, uint64_t ze) -> int {
      if (zb >= ze || !o.extents.any_in(zb, ze)) return 0;
      std::string zeros(ze - zb, '\0');
      return write_data(c, oid, o, zb, zeros);
    };
    if (ia < ib) {
      std::vector<PExtent> freed;
      o.extents.punch(ia, ib, &freed);
      for (const auto& e : freed) release(e);
      if (int r = zero_write(off, std::min(ia, zend)); r < 0) return r;
      if (ib != UINT64_MAX)
        if (int r = zero_write(std::max(ib, off), zend); r < 0) return r;
    } else {
      if (int r = zero_write(off, zend); r < 0) return r;
    }
  }
  set_size(o, std::max(o.size, end));
  return 0;
}

int OpApplier::truncate(const CollectionId& c, const ObjectId& oid, Onode& o, uint64_t size) {
  if (size < o.size) {
    const uint64_t cut = align_up(size, s.max_unit_);
    // Bytes past the new end inside the last kept unit must read as zeros
    // after a later extension: rewrite them.
    uint64_t zend = std::min(cut, o.size);
    if (size < zend && o.extents.any_in(size, zend)) {
      std::string zeros(zend - size, '\0');
      if (int r = write_data(c, oid, o, size, zeros); r < 0) return r;
    }
    // Nothing may lie past the last unit holding the new end; the zero
    // rewrite may have put finer-unit (SSD section) blocks up to `cut`.
    // An extent holding the end is cut at its own tier's unit; any other
    // extent past the end starts on its unit, so the finest unit cuts none.
    uint64_t finest = s.min_unit_;
    uint64_t keep = align_up(size, finest);
    if (auto at = o.extents.overlapping(size ? size - 1 : 0, size); size && !at.empty())
      keep = align_up(size, s.space(at.front()->tier).unit());
    std::vector<PExtent> freed;
    o.extents.punch(keep, UINT64_MAX, &freed);
    for (const auto& e : freed) release(e);
  }
  set_size(o, size);
  return 0;
}

// ---------------------------------------------------------------- tiers

int OpApplier::migrate(const CollectionId& c, const Op& op, std::string* why) {
  auto o = get(c, op.oid);
  if (!o) {
    *why = "object is gone";
    return load_error ? load_error : -ENOENT;
  }
  if (extent_fingerprint(o->extents) != op.name) {
    *why = "object changed while it was being copied";
    return -EAGAIN;
  }
  const Tier target = static_cast<Tier>(op.flags);
  if (op.flags >= static_cast<uint32_t>(s.tiers())) {
    *why = fmt::format("no tier {} in this store", op.flags);
    return -EINVAL;
  }
  const uint64_t tu = s.space(target).unit();
  std::string_view image = op.payload();
  std::vector<DataExtent> moving;
  // The reader of the move's image (HybridStore::move_data) agrees.
  const bool whole = s.space(target).moves_rewrite_whole();
  for (const auto& [off, e] : o->extents.extents()) {
    bool in_range = op.len && e.tier == target && e.physical < op.off + op.len && e.physical + e.length > op.off;
    if (op.len ? in_range : whole || e.tier != target) moving.push_back(e);
  }
  // What moves, in the target's units: an object whose tiers have different
  // units (an SSD of 1 KiB blocks took a small write into an object on a
  // 4 KiB-unit HDD) moves whole units, taking the neighbouring bytes already
  // on the target along. Ranges are merged where widening makes them meet.
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const DataExtent& e : moving) {
    if (e.logical + e.length > image.size()) {
      *why = "extent reaches past the copied image";
      return -EINVAL;
    }
    uint64_t a = align_down(e.logical, tu), b = align_up(e.logical_end(), tu);
    if (!ranges.empty() && a <= ranges.back().second)
      ranges.back().second = std::max(ranges.back().second, b);
    else
      ranges.emplace_back(a, b);
  }
  for (const DataExtent& e : moving) {
    // The copy must carry the very bytes the checksums vouch for.
    for (size_t i = 0; i < e.csums.size(); ++i)
      if (crc32c(0, image.data() + e.logical + i * e.csum_block, e.csum_block) != e.csums[i]) {
        *why = fmt::format("copied data at {} does not match its checksum", e.logical + i * e.csum_block);
        return -EIO;
      }
  }
  // Nothing lies past the object's last unit of the target tier: bytes there
  // are zeros by the zero-tail invariant, and a coarser source unit (an HDD
  // extent rounded to 4 KiB moving to SSD blocks of 256 bytes) must not
  // carry them over.
  const uint64_t end_cap = align_up(o->size, tu);
  for (auto [a, b] : ranges) {
    b = std::min(b, end_cap);
    if (a >= b) continue;
    const uint64_t len = b - a;
    std::vector<PExtent> where;
    AlignedBuffer buf(len, 4096, AlignedBuffer::kUninitialized);
    // Bytes of the widened range in holes or past the image are zeros, as a
    // read of them returns.
    std::memset(buf.data(), 0, len);
    for (const DataExtent* e : o->extents.overlapping(a, b)) {
      uint64_t x = std::max(a, e->logical), y = std::min(b, e->logical_end());
      if (x < y) std::memcpy(buf.data() + (x - a), image.data() + x, y - x);
    }
    if (int r = allocate_on(target, len, 0, &where, c, op.oid, o->size, buf.data()); r < 0) {
      *why = fmt::format("no space on the {} tier", tier_name(target));
      return r;
    }
    std::vector<PExtent> freed;
    o->extents.punch(a, b, &freed);
    if (int r = store_new_extents(target, a, std::move(buf), len, where, &o->extents); r < 0) return r;
    if (op.len) tx.relocated += len;
    for (const auto& f : freed) release(f);
  }
  if (!op.len && o->extents.any_in(end_cap, std::numeric_limits<uint64_t>::max())) {
    std::vector<PExtent> freed;
    o->extents.punch(end_cap, std::numeric_limits<uint64_t>::max(), &freed);
    for (const auto& f : freed) release(f);
  }
  mark_dirty(c, op.oid);
  return 0;
}

// ---------------------------------------------------------------- clones

int OpApplier::clone(const CollectionId& c, const ObjectId& src, const ObjectId& dst, std::string* why) {
  auto so = get(c, src);
  if (!so) {
    *why = load_error ? "source has a corrupt onode" : "clone source " + src.to_string() + " does not exist";
    return load_error ? load_error : -ENOENT;
  }
  if (src == dst) return 0;
  auto existing = get(c, dst);
  if (load_error) return load_error;
  if (existing)
    if (int r = remove_object(c, dst); r < 0) return r;
  // `so` stays valid: the overlay owns it and removing dst did not touch it.
  auto d = get_or_create(c, dst);
  d->attrs = so->attrs;
  d->alloc_hint_flags = so->alloc_hint_flags;
  d->expected_object_size = so->expected_object_size;
  d->expected_write_size = so->expected_write_size;
  for (const auto& [off, e] : so->extents.extents()) {
    for (uint64_t done = 0; done < e.length; done += kCopyChunk) {
      uint64_t n = std::min(kCopyChunk, e.length - done);
      AlignedBuffer buf(n, 4096, AlignedBuffer::kUninitialized);
      if (int r = s.read_data(c, src, *so, e.logical + done, n, buf.data(), &tx); r < 0) {
        *why = "reading clone source";
        return r;
      }
      std::vector<PExtent> where;
      // The source's tier, else the next one that has room and takes
      // pieces of this size.
      Tier order[kMaxTiers];
      const int norder = s.spill_order(e.tier, order);
      Tier tier = e.tier;
      int r = -ENOSPC;
      for (int k = 0; k < norder && r == -ENOSPC; ++k) {
        if (k > 0 && n % s.space(order[k]).unit() != 0) continue;
        tier = order[k];
        r = allocate_on(tier, n, 0, &where, c, dst, so->size, buf.data());
      }
      if (r < 0) {
        *why = "no space for the clone";
        return r;
      }
      if (int rr = store_new_extents(tier, e.logical + done, std::move(buf), n, where, &d->extents); rr < 0)
        return rr;
    }
  }
  set_size(*d, so->size);
  if (so->nid) {
    if (int r = ensure_nid(c, dst, *d); r < 0) return r;
    if (int r = omap_copy(c, so->nid, d->nid); r < 0) return r;
  }
  mark_dirty(c, dst);
  return 0;
}

int OpApplier::clone_range(const CollectionId& c, const Op& op, std::string* why) {
  auto so = get(c, op.oid);
  if (!so) {
    *why = load_error ? "source has a corrupt onode" : "clone_range source " + op.oid.to_string() + " does not exist";
    return load_error ? load_error : -ENOENT;
  }
  if (op.off + op.len < op.off || op.off + op.len > so->size) {
    *why = fmt::format("source range {}~{} lies outside the source object (size {})", op.off, op.len, so->size);
    return -EINVAL;
  }
  // The sum can wrap: a huge dst_off must not pass as a small end.
  if (op.dst_off + op.len < op.dst_off || op.dst_off + op.len > s.max_object_size_) {
    *why = fmt::format("destination range {}~{} reaches past the largest object size {}", op.dst_off, op.len,
                       s.max_object_size_);
    return -E2BIG;
  }
  // Read everything first when source and destination are one object, so an
  // overlapping copy reads the old bytes.
  const bool same = op.oid == op.dst_oid;
  Onode snapshot = *so;
  auto d = get_or_create(c, op.dst_oid);
  if (load_error) return load_error;
  mark_dirty(c, op.dst_oid);
  // Walk the source range as alternating holes and data, so holes stay holes
  // in the destination; data goes in bounded pieces (one piece when source
  // and destination are one object, so an overlapping copy reads old bytes).
  const uint64_t src_end = op.off + op.len;
  std::vector<std::pair<uint64_t, uint64_t>> pieces;  // [begin, end) of data
  for (const DataExtent* e : snapshot.extents.overlapping(op.off, src_end)) {
    uint64_t b = std::max(op.off, e->logical), f = std::min(src_end, e->logical_end());
    if (!pieces.empty() && pieces.back().second == b)
      pieces.back().second = f;
    else
      pieces.emplace_back(b, f);
  }
  struct Action {
    uint64_t begin, end;  // source range
    bool hole;
    std::string data;     // read ahead when source and destination are one object
  };
  std::vector<Action> actions;
  uint64_t pos = op.off;
  for (const auto& [b, f] : pieces) {
    if (pos < b) actions.push_back({pos, b, true, {}});
    actions.push_back({b, f, false, {}});
    pos = f;
  }
  if (pos < src_end) actions.push_back({pos, src_end, true, {}});
  auto read_piece = [&](uint64_t b, uint64_t n, std::string* out) {
    out->assign(n, '\0');
    int r = s.read_data(c, op.oid, snapshot, b, n, out->data(), &tx);
    if (r < 0) *why = "reading clone_range source";
    return r;
  };
  if (same)
    for (auto& a : actions)
      if (!a.hole)
        if (int r = read_piece(a.begin, a.end - a.begin, &a.data); r < 0) return r;
  for (auto& a : actions) {
    uint64_t dst = op.dst_off + (a.begin - op.off);
    if (a.hole) {
      if (int r = zero_range(c, op.dst_oid, *d, dst, a.end - a.begin); r < 0) return r;
    } else if (same) {
      if (int r = write_data(c, op.dst_oid, *d, dst, a.data); r < 0) return r;
    } else {
      for (uint64_t x = a.begin; x < a.end; x += kCopyChunk) {
        uint64_t n = std::min(kCopyChunk, a.end - x);
        std::string buf;
        if (int r = read_piece(x, n, &buf); r < 0) return r;
        if (int r = write_data(c, op.dst_oid, *d, dst + (x - a.begin), buf); r < 0) return r;
      }
    }
  }
  return 0;
}

}  // namespace hybridstore
