#include "hscommon/perf_counters.h"

#include <chrono>

namespace hybridstore {

namespace {
int bucket_of(uint64_t ns) {
  int b = ns == 0 ? 0 : 63 - __builtin_clzll(ns);
  return b < PerfCounterSet::kHistogramBuckets ? b : PerfCounterSet::kHistogramBuckets - 1;
}
}  // namespace

uint64_t perf_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

PerfCounterSet::PerfCounterSet(std::string group) : group_(std::move(group)) {}

int PerfCounterSet::add(const std::string& name, PerfKind kind, const std::string& description) {
  info_.push_back({name, kind, description});
  slots_.push_back(std::make_unique<Slot>());
  return static_cast<int>(info_.size()) - 1;
}

int PerfCounterSet::find(const std::string& name) const {
  for (size_t i = 0; i < info_.size(); ++i)
    if (info_[i].name == name) return static_cast<int>(i);
  return -1;
}

void PerfCounterSet::inc(int id, uint64_t v) {
  if (id < 0) return;  // a counter not registered (see perf_counters.h)
  slots_[id]->value.fetch_add(v, std::memory_order_relaxed);
  if (auto* s = sink_.load(std::memory_order_acquire)) s->on_inc(id, v);
}

void PerfCounterSet::dec(int id, uint64_t v) {
  if (id < 0) return;
  uint64_t now = slots_[id]->value.fetch_sub(v, std::memory_order_relaxed) - v;
  if (auto* s = sink_.load(std::memory_order_acquire)) s->on_set(id, now);
}

void PerfCounterSet::set(int id, uint64_t v) {
  if (id < 0) return;
  slots_[id]->value.store(v, std::memory_order_relaxed);
  if (auto* s = sink_.load(std::memory_order_acquire)) s->on_set(id, v);
}

void PerfCounterSet::tinc(int id, uint64_t ns) {
  if (id < 0) return;
  Slot& sl = *slots_[id];
  sl.value.fetch_add(1, std::memory_order_relaxed);
  sl.sum_ns.fetch_add(ns, std::memory_order_relaxed);
  sl.histogram[bucket_of(ns)].fetch_add(1, std::memory_order_relaxed);
  if (auto* s = sink_.load(std::memory_order_acquire)) s->on_latency(id, ns);
}

uint64_t PerfCounterSet::get(int id) const { return id < 0 ? 0 : slots_[id]->value.load(std::memory_order_relaxed); }

std::vector<PerfCounterSet::Value> PerfCounterSet::snapshot() const {
  std::vector<Value> out(slots_.size());
  for (size_t i = 0; i < slots_.size(); ++i) {
    out[i].value = slots_[i]->value.load(std::memory_order_relaxed);
    out[i].sum_ns = slots_[i]->sum_ns.load(std::memory_order_relaxed);
    for (int b = 0; b < kHistogramBuckets; ++b)
      out[i].histogram[b] = slots_[i]->histogram[b].load(std::memory_order_relaxed);
  }
  return out;
}

}  // namespace hybridstore
