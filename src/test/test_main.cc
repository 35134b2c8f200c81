// gtest entry point shared by every unit-test binary.
#include <gtest/gtest.h>

#include "hybridstore/common/log.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  hybridstore::set_log_level(hybridstore::LogLevel::kError);
  return RUN_ALL_TESTS();
}
