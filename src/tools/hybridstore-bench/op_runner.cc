#include "op_runner.h"

#include <sys/resource.h>
#include <sys/time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <iomanip>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

namespace hybridstore::bench {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Shared state of a run, under `mu`.
struct RunState {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  bool stop = false;
  uint64_t started = 0, finished = 0, bytes = 0;
  int in_flight = 0;
  double cur_lat = 0, total_lat = 0, avg_lat = 0, lat_diff_sum = 0;
  double min_lat = 9999.0, max_lat = 0;
  std::vector<double> lat;
};

// What the status printer keeps of the per-second figures, as rados bench
// does.
struct PerSecond {
  double min_bw = 99999999.0, max_bw = 0;
  int min_iops = INT_MAX, max_iops = 0;
  double bw_avg = 0, bw_diff = 0, iops_avg = 0, iops_diff = 0;
  int bw_cycles = 0, iops_cycles = 0;
};

// The status printer: rados bench's status_printer, line for line. Runs
// until st.done.
void print_status(RunState& st, const RunnerConfig& cfg, Clock::time_point t0,
                  const std::vector<int>& sample_ids, PerSecond* ps, RunResult* res) {
  std::unique_lock<std::mutex> l(st.mu);
  uint64_t previous = 0, previous_bytes = 0;
  int cycles_since_change = 0;
  for (int i = 0; !st.done; ++i) {
    std::ostringstream line;
    if (i % 20 == 0 && !cfg.quiet) {
      if (i > 0)
        line << local_time_prefix() << "min lat: " << st.min_lat << " max lat: " << st.max_lat
             << " avg lat: " << st.avg_lat << "\n";
      if (cfg.show_time) line << local_time_prefix();
      line << std::setfill(' ') << std::setw(5) << "sec" << std::setw(8) << "Cur ops" << std::setw(10) << "started"
           << std::setw(10) << "finished" << std::setw(10) << "avg MB/s" << std::setw(10) << "cur MB/s"
           << std::setw(12) << "last lat(s)" << std::setw(12) << "avg lat(s)" << "\n";
    }
    double bw = -1, iops = -1;
    if (cycles_since_change) {
      bw = static_cast<double>(st.bytes - previous_bytes) / (1024 * 1024) / cycles_since_change;
      iops = static_cast<double>(st.finished - previous) / cycles_since_change;
    }
    if (bw > -1) {
      ps->max_bw = std::max(ps->max_bw, bw);
      ps->min_bw = std::min(ps->min_bw, bw);
      ++ps->bw_cycles;
      double d = bw - ps->bw_avg;
      ps->bw_avg += d / ps->bw_cycles;
      ps->bw_diff += d * (bw - ps->bw_avg);
    }
    if (iops > -1) {
      int ii = static_cast<int>(iops);  // rados keeps IOPS as an int
      ps->max_iops = std::max(ps->max_iops, ii);
      ps->min_iops = std::min(ps->min_iops, ii);
      ++ps->iops_cycles;
      double d = ii - ps->iops_avg;
      ps->iops_avg += d / ps->iops_cycles;
      ps->iops_diff += d * (ii - ps->iops_avg);
    }
    double elapsed = since(t0);
    double avg_bw = elapsed > 0 ? static_cast<double>(st.bytes) / elapsed / (1024 * 1024) : 0;
    SecondSample s;
    s.sec = i;
    s.cur_ops = st.in_flight;
    s.started = st.started;
    s.finished = st.finished;
    s.avg_mb_s = avg_bw;
    s.avg_lat = st.avg_lat;
    if (cfg.show_time) line << local_time_prefix();
    line << std::setfill(' ') << std::setw(5) << i << ' ' << std::setw(7) << st.in_flight << ' ' << std::setw(9)
         << st.started << ' ' << std::setw(9) << st.finished << ' ' << std::setw(9) << avg_bw << ' ';
    // rados bench prints a bandwidth of -1 when operations finish before
    // the first status line; that second shows as one without news.
    if (previous != st.finished && bw > -1) {
      previous = st.finished;
      previous_bytes = st.bytes;
      cycles_since_change = 0;
      s.cur_mb_s = bw;
      s.iops = iops;
      s.last_lat = st.cur_lat;
      line << std::setw(9) << bw << ' ' << std::setw(11) << st.cur_lat << ' ' << std::setw(11) << st.avg_lat;
    } else {
      if (previous != st.finished) {
        previous = st.finished;
        previous_bytes = st.bytes;
        cycles_since_change = 0;
      }
      line << std::setw(9) << '0' << ' ' << std::setw(11) << '-' << ' ' << std::setw(11) << st.avg_lat;
    }
    for (int id : sample_ids) s.perf.push_back(id >= 0 ? cfg.store->perf().get(id) : 0);
    res->series.push_back(std::move(s));
    if (!cfg.quiet) std::cout << line.str() << std::endl;
    ++cycles_since_change;
    st.cv.wait_until(l, t0 + std::chrono::seconds(i + 1), [&] { return st.done; });
  }
}

// One worker: runs operations until the time, the operation count or an
// error ends the run.
void run_worker(int w, RunState& st, const RunnerConfig& cfg, const OpFn& op, Clock::time_point stop_at,
                RunResult* res) {
  for (;;) {
    uint64_t index;
    {
      std::lock_guard<std::mutex> l(st.mu);
      if (st.stop || Clock::now() >= stop_at || (cfg.max_ops && st.started >= cfg.max_ops)) return;
      index = st.started++;
      ++st.in_flight;
    }
    auto begin = Clock::now();
    uint64_t bytes = 0;
    int r = op(w, index, &bytes);
    double lat = since(begin);
    std::lock_guard<std::mutex> l(st.mu);
    --st.in_flight;
    if (r == kNoMoreOps) {
      --st.started;
      st.stop = true;
      return;
    }
    if (r < 0) {
      if (!res->error) {
        res->error = r;
        res->error_message = "operation " + std::to_string(index) + " failed: " + strerror(-r);
      }
      st.stop = true;
      return;
    }
    if (r > 0) res->verify_errors += static_cast<uint64_t>(r);
    st.cur_lat = lat;
    st.total_lat += lat;
    st.max_lat = std::max(st.max_lat, lat);
    st.min_lat = std::min(st.min_lat, lat);
    ++st.finished;
    double delta = lat - st.avg_lat;
    st.avg_lat = st.total_lat / static_cast<double>(st.finished);
    st.lat_diff_sum += delta * (lat - st.avg_lat);
    st.bytes += bytes;
    st.lat.push_back(lat);
  }
}

}  // namespace

