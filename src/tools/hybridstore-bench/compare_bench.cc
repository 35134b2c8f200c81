// compare: the store against the raw device, row by row, in one run.
//
// Each row pairs a store workload with the raw device doing the same I/O
// pattern on scratch space beside the tier's device file, measured right
// before it (the machines are shared: only ratios from the same minute mean
// anything). Rows:
//   4 KiB creates / overwrites, 1 writer   vs write+fdatasync, 1 job
//   4 KiB creates / overwrites, N writers  vs write+fdatasync, N independent jobs
//   4 MiB writes, N in flight              vs 4 MiB writes at QD N
//   4 KiB random reads, N in flight        vs 4 KiB random reads at QD N
//     (the onode cache is made smaller than the data set, so reads miss it)
//   4 MiB sequential reads, N in flight    vs 4 MiB sequential reads at QD N
// for the file-backed SSD kind and for raw NAND behind the embedded FTL (its
// raw figures are the FTL's own, in process; its 4 MiB rows are the file
// table's, as 4 MiB objects live on the HDD tier either way). Every run ends
// with a deep fsck of the store. The CPU cost of a small transaction is
// user+sys time of the whole process over the transactions committed.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "bench_command.h"
#include "bench_util.h"
#include "ftl/nand_block_device.h"
#include "hsio/block_device.h"
#include "hscommon/config.h"
#include "raw_device.h"

namespace hybridstore::bench {
namespace {

namespace fs = std::filesystem;

struct CompareArgs {
  std::string dir = "bench-compare";
  std::vector<std::string> kinds{"file", "nand"};
  bool fio = false;
  double seconds = 4;
  double raw_seconds = 3;
  int writers = 16;
  int big_objects = 128;
  int onode_cache = 1024;
  // The random-read row's data set: a fixed number of 4 KiB objects, so that
  // its figure does not follow how many objects the create rows wrote in
  // their seconds (105-145 thousand in 4 s rows, 16 thousand in 0.5 s ones,
  // a faster store reading from a larger set). 0: every object written.
  uint64_t read_objects = 100000;
  // The store's device files laid out like fio's own file (see --layout).
  std::string layout = "zero";
  // How the read rows take their bytes: "buffer" (read_into page-aligned
  // memory, the Ceph adapter's path) or "string" (read() into a std::string).
  std::string read_api = "buffer";
  std::string json;
  std::vector<std::string> sets;
  // Rows to run (for profiling one of them): create1 overwrite1 createN
  // overwriteN write4m randread seqread; empty runs all.
  std::vector<std::string> rows;
  bool want(const std::string& r) const { return rows.empty() || std::find(rows.begin(), rows.end(), r) != rows.end(); }
};

struct Row {
  std::string work;
  std::string unit;  // "ops/s" or "MiB/s"
  RawFigure raw;
  double store = 0;
  double goal = 0;
  double cpu_us = 0;  // per transaction (per read in the read rows), 0 when not measured
  double txns_per_group = 0;
  // Where a write row's transactions spent their time (perf counter averages, us).
  std::vector<std::pair<std::string, double>> stages;
  bool is_read() const { return work.find("reads") != std::string::npos; }
  double ratio() const {
    double r = unit == "MiB/s" ? raw.mib_s : raw.iops;
    return raw.ok && r > 0 ? store / r : 0;
  }
};

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// Runs fn(worker, i) on `workers` threads for `seconds`; counts the calls
// that returned true. Returns per second; *cpu_us gets CPU µs per success.
template <typename Fn>
double timed(int workers, double seconds, Fn fn, double* cpu_us = nullptr, uint64_t* failures = nullptr) {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> ok{0}, bad{0};
  double c0 = cpu_seconds(), t0 = now_sec();
  std::vector<std::thread> th;
  for (int w = 0; w < workers; ++w)
    th.emplace_back([&, w] {
      for (uint64_t i = 0; !stop; ++i) (fn(w, i) ? ok : bad)++;
    });
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : th) t.join();
  double el = now_sec() - t0;
  if (cpu_us) *cpu_us = ok ? (cpu_seconds() - c0) * 1e6 / static_cast<double>(ok) : 0;
  if (failures) *failures = bad;
  return static_cast<double>(ok) / el;
}

CollectionId coll(int w) { return CollectionId("2." + std::to_string(w) + "_head"); }
ObjectId small_name(int writers, int w, uint64_t i) {
  return ObjectId::from_name("s" + std::to_string(writers) + "_" + std::to_string(w) + "_" + std::to_string(i), 2);
}

// The average of each latency counter named, over the samples taken
// between two snapshots.
std::vector<std::pair<std::string, double>> stage_averages(const PerfCounterSet& set,
                                                           const std::vector<PerfCounterSet::Value>& before,
                                                           const std::vector<PerfCounterSet::Value>& after) {
  std::vector<std::pair<std::string, double>> out;
  for (const char* name : {"state_prepare_lat", "state_kv_queued_lat", "state_kv_committing_lat", "commit_lat",
                           "kv_sync_lat"}) {
    int id = set.find(name);
    if (id < 0) continue;
    auto i = static_cast<size_t>(id);
    uint64_t n = after[i].value - before[i].value;
    if (n == 0) continue;
    out.emplace_back(name, static_cast<double>(after[i].sum_ns - before[i].sum_ns) / static_cast<double>(n) / 1e3);
  }
  return out;
}

class KindRun {
 public:
  KindRun(const CompareArgs& a, std::string kind) : a_(a), kind_(std::move(kind)), dir_(a.dir + "/" + kind_) {}

