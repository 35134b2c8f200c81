// Power cuts at many points of a random workload (hybridstore_debug_* fault
// injection, in process): after the power comes back the store must mount,
// pass a deep fsck, and hold exactly transactions 1..p of the workload with
// p at least the last acknowledged one. A torn last write must be harmless,
// or caught by the checksums when it hits live data.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "crash_workload.h"
#include "durability_helpers.h"
#include "hybridstore/store/test_hooks.h"
#include "testing/fault_injection.h"
#include "store_helpers.h"

using namespace hybridstore;
using namespace hybridstore::crashtest;
using hybridstore::test::recover_and_read;
using hybridstore::test::with_option;

namespace {

class PowerCutTest : public test::StoreTest {
 protected:
  test::TempDir::Backing backing() override { return test::TempDir::Backing::kMemory; }
  std::string store_path() { return dir_->path() + "/store"; }

  // Runs `rounds` rounds on one store; each round mounts with the injector,
  // arms a cut somewhere in a workload of `txns` transactions (or, every
  // fourth round, through the option so that it may fall during mount),
  // runs the workload, pulls the plug if the cut was not reached, then
  // recovers and verifies. The verified state is the next round's base.
  // With keep_random the cut destages a random half of the cached device
  // blocks instead of dropping them all (hybridstore_debug_powercut_keep).
  void run_rounds(bool tear, int rounds, uint64_t txns, uint64_t rng_seed, bool keep_random = false) {
    std::mt19937_64 rng(rng_seed);
    StoreModel base;
    std::string err;
    ASSERT_EQ(read_store_model(*store_, &base, &err), 0) << err;
    ASSERT_EQ(store_->umount(), 0);
    store_.reset();
    uint64_t cuts_reached = 0, verified = 0;
    for (int round = 0; round < rounds; ++round) {
      SCOPED_TRACE("round " + std::to_string(round));
      const uint64_t seed = rng_seed * 1000 + static_cast<uint64_t>(round);
      Config cfg = with_option(config(), "hybridstore_debug_fault_seed", std::to_string(seed));
      if (keep_random) cfg = with_option(cfg, "hybridstore_debug_powercut_keep", "random");
      const bool via_option = round % 4 == 3;
      if (via_option) {
        cfg = with_option(cfg, "hybridstore_debug_powercut_after_writes", std::to_string(1 + rng() % 24));
        cfg = with_option(cfg, "hybridstore_debug_powercut_tear", tear ? "true" : "false");
      } else {
        cfg = with_option(cfg, "hybridstore_debug_fault_injection", "true");
      }
      auto s = std::make_unique<HybridStore>(store_path(), cfg);
      auto inj = [&] { return fault_injector_for(store_path()); };
      RunResult res;
      if (s->mount(&err) == 0) {
        ASSERT_TRUE(inj());
        // About one clock tick per transaction: its commit journal record
        // (RocksDB's WAL is appended in large pieces, and by the synced
        // writes of the deferred writer). Fewer on a loaded machine, where
        // more transactions share a record: cuts within the first half of
        // the count keep most of them inside the workload even then.
        if (!via_option) inj()->powercut_after_writes(1 + rng() % (txns / 2), tear);
        WorkloadGenerator gen(seed, base);
        RunOptions ro;
        ro.max_txns = txns;
        ro.max_inflight = 8;
        res = run_workload(*s, gen, ro);
        ASSERT_FALSE(res.mismatch) << res.message;
      } else {
        ASSERT_TRUE(inj() && inj()->power_is_off()) << "mount failed without a power cut: " << err;
      }
      if (inj()->power_is_off()) {
        ++cuts_reached;
      } else {
        inj()->power_cut_now();  // after the workload: what was acknowledged must survive
      }
      s.reset();

      StoreModel actual;
      auto rec = recover_and_read(store_path(), config(), &actual);
      ASSERT_TRUE(rec);
      uint64_t matched = 0;
      std::string why;
      ASSERT_TRUE(verify_prefix(actual, seed, base, WorkloadParams(), res.acked, res.submitted, &matched, &why))
          << why;
      verified += matched;
      base = std::move(actual);
      ASSERT_EQ(rec->umount(), 0);
    }
    EXPECT_GT(cuts_reached, static_cast<uint64_t>(rounds / 2)) << "most cuts fall inside the workload";
    EXPECT_GT(verified, 0u);
    store_ = std::make_unique<HybridStore>(store_path(), config());
    ASSERT_EQ(store_->mount(&err), 0) << err;
  }
};

}  // namespace

