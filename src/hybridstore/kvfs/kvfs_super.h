// The kvfs superblock (docs/kvfs.md 2.3): where the kvfs's metadata log
// starts, and the geometry every later record is checked against.
//
// Two slots of `s` bytes each (at 2s and 3s on the fastest tier). A slot is
//   [magic "HYBRIDSTORE-KVFS\n"][fixed32 n][n bytes: seal_record(kKvfsSuperTag
//    "KVSB", 1, body)] zeros to the slot's end.
// Generation g is written into slot g % 2, so a torn write damages only the
// slot of the new generation and the other still holds the previous one:
// the write of the new slot is the commit point of a log compaction.
//
// Guarantees: a decoder never reads past its input and rejects what it
// cannot trust with an errno and a reason (the conventions of
// open_stored_record): -EINVAL for a slot that holds no kvfs superblock at
// all, -EIO for a damaged one, -EOPNOTSUPP for one a newer build wrote.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "hsio/block_device.h"
#include "hybridstore/format/store_format.h"

namespace hybridstore {

// A byte range on the kvfs's device.
struct KvFsExtent {
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t end() const { return offset + length; }
  bool operator==(const KvFsExtent& o) const { return offset == o.offset && length == o.length; }
  bool operator!=(const KvFsExtent& o) const { return !(*this == o); }
};

struct KvFsSuper {
  Uuid kvfs_uuid{};
  Uuid fsid{};
  uint64_t generation = 0;
  uint64_t block = 0;       // b
  uint64_t alloc_unit = 0;  // A
  uint64_t lend_unit = 0;   // G
  uint64_t log_id = 0;
  uint64_t log_first_seq = 0;
  KvFsExtent log_segment;  // the log's first segment
  uint64_t created_us = 0;

  bool operator==(const KvFsSuper& o) const;
};

constexpr uint32_t kKvFsSuperSlots = 2;

// Exactly `slot_size` bytes; -EINVAL (with *why) when the record does not
// fit in the slot.
int encode_kvfs_super(const KvFsSuper& s, uint64_t slot_size, std::string* out, std::string* why);
// Besides framing and checksum, the geometry must be one a writer could have
// made (b a power of two, A a multiple of b, G of A, the segment aligned to
// A and inside the addressable range); anything else is -EIO.
int decode_kvfs_super(std::string_view slot, KvFsSuper* out, std::string* why);

// Where the two slots are: slot i at first_offset + i * slot_size.
struct KvFsSuperSlotsAt {
  uint64_t first_offset = 0;
  uint64_t slot_size = 0;
};

// Writes slot `s.generation % 2` with write_durable: the slot is durable
// when this returns 0.
int write_kvfs_super(BlockDevice* dev, const KvFsSuperSlotsAt& at, const KvFsSuper& s, std::string* why);

// What one slot held, for fsck and for the message of an unmountable kvfs.
struct KvFsSlotReport {
  int result = 0;  // 0: valid and matching; otherwise -errno
  std::string why;
  KvFsSuper super;  // what decoded, when result is 0
};

// Reads both slots and picks the valid one with the highest generation
// whose kvfs_uuid and fsid equal the expected ones (a slot left by an
// earlier kvfs or store never matches). -EIO "kvfs superblock unreadable"
// when neither qualifies; `slots` (optional) says why each failed.
int read_kvfs_super(BlockDevice* dev, const KvFsSuperSlotsAt& at, const Uuid& kvfs_uuid, const Uuid& fsid,
                    KvFsSuper* out, std::string* why,
                    std::array<KvFsSlotReport, kKvFsSuperSlots>* slots = nullptr);

// True when slot `slot` reads as all zeros: never written, which is what
// slot 1 of a kvfs never compacted holds, and no damage. False when it
// cannot be read.
bool kvfs_slot_blank(BlockDevice* dev, const KvFsSuperSlotsAt& at, uint32_t slot);

}  // namespace hybridstore
