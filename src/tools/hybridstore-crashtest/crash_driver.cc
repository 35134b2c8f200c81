// `loop`: the driver. Each round runs the workload process on the store the
// previous round left, ends it abruptly (SIGKILL at a random moment, or an
// injected power cut), then recovers and checks the store in this process:
// mount, deep fsck (must be clean), and the store must equal the model after
// transactions 1..p with last durable <= p <= last queued. The verified state
// is the next round's starting point, so recoveries pile up as in real life.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "crash_workload.h"
#include "crashtest.h"

namespace hybridstore::crashtest {

namespace {

struct RoundLog {
  bool has_base = false;
  uint64_t base_digest = 0;
  uint64_t submitted = 0;
  uint64_t acked = 0;
  std::string end;  // E/F/X line, if any
};

RoundLog parse_log(const std::string& path) {
  RoundLog l;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    if (line.size() < 2) continue;  // a line cut by the kill
    const char kind = line[0];
    const std::string rest = line.substr(2);
    if (kind == 'B') {
      l.has_base = true;
      l.base_digest = std::stoull(rest.substr(0, 16), nullptr, 16);
    } else if (kind == 'S') {
      l.submitted = std::max<uint64_t>(l.submitted, std::stoull(rest));
    } else if (kind == 'A') {
      l.acked = std::max<uint64_t>(l.acked, std::stoull(rest));
    } else {
      l.end = line;
    }
  }
  return l;
}

std::string self_exe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "hybridstore-crashtest" : p.string();
}

// Starts `run` with its stderr in `err_path`; returns the child's pid or -1.
pid_t spawn(const std::vector<std::string>& args, const std::string& err_path) {
  // Built before fork: the child may only exec (other threads may hold locks).
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  pid_t pid = fork();
  if (pid != 0) {
    if (err_fd >= 0) ::close(err_fd);
    return pid;
  }
  if (err_fd >= 0) ::dup2(err_fd, 2);
  execv(argv[0], argv.data());
  perror("hybridstore-crashtest: exec");
  _exit(127);
}

// Waits up to `ms` for the child to end on its own; kills it otherwise.
// Returns its wait status and sets *killed when we killed it.
int wait_or_kill(pid_t pid, int ms, bool* killed) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      *killed = false;
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  *killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  return status;
}

std::string describe(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("died of signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return "ended oddly";
}

// How a round ends its workload: the workload's command line, when to kill
// it, and the words the round's line uses for it.
struct RoundPlan {
  std::vector<std::string> args;
  int kill_ms = 0;
  std::string how;
  bool powercut = false;
};

RoundPlan plan_round(const LoopArgs& a, const std::string& store_path, const std::string& log, uint64_t seed,
                     std::mt19937_64& rng) {
  auto below = [&](uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng); };
  RoundPlan p;
  p.powercut = a.mode == "powercut" || (a.mode == "mixed" && below(2));
  p.args = {self_exe(), "run", "--path", store_path, "--log", log, "--seed",
            std::to_string(seed), "--max-inflight", std::to_string(a.max_inflight)};
  for (const auto& s : a.sets) p.args.insert(p.args.end(), {"--set", s});
  if (p.powercut) {
    // A write count within what a round's workload reaches; mount's own
    // RocksDB writes come first, so low values cut during recovery.
    const uint64_t at = 1 + below(below(8) == 0 ? 40 : 4000);
    const bool tear = below(2);
    p.args.insert(p.args.end(), {"--powercut-after", std::to_string(at)});
    if (tear) p.args.push_back("--tear");
    p.kill_ms = 20000;  // the power cut ends it; the kill is only a backstop
    p.how = fmt::format("power cut at write {}{}", at, tear ? " (torn)" : "");
  } else {
    // Some kills land during mount and recovery, most mid-workload.
    p.kill_ms = below(7) == 0 ? static_cast<int>(below(60)) : 60 + static_cast<int>(below(a.max_kill_ms - 59));
    p.how = fmt::format("SIGKILL at {} ms", p.kill_ms);
  }
  return p;
}

struct Recovered {
  FsckReport rep;
  StoreModel actual;
  uint64_t matched = 0;  // the store holds transactions 1..matched
  // Acknowledged deferred writes the mount put in place: from the commit
  // journal's ring (format 6) and from D records in RocksDB.
  uint64_t replayed_ring = 0, replayed_records = 0;
  // Onode deltas in the ring (format 7): changes RocksDB lacked, and had.
  uint64_t deltas_applied = 0, deltas_included = 0;
};

