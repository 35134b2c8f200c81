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
#include <string>
#include <string_view>
#include <vector>

namespace hybridstore {

enum class Tier : uint8_t { kSsd = 0, kHdd = 1 };
constexpr int kNumTiers = 2;
const char* tier_name(Tier t);
inline int tier_index(Tier t) { return static_cast<int>(t); }

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

// Logical offset -> extent.
class ExtentMap {
 public:
  using Map = std::map<uint64_t, DataExtent>;

  const Map& extents() const { return map_; }
  // For in-place changes that keep offsets and lengths (checksum updates).
  Map& mutable_extents() { return map_; }
  bool empty() const { return map_.empty(); }
  size_t size() const { return map_.size(); }

  void insert(DataExtent e);  // caller guarantees no overlap
  // Removes coverage of [begin, end); a partially covered extent is trimmed.
  // Cut points must fall on csum_block boundaries of the extents they cut.
  // Appends the physical ranges no longer referenced to *released.
  void punch(uint64_t begin, uint64_t end, std::vector<PExtent>* released);
  // Extents overlapping [begin, end), in order.
  std::vector<const DataExtent*> overlapping(uint64_t begin, uint64_t end) const;
  // Whether [begin, end) holds any extent.
  bool any_in(uint64_t begin, uint64_t end) const;
  uint64_t bytes_on(Tier t) const;
  void clear() { map_.clear(); }

 private:
  Map map_;
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

struct Onode {
  uint64_t size = 0;
  uint64_t nid = 0;  // omap id; 0 while the object has no omap
  uint32_t alloc_hint_flags = 0;
  uint64_t expected_object_size = 0;
  uint64_t expected_write_size = 0;
  std::map<std::string, std::string> attrs;
  ExtentMap extents;
};

// Identifies an extent map and the bytes it holds (through the checksums),
// for "unchanged since I looked" checks.
std::string extent_fingerprint(const ExtentMap& m);

// Versioned, checksummed encoding; decode rejects anything malformed or
// inconsistent (returns false, never crashes).
std::string encode_onode(const Onode& o);
bool decode_onode(std::string_view in, Onode* out, std::string* why = nullptr);

}  // namespace hybridstore
