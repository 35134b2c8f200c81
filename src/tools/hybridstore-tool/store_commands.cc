// mkfs, fsck, show-label, df.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "hscommon/config.h"
#include "hybridstore/format/store_format.h"
#include "hsio/block_device.h"
#include "hybridstore/space/tier_device.h"
#include "store_access.h"

namespace hybridstore::tool {
namespace {

ToolCommand mkfs_cmd("mkfs", "create a store (device files are created sparse when missing)",
                     [](CLI::App* sub, GlobalArgs* args) {
                       return [args] {
                         if (!args->require_path()) return 2;
                         Config cfg;
                         if (!args->load_config(&cfg)) return 2;
                         HybridStore store(args->path, cfg);
                         std::string err;
                         if (int r = store.mkfs(&err); r < 0) return fail("mkfs: " + err);
                         if (int r = store.mount(&err); r < 0) return fail("mount after mkfs: " + err);
                         printf("created store %s at %s\n", store.fsid().c_str(), args->path.c_str());
                         StoreStats st;
                         store.statfs(&st);
                         for (Tier t : st.order) {  // fastest first
                           printf("  %s: %s (%s, %s allocatable)\n", tier_name(t),
                                  st.tier[t].device.c_str(), st.tier[t].backend.c_str(),
                                  format_size(st.tier[t].total).c_str());
                         }
                         return store.umount() < 0 ? 1 : 0;
                       };
                     });

struct FsckArgs {
  bool deep = false;
  bool json = false;
};

ToolCommand fsck_cmd("fsck", "check the store's metadata (and with --deep, all data)",
                     [](CLI::App* sub, GlobalArgs* args) {
                       auto a = std::make_shared<FsckArgs>();
                       sub->add_flag("--deep", a->deep, "also read every extent and verify its checksums");
                       sub->add_flag("--json", a->json, "print the report as JSON");
                       return [args, a] {
                         auto store = mount_store(*args);
                         if (!store) return 1;
                         FsckReport rep;
                         int r = store->fsck(a->deep, &rep);
                         store->umount();
                         if (r < 0) return fail("fsck", r);
                         if (a->json) {
                           nlohmann::json j{{"errors", rep.errors},
                                            {"collections", rep.collections},
                                            {"objects", rep.objects},
                                            {"extents", rep.extents},
                                            {"extent_shards", rep.extent_shards},
                                            {"omap_entries", rep.omap_entries},
                                            {"bytes_verified", rep.bytes_verified},
                                            {"warnings", rep.warnings},
                                            {"problems", rep.problems}};
                           // RocksDB on the SSD: its KV file system's rows.
                           if (rep.kvfs_owned) {
                             j["kvfs_owned"] = rep.kvfs_owned;
                             j["kvfs_used"] = rep.kvfs_used;
                             j["kvfs_orphans"] = rep.kvfs_orphans;
                             j["kvfs_ring_records"] = rep.kvfs_ring_records;
                             j["kvfs_ring_seq"] = rep.kvfs_ring_seq;
                             j["kvfs_ring_walk_end"] = rep.kvfs_ring_walk_end;
                           }
                           printf("%s\n", j.dump(2).c_str());
                         } else {
                           for (const auto& p : rep.problems)
                             printf(p.rfind("warning: ", 0) == 0 ? "%s\n" : "error: %s\n", p.c_str());
                           printf("fsck%s: %llu collections, %llu objects, %llu extents, %llu omap entries",
                                  a->deep ? " --deep" : "", (unsigned long long)rep.collections,
                                  (unsigned long long)rep.objects, (unsigned long long)rep.extents,
                                  (unsigned long long)rep.omap_entries);
                           if (a->deep) printf(", %s verified", format_size(rep.bytes_verified).c_str());
                           printf(": %s\n", rep.errors ? (std::to_string(rep.errors) + " errors").c_str() : "clean");
                         }
                         return rep.errors ? 1 : 0;
                       };
                     });

namespace {

nlohmann::json label_json(const DeviceLabel& l) {
  nlohmann::json j = {{"fsid", uuid_to_string(l.fsid)},
                      {"role", tier_name(l.role)},
                      {"size", l.size},
                      {"format_version", l.format_version},
                      {"created_us", l.created_us},
                      {"description", l.description},
                      {"record_version", l.record_version}};
  if (l.record_version < 2) return j;
  nlohmann::json flags = nlohmann::json::array();
  if (l.flags & kLabelMkfsDone) flags.push_back("mkfs_done");
  if (l.flags & kLabelKvOnDevice) flags.push_back("kv_on_device");
  if (l.flags & kLabelKvMovedPending) flags.push_back("kv_moved_pending");
  j["generation"] = l.generation;
  j["flags"] = flags;
  j["device_kind"] = l.device_kind == DeviceKind::kNand ? "nand" : "block";
  j["slot"] = l.slot;
  j["head"] = l.head;
  if (l.flags & kLabelKvOnDevice) j["kvfs_uuid"] = uuid_to_string(l.kvfs_uuid);
  nlohmann::json tiers = nlohmann::json::array();
  for (const LabelTier& t : l.tiers)
    tiers.push_back({{"tier", tier_name(t.role)},
                     {"device_kind", t.layout.device == DeviceKind::kNand ? "nand" : "block"},
                     {"space", t.layout.space == SpaceKind::kSections ? "sections" : "extents"},
                     {"alloc_unit", t.alloc_unit},
                     {"size", t.size}});
  j["tiers"] = tiers;
  j["meta"] = l.meta;
  return j;
}

nlohmann::json copy_json(int r, const std::string& why, const DeviceLabel& l) {
  // The chosen copy is printed whole above; of each copy, what tells them apart.
  if (r == 0)
    return {{"state", "valid"}, {"record_version", l.record_version}, {"generation", l.generation},
            {"fsid", uuid_to_string(l.fsid)}};
  return {{"state", r == -EINVAL ? "absent" : r == -EOPNOTSUPP ? "newer" : "damaged"}, {"error", why}};
}

}  // namespace

ToolCommand label_cmd("show-label", "print the labels of the store's devices (works without mounting)",
                      [](CLI::App* sub, GlobalArgs* args) {
                        auto dev = std::make_shared<std::string>();
                        sub->add_option("--dev", *dev, "read one device instead of every tier's");
                        return [args, dev] {
                          std::vector<std::string> paths;
                          if (!dev->empty()) {
                            paths.push_back(*dev);
                          } else {
                            if (!args->require_path()) return 2;
                            // Every tier's device link mkfs made (block.ssd, block.hdd, block.tier2, ...).
                            for (Tier t : tier_ids(kMaxTiers)) {
                              std::string p = args->path + "/" + tier_device_link(t);
                              std::error_code ec;
                              // A link that dangles is read (and reported) too.
                              if (t == Tier::kSsd || t == Tier::kHdd ||
                                  std::filesystem::exists(std::filesystem::symlink_status(p, ec)))
                                paths.push_back(p);
                            }
                          }
                          nlohmann::json out = nlohmann::json::object();
                          int bad = 0;
                          for (const auto& p : paths) {
                            DeviceOpenOptions o;
                            o.direct_io = false;
                            o.backend = IoBackend::kPosix;
                            std::string err;
                            auto d = open_detected_device(Config(), p, o, nullptr, &err);
                            if (!d) {
                              fprintf(stderr, "hybridstore-tool: %s\n", err.c_str());
                              ++bad;
                              continue;
                            }
                            DeviceLabel l;
                            LabelPairStatus st;
                            if (read_labels(d.get(), &l, &st, &err) < 0) {
                              fprintf(stderr, "hybridstore-tool: %s: %s\n", p.c_str(), err.c_str());
                              ++bad;
                            }
                            nlohmann::json j = st.chosen ? label_json(l) : nlohmann::json::object();
                            j["device_size"] = d->size();
                            j["slot"] = st.slot;
                            if (st.chosen) j["chosen"] = std::string(1, st.chosen);
                            const std::string problem = st.problem();
                            j["state"] = !st.chosen            ? "unreadable"
                                         : !problem.empty()    ? problem
                                         : st.single_copy_v1() ? "single copy (record version 1)"
                                                               : "intact";
                            j["copies"] = {{"A", copy_json(st.a, st.why_a, st.label_a)},
                                           {"B", copy_json(st.b, st.why_b, st.label_b)}};
                            out[p] = std::move(j);
                          }
                          printf("%s\n", out.dump(2).c_str());
                          return bad ? 1 : 0;
                        };
                      });

ToolCommand df_cmd("df", "space per tier", [](CLI::App* sub, GlobalArgs* args) {
  auto json = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "print as JSON");
  return [args, json] {
    auto store = mount_store(*args);
    if (!store) return 1;
    StoreStats st;
    if (int r = store->statfs(&st); r < 0) return fail("statfs", r);
    store->umount();
    if (*json) {
      nlohmann::json j{{"objects", st.objects}, {"data_bytes", st.data_bytes}};
      j["rocksdb"] = {{"location", st.kv_on_device ? "device" : "directory"},
                      {"kvfs_owned", st.kvfs_owned},
                      {"kvfs_used", st.kvfs_used}};
      j["commit_journal_bytes"] = st.commit_journal_bytes;
      j["tier_order"] = nlohmann::json::array();
      for (Tier t : st.order) j["tier_order"].push_back(tier_name(t));
      for (Tier t : tier_ids(st.tiers))
        j[tier_name(t)] = {{"total", st.tier[t].total},
                                               {"allocated", st.tier[t].allocated},
                                               {"free", st.tier[t].free},
                                               {"alloc_unit", st.tier[t].unit},
                                               {"fragmentation", st.tier[t].fragmentation},
                                               {"device", st.tier[t].device},
                                               {"backend", st.tier[t].backend}};
      printf("%s\n", j.dump(2).c_str());
      return 0;
    }
    printf("%-5s %12s %12s %12s %6s %6s  %s\n", "TIER", "SIZE", "USED", "AVAIL", "USE%", "FRAG", "DEVICE");
    for (Tier t : st.order) {  // fastest first
      const auto& ts = st.tier[t];
      printf("%-5s %12s %12s %12s %5.1f%% %6.3f  %s (%s)\n", tier_name(t),
             format_size(ts.total).c_str(), format_size(ts.allocated).c_str(), format_size(ts.free).c_str(),
             ts.total ? 100.0 * static_cast<double>(ts.allocated) / static_cast<double>(ts.total) : 0.0,
             ts.fragmentation, ts.device.c_str(), ts.backend.c_str());
    }
    printf("objects: %llu, data: %s\n", (unsigned long long)st.objects, format_size(st.data_bytes).c_str());
    if (st.kv_on_device)
      printf("rocksdb: on the %s tier, %s of it (%s in use)\n", tier_name(st.order.fastest()),
             format_size(st.kvfs_owned).c_str(), format_size(st.kvfs_used).c_str());
    else
      printf("rocksdb: in the store directory\n");
    if (st.commit_journal_bytes) printf("commit journal ring: %s\n", format_size(st.commit_journal_bytes).c_str());
    return 0;
  };
});

}  // namespace
}  // namespace hybridstore::tool

