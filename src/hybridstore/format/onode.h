// The onode: everything the store knows about one object except its data
// bytes and omap entries — size, xattrs, alloc hints, omap id and the extent
// map that locates the data on the two tiers, with a crc32c per checksum block.
//
// Invariants (checked by decode_onode, relied on by the data path):
//  - extents are sorted by logical offset and never overlap;
//  - each extent's csums has ceil(length / csum_block) entries;
//  - bytes of an extent beyond the object size are zero (so a later extension
//    reads zeros without rewriting them).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hybridstore/format/tier.h"

namespace hybridstore {

// A physical byte range on one tier's device.
struct PExtent {
  Tier tier;
  uint64_t offset;
  uint64_t length;
  bool staged = false;  // SSD sections: a staged extent, written later as a whole unit
  bool direct = false;  // SSD sections: whole write units, written before the commit
};

struct DataExtent {
  uint64_t logical = 0;   // offset in the object
  uint64_t length = 0;    // bytes; a multiple of csum_block
  Tier tier = Tier::kSsd;
  uint64_t physical = 0;  // offset on the tier's device
  uint32_t csum_block = 4096;
  std::vector<uint32_t> csums;  // crc32c of each csum_block piece

  uint64_t logical_end() const { return logical + length; }
};

struct ExtentShard;  // onode.cc

// Logical offset -> extent, kept in shards of kShardSpan logical bytes (an
// extent lives in the shard of its first byte). Copies share the shards and
// a change copies only the shard it touches, and each shard caches its own
// encoding: a transaction copies an object's onode and re-encodes it for
// every small write, and an object made of hundreds of extents (4 KiB
// overwrites of a 4 MiB RBD object) would otherwise cost that copy and that
// encoding in full each time. The encoded form is the same extent list in
// logical order either way.
class ExtentMap {
 public:
  static constexpr uint64_t kShardSpan = 256 * 1024;
  using Map = std::map<uint64_t, DataExtent>;  // one shard's extents

  // Every extent in logical order, across the shards.
  class const_iterator {
   public:
    using value_type = Map::value_type;
    const value_type& operator*() const { return *inner_; }
    const value_type* operator->() const { return &*inner_; }
    const_iterator& operator++();
    bool operator==(const const_iterator& o) const {
      return outer_ == o.outer_ && (outer_ == end_ || inner_ == o.inner_);
    }
    bool operator!=(const const_iterator& o) const { return !(*this == o); }

   private:
    friend class ExtentMap;
    using Outer = std::map<uint64_t, std::shared_ptr<ExtentShard>>::const_iterator;
    const_iterator(Outer outer, Outer end);
    Outer outer_, end_;
    Map::const_iterator inner_;
  };
  struct Range {
    const ExtentMap* map;
    const_iterator begin() const { return map->begin(); }
    const_iterator end() const { return map->end(); }
    size_t size() const { return map->size(); }
    const DataExtent& at(uint64_t logical) const { return map->at(logical); }
  };

  ExtentMap() = default;
  ExtentMap(const ExtentMap&) = default;
  ExtentMap& operator=(const ExtentMap&) = default;
  // A moved-from map is empty, its totals included.
  ExtentMap(ExtentMap&& o) noexcept { *this = std::move(o); }
  ExtentMap& operator=(ExtentMap&& o) noexcept;

  Range extents() const { return Range{this}; }
  const_iterator begin() const { return const_iterator(shards_.begin(), shards_.end()); }
  const_iterator end() const { return const_iterator(shards_.end(), shards_.end()); }
  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }
  size_t shard_count() const { return shards_.size(); }

  void insert(DataExtent e);  // caller guarantees no overlap
  // Removes coverage of [begin, end); a partially covered extent is trimmed.
  // Cut points must fall on csum_block boundaries of the extents they cut.
  // Appends the physical ranges no longer referenced to *released.
  void punch(uint64_t begin, uint64_t end, std::vector<PExtent>* released);
  // The extent starting at `logical`, to change its checksums in place (its
  // offsets and length must stay); null if none starts there. The pointer is
  // good until the map is next copied, encoded, measured or changed: its
  // shard's cached encoding and heap size are dropped now, not when the
  // caller writes through it.
  DataExtent* mutable_extent(uint64_t logical);
  // Removes the extent starting at `logical`; false if none does.
  bool erase(uint64_t logical);
  // The extent starting at `logical`; throws std::out_of_range if none does.
  const DataExtent& at(uint64_t logical) const;
  // Extents overlapping [begin, end), in order.
  std::vector<const DataExtent*> overlapping(uint64_t begin, uint64_t end) const;
  // Whether [begin, end) holds any extent.
  bool any_in(uint64_t begin, uint64_t end) const;
  uint64_t bytes_on(Tier t) const { return bytes_[t]; }
  const PerTier<uint64_t>& bytes_by_tier() const { return bytes_; }
  void clear();
  // An estimate of the heap the map holds (its shards, extents, checksums
  // and cached encodings), by the allocations libstdc++ makes for them;
  // what the onode cache charges (onode_memory_bytes).
  size_t memory_bytes() const;
  // Bytes encode_into appends. Encodes the shards changed since they were
  // last encoded (encode_into then only copies).
  size_t encoded_size() const;
  // Appends the extent count and every extent's encoding (encode_onode's
  // extent list), re-encoding only shards changed since they were last encoded.
  void encode_into(std::string* out) const;

