// The data of ops that copy what an object already holds: a move between
// or within tiers (migrate, relocate), clone and clone_range.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "hscommon/crc32c.h"
#include "hybridstore/store/data_reader.h"
#include "hybridstore/store/data_writer.h"
#include "hybridstore/store/tier_set.h"

namespace hybridstore {

namespace {
uint64_t align_down(uint64_t v, uint64_t a) { return v / a * a; }
uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
// Large copies (clone, clone_range) go in pieces of this size, bounding memory.
constexpr uint64_t kCopyChunk = 8ull << 20;
}  // namespace

int DataWriter::move(TxnContext& tx, const CollectionId& c, const Op& op, Onode& o, std::string* why) {
  if (op.flags >= static_cast<uint32_t>(tiers_->count())) {
    *why = fmt::format("no tier {} in this store", op.flags);
    return -EINVAL;
  }
  const Tier target = tier_at(static_cast<int>(op.flags));
  const TierSpace& sp = tiers_->space(target);
  const uint64_t tu = sp.unit();
  std::string_view image = op.payload();
  std::vector<DataExtent> moving;
  // The reader of the move's image (HybridStore::move_data) agrees.
  const bool whole = sp.moves_rewrite_whole();
  for (const auto& [off, e] : o.extents.extents()) {
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
  const uint64_t end_cap = align_up(o.size, tu);
  for (auto [a, b] : ranges) {
    b = std::min(b, end_cap);
    if (a >= b) continue;
    const uint64_t len = b - a;
    std::vector<PExtent> where;
    AlignedBuffer buf(len, 4096, AlignedBuffer::kUninitialized);
    // Bytes of the widened range in holes or past the image are zeros, as a
    // read of them returns.
    std::memset(buf.data(), 0, len);
    for (const DataExtent* e : o.extents.overlapping(a, b)) {
      uint64_t x = std::max(a, e->logical), y = std::min(b, e->logical_end());
      if (x < y) std::memcpy(buf.data() + (x - a), image.data() + x, y - x);
    }
    if (int r = allocate_on(tx, target, len, 0, &where, c, op.oid, o.size, buf.data()); r < 0) {
      *why = fmt::format("no space on the {} tier", tier_name(target));
      return r;
    }
    std::vector<PExtent> freed;
    o.extents.punch(a, b, &freed);
    if (int r = add_extents(tx, target, a, std::move(buf), len, where, &o.extents); r < 0) return r;
    if (op.len) tx.relocated += len;
    for (const auto& f : freed) release(tx, f);
  }
  if (!op.len && o.extents.any_in(end_cap, std::numeric_limits<uint64_t>::max())) {
    std::vector<PExtent> freed;
    o.extents.punch(end_cap, std::numeric_limits<uint64_t>::max(), &freed);
    for (const auto& f : freed) release(tx, f);
  }
  return 0;
}

int DataWriter::copy(TxnContext& tx, const CollectionId& c, const ObjectId& src_oid, const Onode& src,
                     const ObjectId& dst_oid, Onode& dst, std::string* why) {
  for (const auto& [off, e] : src.extents.extents()) {
    for (uint64_t done = 0; done < e.length; done += kCopyChunk) {
      uint64_t n = std::min(kCopyChunk, e.length - done);
      AlignedBuffer buf(n, 4096, AlignedBuffer::kUninitialized);
      if (int r = reader_->read(c, src_oid, src, e.logical + done, n, buf.data(), &tx.writes); r < 0) {
        *why = "reading clone source";
        return r;
      }
      std::vector<PExtent> where;
      // The source's tier, else the next one that has room and takes
      // pieces of this size.
      Tier order[kMaxTiers];
      const int norder = tiers_->order().spill_order(e.tier, order);
      Tier tier = e.tier;
      int r = -ENOSPC;
      for (int k = 0; k < norder && r == -ENOSPC; ++k) {
        if (k > 0 && n % tiers_->space(order[k]).unit() != 0) continue;
        tier = order[k];
        r = allocate_on(tx, tier, n, 0, &where, c, dst_oid, src.size, buf.data());
      }
      if (r < 0) {
        *why = "no space for the clone";
        return r;
      }
      if (int rr = add_extents(tx, tier, e.logical + done, std::move(buf), n, where, &dst.extents); rr < 0)
        return rr;
    }
  }
  return 0;
}

int DataWriter::copy_range(TxnContext& tx, const CollectionId& c, const Op& op, const Onode& src, Onode& dst,
                           std::string* why) {
  const bool same = op.oid == op.dst_oid;
  // Walk the source range as alternating holes and data, so holes stay holes
  // in the destination; data goes in bounded pieces (one piece when source
  // and destination are one object, so an overlapping copy reads old bytes).
  const uint64_t src_end = op.off + op.len;
  std::vector<std::pair<uint64_t, uint64_t>> pieces;  // [begin, end) of data
  for (const DataExtent* e : src.extents.overlapping(op.off, src_end)) {
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
    int r = reader_->read(c, op.oid, src, b, n, out->data(), &tx.writes);
    if (r < 0) *why = "reading clone_range source";
    return r;
  };
  if (same)
    for (auto& a : actions)
      if (!a.hole)
        if (int r = read_piece(a.begin, a.end - a.begin, &a.data); r < 0) return r;
  for (auto& a : actions) {
    uint64_t at = op.dst_off + (a.begin - op.off);
    if (a.hole) {
      if (int r = zero(tx, c, op.dst_oid, dst, at, a.end - a.begin); r < 0) return r;
    } else if (same) {
      if (int r = write(tx, c, op.dst_oid, dst, at, a.data); r < 0) return r;
    } else {
      for (uint64_t x = a.begin; x < a.end; x += kCopyChunk) {
        uint64_t n = std::min(kCopyChunk, a.end - x);
        std::string buf;
        if (int r = read_piece(x, n, &buf); r < 0) return r;
        if (int r = write(tx, c, op.dst_oid, dst, at + (x - a.begin), buf); r < 0) return r;
      }
    }
  }
  return 0;
}

}  // namespace hybridstore
