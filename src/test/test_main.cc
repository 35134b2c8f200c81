// gtest entry point shared by every unit-test binary.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "hybridstore/common/log.h"
#include "hybridstore/testing/test_storage_hooks.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Tests drive fault injection and device models through store options.
  hybridstore::install_test_storage_hooks();
  // --hs-set=key=value (repeatable) runs the suite under other store options:
  // gathered into HS_TEST_SET for small_store_config().
  std::string sets;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--hs-set=", 0) == 0) sets += (sets.empty() ? "" : " ") + a.substr(9);
  }
  if (!sets.empty()) setenv("HS_TEST_SET", sets.c_str(), 1);
  // Quiet by default; HS_TEST_LOG=warn|info|debug when chasing a failure.
  hybridstore::LogLevel level = hybridstore::LogLevel::kError;
  if (const char* l = std::getenv("HS_TEST_LOG")) hybridstore::parse_log_level(l, &level);
  hybridstore::set_log_level(level);
  return RUN_ALL_TESTS();
}
