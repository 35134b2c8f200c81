// `hybridstore-bench tier`: the HRO tiering report. For each workload profile
// (mail, office, research after the HRO paper's Table I) it runs the same
// seeded multi-day trace through four configurations on modelled devices —
// HDD only, and an SSD of 5% of the data set managed by the `hot`, `lru` and
// `hro` policies with migration at the end of every day — and prints modelled
// bandwidth, mean read/write latency, mean HDD seek distance and bytes migrated
// side by side. It also samples the planner's real inputs and measures the
// greedy knapsack against the exact optimum. See docs/tiering.md.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_command.h"
#include "tier_sim.h"

namespace hybridstore::bench {

namespace {

struct TierReportArgs {
  std::string profiles = "mail,office,research";
  unsigned days = 7;
  double scale = 1.0;
  uint64_t seed = 42;
  double ssd_fraction = 0.05;
  double decay = 0.5;
  double zipf = 0;          // > 0: overrides every profile's popularity skew
  double metadata_us = 50;  // modelled cost of a metadata op
  unsigned gap_samples = 12;
  unsigned gap_objects = 2000;
  size_t plan_max_candidates = 0;  // > 0: the bounded planner (docs/memory.md)
  double heat_hot_set = 0;         // > 0: heat on demand, hot set capped at this share of the objects
  bool quick = false;
  std::string json;
};

struct ConfigSpec {
  const char* label;
  bool hdd_only;
  TierPolicy policy;
};
const ConfigSpec kConfigs[] = {
    {"hdd-only", true, TierPolicy::kNone},
    {"hot", false, TierPolicy::kHot},
    {"lru", false, TierPolicy::kLru},
    {"hro", false, TierPolicy::kHro},
};

// Greedy-versus-exact measurements over sampled planner inputs.
struct GapStats {
  unsigned samples = 0, exact = 0;
  double sum_chosen = 0;
  // [0]: the paper's plain greedy, [1]: with the planner's repair (default).
  double sum_gap[2] = {0, 0}, max_gap[2] = {0, 0}, max_gap_bound[2] = {0, 0};
  unsigned over_2pct[2] = {0, 0};
};

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Samples `objects` accessed candidates, gives them a knapsack of the same
// SSD share, and compares the hro greedy with the exact solver.
void sample_gap(const std::vector<TierCandidate>& cands, const TierReportArgs& a, uint64_t salt,
                GapStats* g) {
  std::vector<size_t> pool;
  for (size_t i = 0; i < cands.size(); ++i)
    if (cands[i].frequency > 0 && cands[i].size > 0) pool.push_back(i);
  if (pool.size() < 10) return;
  for (unsigned s = 0; s < a.gap_samples; ++s) {
    uint64_t st = mix(salt * 1000 + s);
    size_t m = std::min<size_t>(a.gap_objects, pool.size());
    for (size_t i = 0; i < m; ++i) {  // partial Fisher-Yates
      st = mix(st);
      size_t j = i + static_cast<size_t>(st % (pool.size() - i));
      std::swap(pool[i], pool[j]);
    }
    std::vector<TierCandidate> sub;
    uint64_t total = 0;
    for (size_t i = 0; i < m; ++i) {
      sub.push_back(cands[pool[i]]);
      sub.back().on_ssd = false;
      total += knapsack_weight(sub.back().size, 4096);
    }
    uint64_t cap = static_cast<uint64_t>(a.ssd_fraction * static_cast<double>(total));
    ExactKnapsackResult ex;
    if (exact_knapsack(hro_knapsack_items(sub, 4096), cap, 64ull << 20, &ex) != 0 || ex.value <= 0)
      continue;
    ++g->samples;
    if (ex.exact) ++g->exact;
    for (int k = 0; k < 2; ++k) {
      PlannerOptions po{TierPolicy::kHro, cap, 4096};
      if (k == 0) po.repair_candidates = 0;
      TierPlan plan = plan_tiers(sub, po);
      double gap = (ex.value - plan.chosen_value) / ex.value;
      double gap_bound = (ex.upper_bound - plan.chosen_value) / ex.upper_bound;
      g->sum_gap[k] += gap;
      g->max_gap[k] = std::max(g->max_gap[k], gap);
      g->max_gap_bound[k] = std::max(g->max_gap_bound[k], gap_bound);
      if (gap > 0.02) ++g->over_2pct[k];
      if (k == 1) g->sum_chosen += static_cast<double>(plan.chosen.size());
    }
  }
}

nlohmann::json counters_json(const TierCounters& c) {
  return {{"reads", c.reads},
          {"writes", c.writes},
          {"metadata_ops", c.meta_ops},
          {"read_bytes", c.read_bytes},
          {"write_bytes", c.write_bytes},
          {"read_ns", c.read_ns},
          {"write_ns", c.write_ns},
          {"metadata_ns", c.meta_ns},
          {"readahead_hits", c.readahead_hits},
          {"ssd_requests", c.ssd_requests},
          {"hdd_ios", c.hdd_ios},
          {"hdd_random_ios", c.hdd_random_ios},
          {"hdd_seek_bytes", c.hdd_seek_bytes},
          {"hdd_ns", c.hdd_ns},
          {"ssd_ios", c.ssd_ios},
          {"ssd_ns", c.ssd_ns},
          {"promoted", c.promoted},
          {"demoted", c.demoted},
          {"migrated_bytes", c.migrated_bytes},
          {"migration_ns", c.migration_ns},
          {"bandwidth_mbps", c.bandwidth_mbps()},
          {"mean_read_ms", c.mean_read_ms()},
          {"mean_write_ms", c.mean_write_ms()},
          {"mean_hdd_seek_mib", c.mean_hdd_seek_mib()}};
}

std::vector<std::string> split_csv(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

double pct(double a, double b) { return b > 0 ? (a / b - 1) * 100 : 0; }

// The profiles --profiles names, with --zipf applied; 2 (the usage error)
// for an unknown one.
int choose_profiles(const TierReportArgs& a, std::vector<WorkloadProfile>* chosen) {
  for (const auto& name : split_csv(a.profiles)) {
    const WorkloadProfile* p = find_workload_profile(name);
    if (!p) {
      std::string known;
      for (const auto& q : workload_profiles()) known += " " + q.name;
      fmt::print(stderr, "tier: unknown profile '{}' (known:{})\n", name, known);
      return 2;
    }
    chosen->push_back(*p);
    if (a.zipf > 0) chosen->back().zipf_theta = a.zipf;
  }
  return 0;
}

struct ProfileOut {
  const WorkloadProfile* p;
  std::vector<TierSimResult> res;
  GapStats gap;
};

// One profile's trace through every configuration of kConfigs.
ProfileOut run_profile(const WorkloadProfile* p, const TierReportArgs& a,
                       std::chrono::steady_clock::time_point t0) {
  ProfileOut po{p, {}, {}};
  for (const ConfigSpec& cs : kConfigs) {
    TierSimConfig cfg;
    cfg.hdd_only = cs.hdd_only;
    cfg.policy = cs.policy;
    cfg.ssd_fraction = a.ssd_fraction;
    cfg.heat.decay = a.decay;
    cfg.heat.max_objects = 4000000;
    cfg.metadata_op_us = a.metadata_us;
    cfg.plan_max_candidates = a.plan_max_candidates;
    cfg.heat_hot_set = a.heat_hot_set;
    cfg.on_day = [&](unsigned day) {
      double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      fmt::print(stderr, "[{:>8} {:>8}] day {}/{} done ({:.0f} s elapsed)\n", p->name, cs.label,
                 day + 1, a.days, el);
    };
    if (cs.policy == TierPolicy::kHro && a.gap_samples > 0) {
      cfg.on_plan = [&](unsigned day, const std::vector<TierCandidate>& c, uint64_t) {
        sample_gap(c, a, a.seed * 131 + day, &po.gap);
      };
    }
    WorkloadOptions wo;
    wo.seed = a.seed;
    wo.scale = a.scale;
    wo.days = a.days;
    po.res.push_back(run_tier_sim(*p, wo, cfg));
  }
  return po;
}

// Workload check against Table I.
void print_workload_check(const std::vector<ProfileOut>& outs, const TierReportArgs& a) {
  fmt::print("Workloads (generated vs HRO Table I; from the hdd-only run):\n");
  fmt::print("{:<9} {:>7} {:>9} {:>9} | {:>13} {:>13} {:>13} {:>11} {:>14} {:>14}\n", "profile",
             "files", "data set", "SSD", "metadata %", "read %", "write %", "R/W bytes",
             "read KiB/op", "write KiB/op");
  for (const auto& po : outs) {
    const TierCounters& c = po.res[0].total;
    const PaperWorkloadStats& ps = po.p->paper;
    double ops = static_cast<double>(c.reads + c.writes + c.meta_ops);
    auto cell = [](double ours, double paper, int prec) {
      return fmt::format("{:.{}f} ({:.{}f})", ours, prec, paper, prec);
    };
    fmt::print("{:<9} {:>7} {:>8.2f}G {:>8.2f}G | {:>13} {:>13} {:>13} {:>11} {:>14} {:>14}\n",
               po.p->name, po.res[0].objects, po.res[0].dataset_bytes / 1e9,
               a.ssd_fraction * po.res[0].dataset_bytes / 1e9,
               cell(c.meta_ops / ops * 100, ps.metadata_share * 100, 0),
               cell(c.reads / ops * 100, ps.read_share * 100, 0),
               cell(c.writes / ops * 100, ps.write_share * 100, 0),
               cell(static_cast<double>(c.read_bytes) / c.write_bytes, ps.read_mb / ps.write_mb, 1),
               cell(c.read_bytes / 1024.0 / c.reads, ps.read_mb * 1e6 / 1024 / (ps.ops * ps.read_share), 1),
               cell(c.write_bytes / 1024.0 / c.writes,
                    ps.write_mb * 1e6 / 1024 / (ps.ops * ps.write_share), 1));
  }
  fmt::print("(paper values in parentheses)\n\n");
}

// A profile's table: each configuration against hdd-only, hro against the
// others, bandwidth per day; returns the same as JSON.
nlohmann::json print_profile(const ProfileOut& po, const TierReportArgs& a) {
  fmt::print("{} — {} days, SSD budget {:.2f} GB\n", po.p->name, a.days,
             po.res[1].ssd_budget / 1e9);
  fmt::print("{:<9} {:>9} {:>8} {:>8} {:>9} {:>9} {:>11} {:>9} {:>8} {:>9} {:>8}\n", "config",
             "bw MB/s", "vs HDD", "read ms", "write ms", "HDD I/Os", "seek MiB/io",
             "seek TiB", "SSD req", "migr GiB", "migr s");
  double base = po.res[0].total.bandwidth_mbps();
  nlohmann::json pj;
  for (size_t i = 0; i < po.res.size(); ++i) {
    const TierCounters& c = po.res[i].total;
    double data_reqs = static_cast<double>(c.reads + c.writes);
    fmt::print("{:<9} {:>9.2f} {:>+7.1f}% {:>8.3f} {:>9.3f} {:>9} {:>11.1f} {:>9.1f} {:>7.1f}% "
               "{:>8.3f} {:>9.1f}\n",
               kConfigs[i].label, c.bandwidth_mbps(), pct(c.bandwidth_mbps(), base),
               c.mean_read_ms(), c.mean_write_ms(), c.hdd_ios, c.mean_hdd_seek_mib(),
               c.hdd_seek_bytes / 1099511627776.0,
               data_reqs > 0 ? c.ssd_requests / data_reqs * 100 : 0,
               c.migrated_bytes / 1073741824.0, c.migration_ns / 1e9);
    nlohmann::json cj = counters_json(c);
    nlohmann::json days = nlohmann::json::array();
    for (const auto& d : po.res[i].days) days.push_back(counters_json(d));
    cj["days"] = days;
    cj["heat_entries"] = po.res[i].heat_entries;
    cj["heat_memory_bytes"] = po.res[i].heat_memory;
    cj["heat_stored"] = po.res[i].heat_stored;
    pj["configs"][kConfigs[i].label] = cj;
  }
  const TierCounters& hdd = po.res[0].total;
  const TierCounters& hot = po.res[1].total;
  const TierCounters& hro = po.res[3].total;
  auto mean_lat = [](const TierCounters& c) {
    uint64_t n = c.reads + c.writes;
    return n ? static_cast<double>(c.read_ns + c.write_ns) / static_cast<double>(n) : 0.0;
  };
  double lat = mean_lat(hro);
  auto seek_total = [](const TierCounters& c) { return static_cast<double>(c.hdd_seek_bytes); };
  fmt::print("hro vs hdd-only: bandwidth {:+.1f}%, mean data latency {:+.1f}%, HDD seek distance "
             "{:+.1f}% in total, {:+.1f}% per I/O\n",
             pct(hro.bandwidth_mbps(), hdd.bandwidth_mbps()), pct(lat, mean_lat(hdd)),
             pct(seek_total(hro), seek_total(hdd)),
             pct(hro.mean_hdd_seek_mib(), hdd.mean_hdd_seek_mib()));
  fmt::print("hro vs hot:      bandwidth {:+.1f}%, mean data latency {:+.1f}%, HDD seek distance "
             "{:+.1f}% in total, {:+.1f}% per I/O\n",
             pct(hro.bandwidth_mbps(), hot.bandwidth_mbps()), pct(lat, mean_lat(hot)),
             pct(seek_total(hro), seek_total(hot)),
             pct(hro.mean_hdd_seek_mib(), hot.mean_hdd_seek_mib()));
  fmt::print("hro heat at the end: {} entries in memory, {} bytes{}\n", po.res[3].heat_entries,
             po.res[3].heat_memory,
             a.heat_hot_set > 0 ? fmt::format(", {} objects with a stored record", po.res[3].heat_stored) : "");
  std::string head = fmt::format("{:<9}", "MB/s/day");
  for (size_t d = 0; d < po.res[0].days.size(); ++d) head += fmt::format(" {:>7}", d + 1);
  fmt::print("{}\n", head);
  for (size_t i = 0; i < po.res.size(); ++i) {
    std::string row = fmt::format("{:<9}", kConfigs[i].label);
    for (const auto& d : po.res[i].days) row += fmt::format(" {:>7.2f}", d.bandwidth_mbps());
    fmt::print("{}\n", row);
  }
  fmt::print("\n");
  pj["dataset_bytes"] = po.res[0].dataset_bytes;
  pj["ssd_budget"] = po.res[1].ssd_budget;
  pj["objects"] = po.res[0].objects;
  pj["hro_vs_hdd_bandwidth_pct"] = pct(hro.bandwidth_mbps(), hdd.bandwidth_mbps());
  pj["hro_vs_hot_bandwidth_pct"] = pct(hro.bandwidth_mbps(), hot.bandwidth_mbps());
  pj["hro_vs_hdd_latency_pct"] = pct(lat, mean_lat(hdd));
  pj["hro_vs_hot_latency_pct"] = pct(lat, mean_lat(hot));
  for (int k = 0; k < 2; ++k) {
    pj[k == 0 ? "greedy_gap_plain" : "greedy_gap_repaired"] = {
        {"samples", po.gap.samples},
        {"exact", po.gap.exact},
        {"mean_gap", po.gap.samples ? po.gap.sum_gap[k] / po.gap.samples : 0},
        {"max_gap", po.gap.max_gap[k]},
        {"max_gap_vs_upper_bound", po.gap.max_gap_bound[k]},
        {"samples_over_2pct", po.gap.over_2pct[k]}};
  }
  return pj;
}

// The planner's greedy against the exact optimum, per profile.
void print_gap_table(const std::vector<ProfileOut>& outs, const TierReportArgs& a) {
  fmt::print("Greedy (hro) vs exact knapsack on sampled planner inputs ({} objects, SSD = {:.0f}% of "
             "their size):\n",
             a.gap_objects, a.ssd_fraction * 100);
  fmt::print("{:<9} {:>8} {:>6} {:>7} | {:>24} | {:>24}\n", "", "", "", "",
             "plain greedy (paper)", "greedy + repair (hro)");
  fmt::print("{:<9} {:>8} {:>6} {:>7} | {:>7} {:>7} {:>8} | {:>7} {:>7} {:>8}\n", "profile",
             "samples", "exact", "chosen", "mean", "max", ">2%", "mean", "max", ">2%");
  for (const auto& po : outs) {
    const GapStats& g = po.gap;
    double n = g.samples ? g.samples : 1;
    fmt::print("{:<9} {:>8} {:>6} {:>7.0f} | {:>6.3f}% {:>6.2f}% {:>8} | {:>6.3f}% {:>6.2f}% {:>8}\n",
               po.p->name, g.samples, g.exact, g.sum_chosen / n, g.sum_gap[0] / n * 100,
               g.max_gap[0] * 100, g.over_2pct[0], g.sum_gap[1] / n * 100, g.max_gap[1] * 100,
               g.over_2pct[1]);
  }
  fmt::print("(gap = (optimum - planner) / optimum, objective sum of f*R; \"exact\" = samples the DP "
             "solved exactly;\n >2% = samples more than 2% below the optimum)\n");
}

int run_tier_report(TierReportArgs a) {
  if (a.quick) {
    a.scale = std::min(a.scale, 0.1);
    a.days = std::min(a.days, 3u);
    a.gap_samples = std::min(a.gap_samples, 2u);
  }
  std::vector<WorkloadProfile> chosen;
  if (int r = choose_profiles(a, &chosen); r != 0) return r;
  std::vector<const WorkloadProfile*> profiles;
  for (const auto& p : chosen) profiles.push_back(&p);
  if (profiles.empty()) {
    fmt::print(stderr, "tier: no profiles given\n");
    return 2;
  }
  if (a.days < 2) {
    fmt::print(stderr, "tier: --days must be at least 2 (migration happens between days)\n");
    return 2;
  }

  std::ofstream json_out;
  if (!a.json.empty()) {  // fail before a long run, not after it
    json_out.open(a.json);
    if (!json_out) {
      fmt::print(stderr, "tier: cannot write {}\n", a.json);
      return 1;
    }
  }

  nlohmann::json js;
  js["args"] = {{"profiles", a.profiles}, {"days", a.days},         {"scale", a.scale},
                {"seed", a.seed},         {"ssd_fraction", a.ssd_fraction},
                {"heat_decay", a.decay},  {"gap_samples", a.gap_samples},
                {"zipf_override", a.zipf}, {"metadata_us", a.metadata_us},
                {"gap_objects", a.gap_objects}, {"plan_max_candidates", a.plan_max_candidates},
                {"heat_hot_set", a.heat_hot_set}};
  {
    HddModel hdd;
    SsdModel ssd;
    js["devices"] = {{"hdd", hdd.describe()}, {"ssd", ssd.describe()}};
    fmt::print("devices (modelled): {}\n                    {}\n", hdd.describe(), ssd.describe());
  }
  fmt::print("run: {} days, scale {}, seed {}, SSD = {:.0f}% of the data set, heat decay {}, "
             "metadata op {} us{}{}{}\n\n",
             a.days, a.scale, a.seed, a.ssd_fraction * 100, a.decay, a.metadata_us,
             a.heat_hot_set > 0 ? fmt::format(", heat on demand with a hot set of {:.0f}% of the objects",
                                              a.heat_hot_set * 100)
                                : "",
             a.zipf > 0 ? fmt::format(", zipf {} for every profile", a.zipf) : "",
             a.plan_max_candidates > 0
                 ? fmt::format(", bounded planner keeping {} candidates", a.plan_max_candidates)
                 : "");

  auto t0 = std::chrono::steady_clock::now();
  std::vector<ProfileOut> outs;
  for (const WorkloadProfile* p : profiles) outs.push_back(run_profile(p, a, t0));

  print_workload_check(outs, a);

  for (const auto& po : outs) js["profiles"][po.p->name] = print_profile(po, a);

  print_gap_table(outs, a);
  double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print(stderr, "tier: done in {:.0f} s\n", el);
  js["elapsed_s"] = el;

  if (!a.json.empty()) {
    json_out << js.dump(2) << "\n";
    json_out.flush();
    if (!json_out) {
      fmt::print(stderr, "tier: error writing {}\n", a.json);
      return 1;
    }
  }
  return 0;
}

BenchCommand tier_command(
    "tier",
    "HRO tiering report: HDD-only vs hot/lru/hro SSD placement on modelled devices, per workload "
    "profile (mail, office, research)",
    [](CLI::App* sub) -> std::function<int()> {
      auto a = std::make_shared<TierReportArgs>();
      sub->add_option("--profiles", a->profiles, "comma-separated profiles (mail,office,research)")
          ->capture_default_str();
      sub->add_option("--days", a->days, "simulated days; migration runs after each")
          ->capture_default_str()
          ->check(CLI::Range(2u, 60u));
      sub->add_option("--scale", a->scale,
                      "data set and request scale (1 = 1/10 to 1/20 of the paper's file system images)")
          ->capture_default_str()
          ->check(CLI::Range(0.001, 10.0));
      sub->add_option("--seed", a->seed, "workload seed")->capture_default_str();
      sub->add_option("--ssd-fraction", a->ssd_fraction, "SSD budget as a share of the data set")
          ->capture_default_str()
          ->check(CLI::Range(0.001, 1.0));
      sub->add_option("--heat-decay", a->decay, "heat decay per day (0..1)")
          ->capture_default_str()
          ->check(CLI::Range(0.0, 1.0));
      sub->add_option("--zipf", a->zipf,
                      "override every profile's popularity skew (Zipf theta; 0 = profile's own)")
          ->capture_default_str()
          ->check(CLI::Range(0.0, 3.0));
      sub->add_option("--metadata-us", a->metadata_us, "modelled cost of one metadata op, us")
          ->capture_default_str()
          ->check(CLI::Range(0.0, 100000.0));
      sub->add_option("--gap-samples", a->gap_samples,
                      "greedy-vs-exact samples per migration of the hro run (0 = skip)")
          ->capture_default_str();
      sub->add_option("--gap-objects", a->gap_objects, "objects per greedy-vs-exact sample")
          ->capture_default_str()
          ->check(CLI::Range(10u, 5000u));
      sub->add_option("--plan-max-candidates", a->plan_max_candidates,
                      "plan each migration with the bounded planner keeping this many candidates "
                      "(docs/memory.md); 0 = every object, as the engine's pass does today")
          ->capture_default_str();
      sub->add_option("--heat-hot-set", a->heat_hot_set,
                      "heat on demand (hybridstore_tier_heat_mode = on_demand): the tracker's hot set "
                      "capped in bytes at this share of the objects, the rest merged into stored "
                      "records the planner reads (docs/memory.md); 0 = every object in memory")
          ->capture_default_str()
          ->check(CLI::Range(0.0, 1.0));
      sub->add_flag("--quick", a->quick, "smoke run: scale <= 0.1, 3 days");
      sub->add_option("--json", a->json, "also write the results as JSON to this file");
      return [a] { return run_tier_report(*a); };
    });

}  // namespace

}  // namespace hybridstore::bench
