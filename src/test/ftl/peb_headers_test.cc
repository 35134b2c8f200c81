// EC headers and page tags: round trips, and untrusted input (flipped bytes,
// random garbage) rejected without crashing.
#include "ftl/peb_headers.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

using namespace hybridstore::ftl;

namespace {

EcHeader sample_ec() {
  EcHeader h;
  h.erase_count = 12345;
  h.image.policy = PolicyKind::kPubi;
  h.image.data_pages = 127;
  h.image.partition_data = 16;
  h.image.partition_log = 4;
  h.image.leb_count = 3200;
  h.image.image_seq = 0xdeadbeef;
  return h;
}

PageTag sample_tag() {
  PageTag t;
  t.kind = PageKind::kLog;
  t.flags = kTagMerge | kTagLast;
  t.leb = 777;
  t.lpn = 99;
  t.merge_end = 42;
  t.seq = 0x123456789abcull;
  t.data_crc = 0xcafef00d;
  return t;
}

}  // namespace

TEST(PebHeadersTest, EcHeaderRoundTrips) {
  std::string page(2048, 0);
  encode_ec_header(sample_ec(), &page[0], 2048);
  EcHeader out;
  ASSERT_EQ(decode_ec_header(page.data(), 2048, &out), HeaderStatus::kValid);
  EXPECT_EQ(out.erase_count, 12345u);
  EXPECT_EQ(out.image, sample_ec().image);
}

TEST(PebHeadersTest, PageTagRoundTripsInTheSmallestOob) {
  std::string oob(32, 0);
  encode_page_tag(sample_tag(), &oob[0], 32);
  EXPECT_EQ(static_cast<uint8_t>(oob[0]), 0xff) << "bad-block marker untouched";
  EXPECT_EQ(static_cast<uint8_t>(oob[1]), 0xff);
  PageTag out;
  ASSERT_EQ(decode_page_tag(oob.data(), 32, &out), HeaderStatus::kValid);
  EXPECT_EQ(out.leb, 777u);
  EXPECT_EQ(out.lpn, 99);
  EXPECT_EQ(out.merge_end, 42);
  EXPECT_EQ(out.seq, 0x123456789abcull);
  EXPECT_EQ(out.data_crc, 0xcafef00du);
  EXPECT_EQ(out.kind, PageKind::kLog);
  EXPECT_EQ(out.flags, kTagMerge | kTagLast);
}

TEST(PebHeadersTest, ErasedAreasDecodeAsErased) {
  std::string page(2048, '\xff'), oob(64, '\xff');
  EcHeader h;
  PageTag t;
  EXPECT_EQ(decode_ec_header(page.data(), 2048, &h), HeaderStatus::kErased);
  EXPECT_EQ(decode_page_tag(oob.data(), 64, &t), HeaderStatus::kErased);
}

TEST(PebHeadersTest, EveryFlippedByteOfAnEcHeaderIsRejected) {
  std::string page(2048, 0);
  encode_ec_header(sample_ec(), &page[0], 2048);
  for (size_t i = 0; i < 64; ++i)
    for (uint8_t mask : {0x01, 0x80, 0xff}) {
      std::string bad = page;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      EcHeader out;
      HeaderStatus st = decode_ec_header(bad.data(), 2048, &out);
      // Past the record only 0xFF padding changes: still the same header.
      if (st == HeaderStatus::kValid) {
        EXPECT_EQ(out.image, sample_ec().image) << "byte " << i;
        EXPECT_EQ(out.erase_count, 12345u) << "byte " << i;
      }
    }
  // The record is 35 bytes (version, length, 29-byte body, crc).
  int rejected = 0;
  for (size_t i = 0; i < 35; ++i) {
    std::string bad = page;
    bad[i] = static_cast<char>(bad[i] ^ 0x04);
    EcHeader out;
    rejected += decode_ec_header(bad.data(), 2048, &out) == HeaderStatus::kCorrupt;
  }
  EXPECT_EQ(rejected, 35);
}

TEST(PebHeadersTest, EveryFlippedByteOfAPageTagIsRejected) {
  std::string oob(32, 0);
  encode_page_tag(sample_tag(), &oob[0], 32);
  for (size_t i = 2; i < 32; ++i)
    for (uint8_t mask : {0x01, 0x10, 0x80, 0xff}) {
      std::string bad = oob;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      PageTag out;
      EXPECT_EQ(decode_page_tag(bad.data(), 32, &out), HeaderStatus::kCorrupt)
          << "byte " << i << " mask " << int(mask);
    }
}

TEST(PebHeadersTest, RandomGarbageNeverDecodes) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 100000; ++i) {
    std::string page(256, 0);
    for (char& c : page) c = static_cast<char>(rng());
    // Sometimes a plausible framing prefix, to get past the first checks.
    if (i % 2) {
      page[0] = 1;
      page[1] = static_cast<char>(rng() % 40);
    }
    EcHeader h;
    PageTag t;
    EXPECT_NE(decode_ec_header(page.data(), 256, &h), HeaderStatus::kValid);
    EXPECT_NE(decode_page_tag(page.data(), 64, &t), HeaderStatus::kValid);
    EXPECT_NE(decode_page_tag(page.data(), 2, &t), HeaderStatus::kValid);
  }
}

TEST(PebHeadersTest, PolicyNamesParse) {
  PolicyKind p;
  EXPECT_TRUE(parse_policy("pubi", &p));
  EXPECT_EQ(p, PolicyKind::kPubi);
  EXPECT_FALSE(parse_policy("fast", &p));
}
