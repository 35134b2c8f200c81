#include "hybridstore/io/block_device.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <liburing.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "hybridstore/common/log.h"

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

bool parse_io_backend(const std::string& s, IoBackend* out) {
  if (s == "auto") *out = IoBackend::kAuto;
  else if (s == "uring" || s == "io_uring") *out = IoBackend::kUring;
  else if (s == "posix" || s == "pio") *out = IoBackend::kPosix;
  else return false;
  return true;
}

namespace {

int full_pread(int fd, char* buf, uint64_t len, uint64_t off) {
  while (len > 0) {
    ssize_t r = ::pread(fd, buf, len, static_cast<off_t>(off));
    if (r < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (r == 0) return -EIO;  // past the end of the device
    buf += r;
    len -= static_cast<uint64_t>(r);
    off += static_cast<uint64_t>(r);
  }
  return 0;
}

int full_pwrite(int fd, const char* buf, uint64_t len, uint64_t off) {
  while (len > 0) {
    ssize_t r = ::pwrite(fd, buf, len, static_cast<off_t>(off));
    if (r < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (r == 0) return -EIO;
    buf += r;
    len -= static_cast<uint64_t>(r);
    off += static_cast<uint64_t>(r);
  }
  return 0;
}

// Shared by both file-backed devices: the descriptor, its size and alignment.
class FileDeviceBase : public BlockDevice {
 public:
  FileDeviceBase(int fd, std::string path, uint64_t size, bool direct)
      : fd_(fd), path_(std::move(path)), size_(size), direct_(direct) {}
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
  int discard(uint64_t offset, uint64_t len) override {
    // Punching a hole gives the space back to the filesystem for sparse files;
    // block devices ignore it. Failure is harmless: discard is advisory.
    (void)::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                      static_cast<off_t>(len));
    return 0;
  }

 protected:
  int check_range(uint64_t offset, uint64_t len) const {
    if (offset > size_ || len > size_ - offset) return -EINVAL;
    return 0;
  }
  int fd_;
  std::string path_;
  uint64_t size_;
  bool direct_;
};

class PosixBlockDevice final : public FileDeviceBase {
 public:
  using FileDeviceBase::FileDeviceBase;
  std::string backend() const override { return direct_ ? "posix+direct" : "posix"; }
  int read(uint64_t offset, char* buf, uint64_t len) override {
    if (int r = check_range(offset, len)) return r;
    return full_pread(fd_, buf, len, offset);
  }
  int write(uint64_t offset, const char* buf, uint64_t len) override {
    if (int r = check_range(offset, len)) return r;
    return full_pwrite(fd_, buf, len, offset);
  }
};

// One ring per device. Submitters take sq_mutex_ only to fill SQEs; a reaper
// thread waits for completions and wakes the submitter whose batch finished.
// A short transfer (legal for io_uring) is finished synchronously by the reaper.
class UringBlockDevice final : public FileDeviceBase {
 public:
  UringBlockDevice(int fd, std::string path, uint64_t size, bool direct, unsigned depth)
      : FileDeviceBase(fd, std::move(path), size, direct), depth_(depth) {}

  // Sets up the ring and the reaper; returns -errno when io_uring is unusable.
  int start() {
    int r = io_uring_queue_init(depth_, &ring_, 0);
    if (r < 0) return r;
    started_ = true;
    reaper_ = std::thread([this] { reap(); });
    return 0;
  }

  ~UringBlockDevice() override {
    if (!started_) return;
    {
      std::lock_guard<std::mutex> l(sq_mutex_);
      wait_for_slot_locked();
      io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
      while (!sqe) {
        io_uring_submit(&ring_);
        sqe = io_uring_get_sqe(&ring_);
      }
      io_uring_prep_nop(sqe);
      io_uring_sqe_set_data(sqe, nullptr);  // tells the reaper to stop
      io_uring_submit(&ring_);
    }
    reaper_.join();
    io_uring_queue_exit(&ring_);
  }

  std::string backend() const override { return direct_ ? "uring+direct" : "uring"; }

  int read(uint64_t offset, char* buf, uint64_t len) override {
    return read_many({ReadIo{offset, buf, len}});
  }
  int write(uint64_t offset, const char* buf, uint64_t len) override {
    return write_many({WriteIo{offset, buf, len}});
  }
  int read_many(const std::vector<ReadIo>& ios) override {
    std::vector<Request> reqs(ios.size());
    for (size_t i = 0; i < ios.size(); ++i) {
      if (int r = check_range(ios[i].offset, ios[i].len)) return r;
      reqs[i] = Request{false, ios[i].offset, ios[i].buf, nullptr, ios[i].len, nullptr};
    }
    return run(reqs);
  }
  int write_many(const std::vector<WriteIo>& ios) override {
    std::vector<Request> reqs(ios.size());
    for (size_t i = 0; i < ios.size(); ++i) {
      if (int r = check_range(ios[i].offset, ios[i].len)) return r;
      reqs[i] = Request{true, ios[i].offset, nullptr, ios[i].buf, ios[i].len, nullptr};
    }
    return run(reqs);
  }

 private:
  struct Batch {
    std::mutex m;
    std::condition_variable cv;
    size_t pending = 0;
    int error = 0;
  };
  struct Request {
    bool is_write;
    uint64_t offset;
    char* rbuf;
    const char* wbuf;
    uint64_t len;
    Batch* batch;
  };
  // io_uring takes at most 2^31 bytes per request on some kernels: split.
  static constexpr uint64_t kMaxChunk = 1ull << 30;

  int run(std::vector<Request>& in) {
    std::vector<Request> reqs;
    for (auto& r : in) {
      for (uint64_t done = 0; done < r.len;) {
        uint64_t n = std::min(kMaxChunk, r.len - done);
        Request c = r;
        c.offset += done;
        if (c.rbuf) c.rbuf += done;
        if (c.wbuf) c.wbuf += done;
        c.len = n;
        reqs.push_back(c);
        done += n;
      }
    }
    if (reqs.empty()) return 0;
    Batch batch;
    batch.pending = reqs.size();
    for (auto& r : reqs) r.batch = &batch;
    {
      std::lock_guard<std::mutex> l(sq_mutex_);
      for (auto& r : reqs) {
        wait_for_slot_locked();
        io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
        while (!sqe) {
          io_uring_submit(&ring_);
          sqe = io_uring_get_sqe(&ring_);
        }
        if (r.is_write)
          io_uring_prep_write(sqe, fd_, r.wbuf, static_cast<unsigned>(r.len), r.offset);
        else
          io_uring_prep_read(sqe, fd_, r.rbuf, static_cast<unsigned>(r.len), r.offset);
        io_uring_sqe_set_data(sqe, &r);
        in_flight_.fetch_add(1);
      }
      int s;
      do {
        s = io_uring_submit(&ring_);
      } while (s == -EINTR || s == -EAGAIN);
      if (s < 0) {
        // Nothing was submitted; the kernel never saw these SQEs.
        HS_ERROR("io_uring_submit on {} failed: {}", path_, strerror(-s));
      }
    }
    std::unique_lock<std::mutex> l(batch.m);
    batch.cv.wait(l, [&] { return batch.pending == 0; });
    return batch.error;
  }

  // Keeps in-flight requests under the ring depth so completions never overflow.
  void wait_for_slot_locked() {
    while (in_flight_.load() >= depth_) std::this_thread::yield();
  }

  void reap() {
    for (;;) {
      io_uring_cqe* cqe = nullptr;
      int r = io_uring_wait_cqe(&ring_, &cqe);
      if (r == -EINTR) continue;
      if (r < 0) {
        HS_ERROR("io_uring_wait_cqe on {} failed: {}", path_, strerror(-r));
        continue;
      }
      auto* req = static_cast<Request*>(io_uring_cqe_get_data(cqe));
      int res = cqe->res;
      io_uring_cqe_seen(&ring_, cqe);
      if (!req) return;
      in_flight_.fetch_sub(1);
      int err = 0;
      if (res < 0 && res != -EINTR && res != -EAGAIN) {
        err = res;
      } else {
        uint64_t done = res < 0 ? 0 : static_cast<uint64_t>(res);
        if (done < req->len) {
          err = req->is_write ? full_pwrite(fd_, req->wbuf + done, req->len - done, req->offset + done)
                              : full_pread(fd_, req->rbuf + done, req->len - done, req->offset + done);
        }
      }
      Batch* b = req->batch;
      std::lock_guard<std::mutex> l(b->m);
      if (err && !b->error) b->error = err;
      if (--b->pending == 0) b->cv.notify_all();
    }
  }

  io_uring ring_{};
  bool started_ = false;
  unsigned depth_;
  std::mutex sq_mutex_;
  std::atomic<unsigned> in_flight_{0};
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
    auto dev = std::make_unique<UringBlockDevice>(fd, path, size, direct, opts.uring_depth);
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
  return std::make_unique<PosixBlockDevice>(fd, path, size, direct);
}

}  // namespace hybridstore
