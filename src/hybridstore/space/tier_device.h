// A tier's device found as what it is, before any superblock says so: a
// store whose RocksDB is inside its SSD tier (docs/kvfs.md 5.2) must open
// that tier, raw NAND included, from the device and its label alone.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "hscommon/config.h"
#include "hsio/block_device.h"
#include "hybridstore/format/store_format.h"
#include "hybridstore/space/tier_space.h"

namespace hybridstore {

// Raw NAND when the file starts with a flash image header (its label is
// behind the FTL, not at byte 0), else a file or block device.
DeviceKind detect_device_kind(const std::string& path);

// Opens the device at `path` as detect_device_kind finds it. A flash image
// is attached with the FTL's runtime options from cfg; its geometry and
// layout come from the image itself.
std::unique_ptr<BlockDevice> open_detected_device(const Config& cfg, const std::string& path,
                                                  const DeviceOpenOptions& options, const NandCounters* counters,
                                                  std::string* error);

// The FTL's erase block (its LEB) in bytes on raw NAND; 0 on any other
// device. Asked of the device open_detected_device returned, before any
// decorator hides what it is.
uint64_t erase_block_bytes(const BlockDevice* dev);

// The meta keys under which an SSD label records the mkfs options that
// shaped its device (the NAND geometry and the FTL image), one per option.
constexpr const char* kLabelDeviceOptionPrefix = "mkfs.";

// mkfs: records in *label the options that shaped a device of `kind`
// (nothing for a file or block device).
void record_device_options(const Config& cfg, DeviceKind kind, DeviceLabel* label);

// mount, fsck, the tool: sets in *cfg the device options the label of the
// device at `where` records. An option the configuration sets to another
// value is -EINVAL naming both values; a label of raw NAND missing one, or
// recording a value the option does not accept, -EIO. Nothing is changed
// unless all are taken.
int take_label_device_options(const DeviceLabel& label, const std::string& where, Config* cfg,
                              std::string* error);

}  // namespace hybridstore
