// The commit journal's ring inside the kvfs (docs/kvfs.md 4): KvFs makes it
// once, zeroed over space that held other bytes, keeps it across remounts
// and compactions, and CommitJournal runs on it through a RegionDevice, its
// records replayed into RocksDB after the kvfs is mounted again.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include "common_helpers.h"
#include "hscommon/encoding.h"
#include "hsio/forwarding_device.h"
#include "hsio/region_device.h"
#include "hybridstore/kv/commit_journal.h"
#include "hybridstore/kv/kv_schema.h"
#include "kvfs/kvfs_fs_util.h"

using namespace hybridstore;
using namespace hybridstore::test;

namespace {

std::string record(uint64_t seq) {
  return encode_journal_record(fs_fsid(), {JournalEntry{seq, journal_test_batch(seq)}});
}

std::unique_ptr<rocksdb::DB> open_db(const std::string& path) {
  rocksdb::Options o;
  o.create_if_missing = true;
  rocksdb::DB* db = nullptr;
  EXPECT_TRUE(rocksdb::DB::Open(o, path, &db).ok());
  return std::unique_ptr<rocksdb::DB>(db);
}

// A drive whose trim does nothing, as trim may be on real media (and a
// file's hole punch is not): freed blocks keep what they held.
class KeepsTrimmedBytes : public ForwardingBlockDevice {
 public:
  explicit KeepsTrimmedBytes(std::unique_ptr<BlockDevice> inner)
      : ForwardingBlockDevice(std::move(inner), "keeps-trimmed") {}
  int discard(uint64_t, uint64_t) override { return 0; }
};

struct KvFsWithRing {
  KvFsWithRing() : dir("kvfs-ring"), params(test_params()), lender(4 * kG) {
    dev = std::make_unique<KeepsTrimmedBytes>(open_kvfs_media(dir.file("dev")));
    fs = format_and_mount(dev.get(), &lender, params);
  }
  void remount() {
    std::string why;
    ASSERT_EQ(fs->unmount(&why), 0) << why;
    fs.reset();
    fs = mount_kvfs(dev.get(), &lender, params);
    ASSERT_TRUE(fs);
  }
  // The ring as the store opens it: a region of the kvfs's device.
  std::unique_ptr<BlockDevice> ring_device() {
    std::vector<RegionExtent> extents;
    for (const KvFsExtent& e : fs->journal()) extents.push_back(RegionExtent{e.offset, e.length});
    std::string why;
    std::shared_ptr<BlockDevice> shared(dev.get(), [](BlockDevice*) {});
    auto region = RegionDevice::make(shared, extents, &why);
    EXPECT_TRUE(region) << why;
    return region;
  }
  TempDir dir;
  KvFsParams params;
  FakeLender lender;
  std::unique_ptr<BlockDevice> dev;
  std::unique_ptr<KvFs> fs;
};

}  // namespace

