#include "bench_util.h"

#include <dlfcn.h>

#include <cstdio>
#include <filesystem>

namespace hybridstore::bench {

std::unique_ptr<HybridStore> make_store(const std::string& dir, const std::vector<std::string>& sets, bool wipe) {
  Config cfg;
  std::string err;
  for (const auto& s : sets)
    if (cfg.set_from_arg(s, &err) < 0) {
      fprintf(stderr, "hybridstore-bench: --set %s: %s\n", s.c_str(), err.c_str());
      return nullptr;
    }
  if (wipe) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  auto store = std::make_unique<HybridStore>(dir, cfg);
  if (store->mkfs(&err) < 0 || store->mount(&err) < 0) {
    fprintf(stderr, "hybridstore-bench: store at %s: %s\n", dir.c_str(), err.c_str());
    return nullptr;
  }
  return store;
}

std::string malloc_name() {
  // Each replacement exports an entry point of its own besides malloc.
  if (dlsym(RTLD_DEFAULT, "__asan_init")) return "asan";
  if (dlsym(RTLD_DEFAULT, "__tsan_init")) return "tsan";
  if (dlsym(RTLD_DEFAULT, "tc_malloc")) return "tcmalloc";
  if (dlsym(RTLD_DEFAULT, "mallctl")) return "jemalloc";
  return "glibc";
}

}  // namespace hybridstore::bench
