// The hybridstore_* options in Ceph's option table.
//
// Built into Ceph's common library (ceph-integrate adds it there, with the
// engine's option registry), and called from Ceph's build_options(), so
// every Ceph daemon and tool knows the options: ceph.conf [osd] and [osd.N]
// sections, CEPH_ARGS, the command line and the mon's config database reach
// them, and `ceph-conf`/`config show` list them. The table is made from the
// engine's one registry at start-up, so it can never disagree with it.
//
// The registry is a function-local static (hscommon/config.cc), so it is built
// on first use even though Ceph builds its table during static
// initialisation.
#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

#include "common/options.h"

#include "hscommon/config.h"

namespace {

using hybridstore::OptionSpec;
using hybridstore::OptionType;

Option::type_t ceph_type(OptionType t) {
  switch (t) {
    case OptionType::kBool: return Option::TYPE_BOOL;
    case OptionType::kInt: return Option::TYPE_INT;
    case OptionType::kSize: return Option::TYPE_SIZE;
    case OptionType::kDouble: return Option::TYPE_FLOAT;
    case OptionType::kString: return Option::TYPE_STR;
  }
  return Option::TYPE_STR;
}

// The registry's values are text the engine's parser accepts ("4K", "true");
// Ceph wants typed values.
void set_typed(const OptionSpec& spec, const std::string& text, Option::value_t* out) {
  switch (spec.type) {
    case OptionType::kBool: {
      bool b = false;
      hybridstore::parse_bool(text, &b);
      *out = b;
      return;
    }
    case OptionType::kInt:
      *out = static_cast<int64_t>(std::stoll(text));
      return;
    case OptionType::kSize: {
      uint64_t v = 0;
      hybridstore::parse_size(text, &v);
      *out = Option::size_t{static_cast<std::size_t>(v)};
      return;
    }
    case OptionType::kDouble:
      *out = std::stod(text);
      return;
    case OptionType::kString:
      *out = text;
      return;
  }
}

Option make_option(const OptionSpec& spec) {
  const bool debug = spec.name.rfind("hybridstore_debug_", 0) == 0;
  // Tentacle's Option takes its name by rvalue: a copy binds in every release.
  Option o(std::string(spec.name), ceph_type(spec.type), debug ? Option::LEVEL_DEV : Option::LEVEL_ADVANCED);
  set_typed(spec, spec.default_value, &o.value);
  o.set_description(spec.description.c_str());
  if (spec.mkfs_only)
    o.set_flag(Option::FLAG_CREATE)
        .set_long_description("Fixed when the store is created (mkfs); the store keeps the value it was made with.");
  if (!spec.min.empty()) set_typed(spec, spec.min, &o.min);
  if (!spec.max.empty()) set_typed(spec, spec.max, &o.max);
  if (!spec.allowed.empty()) {
    std::vector<const char*> allowed;
    for (const auto& a : spec.allowed) allowed.push_back(a.c_str());
    o.set_enum_allowed(allowed);
  }
  if (spec.power_of_two) {
    std::string name = spec.name;
    o.validator = [name](std::string* value, std::string* error) {
      uint64_t v = 0;
      if (hybridstore::parse_size(*value, &v) && v != 0 && (v & (v - 1)) == 0) return 0;
      *error = name + " must be a power of two";
      return -EINVAL;
    };
  }
  o.add_tag("hybridstore");
  return o;
}

}  // namespace

std::vector<Option> get_hybridstore_options() {
  std::vector<Option> out;
  for (const auto& spec : hybridstore::option_registry()) out.push_back(make_option(spec));
  // The adapter's own, BlueStore's bluestore_debug_inject_read_err for this
  // store: Ceph's standalone qa (ceph-helpers.sh inject_eio) sets
  // <store type>_debug_inject_read_err on a running OSD.
  Option eio("hybridstore_debug_inject_read_err", Option::TYPE_BOOL, Option::LEVEL_DEV);
  eio.set_default(false);
  eio.set_description("objects marked by the OSD's injectdataerr / injectmdataerr commands fail their data / "
                      "metadata reads with EIO while this is true");
  eio.set_flag(Option::FLAG_RUNTIME);
  eio.add_tag("hybridstore");
  out.push_back(std::move(eio));
  // As bluestore_cache_autotune: whether an OSD's store sizes its caches
  // from osd_memory_target when hybridstore_memory_target is not set.
  Option autotune("hybridstore_cache_autotune", Option::TYPE_BOOL, Option::LEVEL_ADVANCED);
  autotune.set_default(true);
  autotune.set_description("in a ceph-osd whose hybridstore_memory_target is 0, give the store osd_memory_target "
                           "as its memory target: the onode cache, the RocksDB block cache and the data cache "
                           "are resized to keep the process's heap near it (docs/memory.md)");
  autotune.set_flag(Option::FLAG_RUNTIME);
  autotune.add_tag("hybridstore");
  out.push_back(std::move(autotune));
  return out;
}
