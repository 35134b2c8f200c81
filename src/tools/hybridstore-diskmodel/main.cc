// hybridstore-diskmodel: a user-space disk model. A FUSE file system serving
// one file, DIR/disk, backed by an image file and delayed request by request
// as a 7,200-rpm disk (or a SATA SSD) would serve it, so that a loop device
// attached over it with --direct-io=on behaves like that device for
// everything above it (qa/devclass/devclass.sh does the attaching).
//
// With --powercut-undo the disk can also lose power: its unflushed writes are
// kept undoable (DiskUndoLog) and `hybridstore-diskmodel cut` tells the model
// to drop them through its --control socket.
//
// The kernel's blkio throttle alone cannot do this: it budgets bytes and
// requests per time slice, so sequential I/O cut into small bios pays per
// bio like random I/O does, and nothing seeks or rotates.
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "control.h"
#include "disk_fs.h"
#include "model_driver.h"

using namespace hybridstore;
using namespace hybridstore::diskmodel;
using nlohmann::json;

namespace {

#ifndef HS_DISKMODEL_PROFILES
#define HS_DISKMODEL_PROFILES ""
#endif

struct Options {
  std::string image, size, mount, profile = "hdd", profile_file, stats, pid_file;
  std::string powercut_undo, control;
  std::vector<std::string> sets;
  std::string backing_io = "direct";
  bool foreground = false, no_sync_backing = false;
  unsigned threads = 32;
  unsigned spin_us = 0;
  std::string max_request = "1M";
};

bool read_text(const std::string& path, std::string* out) {
  std::ifstream f(path);
  if (!f) return false;
  std::stringstream ss;
  ss << f.rdbuf();
  *out = ss.str();
  return true;
}

std::string absolute(const std::string& p) {
  return p.empty() ? p : std::filesystem::absolute(p).lexically_normal().string();
}

uint64_t process_cpu_ns() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  auto ns = [](const timeval& tv) {
    return static_cast<uint64_t>(tv.tv_sec) * 1000000000ull + static_cast<uint64_t>(tv.tv_usec) * 1000ull;
  };
  return ns(ru.ru_utime) + ns(ru.ru_stime);
}

struct Run {
  Options opt;
  DiskProfile profile;
  std::string profile_origin;
  uint64_t size = 0;
  uint64_t t0 = monotonic_ns();
  std::unique_ptr<ModelDriver> driver;
  std::unique_ptr<DiskFs> fs;

  json stats() const {
    json fsj = fs->stats();
    json dj = driver ? driver->stats() : json{{"requests", 0}, {"note", "profile none: no model"}};
    json keys = json::object();
    for (const auto& [k, v] : profile.keys) keys[k] = v;
    const uint64_t reqs = std::max<uint64_t>(
        1, fsj["reads"].get<uint64_t>() + fsj["writes"].get<uint64_t>() +
               fsj["fsyncs"].get<uint64_t>() + fsj["fallocates"].get<uint64_t>());
    const double model_cpu = driver ? dj["model_cpu"]["ns"].get<double>() : 0.0;
    const double actuator_cpu = driver ? dj["model_cpu"]["actuator_thread_ns"].get<double>() : 0.0;
    const double proc = static_cast<double>(process_cpu_ns());
    const double r = static_cast<double>(reqs);
    return json{
        {"tool", "hybridstore-diskmodel"},
        {"uptime_s", (monotonic_ns() - t0) / 1e9},
        {"profile",
         {{"name", profile.name}, {"origin", profile_origin}, {"describe", profile.describe()}, {"keys", keys}}},
        {"fs", fsj},
        {"driver", dj},
        {"cpu_ns",
         {{"model", model_cpu},
          {"fuse_handlers", fsj["handler_cpu_ns"].get<double>()},
          {"actuator_thread", actuator_cpu},
          {"process", proc}}},
        {"cpu_per_request_us",
         {{"requests", reqs},
          // The model's own bookkeeping (submit + advance), the number that
          // must stay far below a request's modelled time.
          {"model", model_cpu / r / 1e3},
          // The FUSE handlers: backing I/O syscalls, the submit, the stats.
          {"fuse_handlers", fsj["handler_cpu_ns"].get<double>() / r / 1e3},
          // The actuator thread: the model's advance, its sleeps and wake-ups.
          {"actuator_thread", actuator_cpu / r / 1e3},
          {"process", proc / r / 1e3}}},
    };
  }