std::string local_time_prefix() {
  struct timeval tv;
  gettimeofday(&tv, nullptr);
  struct tm tm;
  localtime_r(&tv.tv_sec, &tm);
  char buf[64], zone[8];
  strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  strftime(zone, sizeof(zone), "%z", &tm);
  char out[96];
  snprintf(out, sizeof(out), "%s.%06ld%s ", buf, static_cast<long>(tv.tv_usec), zone);
  return out;
}

double percentile_of(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double rank = p / 100.0 * static_cast<double>(v.size() - 1);
  size_t i = static_cast<size_t>(rank + 0.5);
  return v[std::min(i, v.size() - 1)];
}

RunResult run_ops(const RunnerConfig& cfg, const OpFn& op) {
  RunState st;
  RunResult res;
  const auto t0 = Clock::now();
  const auto stop_at = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(cfg.seconds));
  std::vector<int> sample_ids;
  if (cfg.store)
    for (const auto& n : cfg.sample) sample_ids.push_back(cfg.store->perf().find(n));

  PerSecond ps;
  struct rusage ru0;
  getrusage(RUSAGE_SELF, &ru0);
  std::thread printer([&] { print_status(st, cfg, t0, sample_ids, &ps, &res); });

  std::vector<std::thread> workers;
  for (int w = 0; w < cfg.concurrency; ++w)
    workers.emplace_back([&, w] { run_worker(w, st, cfg, op, stop_at, &res); });
  for (auto& t : workers) t.join();
  res.time_run = since(t0);
  struct rusage ru1;
  getrusage(RUSAGE_SELF, &ru1);
  auto secs = [](const timeval& a, const timeval& b) {
    return static_cast<double>(b.tv_sec - a.tv_sec) + static_cast<double>(b.tv_usec - a.tv_usec) / 1e6;
  };
  res.cpu_user = secs(ru0.ru_utime, ru1.ru_utime);
  res.cpu_sys = secs(ru0.ru_stime, ru1.ru_stime);
  {
    std::lock_guard<std::mutex> l(st.mu);
    st.done = true;
  }
  st.cv.notify_all();
  printer.join();

  res.started = st.started;
  res.finished = st.finished;
  res.bytes = st.bytes;
  res.latencies = std::move(st.lat);
  res.avg_lat = st.avg_lat;
  res.max_lat = st.max_lat;
  res.min_lat = st.finished ? st.min_lat : 0;
  res.stddev_lat = st.finished > 1 ? std::sqrt(st.lat_diff_sum / static_cast<double>(st.finished - 1)) : 0;
  res.bandwidth = res.time_run > 0 ? static_cast<double>(st.bytes) / res.time_run / (1024 * 1024) : 0;
  res.avg_iops = res.time_run > 0 ? static_cast<int>(static_cast<double>(st.finished) / res.time_run) : 0;
  res.stddev_bw = ps.bw_cycles > 1 ? std::sqrt(ps.bw_diff / (ps.bw_cycles - 1)) : 0;
  res.stddev_iops = ps.iops_cycles > 1 ? std::sqrt(ps.iops_diff / (ps.iops_cycles - 1)) : 0;
  // A run shorter than a status period has no per-second figures; rados
  // bench then reports the whole run's.
  res.max_bw = ps.bw_cycles ? ps.max_bw : res.bandwidth;
  res.min_bw = ps.bw_cycles ? ps.min_bw : res.bandwidth;
  res.max_iops = ps.iops_cycles ? ps.max_iops : res.avg_iops;
  res.min_iops = ps.iops_cycles ? ps.min_iops : res.avg_iops;
  return res;
}

