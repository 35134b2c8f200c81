// prime-osd-dir: a store directory made again from the devices' labels
// (docs/kvfs.md 5.5), for an OSD whose data directory is a fresh tmpfs.
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "hybridstore/store/hybrid_store.h"
#include "tool_command.h"

namespace hybridstore::tool {
namespace {

ToolCommand prime_cmd(
    "prime-osd-dir",
    "write into --path what a store whose RocksDB is on its SSD needs to mount (type, fsid, Ceph's meta files, "
    "keyring, device links), from the devices' labels; never writes to a device",
    [](CLI::App* sub, GlobalArgs* args) {
      auto devs = std::make_shared<std::vector<std::string>>();
      auto ssd_only = std::make_shared<bool>(false);
      sub->add_option("--dev", *devs,
                      "the store's SSD device first, then any other tier's (repeatable); a tier not given is "
                      "found through the path the SSD label remembers for it")
          ->required();
      sub->add_flag("--ssd-only", *ssd_only, "link the SSD only, even when another tier's device is not found");
      return [args, devs, ssd_only] {
        if (!args->require_path()) return 2;
        PrimeRequest req;
        req.dir = args->path;
        req.devices = *devs;
        req.ssd_only = *ssd_only;
        std::vector<std::string> done;
        std::string err;
        if (int r = HybridStore::prime_dir(req, &done, &err); r < 0) {
          fprintf(stderr, "hybridstore-tool: prime-osd-dir: %s (%s)\n", err.c_str(), strerror(-r));
          return 1;
        }
        for (const auto& d : done) printf("%s/%s\n", args->path.c_str(), d.c_str());
        return 0;
      };
    });

}  // namespace
}  // namespace hybridstore::tool
