#include "testing/disk_model_queue.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

#include "hscommon/text.h"

namespace hybridstore {

namespace {

double frac(double x) { return x - std::floor(x); }
uint64_t ns_of(double ns) { return ns <= 0 ? 0 : static_cast<uint64_t>(std::llround(ns)); }

bool parse_double(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0' || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool parse_unsigned(const std::string& s, unsigned* out) {
  double v;
  if (!parse_double(s, &v) || v < 0 || v != std::floor(v) || v > 1e6) return false;
  *out = static_cast<unsigned>(v);
  return true;
}

unsigned log2_bucket(uint64_t v) {
  unsigned b = 0;
  while (b < 63 && (1ull << b) < v) ++b;
  return b;
}

// The built-in copy of qa/devclass/profiles.conf: the file's text, pasted
// between the markers. Keep the two identical (the unit test
// DiskModel.BuiltinProfilesMatchTheFile checks it).
const char kBuiltinProfiles[] = R"PROFILES(# Device classes of hybridstore-diskmodel (qa/devclass/devclass.sh).
#
# `[profile]` sections of `key = value  # source` lines; `kind` comes first.
# Sizes take K/M/G/T (binary); rates are MB/s of 10^6 bytes. Every figure says
# where it comes from; one that is our modelling choice says so. The tool keeps
# a compiled-in copy of this file (src/testing/disk_model_queue.cc)
# for when the file is not found; unittest_disk_model checks the two agree.
#
# Sources:
#  [HC310]  WD Ultrastar DC HC310 (3.5", 7200 rpm, 4-6 TB) OEM specification
#           rev 1.4, section 4.5.1, tables 5-7.
#  [7K500]  HGST Deskstar 7K500 specification, table 10 (sustained
#           disk-buffer rate by zone).
#  [7K320]  HGST Travelstar 7K320 specification, tables 5-7 (full stroke vs
#           average seek).
#  [WDB4]   WD Black 4 TB (WD4001FAEX) specification as quoted by StorageReview:
#           64 MB buffer, 154 MB/s.
#  [DC600M] Kingston DC600M 960 GB (SATA, power-loss protected) datasheet as
#           listed by Puget Systems: 560/530 MB/s sequential read/write,
#           94,000/65,000 random 4 KiB read/write IOPS.
#  [class]  the figures a 7,200-rpm nearline disk and a SATA SSD are expected to show
#           (issue 41 of this project: 100-150 random 4 KiB reads at QD1, 250-350 at
#           QD16 with command queueing, 150-250 MB/s sequential), which the
#           datasheets above bracket.

[hdd]
kind = hdd
rpm = 7200                   # [HC310] table 7: 7200 rpm, 8.33 ms a revolution, 4.16 ms average latency
seek_track_read_ms = 0.23    # [HC310] table 6: single track seek, read, typical
seek_track_write_ms = 0.32   # [HC310] table 6: single track seek, write, typical
seek_avg_read_ms = 7.4       # [HC310] table 5: average seek, read, typical
seek_avg_write_ms = 8.2      # [HC310] table 5: average seek, write, typical
seek_full_read_ms = 16       # not in [HC310]'s tables we had: about twice the average, as in [7K320] (20.0 full, 12 average); [class] 16-18 ms
seek_full_write_ms = 17      # as the read full stroke, plus [HC310]'s 0.8 ms write/read difference of the average
rate_outer_mbps = 230        # [class] 200-250 MB/s; the HC310 4-6 TB datasheets give 226-255 MB/s (from memory, not re-checked)
rate_inner_mbps = 110        # 0.48 x outer: [7K500] sustained zone 29 / zone 0 = 31.0 / 64.8 MB/s; [class] 100-120 MB/s
heads = 8                    # modelling choice (a 4-platter drive); sets only how many tracks share a cylinder
stroke_share = 0.5           # modelling choice: the image is the outer half of the drive (the data of a half-full disk); 1 = the whole drive, where QD1 random reads give 1 / (7.4 + 4.17 ms) = 86 IOPS, below [class]'s 100-150
cache_bytes = 64M            # [WDB4] 64 MB buffer; [class] 64 MiB
cache_segments = 128         # modelling choice: most separate dirty ranges held (drives track a bounded number of cached writes); caps a random-write backlog at ~0.3 s of destage
destage_max_bytes = 1M       # modelling choice: longest single destage, so a waiting read is not held up for long
queue_depth = 32             # SATA NCQ: 32 command tags
scheduler = satf             # modelling choice: NCQ firmware orders by seek + rotation (rotational position ordering)
max_wait_ms = 250            # modelling choice: a request waiting this long is served next (anti-starvation)
command_overhead_us = 0      # modelling choice: the FUSE and loop round trip already adds tens of us per request

[ssd]
kind = ssd
channels = 8                 # Little's law on [DC600M]: 94,000 IOPS x 85 us = 8 reads in flight
read_us = 85                 # [class] 4 KiB random read 80-100 us at QD1
write_us = 40                # [class] 4 KiB write 30-60 us into the drive's cache
read_mbps = 560              # [DC600M] sequential read
write_mbps = 530             # [DC600M] sequential write
read_iops = 94000            # [DC600M] random 4 KiB read
write_iops = 65000           # [DC600M] random 4 KiB write
queue_depth = 32             # SATA NCQ: 32 command tags
flush_us = 0                 # [DC600M] power-loss protection: the cache is durable, a flush has nothing to wait for
trim_us = 5                  # modelling choice: a TRIM is a mapping-table update

[none]
kind = none                  # no delay: the image file as fast as the VM's disk
)PROFILES";

}  // namespace

