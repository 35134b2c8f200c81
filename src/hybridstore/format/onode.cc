#include "hybridstore/format/onode.h"

#include <fmt/format.h>

#include "hybridstore/common/encoding.h"

namespace hybridstore {

const char* tier_name(Tier t) { return t == Tier::kSsd ? "ssd" : "hdd"; }

void ExtentMap::insert(DataExtent e) { map_.emplace(e.logical, std::move(e)); }

void ExtentMap::punch(uint64_t begin, uint64_t end, std::vector<PExtent>* released) {
  if (begin >= end) return;
  auto it = map_.upper_bound(begin);
  if (it != map_.begin()) --it;
  while (it != map_.end() && it->second.logical < end) {
    DataExtent& e = it->second;
    if (e.logical_end() <= begin) {
      ++it;
      continue;
    }
    uint64_t cut_b = std::max(begin, e.logical);
    uint64_t cut_e = std::min(end, e.logical_end());
    released->push_back({e.tier, e.physical + (cut_b - e.logical), cut_e - cut_b});
    DataExtent head = e, tail = e;
    bool keep_head = cut_b > e.logical;
    bool keep_tail = cut_e < e.logical_end();
    it = map_.erase(it);
    if (keep_head) {
      head.length = cut_b - head.logical;
      head.csums.resize(head.length / head.csum_block);
      map_.emplace(head.logical, std::move(head));
    }
    if (keep_tail) {
      uint64_t skip = cut_e - tail.logical;
      tail.physical += skip;
      tail.logical = cut_e;
      tail.length -= skip;
      tail.csums.erase(tail.csums.begin(), tail.csums.begin() + static_cast<long>(skip / tail.csum_block));
      it = map_.emplace(tail.logical, std::move(tail)).first;
      ++it;
    }
  }
}

std::vector<const DataExtent*> ExtentMap::overlapping(uint64_t begin, uint64_t end) const {
  std::vector<const DataExtent*> out;
  auto it = map_.upper_bound(begin);
  if (it != map_.begin()) --it;
  for (; it != map_.end() && it->second.logical < end; ++it)
    if (it->second.logical_end() > begin) out.push_back(&it->second);
  return out;
}

bool ExtentMap::any_in(uint64_t begin, uint64_t end) const { return !overlapping(begin, end).empty(); }

uint64_t ExtentMap::bytes_on(Tier t) const {
  uint64_t n = 0;
  for (const auto& [off, e] : map_)
    if (e.tier == t) n += e.length;
  return n;
}

std::string extent_fingerprint(const ExtentMap& m) {
  std::string f;
  for (const auto& [off, e] : m.extents()) {
    put_varint(&f, e.logical);
    put_varint(&f, e.length);
    put_u8(&f, static_cast<uint8_t>(e.tier));
    put_varint(&f, e.physical);
    // In-place (deferred) overwrites change the bytes but not the layout:
    // the checksums tell them apart.
    for (uint32_t c : e.csums) put_fixed32(&f, c);
  }
  return f;
}

namespace {
constexpr uint32_t kOnodeTag = 0x4f4e4f44;  // "ONOD"
constexpr uint8_t kOnodeVersion = 1;
constexpr uint64_t kMaxLogical = 1ull << 48;
}  // namespace

std::string encode_onode(const Onode& o) {
  std::string b;
  put_varint(&b, o.size);
  put_varint(&b, o.nid);
  put_varint(&b, o.alloc_hint_flags);
  put_varint(&b, o.expected_object_size);
  put_varint(&b, o.expected_write_size);
  put_varint(&b, o.attrs.size());
  for (const auto& [k, v] : o.attrs) {
    put_bytes(&b, k);
    put_bytes(&b, v);
  }
  put_varint(&b, o.extents.size());
  for (const auto& [off, e] : o.extents.extents()) {
    put_varint(&b, e.logical);
    put_varint(&b, e.length);
    put_u8(&b, static_cast<uint8_t>(e.tier));
    put_varint(&b, e.physical);
    put_varint(&b, e.csum_block);
    for (uint32_t c : e.csums) put_fixed32(&b, c);
  }
  return seal_record(kOnodeTag, kOnodeVersion, b);
}

bool decode_onode(std::string_view in, Onode* out, std::string* why) {
  auto bad = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  uint8_t ver;
  std::string_view body;
  RecordError re = open_record(kOnodeTag, kOnodeVersion, in, &ver, &body);
  if (re != RecordError::kNone) return bad(std::string("onode: ") + record_error_name(re));
  Decoder d(body);
  Onode o;
  uint64_t nattrs, nextents;
  if (!d.get_varint(&o.size) || !d.get_varint(&o.nid) || !d.get_varint32(&o.alloc_hint_flags) ||
      !d.get_varint(&o.expected_object_size) || !d.get_varint(&o.expected_write_size) ||
      !d.get_varint(&nattrs))
    return bad("onode: truncated header");
  if (o.size > kMaxLogical) return bad("onode: size out of range");
  // Each attr takes at least two bytes, each extent at least nine: counts
  // beyond what the body could hold are garbage, not an allocation request.
  if (nattrs > d.remaining() / 2) return bad("onode: attr count out of range");
  for (uint64_t i = 0; i < nattrs; ++i) {
    std::string k, v;
    if (!d.get_bytes(&k) || !d.get_bytes(&v)) return bad("onode: truncated attrs");
    o.attrs[std::move(k)] = std::move(v);
  }
  if (!d.get_varint(&nextents) || nextents > d.remaining() / 9)
    return bad("onode: extent count out of range");
  uint64_t prev_end = 0;
  for (uint64_t i = 0; i < nextents; ++i) {
    DataExtent e;
    uint8_t tier;
    if (!d.get_varint(&e.logical) || !d.get_varint(&e.length) || !d.get_u8(&tier) ||
        !d.get_varint(&e.physical) || !d.get_varint32(&e.csum_block))
      return bad("onode: truncated extent");
    if (tier >= kNumTiers) return bad("onode: bad tier");
    e.tier = static_cast<Tier>(tier);
    if (e.csum_block < 256 || (e.csum_block & (e.csum_block - 1)))
      return bad("onode: bad csum block");
    if (e.length == 0 || e.length % e.csum_block || e.logical % 256)
      return bad("onode: misaligned extent");
    if (e.logical < prev_end || e.logical > kMaxLogical || e.length > kMaxLogical ||
        e.physical > kMaxLogical * 1024)
      return bad("onode: extents overlap or out of range");
    prev_end = e.logical + e.length;
    uint64_t n = e.length / e.csum_block;
    if (n > d.remaining() / 4) return bad("onode: truncated csums");
    e.csums.resize(n);
    for (auto& c : e.csums)
      if (!d.get_fixed32(&c)) return bad("onode: truncated csums");
    o.extents.insert(std::move(e));
  }
  if (!d.done()) return bad("onode: trailing bytes");
  *out = std::move(o);
  return true;
}

}  // namespace hybridstore
