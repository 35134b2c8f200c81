// A rocksdb::FileSystem wrapper that makes RocksDB lose, at an injected power
// cut, exactly what its files had not made durable (fault_injection.h has the
// model): unsynced file data, and name changes made since the last fsync of
// their directory.
//
// While the power is on, everything goes to the wrapped file system at once
// and the wrapper only keeps books: per file written, its length and the
// length its last successful sync covered; per directory, the name changes
// since its last fsync, with hard links ("shadows", in <store>/.fault-injection)
// to files a rename replaced or a delete removed, so they can come back. At the
// cut the books freeze and every later change fails. apply_loss() then rewinds
// the files to the frozen books.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <rocksdb/file_system.h>

namespace hybridstore {

class FaultInjector;

class FaultInjectionFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  // `shadow_dir` is created on first use and removed by apply_loss().
  FaultInjectionFileSystem(std::shared_ptr<rocksdb::FileSystem> base, FaultInjector* injector,
                           std::string shadow_dir);
  ~FaultInjectionFileSystem() override;

  const char* Name() const override { return "HybridStoreFaultInjectionFileSystem"; }

  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                       std::unique_ptr<rocksdb::FSWritableFile>* r,
                                       rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReuseWritableFile(const std::string& f, const std::string& old,
                                      const rocksdb::FileOptions& o,
                                      std::unique_ptr<rocksdb::FSWritableFile>* r,
                                      rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus NewRandomRWFile(const std::string& f, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSRandomRWFile>* r,
                                    rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus NewDirectory(const std::string& name, const rocksdb::IOOptions& o,
                                 std::unique_ptr<rocksdb::FSDirectory>* r,
                                 rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus DeleteFile(const std::string& f, const rocksdb::IOOptions& o,
                               rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus RenameFile(const std::string& src, const std::string& dst,
                               const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus LinkFile(const std::string& src, const std::string& dst,
                             const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus Truncate(const std::string& f, size_t size, const rocksdb::IOOptions& o,
                             rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus CreateDir(const std::string& d, const rocksdb::IOOptions& o,
                              rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus CreateDirIfMissing(const std::string& d, const rocksdb::IOOptions& o,
                                       rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus DeleteDir(const std::string& d, const rocksdb::IOOptions& o,
                              rocksdb::IODebugContext* dbg) override;

  // ---- the books
  struct FileBooks {
    uint64_t size = 0;    // bytes written
    uint64_t synced = 0;  // bytes a successful sync covered (what survives)
  };
  // Called by the injector at the cut, with its mutex held: from now on the
  // books do not change and every change to the files fails.
  void freeze();
  // Rewinds the files to the frozen books. Returns 0 or -EIO with *error
  // (everything that could be rewound was).
  int apply_loss(std::string* error);
  bool frozen() const;
  FaultInjector* injector() const { return injector_; }

  // ---- for the file and directory wrappers; each is ignored once frozen
  uint64_t written_size(const std::shared_ptr<FileBooks>& b) const;
  void note_written(const std::shared_ptr<FileBooks>& b, uint64_t new_size);
  // False when the books froze while the sync ran: it did not complete
  // before the power failed.
  bool note_synced(const std::shared_ptr<FileBooks>& b, uint64_t covered);
  void note_truncated(const std::shared_ptr<FileBooks>& b, uint64_t size);
  // Tear: the file whose append the power cut (already written through,
  // now `new_size` bytes) keeps a random 4 KiB-granular part of its unsynced
  // tail: a 4 KiB boundary past its synced length, or its new end.
  void note_torn(const std::shared_ptr<FileBooks>& b, uint64_t new_size);
  // Name changes in `dir` logged before `seq` are durable.
  void note_dir_synced(const std::string& dir, uint64_t seq);
  uint64_t name_seq() const;  // the sequence the next name change gets

 private:
  enum class NameOp { kCreate, kRename, kDelete };
  struct NameChange {
    uint64_t seq;
    std::string dir;
    NameOp op;
    std::string name;     // created / deleted / rename destination
    std::string from;     // rename source
    std::string shadow;   // link to the file a rename replaced or a delete removed; may be empty
    std::shared_ptr<FileBooks> books;  // books of the shadowed file, if it was written here
  };

  rocksdb::IOStatus dead() const;
  rocksdb::IOStatus wrap_new(const std::string& f, bool existed, uint64_t size,
                             std::unique_ptr<rocksdb::FSWritableFile>* r);
  std::string make_shadow(const std::string& f);  // empty on failure (logged)
  void log_change(NameChange c);                  // mutex_ held; fills seq and dir

  FaultInjector* const injector_;
  const std::string shadow_dir_;
  mutable std::mutex mutex_;
  bool frozen_ = false;
  uint64_t next_shadow_ = 0;
  uint64_t next_seq_ = 1;
  std::map<std::string, std::shared_ptr<FileBooks>> files_;  // by current (normalized) name
  std::vector<NameChange> changes_;  // not yet covered by a directory fsync, oldest first
  uint64_t torn_keep_ = 0;
  std::shared_ptr<FileBooks> torn_;
};

}  // namespace hybridstore
