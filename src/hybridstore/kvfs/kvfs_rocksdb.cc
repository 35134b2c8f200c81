// RocksDB's FileSystem over the kvfs (docs/kvfs.md 3.8, 3.9). Every entry
// point RocksDB calls runs inside guarded(): RocksDB is not exception-safe,
// so an exception (a bad_alloc, say) becomes an IOError instead of
// unwinding through its frames.
#include "hybridstore/kvfs/kvfs_rocksdb.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>

#include <fmt/format.h>

#include "hscommon/log.h"

#if HS_HAVE_KVFS_ROCKSDB
namespace hybridstore {

namespace {

using rocksdb::IOStatus;

constexpr const char* kOpNames[] = {
    "NewWritableFile", "ReopenWritableFile", "NewSequentialFile", "NewRandomAccessFile", "NewDirectory",
    "FSDirectory::Fsync", "FileExists", "GetFileSize", "GetChildren", "GetChildrenFileAttributes", "RenameFile",
    "DeleteFile", "Truncate", "CreateDir", "CreateDirIfMissing", "DeleteDir", "IsDirectory", "LockFile",
    "UnlockFile", "GetFileModificationTime", "GetAbsolutePath", "GetTestDirectory", "NewLogger", "GetFreeSpace",
    "FSWritableFile::Append", "FSWritableFile::Flush", "FSWritableFile::Sync", "FSWritableFile::Close",
    "FSWritableFile::Truncate", "FSWritableFile::Allocate", "FSRandomAccessFile::Read", "FSSequentialFile::Read"};
static_assert(sizeof(kOpNames) / sizeof(kOpNames[0]) == static_cast<size_t>(KvRocksOp::kCount));

// The errno a KvFs call returned, as RocksDB wants to see it: a missing name
// is NotFound (RocksDB tests IsNotFound() on FileExists and friends), a
// kvfs that cannot grow is NoSpace (RocksDB's error handler tells it apart),
// the rest an IOError with the errno text.
IOStatus status_of(int r, const std::string& why) {
  if (r >= 0) return IOStatus::OK();
  switch (-r) {
    case ENOENT: return IOStatus::PathNotFound(why);
    case ENOSPC: return IOStatus::NoSpace(why);
    case EINVAL: return IOStatus::InvalidArgument(why);
    case EOPNOTSUPP: return IOStatus::NotSupported(why);
    default: return IOStatus::IOError(why, strerror(-r));
  }
}

template <typename Fn>
IOStatus guarded(const char* what, Fn fn) noexcept {
  try {
    return fn();
  } catch (const std::exception& e) {
    return IOStatus::IOError(fmt::format("kvfs {}: {}", what, e.what()));
  } catch (...) {
    return IOStatus::IOError(fmt::format("kvfs {}: unknown exception", what));
  }
}

// A path split into the kvfs's two levels: both empty for the root, `name`
// empty for a directory.
struct KvPath {
  std::string dir;
  std::string name;
  bool is_root() const { return dir.empty(); }
  bool is_dir() const { return !dir.empty() && name.empty(); }
  bool is_file() const { return !name.empty(); }
};

IOStatus parse_path(const std::string& path, KvPath* out) {
  std::vector<std::string> parts;
  size_t at = 0;
  while (at <= path.size()) {
    size_t slash = path.find('/', at);
    if (slash == std::string::npos) slash = path.size();
    if (slash > at) parts.push_back(path.substr(at, slash - at));
    at = slash + 1;
  }
  for (const std::string& p : parts) {
    if (p == "." || p == "..")
      return IOStatus::InvalidArgument(fmt::format("kvfs: path '{}' has a '{}' component", path, p));
  }
  if (parts.size() > 2) {
    return IOStatus::InvalidArgument(
        fmt::format("kvfs: path '{}' is {} levels deep; the kvfs has one directory level (/dir/name)", path,
                    parts.size()));
  }
  *out = KvPath{};
  if (!parts.empty()) out->dir = parts[0];
  if (parts.size() == 2) out->name = parts[1];
  return IOStatus::OK();
}

IOStatus parse_file(const std::string& path, KvPath* out) {
  IOStatus s = parse_path(path, out);
  if (s.ok() && !out->is_file())
    return IOStatus::InvalidArgument(fmt::format("kvfs: '{}' names a directory, not a file", path));
  return s;
}

bool dir_exists(const KvFs& fs, const std::string& dir) {
  std::vector<std::string> names;
  std::string why;
  return fs.list(dir, &names, &why) == 0;
}

class KvRocksWritableFile : public rocksdb::FSWritableFile {
 public:
  KvRocksWritableFile(KvRocksFileSystem* owner, std::unique_ptr<KvFsWritableFile> file)
      : owner_(owner), file_(std::move(file)) {}

  IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions&, rocksdb::IODebugContext*) override {
    owner_->count(KvRocksOp::kFileAppend);
    return run("Append", [&](std::string* why) { return file_->append({data.data(), data.size()}, why); });
  }
  // The checksum RocksDB hands along is not kept: the kvfs has no per-block
  // checksums of file data; RocksDB checks its own blocks on read.
  IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& opts, const rocksdb::DataVerificationInfo&,
                  rocksdb::IODebugContext* dbg) override {
    return Append(data, opts, dbg);
  }
  IOStatus Flush(const rocksdb::IOOptions&, rocksdb::IODebugContext*) override {
    owner_->count(KvRocksOp::kFileFlush);
    return run("Flush", [&](std::string* why) { return file_->flush(why); });
  }
  IOStatus Sync(const rocksdb::IOOptions&, rocksdb::IODebugContext*) override {
    owner_->count(KvRocksOp::kFileSync);
    return run("Sync", [&](std::string* why) { return file_->sync(why); });
  }
  IOStatus Fsync(const rocksdb::IOOptions& opts, rocksdb::IODebugContext* dbg) override { return Sync(opts, dbg); }
  // Whole blocks go to the device as the buffer fills, synchronously
  // (docs/kvfs.md 3.4; no write-behind yet): nothing is left to start.
  IOStatus RangeSync(uint64_t, uint64_t, const rocksdb::IOOptions&, rocksdb::IODebugContext*) override {
    return IOStatus::OK();
  }
  IOStatus Close(const rocksdb::IOOptions&, rocksdb::IODebugContext*) override {
    owner_->count(KvRocksOp::kFileClose);
    return run("Close", [&](std::string* why) { return file_->close(why); });
  }
  IOStatus Truncate(uint64_t size, const rocksdb::IOOptions&, rocksdb::IODebugContext*) override {
    owner_->count(KvRocksOp::kFileTruncate);
    return run("Truncate", [&](std::string* why) { return file_->truncate(size, why); });
  }
  uint64_t GetFileSize(const rocksdb::IOOptions&, rocksdb::IODebugContext*) override {
    try {
      return file_->size();
    } catch (...) {
      return 0;
    }
  }
  // KvFs has no preallocation yet (docs/kvfs.md section 9): a file's
  // extents grow as its blocks are written, so there is nothing to reserve
  // and the call succeeds as an advisory one does.
  IOStatus Allocate(uint64_t, uint64_t, const rocksdb::IOOptions&, rocksdb::IODebugContext*) override {
    owner_->count(KvRocksOp::kFileAllocate);
    return IOStatus::OK();
  }
  // Each file's state is under its node's mutex and sync snapshots the size
  // at entry: DBImpl::SyncWAL syncs from another thread than the appender.
  bool IsSyncThreadSafe() const override { return true; }
  bool use_direct_io() const override { return false; }

 private:
  template <typename Fn>
  IOStatus run(const char* what, Fn fn) {
    return guarded(what, [&] {
      std::string why;
      return status_of(fn(&why), why);
    });
  }
  KvRocksFileSystem* owner_;
  std::unique_ptr<KvFsWritableFile> file_;
};

// Reads for both file kinds: `direct` mirrors what RocksDB asked for, and
// RocksDB then aligns offsets, lengths and buffers to the kvfs block.
class KvRocksReader {
 public:
  KvRocksReader(std::unique_ptr<KvFsReadableFile> file, bool direct, uint64_t block)
      : file_(std::move(file)), direct_(direct), block_(block) {}
  IOStatus read(uint64_t offset, size_t n, rocksdb::Slice* result, char* scratch) const {
    return guarded("Read", [&] {
      std::string why;
      uint64_t got = 0;
      const int r = file_->read(offset, n, scratch, &got, &why);
      *result = rocksdb::Slice(scratch, r < 0 ? 0 : got);
      return status_of(r, why);
    });
  }
  uint64_t size() const { return file_->size(); }
  bool direct() const { return direct_; }
  size_t alignment() const { return block_; }

