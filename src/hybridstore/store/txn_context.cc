#include "hybridstore/store/txn_context.h"

namespace hybridstore {

rocksdb::WriteBatchWithIndex* TxnBatch::indexed() {
  if (indexed_) return indexed_.get();
  // The records so far, replayed in order into the index (later ones win,
  // as they will in RocksDB).
  class Replay : public rocksdb::WriteBatch::Handler {
   public:
    explicit Replay(rocksdb::WriteBatchWithIndex* to) : to_(to) {}
    // The store writes the default column family only.
    rocksdb::Status PutCF(uint32_t cf, const rocksdb::Slice& k, const rocksdb::Slice& v) override {
      return cf ? rocksdb::Status::NotSupported() : to_->Put(k, v);
    }
    rocksdb::Status DeleteCF(uint32_t cf, const rocksdb::Slice& k) override {
      return cf ? rocksdb::Status::NotSupported() : to_->Delete(k);
    }
    rocksdb::Status SingleDeleteCF(uint32_t cf, const rocksdb::Slice& k) override {
      return cf ? rocksdb::Status::NotSupported() : to_->SingleDelete(k);
    }
    rocksdb::Status MergeCF(uint32_t cf, const rocksdb::Slice& k, const rocksdb::Slice& v) override {
      return cf ? rocksdb::Status::NotSupported() : to_->Merge(k, v);
    }

   private:
    rocksdb::WriteBatchWithIndex* to_;
  };
  auto idx = std::make_unique<rocksdb::WriteBatchWithIndex>(rocksdb::BytewiseComparator(), 0, true);
  Replay r(idx.get());
  if (!plain_.Iterate(&r).ok()) return nullptr;
  plain_.Clear();
  indexed_ = std::move(idx);
  return indexed_.get();
}

rocksdb::WriteBatch TxnBatch::take() {
  if (!indexed_) return std::move(plain_);
  rocksdb::WriteBatch out(*indexed_->GetWriteBatch());
  indexed_.reset();
  return out;
}

}  // namespace hybridstore
