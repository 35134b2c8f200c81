#include "hybridstore/store/storage_hooks.h"

#include <mutex>

namespace hybridstore {

namespace {

std::mutex hooks_mutex;
std::shared_ptr<StorageHooks> installed_hooks;

}  // namespace

void set_storage_hooks(std::shared_ptr<StorageHooks> hooks) {
  std::lock_guard<std::mutex> l(hooks_mutex);
  installed_hooks = std::move(hooks);
}

std::shared_ptr<StorageHooks> storage_hooks() {
  std::lock_guard<std::mutex> l(hooks_mutex);
  return installed_hooks;
}

std::string option_needing_storage_hooks(const Config& cfg) {
  // Compared by value, not by "was set": `--set hybridstore_debug_powercut_tear=false`
  // asks for nothing a product store cannot do.
  static const Config defaults;
  for (const auto& o : option_registry()) {
    if (o.needs_storage_hooks && cfg.get_text(o.name) != defaults.get_text(o.name))
      return o.name;
  }
  return {};
}

}  // namespace hybridstore
