// The device label of record version 2 (docs/kvfs.md 2.2): its bytes, the
// version-1 labels it still reads, the limits it refuses instead of
// truncating, and the A/B pair: a damaged or lagging copy is noticed and the
// other one carries the device, including a pair a power cut tore.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "common_helpers.h"
#include "testing/fault_device.h"
#include "testing/fault_injection.h"
#include "hscommon/encoding.h"
#include "hsio/block_device.h"
#include "hybridstore/format/store_format.h"

using namespace hybridstore;
using hybridstore::test::TempDir;

namespace {

constexpr uint32_t kLabelTag = 0x4c41424c;  // "LABL"
constexpr uint32_t kSuperTag = 0x53555052;  // "SUPR"
constexpr char kMagic[] = "HYBRIDSTORE-LABEL\n";
constexpr size_t kMagicLen = sizeof(kMagic) - 1;
constexpr uint64_t kDevSize = 1 << 20;

std::string frame(const std::string& record) {
  std::string block(kMagic, kMagicLen);
  put_fixed32(&block, static_cast<uint32_t>(record.size()));
  block += record;
  block.resize(kLabelSize, '\0');
  return block;
}

DeviceLabel full_label() {
  DeviceLabel l;
  l.fsid = generate_uuid();
  l.role = Tier::kSsd;
  l.size = 8ull << 30;
  l.created_us = 1700000000000001ull;
  l.description = "hybridstore ssd";
  l.generation = 7;
  l.flags = kLabelMkfsDone | kLabelKvOnDevice;
  l.device_kind = DeviceKind::kNand;
  l.slot = 16384;
  l.head = 65536;
  l.kvfs_uuid = generate_uuid();
  l.tiers = {{Tier::kSsd, {DeviceKind::kNand, SpaceKind::kSections}, 4096, 8ull << 30},
             {Tier::kHdd, {}, 65536, 64ull << 30}};
  l.meta = {{"ceph_fsid", "abc"}, {"path_block.ssd", "/dev/nvme0n1"}, {"whoami", "3"}};
  return l;
}

std::unique_ptr<BlockDevice> open_file(const std::string& path) {
  DeviceOpenOptions o;
  o.create = true;
  o.create_size = kDevSize;
  o.direct_io = false;
  o.backend = IoBackend::kPosix;
  std::string err;
  auto dev = open_block_device(path, o, &err);
  EXPECT_TRUE(dev) << err;
  return dev;
}

// A device whose write unit is larger than a label: a NAND page of 16 KiB.
class BigPageDevice : public BlockDevice {
 public:
  explicit BigPageDevice(std::unique_ptr<BlockDevice> inner) : inner_(std::move(inner)) {}
  uint64_t size() const override { return inner_->size(); }
  uint32_t alignment() const override { return 16384; }
  std::string backend() const override { return "bigpage"; }
  std::string path() const override { return inner_->path(); }
  int read(uint64_t off, char* buf, uint64_t len) override {
    if (off % 16384 || len % 16384) return -EINVAL;
    return inner_->read(off, buf, len);
  }
  int write(uint64_t off, const char* buf, uint64_t len) override {
    if (off % 16384 || len % 16384) return -EINVAL;
    return inner_->write(off, buf, len);
  }
  int flush() override { return inner_->flush(); }

 private:
  std::unique_ptr<BlockDevice> inner_;
};

void flip_bit(BlockDevice* dev, uint64_t byte, int bit) {
  AlignedBuffer b(4096);
  const uint64_t block = byte / 4096 * 4096;
  ASSERT_EQ(dev->read(block, b.data(), 4096), 0);
  b.data()[byte - block] = static_cast<char>(b.data()[byte - block] ^ (1 << bit));
  ASSERT_EQ(dev->write(block, b.data(), 4096), 0);
}

}  // namespace