  // The shards by index. A handle stays the same object while its shard is
  // unchanged: copies of a map share unchanged shards, and a change to a
  // shard someone else holds (a handle included) copies it first. So a
  // handle kept from when the map was stored tells which shards changed.
  using ShardHandle = std::shared_ptr<const ExtentShard>;
  std::vector<std::pair<uint64_t, ShardHandle>> shard_handles() const;
  // Extents in the shard, and the crc32c of their encoding (ShardRef).
  uint64_t shard_extent_count(uint64_t index) const;
  uint32_t shard_crc(uint64_t index) const;
  // Appends the encoding of the shard's extents (encode_extent_shard's body).
  void encode_shard_into(uint64_t index, std::string* out) const;

 private:
  // The shard holding `logical`'s extents, ready to change: copied first if
  // another map shares it, made if missing; its cached encoding dropped.
  ExtentShard& writable(uint64_t logical);
  void drop_if_empty(uint64_t shard_index);
  void count_in(const DataExtent& e);
  void count_out(const DataExtent& e);
  // The last extent starting at or before `logical`, or null.
  const DataExtent* at_or_before(uint64_t logical) const;

  std::map<uint64_t, std::shared_ptr<ExtentShard>> shards_;  // by logical / kShardSpan
  size_t count_ = 0;
  PerTier<uint64_t> bytes_;
};

// CEPH_OSD_ALLOC_HINT_FLAG_*: set by a transaction, kept in the onode
// (alloc_hint_flags), read by placement.
enum AllocHintFlags : uint32_t {
  kHintSequentialWrite = 1,
  kHintRandomWrite = 2,
  kHintSequentialRead = 4,
  kHintRandomRead = 8,
  kHintAppendOnly = 16,
  kHintImmutable = 32,
  kHintShortLived = 64,
  kHintLongLived = 128,
  kHintCompressible = 256,
  kHintIncompressible = 512,
};

// An onode whose extent map encodes to more than a limit
// (hybridstore_extent_map_inline_max) keeps the map in shards under keys of
// their own (kv::extent_shard_key), so a small write rewrites the shard it
// touched, not every extent and checksum of the object.

// A shard as the onode names it: which one, how many extents, and the crc32c
// of their encoding, so a loader knows it holds exactly the shards the onode
// was written with.
struct ShardRef {
  uint64_t index = 0;
  uint64_t extents = 0;
  uint32_t crc = 0;
};

struct Onode {
  uint64_t size = 0;
  uint64_t nid = 0;  // omap id; 0 while the object has no omap
  uint32_t alloc_hint_flags = 0;
  uint64_t expected_object_size = 0;
  uint64_t expected_write_size = 0;
  std::map<std::string, std::string> attrs;
  ExtentMap extents;
  // How the map is stored now: in shards (true) or inside the onode's record.
  // Not part of the encoding; set by whoever loads or stores the onode.
  bool extents_in_shards = false;
  // Raised by one by every transaction that changes the object, so that a
  // journal delta (which names the version it makes) is replayed exactly
  // onto the onode it followed (docs/small-writes.md, onode record version
  // 3). With `incarnation`, written in version-3 records (format 7 stores);
  // 0 from older records.
  uint64_t version = 0;
  // Drawn from a store-wide counter whenever the object is made (created,
  // cloned to, renamed to), so that a delta of an earlier life of the same
  // key is never applied to a later one (docs/small-writes.md 12.10).
  uint64_t incarnation = 0;
};

// An estimate of the heap an onode made with make_shared holds: itself,
// its attributes and its extent map (ExtentMap::memory_bytes).
size_t onode_memory_bytes(const Onode& o);

// Identifies an extent map and the bytes it holds (through the checksums),
// for "unchanged since I looked" checks.
std::string extent_fingerprint(const ExtentMap& m);

// Versioned, checksummed encoding; decode rejects anything malformed or
// inconsistent (returns false, never crashes).
// Whether the onode's map is stored in shards: its encoding is over
// `inline_max` (0: never).
bool extents_go_in_shards(const Onode& o, size_t inline_max);
// The onode's record: with the extent map inside it, or (`in_shards`) with
// only a ShardRef per shard, each shard then written with encode_extent_shard.
// `versions`: record version 3, which carries the incarnation and version
// (format 7 stores); otherwise version 2, which format-4 to -6 builds read.
std::string encode_onode(const Onode& o, bool in_shards = false, bool versions = false);
// `tiers`: the store's tier count; an extent on a tier index past it is corrupt.
// A record naming shards fills `shards` (the map is left empty, and
// extents_in_shards set); without `shards` such a record is refused.
bool decode_onode(std::string_view in, Onode* out, std::string* why = nullptr, int tiers = kMaxTiers,
                  std::vector<ShardRef>* shards = nullptr);
// What a scan of many onodes needs of each (the migration pass,
// docs/memory.md): the size and the bytes the extents hold per tier, read
// from the record with the checks decode_onode makes of them, without
// building the extent map or keeping the attributes: nothing is allocated
// per object.
struct OnodeSpace {
  uint64_t size = 0;
  uint64_t nid = 0;
  uint64_t allocated = 0;  // bytes of the extents
  uint64_t extents = 0;
  PerTier<uint64_t> bytes_on;
};
// A record naming shards fills `shards` (its extents are then counted with
// add_extent_shard_space, shard by shard); otherwise `shards` is cleared.
bool decode_onode_space(std::string_view in, OnodeSpace* out, std::string* why, int tiers,
                        std::vector<ShardRef>* shards);
bool add_extent_shard_space(std::string_view in, const ShardRef& ref, OnodeSpace* out, std::string* why, int tiers);

// One shard's record, and its decoder: the extents must be exactly those
// `ref` names (index, count, crc) and start inside that shard's span; they
// are added to `into`, whose other shards they must not overlap.
std::string encode_extent_shard(const ExtentMap& m, uint64_t index);
bool decode_extent_shard(std::string_view in, const ShardRef& ref, ExtentMap* into, std::string* why = nullptr,
                         int tiers = kMaxTiers);

}  // namespace hybridstore
