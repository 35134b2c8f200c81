#include "hybridstore/sections/section_rules.h"
#include "hscommon/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>

namespace hybridstore {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool percent_decode(std::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;
    int hi = hex_value(in[i + 1]), lo = hex_value(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

std::string percent_encode(std::string_view in) {
  std::string out;
  for (char c : in) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == ';' || c == '&' || c == '=' || c == '%' || isspace(u) || u < 0x20 || u >= 0x7f)
      out += fmt::format("%{:02X}", u);
    else
      out.push_back(c);
  }
  return out;
}

bool parse_i64(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 19) return false;
  bool neg = false;
  if (s[0] == '-') {
    neg = true;
    s.remove_prefix(1);
    if (s.empty()) return false;
  }
  int64_t v = 0;
  for (char c : s) {
    if (!isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + (c - '0');
  }
  *out = neg ? -v : v;
  return true;
}

bool starts_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(0, p.size()) == p;
}

}  // namespace

int SectionRouter::make(const std::vector<SectionSpec>& sections, uint32_t block_size,
                        std::string_view rules_text, SectionRouter* out, std::string* error) {
  SectionRouter r;
  r.block_size_ = block_size;
  for (size_t i = 0; i < sections.size(); ++i) {
    r.bypass_.push_back(sections[i].bypass());
    if (!sections[i].bypass()) r.by_size_.push_back(static_cast<int>(i));
  }
  std::stable_sort(r.by_size_.begin(), r.by_size_.end(), [&](int a, int b) {
    return sections[a].extent_blocks < sections[b].extent_blocks;
  });
  for (int i : r.by_size_) r.extent_blocks_.push_back(sections[i].extent_blocks);

  size_t rule_no = 0;
  size_t b = 0;
  rules_text = trim(rules_text);
  while (b <= rules_text.size() && !rules_text.empty()) {
    size_t e = rules_text.find(';', b);
    std::string_view text =
        trim(rules_text.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b));
    b = e == std::string_view::npos ? rules_text.size() + 1 : e + 1;
    if (text.empty()) continue;
    ++rule_no;
    size_t eq = text.rfind('=');
    if (eq == std::string_view::npos) {
      *error = fmt::format("rule {} '{}': missing '=<section>'", rule_no, text);
      return -EINVAL;
    }
    std::string_view target = trim(text.substr(eq + 1));
    std::string_view lhs = trim(text.substr(0, eq));
    SectionRule rule;
    if (target == "bypass") {
      rule.target = kBypass;
    } else if (target == "auto") {
      rule.target = kAuto;
    } else {
      rule.target = kAuto - 1;
      for (size_t i = 0; i < sections.size(); ++i)
        if (sections[i].name == target)
          rule.target = sections[i].bypass() ? kBypass : static_cast<int>(i);
      if (rule.target == kAuto - 1) {
        *error = fmt::format("rule {} '{}': no section named '{}'", rule_no, text, target);
        return -EINVAL;
      }
    }
    if (lhs.empty()) {
      *error = fmt::format("rule {} '{}': no match before '='", rule_no, text);
      return -EINVAL;
    }
    size_t mb = 0;
    while (mb <= lhs.size()) {
      size_t me = lhs.find('&', mb);
      std::string_view m =
          trim(lhs.substr(mb, me == std::string_view::npos ? std::string_view::npos : me - mb));
      mb = me == std::string_view::npos ? lhs.size() + 1 : me + 1;
      std::string value;
      auto take = [&](std::string_view key, std::optional<std::string>* slot) {
        if (slot->has_value()) return false;
        if (!percent_decode(m.substr(key.size()), &value)) return false;
        *slot = value;
        return true;
      };
      bool ok;
      if (starts_with(m, "pool:")) {
        int64_t p;
        ok = !rule.pool.has_value() && parse_i64(m.substr(5), &p);
        if (ok) rule.pool = p;
      } else if (starts_with(m, "ns:")) {
        ok = take("ns:", &rule.nspace);
      } else if (starts_with(m, "coll:")) {
        ok = take("coll:", &rule.collection);
      } else if (starts_with(m, "prefix:")) {
        ok = take("prefix:", &rule.prefix);
      } else {
        *error = fmt::format(
            "rule {} '{}': unknown match '{}' (expected pool:, ns:, coll: or prefix:)", rule_no,
            text, m);
        return -EINVAL;
      }
      if (!ok) {
        *error = fmt::format("rule {} '{}': bad or repeated match '{}'", rule_no, text, m);
        return -EINVAL;
      }
    }
    r.rules_.push_back(std::move(rule));
  }
  *out = std::move(r);
  return 0;
}

int SectionRouter::route_by_size(uint64_t bytes) const {
  size_t n = by_size_.size();
  if (n == 0) return kBypass;
  uint64_t len = (bytes + block_size_ - 1) / block_size_;
  if (len <= extent_blocks_.front()) return by_size_.front();
  if (len >= extent_blocks_.back()) return by_size_.back();
  size_t i = static_cast<size_t>(
      std::lower_bound(extent_blocks_.begin(), extent_blocks_.end(), len) -
      extent_blocks_.begin());
  if (n >= 3 && i == n - 1) i = n - 2;
  return by_size_[i];
}

int SectionRouter::route(const ObjectPlacementKey& key, uint64_t bytes) const {
  for (const auto& r : rules_) {
    if (r.pool && *r.pool != key.pool) continue;
    if (r.nspace && *r.nspace != key.nspace) continue;
    if (r.collection && *r.collection != key.collection) continue;
    if (r.prefix && !starts_with(key.name, *r.prefix)) continue;
    if (r.target == kAuto) break;
    return r.target;
  }
  return route_by_size(bytes);
}

std::string format_section_rules(const std::vector<SectionRule>& rules,
                                 const std::vector<SectionSpec>& sections) {
  std::string out;
  for (const auto& r : rules) {
    if (!out.empty()) out += "; ";
    std::string lhs;
    auto add = [&](const std::string& m) {
      if (!lhs.empty()) lhs += '&';
      lhs += m;
    };
    if (r.pool) add(fmt::format("pool:{}", *r.pool));
    if (r.nspace) add("ns:" + percent_encode(*r.nspace));
    if (r.collection) add("coll:" + percent_encode(*r.collection));
    if (r.prefix) add("prefix:" + percent_encode(*r.prefix));
    std::string target = r.target == SectionRouter::kBypass ? "bypass"
                         : r.target == SectionRouter::kAuto ? "auto"
                                                            : sections[r.target].name;
    out += lhs + "=" + target;
  }
  return out;
}

}  // namespace hybridstore
