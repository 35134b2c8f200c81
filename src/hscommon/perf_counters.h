// Performance counters: named counts, gauges and latencies an engine
// instance keeps, read as a snapshot (hybridstore-tool perf dump, the bench)
// or forwarded event by event to a sink (the Ceph adapter mirrors them into
// Ceph's PerfCounters, so `ceph daemon osd.N perf dump` shows them).
//
// A set is defined once, before use (add_* at construction); updates are
// lock-free atomics, cheap enough for the transaction path.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hybridstore {

enum class PerfKind {
  kCounter,  // only grows (events, bytes)
  kGauge,    // a current value (bytes in use, queue length)
  kLatency,  // samples: count, sum and a log2 histogram of nanoseconds
};

struct PerfCounterInfo {
  std::string name;
  PerfKind kind;
  std::string description;
};

// Receives every update as it happens.
class PerfSink {
 public:
  virtual ~PerfSink() = default;
  virtual void on_inc(int id, uint64_t v) = 0;
  virtual void on_set(int id, uint64_t v) = 0;
  virtual void on_latency(int id, uint64_t ns) = 0;
};

class PerfCounterSet {
 public:
  static constexpr int kHistogramBuckets = 40;  // bucket i: [2^i, 2^(i+1)) ns; 0 also holds 0
  struct Value {
    uint64_t value = 0;  // counter or gauge; for a latency, the sample count
    uint64_t sum_ns = 0;
    std::array<uint64_t, kHistogramBuckets> histogram{};
  };

  explicit PerfCounterSet(std::string group);
  PerfCounterSet(const PerfCounterSet&) = delete;
  PerfCounterSet& operator=(const PerfCounterSet&) = delete;

  int add(const std::string& name, PerfKind kind, const std::string& description);
  const std::string& group() const { return group_; }
  const std::vector<PerfCounterInfo>& schema() const { return info_; }
  int find(const std::string& name) const;  // -1 when absent

  // An id of -1 stands for a counter the store did not register (a tier
  // beyond the configured count): updates to it are dropped, get() says 0.
  void inc(int id, uint64_t v = 1);
  void dec(int id, uint64_t v = 1);  // gauges
  void set(int id, uint64_t v);      // gauges
  void tinc(int id, uint64_t ns);    // latencies
  uint64_t get(int id) const;

  std::vector<Value> snapshot() const;

  // One sink at a time; nullptr detaches. The sink must outlive its use.
  void set_sink(PerfSink* sink) { sink_.store(sink, std::memory_order_release); }

 private:
  struct Slot {
    std::atomic<uint64_t> value{0};
    std::atomic<uint64_t> sum_ns{0};
    std::array<std::atomic<uint64_t>, kHistogramBuckets> histogram{};
  };
  std::string group_;
  std::vector<PerfCounterInfo> info_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::atomic<PerfSink*> sink_{nullptr};
};

// Steady-clock nanoseconds, for latency samples.
uint64_t perf_now_ns();

}  // namespace hybridstore
