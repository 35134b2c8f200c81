// Allocator-level simulations behind `hybridstore-bench alloc` (no data I/O):
// SSD space utilization under PostMark- and IOzone-like mixes, allocation
// latency with a million live objects, and cleaning write amplification.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hybridstore::bench {

// Progress lines go to stderr through this.
using Progress = std::function<void(const std::string&)>;

// ---- space utilization ---------------------------------------------------

// One allocator configuration of the space experiment: HFM sections, or a
// fixed-granularity allocator like BlueStore's (min_alloc_size).
struct SpaceConfig {
  std::string label;
  uint64_t min_alloc = 0;    // > 0: fixed-unit allocator with this unit
  std::string sections;      // hybridstore_ssd_sections text (min_alloc == 0)
  uint32_t block_size = 1024;
  uint64_t erase_block = 1 << 20;
};

enum class MixKind { kPostMark, kIozone1, kIozone2 };

struct MixSpec {
  MixKind kind;
  std::string name;
  uint64_t objects;       // population
  uint64_t transactions;  // PostMark only
  uint64_t ssd_bytes;     // SSD capacity (0 = a third of the population, rounded to 1 MiB)
};

// Where the SSD space goes at a point in time, in bytes. consumed = every
// erase unit (HFM) or allocation unit (min_alloc) not free; it is the sum of
// the other fields.
struct SpaceBreakdown {
  uint64_t consumed = 0;
  uint64_t live = 0;           // object bytes
  uint64_t rounding = 0;       // last partial block (unit) of each piece
  uint64_t staged_free = 0;    // gaps and tails of extents still staged
  uint64_t holes = 0;          // free inside written extents (incl. padding)
  uint64_t untaken = 0;        // extents of owned units never handed out
  double utilization() const { return consumed ? double(live) / double(consumed) : 0; }
};

struct SpaceResult {
  std::string config;
  std::string mix;
  uint64_t ssd_bytes = 0;
  uint64_t population_bytes = 0;
  uint64_t fit_before_spill = 0;   // objects created before the first one did not fit
  uint64_t on_ssd_after_fill = 0;
  SpaceBreakdown after_fill;
  bool has_transactions = false;
  uint64_t on_ssd_after_tx = 0;
  SpaceBreakdown after_tx;
  uint64_t spilled_creates = 0;    // creates/appends that went to the HDD in the tx phase
  uint64_t in_place_bytes = 0;     // bytes written into holes of written extents
  uint64_t forced_regions = 0;     // write units written partly filled
  double seconds = 0;
};

std::vector<MixSpec> default_mixes(bool quick);
std::vector<SpaceConfig> default_space_configs(const std::string& default_sections,
                                               uint32_t block_size, uint64_t erase_block);
SpaceResult run_space(const MixSpec& mix, const SpaceConfig& cfg, uint64_t seed);

// ---- allocation latency --------------------------------------------------

struct LatencyResult {
  std::string sections;
  uint64_t live_objects = 0;
  uint64_t measured_ops = 0;
  double alloc_p50_us = 0, alloc_p99_us = 0, alloc_p999_us = 0, alloc_max_us = 0;
  double release_p50_us = 0, release_p99_us = 0;
  // collect() + drain_records() after each op: write regions and records
  double drain_p50_us = 0, drain_p99_us = 0;
  double seconds = 0;
};

LatencyResult run_latency(const std::string& sections, uint32_t block_size,
                          uint64_t erase_block, uint64_t live_objects,
                          uint64_t measured_ops, uint64_t seed, const Progress& progress);

// ---- cleaning write amplification ----------------------------------------

enum class CleaningScheme {
  kGreedySingleLog,       // greedy victims, one log for user and cleaned data
  kCostBenefitSingleLog,  // Sprite LFS cost-benefit, one log
  kCostBenefitSepGc,      // cost-benefit, cleaned data in a separate log
  kCostHotnessGrouped,    // SFS: cost-hotness victims, hotness groups on write and clean
  kCostHotnessPaper,      // the same with the SFS paper's 1 / H in the victim score
  kCostBenefitOracle,     // reference: the true hot/cold class picks the log
};
const char* cleaning_scheme_name(CleaningScheme s);

struct CleaningSpec {
  uint32_t erase_units = 4096;   // of 256 KiB: 64 objects of 4 KiB each
  double fill = 0.8;             // live / raw
  double hot_objects = 0.10;     // fraction of objects ...
  double hot_writes = 0.90;      // ... taking this fraction of the writes
  double warmup_capacity = 10;   // overwrites, in multiples of the object count
  double measure_capacity = 10;
  // The cleaner starts below reserve free units, picks this many victims per
  // scan and stops at reserve + slack: a burst of cleaning writes its moved
  // data together, which is already a separation of cleaned from user data.
  uint32_t victims_per_pass = 4;
  uint32_t slack = 4;
};

struct CleaningResult {
  std::string scheme;
  double wa = 0;              // (user + moved bytes) / user bytes, measured phase
  uint64_t user_writes = 0;
  uint64_t moved_objects = 0;
  uint64_t victims = 0;
  double mean_victim_util = 0;
  double seconds = 0;
};

CleaningResult run_cleaning(const CleaningSpec& spec, CleaningScheme scheme, uint64_t seed,
                            const Progress& progress);

}  // namespace hybridstore::bench
