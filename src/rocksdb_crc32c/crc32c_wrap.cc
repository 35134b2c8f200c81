// RocksDB's crc32c, replaced at link time in the standalone tools.
//
// Debian builds RocksDB for the x86-64 baseline, without SSE4.2, so its
// crc32c::Extend runs the table-driven loop: every WAL record (the whole
// batch, a staged 4 KiB included) and every table block is checksummed at
// a few bytes a cycle, 4% of a lone 4 KiB writer's CPU (docs/benchmarks.md,
// item 35). ceph-osd links Ceph's own RocksDB, built with SSE4.2,
// and never pays it. When the tools link RocksDB's static archive, the link
// redirects the archive's calls to Extend here (-Wl,--wrap, CMakeLists.txt),
// to the engine's crc32c: the same Castagnoli polynomial and the same
// convention (the running value inverted on the way in and out), so every
// checksum is bit for bit the one RocksDB computes and files stay readable
// by any RocksDB (unittest_rocksdb_crc32c compares the two).
#include <cstddef>
#include <cstdint>

#include "hscommon/crc32c.h"

// The mangled name of rocksdb::crc32c::Extend(uint32_t, const char*, size_t).
extern "C" uint32_t __wrap__ZN7rocksdb6crc32c6ExtendEjPKcm(uint32_t crc, const char* data, size_t n) {
  return hybridstore::crc32c(crc, data, n);
}
