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
