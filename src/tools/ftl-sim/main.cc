// ftl-sim: runs workloads on the embedded FTL alone, on a simulated NAND chip
// with the hUBI paper's timing, and reports what the paper reports.
//
//   ftl-sim --workload randwrite --policy hubi --timing paper      (one run)
//   ftl-sim table2                     (the paper's Table II, side by side)
//   ftl-sim attach --size 1G           (attach time after clean/unclean shutdown)
#include <cstdio>
#include <fstream>
#include <iostream>

#include "commands.h"
#include "hscommon/log.h"
#include "sim_options.h"
#include "simulation.h"

namespace hybridstore::ftl::sim {

bool write_json_output(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::cout << text << std::endl;
    return true;
  }
  std::ofstream f(path);
  f << text << "\n";
  if (!f) {
    fprintf(stderr, "ftl-sim: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

}  // namespace hybridstore::ftl::sim

int main(int argc, char** argv) {
  using namespace hybridstore::ftl::sim;
  hybridstore::set_log_level(hybridstore::LogLevel::kError);
  CLI::App app{
      "ftl-sim: workloads on the embedded hUBI FTL over a simulated NAND chip (virtual clock).\n"
      "Without a subcommand, runs one workload and prints MTTPW, MTTM, write amplification,\n"
      "erase counts and latency percentiles."};
  CommonArgs common;
  add_common_options(&app, &common);
  std::string workload = "randwrite", json;
  SimOptions so;
  app.add_option("--workload", workload, "seqwrite, randwrite, mixed (reads and writes), zipf")
      ->check(CLI::IsMember({"seqwrite", "randwrite", "mixed", "zipf"}))
      ->capture_default_str();
  app.add_option("--ops", so.ops, "measured requests")->capture_default_str();
  app.add_option("--warmup-ops", so.warmup_ops,
                 "pages written before measuring (-1 = twice what the log areas hold)")
      ->capture_default_str();
  app.add_option("--request-pages", so.workload.request_pages, "pages per request")
      ->capture_default_str();
  app.add_option("--read-fraction", so.workload.read_fraction,
                 "mixed: share of reads (default: the paper's 10 selects per update)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--theta", so.workload.theta, "zipf skew (zipf, and mixed with --mixed-zipf)")
      ->capture_default_str();
  app.add_flag("--mixed-zipf", so.workload.mixed_zipf, "mixed: Zipf addresses instead of uniform");
  app.add_option("--iops", so.iops, "open loop: Poisson arrivals at this rate (0 = closed loop)")
      ->capture_default_str();
  app.add_option("--think-us", so.think_us, "closed loop: idle time between requests (us)")
      ->capture_default_str();
  app.add_flag("!--no-precondition", so.precondition, "skip writing every LEB first");
  app.add_flag("!--quiet", so.progress, "no progress output");
  app.add_option("--json", json, "also write the result as one JSON object to FILE (- = stdout)");
  app.require_subcommand(0, 1);
  auto table2 = setup_table2(&app);
  auto attach = setup_attach(&app);
  CLI11_PARSE(app, argc, argv);
  for (CLI::App* sub : app.get_subcommands()) {
    if (sub->get_name() == "table2") return table2();
    if (sub->get_name() == "attach") return attach();
  }

  std::string err;
  if (to_ftl_options(common, &so.ftl, &err) < 0) {
    fprintf(stderr, "ftl-sim: %s\n", err.c_str());
    return 2;
  }
  parse_workload(workload, &so.workload.kind);
  so.workload.seed = common.seed;
  SimResult res;
  if (int r = run_simulation(so, &res, &err); r < 0) {
    fprintf(stderr, "ftl-sim: %s (%d)\n", err.c_str(), r);
    return 1;
  }
  print_result(res, json == "-" ? stderr : stdout);
  if (!json.empty() && !write_json_output(json, to_json(res).dump(2))) return 1;
  return 0;
}
