#include "testing/test_storage_hooks.h"

#include "testing/device_model.h"
#include "testing/test_options.h"
#include "testing/fault_injection.h"

namespace hybridstore {

int TestStorageHooks::setup_kv(const std::string& store_path, const Config& cfg, rocksdb::Options* opts,
                               std::string* error) {
  return fault_injection_setup_kv(store_path, cfg, opts, error);
}

int TestStorageHooks::begin_mount(const std::string& store_path, const Config& cfg, std::string* error) {
  return fault_injection_setup_kv(store_path, cfg, nullptr, error);
}

std::unique_ptr<BlockDevice> TestStorageHooks::wrap_device(const std::string& store_path, Tier tier,
                                                           const Config& cfg, std::unique_ptr<BlockDevice> dev) {
  dev = fault_injection_wrap_device(store_path, std::move(dev));
  if (!dev) return dev;
  // Under hybridstore_device_model the device charges modelled time to a
  // virtual clock, so policy experiments are deterministic on any machine.
  auto model = make_device_model(cfg, tier == Tier::kSsd ? DeviceRole::kSsd : DeviceRole::kHdd, dev->size());
  if (!model) return dev;
  return std::make_unique<ModeledBlockDevice>(std::move(dev), std::move(model), clock_for(store_path));
}

std::unique_ptr<BlockDevice> TestStorageHooks::wrap_journal(const std::string& store_path, const Config&,
                                                            std::unique_ptr<BlockDevice> dev) {
  return fault_injection_wrap_device(store_path, std::move(dev));
}

std::shared_ptr<VirtualClock> TestStorageHooks::clock_for(const std::string& store_path) {
  std::lock_guard<std::mutex> l(mutex_);
  auto& c = clocks_[store_path];
  if (!c) c = std::make_shared<VirtualClock>();
  return c;
}

void install_test_storage_hooks() {
  register_test_options();
  set_storage_hooks(std::make_shared<TestStorageHooks>());
}

}  // namespace hybridstore
