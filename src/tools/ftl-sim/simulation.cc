#include "simulation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <vector>

#include <fmt/format.h>

namespace hybridstore::ftl::sim {

namespace {

LatencySummary summarize(std::vector<int64_t>* ns) {
  LatencySummary s;
  s.count = ns->size();
  if (ns->empty()) return s;
  std::sort(ns->begin(), ns->end());
  double sum = 0;
  uint64_t slow = 0;
  for (int64_t v : *ns) {
    sum += static_cast<double>(v);
    if (v > 20'000'000) ++slow;
  }
  auto pct = [&](double p) {
    size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(ns->size()))) - 1;
    return static_cast<double>((*ns)[std::min(i, ns->size() - 1)]) / 1000.0;
  };
  s.mean_us = sum / static_cast<double>(ns->size()) / 1000.0;
  s.p50_us = pct(0.50);
  s.p99_us = pct(0.99);
  s.p999_us = pct(0.999);
  s.max_us = static_cast<double>(ns->back()) / 1000.0;
  s.over_20ms = static_cast<double>(slow) / static_cast<double>(ns->size());
  return s;
}

// Progress on stderr with --progress.
void say(const SimOptions& o, const std::string& m) {
  if (o.progress) fprintf(stderr, "ftl-sim: %s\n", m.c_str());
}

// Brings the device to its steady state before the measured phase: every LEB
// written (--precondition), then warm-up requests of the workload.
int prepare_device(Ftl& ftl, const SimOptions& o, Workload& wl, std::string& data, std::string* error) {
  if (o.precondition) {
    say(o, fmt::format("preconditioning: writing all {} LEBs", ftl.leb_count()));
    for (uint32_t l = 0; l < ftl.leb_count(); ++l)
      if (int r = ftl.write_leb(l, data.data()); r < 0) {
        *error = fmt::format("precondition write of LEB {} failed: {}", l, r);
        return r;
      }
  }
  const ImageParams& im = ftl.image();
  uint64_t warmup = 0;
  if (o.workload.kind != WorkloadKind::kSeqWrite) {
    if (o.warmup_ops >= 0) warmup = static_cast<uint64_t>(o.warmup_ops);
    // Twice the pages the log areas hold: by then their fill levels are spread
    // evenly, as in a device that has been in use for a while.
    else if (im.policy == PolicyKind::kHubi) warmup = 2ull * im.leb_count * im.log_pages;
    else if (im.policy == PolicyKind::kPubi)
      warmup = 2ull * (im.leb_count / im.partition_data) * im.partition_log * im.data_pages;
  }
  if (warmup) {
    say(o, fmt::format("warm-up: {} written pages so the log areas reach their steady state",
                       warmup));
    // Counted in written pages: reads do not move the log areas.
    for (uint64_t written = 0; written < warmup;) {
      Request rq = wl.next();
      if (rq.write) written += rq.count;
      int r = rq.write ? ftl.write_sectors(rq.sector, rq.count, data.data())
                       : ftl.read_sectors(rq.sector, rq.count, &data[0]);
      if (r < 0) {
        *error = fmt::format("warm-up request failed: {}", r);
        return r;
      }
    }
  }
  return 0;
}

// What the measured phase saw.
struct Measured {
  int64_t t_start = 0;
  std::vector<int64_t> wlat, rlat;
  int64_t write_ns = 0;
  uint64_t pages_w = 0, pages_r = 0;
};

// The measured phase: o.ops requests at their arrival times, then the
// flush and background work the writes left behind.
int run_measured(Ftl& ftl, const SimOptions& o, Workload& wl, std::string& data, Measured* m,
                 std::string* error) {
  VirtualClock* clock = ftl.clock();
  m->t_start = clock->now_ns();
  m->wlat.reserve(o.ops);
  std::mt19937_64 arrivals(o.workload.seed + 7);
  std::exponential_distribution<double> gap(o.iops > 0 ? o.iops / 1e9 : 1.0);
  double next_arrival = static_cast<double>(m->t_start);
  const uint32_t ss = ftl.sector_size();
  std::string rbuf(uint64_t(o.workload.request_pages) * ss, '\0');
  uint64_t step = std::max<uint64_t>(1, o.ops / 10);
  for (uint64_t i = 0; i < o.ops; ++i) {
    Request rq = wl.next();
    int64_t arrival;
    if (o.iops > 0) {
      next_arrival += gap(arrivals);
      arrival = static_cast<int64_t>(next_arrival);
    } else {
      arrival = clock->now_ns() + static_cast<int64_t>(o.think_us * 1000);
    }
    if (arrival > clock->now_ns())
      if (int r = ftl.idle_until(arrival); r < 0) {
        *error = fmt::format("background work failed: {}", r);
        return r;
      }
    int64_t begin = clock->now_ns();
    int r;
    if (rq.write) r = ftl.write_sectors(rq.sector, rq.count, data.data() + (rq.sector % 4) * ss);
    else r = ftl.read_sectors(rq.sector, rq.count, &rbuf[0]);
    if (r < 0) {
      *error = fmt::format("{} of {} sectors at {} failed: {}", rq.write ? "write" : "read",
                           rq.count, rq.sector, r);
      return r;
    }
    int64_t lat = clock->now_ns() - std::min(arrival, begin);
    if (rq.write) {
      m->wlat.push_back(lat);
      m->write_ns += o.iops > 0 ? lat : clock->now_ns() - begin;
      m->pages_w += rq.count;
    } else {
      m->rlat.push_back(lat);
      m->pages_r += rq.count;
    }
    if (o.progress && o.ops >= 100000 && (i + 1) % step == 0)
      fprintf(stderr, "ftl-sim: %3.0f%%  %llu requests, %.1f s of flash time\n",
              100.0 * double(i + 1) / double(o.ops), (unsigned long long)(i + 1),
              double(clock->now_ns() - m->t_start) / 1e9);
  }
  // What the writes left behind (the cache, deferred merges) is their cost too.
  int64_t tail0 = clock->now_ns();
  if (int r = ftl.flush(); r < 0) return r;
  if (int r = ftl.policy()->finish_background(); r < 0) return r;
  m->write_ns += clock->now_ns() - tail0;
  return 0;
}

}  // namespace

