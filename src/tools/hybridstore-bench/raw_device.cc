#include "raw_device.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

namespace hybridstore::bench {

namespace fs = std::filesystem;

bool fio_available() { return std::system("fio --version >/dev/null 2>&1") == 0; }

RawFigure raw_fio(const std::string& dir, const RawRun& run) {
  RawFigure f;
  f.source = "fio";
  std::string sub = dir + "/.hybridstore-fio." + std::to_string(getpid());
  std::error_code ec;
  fs::create_directories(sub, ec);
  std::string rw, engine;
  int numjobs = 1, iodepth = 1;
  uint64_t size = run.span;
  switch (run.pattern) {
    case RawPattern::kSyncWrite:
      // psync with fdatasync after every write: one durable write at a time
      // per job, each job its own file, as independent writers are.
      rw = "write";
      engine = "psync --fdatasync=1";
      numjobs = run.jobs;
      break;
    case RawPattern::kWrite: rw = "write --end_fsync=1"; break;
    case RawPattern::kSeqRead: rw = "read"; break;
    case RawPattern::kRandRead: rw = "randread"; break;
  }
  const bool sync_readers = run.sync_readers && run.pattern != RawPattern::kSyncWrite &&
                            run.pattern != RawPattern::kWrite;
  if (sync_readers) {
    // Threads, not processes, all on one file: the store's readers are
    // threads of one process reading one device file.
    engine = "psync --thread";
    numjobs = run.jobs;
  } else if (run.pattern != RawPattern::kSyncWrite) {
    engine = "io_uring";
    iodepth = run.jobs;
  }
  // Synchronous readers name their one file outright: given as a
  // --filename_format without $jobnum, fio (3.33) reads a shared file at well
  // under half the rate it reaches with --filename (measured: 35k against
  // 82k 4 KiB IOPS with 16 threads), and the figure beside the store must be
  // the device's best.
  // The command goes through the shell: the directory is quoted, so that a
  // work directory with spaces or quotes in its name still works.
  std::string quoted_sub = "'";
  for (char c : sub) quoted_sub += c == '\'' ? std::string("'\\''") : std::string(1, c);
  quoted_sub += "'";
  std::string files = sync_readers ? "--filename=" + quoted_sub + "/hsraw.shared"
                                   : "--directory=" + quoted_sub + " --filename_format='hsraw.$jobnum'";
  if (sync_readers && run.pattern == RawPattern::kSeqRead && run.jobs > 1) {
    // Each reader its own part of the file, as the store's readers read
    // different objects. Left to itself every job of a shared file reads it
    // from offset 0, all in step: the host serves the same blocks 16 times
    // over and the figure came out 10% above what distinct reads get
    // (docs/benchmarks.md, "What the raw device does on this machine").
    const uint64_t per = std::max<uint64_t>(size / static_cast<uint64_t>(run.jobs) / run.block_size, 1) * run.block_size;
    files += " --filesize=" + std::to_string(per * static_cast<uint64_t>(run.jobs)) +
             " --offset_increment=" + std::to_string(per);
    size = per;
  }
  char cmd[2048];
  const int cmd_len = snprintf(cmd, sizeof cmd,
           "fio --name=hsraw %s --size=%llu --bs=%llu --rw=%s "
           "--ioengine=%s --iodepth=%d --numjobs=%d --direct=1 --time_based --runtime=%.0f --randrepeat=0 "
           "--randseed=%llu --group_reporting --output-format=json 2>&1",
           files.c_str(), static_cast<unsigned long long>(size), static_cast<unsigned long long>(run.block_size),
           rw.c_str(), engine.c_str(), iodepth, numjobs, std::max(1.0, run.seconds),
           static_cast<unsigned long long>(run.seed));
  if (cmd_len < 0 || static_cast<size_t>(cmd_len) >= sizeof cmd) {
    // A cut command line would run fio on another file, or not at all.
    f.note = "work directory path too long for fio's command line: " + sub;
    fs::remove_all(sub, ec);
    return f;
  }
  std::string out;
  if (FILE* p = popen(cmd, "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    int st = pclose(p);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) f.note = "fio failed: " + out.substr(0, 300);
  } else {
    f.note = "cannot run fio";
  }
  fs::remove_all(sub, ec);
  if (!f.note.empty()) return f;
  // fio may print warnings before the JSON document.
  auto brace = out.find('{');
  auto j = nlohmann::json::parse(brace == std::string::npos ? out : out.substr(brace), nullptr, false);
  if (j.is_discarded() || !j.contains("jobs") || j["jobs"].empty()) {
    f.note = "unreadable fio output";
    return f;
  }
  const auto& job = j["jobs"][0];
  const auto& side = run.pattern == RawPattern::kSyncWrite || run.pattern == RawPattern::kWrite ? job["write"]
                                                                                               : job["read"];
  f.iops = side.value("iops", 0.0);
  f.mib_s = side.value("bw_bytes", 0.0) / (1024.0 * 1024.0);
  f.ok = f.iops > 0;
  if (!f.ok) f.note = "fio reported no I/O";
  return f;
}

RawFigure raw_in_process(const DeviceOpener& open, bool one_device_for_all, const RawRun& run) {
  RawFigure f;
  f.source = "in-process";
  const uint64_t bs = run.block_size;
  const bool sync = run.pattern == RawPattern::kSyncWrite;
  const int devices = sync && !one_device_for_all ? run.jobs : 1;
  std::vector<std::unique_ptr<BlockDevice>> dev;
  for (int i = 0; i < devices; ++i) {
    std::string err;
    dev.push_back(open(i, &err));
    if (!dev.back()) {
      f.note = err;
      return f;
    }
  }
  // Per job region (sync writers) or one region for all.
  const uint64_t region = std::max<uint64_t>(run.span / bs, 1) * bs;
  auto base_of = [&](int j) -> uint64_t { return sync && one_device_for_all ? static_cast<uint64_t>(j) * region : 0; };
  auto dev_of = [&](int j) { return dev[devices == 1 ? 0 : static_cast<size_t>(j)].get(); };
  std::vector<AlignedBuffer> bufs;
  std::mt19937_64 fill(run.seed);
  for (int i = 0; i < run.jobs; ++i) {
    bufs.emplace_back(bs, 4096, AlignedBuffer::kUninitialized);
    for (uint64_t k = 0; k + 8 <= bs; k += 8) {
      uint64_t v = fill();
      std::memcpy(bufs.back().data() + k, &v, 8);
    }
  }
  // Written once before timing, as fio lays out its files: a write into a
  // hole allocates, and its fdatasync then commits metadata too.
  {
    const uint64_t fill_len = std::min<uint64_t>(region, 4ull << 20);
    AlignedBuffer big(fill_len, 4096, AlignedBuffer::kZeroed);
    const int regions = sync && one_device_for_all ? run.jobs : 1;
    for (int d = 0; d < devices; ++d)
      for (int r = 0; r < regions; ++r)
        for (uint64_t o = 0; o < region; o += fill_len) {
          uint64_t n = std::min(fill_len, region - o);
          BlockDevice* bd = dev[static_cast<size_t>(d)].get();
          if (int e = bd->write(base_of(r) + o, big.data(), n); e < 0) {
            f.note = std::string("filling the scratch space: ") + strerror(-e);
            return f;
          }
        }
    for (auto& d : dev) d->flush();
  }
  std::atomic<uint64_t> done{0}, cursor{0};
  std::atomic<int> error{0};
  const auto t0 = std::chrono::steady_clock::now();
  const auto stop = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                             std::chrono::duration<double>(run.seconds));
  std::vector<std::thread> th;
  for (int q = 0; q < run.jobs; ++q)
    th.emplace_back([&, q] {
      std::mt19937_64 rng(run.seed * 1000003 + static_cast<uint64_t>(q));
      char* buf = bufs[static_cast<size_t>(q)].data();
      BlockDevice* bd = dev_of(q);
      uint64_t mine = 0;
      while (!error && std::chrono::steady_clock::now() < stop) {
        int r;
        if (sync) {
          r = bd->write(base_of(q) + mine % region, buf, bs);
          mine += bs;
          if (r == 0) r = bd->flush();
        } else if (run.pattern == RawPattern::kRandRead) {
          r = bd->read(rng() % (region / bs) * bs, buf, bs);
        } else {
          uint64_t off = cursor.fetch_add(bs) % region;
          r = run.pattern == RawPattern::kWrite ? bd->write(off, buf, bs) : bd->read(off, buf, bs);
        }
        if (r < 0) {
          error = r;
          return;
        }
        ++done;
      }
    });
  for (auto& t : th) t.join();
  if (run.pattern == RawPattern::kWrite && !error) error = dev[0]->flush();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (error) {
    f.note = std::string("raw I/O failed: ") + strerror(-error);
    return f;
  }
  f.iops = static_cast<double>(done) / secs;
  f.mib_s = f.iops * static_cast<double>(bs) / (1024.0 * 1024.0);
  f.ok = true;
  return f;
}

}  // namespace hybridstore::bench
