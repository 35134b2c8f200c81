// Workload profiles after the HRO paper's Table I (mail, office, research) and
// a seeded generator of their request streams over a multi-day run.
//
// What comes from the paper (Table I, one week of NFS traces each): the op mix
// (metadata / read / write shares), the bytes read and written (hence mean
// request sizes and the read/write byte ratio), the request rate, the file
// system image size, and the qualitative findings of Section II: fewer than 3%
// of files are hot and attract most accesses, the hot set overlaps strongly
// from day to day, file sizes are KBs to MBs, and non-sequential access exists
// in all three workloads, especially in hot files.
//
// What the paper does not give, and we chose (each is a field of
// WorkloadProfile, printed by the bench): the number of files and their size
// distribution (log-normal), the popularity skew (Zipf over files), the share
// of files accessed randomly (higher among hot files), run lengths and request
// sizes, the number of interleaved client streams, and the daily churn of the
// hot set. The data set is scaled down (default about 1/10 of the paper's
// image) and the number of requests per day scales with it, so bytes accessed
// per day per byte of data match the trace; the requests of a day arrive at the
// trace's rate during its busy hours (`busy_share` of the week), so HRO's 0.5 s
// continuation rule sees gaps like those of the real system.
//
// The stream: each op is a metadata op with the profile's probability, else a
// read or a write (Table I's proportion), the next request of one of the
// interleaved read or write runs (`streams` in all, split in that proportion). A run reads or
// writes one file, chosen by popularity: a *random* run is a few requests at
// random 4 KiB-aligned offsets; a *sequential* run covers a contiguous range in
// `seq_read_chunk` / `seq_write_chunk` requests. Whether a file is accessed randomly is a property of the
// file. Every day a fraction of the hot ranks is handed to other files of the
// same access pattern (the hot set drifts, its make-up stays).
//
// Determinism: the stream is a pure function of (profile, seed, scale, days);
// the generator uses its own PRNG and distributions, not <random>'s, whose
// outputs differ between standard libraries.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace hybridstore {

enum class WorkloadOp : uint8_t { kRead = 0, kWrite = 1, kMetadata = 2 };

struct WorkloadRequest {
  uint64_t time_us = 0;  // trace time; day d starts at d * 86400 s
  uint32_t day = 0;
  uint32_t object = 0;   // file index, < object count
  WorkloadOp op = WorkloadOp::kRead;
  uint64_t offset = 0;   // 0 for metadata ops
  uint32_t length = 0;   // 0 for metadata ops
};

// HRO Table I, one week, plus the SSD sizes of Section IV.
struct PaperWorkloadStats {
  double ops = 0;           // total ops in the week
  double metadata_share = 0, read_share = 0, write_share = 0;  // of ops
  double read_mb = 0, write_mb = 0;  // MB (10^6) moved in the week
  double image_gb = 0;      // file system image (SSD = 5% of it)
};

struct WorkloadProfile {
  std::string name;
  std::string description;
  PaperWorkloadStats paper;
  // --- Our parameters (not in the paper) ---
  uint64_t files = 0;             // at scale 1
  double size_median = 0;         // bytes, log-normal median
  double size_sigma = 0;          // log-normal shape
  uint64_t size_min = 512, size_max = 0;
  double zipf_theta = 1.0;        // popularity skew over files
  double hot_fraction = 0.03;     // top ranks treated as the hot set
  double random_share_hot = 0;    // P(file accessed randomly) among the hot set
  double random_share_cold = 0;   // ... among the others
  double random_run_mean = 4;     // requests per random run (geometric)
  std::vector<uint32_t> random_read_sizes;   // equally likely request sizes
  std::vector<uint32_t> random_write_sizes;
  uint32_t seq_read_chunk = 32768;   // sequential request size (NFS rsize)
  uint32_t seq_write_chunk = 32768;  // ... (NFS wsize)
  uint64_t seq_run_max = 0;       // longest sequential run, bytes
  double seq_from_start = 0.7;    // P(sequential run starts at offset 0)
  unsigned streams = 8;           // interleaved access runs
  double daily_churn = 0.1;       // fraction of the hot set replaced per day
  // Share of the week the trace is busy: ops arrive at ops / (week * busy_share)
  // while it is (office hours for office and research, longer for mail).
  double busy_share = 0.25;
};

const std::vector<WorkloadProfile>& workload_profiles();
const WorkloadProfile* find_workload_profile(const std::string& name);

struct WorkloadOptions {
  uint64_t seed = 42;
  double scale = 1.0;   // multiplies the number of files and requests per day
  unsigned days = 7;
};

class WorkloadGenerator {
 public:
  WorkloadGenerator(const WorkloadProfile& profile, const WorkloadOptions& opts);
  ~WorkloadGenerator();
  WorkloadGenerator(const WorkloadGenerator&) = delete;
  WorkloadGenerator& operator=(const WorkloadGenerator&) = delete;

  // Next request in time order; false after the last day.
  bool next(WorkloadRequest* out);

  const std::vector<uint64_t>& object_sizes() const { return sizes_; }
  // True when the file is accessed in random runs.
  bool object_is_random(uint32_t object) const { return random_[object] != 0; }
  uint64_t dataset_bytes() const { return dataset_bytes_; }
  uint64_t ops_per_day() const { return ops_per_day_; }
  double mean_gap_us() const { return mean_gap_us_; }
  const WorkloadProfile& profile() const { return profile_; }
  unsigned days() const { return opts_.days; }

 private:
  struct Rng;
  struct Run {
    uint32_t object = 0;
    WorkloadOp op = WorkloadOp::kRead;
    bool random = false;
    uint32_t left = 0;     // requests still to issue
    uint64_t next = 0;     // sequential: next offset
    uint64_t end = 0;      // sequential: end of the range
  };
  uint32_t pick_object();
  void start_run(Run* r);
  void emit_from(Run* r, WorkloadRequest* out);
  void churn_hot_set();

  WorkloadProfile profile_;
  WorkloadOptions opts_;
  Rng* rng_;
  std::vector<uint64_t> sizes_;
  std::vector<uint8_t> random_;
  std::vector<uint32_t> rank_to_object_;  // popularity rank -> file
  std::vector<double> zipf_cdf_;          // over ranks
  uint64_t dataset_bytes_ = 0;
  uint64_t ops_per_day_ = 0;
  double mean_gap_us_ = 0;
  std::vector<Run> runs_;  // [0, readers_) read runs, the rest write runs
  unsigned readers_ = 1;
  double read_p_ = 0.5;  // P(data op is a read)
  uint32_t day_ = 0;
  uint64_t ops_left_today_ = 0;
  double now_us_ = 0;
};

}  // namespace hybridstore
