// The fault injector itself: a power cut must lose exactly what the storage
// stack did not promise to keep, or the durability tests built on it prove
// nothing.
#include "testing/fault_injection.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/file_system.h>

#include "common_helpers.h"
#include "hybridstore/kv/gated_db.h"
#include "testing/fault_device.h"

using namespace hybridstore;
using hybridstore::test::TempDir;

namespace {

constexpr uint64_t kBlock = 4096;

std::string read_file_range(const std::string& path, uint64_t off, uint64_t len) {
  std::ifstream f(path, std::ios::binary);
  f.seekg(static_cast<std::streamoff>(off));
  std::string s(len, '\0');
  f.read(s.data(), static_cast<std::streamsize>(len));
  s.resize(static_cast<size_t>(f.gcount()));
  return s;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

class FaultDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::make_unique<TempDir>("fault");
    media_path_ = dir_->file("dev");
    FaultSettings s;
    s.enabled = true;
    injector_ = std::make_shared<FaultInjector>(dir_->path(), s);
    DeviceOpenOptions o;
    o.create = true;
    o.create_size = 16 << 20;
    o.backend = IoBackend::kPosix;
    std::string err;
    auto media = open_block_device(media_path_, o, &err);
    ASSERT_TRUE(media) << err;
    dev_ = std::make_unique<FaultInjectionDevice>(std::move(media), injector_);
  }
  int write_pattern(uint64_t off, uint64_t len, char c) {
    AlignedBuffer b(len);
    std::memset(b.data(), c, len);
    return dev_->write(off, b.data(), len);
  }
  std::string read_dev(uint64_t off, uint64_t len) {
    AlignedBuffer b(len);
    EXPECT_EQ(dev_->read(off, b.data(), len), 0);
    return std::string(b.data(), len);
  }

  std::unique_ptr<TempDir> dir_;
  std::string media_path_;
  std::shared_ptr<FaultInjector> injector_;
  std::unique_ptr<FaultInjectionDevice> dev_;
};

}  // namespace

TEST_F(FaultDeviceTest, UnflushedWritesAreReadableButReachTheMediaOnlyAtFlush) {
  ASSERT_EQ(write_pattern(8192, 8192, 'a'), 0);
  ASSERT_EQ(write_pattern(12288, 4096, 'b'), 0);  // overlaps: the later write wins
  EXPECT_EQ(read_dev(8192, 8192), std::string(4096, 'a') + std::string(4096, 'b'));
  EXPECT_EQ(read_file_range(media_path_, 8192, 8192), std::string(8192, '\0'));
  EXPECT_EQ(dev_->cached_writes(), 2u);
  ASSERT_EQ(dev_->flush(), 0);
  EXPECT_EQ(dev_->cached_writes(), 0u);
  EXPECT_EQ(read_file_range(media_path_, 8192, 8192), std::string(4096, 'a') + std::string(4096, 'b'));
}

TEST_F(FaultDeviceTest, PowerCutLosesEveryUnflushedWriteAndFailsAllLaterIo) {
  ASSERT_EQ(write_pattern(0, 4096, 'k'), 0);
  ASSERT_EQ(dev_->flush(), 0);
  ASSERT_EQ(write_pattern(4096, 4096, 'l'), 0);
  ASSERT_EQ(write_pattern(0, 4096, 'x'), 0);
  injector_->power_cut_now();
  EXPECT_EQ(read_file_range(media_path_, 0, 8192), std::string(4096, 'k') + std::string(4096, '\0'));
  AlignedBuffer b(4096);
  EXPECT_EQ(dev_->read(0, b.data(), 4096), -EIO);
  EXPECT_EQ(write_pattern(0, 4096, 'y'), -EIO);
  EXPECT_EQ(dev_->flush(), -EIO);
  EXPECT_EQ(read_file_range(media_path_, 0, 4096), std::string(4096, 'k'));
}

TEST_F(FaultDeviceTest, ArmedPowerCutTearsTheWriteInFlightAtBlockGranularity) {
  ASSERT_EQ(write_pattern(0, 4096, 'u'), 0);  // cached, lost at the cut
  injector_->powercut_after_writes(1, /*tear=*/true);
  const uint64_t blocks = 8;
  EXPECT_EQ(write_pattern(65536, blocks * kBlock, 't'), -EIO);
  EXPECT_TRUE(injector_->power_is_off());
  std::string media = read_file_range(media_path_, 65536, blocks * kBlock);
  uint64_t landed = 0;
  while (landed < blocks && media.substr(landed * kBlock, kBlock) == std::string(kBlock, 't')) ++landed;
  EXPECT_GE(landed, 1u) << "a torn write lands part of itself";
  EXPECT_LT(landed, blocks) << "a torn write does not land whole";
  EXPECT_EQ(media.substr(landed * kBlock), std::string((blocks - landed) * kBlock, '\0'))
      << "what lands is a prefix, in whole blocks";
  EXPECT_EQ(read_file_range(media_path_, 0, 4096), std::string(4096, '\0'));
}

