// The SSD tier on raw NAND: a hybridstore::BlockDevice over the FTL's block
// interface (hybridstore_ssd_kind = nand).
//
// Offsets and lengths must be multiples of alignment() (the NAND page size).
// A write is acknowledged once the FTL holds it; flush() makes every write
// acknowledged before it durable in the flash file (write-back cache written
// out, pending background merges finished, the file synced). discard() trims
// whole sectors inside the range (advisory). All calls are serialized by one
// mutex, so the engine may call from several threads. With emulate_latency,
// each call also lasts (in wall-clock time) the NAND time it cost on the
// virtual clock, like nandsim with do_delays: one chip, one request at a time.
#pragma once
#include <pthread.h>

#include <memory>
#include <mutex>
#include <string>

#include "ftl/flash_translation_layer.h"
#include "hscommon/perf_counters.h"
#include "hsio/block_device.h"

namespace hybridstore {
class Config;
}

namespace hybridstore::ftl {

// Counter ids the device updates from the FTL's own statistics after each
// call; without a set it counts nothing.
struct FtlPerf {
  PerfCounterSet* set = nullptr;
  int merges = -1, erases = -1, pages_copied = -1, host_pages_written = -1;
};

// A mutex that spins a little before it sleeps (glibc's adaptive kind). A
// page read holds the device's lock for one 4 KiB copy and checksum, about
// 1.5 us; with 16 readers on two cores, sleeping on it (a futex wait, a wake
// and two thread switches) was 12-14% of the random-read row's CPU
// (docs/benchmarks.md, item 30).
class SpinThenSleepMutex {
 public:
  SpinThenSleepMutex() {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&m_, &a);
    pthread_mutexattr_destroy(&a);
  }
  ~SpinThenSleepMutex() { pthread_mutex_destroy(&m_); }
  SpinThenSleepMutex(const SpinThenSleepMutex&) = delete;
  SpinThenSleepMutex& operator=(const SpinThenSleepMutex&) = delete;
  void lock() { pthread_mutex_lock(&m_); }
  void unlock() { pthread_mutex_unlock(&m_); }
  bool try_lock() { return pthread_mutex_trylock(&m_) == 0; }

 private:
  pthread_mutex_t m_;
};

class NandBlockDevice : public BlockDevice {
 public:
  NandBlockDevice(std::unique_ptr<Ftl> ftl, std::string path);
  // Shuts the FTL down cleanly (flush, background work, sync).
  ~NandBlockDevice() override;

  uint64_t size() const override;
  uint32_t alignment() const override;
  std::string backend() const override;
  std::string path() const override { return path_; }
  Media media() const override { return Media::kSolidState; }
  int read(uint64_t offset, char* buf, uint64_t len) override;
  int write(uint64_t offset, const char* buf, uint64_t len) override;
  int flush() override;
  int discard(uint64_t offset, uint64_t len) override;

  // Bytes of one LEB: the unit an allocator above should align extents to
  // (a whole-LEB write needs no merge and no read). hubi with the paper's
  // layout: 100 pages = 200 KiB; ubi/pubi: pages_per_block - 1 pages.
  uint64_t erase_block_bytes() const { return ftl_->leb_bytes(); }
  // For tools (ftl info); do not use while other threads do I/O.
  Ftl* ftl() { return ftl_.get(); }
  void set_perf(const FtlPerf& p);

 private:
  bool aligned(uint64_t offset, uint64_t len) const;
  // Sleeps for the virtual time spent since `t0` when emulating latency.
  void pace(int64_t t0);
  // Adds what the FTL did since the last call to the counters (under mu_).
  void count_locked();

  mutable SpinThenSleepMutex mu_;
  std::unique_ptr<Ftl> ftl_;
  std::string path_;
  FtlPerf perf_;
  uint64_t seen_merges_ = 0, seen_erases_ = 0, seen_copied_ = 0, seen_host_ = 0;
};

// Opens the flash file at `path`: attaches (scan) when it exists; when it does
// not and `create` is true, creates it with the configured geometry and
// formats it. Geometry, timing, policy and runtime options come from the
// hybridstore_nand_* / hybridstore_ftl_* options; an existing flash keeps the
// geometry and image (policy, layout) it was created with. On failure returns
// null with *error naming the path and the reason.
std::unique_ptr<BlockDevice> open_nand_block_device(const Config& cfg, const std::string& path,
                                                    bool create, std::string* error);

}  // namespace hybridstore::ftl