const char* disk_op_name(DiskOp op) {
  switch (op) {
    case DiskOp::kRead: return "read";
    case DiskOp::kWrite: return "write";
    case DiskOp::kFlush: return "flush";
    case DiskOp::kDiscard: return "discard";
  }
  return "?";
}

bool parse_disk_size(const std::string& str, uint64_t* out) {
  std::string s(trim(str));
  if (s.empty()) return false;
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) return false;
  double v;
  if (!parse_double(s.substr(0, i), &v)) return false;
  std::string unit = s.substr(i);
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit == "IB" || unit == "B") unit.clear();
  if (unit.size() == 3 && unit.substr(1) == "IB") unit = unit.substr(0, 1);
  if (unit.size() == 2 && unit[1] == 'B') unit = unit.substr(0, 1);
  double mult = 1;
  if (unit.empty()) mult = 1;
  else if (unit == "K") mult = 1024.0;
  else if (unit == "M") mult = 1024.0 * 1024;
  else if (unit == "G") mult = 1024.0 * 1024 * 1024;
  else if (unit == "T") mult = 1024.0 * 1024 * 1024 * 1024;
  else return false;
  double bytes = v * mult;
  if (bytes < 0 || bytes > 1.8e19 || bytes != std::floor(bytes)) return false;
  *out = static_cast<uint64_t>(bytes);
  return true;
}

// ---- Profiles ----

bool DiskProfile::set(const std::string& key, const std::string& value, std::string* err) {
  auto bad = [&](const char* what) {
    if (err) *err = fmt::format("{} = '{}': {}", key, value, what);
    return false;
  };
  struct D { const char* k; double DiskProfile::*f; };
  static const D doubles[] = {
      {"rpm", &DiskProfile::rpm},
      {"seek_track_read_ms", &DiskProfile::seek_track_read_ms},
      {"seek_avg_read_ms", &DiskProfile::seek_avg_read_ms},
      {"seek_full_read_ms", &DiskProfile::seek_full_read_ms},
      {"seek_track_write_ms", &DiskProfile::seek_track_write_ms},
      {"seek_avg_write_ms", &DiskProfile::seek_avg_write_ms},
      {"seek_full_write_ms", &DiskProfile::seek_full_write_ms},
      {"rate_outer_mbps", &DiskProfile::rate_outer_mbps},
      {"rate_inner_mbps", &DiskProfile::rate_inner_mbps},
      {"max_wait_ms", &DiskProfile::max_wait_ms},
      {"stroke_share", &DiskProfile::stroke_share},
      {"command_overhead_us", &DiskProfile::command_overhead_us},
      {"read_us", &DiskProfile::read_us},
      {"write_us", &DiskProfile::write_us},
      {"read_mbps", &DiskProfile::read_mbps},
      {"write_mbps", &DiskProfile::write_mbps},
      {"read_iops", &DiskProfile::read_iops},
      {"write_iops", &DiskProfile::write_iops},
      {"flush_us", &DiskProfile::flush_us},
      {"trim_us", &DiskProfile::trim_us},
  };
  struct S { const char* k; uint64_t DiskProfile::*f; };
  static const S sizes[] = {
      {"cache_bytes", &DiskProfile::cache_bytes},
      {"destage_max_bytes", &DiskProfile::destage_max_bytes},
  };
  struct U { const char* k; unsigned DiskProfile::*f; };
  static const U uints[] = {
      {"heads", &DiskProfile::heads},
      {"queue_depth", &DiskProfile::queue_depth},
      {"cache_segments", &DiskProfile::cache_segments},
      {"channels", &DiskProfile::channels},
  };
  if (key == "kind") {
    if (value == "hdd") kind = DiskKind::kHdd;
    else if (value == "ssd") kind = DiskKind::kSsd;
    else if (value == "none") kind = DiskKind::kNone;
    else return bad("kind is hdd, ssd or none");
  } else if (key == "scheduler") {
    if (value == "satf") satf = true;
    else if (value == "clook") satf = false;
    else return bad("scheduler is satf or clook");
  } else {
    bool found = false;
    for (const auto& d : doubles) {
      if (key != d.k) continue;
      double v;
      if (!parse_double(value, &v) || v < 0) return bad("not a non-negative number");
      this->*d.f = v;
      found = true;
    }
    for (const auto& s : sizes) {
      if (key != s.k) continue;
      uint64_t v;
      if (!parse_disk_size(value, &v)) return bad("not a size (bytes, or with K/M/G/T)");
      this->*s.f = v;
      found = true;
    }
    for (const auto& u : uints) {
      if (key != u.k) continue;
      unsigned v;
      if (!parse_unsigned(value, &v)) return bad("not a whole number");
      this->*u.f = v;
      found = true;
    }
    if (!found) return bad("unknown key");
  }
  keys.emplace_back(key, value);
  return true;
}