  int run(std::vector<Row>* rows, std::string* fsck_line) {
    const std::vector<std::string> sets = store_sets();
    if (open_store(sets) != 0) return 1;
    run_one_writer_rows(rows);
    run_n_writer_rows(rows);
    // 4 MiB writes (HDD tier) on the file kind only: the NAND kind's HDD is
    // the same kind of file, so its rows would repeat these.
    const bool big = kind_ == "file" && (a_.want("write4m") || a_.want("seqread"));
    if (big) run_big_write_row(rows);
    if (run_random_read_row(rows) != 0) return 1;
    if (big && a_.want("seqread")) run_sequential_read_row(rows);
    store_->umount();
    store_.reset();
    if (bad_reads_) fprintf(stderr, "compare: %llu reads failed or returned wrong bytes\n",
                            static_cast<unsigned long long>(bad_reads_.load()));

    // Deep fsck after every run: nothing may have been traded for speed.
    Config cfg;
    std::string err;
    for (const auto& s : sets) cfg.set_from_arg(s, &err);
    HybridStore check(dir_, cfg);
    FsckReport rep;
    int f = check.fsck(true, &rep);
    *fsck_line = fmt_fsck(f, rep);
    return f == 0 && bad_reads_ == 0 ? 0 : 1;
  }

 private:
  // The store's options for this kind: the run's --set options over the
  // compare defaults.
  std::vector<std::string> store_sets() const {
    std::vector<std::string> sets = a_.sets;
    sets.push_back("hybridstore_onode_cache_size=" + std::to_string(a_.onode_cache));
    if (kind_ == "nand") sets.push_back("hybridstore_ssd_kind=nand");
    // fio writes its file before it times anything; so the store's device
    // files are written out too, or the first write to every block would
    // also pay the filesystem's allocation at the next flush. Sizes are cut
    // to what the rows use so that laying them out takes seconds. (--set
    // options come later and win.)
    sets.insert(sets.begin(), "hybridstore_block_preallocate=" + a_.layout);
    if (a_.layout != "none") {
      uint64_t hdd_gib = std::max<uint64_t>(4, static_cast<uint64_t>(a_.big_objects) * 5 / 1024 + 1);
      sets.insert(sets.begin(), "hybridstore_hdd_size=" + std::to_string(hdd_gib) + "G");
      sets.insert(sets.begin(), "hybridstore_ssd_size=2G");
    }
    return sets;
  }

  // Makes the store and the writers' collections.
  int open_store(const std::vector<std::string>& sets) {
    store_ = make_store(dir_, sets, true);
    if (!store_) return 1;
    StoreStats st;
    store_->statfs(&st);
    ssd_dev_ = st.tier[0].device;
    hdd_dev_ = st.tier[1].device;
    scratch_ = fs::path(fs::absolute(hdd_dev_)).parent_path().string();
    for (int c = 0; c < a_.writers; ++c) {
      Transaction t;
      t.create_collection(coll(c), 0);
      store_->apply_transaction(std::move(t));
    }
    small_ = std::make_shared<const std::string>(4096, 's');
    over_ = std::make_shared<const std::string>(4096, 'o');
    read_bufs_.resize(static_cast<size_t>(a_.writers));
    read_strings_.resize(static_cast<size_t>(a_.writers));
    return 0;
  }

