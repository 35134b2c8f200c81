#include "hybridstore/store/transaction.h"

#include <algorithm>
#include <cstring>

namespace hybridstore {

const char* op_name(OpCode c) {
  switch (c) {
    case OpCode::kNop: return "nop";
    case OpCode::kTouch: return "touch";
    case OpCode::kCreate: return "create";
    case OpCode::kWrite: return "write";
    case OpCode::kZero: return "zero";
    case OpCode::kTruncate: return "truncate";
    case OpCode::kRemove: return "remove";
    case OpCode::kSetAttrs: return "setattrs";
    case OpCode::kRmAttr: return "rmattr";
    case OpCode::kRmAttrs: return "rmattrs";
    case OpCode::kClone: return "clone";
    case OpCode::kCloneRange: return "clone_range";
    case OpCode::kOmapSetKeys: return "omap_setkeys";
    case OpCode::kOmapRmKeys: return "omap_rmkeys";
    case OpCode::kOmapRmKeyRange: return "omap_rmkeyrange";
    case OpCode::kOmapClear: return "omap_clear";
    case OpCode::kOmapSetHeader: return "omap_setheader";
    case OpCode::kMkColl: return "mkcoll";
    case OpCode::kRmColl: return "rmcoll";
    case OpCode::kCollMoveRename: return "collection_move_rename";
    case OpCode::kTryRename: return "try_rename";
    case OpCode::kSplitCollection: return "split_collection";
    case OpCode::kMergeCollection: return "merge_collection";
    case OpCode::kCollSetBits: return "collection_set_bits";
    case OpCode::kSetAllocHint: return "set_alloc_hint";
    case OpCode::kMigrate: return "migrate";
  }
  return "unknown";
}

bool default_enoent_tolerated(OpCode c) {
  switch (c) {
    case OpCode::kTruncate:
    case OpCode::kRemove:
    case OpCode::kRmAttrs:
    case OpCode::kOmapClear:
    case OpCode::kOmapRmKeys:
    case OpCode::kOmapRmKeyRange:
    case OpCode::kCollMoveRename:
    case OpCode::kTryRename:
    case OpCode::kSetAllocHint:
      return true;
    default:
      return false;
  }
}

uint64_t ScatterData::size() const {
  uint64_t n = 0;
  for (const auto& s : segments) n += s.size();
  return n;
}

void ScatterData::copy_out(uint64_t off, uint64_t len, char* dst) const {
  for (const auto& s : segments) {
    if (len == 0) return;
    if (off >= s.size()) {
      off -= s.size();
      continue;
    }
    uint64_t n = std::min<uint64_t>(len, s.size() - off);
    std::memcpy(dst, s.data() + off, n);
    dst += n;
    len -= n;
    off = 0;
  }
}

std::string ScatterData::to_string() const {
  std::string out(size(), '\0');
  copy_out(0, out.size(), out.data());
  return out;
}

ScatterData ScatterData::of(std::string data) {
  return of(std::make_shared<const std::string>(std::move(data)));
}

ScatterData ScatterData::of(std::shared_ptr<const std::string> data) {
  ScatterData d;
  if (!data->empty()) d.segments.emplace_back(*data);
  d.owner = std::move(data);
  return d;
}

ScatterData ScatterData::view(std::string_view bytes) {
  ScatterData d;
  if (!bytes.empty()) d.segments.push_back(bytes);
  return d;
}

Op& Transaction::add(OpCode code, const CollectionId& c) {
  ops_.emplace_back();
  Op& op = ops_.back();
  op.code = code;
  op.cid = c;
  op.enoent_ok = default_enoent_tolerated(code);
  return op;
}

void Transaction::nop() { ops_.emplace_back(); }
void Transaction::touch(const CollectionId& c, const ObjectId& o) { add(OpCode::kTouch, c).oid = o; }
void Transaction::create(const CollectionId& c, const ObjectId& o) { add(OpCode::kCreate, c).oid = o; }
void Transaction::write(const CollectionId& c, const ObjectId& o, uint64_t off, std::string data,
                        uint32_t fadvise_flags) {
  write(c, o, off, ScatterData::of(std::move(data)), fadvise_flags);
}
void Transaction::write(const CollectionId& c, const ObjectId& o, uint64_t off,
                        std::shared_ptr<const std::string> data, uint32_t fadvise_flags) {
  write(c, o, off, ScatterData::of(std::move(data)), fadvise_flags);
}
void Transaction::write(const CollectionId& c, const ObjectId& o, uint64_t off, ScatterData data,
                        uint32_t fadvise_flags) {
  Op& op = add(OpCode::kWrite, c);
  op.oid = o;
  op.off = off;
  op.len = data.size();
  op.scatter = std::move(data);
  op.flags = fadvise_flags;
}
void Transaction::zero(const CollectionId& c, const ObjectId& o, uint64_t off, uint64_t len) {
  Op& op = add(OpCode::kZero, c);
  op.oid = o;
  op.off = off;
  op.len = len;
}
void Transaction::truncate(const CollectionId& c, const ObjectId& o, uint64_t size) {
  Op& op = add(OpCode::kTruncate, c);
  op.oid = o;
  op.off = size;
}
void Transaction::remove(const CollectionId& c, const ObjectId& o) { add(OpCode::kRemove, c).oid = o; }
void Transaction::setattr(const CollectionId& c, const ObjectId& o, const std::string& name,
                          std::string value) {
  Op& op = add(OpCode::kSetAttrs, c);
  op.oid = o;
  op.kv[name] = std::move(value);
}
void Transaction::setattrs(const CollectionId& c, const ObjectId& o,
                           std::map<std::string, std::string> attrs) {
  Op& op = add(OpCode::kSetAttrs, c);
  op.oid = o;
  op.kv = std::move(attrs);
}
void Transaction::rmattr(const CollectionId& c, const ObjectId& o, const std::string& name) {
  Op& op = add(OpCode::kRmAttr, c);
  op.oid = o;
  op.name = name;
}
void Transaction::rmattrs(const CollectionId& c, const ObjectId& o) { add(OpCode::kRmAttrs, c).oid = o; }
void Transaction::clone(const CollectionId& c, const ObjectId& src, const ObjectId& dst) {
  Op& op = add(OpCode::kClone, c);
  op.oid = src;
  op.dst_oid = dst;
}
void Transaction::clone_range(const CollectionId& c, const ObjectId& src, const ObjectId& dst,
                              uint64_t src_off, uint64_t len, uint64_t dst_off) {
  Op& op = add(OpCode::kCloneRange, c);
  op.oid = src;
  op.dst_oid = dst;
  op.off = src_off;
  op.len = len;
  op.dst_off = dst_off;
}
void Transaction::omap_setkeys(const CollectionId& c, const ObjectId& o,
                               std::map<std::string, std::string> kv) {
  Op& op = add(OpCode::kOmapSetKeys, c);
  op.oid = o;
  op.kv = std::move(kv);
}
void Transaction::omap_rmkeys(const CollectionId& c, const ObjectId& o, std::vector<std::string> keys) {
  Op& op = add(OpCode::kOmapRmKeys, c);
  op.oid = o;
  op.keys = std::move(keys);
}
void Transaction::omap_rmkeyrange(const CollectionId& c, const ObjectId& o, const std::string& first,
                                  const std::string& last) {
  Op& op = add(OpCode::kOmapRmKeyRange, c);
  op.oid = o;
  op.name = first;
  op.name2 = last;
}
void Transaction::omap_clear(const CollectionId& c, const ObjectId& o) { add(OpCode::kOmapClear, c).oid = o; }
void Transaction::omap_setheader(const CollectionId& c, const ObjectId& o, std::string header) {
  Op& op = add(OpCode::kOmapSetHeader, c);
  op.oid = o;
  op.data = std::move(header);
}
void Transaction::create_collection(const CollectionId& c, uint32_t bits) { add(OpCode::kMkColl, c).bits = bits; }
void Transaction::remove_collection(const CollectionId& c) { add(OpCode::kRmColl, c); }
void Transaction::collection_move_rename(const CollectionId& src_c, const ObjectId& src,
                                         const CollectionId& dst_c, const ObjectId& dst) {
  Op& op = add(OpCode::kCollMoveRename, src_c);
  op.oid = src;
  op.dst_cid = dst_c;
  op.dst_oid = dst;
}
void Transaction::try_rename(const CollectionId& c, const ObjectId& src, const ObjectId& dst) {
  Op& op = add(OpCode::kTryRename, c);
  op.oid = src;
  op.dst_cid = c;
  op.dst_oid = dst;
}
void Transaction::split_collection(const CollectionId& c, uint32_t bits, uint32_t rem,
                                   const CollectionId& dest) {
  Op& op = add(OpCode::kSplitCollection, c);
  op.bits = bits;
  op.rem = rem;
  op.dst_cid = dest;
}
void Transaction::merge_collection(const CollectionId& src, const CollectionId& dest, uint32_t bits) {
  Op& op = add(OpCode::kMergeCollection, src);
  op.dst_cid = dest;
  op.bits = bits;
}
void Transaction::collection_set_bits(const CollectionId& c, uint32_t bits) {
  add(OpCode::kCollSetBits, c).bits = bits;
}
void Transaction::set_alloc_hint(const CollectionId& c, const ObjectId& o, uint64_t expected_object_size,
                                 uint64_t expected_write_size, uint32_t flags) {
  Op& op = add(OpCode::kSetAllocHint, c);
  op.oid = o;
  op.expected_object_size = expected_object_size;
  op.expected_write_size = expected_write_size;
  op.flags = flags;
}

void Transaction::migrate(const CollectionId& c, const ObjectId& o, Tier target, std::string fingerprint,
                          std::shared_ptr<const std::string> image) {
  Op& op = add(OpCode::kMigrate, c);
  op.oid = o;
  op.flags = static_cast<uint32_t>(target);
  op.name = std::move(fingerprint);
  op.shared_data = std::move(image);
}

void Transaction::relocate(const CollectionId& c, const ObjectId& o, Tier target, uint64_t phys_begin,
                           uint64_t phys_end, std::string fingerprint, std::shared_ptr<const std::string> image) {
  migrate(c, o, target, std::move(fingerprint), std::move(image));
  ops_.back().off = phys_begin;
  ops_.back().len = phys_end - phys_begin;
}

void Transaction::append(Transaction&& other) {
  for (auto& op : other.ops_) ops_.push_back(std::move(op));
  for (auto& cb : other.on_commit_) on_commit_.push_back(std::move(cb));
  for (auto& cb : other.on_applied_) on_applied_.push_back(std::move(cb));
  other.ops_.clear();
  other.on_commit_.clear();
  other.on_applied_.clear();
}

uint64_t Transaction::data_bytes() const {
  uint64_t n = 0;
  for (const auto& op : ops_) n += op.code == OpCode::kWrite ? op.scatter.size() : op.payload().size();
  return n;
}

}  // namespace hybridstore
