#include "hybridstore/hotness_groups.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "hybridstore/common/encoding.h"

namespace hybridstore {

namespace {
constexpr uint32_t kGroupingTag = 0x48534847;  // "HSHG"
constexpr uint8_t kVersion = 1;
constexpr double kFloor = -12;  // log10 of the coldest hotness we distinguish

double to_log(double h) { return h > 0 ? std::max(std::log10(h), kFloor) : kFloor; }
}  // namespace

HotnessGrouping::HotnessGrouping(uint32_t groups) : groups_(std::max<uint32_t>(1, groups)) {}

uint32_t HotnessGrouping::group_of(double hotness) const {
  if (centres_.empty()) return 0;
  double x = to_log(hotness);
  // bounds_ descend: group g holds x in (bounds_[g], bounds_[g-1]].
  uint32_t g = 0;
  while (g < bounds_.size() && x <= bounds_[g]) ++g;
  return g;
}

int HotnessGrouping::refine(const std::vector<double>& samples) {
  if (samples.empty()) return 0;
  std::vector<double> xs;
  xs.reserve(samples.size());
  for (double h : samples) xs.push_back(to_log(h));
  std::sort(xs.begin(), xs.end(), std::greater<double>());
  const uint32_t k = groups_;
  if (centres_.empty()) {
    // Seed at equal widths over the observed range: equal-height seeds put
    // several centres into one large cold group, which three iterations
    // cannot pull apart. The refinement then moves them to the group means.
    double hi = xs.front(), lo = xs.back();
    for (uint32_t g = 0; g < k; ++g) centres_.push_back(hi - (hi - lo) * (2 * g + 1) / (2 * k));
  }
  int it = 0;
  for (; it < kMaxIterations; ++it) {
    std::vector<double> sum(k, 0);
    std::vector<size_t> cnt(k, 0);
    size_t g = 0;
    for (double x : xs) {  // xs descend, centres descend: sweep once
      while (g + 1 < k && std::fabs(x - centres_[g + 1]) < std::fabs(x - centres_[g])) ++g;
      sum[g] += x;
      ++cnt[g];
    }
    double moved = 0;
    for (uint32_t c = 0; c < k; ++c) {
      if (!cnt[c]) continue;  // an empty group keeps its centre
      double nc = sum[c] / cnt[c];
      moved = std::max(moved, std::fabs(nc - centres_[c]));
      centres_[c] = nc;
    }
    std::sort(centres_.begin(), centres_.end(), std::greater<double>());
    if (moved < 1e-3) {
      ++it;
      break;
    }
  }
  bounds_.clear();
  for (uint32_t c = 0; c + 1 < k; ++c) bounds_.push_back((centres_[c] + centres_[c + 1]) / 2);
  return it;
}

std::string HotnessGrouping::encode() const {
  std::string b;
  put_varint(&b, groups_);
  put_varint(&b, centres_.size());
  for (double c : centres_) {
    uint64_t bits;
    std::memcpy(&bits, &c, sizeof bits);
    put_fixed64(&b, bits);
  }
  return seal_record(kGroupingTag, kVersion, b);
}

int HotnessGrouping::decode(std::string_view record, HotnessGrouping* out, std::string* error) {
  uint8_t version;
  std::string_view body;
  RecordError re = open_record(kGroupingTag, kVersion, record, &version, &body);
  if (re != RecordError::kNone) {
    *error = fmt::format("hotness groups record: {}", record_error_name(re));
    return -EIO;
  }
  Decoder d(body);
  uint64_t groups, n;
  if (!d.get_varint(&groups) || !d.get_varint(&n) || groups < 1 || groups > 64 ||
      (n != 0 && n != groups)) {
    *error = "hotness groups record: malformed";
    return -EIO;
  }
  HotnessGrouping g(static_cast<uint32_t>(groups));
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t bits;
    double c;
    if (!d.get_fixed64(&bits)) {
      *error = "hotness groups record: truncated centres";
      return -EIO;
    }
    std::memcpy(&c, &bits, sizeof c);
    if (!std::isfinite(c) || (i && c > g.centres_.back())) {
      *error = "hotness groups record: centres not finite and descending";
      return -EIO;
    }
    g.centres_.push_back(c);
  }
  if (!d.done()) {
    *error = "hotness groups record: trailing bytes";
    return -EIO;
  }
  for (size_t c = 0; c + 1 < g.centres_.size(); ++c)
    g.bounds_.push_back((g.centres_[c] + g.centres_[c + 1]) / 2);
  *out = g;
  return 0;
}

}  // namespace hybridstore
