// Space: a transaction that cannot fit fails with -ENOSPC before anything is
// written, the store stays usable, and df stays exact.
#include <sys/stat.h>

#include "hybridstore/store/test_hooks.h"
#include "store_helpers.h"

using namespace hybridstore;
using hybridstore::test::StoreTest;

namespace {

class SpaceTest : public StoreTest {
 protected:
  Config config() override {
    // Exact byte accounting of both tiers: plain extent allocators (the SSD
    // sections' space rules have tests of their own).
    Config c = hybridstore::test::small_store_config(64 << 20, 64 << 20);
    std::string err;
    c.set("hybridstore_ssd_allocator", "extent", &err);
    return c;
  }
  void SetUp() override {
    StoreTest::SetUp();
    make_coll(coll_);
  }
  // Bytes the filesystem holds for the sparse device files: grows with any write.
  uint64_t device_blocks() {
    uint64_t n = 0;
    for (const char* f : {"/store/block.ssd", "/store/block.hdd"}) {
      struct stat st;
      EXPECT_EQ(::stat((dir_->path() + f).c_str(), &st), 0);
      n += static_cast<uint64_t>(st.st_blocks);
    }
    return n;
  }
  StoreStats df() {
    StoreStats s;
    EXPECT_EQ(store_->statfs(&s), 0);
    return s;
  }
};

TEST_F(SpaceTest, OversizedTransactionFailsBeforeWritingAnything) {
  Transaction t;
  t.write(coll_, obj("a"), 0, std::string(1 << 20, 'a'));
  apply(std::move(t));
  StoreStats before = df();
  uint64_t blocks = device_blocks();
  Transaction big;
  big.write(coll_, obj("fits"), 0, std::string(8 << 20, 'f'));
  big.write(coll_, obj("too-big"), 0, std::string(200 << 20, 'x'));
  TxnError e;
  EXPECT_EQ(try_apply(std::move(big), &e), -ENOSPC);
  EXPECT_EQ(e.op_index, 1);
  EXPECT_EQ(device_blocks(), blocks) << "a failed transaction wrote data to a device";
  EXPECT_FALSE(store_->exists(coll_, obj("fits")));
  StoreStats after = df();
  for (int t = 0; t < after.tiers; ++t) EXPECT_EQ(after.tier[t].free, before.tier[t].free);
  // Still usable.
  Transaction ok;
  ok.write(coll_, obj("b"), 0, "still works");
  apply(std::move(ok));
  EXPECT_EQ(read_all(coll_, obj("b")), "still works");
}

TEST_F(SpaceTest, SpillsToHddWhenSsdIsFullThenENOSPCWhenBothAre) {
  StoreStats empty = df();
  uint64_t ssd = empty.tier[0].free, hdd = empty.tier[1].free;
  // Small objects go to the SSD until it is full, then spill to the HDD.
  int i = 0;
  uint64_t written = 0;
  for (; written < ssd + (4 << 20); ++i, written += 256 << 10) {
    Transaction t;
    t.write(coll_, obj("s" + std::to_string(i)), 0, std::string(256 << 10, 's'));
    apply(std::move(t));
  }
  StoreStats mid = df();
  // A write spills whole: the SSD keeps less than one object's worth free.
  EXPECT_LT(mid.tier[0].free, 256u << 10);
  EXPECT_EQ((ssd - mid.tier[0].free) + (hdd - mid.tier[1].free), written);
  // Fill the rest of both tiers; the next write has nowhere to go.
  Transaction rest;
  rest.write(coll_, obj("rest"), 0, std::string(mid.tier[1].free, 'r'));
  if (mid.tier[0].free) rest.write(coll_, obj("rest-ssd"), 0, std::string(mid.tier[0].free, 'q'));
  apply(std::move(rest));
  EXPECT_EQ(df().tier[0].free + df().tier[1].free, 0u);
  Transaction more;
  more.write(coll_, obj("more"), 0, "x");
  EXPECT_EQ(try_apply(std::move(more)), -ENOSPC);
  // Freeing space makes room again, exactly.
  Transaction rm;
  rm.remove(coll_, obj("rest"));
  apply(std::move(rm));
  EXPECT_EQ(df().tier[1].free, mid.tier[1].free);
  EXPECT_EQ(df().tier[0].free, 0u);
  Transaction again;
  again.write(coll_, obj("more"), 0, "x");
  apply(std::move(again));
  EXPECT_EQ(fsck_errors(), 0);
}

TEST_F(SpaceTest, OverwritesOfAFullStoreStillWork) {
  StoreStats empty = df();
  Transaction t;
  t.write(coll_, obj("ssd"), 0, std::string(512 << 10, 'a'));
  t.write(coll_, obj("hdd"), 0, std::string(empty.tier[1].free, 'h'));
  apply(std::move(t));
  Transaction f;
  f.write(coll_, obj("fill"), 0, std::string(df().tier[0].free, 'f'));
  f.set_alloc_hint(coll_, obj("fill"), 0, 0, kHintRandomWrite);
  apply(std::move(f));
  ASSERT_EQ(df().tier[0].free + df().tier[1].free, 0u);
  // Small in-place overwrites need no new space (deferred, in place).
  Transaction o;
  o.write(coll_, obj("ssd"), 4096, std::string(4096, 'Z'));
  apply(std::move(o));
  std::string d = read_all(coll_, obj("ssd"));
  EXPECT_EQ(d.substr(4096, 4096), std::string(4096, 'Z'));
  EXPECT_EQ(d.substr(0, 4096), std::string(4096, 'a'));
}

// Lending to the KV file system (docs/kvfs.md 2.5, 2.6, 6) through the
// store's lender, before the store lends by itself (step 7): on both SSD
// spaces, lent space is neither free nor objects', the floor makes new data
// spill, and fsck knows the kvfs's chunks.
class LendingTest : public SpaceTest, public ::testing::WithParamInterface<const char*> {
 protected:
  Config config() override {
    Config c = SpaceTest::config();
    std::string err;
    c.set("hybridstore_ssd_allocator", GetParam(), &err);
    return c;
  }
  std::vector<Interval> lend(uint64_t want) {
    std::vector<Interval> got;
    EXPECT_EQ(StoreTestHooks::lend(*store_, Tier::kSsd, want, &got), 0);
    return got;
  }
  // fsck's problems with `lent` as the kvfs's chunks.
  std::vector<std::string> fsck_lent(const std::vector<Interval>& lent) {
    FsckReport rep;
    EXPECT_GE(StoreTestHooks::fsck_lent(*store_, Tier::kSsd, lent, false, &rep), 0);
    return rep.problems;
  }
  static std::string joined(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& p : v) out += p + "\n";
    return out;
  }
};

