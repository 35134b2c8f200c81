// The store's RocksDB handle. Once a write to RocksDB's WAL has failed, the
// WAL writer must not be touched again: RocksDB built with assertions (as
// Debian's librocksdb.a is) aborts, and only the failures RocksDB records
// itself stop later writes. Two gaps are ours to close. FlushWAL in one
// thread (the deferred writer's) may fail while another thread's Write is
// about to append to the same WAL: RocksDB records the failure only after
// it has let go of the log. And a FlushWAL after a failed Write appends to
// the failed writer with no check at all. A power-cut test aborted on the
// first of these, one run in a dozen.
//
// So every write, WAL flush and WAL sync goes through this wrapper: after
// any of them fails none reaches RocksDB again (each returns an IOError),
// and writing FlushWAL's buffer excludes writes while it runs (a write()
// of what manual_wal_flush buffered, no fsync; the sync that follows runs
// beside writes as before).
#pragma once

#include <rocksdb/utilities/stackable_db.h>

#include <atomic>
#include <shared_mutex>

namespace hybridstore::kv {

class GatedDb : public rocksdb::StackableDB {
 public:
  explicit GatedDb(rocksdb::DB* db) : StackableDB(db) {}

  using rocksdb::StackableDB::Delete;
  using rocksdb::StackableDB::DeleteRange;
  using rocksdb::StackableDB::Merge;
  using rocksdb::StackableDB::Put;
  using rocksdb::StackableDB::SingleDelete;

  rocksdb::Status Write(const rocksdb::WriteOptions& wo, rocksdb::WriteBatch* batch) override;
  // The single-key writes go through Write, so through the gate.
  rocksdb::Status Put(const rocksdb::WriteOptions& wo, rocksdb::ColumnFamilyHandle* cf, const rocksdb::Slice& key,
                      const rocksdb::Slice& value) override;
  rocksdb::Status Delete(const rocksdb::WriteOptions& wo, rocksdb::ColumnFamilyHandle* cf,
                         const rocksdb::Slice& key) override;
  rocksdb::Status SingleDelete(const rocksdb::WriteOptions& wo, rocksdb::ColumnFamilyHandle* cf,
                               const rocksdb::Slice& key) override;
  rocksdb::Status DeleteRange(const rocksdb::WriteOptions& wo, rocksdb::ColumnFamilyHandle* cf,
                              const rocksdb::Slice& begin, const rocksdb::Slice& end) override;
  rocksdb::Status Merge(const rocksdb::WriteOptions& wo, rocksdb::ColumnFamilyHandle* cf, const rocksdb::Slice& key,
                        const rocksdb::Slice& value) override;
  rocksdb::Status FlushWAL(bool sync) override;
  rocksdb::Status SyncWAL() override;

  // True once a write, WAL flush or WAL sync failed.
  bool failed() const { return failed_.load(std::memory_order_acquire); }

 private:
  rocksdb::Status refused() const;
  rocksdb::Status note(rocksdb::Status s);

  // Shared by writes and WAL syncs, exclusive while FlushWAL writes its
  // buffer.
  std::shared_mutex gate_;
  std::atomic<bool> failed_{false};
};

}  // namespace hybridstore::kv
