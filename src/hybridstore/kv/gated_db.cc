#include "hybridstore/kv/gated_db.h"

#include <mutex>

namespace hybridstore::kv {

rocksdb::Status GatedDb::refused() const {
  return rocksdb::Status::IOError("an earlier RocksDB write or WAL flush failed; nothing more is written");
}

rocksdb::Status GatedDb::note(rocksdb::Status s) {
  // Busy and incomplete are answers, not failures of the WAL.
  if (!s.ok() && !s.IsBusy() && !s.IsIncomplete() && !s.IsInvalidArgument())
    failed_.store(true, std::memory_order_release);
  return s;
}

rocksdb::Status GatedDb::Write(const rocksdb::WriteOptions& wo, rocksdb::WriteBatch* batch) {
  std::shared_lock<std::shared_mutex> l(gate_);
  if (failed()) return refused();
  return note(StackableDB::Write(wo, batch));
}

// A single-key write as a one-entry batch through Write, so through the gate.
template <typename Fill>
static rocksdb::Status write_one(GatedDb* db, const rocksdb::WriteOptions& wo, Fill fill) {
  rocksdb::WriteBatch b;
  if (rocksdb::Status s = fill(b); !s.ok()) return s;
  return db->Write(wo, &b);
}

rocksdb::Status GatedDb::Put(const rocksdb::WriteOptions& wo, rocksdb::ColumnFamilyHandle* cf,
                             const rocksdb::Slice& key, const rocksdb::Slice& value) {
  return write_one(this, wo, [&](rocksdb::WriteBatch& b) { return b.Put(cf, key, value); });
}

rocksdb::Status GatedDb::Delete(const rocksdb::WriteOptions& wo, rocksdb::ColumnFamilyHandle* cf,
                                const rocksdb::Slice& key) {
  return write_one(this, wo, [&](rocksdb::WriteBatch& b) { return b.Delete(cf, key); });
}

rocksdb::Status GatedDb::SingleDelete(const rocksdb::WriteOptions& wo, rocksdb::ColumnFamilyHandle* cf,
                                      const rocksdb::Slice& key) {
  return write_one(this, wo, [&](rocksdb::WriteBatch& b) { return b.SingleDelete(cf, key); });
}

rocksdb::Status GatedDb::DeleteRange(const rocksdb::WriteOptions& wo, rocksdb::ColumnFamilyHandle* cf,
                                     const rocksdb::Slice& begin, const rocksdb::Slice& end) {
  return write_one(this, wo, [&](rocksdb::WriteBatch& b) { return b.DeleteRange(cf, begin, end); });
}

rocksdb::Status GatedDb::Merge(const rocksdb::WriteOptions& wo, rocksdb::ColumnFamilyHandle* cf,
                               const rocksdb::Slice& key, const rocksdb::Slice& value) {
  return write_one(this, wo, [&](rocksdb::WriteBatch& b) { return b.Merge(cf, key, value); });
}

rocksdb::Status GatedDb::FlushWAL(bool sync) {
  {
    std::unique_lock<std::shared_mutex> l(gate_);
    if (failed()) return refused();
    if (rocksdb::Status s = note(StackableDB::FlushWAL(false)); !s.ok()) return s;
  }
  return sync ? SyncWAL() : rocksdb::Status::OK();
}

rocksdb::Status GatedDb::SyncWAL() {
  std::shared_lock<std::shared_mutex> l(gate_);
  if (failed()) return refused();
  return note(StackableDB::SyncWAL());
}

}  // namespace hybridstore::kv
