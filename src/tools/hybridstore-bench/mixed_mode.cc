// mixed: the tiering profiles (HRO Table I: mail, office, research) replayed
// against the real engine, as fast as -t operations in flight allow, so the
// migrator and the SSD cleaner work during the run.
//
// The trace's files become objects <prefix>_file<N>, written whole first
// (on the HDD by default: the paper's day 1 starts with an empty SSD). Its
// reads and writes become object reads and writes at the trace's offsets,
// its metadata ops become stats. At the end of each trace day a migration
// pass runs in the background (the paper migrates at midnight) while the
// requests go on; the cleaner runs by itself when free erase units run
// short. Every write rewrites the bytes the file already holds, so every
// read can be checked even while objects move between tiers.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <iostream>
#include <mutex>
#include <thread>

#include "bench_command.h"
#include "hscommon/config.h"
#include "hybridstore/tier/migrator.h"
#include "rados_common.h"
#include "testing/workload_profiles.h"

namespace hybridstore::bench {
namespace {

// Whether a store made with the run's --conf and --set options keeps
// RocksDB on its SSD (hybridstore_kv_location, device by default). A bad
// option is refused later, where the store is made.
bool kv_on_ssd(const RadosArgs& a) {
  Config c;
  std::string err;
  if (!a.conf.empty()) c.load_ini(a.conf, &err);
  for (const auto& kv : a.sets) c.set_from_arg(kv, &err);
  return c.get_str("hybridstore_kv_location") == "device";
}

// A fresh store gets an SSD a fifth of the data set (at least 64 MiB), so
// that the planner has to choose and the SSD fills up enough to clean. With
// RocksDB on the SSD (the default) the kvfs takes its share of the tier
// first, which the data's fifth comes on top of: its initial size (1/16, at
// least 64 MiB), the reserve (1/32) and allocation slack (docs/kvfs.md 2.4),
// about an eighth and at least 128 MiB.
uint64_t fresh_ssd_size(const RadosArgs& a, uint64_t dataset_bytes) {
  const uint64_t unit = 16 << 20;
  uint64_t ssd = std::max<uint64_t>(64ull << 20, (dataset_bytes / 5 + unit - 1) / unit * unit);
  if (kv_on_ssd(a)) ssd += std::max<uint64_t>(128ull << 20, (ssd / 7 + unit - 1) / unit * unit);
  return ssd;
}

// Runs migration passes on demand, one at a time, off the request path.
class PassRunner {
 public:
  explicit PassRunner(HybridStore* s) : s_(s), th_([this] { loop(); }) {}
  ~PassRunner() { stop(); }
  void request() {
    std::lock_guard<std::mutex> l(mu_);
    ++wanted_;
    cv_.notify_all();
  }
  // Waits for every requested pass, then ends the thread.
  void stop() {
    {
      std::unique_lock<std::mutex> l(mu_);
      idle_.wait(l, [&] { return done_ >= wanted_; });
      stopping_ = true;
    }
    cv_.notify_all();
    if (th_.joinable()) th_.join();
  }
  MigrationReport total;
  int passes = 0;

