#include "hybridstore/format/onode.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <mutex>
#include <stdexcept>

#include "hscommon/crc32c.h"
#include "hscommon/encoding.h"

namespace hybridstore {

namespace {
void encode_extent(std::string* b, const DataExtent& e) {
  put_varint(b, e.logical);
  put_varint(b, e.length);
  put_u8(b, static_cast<uint8_t>(e.tier));
  put_varint(b, e.physical);
  put_varint(b, e.csum_block);
  for (uint32_t c : e.csums) put_fixed32(b, c);
}
}  // namespace

struct ExtentShard {
  ExtentMap::Map extents;
  // The shard's extents encoded, filled by the first encode after a change.
  // A shard shared with the onode cache is read by other threads, so the
  // cache is filled under a lock; a shard being changed belongs to one map.
  mutable std::mutex encoded_lock;
  mutable std::string encoded;
  mutable uint32_t encoded_crc = 0;  // crc32c of `encoded`
  mutable bool encoded_valid = false;
  // The heap of `extents` (nodes and checksum vectors), under encoded_lock
  // like the encoding: the onode cache's charge and the dirty onodes'
  // bytes take it for every transaction, and a walk of a 4 MiB object's
  // extents after 4 KiB overwrites costs microseconds.
  mutable size_t extents_heap = 0;
  mutable bool extents_heap_valid = false;

