// RocksDB key space of the store; KEY_SCHEMA.md beside this file is the
// reference. One leading byte per kind of record, so each kind is a
// contiguous range that can be listed or checked on its own.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include <rocksdb/merge_operator.h>
#include <rocksdb/slice_transform.h>

#include "hybridstore/format/collection_id.h"
#include "hybridstore/format/object_id.h"
#include "hybridstore/format/onode.h"

namespace hybridstore::kv {

constexpr char kSuper = 'S';       // singletons: superblock, nid_max, statistics
constexpr char kCollection = 'C';  // C<collection name> -> collection record
constexpr char kOnode = 'O';       // O<esc collection><object key> -> onode
constexpr char kOmap = 'M';        // M<be64 nid>H -> header, M<be64 nid>K<key> -> value
constexpr char kBitmap = 'B';      // B<tier><be64 chunk> -> allocation bitmap chunk (XOR merge)
constexpr char kDeferred = 'D';    // D<be64 seq> -> deferred write record
constexpr char kSection = 'A';     // HFM section allocator state
constexpr char kHeat = 'H';        // heat tracker records
constexpr char kExtentShard = 'X';  // X<onode key after its 'O'><be32 shard> -> extent shard

std::string super_key(std::string_view name);
inline std::string superblock_key() { return super_key("superblock"); }
inline std::string nid_max_key() { return super_key("nid_max"); }
inline std::string incarnation_max_key() { return super_key("incarnation_max"); }
inline std::string stats_key() { return super_key("stats"); }
inline std::string mkfs_done_key() { return super_key("mkfs_done"); }
// fixed64: the commit journal number of the last transaction RocksDB holds
// (commit_journal.h); every transaction's batch writes it.
inline std::string journal_seq_key() { return super_key("journal_seq"); }
// encode_journal_tail (journal_record.h): where mount starts walking the
// commit journal's ring (format 5).
inline std::string journal_tail_key() { return super_key("journal_tail"); }
// fixed64 (format 6): the deferred writer's staging number up to which
// every small write whose data rode in the commit journal is in place;
// mount writes the pieces the ring holds past it (DeferredWriter::replay).
// Reset to 0 with the ring's tail at every mount (staging numbers start
// again at 1).
inline std::string journal_applied_key() { return super_key("journal_applied"); }

std::string collection_key(const CollectionId& c);
bool decode_collection_key(std::string_view k, CollectionId* c);

// All onodes of a collection share this prefix, so a collection lists as one
// range in object order.
std::string onode_prefix(const CollectionId& c);
std::string onode_key(const CollectionId& c, const ObjectId& o);
bool decode_onode_key(std::string_view k, CollectionId* c, ObjectId* o);

// A shard of an onode's extent map (onode.h, ShardRef), keyed after the onode
// key, so an object's shards sort together and in shard order.
std::string extent_shard_key(std::string_view onode_key, uint64_t shard);
// The onode key and shard of a shard key; false if it is not one.
bool decode_extent_shard_key(std::string_view k, std::string* onode_key, uint64_t* shard);

std::string omap_header_key(uint64_t nid);
std::string omap_key(uint64_t nid, std::string_view user_key);
std::string omap_keys_begin(uint64_t nid);  // first possible user key of nid
std::string omap_keys_end(uint64_t nid);    // past the last user key of nid
std::string omap_nid_begin(uint64_t nid);   // header and keys: [begin, end)
std::string omap_nid_end(uint64_t nid);
bool decode_omap_key(std::string_view k, uint64_t* nid, bool* is_header, std::string_view* user_key);

// One allocation bitmap chunk covers kBitmapChunkBits allocation units.
constexpr uint64_t kBitmapChunkBits = 1024;
constexpr size_t kBitmapChunkBytes = kBitmapChunkBits / 8;
std::string bitmap_key(Tier t, uint64_t chunk);
std::string bitmap_prefix(Tier t);
bool decode_bitmap_key(std::string_view k, Tier* t, uint64_t* chunk);

// Upper bound of a prefix range: the smallest key greater than every key
// that starts with `prefix`.
std::string prefix_end(std::string_view prefix);

// Counters kept with ADD merges: index into the stats vector.
// Objects per tier (by the tier holding most of an object's data) came
// later: a record without them decodes them as 0 and mount recounts them.
enum Stat : int {
  kStatObjects = 0,
  kStatBytes = 1,
  kStatOmapBytes = 2,
  kStatTierObjects = 3,  // the first of kMaxTiers, by tier id (stat_objects_on)
  kStatCount = kStatTierObjects + kMaxTiers
};
// The counter of the objects whose home is tier `t`.
constexpr int stat_objects_on(Tier t) { return kStatTierObjects + tier_index(t); }
std::string encode_stat_delta(const int64_t (&delta)[kStatCount]);
bool decode_stats(std::string_view v, int64_t (&out)[kStatCount]);

// XOR for bitmap chunks, element-wise add for statistics, HeatMergeOperator
// for heat records (kv/heat_record.h); any other key is a corruption (the merge fails and RocksDB reports it).
std::shared_ptr<rocksdb::MergeOperator> make_merge_operator();

// The memtable insert hints (RocksDB's memtable_insert_with_hint_prefix_extractor):
// keys sharing a prefix here are inserted from where the last one went.
// Most keys of a small transaction are written again and again (the
// singletons, the bitmap chunk being allocated from, a section's erase unit)
// or in ascending order (deferred records, an object's omap keys), so their
// insert starts beside its place instead of at the top of a skiplist whose
// nodes are cache misses. Onode and collection keys arrive in hash order and
// get no hint. Only the memtable's insert path reads this; nothing on disk.
std::shared_ptr<const rocksdb::SliceTransform> make_insert_hint_prefixes();

// Collection record: hash bits. Versioned and checksummed.
std::string encode_collection(uint32_t bits);
bool decode_collection(std::string_view v, uint32_t* bits);

}  // namespace hybridstore::kv