  // 1 writer.
  void run_one_writer_rows(std::vector<Row>* rows) {
    const bool one = a_.want("create1") || a_.want("overwrite1") || a_.want("randread");
    RawFigure sync1 = one ? raw(RawPattern::kSyncWrite, 4096, 1, true) : RawFigure{};
    // A lone 4 KiB transaction is made durable by one journal record of two
    // blocks (its 4 KiB of data and its metadata): the raw device writing
    // and flushing 8 KiB is the most any such engine could do, so it is
    // measured too and shown beside the 4 KiB figure. Only where the raw
    // figure is the journal's own file system: on the NAND kind the record
    // still goes to the journal file, not to the flash the raw figure is of.
    if (one && a_.want("create1") && kind_ == "file") {
      RawFigure two = raw(RawPattern::kSyncWrite, 8192, 1, true);
      if (two.ok && sync1.ok && sync1.iops > 0) {
        char b[256];
        snprintf(b, sizeof b,
                 "raw 8 KiB write+fdatasync, 1 job: %.0f IOPS, %.2f of the 4 KiB figure (the ceiling of a 1-writer "
                 "row whose transaction's record is two blocks)",
                 two.iops, two.iops / sync1.iops);
        floor_note_ = b;
        floor_ratio_ = two.iops / sync1.iops;
      }
    }
    counts_1_ = 0;
    Row c1{"4 KiB creates, 1 writer", "ops/s", sync1, 0, 0.9};
    auto perf0 = store_->perf().snapshot();
    if (one) c1.store = timed(1, a_.seconds, [&](int, uint64_t i) {
      Transaction t;
      t.write(coll(0), small_name(1, 0, i), 0, small_);
      bool ok = store_->apply_transaction(std::move(t)) == 0;
      if (ok) counts_1_ = i + 1;
      return ok;
    }, &c1.cpu_us);
    c1.stages = stage_averages(store_->perf(), perf0, store_->perf().snapshot());
    if (a_.want("create1")) rows->push_back(c1);
    Row o1{"4 KiB overwrites, 1 writer", "ops/s", sync1, 0, 0.9};
    std::mt19937_64 rng1(11);
    perf0 = store_->perf().snapshot();
    if (a_.want("overwrite1")) o1.store = timed(1, a_.seconds, [&](int, uint64_t) {
      Transaction t;
      t.write(coll(0), small_name(1, 0, rng1() % std::max<uint64_t>(counts_1_, 1)), 0, over_);
      return store_->apply_transaction(std::move(t)) == 0;
    }, &o1.cpu_us);
    o1.stages = stage_averages(store_->perf(), perf0, store_->perf().snapshot());
    if (a_.want("overwrite1")) rows->push_back(o1);
  }

  // N writers: group commit against N independent synchronous writers.
  void run_n_writer_rows(std::vector<Row>* rows) {
    const int n = a_.writers;
    const bool many = a_.want("createN") || a_.want("overwriteN") || a_.want("randread");
    RawFigure syncn = many ? raw(RawPattern::kSyncWrite, 4096, n, kind_ == "nand") : RawFigure{};
    counts_n_.assign(static_cast<size_t>(n), 0);
    Row cn{"4 KiB creates, " + std::to_string(n) + " writers", "ops/s", syncn, 0, 1.5};
    StoreStats before, after;
    store_->statfs(&before);
    auto perf0 = store_->perf().snapshot();
    if (many) cn.store = timed(n, a_.seconds, [&](int w, uint64_t i) {
      Transaction t;
      t.write(coll(w), small_name(n, w, i), 0, small_);
      bool ok = store_->apply_transaction(std::move(t)) == 0;
      if (ok) counts_n_[static_cast<size_t>(w)] = i + 1;
      return ok;
    }, &cn.cpu_us);
    cn.stages = stage_averages(store_->perf(), perf0, store_->perf().snapshot());
    store_->statfs(&after);
    cn.txns_per_group = per_group(before, after);
    if (a_.want("createN")) rows->push_back(cn);
    Row on{"4 KiB overwrites, " + std::to_string(n) + " writers", "ops/s", syncn, 0, 1.5};
    store_->statfs(&before);
    perf0 = store_->perf().snapshot();
    if (a_.want("overwriteN")) on.store = timed(n, a_.seconds, [&](int w, uint64_t i) {
      Transaction t;
      uint64_t have = std::max<uint64_t>(counts_n_[static_cast<size_t>(w)], 1);
      uint64_t pick = (i * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(w)) % have;
      t.write(coll(w), small_name(n, w, pick), 0, over_);
      return store_->apply_transaction(std::move(t)) == 0;
    }, &on.cpu_us);
    on.stages = stage_averages(store_->perf(), perf0, store_->perf().snapshot());
    store_->statfs(&after);
    on.txns_per_group = per_group(before, after);
    if (a_.want("overwriteN")) rows->push_back(on);
  }

