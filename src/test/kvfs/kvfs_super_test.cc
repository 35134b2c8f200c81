// The kvfs superblock (docs/kvfs.md 2.3): its record survives a round trip,
// any damage is refused with a reason, and of the two slots mount takes the
// newest valid one of this kvfs and store.
#include "hybridstore/kvfs/kvfs_super.h"

#include <gtest/gtest.h>

#include <cstring>

#include "common_helpers.h"
#include "hscommon/encoding.h"
#include "kvfs/kvfs_test_util.h"

using namespace hybridstore;
using namespace hybridstore::test;

namespace {

constexpr size_t kMagicLen = 17;  // "HYBRIDSTORE-KVFS\n"

std::string encoded(const KvFsSuper& s) {
  std::string out, why;
  EXPECT_EQ(encode_kvfs_super(s, kB, &out, &why), 0) << why;
  return out;
}

// Bytes of a slot that carry meaning: magic, length and the record.
size_t meaningful(const std::string& slot) { return kMagicLen + 4 + load_fixed32(slot.data() + kMagicLen); }

class KvFsSuperSlots : public ::testing::Test {
 protected:
  void SetUp() override {
    DeviceOpenOptions o;
    o.create = true;
    o.create_size = kHead;
    o.backend = IoBackend::kPosix;
    std::string err;
    dev_ = open_block_device(dir_.file("dev"), o, &err);
    ASSERT_TRUE(dev_) << err;
  }
  void write(const KvFsSuper& s) {
    std::string why;
    ASSERT_EQ(write_kvfs_super(dev_.get(), at_, s, &why), 0) << why;
  }
  void damage_slot(uint32_t slot, uint64_t byte) {
    AlignedBuffer b(kB);
    ASSERT_EQ(dev_->read(at_.first_offset + slot * kB, b.data(), kB), 0);
    b.data()[byte] ^= 0x40;
    ASSERT_EQ(dev_->write(at_.first_offset + slot * kB, b.data(), kB), 0);
  }

  TempDir dir_{"kvfs-super"};
  std::unique_ptr<BlockDevice> dev_;
  const KvFsSuperSlotsAt at_{2 * kB, kB};
};

}  // namespace

TEST(KvFsSuper, RoundTrips) {
  KvFsSuper s = test_super(7);
  const std::string slot = encoded(s);
  ASSERT_EQ(slot.size(), kB);
  KvFsSuper back;
  std::string why;
  ASSERT_EQ(decode_kvfs_super(slot, &back, &why), 0) << why;
  EXPECT_TRUE(back == s);
}

TEST(KvFsSuper, EveryBitFlipIsRefused) {
  const std::string slot = encoded(test_super(3));
  const size_t n = meaningful(slot);
  for (size_t bit = 0; bit < n * 8; ++bit) {
    std::string bad = slot;
    bad[bit / 8] ^= static_cast<char>(1 << (bit % 8));
    KvFsSuper out;
    std::string why;
    const int r = decode_kvfs_super(bad, &out, &why);
    ASSERT_LT(r, 0) << "bit " << bit;
    ASSERT_FALSE(why.empty()) << "bit " << bit;
  }
}

TEST(KvFsSuper, TruncatedIsRefused) {
  const std::string slot = encoded(test_super(3));
  for (size_t len = 0; len < meaningful(slot); ++len) {
    KvFsSuper out;
    std::string why;
    ASSERT_LT(decode_kvfs_super(std::string_view(slot).substr(0, len), &out, &why), 0) << len;
  }
}

TEST(KvFsSuper, ImpossibleGeometryIsRefused) {
  std::vector<KvFsSuper> bad(5, test_super());
  bad[0].block = 3000;
  bad[1].alloc_unit = kB / 2;
  bad[2].lend_unit = kA + kB;
  bad[3].log_segment.length = 0;
  bad[4].log_segment.offset = kHead + kB;
  for (size_t i = 0; i < bad.size(); ++i) {
    KvFsSuper out;
    std::string why;
    EXPECT_EQ(decode_kvfs_super(encoded(bad[i]), &out, &why), -EIO) << i;
    EXPECT_NE(why.find("kvfs superblock"), std::string::npos) << why;
  }
}

