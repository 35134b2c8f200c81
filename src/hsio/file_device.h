// The devices on a file or block device, private to src/hsio/: what the
// pread/pwrite device (file_device.cc) and the io_uring one
// (uring_device.cc) share: the spans a batch is carried out in, the base
// class, and the synchronous transfer both fall back on. From outside they
// are reached through open_block_device (file_device.cc) only.
#pragma once
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hsio/block_device.h"

namespace hybridstore::file_io {

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

// Carries out a span with pread/pwrite (preadv/pwritev for several buffers),
// continuing short transfers. 0 or -errno.
int transfer_sync(int fd, bool write, Span* s, uint64_t cap, std::atomic<uint64_t>* calls,
                  std::atomic<uint64_t>* shorts);

// Shared by both file-backed devices: the descriptor, its size and alignment.
class FileDeviceBase : public BlockDevice {
 public:
  FileDeviceBase(int fd, std::string path, uint64_t size, bool direct, uint64_t max_transfer)
      : fd_(fd), path_(std::move(path)), size_(size), direct_(direct), max_transfer_(max_transfer),
        media_(media_of(fd)), written_out_(written_out(fd)) {}
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
  int write_durable(uint64_t offset, const char* buf, uint64_t len) override;
  int discard(uint64_t offset, uint64_t len) override;
  BlockDeviceStats io_stats() const override;

  int read(uint64_t offset, char* buf, uint64_t len) override {
    return read_many({ReadIo{offset, buf, len}});
  }
  int write(uint64_t offset, const char* buf, uint64_t len) override {
    return write_many({WriteIo{offset, buf, len}});
  }
  int read_many(const std::vector<ReadIo>& ios) override;
  int write_many(const std::vector<WriteIo>& ios) override;

 protected:
  // Carries out every span; returns when all are done (first error wins).
  virtual int run(bool write, std::vector<Span> spans) = 0;

  template <typename Io>
  int run_checked(bool write, const std::vector<Io>& ios);
  template <typename Io>
  int run_all(bool write, const std::vector<Io>& ios);

  int fd_;
  std::string path_;
  uint64_t size_;
  bool direct_;
  uint64_t max_transfer_;  // DeviceOpenOptions::debug_max_transfer
  Media media_;
  // A regular file with a block behind every byte (laid out with zeros, or
  // filled since): discard leaves it so, see discard().
  bool written_out_;
  std::atomic<uint64_t> requests_{0}, device_ios_{0}, short_transfers_{0}, max_in_flight_{0};
  std::atomic<bool> dsync_writes_{true};  // false once the kernel refused RWF_DSYNC
};

class PosixBlockDevice final : public FileDeviceBase {
 public:
  using FileDeviceBase::FileDeviceBase;
  std::string backend() const override { return direct_ ? "posix+direct" : "posix"; }

 protected:
  int run(bool write, std::vector<Span> spans) override;
};

// The io_uring device over `fd`, started: 0, or -errno when io_uring is
// unusable here. *out holds the device either way and owns `fd`: one that
// did not start closes it when destroyed.
int start_uring_device(int fd, std::string path, uint64_t size, bool direct, uint64_t max_transfer,
                       unsigned depth, std::unique_ptr<BlockDevice>* out);

}  // namespace hybridstore::file_io