// Mounts the store a crash left, fscks it deeply and holds it against the
// model of the round's transactions, then unmounts it. Empty when all
// holds, else why not.
std::string check_recovered(HybridStore& store, uint64_t seed, const StoreModel& base, const RoundLog& rl,
                            Recovered* out) {
  std::string err;
  // The killed workload's device locks can outlive it: its io_uring keeps
  // the files open until the kernel has reaped the requests in flight, which
  // on a loaded machine took longer than the waitpid. Only that is waited
  // for, and not forever; anything else fails the round.
  int r = store.mount(&err);
  const auto t0 = std::chrono::steady_clock::now();
  while (r == -EBUSY && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    err.clear();
    r = store.mount(&err);
  }
  if (r < 0) return "mount after the crash failed: " + err;
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  if (waited.count() >= 100) printf("  (the killed workload's device lock lingered %lld ms)\n", static_cast<long long>(waited.count()));
  FsckReport& rep = out->rep;
  int fr = store.fsck(true, &rep);
  if (fr != 0)
    return fmt::format("fsck --deep found {} errors; first: {}", rep.errors,
                       rep.problems.empty() ? std::string("?") : rep.problems[0]);
  StoreStats st;
  if (int sr = store.statfs(&st); sr < 0) return fmt::format("statfs after the mount: {}", strerror(-sr));
  out->replayed_ring = st.mount_replayed_from_ring;
  out->replayed_records = st.mount_replayed_from_records;
  out->deltas_applied = st.mount_onode_deltas_applied;
  out->deltas_included = st.mount_onode_deltas_included;
  if (int r = read_store_model(store, &out->actual, &err); r < 0)
    return "reading the recovered store: " + err + ": " + strerror(-r);
  if (rl.has_base && rl.base_digest != base.digest())
    return "the workload found a different store than the last round verified (recovery changed it)";
  if (rl.acked > rl.submitted) return "a transaction was acknowledged before it was queued (log)";
  std::string why;
  if (!verify_prefix(out->actual, seed, base, WorkloadParams(), rl.acked, rl.submitted, &out->matched, &why))
    return why;
  if (int r = store.umount(); r < 0) return fmt::format("umount: {}", strerror(-r));
  return {};
}

struct LoopTotals {
  uint64_t verified = 0, acked = 0, unacked_present = 0, kills = 0, powercuts = 0, clean_exits = 0;
  uint64_t fsck_clean = 0, bytes_verified = 0;
  uint64_t replayed_ring = 0, replayed_records = 0;
  uint64_t deltas_applied = 0, deltas_included = 0;
};

void print_summary(const LoopArgs& a, uint64_t seed0, double secs, const LoopTotals& t, const StoreModel& final_store) {
  printf("\nsummary: %d rounds in %.0f s, base seed %llu (%llu SIGKILLs, %llu power cuts, %llu workloads finished "
         "first)\n",
         a.rounds, secs, static_cast<unsigned long long>(seed0), static_cast<unsigned long long>(t.kills),
         static_cast<unsigned long long>(t.powercuts), static_cast<unsigned long long>(t.clean_exits));
  printf("  transactions verified present and whole: %llu (%llu acknowledged, %llu queued but not yet acknowledged)\n",
         static_cast<unsigned long long>(t.verified), static_cast<unsigned long long>(t.acked),
         static_cast<unsigned long long>(t.unacked_present));
  printf("  fsck --deep after recovery: %llu of %d clean, %.1f MiB of data verified\n",
         static_cast<unsigned long long>(t.fsck_clean), a.rounds, t.bytes_verified / 1048576.0);
  printf("  acknowledged deferred writes the recoveries put in place: %llu from the commit journal's ring, %llu "
         "from D records\n",
         static_cast<unsigned long long>(t.replayed_ring), static_cast<unsigned long long>(t.replayed_records));
  if (t.deltas_applied + t.deltas_included)
    printf("  onode deltas the recoveries replayed: %llu applied (only in the ring), %llu already in RocksDB\n",
           static_cast<unsigned long long>(t.deltas_applied), static_cast<unsigned long long>(t.deltas_included));
  printf("  final store: %llu objects, %.1f MiB\n", static_cast<unsigned long long>(final_store.object_count()),
         final_store.data_bytes() / 1048576.0);
  printf("all rounds passed\n");
}

}  // namespace