TEST_F(FaultDeviceTest, DurableWriteReachesTheMediaAloneAndOtherCachedWritesStayVolatile) {
  ASSERT_EQ(write_pattern(0, 3 * kBlock, 'o'), 0);  // older, cached, under the FUA write's middle
  AlignedBuffer b(kBlock);
  std::memset(b.data(), 'f', kBlock);
  ASSERT_EQ(dev_->write_durable(kBlock, b.data(), kBlock), 0);
  EXPECT_EQ(read_file_range(media_path_, 0, 3 * kBlock), std::string(kBlock, '\0') + std::string(kBlock, 'f') +
                                                            std::string(kBlock, '\0'))
      << "only the FUA write reached the media";
  EXPECT_EQ(read_dev(0, 3 * kBlock), std::string(kBlock, 'o') + std::string(kBlock, 'f') + std::string(kBlock, 'o'));
  ASSERT_EQ(dev_->flush(), 0);
  EXPECT_EQ(read_file_range(media_path_, 0, 3 * kBlock),
            std::string(kBlock, 'o') + std::string(kBlock, 'f') + std::string(kBlock, 'o'))
      << "the older cached write does not land over the newer durable one";
  ASSERT_EQ(write_pattern(8 * kBlock, kBlock, 'v'), 0);
  ASSERT_EQ(dev_->write_durable(kBlock, b.data(), kBlock), 0);
  injector_->power_cut_now();
  EXPECT_EQ(read_file_range(media_path_, 8 * kBlock, kBlock), std::string(kBlock, '\0'))
      << "a FUA write is no flush: the other cached write is lost";
}

TEST_F(FaultDeviceTest, RandomKeepLandsSomeCachedBlocksWholeAndLosesTheRest) {
  // The injector's seed is 0 (FaultSettings' default), so the outcome repeats.
  std::printf("fault seed: 0\n");
  injector_->keep_cached_writes_at_random(true);
  const uint64_t blocks = 64;
  ASSERT_EQ(write_pattern(0, blocks * kBlock, 'a'), 0);
  ASSERT_EQ(write_pattern(0, 32 * kBlock, 'b'), 0);  // newer bytes over the first half
  injector_->power_cut_now();
  const std::string media = read_file_range(media_path_, 0, blocks * kBlock);
  uint64_t kept = 0, lost = 0, newer = 0;
  for (uint64_t i = 0; i < blocks; ++i) {
    const std::string blk = media.substr(i * kBlock, kBlock);
    const bool whole = blk == std::string(kBlock, blk[0]);
    ASSERT_TRUE(whole) << "block " << i << " is whole: loss is at 4 KiB granularity";
    if (blk[0] == '\0') ++lost;
    else ++kept;
    if (blk[0] == 'b') {
      ++newer;
      EXPECT_LT(i, 32u);
    }
  }
  EXPECT_GT(kept, 0u) << "some cached blocks reached the media";
  EXPECT_GT(lost, 0u) << "some were lost";
  EXPECT_GT(newer, 0u);
  EXPECT_LT(newer, 32u) << "the newer write also survives only in part";
  EXPECT_EQ(dev_->cached_writes(), 0u);
}

TEST_F(FaultDeviceTest, ChosenWriteAndFlushFailWithEioAndNothingElseDoes) {
  injector_->fail_device_write_after(2);
  EXPECT_EQ(write_pattern(0, 4096, '1'), 0);
  EXPECT_EQ(write_pattern(4096, 4096, '2'), -EIO);
  EXPECT_EQ(write_pattern(8192, 4096, '3'), 0);
  EXPECT_EQ(read_dev(4096, 4096), std::string(4096, '\0')) << "a failed write writes nothing";
  injector_->fail_device_flush_after(1);
  EXPECT_EQ(dev_->flush(), -EIO);
  EXPECT_EQ(dev_->cached_writes(), 2u) << "what a failed flush should have covered stays volatile";
  EXPECT_EQ(read_file_range(media_path_, 0, 4096), std::string(4096, '\0'));
  EXPECT_EQ(dev_->flush(), 0);
  EXPECT_EQ(read_file_range(media_path_, 8192, 4096), std::string(4096, '3'));
  EXPECT_FALSE(injector_->power_is_off());
  EXPECT_EQ(injector_->counters().injected_errors, 2u);
}

