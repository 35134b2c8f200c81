#include "rados_args.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "testing/workload_profiles.h"

namespace hybridstore::bench {

namespace fs = std::filesystem;

const char* rados_mode_name(RadosMode m) {
  switch (m) {
    case RadosMode::kWrite: return "write";
    case RadosMode::kSeq: return "seq";
    case RadosMode::kRand: return "rand";
    case RadosMode::kRandWrite: return "randwrite";
    case RadosMode::kMixed: return "mixed";
  }
  return "?";
}

bool parse_size(const std::string& text, uint64_t* out) {
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == 0 || i > 15) return false;  // no digits, a sign, or absurdly large
  uint64_t v = std::stoull(text.substr(0, i));
  std::string unit = text.substr(i);
  uint64_t mult = 1;
  if (unit.empty() || unit == "B") mult = 1;
  else if (unit == "K" || unit == "k" || unit == "KiB") mult = 1ull << 10;
  else if (unit == "M" || unit == "m" || unit == "MiB") mult = 1ull << 20;
  else if (unit == "G" || unit == "g" || unit == "GiB") mult = 1ull << 30;
  else return false;
  if (v == 0 || v > (1ull << 44) / mult) return false;
  *out = v * mult;
  return true;
}

void add_rados_options(CLI::App* sub, RadosArgs* a) {
  const RadosMode m = a->mode;
  const bool writes = m == RadosMode::kWrite || m == RadosMode::kRandWrite;
  if (m == RadosMode::kRandWrite) {
    a->block_size_text = "4K";
    a->object_size_text = "4M";
    a->max_objects = 64;
  }
  if (m == RadosMode::kWrite || m == RadosMode::kRandWrite)
    sub->add_option("-b,--block-size", a->block_size_text, "bytes per write (K/M/G suffixes)")->capture_default_str();
  if (writes)
    sub->add_option("-O,--object-size", a->object_size_text,
                    m == RadosMode::kWrite ? "object size (default: the block size; a multiple of it)"
                                           : "size of the objects the small writes land in")
        ->capture_default_str();
  if (m == RadosMode::kWrite)
    sub->add_option("--object-mix", a->object_mix_text,
                    "objects of several sizes instead of -b/-O: SIZE:WEIGHT,... (e.g. 4K:60,64K:30,4M:10), "
                    "each written whole");
  if (m == RadosMode::kWrite) {
    sub->add_option("--xattrs", a->xattrs,
                    "attributes of 64 bytes set on each object with its first write, as an OSD's objects "
                    "carry")
        ->capture_default_str();
    sub->add_option("--omap-keys", a->omap_keys,
                    "omap keys of 64-byte values set on each object with its first write, as an RGW index "
                    "or CephFS metadata object holds")
        ->capture_default_str();
  }
  sub->add_option("-t,--concurrent-ios", a->concurrent, "operations in flight")->capture_default_str();
  sub->add_option("--seconds", a->seconds, "run time in seconds")->capture_default_str();
  if (writes || m == RadosMode::kMixed)
    sub->add_flag("--no-cleanup", a->no_cleanup,
                  "keep the objects (seq and rand read what write left; a temporary store is kept and its path "
                  "printed)");
  if (writes) {
    sub->add_option("--max-objects", a->max_objects,
                    m == RadosMode::kWrite ? "stop after this many objects (0: time only)"
                                           : "objects the small writes are spread over")
        ->capture_default_str();
  }
  sub->add_option("--run-name", a->run_name, "name of the run's metadata object (default benchmark_last_metadata)");
  sub->add_option("--path", a->path,
                  "store directory: an existing store, or where to make one (default: a fresh store in a "
                  "temporary directory, removed afterwards)");
  sub->add_option("--json", a->json, "write the figures, latency percentiles and per-second series to FILE");
  sub->add_option("--report", a->report, "write PNG plots and index.html to DIR (needs python3-matplotlib)");
  if (m != RadosMode::kWrite) sub->add_flag("--no-verify", a->no_verify, "do not check the bytes read");
  sub->add_flag("--show-time", a->show_time, "prefix each line with the local time, as rados bench -t does");
  sub->add_option("--seed", a->seed, "seed for random choices (printed)")->capture_default_str();
  sub->add_option("--raw-seconds", a->raw_seconds,
                  "seconds to measure the raw device ceiling at the same block size and queue depth (0: skip)")
        ->capture_default_str();
  sub->add_option("--conf", a->conf, "INI config file for the store ([hybridstore] section)");
  sub->add_option("--set", a->sets, "store option key=value (repeatable)");
  if (m == RadosMode::kMixed) {
    sub->add_option("--profile", a->profile, "workload profile: mail | office | research (HRO Table I)")
        ->capture_default_str();
    sub->add_option("--scale", a->scale, "files and requests per day relative to the profile's scale-1 data set")
        ->capture_default_str();
    sub->add_option("--days", a->days, "trace days; a migration pass runs at each day's end")
        ->capture_default_str();
    sub->add_option("--preload", a->preload,
                    "where the files start: hdd (the paper's empty SSD on day 1), or placement (the store's "
                    "own choice by size)")
        ->capture_default_str();
  }
  sub->footer("Exit status: 0 success, 1 the run failed (I/O error, wrong bytes read, nothing written to "
              "read), 2 bad usage. Sizes take K, M and G suffixes (powers of two).");
}

