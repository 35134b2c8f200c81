#include "testing/workload_profiles.h"

#include <algorithm>
#include <cmath>

namespace hybridstore {

namespace {

constexpr double kDayUs = 86400e6;
constexpr uint64_t kPage = 4096;

WorkloadProfile make_office() {
  WorkloadProfile p;
  p.name = "office";
  p.description = "department office server (HRO Table I): metadata-heavy, reads 3.4x writes";
  p.paper = {211308494, 0.66, 0.24, 0.10, 833135, 242376, 240};
  p.files = 100000;
  p.size_median = 24 << 10;
  p.size_sigma = 1.9;
  p.size_max = 256ull << 20;
  p.zipf_theta = 1.0;
  p.hot_fraction = 0.03;
  p.random_share_hot = 0.5;
  p.random_share_cold = 0.2;
  p.random_run_mean = 4;
  p.random_read_sizes = {4096, 4096, 4096, 8192, 8192, 16384};
  p.random_write_sizes = {4096, 4096, 8192};
  p.seq_read_chunk = 32768;
  p.seq_write_chunk = 16384;
  p.seq_run_max = 4ull << 20;
  p.streams = 8;
  p.daily_churn = 0.1;
  return p;
}

WorkloadProfile make_mail() {
  WorkloadProfile p;
  p.name = "mail";
  p.description = "campus mail server (HRO Table I): read-mostly, small requests";
  p.paper = {187974468, 0.14, 0.65, 0.21, 845123, 313987, 50};
  p.files = 40000;
  p.size_median = 8 << 10;
  p.size_sigma = 2.0;
  p.size_max = 128ull << 20;
  p.zipf_theta = 1.0;
  p.hot_fraction = 0.03;
  p.random_share_hot = 0.5;
  p.random_share_cold = 0.2;
  p.random_run_mean = 3;
  p.random_read_sizes = {4096, 4096, 8192};
  p.random_write_sizes = {4096, 8192, 8192, 16384};
  p.seq_read_chunk = 8192;
  p.seq_write_chunk = 8192;
  p.seq_run_max = 2ull << 20;
  p.streams = 16;
  p.daily_churn = 0.1;
  p.busy_share = 0.5;
  return p;
}

WorkloadProfile make_research() {
  WorkloadProfile p;
  p.name = "research";
  p.description = "department research server (HRO Table I): metadata-heavy, writes 2x reads";
  p.paper = {20550778, 0.75, 0.10, 0.15, 32498, 61488, 140};
  p.files = 60000;
  p.size_median = 32 << 10;
  p.size_sigma = 2.0;
  p.size_max = 256ull << 20;
  p.zipf_theta = 1.0;
  p.hot_fraction = 0.03;
  p.random_share_hot = 0.4;
  p.random_share_cold = 0.2;
  p.random_run_mean = 4;
  p.random_read_sizes = {4096, 8192, 16384, 32768};
  p.random_write_sizes = {8192, 16384, 32768};
  p.seq_read_chunk = 16384;
  p.seq_write_chunk = 32768;
  p.seq_run_max = 4ull << 20;
  p.streams = 4;
  p.daily_churn = 0.1;
  return p;
}

}  // namespace

const std::vector<WorkloadProfile>& workload_profiles() {
  static const std::vector<WorkloadProfile> v = {make_mail(), make_office(), make_research()};
  return v;
}

const WorkloadProfile* find_workload_profile(const std::string& name) {
  for (const auto& p : workload_profiles())
    if (p.name == name) return &p;
  return nullptr;
}

// xoshiro256** seeded through splitmix64; distributions written out here so the
// stream does not depend on the standard library's.
struct WorkloadGenerator::Rng {
  uint64_t s[4];
  explicit Rng(uint64_t seed) {
    for (auto& x : s) {
      seed += 0x9e3779b97f4a7c15ull;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      x = z ^ (z >> 31);
    }
  }
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t next() {
    uint64_t r = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  uint64_t below(uint64_t n) {  // [0, n), n > 0
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }
  double normal() {
    double u1 = 1.0 - uniform();  // (0, 1]
    double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * M_PI * u2);
  }
  double exponential(double mean) { return -mean * std::log(1.0 - uniform()); }
};

WorkloadGenerator::WorkloadGenerator(const WorkloadProfile& profile, const WorkloadOptions& opts)
    : profile_(profile), opts_(opts), rng_(new Rng(opts.seed)) {
  if (!(opts_.scale > 0)) opts_.scale = 1.0;
  if (opts_.days == 0) opts_.days = 1;
  uint64_t n = std::max<uint64_t>(16, std::llround(static_cast<double>(profile_.files) * opts_.scale));
  if (n > UINT32_MAX) n = UINT32_MAX;
  const uint64_t max_size = profile_.size_max ? profile_.size_max : (1ull << 30);
  sizes_.resize(n);
  for (auto& s : sizes_) {
    double x = profile_.size_median * std::exp(profile_.size_sigma * rng_->normal());
    uint64_t b = static_cast<uint64_t>(std::clamp(x, static_cast<double>(profile_.size_min),
                                                  static_cast<double>(max_size)));
    b = (b + 511) / 512 * 512;  // whole sectors
    s = b;
    dataset_bytes_ += b;
  }
  // Popularity: a random permutation of files over Zipf ranks.
  rank_to_object_.resize(n);
  for (uint32_t i = 0; i < n; ++i) rank_to_object_[i] = i;
  for (uint64_t i = n - 1; i > 0; --i) std::swap(rank_to_object_[i], rank_to_object_[rng_->below(i + 1)]);
  zipf_cdf_.resize(n);
  double acc = 0;
  for (uint64_t r = 0; r < n; ++r) {
    acc += 1.0 / std::pow(static_cast<double>(r + 1), profile_.zipf_theta);
    zipf_cdf_[r] = acc;
  }
  // Access pattern per file, by its initial rank.
  random_.resize(n);
  uint64_t hot = static_cast<uint64_t>(profile_.hot_fraction * static_cast<double>(n));
  for (uint64_t r = 0; r < n; ++r) {
    double p = r < hot ? profile_.random_share_hot : profile_.random_share_cold;
    random_[rank_to_object_[r]] = rng_->uniform() < p ? 1 : 0;
  }
  // Requests per day keep the trace's bytes-per-day-per-byte-of-data; they
  // arrive at the trace's rate.
  const PaperWorkloadStats& ps = profile_.paper;
  double per_day = ps.ops / 7.0 * static_cast<double>(dataset_bytes_) / (ps.image_gb * 1e9);
  ops_per_day_ = std::max<uint64_t>(1, std::llround(per_day));
  mean_gap_us_ = 7.0 * kDayUs * std::clamp(profile_.busy_share, 0.01, 1.0) / ps.ops;
  // Streams are split between readers and writers in the op mix's proportion;
  // each data op first picks its type, so the request mix matches Table I
  // whatever the run lengths.
  read_p_ = ps.read_share / (ps.read_share + ps.write_share);
  unsigned streams = std::max(2u, profile_.streams);
  unsigned readers = static_cast<unsigned>(std::lround(streams * read_p_));
  readers = std::clamp(readers, 1u, streams - 1);
  runs_.resize(streams);
  for (unsigned i = 0; i < streams; ++i) runs_[i].op = i < readers ? WorkloadOp::kRead : WorkloadOp::kWrite;
  readers_ = readers;
  ops_left_today_ = ops_per_day_;
}

WorkloadGenerator::~WorkloadGenerator() { delete rng_; }

uint32_t WorkloadGenerator::pick_object() {
  double u = rng_->uniform() * zipf_cdf_.back();
  size_t r = std::upper_bound(zipf_cdf_.begin(), zipf_cdf_.end(), u) - zipf_cdf_.begin();
  if (r >= zipf_cdf_.size()) r = zipf_cdf_.size() - 1;
  return rank_to_object_[r];
}

void WorkloadGenerator::start_run(Run* r) {
  r->object = pick_object();
  r->random = random_[r->object] != 0;
  uint64_t size = sizes_[r->object];
  if (r->random) {
    r->left = 1;
    double stop = 1.0 / std::max(1.0, profile_.random_run_mean);
    while (r->left < 1000 && rng_->uniform() >= stop) ++r->left;
    return;
  }
  uint64_t start = 0;
  if (rng_->uniform() >= profile_.seq_from_start) start = rng_->below((size + kPage - 1) / kPage) * kPage;
  if (start >= size) start = 0;
  uint64_t run_max = profile_.seq_run_max ? profile_.seq_run_max : size;
  r->next = start;
  r->end = std::min(size, start + run_max);
  uint64_t chunk = std::max<uint32_t>(512, r->op == WorkloadOp::kRead ? profile_.seq_read_chunk
                                                                      : profile_.seq_write_chunk);
  r->left = static_cast<uint32_t>((r->end - start + chunk - 1) / chunk);
}

void WorkloadGenerator::emit_from(Run* r, WorkloadRequest* out) {
  uint64_t size = sizes_[r->object];
  out->object = r->object;
  out->op = r->op;
  if (r->random) {
    const auto& sizes =
        r->op == WorkloadOp::kRead ? profile_.random_read_sizes : profile_.random_write_sizes;
    uint64_t want = sizes.empty() ? kPage : sizes[rng_->below(sizes.size())];
    uint64_t off = rng_->below((size + kPage - 1) / kPage) * kPage;
    if (off >= size) off = 0;
    out->offset = off;
    out->length = static_cast<uint32_t>(std::min(want, size - off));
  } else {
    out->offset = r->next;
    uint64_t chunk = std::max<uint32_t>(512, r->op == WorkloadOp::kRead ? profile_.seq_read_chunk
                                                                        : profile_.seq_write_chunk);
    out->length = static_cast<uint32_t>(std::min<uint64_t>(chunk, r->end - r->next));
    r->next += out->length;
  }
  --r->left;
}

void WorkloadGenerator::churn_hot_set() {
  uint64_t n = rank_to_object_.size();
  uint64_t hot = static_cast<uint64_t>(profile_.hot_fraction * static_cast<double>(n));
  if (hot == 0 || hot >= n) return;
  for (uint64_t r = 0; r < hot; ++r) {
    if (rng_->uniform() >= profile_.daily_churn) continue;
    uint8_t pattern = random_[rank_to_object_[r]];
    for (int tries = 0; tries < 64; ++tries) {
      uint64_t q = hot + rng_->below(n - hot);
      if (random_[rank_to_object_[q]] == pattern) {
        std::swap(rank_to_object_[r], rank_to_object_[q]);
        break;
      }
    }
  }
}

bool WorkloadGenerator::next(WorkloadRequest* out) {
  if (ops_left_today_ == 0) {
    if (day_ + 1 >= opts_.days) return false;
    ++day_;
    churn_hot_set();
    for (auto& r : runs_) r.left = 0;  // runs do not span days
    now_us_ = std::max(now_us_, static_cast<double>(day_) * kDayUs);
    ops_left_today_ = ops_per_day_;
  }
  --ops_left_today_;
  now_us_ += rng_->exponential(mean_gap_us_);
  out->time_us = static_cast<uint64_t>(now_us_);
  out->day = day_;
  const PaperWorkloadStats& ps = profile_.paper;
  if (rng_->uniform() < ps.metadata_share) {
    out->op = WorkloadOp::kMetadata;
    out->object = pick_object();
    out->offset = 0;
    out->length = 0;
    return true;
  }
  bool read = rng_->uniform() < read_p_;
  Run& r = read ? runs_[rng_->below(readers_)]
                : runs_[readers_ + rng_->below(runs_.size() - readers_)];
  if (r.left == 0) start_run(&r);
  emit_from(&r, out);
  return true;
}

}  // namespace hybridstore