bool DiskProfile::validate(std::string* err) const {
  auto bad = [&](const std::string& what) {
    if (err) *err = fmt::format("profile '{}': {}", name, what);
    return false;
  };
  if (kind == DiskKind::kHdd) {
    HddModelParams rp, wp;
    rp.seek_track_ms = seek_track_read_ms;
    rp.seek_avg_ms = seek_avg_read_ms;
    rp.seek_full_ms = seek_full_read_ms;
    wp.seek_track_ms = seek_track_write_ms;
    wp.seek_avg_ms = seek_avg_write_ms;
    wp.seek_full_ms = seek_full_write_ms;
    std::string why;
    if (!HddModel::valid_params(rp, &why)) return bad("read seeks: " + why);
    if (!HddModel::valid_params(wp, &why)) return bad("write seeks: " + why);
    if (!(rpm > 0)) return bad("rpm must be positive");
    if (!(rate_outer_mbps > 0 && rate_inner_mbps > 0)) return bad("media rates must be positive");
    if (rate_inner_mbps > rate_outer_mbps) return bad("the inner zone cannot be faster than the outer");
    if (heads == 0) return bad("heads must be positive");
    if (!(stroke_share > 0 && stroke_share <= 1)) return bad("stroke_share must be in (0, 1]");
    if (destage_max_bytes < 512) return bad("destage_max_bytes must be at least 512");
    if (queue_depth == 0) return bad("queue_depth must be positive");
  } else if (kind == DiskKind::kSsd) {
    if (channels == 0) return bad("channels must be positive");
    if (queue_depth == 0) return bad("queue_depth must be positive");
    if (!(read_mbps > 0 && write_mbps > 0 && read_iops > 0 && write_iops > 0))
      return bad("rates and iops must be positive");
  }
  return true;
}

std::string DiskProfile::describe() const {
  switch (kind) {
    case DiskKind::kNone: return fmt::format("{}: no delay", name);
    case DiskKind::kHdd:
      return fmt::format(
          "{}: hdd {:.0f} rpm, seek read {:.2f}/{:.1f}/{:.1f} ms write {:.2f}/{:.1f}/{:.1f} ms "
          "(track/avg/full), {:.0f}..{:.0f} MB/s, cache {} MiB, queue {} {}",
          name, rpm, seek_track_read_ms, seek_avg_read_ms, seek_full_read_ms, seek_track_write_ms,
          seek_avg_write_ms, seek_full_write_ms, rate_outer_mbps, rate_inner_mbps,
          cache_bytes >> 20, queue_depth, satf ? "satf" : "clook");
    case DiskKind::kSsd:
      return fmt::format(
          "{}: ssd {} channels, read {:.0f} us / {:.0f} MB/s / {:.0f} IOPS, write {:.0f} us / "
          "{:.0f} MB/s / {:.0f} IOPS, queue {}",
          name, channels, read_us, read_mbps, read_iops, write_us, write_mbps, write_iops,
          queue_depth);
  }
  return name;
}

const char* DiskProfileSet::builtin_text() { return kBuiltinProfiles; }

bool DiskProfileSet::parse(const std::string& text, const std::string& origin,
                           DiskProfileSet* out, std::string* err) {
  DiskProfileSet set;
  set.origin_ = origin;
  std::istringstream in(text);
  std::string line, section;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    line = std::string(trim(line));
    if (line.empty()) continue;
    if (line.front() == '[') {
      if (line.back() != ']' || line.size() < 3) {
        if (err) *err = fmt::format("{}:{}: bad section header", origin, lineno);
        return false;
      }
      section = std::string(trim(std::string_view(line).substr(1, line.size() - 2)));
      if (set.sections_.count(section)) {
        if (err) *err = fmt::format("{}:{}: profile [{}] appears twice", origin, lineno, section);
        return false;
      }
      set.sections_[section];
      continue;
    }
    auto eq = line.find('=');
    if (eq == std::string::npos || section.empty()) {
      if (err) *err = fmt::format("{}:{}: expected `key = value` inside a [profile]", origin, lineno);
      return false;
    }
    set.sections_[section].emplace_back(std::string(trim(std::string_view(line).substr(0, eq))),
                                        std::string(trim(std::string_view(line).substr(eq + 1))));
  }
  for (const auto& [name, kv] : set.sections_) {
    DiskProfile p;
    if (!set.get(name, &p, err)) return false;
  }
  *out = std::move(set);
  return true;
}

