#include "hsio/block_device.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <liburing.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "hscommon/log.h"

namespace hybridstore {

namespace {

// Large I/O buffers are recycled: a fresh multi-megabyte allocation is an
// mmap whose every page faults on first touch, which costs more than the
// copy that fills it. Power-of-two size classes from 64 KiB, a bounded
// number of idle bytes kept.
class BufferPool {
 public:
  static constexpr size_t kMinPooled = 64 << 10;
  static constexpr size_t kMaxIdleBytes = 256ull << 20;

  static size_t class_size(size_t n) {
    size_t c = kMinPooled;
    while (c < n) c <<= 1;
    return c;
  }
  char* take(size_t cls) {
    std::lock_guard<std::mutex> l(mutex_);
    auto& v = free_[cls];
    if (v.empty()) return nullptr;
    char* p = v.back();
    v.pop_back();
    idle_ -= cls;
    return p;
  }
  bool give(char* p, size_t cls) {
    std::lock_guard<std::mutex> l(mutex_);
    if (idle_ + cls > kMaxIdleBytes) return false;
    free_[cls].push_back(p);
    idle_ += cls;
    return true;
  }

 private:
  std::mutex mutex_;
  std::map<size_t, std::vector<char*>> free_;
  size_t idle_ = 0;
};

BufferPool& buffer_pool() {
  static BufferPool* pool = new BufferPool;  // never destroyed: buffers may outlive statics
  return *pool;
}

}  // namespace

AlignedBuffer::AlignedBuffer(size_t size, size_t align, Fill fill) : size_(size) {
  size_t alloc = size ? (size + align - 1) / align * align : align;
  if (align <= 4096 && alloc >= BufferPool::kMinPooled) {
    alloc = BufferPool::class_size(alloc);
    data_ = buffer_pool().take(alloc);
  }
  if (!data_) {
    void* p = nullptr;
    if (posix_memalign(&p, std::max<size_t>(align, 4096), alloc) != 0) throw std::bad_alloc();
    data_ = static_cast<char*>(p);
  }
  capacity_ = alloc;
  if (fill == kZeroed) std::memset(data_, 0, alloc);
}

void AlignedBuffer::release() {
  if (data_ && !(capacity_ >= BufferPool::kMinPooled && buffer_pool().give(data_, capacity_))) free(data_);
  data_ = nullptr;
  size_ = capacity_ = 0;
}

AlignedBuffer::AlignedBuffer(AlignedBuffer&& o) noexcept
    : data_(o.data_), size_(o.size_), capacity_(o.capacity_) {
  o.data_ = nullptr;
  o.size_ = o.capacity_ = 0;
}
AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& o) noexcept {
  if (this != &o) {
    release();
    data_ = o.data_;
    size_ = o.size_;
    capacity_ = o.capacity_;
    o.data_ = nullptr;
    o.size_ = o.capacity_ = 0;
  }
  return *this;
}
AlignedBuffer::~AlignedBuffer() { release(); }

int BlockDevice::read_many(const std::vector<ReadIo>& ios) {
  for (const auto& io : ios) {
    int r = read(io.offset, io.buf, io.len);
    if (r < 0) return r;
  }
  return 0;
}

int BlockDevice::write_many(const std::vector<WriteIo>& ios) {
  for (const auto& io : ios) {
    int r = write(io.offset, io.buf, io.len);
    if (r < 0) return r;
  }
  return 0;
}

void BlockDevice::write_many_async(std::vector<WriteIo> ios, WriteDone done) { done(write_many(ios)); }

int BlockDevice::write_durable(uint64_t offset, const char* buf, uint64_t len) {
  if (int r = write(offset, buf, len); r < 0) return r;
  return flush();
}

bool parse_io_backend(const std::string& s, IoBackend* out) {
  if (s == "auto") *out = IoBackend::kAuto;
  else if (s == "uring" || s == "io_uring") *out = IoBackend::kUring;
  else if (s == "posix" || s == "pio") *out = IoBackend::kPosix;
  else return false;
  return true;
}

