// kvfs ls | stat | log-dump | export OUTDIR: the KV file system under a
// device store's RocksDB, read from its SSD without mounting and without
// writing (docs/kvfs.md 5.5), as ceph-bluestore-tool's bluefs-export and
// bluefs-log-dump show BlueFS. The store must not be mounted.
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "hscommon/config.h"
#include "hybridstore/store/hybrid_store.h"
#include "store_access.h"
#include "tool_command.h"

namespace hybridstore::tool {
namespace {

std::string ranges(const std::vector<DeviceRange>& v) {
  std::string s;
  for (const auto& [off, len] : v) {
    char b[64];
    snprintf(b, sizeof b, "%s%#llx+%#llx", s.empty() ? "" : " ", (unsigned long long)off, (unsigned long long)len);
    s += b;
  }
  return s.empty() ? "-" : s;
}

int inspect(const GlobalArgs& args, const KvFsInspectRequest& req, KvFsView* view,
            std::vector<std::string>* exported) {
  if (!args.require_path()) return 2;
  Config cfg;
  if (!args.load_config(&cfg)) return 2;
  std::string err;
  if (int r = HybridStore::kvfs_inspect(args.path, cfg, req, view, exported, &err); r < 0) {
    fprintf(stderr, "hybridstore-tool: kvfs: %s (%s)\n", err.c_str(), strerror(-r));
    return 1;
  }
  if (!view->damage.empty())
    fprintf(stderr, "hybridstore-tool: kvfs: the log stops at damage; what follows is what came before it: %s\n",
            view->damage.c_str());
  return 0;
}

void print_ls(const KvFsView& v) {
  printf("%-6s %-24s %12s %8s  %s\n", "ino", "file", "size", "extents", "first extent");
  for (const KvFsFileView& f : v.files) {
    const std::string first =
        f.extents.empty() ? "-" : ranges(std::vector<DeviceRange>(f.extents.begin(), f.extents.begin() + 1));
    printf("%-6llu %-24s %12llu %8zu  %s%s\n", (unsigned long long)f.ino, (f.dir + "/" + f.name).c_str(),
           (unsigned long long)f.size, f.extents.size(), first.c_str(), f.inline_tail ? " (tail inline)" : "");
  }
  printf("%zu files\n", v.files.size());
}

void print_stat(const KvFsView& v) {
  printf("device: %s (%s)\n", v.device.c_str(), format_size(v.device_size).c_str());
  printf("kvfs uuid: %s\n", v.kvfs_uuid.c_str());
  printf("block %llu, alloc unit %llu, lend unit %llu, head %llu\n", (unsigned long long)v.block,
         (unsigned long long)v.alloc_unit, (unsigned long long)v.lend_unit, (unsigned long long)v.head);
  for (size_t i = 0; i < v.slots.size(); ++i) {
    const KvFsSlotView& s = v.slots[i];
    printf("slot %zu:%s ", i, static_cast<int>(i) == v.current_slot ? " (current)" : "");
    if (s.valid)
      printf("generation %llu, log %llu from seq %llu at %#llx+%#llx\n", (unsigned long long)s.generation,
             (unsigned long long)s.log_id, (unsigned long long)s.log_first_seq,
             (unsigned long long)s.log_segment.first, (unsigned long long)s.log_segment.second);
    else
      printf("%s\n", s.blank ? "never written" : ("invalid: " + s.why).c_str());
  }
  printf("chunks: %s\n", ranges(v.chunks).c_str());
  printf("owned %s, used %s, free %s\n", format_size(v.owned).c_str(), format_size(v.used).c_str(),
         format_size(v.free).c_str());
  uint64_t ring = 0;
  for (const auto& r : v.journal) ring += r.second;
  printf("journal ring: %s (%s)\n", format_size(ring).c_str(), ranges(v.journal).c_str());
  printf("log segments: %s\n", ranges(v.log_segments).c_str());
  printf("files: %zu\n", v.files.size());
}

ToolCommand kvfs_cmd(
    "kvfs",
    "the KV file system under a device store's RocksDB, read from the SSD without writing (the store must not "
    "be mounted): ls, stat, log-dump, export",
    [](CLI::App* sub, GlobalArgs* args) {
      sub->require_subcommand(1);
      CLI::App* ls = sub->add_subcommand("ls", "list the kvfs's files: inode, name, size, extents");
      ls->fallthrough();
      CLI::App* stat = sub->add_subcommand(
          "stat", "print the superblock slots, geometry, chunks, owned/used/free bytes, the journal ring and the "
                  "log's segments");
      stat->fallthrough();
      CLI::App* log = sub->add_subcommand("log-dump", "print every record of the kvfs's metadata log, in order");
      log->fallthrough();
      CLI::App* exp = sub->add_subcommand(
          "export", "copy every kvfs file to OUTDIR/<dir>/<name> (then `ldb --db=OUTDIR/db` reads RocksDB)");
      exp->fallthrough();
      auto outdir = std::make_shared<std::string>();
      exp->add_option("outdir", *outdir, "directory to copy the files into")->required();
      return [args, ls, stat, log, exp, outdir]() -> int {
        KvFsInspectRequest req;
        req.log = log->parsed();
        if (exp->parsed()) req.export_dir = *outdir;
        KvFsView v;
        std::vector<std::string> exported;
        if (int r = inspect(*args, req, &v, &exported); r != 0) return r;
        if (ls->parsed()) print_ls(v);
        if (stat->parsed()) print_stat(v);
        if (log->parsed())
          for (const std::string& l : v.log) printf("%s\n", l.c_str());
        if (exp->parsed()) {
          for (const std::string& e : exported) printf("%s/%s\n", outdir->c_str(), e.c_str());
        }
        // A log that stopped at damage is shown, but the answer is not clean.
        return v.damage.empty() ? 0 : 1;
      };
    });

}  // namespace
}  // namespace hybridstore::tool