  ExtentShard() = default;
  explicit ExtentShard(const ExtentMap::Map& m) : extents(m) {}
};

ExtentMap::const_iterator::const_iterator(Outer outer, Outer end) : outer_(outer), end_(end) {
  if (outer_ != end_) inner_ = outer_->second->extents.begin();
}

ExtentMap::const_iterator& ExtentMap::const_iterator::operator++() {
  ++inner_;
  // Shards are never empty (drop_if_empty), but step over one anyway.
  while (outer_ != end_ && inner_ == outer_->second->extents.end()) {
    ++outer_;
    if (outer_ != end_) inner_ = outer_->second->extents.begin();
  }
  return *this;
}

ExtentMap& ExtentMap::operator=(ExtentMap&& o) noexcept {
  if (this == &o) return *this;
  shards_ = std::move(o.shards_);
  count_ = o.count_;
  bytes_ = o.bytes_;
  o.clear();
  return *this;
}

ExtentShard& ExtentMap::writable(uint64_t logical) {
  auto& slot = shards_[logical / kShardSpan];
  if (!slot) {
    slot = std::make_shared<ExtentShard>();
  } else if (slot.use_count() > 1) {
    slot = std::make_shared<ExtentShard>(slot->extents);
  } else {
    // The last other owner (a cached onode another thread read) may have let
    // go just now: its reads happen before the changes below.
    std::atomic_thread_fence(std::memory_order_acquire);
  }
  slot->encoded_valid = false;
  slot->extents_heap_valid = false;
  return *slot;
}

void ExtentMap::drop_if_empty(uint64_t shard_index) {
  auto it = shards_.find(shard_index);
  if (it != shards_.end() && it->second->extents.empty()) shards_.erase(it);
}

void ExtentMap::count_in(const DataExtent& e) {
  ++count_;
  bytes_[e.tier] += e.length;
}

void ExtentMap::count_out(const DataExtent& e) {
  --count_;
  bytes_[e.tier] -= e.length;
}

void ExtentMap::insert(DataExtent e) {
  uint64_t at = e.logical;
  ExtentShard& sh = writable(at);
  auto [it, inserted] = sh.extents.emplace(at, std::move(e));
  if (inserted) count_in(it->second);
}

void ExtentMap::clear() {
  shards_.clear();
  count_ = 0;
  bytes_ = PerTier<uint64_t>();
}

const DataExtent* ExtentMap::at_or_before(uint64_t logical) const {
  // The shard holding `logical`, or failing that the nearest one before it:
  // only one extent can start at or before an offset and still cover it.
  auto sit = shards_.upper_bound(logical / kShardSpan);
  while (sit != shards_.begin()) {
    --sit;
    const Map& m = sit->second->extents;
    auto it = m.upper_bound(logical);
    if (it != m.begin()) return &std::prev(it)->second;
  }
  return nullptr;
}

std::vector<const DataExtent*> ExtentMap::overlapping(uint64_t begin, uint64_t end) const {
  std::vector<const DataExtent*> out;
  if (begin >= end) return out;
  const DataExtent* first = at_or_before(begin);
  if (first && first->logical_end() > begin) out.push_back(first);
  // The extents starting in (begin, end).
  for (auto sit = shards_.lower_bound(begin / kShardSpan); sit != shards_.end() && sit->first * kShardSpan < end; ++sit) {
    const Map& m = sit->second->extents;
    for (auto it = m.upper_bound(begin); it != m.end() && it->first < end; ++it) out.push_back(&it->second);
  }
  return out;
}

bool ExtentMap::any_in(uint64_t begin, uint64_t end) const {
  if (begin >= end) return false;
  const DataExtent* first = at_or_before(begin);
  if (first && first->logical_end() > begin) return true;
  for (auto sit = shards_.lower_bound(begin / kShardSpan); sit != shards_.end() && sit->first * kShardSpan < end; ++sit) {
    const Map& m = sit->second->extents;
    auto it = m.upper_bound(begin);
    if (it != m.end() && it->first < end) return true;
  }
  return false;
}

const DataExtent& ExtentMap::at(uint64_t logical) const {
  auto sit = shards_.find(logical / kShardSpan);
  if (sit == shards_.end()) throw std::out_of_range("no extent starts there");
  return sit->second->extents.at(logical);
}

DataExtent* ExtentMap::mutable_extent(uint64_t logical) {
  auto sit = shards_.find(logical / kShardSpan);
  if (sit == shards_.end() || !sit->second->extents.count(logical)) return nullptr;
  return &writable(logical).extents.at(logical);
}

bool ExtentMap::erase(uint64_t logical) {
  auto sit = shards_.find(logical / kShardSpan);
  if (sit == shards_.end()) return false;
  auto it = sit->second->extents.find(logical);
  if (it == sit->second->extents.end()) return false;
  count_out(it->second);
  writable(logical).extents.erase(logical);
  drop_if_empty(logical / kShardSpan);
  return true;
}

void ExtentMap::punch(uint64_t begin, uint64_t end, std::vector<PExtent>* released) {
  if (begin >= end) return;
  // The starts of the extents to cut, found before any shard changes.
  std::vector<uint64_t> starts;
  for (const DataExtent* e : overlapping(begin, end)) starts.push_back(e->logical);
  for (uint64_t start : starts) {
    ExtentShard& sh = writable(start);
    auto it = sh.extents.find(start);
    DataExtent e = std::move(it->second);
    sh.extents.erase(it);
    count_out(e);
    drop_if_empty(start / kShardSpan);
    uint64_t cut_b = std::max(begin, e.logical);
    uint64_t cut_e = std::min(end, e.logical_end());
    released->push_back({e.tier, e.physical + (cut_b - e.logical), cut_e - cut_b});
    if (cut_b > e.logical) {
      DataExtent head = e;
      head.length = cut_b - head.logical;
      head.csums.resize(head.length / head.csum_block);
      insert(std::move(head));
    }
    if (cut_e < e.logical_end()) {
      DataExtent tail = std::move(e);
      uint64_t skip = cut_e - tail.logical;
      tail.physical += skip;
      tail.logical = cut_e;
      tail.length -= skip;
      tail.csums.erase(tail.csums.begin(), tail.csums.begin() + static_cast<long>(skip / tail.csum_block));
      insert(std::move(tail));
    }
  }
}

namespace {
// The shard's encoding, made now if a change dropped it. Called with the
// shard's encoded_lock held.
const std::string& shard_encoding(const ExtentShard& sh) {
  if (!sh.encoded_valid) {
    sh.encoded.clear();
    for (const auto& [off, e] : sh.extents) encode_extent(&sh.encoded, e);
    sh.encoded_crc = crc32c(sh.encoded);
    sh.encoded_valid = true;
  }
  return sh.encoded;
}
}  // namespace

size_t ExtentMap::encoded_size() const {
  size_t n = varint_size(count_);
  for (const auto& [idx, sh] : shards_) {
    std::lock_guard<std::mutex> l(sh->encoded_lock);
    n += shard_encoding(*sh).size();
  }
  return n;
}

void ExtentMap::encode_into(std::string* out) const {
  put_varint(out, count_);
  for (const auto& [idx, sh] : shards_) {
    std::lock_guard<std::mutex> l(sh->encoded_lock);
    out->append(shard_encoding(*sh));
  }
}

namespace {
// libstdc++'s allocations, which the memory estimates below follow: a
// red-black tree node is three pointers and a colour before its value; a
// string holds up to 15 characters inside itself; make_shared puts the
// object after a 16-byte control block.
constexpr size_t kTreeNode = 32;
constexpr size_t kSharedBlock = 16;
size_t string_heap(const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; }
}  // namespace

size_t ExtentMap::memory_bytes() const {
  size_t n = 0;
  for (const auto& [idx, sh] : shards_) {
    n += kTreeNode + sizeof(std::pair<const uint64_t, std::shared_ptr<ExtentShard>>) + kSharedBlock +
         sizeof(ExtentShard);
    std::lock_guard<std::mutex> l(sh->encoded_lock);
    n += string_heap(sh->encoded);
    if (!sh->extents_heap_valid) {
      sh->extents_heap = 0;
      for (const auto& [off, e] : sh->extents)
        sh->extents_heap += kTreeNode + sizeof(Map::value_type) + e.csums.capacity() * sizeof(uint32_t);
      sh->extents_heap_valid = true;
    }
    n += sh->extents_heap;
  }
  return n;
}

size_t onode_memory_bytes(const Onode& o) {
  size_t n = kSharedBlock + sizeof(Onode) + o.extents.memory_bytes();
  for (const auto& [k, v] : o.attrs)
    n += kTreeNode + sizeof(std::pair<const std::string, std::string>) + string_heap(k) + string_heap(v);
  return n;
}

std::vector<std::pair<uint64_t, ExtentMap::ShardHandle>> ExtentMap::shard_handles() const {
  std::vector<std::pair<uint64_t, ShardHandle>> out;
  out.reserve(shards_.size());
  for (const auto& [idx, sh] : shards_) out.emplace_back(idx, sh);
  return out;
}

uint64_t ExtentMap::shard_extent_count(uint64_t index) const {
  auto it = shards_.find(index);
  return it == shards_.end() ? 0 : it->second->extents.size();
}

uint32_t ExtentMap::shard_crc(uint64_t index) const {
  auto it = shards_.find(index);
  if (it == shards_.end()) return crc32c(std::string_view());
  std::lock_guard<std::mutex> l(it->second->encoded_lock);
  shard_encoding(*it->second);
  return it->second->encoded_crc;
}

void ExtentMap::encode_shard_into(uint64_t index, std::string* out) const {
  auto it = shards_.find(index);
  if (it == shards_.end()) return;
  std::lock_guard<std::mutex> l(it->second->encoded_lock);
  out->append(shard_encoding(*it->second));
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
constexpr uint32_t kShardTag = 0x45585348;  // "EXSH"
// 1: the extent list follows the attributes. 2: a layout byte first, then
// the extent list (kInline) or the shards' refs (kInShards). 3: then the
// onode's incarnation and version (varints), for format 7
// (docs/small-writes.md section 9). Written: 3 on format-7 stores, 2 on
// older ones (a format-6 build refuses version 3). Read: up to 3.
constexpr uint8_t kOnodeVersion = 2;
constexpr uint8_t kOnodeVersionedVersion = 3;
constexpr uint8_t kOnodeReadVersion = 3;
constexpr uint8_t kShardVersion = 1;
constexpr uint8_t kInline = 0, kInShards = 1;
constexpr uint64_t kMaxLogical = 1ull << 48;

// One extent of an encoded list up to its checksums, checked as
// decode_extent checks it; `prev_end` is where the previous one ended.
bool decode_extent_head(Decoder& d, int tiers, uint64_t prev_end, DataExtent& e, uint64_t* ncsums,
                        std::string* why) {
  auto bad = [&](const char* w) {
    *why = w;
    return false;
  };
  uint8_t tier;
  if (!d.get_varint(&e.logical) || !d.get_varint(&e.length) || !d.get_u8(&tier) || !d.get_varint(&e.physical) ||
      !d.get_varint32(&e.csum_block))
    return bad("truncated extent");
  if (tier >= std::min(tiers, kMaxTiers)) return bad("bad tier");
  e.tier = tier_at(tier);
  if (e.csum_block < 256 || (e.csum_block & (e.csum_block - 1))) return bad("bad csum block");
  if (e.length == 0 || e.length % e.csum_block || e.logical % 256) return bad("misaligned extent");
  if (e.logical < prev_end || e.logical > kMaxLogical || e.length > kMaxLogical || e.physical > kMaxLogical * 1024)
    return bad("extents overlap or out of range");
  *ncsums = e.length / e.csum_block;
  if (*ncsums > d.remaining() / 4) return bad("truncated csums");
  return true;
}

bool decode_extent(Decoder& d, int tiers, uint64_t prev_end, DataExtent* out, std::string* why) {
  DataExtent e;
  uint64_t n;
  if (!decode_extent_head(d, tiers, prev_end, e, &n, why)) return false;
  e.csums.resize(n);
  for (auto& c : e.csums)
    if (!d.get_fixed32(&c)) {
      *why = "truncated csums";
      return false;
    }
  *out = std::move(e);
  return true;
}

// The same extent, counted into `out` and its checksums skipped.
bool count_extent(Decoder& d, int tiers, uint64_t* prev_end, OnodeSpace* out, std::string* why) {
  DataExtent e;
  uint64_t n;
  if (!decode_extent_head(d, tiers, *prev_end, e, &n, why)) return false;
  if (!d.skip(n * 4)) {
    *why = "truncated csums";
    return false;
  }
  *prev_end = e.logical_end();
  out->allocated += e.length;
  out->bytes_on[e.tier] += e.length;
  ++out->extents;
  return true;
}
}  // namespace

bool extents_go_in_shards(const Onode& o, size_t inline_max) {
  return inline_max > 0 && o.extents.encoded_size() > inline_max;
}

std::string encode_onode(const Onode& o, bool in_shards, bool versions) {
  const uint8_t record_version = versions ? kOnodeVersionedVersion : kOnodeVersion;
  auto put_versions = [&](std::string* r) {
    if (!versions) return;
    put_varint(r, o.incarnation);
    put_varint(r, o.version);
  };
  // The header and attributes first, then the extent list (or the shards'
  // refs) straight into the sealed record: an onode of many extents is
  // copied once, not three times.
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
  if (in_shards) {
    put_u8(&b, kInShards);
    const auto shards = o.extents.shard_handles();
    put_varint(&b, shards.size());
    for (const auto& [idx, h] : shards) {
      put_varint(&b, idx);
      put_varint(&b, o.extents.shard_extent_count(idx));
      put_fixed32(&b, o.extents.shard_crc(idx));
    }
    put_versions(&b);
    std::string out;
    append_sealed_record(&out, kOnodeTag, record_version, b.size(), [&](std::string* r) { r->append(b); });
    return out;
  }
  put_u8(&b, kInline);
  std::string tail;
  put_versions(&tail);
  std::string out;
  append_sealed_record(&out, kOnodeTag, record_version, b.size() + o.extents.encoded_size() + tail.size(),
                       [&](std::string* r) {
                         r->append(b);
                         o.extents.encode_into(r);
                         r->append(tail);
                       });
  return out;
}

bool decode_onode(std::string_view in, Onode* out, std::string* why, int tiers, std::vector<ShardRef>* shards) {
  auto bad = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  uint8_t ver;
  std::string_view body;
  RecordError re = open_record(kOnodeTag, kOnodeReadVersion, in, &ver, &body);
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
  uint8_t layout = kInline;
  if (ver >= 2 && !d.get_u8(&layout)) return bad("onode: truncated header");
  if (layout == kInShards) {
    if (!shards) return bad("onode: extents in shards, read without them");
    uint64_t n;
    // Each ref takes at least six bytes.
    if (!d.get_varint(&n) || n == 0 || n > d.remaining() / 6) return bad("onode: shard count out of range");
    std::vector<ShardRef> refs(n);
    for (uint64_t i = 0; i < n; ++i) {
      ShardRef& r = refs[i];
      if (!d.get_varint(&r.index) || !d.get_varint(&r.extents) || !d.get_fixed32(&r.crc))
        return bad("onode: truncated shard refs");
      if (r.index > kMaxLogical / ExtentMap::kShardSpan || (i > 0 && r.index <= refs[i - 1].index))
        return bad("onode: shard refs out of order or range");
      if (r.extents == 0 || r.extents > ExtentMap::kShardSpan / 256) return bad("onode: shard extent count out of range");
    }
    if (ver >= 3 && (!d.get_varint(&o.incarnation) || !d.get_varint(&o.version)))
      return bad("onode: truncated version");
    if (!d.done()) return bad("onode: trailing bytes");
    o.extents_in_shards = true;
    *shards = std::move(refs);
    *out = std::move(o);
    return true;
  }
  if (layout != kInline) return bad("onode: unknown extent layout");
  if (!d.get_varint(&nextents) || nextents > d.remaining() / 9)
    return bad("onode: extent count out of range");
  uint64_t prev_end = 0;
  for (uint64_t i = 0; i < nextents; ++i) {
    DataExtent e;
    std::string w;
    if (!decode_extent(d, tiers, prev_end, &e, &w)) return bad("onode: " + w);
    prev_end = e.logical_end();
    o.extents.insert(std::move(e));
  }
  if (ver >= 3 && (!d.get_varint(&o.incarnation) || !d.get_varint(&o.version)))
    return bad("onode: truncated version");
  if (!d.done()) return bad("onode: trailing bytes");
  if (shards) shards->clear();
  *out = std::move(o);
  return true;
}

bool decode_onode_space(std::string_view in, OnodeSpace* out, std::string* why, int tiers,
                        std::vector<ShardRef>* shards) {
  auto bad = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  uint8_t ver;
  std::string_view body;
  RecordError re = open_record(kOnodeTag, kOnodeReadVersion, in, &ver, &body);
  if (re != RecordError::kNone) return bad(std::string("onode: ") + record_error_name(re));
  Decoder d(body);
  OnodeSpace o;
  uint64_t u, nattrs, nextents;
  uint32_t flags;
  if (!d.get_varint(&o.size) || !d.get_varint(&o.nid) || !d.get_varint32(&flags) || !d.get_varint(&u) ||
      !d.get_varint(&u) || !d.get_varint(&nattrs))
    return bad("onode: truncated header");
  if (o.size > kMaxLogical) return bad("onode: size out of range");
  if (nattrs > d.remaining() / 2) return bad("onode: attr count out of range");
  for (uint64_t i = 0; i < nattrs; ++i) {
    std::string_view k, v;
    if (!d.get_bytes_view(&k) || !d.get_bytes_view(&v)) return bad("onode: truncated attrs");
  }
  uint8_t layout = kInline;
  if (ver >= 2 && !d.get_u8(&layout)) return bad("onode: truncated header");
  shards->clear();
  if (layout == kInShards) {
    uint64_t n;
    if (!d.get_varint(&n) || n == 0 || n > d.remaining() / 6) return bad("onode: shard count out of range");
    shards->resize(n);
    for (uint64_t i = 0; i < n; ++i) {
      ShardRef& r = (*shards)[i];
      if (!d.get_varint(&r.index) || !d.get_varint(&r.extents) || !d.get_fixed32(&r.crc))
        return bad("onode: truncated shard refs");
      if (r.index > kMaxLogical / ExtentMap::kShardSpan || (i > 0 && r.index <= (*shards)[i - 1].index))
        return bad("onode: shard refs out of order or range");
      if (r.extents == 0 || r.extents > ExtentMap::kShardSpan / 256) return bad("onode: shard extent count out of range");
    }
    if (ver >= 3 && (!d.get_varint(&u) || !d.get_varint(&u))) return bad("onode: truncated version");
    if (!d.done()) return bad("onode: trailing bytes");
    *out = o;
    return true;
  }
  if (layout != kInline) return bad("onode: unknown extent layout");
  if (!d.get_varint(&nextents) || nextents > d.remaining() / 9) return bad("onode: extent count out of range");
  uint64_t prev_end = 0;
  for (uint64_t i = 0; i < nextents; ++i) {
    std::string w;
    if (!count_extent(d, tiers, &prev_end, &o, &w)) return bad("onode: " + w);
  }
  if (ver >= 3 && (!d.get_varint(&u) || !d.get_varint(&u))) return bad("onode: truncated version");
  if (!d.done()) return bad("onode: trailing bytes");
  *out = o;
  return true;
}

namespace {

// Names the shard in a decoder's complaint; false, for `return`.
bool shard_error(const ShardRef& ref, const std::string& what, std::string* why) {
  if (why) *why = fmt::format("extent shard {}: {}", ref.index, what);
  return false;
}

// Opens extent shard record `in` and checks its header against the onode's
// reference to it: the shard's index, its extent count and the crc the onode
// was written with. *extents gets the encoded extents, *n their count.
bool open_extent_shard(std::string_view in, const ShardRef& ref, std::string_view* extents, uint64_t* n,
                       std::string* why) {
  auto bad = [&](const std::string& w) { return shard_error(ref, w, why); };
  uint8_t ver;
  std::string_view body;
  RecordError re = open_record(kShardTag, kShardVersion, in, &ver, &body);
  if (re != RecordError::kNone) return bad(record_error_name(re));
  Decoder d(body);
  uint64_t index;
  if (!d.get_varint(&index) || !d.get_varint(n)) return bad("truncated header");
  if (index != ref.index) return bad(fmt::format("holds shard {}", index));
  if (*n != ref.extents) return bad(fmt::format("holds {} extents, the onode says {}", *n, ref.extents));
  if (crc32c(d.rest()) != ref.crc) return bad("not the shard the onode was written with (crc)");
  // Each extent takes at least nine bytes and 256 of the shard's span: a
  // count beyond either is garbage, not an allocation request.
  if (*n > d.remaining() / 9 || *n > ExtentMap::kShardSpan / 256) return bad("extent count out of range");
  *extents = d.rest();
  return true;
}

}  // namespace

bool add_extent_shard_space(std::string_view in, const ShardRef& ref, OnodeSpace* out, std::string* why, int tiers) {
  std::string_view extents;
  uint64_t n;
  if (!open_extent_shard(in, ref, &extents, &n, why)) return false;
  auto bad = [&](const std::string& w) { return shard_error(ref, w, why); };
  Decoder d(extents);
  OnodeSpace add;
  uint64_t prev_end = 0;
  for (uint64_t i = 0; i < n; ++i) {
    std::string w;
    if (!count_extent(d, tiers, &prev_end, &add, &w)) return bad(w);
  }
  if (!d.done()) return bad("trailing bytes");
  out->allocated += add.allocated;
  for (int t = 0; t < kMaxTiers; ++t) out->bytes_on.by_id[t] += add.bytes_on.by_id[t];
  out->extents += add.extents;
  return true;
}

std::string encode_extent_shard(const ExtentMap& m, uint64_t index) {
  std::string head;
  put_varint(&head, index);
  put_varint(&head, m.shard_extent_count(index));
  std::string body;
  m.encode_shard_into(index, &body);
  std::string out;
  append_sealed_record(&out, kShardTag, kShardVersion, head.size() + body.size(), [&](std::string* r) {
    r->append(head);
    r->append(body);
  });
  return out;
}

bool decode_extent_shard(std::string_view in, const ShardRef& ref, ExtentMap* into, std::string* why, int tiers) {
  std::string_view extents;
  uint64_t n;
  if (!open_extent_shard(in, ref, &extents, &n, why)) return false;
  auto bad = [&](const std::string& w) { return shard_error(ref, w, why); };
  Decoder d(extents);
  std::vector<DataExtent> got;
  got.reserve(n);
  uint64_t prev_end = 0;
  for (uint64_t i = 0; i < n; ++i) {
    DataExtent e;
    std::string w;
    if (!decode_extent(d, tiers, prev_end, &e, &w)) return bad(w);
    if (e.logical / ExtentMap::kShardSpan != ref.index) return bad("extent outside the shard");
    if (into->any_in(e.logical, e.logical_end())) return bad("extent overlaps another shard's");
    prev_end = e.logical_end();
    got.push_back(std::move(e));
  }
  if (!d.done()) return bad("trailing bytes");
  for (auto& e : got) into->insert(std::move(e));
  return true;
}

}  // namespace hybridstore
