// Between migration passes: a small object read often on the HDD is promoted
// within a second (not at the next daily pass), and every transaction the
// store is given counts as client load for the migrator's idle detection,
// whichever entry point it came through (the Ceph adapter uses the plural one).
#include <atomic>
#include <chrono>
#include <thread>

#include "hybridstore/tier/migrator.h"
#include "store_helpers.h"

using namespace hybridstore;
using hybridstore::test::TierStoreTest;

namespace {

class PromotionTest : public TierStoreTest {
 protected:
  bool whole_on(const ObjectId& o, Tier t) {
    ObjectStat s = st(o);
    return s.allocated && s.bytes_on[tier_index(t)] == s.allocated;
  }
  // A small object on the HDD, as a demoted one or one spilled from a full
  // SSD lies there.
  std::string put_on_hdd(const ObjectId& o, size_t size) {
    std::string data = hybridstore::test::random_bytes(rng_, size);
    Transaction t;
    t.write(coll_, o, 0, data);
    apply(std::move(t));
    EXPECT_EQ(store_->migrate(coll_, o, Tier::kHdd), 0);
    EXPECT_TRUE(whole_on(o, Tier::kHdd));
    return data;
  }
};

// Written once, read twice: three accesses, the default count.
TEST_F(PromotionTest, ASmallObjectReadTwiceOnTheHddIsPromotedWithItsData) {
  std::string data = put_on_hdd(obj("hot"), 4096);
  EXPECT_EQ(read_all(coll_, obj("hot")), data);
  EXPECT_EQ(read_all(coll_, obj("hot")), data);
  // The migrator thread may take the queued promotion before this call does;
  // the call waits for a batch in flight, so either way it is done after it.
  store_->promote_now();
  EXPECT_TRUE(whole_on(obj("hot"), Tier::kSsd));
  EXPECT_EQ(read_all(coll_, obj("hot")), data);
  EXPECT_EQ(counter("promote_on_read_ops"), 1u);
  EXPECT_EQ(counter("promote_on_read_bytes"), 4096u);
  EXPECT_EQ(fsck_errors(true), 0);
}

// Written once, read once: two accesses.
TEST_F(PromotionTest, OneReadIsNotEnough) {
  put_on_hdd(obj("once"), 4096);
  read_all(coll_, obj("once"));
  EXPECT_EQ(store_->promote_now(), 0);
  EXPECT_TRUE(whole_on(obj("once"), Tier::kHdd));
}

TEST_F(PromotionTest, ObjectsLargerThanTheLimitWaitForAPass) {
  put_on_hdd(obj("big"), 2 << 20);  // the limit is 1 MiB by default
  for (int i = 0; i < 5; ++i) read_all(coll_, obj("big"));
  EXPECT_EQ(store_->promote_now(), 0);
  EXPECT_TRUE(whole_on(obj("big"), Tier::kHdd));
}

TEST_F(PromotionTest, NoPromotionIntoTheShareKeptForNewWrites) {
  // Target ratio 0: the whole SSD is kept for new writes, none for promotions.
  with({{"hybridstore_tier_ssd_target_ratio", "0"}});
  put_on_hdd(obj("hot"), 4096);
  read_all(coll_, obj("hot"));
  read_all(coll_, obj("hot"));
  EXPECT_EQ(store_->promote_now(), 0);
  EXPECT_TRUE(whole_on(obj("hot"), Tier::kHdd));
}

TEST_F(PromotionTest, ZeroHitsTurnsItOff) {
  with({{"hybridstore_tier_promote_hits", "0"}});
  put_on_hdd(obj("hot"), 4096);
  for (int i = 0; i < 5; ++i) read_all(coll_, obj("hot"));
  EXPECT_EQ(store_->promote_now(), 0);
  EXPECT_TRUE(whole_on(obj("hot"), Tier::kHdd));
}

TEST_F(PromotionTest, ObjectsAlreadyOnTheSsdAreNotQueued) {
  Transaction t;
  t.write(coll_, obj("ssd"), 0, std::string(4096, 's'));
  apply(std::move(t));
  for (int i = 0; i < 5; ++i) read_all(coll_, obj("ssd"));
  EXPECT_EQ(store_->promote_now(), 0);
  EXPECT_EQ(counter("migrate_up_ops"), 0u);
}

// Liveness, not speed: the background thread acts on its own; the deadline
// only bounds a hang.
TEST_F(PromotionTest, TheMigratorThreadPromotesWithoutBeingAsked) {
  std::string data = put_on_hdd(obj("hot"), 8192);
  read_all(coll_, obj("hot"));
  read_all(coll_, obj("hot"));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!whole_on(obj("hot"), Tier::kSsd) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(whole_on(obj("hot"), Tier::kSsd));
  EXPECT_EQ(read_all(coll_, obj("hot")), data);
}

TEST_F(PromotionTest, EveryTransactionCountsAsClientLoadWhateverTheEntryPoint) {
  const uint64_t before = store_->client_ops_counted();
  std::vector<Transaction> ts(3);
  for (int i = 0; i < 3; ++i) ts[i].write(coll_, obj("q" + std::to_string(i)), 0, std::string(512, 'q'));
  TxnError e;
  ASSERT_EQ(store_->queue_transactions(std::move(ts), &e), 0) << e.message;
  EXPECT_EQ(store_->client_ops_counted(), before + 3);
  Transaction one;
  one.write(coll_, obj("a"), 0, std::string(512, 'a'));
  ASSERT_EQ(store_->apply_transaction(std::move(one), &e), 0) << e.message;
  EXPECT_EQ(store_->client_ops_counted(), before + 4);
  Transaction single;
  single.write(coll_, obj("s"), 0, std::string(512, 's'));
  apply(std::move(single));
  EXPECT_EQ(store_->client_ops_counted(), before + 5);
  read_all(coll_, obj("s"));
  EXPECT_EQ(store_->client_ops_counted(), before + 6);
}

// A write storm through queue_transactions (how ceph-osd writes) is load: the
// idle trigger must not start a pass during it. Before the fix this entry
// point was not counted and a pass ran a second or two into the storm. The
// storm's rate (thousands a second) is far above the idle threshold (20), so
// a slow machine does not change the outcome.
TEST_F(PromotionTest, NoIdlePassDuringAStormOfQueuedTransactions) {
  with({{"hybridstore_tier_migrate_idle_ops", "20"},
        {"hybridstore_tier_migrate_idle_sec", "1"},
        {"hybridstore_tier_migrate_interval_sec", "0"}});
  const auto storm_end = std::chrono::steady_clock::now() + std::chrono::seconds(4);
  uint64_t n = 0;
  while (std::chrono::steady_clock::now() < storm_end) {
    std::vector<Transaction> ts(4);
    for (auto& t : ts) t.write(coll_, obj("w" + std::to_string(n++ % 64)), 0, std::string(512, 'w'));
    TxnError e;
    ASSERT_EQ(store_->queue_transactions(std::move(ts), &e), 0) << e.message;
    if (n % 256 == 0) store_->flush();
  }
  store_->flush();
  printf("storm: %llu transactions in 4 s\n", static_cast<unsigned long long>(n));
  ASSERT_GT(n, 400u) << "the storm was too slow to be load";
  EXPECT_EQ(counter("migration_passes"), 0u);
  // Idle now: a pass follows within idle_sec plus a tick or two.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (counter("migration_passes") == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_GE(counter("migration_passes"), 1u);
}

}  // namespace
