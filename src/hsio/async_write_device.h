// Writes that run while the caller goes on.
//
// A transaction's large writes to new space are most of its time when the
// caller waits for them: with 16 sequential 4 MiB writes queued by one
// thread, each waited for its own write before the next was even prepared,
// and the device never had more than one of them (docs/benchmarks.md). This
// wrapper hands write_many_async() batches to a few threads that write them
// through the device below, so the caller's next transaction is prepared
// while the device works, and several writes are on the device at once.
//
// Everything else still sees the device as if each write had completed when
// it was started: a read, or a write, that overlaps a write still in flight
// waits for it. So what a transaction wrote is what a read of that range
// returns as soon as the transaction is visible, even before its data is on
// the device. flush() covers completed writes only (as any device's does):
// whoever needs a write durable waits for its done() first (the store's
// committer does, before its flush).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "hsio/forwarding_device.h"

namespace hybridstore {

class AsyncWriteDevice final : public ForwardingBlockDevice {
 public:
  // `threads` >= 1 writers.
  AsyncWriteDevice(std::unique_ptr<BlockDevice> inner, int threads);
  // Waits for every write started, then stops the threads.
  ~AsyncWriteDevice() override;

  int read(uint64_t offset, char* buf, uint64_t len) override;
  int read_many(const std::vector<ReadIo>& ios) override;
  int write(uint64_t offset, const char* buf, uint64_t len) override;
  int write_many(const std::vector<WriteIo>& ios) override;
  void write_many_async(std::vector<WriteIo> ios, WriteDone done) override;
  int write_durable(uint64_t offset, const char* buf, uint64_t len) override;
  int discard(uint64_t offset, uint64_t len) override;

  // Blocks until every write started so far is done.
  void drain();
  // Batches started and not yet done (tests).
  size_t in_flight() const;

 private:
  struct Job {
    uint64_t id;
    std::vector<WriteIo> ios;
    WriteDone done;
  };
  void run();
  // Waits until no write in flight overlaps [offset, offset+len).
  void wait_clear(uint64_t offset, uint64_t len);
  bool overlaps_locked(uint64_t offset, uint64_t len) const;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // a job queued / stopping
  std::condition_variable done_cv_;  // a job finished
  std::deque<Job> queue_;
  // Ranges of the writes in flight (queued or running): start -> (end, job id).
  std::multimap<uint64_t, std::pair<uint64_t, uint64_t>> ranges_;
  uint64_t longest_ = 0;      // the longest range ever in flight, bounds the overlap search
  uint64_t next_id_ = 1;
  size_t jobs_in_flight_ = 0;
  std::atomic<size_t> writes_in_flight_{0};  // lock-free check for the common case: none
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace hybridstore
