// Small random writes into objects on the HDD are absorbed by the SSD, and
// written back whole to the HDD when the SSD needs the room: the data reads
// back the same at every step, across a remount, and fsck stays clean.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <iostream>
#include <chrono>
#include <random>
#include <thread>

#include "hsio/block_device.h"
#include "hybridstore/kv/kv_schema.h"
#include "hybridstore/store/test_hooks.h"
#include "hybridstore/tier/placement.h"
#include "hybridstore/tier/heat_tracker.h"
#include "hybridstore/tier/migrator.h"
#include "store_helpers.h"

using namespace hybridstore;
using hybridstore::test::TierStoreTest;

namespace {

class AbsorbTest : public TierStoreTest {
 protected:
  uint64_t on(const ObjectId& o, Tier t) { return st(o).bytes_on[tier_index(t)]; }
  // An object on the HDD as librbd makes one: hinted with a 4 MiB expected size.
  std::string put_on_hdd(const ObjectId& o, size_t size) {
    std::string data = hybridstore::test::random_bytes(rng_, size);
    Transaction t;
    t.touch(coll_, o);
    t.set_alloc_hint(coll_, o, 4u << 20, 4u << 20, 0);
    t.write(coll_, o, 0, data);
    apply(std::move(t));
    EXPECT_EQ(on(o, Tier::kHdd), (size + 4095) / 4096 * 4096);
    return data;
  }
  void write(const ObjectId& o, uint64_t off, const std::string& bytes, std::string* model) {
    Transaction t;
    t.write(coll_, o, off, bytes);
    apply(std::move(t));
    if (model->size() < off + bytes.size()) model->resize(off + bytes.size(), '\0');
    model->replace(off, bytes.size(), bytes);
  }
};

TEST_F(AbsorbTest, ASmallRandomWriteIntoAnHddObjectGoesToTheSsd) {
  std::string model = put_on_hdd(obj("rbd"), 256 << 10);
  write(obj("rbd"), 100 << 10, std::string(4096, 'a'), &model);
  EXPECT_EQ(on(obj("rbd"), Tier::kSsd), 4096u);
  EXPECT_EQ(on(obj("rbd"), Tier::kHdd), (256u << 10) - 4096);
  EXPECT_EQ(read_all(coll_, obj("rbd")), model);
  // An overwrite of the absorbed block stays on the SSD.
  write(obj("rbd"), 100 << 10, std::string(4096, 'b'), &model);
  EXPECT_EQ(on(obj("rbd"), Tier::kSsd), 4096u);
  EXPECT_EQ(read_all(coll_, obj("rbd")), model);
  EXPECT_EQ(counter("tier_absorb_ops"), 1u);
  EXPECT_EQ(fsck_errors(true), 0);
}

// Absorbed writes are fast without a promotion, so they are no heat: a pass
// must not copy a 4 MiB object up from the HDD only because it is written at
// random. Their position still counts for the continuation test.
TEST_F(AbsorbTest, AbsorbedWritesAddNoHeat) {
  std::string model = put_on_hdd(obj("rbd"), 256 << 10);
  HeatSample before, after;
  ASSERT_TRUE(StoreTestHooks::heat(*store_, kv::onode_key(coll_, obj("rbd")), &before));
  for (int i = 0; i < 5; ++i) write(obj("rbd"), (i * 7 % 60) * 4096, std::string(4096, 'a' + i), &model);
  ASSERT_TRUE(StoreTestHooks::heat(*store_, kv::onode_key(coll_, obj("rbd")), &after));
  EXPECT_EQ(after.frequency, before.frequency);
  EXPECT_EQ(after.randomness, before.randomness);
  EXPECT_EQ(after.last_end, 29u * 4096);  // where the last write (at 28 * 4 KiB) ended
  MigrationReport rep;
  ASSERT_EQ(store_->migrate_now(&rep), 0);
  EXPECT_EQ(rep.promoted, 0u);
  EXPECT_EQ(read_all(coll_, obj("rbd")), model);
}

TEST_F(AbsorbTest, AWriteThatContinuesThePreviousOneStaysOnTheHdd) {
  std::string model = put_on_hdd(obj("seq"), 64 << 10);
  write(obj("seq"), 64 << 10, std::string(64 << 10, 's'), &model);
  write(obj("seq"), 128 << 10, std::string(64 << 10, 't'), &model);
  EXPECT_EQ(on(obj("seq"), Tier::kSsd), 0u);
  EXPECT_EQ(on(obj("seq"), Tier::kHdd), 192u << 10);
  EXPECT_EQ(read_all(coll_, obj("seq")), model);
  EXPECT_EQ(counter("tier_absorb_ops"), 0u);
}

TEST_F(AbsorbTest, WritesLargerThanTheLimitGoToTheHdd) {
  std::string model = put_on_hdd(obj("big"), 256 << 10);
  write(obj("big"), 0, std::string(128 << 10, 'x'), &model);  // the limit is 64 KiB
  EXPECT_EQ(on(obj("big"), Tier::kSsd), 0u);
  EXPECT_EQ(read_all(coll_, obj("big")), model);
}

TEST_F(AbsorbTest, NothingIsAbsorbedWhenTheSsdIsShortOfFreeSpace) {
  with({{"hybridstore_tier_absorb_min_free", "1"}});
  std::string model = put_on_hdd(obj("rbd"), 64 << 10);
  write(obj("rbd"), 8192, std::string(4096, 'a'), &model);
  EXPECT_EQ(on(obj("rbd"), Tier::kSsd), 0u);
  EXPECT_EQ(read_all(coll_, obj("rbd")), model);
}

TEST_F(AbsorbTest, ZeroLimitTurnsItOff) {
  with({{"hybridstore_tier_absorb_max", "0"}});
  std::string model = put_on_hdd(obj("rbd"), 64 << 10);
  write(obj("rbd"), 8192, std::string(4096, 'a'), &model);
  EXPECT_EQ(on(obj("rbd"), Tier::kSsd), 0u);
}

TEST(AbsorbPays, OnlyFromADiskIntoSolidState) {
  using M = Media;
  EXPECT_TRUE(absorb_pays(M::kSolidState, M::kRotational));
  EXPECT_FALSE(absorb_pays(M::kRotational, M::kRotational));  // files on one disk
  EXPECT_FALSE(absorb_pays(M::kSolidState, M::kSolidState));  // two SSDs
  EXPECT_FALSE(absorb_pays(M::kRotational, M::kSolidState));
  // Nothing known: the roles decide (the fastest tier an SSD, below it disks).
  EXPECT_TRUE(absorb_pays(M::kUnknown, M::kUnknown));
  EXPECT_TRUE(absorb_pays(M::kUnknown, M::kRotational));
  EXPECT_TRUE(absorb_pays(M::kSolidState, M::kUnknown));
  EXPECT_FALSE(absorb_pays(M::kUnknown, M::kSolidState));
  EXPECT_FALSE(absorb_pays(M::kRotational, M::kUnknown));
}

// With the devices modelled (an SSD and a disk), auto absorbs as always does.
TEST_F(AbsorbTest, AutoAbsorbsIntoAnSsdFromADisk) {
  with({{"hybridstore_tier_absorb", "auto"}, {"hybridstore_device_model", "paper"}});
  std::string model = put_on_hdd(obj("rbd"), 256 << 10);
  write(obj("rbd"), 100 << 10, std::string(4096, 'a'), &model);
  EXPECT_EQ(on(obj("rbd"), Tier::kSsd), 4096u);
  EXPECT_EQ(counter("tier_absorb_ops"), 1u);
  EXPECT_EQ(read_all(coll_, obj("rbd")), model);
}

// Both device files lie in one directory, so on one disk: auto writes in
// place (deferred), unless the kernel says nothing of that disk (tmpfs),
// when the roles decide and the SSD absorbs. Either way the store follows
// what its devices report.
TEST_F(AbsorbTest, AutoFollowsTheMediaOfTheDeviceFiles) {
  with({{"hybridstore_tier_absorb", "auto"}});
  const std::string probe_file = dir_->path() + "/media-probe";
  int fd = ::open(probe_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  const Media m = media_of(fd);
  ::close(fd);
  ::unlink(probe_file.c_str());
  std::cout << "device files' media: " << media_name(m) << std::endl;
  std::string model = put_on_hdd(obj("rbd"), 256 << 10);
  const uint64_t deferred = counter("deferred_write_ops");
  write(obj("rbd"), 100 << 10, std::string(4096, 'a'), &model);
  if (m == Media::kUnknown) {
    EXPECT_EQ(on(obj("rbd"), Tier::kSsd), 4096u);
    EXPECT_EQ(counter("tier_absorb_ops"), 1u);
  } else {
    EXPECT_EQ(on(obj("rbd"), Tier::kSsd), 0u);
    EXPECT_EQ(on(obj("rbd"), Tier::kHdd), 256u << 10);
    EXPECT_EQ(counter("tier_absorb_ops"), 0u);
    EXPECT_EQ(counter("deferred_write_ops"), deferred + 1);
  }
  EXPECT_EQ(read_all(coll_, obj("rbd")), model);
  EXPECT_EQ(fsck_errors(true), 0);
}

TEST_F(AbsorbTest, WriteBackMovesTheObjectWholeToTheHddWithItsData) {
  std::string model = put_on_hdd(obj("rbd"), 512 << 10);
  for (int i = 0; i < 8; ++i) write(obj("rbd"), (i * 61 % 128) * 4096, std::string(4096, 'a' + i), &model);
  EXPECT_GT(on(obj("rbd"), Tier::kSsd), 0u);
  EXPECT_EQ(store_->destage_now(), 1);
  EXPECT_EQ(on(obj("rbd"), Tier::kSsd), 0u);
  EXPECT_EQ(on(obj("rbd"), Tier::kHdd), 512u << 10);
  EXPECT_EQ(read_all(coll_, obj("rbd")), model);
  EXPECT_EQ(counter("destage_ops"), 1u);
  EXPECT_EQ(store_->destage_now(), 0);  // nothing left to write back
  EXPECT_EQ(fsck_errors(true), 0);
}

// A write-back reads what it moves, not the whole object: the absorbed
// blocks come from the SSD and nothing is read from the HDD.
TEST_F(AbsorbTest, WriteBackReadsOnlyTheAbsorbedBlocks) {
  std::string model = put_on_hdd(obj("rbd"), 1 << 20);
  write(obj("rbd"), 8192, std::string(4096, 'w'), &model);
  write(obj("rbd"), 600 << 10, std::string(4096, 'x'), &model);
  ASSERT_EQ(on(obj("rbd"), Tier::kSsd), 8192u);
  const uint64_t hdd_read = counter("hdd_read_bytes");
  EXPECT_EQ(store_->destage_now(), 1);
  EXPECT_EQ(counter("hdd_read_bytes"), hdd_read);
  EXPECT_EQ(on(obj("rbd"), Tier::kSsd), 0u);
  EXPECT_EQ(read_all(coll_, obj("rbd")), model);
  EXPECT_EQ(fsck_errors(true), 0);
}

// A pass plans within the SSD's budget less what absorbed data holds: it
// cannot move that data, and filling the whole budget would put the SSD over
// its target at the next absorbed write.
TEST_F(AbsorbTest, APassLeavesTheRoomAbsorbedDataHoldsOutOfItsBudget) {
  std::string model = put_on_hdd(obj("rbd"), 256 << 10);
  MigrationReport before;
  ASSERT_EQ(store_->migrate_now(&before), 0);
  write(obj("rbd"), 16384, std::string(4096, 'a'), &model);
  write(obj("rbd"), 65536, std::string(4096, 'b'), &model);
  ASSERT_EQ(on(obj("rbd"), Tier::kSsd), 8192u);
  MigrationReport after;
  ASSERT_EQ(store_->migrate_now(&after), 0);
  EXPECT_EQ(after.ssd_budget, before.ssd_budget - 8192);
  EXPECT_EQ(read_all(coll_, obj("rbd")), model);
}

// After a remount the migrator knows of no absorbed object; a pass's scan
// finds it, and the background thread writes it back while the SSD is over
// its target (a target of almost nothing here, which also keeps the pass
// from promoting the object). The deadline only bounds a hang.
TEST_F(AbsorbTest, APassFindsAbsorbedObjectsAfterARemountAndTheyAreWrittenBack) {
  std::string model = put_on_hdd(obj("rbd"), 512 << 10);
  write(obj("rbd"), 40960, std::string(4096, 'r'), &model);
  ASSERT_EQ(on(obj("rbd"), Tier::kSsd), 4096u);
  extra_.push_back({"hybridstore_tier_ssd_target_ratio", "0.0001"});
  remount();
  EXPECT_EQ(read_all(coll_, obj("rbd")), model);
  EXPECT_EQ(on(obj("rbd"), Tier::kSsd), 4096u);
  MigrationReport rep;
  ASSERT_EQ(store_->migrate_now(&rep), 0);
  EXPECT_EQ(rep.promoted, 0u);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (on(obj("rbd"), Tier::kSsd) != 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(on(obj("rbd"), Tier::kSsd), 0u);
  EXPECT_EQ(read_all(coll_, obj("rbd")), model);
  EXPECT_EQ(fsck_errors(true), 0);
}

// Absorbed writes, moves both ways and write-backs racing each other: every
// byte reads back as last written, through a remount, and fsck is clean.
TEST_F(AbsorbTest, AbsorbedWritesRacingMovesAndWriteBacksLoseNothing) {
  const int kObjects = 6;
  std::vector<std::string> model(kObjects);
  for (int i = 0; i < kObjects; ++i) model[i] = put_on_hdd(obj("c" + std::to_string(i)), 200000);
  std::atomic<bool> stop{false};
  std::atomic<int> moves{0}, failures{0};
  std::thread mover([&] {
    for (int round = 0; !stop; ++round) {
      for (int i = 0; i < kObjects && !stop; ++i) {
        int r = store_->migrate(coll_, obj("c" + std::to_string(i)), round % 3 == 1 ? Tier::kSsd : Tier::kHdd);
        if (r == 0) ++moves;
        else if (r != -EAGAIN) ++failures;
      }
      if (store_->destage_now() < 0) ++failures;
    }
  });
  std::mt19937_64 rng(5);
  printf("seed 5\n");
  for (int n = 0; n < 300; ++n) {
    int i = static_cast<int>(rng() % kObjects);
    uint64_t off = rng() % 190000;
    std::string d = hybridstore::test::random_bytes(rng, 1 + rng() % 9000);
    write(obj("c" + std::to_string(i)), off, d, &model[i]);
  }
  stop = true;
  mover.join();
  EXPECT_GT(moves.load(), 0);
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(counter("tier_absorb_ops"), 0u);
  for (int i = 0; i < kObjects; ++i) EXPECT_EQ(read_all(coll_, obj("c" + std::to_string(i))), model[i]) << i;
  remount();
  for (int i = 0; i < kObjects; ++i) EXPECT_EQ(read_all(coll_, obj("c" + std::to_string(i))), model[i]) << i;
  EXPECT_EQ(fsck_errors(true), 0);
}

}  // namespace
