#include "hybridstore/sections/section_config.h"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <set>

#include "hscommon/config.h"
#include "hscommon/text.h"

namespace hybridstore {

const char* selection_policy_name(SelectionPolicy p) {
  return p == SelectionPolicy::kHfm ? "hfm" : "rehypar";
}

const char* hole_mode_name(HoleMode m) { return m == HoleMode::kFill ? "fill" : "clean"; }

const char* remainder_mode_name(RemainderMode m) {
  switch (m) {
    case RemainderMode::kDown: return "down";
    case RemainderMode::kTable: return "table";
    case RemainderMode::kFresh: return "fresh";
  }
  return "?";
}

SectionDefaults SectionDefaults::from_config(const Config& cfg) {
  SectionDefaults d;
  d.block_size = static_cast<uint32_t>(cfg.get_size("hybridstore_ssd_block_size"));
  d.theta_ratio = cfg.get_double("hybridstore_ssd_section_theta_ratio");
  d.policy = cfg.get_str("hybridstore_ssd_section_policy") == "hfm" ? SelectionPolicy::kHfm
                                                                    : SelectionPolicy::kReHypar;
  return d;
}

namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t b = 0;
  for (;;) {
    size_t e = s.find(sep, b);
    out.push_back(trim(s.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b)));
    if (e == std::string_view::npos) break;
    b = e + 1;
  }
  return out;
}

bool valid_name(std::string_view n) {
  if (n.empty() || n.size() > 32) return false;
  for (char c : n)
    if (!(islower(static_cast<unsigned char>(c)) || isdigit(static_cast<unsigned char>(c)) ||
          c == '_' || c == '-'))
      return false;
  return true;
}

bool parse_u32(std::string_view s, uint32_t* out) {
  if (s.empty() || s.size() > 9) return false;
  uint32_t v = 0;
  for (char c : s) {
    if (!isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + static_cast<uint32_t>(c - '0');
  }
  *out = v;
  return true;
}

// "theta4" / "theta=4" -> key "theta", value "4"; "rho1" -> key "rho1", value "".
void split_field(std::string_view f, std::string_view* key, std::string_view* value) {
  size_t eq = f.find('=');
  if (eq != std::string_view::npos) {
    *key = trim(f.substr(0, eq));
    *value = trim(f.substr(eq + 1));
    return;
  }
  for (std::string_view k : {"delta", "theta", "policy", "holes", "gaps", "remainder"}) {
    if (f.size() > k.size() && f.substr(0, k.size()) == k) {
      *key = k;
      *value = f.substr(k.size());
      return;
    }
  }
  *key = f;
  *value = {};
}

// What parse_field() has seen of the fields that may come once or have
// defaults.
struct FieldsSeen {
  bool rho = false, delta = false, theta = false;
};

// One field after the extent size: rho, delta, theta, policy, holes, gaps or
// remainder.
int parse_field(std::string_view field, const SectionDefaults& d, SectionSpec* s, FieldsSeen* seen,
                std::string* error) {
  std::string_view key, value;
  split_field(field, &key, &value);
  if ((key == "rho1" || key == "rho2" || key == "rho3") && value.empty()) {
    if (seen->rho) {
      *error = fmt::format("section '{}': rho given twice", s->name);
      return -EINVAL;
    }
    seen->rho = true;
    s->mode = key == "rho1" ? PartitionMode::kRho1
              : key == "rho2" ? PartitionMode::kRho2 : PartitionMode::kRho3;
  } else if (key == "rho") {
    uint32_t r;
    if (seen->rho || !parse_u32(value, &r) || r < 1 || r > 3) {
      *error = fmt::format("section '{}': rho must be given once as 1, 2 or 3", s->name);
      return -EINVAL;
    }
    seen->rho = true;
    s->mode = static_cast<PartitionMode>(r);
  } else if (key == "delta") {
    if (!parse_u32(value, &s->delta)) {
      *error = fmt::format("section '{}': delta '{}' is not a block count", s->name, value);
      return -EINVAL;
    }
    seen->delta = true;
  } else if (key == "theta") {
    uint32_t t;
    uint64_t tb;
    if (parse_u32(value, &t)) {
      s->theta = t;
    } else if (parse_size(value, &tb)) {
      s->theta = static_cast<uint32_t>((tb + d.block_size - 1) / d.block_size);
    } else {
      *error = fmt::format("section '{}': theta '{}' is neither blocks nor a size", s->name,
                           value);
      return -EINVAL;
    }
    if (s->theta < 1 || s->theta > s->extent_blocks) {
      *error = fmt::format("section '{}': theta must be 1..{} blocks", s->name, s->extent_blocks);
      return -EINVAL;
    }
    seen->theta = true;
  } else if ((key == "hfm" || key == "rehypar") && value.empty()) {
    s->policy = key == "hfm" ? SelectionPolicy::kHfm : SelectionPolicy::kReHypar;
  } else if (key == "policy" && (value == "hfm" || value == "rehypar")) {
    s->policy = value == "hfm" ? SelectionPolicy::kHfm : SelectionPolicy::kReHypar;
  } else if (key == "holes" && (value == "fill" || value == "clean")) {
    s->holes = value == "fill" ? HoleMode::kFill : HoleMode::kClean;
  } else if (key == "gaps" && (value == "on" || value == "off")) {
    s->fill_gaps = value == "on";
  } else if (key == "remainder" && (value == "down" || value == "table" || value == "fresh")) {
    s->remainder = value == "down" ? RemainderMode::kDown
                   : value == "table" ? RemainderMode::kTable : RemainderMode::kFresh;
  } else {
    *error = fmt::format(
        "section '{}': unknown field '{}' (expected rho1|rho2|rho3, delta<N>, theta<N>, "
        "hfm|rehypar, holes=fill|clean, gaps=on|off, remainder=down|table|fresh)",
        s->name, field);
    return -EINVAL;
  }
  return 0;
}

int parse_one(std::string_view text, const SectionDefaults& d, SectionSpec* out,
              std::string* error) {
  auto fields = split(text, ':');
  SectionSpec s;
  s.policy = d.policy;
  s.holes = d.holes;
  if (!valid_name(fields[0])) {
    *error = fmt::format("section '{}': name must be 1-32 characters of [a-z0-9_-]", fields[0]);
    return -EINVAL;
  }
  s.name = std::string(fields[0]);
  if (s.name == "auto" || s.name == "bypass") {
    *error = fmt::format("section name '{}' is reserved for mapping rules", s.name);
    return -EINVAL;
  }
  if (fields.size() < 2) {
    *error = fmt::format("section '{}': missing extent size (e.g. {}:64K:rho2)", s.name, s.name);
    return -EINVAL;
  }
  if (fields[1] == "bypass") {
    if (fields.size() > 2) {
      *error = fmt::format("section '{}': a bypass section takes no other fields", s.name);
      return -EINVAL;
    }
    s.mode = PartitionMode::kBypass;
    s.extent_blocks = 0;
    s.delta = 0;
    s.theta = 0;
    *out = s;
    return 0;
  }
  uint64_t bytes;
  if (!parse_size(fields[1], &bytes) || bytes == 0) {
    *error = fmt::format("section '{}': extent size '{}' is not a size", s.name, fields[1]);
    return -EINVAL;
  }
  if (bytes % d.block_size || !is_power_of_two(bytes / d.block_size) ||
      bytes / d.block_size < 2 || bytes / d.block_size > SegmentMap::kMaxExtentBlocks ||
      bytes > kMaxExtentBytes) {
    *error = fmt::format(
        "section '{}': extent {} must be a power-of-two number (2..{}) of {}-byte blocks, "
        "at most 1G",
        s.name, fields[1], SegmentMap::kMaxExtentBlocks, d.block_size);
    return -EINVAL;
  }
  s.extent_blocks = static_cast<uint32_t>(bytes / d.block_size);
  FieldsSeen seen;
  for (size_t i = 2; i < fields.size(); ++i)
    if (int r = parse_field(fields[i], d, &s, &seen, error); r < 0) return r;
  if (!seen.rho) {
    *error = fmt::format("section '{}': missing rho1, rho2 or rho3", s.name);
    return -EINVAL;
  }
  if (s.mode == PartitionMode::kRho3) {
    if (!seen.delta) s.delta = std::min(d.delta, s.extent_blocks);
  } else if (seen.delta) {
    *error = fmt::format("section '{}': delta applies to rho3 only", s.name);
    return -EINVAL;
  } else {
    s.delta = 0;
  }
  SegmentMap m;
  std::string merr;
  if (SegmentMap::make(s.extent_blocks, s.mode, s.delta, &m, &merr) < 0) {
    *error = fmt::format("section '{}': {}", s.name, merr);
    return -EINVAL;
  }
  if (!seen.theta) {
    double t = d.theta_ratio * s.extent_blocks;
    s.theta = t < 1 ? 1 : static_cast<uint32_t>(t);
  }
  *out = s;
  return 0;
}

}  // namespace

