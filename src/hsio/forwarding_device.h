// A BlockDevice standing on another one that passes every call down
// unchanged: the base of the decorators that add to a device's I/O (the data
// cache's invalidation, writes that go on in the background), so each of
// them overrides only the calls it changes and says what it is in one place.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hsio/block_device.h"

namespace hybridstore {

class ForwardingBlockDevice : public BlockDevice {
 public:
  uint64_t size() const override { return inner_->size(); }
  uint32_t alignment() const override { return inner_->alignment(); }
  // The decorator's name before the inner device's: "cached+async+uring".
  std::string backend() const override { return name_ + "+" + inner_->backend(); }
  std::string path() const override { return inner_->path(); }
  Media media() const override { return inner_->media(); }
  BlockDeviceStats io_stats() const override { return inner_->io_stats(); }

  int read(uint64_t offset, char* buf, uint64_t len) override { return inner_->read(offset, buf, len); }
  int read_many(const std::vector<ReadIo>& ios) override { return inner_->read_many(ios); }
  int write(uint64_t offset, const char* buf, uint64_t len) override { return inner_->write(offset, buf, len); }
  int write_many(const std::vector<WriteIo>& ios) override { return inner_->write_many(ios); }
  void write_many_async(std::vector<WriteIo> ios, WriteDone done) override {
    inner_->write_many_async(std::move(ios), std::move(done));
  }
  int write_durable(uint64_t offset, const char* buf, uint64_t len) override {
    return inner_->write_durable(offset, buf, len);
  }
  int flush() override { return inner_->flush(); }
  int discard(uint64_t offset, uint64_t len) override { return inner_->discard(offset, len); }

  BlockDevice* inner() { return inner_.get(); }

 protected:
  ForwardingBlockDevice(std::unique_ptr<BlockDevice> inner, std::string name)
      : inner_(std::move(inner)), name_(std::move(name)) {}

  std::unique_ptr<BlockDevice> inner_;

 private:
  std::string name_;
};

}  // namespace hybridstore
