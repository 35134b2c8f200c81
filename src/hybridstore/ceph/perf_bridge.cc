#include "hybridstore/ceph/perf_bridge.h"

#include <algorithm>

#include "common/ceph_context.h"
#include "common/perf_counters_collection.h"

namespace hybridstore::ceph_adapter {

PerfBridge::PerfBridge(CephContext* cct, PerfCounterSet* engine) : cct_(cct), engine_(engine) {
  const int n_engine = engine ? static_cast<int>(engine->schema().size()) : 0;
  n_engine_ = n_engine;
  PerfCountersBuilder b(cct, "hybridstore", l_hs_first, l_hs_engine_first + n_engine);
  b.add_time_avg(l_hs_commit_lat, "commit_lat", "Time from queueing a transaction until it is durable", "c_l",
                 PerfCountersBuilder::PRIO_CRITICAL);
  b.add_time_avg(l_hs_apply_lat, "apply_lat", "Time to apply a transaction (visible to reads)", "a_l",
                 PerfCountersBuilder::PRIO_INTERESTING);
  b.add_u64_counter(l_hs_queue_txns, "txc", "Transactions queued", "txc", PerfCountersBuilder::PRIO_USEFUL);
  b.add_time_avg(l_hs_read_lat, "read_lat", "Object read latency", "r_l", PerfCountersBuilder::PRIO_INTERESTING);
  b.add_u64_counter(l_hs_read_bytes, "read_bytes", "Bytes read", "rd", PerfCountersBuilder::PRIO_USEFUL, UNIT_BYTES);
  b.add_u64_counter(l_hs_read_noheat_ops, "read_noheat_ops",
                    "Reads flagged DONTNEED/NOCACHE (scrub, recovery) that did not heat objects");
  b.add_time_avg(l_hs_omap_iter_lat, "omap_iterator_lat", "Time to open an omap iterator");
  b.add_time_avg(l_hs_clist_lat, "clist_lat", "Collection listing latency");
  if (engine) {
    const auto& schema = engine->schema();
    for (int i = 0; i < n_engine; ++i) {
      const auto& c = schema[i];
      // The schema's strings live as long as the engine, which outlives this.
      switch (c.kind) {
        case PerfKind::kCounter:
          b.add_u64_counter(l_hs_engine_first + i, c.name.c_str(), c.description.c_str());
          break;
        case PerfKind::kGauge:
          b.add_u64(l_hs_engine_first + i, c.name.c_str(), c.description.c_str());
          break;
        case PerfKind::kLatency:
          b.add_time_avg(l_hs_engine_first + i, c.name.c_str(), c.description.c_str());
          break;
      }
    }
  }
  logger_ = b.create_perf_counters();
  cct_->get_perfcounters_collection()->add(logger_);
  // What the engine counted before the bridge existed (gauges above all).
  if (engine) {
    copy_engine_values(/*counters_too=*/true);
    engine->set_sink(this);
  }
}

void PerfBridge::copy_engine_values(bool counters_too) {
  if (!engine_) return;
  const auto values = engine_->snapshot();
  const auto& schema = engine_->schema();
  const int n = std::min<int>(n_engine_, static_cast<int>(std::min(values.size(), schema.size())));
  for (int i = 0; i < n; ++i) {
    const PerfKind k = schema[i].kind;
    if (k == PerfKind::kGauge || (counters_too && k == PerfKind::kCounter))
      logger_->set(l_hs_engine_first + i, values[i].value);
  }
}

void PerfBridge::refresh_gauges() { copy_engine_values(/*counters_too=*/false); }

PerfBridge::~PerfBridge() {
  if (engine_) engine_->set_sink(nullptr);
  cct_->get_perfcounters_collection()->remove(logger_);
  delete logger_;
}

void PerfBridge::on_latency(int id, uint64_t ns) {
  logger_->tinc(l_hs_engine_first + id, ceph::make_timespan(ns / 1e9));
}

}  // namespace hybridstore::ceph_adapter
