#include "hsio/file_device.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "hscommon/log.h"

namespace hybridstore {
namespace file_io {

namespace {

// A single read or write handed to the kernel carries at most this much: the
// kernel moves at most ~2 GiB per call, and io_uring's length is 32 bits.
constexpr uint64_t kMaxIoBytes = 1ull << 30;
// preadv/pwritev and IORING_OP_READV/WRITEV take at most this many buffers.
constexpr size_t kMaxIov = IOV_MAX;

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

}  // namespace

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

int FileDeviceBase::write_durable(uint64_t offset, const char* buf, uint64_t len) {
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

int FileDeviceBase::discard(uint64_t offset, uint64_t len) {
  // A written-out file was laid out so that no write changes filesystem
  // metadata (hybridstore_block_preallocate); a hole punched in it would make
  // the next write there allocate again, and every DSYNC write to the file
  // wait for that (the kvfs's ring beside RocksDB's deleted tables).
  if (written_out_) return 0;
  // Punching a hole gives the space back to the filesystem for sparse files;
  // block devices ignore it. Failure is harmless: discard is advisory.
  (void)::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                    static_cast<off_t>(len));
  return 0;
}

BlockDeviceStats FileDeviceBase::io_stats() const {
  BlockDeviceStats s;
  s.requests = requests_.load();
  s.device_ios = device_ios_.load();
  s.short_transfers = short_transfers_.load();
  s.max_in_flight = max_in_flight_.load();
  return s;
}

template <typename Io>
int FileDeviceBase::run_checked(bool write, const std::vector<Io>& ios) {
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
int FileDeviceBase::run_all(bool write, const std::vector<Io>& ios) {
  std::vector<Span> spans = plan_spans(ios);
  if (spans.empty()) return 0;
  return run(write, std::move(spans));
}

int FileDeviceBase::read_many(const std::vector<ReadIo>& ios) { return run_checked(false, ios); }
int FileDeviceBase::write_many(const std::vector<WriteIo>& ios) { return run_checked(true, ios); }

int PosixBlockDevice::run(bool write, std::vector<Span> spans) {
  max_in_flight_.store(std::max<uint64_t>(max_in_flight_.load(), 1));
  for (auto& s : spans)
    if (int r = transfer_sync(fd_, write, &s, max_transfer_, &device_ios_, &short_transfers_); r < 0) return r;
  return 0;
}

}  // namespace file_io

namespace {

using file_io::PosixBlockDevice;
using file_io::start_uring_device;

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

std::string path_and_target(const std::string& path) {
  char* real = ::realpath(path.c_str(), nullptr);
  const std::string shown = real && path != real ? path + " (" + real + ")" : path;
  std::free(real);
  return shown;
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
  if (opts.exclusive) {
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    if (::fcntl(fd, F_OFD_SETLK, &fl) < 0) {
      const int e = errno;
      const std::string shown = path_and_target(path);
      *error = e == EAGAIN || e == EACCES
                   ? fmt::format("device {} is in use by another store or process (it is locked)", shown)
                   : fmt::format("cannot lock device {}: {}", shown, strerror(e));
      ::close(fd);
      errno = e == EAGAIN || e == EACCES ? EBUSY : e;
      return nullptr;
    }
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
    std::unique_ptr<BlockDevice> dev;
    int r = start_uring_device(fd, path, size, direct, opts.debug_max_transfer, opts.uring_depth, &dev);
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