TEST_P(LendingTest, LentSpaceIsNeitherFreeNorObjectsAndFsckKnowsIt) {
  Transaction t;
  t.write(coll_, obj("before"), 0, std::string(256 << 10, 'a'));
  apply(std::move(t));
  const StoreStats before = df();
  const uint64_t g = StoreTestHooks::lend_unit(*store_, Tier::kSsd);
  const std::vector<Interval> lent = lend(4 * g);
  uint64_t bytes = 0;
  for (const auto& i : lent) bytes += i.length;
  EXPECT_EQ(bytes, 4 * g);
  EXPECT_EQ(df().tier[0].free, before.tier[0].free - bytes);
  EXPECT_EQ(df().tier[0].allocated, before.tier[0].allocated);
  // With the chunks named, nothing is wrong; without, the allocator holds
  // space neither free nor marked.
  EXPECT_EQ(joined(fsck_lent(lent)), "");
  const std::string unnamed = joined(fsck_lent({}));
  EXPECT_NE(unnamed.find("in-memory allocator disagrees with the bitmap"), std::string::npos) << unnamed;
  // Objects written now stay out of the chunks.
  for (int i = 0; i < 8; ++i) {
    Transaction w;
    w.write(coll_, obj("after" + std::to_string(i)), 0, std::string(128 << 10, 'b'));
    apply(std::move(w));
  }
  EXPECT_EQ(joined(fsck_lent(lent)), "");
  StoreTestHooks::take_back(*store_, Tier::kSsd, lent);
  EXPECT_EQ(fsck_errors(), 0);
}

TEST_P(LendingTest, FsckReportsChunksThatHoldObjectData) {
  Transaction t;
  t.write(coll_, obj("data"), 0, std::string(256 << 10, 'd'));  // small enough for the SSD
  apply(std::move(t));
  ASSERT_EQ(StoreTestHooks::write_out_staged(*store_), 0);
  ASSERT_GT(df().tier[0].allocated, 0u);
  // Name as the kvfs's a range the object's data lies in.
  const uint64_t g = StoreTestHooks::lend_unit(*store_, Tier::kSsd);
  std::vector<Interval> everything{{0, (StoreTestHooks::device(*store_, Tier::kSsd)->size() / g) * g}};
  const std::string found = joined(fsck_lent(everything));
  EXPECT_NE(found.find("bytes owned by both the KV file system and objects"), std::string::npos) << found;
}

TEST_P(LendingTest, TheFloorMakesNewDataSpillToTheHdd) {
  const StoreStats empty = df();
  // Leave the SSD 1 MiB for objects: the rest is the kvfs's floor.
  StoreTestHooks::set_floor(*store_, Tier::kSsd, empty.tier[0].free - (1 << 20));
  EXPECT_LE(df().tier[0].free, 1u << 20);
  uint64_t ssd_grew = 0, hdd_grew = 0;
  for (int i = 0; i < 16; ++i) {
    const StoreStats a = df();
    Transaction t;
    t.write(coll_, obj("s" + std::to_string(i)), 0, std::string(256 << 10, 's'));
    apply(std::move(t));
    const StoreStats b = df();
    ssd_grew += b.tier[0].allocated - a.tier[0].allocated;
    hdd_grew += b.tier[1].allocated - a.tier[1].allocated;
  }
  const uint64_t g0 = StoreTestHooks::lend_unit(*store_, Tier::kSsd);
  // Sections take whole erase units: what was above the floor may be one.
  EXPECT_LE(ssd_grew, std::max<uint64_t>(2u << 20, 2 * g0)) << "object data cut into the floor";
  EXPECT_GE(hdd_grew, 2u << 20) << "the rest spilled to the HDD";
  // The kvfs may still have the floor.
  const uint64_t g = StoreTestHooks::lend_unit(*store_, Tier::kSsd);
  const std::vector<Interval> lent = lend(2 * g);
  EXPECT_FALSE(lent.empty());
  EXPECT_EQ(joined(fsck_lent(lent)), "");
  StoreTestHooks::take_back(*store_, Tier::kSsd, lent);
  StoreTestHooks::set_floor(*store_, Tier::kSsd, 0);
  EXPECT_EQ(fsck_errors(), 0);
}

INSTANTIATE_TEST_SUITE_P(BothSpaces, LendingTest, ::testing::Values("extent", "hfm"));

}  // namespace
