// core: the engine's headline figures, from one run on the same files.
//  1. the store's bandwidth for 4 MiB object writes with 16 writers, each
//     waiting for its commit, against the raw ceiling of the HDD device
//     file at the same block size and queue depth (4 MiB, 16 in flight,
//     O_DIRECT, one flush at the end; see raw_ceiling.h);
//  2. 4 KiB object creates per second with 1 and with 16 writers, each
//     waiting for its commit: the ratio shows group commit at work.
#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>

#include <nlohmann/json.hpp>

#include "bench_command.h"
#include "bench_util.h"
#include "hscommon/config.h"
#include "raw_ceiling.h"

namespace hybridstore::bench {
namespace {

struct CoreArgs {
  std::string dir = "bench-store";
  double raw_seconds = 5;
  int big_objects = 256;
  double create_seconds = 5;
  int writers = 16;
  std::string json;
  std::vector<std::string> sets;
};

int run_core(const CoreArgs& a) {
  std::vector<std::string> sets = a.sets;
  auto store = make_store(a.dir, sets, true);
  if (!store) return 1;
  StoreStats st;
  store->statfs(&st);
  std::string hdd = st.tier[1].device;
  store->umount();

  fprintf(stderr, "raw: %.0f s of 4 MiB writes, %d in flight, beside %s...\n", a.raw_seconds, a.writers, hdd.c_str());
  RawResult rr = measure_raw(hdd, RawOp::kWrite, 4 << 20, a.writers, a.raw_seconds, 1);
  if (!rr.ok) fprintf(stderr, "raw ceiling not measured: %s\n", rr.note.c_str());
  double raw = rr.ok ? rr.mb_s : 0;

  std::string err;
  store = std::make_unique<HybridStore>(a.dir, store->config());
  if (store->mount(&err) < 0) return fprintf(stderr, "%s\n", err.c_str()), 1;
  for (int c = 0; c < a.writers; ++c) {
    Transaction t;
    t.create_collection(CollectionId("2." + std::to_string(c) + "_head"), 0);
    store->apply_transaction(std::move(t));
  }
  fprintf(stderr, "store: %d x 4 MiB objects, %d writers...\n", a.big_objects, a.writers);
  // One buffer shared by every write, as rados bench does.
  auto four = std::make_shared<const std::string>(4 << 20, 'b');
  std::atomic<int> next{0};
  double t0 = now_sec();
  std::vector<std::thread> th;
  for (int w = 0; w < a.writers; ++w)
    th.emplace_back([&, w] {
      CollectionId c("2." + std::to_string(w) + "_head");
      for (int i; (i = next++) < a.big_objects;) {
        Transaction t;
        t.write(c, ObjectId::from_name("big_" + std::to_string(i), 2), 0, four);
        store->apply_transaction(std::move(t));
      }
    });
  for (auto& x : th) x.join();
  double big_bw = a.big_objects * 4.0 / (now_sec() - t0);

  auto creates = [&](int writers) {
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> count{0};
    auto small = std::make_shared<const std::string>(4096, 's');
    std::vector<std::thread> ts;
    double start = now_sec();
    for (int w = 0; w < writers; ++w)
      ts.emplace_back([&, w] {
        CollectionId c("2." + std::to_string(w % a.writers) + "_head");
        for (uint64_t i = 0; !stop; ++i) {
          Transaction t;
          t.write(c, ObjectId::from_name("c" + std::to_string(writers) + "_" + std::to_string(w) + "_" + std::to_string(i), 2),
                  0, small);
          if (store->apply_transaction(std::move(t)) == 0) ++count;
        }
      });
    std::this_thread::sleep_for(std::chrono::duration<double>(a.create_seconds));
    stop = true;
    for (auto& x : ts) x.join();
    return static_cast<double>(count) / (now_sec() - start);
  };
  fprintf(stderr, "store: 4 KiB creates, 1 writer, %.0f s...\n", a.create_seconds);
  double c1 = creates(1);
  fprintf(stderr, "store: 4 KiB creates, %d writers, %.0f s...\n", a.writers, a.create_seconds);
  double c16 = creates(a.writers);
  StoreStats after;
  store->statfs(&after);
  FsckReport rep;
  int fsck = store->fsck(false, &rep);
  store->umount();

  printf("\nHybridStore core benchmark (%s)\n", a.dir.c_str());
  printf("%-48s %12s\n", "measure", "value");
  printf("%-48s %9.1f MiB/s\n", ("raw ceiling, HDD device file (4 MiB, QD " + std::to_string(a.writers) + ")").c_str(),
         raw);
  printf("%-48s %9.1f MiB/s\n", ("store, 4 MiB objects, " + std::to_string(a.writers) + " writers").c_str(), big_bw);
  printf("%-48s %11.1f%%  (goal >= 80%%)\n", "  store / raw", raw > 0 ? 100 * big_bw / raw : 0);
  printf("%-48s %9.0f /s\n", "4 KiB creates, 1 writer", c1);
  printf("%-48s %9.0f /s\n", "4 KiB creates, 16 writers", c16);
  printf("%-48s %11.2fx  (goal >= 5x)\n", "  16 writers / 1 writer", c1 > 0 ? c16 / c1 : 0);
  printf("%-48s %12.2f\n", "transactions per commit group (whole run)",
         after.commit_groups ? static_cast<double>(after.transactions_committed) / after.commit_groups : 0);
  printf("fsck after the run: %s\n", fsck == 0 ? "clean" : "ERRORS");
  if (!a.json.empty()) {
    nlohmann::json j{{"raw_ceiling_4m_qd_mib_s", raw},        {"store_4m_16w_mib_s", big_bw},
                     {"store_over_raw", raw > 0 ? big_bw / raw : 0}, {"creates_1w_per_s", c1},
                     {"creates_16w_per_s", c16},          {"creates_ratio", c1 > 0 ? c16 / c1 : 0},
                     {"malloc", malloc_name()}};
    FILE* f = fopen(a.json.c_str(), "w");
    if (f) {
      fprintf(f, "%s\n", j.dump(2).c_str());
      fclose(f);
    }
  }
  return fsck == 0 ? 0 : 1;
}

BenchCommand core("core", "raw vs store bandwidth (4 MiB, 16 writers) and 4 KiB creates/s (1 vs 16 writers)",
                  [](CLI::App* sub) {
                    auto a = std::make_shared<CoreArgs>();
                    sub->add_option("--dir", a->dir, "store directory (recreated)");
                    sub->add_option("--raw-seconds", a->raw_seconds,
                                    "seconds of raw 4 MiB writes at the writers' queue depth (the ceiling)");
                    sub->add_option("--objects", a->big_objects, "4 MiB objects written by the store");
                    sub->add_option("--seconds", a->create_seconds, "duration of each create run");
                    sub->add_option("--writers", a->writers, "concurrent writers")->check(CLI::Range(1, 256));
                    sub->add_option("--json", a->json, "also write the figures as JSON to FILE");
                    sub->add_option("--set", a->sets, "store option key=value (repeatable)");
                    return [a] { return run_core(*a); };
                  });

}  // namespace
}  // namespace hybridstore::bench
