// perf dump | perf schema: the store's performance counters as JSON, in the
// shapes of Ceph's `ceph daemon osd.N perf dump` and `perf schema`.
#include <cstdio>

#include "hscommon/config.h"
#include "store_access.h"
#include "tools/common/perf_json.h"

namespace hybridstore::tool {
namespace {

ToolCommand perf_cmd(
    "perf", "print the store's performance counters as JSON (perf dump) or describe them (perf schema)",
    [](CLI::App* sub, GlobalArgs* args) {
      sub->require_subcommand(1);
      CLI::App* dump = sub->add_subcommand(
          "dump", "mount the store and print every counter: counts and gauges as numbers, latencies as "
                  "{avgcount, sum, avgtime} in seconds (counts start at mount; gauges describe the store); "
                  "then its memory as dump_mempools shows it (mempools) and the process's heap (heap)");
      dump->fallthrough();
      auto histograms = std::make_shared<bool>(false);
      dump->add_flag("--histograms", *histograms,
                     "also print each latency's log2 histogram (bucket i: [2^i, 2^(i+1)) ns)");
      CLI::App* schema = sub->add_subcommand(
          "schema", "describe every counter (type, description); needs no mounted store");
      schema->fallthrough();
      return [args, dump, schema, histograms]() -> int {
        if (schema->parsed()) {
          Config cfg;
          if (!args->load_config(&cfg)) return 2;
          // The schema exists from construction on: no mount needed.
          HybridStore store(args->path, cfg);
          printf("%s\n", tools::perf_schema_json(store.perf()).dump(4).c_str());
          return 0;
        }
        if (!dump->parsed()) return 2;
        auto store = mount_store(*args);
        if (!store) return 1;
        auto values = store->perf().snapshot();
        nlohmann::json j = tools::perf_dump_json(store->perf(), values);
        // What ceph daemon osd.N dump_mempools prints, for the store's own
        // holders (docs/memory.md, step 3).
        nlohmann::json by_pool = nlohmann::json::object();
        uint64_t items = 0, bytes = 0;
        for (const MemPoolStat& p : store->mempools()) {
          by_pool[p.name] = {{"items", p.items}, {"bytes", p.bytes}};
          items += p.items;
          bytes += p.bytes;
        }
        j["mempools"] = {{"mempool", {{"by_pool", by_pool}, {"total", {{"items", items}, {"bytes", bytes}}}}}};
        std::string source;
        const uint64_t heap = HybridStore::heap_bytes(&source);
        j["heap"] = {{"bytes", heap}, {"source", source}};
        if (*histograms) {
          std::vector<PerfCounterSet::Value> zero(values.size());
          j["histograms"] = tools::perf_histogram_delta_json(store->perf(), zero, values);
        }
        int r = store->umount();
        printf("%s\n", j.dump(4).c_str());
        return r < 0 ? fail("umount", r) : 0;
      };
    });

}  // namespace
}  // namespace hybridstore::tool
