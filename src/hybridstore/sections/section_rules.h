// Mapping objects to data sections: static rules (the HFM "mapping script")
// and dynamic mapping by size.
//
// `hybridstore_ssd_section_rules` holds rules separated by ';'. A rule is one or
// more matches joined by '&', then '=', then a target:
//   pool:7=bypass; pool:3&prefix:rbd_data.=large; ns:mail=small; coll:3.1f_head=auto
// Matches: pool:<integer>, ns:<namespace>, coll:<collection>, prefix:<object
// name prefix>. All matches of a rule must hold. Targets: a section name,
// `bypass` (HDD only), or `auto` (dynamic by size). The first matching rule
// wins; an object no rule matches is mapped dynamically. In strings, '%XX'
// (two hex digits) stands for any byte, so ';', '&', '=' and '%' can be written
// as %3B, %26, %3D and %25. Spaces around tokens are ignored.
//
// Dynamic mapping (HFM section 3.1, generalised to N sections): with the
// non-bypass sections ordered by extent size s_1 <= ... <= s_N and `len` the
// object's length in blocks: len <= s_1 -> the first; len >= s_N -> the last;
// otherwise the smallest section with s_i >= len, except that with three or more
// sections lengths between s_(N-1) and s_N go to section N-1, which is HFM's
// "else the middle section" for N = 3.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hybridstore/format/placement_key.h"
#include "hybridstore/sections/section_config.h"

namespace hybridstore {

struct SectionRule {
  std::optional<int64_t> pool;
  std::optional<std::string> nspace;
  std::optional<std::string> collection;
  std::optional<std::string> prefix;
  int target;  // section index, SectionRouter::kBypass or SectionRouter::kAuto
};

class SectionRouter {
 public:
  static constexpr int kBypass = -1;
  static constexpr int kAuto = -2;

  SectionRouter() = default;

  // Returns 0, or -EINVAL with *error naming the rule and what is wrong.
  static int make(const std::vector<SectionSpec>& sections, uint32_t block_size,
                  std::string_view rules_text, SectionRouter* out, std::string* error);

  // Section index for an object of `bytes`, or kBypass.
  int route(const ObjectPlacementKey& key, uint64_t bytes) const;
  // Dynamic mapping only.
  int route_by_size(uint64_t bytes) const;

  const std::vector<SectionRule>& rules() const { return rules_; }
  // Non-bypass sections ordered by extent size (the order used for fallback).
  const std::vector<int>& by_size() const { return by_size_; }

 private:
  std::vector<SectionRule> rules_;
  std::vector<int> by_size_;
  std::vector<uint32_t> extent_blocks_;  // indexed like by_size_
  std::vector<bool> bypass_;             // per section
  uint32_t block_size_ = 1024;
};

// Formats rules back to the option's text form (canonical, round-trips).
std::string format_section_rules(const std::vector<SectionRule>& rules,
                                 const std::vector<SectionSpec>& sections);

}  // namespace hybridstore