bool DiskProfileSet::get(const std::string& name, DiskProfile* out, std::string* err) const {
  auto it = sections_.find(name);
  if (it == sections_.end()) {
    std::string known;
    for (const auto& [n, kv] : sections_) known += (known.empty() ? "" : ", ") + n;
    if (err) *err = fmt::format("no profile [{}] in {} (it has: {})", name, origin_, known);
    return false;
  }
  const auto& kv = it->second;
  if (kv.empty() || kv.front().first != "kind") {
    if (err) *err = fmt::format("{}: profile [{}] must start with `kind = hdd|ssd|none`", origin_, name);
    return false;
  }
  DiskProfile p;
  p.name = name;
  for (const auto& [k, v] : kv) {
    if (!p.set(k, v, err)) {
      if (err) *err = fmt::format("{}: [{}] {}", origin_, name, *err);
      return false;
    }
  }
  if (!p.validate(err)) return false;
  *out = std::move(p);
  return true;
}

std::vector<std::string> DiskProfileSet::names() const {
  std::vector<std::string> n;
  for (const auto& [name, kv] : sections_) n.push_back(name);
  return n;
}

// ---- The queue ----

DiskModelQueue::DiskModelQueue(const DiskProfile& p, uint64_t device_bytes)
    : p_(p), device_bytes_(device_bytes ? device_bytes : 1) {
  if (p_.kind == DiskKind::kHdd) {
    drive_bytes_ = std::max<uint64_t>(
        device_bytes_, static_cast<uint64_t>(static_cast<double>(device_bytes_) / p_.stroke_share));
    rev_ns_ = 60e9 / p_.rpm;
    tb0_ = p_.rate_outer_mbps * 1e6 * rev_ns_ / 1e9;
    const double tb_end = p_.rate_inner_mbps * 1e6 * rev_ns_ / 1e9;
    slope_ = (tb0_ - tb_end) / static_cast<double>(drive_bytes_);
    cylinders_ = std::max<uint64_t>(
        3, static_cast<uint64_t>(std::ceil(tracks_at(drive_bytes_) / p_.heads)));
    HddModelParams rp;
    rp.capacity_bytes = drive_bytes_;
    rp.cylinders = cylinders_;
    rp.rpm = p_.rpm;
    rp.transfer_bytes_per_s = (p_.rate_outer_mbps + p_.rate_inner_mbps) / 2 * 1e6;
    rp.surfaces = p_.heads;
    HddModelParams wp = rp;
    rp.seek_track_ms = p_.seek_track_read_ms;
    rp.seek_avg_ms = p_.seek_avg_read_ms;
    rp.seek_full_ms = p_.seek_full_read_ms;
    wp.seek_track_ms = p_.seek_track_write_ms;
    wp.seek_avg_ms = p_.seek_avg_write_ms;
    wp.seek_full_ms = p_.seek_full_write_ms;
    read_curve_ = std::make_unique<HddModel>(rp);
    write_curve_ = std::make_unique<HddModel>(wp);
  } else if (p_.kind == DiskKind::kSsd) {
    channel_free_.assign(p_.channels, 0);
  }
}

DiskModelQueue::~DiskModelQueue() = default;

size_t DiskModelQueue::outstanding() const {
  switch (p_.kind) {
    case DiskKind::kHdd: return pending_.size() + (inflight_.active && !inflight_.destage ? 1 : 0);
    case DiskKind::kSsd: return ssd_wait_.size() + ssd_inflight_.size();
    case DiskKind::kNone: return 0;
  }
  return 0;
}

std::string DiskModelQueue::describe() const {
  std::string s = p_.describe();
  if (p_.kind == DiskKind::kHdd)
    s += fmt::format("; image {:.1f} GiB at the outer edge of a {:.1f} GiB drive, {} cylinders, "
                     "mean random read seek {:.2f} ms",
                     device_bytes_ / 1073741824.0, drive_bytes_ / 1073741824.0, cylinders_,
                     mean_random_seek_ms());
  return s;
}

void DiskModelQueue::note_arrival(const DiskRequest& r) {
  size_t depth = outstanding() + 1;
  auto& h = stats_.qd_hist;
  ++h[std::min(depth, h.size()) - 1];
  if (r.op == DiskOp::kRead || r.op == DiskOp::kWrite) {
    ++stats_.size_hist[std::min<unsigned>(log2_bucket(r.len), stats_.size_hist.size() - 1)];
    stats_.max_request_bytes = std::max(stats_.max_request_bytes, r.len);
  }
}

