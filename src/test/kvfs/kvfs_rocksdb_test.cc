// RocksDB on the kvfs (docs/kvfs.md 3.8, 3.9, 8.3): a real RocksDB opened on
// a KvRocksFileSystem over a KvFs on a device file. Open, put, flush,
// compact, reopen; the FileSystem methods of 3.8's table reached; growth
// through the lender under a load of many small SSTs; a power cut at a
// random device write during synced and unsynced puts, after which the DB
// opens and holds every synced put.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/options.h>

#include "common_helpers.h"
#include "hybridstore/kvfs/kvfs_rocksdb.h"
#include "kvfs/kvfs_fs_util.h"
#include "testing/fault_device.h"
#include "testing/fault_injection.h"

using namespace hybridstore;
using namespace hybridstore::test;

namespace {

std::string key_of(int i) { return fmt::format("key{:08}", i); }
std::string value_of(int i, size_t len) {
  std::string v = fmt::format("value{}-", i);
  while (v.size() < len) v += static_cast<char>('a' + (i + v.size()) % 26);
  return v;
}

// A KvFs and RocksDB's view of it, in the order they must be torn down:
// the DB before the Env before the FileSystem before the KvFs.
struct RocksOnKvFs {
  RocksOnKvFs(BlockDevice* dev, KvFsLender* lender, const KvFsParams& params, bool format) {
    std::string why;
    if (format) {
      EXPECT_EQ(KvFs::format(dev, params, fs_uuid(), fs_fsid(), lender, &why), 0) << why;
    }
    kvfs = mount_kvfs(dev, lender, params);
    rfs = std::make_shared<KvRocksFileSystem>(*kvfs);
    env = rocksdb::NewCompositeEnv(rfs);
  }
  ~RocksOnKvFs() { close(); }