  // 4 MiB writes, N in flight: the objects the sequential-read row reads.
  void run_big_write_row(std::vector<Row>* rows) {
    const int n = a_.writers;
    RawFigure w4 = raw(RawPattern::kWrite, 4 << 20, n, false, true);
    auto four = std::make_shared<const std::string>(4 << 20, 'b');
    std::atomic<int> next{0};
    auto perf_big = store_->perf().snapshot();
    StoreStats big_before, big_after;
    store_->statfs(&big_before);
    double t0 = now_sec(), c0 = cpu_seconds();
    std::vector<std::thread> th;
    for (int w = 0; w < n; ++w)
      th.emplace_back([&] {
        for (int i; (i = next++) < a_.big_objects;) {
          Transaction t;
          t.write(coll(i % n), ObjectId::from_name("big_" + std::to_string(i), 2), 0, four);
          store_->apply_transaction(std::move(t));
        }
      });
    for (auto& x : th) x.join();
    Row big_row{"4 MiB writes, " + std::to_string(n) + " in flight", "MiB/s", w4,
                a_.big_objects * 4.0 / (now_sec() - t0), 0.9};
    big_row.cpu_us = (cpu_seconds() - c0) * 1e6 / a_.big_objects;
    big_row.stages = stage_averages(store_->perf(), perf_big, store_->perf().snapshot());
    store_->statfs(&big_after);
    big_row.txns_per_group = per_group(big_before, big_after);
    if (a_.want("write4m")) rows->push_back(big_row);
  }

  // 4 KiB random reads over --read-objects small objects (far more than
  // the onode cache holds), written first where the create rows left fewer.
  int run_random_read_row(std::vector<Row>* rows) {
    const int n = a_.writers;
    RawFigure rr = a_.want("randread") ? raw(RawPattern::kRandRead, 4096, n, true) : RawFigure{};
    uint64_t total_n = 0;
    for (auto c : counts_n_) total_n += c;
    uint64_t written = counts_1_ + total_n, read_set = written;
    if (a_.want("randread") && a_.read_objects) {
      read_set = a_.read_objects;
      if (written < read_set) {
        if (top_up(read_set - written) != 0) return 1;
        total_n = 0;
        for (auto c : counts_n_) total_n += c;
        written = counts_1_ + total_n;
      }
    }
    Row r4{"4 KiB random reads, " + std::to_string(n) + " in flight", "ops/s", rr, 0, 0.8};
    std::vector<std::mt19937_64> rngs;
    for (int w = 0; w < n; ++w) rngs.emplace_back(1000 + w);
    auto perf0 = store_->perf().snapshot();
    if (a_.want("randread")) r4.store = timed(n, a_.seconds, [&](int w, uint64_t) {
      auto& g = rngs[static_cast<size_t>(w)];
      // Object k of the order the rows wrote them in: the lone writer's,
      // then each of the N writers' in turn.
      uint64_t k = g() % read_set;
      CollectionId c = coll(0);
      ObjectId o = small_name(1, 0, k);
      if (k >= counts_1_) {
        k -= counts_1_;
        int ww = 0;
        while (k >= counts_n_[static_cast<size_t>(ww)]) k -= counts_n_[static_cast<size_t>(ww++)];
        c = coll(ww);
        o = small_name(n, ww, k);
      }
      const char* out = nullptr;
      int r = read_object(w, c, o, 4096, &out);
      bool ok = r == 4096 && (out[0] == 's' || out[0] == 'o') && out[4095] == out[0];
      if (!ok) ++bad_reads_;
      return ok;
    }, &r4.cpu_us);
    if (a_.want("randread")) {
      // Printed so that every run shows the row is what it claims: reads
      // whose onode mostly comes from RocksDB, not from the cache.
      auto perf1 = store_->perf().snapshot();
      auto delta = [&](const char* name) {
        int id = store_->perf().find(name);
        return id < 0 ? 0 : perf1[static_cast<size_t>(id)].value - perf0[static_cast<size_t>(id)].value;
      };
      const uint64_t hits = delta("onode_hits"), misses = delta("onode_misses");
      char b[96];
      snprintf(b, sizeof b, " (%.1f%% of the row's lookups hit it)",
               hits + misses ? 100.0 * static_cast<double>(hits) / static_cast<double>(hits + misses) : 0.0);
      read_note_ = std::to_string(read_set) + " objects of 4 KiB (of " + std::to_string(written) +
                   " written) read at random, onode cache " + std::to_string(a_.onode_cache) + b;
    }
    if (a_.want("randread")) {
      rows->push_back(r4);
      add_sync_reader_note(RawPattern::kRandRead, 4096, r4, false);
    }
    return 0;
  }

