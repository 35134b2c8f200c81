// HeatMergeOperator (heat_record.h), apart from the records' codec so that
// the codec builds without RocksDB's library (the fuzz targets).
#include "hybridstore/kv/heat_record.h"

namespace hybridstore {

std::atomic<uint64_t> HeatMergeOperator::rejected_{0};

bool HeatMergeOperator::Merge(const rocksdb::Slice&, const rocksdb::Slice* existing, const rocksdb::Slice& value,
                              std::string* new_value, rocksdb::Logger*) const {
  HeatRecord acc, add;
  if (existing && decode_heat_record(existing->ToStringView(), &acc, nullptr) < 0) {
    acc = HeatRecord{};
    rejected_.fetch_add(1, std::memory_order_relaxed);
  }
  if (decode_heat_record(value.ToStringView(), &add, nullptr) < 0) {
    rejected_.fetch_add(1, std::memory_order_relaxed);
  } else {
    merge_heat(&acc, add);
  }
  *new_value = encode_heat_record(acc);
  return true;
}

}  // namespace hybridstore