 private:
  std::unique_ptr<KvFsReadableFile> file_;
  const bool direct_;
  const uint64_t block_;
};

class KvRocksRandomAccessFile : public rocksdb::FSRandomAccessFile {
 public:
  KvRocksRandomAccessFile(KvRocksFileSystem* owner, KvRocksReader reader)
      : owner_(owner), reader_(std::move(reader)) {}
  IOStatus Read(uint64_t offset, size_t n, const rocksdb::IOOptions&, rocksdb::Slice* result, char* scratch,
                rocksdb::IODebugContext*) const override {
    owner_->count(KvRocksOp::kRandomRead);
    return reader_.read(offset, n, result, scratch);
  }
  bool use_direct_io() const override { return reader_.direct(); }
  size_t GetRequiredBufferAlignment() const override { return reader_.alignment(); }

 private:
  KvRocksFileSystem* owner_;
  KvRocksReader reader_;
};

class KvRocksSequentialFile : public rocksdb::FSSequentialFile {
 public:
  KvRocksSequentialFile(KvRocksFileSystem* owner, KvRocksReader reader) : owner_(owner), reader_(std::move(reader)) {}
  IOStatus Read(size_t n, const rocksdb::IOOptions&, rocksdb::Slice* result, char* scratch,
                rocksdb::IODebugContext*) override {
    owner_->count(KvRocksOp::kSequentialRead);
    IOStatus s = reader_.read(position_, n, result, scratch);
    if (s.ok()) position_ += result->size();
    return s;
  }
  IOStatus PositionedRead(uint64_t offset, size_t n, const rocksdb::IOOptions&, rocksdb::Slice* result,
                          char* scratch, rocksdb::IODebugContext*) override {
    owner_->count(KvRocksOp::kSequentialRead);
    return reader_.read(offset, n, result, scratch);
  }
  IOStatus Skip(uint64_t n) override {
    return guarded("Skip", [&] {
      position_ = std::min(position_ + n, reader_.size());
      return IOStatus::OK();
    });
  }
  bool use_direct_io() const override { return reader_.direct(); }
  size_t GetRequiredBufferAlignment() const override { return reader_.alignment(); }

 private:
  KvRocksFileSystem* owner_;
  KvRocksReader reader_;
  uint64_t position_ = 0;
};

// Every directory shares the kvfs's one log: a directory fsync makes every
// name change so far durable, in whatever directory.
class KvRocksDirectory : public rocksdb::FSDirectory {
 public:
  KvRocksDirectory(KvRocksFileSystem* owner, KvFs& fs) : owner_(owner), fs_(fs) {}
  IOStatus Fsync(const rocksdb::IOOptions&, rocksdb::IODebugContext*) override {
    owner_->count(KvRocksOp::kDirectoryFsync);
    return guarded("FSDirectory::Fsync", [&] {
      std::string why;
      return status_of(fs_.sync_log(&why), why);
    });
  }
#if ROCKSDB_MAJOR >= 7
  IOStatus Close(const rocksdb::IOOptions&, rocksdb::IODebugContext*) override { return IOStatus::OK(); }
#endif

 private:
  KvRocksFileSystem* owner_;
  KvFs& fs_;
};

struct KvRocksLock : rocksdb::FileLock {
  KvRocksLock(std::string d, std::string n) : dir(std::move(d)), name(std::move(n)) {}
  std::string dir;
  std::string name;
};

