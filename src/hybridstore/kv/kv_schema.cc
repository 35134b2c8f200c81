#include "hybridstore/kv/kv_schema.h"

#include <algorithm>
#include <cstring>

#include "hscommon/encoding.h"
#include "hybridstore/kv/heat_record.h"

namespace hybridstore::kv {

std::string super_key(std::string_view name) {
  std::string k(1, kSuper);
  k.append(name.data(), name.size());
  return k;
}

std::string collection_key(const CollectionId& c) {
  std::string k(1, kCollection);
  k += c.name;
  return k;
}

bool decode_collection_key(std::string_view k, CollectionId* c) {
  if (k.empty() || k[0] != kCollection) return false;
  c->name = std::string(k.substr(1));
  return c->valid();
}

std::string onode_prefix(const CollectionId& c) {
  std::string k(1, kOnode);
  append_escaped(&k, c.name);
  return k;
}

std::string onode_key(const CollectionId& c, const ObjectId& o) {
  // One allocation: reads and every transaction build this key.
  std::string k;
  k.reserve(2 + c.name.size() + object_key_size_hint(o));
  k.push_back(kOnode);
  append_escaped(&k, c.name);
  append_object_key(&k, o);
  return k;
}

bool decode_onode_key(std::string_view k, CollectionId* c, ObjectId* o) {
  if (k.empty() || k[0] != kOnode) return false;
  k.remove_prefix(1);
  std::string name;
  if (!take_escaped(&k, &name)) return false;
  c->name = std::move(name);
  return decode_object_key(k, o);
}

std::string extent_shard_key(std::string_view onode_key, uint64_t shard) {
  std::string k(1, kExtentShard);
  k.append(onode_key.substr(1));
  put_be32(&k, static_cast<uint32_t>(shard));
  return k;
}

bool decode_extent_shard_key(std::string_view k, std::string* onode_key, uint64_t* shard) {
  if (k.size() < 6 || k[0] != kExtentShard) return false;
  std::string ok(1, kOnode);
  ok.append(k.substr(1, k.size() - 5));
  CollectionId c;
  ObjectId o;
  if (!decode_onode_key(ok, &c, &o)) return false;
  *shard = get_be32(k.data() + k.size() - 4);
  *onode_key = std::move(ok);
  return true;
}

namespace {
std::string omap_base(uint64_t nid) {
  std::string k(1, kOmap);
  put_be64(&k, nid);
  return k;
}
}  // namespace

std::string omap_header_key(uint64_t nid) { return omap_base(nid) + 'H'; }
std::string omap_key(uint64_t nid, std::string_view user_key) {
  std::string k = omap_base(nid) + 'K';
  k.append(user_key.data(), user_key.size());
  return k;
}
std::string omap_keys_begin(uint64_t nid) { return omap_base(nid) + 'K'; }
std::string omap_keys_end(uint64_t nid) { return omap_base(nid) + 'L'; }
std::string omap_nid_begin(uint64_t nid) { return omap_base(nid); }
std::string omap_nid_end(uint64_t nid) { return omap_base(nid + 1); }

bool decode_omap_key(std::string_view k, uint64_t* nid, bool* is_header, std::string_view* user_key) {
  if (k.size() < 10 || k[0] != kOmap) return false;
  *nid = get_be64(k.data() + 1);
  if (k[9] == 'H' && k.size() == 10) {
    *is_header = true;
    *user_key = {};
    return true;
  }
  if (k[9] != 'K') return false;
  *is_header = false;
  *user_key = k.substr(10);
  return true;
}

std::string bitmap_prefix(Tier t) {
  std::string k(1, kBitmap);
  k.push_back(static_cast<char>(t));
  return k;
}

std::string bitmap_key(Tier t, uint64_t chunk) {
  std::string k = bitmap_prefix(t);
  put_be64(&k, chunk);
  return k;
}

bool decode_bitmap_key(std::string_view k, Tier* t, uint64_t* chunk) {
  if (k.size() != 10 || k[0] != kBitmap || static_cast<uint8_t>(k[1]) >= kMaxTiers) return false;
  *t = tier_at(static_cast<uint8_t>(k[1]));
  *chunk = get_be64(k.data() + 2);
  return true;
}

std::string prefix_end(std::string_view prefix) {
  std::string e(prefix);
  while (!e.empty()) {
    auto& c = reinterpret_cast<unsigned char&>(e.back());
    if (c != 0xff) {
      ++c;
      return e;
    }
    e.pop_back();
  }
  return std::string(64, '\xff');  // everything
}

std::string encode_stat_delta(const int64_t (&delta)[kStatCount]) {
  std::string v;
  for (int i = 0; i < kStatCount; ++i) put_fixed64(&v, static_cast<uint64_t>(delta[i]));
  return v;
}

bool decode_stats(std::string_view v, int64_t (&out)[kStatCount]) {
  for (auto& x : out) x = 0;
  if (v.size() % 8 || v.size() > 8 * kStatCount) return false;
  for (size_t i = 0; i < v.size() / 8; ++i)
    out[i] = static_cast<int64_t>(load_fixed64(v.data() + 8 * i));
  return true;
}

namespace {

class StoreMergeOperator final : public rocksdb::AssociativeMergeOperator {
 public:
  bool Merge(const rocksdb::Slice& key, const rocksdb::Slice* existing, const rocksdb::Slice& value,
             std::string* new_value, rocksdb::Logger* logger) const override {
    if (key.size() > 0 && key[0] == kBitmap) {
      // XOR: allocating and freeing both toggle bits, so concurrent batches
      // never need to read the chunk first.
      size_t n = std::max(value.size(), existing ? existing->size() : 0);
      new_value->assign(n, '\0');
      for (size_t i = 0; i < value.size(); ++i) (*new_value)[i] = value[i];
      if (existing)
        for (size_t i = 0; i < existing->size(); ++i) (*new_value)[i] ^= (*existing)[i];
      return true;
    }
    if (key.size() > 0 && key[0] == kHeat) return heat_.Merge(key, existing, value, new_value, logger);
    if (key.ToStringView() == stats_key()) {
      int64_t a[kStatCount], b[kStatCount];
      if (!decode_stats(value.ToStringView(), b)) return false;
      if (existing) {
        if (!decode_stats(existing->ToStringView(), a)) return false;
      } else {
        for (auto& x : a) x = 0;
      }
      for (int i = 0; i < kStatCount; ++i) a[i] += b[i];
      *new_value = encode_stat_delta(a);
      return true;
    }
    return false;
  }
  const char* Name() const override { return "hybridstore.merge.v1"; }

