// Where the tools link RocksDB's static archive, its crc32c::Extend is
// replaced by the engine's crc32c at link time (CMakeLists.txt,
// src/rocksdb_crc32c/). Every checksum must stay bit for bit the
// one RocksDB computes, or WAL and table files written here would not read
// back in another RocksDB (Ceph's, or Debian's shared library).
#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/table.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>

#include "common_helpers.h"

namespace rocksdb::crc32c {
uint32_t Extend(uint32_t init_crc, const char* data, size_t n);
}

#ifdef HS_ROCKSDB_CRC32C_WRAPPED
// RocksDB's own implementation, under the name the linker gives it.
extern "C" uint32_t __real__ZN7rocksdb6crc32c6ExtendEjPKcm(uint32_t crc, const char* data, size_t n);
#endif

namespace {

TEST(RocksDbCrc32c, TheReplacementGivesRocksDbsOwnValues) {
#ifndef HS_ROCKSDB_CRC32C_WRAPPED
  GTEST_SKIP() << "this build links RocksDB's shared library: its crc32c is not replaced";
#else
  std::mt19937_64 rng(hybridstore::test::test_seed(17));
  std::string buf(72 * 1024, '\0');
  for (auto& c : buf) c = static_cast<char>(rng());
  // RFC 3720 B.4: 32 bytes of zeros.
  std::string zeros(32, '\0');
  EXPECT_EQ(rocksdb::crc32c::Extend(0, zeros.data(), zeros.size()), 0x8A9136AAu);
  for (int i = 0; i < 4000; ++i) {
    const size_t off = rng() % 64, len = i < 64 ? static_cast<size_t>(i) : rng() % (buf.size() - 64);
    const uint32_t init = i % 3 ? static_cast<uint32_t>(rng()) : 0;
    ASSERT_EQ(rocksdb::crc32c::Extend(init, buf.data() + off, len),
              __real__ZN7rocksdb6crc32c6ExtendEjPKcm(init, buf.data() + off, len))
        << "offset " << off << " length " << len << " initial " << init;
  }
#endif
}

// A database written through the replaced checksum reads back, and a table
// file with one byte changed is refused: RocksDB really checksums through it.
TEST(RocksDbCrc32c, TablesWrittenWithItVerifyAndCatchCorruption) {
  hybridstore::test::TempDir dir("rocksdb-crc32c");
  const std::string path = dir.path() + "/db";
  rocksdb::Options opts;
  opts.create_if_missing = true;
  opts.paranoid_checks = true;
  opts.compression = rocksdb::kNoCompression;  // byte 1000 is then a value's
  rocksdb::BlockBasedTableOptions table;
  table.checksum = rocksdb::kCRC32c;
  table.block_cache = nullptr;
  table.no_block_cache = true;
  opts.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  const std::string value(3000, 'v');
  {
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(opts, path, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    rocksdb::WriteOptions wo;
    wo.sync = true;
    for (int i = 0; i < 200; ++i) ASSERT_TRUE(db->Put(wo, "key" + std::to_string(i), value).ok());
    ASSERT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());
    // Left in the WAL only: replayed, and its records verified, at reopen.
    ASSERT_TRUE(db->Put(wo, "wal-only", "w").ok());
  }
  std::string sst;
  {
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(opts, path, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    rocksdb::ReadOptions ro;
    ro.verify_checksums = true;
    std::string v;
    ASSERT_TRUE(db->Get(ro, "key150", &v).ok());
    EXPECT_EQ(v, value);
    ASSERT_TRUE(db->Get(ro, "wal-only", &v).ok());
    EXPECT_EQ(v, "w");
    for (const auto& e : std::filesystem::directory_iterator(path))
      if (e.path().extension() == ".sst") sst = e.path().string();
  }
  ASSERT_FALSE(sst.empty());
  {
    // One byte inside the first data block's value bytes.
    std::fstream f(sst, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(1000);
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x40);
    f.seekp(1000);
    f.write(&c, 1);
  }
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(opts, path, &raw);
  std::unique_ptr<rocksdb::DB> db(raw);
  if (s.ok()) {
    rocksdb::ReadOptions ro;
    ro.verify_checksums = true;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(ro));
    int n = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
    s = it->status();
  }
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
}

}  // namespace