// ---------------------------------------------------------------- RocksDB files

namespace {

class FaultKvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::make_unique<TempDir>("faultkv");
    FaultSettings s;
    s.enabled = true;
    injector_ = std::make_shared<FaultInjector>(dir_->path(), s);
    fs_ = injector_->env()->GetFileSystem();
  }
  // Creates `name` with `data`, synced, and its directory entry made durable.
  void durable_file(const std::string& name, const std::string& data) {
    std::unique_ptr<rocksdb::FSWritableFile> f;
    ASSERT_TRUE(fs_->NewWritableFile(path(name), rocksdb::FileOptions(), &f, nullptr).ok());
    ASSERT_TRUE(f->Append(data, rocksdb::IOOptions(), nullptr).ok());
    ASSERT_TRUE(f->Sync(rocksdb::IOOptions(), nullptr).ok());
    ASSERT_TRUE(f->Close(rocksdb::IOOptions(), nullptr).ok());
    sync_dir();
  }
  void sync_dir() {
    std::unique_ptr<rocksdb::FSDirectory> d;
    ASSERT_TRUE(fs_->NewDirectory(dir_->path(), rocksdb::IOOptions(), &d, nullptr).ok());
    ASSERT_TRUE(d->Fsync(rocksdb::IOOptions(), nullptr).ok());
  }
  std::string path(const std::string& name) { return dir_->file(name); }
  bool exists(const std::string& name) { return std::filesystem::exists(path(name)); }

  std::unique_ptr<TempDir> dir_;
  std::shared_ptr<FaultInjector> injector_;
  std::shared_ptr<rocksdb::FileSystem> fs_;
};

}  // namespace

TEST_F(FaultKvTest, PowerCutKeepsOnlyWhatALastSyncCovered) {
  std::unique_ptr<rocksdb::FSWritableFile> f;
  ASSERT_TRUE(fs_->NewWritableFile(path("wal"), rocksdb::FileOptions(), &f, nullptr).ok());
  sync_dir();
  ASSERT_TRUE(f->Append("synced-", rocksdb::IOOptions(), nullptr).ok());
  ASSERT_TRUE(f->Sync(rocksdb::IOOptions(), nullptr).ok());
  ASSERT_TRUE(f->Append("written-but-not-synced", rocksdb::IOOptions(), nullptr).ok());
  injector_->power_cut_now();
  EXPECT_FALSE(f->Append("after", rocksdb::IOOptions(), nullptr).ok());
  EXPECT_FALSE(f->Sync(rocksdb::IOOptions(), nullptr).ok());
  f.reset();
  std::string err;
  ASSERT_EQ(injector_->restore_power(&err), 0) << err;
  EXPECT_EQ(slurp(path("wal")), "synced-");
}

TEST_F(FaultKvTest, NameChangesSinceTheLastDirectoryFsyncAreUndone) {
  durable_file("kept", "old contents");
  durable_file("deleted", "still here");
  durable_file("renamed-from", "moved");
  // Not covered by a directory fsync: all of it must be undone.
  {
    std::unique_ptr<rocksdb::FSWritableFile> f;
    ASSERT_TRUE(fs_->NewWritableFile(path("created"), rocksdb::FileOptions(), &f, nullptr).ok());
    ASSERT_TRUE(f->Append("new", rocksdb::IOOptions(), nullptr).ok());
    ASSERT_TRUE(f->Sync(rocksdb::IOOptions(), nullptr).ok());
  }
  ASSERT_TRUE(fs_->DeleteFile(path("deleted"), rocksdb::IOOptions(), nullptr).ok());
  ASSERT_TRUE(fs_->RenameFile(path("renamed-from"), path("kept"), rocksdb::IOOptions(), nullptr).ok());
  EXPECT_FALSE(exists("deleted"));
  EXPECT_EQ(slurp(path("kept")), "moved");
  injector_->power_cut_now();
  EXPECT_FALSE(fs_->DeleteFile(path("kept"), rocksdb::IOOptions(), nullptr).ok()) << "no name change after the cut";
  std::string err;
  ASSERT_EQ(injector_->restore_power(&err), 0) << err;
  EXPECT_FALSE(exists("created"));
  EXPECT_EQ(slurp(path("deleted")), "still here");
  EXPECT_EQ(slurp(path("renamed-from")), "moved");
  EXPECT_EQ(slurp(path("kept")), "old contents");
  EXPECT_FALSE(exists(".fault-injection")) << "shadow links are cleaned up";
}

