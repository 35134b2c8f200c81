// The rados bench loop: N operations in flight until the time is up (or a
// number of operations is reached), a status line every second in rados
// bench's columns, and its closing summary with the same labels in the same
// order. Each worker thread has one operation in flight, as each of rados
// bench's completion slots does.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "hybridstore/store/hybrid_store.h"
#include "rados_args.h"

namespace hybridstore::bench {

// Runs operation `index` on `worker` (0..concurrency-1): 0 or a negative
// errno; *bytes gets what it moved. A positive return counts a
// verification error (the run goes on, as rados bench's does);
// kNoMoreOps ends the run early (a finished trace), the op not counted.
using OpFn = std::function<int(int worker, uint64_t index, uint64_t* bytes)>;
constexpr int kNoMoreOps = 1 << 30;

struct RunnerConfig {
  int concurrency = 16;
  double seconds = 10;
  uint64_t max_ops = 0;  // 0: until the time is up
  bool show_time = false;
  HybridStore* store = nullptr;         // sampled every second (perf counters)
  std::vector<std::string> sample;      // counters recorded in the series
  bool quiet = false;                   // no status lines (tests of the loop)
};

struct SecondSample {
  int sec = 0;
  int cur_ops = 0;
  uint64_t started = 0, finished = 0;
  double avg_mb_s = 0;
  double cur_mb_s = -1;    // -1: nothing finished this second ("0" in the line)
  double last_lat = -1;    // -1: "-"
  double avg_lat = 0;
  double iops = -1;
  std::vector<uint64_t> perf;  // RunnerConfig::sample, in that order
};

struct RunResult {
  double time_run = 0;
  uint64_t started = 0, finished = 0, bytes = 0;
  uint64_t verify_errors = 0;
  int error = 0;  // first failed operation's errno (negative), 0 if none
  std::string error_message;
  std::vector<double> latencies;  // seconds, in completion order
  double avg_lat = 0, stddev_lat = 0, max_lat = 0, min_lat = 0;
  double bandwidth = 0, stddev_bw = 0, max_bw = 0, min_bw = 0;  // MB/s (2^20 bytes)
  int avg_iops = 0, max_iops = 0, min_iops = 0;
  double stddev_iops = 0;
  std::vector<SecondSample> series;
  // CPU time of the whole process (every thread, the store's included) over
  // the timed phase: what a design that trades syscalls and threads for
  // fewer device bytes has to be judged by, and which the run's own
  // setup (making the store, a prefill) would otherwise swamp.
  double cpu_user = 0, cpu_sys = 0;  // seconds
  // Microseconds of CPU per finished op; 0 when none finished.
  double cpu_us_per_op() const {
    return finished ? (cpu_user + cpu_sys) * 1e6 / static_cast<double>(finished) : 0;
  }
};

RunResult run_ops(const RunnerConfig& cfg, const OpFn& op);

// rados bench's closing summary (write: "Total writes made" ...; reads:
// "Total reads made" ...), to out. `op_size` 0 prints "mixed" sizes.
void print_summary(std::ostream& out, RadosMode mode, const RunResult& r, uint64_t op_size, uint64_t object_size,
                   bool show_time);
// Local time as rados bench --show-time prints it.
std::string local_time_prefix();

double percentile_of(std::vector<double> v, double p);

}  // namespace hybridstore::bench
