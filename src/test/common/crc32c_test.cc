#include "hscommon/crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "common_helpers.h"

using hybridstore::crc32c;
using hybridstore::crc32c_blocks;

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

TEST(Crc32c, BlocksAtOnceEqualEachBlockAlone) {
  std::mt19937_64 rng(7);
  for (size_t block : {1u, 7u, 512u, 4096u, 4100u})
    for (size_t count : {0u, 1u, 2u, 3u, 4u, 5u, 6u, 7u, 64u}) {
      std::string data = hybridstore::test::random_bytes(rng, block * count);
      std::vector<uint32_t> got(count, 0xdeadbeef);
      crc32c_blocks(data.data(), block, count, got.data());
      for (size_t i = 0; i < count; ++i)
        EXPECT_EQ(got[i], crc32c(0, data.data() + i * block, block)) << "block " << block << " #" << i;
    }
}
