// Request streams for ftl-sim: sequential writes, uniform random writes, a
// read/write mix, and Zipf-distributed writes. Deterministic for a seed.
#pragma once
#include <cstdint>
#include <random>
#include <string>

namespace hybridstore::ftl::sim {

enum class WorkloadKind { kSeqWrite, kRandWrite, kMixed, kZipf };
bool parse_workload(const std::string& s, WorkloadKind* out);
const char* workload_name(WorkloadKind k);

struct WorkloadSpec {
  WorkloadKind kind = WorkloadKind::kRandWrite;
  uint32_t request_pages = 1;  // sectors per request
  double read_fraction = 10.0 / 11.0;  // mixed: the paper's 10 selects per update
  double theta = 0.99;         // zipf skew (zipf workload; mixed when > 0)
  bool mixed_zipf = false;     // mixed: Zipf addresses instead of uniform
  uint64_t seed = 1;
};

struct Request {
  bool write = true;
  uint64_t sector = 0;
  uint32_t count = 1;
};

// Zipf over [0, n) after Gray et al. ("Quickly generating billion-record
// synthetic databases"), as YCSB does; ranks are scattered over the range by
// a hash so hot pages do not cluster in a few LEBs.
class ZipfGenerator {
 public:
  ZipfGenerator(uint64_t n, double theta);
  uint64_t next(std::mt19937_64& rng);

 private:
  uint64_t n_;
  double theta_, alpha_, zetan_, eta_;
};

class Workload {
 public:
  Workload(const WorkloadSpec& spec, uint64_t sectors);
  Request next();

 private:
  uint64_t pick_random();
  WorkloadSpec spec_;
  uint64_t sectors_;
  uint64_t cursor_ = 0;
  std::mt19937_64 rng_;
  ZipfGenerator zipf_;
};

}  // namespace hybridstore::ftl::sim
