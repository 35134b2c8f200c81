// Persistence of allocation state: one bit per allocation unit, in RocksDB
// chunks of kv::kBitmapChunkBits units, changed only by XOR merges. Allocating
// and freeing both toggle bits, so a transaction adds its toggles to its own
// batch without reading the chunk, and concurrent batches compose in any order.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include <rocksdb/db.h>
#include <rocksdb/write_batch_base.h>

#include "hybridstore/format/onode.h"

namespace hybridstore {

class BitmapFreelist {
 public:
  BitmapFreelist(Tier tier, uint64_t unit) : tier_(tier), unit_(unit) {}

  // Adds merges toggling every unit of [offset, offset + length) (unit-aligned).
  void toggle(rocksdb::WriteBatchBase* batch, uint64_t offset, uint64_t length) const;

  // Calls `used(offset, length)` for each run of allocated units, in order.
  // Fails (-EIO with *error) on a malformed key or chunk.
  int load(rocksdb::DB* db, uint64_t device_size,
           const std::function<void(uint64_t, uint64_t)>& used, std::string* error) const;

 private:
  Tier tier_;
  uint64_t unit_;
};

}  // namespace hybridstore