class KvRocksLogger : public rocksdb::Logger {
 public:
  KvRocksLogger() : rocksdb::Logger(rocksdb::InfoLogLevel::DEBUG_LEVEL) {}
  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override { Logv(rocksdb::InfoLogLevel::INFO_LEVEL, format, ap); }
  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    const LogLevel ours = level_of(level);
    if (static_cast<int>(ours) > static_cast<int>(log_level())) return;  // before the formatting cost
    try {
      char small[512];
      va_list again;
      va_copy(again, ap);
      const int n = std::vsnprintf(small, sizeof small, format, ap);
      std::string line;
      if (n >= 0 && static_cast<size_t>(n) < sizeof small) {
        line.assign(small, n);
      } else if (n >= 0) {
        line.resize(n + 1);
        std::vsnprintf(line.data(), line.size(), format, again);
        line.resize(n);
      }
      va_end(again);
      log_line(ours, "rocksdb: " + line);
    } catch (...) {
      // A log line lost is better than an exception inside RocksDB.
    }
  }

 private:
  // RocksDB logs every option and every flush at INFO: at our info level
  // that would bury the store's own lines.
  static LogLevel level_of(rocksdb::InfoLogLevel level) {
    switch (level) {
      case rocksdb::InfoLogLevel::WARN_LEVEL: return LogLevel::kWarn;
      case rocksdb::InfoLogLevel::ERROR_LEVEL:
      case rocksdb::InfoLogLevel::FATAL_LEVEL: return LogLevel::kError;
      default: return LogLevel::kDebug;
    }
  }
};

}  // namespace

const char* kv_rocks_op_name(KvRocksOp op) {
  const auto i = static_cast<size_t>(op);
  return i < static_cast<size_t>(KvRocksOp::kCount) ? kOpNames[i] : "?";
}

std::shared_ptr<rocksdb::Logger> make_kvfs_rocksdb_logger() { return std::make_shared<KvRocksLogger>(); }

// ---- files

IOStatus KvRocksFileSystem::NewSequentialFile(const std::string& fname, const rocksdb::FileOptions& file_opts,
                                              std::unique_ptr<rocksdb::FSSequentialFile>* result,
                                              rocksdb::IODebugContext*) {
  count(KvRocksOp::kNewSequentialFile);
  return guarded("NewSequentialFile", [&] {
    KvPath p;
    if (IOStatus s = parse_file(fname, &p); !s.ok()) return s;
    std::unique_ptr<KvFsReadableFile> file;
    std::string why;
    if (int r = fs_.open_readable(p.dir, p.name, &file, &why); r < 0) return status_of(r, why);
    *result = std::make_unique<KvRocksSequentialFile>(
        this, KvRocksReader(std::move(file), file_opts.use_direct_reads, fs_.block()));
    return IOStatus::OK();
  });
}

IOStatus KvRocksFileSystem::NewRandomAccessFile(const std::string& fname, const rocksdb::FileOptions& file_opts,
                                                std::unique_ptr<rocksdb::FSRandomAccessFile>* result,
                                                rocksdb::IODebugContext*) {
  count(KvRocksOp::kNewRandomAccessFile);
  return guarded("NewRandomAccessFile", [&] {
    KvPath p;
    if (IOStatus s = parse_file(fname, &p); !s.ok()) return s;
    std::unique_ptr<KvFsReadableFile> file;
    std::string why;
    if (int r = fs_.open_readable(p.dir, p.name, &file, &why); r < 0) return status_of(r, why);
    *result = std::make_unique<KvRocksRandomAccessFile>(
        this, KvRocksReader(std::move(file), file_opts.use_direct_reads, fs_.block()));
    return IOStatus::OK();
  });
}

IOStatus KvRocksFileSystem::NewWritableFile(const std::string& fname, const rocksdb::FileOptions&,
                                            std::unique_ptr<rocksdb::FSWritableFile>* result,
                                            rocksdb::IODebugContext*) {
  count(KvRocksOp::kNewWritableFile);
  return guarded("NewWritableFile", [&] {
    KvPath p;
    if (IOStatus s = parse_file(fname, &p); !s.ok()) return s;
    std::unique_ptr<KvFsWritableFile> file;
    std::string why;
    if (int r = fs_.open_writable(p.dir, p.name, &file, &why); r < 0) return status_of(r, why);
    *result = std::make_unique<KvRocksWritableFile>(this, std::move(file));
    return IOStatus::OK();
  });
}

