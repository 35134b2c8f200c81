// A device class for hybridstore-diskmodel's queue (disk_model_queue.h): the
// figures of one disk or SSD, and the profiles file that names them
// (qa/devclass/profiles.conf, also compiled in).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace hybridstore {

enum class DiskKind : uint8_t { kNone = 0, kHdd = 1, kSsd = 2 };

struct DiskProfile {
  std::string name;
  DiskKind kind = DiskKind::kNone;

  // ---- hdd ----
  double rpm = 7200;
  double seek_track_read_ms = 1.0, seek_avg_read_ms = 8.5, seek_full_read_ms = 17.0;
  double seek_track_write_ms = 1.2, seek_avg_write_ms = 9.5, seek_full_write_ms = 18.0;
  double rate_outer_mbps = 230, rate_inner_mbps = 110;  // MB = 10^6 bytes
  unsigned heads = 8;
  double stroke_share = 1.0;  // of the drive's stroke that the image covers, from the outer edge
  uint64_t cache_bytes = 64ull << 20;
  uint64_t destage_max_bytes = 1ull << 20;
  unsigned cache_segments = 0;  // most separate dirty ranges the cache holds (0: no limit)
  bool satf = true;
  double max_wait_ms = 250;
  double command_overhead_us = 0;

  // ---- hdd and ssd ----
  unsigned queue_depth = 32;

  // ---- ssd ----
  unsigned channels = 8;
  double read_us = 85, write_us = 40;
  double read_mbps = 560, write_mbps = 530;
  double read_iops = 94000, write_iops = 65000;
  double flush_us = 0, trim_us = 5;

  // The key = value pairs it was built from, in order (for the stats file).
  std::vector<std::pair<std::string, std::string>> keys;

  // Sets one key; false (with the reason) on an unknown key or a bad value.
  bool set(const std::string& key, const std::string& value, std::string* err);
  // Checks the values against each other (seek ordering, positive rates...).
  bool validate(std::string* err) const;
  std::string describe() const;
};

// The profiles file: `[name]` sections of `key = value` lines; `#` starts a
// comment (the source of a figure goes there). Every section names its
// `kind` (hdd, ssd, none) first; the other keys override that kind's
// defaults above.
class DiskProfileSet {
 public:
  static bool parse(const std::string& text, const std::string& origin, DiskProfileSet* out,
                    std::string* err);
  // The profiles compiled into the library: a copy of qa/devclass/profiles.conf
  // (a unit test checks that they are the same).
  static const char* builtin_text();

  bool get(const std::string& name, DiskProfile* out, std::string* err) const;
  std::vector<std::string> names() const;
  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> sections_;
};

// "64G", "1T", "4096", "512K": binary multiples (K = 1024). false when not a size.
bool parse_disk_size(const std::string& s, uint64_t* out);

}  // namespace hybridstore