 private:
  void loop() {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      cv_.wait(l, [&] { return stopping_ || done_ < wanted_; });
      if (done_ >= wanted_ && stopping_) return;
      l.unlock();
      MigrationReport rep;
      int r = s_->migrate_now(&rep);
      l.lock();
      if (r == 0) {
        ++passes;
        total.promoted += rep.promoted;
        total.demoted += rep.demoted;
        total.skipped += rep.skipped;
        total.bytes_moved += rep.bytes_moved;
        total.seconds += rep.seconds;
      }
      ++done_;
      idle_.notify_all();
    }
  }
  HybridStore* s_;
  std::mutex mu_;
  std::condition_variable cv_, idle_;
  uint64_t wanted_ = 0, done_ = 0;
  bool stopping_ = false;
  std::thread th_;
};

// Writes every file of the trace whole, hinted to the HDD when the run
// preloads there.
int preload(HybridStore* s, const RadosArgs& a, const std::vector<uint64_t>& sizes,
            const std::function<std::string(uint64_t)>& file_name) {
  const bool on_hdd = a.preload == "hdd";
  return parallel_for(sizes.size(), a.concurrent, "preload", "files", [&](uint64_t n) {
    std::string name = file_name(n);
    auto buf = std::make_shared<std::string>(sizes[n], '\0');
    fill_pattern(buf->data(), name_hash(name), 0, sizes[n]);
    Transaction t;
    if (on_hdd) {
      // A hint on a missing object is a no-op: create it first.
      t.touch(pg_coll(n), bench_oid(name));
      t.set_alloc_hint(pg_coll(n), bench_oid(name), 64ull << 20, 0, kHintSequentialWrite);
    }
    t.write(pg_coll(n), bench_oid(name), 0, std::shared_ptr<const std::string>(buf));
    return s->apply_transaction(std::move(t));
  });
}

// Waits for the passes still running, the series going on meanwhile, a
// line a second after the requests' last second: they are part of the run.
void finish_passes(HybridStore* s, PassRunner* passes, int requests_end, std::vector<SecondSample>* series) {
  std::atomic<bool> drained{false};
  std::thread sampler([&] {
    auto t0 = std::chrono::steady_clock::now();
    for (int k = 1; !drained; ++k) {
      std::this_thread::sleep_until(t0 + std::chrono::seconds(k));
      if (drained) break;
      SecondSample x = series->empty() ? SecondSample() : series->back();
      x.sec = requests_end + k;
      x.cur_ops = 0;
      x.cur_mb_s = x.iops = x.last_lat = -1;
      x.perf.clear();
      for (const auto& n : series_counters()) x.perf.push_back(s->perf().get(s->perf().find(n)));
      series->push_back(std::move(x));
    }
  });
  passes->stop();
  drained = true;
  sampler.join();
}

}  // namespace

