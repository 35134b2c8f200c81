// demo: the main job on a fresh machine (`make demo`). A file-backed store
// with the embedded defaults, then three rados-style runs on it:
//  1. write: objects of mixed sizes, small ones to the SSD, large ones to
//     the HDD, so both tiers fill; kept for the next run;
//  2. rand: random whole-object reads, every byte checked;
//  3. mixed: the office profile with its files starting on the HDD; the
//     migrator's passes at each trace day's end move the hot ones up;
// then the usage per tier, the perf counter deltas of the three runs and the
// report (plots and index.html).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "bench_command.h"
#include "rados_common.h"

namespace hybridstore::bench {
namespace {

namespace fs = std::filesystem;

struct DemoArgs {
  std::string dir = "demo-store";
  std::string report = "demo-report";
  double write_seconds = 20, read_seconds = 10, mixed_seconds = 25;
  int64_t max_objects = 10000;
  int threads = 16;
  uint64_t seed = 1;
  std::vector<std::string> sets;
  std::string ssd_size = "1G";
  std::string classes = "off (plain files on this machine's disk: both tiers as fast as each other)";
};

RadosArgs phase_args(const DemoArgs& d, RadosMode mode, double seconds, const std::string& json) {
  RadosArgs a;
  a.mode = mode;
  a.path = d.dir;
  a.concurrent = d.threads;
  a.seconds = seconds;
  a.seed = d.seed;
  a.sets = d.sets;
  a.json = json;
  a.raw_seconds = 2;
  return a;
}

// Sums the perf deltas of the runs: counts add up, latencies pool.
void print_perf_deltas(const std::vector<std::string>& files) {
  std::map<std::string, nlohmann::json> total;
  std::vector<std::string> order;
  for (const auto& f : files) {
    std::ifstream in(f);
    auto j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.contains("perf")) continue;
    for (auto& [name, v] : j["perf"]["delta"]["hybridstore"].items()) {
      if (!total.count(name)) order.push_back(name);
      auto& t = total[name];
      if (v.is_object()) {
        if (t.is_null()) t = {{"avgcount", 0}, {"sum", 0.0}};
        t["avgcount"] = t["avgcount"].get<uint64_t>() + v["avgcount"].get<uint64_t>();
        t["sum"] = t["sum"].get<double>() + v["sum"].get<double>();
      } else {
        t = (t.is_null() ? 0 : t.get<int64_t>()) + v.get<int64_t>();
      }
    }
  }
  std::vector<std::string> lines;
  for (const auto& n : order) {
    const auto& v = total[n];
    char buf[160];
    if (v.is_object()) {
      uint64_t c = v["avgcount"].get<uint64_t>();
      if (!c) continue;
      snprintf(buf, sizeof(buf), "%-26s %9llu x %9.3f ms", n.c_str(), (unsigned long long)c,
               1e3 * v["sum"].get<double>() / static_cast<double>(c));
    } else {
      if (v.get<int64_t>() == 0) continue;
      snprintf(buf, sizeof(buf), "%-26s %24lld", n.c_str(), (long long)v.get<int64_t>());
    }
    lines.push_back(buf);
  }
  size_t half = (lines.size() + 1) / 2;
  for (size_t i = 0; i < half; ++i)
    printf("  %-52s %s\n", lines[i].c_str(), i + half < lines.size() ? lines[i + half].c_str() : "");
}

// Where the data is after a phase, from the run's record.
void print_tiers(const char* after, const ModeRun& m) {
  printf("-- tiers after %s:", after);
  for (const char* t : {"ssd", "hdd"}) {
    const auto& x = m.tiers[t];
    printf(" %s %s in %llu objects%s", t, format_size(x["allocated"].get<uint64_t>()).c_str(),
           (unsigned long long)x["objects"].get<uint64_t>(), t[0] == 's' ? "," : "\n");
  }
}

// "1G on a sparse file" or "/dev/loop3 (1G)": what a tier runs on.
std::string option_of(const DemoArgs& d, const std::string& tier) {
  std::string size, path;
  for (const auto& kv : d.sets) {
    if (kv.rfind("hybridstore_" + tier + "_size=", 0) == 0) size = kv.substr(kv.find('=') + 1);
    if (kv.rfind("hybridstore_" + tier + "_path=", 0) == 0) path = kv.substr(kv.find('=') + 1);
  }
  if (size.empty()) size = tier == "ssd" ? "8G" : "64G";
  return path.empty() ? size + " (a sparse file)" : path + " (" + size + ")";
}

int run_demo(DemoArgs d) {
  // An SSD smaller than what the runs write, so that both tiers stay in use
  // and the migrator has to choose (with the 8 GiB default every object would
  // end up on the SSD).
  bool ssd_size_given = false;
  for (const auto& kv : d.sets) ssd_size_given |= kv.rfind("hybridstore_ssd_size=", 0) == 0;
  if (!ssd_size_given) d.sets.insert(d.sets.begin(), "hybridstore_ssd_size=" + d.ssd_size);
  std::string why;
  if (!report_tools_available(&why)) {
    fprintf(stderr, "hybridstore-bench demo: %s\n", why.c_str());
    return 2;
  }
  std::error_code ec;
  fs::remove_all(d.dir, ec);
  fs::remove_all(d.report, ec);
  fs::create_directories(d.report, ec);
  if (ec) {
    fprintf(stderr, "hybridstore-bench demo: cannot make %s: %s\n", d.report.c_str(), ec.message().c_str());
    return 2;
  }
  printf("HybridStore demo: a store in %s, SSD %s, HDD %s, seed %llu\n", d.dir.c_str(), option_of(d, "ssd").c_str(),
         option_of(d, "hdd").c_str(), (unsigned long long)d.seed);
  printf("device classes: %s\n\n", d.classes.c_str());
  std::vector<std::string> jsons;

  printf("== 1/3 write: objects of 4K to 4M (small ones go to the SSD, 1M and more to the HDD), "
         "%d in flight, up to %.0f s or %lld objects\n",
         d.threads, d.write_seconds, (long long)d.max_objects);
  RadosArgs w = phase_args(d, RadosMode::kWrite, d.write_seconds, d.report + "/write.json");
  w.object_mix_text = "4K:45,16K:20,64K:15,256K:8,1M:8,4M:4";
  w.max_objects = d.max_objects;
  w.no_cleanup = true;
  ModeRun wm(&w);
  if (int rc = run_write(&w, &wm); rc) return rc;
  print_tiers("write", wm);
  jsons.push_back(w.json);

  printf("\n== 2/3 rand: random whole objects read back, every byte checked, %d in flight, %.0f s\n", d.threads,
         d.read_seconds);
  RadosArgs r = phase_args(d, RadosMode::kRand, d.read_seconds, d.report + "/rand.json");
  ModeRun rm(&r);
  if (int rc = run_read(&r, &rm); rc) return rc;
  print_tiers("rand", rm);
  jsons.push_back(r.json);

  printf("\n== 3/3 mixed: the office profile (HRO Table I) replayed, its files starting on the HDD; "
         "a migration pass at each trace day's end, up to %.0f s\n",
         d.mixed_seconds);
  RadosArgs m = phase_args(d, RadosMode::kMixed, d.mixed_seconds, d.report + "/mixed.json");
  m.no_cleanup = true;
  ModeRun mm(&m);
  if (int rc = run_mixed(&m, &mm); rc) return rc;
  print_tiers("mixed", mm);
  jsons.push_back(m.json);

  // The store as the runs left it.
  Config cfg;
  std::string err;
  for (const auto& s : d.sets) cfg.set_from_arg(s, &err);
  HybridStore store(d.dir, cfg);
  if (store.mount(&err) < 0) {
    fprintf(stderr, "hybridstore-bench demo: remount: %s\n", err.c_str());
    return 1;
  }
  StoreStats st;
  store.statfs(&st);
  printf("\n== usage per tier\n%-5s %12s %12s %12s %8s %9s\n", "TIER", "SIZE", "USED", "AVAIL", "USE%", "OBJECTS");
  for (Tier t : st.order) {  // fastest first
    const auto& ts = st.tier[t];
    std::string tn = tier_name(t);
    printf("%-5s %12s %12s %12s %7.2f%% %9llu\n", tn.c_str(), format_size(ts.total).c_str(),
           format_size(ts.allocated).c_str(), format_size(ts.free).c_str(),
           100.0 * static_cast<double>(ts.allocated) / static_cast<double>(ts.total),
           (unsigned long long)store.perf().get(store.perf().find(tn + "_objects")));
  }
  printf("objects: %llu, logical data: %s\n", (unsigned long long)st.objects, format_size(st.data_bytes).c_str());
  FsckReport rep;
  int errors = store.fsck(false, &rep);
  printf("fsck: %s\n", errors == 0 ? "clean" : "ERRORS");
  printf("device classes: %s\n", d.classes.c_str());
  store.umount();

  printf("\n== perf counter deltas of the three runs (counts; latencies as samples x mean)\n");
  print_perf_deltas(jsons);

  printf("\n== report\n");
  if (make_report(d.report, jsons) != 0) return 1;
  std::string index = fs::absolute(d.report + "/index.html").lexically_normal().string();
  printf("report: %s\n", index.c_str());
  printf("\nlook at the store with: build/bin/hybridstore-tool --path %s df | perf dump | fsck --deep\n",
         d.dir.c_str());
  return errors ? 1 : 0;
}

BenchCommand demo("demo",
                  "make demo: a fresh file-backed store, a mixed-size write, a verified rand read-back, a mixed "
                  "tiering run; usage per tier, perf counter deltas and a plotted report",
                  [](CLI::App* sub) {
                    auto a = std::make_shared<DemoArgs>();
                    sub->add_option("--dir", a->dir, "store directory (removed and made again)")->capture_default_str();
                    sub->add_option("--report", a->report, "report directory (removed and made again)")
                        ->capture_default_str();
                    sub->add_option("--write-seconds", a->write_seconds, "length of the write run")
                        ->capture_default_str()
                        ->check(CLI::Range(1.0, 3600.0));
                    sub->add_option("--read-seconds", a->read_seconds, "length of the rand run")
                        ->capture_default_str()
                        ->check(CLI::Range(1.0, 3600.0));
                    sub->add_option("--mixed-seconds", a->mixed_seconds, "longest the mixed run may take")
                        ->capture_default_str()
                        ->check(CLI::Range(1.0, 3600.0));
                    sub->add_option("--max-objects", a->max_objects, "objects the write run stops at")
                        ->capture_default_str()
                        ->check(CLI::Range(int64_t{1}, int64_t{10000000}));
                    sub->add_option("-t,--concurrent-ios", a->threads, "operations in flight")
                        ->capture_default_str()
                        ->check(CLI::Range(1, 256));
                    sub->add_option("--seed", a->seed, "random seed (printed)")->capture_default_str();
                    sub->add_option("--set", a->sets, "store option key=value (repeatable)");
                    sub->add_option("--ssd-size", a->ssd_size,
                                    "SSD tier size when no --set hybridstore_ssd_size= is given; smaller "
                                    "than the data the runs write, so both tiers stay in use")
                        ->capture_default_str();
                    sub->add_option("--classes", a->classes,
                                    "what the devices are, for the summary (qa/demo.sh says whether they are "
                                    "modelled device classes)");
                    return [a] { return run_demo(*a); };
                  });

}  // namespace
}  // namespace hybridstore::bench