  rocksdb::Options options() {
    rocksdb::Options o;
    o.create_if_missing = true;
    o.paranoid_checks = true;
    o.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
    EXPECT_TRUE(apply_kvfs_rocksdb_options(env.get(), make_kvfs_rocksdb_logger(), &o).empty());
    return o;
  }
  rocksdb::Status open(const rocksdb::Options& o) {
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(o, "/db", &raw);
    db.reset(raw);
    return s;
  }
  void close() {
    if (db) {
      db->Close().PermitUncheckedError();
      db.reset();
    }
  }
  std::unique_ptr<KvFs> kvfs;
  std::shared_ptr<KvRocksFileSystem> rfs;
  std::unique_ptr<rocksdb::Env> env;
  std::unique_ptr<rocksdb::DB> db;
};

void put_range(rocksdb::DB* db, int from, int to, size_t value_len) {
  rocksdb::WriteOptions wo;
  for (int i = from; i < to; ++i) ASSERT_TRUE(db->Put(wo, key_of(i), value_of(i, value_len)).ok()) << i;
}

void expect_range(rocksdb::DB* db, int from, int to, size_t value_len) {
  std::string v;
  for (int i = from; i < to; ++i) {
    rocksdb::Status s = db->Get(rocksdb::ReadOptions(), key_of(i), &v);
    ASSERT_TRUE(s.ok()) << key_of(i) << ": " << s.ToString();
    ASSERT_EQ(v, value_of(i, value_len)) << key_of(i);
  }
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  int n = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
  ASSERT_TRUE(it->status().ok()) << it->status().ToString();
  EXPECT_EQ(n, to - from);
}

// RocksDB 7.8 has no DB::WaitForCompact: poll its properties.
void wait_for_compactions(rocksdb::DB* db) {
  for (int i = 0; i < 6000; ++i) {
    uint64_t pending = 1, running = 1;
    ASSERT_TRUE(db->GetIntProperty("rocksdb.compaction-pending", &pending));
    ASSERT_TRUE(db->GetIntProperty("rocksdb.num-running-compactions", &running));
    if (pending == 0 && running == 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  FAIL() << "compactions did not finish in a minute";
}

}  // namespace

TEST(KvfsRocksDb, PutFlushCompactReopenReadsEverythingBack) {
  TempDir dir("kvfs-rocks");
  auto dev = open_kvfs_media(dir.file("dev"));
  FakeLender lender(60 * kG);
  constexpr int kKeys = 20000;
  {
    RocksOnKvFs r(dev.get(), &lender, test_params(), true);
    rocksdb::Options o = r.options();
    o.write_buffer_size = 512 << 10;
    ASSERT_TRUE(r.open(o).ok());
    put_range(r.db.get(), 0, kKeys, 100);
    ASSERT_TRUE(r.db->Flush(rocksdb::FlushOptions()).ok());
    ASSERT_TRUE(r.db->CompactRange(rocksdb::CompactRangeOptions(), nullptr, nullptr).ok());
    expect_range(r.db.get(), 0, kKeys, 100);
    r.close();
    std::string why;
    ASSERT_EQ(r.kvfs->unmount(&why), 0) << why;
  }
  RocksOnKvFs r(dev.get(), &lender, test_params(), false);
  ASSERT_TRUE(r.open(r.options()).ok());
  expect_range(r.db.get(), 0, kKeys, 100);
  for (size_t op = 0; op < static_cast<size_t>(KvRocksOp::kCount); ++op)
    std::printf("  %-28s %llu\n", kv_rocks_op_name(static_cast<KvRocksOp>(op)),
                static_cast<unsigned long long>(r.rfs->calls(static_cast<KvRocksOp>(op))));
  // What RocksDB itself reaches in an open of an existing DB and its reads
  // (the first RocksOnKvFs's counters went with it).
  for (KvRocksOp op : {KvRocksOp::kNewSequentialFile, KvRocksOp::kNewRandomAccessFile, KvRocksOp::kNewWritableFile,
                       KvRocksOp::kNewDirectory, KvRocksOp::kDirectoryFsync, KvRocksOp::kFileExists,
                       KvRocksOp::kGetChildren, KvRocksOp::kRenameFile, KvRocksOp::kCreateDirIfMissing,
                       KvRocksOp::kLockFile, KvRocksOp::kFileAppend, KvRocksOp::kFileSync,
                       KvRocksOp::kRandomRead, KvRocksOp::kSequentialRead})
    EXPECT_GT(r.rfs->calls(op), 0u) << kv_rocks_op_name(op);
}

// The methods RocksDB reaches only on paths a test does not provoke cheaply
// (a reopened WAL, a test directory, free space for an SstFileManager),
// called as RocksDB would, with their answers checked; and paths.
TEST(KvfsRocksDb, EveryMethodOfTheTable) {
  TempDir dir("kvfs-rocks-methods");
  auto dev = open_kvfs_media(dir.file("dev"));
  FakeLender lender(8 * kG);
  RocksOnKvFs r(dev.get(), &lender, test_params(), true);
  rocksdb::FileSystem* fs = r.rfs.get();
  const rocksdb::IOOptions io;
  const rocksdb::FileOptions fo;
  ASSERT_TRUE(fs->CreateDir("/wal", io, nullptr).ok());
  EXPECT_FALSE(fs->CreateDir("/wal", io, nullptr).ok());
  EXPECT_TRUE(fs->CreateDirIfMissing("//wal/", io, nullptr).ok());
  bool is_dir = false;
  ASSERT_TRUE(fs->IsDirectory("/wal", io, &is_dir, nullptr).ok());
  EXPECT_TRUE(is_dir);
  std::unique_ptr<rocksdb::FSWritableFile> w;
  ASSERT_TRUE(fs->NewWritableFile("/wal/000003.log", fo, &w, nullptr).ok());
  ASSERT_TRUE(w->Allocate(0, 1 << 20, io, nullptr).ok());
  ASSERT_TRUE(w->Append(std::string(10000, 'w'), io, nullptr).ok());
  ASSERT_TRUE(w->Flush(io, nullptr).ok());
  ASSERT_TRUE(w->Sync(io, nullptr).ok());
  EXPECT_EQ(w->GetFileSize(io, nullptr), 10000u);
  ASSERT_TRUE(w->Truncate(9000, io, nullptr).ok());
  ASSERT_TRUE(w->Close(io, nullptr).ok());
  ASSERT_TRUE(fs->ReopenWritableFile("/wal/000003.log", fo, &w, nullptr).ok());
  EXPECT_TRUE(w->Append("x", io, nullptr).IsNotSupported());
  ASSERT_TRUE(w->Truncate(8000, io, nullptr).ok());
  ASSERT_TRUE(w->Close(io, nullptr).ok());
  ASSERT_TRUE(fs->Truncate("/wal/000003.log", 7000, io, nullptr).ok());
  uint64_t size = 0, mtime = 0;
  ASSERT_TRUE(fs->GetFileSize("/wal/000003.log", io, &size, nullptr).ok());
  EXPECT_EQ(size, 7000u);
  ASSERT_TRUE(fs->GetFileModificationTime("/wal/000003.log", io, &mtime, nullptr).ok());
  EXPECT_GT(mtime, 0u);
  std::vector<rocksdb::FileAttributes> attrs;
  ASSERT_TRUE(fs->GetChildrenFileAttributes("/wal", io, &attrs, nullptr).ok());
  ASSERT_EQ(attrs.size(), 1u);
  EXPECT_EQ(attrs[0].name, "000003.log");
  EXPECT_EQ(attrs[0].size_bytes, 7000u);
  std::unique_ptr<rocksdb::FSSequentialFile> seq;
  ASSERT_TRUE(fs->NewSequentialFile("wal/000003.log", fo, &seq, nullptr).ok());
  std::string scratch(8192, '\0');
  rocksdb::Slice got;
  ASSERT_TRUE(seq->Skip(1000).ok());
  ASSERT_TRUE(seq->Read(8192, io, &got, scratch.data(), nullptr).ok());
  EXPECT_EQ(got.ToString(), std::string(6000, 'w'));
  ASSERT_TRUE(fs->RenameFile("/wal/000003.log", "/db/moved", io, nullptr).ok());
  std::unique_ptr<rocksdb::FSRandomAccessFile> ra;
  rocksdb::FileOptions direct;
  direct.use_direct_reads = true;
  ASSERT_TRUE(fs->NewRandomAccessFile("/db/moved", direct, &ra, nullptr).ok());
  EXPECT_TRUE(ra->use_direct_io());
  EXPECT_EQ(ra->GetRequiredBufferAlignment(), kB);
  AlignedBuffer aligned(2 * kB);
  ASSERT_TRUE(ra->Read(4096, 8192, io, &got, aligned.data(), nullptr).ok());
  EXPECT_EQ(got.ToString(), std::string(7000 - 4096, 'w'));
  EXPECT_TRUE(fs->FileExists("/wal/000003.log", io, nullptr).IsNotFound());
  ASSERT_TRUE(fs->FileExists("/db/moved", io, nullptr).ok());
  EXPECT_FALSE(fs->DeleteDir("/db", io, nullptr).ok()) << "not empty";
  ASSERT_TRUE(fs->DeleteFile("/db/moved", io, nullptr).ok());
  ASSERT_TRUE(fs->DeleteDir("/wal", io, nullptr).ok());
  EXPECT_TRUE(fs->FileExists("/wal", io, nullptr).IsNotFound());

  rocksdb::FileLock* lock = nullptr;
  ASSERT_TRUE(fs->LockFile("/db/LOCK", io, &lock, nullptr).ok());
  rocksdb::FileLock* second = nullptr;
  EXPECT_TRUE(fs->LockFile("/db/LOCK", io, &second, nullptr).IsIOError());
  ASSERT_TRUE(fs->UnlockFile(lock, io, nullptr).ok());

  std::string path;
  ASSERT_TRUE(fs->GetAbsolutePath("db//", io, &path, nullptr).ok());
  EXPECT_EQ(path, "/db");
  ASSERT_TRUE(fs->GetTestDirectory(io, &path, nullptr).ok());
  EXPECT_EQ(path, "/test");
  std::shared_ptr<rocksdb::Logger> logger;
  ASSERT_TRUE(fs->NewLogger("/db/LOG", io, &logger, nullptr).ok());
  ASSERT_TRUE(logger);
  uint64_t free_bytes = 0;
  ASSERT_TRUE(fs->GetFreeSpace("/db", io, &free_bytes, nullptr).ok());
  // The kvfs's own free bytes and what the lender still has (8 G lent at
  // most, 4 of them at format).
  EXPECT_EQ(free_bytes, r.kvfs->free_bytes() + 4 * kG);
  EXPECT_EQ(lender.lendable(), 4 * kG);
  std::unique_ptr<rocksdb::FSDirectory> d;
  ASSERT_TRUE(fs->NewDirectory("/db", io, &d, nullptr).ok());
  ASSERT_TRUE(d->Fsync(io, nullptr).ok());
  EXPECT_FALSE(fs->NewDirectory("/nodir", io, &d, nullptr).ok());
  std::vector<std::string> children;
  ASSERT_TRUE(fs->GetChildren("/", io, &children, nullptr).ok());
  EXPECT_EQ(children, (std::vector<std::string>{"db", "test"}));

  // One directory level: deeper paths and dot components are refused.
  EXPECT_TRUE(fs->NewWritableFile("/db/sub/x", fo, &w, nullptr).IsInvalidArgument());
  EXPECT_TRUE(fs->FileExists("/db/../x", io, nullptr).IsInvalidArgument());
  EXPECT_TRUE(fs->NewWritableFile("/db/" + std::string(256, 'n'), fo, &w, nullptr).IsInvalidArgument());

  for (size_t op = 0; op < static_cast<size_t>(KvRocksOp::kCount); ++op) {
    EXPECT_GT(r.rfs->calls(static_cast<KvRocksOp>(op)), 0u) << kv_rocks_op_name(static_cast<KvRocksOp>(op));
  }
}

TEST(KvfsRocksDb, OptionsOverrideUserValuesWithAWarning) {
  rocksdb::Options o;
  o.allow_mmap_reads = true;
  o.recycle_log_file_num = 4;
  o.WAL_ttl_seconds = 60;
  auto env = rocksdb::NewMemEnv(rocksdb::Env::Default());
  auto logger = make_kvfs_rocksdb_logger();
  const std::vector<std::string> overridden = apply_kvfs_rocksdb_options(env, logger, &o);
  EXPECT_EQ(overridden, (std::vector<std::string>{"allow_mmap_reads", "recycle_log_file_num", "WAL_ttl_seconds"}));
  EXPECT_EQ(o.env, env);
  EXPECT_EQ(o.info_log, logger);
  EXPECT_TRUE(o.use_direct_reads);
  EXPECT_FALSE(o.use_direct_io_for_flush_and_compaction);
  EXPECT_EQ(o.compaction_readahead_size, size_t{2} << 20);
  EXPECT_FALSE(o.allow_mmap_reads);
  EXPECT_FALSE(o.allow_mmap_writes);
  EXPECT_EQ(o.recycle_log_file_num, 0u);
  EXPECT_TRUE(o.avoid_flush_during_recovery);
  EXPECT_EQ(o.WAL_ttl_seconds, 0u);
  EXPECT_EQ(o.WAL_size_limit_MB, 0u);
  delete env;
}

// Many small memtables and SSTs with compactions running on their own: the
// kvfs starts with one G and grows through the lender as the DB does.
TEST(KvfsRocksDb, ManySmallSstsGrowTheKvfsThroughTheLender) {
  TempDir dir("kvfs-rocks-grow");
  auto dev = open_kvfs_media(dir.file("dev"));
  FakeLender lender(60 * kG);
  KvFsParams p = test_params();
  p.initial_size = kG;
  // A log segment needs a contiguous run of what the kvfs already owns
  // (KvFs::segment_for_log cannot grow: that would be a log write inside
  // one). Grown one G at a time, RocksDB's files fragmented the last free
  // space and the log found no segment; bigger steps leave room until the
  // balancer keeps a reserve (docs/kvfs.md section 9, step 5).
  p.grow_step = 4 * kG;
  RocksOnKvFs r(dev.get(), &lender, p, true);
  rocksdb::Options o = r.options();
  o.write_buffer_size = 64 << 10;
  o.target_file_size_base = 64 << 10;
  o.max_bytes_for_level_base = 256 << 10;
  o.level0_file_num_compaction_trigger = 2;
  ASSERT_TRUE(r.open(o).ok());
  constexpr int kKeys = 25000;
  put_range(r.db.get(), 0, kKeys, 200);
  ASSERT_TRUE(r.db->Flush(rocksdb::FlushOptions()).ok());
  wait_for_compactions(r.db.get());
  expect_range(r.db.get(), 0, kKeys, 200);
  std::string sst_count;
  ASSERT_TRUE(r.db->GetProperty("rocksdb.num-files-at-level1", &sst_count));
  std::printf("kvfs grew to %llu bytes (lent %llu); %s SSTs at L1\n",
              static_cast<unsigned long long>(r.kvfs->owned_bytes()),
              static_cast<unsigned long long>(lender.lent()), sst_count.c_str());
  EXPECT_GT(lender.lent(), 4 * kG);  // more than the first G and one grow step
  EXPECT_GT(std::stoi(sst_count), 4);
}

// A kvfs that ran out of room stops RocksDB with NoSpace; once its tier has
// room again RocksDB resumes by itself. Its SstFileManager retries only when
// GetFreeSpace answers more than a write buffer, and a kvfs that grows on
// demand keeps less than that free of its own: the answer has to count what
// the lender could still lend, or the error stays until a restart.
TEST(KvfsRocksDb, NoSpaceClearsOnceTheLenderHasRoomAgain) {
  TempDir dir("kvfs-rocks-nospace");
  auto dev = open_kvfs_media(dir.file("dev"));
  FakeLender lender(4 * kG);
  KvFsParams p = test_params();
  p.initial_size = 2 * kG;
  p.grow_step = kG;
  RocksOnKvFs r(dev.get(), &lender, p, true);
  rocksdb::Options o = r.options();
  constexpr uint64_t kWriteBuffer = 1 << 20;
  o.write_buffer_size = kWriteBuffer;
  o.disable_auto_compactions = true;
  ASSERT_TRUE(r.open(o).ok());

  // No WAL, so the kvfs fills with tables only and nothing RocksDB can
  // delete frees room: a failed flush stays failed until the kvfs grows.
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;
  constexpr int kBatch = 500;
  rocksdb::Status failed;
  int written = 0;
  while (written < 100 * kBatch && failed.ok()) {
    for (int i = written; i < written + kBatch && failed.ok(); ++i) failed = r.db->Put(wo, key_of(i), value_of(i, 1000));
    if (failed.ok()) {
      written += kBatch;
      failed = r.db->Flush(rocksdb::FlushOptions());
    }
  }
  ASSERT_FALSE(failed.ok()) << "the kvfs never ran out of room";
  ASSERT_TRUE(failed.IsNoSpace() || failed.IsIOError()) << failed.ToString();
  std::printf("stopped after %d puts: %s; kvfs free %llu, lent %llu\n", written, failed.ToString().c_str(),
              static_cast<unsigned long long>(r.kvfs->free_bytes()),
              static_cast<unsigned long long>(lender.lent()));
  // What makes the test: the kvfs's own free bytes are below RocksDB's
  // reserve (a write buffer), so only the lender's room can clear the error.
  ASSERT_LT(r.kvfs->free_bytes(), kWriteBuffer);
  EXPECT_FALSE(r.db->Put(wo, "after", "x").ok()) << "stopped until the error clears";

  lender.set_budget(32 * kG);
  uint64_t free_space = 0;
  ASSERT_TRUE(r.rfs->GetFreeSpace("/db", rocksdb::IOOptions(), &free_space, nullptr).ok());
  EXPECT_GE(free_space, 28 * kG);
  // The SstFileManager looks again every 5 s.
  rocksdb::Status s;
  for (int i = 0; i < 200; ++i) {
    s = r.db->Put(wo, "after", "x");
    if (s.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(s.ok()) << "RocksDB did not resume in 20 s: " << s.ToString();
  EXPECT_GT(lender.lent(), 4 * kG);
  put_range(r.db.get(), written, written + 2000, 1000);
  ASSERT_TRUE(r.db->Flush(rocksdb::FlushOptions()).ok());
  std::string v;
  for (int i = 0; i < written + 2000; i += 97) {
    ASSERT_TRUE(r.db->Get(rocksdb::ReadOptions(), key_of(i), &v).ok()) << key_of(i);
    ASSERT_EQ(v, value_of(i, 1000));
  }
}

namespace {

struct CutResult {
  int synced = -1;  // the last put whose synced write returned OK
  int issued = 0;
};

// Puts until a write fails (the power went): every third put synced.
CutResult cut_load(rocksdb::DB* db, int keys) {
  CutResult res;
  for (int i = 0; i < keys; ++i) {
    rocksdb::WriteOptions wo;
    wo.sync = i % 3 == 0;
    res.issued = i + 1;
    if (!db->Put(wo, key_of(i), value_of(i, 300)).ok()) break;
    if (wo.sync) res.synced = i;
  }
  return res;
}

// One round: format, load with a cut at device write `cut_at` (0: none,
// returns the writes the load made), restore the power, reopen, check.
uint64_t cut_round(uint64_t seed, uint64_t cut_at, bool tear) {
  TempDir dir("kvfs-rocks-cut", TempDir::Backing::kMemory);
  FaultSettings fs;
  fs.enabled = true;
  fs.seed = seed;
  auto injector = std::make_shared<FaultInjector>(dir.path(), fs);
  injector->keep_cached_writes_at_random(true);
  auto dev = std::make_unique<FaultInjectionDevice>(open_kvfs_media(dir.file("dev")), injector);
  FakeLender lender(60 * kG);
  KvFsParams p = test_params();
  p.initial_size = 4 * kG;
  p.grow_step = 4 * kG;
  // Every synced put is a log group: the log must compact to stay small.
  p.log_compact = 1 << 20;
  constexpr int kKeys = 6000;
  CutResult res;
  uint64_t writes = 0;
  {
    RocksOnKvFs r(dev.get(), &lender, p, true);
    rocksdb::Options o = r.options();
    o.write_buffer_size = 128 << 10;
    EXPECT_TRUE(r.open(o).ok());
    if (!r.db) return 0;
    const uint64_t before = injector->counters().device_writes;
    if (cut_at > 0) injector->powercut_after_writes(cut_at, tear);
    res = cut_load(r.db.get(), kKeys);
    writes = injector->counters().device_writes - before;
    if (cut_at == 0) {
      EXPECT_EQ(res.issued, kKeys);
      EXPECT_EQ(res.synced, (kKeys - 1) / 3 * 3) << "the load without a cut must finish";
      return writes;
    }
    if (!injector->power_is_off()) injector->power_cut_now();
    r.close();
  }
  std::string err;
  EXPECT_EQ(injector->restore_power(&err), 0) << err;
  dev.reset();
  auto media = open_kvfs_media(dir.file("dev"));
  RocksOnKvFs r(media.get(), &lender, p, false);
  rocksdb::Status s = r.open(r.options());
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (!s.ok()) return writes;
  std::string v;
  int found = 0;
  for (int i = 0; i < res.issued; ++i) {
    rocksdb::Status g = r.db->Get(rocksdb::ReadOptions(), key_of(i), &v);
    if (i <= res.synced) {
      EXPECT_TRUE(g.ok()) << "synced " << key_of(i) << " lost: " << g.ToString();
    }
    if (g.ok()) {
      EXPECT_EQ(v, value_of(i, 300)) << key_of(i);
      ++found;
    }
  }
  std::printf("  cut at write %llu%s: %d puts issued, synced through %d, %d present after reopen\n",
              static_cast<unsigned long long>(cut_at), tear ? " (torn)" : "", res.issued, res.synced, found);
  return writes;
}

}  // namespace

// docs/kvfs.md 8.3: a power cut at a random device write during a RocksDB
// load of synced and unsynced puts, cached writes kept at random; the DB
// opens (kPointInTimeRecovery) and every synced put is there.
TEST(KvfsRocksDb, PowerCutKeepsEverySyncedPut) {
  const uint64_t seed = test_seed(55);
  const uint64_t total = cut_round(seed, 0, false);
  ASSERT_GT(total, 10u);
  std::printf("kvfs RocksDB power cut: seed %llu, the load makes about %llu device writes\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(total));
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 8; ++round) {
    const uint64_t cut_at = 1 + rng() % total;
    const bool tear = round % 2 == 1;
    SCOPED_TRACE(fmt::format("seed {} round {} cut at {} tear {}", seed, round, cut_at, tear));
    cut_round(seed + round, cut_at, tear);
    if (HasFailure()) break;
  }
}
