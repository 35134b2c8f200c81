#include "testing/fault_kv_fs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "hscommon/log.h"
#include "testing/fault_injection.h"

namespace hybridstore {

using rocksdb::FileOptions;
using rocksdb::FSDirectory;
using rocksdb::FSWritableFile;
using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;
using rocksdb::Slice;
using Books = FaultInjectionFileSystem::FileBooks;

namespace {

std::string norm(const std::string& f) { return std::filesystem::path(f).lexically_normal().string(); }
std::string dir_of(const std::string& f) {
  return std::filesystem::path(f).lexically_normal().parent_path().string();
}
IOStatus power_off_error() { return IOStatus::IOError("hybridstore fault injection: the power is off"); }
IOStatus injected_error(const char* what) {
  return IOStatus::IOError(std::string("hybridstore fault injection: injected EIO on ") + what);
}

// Forwards to the real file and keeps the books; fails once the power is off.
class FaultWritableFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  FaultWritableFile(std::unique_ptr<FSWritableFile> f, FaultInjectionFileSystem* fs, std::shared_ptr<Books> b)
      : FSWritableFileOwnerWrapper(std::move(f)), fs_(fs), books_(std::move(b)) {}

  IOStatus Append(const Slice& d, const IOOptions& o, IODebugContext* dbg) override {
    uint64_t end = fs_->written_size(books_) + d.size();
    return append(end, [&] { return FSWritableFileOwnerWrapper::Append(d, o, dbg); });
  }
  IOStatus Append(const Slice& d, const IOOptions& o, const rocksdb::DataVerificationInfo& v,
                  IODebugContext* dbg) override {
    uint64_t end = fs_->written_size(books_) + d.size();
    return append(end, [&] { return FSWritableFileOwnerWrapper::Append(d, o, v, dbg); });
  }
  IOStatus PositionedAppend(const Slice& d, uint64_t off, const IOOptions& o, IODebugContext* dbg) override {
    uint64_t end = std::max<uint64_t>(fs_->written_size(books_), off + d.size());
    return append(end, [&] { return FSWritableFileOwnerWrapper::PositionedAppend(d, off, o, dbg); });
  }
  IOStatus PositionedAppend(const Slice& d, uint64_t off, const IOOptions& o,
                            const rocksdb::DataVerificationInfo& v, IODebugContext* dbg) override {
    uint64_t end = std::max<uint64_t>(fs_->written_size(books_), off + d.size());
    return append(end, [&] { return FSWritableFileOwnerWrapper::PositionedAppend(d, off, o, v, dbg); });
  }
  IOStatus Truncate(uint64_t size, const IOOptions& o, IODebugContext* dbg) override {
    if (fs_->frozen()) return power_off_error();
    IOStatus s = FSWritableFileOwnerWrapper::Truncate(size, o, dbg);
    if (s.ok()) fs_->note_truncated(books_, size);
    return s;
  }
  IOStatus Flush(const IOOptions& o, IODebugContext* dbg) override {
    if (fs_->frozen()) return power_off_error();
    return FSWritableFileOwnerWrapper::Flush(o, dbg);
  }
  IOStatus Sync(const IOOptions& o, IODebugContext* dbg) override {
    return sync([&] { return FSWritableFileOwnerWrapper::Sync(o, dbg); });
  }
  IOStatus Fsync(const IOOptions& o, IODebugContext* dbg) override {
    return sync([&] { return FSWritableFileOwnerWrapper::Fsync(o, dbg); });
  }
  // sync_file_range: starts write-back, promises nothing; not a durability point.
  IOStatus RangeSync(uint64_t off, uint64_t n, const IOOptions& o, IODebugContext* dbg) override {
    if (fs_->frozen()) return power_off_error();
    return FSWritableFileOwnerWrapper::RangeSync(off, n, o, dbg);
  }

