#include "hscommon/config.h"

#include <gtest/gtest.h>

using namespace hybridstore;

TEST(Config, DefaultsParseAndAreTyped) {
  Config c;
  EXPECT_EQ(c.get_size("hybridstore_ssd_alloc_unit"), 4096u);
  EXPECT_TRUE(c.get_bool("hybridstore_block_create"));
  EXPECT_EQ(c.get_str("hybridstore_io_backend"), "auto");
}

TEST(Config, EveryOptionHasADescriptionAndPrefix) {
  for (const auto& o : option_registry()) {
    EXPECT_EQ(o.name.rfind("hybridstore_", 0), 0u) << o.name;
    EXPECT_FALSE(o.description.empty()) << o.name;
  }
}

TEST(Config, SizesAcceptSuffixes) {
  uint64_t v;
  ASSERT_TRUE(parse_size("64K", &v));
  EXPECT_EQ(v, 65536u);
  ASSERT_TRUE(parse_size("8GiB", &v));
  EXPECT_EQ(v, 8ull << 30);
  EXPECT_FALSE(parse_size("12Q", &v));
  EXPECT_FALSE(parse_size("", &v));
  EXPECT_FALSE(parse_size("-4K", &v));
  EXPECT_FALSE(parse_size("99999999999999999999", &v));
}

TEST(Config, InvalidValueNamesTheOption) {
  Config c;
  std::string err;
  EXPECT_EQ(c.set("hybridstore_ssd_alloc_unit", "banana", &err), -EINVAL);
  EXPECT_NE(err.find("hybridstore_ssd_alloc_unit"), std::string::npos);
  EXPECT_EQ(c.set("hybridstore_ssd_alloc_unit", "12K", &err), -EINVAL);  // not a power of two
  EXPECT_NE(err.find("power of two"), std::string::npos);
  EXPECT_EQ(c.set("hybridstore_ssd_alloc_unit", "2K", &err), -EINVAL);  // below minimum
  EXPECT_EQ(c.set("hybridstore_io_backend", "spdk", &err), -EINVAL);
  EXPECT_NE(err.find("permitted"), std::string::npos);
  EXPECT_EQ(c.set("hybridstore_no_such_thing", "1", &err), -ENOENT);
  EXPECT_EQ(c.get_size("hybridstore_ssd_alloc_unit"), 4096u);  // unchanged
}

TEST(Config, IniSectionsOverrideInCephOrder) {
  Config c;
  std::string err;
  const char* text =
      "# comment\n"
      "[global]\n"
      "hybridstore ssd alloc unit = 16K\n"
      "fsid = whatever\n"
      "[hybridstore]\n"
      "hybridstore_ssd_alloc_unit = 64K ; trailing comment\n"
      "hybridstore_direct_io = false\n";
  ASSERT_EQ(c.load_ini_text(text, "t.conf", &err), 0) << err;
  EXPECT_EQ(c.get_size("hybridstore_ssd_alloc_unit"), 65536u);
  EXPECT_FALSE(c.get_bool("hybridstore_direct_io"));
  EXPECT_FALSE(c.is_default("hybridstore_direct_io"));
}

TEST(Config, IniErrorsCarryFileAndLine) {
  Config c;
  std::string err;
  EXPECT_EQ(c.load_ini_text("[hybridstore]\nhybridstore_direct_io = maybe\n", "x.conf", &err),
            -EINVAL);
  EXPECT_NE(err.find("x.conf:2"), std::string::npos) << err;
  EXPECT_EQ(c.load_ini_text("[hybridstore\n", "y.conf", &err), -EINVAL);
  EXPECT_EQ(c.load_ini_text("[hybridstore]\njunk line\n", "z.conf", &err), -EINVAL);
}

TEST(Config, SetFromArg) {
  Config c;
  std::string err;
  ASSERT_EQ(c.set_from_arg("hybridstore_hdd_size=1G", &err), 0) << err;
  EXPECT_EQ(c.get_size("hybridstore_hdd_size"), 1ull << 30);
  EXPECT_EQ(c.set_from_arg("novalue", &err), -EINVAL);
}

namespace {

void add_probe_option(std::vector<OptionSpec>* v) {
  v->push_back({"hybridstore_registry_probe", OptionType::kInt, "7", "test: an option a table registers late"});
}
void add_clashing_option(std::vector<OptionSpec>* v) {
  v->push_back({"hybridstore_csum_block", OptionType::kInt, "1", "test: a name the product already has"});
}

bool is_test_machinery_option(const std::string& name) {
  return name.rfind("hybridstore_debug_", 0) == 0 || name.rfind("hybridstore_model_", 0) == 0 ||
         name == "hybridstore_device_model";
}

}  // namespace

TEST(Config, TheProductsTablesHoldNoTestOnlyOption) {
  std::vector<OptionSpec> product;
  for (OptionTable t : product_option_tables()) t(&product);
  ASSERT_GT(product.size(), 30u);
  for (const auto& o : product) {
    EXPECT_FALSE(is_test_machinery_option(o.name)) << o.name << " belongs to the testing library's table";
    EXPECT_FALSE(o.needs_storage_hooks) << o.name;
  }
  // The test binary registered the testing tables (test_main): each of their
  // options is known here and marked as needing the hooks.
  int test_only = 0;
  for (const auto& o : option_registry())
    if (is_test_machinery_option(o.name)) {
      EXPECT_TRUE(o.needs_storage_hooks) << o.name;
      ++test_only;
    }
  EXPECT_EQ(test_only, 18);
}

TEST(Config, ARegisteredTableIsKnownToConfigsMadeAfterIt) {
  Config before;
  size_t n = option_registry().size();
  const OptionSpec* first = &option_registry().front();
  register_option_table(add_probe_option, /*test_only=*/false);
  register_option_table(add_probe_option, /*test_only=*/false);  // twice: added once
  EXPECT_EQ(option_registry().size(), n + 1);
  EXPECT_EQ(&option_registry().front(), first);  // earlier options stay where they were
  ASSERT_NE(find_option("hybridstore_registry_probe"), nullptr);
  EXPECT_FALSE(find_option("hybridstore_registry_probe")->needs_storage_hooks);
  Config after;
  EXPECT_EQ(after.get_int("hybridstore_registry_probe"), 7);
  std::string err;
  EXPECT_EQ(after.set("hybridstore_registry_probe", "9", &err), 0) << err;
  EXPECT_EQ(after.get_int("hybridstore_registry_probe"), 9);
  // A Config made before the table says so rather than invent a value.
  EXPECT_THROW(before.get_int("hybridstore_registry_probe"), std::logic_error);
  EXPECT_THROW(register_option_table(add_clashing_option, false), std::logic_error);
  EXPECT_EQ(option_registry().size(), n + 1);
}