  // 4 MiB sequential reads of the objects run_big_write_row() wrote.
  void run_sequential_read_row(std::vector<Row>* rows) {
    const int n = a_.writers;
    RawFigure sr = raw(RawPattern::kSeqRead, 4 << 20, n, false, true);
    std::atomic<uint64_t> next{0};
    Row s4{"4 MiB sequential reads, " + std::to_string(n) + " in flight", "MiB/s", sr, 0, 0.9};
    double ops = timed(n, a_.seconds, [&](int w, uint64_t) {
      uint64_t i = next++ % static_cast<uint64_t>(a_.big_objects);
      const char* out = nullptr;
      int r = read_object(w, coll(static_cast<int>(i % static_cast<uint64_t>(n))),
                          ObjectId::from_name("big_" + std::to_string(i), 2), 4 << 20, &out);
      bool ok = r == (4 << 20) && out[0] == 'b' && out[r - 1] == 'b';
      if (!ok) ++bad_reads_;
      return ok;
    }, &s4.cpu_us);
    s4.store = ops * 4;
    rows->push_back(s4);
    add_sync_reader_note(RawPattern::kSeqRead, 4 << 20, s4, true);
  }

  // Reads [0, len) of the object for reader w; returns the bytes read (or an
  // error) and where they are. Each reader reads into page-aligned memory of
  // its own, as the Ceph adapter does (its bufferlists are page-aligned):
  // whole aligned blocks come from the device straight into it.
  int read_object(int w, const CollectionId& c, const ObjectId& o, uint64_t len, const char** out) {
    if (a_.read_api == "string") {
      std::string& str = read_strings_[static_cast<size_t>(w)];
      int r = store_->read(c, o, 0, len, &str);
      *out = str.data();
      return r;
    }
    return store_->read_into(c, o, 0, len, [&](uint64_t k) {
      AlignedBuffer& b = read_bufs_[static_cast<size_t>(w)];
      if (b.size() < k) b = AlignedBuffer(k, 4096, AlignedBuffer::kUninitialized);
      *out = b.data();
      return b.data();
    });
  }

  static double per_group(const StoreStats& b, const StoreStats& a) {
    uint64_t g = a.commit_groups - b.commit_groups;
    return g ? static_cast<double>(a.transactions_committed - b.transactions_committed) / static_cast<double>(g) : 0;
  }
  static std::string fmt_fsck(int f, const FsckReport& rep) {
    char b[256];
    snprintf(b, sizeof b, "fsck --deep after the run: %s (%llu objects, %llu MiB verified)",
             f == 0 ? "clean" : "ERRORS", static_cast<unsigned long long>(rep.objects),
             static_cast<unsigned long long>(rep.bytes_verified >> 20));
    std::string s = b;
    for (size_t i = 0; i < rep.problems.size() && i < 10; ++i) s += "\n  " + rep.problems[i];
    return s;
  }