 private:
  template <typename Fn>
  IOStatus append(uint64_t new_size, Fn&& forward) {
    FaultInjector* inj = fs_->injector();
    switch (inj->on_kv_append()) {
      case FaultInjector::Verdict::kFail:
        return power_off_error();
      case FaultInjector::Verdict::kPowerCut:
        // The bytes must be in the file for part of them to survive.
        if (inj->tear() && forward().ok()) fs_->note_torn(books_, new_size);
        return power_off_error();
      case FaultInjector::Verdict::kProceed:
        break;
    }
    IOStatus s = forward();
    if (s.ok()) fs_->note_written(books_, new_size);
    return s;
  }
  template <typename Fn>
  IOStatus sync(Fn&& forward) {
    if (fs_->injector()->on_kv_sync() != FaultInjector::Verdict::kProceed)
      return fs_->frozen() ? power_off_error() : injected_error("a RocksDB file sync");
    const uint64_t covered = fs_->written_size(books_);
    IOStatus s = forward();
    if (!s.ok()) return s;
    if (!fs_->note_synced(books_, covered)) return power_off_error();
    return s;
  }

  FaultInjectionFileSystem* const fs_;
  const std::shared_ptr<Books> books_;
};

class FaultDirectory final : public rocksdb::FSDirectoryWrapper {
 public:
  FaultDirectory(std::unique_ptr<FSDirectory> d, FaultInjectionFileSystem* fs, std::string dir)
      : FSDirectoryWrapper(std::move(d)), fs_(fs), dir_(std::move(dir)) {}
  IOStatus Fsync(const IOOptions& o, IODebugContext* dbg) override {
    return sync([&] { return FSDirectoryWrapper::Fsync(o, dbg); });
  }
  IOStatus FsyncWithDirOptions(const IOOptions& o, IODebugContext* dbg,
                               const rocksdb::DirFsyncOptions& d) override {
    return sync([&] { return FSDirectoryWrapper::FsyncWithDirOptions(o, dbg, d); });
  }

 private:
  template <typename Fn>
  IOStatus sync(Fn&& forward) {
    if (fs_->frozen()) return power_off_error();
    const uint64_t seq = fs_->name_seq();
    IOStatus s = forward();
    if (s.ok()) fs_->note_dir_synced(dir_, seq);
    return s;
  }
  FaultInjectionFileSystem* const fs_;
  const std::string dir_;
};

}  // namespace

FaultInjectionFileSystem::FaultInjectionFileSystem(std::shared_ptr<rocksdb::FileSystem> base,
                                                   FaultInjector* injector, std::string shadow_dir)
    : FileSystemWrapper(base), injector_(injector), shadow_dir_(std::move(shadow_dir)) {}

FaultInjectionFileSystem::~FaultInjectionFileSystem() {
  // Shadows of a store that never lost power are only bookkeeping.
  if (!frozen()) {
    std::error_code ec;
    std::filesystem::remove_all(shadow_dir_, ec);
  }
}

IOStatus FaultInjectionFileSystem::dead() const { return power_off_error(); }

bool FaultInjectionFileSystem::frozen() const {
  std::lock_guard<std::mutex> l(mutex_);
  return frozen_;
}

void FaultInjectionFileSystem::freeze() {
  std::lock_guard<std::mutex> l(mutex_);
  frozen_ = true;
}

uint64_t FaultInjectionFileSystem::written_size(const std::shared_ptr<FileBooks>& b) const {
  std::lock_guard<std::mutex> l(mutex_);
  return b->size;
}

void FaultInjectionFileSystem::note_written(const std::shared_ptr<FileBooks>& b, uint64_t new_size) {
  std::lock_guard<std::mutex> l(mutex_);
  if (!frozen_) b->size = new_size;
}

bool FaultInjectionFileSystem::note_synced(const std::shared_ptr<FileBooks>& b, uint64_t covered) {
  std::lock_guard<std::mutex> l(mutex_);
  if (frozen_) return false;
  b->synced = std::max(b->synced, std::min(covered, b->size));
  return true;
}

