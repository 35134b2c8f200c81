// The io_uring device: one ring per device and a reaper thread completing
// its requests, so many threads can have I/O in flight at once.
#include <liburing.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "hscommon/log.h"
#include "hsio/file_device.h"

namespace hybridstore {
namespace file_io {

namespace {

// One ring per device, at most `depth` I/Os on it at once (so completions
// never overflow the completion queue). Submitters queue their batch and hand
// the ring as many of its I/Os as there are free slots, then sleep until the
// batch is done; the reaper thread takes completions, continues short
// transfers, and hands freed slots to the queued batches, one bounded turn
// each, so several threads with large batches share the ring. The submission
// lock is only ever held to fill and submit SQEs, never while waiting.
class UringBlockDevice final : public FileDeviceBase {
 public:
  UringBlockDevice(int fd, std::string path, uint64_t size, bool direct, uint64_t max_transfer, unsigned depth)
      : FileDeviceBase(fd, std::move(path), size, direct, max_transfer), depth_(std::max(depth, 1u)) {}

  // Sets up the ring and the reaper; returns -errno when io_uring is unusable.
  int start() {
    int r = io_uring_queue_init(depth_, &ring_, 0);
    if (r < 0) return r;
    depth_ = std::min(depth_, ring_.sq.ring_entries);
    turn_ = std::max(1u, depth_ / 4);
    started_ = true;
    reaper_ = std::thread([this] { reap(); });
    return 0;
  }

