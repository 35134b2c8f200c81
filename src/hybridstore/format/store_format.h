// On-disk identity of a store: the label at the start of each device and the
// superblock in RocksDB. Both are versioned and crc32c-checksummed; mount
// compares them so that devices of different stores, a device smaller than
// its label says, or a label from a newer format are refused with a clear
// message instead of being used.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

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
constexpr uint32_t kFormatVersion = 3;
constexpr uint64_t kLabelSize = 4096;  // bytes reserved for the label at offset 0

using Uuid = std::array<uint8_t, 16>;
Uuid generate_uuid();
std::string uuid_to_string(const Uuid& u);
bool parse_uuid(std::string_view s, Uuid* out);

struct DeviceLabel {
  Uuid fsid{};
  Tier role = Tier::kSsd;
  uint64_t size = 0;  // device bytes the store uses
  uint32_t format_version = kFormatVersion;
  uint64_t created_us = 0;
  std::string description;
};

std::string encode_label(const DeviceLabel& l);  // exactly kLabelSize bytes
// Returns 0, or with *why: -EINVAL when the block carries no label (no
// magic); -EIO when the label is damaged (length, checksum, truncated or
// malformed body); -EOPNOTSUPP when its record or format version is newer
// than this build reads (record_errno in hscommon/encoding.h).
int decode_label(std::string_view block, DeviceLabel* out, std::string* why);
int write_label(BlockDevice* dev, const DeviceLabel& l);
int read_label(BlockDevice* dev, DeviceLabel* out, std::string* why);

// A tier's device in the store directory, by the tier's name: block.ssd,
// block.hdd, block.tier2, ... (a link to the device mkfs was given, or the
// file it made).
std::string tier_device_link(Tier t);

// What the device under a tier is, and how its space is managed.
enum class DeviceKind : uint8_t { kBlock = 0, kNand = 1 };  // a file or block device; raw flash behind the FTL
enum class SpaceKind : uint8_t { kExtents = 0, kSections = 1 };

struct TierLayout {
  DeviceKind device = DeviceKind::kBlock;
  SpaceKind space = SpaceKind::kExtents;
};

// The layout a format-1 store's tier has: only the SSD had a choice, and
// the mkfs options recorded it.
TierLayout format1_tier_layout(Tier tier, const std::map<std::string, std::string>& mkfs_options);

// What mkfs recorded of one tier.
struct TierDescriptor {
  uint64_t size = 0;  // device bytes the store uses
  uint64_t alloc_unit = 4096;
  uint64_t reserved = 0;  // bytes at the start of the device not allocated (its label)
  TierLayout layout;
};

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

  int tiers() const { return order.count(); }
};

std::string encode_superblock(const Superblock& s);
int decode_superblock(std::string_view v, Superblock* out, std::string* why);

}  // namespace hybridstore
