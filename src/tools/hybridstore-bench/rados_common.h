// What every rados-style mode does around its run: the preamble, perf
// snapshots, the raw ceiling, the summary, the JSON record and the report,
// and leaving the store as the options say.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_output.h"
#include "bench_target.h"
#include "op_runner.h"
#include "raw_ceiling.h"
#include "rados_args.h"

namespace hybridstore::bench {

struct ModeRun {
  explicit ModeRun(RadosArgs* args) : a(*args) {}
  RadosArgs& a;
  BenchTarget t;
  std::vector<PerfCounterSet::Value> before;
  RunResult res;
  RawResult raw;
  bool raw_measured = false;
  nlohmann::json extra = nlohmann::json::object();
  std::string json_written;  // the JSON file of this run (for a combined report)
  // Taken when the results are printed: cleanup after it does not count.
  bool printed = false;
  std::vector<PerfCounterSet::Value> after;
  nlohmann::json tiers;
  bool nand = false;
};

// Checks the options and the report tools, opens the store (making it when
// `may_create`), prints where and with which seed. Returns 0 to go on, or
// the exit code.
int begin_mode(ModeRun* m, bool may_create, const std::vector<std::string>& fresh_sets = {});

// The runner's settings for this mode's options.
RunnerConfig runner_config(const ModeRun& m);

// Measures the raw ceiling on the tier `tier` (0 ssd, 1 hdd) unless
// --raw-seconds 0 or the SSD is raw NAND.
void measure_ceiling(ModeRun* m, int tier, RawOp op, uint64_t block_size,
                     const std::vector<std::pair<uint64_t, unsigned>>& mix = {}, const std::string& mix_text = "");
// The tier that moved most bytes during the run (writes or reads).
int busiest_tier(const ModeRun& m, bool writes);

// The summary and the raw ceiling, and the counters and tiers as they are
// at the end of the run (rados bench prints before it cleans up).
void print_results(ModeRun* m, uint64_t op_size, uint64_t object_size);
// print_results if not done yet, then the JSON record and the report;
// umounts the store and removes a temporary one unless `keep`. Returns the
// exit code.
int end_mode(ModeRun* m, uint64_t op_size, uint64_t object_size, bool keep);

// Removes objects 0..count-1 of a run, `threads` at a time, with progress.
int remove_objects(HybridStore* s, const std::string& prefix, uint64_t count, int threads);

// The modes, for the commands and the demo. Each opens and closes the
// store; the exit code as the command's.
int run_write(RadosArgs* a, ModeRun* m);
int run_read(RadosArgs* a, ModeRun* m);
int run_randwrite(RadosArgs* a, ModeRun* m);
int run_mixed(RadosArgs* a, ModeRun* m);

// Runs `fn(index)` for 0..count-1 on `threads` threads with progress; stops
// at the first error and returns it.
int parallel_for(uint64_t count, int threads, const std::string& what, const std::string& unit,
                 const std::function<int(uint64_t)>& fn);

}  // namespace hybridstore::bench
