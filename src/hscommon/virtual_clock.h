// Modelled time, in nanoseconds since the model started. The NAND model
// charges each chip operation to one; the test-only device models share one
// across a store's devices, so that a run measures the time the modelled
// devices would have taken rather than the time this machine took.
#pragma once
#include <atomic>
#include <cstdint>

namespace hybridstore {

// Relaxed atomics: callers that need an order between devices (the serial
// model) already take the device model's mutex; the clock only has to lose
// no advance when two threads charge it at once.
class VirtualClock {
 public:
  int64_t now_ns() const { return ns_.load(std::memory_order_relaxed); }
  void advance(int64_t ns) { ns_.fetch_add(ns, std::memory_order_relaxed); }
  // Moves the clock forward to `t` if it is behind (the device was idle until t).
  void advance_to(int64_t t) {
    int64_t now = ns_.load(std::memory_order_relaxed);
    while (t > now && !ns_.compare_exchange_weak(now, t, std::memory_order_relaxed)) {
    }
  }

 private:
  std::atomic<int64_t> ns_{0};
};

}  // namespace hybridstore