TEST_F(PowerCutTest, CutAtManyPointsLosesNoAcknowledgedTransactionAndLeavesNoneHalfApplied) {
  run_rounds(/*tear=*/false, 20, 80, 1);
}

TEST_F(PowerCutTest, TornLastWriteLeavesAWholePrefixAndACleanStore) {
  run_rounds(/*tear=*/true, 16, 80, 2);
}

TEST_F(PowerCutTest, CutThatKeepsARandomPartOfTheCacheLeavesAWholePrefixAndACleanStore) {
  // Blocks of later writes may reach the media while earlier ones do not: a
  // commit must not depend on the device keeping its cache in order.
  run_rounds(/*tear=*/false, 16, 80, 3, /*keep_random=*/true);
  run_rounds(/*tear=*/true, 8, 80, 4, /*keep_random=*/true);
}

TEST_F(PowerCutTest, CutDuringIdleStoreKeepsEverythingAcknowledged) {
  // The simplest promise: apply_transaction returned, then the power went.
  std::string err;
  ASSERT_EQ(store_->umount(), 0);
  store_ = std::make_unique<HybridStore>(store_path(), with_option(config(), "hybridstore_debug_fault_injection", "true"));
  ASSERT_EQ(store_->mount(&err), 0) << err;
  Transaction t;
  t.create_collection(coll_, 0);
  t.write(coll_, obj("a"), 0, std::string(20000, 'a'));
  t.setattr(coll_, obj("a"), "k", "v");
  t.omap_setkeys(coll_, obj("a"), {{"x", "1"}});
  ASSERT_EQ(store_->apply_transaction(std::move(t)), 0);
  fault_injector_for(store_path())->power_cut_now();
  store_.reset();
  store_ = std::make_unique<HybridStore>(store_path(), config());
  ASSERT_EQ(store_->mount(&err), 0) << err;
  EXPECT_EQ(read_all(coll_, obj("a")), std::string(20000, 'a'));
  std::string v;
  EXPECT_EQ(store_->getattr(coll_, obj("a"), "k", &v), 0);
  EXPECT_EQ(fsck_errors(true), 0);
}

// Small creates on the commit journal's path (no RocksDB sync before the
// acknowledgement; several groups in flight) and on the RocksDB-sync path:
// every one acknowledged before the cut is there after it.
TEST_F(PowerCutTest, SmallWritesAcknowledgedOnEitherCommitPathSurviveACut) {
  for (const char* journal : {"16M", "0"}) {
    SCOPED_TRACE(std::string("hybridstore_commit_journal_size=") + journal);
    std::string err;
    if (store_) {
      ASSERT_EQ(store_->umount(), 0);
    }
    Config cfg = with_option(config(), "hybridstore_commit_journal_size", journal);
    // The RocksDB-sync path has no ring to carry small writes' data.
    if (std::string(journal) == "0") cfg = with_option(cfg, "hybridstore_small_write_journal", "off");
    store_ = std::make_unique<HybridStore>(store_path(), with_option(cfg, "hybridstore_debug_fault_injection", "true"));
    ASSERT_EQ(store_->mount(&err), 0) << err;
    const std::string tag = journal;
    std::vector<std::thread> th;
    std::atomic<int> failed{0};
    for (int w = 0; w < 4; ++w)
      th.emplace_back([&, w] {
        for (int i = 0; i < 10; ++i) {
          Transaction t;
          if (w == 0 && i == 0) t.create_collection(CollectionId("9." + tag + "_head"), 0);
          if (w != 0 && i == 0)
            while (!store_->collection_exists(CollectionId("9." + tag + "_head"))) std::this_thread::yield();
          t.write(CollectionId("9." + tag + "_head"), obj(tag + "_" + std::to_string(w) + "_" + std::to_string(i)), 0,
                  std::string(4096, static_cast<char>('a' + w)));
          if (store_->apply_transaction(std::move(t)) != 0) ++failed;
        }
      });
    for (auto& t : th) t.join();
    ASSERT_EQ(failed.load(), 0);
    fault_injector_for(store_path())->power_cut_now();
    store_.reset();
    store_ = std::make_unique<HybridStore>(store_path(), cfg);
    ASSERT_EQ(store_->mount(&err), 0) << err;
    for (int w = 0; w < 4; ++w)
      for (int i = 0; i < 10; ++i)
        EXPECT_EQ(read_all(CollectionId("9." + tag + "_head"), obj(tag + "_" + std::to_string(w) + "_" + std::to_string(i))),
                  std::string(4096, static_cast<char>('a' + w)));
    EXPECT_EQ(fsck_errors(true), 0);
  }
}