TEST(LabelV2, RoundTripsEveryField) {
  const DeviceLabel l = full_label();
  std::string enc;
  ASSERT_EQ(encode_label(l, &enc), 0);
  ASSERT_EQ(enc.size(), kLabelSize);
  DeviceLabel back;
  std::string why;
  ASSERT_EQ(decode_label(enc, &back, &why), 0) << why;
  EXPECT_TRUE(same_label_content(back, l));
  EXPECT_EQ(back.record_version, 2);
  EXPECT_EQ(back.tiers, l.tiers);
  EXPECT_EQ(back.meta, l.meta);
  EXPECT_EQ(back.kvfs_uuid, l.kvfs_uuid);
}

// Formats 1-3 wrote record version 1; spelled out byte by byte, as those
// builds wrote it.
TEST(LabelV2, AVersion1LabelReadsWithTheNewFieldsAtTheirDefaults) {
  Uuid fsid = generate_uuid();
  std::string body(reinterpret_cast<const char*>(fsid.data()), 16);
  put_u8(&body, 1);  // hdd
  put_fixed64(&body, 64ull << 20);
  put_fixed32(&body, 3);
  put_fixed64(&body, 123456);
  put_bytes(&body, "hybridstore hdd");
  DeviceLabel back;
  std::string why;
  ASSERT_EQ(decode_label(frame(seal_record(kLabelTag, 1, body)), &back, &why), 0) << why;
  EXPECT_EQ(back.record_version, 1);
  EXPECT_EQ(back.fsid, fsid);
  EXPECT_EQ(back.role, Tier::kHdd);
  EXPECT_EQ(back.size, 64ull << 20);
  EXPECT_EQ(back.format_version, 3u);
  EXPECT_EQ(back.created_us, 123456u);
  EXPECT_EQ(back.description, "hybridstore hdd");
  EXPECT_EQ(back.generation, 0u);
  EXPECT_EQ(back.flags, 0u);
  EXPECT_EQ(back.slot, 0u);
  EXPECT_TRUE(back.tiers.empty());
  EXPECT_TRUE(back.meta.empty());
  // A version-1 body with the version-2 fields appended is damage, not a label.
  std::string longer = body;
  put_fixed64(&longer, 1);
  EXPECT_EQ(decode_label(frame(seal_record(kLabelTag, 1, longer)), &back, &why), -EIO);
  // A record version this build does not know is a newer build's.
  EXPECT_EQ(decode_label(frame(seal_record(kLabelTag, 3, body)), &back, &why), -EOPNOTSUPP);
}

TEST(LabelV2, WhatDoesNotFitIsRefusedWithE2bigNeverTruncated) {
  std::string enc;
  DeviceLabel l = full_label();
  l.description.assign(kLabelMaxDescription + 1, 'd');
  EXPECT_EQ(encode_label(l, &enc), -E2BIG);
  l = full_label();
  l.meta[std::string(kLabelMaxMetaKey + 1, 'k')] = "v";
  EXPECT_EQ(encode_label(l, &enc), -E2BIG);
  l = full_label();
  l.meta["k"].assign(kLabelMaxMetaValue + 1, 'v');
  EXPECT_EQ(encode_label(l, &enc), -E2BIG);
  // Each entry within its limit, together too many.
  l = full_label();
  for (int i = 0; i < 4; ++i) l.meta["key" + std::to_string(i)].assign(kLabelMaxMetaValue, 'v');
  EXPECT_EQ(encode_label(l, &enc), -E2BIG);
  l.meta.erase("key3");
  l.meta.erase("key2");
  EXPECT_EQ(encode_label(l, &enc), 0);

  // Nothing reaches the device of a label that does not fit.
  TempDir dir("label-e2big");
  auto dev = open_file(dir.file("dev"));
  DeviceLabel ok = full_label();
  std::string why;
  ASSERT_EQ(write_label_pair(dev.get(), &ok, &why), 0) << why;
  DeviceLabel big = ok;
  for (int i = 0; i < 4; ++i) big.meta["key" + std::to_string(i)].assign(kLabelMaxMetaValue, 'v');
  EXPECT_EQ(write_label_pair(dev.get(), &big, &why), -E2BIG);
  DeviceLabel back;
  LabelPairStatus st;
  ASSERT_EQ(read_labels(dev.get(), &back, &st, &why), 0) << why;
  EXPECT_TRUE(st.intact());
  EXPECT_TRUE(same_label_content(back, ok));
}

