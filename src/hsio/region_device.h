// A region of another device, seen as a device of its own.
//
// The commit journal's ring on the fastest tier is not a file but a list of
// ranges the kvfs holds on the SSD (docs/kvfs.md, section 4): one when
// contiguous space allowed it, several otherwise. RegionDevice presents an
// ordered list of extents of a device as the linear address space
// [0, sum of their lengths), so the journal reads and writes offsets of its
// ring as it does on a file, and every I/O goes to the device below, split
// where it crosses from one extent into the next.
//
// The device below is shared, not owned exclusively: the kvfs and the tier's
// object data write the same SSD through their own stacks. The region holds
// no state besides its extents, so it is as thread-safe as that device, and
// what the device promises about overlapping I/O (write_many's order,
// write_many_async's waits) holds for the region's I/O too: two ranges of the
// region overlap exactly when their pieces on the device do.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hsio/block_device.h"

namespace hybridstore {

// A range of the device below: [offset, offset + length).
struct RegionExtent {
  uint64_t offset = 0;
  uint64_t length = 0;
};

class RegionDevice final : public BlockDevice {
 public:
  // The region of `inner` made of `extents`, in region order. Null, with
  // *error saying why, unless there is at least one extent and every extent
  // is non-empty, aligned (offset and length) to inner->alignment(), inside
  // the device, and clear of every other extent.
  static std::unique_ptr<RegionDevice> make(std::shared_ptr<BlockDevice> inner, std::vector<RegionExtent> extents,
                                            std::string* error);

  uint64_t size() const override { return size_; }
  uint32_t alignment() const override { return inner_->alignment(); }
  std::string backend() const override { return "region+" + inner_->backend(); }
  std::string path() const override { return inner_->path(); }
  Media media() const override { return inner_->media(); }
  // io_stats() stays the default (zeros): the counters are the whole
  // device's, which its owner reports; a region repeating them would have
  // them counted twice.

  int read(uint64_t offset, char* buf, uint64_t len) override;
  int write(uint64_t offset, const char* buf, uint64_t len) override;
  int read_many(const std::vector<ReadIo>& ios) override;
  int write_many(const std::vector<WriteIo>& ios) override;
  void write_many_async(std::vector<WriteIo> ios, WriteDone done) override;
  int flush() override { return inner_->flush(); }
  int write_durable(uint64_t offset, const char* buf, uint64_t len) override;
  int discard(uint64_t offset, uint64_t len) override;

  const std::vector<RegionExtent>& extents() const { return extents_; }
  BlockDevice* inner() const { return inner_.get(); }

 private:
  RegionDevice(std::shared_ptr<BlockDevice> inner, std::vector<RegionExtent> extents);

  bool in_range(uint64_t offset, uint64_t len) const { return offset <= size_ && len <= size_ - offset; }
  // Calls piece(device offset, bytes of the range before this piece, piece
  // length) for each extent [offset, offset + len) touches, in region order.
  // The range must be in_range().
  template <typename Fn>
  void split(uint64_t offset, uint64_t len, Fn&& piece) const;
  // Appends the device I/Os that carry out `io` (one per extent it touches,
  // in region order). The range must be in_range().
  template <typename Io>
  void translate(const Io& io, std::vector<Io>* out) const;
  template <typename Io>
  bool translate_all(const std::vector<Io>& ios, std::vector<Io>* out) const;

  std::shared_ptr<BlockDevice> inner_;
  std::vector<RegionExtent> extents_;
  std::vector<uint64_t> starts_;  // region offset of each extent's first byte
  uint64_t size_ = 0;
};

}  // namespace hybridstore