  ~UringBlockDevice() override {
    if (!started_) return;
    {
      // Every caller has returned, so the ring is idle and has room.
      std::lock_guard<std::mutex> l(mu_);
      io_uring_sqe* sqe = get_sqe_locked();
      if (sqe) {
        io_uring_prep_nop(sqe);
        io_uring_sqe_set_data(sqe, nullptr);  // tells the reaper to stop
      }
      for (int i = 0; io_uring_sq_ready(&ring_) > 0 && i < 1000; ++i)
        if (io_uring_submit(&ring_) < 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (!sqe) HS_ERROR("io_uring on {}: no room to stop the reaper", path_);
    }
    reaper_.join();
    io_uring_queue_exit(&ring_);
  }

  std::string backend() const override { return direct_ ? "uring+direct" : "uring"; }

 private:
  struct Batch;
  struct Op {
    Batch* batch;
    bool write;
    Span span;
    std::vector<iovec> scratch;  // the capped buffers of a forced short transfer
    unsigned retries = 0;        // -EAGAIN/-EINTR completions in a row
  };
  struct Batch {
    std::vector<Op> ops;
    size_t next = 0;  // first op not yet handed to the ring (under mu_)
    std::mutex m;
    std::condition_variable cv;
    size_t pending = 0;  // ops not yet finished (under m)
    int error = 0;       // first error (under m)
  };
  // A completion saying "try again" this many times in a row sends the rest
  // of that I/O through pread/pwrite instead.
  static constexpr unsigned kMaxRetries = 16;

  int run(bool write, std::vector<Span> spans) override {
    // One contiguous I/O gains nothing from the ring: the caller would only
    // sleep until the reaper wakes it. Done in the caller's thread it costs
    // two thread switches less (a third of a 4 KiB random read's CPU here);
    // callers that want many I/Os in flight are the batches, which still go
    // through the ring.
    if (spans.size() == 1) return transfer_sync(fd_, write, &spans[0], max_transfer_, &device_ios_, &short_transfers_);
    Batch b;
    b.ops.reserve(spans.size());
    for (auto& s : spans) b.ops.push_back(Op{&b, write, std::move(s), {}, 0});
    b.pending = b.ops.size();
    {
      std::lock_guard<std::mutex> l(mu_);
      waiting_.push_back(&b);
      pump_locked();
    }
    std::unique_lock<std::mutex> l(b.m);
    // Completions wake us. The timeout only matters when the kernel refused
    // a submission (out of resources) with nothing else in flight, so that no
    // completion will come to submit the rest: then retry it from here.
    while (!b.cv.wait_for(l, std::chrono::milliseconds(100), [&] { return b.pending == 0; })) {
      l.unlock();
      {
        std::lock_guard<std::mutex> g(mu_);
        if (io_uring_sq_ready(&ring_) > 0) submit_locked();
        pump_locked();
      }
      l.lock();
    }
    return b.error;
  }

  io_uring_sqe* get_sqe_locked() {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (!sqe) {
      // Cannot happen while in-flight I/Os stay within the SQ size; should
      // the kernel lag in consuming entries, hand them over and retry.
      io_uring_submit(&ring_);
      sqe = io_uring_get_sqe(&ring_);
    }
    return sqe;
  }

  bool prep_locked(Op* op) {
    io_uring_sqe* sqe = get_sqe_locked();
    if (!sqe) return false;
    auto [v, n] = op->span.next(max_transfer_, &op->scratch);
    if (n == 1) {
      if (op->write)
        io_uring_prep_write(sqe, fd_, v->iov_base, static_cast<unsigned>(v->iov_len), op->span.offset);
      else
        io_uring_prep_read(sqe, fd_, v->iov_base, static_cast<unsigned>(v->iov_len), op->span.offset);
    } else if (op->write) {
      io_uring_prep_writev(sqe, fd_, v, n, op->span.offset);
    } else {
      io_uring_prep_readv(sqe, fd_, v, n, op->span.offset);
    }
    io_uring_sqe_set_data(sqe, op);
    device_ios_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  void submit_locked() {
    int r = io_uring_submit(&ring_);
    // Entries the kernel did not take stay in the SQ; the next submission
    // (another batch, the reaper, or a waiting submitter) hands them over.
    if (r < 0 && r != -EAGAIN && r != -EBUSY && r != -EINTR)
      HS_ERROR("io_uring_submit on {} failed: {}", path_, strerror(-r));
  }

  // Fills free slots: continued I/Os first (they keep the slot they had),
  // then queued batches, a bounded turn each.
  void pump_locked() {
    bool added = false;
    while (!continued_.empty()) {
      if (!prep_locked(continued_.front())) break;
      continued_.pop_front();
      added = true;
    }
    bool stalled = !continued_.empty();
    while (!stalled && in_flight_ < depth_ && !waiting_.empty()) {
      Batch* b = waiting_.front();
      waiting_.pop_front();
      for (unsigned k = 0; k < turn_ && in_flight_ < depth_ && b->next < b->ops.size(); ++k) {
        if (!prep_locked(&b->ops[b->next])) {
          stalled = true;
          break;
        }
        ++b->next;
        ++in_flight_;
        added = true;
      }
      if (b->next < b->ops.size()) waiting_.push_back(b);
    }
    if (in_flight_ > max_in_flight_.load(std::memory_order_relaxed)) max_in_flight_.store(in_flight_);
    if (added) submit_locked();
  }

  void finish(Op* op, int err) {
    Batch* b = op->batch;
    // Notified under the lock: the submitter cannot return (destroying the
    // batch) before we let go of it.
    std::lock_guard<std::mutex> l(b->m);
    if (err && !b->error) b->error = err;
    if (--b->pending == 0) b->cv.notify_all();
  }

  void reap() {
    std::vector<std::pair<Op*, int>> cqes, done;
    std::vector<Op*> again, stuck;
    for (;;) {
      io_uring_cqe* cqe = nullptr;
      int r = io_uring_wait_cqe(&ring_, &cqe);
      if (r == -EINTR) continue;
      if (r < 0) {
        HS_ERROR("io_uring_wait_cqe on {} failed: {}", path_, strerror(-r));
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      bool stop = false;
      unsigned head, seen = 0;
      cqes.clear();
      io_uring_for_each_cqe(&ring_, head, cqe) {
        ++seen;
        cqes.emplace_back(static_cast<Op*>(io_uring_cqe_get_data(cqe)), cqe->res);
      }
      io_uring_cq_advance(&ring_, seen);
      done.clear();
      again.clear();
      stuck.clear();
      {
        // The ops are read under the lock their submitter filled them
        // under: the kernel orders the two threads, but only the lock says
        // so to the language (and to ThreadSanitizer).
        std::lock_guard<std::mutex> l(mu_);
        for (auto [op, res] : cqes) {
          if (!op) {
            stop = true;
          } else if (res == -EAGAIN || res == -EINTR) {
            if (++op->retries <= kMaxRetries)
              again.push_back(op);
            else
              stuck.push_back(op);  // keeps saying "again": finished synchronously below
          } else if (res < 0) {
            done.emplace_back(op, res);
          } else if (res == 0) {
            done.emplace_back(op, -EIO);  // past the end of the device
          } else if (static_cast<uint64_t>(res) >= op->span.left) {
            done.emplace_back(op, 0);
          } else {
            short_transfers_.fetch_add(1, std::memory_order_relaxed);
            op->retries = 0;
            op->span.advance(static_cast<uint64_t>(res));
            again.push_back(op);
          }
        }
        in_flight_ -= static_cast<unsigned>(done.size());
        continued_.insert(continued_.end(), again.begin(), again.end());
        pump_locked();
      }
      if (!stuck.empty()) {
        for (Op* op : stuck)
          done.emplace_back(op, transfer_sync(fd_, op->write, &op->span, max_transfer_, &device_ios_,
                                              &short_transfers_));
        std::lock_guard<std::mutex> l(mu_);
        in_flight_ -= static_cast<unsigned>(stuck.size());
        pump_locked();
      }
      for (auto& [op, err] : done) finish(op, err);
      if (stop) return;
    }
  }

  io_uring ring_{};
  bool started_ = false;
  unsigned depth_;
  unsigned turn_ = 1;
  std::mutex mu_;              // the SQ side of the ring and everything below
  unsigned in_flight_ = 0;     // I/Os holding a slot: prepared, submitted or being continued
  std::deque<Batch*> waiting_; // batches with I/Os not yet handed to the ring
  std::deque<Op*> continued_;  // I/Os to resubmit (short transfer, -EAGAIN); they keep their slot
  std::thread reaper_;
};

}  // namespace

int start_uring_device(int fd, std::string path, uint64_t size, bool direct, uint64_t max_transfer,
                       unsigned depth, std::unique_ptr<BlockDevice>* out) {
  auto dev = std::make_unique<UringBlockDevice>(fd, std::move(path), size, direct, max_transfer, depth);
  const int r = dev->start();
  *out = std::move(dev);
  return r;
}

}  // namespace file_io

bool uring_available() {
  static const bool ok = [] {
    io_uring ring;
    if (io_uring_queue_init(4, &ring, 0) < 0) return false;
    io_uring_queue_exit(&ring);
    return true;
  }();
  return ok;
}

}  // namespace hybridstore