namespace {
// A torn write over live data needs an in-place data write: the extent
// allocator's overwrite path (SSD sections write whole staged units).
class PowerCutExtentTest : public PowerCutTest {
 protected:
  Config config() override {
    Config c = test::small_store_config();
    std::string err;
    c.set("hybridstore_ssd_allocator", "extent", &err);
    return c;
  }
};
}  // namespace

TEST_F(PowerCutExtentTest, TornWriteOverLiveDataIsCaughtByChecksums) {
  // Copy-on-write never overwrites live data, so a torn write cannot hit it
  // through the engine; a misbehaving disk can. Emulate one: tear a stray
  // write across an object's extent, and the store must refuse to return the
  // damaged bytes and fsck --deep must name the object.
  std::string err;
  ASSERT_EQ(store_->umount(), 0);
  store_ = std::make_unique<HybridStore>(store_path(), with_option(config(), "hybridstore_debug_fault_injection", "true"));
  ASSERT_EQ(store_->mount(&err), 0) << err;
  make_coll(coll_);
  const std::string data = test::random_bytes(rng_, 64 << 10);
  Transaction t;
  t.write(coll_, obj("victim"), 0, data);
  ASSERT_EQ(store_->apply_transaction(std::move(t)), 0);
  uint64_t phys = 0;
  Tier tier;
  {
    std::shared_ptr<const Onode> on;
    ASSERT_EQ(StoreTestHooks::onode(*store_, coll_, obj("victim"), &on), 0);
    ASSERT_FALSE(on->extents.empty());
    const DataExtent& e = on->extents.extents().begin()->second;
    phys = e.physical;
    tier = e.tier;
  }
  auto inj = fault_injector_for(store_path());
  inj->powercut_after_writes(1, /*tear=*/true);
  AlignedBuffer junk(16 << 10);
  std::memset(junk.data(), 0x5a, junk.size());
  EXPECT_EQ(StoreTestHooks::device(*store_, tier)->write(phys, junk.data(), junk.size()), -EIO);
  ASSERT_TRUE(inj->power_is_off());
  store_.reset();

  store_ = std::make_unique<HybridStore>(store_path(), config());
  ASSERT_EQ(store_->mount(&err), 0) << err;
  std::string out;
  EXPECT_EQ(store_->read(coll_, obj("victim"), 0, 0, &out), -EIO) << "never the torn bytes";
  FsckReport rep;
  EXPECT_GT(store_->fsck(true, &rep), 0);
  ASSERT_FALSE(rep.problems.empty());
  EXPECT_NE(rep.problems[0].find("victim"), std::string::npos) << rep.problems[0];
  // The shallow fsck (metadata only) has nothing to object to.
  EXPECT_EQ(store_->fsck(false, &rep), 0);
  store_->umount();
  store_.reset();  // the fixture's teardown would fsck a store we damaged on purpose
}
