// The registry of hybridstore_* options, and a Config holding their values.
//
// The product's options are built in (src/hsoptions/). Test-only
// machinery (fault injection, device timing models) adds its own table at
// startup through register_option_table, so a product binary does not know
// those options at all: setting one there is an unknown option, not a
// silently ignored one.
//
// Every option has a name, a type, a default, optional bounds or allowed
// values, and a description. Tools, the bench and the Ceph adapter read the
// same registry: an INI file (`--conf`, section [hybridstore]; [global] and
// [osd] are read first so a ceph.conf works as is) and `--set key=value`
// overrides. Spaces in names are read as underscores, as Ceph does. A value
// that does not parse, is out of bounds or is not allowed is rejected with the
// option's name in the message.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace hybridstore {

enum class OptionType { kBool, kInt, kSize, kDouble, kString };

struct OptionSpec {
  std::string name;
  OptionType type;
  std::string default_value;
  std::string description;
  // Bounds for numeric types, inclusive; empty means unbounded.
  std::string min;
  std::string max;
  // For strings: the permitted values; empty means any.
  std::vector<std::string> allowed;
  // Fixed when the store is created; the superblock keeps the value used.
  bool mkfs_only = false;
  // Sizes and ints that must be a power of two.
  bool power_of_two = false;
  // Honoured only by storage hooks (store/storage_hooks.h): the store
  // refuses to open with it away from its default when no hooks are
  // installed. Set for every option of a table registered as test-only.
  bool needs_storage_hooks = false;
};

using OptionTable = void (*)(std::vector<OptionSpec>*);

// The product's tables, one per component, in registry order. Defined above
// this library, in src/hsoptions/ (which hscommon links), so the registry
// starts complete on its first use without naming a component here.
const std::vector<OptionTable>& product_option_tables();

// Adds a table's options to the registry, each marked needs_storage_hooks
// when `test_only`. Call at the start of main, before any Config is made or
// another thread reads options; a table registered twice is added once, and
// a name already registered is a logic_error.
void register_option_table(OptionTable table, bool test_only);

// Built-in options, then registered tables, in order. A deque: registering
// a table leaves pointers to earlier options valid.
const std::deque<OptionSpec>& option_registry();
const OptionSpec* find_option(std::string_view name);

// "64K", "8G", "4KiB", "1048576" -> bytes. False on garbage or overflow.
bool parse_size(std::string_view s, uint64_t* out);
bool parse_bool(std::string_view s, bool* out);
std::string format_size(uint64_t bytes);

class Config {
 public:
  Config();  // every option at its default

  // Each returns 0, or -EINVAL / -ENOENT with *error naming the option.
  int set(std::string_view name, std::string_view value, std::string* error);
  int set_from_arg(std::string_view key_eq_value, std::string* error);  // "k=v"
  int load_ini(const std::string& path, std::string* error);
  int load_ini_text(std::string_view text, const std::string& source, std::string* error);

  bool get_bool(std::string_view name) const;
  int64_t get_int(std::string_view name) const;
  uint64_t get_size(std::string_view name) const;
  double get_double(std::string_view name) const;
  const std::string& get_str(std::string_view name) const;
  // The value as text, normalized (sizes in bytes).
  std::string get_text(std::string_view name) const;
  bool is_default(std::string_view name) const;

  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  const OptionSpec& spec(std::string_view name) const;
  const std::string& value_of(const OptionSpec& o) const;
  std::map<std::string, std::string> values_;  // normalized text
  std::map<std::string, bool> explicit_;
};

std::string normalize_option_name(std::string_view name);

}  // namespace hybridstore
