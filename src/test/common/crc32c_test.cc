#include "hybridstore/common/crc32c.h"

#include <gtest/gtest.h>

#include <string>

using hybridstore::crc32c;

// RFC 3720 B.4 test vectors.
TEST(Crc32c, MatchesRfc3720Vectors) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  std::string zeros(32, '\0');
  EXPECT_EQ(crc32c(zeros), 0x8A9136AAu);
  std::string ones(32, '\xff');
  EXPECT_EQ(crc32c(ones), 0x62A8AB43u);
  std::string inc(32, '\0');
  for (int i = 0; i < 32; ++i) inc[i] = static_cast<char>(i);
  EXPECT_EQ(crc32c(inc), 0x46DD794Eu);
}

TEST(Crc32c, ExtendingEqualsOneShot) {
  std::string s;
  for (int i = 0; i < 10000; ++i) s.push_back(static_cast<char>(i * 7 + 3));
  uint32_t whole = crc32c(s);
  for (size_t cut : {0, 1, 7, 8, 9, 4095, 9999}) {
    uint32_t c = crc32c(0, s.data(), cut);
    c = crc32c(c, s.data() + cut, s.size() - cut);
    EXPECT_EQ(c, whole) << "cut at " << cut;
  }
}

TEST(Crc32c, DetectsSingleBitFlip) {
  std::string s(4096, 'x');
  uint32_t c = crc32c(s);
  s[1234] ^= 0x10;
  EXPECT_NE(crc32c(s), c);
}
