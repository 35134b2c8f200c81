// The kvfs seen from outside (docs/kvfs.md 5.5, `hybridstore-tool kvfs`):
// an unmounted kvfs read from its device without writing to it, as
// check_kvfs reads it: the superblock slots, the log replayed into a state
// of its own (with every record kept for a dump), and a file's bytes.
// Whatever the device holds, the decoders answer with an error; nothing
// here asserts on the media.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hsio/block_device.h"
#include "hybridstore/format/store_format.h"
#include "hybridstore/kvfs/kvfs.h"
#include "hybridstore/kvfs/kvfs_log.h"
#include "hybridstore/kvfs/kvfs_state.h"
#include "hybridstore/kvfs/kvfs_super.h"

namespace hybridstore {

struct KvFsInspection {
  std::array<KvFsSlotReport, kKvFsSuperSlots> slots;
  std::array<bool, kKvFsSuperSlots> slot_blank{};
  KvFsSuper super;  // the current slot's
  KvFsGeometry geometry;
  // Null when no slot could be read. When the log stops at damage, the
  // state holds what replayed before it and `damage` says where.
  std::unique_ptr<KvFsState> state;
  std::string damage;
  std::vector<KvLoggedRecord> records;  // with_records only
};

// 0 once a current superblock was read (the rest as above); -EIO with *why
// when neither slot holds one.
int inspect_kvfs(BlockDevice* dev, const KvFsParams& params, const Uuid& kvfs_uuid, const Uuid& fsid,
                 bool with_records, KvFsInspection* out, std::string* why);

// A record as one line of text (the tool's log-dump).
std::string describe_kv_record(const KvRecord& record);

// The bytes [0, size) of inode `ino` of an inspected kvfs, read from `dev`
// extent by extent; -EIO with *why naming the range that could not be
// read, or when the extents do not cover the size.
int read_kvfs_inode(BlockDevice* dev, const KvFsState& state, uint64_t block, uint64_t ino, std::string* out,
                    std::string* why);

}  // namespace hybridstore