void DiskModelQueue::complete(const Pending& p, uint64_t t, uint64_t service_ns, bool on_arrival,
                              std::vector<DiskCompletion>* done) {
  DiskOpStats& s = stats_.ops[static_cast<int>(p.r.op)];
  ++s.count;
  s.bytes += p.r.len;
  s.service_ns += service_ns;
  uint64_t lat = t - p.arrival;
  s.latency_ns += lat;
  s.max_latency_ns = std::max(s.max_latency_ns, lat);
  if (on_arrival) ++s.on_arrival;
  if (done) done->push_back({p.r.id, t});
}

bool DiskModelQueue::submit(const DiskRequest& r, uint64_t now_ns) {
  now_ns = std::max(now_ns, last_now_);
  // Bring the device up to the arrival first: what it finished before then
  // (room freed in the cache, a free channel) decides how this one goes.
  // Decisions at the arrival time itself wait for the next advance(), so that
  // requests submitted together are seen together.
  if (p_.kind == DiskKind::kHdd && now_ns > 0) hdd_advance(now_ns - 1, &early_);
  if (p_.kind == DiskKind::kSsd) ssd_advance(now_ns, &early_);
  last_now_ = now_ns;
  note_arrival(r);
  Pending p{r, now_ns, false};
  switch (p_.kind) {
    case DiskKind::kNone:
      complete(p, now_ns, 0, true, nullptr);
      return true;
    case DiskKind::kHdd: return hdd_submit(p);
    case DiskKind::kSsd: return ssd_submit(p);
  }
  return true;
}

uint64_t DiskModelQueue::advance(uint64_t now_ns, std::vector<DiskCompletion>* done) {
  now_ns = std::max(now_ns, last_now_);
  last_now_ = now_ns;
  if (!early_.empty()) {
    if (done) done->insert(done->end(), early_.begin(), early_.end());
    early_.clear();
  }
  switch (p_.kind) {
    case DiskKind::kNone: return kNever;
    case DiskKind::kHdd: return hdd_advance(now_ns, done);
    case DiskKind::kSsd: return ssd_advance(now_ns, done);
  }
  return kNever;
}

uint64_t DiskModelQueue::next_event() const {
  if (!early_.empty()) return last_now_;
  switch (p_.kind) {
    case DiskKind::kNone: return kNever;
    case DiskKind::kHdd:
      if (inflight_.active) return inflight_.end;
      // An idle actuator with work decides at once.
      return pending_.empty() && dirty_.empty() ? kNever : last_now_;
    case DiskKind::kSsd: return ssd_inflight_.empty() ? kNever : ssd_inflight_.top().time;
  }
  return kNever;
}

uint64_t DiskModelQueue::drain(std::vector<DiskCompletion>* done) {
  uint64_t t = last_now_;
  for (;;) {
    uint64_t next = advance(t, done);
    if (next == kNever) return t;
    t = next;
  }
}

// ---- hdd geometry ----

double DiskModelQueue::tracks_at(uint64_t offset) const {
  const double x = static_cast<double>(offset);
  // Track bytes fall linearly, tb(x) = tb0 - slope x; tracks = integral of dx / tb.
  if (slope_ * static_cast<double>(drive_bytes_) < 1e-9 * tb0_) return x / tb0_;
  return std::log(tb0_ / (tb0_ - slope_ * x)) / slope_;
}

double DiskModelQueue::rate_at(uint64_t offset) const {
  if (p_.kind != DiskKind::kHdd) return 0;
  return (tb0_ - slope_ * static_cast<double>(offset)) * 1e9 / rev_ns_;
}

uint64_t DiskModelQueue::track_bytes_at(uint64_t offset) const {
  return static_cast<uint64_t>(tb0_ - slope_ * static_cast<double>(offset));
}

double DiskModelQueue::transfer_ns(uint64_t offset, uint64_t len) const {
  if (p_.kind != DiskKind::kHdd || len == 0) return 0;
  return (tracks_at(offset + len) - tracks_at(offset)) * rev_ns_;
}

uint64_t DiskModelQueue::cylinder_of(uint64_t offset) const {
  uint64_t c = static_cast<uint64_t>(tracks_at(offset) / p_.heads);
  return std::min(c, cylinders_ - 1);
}

double DiskModelQueue::seek_ms(uint64_t d, bool write) const {
  return (write ? write_curve_ : read_curve_)->seek_ms(d);
}

double DiskModelQueue::mean_random_seek_ms() const {
  return read_curve_ ? read_curve_->mean_random_seek_ms() : 0;
}

double DiskModelQueue::platter_at(uint64_t t_ns) const {
  // In long double: revolutions since time 0 reach 10^8 within a day, and a
  // double would keep too few digits of their fraction.
  long double revs = static_cast<long double>(t_ns) / static_cast<long double>(rev_ns_);
  return static_cast<double>(revs - std::floor(revs));
}

