#include "hsio/async_write_device.h"

#include <algorithm>

namespace hybridstore {

AsyncWriteDevice::AsyncWriteDevice(std::unique_ptr<BlockDevice> inner, int threads)
    : ForwardingBlockDevice(std::move(inner), "async") {
  for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { run(); });
}

AsyncWriteDevice::~AsyncWriteDevice() {
  drain();
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void AsyncWriteDevice::run() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> l(mu_);
      work_cv_.wait(l, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    const int r = inner_->write_many(job.ios);
    // done() first: whoever waits for this write's range then also finds
    // its completion handled (the store counts the write for its flush).
    job.done(r);
    {
      std::lock_guard<std::mutex> l(mu_);
      for (const auto& io : job.ios) {
        auto range = ranges_.equal_range(io.offset);
        for (auto it = range.first; it != range.second; ++it)
          if (it->second.second == job.id) {
            ranges_.erase(it);
            break;
          }
      }
      --jobs_in_flight_;
      writes_in_flight_.fetch_sub(job.ios.size(), std::memory_order_release);
    }
    done_cv_.notify_all();
  }
}

void AsyncWriteDevice::write_many_async(std::vector<WriteIo> ios, WriteDone done) {
  if (ios.empty()) {
    done(0);
    return;
  }
  // A write overlapping one in flight lands after it (write_many's order).
  for (const auto& io : ios) wait_clear(io.offset, io.len);
  {
    std::lock_guard<std::mutex> l(mu_);
    const uint64_t id = next_id_++;
    for (const auto& io : ios) {
      ranges_.emplace(io.offset, std::make_pair(io.offset + io.len, id));
      longest_ = std::max(longest_, io.len);
    }
    writes_in_flight_.fetch_add(ios.size(), std::memory_order_release);
    ++jobs_in_flight_;
    queue_.push_back(Job{id, std::move(ios), std::move(done)});
  }
  work_cv_.notify_one();
}

bool AsyncWriteDevice::overlaps_locked(uint64_t offset, uint64_t len) const {
  const uint64_t end = offset + len;
  auto it = ranges_.lower_bound(offset > longest_ ? offset - longest_ : 0);
  for (; it != ranges_.end() && it->first < end; ++it)
    if (it->second.first > offset) return true;
  return false;
}

void AsyncWriteDevice::wait_clear(uint64_t offset, uint64_t len) {
  if (len == 0 || writes_in_flight_.load(std::memory_order_acquire) == 0) return;
  std::unique_lock<std::mutex> l(mu_);
  done_cv_.wait(l, [&] { return !overlaps_locked(offset, len); });
}

void AsyncWriteDevice::drain() {
  std::unique_lock<std::mutex> l(mu_);
  done_cv_.wait(l, [&] { return jobs_in_flight_ == 0; });
}

size_t AsyncWriteDevice::in_flight() const {
  std::lock_guard<std::mutex> l(mu_);
  return jobs_in_flight_;
}

int AsyncWriteDevice::read(uint64_t offset, char* buf, uint64_t len) {
  wait_clear(offset, len);
  return inner_->read(offset, buf, len);
}

int AsyncWriteDevice::read_many(const std::vector<ReadIo>& ios) {
  for (const auto& io : ios) wait_clear(io.offset, io.len);
  return inner_->read_many(ios);
}

int AsyncWriteDevice::write(uint64_t offset, const char* buf, uint64_t len) {
  wait_clear(offset, len);
  return inner_->write(offset, buf, len);
}

int AsyncWriteDevice::write_many(const std::vector<WriteIo>& ios) {
  for (const auto& io : ios) wait_clear(io.offset, io.len);
  return inner_->write_many(ios);
}

int AsyncWriteDevice::write_durable(uint64_t offset, const char* buf, uint64_t len) {
  wait_clear(offset, len);
  return inner_->write_durable(offset, buf, len);
}

int AsyncWriteDevice::discard(uint64_t offset, uint64_t len) {
  wait_clear(offset, len);
  return inner_->discard(offset, len);
}

}  // namespace hybridstore