void FaultInjectionFileSystem::note_truncated(const std::shared_ptr<FileBooks>& b, uint64_t size) {
  std::lock_guard<std::mutex> l(mutex_);
  if (frozen_) return;
  b->size = size;
  b->synced = std::min(b->synced, size);
}

void FaultInjectionFileSystem::note_torn(const std::shared_ptr<FileBooks>& b, uint64_t new_size) {
  uint64_t synced;
  {
    std::lock_guard<std::mutex> l(mutex_);
    synced = b->synced;
  }
  constexpr uint64_t kBlock = 4096;
  std::vector<uint64_t> candidates;
  for (uint64_t k = synced / kBlock + 1; k * kBlock < new_size; ++k) candidates.push_back(k * kBlock);
  if (new_size > synced) candidates.push_back(new_size);
  if (candidates.empty()) return;
  // The injector's mutex is free here: the cut has completed.
  uint64_t keep = candidates[injector_->random_below(candidates.size())];
  std::lock_guard<std::mutex> l(mutex_);
  torn_ = b;
  torn_keep_ = keep;
}

uint64_t FaultInjectionFileSystem::name_seq() const {
  std::lock_guard<std::mutex> l(mutex_);
  return next_seq_;
}

void FaultInjectionFileSystem::note_dir_synced(const std::string& dir, uint64_t seq) {
  std::lock_guard<std::mutex> l(mutex_);
  if (frozen_) return;
  const std::string d = norm(dir);
  std::vector<NameChange> keep;
  for (auto& c : changes_) {
    if (c.dir == d && c.seq < seq) {
      if (!c.shadow.empty()) ::unlink(c.shadow.c_str());
    } else {
      keep.push_back(std::move(c));
    }
  }
  changes_.swap(keep);
}

void FaultInjectionFileSystem::log_change(NameChange c) {
  c.seq = next_seq_++;
  c.dir = dir_of(c.name);
  changes_.push_back(std::move(c));
}

std::string FaultInjectionFileSystem::make_shadow(const std::string& f) {
  std::error_code ec;
  std::filesystem::create_directories(shadow_dir_, ec);
  std::string shadow;
  {
    std::lock_guard<std::mutex> l(mutex_);
    shadow = shadow_dir_ + "/shadow-" + std::to_string(next_shadow_++);
  }
  if (::link(f.c_str(), shadow.c_str()) < 0) {
    HS_WARN("fault injection: cannot keep a shadow of {} ({}): a power cut will not bring it back", f,
            strerror(errno));
    return "";
  }
  return shadow;
}

IOStatus FaultInjectionFileSystem::wrap_new(const std::string& f, bool existed, uint64_t size,
                                            std::unique_ptr<FSWritableFile>* r) {
  std::shared_ptr<FileBooks> books;
  {
    std::lock_guard<std::mutex> l(mutex_);
    auto& slot = files_[norm(f)];
    if (!slot || !existed) slot = std::make_shared<FileBooks>(FileBooks{size, size});
    books = slot;
    if (!existed) log_change({0, "", NameOp::kCreate, norm(f), "", "", nullptr});
  }
  *r = std::make_unique<FaultWritableFile>(std::move(*r), this, std::move(books));
  return IOStatus::OK();
}

IOStatus FaultInjectionFileSystem::NewWritableFile(const std::string& f, const FileOptions& o,
                                                   std::unique_ptr<FSWritableFile>* r, IODebugContext* dbg) {
  if (frozen()) return dead();
  const bool existed = target()->FileExists(f, IOOptions(), nullptr).ok();
  IOStatus s = target()->NewWritableFile(f, o, r, dbg);
  if (!s.ok()) return s;
  if (existed) {
    // Opening truncates: the old bytes are no more durable than new ones.
    std::lock_guard<std::mutex> l(mutex_);
    files_[norm(f)] = std::make_shared<FileBooks>();
  }
  return wrap_new(f, existed, 0, r);
}

