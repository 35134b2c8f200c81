// `ftl-sim table2`: the hUBI paper's Table II, reproduced: paper, the paper's
// equations, our refinement of them, and the simulation, side by side.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analytic_model.h"
#include "commands.h"
#include "sim_options.h"
#include "simulation.h"

namespace hybridstore::ftl::sim {

namespace {

struct Table2Args {
  CommonArgs common;
  uint64_t rand_ops = 200000, pubi_rand_ops = 600000, seq_ops = 50000, ubi_rand_ops = 3000;
  std::string json;
  bool quiet = false;
};

struct Row {
  std::string metric, scheme, run;
  double paper_ms, equation_ms, model_ms, sim_ms;
};

}  // namespace

std::function<int()> setup_table2(CLI::App* app) {
  auto args = std::make_shared<Table2Args>();
  CLI::App* sub = app->add_subcommand(
      "table2",
      "reproduce the paper's Table II (k = 128, d = 100, l = 26, pUBI D = 16, L = 4, paper "
      "timing): paper figure, the paper's equation, our model, simulation");
  add_common_options(sub, &args->common);
  sub->add_option("--rand-ops", args->rand_ops, "measured random writes (hubi)")
      ->capture_default_str();
  sub->add_option("--pubi-rand-ops", args->pubi_rand_ops,
                  "measured random writes (pubi: a merge per 508 writes of a partition)")
      ->capture_default_str();
  sub->add_option("--ubi-rand-ops", args->ubi_rand_ops, "measured random writes (ubi)")
      ->capture_default_str();
  sub->add_option("--seq-ops", args->seq_ops, "measured sequential page writes")
      ->capture_default_str();
  sub->add_option("--json", args->json, "also write all rows as JSON to FILE (- = stdout)");
  sub->add_flag("--quiet", args->quiet, "no progress output");
  return [args]() -> int {
    std::string err;
    auto run = [&](const std::string& policy, WorkloadKind kind, const std::string& cache,
                   uint64_t ops, SimResult* res) -> int {
      CommonArgs c = args->common;
      c.policy = policy;
      c.cache = cache;
      SimOptions so;
      if (int r = to_ftl_options(c, &so.ftl, &err); r < 0) return r;
      so.workload.kind = kind;
      so.workload.seed = c.seed;
      so.ops = ops;
      so.progress = !args->quiet;
      if (!args->quiet)
        fprintf(stderr, "ftl-sim table2: %s %s, cache %s, %llu requests\n", policy.c_str(),
                workload_name(kind), cache.c_str(), (unsigned long long)ops);
      return run_simulation(so, res, &err);
    };
    FtlOptions fo;
    if (to_ftl_options(args->common, &fo, &err) < 0) {
      fprintf(stderr, "ftl-sim: %s\n", err.c_str());
      return 2;
    }
    uint32_t d, l;
    hubi_layout(fo.geometry.pages_per_block, fo.data_pages, fo.log_pages, &d, &l, &err);
    ModelParams mp = ModelParams::from(fo.nand.timing, fo.geometry.pages_per_block, d, l,
                                       fo.partition_data, fo.partition_log);
    ModelFigures eq = paper_model(mp);
    ModelFigures ours = our_model(mp, false);
    ModelFigures ours_fetch = our_model(mp, true);

    SimResult h_rw, h_sw, h_sw_lazy, u_rw, u_sw, p_rw, p_sw;
    struct Job {
      const char* policy;
      WorkloadKind kind;
      const char* cache;
      uint64_t ops;
      SimResult* out;
    };
    std::vector<Job> jobs = {
        {"hubi", WorkloadKind::kRandWrite, "off", args->rand_ops, &h_rw},
        {"hubi", WorkloadKind::kSeqWrite, "mtdblock", args->seq_ops, &h_sw},
        {"hubi", WorkloadKind::kSeqWrite, "lazy", args->seq_ops, &h_sw_lazy},
        {"ubi", WorkloadKind::kRandWrite, "off", args->ubi_rand_ops, &u_rw},
        {"ubi", WorkloadKind::kSeqWrite, "mtdblock", args->seq_ops, &u_sw},
        {"pubi", WorkloadKind::kRandWrite, "off", args->pubi_rand_ops, &p_rw},
        {"pubi", WorkloadKind::kSeqWrite, "lazy", args->seq_ops, &p_sw},
    };
    for (const Job& j : jobs)
      if (int r = run(j.policy, j.kind, j.cache, j.ops, j.out); r < 0) {
        fprintf(stderr, "ftl-sim table2: %s: %s (%d)\n", j.policy, err.c_str(), r);
        return 1;
      }
    auto ms = [](double us) { return us / 1000.0; };
    std::vector<Row> rows = {
        {"MTTM", "hUBI", "randwrite, cache off", 96.5, ms(eq.hubi_mttm), ms(ours.hubi_mttm),
         ms(h_rw.mttm_us)},
        {"RW MTTPW", "hUBI", "randwrite, cache off", 4.561, ms(eq.hubi_rw_mttpw),
         ms(ours.hubi_rw_mttpw), ms(h_rw.mttpw_us)},
        {"SW MTTPW", "hUBI", "seqwrite, cache mtdblock", 0.965, ms(eq.hubi_sw_mttpw),
         ms(ours_fetch.hubi_sw_mttpw), ms(h_sw.mttpw_us)},
        {"SW MTTPW", "hUBI", "seqwrite, cache lazy", 0.965, ms(eq.hubi_sw_mttpw),
         ms(ours.hubi_sw_mttpw), ms(h_sw_lazy.mttpw_us)},
        {"MTTM", "UBI", "randwrite, cache off", 123.1, ms(eq.ubi_mttm), ms(ours.ubi_mttm),
         ms(u_rw.mttm_us)},
        {"RW MTTPW", "UBI", "randwrite, cache off", 123.1, ms(eq.ubi_rw_mttpw),
         ms(ours.ubi_rw_mttpw), ms(u_rw.mttpw_us)},
        {"SW MTTPW", "UBI", "seqwrite, cache mtdblock", 0.961, ms(eq.ubi_sw_mttpw),
         ms(ours_fetch.ubi_sw_mttpw), ms(u_sw.mttpw_us)},
        {"MTTM (a=1,b=0)", "pUBI", "randwrite, cache off", 1976.32, ms(eq.pubi_mttm_max),
         ms(ours.pubi_mttm_max), ms(p_rw.mttm_us)},
        {"RW MTTPW", "pUBI", "randwrite, cache off", 4.71, ms(eq.pubi_rw_mttpw),
         ms(ours.pubi_rw_mttpw), ms(p_rw.mttpw_us)},
        {"SW MTTPW", "pUBI", "seqwrite, cache lazy", 0.863, ms(eq.pubi_sw_mttpw),
         ms(ours.pubi_sw_mttpw), ms(p_sw.mttpw_us)},
    };
    fmt::print("Table II (ms): k = {}, d = {}, l = {}, pUBI D = {}, L = {}; t_e {} us, t_r {} us, "
               "t_w {} us, t_x {} us; {} blocks\n",
               mp.k, mp.d, mp.l, mp.D, mp.L, mp.t_e, mp.t_r, mp.t_w, mp.t_x,
               fo.geometry.block_count);
    fmt::print("{:<16}{:<6}{:<26}{:>10}{:>11}{:>11}{:>11}{:>10}\n", "metric", "", "run", "paper",
               "paper eq.", "our model", "simulated", "vs paper");
    nlohmann::json jr = nlohmann::json::array();
    for (const Row& r : rows) {
      double dev = (r.sim_ms - r.paper_ms) / r.paper_ms * 100;
      fmt::print("{:<16}{:<6}{:<26}{:>10.3f}{:>11.3f}{:>11.3f}{:>11.3f}{:>9.2f}%\n", r.metric,
                 r.scheme, r.run, r.paper_ms, r.equation_ms, r.model_ms, r.sim_ms, dev);
      jr.push_back({{"metric", r.metric},
                    {"scheme", r.scheme},
                    {"run", r.run},
                    {"paper_ms", r.paper_ms},
                    {"equation_ms", r.equation_ms},
                    {"model_ms", r.model_ms},
                    {"simulated_ms", r.sim_ms},
                    {"vs_paper_pct", dev}});
    }
    if (!args->json.empty() && !write_json_output(args->json, jr.dump(2))) return 1;
    return 0;
  };
}

}  // namespace hybridstore::ftl::sim