namespace {

// A single read or write handed to the kernel carries at most this much: the
// kernel moves at most ~2 GiB per call, and io_uring's length is 32 bits.
constexpr uint64_t kMaxIoBytes = 1ull << 30;
// preadv/pwritev and IORING_OP_READV/WRITEV take at most this many buffers.
constexpr size_t kMaxIov = IOV_MAX;

// One device range [offset, offset + len) moved in one read or write, into
// or out of the caller's buffers (several when the caller's requests are
// physically adjacent), and how far the transfer has come: the kernel may
// move less than asked (a short transfer), and the rest goes in another call.
struct Span {
  uint64_t offset = 0;
  uint64_t left = 0;       // bytes not yet transferred
  std::vector<iovec> iov;  // the buffers still to fill or drain, from `pos`
  size_t pos = 0;

  void advance(uint64_t n) {
    offset += n;
    left -= n;
    while (n > 0) {
      iovec& v = iov[pos];
      if (n >= v.iov_len) {
        n -= v.iov_len;
        ++pos;
      } else {
        v.iov_base = static_cast<char*>(v.iov_base) + n;
        v.iov_len -= n;
        n = 0;
      }
    }
  }
  // The buffers of the next call: all that is left, or with a cap (tests'
  // forced short transfers) at most `cap` bytes of it, copied into *scratch.
  std::pair<const iovec*, unsigned> next(uint64_t cap, std::vector<iovec>* scratch) const {
    if (cap == 0 || left <= cap) return {iov.data() + pos, static_cast<unsigned>(iov.size() - pos)};
    scratch->clear();
    for (size_t i = pos; cap > 0; ++i) {
      iovec v = iov[i];
      v.iov_len = std::min<uint64_t>(v.iov_len, cap);
      cap -= v.iov_len;
      scratch->push_back(v);
    }
    return {scratch->data(), static_cast<unsigned>(scratch->size())};
  }
};

// The I/Os that carry out a batch of requests: sorted by device offset,
// requests whose ranges follow each other on the device joined into one
// vectored I/O (a fragmented object is often contiguous on the device),
// buffers that also follow each other in memory joined into one iovec, and
// requests above kMaxIoBytes cut. Overlapping requests are never joined.
template <typename Io>
std::vector<Span> plan_spans(const std::vector<Io>& ios) {
  std::vector<const Io*> sorted;
  sorted.reserve(ios.size());
  for (const auto& io : ios)
    if (io.len > 0) sorted.push_back(&io);
  std::stable_sort(sorted.begin(), sorted.end(), [](const Io* a, const Io* b) { return a->offset < b->offset; });
  std::vector<Span> spans;
  for (const Io* io : sorted) {
    for (uint64_t done = 0; done < io->len;) {
      uint64_t off = io->offset + done;
      char* buf = const_cast<char*>(static_cast<const char*>(io->buf)) + done;
      uint64_t n = std::min(kMaxIoBytes, io->len - done);
      Span* s = spans.empty() ? nullptr : &spans.back();
      bool joins = s && s->offset + s->left == off && s->left + n <= kMaxIoBytes;
      bool same_iov = joins && static_cast<char*>(s->iov.back().iov_base) + s->iov.back().iov_len == buf;
      if (joins && (same_iov || s->iov.size() < kMaxIov)) {
        if (same_iov)
          s->iov.back().iov_len += n;
        else
          s->iov.push_back({buf, n});
        s->left += n;
      } else {
        Span sp;
        sp.offset = off;
        sp.left = n;
        sp.iov.push_back({buf, n});
        spans.push_back(std::move(sp));
      }
      done += n;
    }
  }
  return spans;
}

// Carries out a span with pread/pwrite (preadv/pwritev for several buffers),
// continuing short transfers. 0 or -errno.
int transfer_sync(int fd, bool write, Span* s, uint64_t cap, std::atomic<uint64_t>* calls,
                  std::atomic<uint64_t>* shorts) {
  std::vector<iovec> scratch;
  while (s->left > 0) {
    auto [v, n] = s->next(cap, &scratch);
    const off_t off = static_cast<off_t>(s->offset);
    ssize_t r;
    if (n == 1)
      r = write ? ::pwrite(fd, v->iov_base, v->iov_len, off) : ::pread(fd, v->iov_base, v->iov_len, off);
    else
      r = write ? ::pwritev(fd, v, static_cast<int>(n), off) : ::preadv(fd, v, static_cast<int>(n), off);
    calls->fetch_add(1, std::memory_order_relaxed);
    if (r < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (r == 0) return -EIO;  // past the end of the device
    if (static_cast<uint64_t>(r) < s->left) shorts->fetch_add(1, std::memory_order_relaxed);
    s->advance(static_cast<uint64_t>(r));
  }
  return 0;
}

// Shared by both file-backed devices: the descriptor, its size and alignment.
class FileDeviceBase : public BlockDevice {
 public:
  FileDeviceBase(int fd, std::string path, uint64_t size, bool direct, uint64_t max_transfer)
      : fd_(fd), path_(std::move(path)), size_(size), direct_(direct), max_transfer_(max_transfer),
        media_(media_of(fd)) {}
  Media media() const override { return media_; }
  ~FileDeviceBase() override {
    if (fd_ >= 0) ::close(fd_);
  }
  uint64_t size() const override { return size_; }
  uint32_t alignment() const override { return direct_ ? 4096 : 1; }
  std::string path() const override { return path_; }
  int flush() override {
    if (::fdatasync(fd_) < 0) return -errno;
    return 0;
  }
  int write_durable(uint64_t offset, const char* buf, uint64_t len) override {
    // A kernel without RWF_DSYNC (before 4.7) refuses the flag; the debug
    // transfer cap wants the generic path, which splits transfers.
    if (max_transfer_ != 0 || !dsync_writes_.load(std::memory_order_relaxed))
      return BlockDevice::write_durable(offset, buf, len);
    if (offset > size_ || len > size_ - offset) return -EINVAL;
    if (len == 0) return flush();
    requests_.fetch_add(1, std::memory_order_relaxed);
    uint64_t done = 0;
    while (done < len) {
      iovec v{const_cast<char*>(buf) + done, len - done};
      ssize_t r = ::pwritev2(fd_, &v, 1, static_cast<off_t>(offset + done), RWF_DSYNC);
      device_ios_.fetch_add(1, std::memory_order_relaxed);
      if (r < 0) {
        if (errno == EINTR) continue;
        if ((errno == EOPNOTSUPP || errno == ENOSYS) && done == 0) {
          dsync_writes_.store(false, std::memory_order_relaxed);
          requests_.fetch_sub(1, std::memory_order_relaxed);
          return BlockDevice::write_durable(offset, buf, len);
        }
        return -errno;
      }
      if (r == 0) return -EIO;
      if (static_cast<uint64_t>(r) < len - done) short_transfers_.fetch_add(1, std::memory_order_relaxed);
      done += static_cast<uint64_t>(r);
    }
    return 0;
  }
  int discard(uint64_t offset, uint64_t len) override {
    // Punching a hole gives the space back to the filesystem for sparse files;
    // block devices ignore it. Failure is harmless: discard is advisory.
    (void)::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                      static_cast<off_t>(len));
    return 0;
  }
  BlockDeviceStats io_stats() const override {
    BlockDeviceStats s;
    s.requests = requests_.load();
    s.device_ios = device_ios_.load();
    s.short_transfers = short_transfers_.load();
    s.max_in_flight = max_in_flight_.load();
    return s;
  }

  int read(uint64_t offset, char* buf, uint64_t len) override {
    return read_many({ReadIo{offset, buf, len}});
  }
  int write(uint64_t offset, const char* buf, uint64_t len) override {
    return write_many({WriteIo{offset, buf, len}});
  }
  int read_many(const std::vector<ReadIo>& ios) override { return run_checked(false, ios); }
  int write_many(const std::vector<WriteIo>& ios) override { return run_checked(true, ios); }

 protected:
  // Carries out every span; returns when all are done (first error wins).
  virtual int run(bool write, std::vector<Span> spans) = 0;

  template <typename Io>
  int run_checked(bool write, const std::vector<Io>& ios) {
    for (const auto& io : ios)
      if (io.offset > size_ || io.len > size_ - io.offset) return -EINVAL;
    requests_.fetch_add(ios.size(), std::memory_order_relaxed);
    if (!write) return run_all(false, ios);
    // Writes carried out together land in any order. A write overlapping an
    // earlier one of the call starts a new wave; waves go one after another,
    // so the later write's bytes win. (Callers rarely overlap: one wave.)
    std::vector<Io> wave;
    std::map<uint64_t, uint64_t> taken;  // the wave's ranges, begin -> end
    for (const auto& io : ios) {
      if (io.len == 0) continue;
      auto it = taken.upper_bound(io.offset);
      bool hit = it != taken.end() && it->first < io.offset + io.len;
      if (!hit && it != taken.begin()) hit = std::prev(it)->second > io.offset;
      if (hit) {
        if (int r = run_all(true, wave); r < 0) return r;
        wave.clear();
        taken.clear();
      }
      wave.push_back(io);
      taken.emplace(io.offset, io.offset + io.len);
    }
    return run_all(true, wave);
  }
  template <typename Io>
  int run_all(bool write, const std::vector<Io>& ios) {
    std::vector<Span> spans = plan_spans(ios);
    if (spans.empty()) return 0;
    return run(write, std::move(spans));
  }

  int fd_;
  std::string path_;
  uint64_t size_;
  bool direct_;
  uint64_t max_transfer_;  // DeviceOpenOptions::debug_max_transfer
  Media media_;
  std::atomic<uint64_t> requests_{0}, device_ios_{0}, short_transfers_{0}, max_in_flight_{0};
  std::atomic<bool> dsync_writes_{true};  // false once the kernel refused RWF_DSYNC

};

class PosixBlockDevice final : public FileDeviceBase {
 public:
  using FileDeviceBase::FileDeviceBase;
  std::string backend() const override { return direct_ ? "posix+direct" : "posix"; }

