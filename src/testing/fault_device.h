// A BlockDevice decorator that emulates a volatile write cache in front of
// the real device, for power-cut and EIO injection (fault_injection.h has the
// model).
//
// Writes are kept in memory, in order, until a flush() covers them; only then
// do they reach the wrapped device (which stands for the media). Reads see
// cached writes, as with a real cache. write_durable() is FUA: it goes to the
// media at once and leaves the rest of the cache alone. At a power cut the
// cache is dropped, or destaged block by block at random; a torn write lands
// a prefix of its blocks on the media directly.
//
// Guarantees: the wrapped device only ever holds data that a successful
// flush() covered, FUA writes, the blocks a random cut kept, plus the torn
// prefix of the one write during which the power failed. A flush or a FUA
// write that returned 0 before the cut is durable.
#pragma once
#include <memory>
#include <mutex>
#include <random>
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
  // FUA: only this write is made durable (fault_injection.h).
  int write_durable(uint64_t offset, const char* buf, uint64_t len) override;
  // Advisory, and not durable before a flush on a real cache either: ignored.
  int discard(uint64_t offset, uint64_t len) override;

  // Writes waiting in the cache (tests).
  size_t cached_writes() const;

  // ---- called by the injector at the cut (its mutex held, never ours)
  // Empties the cache. With `keep`, each 4 KiB block of each cached write
  // first reaches the media with probability 1/2, in issue order. Returns
  // the number of blocks that did.
  uint64_t drop_cache(std::mt19937_64* keep);

 private:
  struct CachedWrite {
    uint64_t offset;
    AlignedBuffer data;
  };
  // The write on the power-cut clock: 0 to go on, or -EIO when the injector
  // fails it or the power failed during it (torn if asked).
  int count_write(uint64_t offset, const char* buf, uint64_t len);
  // Lands a prefix of the write on the media (the torn write).
  void land_torn(uint64_t offset, const char* buf, uint64_t len);
  // Cuts [offset, offset + len) out of the cached writes: newer bytes reached
  // the media there, and an older cached write must not land over them.
  void forget_cached_range(uint64_t offset, uint64_t len);

  std::unique_ptr<BlockDevice> media_;
  std::shared_ptr<FaultInjector> injector_;
  mutable std::mutex mutex_;  // guards cache_ and orders media access
  std::vector<CachedWrite> cache_;  // issue order: later writes win on overlap
};

}  // namespace hybridstore
