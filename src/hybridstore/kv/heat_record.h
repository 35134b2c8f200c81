// One object's heat as RocksDB stores it (`H` records), and the merge that
// lets the store add to a record without reading it (docs/memory.md,
// "1. Heat").
//
// A record is both a value and a delta: the counts of the windows before
// `epoch` (already weighted to it) and of window `epoch`, plus the last
// request. Decay is linear, so bringing two records to the later one's
// window and adding them gives what the tracker's in-memory fold would have
// given for the union of their accesses (to float rounding); that sum is
// associative, which is what RocksDB's merge operands need, and its
// identity is the empty record. The last request is the later one's (by
// time; on a tie the right operand's, the one written later).
//
// Each record carries the decay it was written with, so a merge run by a
// compaction, or by a tool that opened the database without the store's
// options, folds exactly as the store would. Version 1 records (before the
// merge existed) have no decay; a merge folds them with the other side's.
//
// Records are versioned and crc32c-checked; the decoder rejects garbage
// with -EIO (or -EOPNOTSUPP for a newer version) and never crashes on it.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include <rocksdb/merge_operator.h>

namespace hybridstore {

enum class AccessType : uint8_t { kRead = 0, kWrite = 1 };
const char* access_type_name(AccessType t);

struct HeatRecord {
  uint64_t size = 0;
  uint64_t last_offset = 0;
  uint64_t last_end = 0;  // invariant: last_end >= last_offset
  uint64_t last_time_us = 0;
  // Counts of windows before `epoch`, already weighted to `epoch`.
  float hist_f = 0;
  float hist_r = 0;
  // Counts in window `epoch`; invariant: cur_r <= cur_f.
  uint32_t cur_f = 0;
  uint32_t cur_r = 0;
  uint32_t epoch = 0;
  AccessType last_type = AccessType::kRead;
  // The decay the record's counts were folded with; negative: unknown (v1).
  double decay = -1;

  bool empty() const { return cur_f == 0 && cur_r == 0 && hist_f == 0 && hist_r == 0 && last_time_us == 0; }
};

// v * decay^(to - from), with decay 0 and 1 exact.
double heat_decayed(double v, uint32_t from, uint32_t to, double decay);
// Brings r's counts to window `epoch` (nothing when it is there already).
void fold_heat(HeatRecord* r, uint32_t epoch, double decay);
// *acc := acc + later (see the top of this file). `acc` may be empty.
void merge_heat(HeatRecord* acc, const HeatRecord& later);

std::string encode_heat_record(const HeatRecord& r);
int decode_heat_record(std::string_view in, HeatRecord* out, std::string* error);

// The merge operator of `H` records. A damaged operand or base is dropped
// (its history is lost, as a damaged record costs its history at a load)
// and counted; the merge itself never fails, so one bad record cannot make
// reads of its neighbours or a compaction fail.
class HeatMergeOperator final : public rocksdb::AssociativeMergeOperator {
 public:
  bool Merge(const rocksdb::Slice& key, const rocksdb::Slice* existing, const rocksdb::Slice& value,
             std::string* new_value, rocksdb::Logger* logger) const override;
  const char* Name() const override { return "hybridstore.heat_merge.v1"; }
  // Damaged records dropped by this operator (any instance) since start.
  static uint64_t rejected() { return rejected_.load(std::memory_order_relaxed); }

 private:
  static std::atomic<uint64_t> rejected_;
};

}  // namespace hybridstore
