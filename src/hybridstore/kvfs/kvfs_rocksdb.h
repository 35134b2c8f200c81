// RocksDB on the kvfs (docs/kvfs.md 3.8, 3.9): a rocksdb::FileSystem over a
// mounted KvFs, the logger that sends RocksDB's info log to hscommon/log.h,
// and the options RocksDB must run with on it. Not yet used by the store
// (step 7 wires it into StoreImpl::open_db).
//
// Paths are `/`-rooted with one directory level: "/" is the root, "/db" a
// directory, "/db/000012.sst" a file. Relative paths are taken from the
// root, repeated and trailing slashes are ignored; a deeper path, "." or
// ".." is InvalidArgument.
//
// Reads: the files report use_direct_io() as RocksDB asked for
// (FileOptions::use_direct_reads) and GetRequiredBufferAlignment() = the
// kvfs block. KvFs reads straight into the caller's buffer when offset,
// length and buffer are block-aligned and bounces otherwise, so both modes
// are correct; direct mode saves the copy.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <rocksdb/env.h>
#include <rocksdb/file_system.h>
#include <rocksdb/options.h>
#include <rocksdb/version.h>

#include "hybridstore/kvfs/kvfs.h"

// The FileSystem API used here (IsDirectory, Append with a
// DataVerificationInfo, NewCompositeEnv) is RocksDB 7's. Ceph 16.2's
// bundled RocksDB 6.8 lacks it, so a ceph-osd of Pacific builds without
// RocksDB on the device (KvDevice::mount refuses); Reef and Tentacle bundle
// 7.9, and Debian's own is 7.8 or later.
#define HS_HAVE_KVFS_ROCKSDB (ROCKSDB_MAJOR >= 7)

#if HS_HAVE_KVFS_ROCKSDB
namespace hybridstore {

// The methods of docs/kvfs.md 3.8's table, counted as RocksDB calls them
// (tests check that each is reached).
enum class KvRocksOp {
  kNewWritableFile,
  kReopenWritableFile,
  kNewSequentialFile,
  kNewRandomAccessFile,
  kNewDirectory,
  kDirectoryFsync,
  kFileExists,
  kGetFileSize,
  kGetChildren,
  kGetChildrenFileAttributes,
  kRenameFile,
  kDeleteFile,
  kTruncate,
  kCreateDir,
  kCreateDirIfMissing,
  kDeleteDir,
  kIsDirectory,
  kLockFile,
  kUnlockFile,
  kGetFileModificationTime,
  kGetAbsolutePath,
  kGetTestDirectory,
  kNewLogger,
  kGetFreeSpace,
  kFileAppend,
  kFileFlush,
  kFileSync,
  kFileClose,
  kFileTruncate,
  kFileAllocate,
  kRandomRead,
  kSequentialRead,
  kCount
};
const char* kv_rocks_op_name(KvRocksOp op);

class KvRocksFileSystem : public rocksdb::FileSystem {
 public:
  // `fs` must outlive this and every file it opens.
  explicit KvRocksFileSystem(KvFs& fs) : fs_(fs) {}
  const char* Name() const override { return "KvRocksFileSystem"; }

  uint64_t calls(KvRocksOp op) const { return calls_[static_cast<size_t>(op)].load(std::memory_order_relaxed); }
  void count(KvRocksOp op) { calls_[static_cast<size_t>(op)].fetch_add(1, std::memory_order_relaxed); }

  rocksdb::IOStatus NewSequentialFile(const std::string& fname, const rocksdb::FileOptions& file_opts,
                                      std::unique_ptr<rocksdb::FSSequentialFile>* result,
                                      rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus NewRandomAccessFile(const std::string& fname, const rocksdb::FileOptions& file_opts,
                                        std::unique_ptr<rocksdb::FSRandomAccessFile>* result,
                                        rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus NewWritableFile(const std::string& fname, const rocksdb::FileOptions& file_opts,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReopenWritableFile(const std::string& fname, const rocksdb::FileOptions& file_opts,
                                       std::unique_ptr<rocksdb::FSWritableFile>* result,
                                       rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus NewDirectory(const std::string& name, const rocksdb::IOOptions& io_opts,
                                 std::unique_ptr<rocksdb::FSDirectory>* result, rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus FileExists(const std::string& fname, const rocksdb::IOOptions& options,
                               rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus GetChildren(const std::string& dir, const rocksdb::IOOptions& options,
                                std::vector<std::string>* result, rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus GetChildrenFileAttributes(const std::string& dir, const rocksdb::IOOptions& options,
                                              std::vector<rocksdb::FileAttributes>* result,
                                              rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus DeleteFile(const std::string& fname, const rocksdb::IOOptions& options,
                               rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus Truncate(const std::string& fname, size_t size, const rocksdb::IOOptions& options,
                             rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus CreateDir(const std::string& dirname, const rocksdb::IOOptions& options,
                              rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus CreateDirIfMissing(const std::string& dirname, const rocksdb::IOOptions& options,
                                       rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus DeleteDir(const std::string& dirname, const rocksdb::IOOptions& options,
                              rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus GetFileSize(const std::string& fname, const rocksdb::IOOptions& options, uint64_t* file_size,
                                rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus GetFileModificationTime(const std::string& fname, const rocksdb::IOOptions& options,
                                            uint64_t* file_mtime, rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus RenameFile(const std::string& src, const std::string& target, const rocksdb::IOOptions& options,
                               rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus LockFile(const std::string& fname, const rocksdb::IOOptions& options, rocksdb::FileLock** lock,
                             rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus UnlockFile(rocksdb::FileLock* lock, const rocksdb::IOOptions& options,
                               rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus GetTestDirectory(const rocksdb::IOOptions& options, std::string* path,
                                     rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus NewLogger(const std::string& fname, const rocksdb::IOOptions& io_opts,
                              std::shared_ptr<rocksdb::Logger>* result, rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus GetAbsolutePath(const std::string& db_path, const rocksdb::IOOptions& options,
                                    std::string* output_path, rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus GetFreeSpace(const std::string& path, const rocksdb::IOOptions& options, uint64_t* diskfree,
                                 rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus IsDirectory(const std::string& path, const rocksdb::IOOptions& options, bool* is_dir,
                                rocksdb::IODebugContext* dbg) override;

 private:
  KvFs& fs_;
  std::array<std::atomic<uint64_t>, static_cast<size_t>(KvRocksOp::kCount)> calls_{};
};

// RocksDB's info log into hscommon/log.h: its warnings and errors at those
// levels, its (chatty) info and header lines at debug.
std::shared_ptr<rocksdb::Logger> make_kvfs_rocksdb_logger();

// Sets the options of docs/kvfs.md 3.9 on `opts`: `env` (from
// rocksdb::NewCompositeEnv over the KvRocksFileSystem; the caller keeps it
// alive as long as the DB) and `logger`. A value the user set that these
// replace (neither RocksDB's default nor ours) is logged as a warning and
// named in the result.
std::vector<std::string> apply_kvfs_rocksdb_options(rocksdb::Env* env, std::shared_ptr<rocksdb::Logger> logger,
                                                    rocksdb::DBOptions* opts);

}  // namespace hybridstore
#endif  // HS_HAVE_KVFS_ROCKSDB
