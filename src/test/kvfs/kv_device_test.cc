// KvDevice (docs/kvfs.md 2.4, 4, 5.1-5.3): the sizes mkfs gives the kvfs on
// a tier, and RocksDB and the commit journal together on one device: what
// the ring made durable but RocksDB never got is replayed into the RocksDB
// in the kvfs after both are mounted again.
#include <gtest/gtest.h>

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include "common_helpers.h"
#include "hscommon/encoding.h"
#include "hybridstore/kv/commit_journal.h"
#include "hybridstore/kv/kv_schema.h"
#include "hybridstore/kvfs/kv_device.h"
#include "hybridstore/kvfs/kvfs_rocksdb.h"
#include "kvfs/kvfs_fs_util.h"

using namespace hybridstore;
using namespace hybridstore::test;

namespace {

constexpr uint64_t MiB = 1 << 20, GiB = 1ull << 30;

KvSizing sized(uint64_t usable) {
  KvSizingRequest req;
  req.usable = usable;
  KvSizing s;
  std::string why;
  EXPECT_EQ(size_kv_device(req, &s, &why), 0) << why;
  return s;
}

std::unique_ptr<rocksdb::DB> open_db(KvDevice* k, bool create) {
  rocksdb::Options o;
  o.create_if_missing = create;
  o.paranoid_checks = true;
  o.manual_wal_flush = true;  // as the store runs it with a journal
  EXPECT_TRUE(apply_kvfs_rocksdb_options(k->env(), make_kvfs_rocksdb_logger(), &o).empty());
  rocksdb::DB* db = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(o, KvDevice::kDbDir, &db);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return std::unique_ptr<rocksdb::DB>(db);
}

}  // namespace

// The figures docs/kvfs.md 2.4 gives for three tiers.
TEST(KvDeviceSizing, TheDefaultsOfThreeTiers) {
  KvSizing ssd8 = sized(8 * GiB);
  EXPECT_EQ(ssd8.initial, 512 * MiB);
  EXPECT_EQ(ssd8.grow_step, 128 * MiB);
  EXPECT_EQ(ssd8.reserve, 256 * MiB);
  EXPECT_EQ(ssd8.log_segment, 4 * MiB);
  KvSizing nvme = sized(1024 * GiB);
  EXPECT_EQ(nvme.initial, 16 * GiB);
  EXPECT_EQ(nvme.grow_step, 1 * GiB);
  EXPECT_EQ(nvme.reserve, 4 * GiB);
  KvSizing small = sized(256 * MiB);
  EXPECT_EQ(small.initial, 64 * MiB);
  EXPECT_EQ(small.grow_step, 4 * MiB);
  EXPECT_EQ(small.reserve, 8 * MiB);
  EXPECT_EQ(small.log_segment, 4 * MiB);
}

// RocksDB's memtable sets the floor's least: a flush's table and the WAL it
// empties are on the tier together, so twice the memtable, up to a quarter
// of the tier; a big tier's own floor stays when it is larger.
TEST(KvDeviceSizing, TheFloorHoldsAFlushOfRocksDBsMemtable) {
  KvSizingRequest req;
  req.memtable = 64 * MiB;
  KvSizing s;
  std::string why;
  req.usable = 512 * MiB;
  ASSERT_EQ(size_kv_device(req, &s, &why), 0) << why;
  EXPECT_EQ(s.reserve, 128 * MiB);
  req.usable = 256 * MiB;
  ASSERT_EQ(size_kv_device(req, &s, &why), 0) << why;
  EXPECT_EQ(s.reserve, 64 * MiB) << "a quarter of the tier at most";
  req.usable = 8 * GiB;
  ASSERT_EQ(size_kv_device(req, &s, &why), 0) << why;
  EXPECT_EQ(s.reserve, 256 * MiB) << "the tier's own floor is larger";
  req.memtable = 4 * MiB;
  req.usable = 256 * MiB;
  ASSERT_EQ(size_kv_device(req, &s, &why), 0) << why;
  EXPECT_EQ(s.reserve, 8 * MiB) << "a small memtable leaves the tier's own floor";
}

TEST(KvDeviceSizing, GivenValuesAreRoundedAndATooSmallTierIsRefused) {
  KvSizingRequest req;
  req.usable = 8 * GiB;
  req.initial = 100 * MiB + 1;
  req.grow_step = 3 * MiB + 5;
  req.reserve = 10 * MiB;
  req.log_segment = 1 * MiB;
  KvSizing s;
  std::string why;
  ASSERT_EQ(size_kv_device(req, &s, &why), 0) << why;
  EXPECT_EQ(s.initial, 101 * MiB);
  EXPECT_EQ(s.grow_step, 4 * MiB);
  EXPECT_EQ(s.reserve, 10 * MiB);
  EXPECT_EQ(s.log_segment, 1 * MiB);

  req = KvSizingRequest();
  req.usable = 64 * MiB;  // 64 MiB initial + the reserve + 64 units do not fit
  EXPECT_EQ(size_kv_device(req, &s, &why), -EINVAL);
  EXPECT_NE(why.find("SSD tier too small to hold RocksDB"), std::string::npos) << why;
  EXPECT_NE(why.find("hybridstore_kv_location=directory"), std::string::npos) << why;

  // An initial size asked for that cannot hold the ring and RocksDB's
  // first files.
  req = KvSizingRequest();
  req.usable = 8 * GiB;
  req.initial = 16 * MiB;
  EXPECT_EQ(size_kv_device(req, &s, &why), -EINVAL);
  EXPECT_NE(why.find("cannot hold the journal"), std::string::npos) << why;

  req = KvSizingRequest();
  req.usable = 8 * GiB;
  req.lend_unit = 96 << 10;  // not a multiple of A
  EXPECT_EQ(size_kv_device(req, &s, &why), -EINVAL);
}

