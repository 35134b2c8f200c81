#include "model_driver.h"

#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <time.h>

#include <chrono>

namespace hybridstore::diskmodel {

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

ModelDriver::ModelDriver(const DiskProfile& profile, uint64_t device_bytes, unsigned spin_us)
    : t0_(monotonic_ns()), spin_ns_(spin_us * 1000ull), model_(profile, device_bytes) {}

void ModelDriver::note_late(uint64_t now, uint64_t t) {
  const uint64_t late = now > t ? now - t : 0;
  late_sum_ns_ += late;
  late_max_ns_ = std::max(late_max_ns_, late);
  ++late_count_;
  static const uint64_t bounds[] = {10000, 30000, 100000, 300000, 1000000, 3000000, 10000000};
  size_t b = 0;
  while (b < 7 && late >= bounds[b]) ++b;
  ++late_hist_[b];
}

ModelDriver::~ModelDriver() { stop(); }

void ModelDriver::start() {
  // The actuator takes no signals: the FUSE loop's main thread does.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  actuator_ = std::thread([this] { run(); });
  for (int i = 0; i < 2; ++i) deliverers_.emplace_back([this] { deliver(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void ModelDriver::stop() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  deliver_cv_.notify_all();
  if (actuator_.joinable()) actuator_.join();
  for (auto& t : deliverers_) t.join();
  deliverers_.clear();
  std::vector<ModelWaiter*> left;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (auto& [w, t] : to_deliver_) left.push_back(w);
    to_deliver_.clear();
    for (auto& [id, w] : waiters_) left.push_back(w);
    waiters_.clear();
  }
  for (ModelWaiter* w : left) w->model_done();
}

bool ModelDriver::submit(DiskOp op, uint64_t offset, uint64_t len, ModelWaiter* w) {
  bool wake = false, done_now = false;
  {
    std::unique_lock<std::mutex> g(mu_);
    if (stopping_) return true;
    // Stamped under the lock, so arrivals never precede an advance() already made.
    const uint64_t now = monotonic_ns() - t0_;
    const uint64_t c0 = thread_cpu_ns();
    const uint64_t id = next_id_++;
    done_now = model_.submit(DiskRequest{id, op, offset, len}, now);
    if (!done_now) waiters_[id] = w;
    model_cpu_ns_ += thread_cpu_ns() - c0;
    ++model_calls_;
    ++submits_;
    // Wake the actuator only when this request moved its next event earlier
    // than the deadline it sleeps on (a write absorbed by the cache gives an
    // idle actuator a destage to do; a read behind 15 others changes nothing).
    wake = model_.next_event() < deadline_;
  }
  if (wake) cv_.notify_one();
  return done_now;
}

void ModelDriver::run() {
  // Deadlines a few microseconds apart must not be merged by the kernel's
  // default 50 us timer slack.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  pthread_setname_np(pthread_self(), "diskmodel-act");
  std::vector<DiskCompletion> done;
  std::vector<ModelWaiter*> inline_done;
  std::unique_lock<std::mutex> g(mu_);
  deadline_ = 0;
  while (!stopping_) {
    const uint64_t now = monotonic_ns() - t0_;
    done.clear();
    const uint64_t c0 = thread_cpu_ns();
    const uint64_t next = model_.advance(now, &done);
    size_t handed = 0;
    inline_done.clear();
    // A lone small reply costs less than waking a delivery thread; a batch
    // would hold the actuator past its next deadline.
    const bool few = done.size() <= 2;
    for (const auto& c : done) {
      auto it = waiters_.find(c.id);
      if (it == waiters_.end()) continue;
      if (few && it->second->light()) {
        inline_done.push_back(it->second);
        note_late(now, c.time_ns);
      } else {
        to_deliver_.emplace_back(it->second, c.time_ns);
        ++handed;
      }
      waiters_.erase(it);
    }
    model_cpu_ns_ += thread_cpu_ns() - c0;
    ++model_calls_;
    if (handed) deliver_cv_.notify_one();
    if (!inline_done.empty()) {
      g.unlock();
      for (ModelWaiter* w : inline_done) w->model_done();
      g.lock();
      continue;  // time went on while replying: look again before sleeping
    }
    deadline_ = next;
    ++wakeups_;
    if (next == DiskModelQueue::kNever) {
      cv_.wait(g);
    } else if (spin_ns_ && next <= now + spin_ns_) {
      g.unlock();
      while (monotonic_ns() - t0_ < next) {
      }
      g.lock();
    } else {
      // steady_clock is CLOCK_MONOTONIC; libstdc++ waits with
      // pthread_cond_clockwait on that clock and an absolute time.
      const uint64_t wake = next - (spin_ns_ && next > spin_ns_ ? spin_ns_ : 0);
      const auto at = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(t0_ + wake));
      cv_.wait_until(g, at);
    }
    deadline_ = 0;  // awake: submits need not notify
  }
  actuator_cpu_ns_ = thread_cpu_ns();
}

void ModelDriver::deliver() {
  pthread_setname_np(pthread_self(), "diskmodel-reply");
  std::vector<std::pair<ModelWaiter*, uint64_t>> batch;
  std::unique_lock<std::mutex> g(mu_);
  while (!stopping_) {
    if (to_deliver_.empty()) {
      deliver_cv_.wait(g);
      continue;
    }
    // Take a share, leaving the rest to the other thread.
    size_t take = std::max<size_t>(1, to_deliver_.size() / 2);
    batch.assign(to_deliver_.begin(), to_deliver_.begin() + static_cast<std::ptrdiff_t>(take));
    to_deliver_.erase(to_deliver_.begin(), to_deliver_.begin() + static_cast<std::ptrdiff_t>(take));
    if (!to_deliver_.empty()) deliver_cv_.notify_one();
    const uint64_t now = monotonic_ns() - t0_;
    for (auto& [w, t] : batch) note_late(now, t);
    g.unlock();
    for (auto& [w, t] : batch) w->model_done();
    g.lock();
  }
}

uint64_t ModelDriver::actuator_cpu() const {
  if (!actuator_.joinable()) return actuator_cpu_ns_.load();
  clockid_t cid;
  timespec ts;
  if (pthread_getcpuclockid(const_cast<std::thread&>(actuator_).native_handle(), &cid) != 0 ||
      clock_gettime(cid, &ts) != 0)
    return 0;
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

nlohmann::json ModelDriver::stats() const {
  using nlohmann::json;
  std::lock_guard<std::mutex> g(mu_);
  const DiskModelStats& s = model_.stats();
  const uint64_t elapsed = monotonic_ns() - t0_;
  json ops = json::object();
  uint64_t total = 0;
  for (int i = 0; i < kDiskOps; ++i) {
    const DiskOpStats& o = s.ops[i];
    total += o.count;
    ops[disk_op_name(static_cast<DiskOp>(i))] = {
        {"count", o.count},
        {"bytes", o.bytes},
        {"on_arrival", o.on_arrival},
        {"service_ns", o.service_ns},
        {"mean_latency_us", o.count ? o.latency_ns / 1e3 / static_cast<double>(o.count) : 0.0},
        {"max_latency_us", o.max_latency_ns / 1e3},
    };
  }
  json qd = json::object();
  for (size_t i = 0; i < s.qd_hist.size(); ++i)
    if (s.qd_hist[i])
      qd[std::to_string(i + 1) + (i + 1 == s.qd_hist.size() ? "+" : "")] = s.qd_hist[i];
  json sizes = json::object();
  for (size_t i = 0; i < s.size_hist.size(); ++i)
    if (s.size_hist[i]) sizes["<=" + std::to_string(1ull << i)] = s.size_hist[i];
  static const char* late_names[] = {"<10us", "<30us", "<100us", "<300us", "<1ms", "<3ms", "<10ms", ">=10ms"};
  json late = json::object();
  for (size_t i = 0; i < late_hist_.size(); ++i) late[late_names[i]] = late_hist_[i];
  const uint64_t reqs = std::max<uint64_t>(1, submits_);
  return json{
      {"requests", total},
      {"ops", ops},
      {"model",
       {{"describe", model_.describe()},
        {"elapsed_ns", elapsed},
        {"busy_ns", s.busy_ns},
        {"busy_share", elapsed ? static_cast<double>(s.busy_ns) / static_cast<double>(elapsed) : 0.0},
        {"media_ops", s.media_ops},
        {"positioning_ns", s.positioning_ns},
        {"seeks", s.seeks},
        {"rotational_only", s.rotational_only},
        {"contiguous", s.contiguous},
        {"destages", s.destages},
        {"destage_bytes", s.destage_bytes},
        {"destage_ns", s.destage_ns},
        {"read_hits", s.read_hits},
        {"cache_waits", s.cache_waits},
        {"dirty_bytes", model_.dirty_bytes()},
        {"max_dirty_bytes", s.max_dirty_bytes},
        {"aged", s.aged},
        {"max_request_bytes", s.max_request_bytes},
        {"queue_depth_at_arrival", qd},
        {"request_sizes", sizes}}},
      {"delivery",
       {{"handed_back", late_count_},
        {"late_mean_us", late_count_ ? late_sum_ns_ / 1e3 / static_cast<double>(late_count_) : 0.0},
        {"late_max_us", late_max_ns_ / 1e3},
        {"late_histogram", late},
        {"actuator_sleeps", wakeups_}}},
      {"model_cpu",
       {{"ns", model_cpu_ns_},
        {"calls", model_calls_},
        {"ns_per_request", static_cast<double>(model_cpu_ns_) / static_cast<double>(reqs)},
        {"actuator_thread_ns", actuator_cpu()}}},
  };
}

}  // namespace hybridstore::diskmodel
