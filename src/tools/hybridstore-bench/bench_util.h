// Shared pieces of the benchmarks: timing, percentiles, store set-up.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hybridstore/store/hybrid_store.h"

namespace hybridstore::bench {

inline double now_sec() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

// Creates (mkfs) and mounts a store at `dir` with `sets` (key=value)
// applied over the defaults; prints the reason and returns null on failure.
std::unique_ptr<HybridStore> make_store(const std::string& dir, const std::vector<std::string>& sets,
                                        bool wipe);

// The malloc this process runs on ("tcmalloc", "jemalloc", "glibc", or a
// sanitizer's: "asan", "tsan"):
// figures of CPU per operation depend on it by 10-15%, so results say it.
std::string malloc_name();

}  // namespace hybridstore::bench
