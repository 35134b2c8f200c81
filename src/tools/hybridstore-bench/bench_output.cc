#include "bench_output.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "bench_util.h"
#include "ftl/nand_block_device.h"
#include "tools/common/perf_json.h"

namespace hybridstore::bench {

namespace fs = std::filesystem;

namespace {
double wall_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
std::string& command_text() {
  static std::string s;
  return s;
}
}  // namespace

// ------------------------------------------------------------------ progress

Progress::Progress(std::string what, uint64_t total, std::string unit)
    : what_(std::move(what)), unit_(std::move(unit)), total_(total), tty_(isatty(STDERR_FILENO) == 1),
      started_(wall_now()) {}

Progress::~Progress() { finish(); }

void Progress::add(uint64_t n) {
  done_ += n;
  double now = wall_now();
  uint64_t tenth = total_ ? done_ * 10 / total_ : 0;
  if (tty_ ? now - last_shown_ >= 0.1 : (tenth > last_tenth_ && now - last_shown_ >= 2.0)) {
    last_tenth_ = tenth;
    show(false);
  }
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  show(true);
}

void Progress::show(bool last) {
  last_shown_ = wall_now();
  double pct = total_ ? 100.0 * static_cast<double>(done_) / static_cast<double>(total_) : 100.0;
  char line[256];
  snprintf(line, sizeof(line), "%s: %llu/%llu %s (%.0f%%), %.1f s", what_.c_str(), (unsigned long long)done_,
           (unsigned long long)total_, unit_.c_str(), pct, last_shown_ - started_);
  if (tty_)
    fprintf(stderr, "\r\033[K%s%s", line, last ? "\n" : "");
  else
    fprintf(stderr, "%s\n", line);
  fflush(stderr);
}

// ------------------------------------------------------------------ JSON

const std::vector<std::string>& series_counters() {
  static const std::vector<std::string> v = {
      "ssd_bytes_used",   "hdd_bytes_used",   "ssd_objects",         "hdd_objects",
      "migrate_up_ops",   "migrate_down_ops", "migrate_up_bytes",    "migrate_down_bytes",
      "migration_passes", "cleaner_passes",   "cleaner_bytes_moved", "ssd_free_erase_units",
      "deferred_queue_bytes", "ftl_merges",   "ftl_erases"};
  return v;
}

std::string command_line() { return command_text(); }

void set_command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) {
    if (i) s += ' ';
    s += i == 0 ? fs::path(argv[0]).filename().string() : argv[i];
  }
  command_text() = s;
}

