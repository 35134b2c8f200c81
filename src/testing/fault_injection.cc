#include "testing/fault_injection.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include <rocksdb/env.h>

#include "hscommon/log.h"
#include "testing/fault_device.h"
#include "testing/fault_kv_fs.h"

namespace hybridstore {

FaultSettings FaultSettings::from_config(const Config& cfg) {
  FaultSettings s;
  auto count = [&](const char* name) { return static_cast<uint64_t>(std::max<int64_t>(0, cfg.get_int(name))); };
  s.powercut_after_writes = count("hybridstore_debug_powercut_after_writes");
  s.tear = cfg.get_bool("hybridstore_debug_powercut_tear");
  s.keep_random = cfg.get_str("hybridstore_debug_powercut_keep") == "random";
  s.eio_on_write = count("hybridstore_debug_eio_on_write");
  s.eio_on_flush = count("hybridstore_debug_eio_on_flush");
  s.eio_on_kv_sync = count("hybridstore_debug_eio_on_kv_sync");
  s.seed = count("hybridstore_debug_fault_seed");
  s.enabled = cfg.get_bool("hybridstore_debug_fault_injection") || s.powercut_after_writes || s.eio_on_write ||
              s.eio_on_flush || s.eio_on_kv_sync;
  return s;
}

FaultInjector::FaultInjector(std::string store_path, const FaultSettings& s)
    : store_path_(std::move(store_path)),
      cut_at_(s.powercut_after_writes),
      tear_(s.tear),
      keep_random_(s.keep_random),
      eio_write_at_(s.eio_on_write),
      eio_flush_at_(s.eio_on_flush),
      eio_kv_sync_at_(s.eio_on_kv_sync),
      rng_(s.seed) {
  fs_ = std::make_shared<FaultInjectionFileSystem>(rocksdb::FileSystem::Default(), this,
                                                   store_path_ + "/.fault-injection");
  env_ = rocksdb::NewCompositeEnv(fs_);
}

FaultInjector::~FaultInjector() {
  std::string err;
  restore_power(&err);
}

void FaultInjector::keep_cached_writes_at_random(bool on) {
  std::lock_guard<std::mutex> l(mutex_);
  keep_random_ = on;
}

void FaultInjector::powercut_after_writes(uint64_t n, bool tear) {
  std::lock_guard<std::mutex> l(mutex_);
  cut_at_ = n ? counters_.clock + n : 0;
  tear_ = tear;
}

void FaultInjector::fail_device_write_after(uint64_t n) {
  std::lock_guard<std::mutex> l(mutex_);
  eio_write_at_ = n ? counters_.device_writes + n : 0;
}

void FaultInjector::fail_device_flush_after(uint64_t n) {
  std::lock_guard<std::mutex> l(mutex_);
  eio_flush_at_ = n ? counters_.device_flushes + n : 0;
}

void FaultInjector::fail_kv_sync_after(uint64_t n) {
  std::lock_guard<std::mutex> l(mutex_);
  eio_kv_sync_at_ = n ? counters_.kv_syncs + n : 0;
}

void FaultInjector::power_cut_now() {
  std::lock_guard<std::mutex> l(mutex_);
  if (!off_) cut_locked();
}

void FaultInjector::cut_locked() {
  off_.store(true, std::memory_order_release);
  counters_.power_off = true;
  uint64_t landed = 0;
  for (auto* d : devices_) landed += d->drop_cache(keep_random_ ? &rng_ : nullptr);
  fs_->freeze();
  HS_WARN("fault injection: power cut for store {} after {} writes ({} device, {} RocksDB){}{}", store_path_,
          counters_.clock, counters_.device_writes, counters_.kv_appends, tear_ ? ", the last one torn" : "",
          keep_random_ ? fmt::format(", {} cached 4 KiB blocks reached the media", landed) : std::string());
}

int FaultInjector::restore_power(std::string* error) {
  std::lock_guard<std::mutex> l(mutex_);
  if (!off_ || restored_) return 0;
  restored_ = true;
  return fs_->apply_loss(error);
}

FaultCounters FaultInjector::counters() const {
  std::lock_guard<std::mutex> l(mutex_);
  return counters_;
}

FaultInjector::Verdict FaultInjector::on_device_write() {
  std::lock_guard<std::mutex> l(mutex_);
  if (off_) return Verdict::kFail;
  ++counters_.device_writes;
  if (eio_write_at_ && counters_.device_writes == eio_write_at_) {
    ++counters_.injected_errors;
    HS_WARN("fault injection: device write {} of store {} fails with EIO", counters_.device_writes, store_path_);
    return Verdict::kFail;
  }
  if (++counters_.clock == cut_at_) {
    cut_locked();
    return Verdict::kPowerCut;
  }
  return Verdict::kProceed;
}

FaultInjector::Verdict FaultInjector::on_kv_append() {
  std::lock_guard<std::mutex> l(mutex_);
  if (off_) return Verdict::kFail;
  ++counters_.kv_appends;
  if (++counters_.clock == cut_at_) {
    cut_locked();
    return Verdict::kPowerCut;
  }
  return Verdict::kProceed;
}

FaultInjector::Verdict FaultInjector::on_device_flush() {
  std::lock_guard<std::mutex> l(mutex_);
  if (off_) return Verdict::kFail;
  ++counters_.device_flushes;
  if (eio_flush_at_ && counters_.device_flushes == eio_flush_at_) {
    ++counters_.injected_errors;
    HS_WARN("fault injection: device flush {} of store {} fails with EIO", counters_.device_flushes, store_path_);
    return Verdict::kFail;
  }
  return Verdict::kProceed;
}

FaultInjector::Verdict FaultInjector::on_kv_sync() {
  std::lock_guard<std::mutex> l(mutex_);
  if (off_) return Verdict::kFail;
  ++counters_.kv_syncs;
  if (eio_kv_sync_at_ && counters_.kv_syncs == eio_kv_sync_at_) {
    ++counters_.injected_errors;
    HS_WARN("fault injection: RocksDB sync {} of store {} fails with EIO", counters_.kv_syncs, store_path_);
    return Verdict::kFail;
  }
  return Verdict::kProceed;
}

uint64_t FaultInjector::random_below(uint64_t n) {
  std::lock_guard<std::mutex> l(mutex_);
  return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_);
}

