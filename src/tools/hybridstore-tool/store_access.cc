#include "store_access.h"

#include <cstdio>
#include <cstring>

namespace hybridstore::tool {

std::unique_ptr<HybridStore> mount_store(const GlobalArgs& args) {
  if (!args.require_path()) return nullptr;
  Config cfg;
  if (!args.load_config(&cfg)) return nullptr;
  auto store = std::make_unique<HybridStore>(args.path, cfg);
  std::string err;
  if (int r = store->mount(&err); r < 0) {
    fprintf(stderr, "hybridstore-tool: cannot mount %s: %s\n", args.path.c_str(), err.c_str());
    return nullptr;
  }
  return store;
}

int fail(const std::string& what, int err) {
  fprintf(stderr, "hybridstore-tool: %s: %s\n", what.c_str(), strerror(-err));
  return 1;
}

int fail(const std::string& what) {
  fprintf(stderr, "hybridstore-tool: %s\n", what.c_str());
  return 1;
}

}  // namespace hybridstore::tool
