// Lending whole erase units to the KV file system (docs/kvfs.md 2.5).
//
// A lend runs on the kvfs's thread while transactions allocate under the
// SsdSections lock; it touches only the pool (free_bits_, lent_bits_,
// free_count_), under pool_mutex_, and never an EraseUnit or a record. So it
// waits for no transaction, and the serialised paths see a unit leave the
// pool as if another lane had taken it.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>

#include "hybridstore/sections/section_allocator.h"

namespace hybridstore {

namespace {
bool test_bit(const std::vector<uint64_t>& bits, uint32_t i) { return (bits[i / 64] >> (i % 64)) & 1; }
void set_bit(std::vector<uint64_t>* bits, uint32_t i) { (*bits)[i / 64] |= uint64_t(1) << (i % 64); }
void clear_bit(std::vector<uint64_t>* bits, uint32_t i) { (*bits)[i / 64] &= ~(uint64_t(1) << (i % 64)); }
}  // namespace

int SectionAllocator::lend_units(uint32_t n, std::vector<uint32_t>* out) {
  std::lock_guard<std::mutex> pl(pool_mutex_);
  if (free_count_ == 0 || n == 0) return -ENOSPC;
  uint32_t lent = 0;
  // From the top: take_eu hands out the lowest free units, so the kvfs's
  // chunks and the data lanes grow towards each other instead of
  // interleaving.
  for (size_t w = free_bits_.size(); w-- > 0 && lent < n;) {
    while (free_bits_[w] && lent < n) {
      const uint32_t eu = static_cast<uint32_t>(w * 64 + 63 - __builtin_clzll(free_bits_[w]));
      clear_bit(&free_bits_, eu);
      set_bit(&lent_bits_, eu);
      --free_count_;
      out->push_back(eu);
      ++lent;
    }
  }
  return static_cast<int>(lent);
}

int SectionAllocator::take_back_units(const std::vector<uint32_t>& eus) {
  std::lock_guard<std::mutex> pl(pool_mutex_);
  for (uint32_t eu : eus)
    if (eu >= eus_.size() || !test_bit(lent_bits_, eu)) return -EINVAL;
  for (uint32_t eu : eus) {
    clear_bit(&lent_bits_, eu);
    set_bit(&free_bits_, eu);
    ++free_count_;
  }
  return 0;
}

std::vector<uint32_t> SectionAllocator::lent_units() const {
  std::lock_guard<std::mutex> pl(pool_mutex_);
  std::vector<uint32_t> out;
  for (size_t w = 0; w < lent_bits_.size(); ++w)
    for (uint64_t b = lent_bits_[w]; b; b &= b - 1) out.push_back(static_cast<uint32_t>(w * 64 + __builtin_ctzll(b)));
  return out;
}

int SectionAllocator::exclude_units(const std::vector<uint32_t>& eus, std::vector<uint32_t>* stale,
                                    std::string* error) {
  for (uint32_t eu : eus) {
    if (eu >= eus_.size()) {
      *error = fmt::format("the KV file system owns erase unit {}, beyond the {} units", eu, eus_.size());
      return -EIO;
    }
    if (eus_[eu].lane >= 0 && eus_[eu].live != 0) {
      *error = fmt::format("erase unit {} is owned by the KV file system and holds object data; run fsck", eu);
      return -EIO;
    }
  }
  for (uint32_t eu : eus) {
    EraseUnit& u = eus_[eu];
    if (u.lane >= 0) {
      // Records of a unit that was freed, then lent, before its record
      // delete committed. A lane whose current unit it was takes a new one.
      if (u.current) {
        lanes_[u.lane].current = -1;
        u.current = false;
      }
      maybe_free_eu(eu);
      if (stale) stale->push_back(eu);
    }
    std::lock_guard<std::mutex> pl(pool_mutex_);
    if (test_bit(lent_bits_, eu)) {
      *error = fmt::format("the KV file system owns erase unit {} twice", eu);
      return -EIO;
    }
    clear_bit(&free_bits_, eu);
    set_bit(&lent_bits_, eu);
    --free_count_;
  }
  return 0;
}

}  // namespace hybridstore
