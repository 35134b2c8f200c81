#include <tuple>
#include "hscommon/encoding.h"
#include "hybridstore/kv/kv_schema.h"

#include <gtest/gtest.h>

#include "hybridstore/format/store_format.h"

using namespace hybridstore;

TEST(KvSchema, OnodeKeysOfACollectionShareItsPrefixAndOrder) {
  ObjectId a = ObjectId::from_name("a", 1), b = ObjectId::from_name("b", 1);
  std::string p = kv::onode_prefix("1.0_head");
  std::string ka = kv::onode_key("1.0_head", a), kb = kv::onode_key("1.0_head", b);
  EXPECT_EQ(ka.compare(0, p.size(), p), 0);
  EXPECT_EQ(a < b, ka < kb);
  // A collection whose name extends another's never interleaves with it.
  EXPECT_GE(kv::onode_key("1.0_head2", a), kv::prefix_end(p));
  CollectionId c;
  ObjectId back;
  ASSERT_TRUE(kv::decode_onode_key(ka, &c, &back));
  EXPECT_EQ(c.name, "1.0_head");
  EXPECT_EQ(back, a);
}

TEST(KvSchema, OmapKeysOfOneObjectAreContiguousAndHeaderFirst) {
  EXPECT_LT(kv::omap_header_key(5), kv::omap_key(5, ""));
  EXPECT_LT(kv::omap_key(5, "\xff\xff"), kv::omap_nid_end(5));
  EXPECT_LT(kv::omap_nid_end(5), kv::omap_key(6, ""));
  uint64_t nid;
  bool hdr;
  std::string_view user;
  const std::string key = kv::omap_key(7, "user");  // `user` points into it
  ASSERT_TRUE(kv::decode_omap_key(key, &nid, &hdr, &user));
  EXPECT_EQ(nid, 7u);
  EXPECT_FALSE(hdr);
  EXPECT_EQ(user, "user");
}

TEST(KvSchema, CollectionRecordRejectsGarbage) {
  uint32_t bits;
  std::string rec = kv::encode_collection(12);
  ASSERT_TRUE(kv::decode_collection(rec, &bits));
  EXPECT_EQ(bits, 12u);
  for (size_t i = 0; i < rec.size(); ++i) {
    std::string bad = rec;
    bad[i] ^= 1;
    EXPECT_FALSE(kv::decode_collection(bad, &bits));
  }
}

TEST(KvSchema, MergeOperatorXorsBitmapsAndAddsStats) {
  auto op = kv::make_merge_operator();
  auto* assoc = static_cast<rocksdb::AssociativeMergeOperator*>(op.get());
  std::string out;
  rocksdb::Slice a("\x0f\x00", 2), b("\x03\x01", 2);
  ASSERT_TRUE(assoc->Merge(kv::bitmap_key(Tier::kSsd, 0), &a, b, &out, nullptr));
  EXPECT_EQ(out, std::string("\x0c\x01", 2));
  int64_t d1[kv::kStatCount] = {1, 100, 0}, d2[kv::kStatCount] = {-1, 50, 0};
  std::string v1 = kv::encode_stat_delta(d1), v2 = kv::encode_stat_delta(d2);
  rocksdb::Slice s1(v1);
  ASSERT_TRUE(assoc->Merge(kv::stats_key(), &s1, rocksdb::Slice(v2), &out, nullptr));
  int64_t sum[kv::kStatCount];
  ASSERT_TRUE(kv::decode_stats(out, sum));
  EXPECT_EQ(sum[0], 0);
  EXPECT_EQ(sum[1], 150);
  EXPECT_FALSE(assoc->Merge(kv::stats_key(), &s1, rocksdb::Slice("abc"), &out, nullptr));
  EXPECT_FALSE(assoc->Merge(kv::collection_key("x"), nullptr, b, &out, nullptr));
}

TEST(StoreFormat, LabelRoundTripAndRejection) {
  DeviceLabel l;
  l.fsid = generate_uuid();
  l.role = Tier::kHdd;
  l.size = 123 << 20;
  l.description = "test";
  std::string enc;
  ASSERT_EQ(encode_label(l, &enc), 0);
  ASSERT_EQ(enc.size(), kLabelSize);
  DeviceLabel back;
  std::string why;
  ASSERT_EQ(decode_label(enc, &back, &why), 0) << why;
  EXPECT_EQ(back.fsid, l.fsid);
  EXPECT_EQ(back.role, Tier::kHdd);
  EXPECT_EQ(back.size, l.size);
  // Every byte up to the end of the record matters; the rest is padding.
  size_t used = 18 + 4 + (static_cast<uint8_t>(enc[18]) | static_cast<uint8_t>(enc[19]) << 8);
  for (size_t i = 0; i < used; ++i) {
    std::string bad = enc;
    bad[i] ^= 0x40;
    // Without its magic a block is not a label at all (a caller's wrong
    // device); with it, any damage is an I/O error.
    const size_t magic_len = 18;
    EXPECT_EQ(decode_label(bad, &back, &why), i < magic_len ? -EINVAL : -EIO) << i;
  }
  EXPECT_EQ(decode_label(std::string(kLabelSize, '\0'), &back, &why), -EINVAL);
}