namespace hybridstore::tool {
namespace {

ToolCommand repair_cmd("repair", "fix what fsck finds (leaked space, dangling extents, bad records) and say what changed",
                       [](CLI::App* sub, GlobalArgs* args) {
                         return [args] {
                           if (!args->require_path()) return 2;
                           Config cfg;
                           if (!args->load_config(&cfg)) return 2;
                           std::vector<std::string> changes;
                           int total = 0;
                           {
                             HybridStore store(args->path, cfg);
                             std::string err;
                             if (store.mount_for_repair(&err, &changes) < 0)
                               return fail("cannot mount " + args->path + " for repair: " + err);
                             FsckReport found;
                             std::vector<std::string> fixes;
                             int r = store.repair(&found, &fixes);
                             if (r < 0) return fail("repair", r);
                             changes.insert(changes.end(), fixes.begin(), fixes.end());
                             store.umount();
                           }
                           for (const auto& c : changes) printf("repaired: %s\n", c.c_str());
                           total = static_cast<int>(changes.size());
                           // Check the result with a fresh mount.
                           HybridStore store(args->path, cfg);
                           std::string err;
                           if (store.mount(&err) < 0) return fail("mount after repair: " + err);
                           FsckReport rep;
                           int left = store.fsck(false, &rep);
                           store.umount();
                           for (const auto& p : rep.problems) printf("still wrong: %s\n", p.c_str());
                           printf("repair: %d changes; fsck afterwards: %s\n", total,
                                  left == 0 ? "clean" : (std::to_string(left) + " errors").c_str());
                           return left == 0 ? 0 : 1;
                         };
                       });

}  // namespace
}  // namespace hybridstore::tool

namespace hybridstore::tool {
namespace {

ToolCommand sections_cmd("sections", "per-section extents, fill and fragmentation of the SSD tier",
                         [](CLI::App* sub, GlobalArgs* args) {
                           return [args] {
                             auto store = mount_store(*args);
                             if (!store) return 1;
                             std::string report = store->sections_report();
                             store->umount();
                             if (report.empty())
                               return fail("this store's SSD tier does not use data sections "
                                           "(hybridstore_ssd_allocator=extent)");
                             printf("%s", report.c_str());
                             return 0;
                           };
                         });

}  // namespace
}  // namespace hybridstore::tool
