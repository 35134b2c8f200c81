// Block devices: the one way the engine and the FTL touch stable storage.
//
// A BlockDevice reads and writes byte ranges at absolute offsets and makes
// completed writes durable with flush(). Implementations:
//   - UringBlockDevice: io_uring (liburing), one ring per device, a reaper thread
//     completing requests, so many threads can have I/O in flight at once; at
//     most uring_depth I/Os are on the ring, and a batch larger than that (or
//     several at once) waits, asleep, for completions to free slots;
//   - PosixBlockDevice: plain pread/pwrite, the fallback where io_uring is not
//     available (old kernels, seccomp);
// both on regular files or block devices, with O_DIRECT where the filesystem
// allows it. Both take batches of any size, join requests that follow each
// other on the device into one vectored I/O, and continue short transfers.
// Other devices (the NAND FTL, fault injection) implement the same
// interface, so the engine never knows which it has.
//
// Callers must respect alignment(): offsets, lengths and buffer addresses are
// multiples of it (4096 under O_DIRECT, 1 otherwise). AlignedBuffer helps.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace hybridstore {

// Heap buffer aligned for O_DIRECT (4096), zero-filled on allocation unless
// the caller says it will overwrite every byte.
class AlignedBuffer {
 public:
  enum Fill { kZeroed, kUninitialized };
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t size, size_t align = 4096, Fill fill = kZeroed);
  AlignedBuffer(AlignedBuffer&& o) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer();

  char* data() { return data_; }
  const char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void release();
  char* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;  // bytes actually allocated (pooled buffers round up)
};

struct WriteIo {
  uint64_t offset;
  const char* buf;
  uint64_t len;
};
struct ReadIo {
  uint64_t offset;
  char* buf;
  uint64_t len;
};

// What a device is made of, as far as the kernel (or a device model) says:
// whether random I/O costs it a seek decides where small writes are worth
// moving.
enum class Media { kUnknown, kSolidState, kRotational };
const char* media_name(Media m);  // "unknown", "solid-state", "rotational"

// The media behind a file or block device: the block device's queue, or the
// queue of the disk holding the file (a partition answers for its disk).
// kUnknown where there is no such disk (tmpfs, FUSE, overlay).
Media media_of(int fd);
// A regular file with a block allocated behind every byte of its size.
bool written_out(int fd);
// The sysfs directory of the whole disk holding device number `dev`
// (/sys/devices/.../vda), or "" when there is none.
std::string sys_block_dir_of(uint64_t dev);

struct BlockDeviceStats {
  uint64_t requests = 0;         // ReadIo/WriteIo asked for (read() and write() count one)
  uint64_t device_ios = 0;       // reads and writes handed to the kernel, after joining
  uint64_t short_transfers = 0;  // kernel calls that moved less than asked, then continued
  uint64_t max_in_flight = 0;    // most I/Os on the device at once
};

class BlockDevice {
 public:
  virtual ~BlockDevice() = default;

  virtual uint64_t size() const = 0;
  virtual uint32_t alignment() const = 0;
  // "uring", "posix", "nand", ...: shown by tools.
  virtual std::string backend() const = 0;
  virtual std::string path() const = 0;

  // Each returns 0 when the whole range was transferred, or -errno.
  virtual int read(uint64_t offset, char* buf, uint64_t len) = 0;
  virtual int write(uint64_t offset, const char* buf, uint64_t len) = 0;
  // Several I/Os submitted together, any number; returns when all are done
  // (first error wins). They may be carried out in any order and at once,
  // except that writes overlapping each other land in the order given (the
  // later one's bytes win).
  virtual int read_many(const std::vector<ReadIo>& ios);
  virtual int write_many(const std::vector<WriteIo>& ios);
  // Starts `ios` (as write_many) and may return before they are done;
  // done(r) runs exactly once when they all are (r as write_many's), on
  // any thread, possibly before this returns. Until then the buffers must
  // stay valid, and reads and writes through this device that overlap them
  // wait for them. This default writes synchronously.
  using WriteDone = std::function<void(int)>;
  virtual void write_many_async(std::vector<WriteIo> ios, WriteDone done);
  // Makes every write that completed before the call durable.
  virtual int flush() = 0;
  // This write made durable before the call returns, as one request where
  // the device has one: a file asks the kernel for a synchronous-data write
  // (RWF_DSYNC), one system call and one wait instead of two. Only this
  // write is promised: on a block device opened O_DIRECT the kernel may
  // send it as a FUA write, which leaves the device's other cached writes
  // volatile. A caller that needs earlier writes durable flushes first.
  virtual int write_durable(uint64_t offset, const char* buf, uint64_t len);
  // Tells the device a range holds no data any more (TRIM); advisory.
  virtual int discard(uint64_t offset, uint64_t len) { return 0; }
  // Counters of the file-backed devices (others return zeros).
  virtual BlockDeviceStats io_stats() const { return {}; }
  virtual Media media() const { return Media::kUnknown; }
};

enum class IoBackend { kAuto, kUring, kPosix };
bool parse_io_backend(const std::string& s, IoBackend* out);

// How a device file made by open_block_device is laid out.
enum class FileLayout {
  kSparse,     // ftruncate only
  kFallocate,  // blocks reserved as unwritten extents
  kZeros,      // every block written: writes into it change no file metadata
};
bool parse_file_layout(const std::string& s, FileLayout* out);

struct DeviceOpenOptions {
  IoBackend backend = IoBackend::kAuto;
  bool direct_io = true;        // try O_DIRECT, fall back to buffered when refused
  bool create = false;          // create a file of create_size if missing
  uint64_t create_size = 0;
  FileLayout create_layout = FileLayout::kSparse;
  unsigned uring_depth = 128;
  // Takes an open-file-description write lock on the file or device node for
  // as long as the device is open: a second exclusive open of the same file,
  // from this process or another, fails (errno EBUSY). A store's devices
  // must not be mounted twice, and with a data directory that can be made
  // again from the labels, two directories can name the same devices.
  bool exclusive = false;
  // Tests: no read or write handed to the kernel moves more than this (a
  // multiple of 4096), as if the kernel returned short; 0: no limit.
  uint64_t debug_max_transfer = 0;
};

// Opens `path` (regular file or block device). On failure returns null and
// fills *error with a message naming the path and the reason; errno is
// EBUSY when an exclusive open found the device locked.
std::unique_ptr<BlockDevice> open_block_device(const std::string& path,
                                               const DeviceOpenOptions& opts,
                                               std::string* error);

// `path`, and in parentheses what it resolves to when that differs (a
// block.* link): what an operator looks for when a device is in use.
std::string path_and_target(const std::string& path);

// True when this process can set up an io_uring (checked once).
bool uring_available();

}  // namespace hybridstore