// RocksDB reopens a WAL only to cut its preallocation: the handle takes
// Truncate and Close (docs/kvfs.md 3.4). A missing file is created empty,
// as a POSIX reopen would.
IOStatus KvRocksFileSystem::ReopenWritableFile(const std::string& fname, const rocksdb::FileOptions&,
                                               std::unique_ptr<rocksdb::FSWritableFile>* result,
                                               rocksdb::IODebugContext*) {
  count(KvRocksOp::kReopenWritableFile);
  return guarded("ReopenWritableFile", [&] {
    KvPath p;
    if (IOStatus s = parse_file(fname, &p); !s.ok()) return s;
    std::unique_ptr<KvFsWritableFile> file;
    std::string why;
    int r = fs_.reopen_for_truncate(p.dir, p.name, &file, &why);
    if (r == -ENOENT) r = fs_.open_writable(p.dir, p.name, &file, &why);
    if (r < 0) return status_of(r, why);
    *result = std::make_unique<KvRocksWritableFile>(this, std::move(file));
    return IOStatus::OK();
  });
}

IOStatus KvRocksFileSystem::Truncate(const std::string& fname, size_t size, const rocksdb::IOOptions&,
                                     rocksdb::IODebugContext*) {
  count(KvRocksOp::kTruncate);
  return guarded("Truncate", [&] {
    KvPath p;
    if (IOStatus s = parse_file(fname, &p); !s.ok()) return s;
    std::unique_ptr<KvFsWritableFile> file;
    std::string why;
    if (int r = fs_.reopen_for_truncate(p.dir, p.name, &file, &why); r < 0) return status_of(r, why);
    const int r = file->truncate(size, &why);
    std::string close_why;
    const int c = file->close(&close_why);
    return r < 0 ? status_of(r, why) : status_of(c, close_why);
  });
}

// ---- directories

IOStatus KvRocksFileSystem::NewDirectory(const std::string& name, const rocksdb::IOOptions&,
                                         std::unique_ptr<rocksdb::FSDirectory>* result, rocksdb::IODebugContext*) {
  count(KvRocksOp::kNewDirectory);
  return guarded("NewDirectory", [&] {
    KvPath p;
    if (IOStatus s = parse_path(name, &p); !s.ok()) return s;
    if (p.is_file()) return IOStatus::InvalidArgument(fmt::format("kvfs: '{}' is not a directory", name));
    if (p.is_dir() && !dir_exists(fs_, p.dir))
      return IOStatus::PathNotFound(fmt::format("kvfs: no directory '{}'", name));
    *result = std::make_unique<KvRocksDirectory>(this, fs_);
    return IOStatus::OK();
  });
}

IOStatus KvRocksFileSystem::CreateDir(const std::string& dirname, const rocksdb::IOOptions&,
                                      rocksdb::IODebugContext*) {
  count(KvRocksOp::kCreateDir);
  return guarded("CreateDir", [&] {
    KvPath p;
    if (IOStatus s = parse_path(dirname, &p); !s.ok()) return s;
    if (!p.is_dir()) return IOStatus::IOError(fmt::format("kvfs: cannot create '{}': it exists or is a file path", dirname));
    std::string why;
    return status_of(fs_.mkdir(p.dir, &why), why);
  });
}

IOStatus KvRocksFileSystem::CreateDirIfMissing(const std::string& dirname, const rocksdb::IOOptions&,
                                               rocksdb::IODebugContext*) {
  count(KvRocksOp::kCreateDirIfMissing);
  return guarded("CreateDirIfMissing", [&] {
    KvPath p;
    if (IOStatus s = parse_path(dirname, &p); !s.ok()) return s;
    if (p.is_root()) return IOStatus::OK();
    if (p.is_file()) return IOStatus::InvalidArgument(fmt::format("kvfs: '{}' is two levels deep", dirname));
    std::string why;
    const int r = fs_.mkdir(p.dir, &why);
    return r == -EEXIST ? IOStatus::OK() : status_of(r, why);
  });
}