double DiskModelQueue::position_ns(uint64_t target, bool write, uint64_t t) const {
  if (target == head_off_ && (!write || (t == head_time_ && head_write_))) return 0;
  const uint64_t from = cylinder_of(head_off_), to = cylinder_of(target);
  const uint64_t d = from > to ? from - to : to - from;
  const double seek = d ? seek_ms(d, write) * 1e6 : 0;
  const double arrive = platter_at(t + ns_of(seek));
  return seek + frac(frac(tracks_at(target)) - arrive) * rev_ns_;
}

// ---- hdd queue ----

bool DiskModelQueue::cacheable(const DiskRequest& r) const {
  return r.op == DiskOp::kWrite && p_.cache_bytes > 0 && r.len <= p_.cache_bytes;
}

bool DiskModelQueue::cache_room(const DiskRequest& r) const {
  if (cache_used_ + r.len > p_.cache_bytes) return false;
  // Counted as a new segment even when it would merge: the drive allocates
  // the segment before it looks for a neighbour.
  return p_.cache_segments == 0 || dirty_.size() + (inflight_.active && inflight_.destage) < p_.cache_segments;
}

bool DiskModelQueue::read_hit(uint64_t offset, uint64_t len) const {
  if (dirty_.empty() || len == 0) return false;
  auto it = dirty_.upper_bound(offset);
  if (it == dirty_.begin()) return false;
  --it;
  return it->first <= offset && offset + len <= it->second.end;
}

void DiskModelQueue::add_dirty(uint64_t offset, uint64_t len, uint64_t t) {
  uint64_t start = offset, end = offset + len, since = t;
  uint64_t covered = 0;  // bytes of the new range already dirty
  auto it = dirty_.upper_bound(start);
  if (it != dirty_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.end >= start) it = prev;
  }
  // Merge every range that overlaps or touches [start, end): one destage
  // then writes them in one pass.
  while (it != dirty_.end() && it->first <= end) {
    uint64_t os = std::max(it->first, offset), oe = std::min(it->second.end, offset + len);
    if (oe > os) covered += oe - os;
    start = std::min(start, it->first);
    end = std::max(end, it->second.end);
    since = std::min(since, it->second.since);
    dirty_since_.erase(dirty_since_.find(it->second.since));
    it = dirty_.erase(it);
  }
  dirty_[start] = Dirty{end, since};
  dirty_since_.insert(since);
  cache_used_ += len - covered;
  stats_.max_dirty_bytes = std::max(stats_.max_dirty_bytes, cache_used_);
}

bool DiskModelQueue::hdd_submit(const Pending& p) {
  const DiskRequest& r = p.r;
  if (r.op == DiskOp::kDiscard) {
    complete(p, p.arrival, 0, true, nullptr);
    return true;
  }
  if (r.op == DiskOp::kRead && read_hit(r.offset, r.len)) {
    ++stats_.read_hits;
    complete(p, p.arrival, 0, true, nullptr);
    return true;
  }
  if (cacheable(r) && pending_.size() < p_.queue_depth && cache_room(r)) {
    // Nothing may overtake an earlier write still waiting for room, nor a flush.
    const bool blocked = std::any_of(pending_.begin(), pending_.end(), [&](const Pending& q) {
      return q.r.op == DiskOp::kFlush || cacheable(q.r);
    });
    if (!blocked) {
      add_dirty(r.offset, r.len, p.arrival);
      complete(p, p.arrival, 0, true, nullptr);
      return true;
    }
  }
  pending_.push_back(p);
  return false;
}

void DiskModelQueue::admit_writes(uint64_t t, std::vector<DiskCompletion>* done) {
  size_t seen = 0;
  for (auto it = pending_.begin(); it != pending_.end() && seen < p_.queue_depth; ++seen) {
    if (it->arrival > t || it->r.op == DiskOp::kFlush) break;
    if (!cacheable(it->r)) {
      ++it;
      continue;
    }
    if (!cache_room(it->r)) {
      if (!it->waited_for_cache) {
        it->waited_for_cache = true;
        ++stats_.cache_waits;
      }
      break;  // writes enter the cache in arrival order
    }
    add_dirty(it->r.offset, it->r.len, t);
    complete(*it, t, 0, false, done);
    it = pending_.erase(it);
  }
}

uint64_t DiskModelQueue::next_work_time(uint64_t after) const {
  uint64_t t = kNever;
  if (!pending_.empty()) t = std::max(after, pending_.front().arrival);
  if (!dirty_since_.empty()) t = std::min(t, std::max(after, *dirty_since_.begin()));
  return t;
}

void DiskModelQueue::start_media(const Pending& p, uint64_t t) {
  const bool write = p.r.op == DiskOp::kWrite;
  const double pos = position_ns(p.r.offset, write, t);
  const double xfer = transfer_ns(p.r.offset, p.r.len);
  const uint64_t service = ns_of(p_.command_overhead_us * 1e3 + pos + xfer);
  if (pos == 0) ++stats_.contiguous;
  else if (cylinder_of(head_off_) != cylinder_of(p.r.offset)) ++stats_.seeks;
  else ++stats_.rotational_only;
  stats_.positioning_ns += ns_of(pos);
  ++stats_.media_ops;
  inflight_ = Inflight{true, false, p, p.r.offset, p.r.len, t, t + service};
}

