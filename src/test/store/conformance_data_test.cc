// Conformance: object data semantics (write, read, zero, truncate, touch,
// remove) as Ceph's ObjectStore defines them.
#include <map>

#include "store_helpers.h"

using namespace hybridstore;
using hybridstore::test::StoreTest;

namespace {

class DataTest : public StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    make_coll(coll_);
  }
  void write(const ObjectId& o, uint64_t off, const std::string& data) {
    Transaction t;
    t.write(coll_, o, off, data);
    apply(std::move(t));
  }
  uint64_t size_of(const ObjectId& o) {
    ObjectStat st;
    EXPECT_EQ(store_->stat(coll_, o, &st), 0);
    return st.size;
  }
};

TEST_F(DataTest, WriteThenReadBack) {
  write(obj("a"), 0, "hello world");
  EXPECT_EQ(read_all(coll_, obj("a")), "hello world");
  EXPECT_EQ(size_of(obj("a")), 11u);
}

TEST_F(DataTest, WritePastEofZeroFillsTheGap) {
  write(obj("a"), 0, "abc");
  write(obj("a"), 10000, "xyz");
  std::string d = read_all(coll_, obj("a"));
  ASSERT_EQ(d.size(), 10003u);
  EXPECT_EQ(d.substr(0, 3), "abc");
  EXPECT_EQ(d.substr(3, 9997), std::string(9997, '\0'));
  EXPECT_EQ(d.substr(10000), "xyz");
}

TEST_F(DataTest, ReadAtOrPastEofReturnsZeroBytes) {
  write(obj("a"), 0, "abc");
  std::string out = "junk";
  EXPECT_EQ(store_->read(coll_, obj("a"), 3, 10, &out), 0);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(store_->read(coll_, obj("a"), 1 << 20, 10, &out), 0);
}

TEST_F(DataTest, ZeroLengthReadMeansWholeObjectFromOffset) {
  write(obj("a"), 0, "0123456789");
  std::string out;
  EXPECT_EQ(store_->read(coll_, obj("a"), 0, 0, &out), 10);
  EXPECT_EQ(out, "0123456789");
  EXPECT_EQ(store_->read(coll_, obj("a"), 4, 0, &out), 6);
  EXPECT_EQ(out, "456789");
}

TEST_F(DataTest, ReadIsClampedToObjectSize) {
  write(obj("a"), 0, "0123456789");
  std::string out;
  EXPECT_EQ(store_->read(coll_, obj("a"), 8, 100, &out), 2);
  EXPECT_EQ(out, "89");
}

TEST_F(DataTest, ReadOfMissingObjectIsENOENT) {
  std::string out;
  EXPECT_EQ(store_->read(coll_, obj("none"), 0, 10, &out), -ENOENT);
  EXPECT_EQ(store_->read(CollectionId("9.9_head"), obj("none"), 0, 10, &out), -ENOENT);
}

TEST_F(DataTest, ZeroLengthWriteCreatesObjectWithoutChangingSize) {
  Transaction t;
  t.write(coll_, obj("a"), 1 << 20, "");
  apply(std::move(t));
  EXPECT_TRUE(store_->exists(coll_, obj("a")));
  EXPECT_EQ(size_of(obj("a")), 0u);
  std::string out;
  EXPECT_EQ(store_->read(coll_, obj("a"), 0, 0, &out), 0);
}

TEST_F(DataTest, ZeroLengthZeroKeepsSize) {
  Transaction t;
  t.zero(coll_, obj("a"), 1 << 20, 0);
  apply(std::move(t));
  EXPECT_TRUE(store_->exists(coll_, obj("a")));
  EXPECT_EQ(size_of(obj("a")), 0u);
}

TEST_F(DataTest, OverwriteInsideObjectKeepsTheRest) {
  std::string base(20000, 'a');
  write(obj("a"), 0, base);
  write(obj("a"), 5000, "BBBB");
  base.replace(5000, 4, "BBBB");
  EXPECT_EQ(read_all(coll_, obj("a")), base);
  EXPECT_EQ(size_of(obj("a")), 20000u);
}

