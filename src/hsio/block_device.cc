#include "hsio/block_device.h"
#include "hsio/buffer_pool_stats.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include <fmt/format.h>

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
    if (idle_ + cls > limit_) return false;
    free_[cls].push_back(p);
    idle_ += cls;
    return true;
  }
  // Frees idle buffers, largest first, until at most `bytes` stay idle.
  void set_limit(size_t bytes) {
    std::vector<char*> drop;
    {
      std::lock_guard<std::mutex> l(mutex_);
      limit_ = std::min(bytes, kMaxIdleBytes);
      for (auto it = free_.rbegin(); it != free_.rend() && idle_ > limit_; ++it) {
        auto& v = it->second;
        while (!v.empty() && idle_ > limit_) {
          drop.push_back(v.back());
          v.pop_back();
          idle_ -= it->first;
        }
      }
    }
    for (char* p : drop) free(p);
  }
  void idle(uint64_t* buffers, uint64_t* bytes) {
    std::lock_guard<std::mutex> l(mutex_);
    *buffers = 0;
    for (const auto& [cls, v] : free_) *buffers += v.size();
    *bytes = idle_;
  }

 private:
  std::mutex mutex_;
  std::map<size_t, std::vector<char*>> free_;
  size_t idle_ = 0;
  size_t limit_ = kMaxIdleBytes;
};

BufferPool& buffer_pool() {
  static BufferPool* pool = new BufferPool;  // never destroyed: buffers may outlive statics
  return *pool;
}

}  // namespace

void aligned_buffer_pool_idle(uint64_t* buffers, uint64_t* bytes) { buffer_pool().idle(buffers, bytes); }
void aligned_buffer_pool_set_idle_limit(uint64_t bytes) { buffer_pool().set_limit(bytes); }

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

bool parse_file_layout(const std::string& s, FileLayout* out) {
  if (s == "none" || s == "sparse") *out = FileLayout::kSparse;
  else if (s == "fallocate") *out = FileLayout::kFallocate;
  else if (s == "zero") *out = FileLayout::kZeros;
  else return false;
  return true;
}

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

bool written_out(int fd) {
  struct stat st;
  if (::fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) return false;
  return static_cast<uint64_t>(st.st_blocks) * 512 >= static_cast<uint64_t>(st.st_size);
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

}  // namespace hybridstore