TEST(KvDevice, RocksDBAndTheJournalShareTheDeviceAndReplayAfterARemount) {
  TempDir dir("kvdev");
  std::shared_ptr<BlockDevice> dev = open_kvfs_media(dir.file("ssd"));
  ASSERT_TRUE(dev);
  FakeLender lender(16 * kG);
  KvFsParams params = test_params();
  const uint64_t ring_size = 1 << 20;
  std::string why;
  ASSERT_EQ(KvDevice::format(dev, params, fs_uuid(), fs_fsid(), &lender, ring_size, &why), 0) << why;
  uint64_t first = 0;  // the first number after the replay of the empty ring
  {
    std::unique_ptr<KvDevice> k;
    ASSERT_EQ(KvDevice::mount(dev, params, fs_uuid(), fs_fsid(), nullptr, &k, &why), 0) << why;
    // Made at format, first: one extent near the start of the first chunk
    // (after the log's segment and the two kept aside for it).
    std::vector<KvFsExtent> ring = k->fs().journal();
    ASSERT_EQ(ring.size(), 1u);
    EXPECT_LE(ring[0].offset, kHead + 3 * params.log_segment);
    EXPECT_EQ(ring[0].length, ring_size);
    auto db = open_db(k.get(), true);
    ASSERT_TRUE(db);
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), "before", "x").ok());
    ASSERT_TRUE(db->FlushWAL(true).ok());
    auto journal = k->open_journal(ring_size, fs_fsid(), 0, &why);
    ASSERT_TRUE(journal) << why;
    uint64_t next = 0;
    EXPECT_EQ(journal->replay(db.get(), &next, &why), 0) << why;
    EXPECT_EQ(next, 1 + journal->renumber_gap());
    first = next;
    // Three transactions reach the ring and never RocksDB: the power goes.
    for (uint64_t seq = first; seq < first + 3; ++seq) {
      const std::string r = journal->encode(std::vector<JournalEntry>{JournalEntry{seq, journal_test_batch(seq)}});
      bool needs_checkpoint = false;
      ASSERT_EQ(journal->write(journal->reserve(r.size(), &needs_checkpoint), r), 0);
    }
    journal.reset();
    db->Close().PermitUncheckedError();
    db.reset();
    ASSERT_EQ(k->unmount(&why), 0) << why;
  }
  std::unique_ptr<KvDevice> k;
  ASSERT_EQ(KvDevice::mount(dev, params, fs_uuid(), fs_fsid(), nullptr, &k, &why), 0) << why;
  k->set_lender(&lender);
  auto db = open_db(k.get(), false);
  ASSERT_TRUE(db);
  // A second open_journal finds the ring; the size asked for no longer
  // matters.
  auto journal = k->open_journal(0, fs_fsid(), 0, &why);
  ASSERT_TRUE(journal) << why;
  uint64_t next = 0;
  EXPECT_EQ(journal->replay(db.get(), &next, &why), 3) << why;
  EXPECT_EQ(next, first + 3 + journal->renumber_gap());
  std::string v;
  EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), "before", &v).ok());
  for (uint64_t seq = first; seq < first + 3; ++seq) {
    ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), "k" + std::to_string(seq), &v).ok()) << seq;
    EXPECT_EQ(v, "v" + std::to_string(seq));
  }
  // RocksDB's files are in the kvfs, not beside the device.
  std::vector<std::string> names;
  ASSERT_EQ(k->fs().list("db", &names, &why), 0) << why;
  EXPECT_NE(std::find(names.begin(), names.end(), "CURRENT"), names.end());
  journal.reset();
  db->Close().PermitUncheckedError();
  db.reset();
  EXPECT_EQ(k->unmount(&why), 0) << why;
}

TEST(KvDevice, NoRingWithoutASizeAndAWrongUuidDoesNotMount) {
  TempDir dir("kvdev");
  std::shared_ptr<BlockDevice> dev = open_kvfs_media(dir.file("ssd"));
  FakeLender lender(16 * kG);
  KvFsParams params = test_params();
  std::string why;
  ASSERT_EQ(KvDevice::format(dev, params, fs_uuid(), fs_fsid(), &lender, 0, &why), 0) << why;
  std::unique_ptr<KvDevice> k;
  EXPECT_EQ(KvDevice::mount(dev, params, test_uuid(0x77), fs_fsid(), nullptr, &k, &why), -EIO);
  EXPECT_FALSE(k);
  ASSERT_EQ(KvDevice::mount(dev, params, fs_uuid(), fs_fsid(), &lender, &k, &why), 0) << why;
  EXPECT_TRUE(k->fs().journal().empty());
  EXPECT_FALSE(k->open_journal(0, fs_fsid(), 0, &why));
  EXPECT_TRUE(why.empty()) << why;
  // Asked for one later (the option raised), the mount makes it.
  auto journal = k->open_journal(1 << 20, fs_fsid(), 0, &why);
  ASSERT_TRUE(journal) << why;
  EXPECT_EQ(journal->size(), 1u << 20);
  journal.reset();
  EXPECT_EQ(k->unmount(&why), 0) << why;
}
