#include "hybridstore/format/onode.h"

#include <gtest/gtest.h>

#include <random>

using namespace hybridstore;

namespace {
DataExtent extent(uint64_t logical, uint64_t len, uint64_t phys, Tier t = Tier::kSsd) {
  DataExtent e;
  e.logical = logical;
  e.length = len;
  e.physical = phys;
  e.tier = t;
  e.csum_block = 4096;
  for (uint64_t i = 0; i < len / 4096; ++i) e.csums.push_back(static_cast<uint32_t>(phys + i));
  return e;
}
}  // namespace

TEST(Onode, EncodeDecodeRoundTrip) {
  Onode o;
  o.size = 123456;
  o.nid = 99;
  o.alloc_hint_flags = 5;
  o.expected_object_size = 4 << 20;
  o.attrs["_"] = std::string(300, 'a');
  o.attrs["snapset"] = "";
  o.extents.insert(extent(0, 8192, 65536));
  o.extents.insert(extent(16384, 4096, 1 << 20, Tier::kHdd));
  Onode back;
  std::string why;
  ASSERT_TRUE(decode_onode(encode_onode(o), &back, &why)) << why;
  EXPECT_EQ(back.size, o.size);
  EXPECT_EQ(back.nid, 99u);
  EXPECT_EQ(back.attrs, o.attrs);
  ASSERT_EQ(back.extents.size(), 2u);
  const auto& e = back.extents.extents().at(16384);
  EXPECT_EQ(e.tier, Tier::kHdd);
  EXPECT_EQ(e.physical, 1u << 20);
  EXPECT_EQ(e.csums.size(), 1u);
}

TEST(Onode, DecoderRejectsEveryFlippedByteAndTruncation) {
  Onode o;
  o.size = 10;
  o.attrs["k"] = "v";
  o.extents.insert(extent(0, 4096, 8192));
  std::string enc = encode_onode(o);
  Onode out;
  for (size_t i = 0; i < enc.size(); ++i) {
    std::string bad = enc;
    bad[i] ^= 0x20;
    EXPECT_FALSE(decode_onode(bad, &out)) << "byte " << i;
  }
  for (size_t n = 0; n < enc.size(); ++n) EXPECT_FALSE(decode_onode(enc.substr(0, n), &out));
}

TEST(Onode, PunchTrimsSplitsAndReportsFreedRanges) {
  ExtentMap m;
  m.insert(extent(0, 16384, 100 * 4096));
  std::vector<PExtent> freed;
  m.punch(4096, 8192, &freed);
  ASSERT_EQ(freed.size(), 1u);
  EXPECT_EQ(freed[0].offset, 101u * 4096);
  EXPECT_EQ(freed[0].length, 4096u);
  ASSERT_EQ(m.size(), 2u);
  const auto& head = m.extents().at(0);
  const auto& tail = m.extents().at(8192);
  EXPECT_EQ(head.length, 4096u);
  EXPECT_EQ(head.csums.size(), 1u);
  EXPECT_EQ(tail.physical, 102u * 4096);
  EXPECT_EQ(tail.csums.size(), 2u);
  EXPECT_EQ(tail.csums[0], static_cast<uint32_t>(100 * 4096 + 2));  // csums moved with their blocks
  freed.clear();
  m.punch(0, UINT64_MAX, &freed);
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(freed.size(), 2u);
}

TEST(Onode, OverlappingFindsEveryTouchedExtent) {
  ExtentMap m;
  m.insert(extent(0, 4096, 0));
  m.insert(extent(8192, 4096, 4096));
  m.insert(extent(20480, 8192, 8192));
  EXPECT_EQ(m.overlapping(4096, 8192).size(), 0u);
  EXPECT_EQ(m.overlapping(4095, 8193).size(), 2u);
  EXPECT_EQ(m.overlapping(0, 1 << 20).size(), 3u);
  EXPECT_TRUE(m.any_in(24000, 24001));
}