nlohmann::json run_json(const RunRecord& rec) {
  using nlohmann::json;
  const RadosArgs& a = *rec.args;
  const RunResult& r = *rec.result;
  const bool reads = a.mode == RadosMode::kSeq || a.mode == RadosMode::kRand;
  const bool ops = a.mode == RadosMode::kMixed;
  auto num_or_null = [](double v) { return v < 0 ? json(nullptr) : json(v); };
  json j;
  j["schema"] = "hybridstore-bench/1";
  j["mode"] = rados_mode_name(a.mode);
  j["command"] = rec.command;
  char when[64];
  time_t t = time(nullptr);
  strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S%z", localtime(&t));
  j["date"] = when;
  j["seed"] = a.seed;
  double load[3] = {0, 0, 0};
  getloadavg(load, 3);
  j["machine"] = {{"cpus", std::thread::hardware_concurrency()}, {"loadavg", {load[0], load[1], load[2]}},
                  {"malloc", malloc_name()}};
  j["store"] = {{"path", rec.store_path}, {"temporary", rec.temporary}, {"fresh", rec.fresh}};
  j["options"] = {{"block_size", rec.op_size},       {"object_size", rec.object_size},
                  {"concurrent_ios", a.concurrent},  {"seconds", a.seconds},
                  {"max_objects", a.max_objects},    {"run_name", a.run_name},
                  {"object_mix", a.object_mix_text}, {"no_verify", a.no_verify}};
  json s;
  s["total_time_run"] = r.time_run;
  s[reads ? "total_reads_made" : ops ? "total_ops_made" : "total_writes_made"] = r.finished;
  s[reads ? "read_size" : ops ? "op_size" : "write_size"] = rec.op_size;
  s["object_size"] = rec.object_size;
  s["bandwidth"] = r.bandwidth;
  s["stddev_bandwidth"] = r.stddev_bw;
  s["max_bandwidth"] = r.max_bw;
  s["min_bandwidth"] = r.min_bw;
  s["average_iops"] = r.avg_iops;
  s["stddev_iops"] = r.stddev_iops;
  s["max_iops"] = r.max_iops;
  s["min_iops"] = r.min_iops;
  s["average_latency"] = r.avg_lat;
  s["stddev_latency"] = r.stddev_lat;
  s["max_latency"] = r.max_lat;
  s["min_latency"] = r.min_lat;
  s["bytes"] = r.bytes;
  s["verify_errors"] = r.verify_errors;
  s["cpu_user_seconds"] = r.cpu_user;
  s["cpu_sys_seconds"] = r.cpu_sys;
  s["cpu_us_per_op"] = r.cpu_us_per_op();
  j["summary"] = s;
  std::vector<double> sorted = r.latencies;
  std::sort(sorted.begin(), sorted.end());
  j["latency_percentiles"] = {{"p50", percentile_of(sorted, 50)},
                              {"p90", percentile_of(sorted, 90)},
                              {"p99", percentile_of(sorted, 99)},
                              {"p99.9", percentile_of(sorted, 99.9)}};
  // At most ~500 points: enough for a smooth curve, small enough to keep.
  json cdf = json::array();
  size_t step = std::max<size_t>(1, sorted.size() / 500);
  for (size_t i = 0; i < sorted.size(); i += step)
    cdf.push_back({sorted[i], static_cast<double>(i + 1) / static_cast<double>(sorted.size())});
  if (!sorted.empty()) cdf.push_back({sorted.back(), 1.0});
  j["latency_cdf"] = cdf;
  json series = {{"sec", json::array()},     {"cur_ops", json::array()}, {"started", json::array()},
                 {"finished", json::array()}, {"avg_mb_s", json::array()}, {"cur_mb_s", json::array()},
                 {"iops", json::array()},    {"last_lat", json::array()}, {"avg_lat", json::array()}};
  json perf_series = json::object();
  for (const auto& n : series_counters()) perf_series[n] = json::array();
  for (const auto& p : r.series) {
    series["sec"].push_back(p.sec);
    series["cur_ops"].push_back(p.cur_ops);
    series["started"].push_back(p.started);
    series["finished"].push_back(p.finished);
    series["avg_mb_s"].push_back(p.avg_mb_s);
    series["cur_mb_s"].push_back(num_or_null(p.cur_mb_s));
    series["iops"].push_back(num_or_null(p.iops));
    series["last_lat"].push_back(num_or_null(p.last_lat));
    series["avg_lat"].push_back(p.avg_lat);
    for (size_t i = 0; i < series_counters().size() && i < p.perf.size(); ++i)
      perf_series[series_counters()[i]].push_back(p.perf[i]);
  }
  series["perf"] = perf_series;
  j["series"] = series;
  if (rec.raw && rec.raw->ok) {
    const RawResult& w = *rec.raw;
    j["raw_ceiling"] = {{"op", raw_op_name(w.op)}, {"sizes", w.sizes}, {"file", w.file},         {"backend", w.backend},   {"block_size", w.block_size},
                        {"queue_depth", w.queue_depth}, {"seconds", w.seconds}, {"ops", w.ops},
                        {"bytes", w.bytes},       {"mb_s", w.mb_s},         {"iops", w.iops}};
    j["store_over_raw"] = w.mb_s > 0 ? r.bandwidth / w.mb_s : 0.0;
  } else {
    j["raw_ceiling"] = nullptr;
    j["store_over_raw"] = nullptr;
    if (rec.raw) j["raw_ceiling_note"] = rec.raw->note;
  }
  if (rec.perf) {
    j["perf"] = {{"delta", tools::perf_delta_json(*rec.perf, rec.perf_before, rec.perf_after)},
                 {"after", tools::perf_dump_json(*rec.perf, rec.perf_after)},
                 {"histograms", tools::perf_histogram_delta_json(*rec.perf, rec.perf_before, rec.perf_after)}};
  }
  for (auto it = rec.extra.begin(); it != rec.extra.end(); ++it) j[it.key()] = it.value();
  return j;
}