void DiskModelQueue::start_destage(std::map<uint64_t, Dirty>::iterator it, uint64_t t) {
  const uint64_t off = it->first;
  const uint64_t len = std::min(it->second.end - off, p_.destage_max_bytes);
  const Dirty rest = it->second;
  dirty_.erase(it);
  if (off + len < rest.end) dirty_[off + len] = rest;
  else dirty_since_.erase(dirty_since_.find(rest.since));
  const double pos = position_ns(off, true, t);
  const uint64_t service = ns_of(p_.command_overhead_us * 1e3 + pos + transfer_ns(off, len));
  if (pos == 0) ++stats_.contiguous;
  else if (cylinder_of(head_off_) != cylinder_of(off)) ++stats_.seeks;
  else ++stats_.rotational_only;
  stats_.positioning_ns += ns_of(pos);
  ++stats_.media_ops;
  inflight_ = Inflight{true, true, Pending{}, off, len, t, t + service};
}

bool DiskModelQueue::start_next(uint64_t t, std::vector<DiskCompletion>* done) {
  admit_writes(t, done);
  // A flush at the head of the queue completes once the cache is empty.
  if (!pending_.empty() && pending_.front().r.op == DiskOp::kFlush &&
      pending_.front().arrival <= t && dirty_.empty()) {
    Pending f = pending_.front();
    pending_.pop_front();
    complete(f, t, 0, false, done);
    admit_writes(t, done);
  }
  // The drive's view: the first queue_depth commands, up to a flush.
  std::vector<size_t> media;  // indexes into pending_
  bool writes_wait = false;
  size_t oldest = SIZE_MAX;
  for (size_t i = 0; i < pending_.size() && i < p_.queue_depth; ++i) {
    const Pending& q = pending_[i];
    if (q.arrival > t || q.r.op == DiskOp::kFlush) break;
    if (cacheable(q.r)) {
      writes_wait = true;
      continue;
    }
    if (oldest == SIZE_MAX) oldest = i;
    media.push_back(i);
  }
  // Dirty ranges destageable now, in elevator order from the head.
  auto destage_candidates = [&](size_t limit) {
    std::vector<std::map<uint64_t, Dirty>::iterator> c;
    if (dirty_.empty()) return c;
    auto it = dirty_.lower_bound(head_off_);
    if (it != dirty_.begin()) {
      // A range that holds the head's position continues from there.
      auto prev = std::prev(it);
      if (prev->second.end > head_off_) it = prev;
    }
    for (size_t n = 0; n < dirty_.size() && c.size() < limit; ++n) {
      if (it == dirty_.end()) it = dirty_.begin();
      if (it->second.since <= t) c.push_back(it);
      ++it;
    }
    return c;
  };
  const bool destage_first = writes_wait && !dirty_.empty();
  if (!media.empty() && !destage_first) {
    size_t pick = SIZE_MAX;
    if (t - pending_[oldest].arrival >= static_cast<uint64_t>(p_.max_wait_ms * 1e6) &&
        media.size() > 1) {
      pick = oldest;
      ++stats_.aged;
    } else if (p_.satf) {
      double best = 0;
      for (size_t i : media) {
        double pos = position_ns(pending_[i].r.offset, pending_[i].r.op == DiskOp::kWrite, t);
        if (pick == SIZE_MAX || pos < best) {
          best = pos;
          pick = i;
        }
      }
    } else {
      // C-LOOK: the nearest start at or after the head, else the lowest.
      size_t ahead = SIZE_MAX, lowest = SIZE_MAX;
      for (size_t i : media) {
        uint64_t off = pending_[i].r.offset;
        if (off >= head_off_ && (ahead == SIZE_MAX || off < pending_[ahead].r.offset)) ahead = i;
        if (lowest == SIZE_MAX || off < pending_[lowest].r.offset) lowest = i;
      }
      pick = ahead != SIZE_MAX ? ahead : lowest;
    }
    Pending p = pending_[pick];
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(pick));
    start_media(p, t);
    return true;
  }
  // The drive reorders its whole cache, up to the segments it tracks.
  const size_t window = p_.cache_segments ? p_.cache_segments : std::max(p_.queue_depth, 64u);
  auto cands = destage_candidates(p_.satf ? window : 1);
  if (!cands.empty()) {
    auto pick = cands.front();
    if (p_.satf) {
      double best = position_ns(pick->first, true, t);
      for (auto c : cands) {
        double pos = position_ns(c->first, true, t);
        if (pos < best) {
          best = pos;
          pick = c;
        }
      }
    }
    start_destage(pick, t);
    return true;
  }
  return false;
}