TEST_F(DataTest, UnalignedWritesAcrossBlockBoundaries) {
  std::string model;
  for (int i = 0; i < 50; ++i) {
    uint64_t off = rng_() % 30000;
    std::string d = hybridstore::test::random_bytes(rng_, 1 + rng_() % 9000);
    write(obj("u"), off, d);
    if (model.size() < off + d.size()) model.resize(off + d.size(), '\0');
    model.replace(off, d.size(), d);
  }
  EXPECT_EQ(read_all(coll_, obj("u")), model);
}

TEST_F(DataTest, SequentialAppendsAccumulate) {
  std::string model;
  for (int i = 0; i < 40; ++i) {
    std::string d = hybridstore::test::random_bytes(rng_, 777);
    write(obj("s"), model.size(), d);
    model += d;
  }
  EXPECT_EQ(read_all(coll_, obj("s")), model);
}

TEST_F(DataTest, TruncateDownDiscardsTail) {
  write(obj("a"), 0, std::string(10000, 'x'));
  Transaction t;
  t.truncate(coll_, obj("a"), 100);
  apply(std::move(t));
  EXPECT_EQ(size_of(obj("a")), 100u);
  EXPECT_EQ(read_all(coll_, obj("a")), std::string(100, 'x'));
}

TEST_F(DataTest, TruncateUpReadsZeros) {
  write(obj("a"), 0, "abc");
  Transaction t;
  t.truncate(coll_, obj("a"), 100000);
  apply(std::move(t));
  std::string d = read_all(coll_, obj("a"));
  ASSERT_EQ(d.size(), 100000u);
  EXPECT_EQ(d.substr(0, 3), "abc");
  EXPECT_EQ(d.substr(3), std::string(99997, '\0'));
}

TEST_F(DataTest, TruncateThenExtendNeverShowsOldBytes) {
  write(obj("a"), 0, std::string(8192, 'q'));
  Transaction t;
  t.truncate(coll_, obj("a"), 1000);
  t.truncate(coll_, obj("a"), 8192);
  apply(std::move(t));
  std::string d = read_all(coll_, obj("a"));
  EXPECT_EQ(d.substr(0, 1000), std::string(1000, 'q'));
  EXPECT_EQ(d.substr(1000), std::string(7192, '\0'));
  // The same through an append after a separate truncate.
  Transaction t2;
  t2.truncate(coll_, obj("a"), 10);
  apply(std::move(t2));
  write(obj("a"), 5000, "z");
  d = read_all(coll_, obj("a"));
  EXPECT_EQ(d.substr(10, 4990), std::string(4990, '\0'));
}

TEST_F(DataTest, TruncateThenWriteFurtherOnReadsZerosInFront) {
  // Ceph's SmallSkipFront.
  write(obj("a"), 0, std::string(4096, 'p'));
  Transaction t;
  t.truncate(coll_, obj("a"), 3000);
  t.write(coll_, obj("a"), 4096, std::string(4096, 'w'));
  apply(std::move(t));
  std::string d = read_all(coll_, obj("a"));
  ASSERT_EQ(d.size(), 8192u);
  EXPECT_EQ(d.substr(0, 3000), std::string(3000, 'p'));
  EXPECT_EQ(d.substr(3000, 1096), std::string(1096, '\0'));
  EXPECT_EQ(d.substr(4096), std::string(4096, 'w'));
}

TEST_F(DataTest, TruncateOfMissingObjectIsTolerated) {
  Transaction t;
  t.truncate(coll_, obj("none"), 10);
  apply(std::move(t));
  EXPECT_FALSE(store_->exists(coll_, obj("none")));
}

TEST_F(DataTest, ZeroPunchesAHoleAndFreesSpace) {
  write(obj("a"), 0, std::string(1 << 18, 'z'));
  ObjectStat before;
  ASSERT_EQ(store_->stat(coll_, obj("a"), &before), 0);
  Transaction t;
  t.zero(coll_, obj("a"), 4096 * 4 + 100, 4096 * 20);
  apply(std::move(t));
  std::string d = read_all(coll_, obj("a"));
  std::string want(1 << 18, 'z');
  want.replace(4096 * 4 + 100, 4096 * 20, std::string(4096 * 20, '\0'));
  EXPECT_EQ(d, want);
  ObjectStat after;
  ASSERT_EQ(store_->stat(coll_, obj("a"), &after), 0);
  EXPECT_LT(after.allocated, before.allocated);
  EXPECT_EQ(after.size, before.size);
}

