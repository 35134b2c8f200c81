// RocksDB and the commit journal on the store's fastest tier (docs/kvfs.md
// 5.1-5.3): what mkfs and mount of such a store share. The kvfs is sized
// from the tier (2.4) and lives in chunks the tier's space lends it (2.5);
// its parameters come from the options and the SSD's label, because mount
// needs them before RocksDB, and so the superblock, can be read.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hscommon/config.h"
#include "hsio/block_device.h"
#include "hybridstore/alloc/allocator.h"
#include "hybridstore/format/store_format.h"
#include "hybridstore/kvfs/kv_device.h"

namespace hybridstore {

// hybridstore_kv_location=device: mkfs puts RocksDB and the journal on the
// fastest tier.
bool kv_location_is_device(const Config& cfg);
// Why this store cannot keep RocksDB on its fastest tier, or "".
std::string kv_on_device_unsupported(const Superblock& sb);

// The kvfs parameters of an SSD tier whose device is `dev`, whose label
// reserves `head` bytes: the slots in the head, the options' log and
// buffer sizes. mkfs sets initial_size, log_segment and grow_step from
// kvfs_sizing.
KvFsParams kvfs_params(const Config& cfg, const BlockDevice& dev, uint64_t head);
// docs/kvfs.md 2.4 for a tier of `size` bytes with `head` reserved, that
// lends in `lend_unit` and allocates in `tier_unit`. `owned`: what the kvfs
// owns already (mount), in place of the initial size.
int kvfs_sizing(const Config& cfg, uint64_t size, uint64_t head, uint64_t lend_unit, uint64_t tier_unit,
                uint64_t owned, KvSizing* out, std::string* error);

// mkfs: the initial chunks for a new kvfs, taken from the fastest tier's
// space as mount will load it (formatted and empty), so that every range
// is one the space would lend: *lend_unit is the tier's G.
int lend_initial_chunks(const Config& cfg, const Superblock& sb, std::shared_ptr<BlockDevice> ssd,
                        KvSizing* sizing, uint64_t* lend_unit, std::vector<Interval>* chunks, std::string* error);

// `text` as the whole of file `path`, replacing it atomically: written to
// a temporary file, synced, renamed over it, the directory synced.
bool write_file_durably(const std::string& path, const std::string& text);

// Lends what mkfs took for the kvfs, in order, and nothing else.
class PresetLender final : public KvFsLender {
 public:
  PresetLender(uint64_t unit, std::vector<Interval> ranges) : unit_(unit), ranges_(std::move(ranges)) {}
  uint64_t unit() const override { return unit_; }
  int lend(uint64_t want, std::vector<Interval>* out) override;
  // Formatting returns nothing, and what it would return the tier's space
  // never gave out: dropped.
  void take_back(const std::vector<Interval>&) override {}
  uint64_t lendable() const override;

 private:
  const uint64_t unit_;
  std::vector<Interval> ranges_;
};

}  // namespace hybridstore