 protected:
  int run(bool write, std::vector<Span> spans) override {
    max_in_flight_.store(std::max<uint64_t>(max_in_flight_.load(), 1));
    for (auto& s : spans)
      if (int r = transfer_sync(fd_, write, &s, max_transfer_, &device_ios_, &short_transfers_); r < 0) return r;
    return 0;
  }
};

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

int device_size(int fd, uint64_t* size) {
  struct stat st;
  if (fstat(fd, &st) < 0) return -errno;
  if (S_ISBLK(st.st_mode)) {
    if (ioctl(fd, BLKGETSIZE64, size) < 0) return -errno;
    return 0;
  }
  if (!S_ISREG(st.st_mode)) return -ENOTBLK;
  *size = static_cast<uint64_t>(st.st_size);
  return 0;
}

}  // namespace

bool uring_available() {
  static const bool ok = [] {
    io_uring ring;
    if (io_uring_queue_init(4, &ring, 0) < 0) return false;
    io_uring_queue_exit(&ring);
    return true;
  }();
  return ok;
}

bool parse_file_layout(const std::string& s, FileLayout* out) {
  if (s == "none" || s == "sparse") *out = FileLayout::kSparse;
  else if (s == "fallocate") *out = FileLayout::kFallocate;
  else if (s == "zero") *out = FileLayout::kZeros;
  else return false;
  return true;
}