TEST_F(DataTest, ZeroInsideObjectKeepsSize) {
  write(obj("a"), 0, std::string(1000, 'z'));
  Transaction t;
  t.zero(coll_, obj("a"), 10, 20);
  apply(std::move(t));
  EXPECT_EQ(size_of(obj("a")), 1000u);
  std::string d = read_all(coll_, obj("a"));
  EXPECT_EQ(d.substr(10, 20), std::string(20, '\0'));
  EXPECT_EQ(d.substr(30), std::string(970, 'z'));
}

TEST_F(DataTest, ZeroCrossingOrPastEofExtendsSize) {
  write(obj("a"), 0, std::string(1000, 'z'));
  Transaction t;
  t.zero(coll_, obj("a"), 900, 200);
  apply(std::move(t));
  EXPECT_EQ(size_of(obj("a")), 1100u);
  Transaction t2;
  t2.zero(coll_, obj("a"), 5000, 100);
  apply(std::move(t2));
  EXPECT_EQ(size_of(obj("a")), 5100u);
  std::string d = read_all(coll_, obj("a"));
  EXPECT_EQ(d.substr(0, 900), std::string(900, 'z'));
  EXPECT_EQ(d.substr(900), std::string(4200, '\0'));
}

TEST_F(DataTest, TouchCreatesEmptyObjectAndKeepsExisting) {
  Transaction t;
  t.touch(coll_, obj("a"));
  apply(std::move(t));
  EXPECT_TRUE(store_->exists(coll_, obj("a")));
  EXPECT_EQ(size_of(obj("a")), 0u);
  write(obj("a"), 0, "data");
  Transaction t2;
  t2.touch(coll_, obj("a"));
  apply(std::move(t2));
  EXPECT_EQ(read_all(coll_, obj("a")), "data");
}

TEST_F(DataTest, RemoveDeletesAndMissingRemoveIsTolerated) {
  write(obj("a"), 0, "data");
  Transaction t;
  t.remove(coll_, obj("a"));
  t.remove(coll_, obj("never"));
  apply(std::move(t));
  EXPECT_FALSE(store_->exists(coll_, obj("a")));
}

TEST_F(DataTest, RemoveThenRecreateInOneTransaction) {
  write(obj("a"), 0, "old contents");
  Transaction t;
  t.remove(coll_, obj("a"));
  t.touch(coll_, obj("a"));
  t.remove(coll_, obj("a"));
  t.write(coll_, obj("a"), 0, "new");
  apply(std::move(t));
  EXPECT_EQ(read_all(coll_, obj("a")), "new");
}

TEST_F(DataTest, SmallObjectsGoToSsdLargeToHdd) {
  write(obj("small"), 0, std::string(8192, 's'));
  write(obj("large"), 0, std::string(4 << 20, 'l'));
  ObjectStat s, l;
  ASSERT_EQ(store_->stat(coll_, obj("small"), &s), 0);
  ASSERT_EQ(store_->stat(coll_, obj("large"), &l), 0);
  EXPECT_EQ(s.bytes_on[tier_index(Tier::kSsd)], 8192u);
  EXPECT_EQ(s.bytes_on[tier_index(Tier::kHdd)], 0u);
  EXPECT_EQ(l.bytes_on[tier_index(Tier::kHdd)], 4u << 20);
}

// Ceph's clients hint small objects sequential and append-only (rados bench
// tags every object so): the hint must not send a 4 KiB object to the HDD,
// where each read costs a seek. Size decides; a hinted expected size counts.
TEST_F(DataTest, SequentialHintOnASmallObjectKeepsItOnTheSsd) {
  Transaction t;
  t.touch(coll_, obj("seq"));
  t.set_alloc_hint(coll_, obj("seq"), 4096, 4096,
                   kHintSequentialWrite | kHintSequentialRead | kHintAppendOnly | kHintImmutable);
  t.write(coll_, obj("seq"), 0, std::string(4096, 'x'));
  apply(std::move(t));
  ObjectStat st;
  ASSERT_EQ(store_->stat(coll_, obj("seq"), &st), 0);
  EXPECT_EQ(st.bytes_on[tier_index(Tier::kSsd)], 4096u);
}

