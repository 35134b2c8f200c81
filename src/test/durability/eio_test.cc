// I/O errors at commit time (hybridstore_debug_eio_* fault injection):
//  - a failed data write fails that transaction alone, cleanly;
//  - a failed device flush or RocksDB sync turns the store read-only with a
//    message saying why, and the transaction caught in it is never
//    acknowledged; after remount everything acknowledged is intact.
#include <gtest/gtest.h>

#include <atomic>

#include "crash_model.h"
#include "durability_helpers.h"
#include "store_helpers.h"
#include "testing/fault_injection.h"

using namespace hybridstore;
using namespace hybridstore::crashtest;
using hybridstore::test::recover_and_read;
using hybridstore::test::with_option;

namespace {

class EioTest : public test::StoreTest {
 protected:
  // These inject EIO into the data write a transaction makes before its
  // commit: the extent allocator's path. The SSD sections stage small data
  // in RocksDB instead; SectionsEioTest below covers their write-out.
  Config config() override {
    Config c = test::small_store_config();
    std::string err;
    c.set("hybridstore_ssd_allocator", "extent", &err);
    return c;
  }
  std::string store_path() { return dir_->path() + "/store"; }

  // Remounts with fault injection on (options may arm faults) and puts a
  // little acknowledged state in place; returns the injector.
  std::shared_ptr<FaultInjector> remount_with_faults(Config cfg) {
    EXPECT_EQ(store_->umount(), 0);
    store_ = std::make_unique<HybridStore>(store_path(), cfg);
    std::string err;
    EXPECT_EQ(store_->mount(&err), 0) << err;
    return fault_injector_for(store_path());
  }
  void put_acknowledged_state() {
    Transaction t;
    t.create_collection(coll_, 0);
    t.write(coll_, obj("keep"), 0, std::string(12288, 'k'));
    t.setattr(coll_, obj("keep"), "a", "1");
    t.omap_setkeys(coll_, obj("keep"), {{"o", "1"}});
    ASSERT_EQ(store_->apply_transaction(std::move(t)), 0);
    ASSERT_EQ(read_store_model(*store_, &acknowledged_, &err_), 0) << err_;
  }
  // A transaction touching data, xattrs and omap, with a commit callback.
  Transaction victim(std::atomic<bool>* committed) {
    Transaction t;
    t.write(coll_, obj("keep"), 4096, std::string(8192, 'v'));
    t.write(coll_, obj("new"), 0, std::string(5000, 'n'));
    t.setattr(coll_, obj("keep"), "a", "2");
    t.omap_setkeys(coll_, obj("keep"), {{"o", "2"}});
    t.register_on_commit([committed] { committed->store(true); });
    return t;
  }
  // The power goes and comes back; the store must hold `expected` exactly.
  void crash_and_expect(const StoreModel& expected, bool cut_power) {
    auto inj = fault_injector_for(store_path());
    if (cut_power) inj->power_cut_now();
    store_->umount();
    store_.reset();
    StoreModel actual;
    store_ = recover_and_read(store_path(), config(), &actual);
    ASSERT_TRUE(store_);
    EXPECT_EQ(diff_models(expected, actual), "");
  }

  StoreModel acknowledged_;
  std::string err_;
};

}  // namespace

TEST_F(EioTest, EioOnADataWriteFailsThatTransactionCleanlyAndTheStoreStaysUsable) {
  auto inj = remount_with_faults(with_option(config(), "hybridstore_debug_fault_injection", "true"));
  put_acknowledged_state();
  inj->fail_device_write_after(1);
  std::atomic<bool> committed{false};
  TxnError e;
  EXPECT_EQ(store_->queue_transaction(victim(&committed), &e), -EIO);
  // Data is written once every op has been checked, so the failure belongs
  // to the transaction as a whole.
  EXPECT_EQ(e.code, -EIO);
  EXPECT_EQ(e.message, "device write failed");
  ASSERT_EQ(store_->flush(), 0);
  EXPECT_FALSE(committed) << "a failed transaction is never acknowledged";
  StoreModel now;
  ASSERT_EQ(read_store_model(*store_, &now, &err_), 0) << err_;
  EXPECT_EQ(diff_models(acknowledged_, now), "") << "nothing of the failed transaction is visible";
  EXPECT_EQ(fsck_errors(), 0) << "its allocations were released";

  // Not read-only: the next transaction goes through and survives a power cut.
  Transaction t;
  t.write(coll_, obj("after"), 0, "fine");
  ASSERT_EQ(store_->apply_transaction(std::move(t)), 0);
  StoreModel expected = acknowledged_;
  ASSERT_EQ(read_store_model(*store_, &expected, &err_), 0);
  crash_and_expect(expected, /*cut_power=*/true);
}