  void write_stats() const {
    if (opt.stats.empty()) return;
    const std::string tmp = opt.stats + ".tmp";
    {
      std::ofstream f(tmp);
      f << stats().dump(2) << "\n";
      if (!f) {
        fprintf(stderr, "hybridstore-diskmodel: cannot write %s\n", tmp.c_str());
        return;
      }
    }
    // Readers never see half a file.
    if (rename(tmp.c_str(), opt.stats.c_str()) != 0)
      fprintf(stderr, "hybridstore-diskmodel: cannot rename %s: %s\n", tmp.c_str(), strerror(errno));
  }

  std::string summary() const {
    json s = stats();
    const auto& c = s["cpu_per_request_us"];
    std::string line = fmt::format(
        "{} requests; CPU per request: model {:.2f} us, FUSE handlers {:.2f} us, actuator thread "
        "{:.2f} us, whole process {:.2f} us",
        c["requests"].get<uint64_t>(), c["model"].get<double>(), c["fuse_handlers"].get<double>(),
        c["actuator_thread"].get<double>(), c["process"].get<double>());
    if (driver) {
      const auto& d = s["driver"]["delivery"];
      line += fmt::format("; hand-back late by {:.1f} us on average, {:.0f} us at most",
                          d["late_mean_us"].get<double>(), d["late_max_us"].get<double>());
    }
    return line;
  }
};

bool load_profile(Run& run, std::string* err) {
  std::string text, origin;
  if (!run.opt.profile_file.empty()) {
    if (!read_text(run.opt.profile_file, &text)) {
      *err = fmt::format("cannot read --profile-file {}", run.opt.profile_file);
      return false;
    }
    origin = absolute(run.opt.profile_file);
  } else if (std::string def = HS_DISKMODEL_PROFILES; !def.empty() && read_text(def, &text)) {
    origin = def;
  } else {
    text = DiskProfileSet::builtin_text();
    origin = "built-in copy (qa/devclass/profiles.conf not found)";
  }
  DiskProfileSet set;
  if (!DiskProfileSet::parse(text, origin, &set, err)) return false;
  if (!set.get(run.opt.profile, &run.profile, err)) return false;
  for (const auto& kv : run.opt.sets) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) {
      *err = fmt::format("--set {}: expected key=value", kv);
      return false;
    }
    if (!run.profile.set(kv.substr(0, eq), kv.substr(eq + 1), err)) {
      *err = "--set " + *err;
      return false;
    }
  }
  if (!run.profile.validate(err)) return false;
  run.profile_origin = origin;
  return true;
}

void add_options(CLI::App& app, Options& o) {
  app.add_option("--image", o.image, "backing image file; created, or extended (sparse) to --size")->required();
  app.add_option("--size", o.size, "size of the disk: bytes or with K/M/G/T (binary)")->required();
  app.add_option("--mount", o.mount, "empty directory to mount on")->required();
  app.add_option("--profile", o.profile, "device class: a [section] of the profiles file (hdd, ssd, none)")
      ->capture_default_str();
  app.add_option("--profile-file", o.profile_file,
                 std::string("profiles file (default: ") +
                     (std::string(HS_DISKMODEL_PROFILES).empty() ? "the built-in copy" : HS_DISKMODEL_PROFILES) +
                     ", else the built-in copy)");
  app.add_option("--set", o.sets, "override a profile key: key=value (repeatable)");
  app.add_option("--stats", o.stats, "write the stats here as JSON on exit and on SIGUSR1");
  app.add_option("--pid-file", o.pid_file, "write the serving process's pid here once mounted");
  app.add_flag("--foreground,-f", o.foreground, "stay in the foreground (logs on stderr)");
  app.add_option("--backing-io", o.backing_io,
                 "I/O on the image: direct (O_DIRECT when a request is 4 KiB-aligned, else buffered), or "
                 "buffered (through the page cache: fast re-reads, but its CPU and memory cost)")
      ->check(CLI::IsMember({"buffered", "direct"}))
      ->capture_default_str();
  app.add_flag("--no-sync-backing", o.no_sync_backing,
               "an fsync of the disk does not fsync the image (the model still charges the flush)");
  app.add_option("--threads", o.threads, "most FUSE worker threads")->check(CLI::Range(2, 1024))->capture_default_str();
  app.add_option("--spin-us", o.spin_us,
                 "spin instead of sleeping for the last N us before a completion (precise, costs CPU)")
      ->check(CLI::Range(0, 10000))
      ->capture_default_str();
  app.add_option("--max-request", o.max_request, "largest read/write the kernel may send (max_write, max_read)")
      ->capture_default_str();
  app.add_option("--powercut-undo", o.powercut_undo,
                 "emulate the volatile write cache for power cuts: log the pre-image of every write here until "
                 "a flush covers it (replaced at start; costs a read and a write of the range per write)");
  app.add_option("--control", o.control,
                 "unix socket to listen on for `hybridstore-diskmodel cut` (needs --powercut-undo)");
}

