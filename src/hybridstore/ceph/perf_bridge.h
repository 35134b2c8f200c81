// The engine's counters as Ceph PerfCounters (section "hybridstore" of
// `ceph daemon osd.N perf dump` / `perf schema`), plus the adapter's own
// latencies, among them commit_lat, which `ceph osd perf` reports.
#pragma once
#include <memory>

#include "common/perf_counters.h"

#include "hscommon/perf_counters.h"

namespace hybridstore::ceph_adapter {

// The adapter's counters, placed before the engine's mirrored ones.
enum {
  l_hs_first = 732000,
  l_hs_commit_lat,       // queue_transactions until durable (on_commit)
  l_hs_apply_lat,        // queue_transactions until visible (it returns)
  l_hs_queue_txns,       // transactions queued
  l_hs_read_lat,
  l_hs_read_bytes,
  l_hs_read_noheat_ops,  // reads flagged DONTNEED/NOCACHE (scrub, recovery): not counted as heat
  l_hs_omap_iter_lat,    // get_omap_iterator, omap_iterate's open and seek
  l_hs_clist_lat,        // collection_list
  l_hs_engine_first,     // engine counters follow, in the engine's order
};

class PerfBridge : public PerfSink {
 public:
  // Registers "hybridstore" with cct's collection; engine may be null (its
  // counters are then left out).
  PerfBridge(CephContext* cct, PerfCounterSet* engine);
  ~PerfBridge() override;
  PerfCounters* logger() { return logger_; }

  // Sets Ceph's copy of every engine gauge to the engine's value. Updates
  // reach Ceph as they happen, but a gauge's decrement forwards the value
  // it computed, so a decrement racing with another update can leave Ceph's
  // copy off until the gauge next changes; this brings them level
  // (ObjectStore::refresh_perf_counters, Squid on). Counters and latencies
  // are forwarded as increments and cannot drift, and setting a counter
  // could lose an increment racing with it: they are left alone.
  void refresh_gauges();

  void on_inc(int id, uint64_t v) override { logger_->inc(l_hs_engine_first + id, v); }
  void on_set(int id, uint64_t v) override { logger_->set(l_hs_engine_first + id, v); }
  void on_latency(int id, uint64_t ns) override;

 private:
  // Copies the engine's gauges, and its counters too when asked, into Ceph's.
  void copy_engine_values(bool counters_too);

  CephContext* cct_;
  PerfCounterSet* engine_;
  int n_engine_ = 0;  // the engine counters Ceph's set was built with
  PerfCounters* logger_ = nullptr;
};

}  // namespace hybridstore::ceph_adapter