  // The raw figure for a pattern: beside the HDD file for 4 MiB rows (that
  // tier takes them), beside the SSD for 4 KiB ones; the FTL's own for NAND.
  RawFigure raw(RawPattern p, uint64_t bs, int jobs, bool one_device, bool hdd = false, bool sync_readers = false) {
    RawRun run;
    run.sync_readers = sync_readers;
    run.pattern = p;
    run.block_size = bs;
    run.jobs = jobs;
    run.seconds = a_.raw_seconds;
    run.span = p == RawPattern::kSyncWrite ? (16ull << 20)
               : p == RawPattern::kWrite   ? (2ull << 30)
               : bs >= (1 << 20)           ? (1ull << 30)
                                           : (256ull << 20);
    const bool nand = kind_ == "nand" && !hdd;
    fprintf(stderr, "raw %s: %s, %llu KiB, %d %s, %.0f s...\n", kind_.c_str(),
            p == RawPattern::kSyncWrite ? "write+fdatasync" : p == RawPattern::kWrite ? "write"
            : p == RawPattern::kSeqRead ? "seq read" : "rand read",
            static_cast<unsigned long long>(bs >> 10), jobs,
            p == RawPattern::kSyncWrite ? "jobs" : sync_readers ? "synchronous readers" : "in flight",
            run.seconds);
    if (!nand && a_.fio) return raw_fio(scratch_, run);
    std::vector<std::string> made;
    DeviceOpener open;
    if (nand) {
      // A scratch flash of the store's geometry and FTL options.
      run.span = std::min<uint64_t>(run.span, 64ull << 20);
      if (p == RawPattern::kSyncWrite) run.span = (64ull << 20) / static_cast<uint64_t>(jobs);
      open = [&](int, std::string* e) -> std::unique_ptr<BlockDevice> {
        std::string path = scratch_ + "/.hybridstore-raw-nand." + std::to_string(getpid());
        made.push_back(path);
        return ftl::open_nand_block_device(store_->config(), path, true, e);
      };
      one_device = true;
    } else {
      open = [&](int j, std::string* e) {
        std::string path = scratch_ + "/.hybridstore-raw." + std::to_string(getpid()) + "." + std::to_string(j);
        made.push_back(path);
        DeviceOpenOptions o;
        o.direct_io = true;
        o.create = true;
        o.create_size = run.span * (one_device && p == RawPattern::kSyncWrite ? static_cast<uint64_t>(jobs) : 1);
        return open_block_device(path, o, e);
      };
    }
    RawFigure f = raw_in_process(open, one_device, run);
    if (nand) f.source = "in-process (FTL)";
    std::error_code ec;
    for (const auto& m : made) fs::remove(m, ec);
    return f;
  }

  // fio's figure for a read row keeps n reads in flight from one thread
  // (io_uring); a synchronous read API such as the store's (and Ceph's
  // ObjectStore::read) has one per calling thread. The raw device read by n
  // threads with one blocking read each is measured too, so that a reader
  // can tell the API's share of the gap from the engine's. In process the
  // raw figure already is that pattern.
  void add_sync_reader_note(RawPattern p, uint64_t bs, const Row& row, bool hdd) {
    if (!a_.fio || kind_ != "file" || row.store <= 0) return;
    RawFigure f = raw(p, bs, a_.writers, false, hdd, true);
    if (!f.ok) {
      sync_notes_.push_back(row.work + ": raw with synchronous readers not measured: " + f.note);
      return;
    }
    const bool mib = row.unit == "MiB/s";
    const double figure = mib ? f.mib_s : f.iops;
    const double ratio = figure > 0 ? row.store / figure : 0.0;
    char b[320];
    snprintf(b, sizeof b, "%s: raw with %d synchronous readers (fio psync, %d threads, one file): %.0f %s; store / that: %.2f",
             row.work.c_str(), a_.writers, a_.writers, figure, mib ? "MiB/s" : "IOPS", ratio);
    sync_notes_.push_back(b);
    sync_ratios_.emplace_back(row.work, ratio);
  }

  const CompareArgs& a_;
  std::string kind_, dir_, scratch_, ssd_dev_, hdd_dev_;
  std::unique_ptr<HybridStore> store_;
  std::shared_ptr<const std::string> small_, over_;
  // Writes `more` 4 KiB objects with the N writers (untimed), continuing
  // each writer's names, so that the random-read row has its data set.
  int top_up(uint64_t more) {
    fprintf(stderr, "%s: writing %llu more 4 KiB objects for the random-read row\n", kind_.c_str(),
            static_cast<unsigned long long>(more));
    std::atomic<uint64_t> left{more};
    std::atomic<int> failed{0};  // the first error, as apply_transaction returned it
    const int n = a_.writers;
    std::vector<std::thread> th;
    for (int w = 0; w < n; ++w)
      th.emplace_back([&, w] {
        uint64_t& have = counts_n_[static_cast<size_t>(w)];
        while (!failed) {
          uint64_t l = left.load();
          do {
            if (l == 0) return;
          } while (!left.compare_exchange_weak(l, l - 1));
          Transaction t;
          t.write(coll(w), small_name(n, w, have), 0, small_);
          if (int r = store_->apply_transaction(std::move(t)); r != 0) {
            int none = 0;
            failed.compare_exchange_strong(none, r);
            return;
          }
          ++have;
        }
      });
    for (auto& x : th) x.join();
    if (failed)
      fprintf(stderr, "%s: writing the random-read row's objects failed: %s (--read-objects %llu)\n",
              kind_.c_str(), strerror(-failed.load()), static_cast<unsigned long long>(a_.read_objects));
    return failed ? 1 : 0;
  }

  uint64_t counts_1_ = 0;
  std::vector<uint64_t> counts_n_;
  std::vector<AlignedBuffer> read_bufs_;   // per reader, for read_object()
  std::vector<std::string> read_strings_;  // per reader, with --read-api string
  std::atomic<uint64_t> bad_reads_{0};