int parse_sections(std::string_view text, const SectionDefaults& defaults,
                   std::vector<SectionSpec>* out, std::string* error) {
  if (!is_power_of_two(defaults.block_size)) {
    *error = fmt::format("block size {} is not a power of two", defaults.block_size);
    return -EINVAL;
  }
  out->clear();
  text = trim(text);
  if (text.empty()) {
    *error = "no sections configured";
    return -EINVAL;
  }
  std::set<std::string> names;
  for (auto part : split(text, ',')) {
    SectionSpec s;
    int r = parse_one(part, defaults, &s, error);
    if (r < 0) return r;
    if (!names.insert(s.name).second) {
      *error = fmt::format("section '{}' is defined twice", s.name);
      return -EINVAL;
    }
    out->push_back(std::move(s));
  }
  if (out->size() > kMaxSections) {
    *error = fmt::format("{} sections configured; at most {}", out->size(), kMaxSections);
    return -EINVAL;
  }
  return 0;
}

std::string format_size_exact(uint64_t bytes) {
  const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (u < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return fmt::format("{}{}", bytes, units[u]);
}

std::string format_section(const SectionSpec& s, uint32_t block_size) {
  if (s.bypass()) return s.name + ":bypass";
  std::string t = fmt::format("{}:{}:{}", s.name,
                              format_size_exact(uint64_t(s.extent_blocks) * block_size),
                              partition_mode_name(s.mode));
  if (s.mode == PartitionMode::kRho3) t += fmt::format(":delta{}", s.delta);
  t += fmt::format(":theta{}:{}:holes={}:gaps={}:remainder={}", s.theta,
                   selection_policy_name(s.policy), hole_mode_name(s.holes),
                   s.fill_gaps ? "on" : "off", remainder_mode_name(s.remainder));
  return t;
}

std::string format_sections(const std::vector<SectionSpec>& v, uint32_t block_size) {
  std::string t;
  for (const auto& s : v) {
    if (!t.empty()) t += ',';
    t += format_section(s, block_size);
  }
  return t;
}

SegmentMap section_segment_map(const SectionSpec& s) {
  SegmentMap m;
  std::string err;
  SegmentMap::make(s.extent_blocks, s.mode, s.delta, &m, &err);
  return m;
}

}  // namespace hybridstore
