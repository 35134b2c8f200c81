// Runs a DiskModelQueue in real time: requests arrive stamped with the
// monotonic clock, and one actuator thread hands each completion back when
// the clock reaches its modelled time.
//
// The actuator sleeps on an absolute CLOCK_MONOTONIC deadline (a condition
// variable on the steady clock, so that a new arrival that changes the next
// deadline can wake it early). The model decides at model time, not at wake-up
// time, so a late wake-up delays that one delivery and nothing after it: the
// device's timeline does not drift. Replies that copy much data (up to 1 MiB)
// go to two delivery threads, so that the actuator is back on its next
// deadline at once; small ones it makes itself, saving a thread hop. How late
// deliveries were is kept in the stats, so a run can show the sleeping was
// accurate enough.
//
// With spin_us > 0 the actuator sleeps until spin_us before a deadline and
// spins the rest: wake-ups on a busy VM come tens of microseconds late, which
// matters for an SSD's ~100 us requests, at the price of that CPU.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "testing/disk_model_queue.h"

namespace hybridstore::diskmodel {

uint64_t monotonic_ns();
uint64_t thread_cpu_ns();

// What waits for the model's verdict on one request.
class ModelWaiter {
 public:
  virtual ~ModelWaiter() = default;
  // The modelled completion time has come (or the driver is stopping).
  virtual void model_done() = 0;
  // Whether model_done() is quick enough for the actuator to call itself;
  // a reply that copies much data goes to a delivery thread instead.
  virtual bool light() const { return true; }
};

class ModelDriver {
 public:
  ModelDriver(const DiskProfile& profile, uint64_t device_bytes, unsigned spin_us = 0);
  ~ModelDriver();

  // Starts the actuator thread (after any fork: threads do not survive one).
  void start();
  // Hands every outstanding request back at once and joins the thread.
  void stop();

  // true: the request completed on arrival; `w` will not be called.
  bool submit(DiskOp op, uint64_t offset, uint64_t len, ModelWaiter* w);

  nlohmann::json stats() const;
  // CPU time of the actuator thread so far (replies to the kernel included).
  uint64_t actuator_cpu() const;
  const DiskModelQueue& model() const { return model_; }

 private:
  void run();
  void deliver();

  const uint64_t t0_;
  const uint64_t spin_ns_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  DiskModelQueue model_;                               // guarded by mu_
  std::unordered_map<uint64_t, ModelWaiter*> waiters_;  // guarded by mu_
  uint64_t next_id_ = 1;                               // guarded by mu_
  bool stopping_ = false;                              // guarded by mu_
  // What the actuator sleeps until (kNever: the next submit; 0: it is awake
  // and looks at the model before sleeping again). Guarded by mu_.
  uint64_t deadline_ = 0;
  std::thread actuator_;
  std::vector<std::thread> deliverers_;
  std::condition_variable deliver_cv_;
  std::vector<std::pair<ModelWaiter*, uint64_t>> to_deliver_;  // guarded by mu_, with the modelled time
  std::atomic<uint64_t> actuator_cpu_ns_{0};

  // Bookkeeping cost: thread CPU time spent inside the model's calls.
  uint64_t model_cpu_ns_ = 0, model_calls_ = 0;  // guarded by mu_
  uint64_t submits_ = 0;                          // guarded by mu_
  // Delivery lateness: real time of the hand-back minus the modelled time.
  uint64_t late_sum_ns_ = 0, late_max_ns_ = 0, late_count_ = 0;  // guarded by mu_
  std::vector<uint64_t> late_hist_ = std::vector<uint64_t>(8, 0);  // <10us, <30, <100, <300, <1ms, <3, <10, more
  uint64_t wakeups_ = 0;                                          // guarded by mu_
  void note_late(uint64_t now, uint64_t t);                       // with mu_ held
};

}  // namespace hybridstore::diskmodel
