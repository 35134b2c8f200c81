#include "common_helpers.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace hybridstore::test {

TempDir::TempDir(const std::string& tag, Backing backing) {
  const char* base = getenv("HS_TEST_TMPDIR");
  std::string root = base && *base ? base : "/tmp";
  if (backing == Backing::kMemory && access("/dev/shm", W_OK) == 0) root = "/dev/shm/hybridstore-test";
  std::filesystem::create_directories(root);
  std::string tmpl = root + "/" + tag + ".XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed under " + root);
  path_ = tmpl;
}

TempDir::~TempDir() {
  if (getenv("HS_TEST_KEEP")) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string random_bytes(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = rng();
    for (int k = 0; k < 8; ++k) s[i + k] = static_cast<char>(v >> (8 * k));
  }
  for (; i < n; ++i) s[i] = static_cast<char>(rng());
  return s;
}

uint64_t test_seed(uint64_t fallback) {
  uint64_t s = fallback;
  if (const char* e = getenv("HS_TEST_SEED")) s = strtoull(e, nullptr, 10);
  printf("[ seed     ] %llu (HS_TEST_SEED=%llu repeats it)\n", static_cast<unsigned long long>(s),
         static_cast<unsigned long long>(s));
  return s;
}

}  // namespace hybridstore::test
