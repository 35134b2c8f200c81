// move-kv and move-kv-rollback: a directory store's RocksDB and commit
// journal into the KV file system on its SSD tier, and back while no
// read-write mount from the device has happened (docs/kvfs.md 7.3).
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "hybridstore/store/hybrid_store.h"
#include "tool_command.h"

namespace hybridstore::tool {
namespace {

struct MoveArgs {
  std::string verify = "files";
  std::string kvfs_size;
};

ToolCommand move_cmd(
    "move-kv",
    "move the store's RocksDB and commit journal from its directory into the KV file system on its SSD tier "
    "(the store must not be mounted); <dir>/db and <dir>/journal are kept as *.format3-moved until the first "
    "read-write mount from the device, and move-kv-rollback undoes the move until then",
    [](CLI::App* sub, GlobalArgs* args) {
      auto a = std::make_shared<MoveArgs>();
      sub->add_option("--verify", a->verify,
                      "what is checked before the move commits: files (crc32c of every copy, the default), keys "
                      "(also every key and value of both databases) or none");
      sub->add_option("--kvfs-size", a->kvfs_size,
                      "bytes of the SSD tier lent to the KV file system (a size such as 2G; default: what mkfs "
                      "would lend, and never less than the copy needs)");
      return [args, a] {
        if (!args->require_path()) return 2;
        if (a->verify != "files" && a->verify != "keys" && a->verify != "none") {
          fprintf(stderr, "hybridstore-tool: move-kv: --verify must be files, keys or none, not '%s'\n",
                  a->verify.c_str());
          return 2;
        }
        Config cfg;
        if (!args->load_config(&cfg)) return 2;
        MoveKvOptions o;
        o.verify = a->verify;
        if (!a->kvfs_size.empty()) {
          uint64_t n = 0;
          if (!parse_size(a->kvfs_size, &n) || n == 0) {
            fprintf(stderr, "hybridstore-tool: move-kv: --kvfs-size: '%s' is not a size (bytes, or with K, M, G, T)\n",
                    a->kvfs_size.c_str());
            return 2;
          }
          o.kvfs_size = n;
        }
        HybridStore store(args->path, cfg);
        MoveKvReport rep;
        std::string err;
        if (int r = store.move_kv_to_device(o, &rep, &err); r < 0) {
          fprintf(stderr, "hybridstore-tool: move-kv: %s (%s)\n", err.c_str(), strerror(-r));
          return 1;
        }
        printf("moved %llu bytes of RocksDB (%llu files) into %llu bytes of the ssd tier (verify: %s",
               static_cast<unsigned long long>(rep.db_bytes), static_cast<unsigned long long>(rep.files),
               static_cast<unsigned long long>(rep.kvfs_bytes), o.verify.c_str());
        if (o.verify == "keys") printf(", %llu keys", static_cast<unsigned long long>(rep.keys_compared));
        printf(")\n");
        for (const auto& k : rep.meta_imported) printf("meta key %s now in the ssd label\n", k.c_str());
        printf("%s/db and %s/journal are kept as *.format3-moved until the first read-write mount; "
               "move-kv-rollback undoes the move until then\n",
               args->path.c_str(), args->path.c_str());
        return 0;
      };
    });

ToolCommand rollback_cmd(
    "move-kv-rollback",
    "undo move-kv: the store's RocksDB is in its directory again; only until the first read-write mount from "
    "the device (the store must not be mounted)",
    [](CLI::App*, GlobalArgs* args) {
      return [args] {
        if (!args->require_path()) return 2;
        Config cfg;
        if (!args->load_config(&cfg)) return 2;
        HybridStore store(args->path, cfg);
        std::string err;
        if (int r = store.move_kv_rollback(&err); r < 0) {
          fprintf(stderr, "hybridstore-tool: move-kv-rollback: %s (%s)\n", err.c_str(), strerror(-r));
          return 1;
        }
        printf("store at %s keeps its RocksDB and commit journal in its directory again\n", args->path.c_str());
        return 0;
      };
    });

}  // namespace
}  // namespace hybridstore::tool
