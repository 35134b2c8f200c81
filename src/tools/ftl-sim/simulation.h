// One ftl-sim run: format a flash, precondition it, warm it up, replay a
// workload on the virtual clock and measure what the paper measures.
//
// Definitions (docs/ftl.md):
//   MTTPW  mean time to page write: device time spent on behalf of writes
//          (their own programs, the merges and erases they cause, cache
//          fills and flushes) divided by pages written. In an open-loop run
//          (--iops) it is the mean write latency, queueing included.
//   MTTM   mean device time of one update merge (log area full, or a UBI
//          block update), the erase of the block it frees included.
//   WA     pages programmed on flash (EC headers included) / pages written.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "ftl/flash_translation_layer.h"
#include "workload.h"

namespace hybridstore::ftl::sim {

struct SimOptions {
  FtlOptions ftl;
  WorkloadSpec workload;
  uint64_t ops = 100000;
  int64_t warmup_ops = -1;  // -1: enough to fill every log area once
  bool precondition = true; // write every LEB once before measuring
  double iops = 0;          // open loop (Poisson arrivals); 0 = closed loop
  double think_us = 0;      // closed loop: idle time between requests
  bool progress = true;
};

struct LatencySummary {
  uint64_t count = 0;
  double mean_us = 0, p50_us = 0, p99_us = 0, p999_us = 0, max_us = 0;
  double over_20ms = 0;  // share of requests slower than 20 ms
};

struct SimResult {
  std::string policy, workload, cache;
  bool background = false;
  uint64_t ops = 0, pages_written = 0, pages_read = 0;
  uint64_t leb_count = 0;
  uint32_t pages_per_leb = 0;
  uint64_t capacity_bytes = 0;
  double mttpw_us = 0, mttm_us = 0;
  uint64_t update_merges = 0, direct_merges = 0, relocations = 0, switch_merges = 0;
  double direct_merge_us = 0, max_merge_us = 0;
  uint64_t foreground_merge_waits = 0;
  double write_amplification = 0;
  uint64_t erase_min = 0, erase_max = 0;
  double erase_mean = 0;
  LatencySummary writes, reads;
  double slow_request_share = 0;  // reads and writes together, over 20 ms
  double flash_seconds = 0, wall_seconds = 0;
};

int run_simulation(const SimOptions& o, SimResult* out, std::string* error);
void print_result(const SimResult& r, FILE* f);
nlohmann::json to_json(const SimResult& r);

}  // namespace hybridstore::ftl::sim
