// Power-cut and I/O-error injection for durability tests (debug only).
//
// A FaultInjector stands for the power supply and the failure behaviour of
// one store's storage: its two devices, through FaultInjectionDevice (a
// BlockDevice decorator emulating a volatile write cache, fault_device.h),
// and its RocksDB files, through FaultInjectionFileSystem (a
// rocksdb::FileSystem wrapper that knows what was synced, fault_kv_fs.h).
// It is enabled by the hybridstore_debug_* options
// (test_options.cc) and reaches the store through the storage
// hooks test tools install (test_storage_hooks.h); with all of them off the
// engine never sees any of these classes.
//
// What a power cut does (the model; each point is what the storage stack
// promises and no more):
//  - Devices: a write stays in the volatile cache until a flush() covers it
//    (reads see it meanwhile). write_durable() is a FUA write: that write
//    reaches the media before it returns, and the other cached writes stay
//    cached (what the kernel may send for RWF_DSYNC on a raw block device);
//    it counts as one write and one flush, and a failed one writes nothing.
//    At the cut every cached write is lost, or, with keep_random, each 4 KiB
//    block of each cached write lands with probability 1/2 (a cache that
//    had destaged some of its writes, in any order). With `tear`, the write
//    during which the power fails lands partly: a random proper prefix of
//    its 4 KiB blocks (a write of one block lands whole or not at all).
//  - RocksDB files: each file written since the injector was made is cut back
//    to the length covered by its last successful Sync/Fsync (RangeSync is
//    not a durability point). With `tear`, the file whose append is cut keeps
//    a random 4 KiB-granular part of its unsynced tail.
//  - Names: every create, rename, link and delete in a directory since the
//    last fsync of that directory is undone, newest first: created files
//    vanish, renamed files return to their old name (a file the rename
//    replaced comes back), deleted files come back. This is POSIX taken
//    literally; journaling filesystems usually keep more. Directories
//    themselves (mkdir/rmdir) are not modelled: RocksDB's directory exists
//    before the injector does.
//  - After the cut every device write, flush and read, and every RocksDB
//    file write, sync and name change fails with EIO: nothing the dying
//    process does can change what the media hold.
//  - The loss reaches the files when the power comes back: restore_power().
//    The next mount of the same store in this process calls it before it
//    opens RocksDB (the store that lost power must be closed by then; mount's
//    fsid lock guarantees it), and process exit calls it for any injector
//    never remounted, so a tool or a harness process that lost power leaves
//    the files as the media would hold them.
//
// The power-cut clock counts device write I/Os (each I/O of write_many is
// one) and RocksDB file appends together, in issue order, from the moment the
// injector is made (the start of mount). The I/O that makes the clock reach
// the armed value is the one during which the power fails.
//
// Thread-safe. Lock order: the injector's mutex, then a device's or the file
// system's; the decorators never call into the injector while holding theirs.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include <rocksdb/options.h>

#include "hscommon/config.h"
#include "hsio/block_device.h"

namespace hybridstore {

class FaultInjectionDevice;
class FaultInjectionFileSystem;

// What the hybridstore_debug_* options ask for. A count of 0 means never.
struct FaultSettings {
  bool enabled = false;                // route I/O through the injector at all
  uint64_t powercut_after_writes = 0;  // the power fails during this write (clock)
  bool tear = false;                   // ... and that write lands partly
  bool keep_random = false;            // cached writes survive the cut block by block, at random
  uint64_t eio_on_write = 0;           // this device write fails with EIO
  uint64_t eio_on_flush = 0;           // this device flush fails with EIO
  uint64_t eio_on_kv_sync = 0;         // this RocksDB file sync fails with EIO
  uint64_t seed = 0;                   // for the torn lengths