// Checks the options, makes the paths absolute, loads the profile and opens
// the image; 0, or the exit status.
int prepare(Run& run, uint64_t* max_request) {
  std::string err;
  Options& o = run.opt;
  if (!parse_disk_size(o.size, &run.size) || run.size == 0 || run.size % 512 != 0) {
    fprintf(stderr, "hybridstore-diskmodel: --size %s: expected a positive multiple of 512 bytes\n", o.size.c_str());
    return 2;
  }
  if (!parse_disk_size(o.max_request, max_request) || *max_request < 4096 || *max_request > (1u << 20)) {
    fprintf(stderr, "hybridstore-diskmodel: --max-request must be within 4K..1M (libfuse's limit)\n");
    return 2;
  }
  if (!load_profile(run, &err)) {
    fprintf(stderr, "hybridstore-diskmodel: %s\n", err.c_str());
    return 2;
  }
  // fuse_daemonize() changes to /.
  o.image = absolute(o.image);
  o.mount = absolute(o.mount);
  o.stats = absolute(o.stats);
  o.pid_file = absolute(o.pid_file);
  o.powercut_undo = absolute(o.powercut_undo);
  o.control = absolute(o.control);
  if (!o.control.empty() && o.powercut_undo.empty()) {
    fprintf(stderr, "hybridstore-diskmodel: --control needs --powercut-undo (there is nothing to cut without it)\n");
    return 2;
  }
  {
    std::error_code ec;
    if (!std::filesystem::is_directory(o.mount, ec) || !std::filesystem::is_empty(o.mount, ec)) {
      fprintf(stderr, "hybridstore-diskmodel: --mount %s must be an existing empty directory\n", o.mount.c_str());
      return 2;
    }
  }

  fprintf(stderr, "hybridstore-diskmodel: profiles from %s\n", run.profile_origin.c_str());
  if (run.profile.kind != DiskKind::kNone) run.driver = std::make_unique<ModelDriver>(run.profile, run.size, o.spin_us);
  fprintf(stderr, "hybridstore-diskmodel: %s\n",
          run.driver ? run.driver->model().describe().c_str() : run.profile.describe().c_str());

  DiskFsConfig fc;
  fc.image = o.image;
  fc.size = run.size;
  fc.direct_backing = o.backing_io == "direct";
  fc.sync_backing = !o.no_sync_backing;
  fc.max_request = static_cast<uint32_t>(*max_request);
  fc.undo_path = o.powercut_undo;
  run.fs = std::make_unique<DiskFs>(fc, run.driver.get());
  if (!run.fs->open_image(&err)) {
    fprintf(stderr, "hybridstore-diskmodel: %s\n", err.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "cut") == 0) return run_cut_command(argc - 1, argv + 1);
  Run run;
  Options& o = run.opt;
  CLI::App app{
      "hybridstore-diskmodel: serve one file, MOUNT/disk, backed by IMAGE and delayed as a 7,200-rpm disk\n"
      "(or a SATA SSD) would serve each request; attach a loop device over it with --direct-io=on\n"
      "(qa/devclass/devclass.sh). SIGTERM/SIGINT unmount and write the stats; SIGUSR1 writes them.\n"
      "`hybridstore-diskmodel cut --help`: cut the power of a model started with --powercut-undo."};
  add_options(app, o);
  CLI11_PARSE(app, argc, argv);

  uint64_t max_request = 0;
  if (int r = prepare(run, &max_request); r != 0) return r;

  const std::string max_read = fmt::format("max_read={}", max_request);
  const std::string fsname = "fsname=" + o.image;
  std::vector<const char*> fargv = {argv[0], "-o", max_read.c_str(), "-o", fsname.c_str(),
                                    "-o", "subtype=hybridstore-diskmodel"};
  fuse_args args = FUSE_ARGS_INIT(static_cast<int>(fargv.size()), const_cast<char**>(fargv.data()));
  fuse_session* se = fuse_session_new(&args, DiskFs::ops(), sizeof(fuse_lowlevel_ops), run.fs.get());
  if (!se) {
    fprintf(stderr, "hybridstore-diskmodel: fuse_session_new failed\n");
    return 1;
  }
  if (fuse_set_signal_handlers(se) != 0) {
    fuse_session_destroy(se);
    return 1;
  }
  if (fuse_session_mount(se, o.mount.c_str()) != 0) {
    fprintf(stderr, "hybridstore-diskmodel: cannot mount on %s\n", o.mount.c_str());
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    return 1;
  }
  // Threads do not survive the fork: every thread starts after this.
  fuse_daemonize(o.foreground ? 1 : 0);
  // SIGUSR1 goes to the stats thread only: block it here, before any thread
  // inherits this mask (libfuse's workers block everything themselves).
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &usr1, nullptr);
  // Listening before the pid file appears: whoever waits for it can cut.
  ControlServer control;
  if (!o.control.empty()) {
    std::string err;
    const bool listening = control.start(
        o.control,
        [&run](const std::string& request) {
          DiskUndoLog::CutOptions opt;
          DiskUndoLog::CutReport report;
          std::string why;
          if (!parse_cut_request(request, &opt, &why)) return "error " + why;
          fprintf(stderr, "hybridstore-diskmodel: power cut: %s\n", request.c_str());
          if (!run.fs->cut(opt, &report, &why)) {
            fprintf(stderr, "hybridstore-diskmodel: the cut failed: %s\n", why.c_str());
            return "error " + why;
          }
          fprintf(stderr, "hybridstore-diskmodel: power cut done: %s\n", report.describe().c_str());
          return "ok " + report.describe();
        },
        &err);
    if (!listening) {
      fprintf(stderr, "hybridstore-diskmodel: %s\n", err.c_str());
      fuse_session_unmount(se);
      fuse_remove_signal_handlers(se);
      fuse_session_destroy(se);
      return 1;
    }
  }
  if (!o.pid_file.empty()) {
    std::ofstream pf(o.pid_file);
    pf << getpid() << "\n";
  }

  std::atomic<bool> quit{false};
  std::thread stats_thread([&] {
    pthread_setname_np(pthread_self(), "diskmodel-stats");
    sigset_t all;
    sigfillset(&all);
    sigdelset(&all, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    while (!quit.load()) {
      timespec ts{0, 200 * 1000 * 1000};
      if (sigtimedwait(&usr1, nullptr, &ts) == SIGUSR1) {
        run.write_stats();
        fprintf(stderr, "hybridstore-diskmodel: %s\n", run.summary().c_str());
      }
    }
  });
  if (run.driver) run.driver->start();

  fuse_loop_config* cfg = fuse_loop_cfg_create();
  fuse_loop_cfg_set_clone_fd(cfg, 1);
  fuse_loop_cfg_set_max_threads(cfg, o.threads);
  fprintf(stderr, "hybridstore-diskmodel: serving %s (%llu bytes, image %s) on %s, pid %d\n",
          (o.mount + "/disk").c_str(), static_cast<unsigned long long>(run.size), o.image.c_str(),
          o.mount.c_str(), getpid());
  const int ret = fuse_session_loop_mt(se, cfg);
  fuse_loop_cfg_destroy(cfg);

  // Every request still held by the model is answered before the session goes.
  if (run.driver) run.driver->stop();
  control.stop();
  quit = true;
  stats_thread.join();
  fuse_session_unmount(se);
  fuse_remove_signal_handlers(se);
  fuse_session_destroy(se);
  run.write_stats();
  fprintf(stderr, "hybridstore-diskmodel: unmounted %s; %s\n", o.mount.c_str(), run.summary().c_str());
  if (!o.pid_file.empty()) unlink(o.pid_file.c_str());
  return ret < 0 ? 1 : 0;
}
