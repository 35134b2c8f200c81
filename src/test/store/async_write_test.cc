// Large writes that go on while their transaction is queued
// (hybridstore_async_write_min): what reads see before the data is on the
// device, what a commit waits for, and what survives a remount.
#include "store_helpers.h"

using namespace hybridstore;
using hybridstore::test::StoreTest;

namespace {

class AsyncWriteTest : public StoreTest {
 protected:
  Config config() override {
    Config c = hybridstore::test::small_store_config();
    std::string err;
    EXPECT_EQ(c.set("hybridstore_async_write_min", min_, &err), 0) << err;
    EXPECT_EQ(c.set("hybridstore_async_write_threads", "2", &err), 0) << err;
    return c;
  }
  void SetUp() override {
    StoreTest::SetUp();
    make_coll(coll_);
  }
  uint64_t counter(const std::string& name) {
    int i = store_->perf().find(name);
    EXPECT_GE(i, 0) << name;
    return store_->perf().get(i);
  }
  // 4 MiB objects hinted as librbd hints them go to the HDD tier, which
  // writes new space directly (the SSD's sections stage theirs).
  Transaction write_hdd_object(const ObjectId& o, const std::string& data, uint64_t off = 0) {
    Transaction t;
    t.touch(coll_, o);
    t.set_alloc_hint(coll_, o, 4u << 20, 4u << 20, 0);
    t.write(coll_, o, off, data);
    return t;
  }
  std::string min_ = "64K";
};

}  // namespace

TEST_F(AsyncWriteTest, WritesQueuedBackToBackReadBackAtOnceAndAfterRemount) {
  std::vector<std::string> data;
  for (int i = 0; i < 24; ++i) {
    data.push_back(hybridstore::test::random_bytes(rng_, (i % 3 + 1) * (256u << 10)));
    // Queued without waiting for the commit, then read at once: the read
    // must find the new bytes whether or not they reached the device.
    apply(write_hdd_object(obj("o" + std::to_string(i)), data.back()));
    EXPECT_EQ(read_all(coll_, obj("o" + std::to_string(i))), data.back()) << i;
  }
  // Overwrites of whole objects' ranges: new space, the old freed at commit.
  for (int i = 0; i < 24; i += 4) {
    std::string piece = hybridstore::test::random_bytes(rng_, 128u << 10);
    apply(write_hdd_object(obj("o" + std::to_string(i)), piece, 64u << 10));
    data[i].replace(64u << 10, piece.size(), piece);
    EXPECT_EQ(read_all(coll_, obj("o" + std::to_string(i))), data[i]) << i;
  }
  EXPECT_GE(counter("async_write_ops"), 24u);
  EXPECT_GE(counter("async_write_bytes"), 24u * (256u << 10));
  ASSERT_EQ(store_->flush(), 0);
  remount();
  for (int i = 0; i < 24; ++i) EXPECT_EQ(read_all(coll_, obj("o" + std::to_string(i))), data[i]) << i;
  EXPECT_EQ(fsck_errors(true), 0);
}

TEST_F(AsyncWriteTest, SmallWritesAndAZeroMinimumStaySynchronous) {
  apply(write_hdd_object(obj("small"), std::string(32u << 10, 's')));
  EXPECT_EQ(counter("async_write_ops"), 0u);
  min_ = "0";
  remount();
  apply(write_hdd_object(obj("big"), std::string(1u << 20, 'b')));
  EXPECT_EQ(counter("async_write_ops"), 0u);
  EXPECT_EQ(read_all(coll_, obj("big")), std::string(1u << 20, 'b'));
}
