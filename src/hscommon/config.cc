#include "hscommon/config.h"
#include "hscommon/text.h"

#include <cerrno>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

namespace hybridstore {

namespace {

struct Registry {
  std::deque<OptionSpec> specs;
  std::vector<OptionTable> tables;
};

Registry& registry() {
  static Registry r = [] {
    Registry built;
    for (OptionTable t : product_option_tables()) {
      std::vector<OptionSpec> v;
      t(&v);
      built.specs.insert(built.specs.end(), v.begin(), v.end());
      built.tables.push_back(t);
    }
    return built;
  }();
  return r;
}

}  // namespace

void register_option_table(OptionTable table, bool test_only) {
  Registry& r = registry();
  for (OptionTable t : r.tables)
    if (t == table) return;
  std::vector<OptionSpec> v;
  table(&v);
  for (auto& o : v) {
    if (find_option(o.name)) throw std::logic_error("option " + o.name + " registered twice");
    o.needs_storage_hooks = o.needs_storage_hooks || test_only;
  }
  r.specs.insert(r.specs.end(), v.begin(), v.end());
  r.tables.push_back(table);
}

const std::deque<OptionSpec>& option_registry() { return registry().specs; }

const OptionSpec* find_option(std::string_view name) {
  std::string n = normalize_option_name(name);
  for (const auto& o : option_registry())
    if (o.name == n) return &o;
  return nullptr;
}

std::string normalize_option_name(std::string_view name) {
  std::string n(name);
  for (auto& c : n)
    if (c == ' ' || c == '-') c = '_';
  return n;
}

bool parse_size(std::string_view s, uint64_t* out) {
  size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  if (i == s.size() || s[i] < '0' || s[i] > '9') return false;
  uint64_t v = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    if (v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + static_cast<uint64_t>(s[i] - '0');
  }
  std::string suffix;
  for (; i < s.size(); ++i)
    if (s[i] != ' ') suffix.push_back(static_cast<char>(toupper(s[i])));
  int shift = 0;
  if (suffix.empty() || suffix == "B") shift = 0;
  else if (suffix == "K" || suffix == "KB" || suffix == "KIB") shift = 10;
  else if (suffix == "M" || suffix == "MB" || suffix == "MIB") shift = 20;
  else if (suffix == "G" || suffix == "GB" || suffix == "GIB") shift = 30;
  else if (suffix == "T" || suffix == "TB" || suffix == "TIB") shift = 40;
  else return false;
  if (shift && v > (UINT64_MAX >> shift)) return false;
  *out = v << shift;
  return true;
}

bool parse_bool(std::string_view s, bool* out) {
  std::string l(s);
  for (auto& c : l) c = static_cast<char>(tolower(c));
  if (l == "true" || l == "1" || l == "yes" || l == "on") *out = true;
  else if (l == "false" || l == "0" || l == "no" || l == "off") *out = false;
  else return false;
  return true;
}

std::string format_size(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  if (u == 0) return fmt::format("{} B", b);
  return fmt::format("{:.2f} {}", v, units[u]);
}

namespace {

bool parse_int(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  try {
    size_t pos;
    long long v = std::stoll(std::string(s), &pos, 10);
    if (pos != s.size()) return false;
    *out = v;
    return true;
  } catch (...) {
    return false;
  }
}

bool parse_double(std::string_view s, double* out) {
  if (s.empty()) return false;
  try {
    size_t pos;
    double v = std::stod(std::string(s), &pos);
    if (pos != s.size() || !std::isfinite(v)) return false;
    *out = v;
    return true;
  } catch (...) {
    return false;
  }
}

bool is_pow2(uint64_t v) { return v && !(v & (v - 1)); }

// Validates and normalizes `value` for `o`; empty return plus *error on failure.
bool normalize_value(const OptionSpec& o, std::string_view value, std::string* norm,
                     std::string* error) {
  std::string v(trim(value));
  switch (o.type) {
    case OptionType::kBool: {
      bool b;
      if (!parse_bool(v, &b)) {
        *error = fmt::format("{}: '{}' is not a boolean (true/false)", o.name, v);
        return false;
      }
      *norm = b ? "true" : "false";
      return true;
    }
    case OptionType::kInt: {
      int64_t x, lo, hi;
      if (!parse_int(v, &x)) {
        *error = fmt::format("{}: '{}' is not an integer", o.name, v);
        return false;
      }
      if (!o.min.empty() && parse_int(o.min, &lo) && x < lo) {
        *error = fmt::format("{}: {} is below the minimum {}", o.name, x, o.min);
        return false;
      }
      if (!o.max.empty() && parse_int(o.max, &hi) && x > hi) {
        *error = fmt::format("{}: {} is above the maximum {}", o.name, x, o.max);
        return false;
      }
      if (o.power_of_two && (x <= 0 || !is_pow2(static_cast<uint64_t>(x)))) {
        *error = fmt::format("{}: {} is not a power of two", o.name, x);
        return false;
      }
      *norm = std::to_string(x);
      return true;
    }
    case OptionType::kSize: {
      uint64_t x, lo, hi;
      if (!parse_size(v, &x)) {
        *error = fmt::format("{}: '{}' is not a size (e.g. 4096, 64K, 8G)", o.name, v);
        return false;
      }
      if (!o.min.empty() && parse_size(o.min, &lo) && x < lo) {
        *error = fmt::format("{}: {} is below the minimum {}", o.name, v, o.min);
        return false;
      }
      if (!o.max.empty() && parse_size(o.max, &hi) && x > hi) {
        *error = fmt::format("{}: {} is above the maximum {}", o.name, v, o.max);
        return false;
      }
      if (o.power_of_two && !is_pow2(x)) {
        *error = fmt::format("{}: {} is not a power of two", o.name, v);
        return false;
      }
      *norm = std::to_string(x);
      return true;
    }
    case OptionType::kDouble: {
      double x, lo, hi;
      if (!parse_double(v, &x)) {
        *error = fmt::format("{}: '{}' is not a number", o.name, v);
        return false;
      }
      if (!o.min.empty() && parse_double(o.min, &lo) && x < lo) {
        *error = fmt::format("{}: {} is below the minimum {}", o.name, v, o.min);
        return false;
      }
      if (!o.max.empty() && parse_double(o.max, &hi) && x > hi) {
        *error = fmt::format("{}: {} is above the maximum {}", o.name, v, o.max);
        return false;
      }
      *norm = v;
      return true;
    }
    case OptionType::kString: {
      if (!o.allowed.empty()) {
        bool ok = false;
        for (const auto& a : o.allowed) ok |= (a == v);
        if (!ok) {
          std::string list;
          for (const auto& a : o.allowed) list += (list.empty() ? "" : ", ") + a;
          *error = fmt::format("{}: '{}' is not one of the permitted values: {}", o.name, v, list);
          return false;
        }
      }
      *norm = v;
      return true;
    }
  }
  return false;
}

}  // namespace

Config::Config() {
  for (const auto& o : option_registry()) {
    std::string norm, err;
    if (!normalize_value(o, o.default_value, &norm, &err))
      throw std::logic_error("bad default for option " + o.name + ": " + err);
    values_[o.name] = norm;
  }
}

const std::string& Config::value_of(const OptionSpec& o) const {
  auto it = values_.find(o.name);
  if (it == values_.end())
    throw std::logic_error("option " + o.name + " was registered after this Config was made");
  return it->second;
}

const OptionSpec& Config::spec(std::string_view name) const {
  const OptionSpec* o = find_option(name);
  if (!o) throw std::logic_error("unknown option " + std::string(name));
  return *o;
}

int Config::set(std::string_view name, std::string_view value, std::string* error) {
  const OptionSpec* o = find_option(name);
  if (!o) {
    *error = fmt::format("unknown option '{}'", name);
    return -ENOENT;
  }
  std::string norm;
  if (!normalize_value(*o, value, &norm, error)) return -EINVAL;
  values_[o->name] = norm;
  explicit_[o->name] = true;
  return 0;
}

int Config::set_from_arg(std::string_view kv, std::string* error) {
  size_t eq = kv.find('=');
  if (eq == std::string_view::npos) {
    *error = fmt::format("'{}' is not of the form key=value", kv);
    return -EINVAL;
  }
  return set(std::string(trim(kv.substr(0, eq))), kv.substr(eq + 1), error);
}

int Config::load_ini(const std::string& path, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = fmt::format("cannot read config file {}", path);
    return -ENOENT;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return load_ini_text(ss.str(), path, error);
}

int Config::load_ini_text(std::string_view text, const std::string& source, std::string* error) {
  // Sections are applied in the order Ceph resolves them: [global], [osd], then
  // [hybridstore], each overriding the one before.
  std::map<std::string, std::vector<std::tuple<int, std::string, std::string>>> by_section;
  std::string section;
  int lineno = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view raw = text.substr(pos, nl == std::string_view::npos ? text.size() - pos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++lineno;
    std::string line(trim(raw));
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line[0] == '[') {
      if (line.back() != ']') {
        *error = fmt::format("{}:{}: malformed section header '{}'", source, lineno, line);
        return -EINVAL;
      }
      section = std::string(trim(std::string_view(line).substr(1, line.size() - 2)));
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string::npos) {
      *error = fmt::format("{}:{}: expected 'key = value', got '{}'", source, lineno, line);
      return -EINVAL;
    }
    std::string key = normalize_option_name(std::string(trim(std::string_view(line).substr(0, eq))));
    std::string value(trim(std::string_view(line).substr(eq + 1)));
    // Trailing comments, as ceph.conf allows.
    for (char c : {'#', ';'}) {
      size_t h = value.find(c);
      if (h != std::string::npos) value = std::string(trim(std::string_view(value).substr(0, h)));
    }
    by_section[section].emplace_back(lineno, key, value);
  }
  for (const char* s : {"global", "osd", "hybridstore"}) {
    for (const auto& [ln, key, value] : by_section[s]) {
      // ceph.conf carries options of other daemons: only ours matter, but an
      // unknown hybridstore_* key is a typo worth reporting.
      if (key.rfind("hybridstore_", 0) != 0) continue;
      std::string err;
      if (int r = set(key, value, &err); r < 0) {
        *error = fmt::format("{}:{}: {}", source, ln, err);
        return r;
      }
    }
  }
  return 0;
}