namespace {

// A sparse or fallocated file makes the filesystem allocate or convert
// blocks on their first write, and the next fdatasync then commits that
// metadata too; written zeros leave later writes pure overwrites.
int lay_out_file(int fd, const std::string& path, uint64_t size, FileLayout layout) {
  if (layout == FileLayout::kSparse || size == 0) return 0;
  if (layout == FileLayout::kFallocate)
    return ::fallocate(fd, 0, 0, static_cast<off_t>(size)) < 0 ? -errno : 0;
  constexpr uint64_t kChunk = 4 << 20;
  AlignedBuffer zeros(kChunk, 4096);
  // O_DIRECT where the filesystem takes it: gigabytes of zeros copied
  // through the page cache cost more CPU than the disk time they take.
  int dfd = size % 4096 == 0 ? ::open(path.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC) : -1;
  const int wfd = dfd >= 0 ? dfd : fd;
  const uint64_t report_every = std::max<uint64_t>(size / 4, 1ull << 30);
  uint64_t next_report = report_every;
  const auto t0 = std::chrono::steady_clock::now();
  for (uint64_t off = 0; off < size;) {
    ssize_t n = ::pwrite(wfd, zeros.data(), std::min(kChunk, size - off), static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = n < 0 ? -errno : -EIO;
      if (dfd >= 0) ::close(dfd);
      return e;
    }
    off += static_cast<uint64_t>(n);
    if (off >= next_report && off < size) {
      // Buffered: keep the page cache from filling with the file's zeros.
      if (dfd < 0) (void)::fdatasync(fd);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      HS_INFO("laying out {}: {} of {} MiB written with zeros ({:.0f} s)", path, off >> 20, size >> 20, s);
      next_report += report_every;
    }
  }
  if (dfd >= 0) ::close(dfd);
  return ::fdatasync(fd) < 0 ? -errno : 0;
}

}  // namespace

