#include "testing/fault_device.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "hscommon/log.h"
#include "testing/fault_injection.h"

namespace hybridstore {

namespace {
constexpr uint64_t kTearBlock = 4096;
}

FaultInjectionDevice::FaultInjectionDevice(std::unique_ptr<BlockDevice> media,
                                           std::shared_ptr<FaultInjector> injector)
    : media_(std::move(media)), injector_(std::move(injector)) {
  injector_->register_device(this);
}

FaultInjectionDevice::~FaultInjectionDevice() { injector_->unregister_device(this); }

int FaultInjectionDevice::read(uint64_t offset, char* buf, uint64_t len) {
  if (injector_->power_is_off()) return -EIO;
  std::lock_guard<std::mutex> l(mutex_);
  if (int r = media_->read(offset, buf, len); r < 0) return r;
  const uint64_t end = offset + len;
  for (const auto& w : cache_) {
    const uint64_t wend = w.offset + w.data.size();
    if (wend <= offset || w.offset >= end) continue;
    const uint64_t b = std::max(offset, w.offset), e = std::min(end, wend);
    std::memcpy(buf + (b - offset), w.data.data() + (b - w.offset), e - b);
  }
  return 0;
}

int FaultInjectionDevice::count_write(uint64_t offset, const char* buf, uint64_t len) {
  switch (injector_->on_device_write()) {
    case FaultInjector::Verdict::kFail:
      return -EIO;
    case FaultInjector::Verdict::kPowerCut:
      if (injector_->tear()) land_torn(offset, buf, len);
      return -EIO;
    case FaultInjector::Verdict::kProceed:
      break;
  }
  return 0;
}

int FaultInjectionDevice::write(uint64_t offset, const char* buf, uint64_t len) {
  if (int r = count_write(offset, buf, len); r < 0) return r;
  CachedWrite w{offset, AlignedBuffer(len, 4096, AlignedBuffer::kUninitialized)};
  std::memcpy(w.data.data(), buf, len);
  std::lock_guard<std::mutex> l(mutex_);
  // A write that raced with the cut is as lost as the cache it joined.
  if (injector_->power_is_off()) return -EIO;
  cache_.push_back(std::move(w));
  return 0;
}

int FaultInjectionDevice::write_durable(uint64_t offset, const char* buf, uint64_t len) {
  if (int r = count_write(offset, buf, len); r < 0) return r;
  // A durable write is also the device's durability request, so it counts
  // as a flush too: hybridstore_debug_eio_on_flush can fail it (and then it
  // wrote nothing), and flush numbers are the same as for write + flush.
  if (injector_->on_device_flush() != FaultInjector::Verdict::kProceed) return -EIO;
  std::lock_guard<std::mutex> l(mutex_);
  if (injector_->power_is_off()) return -EIO;
  forget_cached_range(offset, len);
  return media_->write_durable(offset, buf, len);
}

void FaultInjectionDevice::forget_cached_range(uint64_t offset, uint64_t len) {
  const uint64_t end = offset + len;
  std::vector<CachedWrite> kept;
  kept.reserve(cache_.size());
  auto keep_part = [&](const CachedWrite& w, uint64_t b, uint64_t e) {
    CachedWrite part{b, AlignedBuffer(e - b, 4096, AlignedBuffer::kUninitialized)};
    std::memcpy(part.data.data(), w.data.data() + (b - w.offset), e - b);
    kept.push_back(std::move(part));
  };
  for (auto& w : cache_) {
    const uint64_t wend = w.offset + w.data.size();
    if (wend <= offset || w.offset >= end) {
      kept.push_back(std::move(w));
      continue;
    }
    if (w.offset < offset) keep_part(w, w.offset, offset);
    if (wend > end) keep_part(w, end, wend);
  }
  cache_ = std::move(kept);
}

int FaultInjectionDevice::flush() {
  if (injector_->on_device_flush() != FaultInjector::Verdict::kProceed) return -EIO;
  std::lock_guard<std::mutex> l(mutex_);
  // A cut waits for this mutex, so a flush either completes before the cut
  // (and is durable) or starts after it and fails.
  if (injector_->power_is_off()) return -EIO;
  size_t done = 0;
  int r = 0;
  for (; done < cache_.size(); ++done) {
    const auto& w = cache_[done];
    if ((r = media_->write(w.offset, w.data.data(), w.data.size())) < 0) break;
  }
  cache_.erase(cache_.begin(), cache_.begin() + static_cast<long>(done));
  if (r < 0) return r;
  return media_->flush();
}

int FaultInjectionDevice::discard(uint64_t, uint64_t) {
  return injector_->power_is_off() ? -EIO : 0;
}

size_t FaultInjectionDevice::cached_writes() const {
  std::lock_guard<std::mutex> l(mutex_);
  return cache_.size();
}

uint64_t FaultInjectionDevice::drop_cache(std::mt19937_64* keep) {
  std::lock_guard<std::mutex> l(mutex_);
  uint64_t landed = 0;
  if (keep) {
    for (const auto& w : cache_) {
      for (uint64_t b = 0; b < w.data.size(); b += kTearBlock) {
        if ((*keep)() & 1) continue;
        const uint64_t n = std::min<uint64_t>(kTearBlock, w.data.size() - b);
        if (media_->write(w.offset + b, w.data.data() + b, n) < 0) {
          HS_WARN("fault injection: could not land a kept block on {}", media_->path());
          continue;
        }
        ++landed;
      }
    }
    if (landed && media_->flush() < 0) HS_WARN("fault injection: could not flush kept blocks on {}", media_->path());
  }
  cache_.clear();
  return landed;
}

void FaultInjectionDevice::land_torn(uint64_t offset, const char* buf, uint64_t len) {
  const uint64_t blocks = len / kTearBlock;
  uint64_t keep;
  if (blocks >= 2)
    keep = (1 + injector_->random_below(blocks - 1)) * kTearBlock;
  else
    keep = injector_->random_below(2) ? len : 0;
  if (keep == 0) return;
  std::lock_guard<std::mutex> l(mutex_);
  if (media_->write(offset, buf, keep) < 0 || media_->flush() < 0)
    HS_WARN("fault injection: could not land the torn write on {}", media_->path());
  HS_INFO("fault injection: torn write on {}: {} of {} bytes at {} reached the media", media_->path(), keep, len,
          offset);
}

}  // namespace hybridstore