int run_loop(const LoopArgs& a) {
  const uint64_t seed0 = a.seed ? a.seed
                                : static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) %
                                      1000000000ull;
  std::string err;
  bool ok;
  Config cfg = harness_config(a.sets, &err, &ok);
  if (!ok) {
    fprintf(stderr, "hybridstore-crashtest: %s\n", err.c_str());
    return 2;
  }
  std::error_code ec;
  std::filesystem::create_directories(a.dir, ec);
  const std::string store_path = a.dir + "/store";
  std::filesystem::remove_all(store_path, ec);
  {
    HybridStore s(store_path, cfg);
    if (s.mkfs(&err) < 0) {
      fprintf(stderr, "hybridstore-crashtest: mkfs %s: %s\n", store_path.c_str(), err.c_str());
      return 2;
    }
  }
  printf("crash harness: %d rounds, mode %s, base seed %llu (reproduce with --seed %llu), store %s\n", a.rounds,
         a.mode.c_str(), static_cast<unsigned long long>(seed0), static_cast<unsigned long long>(seed0),
         store_path.c_str());
  std::mt19937_64 rng(seed0);

  StoreModel base;
  LoopTotals tot;
  const auto t0 = std::chrono::steady_clock::now();
  for (int round = 1; round <= a.rounds; ++round) {
    const uint64_t seed = seed0 * 1000003ull + static_cast<uint64_t>(round);
    const std::string log = a.dir + "/round.log";
    RoundPlan plan = plan_round(a, store_path, log, seed, rng);
    std::filesystem::remove(log, ec);
    const std::string err_log = a.dir + "/round.err";
    pid_t pid = spawn(plan.args, err_log);
    if (pid < 0) {
      perror("hybridstore-crashtest: fork");
      return 2;
    }
    bool killed = false;
    int status = wait_or_kill(pid, plan.kill_ms, &killed);
    RoundLog rl = parse_log(log);
    auto fail = [&](const std::string& why) {
      printf("round %d/%d FAILED (seed %llu, %s): %s\n", round, a.rounds, static_cast<unsigned long long>(seed),
             plan.how.c_str(), why.c_str());
      // The next round would start from another store, so the only way to
      // see what this round did is to write its transactions down now.
      const std::string txns = a.dir + "/round.txns";
      if (dump_transactions(txns, seed, base, WorkloadParams(), rl.submitted))
        printf("the round's transactions 1..%llu are in %s\n", static_cast<unsigned long long>(rl.submitted),
               txns.c_str());
      printf("reproduce with --seed %llu (base seed)\n", static_cast<unsigned long long>(seed0));
      printf("the store is kept at %s; the round's log at %s, the workload's messages at %s\n",
             store_path.c_str(), log.c_str(), err_log.c_str());
      return 1;
    };
    if (killed) {
      ++tot.kills;
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
      ++tot.powercuts;
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      ++tot.clean_exits;
    } else {
      return fail("the workload " + describe(status) + (rl.end.empty() ? "" : ": " + rl.end));
    }
    if (plan.powercut && killed) plan.how += ", not reached: SIGKILL";

    HybridStore store(store_path, cfg);
    Recovered rec;
    if (std::string why = check_recovered(store, seed, base, rl, &rec); !why.empty()) return fail(why);
    const FsckReport& rep = rec.rep;
    const uint64_t matched = rec.matched;
    ++tot.fsck_clean;
    tot.bytes_verified += rep.bytes_verified;
    tot.verified += matched;
    tot.acked += rl.acked;
    tot.unacked_present += matched - rl.acked;
    tot.replayed_ring += rec.replayed_ring;
    tot.replayed_records += rec.replayed_records;
    tot.deltas_applied += rec.deltas_applied;
    tot.deltas_included += rec.deltas_included;
    printf("round %d/%d seed %llu, %s: queued %llu, durable %llu, store holds 1..%llu (%llu not yet acknowledged); "
           "deferred writes replayed: %llu ring, %llu D; onode deltas applied %llu; fsck --deep clean: %llu objects, "
           "%llu extents, %.1f MiB verified\n",
           round, a.rounds, static_cast<unsigned long long>(seed), plan.how.c_str(),
           static_cast<unsigned long long>(rl.submitted), static_cast<unsigned long long>(rl.acked),
           static_cast<unsigned long long>(matched), static_cast<unsigned long long>(matched - rl.acked),
           static_cast<unsigned long long>(rec.replayed_ring), static_cast<unsigned long long>(rec.replayed_records),
           static_cast<unsigned long long>(rec.deltas_applied), static_cast<unsigned long long>(rep.objects), static_cast<unsigned long long>(rep.extents),
           rep.bytes_verified / 1048576.0);
    base = std::move(rec.actual);
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  print_summary(a, seed0, secs, tot, base);
  if (!a.keep) std::filesystem::remove_all(a.dir + "/store", ec);
  return 0;
}

}  // namespace hybridstore::crashtest
