// On-disk identity of a store: the label at the start of each device and the
// superblock in RocksDB. Both are versioned and crc32c-checksummed; mount
// compares them so that devices of different stores, a device smaller than
// its label says, or a label from a newer format are refused with a clear
// message instead of being used.
#pragma once
#include <array>
#include <cerrno>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "hybridstore/format/onode.h"
#include "hsio/block_device.h"

namespace hybridstore {

// 1: two tiers, SSD and HDD, their layouts implied by the mkfs options.
// 2: 2 to kMaxTiers tiers, each with its layout and its place in the order
//    (fastest first) recorded; a format-1 store is upgraded when mounted.
// 3: an extent map larger than kInlineExtentBytes may be kept in shards under
//    keys of their own (onode record version 2); older onodes still read, and
//    a format-2 store is upgraded when mounted (a format-2 build would take
//    such an onode for a corrupt one, so it must refuse the store instead).
// 4: device labels of record version 2 (A/B copies, generation, flags, the
//    tier table and meta keys on the SSD); superblock record v3 with the
//    RocksDB location; RocksDB and the commit journal may live on the SSD tier
//    in the kvfs. A format-3 store is upgraded when mounted, its RocksDB
//    staying in the directory.
// 5: mount walks the commit journal's ring by its records' lengths from the
//    tail RocksDB keeps (Sjournal_tail, journal_record.h) instead of trying
//    every block, so client bytes in the ring are never taken for a record
//    (docs/small-writes.md 12.9). A format-4 build would scan, finding records
//    the tail says are gone, and a format-4 store has no tail: it is read by
//    the scan once and upgraded at its next read-write mount.
// The first format that walks the ring; what mkfs makes, and a read-write
// mount upgrades to, with hybridstore_small_write_journal=off.
constexpr uint32_t kFormatWalkedJournal = 5;
// 6 (docs/small-writes.md step 5): the commit journal may hold version-2
//    records whose RING_DATA deltas carry small overwrites' data, and
//    RocksDB says how far it is in place (Sjournal_applied). Written by mkfs
//    and by a mount's upgrade with hybridstore_small_write_journal=data (the
//    default); a format-5 build would take such a ring's data for deltas it
//    cannot replay, so it refuses the store at its superblock and labels.
constexpr uint32_t kFormatSmallWriteJournal = 6;
// 7 (docs/small-writes.md step 6, section 9): onode records of version 3,
//    which carry the object's incarnation (Sincarnation_max keeps the
//    store-wide counter) and version, so that onode deltas in the journal
//    can be replayed exactly. Written by mkfs and by a mount's upgrade with
//    hybridstore_small_write_journal=on; a format-6 build cannot read
//    version-3 onodes, so it refuses the store at its superblock and labels.
constexpr uint32_t kFormatOnodeVersions = 7;
// What mkfs makes, and a read-write mount upgrades to, with the defaults.
constexpr uint32_t kFormatVersion = kFormatSmallWriteJournal;
// The newest format this build reads.
constexpr uint32_t kFormatNewest = kFormatOnodeVersions;
// The encoded label's bytes. A copy occupies a slot of label_slot() bytes,
// which is larger on a device whose pages are (raw NAND).
constexpr uint64_t kLabelSize = 4096;
constexpr size_t kLabelMaxDescription = 1024;
constexpr size_t kLabelMaxMetaKey = 64;
constexpr size_t kLabelMaxMetaValue = 1024;

// Label flags (record version 2).
constexpr uint32_t kLabelMkfsDone = 1u << 0;        // the commit point of mkfs
constexpr uint32_t kLabelKvOnDevice = 1u << 1;      // RocksDB lives in the kvfs on this device
constexpr uint32_t kLabelKvMovedPending = 1u << 2;  // a move committed, no read-write mount from the device yet
constexpr uint32_t kLabelKnownFlags = kLabelMkfsDone | kLabelKvOnDevice | kLabelKvMovedPending;

using Uuid = std::array<uint8_t, 16>;
Uuid generate_uuid();
std::string uuid_to_string(const Uuid& u);
bool parse_uuid(std::string_view s, Uuid* out);

// What the device under a tier is, and how its space is managed.
enum class DeviceKind : uint8_t { kBlock = 0, kNand = 1 };  // a file or block device; raw flash behind the FTL
enum class SpaceKind : uint8_t { kExtents = 0, kSections = 1 };

struct TierLayout {
  DeviceKind device = DeviceKind::kBlock;
  SpaceKind space = SpaceKind::kExtents;
};
inline bool operator==(const TierLayout& a, const TierLayout& b) { return a.device == b.device && a.space == b.space; }

// One row of the SSD label's copy of the store's tier table, so that the
// store's shape can be known without RocksDB.
struct LabelTier {
  Tier role = Tier::kSsd;
  TierLayout layout;
  uint64_t alloc_unit = 0;
  uint64_t size = 0;
};
bool operator==(const LabelTier& a, const LabelTier& b);

struct DeviceLabel {
  Uuid fsid{};
  Tier role = Tier::kSsd;
  uint64_t size = 0;  // device bytes the store uses
  uint32_t format_version = kFormatVersion;
  uint64_t created_us = 0;
  std::string description;  // at most kLabelMaxDescription bytes
  // Record version 2; a version-1 label decodes with these at their defaults.
  uint64_t generation = 0;  // the copy with the highest valid generation wins
  uint32_t flags = 0;       // kLabel* flags
  DeviceKind device_kind = DeviceKind::kBlock;
  uint64_t slot = 0;  // s: the bytes each label copy occupies
  uint64_t head = 0;  // H: the reserved head of the device
  Uuid kvfs_uuid{};   // zero unless kLabelKvOnDevice
  std::vector<LabelTier> tiers;               // SSD label only: the tiers, fastest first
  std::map<std::string, std::string> meta;    // SSD label only: Ceph's meta keys, device hints
  // The record version decode_label read (encode_label always writes the
  // newest); not part of a label's content.
  uint8_t record_version = 2;
};
// Same content: every field but record_version.
bool same_label_content(const DeviceLabel& a, const DeviceLabel& b);

// 0 and exactly kLabelSize bytes in *out, or -E2BIG when the label does not
// fit (a description, meta key or value over its limit, or the whole
// encoding over kLabelSize): a label is never silently truncated.
int encode_label(const DeviceLabel& l, std::string* out);
// Returns 0, or with *why: -EINVAL when the block carries no label (no
// magic); -EIO when the label is damaged (length, checksum, truncated or
// malformed body); -EOPNOTSUPP when its record or format version is newer
// than this build reads (record_errno in hscommon/encoding.h).
int decode_label(std::string_view block, DeviceLabel* out, std::string* why);

// s: the bytes one label copy occupies on dev. A copy must be a whole
// number of the device's write units, so that rewriting one copy can never
// tear the other.
uint64_t label_slot(const BlockDevice* dev);
// H of a new device: room for two label copies and two kvfs superblock
// slots, never less than the 64 KiB stores have always reserved.
uint64_t label_head(uint64_t slot, uint64_t unit);

// What read_labels found of each copy (A at 0, B at s).
struct LabelPairStatus {
  uint64_t slot = 0;
  int a = -EINVAL, b = -EINVAL;  // decode_label's result for each copy
  std::string why_a, why_b;
  DeviceLabel label_a, label_b;  // valid when a or b is 0
  char chosen = 0;               // 'A' or 'B' when read_labels returned 0
  // The copy not chosen is valid but behind (a lower generation) or,
  // at the same generation, says something else.
  bool other_behind = false;