IOStatus FaultInjectionFileSystem::ReopenWritableFile(const std::string& f, const FileOptions& o,
                                                      std::unique_ptr<FSWritableFile>* r, IODebugContext* dbg) {
  if (frozen()) return dead();
  const bool existed = target()->FileExists(f, IOOptions(), nullptr).ok();
  IOStatus s = target()->ReopenWritableFile(f, o, r, dbg);
  if (!s.ok()) return s;
  uint64_t size = 0;
  if (existed) target()->GetFileSize(f, IOOptions(), &size, nullptr);
  return wrap_new(f, existed, size, r);
}

IOStatus FaultInjectionFileSystem::ReuseWritableFile(const std::string&, const std::string&, const FileOptions&,
                                                     std::unique_ptr<FSWritableFile>*, IODebugContext*) {
  return IOStatus::NotSupported(
      "hybridstore fault injection does not model recycled RocksDB log files (recycle_log_file_num must be 0)");
}

IOStatus FaultInjectionFileSystem::NewRandomRWFile(const std::string& f, const FileOptions& o,
                                                   std::unique_ptr<rocksdb::FSRandomRWFile>* r,
                                                   IODebugContext* dbg) {
  // Not used by the store's RocksDB configuration; not modelled beyond the cut.
  if (frozen()) return dead();
  return target()->NewRandomRWFile(f, o, r, dbg);
}

IOStatus FaultInjectionFileSystem::NewDirectory(const std::string& name, const IOOptions& o,
                                                std::unique_ptr<FSDirectory>* r, IODebugContext* dbg) {
  IOStatus s = target()->NewDirectory(name, o, r, dbg);
  if (s.ok()) *r = std::make_unique<FaultDirectory>(std::move(*r), this, norm(name));
  return s;
}

IOStatus FaultInjectionFileSystem::DeleteFile(const std::string& f, const IOOptions& o, IODebugContext* dbg) {
  if (frozen()) return dead();
  std::string shadow = make_shadow(f);
  IOStatus s = target()->DeleteFile(f, o, dbg);
  if (!s.ok()) {
    if (!shadow.empty()) ::unlink(shadow.c_str());
    return s;
  }
  std::lock_guard<std::mutex> l(mutex_);
  std::shared_ptr<FileBooks> books;
  if (auto it = files_.find(norm(f)); it != files_.end()) {
    books = it->second;
    files_.erase(it);
  }
  log_change({0, "", NameOp::kDelete, norm(f), "", shadow, books});
  return s;
}

IOStatus FaultInjectionFileSystem::RenameFile(const std::string& src, const std::string& dst, const IOOptions& o,
                                              IODebugContext* dbg) {
  if (frozen()) return dead();
  std::string shadow;
  if (target()->FileExists(dst, IOOptions(), nullptr).ok()) shadow = make_shadow(dst);
  IOStatus s = target()->RenameFile(src, dst, o, dbg);
  if (!s.ok()) {
    if (!shadow.empty()) ::unlink(shadow.c_str());
    return s;
  }
  std::lock_guard<std::mutex> l(mutex_);
  std::shared_ptr<FileBooks> replaced, moved;
  if (auto it = files_.find(norm(dst)); it != files_.end()) {
    replaced = it->second;
    files_.erase(it);
  }
  if (auto it = files_.find(norm(src)); it != files_.end()) {
    moved = it->second;
    files_.erase(it);
  }
  if (moved) files_[norm(dst)] = moved;
  log_change({0, "", NameOp::kRename, norm(dst), norm(src), shadow, replaced});
  return s;
}

IOStatus FaultInjectionFileSystem::LinkFile(const std::string& src, const std::string& dst, const IOOptions& o,
                                            IODebugContext* dbg) {
  if (frozen()) return dead();
  IOStatus s = target()->LinkFile(src, dst, o, dbg);
  if (!s.ok()) return s;
  std::lock_guard<std::mutex> l(mutex_);
  if (auto it = files_.find(norm(src)); it != files_.end()) files_[norm(dst)] = it->second;
  log_change({0, "", NameOp::kCreate, norm(dst), "", "", nullptr});
  return s;
}

