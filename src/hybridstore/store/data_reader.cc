#include "hybridstore/store/data_reader.h"

#include <algorithm>
#include <cstring>

#include "hscommon/crc32c.h"
#include "hscommon/log.h"
#include "hybridstore/kv/deferred.h"
#include "hybridstore/store/store_perf.h"
#include "hybridstore/store/tier_set.h"

namespace hybridstore {

namespace {
uint64_t align_down(uint64_t v, uint64_t a) { return v / a * a; }
uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
}  // namespace

struct DataReader::Piece {
  const DataExtent* e;
  uint64_t first_block, last_block;  // csum blocks [first, last) of the extent
  uint64_t phys_begin;               // aligned physical start of the buffer
  char* data;                        // where the blocks are read: `own`, or `out` itself
  uint64_t size;
  AlignedBuffer own;
  bool cached = false;               // served by the data cache (verified when it was kept)
  bool keep = false;                 // exactly whole checksum blocks of 4 KiB units: cacheable
  std::vector<uint64_t> gens;        // the cache's generations before the device read
  DeferredWriter::Snapshot staged;   // records not on the device yet
};

int DataReader::read(const CollectionId& c, const ObjectId& oid, const Onode& o, uint64_t off, uint64_t len,
                     char* out, const std::vector<TierWrite>* own) const {
  const uint64_t end = off + len;
  // The cache holds what lies on the device, in blocks their checksums
  // vouched for: never a transaction's own writes.
  ReadCache* cache = tiers_->read_cache() && !ReadCache::bypassed() && !own ? tiers_->read_cache() : nullptr;
  std::vector<Piece> pieces = plan(o, off, end, out, cache);
  if (int r = fetch(c, oid, pieces); r < 0) return r;
  patch(pieces, own);
  return deliver(c, oid, pieces, off, end, out, cache);
}

std::vector<DataReader::Piece> DataReader::plan(const Onode& o, uint64_t off, uint64_t end, char* out,
                                                ReadCache* cache) const {
  std::vector<Piece> pieces;
  // Holes read as zeros; the rest of `out` is copied from the extents below
  // (extents are in order and never overlap).
  uint64_t zeroed_to = off;
  for (const DataExtent* e : o.extents.overlapping(off, end)) {
    if (e->logical > zeroed_to) std::memset(out + (zeroed_to - off), 0, e->logical - zeroed_to);
    zeroed_to = std::max(zeroed_to, std::min(end, e->logical_end()));
    uint64_t cb = e->csum_block;
    uint64_t b = std::max(off, e->logical) - e->logical;
    uint64_t f = std::min(end, e->logical_end()) - e->logical;
    Piece p{e, b / cb, (f + cb - 1) / cb, 0, nullptr, 0, {}, false, false, {}, {}};
    uint64_t a = tiers_->device(e->tier)->alignment();
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
    p.keep = cache && pb == e->physical + p.first_block * cb && p.size == (p.last_block - p.first_block) * cb &&
             pb % ReadCache::kBlock == 0 && p.size % ReadCache::kBlock == 0;
    pieces.push_back(std::move(p));
  }
  if (zeroed_to < end) std::memset(out + (zeroed_to - off), 0, end - zeroed_to);
  // Deferred writes not yet on the device: snapshot them before reading the
  // device and patch after. Taken in this order, a record the applier writes
  // and drops in between is either in the snapshot or already on the device.
  for (Piece& p : pieces) {
    p.staged = deferred_->snapshot(p.e->tier, p.phys_begin, p.size);
    // Where a record is staged the device is behind (and so is the cache).
    if (!p.staged.pieces.empty()) p.keep = false;
    if (!p.keep) continue;
    if (cache->lookup(tier_index(p.e->tier), p.phys_begin, p.size, p.data))
      p.cached = true;
    else
      cache->snapshot(tier_index(p.e->tier), p.phys_begin, p.size, &p.gens);
  }
  return pieces;
}

int DataReader::fetch(const CollectionId& c, const ObjectId& oid, std::vector<Piece>& pieces) const {
  for (Tier t : tiers_->ids()) {
    std::vector<ReadIo> ios;
    for (auto& p : pieces) {
      if (p.e->tier != t || p.cached) continue;
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
    if (int r = tiers_->device(t)->read_many(ios); r < 0) {
      HS_ERROR("read error on {} device for object {} in {}: {}", tier_name(t), oid.to_string(), c.name,
               strerror(-r));
      return -EIO;
    }
  }
  return 0;
}

void DataReader::patch(std::vector<Piece>& pieces, const std::vector<TierWrite>* own) {
  for (auto& p : pieces) {
    if (p.cached) continue;
    // The reader's own direct writes are not on the device yet. They go
    // first: they can only be to space it allocated itself, and any staged
    // record on that space is a later op of the same transaction
    // overwriting them in place (no record of an earlier transaction can
    // still cover space that was free).
    if (own)
      for (const auto& w : *own) {
        if (w.tier != p.e->tier) continue;
        uint64_t b = std::max(w.offset, p.phys_begin), f = std::min(w.offset + w.len, p.phys_begin + p.size);
        if (b < f) std::memcpy(p.data + (b - p.phys_begin), w.data + (b - w.offset), f - b);
      }
    DeferredWriter::patch(p.staged, p.phys_begin, p.data, p.size);
  }
}

int DataReader::deliver(const CollectionId& c, const ObjectId& oid, std::vector<Piece>& pieces, uint64_t off,
                        uint64_t end, char* out, ReadCache* cache) const {
  for (auto& p : pieces) {
    const DataExtent& e = *p.e;
    uint64_t cb = e.csum_block;
    if (!p.cached) {
      std::vector<uint32_t> got(p.last_block - p.first_block);
      crc32c_blocks(p.data + (e.physical + p.first_block * cb - p.phys_begin), cb, got.size(), got.data());
      for (uint64_t blk = p.first_block; blk < p.last_block; ++blk) {
        if (got[blk - p.first_block] != e.csums[blk]) {
          perf_->set.inc(perf_->csum_errors);
          HS_ERROR("checksum mismatch in object {} of {} at offset {} ({} device offset {})", oid.to_string(),
                   c.name, e.logical + blk * cb, tier_name(e.tier), e.physical + blk * cb);
          return -EIO;
        }
      }
      if (p.keep) cache->insert(tier_index(e.tier), p.phys_begin, p.size, p.data, p.gens);
    }
    uint64_t lb = std::max(off, e.logical);
    uint64_t le = std::min(end, e.logical_end());
    const char* from = p.data + (e.physical + (lb - e.logical) - p.phys_begin);
    if (from != out + (lb - off)) std::memcpy(out + (lb - off), from, le - lb);
  }
  return 0;
}

bool DataReader::read_cached(const Onode& o, uint64_t off, uint64_t len,
                             std::vector<ReadPiece>* out) const {
  ReadCache* cache = tiers_->read_cache() && !ReadCache::bypassed() ? tiers_->read_cache() : nullptr;
  if (!cache || len == 0) return false;
  const uint64_t end = off + len;
  std::vector<ReadCache::Piece> got;
  uint64_t pos = off;
  for (const DataExtent* e : o.extents.overlapping(off, end)) {
    if (e->logical > pos) return false;  // a hole: read() zero-fills it
    const uint64_t cb = e->csum_block;
    const uint64_t b = std::max(off, e->logical) - e->logical;
    const uint64_t f = std::min(end, e->logical_end()) - e->logical;
    const uint64_t first_block = b / cb, last_block = (f + cb - 1) / cb;
    // Exactly the blocks read() would keep and look up.
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
  for (auto& p : got) out->push_back(ReadPiece{std::move(p.owner), p.data, p.len});
  return true;
}

int DataReader::read_extent(const DataExtent& e, std::string* out) const {
  Onode tmp;
  DataExtent copy = e;
  copy.logical = 0;
  tmp.extents.insert(copy);
  out->resize(e.length);
  return read(CollectionId("-"), ObjectId::from_name("-"), tmp, 0, e.length, out->data());
}

}  // namespace hybridstore