  // Both copies valid and the same: nothing to repair.
  bool intact() const { return a == 0 && b == 0 && !other_behind; }
  // A label of record version 1 never had a B copy: its absence is no damage.
  bool single_copy_v1() const { return a == 0 && label_a.record_version < 2 && b == -EINVAL; }
  // What a damaged or lagging copy is, for fsck and show-label ("" when fine).
  std::string problem() const;
};

// Reads and decodes both copies and picks the valid one with the higher
// generation (A on a tie). Returns 0, or the error of copy A when neither is
// valid (-EOPNOTSUPP when either copy is newer than this build reads: the
// device has been written by a newer build, whatever the other copy says).
int read_labels(BlockDevice* dev, DeviceLabel* chosen, LabelPairStatus* status, std::string* why);
// read_labels for callers that do not care which copy carried the label.
int read_label(BlockDevice* dev, DeviceLabel* out, std::string* why);
// Writes *l as the device's label: generation = max(generation of A, B) + 1
// (written back into *l), slot = label_slot(dev); B first, flush, then A,
// flush. A crash during the B write leaves A; during the A write, B.
int write_label_pair(BlockDevice* dev, DeviceLabel* l, std::string* why);

// Meta keys the store writes itself (path_block.<tier>, its devices' paths):
// set_meta, rm_meta and the tool refuse them.
bool label_meta_key_reserved(std::string_view key);
// Sets key to *value, or removes key when value is null, in l's meta map.
// 0; -EOPNOTSUPP for a record-version-1 label (it has no meta map);
// -EINVAL for an empty or reserved key; -E2BIG for a key or value over its
// limit or a label that would no longer fit; -ENOENT when removing a key
// that is not there. *why says which; on error *l is unchanged.
int change_label_meta(DeviceLabel* l, const std::string& key, const std::string* value, std::string* why);
// change_label_meta on dev's label, rewritten as a pair with a new
// generation (*out, when given, gets what was written). Nothing is written
// when the device has no readable label or the change is refused. The
// caller holds dev exclusively.
int rewrite_label_meta(BlockDevice* dev, const std::string& key, const std::string* value, DeviceLabel* out,
                       std::string* why);

// A tier's device in the store directory, by the tier's name: block.ssd,
// block.hdd, block.tier2, ... (a link to the device mkfs was given, or the
// file it made).
std::string tier_device_link(Tier t);

// The layout a format-1 store's tier has: only the SSD had a choice, and
// the mkfs options recorded it.
TierLayout format1_tier_layout(Tier tier, const std::map<std::string, std::string>& mkfs_options);

// What mkfs recorded of one tier.
struct TierDescriptor {
  uint64_t size = 0;  // device bytes the store uses
  uint64_t alloc_unit = 4096;
  // Bytes at the start of the device not allocated: the label copies (and,
  // from format 4, the kvfs superblock slots). What a store's superblock
  // says is what it keeps; only a new store reserves label_head().
  uint64_t reserved = 0;
  TierLayout layout;
};

enum class KvLocation : uint8_t { kDirectory = 0, kDevice = 1 };

struct Superblock {
  uint32_t format_version = kFormatVersion;
  Uuid fsid{};
  uint64_t created_us = 0;
  // The store's tiers, fastest first; their ids are 0 .. tiers()-1.
  TierOrder order{Tier::kSsd, Tier::kHdd};
  PerTier<TierDescriptor> tier;  // by id
  uint32_t csum_block = 4096;
  // Values of the mkfs-only options the store was created with.
  std::map<std::string, std::string> mkfs_options;
  // Where RocksDB and the commit journal live (record version 3; older
  // records are directory stores).
  KvLocation kv_location = KvLocation::kDirectory;

  int tiers() const { return order.count(); }
};

std::string encode_superblock(const Superblock& s);
int decode_superblock(std::string_view v, Superblock* out, std::string* why);

// The SSD label's tier table for a store: its tiers, fastest first.
std::vector<LabelTier> label_tier_table(const Superblock& s);

}  // namespace hybridstore