 private:
  // Heat records are added to without being read (kv/heat_record.h); a
  // store that never writes a Merge to them keeps using Put as before.
  HeatMergeOperator heat_;
};

constexpr uint32_t kCollectionTag = 0x434f4c4c;  // "COLL"

}  // namespace

std::shared_ptr<rocksdb::MergeOperator> make_merge_operator() {
  return std::make_shared<StoreMergeOperator>();
}

namespace {

class InsertHintPrefixes : public rocksdb::SliceTransform {
 public:
  const char* Name() const override { return "hybridstore.insert_hints.v1"; }
  bool InDomain(const rocksdb::Slice& key) const override { return hint_length(key) > 0; }
  rocksdb::Slice Transform(const rocksdb::Slice& key) const override {
    return rocksdb::Slice(key.data(), hint_length(key));
  }

 private:
  // 0: no hint. The lengths follow KEY_SCHEMA.md.
  static size_t hint_length(const rocksdb::Slice& key) {
    if (key.empty()) return 0;
    switch (key[0]) {
      case kSuper:   // one key each, rewritten by every transaction
      case kBitmap:  // B<tier><be64 chunk>: the chunk being allocated from
        return key.size();
      case kDeferred:  // D<be64 seq>: ascending
      case kHeat:      // written in key order, a whole table at a time
        return 1;
      case kSection:  // A r <type> <be32 erase unit> ...: one unit at a time
        return std::min<size_t>(key.size(), 7);
      case kOmap:  // M<be64 nid>...: one object's keys, mostly in order
        return key.size() >= 9 ? 9 : 0;
      default:  // onodes and collections: hash order
        return 0;
    }
  }
};

}  // namespace

std::shared_ptr<const rocksdb::SliceTransform> make_insert_hint_prefixes() {
  return std::make_shared<InsertHintPrefixes>();
}

std::string encode_collection(uint32_t bits) {
  std::string b;
  put_varint(&b, bits);
  return seal_record(kCollectionTag, 1, b);
}

bool decode_collection(std::string_view v, uint32_t* bits) {
  uint8_t ver;
  std::string_view body;
  if (open_record(kCollectionTag, 1, v, &ver, &body) != RecordError::kNone) return false;
  Decoder d(body);
  return d.get_varint32(bits) && d.done() && *bits <= 32;
}

}  // namespace hybridstore::kv