IOStatus KvRocksFileSystem::DeleteDir(const std::string& dirname, const rocksdb::IOOptions&,
                                      rocksdb::IODebugContext*) {
  count(KvRocksOp::kDeleteDir);
  return guarded("DeleteDir", [&] {
    KvPath p;
    if (IOStatus s = parse_path(dirname, &p); !s.ok()) return s;
    if (!p.is_dir()) return IOStatus::InvalidArgument(fmt::format("kvfs: '{}' is not a directory", dirname));
    std::string why;
    return status_of(fs_.rmdir(p.dir, &why), why);
  });
}

IOStatus KvRocksFileSystem::IsDirectory(const std::string& path, const rocksdb::IOOptions&, bool* is_dir,
                                        rocksdb::IODebugContext*) {
  count(KvRocksOp::kIsDirectory);
  return guarded("IsDirectory", [&] {
    KvPath p;
    if (IOStatus s = parse_path(path, &p); !s.ok()) return s;
    if (p.is_root() || (p.is_dir() && dir_exists(fs_, p.dir))) {
      *is_dir = true;
      return IOStatus::OK();
    }
    uint64_t size = 0;
    std::string why;
    if (p.is_dir()) return IOStatus::PathNotFound(fmt::format("kvfs: no directory '{}'", path));
    *is_dir = false;
    return status_of(fs_.file_size(p.dir, p.name, &size, &why), why);
  });
}

IOStatus KvRocksFileSystem::GetChildren(const std::string& dir, const rocksdb::IOOptions&,
                                        std::vector<std::string>* result, rocksdb::IODebugContext*) {
  count(KvRocksOp::kGetChildren);
  return guarded("GetChildren", [&] {
    KvPath p;
    if (IOStatus s = parse_path(dir, &p); !s.ok()) return s;
    if (p.is_file()) return IOStatus::InvalidArgument(fmt::format("kvfs: '{}' is not a directory", dir));
    if (p.is_root()) {
      *result = fs_.list_dirs();
      return IOStatus::OK();
    }
    std::string why;
    return status_of(fs_.list(p.dir, result, &why), why);
  });
}

// Names and sizes under one look at the directory; a name that went away
// between the listing and its size is left out, as RocksDB's default does.
IOStatus KvRocksFileSystem::GetChildrenFileAttributes(const std::string& dir, const rocksdb::IOOptions&,
                                                      std::vector<rocksdb::FileAttributes>* result,
                                                      rocksdb::IODebugContext*) {
  count(KvRocksOp::kGetChildrenFileAttributes);
  return guarded("GetChildrenFileAttributes", [&] {
    KvPath p;
    if (IOStatus s = parse_path(dir, &p); !s.ok()) return s;
    if (!p.is_dir()) return IOStatus::InvalidArgument(fmt::format("kvfs: '{}' is not a directory of files", dir));
    std::vector<std::string> names;
    std::string why;
    if (int r = fs_.list(p.dir, &names, &why); r < 0) return status_of(r, why);
    result->clear();
    for (std::string& name : names) {
      rocksdb::FileAttributes a;
      const int r = fs_.file_size(p.dir, name, &a.size_bytes, &why);
      if (r == -ENOENT) continue;
      if (r < 0) return status_of(r, why);
      a.name = std::move(name);
      result->push_back(std::move(a));
    }
    return IOStatus::OK();
  });
}

// ---- names

IOStatus KvRocksFileSystem::FileExists(const std::string& fname, const rocksdb::IOOptions&,
                                       rocksdb::IODebugContext*) {
  count(KvRocksOp::kFileExists);
  return guarded("FileExists", [&] {
    KvPath p;
    if (IOStatus s = parse_path(fname, &p); !s.ok()) return s;
    if (p.is_root()) return IOStatus::OK();
    if (p.is_dir())
      return dir_exists(fs_, p.dir) ? IOStatus::OK() : IOStatus::NotFound(fmt::format("kvfs: no '{}'", fname));
    uint64_t size = 0;
    std::string why;
    const int r = fs_.file_size(p.dir, p.name, &size, &why);
    return r == -ENOENT ? IOStatus::NotFound(why) : status_of(r, why);
  });
}

IOStatus KvRocksFileSystem::GetFileSize(const std::string& fname, const rocksdb::IOOptions&, uint64_t* file_size,
                                        rocksdb::IODebugContext*) {
  count(KvRocksOp::kGetFileSize);
  return guarded("GetFileSize", [&] {
    KvPath p;
    if (IOStatus s = parse_file(fname, &p); !s.ok()) return s;
    std::string why;
    return status_of(fs_.file_size(p.dir, p.name, file_size, &why), why);
  });
}

