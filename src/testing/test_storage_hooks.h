// The storage hooks of test binaries, qa tools and benches: fault injection
// (fault_injection.h, enabled by the hybridstore_debug_* options) and device
// timing models (device_model.h, enabled by hybridstore_device_model), each
// doing exactly what its options ask; with the options at their defaults
// the store sees its own RocksDB environment and devices.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "hybridstore/store/storage_hooks.h"

namespace hybridstore {

class VirtualClock;

class TestStorageHooks final : public StorageHooks {
 public:
  // Restores the power of an injector an earlier mount of the store left
  // behind, then gives RocksDB a fresh injector's environment when `cfg`
  // enables fault injection.
  int setup_kv(const std::string& store_path, const Config& cfg, rocksdb::Options* opts,
               std::string* error) override;
  // The same for a store whose RocksDB is on its fastest tier: the fresh
  // injector reaches RocksDB through that tier's device.
  int begin_mount(const std::string& store_path, const Config& cfg, std::string* error) override;
  // The fault-injecting device when this mount has an injector, wrapped in
  // the timing model when one is configured: the model outside, so an I/O
  // the injector fails is not charged.
  std::unique_ptr<BlockDevice> wrap_device(const std::string& store_path, Tier tier, const Config& cfg,
                                           std::unique_ptr<BlockDevice> dev) override;
  // The commit journal loses its unflushed writes at a power cut like the
  // devices do.
  std::unique_ptr<BlockDevice> wrap_journal(const std::string& store_path, const Config& cfg,
                                            std::unique_ptr<BlockDevice> dev) override;

 private:
  // Modelled time is shared by both devices of a store: a serial model.
  std::shared_ptr<VirtualClock> clock_for(const std::string& store_path);
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<VirtualClock>> clocks_;
};

// Registers the testing options (test_options.h) and installs
// TestStorageHooks for the process (call at the start of main).
void install_test_storage_hooks();

}  // namespace hybridstore
