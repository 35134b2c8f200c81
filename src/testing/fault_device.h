// A BlockDevice decorator that emulates a volatile write cache in front of
// the real device, for power-cut and EIO injection (fault_injection.h has the
// model).
//
// Writes are kept in memory, in order, until a flush() covers them; only then
// do they reach the wrapped device (which stands for the media). Reads see
// cached writes, as with a real cache. At a power cut the cache is dropped;
// a torn write lands a prefix of its blocks on the media directly.
//
// Guarantees: the wrapped device only ever holds data that a successful
// flush() covered, plus the torn prefix of the one write during which the
// power failed. A flush that returned 0 before the cut is durable.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hsio/block_device.h"

namespace hybridstore {

class FaultInjector;

class FaultInjectionDevice final : public BlockDevice {
 public:
  FaultInjectionDevice(std::unique_ptr<BlockDevice> media, std::shared_ptr<FaultInjector> injector);
  ~FaultInjectionDevice() override;

  uint64_t size() const override { return media_->size(); }
  uint32_t alignment() const override { return media_->alignment(); }
  std::string backend() const override { return "fault-injection+" + media_->backend(); }
  std::string path() const override { return media_->path(); }
  Media media() const override { return media_->media(); }

  int read(uint64_t offset, char* buf, uint64_t len) override;
  int write(uint64_t offset, const char* buf, uint64_t len) override;
  int flush() override;
  // Advisory, and not durable before a flush on a real cache either: ignored.
  int discard(uint64_t offset, uint64_t len) override;

  // Writes waiting in the cache (tests).
  size_t cached_writes() const;

  // ---- called by the injector at the cut (its mutex held, never ours)
  void drop_cache();

 private:
  struct CachedWrite {
    uint64_t offset;
    AlignedBuffer data;
  };
  // Lands a prefix of the write on the media (the torn write).
  void land_torn(uint64_t offset, const char* buf, uint64_t len);

  std::unique_ptr<BlockDevice> media_;
  std::shared_ptr<FaultInjector> injector_;
  mutable std::mutex mutex_;  // guards cache_ and orders media access
  std::vector<CachedWrite> cache_;  // issue order: later writes win on overlap
};

}  // namespace hybridstore