bool Config::get_bool(std::string_view name) const {
  const auto& o = spec(name);
  if (o.type != OptionType::kBool) throw std::logic_error(o.name + " is not a bool");
  return value_of(o) == "true";
}
int64_t Config::get_int(std::string_view name) const {
  const auto& o = spec(name);
  if (o.type != OptionType::kInt) throw std::logic_error(o.name + " is not an int");
  return std::stoll(value_of(o));
}
uint64_t Config::get_size(std::string_view name) const {
  const auto& o = spec(name);
  if (o.type != OptionType::kSize) throw std::logic_error(o.name + " is not a size");
  return std::stoull(value_of(o));
}
double Config::get_double(std::string_view name) const {
  const auto& o = spec(name);
  if (o.type != OptionType::kDouble) throw std::logic_error(o.name + " is not a double");
  return std::stod(value_of(o));
}
const std::string& Config::get_str(std::string_view name) const {
  const auto& o = spec(name);
  if (o.type != OptionType::kString) throw std::logic_error(o.name + " is not a string");
  return value_of(o);
}
std::string Config::get_text(std::string_view name) const { return value_of(spec(name)); }
bool Config::is_default(std::string_view name) const {
  return explicit_.find(spec(name).name) == explicit_.end();
}

}  // namespace hybridstore