 public:
  std::string read_note_;
  std::string floor_note_;
  double floor_ratio_ = 0;
  std::vector<std::string> sync_notes_;
  std::vector<std::pair<std::string, double>> sync_ratios_;
};

void print_table(const std::string& kind, const std::vector<Row>& rows, const std::string& fsck,
                 const std::string& read_note, const std::string& floor_note,
                 const std::vector<std::string>& sync_notes) {
  printf("\nHybridStore against the raw device: %s SSD kind\n",
         kind == "nand" ? "raw NAND through the embedded FTL" : "file-backed");
  printf("| %-52s | %-28s | %12s | %11s | %6s |\n", "work", "raw device", "store", "store / raw", "goal");
  printf("|%s|%s|%s|%s|%s|\n", std::string(54, '-').c_str(), std::string(30, '-').c_str(),
         std::string(14, '-').c_str(), std::string(13, '-').c_str(), std::string(8, '-').c_str());
  for (const auto& r : rows) {
    char raw[64];
    bool mib = r.unit == "MiB/s";
    if (r.raw.ok)
      snprintf(raw, sizeof raw, "%.0f %s (%s)", mib ? r.raw.mib_s : r.raw.iops, mib ? "MiB/s" : "IOPS",
               r.raw.source.c_str());
    else
      snprintf(raw, sizeof raw, "n/a");
    char store[32];
    snprintf(store, sizeof store, "%.0f %s", r.store, mib ? "MiB/s" : "/s");
    printf("| %-52s | %-28s | %12s | %11.2f | %6s |\n", r.work.c_str(), raw, store, r.ratio(),
           (">= " + std::to_string(r.goal).substr(0, 3)).c_str());
    if (!r.raw.ok) printf("|   raw not measured: %s\n", r.raw.note.c_str());
  }
  for (const auto& r : rows)
    if (r.cpu_us > 0 && !r.is_read()) {
      printf("CPU per transaction (user+sys / transactions), %s: %.1f us", r.work.c_str(), r.cpu_us);
      if (r.txns_per_group > 0) printf("; %.2f transactions per commit group", r.txns_per_group);
      printf("\n");
      if (!r.stages.empty()) {
        printf("  average us:");
        for (const auto& [name, us] : r.stages) printf(" %s %.1f", name.c_str(), us);
        printf("\n");
      }
    }
  for (const auto& r : rows)
    if (r.cpu_us > 0 && r.is_read()) {
      printf("CPU per read (user+sys / reads), %s: %.1f us\n", r.work.c_str(), r.cpu_us);
    }
  if (!floor_note.empty()) printf("%s\n", floor_note.c_str());
  for (const auto& n : sync_notes) printf("%s\n", n.c_str());
  if (!read_note.empty()) printf("random reads: %s\n", read_note.c_str());
  printf("%s\n", fsck.c_str());
}

int run_compare(const CompareArgs& a) {
  if (a.fio && !fio_available()) {
    fprintf(stderr, "hybridstore-bench compare: --fio-compare needs fio (Debian package fio; make deps installs it)\n");
    return 2;
  }
  // Keys in the order they are written (malloc first, rows' fields as
  // the table reads), not sorted.
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["malloc"] = malloc_name();
  printf("malloc: %s\n", malloc_name().c_str());
  int rc = 0;
  for (const auto& kind : a.kinds) {
    if (kind != "file" && kind != "nand") {
      fprintf(stderr, "hybridstore-bench compare: unknown SSD kind '%s' (file, nand)\n", kind.c_str());
      return 2;
    }
  }
  if (a.read_objects && a.read_objects <= static_cast<uint64_t>(a.onode_cache)) {
    fprintf(stderr,
            "hybridstore-bench compare: --read-objects %llu does not exceed --onode-cache %d: the random-read row "
            "would read from the cache, not RocksDB\n",
            static_cast<unsigned long long>(a.read_objects), a.onode_cache);
    return 2;
  }
  // A misspelt row would otherwise run nothing and still end "clean".
  static const char* const kRowNames[] = {"create1",    "overwrite1", "createN", "overwriteN",
                                          "write4m",    "randread",   "seqread"};
  for (const auto& row : a.rows) {
    if (std::find(std::begin(kRowNames), std::end(kRowNames), row) == std::end(kRowNames)) {
      fprintf(stderr,
              "hybridstore-bench compare: unknown row '%s' (create1, overwrite1, createN, overwriteN, write4m, "
              "randread, seqread; leave --rows out for all)\n",
              row.c_str());
      return 2;
    }
  }
  for (const auto& kind : a.kinds) {
    std::vector<Row> rows;
    std::string fsck;
    KindRun k(a, kind);
    if (k.run(&rows, &fsck) != 0) rc = 1;
    print_table(kind, rows, fsck, k.read_note_, k.floor_note_, k.sync_notes_);
    auto& arr = j[kind];
    for (const auto& r : rows) {
      nlohmann::ordered_json row = {{"work", r.work}, {"unit", r.unit}, {"raw_source", r.raw.source},
                                    {"raw_iops", r.raw.iops}, {"raw_mib_s", r.raw.mib_s}, {"store", r.store},
                                    {"ratio", r.ratio()}, {"goal", r.goal}};
      // Named for what the CPU is divided by, as the text table does.
      if (r.cpu_us > 0) row[r.is_read() ? "cpu_us_per_read" : "cpu_us_per_txn"] = r.cpu_us;
      if (r.txns_per_group > 0) row["txns_per_group"] = r.txns_per_group;
      if (!r.stages.empty()) {
        nlohmann::ordered_json stages = nlohmann::ordered_json::object();
        for (const auto& [name, us] : r.stages) stages[name] = us;
        row["stage_avg_us"] = stages;
      }
      arr.push_back(std::move(row));
    }
    j[kind + "_fsck"] = fsck;
    j[kind + "_random_reads"] = k.read_note_;
    if (k.floor_ratio_ > 0) j[kind + "_raw_8k_over_4k_sync"] = k.floor_ratio_;
    for (const auto& [work, ratio] : k.sync_ratios_) j[kind + "_store_over_sync_readers"][work] = ratio;
  }
  std::error_code ec;
  fs::remove_all(a.dir, ec);
  if (!a.json.empty())
    if (FILE* f = fopen(a.json.c_str(), "w")) {
      fprintf(f, "%s\n", j.dump(2).c_str());
      fclose(f);
    }
  return rc;
}

BenchCommand compare(
    "compare", "store vs raw device, row by row in one run: 4 KiB sync writes (1 and N writers), 4 MiB writes, "
               "4 KiB random and 4 MiB sequential reads; file and NAND SSD kinds",
    [](CLI::App* sub) {
      auto a = std::make_shared<CompareArgs>();
      sub->add_option("--dir", a->dir, "work directory (recreated, removed afterwards)");
      sub->add_option("--kinds", a->kinds, "SSD kinds to run: file, nand")->delimiter(',');
      sub->add_flag("--fio-compare", a->fio, "raw figures of file-backed tiers from fio (else in process)");
      sub->add_option("--seconds", a->seconds, "seconds of each store row");
      sub->add_option("--raw-seconds", a->raw_seconds, "seconds of each raw figure");
      sub->add_option("--writers", a->writers, "writers / requests in flight")->check(CLI::Range(1, 256));
      sub->add_option("--objects", a->big_objects, "4 MiB objects written")->check(CLI::Range(16, 100000));
      sub->add_option("--onode-cache", a->onode_cache, "onode cache size (below the data set)")
          ->check(CLI::Range(64, 100000000));
      sub->add_option("--read-objects", a->read_objects,
                      "4 KiB objects the random-read row reads from, written first where the create rows "
                      "wrote fewer (0: every one they wrote; must exceed --onode-cache)")
          ->check(CLI::Range(uint64_t{0}, uint64_t{100000000}));
      sub->add_option("--layout", a->layout,
                      "how the store's device files are made: zero (written out before the run, as fio "
                      "lays out its file; the device files are cut to 2 GiB SSD and 4+ GiB HDD), "
                      "fallocate, or none (sparse, the store's default)")
          ->check(CLI::IsMember({"zero", "fallocate", "none"}));
      sub->add_option("--read-api", a->read_api,
                      "how the read rows take their bytes: buffer (into page-aligned memory, the Ceph "
                      "adapter's path) or string (read() into a std::string)")
          ->check(CLI::IsMember({"buffer", "string"}));
      sub->add_option("--json", a->json, "also write the rows as JSON to FILE");
      sub->add_option("--set", a->sets, "store option key=value (repeatable)");
      sub->add_option("--rows", a->rows,
                      "rows to run (default all): create1 overwrite1 createN overwriteN write4m randread seqread")
          ->delimiter(',');
      return [a] { return run_compare(*a); };
    });

}  // namespace
}  // namespace hybridstore::bench