TEST(KvFsJournal, RingIsZeroedOverOldRecordsKeptAndCarriesTheJournal) {
  KvFsWithRing k;
  // Nearly all of the kvfs's free space first holds a file of records of
  // this very store, numbered from 1, then is freed: a ring made there and
  // not zeroed would hand them to replay as transactions.
  // (Less the two segments a file allocation keeps aside for the log.)
  const uint64_t junk_len =
      (k.fs->free_bytes() - 2 * k.params.log_segment - 2 * kA) / CommitJournal::kBlock * CommitJournal::kBlock;
  std::string junk;
  for (uint64_t seq = 1; junk.size() < junk_len; ++seq) junk += record(seq);
  junk.resize(junk_len);
  {
    std::unique_ptr<KvFsWritableFile> f;
    std::string why;
    ASSERT_EQ(k.fs->open_writable("db", "junk", &f, &why), 0) << why;
    ASSERT_EQ(f->append(junk, &why), 0) << why;
    ASSERT_EQ(f->sync(&why), 0) << why;
    ASSERT_EQ(f->close(&why), 0) << why;
    ASSERT_EQ(k.fs->unlink("db", "junk", &why), 0) << why;
    ASSERT_EQ(k.fs->sync_log(&why), 0) << why;
  }
  const uint64_t free_before = k.fs->free_bytes();
  const uint64_t ring_size = 1 << 20;
  std::vector<KvFsExtent> ring;
  std::string why;
  ASSERT_EQ(k.fs->make_journal(ring_size, &ring, &why), 0) << why;
  ASSERT_FALSE(ring.empty());
  EXPECT_EQ(ring.size(), 1u) << "one free run held the ring";
  uint64_t total = 0;
  for (const KvFsExtent& e : ring) total += e.length;
  EXPECT_EQ(total, ring_size);
  EXPECT_EQ(k.fs->free_bytes(), free_before - ring_size);
  EXPECT_EQ(k.fs->journal(), ring);

  {
    auto region = k.ring_device();
    ASSERT_TRUE(region);
    AlignedBuffer all(region->size());
    ASSERT_EQ(region->read(0, all.data(), all.size()), 0);
    EXPECT_EQ(std::count(all.data(), all.data() + all.size(), '\0'), static_cast<long>(all.size()))
        << "the ring holds bytes other than zeros";
    auto j = CommitJournal::open_region(std::move(region), fs_fsid(), &why);
    ASSERT_TRUE(j) << why;
    auto db = open_db(k.dir.file("db-empty"));
    uint64_t next = 0;
    EXPECT_EQ(j->replay(db.get(), &next, &why), 0) << why;
    // Five transactions go into the ring.
    for (uint64_t seq = 1; seq <= 5; ++seq) {
      const std::string r = record(seq);
      bool needs_checkpoint = false;
      const uint64_t pos = j->reserve(r.size(), &needs_checkpoint);
      EXPECT_FALSE(needs_checkpoint);
      ASSERT_EQ(j->write(pos, r), 0);
    }
  }

  // Asked again, with another size: the ring stays as it is.
  std::vector<KvFsExtent> again;
  ASSERT_EQ(k.fs->make_journal(4 * ring_size, &again, &why), 0) << why;
  EXPECT_EQ(again, ring);
  EXPECT_EQ(k.fs->free_bytes(), free_before - ring_size);

  // Through a remount and a compaction (the snapshot carries JOURNAL).
  k.remount();
  EXPECT_EQ(k.fs->journal(), ring);
  // The segments kept aside for the log are free again after a remount.
  EXPECT_EQ(k.fs->free_bytes(), free_before - ring_size + 2 * k.params.log_segment);
  ASSERT_EQ(k.fs->compact(&why), 0) << why;
  k.remount();
  EXPECT_EQ(k.fs->journal(), ring);

  auto region = k.ring_device();
  ASSERT_TRUE(region);
  auto j = CommitJournal::open_region(std::move(region), fs_fsid(), &why);
  ASSERT_TRUE(j) << why;
  auto db = open_db(k.dir.file("db"));
  uint64_t next = 0;
  EXPECT_EQ(j->replay(db.get(), &next, &why), 5) << why;
  EXPECT_EQ(next, 6 + j->renumber_gap());
  std::string v;
  for (uint64_t seq = 1; seq <= 5; ++seq)
    EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), "k" + std::to_string(seq), &v).ok()) << seq;
}

TEST(KvFsJournal, ANewKvfsHasNoRingAndRefusesAnEmptyOne) {
  KvFsWithRing k;
  EXPECT_TRUE(k.fs->journal().empty());
  std::vector<KvFsExtent> ring;
  std::string why;
  EXPECT_EQ(k.fs->make_journal(0, &ring, &why), -EINVAL);
  EXPECT_TRUE(ring.empty());
  // A ring larger than the kvfs and all the lender has is refused, and
  // leaves nothing behind.
  const uint64_t owned_before = k.fs->owned_bytes();
  EXPECT_EQ(k.fs->make_journal(64 * kG, &ring, &why), -ENOSPC);
  EXPECT_TRUE(k.fs->journal().empty());
  // What growth brought stays the kvfs's; all of it is free but the log's
  // segment and the two kept aside for it.
  EXPECT_EQ(k.fs->free_bytes(), k.fs->owned_bytes() - 3 * k.params.log_segment);
  EXPECT_GE(k.fs->owned_bytes(), owned_before);
  k.remount();
  EXPECT_TRUE(k.fs->journal().empty());
}