TEST(LabelV2, APairCountsItsGenerationsAndReadsIntact) {
  TempDir dir("label-pair");
  auto dev = open_file(dir.file("dev"));
  DeviceLabel l = full_label();
  std::string why;
  ASSERT_EQ(write_label_pair(dev.get(), &l, &why), 0) << why;
  EXPECT_EQ(l.generation, 1u);  // the device had no label
  EXPECT_EQ(l.slot, kLabelSize);
  ASSERT_EQ(write_label_pair(dev.get(), &l, &why), 0) << why;
  EXPECT_EQ(l.generation, 2u);
  DeviceLabel back;
  LabelPairStatus st;
  ASSERT_EQ(read_labels(dev.get(), &back, &st, &why), 0) << why;
  EXPECT_TRUE(st.intact());
  EXPECT_EQ(st.chosen, 'A');
  EXPECT_EQ(st.problem(), "");
  EXPECT_TRUE(same_label_content(back, l));
  EXPECT_EQ(st.label_b.generation, 2u);
}

TEST(LabelV2, OnADeviceWithLargerPagesCopyBIsAtTheNextPage) {
  TempDir dir("label-bigpage");
  BigPageDevice dev(open_file(dir.file("dev")));
  EXPECT_EQ(label_slot(&dev), 16384u);
  EXPECT_EQ(label_head(16384, 4096), 65536u);
  EXPECT_EQ(label_head(32768, 4096), 131072u);
  EXPECT_EQ(label_head(4096, 1 << 20), 1u << 20);
  DeviceLabel l = full_label();
  std::string why;
  ASSERT_EQ(write_label_pair(&dev, &l, &why), 0) << why;
  EXPECT_EQ(l.slot, 16384u);
  AlignedBuffer b(16384);
  ASSERT_EQ(dev.read(16384, b.data(), 16384), 0);
  DeviceLabel copy_b;
  ASSERT_EQ(decode_label(std::string_view(b.data(), 16384), &copy_b, &why), 0) << why;
  EXPECT_TRUE(same_label_content(copy_b, l));
  DeviceLabel back;
  LabelPairStatus st;
  ASSERT_EQ(read_labels(&dev, &back, &st, &why), 0) << why;
  EXPECT_TRUE(st.intact());
}

// Every single-bit flip of the significant bytes of either copy: the flip is
// noticed, the other copy is chosen, and the label read is the one written.
TEST(LabelV2, EverySingleBitFlipOfEitherCopyIsDetectedAndTheOtherCopyChosen) {
  TempDir dir("label-flip");
  auto dev = open_file(dir.file("dev"));
  DeviceLabel l = full_label();
  std::string why;
  ASSERT_EQ(write_label_pair(dev.get(), &l, &why), 0) << why;
  std::string enc;
  ASSERT_EQ(encode_label(l, &enc), 0);
  const size_t used = enc.find_last_not_of('\0') + 1;
  int flips = 0;
  for (char copy : {'A', 'B'}) {
    const uint64_t base = copy == 'A' ? 0 : kLabelSize;
    for (size_t i = 0; i < used; ++i)
      for (int bit = 0; bit < 8; ++bit) {
        flip_bit(dev.get(), base + i, bit);
        DeviceLabel back;
        LabelPairStatus st;
        ASSERT_EQ(read_labels(dev.get(), &back, &st, &why), 0) << copy << " byte " << i << " bit " << bit;
        EXPECT_EQ(st.chosen, copy == 'A' ? 'B' : 'A') << copy << " byte " << i << " bit " << bit;
        EXPECT_NE(copy == 'A' ? st.a : st.b, 0) << copy << " byte " << i << " bit " << bit;
        EXPECT_FALSE(st.intact());
        EXPECT_NE(st.problem().find(std::string("copy ") + copy), std::string::npos) << st.problem();
        EXPECT_TRUE(same_label_content(back, l)) << copy << " byte " << i << " bit " << bit;
        flip_bit(dev.get(), base + i, bit);
        ++flips;
      }
  }
  EXPECT_EQ(flips, static_cast<int>(2 * used * 8));
  // Both damaged: no label, and the error says why.
  flip_bit(dev.get(), 40, 0);
  flip_bit(dev.get(), kLabelSize + 40, 0);
  DeviceLabel back;
  EXPECT_EQ(read_label(dev.get(), &back, &why), -EIO);
  EXPECT_FALSE(why.empty());
}