// The superblock's bytes are the store's: written by every build since
// format 2, read by every build after. Spelled out field by field here, so
// a change to the in-memory struct cannot change them unnoticed.
TEST(StoreFormat, TheSuperblockIsWrittenInTheBytesOfFormatThree) {
  Superblock s;
  s.format_version = 3;
  for (size_t i = 0; i < s.fsid.size(); ++i) s.fsid[i] = static_cast<uint8_t>(i + 1);
  s.created_us = 1234567;
  s.order = TierOrder{Tier::kSsd, Tier::kTier2, Tier::kHdd};
  s.tier[Tier::kSsd] = {1ull << 30, 256, 65536, {DeviceKind::kNand, SpaceKind::kSections}};
  s.tier[Tier::kHdd] = {8ull << 30, 65536, 65536, {}};
  s.tier[Tier::kTier2] = {4ull << 30, 4096, 65536, {}};
  s.csum_block = 4096;
  s.mkfs_options = {{"hybridstore_ssd_kind", "nand"}, {"hybridstore_tiers", "3"}};
  std::string body;
  put_fixed32(&body, 3);
  for (int i = 1; i <= 16; ++i) put_u8(&body, static_cast<uint8_t>(i));
  put_fixed64(&body, 1234567);
  put_u8(&body, 3);  // tiers, then each by id: size, unit, reserved, device, space
  for (auto [size, unit, dev, space] : {std::tuple<uint64_t, uint64_t, int, int>{1ull << 30, 256, 1, 1},
                                        {8ull << 30, 65536, 0, 0},
                                        {4ull << 30, 4096, 0, 0}}) {
    put_varint(&body, size);
    put_varint(&body, unit);
    put_varint(&body, 65536);
    put_u8(&body, static_cast<uint8_t>(dev));
    put_u8(&body, static_cast<uint8_t>(space));
  }
  for (int id : {0, 2, 1}) put_u8(&body, static_cast<uint8_t>(id));  // the order, fastest first
  put_varint(&body, 4096);
  put_varint(&body, 2);
  for (const char* kv : {"hybridstore_ssd_kind", "nand", "hybridstore_tiers", "3"}) put_bytes(&body, kv);
  const uint32_t kSuperTag = 0x53555052;  // "SUPR"
  EXPECT_EQ(encode_superblock(s), seal_record(kSuperTag, 2, body));
  Superblock back;
  std::string why;
  ASSERT_EQ(decode_superblock(seal_record(kSuperTag, 2, body), &back, &why), 0) << why;
  EXPECT_EQ(back.order, s.order);
  EXPECT_EQ(back.tier[Tier::kTier2].size, 4ull << 30);
  EXPECT_EQ(back.tier[Tier::kSsd].layout.space, SpaceKind::kSections);
}

TEST(StoreFormat, SuperblockRoundTripAndRejection) {
  Superblock s;
  s.fsid = generate_uuid();
  s.tier[Tier::kSsd].size = 1 << 30;
  s.tier[Tier::kHdd].size = 8ull << 30;
  s.tier[Tier::kSsd].reserved = s.tier[Tier::kHdd].reserved = 65536;
  s.mkfs_options["hybridstore_csum_block"] = "4096";
  std::string enc = encode_superblock(s);
  Superblock back;
  std::string why;
  ASSERT_EQ(decode_superblock(enc, &back, &why), 0) << why;
  EXPECT_EQ(back.fsid, s.fsid);
  EXPECT_EQ(back.tier[Tier::kHdd].size, 8ull << 30);
  EXPECT_EQ(back.mkfs_options, s.mkfs_options);
  for (size_t i = 0; i < enc.size(); ++i) {
    std::string bad = enc;
    bad[i] ^= 0x08;
    EXPECT_EQ(decode_superblock(bad, &back, &why), -EIO);
  }
  Uuid u;
  EXPECT_TRUE(parse_uuid(uuid_to_string(s.fsid), &u));
  EXPECT_EQ(u, s.fsid);
  EXPECT_FALSE(parse_uuid("not-a-uuid", &u));
}
