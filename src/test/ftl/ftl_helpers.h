// Shared by the FTL tests: small geometries, a reference model of what the
// block interface must return, and FTL open/attach shortcuts.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "ftl/flash_translation_layer.h"

namespace hybridstore::ftl::test {

// 64 blocks x 16 pages x 512 B (32 B OOB): every layer is exercised in
// milliseconds. hubi gets d = 11, l = 3.
FtlOptions small_options(PolicyKind policy, uint32_t blocks = 64);

// Formats fresh in-memory flash; asserts on failure.
std::unique_ptr<Ftl> format_fresh(const FtlOptions& o, std::shared_ptr<NandMedia>* media);
// Attaches to `media`; returns null (and *error) on failure.
std::unique_ptr<Ftl> reattach(std::shared_ptr<NandMedia> media, const FtlOptions& o,
                              std::string* error, AttachReport* report = nullptr);

// Deterministic page contents: sector number and version in the first bytes,
// pseudo-random bytes after.
std::string page_content(uint64_t sector, uint64_t version, uint32_t size);

// What each sector must hold: the latest acknowledged version (0 = zeros).
class Reference {
 public:
  void wrote(uint64_t sector, uint64_t version) { v_[sector] = version; }
  void trimmed(uint64_t sector) { v_.erase(sector); }
  uint64_t version(uint64_t sector) const {
    auto it = v_.find(sector);
    return it == v_.end() ? 0 : it->second;
  }
  const std::map<uint64_t, uint64_t>& all() const { return v_; }

 private:
  std::map<uint64_t, uint64_t> v_;
};

// Empty string when every sector of `ftl` matches `ref` (a sector in
// `either` may also hold `either_version`); else a description of the first
// mismatch.
std::string verify(Ftl* ftl, const Reference& ref, int64_t either = -1,
                   uint64_t either_version = 0);

}  // namespace hybridstore::ftl::test