TEST(KvFsSuper, BlankSlotHasNoMagic) {
  KvFsSuper out;
  std::string why;
  EXPECT_EQ(decode_kvfs_super(std::string(kB, '\0'), &out, &why), -EINVAL);
  EXPECT_NE(why.find("magic"), std::string::npos);
}

TEST_F(KvFsSuperSlots, HighestValidGenerationWins) {
  write(test_super(4));
  write(test_super(5));
  KvFsSuper out;
  std::string why;
  std::array<KvFsSlotReport, kKvFsSuperSlots> slots;
  ASSERT_EQ(read_kvfs_super(dev_.get(), at_, test_uuid(0x11), test_uuid(0x22), &out, &why, &slots), 0) << why;
  EXPECT_EQ(out.generation, 5u);
  EXPECT_EQ(slots[0].result, 0);
  EXPECT_EQ(slots[1].result, 0);
  write(test_super(6));  // slot 0 again
  ASSERT_EQ(read_kvfs_super(dev_.get(), at_, test_uuid(0x11), test_uuid(0x22), &out, &why), 0) << why;
  EXPECT_EQ(out.generation, 6u);
}

TEST_F(KvFsSuperSlots, TornNewerSlotLeavesTheOlder) {
  write(test_super(4));
  write(test_super(5));
  damage_slot(1, 40);
  KvFsSuper out;
  std::string why;
  std::array<KvFsSlotReport, kKvFsSuperSlots> slots;
  ASSERT_EQ(read_kvfs_super(dev_.get(), at_, test_uuid(0x11), test_uuid(0x22), &out, &why, &slots), 0) << why;
  EXPECT_EQ(out.generation, 4u);
  EXPECT_EQ(slots[1].result, -EIO);
  EXPECT_NE(slots[1].why.find("checksum"), std::string::npos) << slots[1].why;
}

TEST_F(KvFsSuperSlots, AnotherKvfsOrStoreIsRefused) {
  write(test_super(4));
  write(test_super(5));
  KvFsSuper out;
  std::string why;
  std::array<KvFsSlotReport, kKvFsSuperSlots> slots;
  EXPECT_EQ(read_kvfs_super(dev_.get(), at_, test_uuid(0x99), test_uuid(0x22), &out, &why, &slots), -EIO);
  EXPECT_NE(why.find("kvfs superblock unreadable"), std::string::npos) << why;
  EXPECT_NE(slots[0].why.find("another kvfs"), std::string::npos) << slots[0].why;
  EXPECT_EQ(read_kvfs_super(dev_.get(), at_, test_uuid(0x11), test_uuid(0x98), &out, &why, &slots), -EIO);
  EXPECT_NE(slots[1].why.find("another store"), std::string::npos) << slots[1].why;
  // One slot of a stale kvfs beside a valid one: the valid one, whatever
  // the generations.
  KvFsSuper stale = test_super(9);
  stale.kvfs_uuid = test_uuid(0x77);
  write(stale);
  ASSERT_EQ(read_kvfs_super(dev_.get(), at_, test_uuid(0x11), test_uuid(0x22), &out, &why, &slots), 0) << why;
  EXPECT_EQ(out.generation, 4u);
}

TEST_F(KvFsSuperSlots, BothBadIsUnreadable) {
  KvFsSuper out;
  std::string why;
  std::array<KvFsSlotReport, kKvFsSuperSlots> slots;
  EXPECT_EQ(read_kvfs_super(dev_.get(), at_, test_uuid(0x11), test_uuid(0x22), &out, &why, &slots), -EIO);
  EXPECT_NE(why.find("kvfs superblock unreadable"), std::string::npos) << why;
  EXPECT_EQ(slots[0].result, -EINVAL);
  write(test_super(4));
  write(test_super(5));
  damage_slot(0, 30);
  damage_slot(1, 50);
  EXPECT_EQ(read_kvfs_super(dev_.get(), at_, test_uuid(0x11), test_uuid(0x22), &out, &why, &slots), -EIO);
  EXPECT_NE(why.find("kvfs superblock unreadable"), std::string::npos) << why;
  EXPECT_EQ(slots[0].result, -EIO);
  EXPECT_EQ(slots[1].result, -EIO);
}
