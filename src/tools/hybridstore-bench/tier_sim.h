// A trace-driven tiering simulation on modelled devices, for `hybridstore-bench
// tier`: the heat tracker, the knapsack planner and the device models of the
// engine, driven by a WorkloadGenerator, on a virtual clock.
//
// The simulated host, the same for every policy:
//  - each object has a home on the HDD (objects laid out back to back in
//    object order, so hot objects are scattered); the data occupies the
//    fraction image / 750 GB of the disk, as the paper's image did on its
//    750 GB disks, so seek distances scale with the real layout;
//  - the SSD holds the objects the planner chose, at most ssd_fraction of the
//    data set (5%); day 1 starts with an empty SSD;
//  - reads go through a per-object readahead like Linux's: a read that
//    continues the object's previous read doubles the window (128 KiB up to
//    1 MiB) and fetches it; other reads fetch exactly what they ask for; a read
//    inside the fetched window costs no device time;
//  - writes are written back: a write continuing an object's open dirty extent
//    extends it (up to 1 MiB); completed extents are flushed 32 at a time per
//    device in address order (an elevator sweep); everything is flushed at day
//    end;
//  - metadata ops cost a fixed 50 us in every configuration (the planner does
//    not place metadata; it lives in RocksDB);
//  - requests are served one at a time (a serial replay as fast as the devices
//    allow, like the paper's dbench replay with unlimited acceleration);
//  - at the end of each day (the paper's midnight) the planner runs on the
//    heat of the day (plus decayed history) and the migrator moves the promote
//    and demote sets; migration I/O is modelled and reported separately, it is
//    not foreground time (the paper migrates while idle).
// Latency of a read = device time of the I/O it caused (0 on a readahead hit);
// write latency = flush time shared over the writes (write-back).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hybridstore/tier/heat_tracker.h"
#include "hybridstore/tier/knapsack_planner.h"
#include "testing/device_model.h"
#include "testing/workload_profiles.h"

namespace hybridstore::bench {

struct TierSimConfig {
  bool hdd_only = false;  // no SSD: every object on the HDD, no tracking
  TierPolicy policy = TierPolicy::kHro;
  double ssd_fraction = 0.05;  // SSD budget as a share of the data set
  double disk_bytes = 750e9;   // the paper's disk (image / disk = data span)
  HddModelParams hdd;          // capacity is set by the simulation
  SsdModelParams ssd;
  HeatTrackerOptions heat;
  uint64_t alloc_unit = 4096;
  // > 0: plan each migration with a BoundedPlanner keeping this many
  // candidates (docs/memory.md); 0: plan_tiers over every object.
  size_t plan_max_candidates = 0;
  // > 0: the heat tracker on demand (docs/memory.md, step 5), its hot set
  // capped at this share of the objects (in bytes, at the tracker's bytes
  // per entry), what leaves it merged into a map that stands for RocksDB's
  // `H` records; the planner reads every object's merged heat. 0: the
  // tracker holds every object (today's load mode).
  double heat_hot_set = 0;
  uint64_t readahead_min = 128 << 10;
  uint64_t readahead_max = 1 << 20;
  uint64_t writeback_extent_max = 1 << 20;
  unsigned writeback_batch = 32;  // flush a device's queue at this many complete extents
  unsigned writeback_open = 32;   // open (growing) extents kept at most
  double metadata_op_us = 50;
  // Called before each migration with the planner's input (for gap sampling).
  std::function<void(unsigned day, const std::vector<TierCandidate>&, uint64_t budget)> on_plan;
  // Called after each simulated day.
  std::function<void(unsigned day)> on_day;
};

struct TierCounters {
  uint64_t reads = 0, writes = 0, meta_ops = 0;
  uint64_t read_bytes = 0, write_bytes = 0;
  uint64_t read_ns = 0, write_ns = 0, meta_ns = 0;
  uint64_t readahead_hits = 0;
  uint64_t ssd_requests = 0;  // data requests to objects on the SSD
  uint64_t hdd_ios = 0, hdd_random_ios = 0, hdd_seek_bytes = 0, hdd_ns = 0;
  uint64_t ssd_ios = 0, ssd_ns = 0;
  uint64_t promoted = 0, demoted = 0, migrated_bytes = 0, migration_ns = 0;

  void add(const TierCounters& o);
  uint64_t foreground_ns() const { return read_ns + write_ns + meta_ns; }
  double bandwidth_mbps() const;       // client bytes / foreground time, MB/s
  double mean_read_ms() const;
  double mean_write_ms() const;
  double mean_hdd_seek_mib() const;    // per HDD I/O
};

struct TierSimResult {
  TierCounters total;
  std::vector<TierCounters> days;
  uint64_t dataset_bytes = 0;
  uint64_t ssd_budget = 0;
  uint64_t objects = 0;
  size_t heat_entries = 0;
  size_t heat_memory = 0;
  size_t heat_stored = 0;  // on demand: objects with a stored record
};

TierSimResult run_tier_sim(const WorkloadProfile& profile, const WorkloadOptions& wopts,
                           const TierSimConfig& cfg);

}  // namespace hybridstore::bench
