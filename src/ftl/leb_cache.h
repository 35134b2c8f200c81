// A one-LEB write-back cache in front of the mapping policy (the role of
// Linux's mtdblock cache, which the hUBI paper modifies).
//
// Writes to the cached LEB stay in RAM; a write to another LEB first flushes
// the dirty pages with one MappingPolicy::write_pages() call, which is where
// hUBI's sequential shortcut applies (>= l pages: written straight into a new
// block). Cached data is NOT durable until flush().
//
// Modes:
//   kOff       every write goes to the policy at once;
//   kLazy      a miss does not read the LEB: only the written pages are held
//              (the default: a full-LEB overwrite never reads old data);
//   kMtdblock  as Linux mtdblock and the paper's eq. (7)/(9): a write that
//              misses reads the whole LEB into the cache first.
// Reads are served from the cache when it holds the page, else from the
// policy (a read never fills the cache, as in mtdblock).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ftl/mapping_policy.h"

namespace hybridstore::ftl {

enum class CacheMode { kOff, kLazy, kMtdblock };
const char* cache_mode_name(CacheMode m);
bool parse_cache_mode(const std::string& s, CacheMode* out);

class LebCache {
 public:
  LebCache(MappingPolicy* policy, CacheMode mode, uint32_t page_size, uint32_t pages_per_leb);

  CacheMode mode() const { return mode_; }
  int read(uint32_t leb, uint32_t lpn, char* buf);
  int write(uint32_t leb, uint32_t lpn, const char* buf);
  // The caller is about to write or trim the whole LEB itself: drop it.
  void forget(uint32_t leb);
  // Pages [first, first+count) of `leb` are trimmed: drop them.
  void trim(uint32_t leb, uint32_t first, uint32_t count);
  // Writes the dirty pages out (the cache keeps them as clean copies).
  int flush();
  bool dirty() const { return dirty_count_ > 0; }

 private:
  int switch_to(uint32_t leb);

  MappingPolicy* policy_;
  CacheMode mode_;
  uint32_t page_size_;
  uint32_t ppl_;
  int64_t leb_ = -1;
  std::vector<char> pages_;
  std::vector<bool> valid_;  // the cache holds the newest copy of the page
  std::vector<bool> dirty_;  // ... and it is not on flash yet
  uint32_t dirty_count_ = 0;
};

}  // namespace hybridstore::ftl
