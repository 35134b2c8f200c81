#include "durability_helpers.h"

namespace hybridstore::test {

Config with_option(Config c, const std::string& name, const std::string& value) {
  std::string err;
  EXPECT_EQ(c.set(name, value, &err), 0) << err;
  return c;
}

std::unique_ptr<HybridStore> recover_and_read(const std::string& path, const Config& cfg,
                                              crashtest::StoreModel* out) {
  auto s = std::make_unique<HybridStore>(path, cfg);
  std::string err;
  int r = s->mount(&err);
  EXPECT_EQ(r, 0) << "mount after the crash: " << err;
  if (r < 0) return nullptr;
  FsckReport rep;
  r = s->fsck(true, &rep);
  EXPECT_EQ(r, 0) << "deep fsck after the crash: " << (rep.problems.empty() ? "" : rep.problems[0]);
  if (r != 0) return nullptr;
  r = crashtest::read_store_model(*s, out, &err);
  EXPECT_EQ(r, 0) << "reading the recovered store: " << err;
  if (r < 0) return nullptr;
  return s;
}

}  // namespace hybridstore::test