void DiskModelQueue::finish_inflight(std::vector<DiskCompletion>* done) {
  const Inflight f = inflight_;
  inflight_.active = false;
  const uint64_t service = f.end - f.start;
  stats_.busy_ns += service;
  head_off_ = f.offset + f.len;
  head_time_ = f.end;
  free_at_ = f.end;
  if (f.destage) {
    head_write_ = true;
    cache_used_ -= f.len;
    ++stats_.destages;
    stats_.destage_bytes += f.len;
    stats_.destage_ns += service;
  } else {
    head_write_ = f.req.r.op == DiskOp::kWrite;
    complete(f.req, f.end, service, false, done);
  }
}

uint64_t DiskModelQueue::hdd_advance(uint64_t now, std::vector<DiskCompletion>* done) {
  for (;;) {
    if (inflight_.active) {
      if (inflight_.end > now) return inflight_.end;
      finish_inflight(done);
      continue;
    }
    uint64_t t = next_work_time(free_at_);
    if (t == kNever) return kNever;
    if (t > now) return t;  // work that arrives after `now` (submit runs us to its arrival - 1)
    if (start_next(t, done)) continue;
    // Nothing could start at t (work only after it, or a flush completed and
    // freed the queue): look again just after.
    uint64_t later = kNever;
    for (const auto& q : pending_)
      if (q.arrival > t) later = std::min(later, q.arrival);
    auto s = dirty_since_.upper_bound(t);
    if (s != dirty_since_.end()) later = std::min(later, *s);
    if (pending_.empty() && dirty_.empty()) {
      free_at_ = std::max(free_at_, t);
      return kNever;
    }
    if (later == kNever || later > now) {
      // Only a flush waiting for requests not yet arrived, or a write waiting
      // for room with nothing to destage: cannot happen while the invariants
      // hold, but never spin.
      free_at_ = std::max(free_at_, t);
      return later;
    }
    free_at_ = later;
  }
}

// ---- ssd ----

bool DiskModelQueue::ssd_submit(const Pending& p) {
  ssd_wait_.push_back(p);
  ssd_pump(p.arrival);
  return false;
}

void DiskModelQueue::ssd_dispatch(const Pending& p, uint64_t t) {
  const double len = static_cast<double>(p.r.len);
  auto channel = std::min_element(channel_free_.begin(), channel_free_.end());
  uint64_t end = t;
  switch (p.r.op) {
    case DiskOp::kRead: {
      // The flash read on a channel, then the transfer out through the front end.
      const uint64_t e1 = std::max(t, *channel) + ns_of(p_.read_us * 1e3);
      *channel = e1;
      const uint64_t fe = ns_of(std::max(len / (p_.read_mbps * 1e6), 1.0 / p_.read_iops) * 1e9);
      end = std::max(e1, frontend_free_) + fe;
      frontend_free_ = end;
      stats_.busy_ns += fe;
      break;
    }
    case DiskOp::kWrite: {
      // In through the front end, then into a channel's write buffer.
      const uint64_t fe = ns_of(std::max(len / (p_.write_mbps * 1e6), 1.0 / p_.write_iops) * 1e9);
      const uint64_t e1 = std::max(t, frontend_free_) + fe;
      frontend_free_ = e1;
      end = std::max(e1, *channel) + ns_of(p_.write_us * 1e3);
      *channel = end;
      stats_.busy_ns += fe;
      break;
    }
    case DiskOp::kFlush:
    case DiskOp::kDiscard: {
      const uint64_t fe = ns_of((p.r.op == DiskOp::kFlush ? p_.flush_us : p_.trim_us) * 1e3);
      end = std::max(t, frontend_free_) + fe;
      frontend_free_ = end;
      stats_.busy_ns += fe;
      break;
    }
  }
  ssd_inflight_.push(SsdDone{end, ssd_seq_++, p, end - t});
}

void DiskModelQueue::ssd_pump(uint64_t t) {
  while (!ssd_wait_.empty() && ssd_inflight_.size() < p_.queue_depth && !ssd_flush_inflight_) {
    const Pending p = ssd_wait_.front();
    if (p.arrival > t) break;
    // A flush waits for every request before it, and nothing passes it.
    if (p.r.op == DiskOp::kFlush) {
      if (!ssd_inflight_.empty()) break;
      ssd_flush_inflight_ = true;
    }
    ssd_wait_.pop_front();
    ssd_dispatch(p, t);
  }
}

uint64_t DiskModelQueue::ssd_advance(uint64_t now, std::vector<DiskCompletion>* done) {
  for (;;) {
    if (ssd_inflight_.empty()) return kNever;  // the pump never leaves arrived work waiting
    const SsdDone d = ssd_inflight_.top();
    if (d.time > now) return d.time;
    ssd_inflight_.pop();
    if (d.req.r.op == DiskOp::kFlush) ssd_flush_inflight_ = false;
    complete(d.req, d.time, d.service, false, done);
    ssd_pump(d.time);
  }
}

}  // namespace hybridstore
