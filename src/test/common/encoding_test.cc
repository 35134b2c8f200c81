#include "hscommon/encoding.h"

#include <gtest/gtest.h>

#include <random>

using namespace hybridstore;

TEST(Encoding, VarintRoundTripAtBoundaries) {
  std::vector<uint64_t> vals = {0, 1, 127, 128, 16383, 16384, UINT32_MAX, (1ull << 63), UINT64_MAX};
  std::string buf;
  for (auto v : vals) put_varint(&buf, v);
  Decoder d(buf);
  for (auto v : vals) {
    uint64_t x;
    ASSERT_TRUE(d.get_varint(&x));
    EXPECT_EQ(x, v);
  }
  EXPECT_TRUE(d.done());
}

TEST(Encoding, SignedVarintRoundTrip) {
  std::string buf;
  for (int64_t v : {0L, -1L, 1L, INT64_MIN, INT64_MAX}) put_svarint(&buf, v);
  Decoder d(buf);
  for (int64_t v : {0L, -1L, 1L, INT64_MIN, INT64_MAX}) {
    int64_t x;
    ASSERT_TRUE(d.get_svarint(&x));
    EXPECT_EQ(x, v);
  }
}

TEST(Encoding, OverlongVarintIsRejected) {
  std::string buf(11, '\xff');
  Decoder d(buf);
  uint64_t x;
  EXPECT_FALSE(d.get_varint(&x));
  EXPECT_FALSE(d.ok());
}

TEST(Encoding, BytesLengthPastEndIsRejected) {
  std::string buf;
  put_varint(&buf, 100);
  buf += "short";
  Decoder d(buf);
  std::string s;
  EXPECT_FALSE(d.get_bytes(&s));
}

TEST(Encoding, VarintSizeIsWhatPutVarintWrites) {
  for (uint64_t v : {0ull, 1ull, 127ull, 128ull, 16383ull, 16384ull, 2097151ull, 2097152ull, (1ull << 35) - 1,
                     1ull << 35, (1ull << 63) - 1, ~0ull}) {
    std::string s;
    put_varint(&s, v);
    EXPECT_EQ(varint_size(v), s.size()) << v;
  }
}

TEST(Encoding, ASealedRecordOfPiecesIsTheRecordOfTheirConcatenation) {
  std::string big(70000, 'x');
  for (auto parts : std::vector<std::vector<std::string>>{{}, {""}, {"a"}, {"head", "body"}, {"h", big, "t"}}) {
    std::string joined;
    for (const auto& p : parts) joined += p;
    std::string got;
    if (parts.empty()) got = seal_record_parts(9, 3, {});
    else if (parts.size() == 1) got = seal_record_parts(9, 3, {parts[0]});
    else if (parts.size() == 2) got = seal_record_parts(9, 3, {parts[0], parts[1]});
    else got = seal_record_parts(9, 3, {parts[0], parts[1], parts[2]});
    EXPECT_EQ(got, seal_record(9, 3, joined)) << parts.size() << " parts";
  }
}

TEST(Encoding, BigEndianKeysSortNumerically) {
  std::string a, b;
  put_be64(&a, 255);
  put_be64(&b, 256);
  EXPECT_LT(a, b);
  EXPECT_EQ(get_be64(b.data()), 256u);
}

TEST(Encoding, SealedRecordRoundTrips) {
  std::string rec = seal_record(7, 2, "payload");
  uint8_t ver;
  std::string_view body;
  ASSERT_EQ(open_record(7, 2, rec, &ver, &body), RecordError::kNone);
  EXPECT_EQ(ver, 2);
  EXPECT_EQ(body, "payload");
}

TEST(Encoding, SealedRecordRejectsEveryFlippedByte) {
  std::string rec = seal_record(7, 1, "some body bytes");
  for (size_t i = 0; i < rec.size(); ++i) {
    std::string bad = rec;
    bad[i] ^= 0x01;
    uint8_t ver;
    std::string_view body;
    EXPECT_NE(open_record(7, 1, bad, &ver, &body), RecordError::kNone) << "byte " << i;
  }
}

TEST(Encoding, SealedRecordRejectsOtherTagTruncationAndNewerVersion) {
  std::string rec = seal_record(7, 3, "x");
  uint8_t ver;
  std::string_view body;
  EXPECT_EQ(open_record(8, 3, rec, &ver, &body), RecordError::kBadChecksum);
  EXPECT_EQ(open_record(7, 2, rec, &ver, &body), RecordError::kBadVersion);
  for (size_t n = 0; n < rec.size(); ++n)
    EXPECT_NE(open_record(7, 3, rec.substr(0, n), &ver, &body), RecordError::kNone);
}

TEST(Encoding, RandomGarbageNeverDecodesAsRecord) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 2000; ++i) {
    std::string junk(rng() % 64, '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    uint8_t ver;
    std::string_view body;
    EXPECT_NE(open_record(1, 1, junk, &ver, &body), RecordError::kNone);
  }
}