IOStatus KvRocksFileSystem::GetFileModificationTime(const std::string& fname, const rocksdb::IOOptions&,
                                                    uint64_t* file_mtime, rocksdb::IODebugContext*) {
  count(KvRocksOp::kGetFileModificationTime);
  return guarded("GetFileModificationTime", [&] {
    KvPath p;
    if (IOStatus s = parse_file(fname, &p); !s.ok()) return s;
    std::string why;
    return status_of(fs_.file_mtime(p.dir, p.name, file_mtime, &why), why);
  });
}

IOStatus KvRocksFileSystem::RenameFile(const std::string& src, const std::string& target,
                                       const rocksdb::IOOptions&, rocksdb::IODebugContext*) {
  count(KvRocksOp::kRenameFile);
  return guarded("RenameFile", [&] {
    KvPath from, to;
    if (IOStatus s = parse_file(src, &from); !s.ok()) return s;
    if (IOStatus s = parse_file(target, &to); !s.ok()) return s;
    std::string why;
    return status_of(fs_.rename(from.dir, from.name, to.dir, to.name, &why), why);
  });
}

IOStatus KvRocksFileSystem::DeleteFile(const std::string& fname, const rocksdb::IOOptions&,
                                       rocksdb::IODebugContext*) {
  count(KvRocksOp::kDeleteFile);
  return guarded("DeleteFile", [&] {
    KvPath p;
    if (IOStatus s = parse_file(fname, &p); !s.ok()) return s;
    std::string why;
    return status_of(fs_.unlink(p.dir, p.name, &why), why);
  });
}

// A lock is a name in KvFs's in-process set; no file is made. A held lock
// is an IOError, which is what RocksDB reports for a second opener.
IOStatus KvRocksFileSystem::LockFile(const std::string& fname, const rocksdb::IOOptions&, rocksdb::FileLock** lock,
                                     rocksdb::IODebugContext*) {
  count(KvRocksOp::kLockFile);
  return guarded("LockFile", [&] {
    *lock = nullptr;
    KvPath p;
    if (IOStatus s = parse_file(fname, &p); !s.ok()) return s;
    auto held = std::make_unique<KvRocksLock>(p.dir, p.name);
    std::string why;
    if (int r = fs_.lock(p.dir, p.name, &why); r < 0) return IOStatus::IOError(why, strerror(-r));
    *lock = held.release();
    return IOStatus::OK();
  });
}

IOStatus KvRocksFileSystem::UnlockFile(rocksdb::FileLock* lock, const rocksdb::IOOptions&,
                                       rocksdb::IODebugContext*) {
  count(KvRocksOp::kUnlockFile);
  return guarded("UnlockFile", [&] {
    std::unique_ptr<KvRocksLock> held(static_cast<KvRocksLock*>(lock));
    if (!held) return IOStatus::InvalidArgument("kvfs: unlock of no lock");
    std::string why;
    return status_of(fs_.unlock(held->dir, held->name, &why), why);
  });
}

// ---- paths, the logger, space

IOStatus KvRocksFileSystem::GetAbsolutePath(const std::string& db_path, const rocksdb::IOOptions&,
                                            std::string* output_path, rocksdb::IODebugContext*) {
  count(KvRocksOp::kGetAbsolutePath);
  return guarded("GetAbsolutePath", [&] {
    KvPath p;
    if (IOStatus s = parse_path(db_path, &p); !s.ok()) return s;
    *output_path = p.is_root() ? "/" : p.is_dir() ? "/" + p.dir : "/" + p.dir + "/" + p.name;
    return IOStatus::OK();
  });
}

// RocksDB's test tools want a scratch directory; it is made on demand.
IOStatus KvRocksFileSystem::GetTestDirectory(const rocksdb::IOOptions&, std::string* path,
                                             rocksdb::IODebugContext*) {
  count(KvRocksOp::kGetTestDirectory);
  return guarded("GetTestDirectory", [&] {
    std::string why;
    const int r = fs_.mkdir("test", &why);
    if (r < 0 && r != -EEXIST) return status_of(r, why);
    *path = "/test";
    return IOStatus::OK();
  });
}

