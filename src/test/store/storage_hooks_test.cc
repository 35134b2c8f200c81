// Storage hooks: the store calls installed hooks where it opens storage, and
// a store without hooks (the product) refuses the options only hooks honour.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "hybridstore/store/storage_hooks.h"
#include "store_helpers.h"

using namespace hybridstore;
using hybridstore::test::small_store_config;
using hybridstore::test::TempDir;

namespace {

// Swaps the process's hooks for the test's and puts the old ones back.
class HooksSwap {
 public:
  explicit HooksSwap(std::shared_ptr<StorageHooks> hooks) : saved_(storage_hooks()) {
    set_storage_hooks(std::move(hooks));
  }
  ~HooksSwap() { set_storage_hooks(saved_); }

 private:
  std::shared_ptr<StorageHooks> saved_;
};

Config with(Config c, const std::string& name, const std::string& value) {
  std::string err;
  EXPECT_EQ(c.set(name, value, &err), 0) << err;
  return c;
}

class RecordingHooks : public StorageHooks {
 public:
  int setup_kv(const std::string& store_path, const Config& cfg, rocksdb::Options* opts,
               std::string* error) override {
    ++kv_setups;
    return 0;
  }
  std::unique_ptr<BlockDevice> wrap_device(const std::string& store_path, Tier tier, const Config& cfg,
                                           std::unique_ptr<BlockDevice> dev) override {
    ++wrapped[tier_index(tier)];
    return dev;
  }
  int kv_setups = 0;
  int wrapped[kMaxTiers] = {};
};

TEST(StorageHooks, OnlyDebugOptionsAndDeviceModelsNeedHooks) {
  Config c = small_store_config();
  EXPECT_EQ(option_needing_storage_hooks(c), "");
  // Asking for the default asks for nothing.
  EXPECT_EQ(option_needing_storage_hooks(with(c, "hybridstore_debug_powercut_tear", "false")), "");
  EXPECT_EQ(option_needing_storage_hooks(with(c, "hybridstore_device_model", "none")), "");
  EXPECT_EQ(option_needing_storage_hooks(with(c, "hybridstore_debug_eio_on_write", "3")),
            "hybridstore_debug_eio_on_write");
  EXPECT_EQ(option_needing_storage_hooks(with(c, "hybridstore_debug_fault_injection", "true")),
            "hybridstore_debug_fault_injection");
  EXPECT_EQ(option_needing_storage_hooks(with(c, "hybridstore_device_model", "paper")), "hybridstore_device_model");
}

TEST(StorageHooks, TheStoreCallsThemWhereItOpensStorage) {
  auto hooks = std::make_shared<RecordingHooks>();
  HooksSwap swap(hooks);
  TempDir dir("hooks");
  HybridStore store(dir.path() + "/store", small_store_config());
  std::string err;
  ASSERT_EQ(store.mkfs(&err), 0) << err;
  EXPECT_EQ(hooks->kv_setups, 1);
  EXPECT_EQ(hooks->wrapped[0] + hooks->wrapped[1], 0);  // mkfs writes labels on the bare devices
  ASSERT_EQ(store.mount(&err), 0) << err;
  EXPECT_EQ(hooks->kv_setups, 2);
  EXPECT_EQ(hooks->wrapped[tier_index(Tier::kSsd)], 1);
  EXPECT_EQ(hooks->wrapped[tier_index(Tier::kHdd)], 1);
  EXPECT_EQ(store.umount(), 0);
}

TEST(StorageHooks, WithoutHooksTheOptionsOnlyTheyHonourFailMkfsAndMount) {
  HooksSwap swap(nullptr);
  TempDir dir("hooks");
  const std::string path = dir.path() + "/store";
  std::string err;
  {
    HybridStore store(path, with(small_store_config(), "hybridstore_debug_powercut_after_writes", "5"));
    EXPECT_EQ(store.mkfs(&err), -EINVAL);
    EXPECT_NE(err.find("hybridstore_debug_powercut_after_writes"), std::string::npos) << err;
    EXPECT_NE(err.find("test tools"), std::string::npos) << err;
  }
  {
    HybridStore store(path, small_store_config());
    ASSERT_EQ(store.mkfs(&err), 0) << err;
    ASSERT_EQ(store.mount(&err), 0) << err;
    EXPECT_EQ(store.umount(), 0);
  }
  for (auto [name, value] : {std::pair<const char*, const char*>{"hybridstore_debug_eio_on_write", "1"},
                             {"hybridstore_debug_fault_injection", "true"},
                             {"hybridstore_device_model", "paper"}}) {
    HybridStore store(path, with(small_store_config(), name, value));
    EXPECT_EQ(store.mount(&err), -EINVAL) << name;
    EXPECT_NE(err.find(name), std::string::npos) << err;
    EXPECT_FALSE(store.is_mounted());
  }
  HybridStore store(path, with(small_store_config(), "hybridstore_debug_powercut_tear", "false"));
  ASSERT_EQ(store.mount(&err), 0) << err;
  EXPECT_EQ(store.umount(), 0);
}

}  // namespace