int run_simulation(const SimOptions& o, SimResult* out, std::string* error) {
  auto w0 = std::chrono::steady_clock::now();
  std::shared_ptr<NandMedia> media = NandMedia::create_memory(o.ftl.geometry);
  if (!media) {
    *error = "cannot allocate the simulated flash (" + describe(o.ftl.geometry) + ")";
    return -ENOMEM;
  }
  std::unique_ptr<Ftl> ftl;
  if (int r = Ftl::format(media, o.ftl, &ftl, error); r < 0) return r;
  SimResult res;
  res.policy = policy_name(ftl->image().policy);
  res.workload = workload_name(o.workload.kind);
  res.cache = cache_mode_name(o.ftl.cache);
  res.background = o.ftl.background_merge;
  res.leb_count = ftl->leb_count();
  res.pages_per_leb = ftl->pages_per_leb();
  res.capacity_bytes = ftl->size_bytes();
  uint64_t sectors = ftl->sector_count();
  if (o.workload.request_pages == 0 || o.workload.request_pages > sectors) {
    *error = "request size must be between 1 and the device size in pages";
    return -EINVAL;
  }

  std::mt19937_64 data_rng(o.workload.seed + 99);
  std::string data(uint64_t(ftl->leb_bytes()), '\0');
  for (char& c : data) c = static_cast<char>(data_rng());

  Workload wl(o.workload, sectors);
  if (int r = prepare_device(*ftl, o, wl, data, error); r < 0) return r;

  const FtlContext& ctx = ftl->context();
  PolicyStats s0 = ctx.stats;
  uint64_t prog0 = ftl->nand()->counters().programs;
  VirtualClock* clock = ftl->clock();
  Measured m;
  if (int r = run_measured(*ftl, o, wl, data, &m, error); r < 0) return r;
  const int64_t t_start = m.t_start;
  const uint64_t pages_w = m.pages_w, pages_r = m.pages_r;
  const int64_t write_ns = m.write_ns;

  const PolicyStats& s1 = ctx.stats;
  int up = static_cast<int>(MergeKind::kUpdate), di = static_cast<int>(MergeKind::kDirect),
      re = static_cast<int>(MergeKind::kRelocate);
  res.ops = o.ops;
  res.pages_written = pages_w;
  res.pages_read = pages_r;
  res.mttpw_us = pages_w ? double(write_ns) / double(pages_w) / 1000.0 : 0;
  res.update_merges = s1.merges[up] - s0.merges[up];
  res.direct_merges = s1.merges[di] - s0.merges[di];
  res.relocations = s1.merges[re] - s0.merges[re];
  res.switch_merges = s1.switch_merges - s0.switch_merges;
  res.mttm_us = res.update_merges
                    ? double(s1.merge_ns[up] - s0.merge_ns[up]) / double(res.update_merges) / 1e3
                    : 0;
  res.direct_merge_us =
      res.direct_merges
          ? double(s1.merge_ns[di] - s0.merge_ns[di]) / double(res.direct_merges) / 1e3
          : 0;
  res.max_merge_us = double(std::max(s1.max_merge_ns[up], s1.max_merge_ns[di])) / 1e3;
  res.foreground_merge_waits = s1.foreground_merge_waits - s0.foreground_merge_waits;
  res.write_amplification =
      pages_w ? double(ftl->nand()->counters().programs - prog0) / double(pages_w) : 0;
  auto sp = ftl->wear_leveler()->ec_spread();
  res.erase_min = sp.min;
  res.erase_max = sp.max;
  res.erase_mean = sp.mean;
  res.writes = summarize(&m.wlat);
  res.reads = summarize(&m.rlat);
  if (res.writes.count + res.reads.count)
    res.slow_request_share =
        (res.writes.over_20ms * double(res.writes.count) +
         res.reads.over_20ms * double(res.reads.count)) /
        double(res.writes.count + res.reads.count);
  res.flash_seconds = double(clock->now_ns() - t_start) / 1e9;
  res.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  std::string err;
  if (int r = ftl->check(&err); r < 0) {
    *error = "FTL invariant broken after the run: " + err;
    return r;
  }
  *out = res;
  return 0;
}