IOStatus FaultInjectionFileSystem::Truncate(const std::string& f, size_t size, const IOOptions& o,
                                            IODebugContext* dbg) {
  if (frozen()) return dead();
  IOStatus s = target()->Truncate(f, size, o, dbg);
  if (s.ok()) {
    std::lock_guard<std::mutex> l(mutex_);
    if (auto it = files_.find(norm(f)); it != files_.end()) {
      it->second->size = size;
      it->second->synced = std::min<uint64_t>(it->second->synced, size);
    }
  }
  return s;
}

IOStatus FaultInjectionFileSystem::CreateDir(const std::string& d, const IOOptions& o, IODebugContext* dbg) {
  if (frozen()) return dead();
  return target()->CreateDir(d, o, dbg);
}

IOStatus FaultInjectionFileSystem::CreateDirIfMissing(const std::string& d, const IOOptions& o,
                                                      IODebugContext* dbg) {
  if (frozen()) return dead();
  return target()->CreateDirIfMissing(d, o, dbg);
}

IOStatus FaultInjectionFileSystem::DeleteDir(const std::string& d, const IOOptions& o, IODebugContext* dbg) {
  if (frozen()) return dead();
  return target()->DeleteDir(d, o, dbg);
}

int FaultInjectionFileSystem::apply_loss(std::string* error) {
  std::lock_guard<std::mutex> l(mutex_);
  if (!frozen_) return 0;
  int failures = 0;
  auto failed = [&](const std::string& what) {
    HS_ERROR("fault injection: restoring power: {}: {}", what, strerror(errno));
    if (!failures++ && error) *error = "restoring power: " + what + ": " + strerror(errno);
  };
  size_t undone = changes_.size();
  // Name changes, newest first.
  for (auto it = changes_.rbegin(); it != changes_.rend(); ++it) {
    const NameChange& c = *it;
    switch (c.op) {
      case NameOp::kCreate:
        if (::unlink(c.name.c_str()) < 0 && errno != ENOENT) failed("unlink " + c.name);
        files_.erase(c.name);
        break;
      case NameOp::kRename: {
        if (::rename(c.name.c_str(), c.from.c_str()) < 0) failed("rename " + c.name + " back to " + c.from);
        auto f = files_.find(c.name);
        if (f != files_.end()) {
          files_[c.from] = f->second;
          files_.erase(c.name);
        }
        if (!c.shadow.empty()) {
          if (::link(c.shadow.c_str(), c.name.c_str()) < 0) failed("bring back " + c.name);
          if (c.books) files_[c.name] = c.books;
        }
        break;
      }
      case NameOp::kDelete:
        if (!c.shadow.empty()) {
          if (::link(c.shadow.c_str(), c.name.c_str()) < 0) failed("bring back " + c.name);
          if (c.books) files_[c.name] = c.books;
        }
        break;
    }
  }
  changes_.clear();
  // Then data: each file back to what its last sync covered.
  size_t cut = 0;
  for (const auto& [name, b] : files_) {
    uint64_t keep = (b == torn_) ? torn_keep_ : b->synced;
    struct stat st;
    if (::stat(name.c_str(), &st) < 0) continue;  // removed before the cut, and durably so
    if (static_cast<uint64_t>(st.st_size) > keep) {
      if (::truncate(name.c_str(), static_cast<off_t>(keep)) < 0)
        failed("truncate " + name);
      else
        ++cut;
    }
  }
  files_.clear();
  std::error_code ec;
  std::filesystem::remove_all(shadow_dir_, ec);
  HS_WARN("fault injection: power restored: {} name changes undone, {} files cut back to their synced length",
          undone, cut);
  return failures ? -EIO : 0;
}

}  // namespace hybridstore
