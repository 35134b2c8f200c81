// What a run leaves behind besides its lines: the JSON record (figures,
// latency percentiles, per-second series, perf counter differences, the raw
// ceiling), the plotted report, and progress on long phases.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hscommon/config.h"
#include "hscommon/perf_counters.h"
#include "op_runner.h"
#include "raw_ceiling.h"
#include "rados_args.h"

namespace hybridstore::bench {

// Progress of a phase that has no status lines of its own (prefill,
// verification, cleanup): one line redrawn in place on a terminal, a plain
// line every tenth (at most every two seconds) otherwise. On stderr.
class Progress {
 public:
  Progress(std::string what, uint64_t total, std::string unit);
  ~Progress();
  void add(uint64_t n = 1);
  void finish();

 private:
  void show(bool last);
  std::string what_, unit_;
  uint64_t total_, done_ = 0;
  bool tty_;
  bool finished_ = false;
  double started_, last_shown_ = 0;
  uint64_t last_tenth_ = 0;
};

// The perf counters the per-second series records.
const std::vector<std::string>& series_counters();

// The JSON record of one run (schema "hybridstore-bench/1", documented in
// docs/benchmarks.md).
struct RunRecord {
  const RadosArgs* args = nullptr;
  std::string command;
  std::string store_path;
  bool temporary = false, fresh = false;
  const RunResult* result = nullptr;
  uint64_t op_size = 0, object_size = 0;  // 0: mixed sizes
  const RawResult* raw = nullptr;         // null: not measured
  const PerfCounterSet* perf = nullptr;
  std::vector<PerfCounterSet::Value> perf_before, perf_after;
  nlohmann::json extra = nlohmann::json::object();  // mode-specific ("tiers", "nand", "mixed", "verify")
};
nlohmann::json run_json(const RunRecord& r);

// Writes FILE.tmp, then renames: a reader never sees half a file.
bool write_json_file(const std::string& path, const nlohmann::json& j, std::string* error);

// Python and matplotlib, the report's tools, can run here.
bool report_tools_available(std::string* why);
// Plots the runs (JSON files) into `dir` (PNGs and index.html). 0 or 1.
int make_report(const std::string& dir, const std::vector<std::string>& json_files);

// The command line as given, for the record.
std::string command_line();
void set_command_line(int argc, char** argv);

// The raw ceiling and the store's share of it, printed after a summary in
// its label column (`reads`: the narrower one of rados bench's read
// summaries); nothing when not measured.
void print_raw_ceiling(const RawResult* raw, double store_mb_s, bool reads);

// Per-block erase counts of the store's NAND SSD (after umount); empty when
// the SSD is not raw NAND.
std::vector<uint64_t> nand_erase_counts(const std::string& store_path, const Config& cfg);

}  // namespace hybridstore::bench
