// Shared by the kvfs tests: one geometry and a superblock for it.
#pragma once
#include <cstdint>

#include "hybridstore/kvfs/kvfs_super.h"

namespace hybridstore::test {

constexpr uint64_t kB = 4096;
constexpr uint64_t kA = 64 << 10;
constexpr uint64_t kG = 1 << 20;
constexpr uint64_t kHead = 1 << 20;
constexpr uint64_t kDevSize = 64 << 20;

inline Uuid test_uuid(uint8_t fill) {
  Uuid u;
  u.fill(fill);
  return u;
}

inline KvFsSuper test_super(uint64_t generation = 1) {
  KvFsSuper s;
  s.kvfs_uuid = test_uuid(0x11);
  s.fsid = test_uuid(0x22);
  s.generation = generation;
  s.block = kB;
  s.alloc_unit = kA;
  s.lend_unit = kG;
  s.log_id = 0x1234567890abcdefull;
  s.log_first_seq = 1;
  s.log_segment = KvFsExtent{kHead, kA};
  s.created_us = 1700000000000000ull;
  return s;
}

}  // namespace hybridstore::test
