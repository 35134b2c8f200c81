#include "hybridstore/alloc/freelist.h"

#include <cerrno>
#include <memory>

#include <fmt/format.h>

#include "hybridstore/kv/kv_schema.h"

namespace hybridstore {

void BitmapFreelist::toggle(rocksdb::WriteBatchBase* batch, uint64_t offset, uint64_t length) const {
  uint64_t u = offset / unit_;
  uint64_t end = (offset + length) / unit_;
  while (u < end) {
    uint64_t chunk = u / kv::kBitmapChunkBits;
    uint64_t chunk_end = std::min(end, (chunk + 1) * kv::kBitmapChunkBits);
    std::string mask(kv::kBitmapChunkBytes, '\0');
    for (; u < chunk_end; ++u) {
      uint64_t bit = u % kv::kBitmapChunkBits;
      mask[bit / 8] = static_cast<char>(mask[bit / 8] | (1 << (bit % 8)));
    }
    batch->Merge(kv::bitmap_key(tier_, chunk), mask);
  }
}

int BitmapFreelist::load(rocksdb::DB* db, uint64_t device_size,
                         const std::function<void(uint64_t, uint64_t)>& used,
                         std::string* error) const {
  std::string prefix = kv::bitmap_prefix(tier_);
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  uint64_t run_start = 0, run_len = 0;
  uint64_t units = device_size / unit_;
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    Tier t;
    uint64_t chunk;
    if (!kv::decode_bitmap_key(it->key().ToStringView(), &t, &chunk)) {
      *error = "malformed allocation bitmap key";
      return -EIO;
    }
    rocksdb::Slice v = it->value();
    if (v.size() > kv::kBitmapChunkBytes || chunk > units / kv::kBitmapChunkBits) {
      *error = fmt::format("allocation bitmap chunk {} of {} is out of range", chunk, tier_name(tier_));
      return -EIO;
    }
    for (size_t byte = 0; byte < v.size(); ++byte) {
      auto b = static_cast<uint8_t>(v[byte]);
      if (!b) continue;
      for (int bit = 0; bit < 8; ++bit) {
        if (!(b & (1 << bit))) continue;
        uint64_t unit = chunk * kv::kBitmapChunkBits + byte * 8 + static_cast<uint64_t>(bit);
        if (unit >= units) {
          *error = fmt::format("allocation bitmap of {} marks unit {} past the device end",
                               tier_name(tier_), unit);
          return -EIO;
        }
        uint64_t off = unit * unit_;
        if (run_len && run_start + run_len == off) {
          run_len += unit_;
        } else {
          if (run_len) used(run_start, run_len);
          run_start = off;
          run_len = unit_;
        }
      }
    }
  }
  if (!it->status().ok()) {
    *error = "reading allocation bitmap: " + it->status().ToString();
    return -EIO;
  }
  if (run_len) used(run_start, run_len);
  return 0;
}

}  // namespace hybridstore