  // Reads the options; enabled when hybridstore_debug_fault_injection is on
  // or any fault is asked for.
  static FaultSettings from_config(const Config& cfg);
};

struct FaultCounters {
  uint64_t clock = 0;  // device writes + RocksDB appends (the power-cut clock)
  uint64_t device_writes = 0;
  uint64_t device_flushes = 0;
  uint64_t kv_appends = 0;
  uint64_t kv_syncs = 0;
  uint64_t injected_errors = 0;
  bool power_off = false;
};

class FaultInjector {
 public:
  FaultInjector(std::string store_path, const FaultSettings& s);
  ~FaultInjector();  // restores power if it was cut and never restored
  FaultInjector(const FaultInjector&) = delete;
  FaultInjector& operator=(const FaultInjector&) = delete;

  const std::string& store_path() const { return store_path_; }

  // Arming from now on (tests): the n-th such I/O from now (n >= 1) is the
  // one that fails; 0 disarms.
  void powercut_after_writes(uint64_t n, bool tear);
  // What a later cut does to the devices' cached writes (see keep_random).
  void keep_cached_writes_at_random(bool on);
  void fail_device_write_after(uint64_t n);
  void fail_device_flush_after(uint64_t n);
  void fail_kv_sync_after(uint64_t n);
  // Pulls the plug now (no torn write).
  void power_cut_now();
  bool power_is_off() const { return off_.load(std::memory_order_acquire); }
  // Makes the files hold what survived the cut (see the header comment).
  // Idempotent; 0 when there was no cut or it was already restored.
  int restore_power(std::string* error);
  FaultCounters counters() const;

  // RocksDB goes through this Env while the injector lives.
  rocksdb::Env* env() const { return env_.get(); }

  // ---- used by the decorators
  enum class Verdict { kProceed, kFail, kPowerCut };
  // kPowerCut: the cut has happened, caches are dropped; the caller's I/O is
  // the one during which it happened (tear it if tear() says so) and fails.
  Verdict on_device_write();
  Verdict on_device_flush();
  Verdict on_kv_append();
  Verdict on_kv_sync();
  bool tear() const { return tear_; }
  uint64_t random_below(uint64_t n);  // uniform in [0, n), n > 0
  void register_device(FaultInjectionDevice* d);
  void unregister_device(FaultInjectionDevice* d);

 private:
  void cut_locked();  // with mutex_ held

  const std::string store_path_;
  mutable std::mutex mutex_;
  std::atomic<bool> off_{false};
  bool restored_ = false;
  // Armed trigger points, in the units of the matching counter (0 = none).
  uint64_t cut_at_ = 0;
  bool tear_ = false;
  bool keep_random_ = false;
  uint64_t eio_write_at_ = 0;
  uint64_t eio_flush_at_ = 0;
  uint64_t eio_kv_sync_at_ = 0;
  FaultCounters counters_;
  std::mt19937_64 rng_;
  std::vector<FaultInjectionDevice*> devices_;
  std::shared_ptr<FaultInjectionFileSystem> fs_;
  std::unique_ptr<rocksdb::Env> env_;
};

// ---- hooks (TestStorageHooks) and the test handle

// Where RocksDB options are built: first restores the power of an injector
// an earlier mount of this store left behind, then, when `cfg` enables fault
// injection, makes a fresh injector for the store and points opts->env at
// it (`opts` null: a store whose RocksDB is on its devices, which the
// injector reaches through them). Returns 0, or a negative errno with *error
// (a failed restore).
int fault_injection_setup_kv(const std::string& store_path, const Config& cfg,
                             rocksdb::Options* opts, std::string* error);
// Where a device is opened: wraps it when this mount has an injector.
std::unique_ptr<BlockDevice> fault_injection_wrap_device(const std::string& store_path,
                                                         std::unique_ptr<BlockDevice> dev);
// The injector of the store's current (or last) mount, or null.
std::shared_ptr<FaultInjector> fault_injector_for(const std::string& store_path);
// Restores the power of the store's injector, if any (harness processes call
// it before they exit). 0 or a negative errno.
int fault_injection_restore(const std::string& store_path, std::string* error);

}  // namespace hybridstore
