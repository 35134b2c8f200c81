#include "workload.h"

#include <cmath>

namespace hybridstore::ftl::sim {

bool parse_workload(const std::string& s, WorkloadKind* out) {
  if (s == "seqwrite") *out = WorkloadKind::kSeqWrite;
  else if (s == "randwrite") *out = WorkloadKind::kRandWrite;
  else if (s == "mixed") *out = WorkloadKind::kMixed;
  else if (s == "zipf") *out = WorkloadKind::kZipf;
  else return false;
  return true;
}

const char* workload_name(WorkloadKind k) {
  switch (k) {
    case WorkloadKind::kSeqWrite: return "seqwrite";
    case WorkloadKind::kRandWrite: return "randwrite";
    case WorkloadKind::kMixed: return "mixed";
    case WorkloadKind::kZipf: return "zipf";
  }
  return "?";
}

namespace {
double zeta(uint64_t n, double theta) {
  double s = 0;
  for (uint64_t i = 1; i <= n; ++i) s += 1.0 / std::pow(static_cast<double>(i), theta);
  return s;
}
uint64_t scatter(uint64_t x) {
  // FNV-1a over the 8 bytes: a fixed permutation-like spread of ranks.
  uint64_t h = 0xcbf29ce484222325ull;
  for (int i = 0; i < 8; ++i) {
    h ^= (x >> (8 * i)) & 0xff;
    h *= 0x100000001b3ull;
  }
  return h;
}
}  // namespace

ZipfGenerator::ZipfGenerator(uint64_t n, double theta) : n_(n ? n : 1), theta_(theta) {
  if (theta_ <= 0 || theta_ == 1.0) theta_ = theta_ <= 0 ? 0 : 0.999;
  if (theta_ == 0) {
    alpha_ = zetan_ = eta_ = 0;
    return;
  }
  alpha_ = 1.0 / (1.0 - theta_);
  zetan_ = zeta(n_, theta_);
  double zeta2 = zeta(2, theta_);
  eta_ = (1 - std::pow(2.0 / static_cast<double>(n_), 1 - theta_)) / (1 - zeta2 / zetan_);
}

uint64_t ZipfGenerator::next(std::mt19937_64& rng) {
  if (theta_ == 0) return rng() % n_;
  double u = std::uniform_real_distribution<double>(0, 1)(rng);
  double uz = u * zetan_;
  uint64_t rank;
  if (uz < 1.0) rank = 0;
  else if (uz < 1.0 + std::pow(0.5, theta_)) rank = 1;
  else
    rank = static_cast<uint64_t>(static_cast<double>(n_) *
                                 std::pow(eta_ * u - eta_ + 1, alpha_));
  if (rank >= n_) rank = n_ - 1;
  return scatter(rank) % n_;
}

Workload::Workload(const WorkloadSpec& spec, uint64_t sectors)
    : spec_(spec), sectors_(sectors), rng_(spec.seed),
      zipf_(sectors / std::max<uint32_t>(1, spec.request_pages),
            spec.kind == WorkloadKind::kZipf || spec.mixed_zipf ? spec.theta : 0) {}

uint64_t Workload::pick_random() {
  uint64_t units = sectors_ / std::max<uint32_t>(1, spec_.request_pages);
  bool zipf = spec_.kind == WorkloadKind::kZipf ||
              (spec_.kind == WorkloadKind::kMixed && spec_.mixed_zipf);
  uint64_t u = zipf ? zipf_.next(rng_) : rng_() % units;
  return u * spec_.request_pages;
}

Request Workload::next() {
  Request r;
  r.count = spec_.request_pages;
  switch (spec_.kind) {
    case WorkloadKind::kSeqWrite:
      if (cursor_ + r.count > sectors_) cursor_ = 0;
      r.sector = cursor_;
      cursor_ += r.count;
      break;
    case WorkloadKind::kRandWrite:
    case WorkloadKind::kZipf:
      r.sector = pick_random();
      break;
    case WorkloadKind::kMixed:
      r.write = std::uniform_real_distribution<double>(0, 1)(rng_) >= spec_.read_fraction;
      r.sector = pick_random();
      break;
  }
  return r;
}

}  // namespace hybridstore::ftl::sim
