#include "hybridstore/tier/hotness_groups.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <limits>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "hscommon/config.h"
#include "hscommon/encoding.h"

namespace hybridstore {

namespace {

constexpr uint32_t kCentresTag = 0x53465343;  // "SFSC"
constexpr uint8_t kCentresVersion = 1;
constexpr unsigned kMaxGroups = 16;

// Index of the centre nearest to v; centres are non-increasing, so the
// boundaries are the midpoints between neighbours. Ties go to the hotter group.
unsigned nearest(const std::vector<double>& c, double v) {
  unsigned lo = 0, hi = static_cast<unsigned>(c.size()) - 1;
  while (lo < hi) {
    unsigned mid = (lo + hi) / 2;
    double boundary = (c[mid] + c[mid + 1]) / 2;
    if (v >= boundary) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

// Hotness spans orders of magnitude, so groups are formed on its logarithm:
// in linear terms one very hot segment would own a group and every other
// segment would crowd into the coldest one. `kFloor` keeps zero (never
// written) finite.
constexpr double kFloor = 1e-9;
double to_log(double h) { return std::log(h + kFloor); }
double from_log(double u) { return std::max(0.0, std::exp(u) - kFloor); }

}  // namespace

HotnessGroupOptions hotness_group_options_from_config(const Config& conf) {
  HotnessGroupOptions o;
  o.groups = static_cast<unsigned>(conf.get_int("hybridstore_sfs_groups"));
  o.max_iterations = static_cast<unsigned>(conf.get_int("hybridstore_sfs_refine_iterations"));
  return o;
}

double block_hotness(uint64_t writes, uint64_t age_us) {
  double age_s = static_cast<double>(std::max<uint64_t>(age_us, 1000000)) / 1e6;
  return static_cast<double>(writes) / age_s;
}

double segment_hotness(const std::vector<double>& blocks) {
  if (blocks.empty()) return 0;
  double sum = 0;
  for (double h : blocks) sum += h;
  return sum / static_cast<double>(blocks.size());
}

double cost_hotness(double u, double h) {
  if (u <= 0 || h <= 0) return HUGE_VAL;
  return (1 - u) / (2 * u * h);
}

HotnessGroups::HotnessGroups(const HotnessGroupOptions& opts) : opts_(opts) {
  opts_.groups = std::clamp(opts_.groups, 1u, kMaxGroups);
  opts_.max_iterations = std::max(opts_.max_iterations, 1u);
  if (!(opts_.tolerance >= 0)) opts_.tolerance = 0;
}

unsigned HotnessGroups::refine(const std::vector<double>& sample) {
  std::vector<double> v;
  v.reserve(sample.size());
  for (double h : sample)
    if (std::isfinite(h) && h >= 0) v.push_back(h);
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end(), std::greater<double>());
  const unsigned k = opts_.groups;

  std::vector<double> c = centres();
  // k-means on log(hotness); centres are kept (and persisted) as hotness.
  std::vector<double> u(v.size());
  for (size_t i = 0; i < v.size(); ++i) u[i] = to_log(v[i]);
  if (c.empty()) {
    // First seeds by farthest-point (maximin) selection over the sample with
    // its extreme 1% trimmed at both ends: one seed per well-separated
    // cluster, whatever their sizes (equal-count seeds would crowd into the
    // big cold cluster, equal-width ones can leave a cluster seedless), and
    // a lone outlier cannot claim a group.
    size_t trim = u.size() / 100;
    std::vector<double> pool(u.begin() + static_cast<long>(trim), u.end() - static_cast<long>(trim));
    if (pool.empty()) pool = u;
    std::vector<double> seeds = {pool.front()};
    while (seeds.size() < k) {
      double best = -1, pick = pool.back();
      for (double x : pool) {
        double d = std::numeric_limits<double>::infinity();
        for (double s : seeds) d = std::min(d, std::fabs(x - s));
        if (d > best) best = d, pick = x;
      }
      seeds.push_back(pick);
    }
    std::sort(seeds.begin(), seeds.end(), std::greater<double>());
    c.assign(k, 0.0);
    for (unsigned j = 0; j < k; ++j) c[j] = from_log(seeds[j]);
  }
  for (auto& x : c) x = to_log(x);
  const double range = u.front() - u.back();
  const double eps = opts_.tolerance * (range > 0 ? range : 1.0);

  unsigned passes = 0;
  std::vector<double> sum(k), next(k);
  std::vector<size_t> count(k);
  while (passes < opts_.max_iterations) {
    ++passes;
    std::fill(sum.begin(), sum.end(), 0.0);
    std::fill(count.begin(), count.end(), 0);
    for (double x : u) {
      unsigned j = nearest(c, x);
      sum[j] += x;
      ++count[j];
    }
    double moved = 0;
    for (unsigned j = 0; j < k; ++j) {
      next[j] = count[j] ? sum[j] / static_cast<double>(count[j]) : c[j];  // empty keeps its place
      moved = std::max(moved, std::fabs(next[j] - c[j]));
    }
    std::sort(next.begin(), next.end(), std::greater<double>());
    c = next;
    if (moved <= eps) break;
  }
  for (auto& x : c) x = from_log(x);
  std::unique_lock<std::shared_mutex> g(mu_);
  centres_ = c;
  return passes;
}

unsigned HotnessGroups::classify(double hotness) const {
  std::shared_lock<std::shared_mutex> g(mu_);
  if (centres_.empty()) return 0;
  if (!(hotness >= 0)) hotness = 0;
  std::vector<double> logc(centres_.size());
  for (size_t i = 0; i < centres_.size(); ++i) logc[i] = to_log(centres_[i]);
  return nearest(logc, to_log(hotness));
}

bool HotnessGroups::has_centres() const {
  std::shared_lock<std::shared_mutex> g(mu_);
  return !centres_.empty();
}

std::vector<double> HotnessGroups::centres() const {
  std::shared_lock<std::shared_mutex> g(mu_);
  return centres_;
}

const char* HotnessGroups::group_name(unsigned group, unsigned groups) {
  if (groups == 4) {
    static const char* names[] = {"hot", "warm", "cold", "read-only"};
    return group < 4 ? names[group] : "?";
  }
  if (group == 0) return "hottest";
  if (group + 1 == groups) return "coldest";
  return "middle";
}

// Body v1: varint group count, then one fixed64 (IEEE double bits) per centre.
std::string HotnessGroups::encode() const {
  std::vector<double> c = centres();
  std::string body;
  put_varint(&body, c.size());
  for (double x : c) {
    uint64_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    put_fixed64(&body, bits);
  }
  return seal_record(kCentresTag, kCentresVersion, body);
}

int HotnessGroups::decode(std::string_view record, std::string* error) {
  uint8_t version;
  std::string_view body;
  if (int r = open_stored_record(kCentresTag, kCentresVersion, record, "hotness centres", &version, &body, error);
      r < 0)
    return r;
  Decoder d(body);
  uint64_t n;
  if (!d.get_varint(&n) || n > kMaxGroups) {
    if (error) *error = "hotness centres: bad group count";
    return -EIO;
  }
  if (n != 0 && n != opts_.groups) {
    if (error) *error = fmt::format("hotness centres: stored for {} groups, configured {}", n,
                                    opts_.groups);
    return -EINVAL;
  }
  std::vector<double> c(n);
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t bits;
    if (!d.get_fixed64(&bits)) break;
    std::memcpy(&c[i], &bits, sizeof bits);
    if (!std::isfinite(c[i]) || c[i] < 0 || (i > 0 && c[i] > c[i - 1])) {
      if (error) *error = "hotness centres: centres must be finite, non-negative, descending";
      return -EIO;
    }
  }
  if (!d.done()) {
    if (error) *error = "hotness centres: malformed body";
    return -EIO;
  }
  std::unique_lock<std::shared_mutex> g(mu_);
  centres_ = std::move(c);
  return 0;
}

}  // namespace hybridstore