TEST_F(EioTest, EioOnADeviceFlushMakesTheStoreReadOnlyAndNeverAcknowledges) {
  auto inj = remount_with_faults(with_option(config(), "hybridstore_debug_fault_injection", "true"));
  put_acknowledged_state();
  inj->fail_device_flush_after(1);
  std::atomic<bool> committed{false};
  EXPECT_EQ(store_->apply_transaction(victim(&committed)), -EIO);
  store_->flush();
  EXPECT_FALSE(committed) << "on_commit must not run for a transaction whose data flush failed";

  TxnError e;
  Transaction t;
  t.touch(coll_, obj("later"));
  EXPECT_EQ(store_->queue_transaction(std::move(t), &e), -EROFS);
  EXPECT_NE(e.message.find("read-only"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("flush of ssd device failed"), std::string::npos) << e.message;
  // Its data never became durable, so its metadata must never have been
  // written: without a power cut as well as with one.
  crash_and_expect(acknowledged_, /*cut_power=*/false);
}

// A large write goes on while its transaction is queued
// (hybridstore_async_write_min): queue_transaction has returned when it
// fails, so the commit is what must never happen.
TEST_F(EioTest, EioOnAWriteGoingOnWhileQueuedMakesTheStoreReadOnlyAndNeverAcknowledges) {
  auto inj = remount_with_faults(with_option(config(), "hybridstore_debug_fault_injection", "true"));
  put_acknowledged_state();
  ASSERT_EQ(store_->flush(), 0);
  inj->fail_device_write_after(1);
  std::atomic<bool> committed{false};
  // Only the large write: a small one would go first, synchronously, and
  // take the injected error itself.
  Transaction t;
  t.write(coll_, obj("big"), 0, std::string(1u << 20, 'b'));
  t.setattr(coll_, obj("keep"), "a", "2");
  t.register_on_commit([&committed] { committed.store(true); });
  EXPECT_EQ(store_->apply_transaction(std::move(t)), -EIO);
  store_->flush();
  EXPECT_FALSE(committed) << "on_commit must not run for a transaction whose data write failed";
  TxnError e;
  Transaction later;
  later.touch(coll_, obj("later"));
  EXPECT_EQ(store_->queue_transaction(std::move(later), &e), -EROFS);
  EXPECT_NE(e.message.find("write to a device failed"), std::string::npos) << e.message;
  crash_and_expect(acknowledged_, /*cut_power=*/false);
}

TEST_F(EioTest, EioOnADeviceFlushThenPowerCutLosesNothingAcknowledged) {
  auto inj = remount_with_faults(with_option(config(), "hybridstore_debug_fault_injection", "true"));
  put_acknowledged_state();
  inj->fail_device_flush_after(1);
  std::atomic<bool> committed{false};
  EXPECT_EQ(store_->apply_transaction(victim(&committed)), -EIO);
  store_->flush();
  EXPECT_FALSE(committed);
  crash_and_expect(acknowledged_, /*cut_power=*/true);
}

// The RocksDB sync ends each commit group only without the commit journal.
TEST_F(EioTest, EioOnTheRocksDbSyncMakesTheStoreReadOnlyAndNeverAcknowledges) {
  auto inj = remount_with_faults(with_option(with_option(config(), "hybridstore_debug_fault_injection", "true"),
                                             "hybridstore_commit_journal_size", "0"));
  put_acknowledged_state();
  inj->fail_kv_sync_after(1);
  std::atomic<bool> committed{false};
  EXPECT_EQ(store_->apply_transaction(victim(&committed)), -EIO);
  store_->flush();
  EXPECT_FALSE(committed) << "on_commit must not run when the WAL sync failed";
  TxnError e;
  Transaction t;
  t.touch(coll_, obj("later"));
  EXPECT_EQ(store_->queue_transaction(std::move(t), &e), -EROFS);
  EXPECT_NE(e.message.find("RocksDB commit failed"), std::string::npos) << e.message;
  // The unsynced WAL record is lost with the power: exactly the acknowledged state.
  crash_and_expect(acknowledged_, /*cut_power=*/true);
}

TEST_F(EioTest, EioOnTheRocksDbSyncWithoutPowerLossKeepsTheVictimWholeOrNotAtAll) {
  auto inj = remount_with_faults(with_option(with_option(config(), "hybridstore_debug_fault_injection", "true"),
                                             "hybridstore_commit_journal_size", "0"));
  put_acknowledged_state();
  StoreModel with_victim = acknowledged_;
  std::atomic<bool> unused{false};
  ASSERT_EQ(with_victim.apply(victim(&unused)), 0);
  inj->fail_kv_sync_after(1);
  std::atomic<bool> committed{false};
  EXPECT_EQ(store_->apply_transaction(victim(&committed)), -EIO);
  store_->flush();
  EXPECT_FALSE(committed);
  // Written but not synced: the page cache may keep it. Unacknowledged is
  // allowed to survive, but only whole.
  store_->umount();
  store_.reset();
  StoreModel actual;
  store_ = recover_and_read(store_path(), config(), &actual);
  ASSERT_TRUE(store_);
  EXPECT_TRUE(diff_models(acknowledged_, actual).empty() || diff_models(with_victim, actual).empty())
      << diff_models(acknowledged_, actual);
}

// With the commit journal the group's one durable write is the journal's:
// its flush failing is the RocksDB sync failing above.
TEST_F(EioTest, EioOnTheCommitJournalFlushMakesTheStoreReadOnlyAndNeverAcknowledges) {
  auto inj = remount_with_faults(with_option(config(), "hybridstore_debug_fault_injection", "true"));
  put_acknowledged_state();
  // The victim's new data is written in place (extent allocator): the data
  // device's flush comes first, the journal's second.
  inj->fail_device_flush_after(2);
  std::atomic<bool> committed{false};
  EXPECT_EQ(store_->apply_transaction(victim(&committed)), -EIO);
  store_->flush();
  EXPECT_FALSE(committed) << "on_commit must not run when the journal flush failed";
  TxnError e;
  Transaction t;
  t.touch(coll_, obj("later"));
  EXPECT_EQ(store_->queue_transaction(std::move(t), &e), -EROFS);
  EXPECT_NE(e.message.find("commit journal write failed"), std::string::npos) << e.message;
  // Neither the journal record nor RocksDB's unsynced batch survives the power.
  crash_and_expect(acknowledged_, /*cut_power=*/true);
}

TEST_F(EioTest, DebugOptionsArmTheSameFaultsFromTheConfiguration) {
  // The operator's route (hybridstore-tool --set ...): the first device flush fails.
  std::string err;
  remount_with_faults(with_option(config(), "hybridstore_debug_eio_on_flush", "1"));
  Transaction t;
  t.create_collection(coll_, 0);
  t.write(coll_, obj("x"), 0, "data");
  EXPECT_EQ(store_->apply_transaction(std::move(t)), -EIO);
  Transaction t2;
  t2.touch(coll_, obj("y"));
  EXPECT_EQ(store_->queue_transaction(std::move(t2)), -EROFS);
  store_->umount();
  // And a chosen device write, through its own option: the second, since
  // the first is the journal record of the collection's creation (waited
  // for, so that it cannot race the data write after it).
  store_ = std::make_unique<HybridStore>(store_path(), with_option(config(), "hybridstore_debug_eio_on_write", "2"));
  ASSERT_EQ(store_->mount(&err), 0) << err;
  Transaction tc;
  tc.create_collection(coll_, 0);
  ASSERT_EQ(store_->apply_transaction(std::move(tc)), 0);
  Transaction t3;
  t3.write(coll_, obj("x"), 0, "data");
  EXPECT_EQ(store_->queue_transaction(std::move(t3)), -EIO);
  Transaction t4;
  t4.write(coll_, obj("x"), 0, "data");
  EXPECT_EQ(store_->apply_transaction(std::move(t4)), 0) << "only the chosen write fails";
  EXPECT_EQ(read_all(coll_, obj("x")), "data");
}

TEST_F(EioTest, FailedOmapIdReservationMakesTheStoreReadOnlyAndUmountSurvivesIt) {
  // The first omap of a mount reserves ids with a synced RocksDB write of its
  // own, outside the committer. When that write fails the store must stop as
  // after a failed commit; umount used to flush the failed WAL, and RocksDB
  // aborted the process.
  remount_with_faults(config());
  put_acknowledged_state();
  for (bool power_cut : {false, true}) {
    SCOPED_TRACE(power_cut ? "power cut" : "EIO on the sync");
    auto inj = remount_with_faults(with_option(config(), "hybridstore_debug_fault_injection", "true"));
    if (power_cut)
      inj->powercut_after_writes(1, false);  // the reservation's WAL append
    else
      inj->fail_kv_sync_after(1);  // the reservation's WAL sync
    std::atomic<bool> committed{false};
    Transaction t;
    t.touch(coll_, obj("fresh"));
    t.omap_setkeys(coll_, obj("fresh"), {{"o", "3"}});
    t.register_on_commit([&committed] { committed = true; });
    TxnError e;
    EXPECT_EQ(store_->queue_transaction(std::move(t), &e), -EIO);
    Transaction t2;
    t2.touch(coll_, obj("later"));
    EXPECT_EQ(store_->queue_transaction(std::move(t2), &e), -EROFS);
    EXPECT_NE(e.message.find("reserving omap ids"), std::string::npos) << e.message;
    store_->flush();
    EXPECT_FALSE(committed);
    crash_and_expect(acknowledged_, power_cut);
  }
}

namespace {
class SectionsEioTest : public EioTest {
 protected:
  Config config() override { return test::small_store_config(); }  // SSD sections (the default)
};
}  // namespace

TEST_F(SectionsEioTest, EioWritingStagedUnitsMakesTheStoreReadOnlyAndLosesNothingAcknowledged) {
  auto inj = remount_with_faults(with_option(config(), "hybridstore_debug_fault_injection", "true"));
  put_acknowledged_state();
  // Small objects: staged in RocksDB, acknowledged before any device write.
  for (int i = 0; i < 20; ++i) {
    Transaction t;
    t.write(coll_, obj("s" + std::to_string(i)), 0, std::string(3000 + i, static_cast<char>('a' + i)));
    ASSERT_EQ(store_->apply_transaction(std::move(t)), 0);
  }
  StoreModel expected;
  ASSERT_EQ(read_store_model(*store_, &expected, &err_), 0) << err_;
  inj->fail_device_write_after(1);
  // Umount writes the staged units out; the first write fails.
  EXPECT_NE(store_->umount(), 0);
  Transaction late;
  late.touch(coll_, obj("late"));
  EXPECT_LT(store_->queue_transaction(std::move(late)), 0) << "read-only after the failed write-out";
  store_.reset();
  // Remount without faults: the staged records are replayed, nothing is lost.
  StoreModel actual;
  store_ = recover_and_read(store_path(), config(), &actual);
  ASSERT_TRUE(store_);
  EXPECT_EQ(diff_models(expected, actual), "");
  EXPECT_EQ(fsck_errors(true), 0);
}