TEST_F(FaultKvTest, DirectoryFsyncMakesNameChangesDurable) {
  durable_file("a", "x");
  ASSERT_TRUE(fs_->RenameFile(path("a"), path("b"), rocksdb::IOOptions(), nullptr).ok());
  sync_dir();
  injector_->power_cut_now();
  std::string err;
  ASSERT_EQ(injector_->restore_power(&err), 0) << err;
  EXPECT_FALSE(exists("a"));
  EXPECT_EQ(slurp(path("b")), "x");
}

TEST_F(FaultKvTest, RocksDbLosesUnsyncedWritesButKeepsSyncedOnes) {
  const std::string db_path = dir_->file("db");
  {
    rocksdb::Options o;
    o.create_if_missing = true;
    o.env = injector_->env();
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, db_path, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    rocksdb::WriteOptions synced;
    synced.sync = true;
    ASSERT_TRUE(db->Put(synced, "durable", "1").ok());
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), "volatile", "2").ok());
    injector_->power_cut_now();
    EXPECT_FALSE(db->Put(synced, "after", "3").ok()) << "writes fail once the power is off";
    db->Close();
  }
  std::string err;
  ASSERT_EQ(injector_->restore_power(&err), 0) << err;
  rocksdb::Options o;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(o, db_path, &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  std::string v;
  EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), "durable", &v).ok());
  EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), "volatile", &v).IsNotFound());
  EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), "after", &v).IsNotFound());
}

// Once a WAL flush failed, the store's handle lets nothing more reach
// RocksDB's failed WAL writer: a write racing that failure aborted RocksDB's
// assertion builds (the power-cut tests, one run in a dozen). Many threads
// write while the power goes and another flushes; none may abort, and after
// the failure every call is refused by the gate itself.
TEST_F(FaultKvTest, AfterAFailedWalFlushTheGatedDbRefusesEveryWrite) {
  rocksdb::Options o;
  o.create_if_missing = true;
  o.env = injector_->env();
  o.manual_wal_flush = true;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(o, dir_->file("db"), &raw).ok());
  auto db = std::make_unique<hybridstore::kv::GatedDb>(raw);
  ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), "before", "1").ok());
  ASSERT_TRUE(db->FlushWAL(true).ok());
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w)
    writers.emplace_back([&, w] {
      for (int i = 0; !stop.load(); ++i) db->Put(rocksdb::WriteOptions(), "k" + std::to_string(w * 1000000 + i), std::string(512, 'v'));
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  injector_->power_cut_now();
  bool flush_failed = false;
  for (int i = 0; i < 200 && !flush_failed; ++i) flush_failed = !db->FlushWAL(i % 2 == 0).ok();
  stop = true;
  for (auto& t : writers) t.join();
  EXPECT_TRUE(flush_failed);
  EXPECT_TRUE(db->failed());
  rocksdb::Status s = db->Put(rocksdb::WriteOptions(), "after", "2");
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(s.ToString().find("earlier RocksDB write"), std::string::npos) << s.ToString();
  EXPECT_NE(db->FlushWAL(true).ToString().find("earlier RocksDB write"), std::string::npos);
  EXPECT_NE(db->SyncWAL().ToString().find("earlier RocksDB write"), std::string::npos);
  db->Close();
}

TEST_F(FaultKvTest, ChosenSyncFailsWithEio) {
  std::unique_ptr<rocksdb::FSWritableFile> f;
  ASSERT_TRUE(fs_->NewWritableFile(path("f"), rocksdb::FileOptions(), &f, nullptr).ok());
  injector_->fail_kv_sync_after(2);
  ASSERT_TRUE(f->Append("a", rocksdb::IOOptions(), nullptr).ok());
  EXPECT_TRUE(f->Sync(rocksdb::IOOptions(), nullptr).ok());
  ASSERT_TRUE(f->Append("b", rocksdb::IOOptions(), nullptr).ok());
  rocksdb::IOStatus s = f->Sync(rocksdb::IOOptions(), nullptr);
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_TRUE(f->Sync(rocksdb::IOOptions(), nullptr).ok());
}

TEST(FaultSettingsTest, OptionsEnableInjectionOnlyWhenAsked) {
  Config c;
  EXPECT_FALSE(FaultSettings::from_config(c).enabled);
  std::string err;
  ASSERT_EQ(c.set("hybridstore_debug_eio_on_flush", "3", &err), 0) << err;
  FaultSettings s = FaultSettings::from_config(c);
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.eio_on_flush, 3u);
  EXPECT_EQ(c.set("hybridstore_debug_powercut_after_writes", "-1", &err), -EINVAL);
  EXPECT_NE(err.find("hybridstore_debug_powercut_after_writes"), std::string::npos) << err;
}
