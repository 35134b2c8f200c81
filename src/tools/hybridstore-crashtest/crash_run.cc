// `run`: the workload process. Everything it promises lives in the log: a
// line is written with write(2) before the transaction is queued (S n) and
// from its on_commit callback (A n), so a SIGKILL loses no line that matters.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "crash_workload.h"
#include "crashtest.h"
#include "testing/fault_injection.h"

namespace hybridstore::crashtest {

Config harness_config(const std::vector<std::string>& overrides, std::string* error, bool* ok) {
  Config c;
  *ok = true;
  const char* base[] = {"hybridstore_ssd_size=256M",
                        "hybridstore_hdd_size=1G",
                        "hybridstore_placement_hdd_threshold=128K",
                        "hybridstore_onode_cache_size=2000",
                        // Small writes into HDD objects take the absorb path
                        // on any machine (auto follows the disk's media).
                        "hybridstore_tier_absorb=always",
                        "hybridstore_rocksdb_options=write_buffer_size=4M;compression=kNoCompression"};
  for (const char* kv : base) c.set_from_arg(kv, error);
  for (const auto& kv : overrides)
    if (c.set_from_arg(kv, error) < 0) {
      *ok = false;
      *error = "--set " + kv + ": " + *error;
    }
  return c;
}

namespace {

class LogFile {
 public:
  explicit LogFile(const std::string& path) : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644)) {}
  ~LogFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  void line(const std::string& s) {
    std::string l = s + "\n";
    // One write per line: the kernel keeps it even if we are killed next.
    if (::write(fd_, l.data(), l.size()) < 0) perror("hybridstore-crashtest: log");
  }

 private:
  int fd_;
};

}  // namespace

int run_workload_process(const RunArgs& a) {
  LogFile log(a.log);
  if (!log.ok()) {
    fprintf(stderr, "hybridstore-crashtest: cannot open log %s: %s\n", a.log.c_str(), strerror(errno));
    return 2;
  }
  std::string err;
  bool ok;
  std::vector<std::string> sets = a.sets;
  if (a.powercut_after) {
    sets.push_back("hybridstore_debug_powercut_after_writes=" + std::to_string(a.powercut_after));
    sets.push_back(std::string("hybridstore_debug_powercut_tear=") + (a.tear ? "true" : "false"));
    sets.push_back("hybridstore_debug_fault_seed=" + std::to_string(a.seed % 1000000007));
  }
  Config cfg = harness_config(sets, &err, &ok);
  if (!ok) {
    fprintf(stderr, "hybridstore-crashtest: %s\n", err.c_str());
    return 2;
  }
  auto lost_power = [&](const std::string& what) {
    std::string why;
    if (fault_injection_restore(a.path, &why) < 0) {
      fprintf(stderr, "hybridstore-crashtest: %s\n", why.c_str());
      return 2;
    }
    log.line("F " + what);
    return 3;
  };
  auto store = std::make_unique<HybridStore>(a.path, cfg);
  if (int r = store->mount(&err); r < 0) {
    store.reset();
    auto inj = fault_injector_for(a.path);
    if (inj && inj->power_is_off()) return lost_power("power lost during mount: " + err);
    fprintf(stderr, "hybridstore-crashtest: mount %s: %s\n", a.path.c_str(), err.c_str());
    return 2;
  }
  StoreModel base;
  if (int r = read_store_model(*store, &base, &err); r < 0) {
    auto inj = fault_injector_for(a.path);
    store.reset();
    if (inj && inj->power_is_off()) return lost_power("power lost while reading the store: " + err);
    fprintf(stderr, "hybridstore-crashtest: reading the store: %s: %s\n", err.c_str(), strerror(-r));
    return 2;
  }
  log.line(fmt::format("B {:016x} {}", base.digest(), a.seed));

  WorkloadGenerator gen(a.seed, std::move(base));
  RunOptions ro;
  ro.max_txns = a.max_txns;
  ro.max_inflight = a.max_inflight;
  ro.on_submit = [&](uint64_t n) { log.line("S " + std::to_string(n)); };
  ro.on_ack = [&](uint64_t n) { log.line("A " + std::to_string(n)); };
  RunResult res = run_workload(*store, gen, ro);
  if (res.mismatch) {
    log.line("X " + res.message);
    fprintf(stderr, "hybridstore-crashtest: %s\n", res.message.c_str());
    return 1;
  }
  if (res.store_failed) {
    auto inj = fault_injector_for(a.path);
    store.reset();  // a crash as far as the media are concerned: nothing more reaches them
    if (inj && inj->power_is_off()) return lost_power(res.message);
    log.line("X " + res.message);
    fprintf(stderr, "hybridstore-crashtest: %s\n", res.message.c_str());
    return 1;
  }
  if (int r = store->umount(); r < 0) {
    fprintf(stderr, "hybridstore-crashtest: umount: %s\n", strerror(-r));
    return 1;
  }
  log.line(fmt::format("E done: {} transactions, {} rejected as expected", res.submitted, res.rejected_as_expected));
  return 0;
}

int print_digest(const std::string& path, const std::vector<std::string>& sets) {
  Config cfg;
  std::string err;
  // Reading every object for the digest must not promote any of them (see
  // hybridstore-tool's load_config).
  cfg.set("hybridstore_tier_promote_hits", "0", &err);
  for (const auto& kv : sets)
    if (cfg.set_from_arg(kv, &err) < 0) {
      fprintf(stderr, "hybridstore-crashtest: --set %s: %s\n", kv.c_str(), err.c_str());
      return 2;
    }
  HybridStore store(path, cfg);
  if (store.mount(&err) < 0) {
    fprintf(stderr, "hybridstore-crashtest: cannot mount %s: %s\n", path.c_str(), err.c_str());
    return 1;
  }
  StoreModel m;
  if (int r = read_store_model(store, &m, &err); r < 0) {
    fprintf(stderr, "hybridstore-crashtest: reading %s: %s: %s\n", path.c_str(), err.c_str(), strerror(-r));
    return 1;
  }
  printf("objects %llu bytes %llu digest %016llx\n", static_cast<unsigned long long>(m.object_count()),
         static_cast<unsigned long long>(m.data_bytes()), static_cast<unsigned long long>(m.digest()));
  return store.umount() < 0 ? 1 : 0;
}

}  // namespace hybridstore::crashtest
