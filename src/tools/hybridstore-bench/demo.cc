// demo: the main job on a fresh machine — a file-backed store, a few thousand
// objects of mixed sizes written, read back and verified, per-tier usage.
#include <atomic>
#include <cstdio>
#include <random>
#include <thread>

#include "bench_command.h"
#include "bench_util.h"
#include "hybridstore/common/config.h"
#include "hybridstore/common/crc32c.h"

namespace hybridstore::bench {
namespace {

struct DemoArgs {
  std::string dir = "demo-store";
  int objects = 3000;
  int threads = 4;
  uint64_t seed = 1;
  std::vector<std::string> sets;
};

// Mostly small objects (the SSD's business), some medium, a few large ones
// that the placement sends to the HDD.
uint64_t pick_size(std::mt19937_64& rng) {
  int r = static_cast<int>(rng() % 100);
  if (r < 70) return 512 + rng() % (16 << 10);
  if (r < 95) return (16 << 10) + rng() % (512 << 10);
  return (1 << 20) + rng() % (7 << 20);
}

std::string payload(uint64_t seed, uint64_t n) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = rng();
    for (size_t k = 0; k < 8 && i + k < n; ++k) s[i + k] = static_cast<char>(v >> (8 * k));
  }
  return s;
}

int run_demo(const DemoArgs& a) {
  printf("HybridStore demo: store in %s, %d objects, %d writer threads\n", a.dir.c_str(), a.objects, a.threads);
  auto store = make_store(a.dir, a.sets, true);
  if (!store) return 1;
  printf("created store %s (devices are sparse files in %s)\n", store->fsid().c_str(), a.dir.c_str());
  const int colls = 8;
  for (int c = 0; c < colls; ++c) {
    Transaction t;
    t.create_collection(CollectionId("1." + std::to_string(c) + "_head"), 3);
    if (store->apply_transaction(std::move(t)) < 0) return 1;
  }
  std::vector<uint64_t> sizes(static_cast<size_t>(a.objects));
  std::mt19937_64 rng(a.seed);
  uint64_t total = 0;
  for (auto& s : sizes) total += (s = pick_size(rng));

  auto coll_of = [&](int i) { return CollectionId("1." + std::to_string(i % colls) + "_head"); };
  auto name_of = [](int i) { return ObjectId::from_name("demo_object_" + std::to_string(i), 1); };
  std::atomic<int> next{0}, done{0}, failed{0};
  double t0 = now_sec();
  std::vector<std::thread> th;
  for (int w = 0; w < a.threads; ++w)
    th.emplace_back([&] {
      for (int i; (i = next++) < a.objects;) {
        Transaction t;
        t.write(coll_of(i), name_of(i), 0, payload(a.seed * 1000003 + static_cast<uint64_t>(i), sizes[static_cast<size_t>(i)]));
        t.setattr(coll_of(i), name_of(i), "_", "demo");
        if (i % 10 == 0) t.omap_setkeys(coll_of(i), name_of(i), {{"index", std::to_string(i)}});
        TxnError e;
        if (store->apply_transaction(std::move(t), &e) < 0) {
          fprintf(stderr, "write %d failed: %s\n", i, e.message.c_str());
          ++failed;
        }
        int d = ++done;
        if (d % 500 == 0) fprintf(stderr, "  written %d/%d objects\n", d, a.objects);
      }
    });
  for (auto& x : th) x.join();
  double wt = now_sec() - t0;
  if (failed) return 1;
  printf("wrote %d objects, %s, in %.2f s (%.1f MiB/s)\n", a.objects, format_size(total).c_str(), wt,
         static_cast<double>(total) / (1 << 20) / wt);

  // Read back through a fresh mount, so the data comes from the devices.
  store->umount();
  store = std::make_unique<HybridStore>(a.dir, store->config());
  std::string err;
  if (store->mount(&err) < 0) {
    fprintf(stderr, "remount failed: %s\n", err.c_str());
    return 1;
  }
  t0 = now_sec();
  int bad = 0;
  for (int i = 0; i < a.objects; ++i) {
    std::string data;
    int r = store->read(coll_of(i), name_of(i), 0, 0, &data);
    if (r < 0 || data != payload(a.seed * 1000003 + static_cast<uint64_t>(i), sizes[static_cast<size_t>(i)])) {
      fprintf(stderr, "object %d read back wrong (r=%d)\n", i, r);
      ++bad;
    }
    if ((i + 1) % 1000 == 0) fprintf(stderr, "  verified %d/%d objects\n", i + 1, a.objects);
  }
  double rt = now_sec() - t0;
  printf("read back and verified %d objects in %.2f s: %s\n", a.objects, rt, bad ? "MISMATCHES" : "all correct");

  StoreStats st;
  store->statfs(&st);
  printf("\n%-5s %12s %12s %12s %8s\n", "TIER", "SIZE", "USED", "AVAIL", "USE%");
  for (int t = 0; t < kNumTiers; ++t) {
    const auto& ts = st.tier[t];
    printf("%-5s %12s %12s %12s %7.2f%%\n", tier_name(static_cast<Tier>(t)), format_size(ts.total).c_str(),
           format_size(ts.allocated).c_str(), format_size(ts.free).c_str(),
           100.0 * static_cast<double>(ts.allocated) / static_cast<double>(ts.total));
  }
  printf("objects: %llu, logical data: %s\n", (unsigned long long)st.objects, format_size(st.data_bytes).c_str());
  FsckReport rep;
  int errors = store->fsck(false, &rep);
  printf("fsck: %s\n", errors == 0 ? "clean" : "ERRORS");
  store->umount();
  printf("\ninspect it with: build/bin/hybridstore-tool --path %s df | list --coll 1.0_head | fsck --deep\n",
         a.dir.c_str());
  return bad || errors ? 1 : 0;
}

BenchCommand demo("demo", "create a file-backed store, write and verify mixed-size objects, print per-tier usage",
                  [](CLI::App* sub) {
                    auto a = std::make_shared<DemoArgs>();
                    sub->add_option("--dir", a->dir, "store directory (recreated)");
                    sub->add_option("--objects", a->objects, "number of objects")->check(CLI::Range(1, 10000000));
                    sub->add_option("--threads", a->threads, "writer threads")->check(CLI::Range(1, 256));
                    sub->add_option("--seed", a->seed, "random seed");
                    sub->add_option("--set", a->sets, "store option key=value (repeatable)");
                    return [a] { return run_demo(*a); };
                  });

}  // namespace
}  // namespace hybridstore::bench
