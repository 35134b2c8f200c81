#include "rados_common.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

#include "hybridstore/format/store_format.h"

namespace hybridstore::bench {

namespace fs = std::filesystem;

int begin_mode(ModeRun* m, bool may_create, const std::vector<std::string>& fresh_sets) {
  if (!check_rados_args(&m->a)) return 2;
  std::string why;
  if (!m->a.report.empty() && !report_tools_available(&why)) {
    fprintf(stderr, "hybridstore-bench %s: --report: %s\n", rados_mode_name(m->a.mode), why.c_str());
    return 2;
  }
  if (!open_target(m->a, may_create, fresh_sets, &m->t)) return 1;
  fprintf(stderr, "hybridstore-bench %s: store %s (%s), seed %llu\n", rados_mode_name(m->a.mode), m->t.path.c_str(),
          m->t.temporary ? "fresh, temporary" : m->t.fresh ? "fresh" : "existing",
          (unsigned long long)m->a.seed);
  return 0;
}

RunnerConfig runner_config(const ModeRun& m) {
  RunnerConfig rc;
  rc.concurrency = m.a.concurrent;
  rc.seconds = m.a.seconds;
  rc.show_time = m.a.show_time;
  rc.store = m.t.store.get();
  rc.sample = series_counters();
  return rc;
}

int busiest_tier(const ModeRun& m, bool writes) {
  const PerfCounterSet& p = m.t.store->perf();
  auto now = p.snapshot();
  int busiest = 0;
  uint64_t most = 0;
  for (int t = 0; t < kMaxTiers; ++t) {
    std::string n = std::string(tier_name(tier_at(t))) + (writes ? "_write_bytes" : "_read_bytes");
    int id = p.find(n);
    const uint64_t moved = id < 0 || m.before.empty() ? 0 : now[id].value - m.before[id].value;
    if (moved > most) most = moved, busiest = t;
  }
  return busiest;
}

void measure_ceiling(ModeRun* m, int tier, RawOp op, uint64_t block_size,
                     const std::vector<std::pair<uint64_t, unsigned>>& mix, const std::string& mix_text) {
  if (m->a.raw_seconds <= 0) return;
  m->raw_measured = true;
  StoreStats st;
  m->t.store->statfs(&st);
  if (st.tier[tier].backend.rfind("nand", 0) == 0) {
    m->raw.note = "the SSD is raw NAND behind the embedded FTL: no device file to measure";
    return;
  }
  std::string dev = m->t.path + "/" + tier_device_link(tier_at(tier));
  std::string what = mix.empty() ? std::to_string(block_size) + "-byte" : "mixed-size (" + mix_text + ")";
  fprintf(stderr, "raw ceiling: %.0f s of %s %ss, %d in flight, beside %s...\n", m->a.raw_seconds, what.c_str(),
          raw_op_name(op), m->a.concurrent, dev.c_str());
  m->raw = mix.empty() ? measure_raw(dev, op, block_size, m->a.concurrent, m->a.raw_seconds, m->a.seed)
                       : measure_raw_mix(dev, op, mix, mix_text, m->a.concurrent, m->a.raw_seconds, m->a.seed);
}

int parallel_for(uint64_t count, int threads, const std::string& what, const std::string& unit,
                 const std::function<int(uint64_t)>& fn) {
  Progress progress(what, count, unit);
  std::atomic<uint64_t> next{0};
  std::atomic<int> error{0};
  std::mutex mu;
  std::vector<std::thread> th;
  for (int w = 0; w < threads; ++w)
    th.emplace_back([&] {
      for (uint64_t i; !error && (i = next++) < count;) {
        if (int r = fn(i); r < 0) {
          int zero = 0;
          error.compare_exchange_strong(zero, r);
          return;
        }
        std::lock_guard<std::mutex> l(mu);
        progress.add();
      }
    });
  for (auto& t : th) t.join();
  progress.finish();
  return error;
}

int remove_objects(HybridStore* s, const std::string& prefix, uint64_t count, int threads) {
  return parallel_for(count, threads, "cleanup", "objects", [&](uint64_t n) {
    Transaction t;
    t.remove(pg_coll(n), bench_oid(object_name(prefix, n)));
    return s->apply_transaction(std::move(t));
  });
}

void print_results(ModeRun* m, uint64_t op_size, uint64_t object_size) {
  RadosArgs& a = m->a;
  HybridStore* s = m->t.store.get();
  s->flush();
  m->after = s->perf().snapshot();
  StoreStats st;
  s->statfs(&st);
  for (Tier t : tier_ids(st.tiers)) {
    std::string tn = tier_name(t);
    m->tiers[tn] = {{"total", st.tier[t].total},
                    {"allocated", st.tier[t].allocated},
                    {"free", st.tier[t].free},
                    {"objects", s->perf().get(s->perf().find(tn + "_objects"))},
                    {"backend", st.tier[t].backend}};
    m->nand |= st.tier[t].backend.rfind("nand", 0) == 0;
  }
  print_summary(std::cout, a.mode, m->res, op_size, object_size, a.show_time);
  print_raw_ceiling(m->raw_measured ? &m->raw : nullptr, m->res.bandwidth,
                    a.mode == RadosMode::kSeq || a.mode == RadosMode::kRand);
  if (m->res.verify_errors)
    std::cout << "Verification errors:    " << m->res.verify_errors << " (bytes read differ from what was written)\n";
  std::cout << std::flush;
  m->printed = true;
}

int end_mode(ModeRun* m, uint64_t op_size, uint64_t object_size, bool keep) {
  RadosArgs& a = m->a;
  HybridStore* s = m->t.store.get();
  if (!m->printed) print_results(m, op_size, object_size);
  RunRecord rec;
  rec.args = &a;
  rec.command = command_line();
  rec.store_path = m->t.path;
  rec.temporary = m->t.temporary;
  rec.fresh = m->t.fresh;
  rec.result = &m->res;
  rec.op_size = op_size;
  rec.object_size = object_size;
  rec.raw = m->raw_measured ? &m->raw : nullptr;
  rec.perf = &s->perf();
  rec.perf_before = m->before;
  rec.perf_after = m->after;
  rec.extra = m->extra;
  rec.extra["tiers"] = m->tiers;
  // The erase counts are read from the flash after the store let go of it;
  // the counters stay readable (they live as long as the store object).
  s->umount();
  if (m->nand) {
    auto ec = nand_erase_counts(m->t.path, m->t.cfg);
    if (!ec.empty()) rec.extra["nand"] = {{"erase_counts", ec}};
  }
  nlohmann::json j = run_json(rec);
  int rc = m->res.error ? 1 : m->res.verify_errors ? 1 : 0;
  std::string err;
  if (!a.json.empty()) {
    if (!write_json_file(a.json, j, &err)) {
      fprintf(stderr, "hybridstore-bench: %s\n", err.c_str());
      rc = 1;
    } else {
      m->json_written = a.json;
    }
  }
  if (!a.report.empty()) {
    std::string file = a.report + "/" + rados_mode_name(a.mode) + ".json";
    if (!write_json_file(file, j, &err)) {
      fprintf(stderr, "hybridstore-bench: %s\n", err.c_str());
      rc = 1;
    } else {
      m->json_written = file;
      if (make_report(a.report, {file}) != 0) rc = 1;
      else fprintf(stderr, "report: %s/index.html\n", a.report.c_str());
    }
  }
  if (m->t.temporary && keep)
    fprintf(stderr, "store kept at %s (read it back with --path %s)\n", m->t.path.c_str(), m->t.path.c_str());
  m->t.finish(keep);
  return rc;
}

}  // namespace hybridstore::bench