void FaultInjector::register_device(FaultInjectionDevice* d) {
  std::lock_guard<std::mutex> l(mutex_);
  devices_.push_back(d);
}

void FaultInjector::unregister_device(FaultInjectionDevice* d) {
  std::lock_guard<std::mutex> l(mutex_);
  devices_.erase(std::remove(devices_.begin(), devices_.end(), d), devices_.end());
}

// ---------------------------------------------------------------- registry

namespace {

// Injectors by store path. Never destroyed while the process runs; its
// destructor at exit restores the power of every store that lost it.
struct Registry {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<FaultInjector>> by_path;
};

Registry& registry() {
  static Registry r;
  return r;
}

std::string key_of(const std::string& store_path) {
  std::error_code ec;
  auto p = std::filesystem::absolute(store_path, ec);
  return (ec ? std::filesystem::path(store_path) : p).lexically_normal().string();
}

}  // namespace

int fault_injection_setup_kv(const std::string& store_path, const Config& cfg, rocksdb::Options* opts,
                             std::string* error) {
  const std::string key = key_of(store_path);
  std::shared_ptr<FaultInjector> old;
  {
    std::lock_guard<std::mutex> l(registry().mutex);
    auto it = registry().by_path.find(key);
    if (it != registry().by_path.end()) {
      old = std::move(it->second);
      registry().by_path.erase(it);
    }
  }
  if (old) {
    std::string why;
    if (int r = old->restore_power(&why); r < 0) {
      *error = "fault injection: " + why;
      return r;
    }
  }
  FaultSettings s = FaultSettings::from_config(cfg);
  if (!s.enabled) return 0;
  auto inj = std::make_shared<FaultInjector>(store_path, s);
  if (opts) opts->env = inj->env();
  HS_WARN("fault injection is on for store {} (power cut after write {}{}{}, EIO on device write {}, "
          "device flush {}, RocksDB sync {}; 0 = never)",
          store_path, s.powercut_after_writes, s.tear ? ", torn" : "",
          s.keep_random ? ", cached blocks kept at random" : "", s.eio_on_write, s.eio_on_flush, s.eio_on_kv_sync);
  std::lock_guard<std::mutex> l(registry().mutex);
  registry().by_path[key] = std::move(inj);
  return 0;
}

std::unique_ptr<BlockDevice> fault_injection_wrap_device(const std::string& store_path,
                                                         std::unique_ptr<BlockDevice> dev) {
  auto inj = fault_injector_for(store_path);
  if (!inj || !dev) return dev;
  return std::make_unique<FaultInjectionDevice>(std::move(dev), std::move(inj));
}

std::shared_ptr<FaultInjector> fault_injector_for(const std::string& store_path) {
  std::lock_guard<std::mutex> l(registry().mutex);
  auto it = registry().by_path.find(key_of(store_path));
  return it == registry().by_path.end() ? nullptr : it->second;
}

int fault_injection_restore(const std::string& store_path, std::string* error) {
  auto inj = fault_injector_for(store_path);
  return inj ? inj->restore_power(error) : 0;
}

}  // namespace hybridstore
