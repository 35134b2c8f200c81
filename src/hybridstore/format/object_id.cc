#include "hybridstore/format/object_id.h"

#include <fmt/format.h>

#include "hscommon/crc32c.h"
#include "hscommon/encoding.h"

namespace hybridstore {

ObjectId ObjectId::from_name(std::string_view name, int64_t pool) {
  ObjectId o;
  o.pool = pool;
  o.name = std::string(name);
  o.hash = crc32c(name);
  return o;
}

uint32_t ObjectId::bitwise_key() const {
  uint32_t v = hash;
  v = ((v >> 1) & 0x55555555u) | ((v & 0x55555555u) << 1);
  v = ((v >> 2) & 0x33333333u) | ((v & 0x33333333u) << 2);
  v = ((v >> 4) & 0x0F0F0F0Fu) | ((v & 0x0F0F0F0Fu) << 4);
  v = ((v >> 8) & 0x00FF00FFu) | ((v & 0x00FF00FFu) << 8);
  return (v >> 16) | (v << 16);
}

bool ObjectId::matches(uint32_t bits, uint32_t rem) const {
  uint32_t mask = bits >= 32 ? 0xffffffffu : ((1u << bits) - 1);
  return (hash & mask) == (rem & mask);
}

std::string ObjectId::to_string() const {
  if (max) return "MAX";
  std::string s = fmt::format("{}:{:08x}:{}:{}:{}", pool, hash, nspace, key, name);
  if (snap != kNoSnap) s += fmt::format(":snap={}", snap == kSnapDir ? std::string("dir") : std::to_string(snap));
  if (generation != kNoGen) s += fmt::format(":gen={}", generation);
  if (shard != kNoShard) s += fmt::format(":shard={}", shard);
  return s;
}

namespace {
template <typename T>
int cmp3(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}
}  // namespace

int compare(const ObjectId& a, const ObjectId& b) {
  if (a.max != b.max) return a.max ? 1 : -1;
  if (a.max) return 0;
  if (int c = cmp3(a.shard, b.shard)) return c;
  if (int c = cmp3(a.pool, b.pool)) return c;
  if (int c = cmp3(a.bitwise_key(), b.bitwise_key())) return c;
  if (int c = a.nspace.compare(b.nspace)) return c < 0 ? -1 : 1;
  if (!(a.key.empty() && b.key.empty())) {
    if (int c = a.effective_key().compare(b.effective_key())) return c < 0 ? -1 : 1;
  }
  if (int c = a.name.compare(b.name)) return c < 0 ? -1 : 1;
  if (int c = cmp3(a.snap, b.snap)) return c;
  return cmp3(a.generation, b.generation);
}

size_t ObjectIdHash::operator()(const ObjectId& o) const {
  uint32_t c = crc32c(0, o.name.data(), o.name.size());
  c = crc32c(c, o.nspace.data(), o.nspace.size());
  c = crc32c(c, o.key.data(), o.key.size());
  uint64_t h = (static_cast<uint64_t>(c) << 32) ^ o.hash;
  h ^= static_cast<uint64_t>(o.pool) * 0x9E3779B97F4A7C15ull;
  h ^= o.snap * 0xC2B2AE3D27D4EB4Full;
  h ^= o.generation + static_cast<uint64_t>(static_cast<uint8_t>(o.shard)) + (o.max ? 7 : 0);
  return static_cast<size_t>(h);
}

void append_escaped(std::string* dst, std::string_view s) {
  // Names rarely hold 0x00 or 0x01: copy the runs between them whole (this
  // runs for every object key built, reads included).
  size_t from = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    auto u = static_cast<uint8_t>(s[i]);
    if (u > 1) continue;
    dst->append(s.data() + from, i - from);
    dst->push_back('\x01');
    dst->push_back(static_cast<char>(u + 1));
    from = i + 1;
  }
  dst->append(s.data() + from, s.size() - from);
  dst->push_back('\0');
}

bool take_escaped(std::string_view* in, std::string* out) {
  out->clear();
  size_t i = 0;
  while (i < in->size()) {
    auto u = static_cast<uint8_t>((*in)[i]);
    if (u == 0) {
      in->remove_prefix(i + 1);
      return true;
    }
    if (u == 1) {
      if (i + 1 >= in->size()) return false;
      auto e = static_cast<uint8_t>((*in)[i + 1]);
      if (e != 1 && e != 2) return false;
      out->push_back(static_cast<char>(e - 1));
      i += 2;
    } else {
      out->push_back(static_cast<char>(u));
      ++i;
    }
  }
  return false;  // no terminator
}

// Layout: [u8 0x00][u8 shard+128][be64 pool^signbit][be32 bitwise hash]
//         [esc nspace][esc effective key][esc name][be64 snap][be64 gen]
// The leading 0x00 keeps every object below the max sentinel 0xff.
size_t object_key_size_hint(const ObjectId& o) {
  return 2 + 8 + 4 + 3 + o.nspace.size() + o.effective_key().size() + o.name.size() + 8 + 8;
}

void append_object_key(std::string* k, const ObjectId& o) {
  if (o.max) {
    k->push_back('\xff');
    return;
  }
  k->push_back('\0');
  k->push_back(static_cast<char>(static_cast<uint8_t>(static_cast<int>(o.shard) + 128)));
  put_be64(k, static_cast<uint64_t>(o.pool) ^ (1ull << 63));
  put_be32(k, o.bitwise_key());
  append_escaped(k, o.nspace);
  append_escaped(k, o.effective_key());
  append_escaped(k, o.name);
  put_be64(k, o.snap);
  put_be64(k, o.generation);
}

std::string encode_object_key(const ObjectId& o) {
  std::string k;
  k.reserve(object_key_size_hint(o));
  append_object_key(&k, o);
  return k;
}

bool decode_object_key(std::string_view in, ObjectId* out) {
  ObjectId o;
  if (in.size() == 1 && static_cast<uint8_t>(in[0]) == 0xff) {
    *out = ObjectId::make_max();
    return true;
  }
  if (in.size() < 2 + 8 + 4 || in[0] != '\0') return false;
  o.shard = static_cast<int8_t>(static_cast<int>(static_cast<uint8_t>(in[1])) - 128);
  o.pool = static_cast<int64_t>(get_be64(in.data() + 2) ^ (1ull << 63));
  uint32_t rev = get_be32(in.data() + 10);
  in.remove_prefix(14);
  std::string ekey;
  if (!take_escaped(&in, &o.nspace) || !take_escaped(&in, &ekey) || !take_escaped(&in, &o.name))
    return false;
  if (in.size() != 16) return false;
  o.snap = get_be64(in.data());
  o.generation = get_be64(in.data() + 8);
  o.key = ekey == o.name ? std::string() : ekey;
  // Reversing the bits again gives back the hash.
  ObjectId tmp;
  tmp.hash = rev;
  o.hash = tmp.bitwise_key();
  *out = std::move(o);
  return true;
}

}  // namespace hybridstore
