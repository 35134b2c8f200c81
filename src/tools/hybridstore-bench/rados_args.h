// Options of the rados-bench-style modes (write, seq, rand, randwrite,
// mixed), their parsing and their checks. Everything is checked before a
// store is opened or a file written, so bad input changes nothing.
//
// Exit codes of these modes: 0 success, 1 the run failed (I/O error,
// verification mismatch, nothing to read), 2 bad usage.
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hybridstore::bench {

enum class RadosMode { kWrite, kSeq, kRand, kRandWrite, kMixed };
const char* rados_mode_name(RadosMode m);

struct RadosArgs {
  RadosMode mode = RadosMode::kWrite;
  // As given on the command line; parsed into the fields below by check().
  std::string block_size_text = "4M";   // -b: bytes per op
  std::string object_size_text;         // -O: object size (default: the block size)
  std::string object_mix_text;          // --object-mix 4K:70,4M:30 (write: sizes by weight)
  // write: attributes and omap keys each new object gets with its first
  // write, as an OSD's objects carry (`_`, `snapset`) and an RGW index or
  // CephFS metadata object holds (omap).
  int xattrs = 0;
  int omap_keys = 0;
  int concurrent = 16;                  // -t
  double seconds = 10;
  bool no_cleanup = false;
  std::string run_name;                 // metadata object (default benchmark_last_metadata)
  int64_t max_objects = 0;
  std::string path;                     // existing store, else a fresh one in a temporary directory
  std::string json;
  std::string report;
  bool no_verify = false;
  bool show_time = false;
  uint64_t seed = 1;
  double raw_seconds = 3;               // 0: no raw ceiling
  std::string conf;
  std::vector<std::string> sets;
  // mixed
  std::string profile = "office";
  double scale = 0.02;
  unsigned days = 4;
  std::string preload = "hdd";

  // Filled by check().
  uint64_t op_size = 0;
  uint64_t object_size = 0;
  std::vector<std::pair<uint64_t, unsigned>> mix;  // (size, weight)
};

// "4M", "4096", "64K", "1G" (binary units). False on anything else,
// including zero and negative numbers.
bool parse_size(const std::string& text, uint64_t* out);

// Adds the options `mode` takes to `sub`.
void add_rados_options(CLI::App* sub, RadosArgs* a);
// Checks and parses the options; prints the problem and returns false.
bool check_rados_args(RadosArgs* a);

}  // namespace hybridstore::bench