// A pair whose B copy is newer than A (a crash between the two writes) and
// one whose B copy is of a newer build.
TEST(LabelV2, ACopyBehindIsReportedAndANewerBuildsCopyRefusesTheDevice) {
  TempDir dir("label-behind");
  auto dev = open_file(dir.file("dev"));
  DeviceLabel l = full_label();
  std::string why;
  ASSERT_EQ(write_label_pair(dev.get(), &l, &why), 0) << why;
  DeviceLabel newer = l;
  newer.generation = l.generation + 1;
  newer.meta["whoami"] = "4";
  std::string enc;
  ASSERT_EQ(encode_label(newer, &enc), 0);
  AlignedBuffer b(kLabelSize);
  std::memcpy(b.data(), enc.data(), kLabelSize);
  ASSERT_EQ(dev->write(kLabelSize, b.data(), kLabelSize), 0);
  DeviceLabel back;
  LabelPairStatus st;
  ASSERT_EQ(read_labels(dev.get(), &back, &st, &why), 0) << why;
  EXPECT_EQ(st.chosen, 'B');
  EXPECT_TRUE(st.other_behind);
  EXPECT_NE(st.problem().find("copy A is behind"), std::string::npos) << st.problem();
  EXPECT_EQ(back.meta.at("whoami"), "4");
  // The next pair outranks both copies.
  ASSERT_EQ(write_label_pair(dev.get(), &back, &why), 0) << why;
  EXPECT_EQ(back.generation, newer.generation + 1);
  ASSERT_EQ(read_labels(dev.get(), &back, &st, &why), 0) << why;
  EXPECT_TRUE(st.intact());

  std::string body(16, '\x01');
  std::memcpy(b.data(), frame(seal_record(kLabelTag, 9, body)).data(), kLabelSize);
  ASSERT_EQ(dev->write(kLabelSize, b.data(), kLabelSize), 0);
  EXPECT_EQ(read_labels(dev.get(), &back, &st, &why), -EOPNOTSUPP);
}

// A B copy of another store beside a valid A: what an older build's mkfs
// (which writes A only) leaves over an earlier store. A is the label.
TEST(LabelV2, ABCopyOfAnotherStoreNeverOutranksA) {
  TempDir dir("label-foreign");
  auto dev = open_file(dir.file("dev"));
  DeviceLabel old = full_label();
  std::string why;
  for (int i = 0; i < 3; ++i) ASSERT_EQ(write_label_pair(dev.get(), &old, &why), 0) << why;
  DeviceLabel mine = full_label();  // another fsid
  mine.generation = 1;
  std::string enc;
  ASSERT_EQ(encode_label(mine, &enc), 0);
  AlignedBuffer b(kLabelSize);
  std::memcpy(b.data(), enc.data(), kLabelSize);
  ASSERT_EQ(dev->write(0, b.data(), kLabelSize), 0);
  DeviceLabel back;
  LabelPairStatus st;
  ASSERT_EQ(read_labels(dev.get(), &back, &st, &why), 0) << why;
  EXPECT_EQ(st.chosen, 'A');
  EXPECT_EQ(back.fsid, mine.fsid);
}

