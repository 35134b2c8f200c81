// One device under two decorator stacks.
//
// Decorators own the device below them (ForwardingBlockDevice holds a
// unique_ptr), so a device can sit under one stack only. With RocksDB on the
// fastest tier, the kvfs and the tier's object data each want their own stack
// (write-behind and the data cache for one, the tier's for the other) over
// the same decorated SSD, so that fault injection's volatile cache and a
// device model's queue see all of its I/O as one drive would
// (docs/kvfs.md, section 5.2). SharedBlockDevice is the bottom of such a
// stack: it owns a reference to the shared device and passes every call to
// it unchanged, under the device's own name (it adds no behaviour a tool
// should show).
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hsio/block_device.h"

namespace hybridstore {

class SharedBlockDevice final : public BlockDevice {
 public:
  explicit SharedBlockDevice(std::shared_ptr<BlockDevice> shared) : shared_(std::move(shared)) {}

  uint64_t size() const override { return shared_->size(); }
  uint32_t alignment() const override { return shared_->alignment(); }
  std::string backend() const override { return shared_->backend(); }
  std::string path() const override { return shared_->path(); }
  Media media() const override { return shared_->media(); }
  BlockDeviceStats io_stats() const override { return shared_->io_stats(); }

  int read(uint64_t offset, char* buf, uint64_t len) override { return shared_->read(offset, buf, len); }
  int read_many(const std::vector<ReadIo>& ios) override { return shared_->read_many(ios); }
  int write(uint64_t offset, const char* buf, uint64_t len) override { return shared_->write(offset, buf, len); }
  int write_many(const std::vector<WriteIo>& ios) override { return shared_->write_many(ios); }
  void write_many_async(std::vector<WriteIo> ios, WriteDone done) override {
    shared_->write_many_async(std::move(ios), std::move(done));
  }
  int write_durable(uint64_t offset, const char* buf, uint64_t len) override {
    return shared_->write_durable(offset, buf, len);
  }
  int flush() override { return shared_->flush(); }
  int discard(uint64_t offset, uint64_t len) override { return shared_->discard(offset, len); }

  const std::shared_ptr<BlockDevice>& shared() const { return shared_; }

 private:
  std::shared_ptr<BlockDevice> shared_;
};

}  // namespace hybridstore
