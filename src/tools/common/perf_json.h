// Perf counters as JSON in the shapes Ceph's admin socket uses, for
// `hybridstore-tool perf dump|schema` and the bench. Header-only (no tool of
// its own); the product library stays JSON-free, the tools write the JSON.
//
//   dump:   {"hybridstore": {"txc": 12, "commit_lat": {"avgcount": 12, "sum": 0.03, "avgtime": 0.0025}}}
//   schema: {"hybridstore": {"txc": {"type": 10, "metric_type": "counter", "value_type": "integer",
//                                    "description": "...", "nick": "", "priority": 5, "units": "none"}}}
// The type numbers are Ceph's perfcounter_type_d bits (TIME 1, U64 2,
// LONGRUNAVG 4, COUNTER 8), so tools that read Ceph's schema read these.
#pragma once
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "hscommon/perf_counters.h"

namespace hybridstore::tools {

inline nlohmann::json perf_latency_json(uint64_t count, uint64_t sum_ns) {
  double sum = static_cast<double>(sum_ns) / 1e9;
  return {{"avgcount", count}, {"sum", sum}, {"avgtime", count ? sum / static_cast<double>(count) : 0.0}};
}

inline nlohmann::json perf_dump_json(const PerfCounterSet& set, const std::vector<PerfCounterSet::Value>& v) {
  nlohmann::json group = nlohmann::json::object();
  const auto& schema = set.schema();
  for (size_t i = 0; i < schema.size() && i < v.size(); ++i) {
    if (schema[i].kind == PerfKind::kLatency)
      group[schema[i].name] = perf_latency_json(v[i].value, v[i].sum_ns);
    else
      group[schema[i].name] = v[i].value;
  }
  return {{set.group(), group}};
}

// after - before: counts and latencies as what happened in between, gauges
// as their signed change.
inline nlohmann::json perf_delta_json(const PerfCounterSet& set, const std::vector<PerfCounterSet::Value>& before,
                                      const std::vector<PerfCounterSet::Value>& after) {
  nlohmann::json group = nlohmann::json::object();
  const auto& schema = set.schema();
  for (size_t i = 0; i < schema.size() && i < before.size() && i < after.size(); ++i) {
    const auto& b = before[i];
    const auto& a = after[i];
    switch (schema[i].kind) {
      case PerfKind::kLatency:
        group[schema[i].name] = perf_latency_json(a.value - b.value, a.sum_ns - b.sum_ns);
        break;
      case PerfKind::kGauge:
        group[schema[i].name] = static_cast<int64_t>(a.value) - static_cast<int64_t>(b.value);
        break;
      case PerfKind::kCounter:
        group[schema[i].name] = a.value - b.value;
        break;
    }
  }
  return {{set.group(), group}};
}

inline nlohmann::json perf_schema_json(const PerfCounterSet& set) {
  nlohmann::json group = nlohmann::json::object();
  for (const auto& c : set.schema()) {
    nlohmann::json d{{"description", c.description}, {"nick", ""}, {"units", "none"}};
    switch (c.kind) {
      case PerfKind::kCounter:
        d["type"] = 10;  // U64 | COUNTER
        d["metric_type"] = "counter";
        d["value_type"] = "integer";
        d["priority"] = 5;
        break;
      case PerfKind::kGauge:
        d["type"] = 2;  // U64
        d["metric_type"] = "gauge";
        d["value_type"] = "integer";
        d["priority"] = 5;
        break;
      case PerfKind::kLatency:
        d["type"] = 5;  // TIME | LONGRUNAVG
        d["metric_type"] = "gauge";
        d["value_type"] = "real-integer-pair";
        d["priority"] = 5;
        break;
    }
    group[c.name] = d;
  }
  return {{set.group(), group}};
}

// Latency histograms (log2 buckets of nanoseconds, bucket i holds [2^i,
// 2^(i+1)) ns) of the difference after - before, latencies only.
inline nlohmann::json perf_histogram_delta_json(const PerfCounterSet& set,
                                                const std::vector<PerfCounterSet::Value>& before,
                                                const std::vector<PerfCounterSet::Value>& after) {
  nlohmann::json out = nlohmann::json::object();
  const auto& schema = set.schema();
  for (size_t i = 0; i < schema.size() && i < before.size() && i < after.size(); ++i) {
    if (schema[i].kind != PerfKind::kLatency || after[i].value == before[i].value) continue;
    nlohmann::json b = nlohmann::json::array();
    for (int k = 0; k < PerfCounterSet::kHistogramBuckets; ++k) b.push_back(after[i].histogram[k] - before[i].histogram[k]);
    out[schema[i].name] = b;
  }
  return out;
}

}  // namespace hybridstore::tools