void print_result(const SimResult& r, FILE* f) {
  fmt::print(f, "policy {}  workload {}  cache {}  background merge {}\n", r.policy, r.workload,
             r.cache, r.background ? "on" : "off");
  fmt::print(f, "device: {} LEBs x {} pages = {:.1f} MiB usable\n", r.leb_count, r.pages_per_leb,
             double(r.capacity_bytes) / 1048576.0);
  fmt::print(f, "requests {}  pages written {}  pages read {}  flash time {:.2f} s  wall {:.2f} s\n",
             r.ops, r.pages_written, r.pages_read, r.flash_seconds, r.wall_seconds);
  fmt::print(f, "{:<34}{:>14}\n", "metric", "value");
  auto row = [&](const std::string& k, const std::string& v) {
    fmt::print(f, "{:<34}{:>14}\n", k, v);
  };
  row("MTTPW (ms)", fmt::format("{:.4f}", r.mttpw_us / 1000));
  row("MTTM (ms)", r.update_merges ? fmt::format("{:.3f}", r.mttm_us / 1000) : "-");
  row("update merges", fmt::format("{}", r.update_merges));
  row("direct merges (seq shortcut)", fmt::format("{}", r.direct_merges));
  if (r.direct_merges) row("direct merge time (ms)", fmt::format("{:.3f}", r.direct_merge_us / 1000));
  if (r.switch_merges) row("switch merges (pubi)", fmt::format("{}", r.switch_merges));
  row("relocations (WL, scrub)", fmt::format("{}", r.relocations));
  if (r.background) row("writes that waited for a merge", fmt::format("{}", r.foreground_merge_waits));
  row("write amplification", fmt::format("{:.3f}", r.write_amplification));
  row("erase count min/mean/max",
      fmt::format("{}/{:.1f}/{}", r.erase_min, r.erase_mean, r.erase_max));
  row("write latency p50 (ms)", fmt::format("{:.3f}", r.writes.p50_us / 1000));
  row("write latency p99 (ms)", fmt::format("{:.3f}", r.writes.p99_us / 1000));
  row("write latency p99.9 (ms)", fmt::format("{:.3f}", r.writes.p999_us / 1000));
  row("write latency max (ms)", fmt::format("{:.3f}", r.writes.max_us / 1000));
  row("writes slower than 20 ms", fmt::format("{:.4f}%", r.writes.over_20ms * 100));
  if (r.reads.count) {
    row("read latency p50 (ms)", fmt::format("{:.3f}", r.reads.p50_us / 1000));
    row("read latency p99.9 (ms)", fmt::format("{:.3f}", r.reads.p999_us / 1000));
    row("reads slower than 20 ms", fmt::format("{:.4f}%", r.reads.over_20ms * 100));
    row("requests slower than 20 ms", fmt::format("{:.4f}%", r.slow_request_share * 100));
  }
}

nlohmann::json to_json(const SimResult& r) {
  nlohmann::json j;
  j["policy"] = r.policy;
  j["workload"] = r.workload;
  j["cache"] = r.cache;
  j["background_merge"] = r.background;
  j["requests"] = r.ops;
  j["pages_written"] = r.pages_written;
  j["pages_read"] = r.pages_read;
  j["mttpw_us"] = r.mttpw_us;
  j["mttm_us"] = r.mttm_us;
  j["update_merges"] = r.update_merges;
  j["direct_merges"] = r.direct_merges;
  j["direct_merge_us"] = r.direct_merge_us;
  j["relocations"] = r.relocations;
  j["write_amplification"] = r.write_amplification;
  j["erase_min"] = r.erase_min;
  j["erase_mean"] = r.erase_mean;
  j["erase_max"] = r.erase_max;
  j["p50_us"] = r.writes.p50_us;
  j["p99_us"] = r.writes.p99_us;
  j["p999_us"] = r.writes.p999_us;
  j["max_us"] = r.writes.max_us;
  j["slow_write_share"] = r.writes.over_20ms;
  j["read_p999_us"] = r.reads.p999_us;
  j["slow_read_share"] = r.reads.over_20ms;
  j["slow_request_share"] = r.slow_request_share;
  j["foreground_merge_waits"] = r.foreground_merge_waits;
  j["flash_seconds"] = r.flash_seconds;
  return j;
}

}  // namespace hybridstore::ftl::sim