// Power cut during either write of a pair, with the cache dropped or kept
// at random, torn or not: the device keeps a label, the old one or the new
// one, and once B was flushed, the new one.
TEST(LabelV2, ATornPairLeavesTheOldOrTheNewLabelNeverNone) {
  int cases = 0;
  for (uint64_t n : {1, 2})
    for (bool tear : {false, true})
      for (bool keep : {false, true}) {
        SCOPED_TRACE("cut at write " + std::to_string(n) + (tear ? " torn" : "") + (keep ? " keep=random" : ""));
        TempDir dir("label-torn");
        FaultSettings fs;
        fs.enabled = true;
        fs.seed = 17 + n;
        auto injector = std::make_shared<FaultInjector>(dir.path(), fs);
        injector->keep_cached_writes_at_random(keep);
        auto dev = std::make_unique<FaultInjectionDevice>(open_file(dir.file("dev")), injector);
        DeviceLabel old = full_label();
        std::string why;
        ASSERT_EQ(write_label_pair(dev.get(), &old, &why), 0) << why;
        DeviceLabel neu = old;
        neu.meta["whoami"] = "9";
        injector->powercut_after_writes(n, tear);
        EXPECT_LT(write_label_pair(dev.get(), &neu, &why), 0);
        ASSERT_TRUE(injector->power_is_off());
        ASSERT_EQ(injector->restore_power(&why), 0) << why;
        dev.reset();
        auto media = open_file(dir.file("dev"));
        DeviceLabel back;
        LabelPairStatus st;
        ASSERT_EQ(read_labels(media.get(), &back, &st, &why), 0) << why;
        const bool is_old = same_label_content(back, old);
        neu.generation = old.generation + 1;
        neu.slot = old.slot;
        const bool is_new = same_label_content(back, neu);
        EXPECT_TRUE(is_old || is_new);
        if (n == 2) {
          // (A torn copy may still hold the whole new label: a torn write
          // lands a prefix, and the label is a few hundred bytes of it.)
          EXPECT_TRUE(is_new) << "B was flushed before A was written";
        }
        if (n == 1 && !tear && !keep) {
          EXPECT_TRUE(is_old);
        }
        ++cases;
      }
  EXPECT_EQ(cases, 8);
}

// Superblock record v3: the RocksDB location after the mkfs options; older
// records are directory stores, and a store of an older format keeps its
// record version.
TEST(SuperblockV3, KeepsTheRocksdbLocationAndOlderRecordsAreDirectoryStores) {
  Superblock s;
  s.format_version = 4;
  s.fsid = generate_uuid();
  s.tier[Tier::kSsd] = {1ull << 30, 4096, 65536, {}};
  s.tier[Tier::kHdd] = {8ull << 30, 65536, 65536, {}};
  s.kv_location = KvLocation::kDevice;
  const std::string enc = encode_superblock(s);
  Superblock back;
  std::string why;
  ASSERT_EQ(decode_superblock(enc, &back, &why), 0) << why;
  EXPECT_EQ(back.kv_location, KvLocation::kDevice);
  uint8_t ver;
  std::string_view body;
  ASSERT_EQ(open_stored_record(kSuperTag, 3, enc, "superblock", &ver, &body, &why), 0) << why;
  EXPECT_EQ(ver, 3);
  EXPECT_EQ(static_cast<uint8_t>(body.back()), 1);
  // The same body without the location, as record version 2: directory.
  const std::string v2 = seal_record(kSuperTag, 2, body.substr(0, body.size() - 1));
  ASSERT_EQ(decode_superblock(v2, &back, &why), 0) << why;
  EXPECT_EQ(back.kv_location, KvLocation::kDirectory);
  // An unknown location is damage.
  std::string bad(body);
  bad.back() = 2;
  EXPECT_EQ(decode_superblock(seal_record(kSuperTag, 3, bad), &back, &why), -EIO);
  // Format 3 is written as record version 2, which format-3 builds read.
  s.format_version = 3;
  s.kv_location = KvLocation::kDirectory;
  ASSERT_EQ(open_stored_record(kSuperTag, 3, encode_superblock(s), "superblock", &ver, &body, &why), 0);
  EXPECT_EQ(ver, 2);
  EXPECT_EQ(kFormatVersion, 6u);
}
