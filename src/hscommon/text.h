// Small text helpers shared by the option registry and the section parsers.
#pragma once
#include <cctype>
#include <string_view>

namespace hybridstore {

// `s` without leading and trailing whitespace; a view into the caller's text.
inline std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace hybridstore
