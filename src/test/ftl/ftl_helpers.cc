#include "ftl/ftl_helpers.h"

#include <gtest/gtest.h>

#include <cstring>

#include <fmt/format.h>

namespace hybridstore::ftl::test {

FtlOptions small_options(PolicyKind policy, uint32_t blocks) {
  FtlOptions o;
  o.geometry.page_size = 512;
  o.geometry.pages_per_block = 16;
  o.geometry.oob_size = 32;
  o.geometry.block_count = blocks;
  o.policy = policy;
  o.partition_data = 4;
  o.partition_log = 2;
  o.bad_reserve_per_1024 = 20;
  o.cache = CacheMode::kOff;
  o.wl_threshold = 64;
  return o;
}

std::unique_ptr<Ftl> format_fresh(const FtlOptions& o, std::shared_ptr<NandMedia>* media) {
  *media = NandMedia::create_memory(o.geometry);
  EXPECT_TRUE(*media);
  std::unique_ptr<Ftl> f;
  std::string err;
  int r = Ftl::format(*media, o, &f, &err);
  EXPECT_EQ(r, 0) << err;
  return f;
}

std::unique_ptr<Ftl> reattach(std::shared_ptr<NandMedia> media, const FtlOptions& o,
                              std::string* error, AttachReport* report) {
  std::unique_ptr<Ftl> f;
  if (Ftl::attach(std::move(media), o, &f, error, report) < 0) return nullptr;
  return f;
}

std::string page_content(uint64_t sector, uint64_t version, uint32_t size) {
  std::string s(size, '\0');
  std::mt19937_64 rng(sector * 1000003 + version);
  for (uint32_t i = 0; i < size; i += 8) {
    uint64_t v = rng();
    memcpy(&s[i], &v, std::min<uint32_t>(8, size - i));
  }
  memcpy(&s[0], &sector, 8);
  memcpy(&s[8], &version, 8);
  return s;
}

std::string verify(Ftl* ftl, const Reference& ref, int64_t either, uint64_t either_version) {
  uint32_t ss = ftl->sector_size();
  std::string buf(ss, '\0');
  std::string zeros(ss, '\0');
  for (uint64_t s = 0; s < ftl->sector_count(); ++s) {
    int r = ftl->read_sectors(s, 1, &buf[0]);
    if (r < 0) return fmt::format("sector {}: read failed {}", s, r);
    uint64_t v = ref.version(s);
    auto matches = [&](uint64_t ver) { return buf == (ver ? page_content(s, ver, ss) : zeros); };
    if (matches(v)) continue;
    if (static_cast<int64_t>(s) == either && matches(either_version)) continue;
    uint64_t got_s, got_v;
    memcpy(&got_s, &buf[0], 8);
    memcpy(&got_v, &buf[8], 8);
    return fmt::format("sector {}: expected version {}, found sector {} version {}{}", s, v,
                       got_s, got_v, buf == zeros ? " (zeros)" : "");
  }
  return "";
}

}  // namespace hybridstore::ftl::test