// apply_kvfs_rocksdb_options sets info_log, so RocksDB asks for a logger
// only when a caller did not; it gets the same one, never a LOG file.
IOStatus KvRocksFileSystem::NewLogger(const std::string&, const rocksdb::IOOptions&,
                                      std::shared_ptr<rocksdb::Logger>* result, rocksdb::IODebugContext*) {
  count(KvRocksOp::kNewLogger);
  return guarded("NewLogger", [&] {
    *result = make_kvfs_rocksdb_logger();
    return IOStatus::OK();
  });
}

// What the kvfs has free now and what its lender could still lend. Both
// count: RocksDB's SstFileManager clears a NoSpace error only once this
// answer exceeds its reserve, and a kvfs that grows on demand keeps little
// free of its own, so its free bytes alone would hold the error for good
// after the tier had room again.
IOStatus KvRocksFileSystem::GetFreeSpace(const std::string&, const rocksdb::IOOptions&, uint64_t* diskfree,
                                         rocksdb::IODebugContext*) {
  count(KvRocksOp::kGetFreeSpace);
  return guarded("GetFreeSpace", [&] {
    *diskfree = fs_.free_bytes() + fs_.growable_bytes();
    return IOStatus::OK();
  });
}

// ---- options (docs/kvfs.md 3.9)

namespace {

// Sets one option to what the kvfs needs; a value that is neither RocksDB's
// default nor that was the user's, and is named in `overridden`.
template <typename T>
void force(const char* name, T* value, const T& default_value, const T& wanted, std::vector<std::string>* overridden) {
  if (*value != wanted && *value != default_value) {
    HS_WARN("RocksDB on the kvfs: {} is set to {}; overriding it with {}", name, fmt::to_string(*value),
            fmt::to_string(wanted));
    overridden->push_back(name);
  }
  *value = wanted;
}

}  // namespace

std::vector<std::string> apply_kvfs_rocksdb_options(rocksdb::Env* env, std::shared_ptr<rocksdb::Logger> logger,
                                                    rocksdb::DBOptions* opts) {
  const rocksdb::DBOptions defaults;
  std::vector<std::string> overridden;
  if (opts->env != defaults.env && opts->env != env) {
    HS_WARN("RocksDB on the kvfs: options name another Env; the kvfs's replaces it");
    overridden.push_back("env");
  }
  opts->env = env;
  if (opts->info_log && opts->info_log != logger) {
    HS_WARN("RocksDB on the kvfs: options carry an info_log; the kvfs's logger replaces it");
    overridden.push_back("info_log");
  }
  opts->info_log = std::move(logger);
  force("use_direct_reads", &opts->use_direct_reads, defaults.use_direct_reads, true, &overridden);
  force("use_direct_io_for_flush_and_compaction", &opts->use_direct_io_for_flush_and_compaction,
        defaults.use_direct_io_for_flush_and_compaction, false, &overridden);
  force("compaction_readahead_size", &opts->compaction_readahead_size, defaults.compaction_readahead_size,
        size_t{2} << 20, &overridden);
  force("allow_mmap_reads", &opts->allow_mmap_reads, defaults.allow_mmap_reads, false, &overridden);
  force("allow_mmap_writes", &opts->allow_mmap_writes, defaults.allow_mmap_writes, false, &overridden);
  force("recycle_log_file_num", &opts->recycle_log_file_num, defaults.recycle_log_file_num, size_t{0},
        &overridden);
  force("avoid_flush_during_recovery", &opts->avoid_flush_during_recovery, defaults.avoid_flush_during_recovery,
        true, &overridden);
  force("WAL_ttl_seconds", &opts->WAL_ttl_seconds, defaults.WAL_ttl_seconds, uint64_t{0}, &overridden);
  force("WAL_size_limit_MB", &opts->WAL_size_limit_MB, defaults.WAL_size_limit_MB, uint64_t{0}, &overridden);
  return overridden;
}

}  // namespace hybridstore
#endif  // HS_HAVE_KVFS_ROCKSDB
