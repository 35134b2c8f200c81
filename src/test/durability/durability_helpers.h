// Shared steps of the durability tests: options, and "the power is back:
// recover, check, read everything".
#pragma once
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "crash_model.h"
#include "hybridstore/store/hybrid_store.h"

namespace hybridstore::test {

// `c` with one more option set (asserts it is accepted).
Config with_option(Config c, const std::string& name, const std::string& value);

// Mounts the store at `path` with `cfg`, requires a clean deep fsck and reads
// everything observable into *out. Returns the mounted store (null after a
// failed assertion).
std::unique_ptr<HybridStore> recover_and_read(const std::string& path, const Config& cfg,
                                              crashtest::StoreModel* out);

}  // namespace hybridstore::test