namespace {
// After rados bench's own lines, which scripts read by their labels.
void print_cpu(std::ostream& out, const RunResult& r, const char* label) {
  const double n = r.finished ? static_cast<double>(r.finished) : 1;
  out << label << std::fixed << std::setprecision(1) << r.cpu_us_per_op() << " (user "
      << r.cpu_user * 1e6 / n << ", sys " << r.cpu_sys * 1e6 / n << ")" << std::defaultfloat
      << std::setprecision(6) << "\n";
}
}  // namespace

void print_summary(std::ostream& out, RadosMode mode, const RunResult& r, uint64_t op_size, uint64_t object_size,
                   bool show_time) {
  std::string pre = show_time ? local_time_prefix() : "";
  auto size = [&](uint64_t v) { return v ? std::to_string(v) : std::string("mixed"); };
  if (mode == RadosMode::kSeq || mode == RadosMode::kRand) {
    out << pre << "Total time run:       " << r.time_run << "\n"
        << "Total reads made:     " << r.finished << "\n"
        << "Read size:            " << size(op_size) << "\n"
        << "Object size:          " << size(object_size) << "\n"
        << "Bandwidth (MB/sec):   " << std::setprecision(6) << r.bandwidth << "\n"
        << "Average IOPS:         " << r.avg_iops << "\n"
        << "Stddev IOPS:          " << r.stddev_iops << "\n"
        << "Max IOPS:             " << r.max_iops << "\n"
        << "Min IOPS:             " << r.min_iops << "\n"
        << "Average Latency(s):   " << r.avg_lat << "\n"
        << "Max latency(s):       " << r.max_lat << "\n"
        << "Min latency(s):       " << r.min_lat << "\n";
    print_cpu(out, r, "CPU per op (us):      ");
    return;
  }
  const bool ops = mode == RadosMode::kMixed;
  out << pre << "Total time run:         " << r.time_run << "\n"
      << (ops ? "Total ops made:         " : "Total writes made:      ") << r.finished << "\n"
      << (ops ? "Op size:                " : "Write size:             ") << size(op_size) << "\n"
      << "Object size:            " << size(object_size) << "\n"
      << "Bandwidth (MB/sec):     " << std::setprecision(6) << r.bandwidth << "\n"
      << "Stddev Bandwidth:       " << r.stddev_bw << "\n"
      << "Max bandwidth (MB/sec): " << r.max_bw << "\n"
      << "Min bandwidth (MB/sec): " << r.min_bw << "\n"
      << "Average IOPS:           " << r.avg_iops << "\n"
      << "Stddev IOPS:            " << r.stddev_iops << "\n"
      << "Max IOPS:               " << r.max_iops << "\n"
      << "Min IOPS:               " << r.min_iops << "\n"
      << "Average Latency(s):     " << r.avg_lat << "\n"
      << "Stddev Latency(s):      " << r.stddev_lat << "\n"
      << "Max latency(s):         " << r.max_lat << "\n"
      << "Min latency(s):         " << r.min_lat << "\n";
  print_cpu(out, r, "CPU per op (us):        ");
}

}  // namespace hybridstore::bench