const char* media_name(Media m) {
  switch (m) {
    case Media::kSolidState: return "solid-state";
    case Media::kRotational: return "rotational";
    case Media::kUnknown: break;
  }
  return "unknown";
}

std::string sys_block_dir_of(uint64_t dev) {
  namespace fs = std::filesystem;
  const dev_t d = static_cast<dev_t>(dev);
  std::error_code ec;
  fs::path p = fs::canonical(fmt::format("/sys/dev/block/{}:{}", major(d), minor(d)), ec);
  if (ec) return {};
  // A partition has no queue of its own: its disk's answers for it.
  if (!fs::exists(p / "queue", ec) && fs::exists(p / "partition", ec)) p = p.parent_path();
  return p.string();
}

Media media_of(int fd) {
  struct stat st;
  if (::fstat(fd, &st) < 0) return Media::kUnknown;
  const std::string dir = sys_block_dir_of(S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev);
  if (dir.empty()) return Media::kUnknown;
  std::ifstream f(dir + "/queue/rotational");
  std::string v;
  if (!std::getline(f, v)) return Media::kUnknown;
  if (v == "1") return Media::kRotational;
  if (v == "0") return Media::kSolidState;
  return Media::kUnknown;
}

std::unique_ptr<BlockDevice> open_block_device(const std::string& path,
                                               const DeviceOpenOptions& opts,
                                               std::string* error) {
  struct stat st;
  if (::stat(path.c_str(), &st) < 0) {
    if (errno != ENOENT || !opts.create) {
      *error = fmt::format("cannot open device {}: {}", path, strerror(errno));
      return nullptr;
    }
    int cfd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (cfd < 0) {
      *error = fmt::format("cannot create device file {}: {}", path, strerror(errno));
      return nullptr;
    }
    if (::ftruncate(cfd, static_cast<off_t>(opts.create_size)) < 0) {
      *error = fmt::format("cannot size device file {} to {} bytes: {}", path, opts.create_size,
                           strerror(errno));
      ::close(cfd);
      ::unlink(path.c_str());
      return nullptr;
    }
    if (int r = lay_out_file(cfd, path, opts.create_size, opts.create_layout); r < 0) {
      *error = fmt::format("cannot lay out device file {} ({} bytes): {}", path, opts.create_size, strerror(-r));
      ::close(cfd);
      ::unlink(path.c_str());
      return nullptr;
    }
    ::fsync(cfd);
    ::close(cfd);
  }
  int flags = O_RDWR | O_CLOEXEC;
  bool direct = opts.direct_io;
  int fd = ::open(path.c_str(), flags | (direct ? O_DIRECT : 0));
  if (fd < 0 && direct && errno == EINVAL) {
    direct = false;  // tmpfs and some overlays refuse O_DIRECT
    fd = ::open(path.c_str(), flags);
  }
  if (fd < 0) {
    *error = fmt::format("cannot open device {}: {}", path, strerror(errno));
    return nullptr;
  }
  uint64_t size = 0;
  if (int r = device_size(fd, &size); r < 0) {
    *error = fmt::format("device {} is neither a regular file nor a block device: {}", path,
                         strerror(-r));
    ::close(fd);
    return nullptr;
  }
  bool want_uring = opts.backend != IoBackend::kPosix;
  if (want_uring) {
    auto dev = std::make_unique<UringBlockDevice>(fd, path, size, direct, opts.debug_max_transfer, opts.uring_depth);
    int r = dev->start();
    if (r == 0) return dev;
    if (opts.backend == IoBackend::kUring) {
      *error = fmt::format("io_uring requested for {} but unavailable: {}", path, strerror(-r));
      return nullptr;  // the device closes fd
    }
    fd = ::dup(fd);  // the failed device closes its copy
    if (fd < 0) {
      *error = fmt::format("cannot reopen device {}: {}", path, strerror(errno));
      return nullptr;
    }
    dev.reset();
    HS_INFO("io_uring unavailable ({}), using pread/pwrite for {}", strerror(-r), path);
  }
  return std::make_unique<PosixBlockDevice>(fd, path, size, direct, opts.debug_max_transfer);
}

}  // namespace hybridstore