namespace {

bool fail(const std::string& msg) {
  fprintf(stderr, "hybridstore-bench %s\n", msg.c_str());
  return false;
}

// True when `dir` exists (or can be made) and a file can be created in it.
bool writable_dir(const std::string& dir, std::string* why) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    *why = ec ? ec.message() : "not a directory";
    return false;
  }
  std::string probe = dir + "/.hybridstore-bench-probe." + std::to_string(getpid());
  {
    std::ofstream f(probe);
    if (!f || !(f << "x") || !f.flush()) {
      *why = "cannot create files there";
      fs::remove(probe, ec);
      return false;
    }
  }
  fs::remove(probe, ec);
  return true;
}

}  // namespace

bool check_rados_args(RadosArgs* a) {
  std::string mode = rados_mode_name(a->mode);
  auto bad = [&](const std::string& what) { return fail(mode + ": " + what); };
  if (a->concurrent < 1 || a->concurrent > 1024)
    return bad("-t/--concurrent-ios must be between 1 and 1024, not " + std::to_string(a->concurrent));
  if (!(a->seconds > 0) || a->seconds > 86400)
    return bad("--seconds must be more than 0 (and at most a day)");
  if (a->max_objects < 0) return bad("--max-objects must not be negative");
  if (a->xattrs < 0 || a->xattrs > 64) return bad("--xattrs must be between 0 and 64");
  if (a->omap_keys < 0 || a->omap_keys > 1024) return bad("--omap-keys must be between 0 and 1024");
  if (a->raw_seconds < 0 || a->raw_seconds > 600) return bad("--raw-seconds must be between 0 and 600");
  if (a->mode == RadosMode::kWrite || a->mode == RadosMode::kRandWrite) {
    if (!parse_size(a->block_size_text, &a->op_size))
      return bad("-b/--block-size '" + a->block_size_text + "' is not a size above zero (e.g. 4096, 64K, 4M)");
    a->object_size = a->op_size;
    if (!a->object_size_text.empty() && !parse_size(a->object_size_text, &a->object_size))
      return bad("-O/--object-size '" + a->object_size_text + "' is not a size above zero");
    if (a->object_size % a->op_size)
      return bad("-O/--object-size must be a multiple of -b/--block-size");
    if (a->object_size > (1ull << 30)) return bad("objects larger than 1G are not supported");
  }
  if (a->mode == RadosMode::kRandWrite && a->max_objects < 1)
    return bad("--max-objects must be at least 1: the writes need objects to land in");
  a->mix.clear();
  if (!a->object_mix_text.empty()) {
    unsigned total = 0;
    size_t pos = 0;
    const std::string& s = a->object_mix_text;
    while (pos <= s.size()) {
      size_t end = s.find(',', pos);
      if (end == std::string::npos) end = s.size();
      std::string item = s.substr(pos, end - pos);
      size_t colon = item.find(':');
      uint64_t size = 0;
      if (colon == std::string::npos || !parse_size(item.substr(0, colon), &size) || size > (64ull << 20))
        return bad("--object-mix item '" + item + "' is not SIZE:WEIGHT with 0 < SIZE <= 64M");
      std::string w = item.substr(colon + 1);
      if (w.empty() || w.size() > 6 || w.find_first_not_of("0123456789") != std::string::npos || std::stoul(w) == 0)
        return bad("--object-mix item '" + item + "' needs a weight above zero");
      a->mix.push_back({size, static_cast<unsigned>(std::stoul(w))});
      total += a->mix.back().second;
      pos = end + 1;
    }
    if (a->mix.empty() || total == 0) return bad("--object-mix is empty");
    uint64_t largest = 0;
    for (const auto& [sz, w] : a->mix) largest = std::max(largest, sz);
    a->op_size = a->object_size = largest;  // reported as the object size
  }
  if (a->mode == RadosMode::kMixed) {
    if (!find_workload_profile(a->profile)) return bad("--profile '" + a->profile + "': mail, office or research");
    if (!(a->scale > 0) || a->scale > 10) return bad("--scale must be more than 0 and at most 10");
    if (a->days < 1 || a->days > 28) return bad("--days must be between 1 and 28");
    if (a->preload != "hdd" && a->preload != "placement") return bad("--preload must be hdd or placement");
  }
  if ((a->mode == RadosMode::kSeq || a->mode == RadosMode::kRand) && a->path.empty())
    return bad("reads what an earlier `write --no-cleanup --path DIR` left: give --path DIR");
  if (!a->report.empty()) {
    std::string why;
    if (!writable_dir(a->report, &why)) return bad("--report " + a->report + ": " + why);
  }
  if (!a->json.empty()) {
    std::string dir = fs::path(a->json).parent_path().string();
    std::string why;
    if (dir.empty()) dir = ".";
    if (!fs::is_directory(dir)) return bad("--json " + a->json + ": no directory " + dir);
    if (!writable_dir(dir, &why)) return bad("--json " + a->json + ": " + why);
  }
  return true;
}

}  // namespace hybridstore::bench
