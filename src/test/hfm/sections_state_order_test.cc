// The SSD sections' state records reach RocksDB in the order they were
// drained. Transactions drain the state they changed into their own batch
// and submit it to the committer under the sections' lock; the periodic tick
// (staging timeouts, the migrator thread's once a second) drains whatever
// else is dirty. Were the tick to write its batch straight to RocksDB, a
// transaction drained before it but committed after it would put back an
// older record over the tick's newer one, and an allocation made in between
// would vanish from the records: after a remount the sections would hand
// those blocks out again while objects still use them.
#include <atomic>
#include <mutex>
#include <random>
#include <thread>

#include "hybridstore/store/test_hooks.h"
#include "store_helpers.h"

using namespace hybridstore;
using hybridstore::test::StoreTest;

namespace {

class SectionsStateOrderTest : public StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    make_coll(coll_);
  }
};

}  // namespace

TEST_F(SectionsStateOrderTest, TicksBetweenTransactionsLoseNoAllocation) {
  // Small objects created back to back (no transaction waited for): two of
  // them fill an extent of the small section, so many allocations are the
  // last one their extent records ever see. Meanwhile another thread ticks
  // the sections as fast as it can. Then a remount rebuilds the sections from
  // their records, which must hold every allocation. The race is a matter of
  // timing: several rounds make it likely to show.
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::atomic<bool> done{false};
    std::atomic<int> ticks{0};
    std::thread ticker([&] {
      while (!done) {
        StoreTestHooks::tick(*store_);
        ticks++;
      }
    });
    for (int i = 0; i < 2000; ++i) {
      Transaction t;
      t.write(coll_, obj("r" + std::to_string(round) + "o" + std::to_string(i)), 0,
              hybridstore::test::random_bytes(rng_, 4096));
      // And a large write to the HDD: written before the transaction is
      // submitted (after its SSD allocation), and flushed by the committer,
      // it widens the window the race needs.
      t.write(coll_, obj("hdd" + std::to_string(i % 4)), 2 << 20, hybridstore::test::random_bytes(rng_, 128 << 10));
      apply(std::move(t));
    }
    done = true;
    ticker.join();
    printf("round %d: %d ticks during 2000 transactions\n", round, ticks.load());
    remount();
    ASSERT_EQ(fsck_errors(), 0) << "the sections' records after a remount lack allocations objects use";
  }
}

// docs/kvfs.md 2.5 and 8.4: the kvfs's balancer lends and takes back on its
// own thread while transactions allocate, drain and submit under the
// sections' lock and the tick drains beside them. A lend must never wait
// for that lock, and nothing lent may ever hold object data. Seeded; run
// under TSan by qa/tsan.sh.
TEST_F(SectionsStateOrderTest, LendingBesideTransactionsAndTicks) {
  const uint64_t seed = hybridstore::test::test_seed(808);
  std::mt19937_64 lrng(seed);
  std::atomic<bool> done{false};
  std::atomic<int> lends{0}, failures{0};
  std::mutex held_mutex;
  std::vector<Interval> held;
  const uint64_t g = StoreTestHooks::lend_unit(*store_, Tier::kSsd);
  std::thread ticker([&] {
    while (!done) StoreTestHooks::tick(*store_);
  });
  std::thread lender([&] {
    while (!done) {
      std::lock_guard<std::mutex> l(held_mutex);
      if (held.empty() || lrng() % 2) {
        std::vector<Interval> got;
        if (StoreTestHooks::lend(*store_, Tier::kSsd, (1 + lrng() % 3) * g, &got) == 0) {
          ++lends;
          for (const auto& i : got)
            if (i.offset % g || i.length % g) ++failures;
          held.insert(held.end(), got.begin(), got.end());
        }
      } else {
        const size_t k = lrng() % held.size();
        StoreTestHooks::take_back(*store_, Tier::kSsd, {held[k]});
        held.erase(held.begin() + static_cast<long>(k));
      }
    }
  });
  for (int i = 0; i < 1500; ++i) {
    Transaction t;
    t.write(coll_, obj("l" + std::to_string(i)), 0, hybridstore::test::random_bytes(rng_, 4096 * (1 + i % 8)));
    if (i % 3 == 0 && i > 0) t.remove(coll_, obj("l" + std::to_string(i - 1)));
    apply(std::move(t));
  }
  done = true;
  ticker.join();
  lender.join();
  printf("seed %llu: %d lends beside 1500 transactions\n", static_cast<unsigned long long>(seed), lends.load());
  EXPECT_EQ(failures.load(), 0);
  ASSERT_EQ(StoreTestHooks::write_out_staged(*store_), 0);
  FsckReport rep;
  EXPECT_EQ(StoreTestHooks::fsck_lent(*store_, Tier::kSsd, held, false, &rep), 0) << "seed " << seed;
  for (const auto& p : rep.problems) ADD_FAILURE() << "fsck: " << p << " (seed " << seed << ")";
  StoreTestHooks::take_back(*store_, Tier::kSsd, held);
  remount();
  ASSERT_EQ(fsck_errors(), 0) << "seed " << seed;
}
