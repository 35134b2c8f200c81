// Small helpers shared by unit tests: scratch directories and random bytes.
#pragma once
#include <cstdint>
#include <random>
#include <string>

namespace hybridstore::test {

// A fresh directory under $HS_TEST_TMPDIR (or /tmp), removed on destruction
// unless HS_TEST_KEEP is set.
//
// kMemory puts it under /dev/shm instead (when writable), for the loops that
// simulate thousands of power cuts through the fault injector: there the
// backing file's fsync proves nothing (the injector decides what survives)
// and only makes the loop wait for the disk.
class TempDir {
 public:
  enum class Backing { kDisk, kMemory };
  explicit TempDir(const std::string& tag = "hs", Backing backing = Backing::kDisk);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string random_bytes(std::mt19937_64& rng, size_t n);

// The seed of a randomised check: `fallback`, or HS_TEST_SEED when set.
// Printed either way, so a failure can be repeated.
uint64_t test_seed(uint64_t fallback);

}  // namespace hybridstore::test
