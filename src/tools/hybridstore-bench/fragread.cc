// fragread: the read time of an object made of many separate pieces (issue
// 10): one object written as N pieces with a gap after each (the shape of a
// sparse RBD image object under small random writes), the store remounted,
// then the whole object read R times; per I/O backend. A read that does not
// return within --timeout seconds is reported as such and ends the run.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <random>
#include <thread>

#include "bench_command.h"
#include "bench_util.h"

namespace hybridstore::bench {
namespace {

struct FragArgs {
  std::string dir = "bench-out/fragread-store";
  uint64_t pieces = 10000;
  uint64_t piece = 4096;
  uint64_t gap = 4096;
  int repeat = 5;
  double timeout = 300;
  uint64_t seed = 1;
  std::vector<std::string> backends = {"uring", "posix"};
  std::vector<std::string> sets;
};

// Runs fn on its own thread; false when it has not returned after `secs`
// (the thread is then left behind: the caller reports and exits).
bool within(double secs, const std::function<void()>& fn) {
  auto task = std::make_shared<std::packaged_task<void()>>(fn);
  auto f = task->get_future();
  std::thread([task] { (*task)(); }).detach();
  return f.wait_for(std::chrono::duration<double>(secs)) == std::future_status::ready;
}

int run_one(const FragArgs& a, const std::string& backend) {
  std::vector<std::string> sets = {"hybridstore_io_backend=" + backend, "hybridstore_ssd_size=1G",
                                   "hybridstore_hdd_size=4G"};
  sets.insert(sets.end(), a.sets.begin(), a.sets.end());
  const std::string dir = a.dir + "-" + backend;
  auto store = make_store(dir, sets, true);
  if (!store) return 1;
  const CollectionId c("1.0_head");
  const ObjectId o = ObjectId::from_name("fragmented", 1);
  {
    Transaction t;
    t.create_collection(c, 0);
    if (store->apply_transaction(std::move(t)) < 0) return 1;
  }
  std::mt19937_64 rng(a.seed);
  std::string want((a.pieces - 1) * (a.piece + a.gap) + a.piece, '\0');
  const uint64_t per_txn = 200;
  for (uint64_t i = 0; i < a.pieces; i += per_txn) {
    Transaction t;
    for (uint64_t k = i; k < std::min(a.pieces, i + per_txn); ++k) {
      std::string d(a.piece, '\0');
      for (auto& ch : d) ch = static_cast<char>(rng());
      want.replace(k * (a.piece + a.gap), a.piece, d);
      t.write(c, o, k * (a.piece + a.gap), d);
    }
    TxnError e;
    if (store->queue_transaction(std::move(t), &e) < 0) {
      fprintf(stderr, "fragread: writing the object failed: %s\n", e.message.c_str());
      return 1;
    }
  }
  std::map<uint64_t, uint64_t> pieces;
  store->fiemap(c, o, 0, want.size(), &pieces);
  if (store->umount() < 0) return 1;
  // Remounted: the first read also loads the onode from RocksDB.
  store = make_store(dir, sets, false);
  if (!store) return 1;
  std::vector<double> times;
  for (int r = 0; r < a.repeat; ++r) {
    std::string out;
    int got = -1;
    double t0 = now_sec();
    if (!within(a.timeout, [&] { got = store->read(c, o, 0, 0, &out); })) {
      printf("%-6s %8llu pieces: the read did not return within %.0f s\n", backend.c_str(),
             static_cast<unsigned long long>(a.pieces), a.timeout);
      fflush(stdout);
      std::_Exit(2);
    }
    times.push_back(now_sec() - t0);
    if (got != static_cast<int>(want.size()) || out != want) {
      printf("%-6s: the object read back wrong (%d bytes)\n", backend.c_str(), got);
      return 1;
    }
  }
  printf("%-6s %8llu %8zu %10.1f %12.1f %12.1f\n", backend.c_str(), static_cast<unsigned long long>(a.pieces),
         pieces.size(), want.size() / 1048576.0, times[0] * 1000, percentile(times, 50) * 1000);
  int r = store->umount();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return r < 0 ? 1 : 0;
}

int run_fragread(const FragArgs& a) {
  printf("fragmented object read: %llu pieces of %llu bytes, %llu-byte gaps, seed %llu, %d reads each\n",
         static_cast<unsigned long long>(a.pieces), static_cast<unsigned long long>(a.piece),
         static_cast<unsigned long long>(a.gap), static_cast<unsigned long long>(a.seed), a.repeat);
  printf("%-6s %8s %8s %10s %12s %12s\n", "io", "pieces", "ranges", "MiB", "first ms", "median ms");
  for (const auto& b : a.backends)
    if (int r = run_one(a, b)) return r;
  return 0;
}

BenchCommand fragread("fragread", "read time of an object made of many separate pieces, per I/O backend",
                      [](CLI::App* sub) {
                        auto a = std::make_shared<FragArgs>();
                        sub->add_option("--dir", a->dir, "store directory prefix (recreated, -BACKEND appended)");
                        sub->add_option("--pieces", a->pieces, "separate pieces in the object")
                            ->check(CLI::Range(1, 1000000));
                        sub->add_option("--piece", a->piece, "bytes per piece")->check(CLI::Range(1, 1 << 20));
                        sub->add_option("--gap", a->gap, "bytes of hole after each piece");
                        sub->add_option("--repeat", a->repeat, "reads of the whole object")
                            ->check(CLI::Range(1, 1000));
                        sub->add_option("--timeout", a->timeout, "seconds a read may take before the run fails");
                        sub->add_option("--seed", a->seed, "data seed");
                        sub->add_option("--backends", a->backends, "I/O backends to measure (uring, posix)");
                        sub->add_option("--set", a->sets, "store option key=value (repeatable)");
                        return [a] { return run_fragread(*a); };
                      });

}  // namespace
}  // namespace hybridstore::bench