int run_mixed(RadosArgs* args, ModeRun* mr) {
  if (!check_rados_args(args)) return 2;
  RadosArgs& a = *args;
  const WorkloadProfile& prof = *find_workload_profile(a.profile);
  WorkloadOptions wo;
  wo.seed = a.seed;
  wo.scale = a.scale;
  wo.days = a.days;
  WorkloadGenerator gen(prof, wo);
  const auto& sizes = gen.object_sizes();
  const uint64_t ssd = fresh_ssd_size(a, gen.dataset_bytes());
  ModeRun& m = *mr;
  if (int rc = begin_mode(&m, true, {"hybridstore_ssd_size=" + std::to_string(ssd)}); rc) return rc;
  HybridStore* s = m.t.store.get();
  if (int r = ensure_collections(s); r < 0) return 1;
  const std::string prefix = object_prefix();
  auto file_name = [&](uint64_t n) { return prefix + "_file" + std::to_string(n); };
  std::cout << "Mixed workload: profile " << prof.name << " (" << prof.description << ")\n"
            << sizes.size() << " files, " << gen.dataset_bytes() << " bytes, " << a.days << " days of "
            << gen.ops_per_day() << " requests, seed " << a.seed << "\n"
            << "Maintaining " << a.concurrent << " concurrent ops for up to " << a.seconds
            << " seconds; a migration pass at each day's end\nObject prefix: " << prefix << std::endl;
  if (int r = preload(s, a, sizes, file_name); r < 0) {
    fprintf(stderr, "hybridstore-bench mixed: preload: %s\n", strerror(-r));
    return 1;
  }
  std::mutex gen_mu;
  uint32_t day = 0;
  std::atomic<uint64_t> reads{0}, writes{0}, metas{0};
  std::vector<std::shared_ptr<std::string>> bufs(static_cast<size_t>(a.concurrent));
  m.before = s->perf().snapshot();
  PassRunner passes(s);
  m.res = run_ops(runner_config(m), [&](int w, uint64_t, uint64_t* bytes) {
    WorkloadRequest req;
    {
      std::lock_guard<std::mutex> l(gen_mu);
      if (!gen.next(&req)) return kNoMoreOps;
      for (; day < req.day; ++day) passes.request();
    }
    std::string name = file_name(req.object);
    CollectionId c = pg_coll(req.object);
    ObjectId o = bench_oid(name);
    switch (req.op) {
      case WorkloadOp::kMetadata: {
        ++metas;
        ObjectStat st;
        return s->stat(c, o, &st);
      }
      case WorkloadOp::kRead: {
        ++reads;
        std::string data;
        int rr = s->read(c, o, req.offset, req.length, &data);
        if (rr < 0) return rr;
        *bytes = data.size();
        if (!a.no_verify && (data.size() != req.length ||
                             check_pattern(data.data(), name_hash(name), req.offset, data.size()) >= 0)) {
          std::cerr << name << " is not correct at offset " << req.offset << "!" << std::endl;
          return 1;
        }
        return 0;
      }
      case WorkloadOp::kWrite: {
        ++writes;
        auto& buf = bufs[static_cast<size_t>(w)];
        if (!buf || buf.use_count() > 1) buf = std::make_shared<std::string>();
        buf->resize(req.length);
        fill_pattern(buf->data(), name_hash(name), req.offset, req.length);
        Transaction t;
        t.write(c, o, req.offset, std::shared_ptr<const std::string>(buf));
        *bytes = req.length;
        return s->apply_transaction(std::move(t));
      }
    }
    return 0;
  });
  if (m.res.error) fprintf(stderr, "hybridstore-bench mixed: %s\n", m.res.error_message.c_str());
  // The last day ends with the run. The passes still running are part of
  // the story: the series goes on, a line a second, until they are done.
  passes.request();
  const int requests_end = m.res.series.empty() ? 0 : m.res.series.back().sec;
  finish_passes(s, &passes, requests_end, &m.res.series);
  m.extra["mixed"] = {{"profile", prof.name},
                      {"files", sizes.size()},
                      {"dataset_bytes", gen.dataset_bytes()},
                      {"days", a.days},
                      {"days_reached", day + 1},
                      {"requests_end_sec", requests_end},
                      {"requests_per_day", gen.ops_per_day()},
                      {"reads", reads.load()},
                      {"writes", writes.load()},
                      {"metadata_ops", metas.load()},
                      {"preload", a.preload},
                      {"migration_passes", passes.passes},
                      {"promoted", passes.total.promoted},
                      {"demoted", passes.total.demoted},
                      {"migrated_bytes", passes.total.bytes_moved}};
  print_results(&m, 0, 0);
  auto delta = [&](const char* n) {
    int id = s->perf().find(n);
    return id < 0 ? 0 : m.after[static_cast<size_t>(id)].value - m.before[static_cast<size_t>(id)].value;
  };
  std::cout << "Requests:               " << reads << " reads, " << writes << " writes, " << metas
            << " metadata (trace days reached: " << day + 1 << " of " << a.days << ")\n"
            << "Migration passes:       " << passes.passes << " (promoted " << passes.total.promoted << ", demoted "
            << passes.total.demoted << ", " << passes.total.bytes_moved << " bytes moved)\n"
            << "Cleaner passes:         " << delta("cleaner_passes") << " (" << delta("cleaner_bytes_moved")
            << " bytes relocated, " << delta("cleaner_units_freed") << " erase units freed)" << std::endl;
  if (!a.no_cleanup && !m.res.error) {
    std::cout << "Cleaning up (deleting benchmark objects)" << std::endl;
    parallel_for(sizes.size(), a.concurrent, "cleanup", "files", [&](uint64_t n) {
      Transaction t;
      t.remove(pg_coll(n), bench_oid(file_name(n)));
      return s->apply_transaction(std::move(t));
    });
    std::cout << "Removed " << sizes.size() << " objects" << std::endl;
  }
  return end_mode(&m, 0, 0, a.no_cleanup);
}

namespace {

BenchCommand mixed_cmd("mixed",
                       "a tiering profile (mail, office, research) replayed on the engine: migrations and cleaning "
                       "happen during the run",
                       [](CLI::App* sub) {
                         auto a = std::make_shared<RadosArgs>();
                         a->mode = RadosMode::kMixed;
                         add_rados_options(sub, a.get());
                         return [a] {
                           ModeRun m(a.get());
                           return run_mixed(a.get(), &m);
                         };
                       });

}  // namespace
}  // namespace hybridstore::bench
