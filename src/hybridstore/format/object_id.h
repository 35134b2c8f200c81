// Object and collection identity, with Ceph's model and order.
//
// ObjectId mirrors Ceph's ghobject_t: pool, namespace, locator key, name, the
// 32-bit placement hash, snap, generation and shard, plus a max flag for the
// end-of-listing sentinel. Objects compare as Ceph compares them: max, shard,
// pool, bit-reversed hash, namespace, effective key, name, snap, generation,
// so a PG lists in reversed-hash order and each split child's objects are
// contiguous. encode_object_key() produces bytes whose lexicographic order is
// exactly that order; RocksDB listing relies on it.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace hybridstore {

constexpr uint64_t kNoSnap = UINT64_MAX - 1;   // CEPH_NOSNAP: the head object
constexpr uint64_t kSnapDir = UINT64_MAX;      // CEPH_SNAPDIR
constexpr uint64_t kNoGen = UINT64_MAX;        // ghobject_t::NO_GEN
constexpr int8_t kNoShard = -1;                // shard_id_t::NO_SHARD
constexpr int64_t kPoolMeta = -1;              // POOL_META

struct ObjectId {
  int64_t pool = INT64_MIN;  // Ceph's default pool
  std::string nspace;
  std::string key;   // locator; empty when it equals the name
  std::string name;
  uint32_t hash = 0;
  uint64_t snap = kNoSnap;
  uint64_t generation = kNoGen;
  int8_t shard = kNoShard;
  bool max = false;

  static ObjectId make_max() {
    ObjectId o;
    o.max = true;
    return o;
  }
  // Sorts before every object: the start of a full listing.
  static ObjectId make_min() {
    ObjectId o;
    o.shard = INT8_MIN;
    o.snap = 0;
    o.generation = 0;
    return o;
  }
  // An object named `name` whose hash is derived from the name (crc32c),
  // for tools and tests that do not supply Ceph's placement hash.
  static ObjectId from_name(std::string_view name, int64_t pool = kPoolMeta);

  const std::string& effective_key() const { return key.empty() ? name : key; }
  uint32_t bitwise_key() const;  // the hash with its bits reversed
  // True when the low `bits` bits of the hash equal `rem` (Ceph's match()).
  bool matches(uint32_t bits, uint32_t rem) const;
  bool is_temp() const { return pool <= -2; }

  std::string to_string() const;  // readable, for messages and tools
};

// Ceph's ghobject_t ordering.
int compare(const ObjectId& a, const ObjectId& b);
inline bool operator<(const ObjectId& a, const ObjectId& b) { return compare(a, b) < 0; }
inline bool operator==(const ObjectId& a, const ObjectId& b) { return compare(a, b) == 0; }
inline bool operator!=(const ObjectId& a, const ObjectId& b) { return compare(a, b) != 0; }

struct ObjectIdHash {
  size_t operator()(const ObjectId& o) const;
};

// Order-preserving encoding (see the header comment). The max object encodes
// to a single 0xff byte, after every other object.
std::string encode_object_key(const ObjectId& o);
// encode_object_key's bytes appended to *k, and a size to reserve for them
// (exact unless a name holds 0x00 or 0x01 bytes).
void append_object_key(std::string* k, const ObjectId& o);
size_t object_key_size_hint(const ObjectId& o);
// Parses what encode_object_key produced; false on malformed input.
bool decode_object_key(std::string_view in, ObjectId* out);

// Strings inside keys: 0x00 and 0x01 are escaped and a 0x00 terminates, so
// that a prefix sorts before its extensions and no string can run into the
// next field.
void append_escaped(std::string* dst, std::string_view s);
bool take_escaped(std::string_view* in, std::string* out);

}  // namespace hybridstore