bool write_json_file(const std::string& path, const nlohmann::json& j, std::string* error) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    if (!f || !(f << j.dump(1) << "\n") || !f.flush()) {
      *error = "cannot write " + tmp;
      std::error_code ec;
      fs::remove(tmp, ec);
      return false;
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    *error = "cannot rename " + tmp + " to " + path + ": " + ec.message();
    fs::remove(tmp, ec);
    return false;
  }
  return true;
}

// ------------------------------------------------------------------ report

namespace {

std::string script_path() {
  // Installed next to the binary by the build (src/tools/CMakeLists.txt).
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path p = exe.parent_path() / "hybridstore-bench-report.py";
    if (fs::exists(p)) return p.string();
  }
  return "";
}

int run(const std::vector<std::string>& argv, bool quiet) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (quiet) {
      FILE* n = freopen("/dev/null", "w", stdout);
      (void)n;
      n = freopen("/dev/null", "w", stderr);
      (void)n;
    }
    std::vector<char*> args;
    for (const auto& s : argv) args.push_back(const_cast<char*>(s.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The first Python that has matplotlib: the one on PATH, else Debian's
// (python3-matplotlib is installed for /usr/bin/python3, which a pyenv or
// virtualenv on PATH hides).
const std::string& python() {
  static const std::string p = [] {
    for (const char* c : {"python3", "/usr/bin/python3"})
      if (run({c, "-c", "import matplotlib"}, true) == 0) return std::string(c);
    return std::string();
  }();
  return p;
}

}  // namespace

bool report_tools_available(std::string* why) {
  if (script_path().empty()) {
    *why = "hybridstore-bench-report.py is not next to the binary (rebuild)";
    return false;
  }
  if (python().empty()) {
    *why = "python3 with matplotlib is needed for --report (Debian: python3-matplotlib; `make deps` installs it)";
    return false;
  }
  return true;
}

int make_report(const std::string& dir, const std::vector<std::string>& json_files) {
  std::vector<std::string> argv = {python(), script_path(), dir};
  argv.insert(argv.end(), json_files.begin(), json_files.end());
  int r = run(argv, false);
  if (r != 0) {
    fprintf(stderr, "hybridstore-bench: the report script failed (exit %d)\n", r);
    return 1;
  }
  return 0;
}

void print_raw_ceiling(const RawResult* raw, double store_mb_s, bool reads) {
  if (!raw) return;
  auto label = [&](const char* l) {
    std::string s = l;
    s.resize(std::max<size_t>(s.size() + 1, reads ? 22 : 24), ' ');
    return s;
  };
  if (!raw->ok) {
    std::cout << label("Raw ceiling (MB/sec):") << "not measured: " << raw->note << "\n";
    return;
  }
  std::cout << label("Raw ceiling (MB/sec):") << raw->mb_s << "  ("
            << (raw->sizes.empty() ? std::to_string(raw->block_size) + "-byte " : "mixed-size (" + raw->sizes + ") ")
            << raw_op_name(raw->op) << "s, " << raw->queue_depth << " in flight, " << raw->backend << ", "
            << raw->file << ")\n"
            << label("Store / raw ceiling:") << (raw->mb_s > 0 ? store_mb_s / raw->mb_s : 0) << "\n";
}

std::vector<uint64_t> nand_erase_counts(const std::string& store_path, const Config& cfg) {
  std::vector<uint64_t> out;
  std::string err;
  std::error_code ec;
  std::string dev = store_path + "/block.ssd";
  if (!fs::exists(dev, ec)) return out;
  auto bd = ftl::open_nand_block_device(cfg, dev, false, &err);
  auto* nand = dynamic_cast<ftl::NandBlockDevice*>(bd.get());
  if (!nand) return out;
  auto* wl = nand->ftl()->wear_leveler();
  for (uint32_t p = 0; p < wl->peb_count(); ++p) out.push_back(wl->ec(p));
  return out;
}

}  // namespace hybridstore::bench