TEST_F(DataTest, HintWithoutASizeLeavesTheSmallObjectOnTheSsd) {
  Transaction t;
  t.touch(coll_, obj("seq0"));
  t.set_alloc_hint(coll_, obj("seq0"), 0, 0, kHintSequentialWrite | kHintAppendOnly);
  t.write(coll_, obj("seq0"), 0, std::string(4096, 'x'));
  apply(std::move(t));
  ObjectStat st;
  ASSERT_EQ(store_->stat(coll_, obj("seq0"), &st), 0);
  EXPECT_EQ(st.bytes_on[tier_index(Tier::kSsd)], 4096u);
}

TEST_F(DataTest, ExpectedSizeAtTheThresholdPlacesTheObjectOnTheHdd) {
  // librbd hints each data object with the image's object size (4 MiB).
  Transaction t;
  t.touch(coll_, obj("big"));
  t.set_alloc_hint(coll_, obj("big"), 4u << 20, 4u << 20, 0);
  t.write(coll_, obj("big"), 0, std::string(4096, 'x'));
  apply(std::move(t));
  ObjectStat st;
  ASSERT_EQ(store_->stat(coll_, obj("big"), &st), 0);
  EXPECT_EQ(st.bytes_on[tier_index(Tier::kHdd)], 4096u);
}

TEST_F(DataTest, ObjectGrowingOnSsdStaysWhole) {
  for (int i = 0; i < 8; ++i) write(obj("grow"), static_cast<uint64_t>(i) << 18, std::string(1 << 18, 'g'));
  ObjectStat st;
  ASSERT_EQ(store_->stat(coll_, obj("grow"), &st), 0);
  EXPECT_EQ(st.bytes_on[tier_index(Tier::kHdd)], 0u);
  EXPECT_EQ(st.size, 2u << 20);
}

TEST_F(DataTest, WriteBeyondMaxObjectSizeIsE2BIG) {
  Transaction t;
  t.write(coll_, obj("big"), (4ull << 30), "x");
  EXPECT_EQ(try_apply(std::move(t)), -E2BIG);
  EXPECT_FALSE(store_->exists(coll_, obj("big")));
}

TEST_F(DataTest, FiemapReportsAllocatedRangesOnly) {
  write(obj("f"), 0, std::string(4096, 'a'));
  write(obj("f"), 65536, std::string(4096, 'b'));
  std::map<uint64_t, uint64_t> m;
  ASSERT_EQ(store_->fiemap(coll_, obj("f"), 0, 1 << 20, &m), 0);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0], 4096u);
  EXPECT_EQ(m[65536], 4096u);
  Transaction t;
  t.touch(coll_, obj("e"));
  t.truncate(coll_, obj("e"), 100000);
  apply(std::move(t));
  ASSERT_EQ(store_->fiemap(coll_, obj("e"), 0, 100000, &m), 0);
  EXPECT_TRUE(m.empty());
}

TEST_F(DataTest, RandomOpsMatchAnInMemoryModel) {
  std::map<std::string, std::string> model;
  for (int i = 0; i < 300; ++i) {
    std::string name = "m" + std::to_string(rng_() % 6);
    ObjectId o = obj(name);
    Transaction t;
    int kind = static_cast<int>(rng_() % 5);
    uint64_t off = rng_() % 40000, len = 1 + rng_() % 12000;
    auto& m = model[name];
    bool exists = store_->exists(coll_, o);
    if (kind == 0 || kind == 1) {
      std::string d = hybridstore::test::random_bytes(rng_, len);
      t.write(coll_, o, off, d);
      if (m.size() < off + len) m.resize(off + len, '\0');
      m.replace(off, len, d);
    } else if (kind == 2) {
      t.zero(coll_, o, off, len);
      if (m.size() < off + len) m.resize(off + len, '\0');
      m.replace(off, len, std::string(len, '\0'));
    } else if (kind == 3) {
      if (!exists) continue;
      t.truncate(coll_, o, off);
      m.resize(off, '\0');
    } else {
      t.remove(coll_, o);
      model.erase(name);
    }
    apply(std::move(t));
  }
  for (auto& [name, data] : model) EXPECT_EQ(read_all(coll_, obj(name)), data) << name;
  remount();
  for (auto& [name, data] : model) EXPECT_EQ(read_all(coll_, obj(name)), data) << name;
  EXPECT_EQ(fsck_errors(true), 0);
}

}  // namespace
