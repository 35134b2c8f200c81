#include "hybridstore/kv/kv_committer.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "hybridstore/common/log.h"

namespace hybridstore {

KvCommitter::KvCommitter(rocksdb::DB* db, std::array<BlockDevice*, kNumTiers> devices,
                         WriteTracker* tracker, size_t max_queued)
    : db_(db), devices_(devices), tracker_(tracker), max_queued_(max_queued) {}

KvCommitter::~KvCommitter() { stop(); }

void KvCommitter::start() {
  commit_thread_ = std::thread([this] { commit_loop(); });
  finisher_thread_ = std::thread([this] { finisher_loop(); });
}

void KvCommitter::stop() {
  {
    std::lock_guard<std::mutex> l(mutex_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  space_cv_.notify_all();
  if (commit_thread_.joinable()) commit_thread_.join();
  {
    std::lock_guard<std::mutex> l(fin_mutex_);
    fin_stopping_ = true;
  }
  fin_cv_.notify_all();
  if (finisher_thread_.joinable()) finisher_thread_.join();
}

uint64_t KvCommitter::submit(CommitWork work) {
  std::unique_lock<std::mutex> l(mutex_);
  space_cv_.wait(l, [&] { return queue_.size() < max_queued_ || stopping_ || error_; });
  if (error_ || stopping_) return 0;
  work.seq = next_seq_++;
  if (perf_.set) work.submit_ns = perf_now_ns();
  uint64_t seq = work.seq;
  queue_.push_back(std::move(work));
  queue_cv_.notify_one();
  return seq;
}

int KvCommitter::wait_committed(uint64_t seq) {
  std::unique_lock<std::mutex> l(mutex_);
  committed_cv_.wait(l, [&] { return committed_.load() >= seq || error_; });
  if (committed_.load() >= seq) return 0;
  return error_;
}

bool KvCommitter::call_when_committed(uint64_t seq, std::function<void()> cb) {
  std::lock_guard<std::mutex> l(mutex_);
  if (committed_.load(std::memory_order_acquire) >= seq) return false;
  waiters_.emplace(seq, std::move(cb));
  return true;
}

uint64_t KvCommitter::last_seq() const {
  std::lock_guard<std::mutex> l(mutex_);
  return next_seq_ - 1;
}

std::string KvCommitter::error_message() const {
  std::lock_guard<std::mutex> l(mutex_);
  return error_message_;
}

CommitterStats KvCommitter::stats() const {
  std::lock_guard<std::mutex> l(mutex_);
  return stats_;
}

void KvCommitter::fail(int err, const std::string& msg) {
  std::lock_guard<std::mutex> l(mutex_);
  if (!error_) {
    error_ = err;
    error_message_ = msg;
    HS_ERROR("{}; the store is now read-only and acknowledges no further transactions", msg);
  }
  committed_cv_.notify_all();
  space_cv_.notify_all();
}

void KvCommitter::commit_loop() {
  for (;;) {
    std::deque<CommitWork> group;
    {
      std::unique_lock<std::mutex> l(mutex_);
      queue_cv_.wait(l, [&] { return !queue_.empty() || stopping_; });
      if (queue_.empty() && stopping_) return;
      group.swap(queue_);
    }
    space_cv_.notify_all();
    if (error_) continue;  // never acknowledge anything after a failure
    auto t0 = std::chrono::steady_clock::now();
    const uint64_t t0_ns = perf_.set ? perf_now_ns() : 0;
    if (perf_.set)
      for (const auto& w : group) perf_.set->tinc(perf_.kv_queued_lat, t0_ns - std::min(t0_ns, w.submit_ns));

    // Data first: every write these transactions made completed before they
    // were queued, so one flush per written device covers them all.
    uint64_t flushes = 0;
    bool ok = true;
    for (int t = 0; t < kNumTiers && ok; ++t) {
      uint64_t w = tracker_->written(t);
      if (w != flushed_[t] && devices_[t]) {
        int r = devices_[t]->flush();
        ++flushes;
        if (r < 0) {
          fail(r, fmt::format("flush of {} device failed: {}", tier_name(static_cast<Tier>(t)),
                              strerror(-r)));
          ok = false;
        } else {
          flushed_[t] = w;
        }
      }
    }
    const uint64_t flushed_ns = perf_.set ? perf_now_ns() : 0;
    // Then metadata: all batches, the last one synced (which syncs the WAL
    // records of the earlier ones too).
    for (size_t i = 0; i < group.size() && ok; ++i) {
      rocksdb::WriteOptions wo;
      wo.sync = (i + 1 == group.size());
      rocksdb::Status s = db_->Write(wo, group[i].batch.get());
      if (!s.ok()) {
        fail(-EIO, "RocksDB commit failed: " + s.ToString());
        ok = false;
      }
    }
    if (!ok) continue;
    if (perf_.set) {
      uint64_t now = perf_now_ns();
      perf_.set->tinc(perf_.kv_flush_lat, flushed_ns - t0_ns);
      perf_.set->tinc(perf_.kv_commit_lat, now - flushed_ns);
      perf_.set->tinc(perf_.kv_sync_lat, now - t0_ns);
    }

    std::vector<std::function<void()>> callbacks;
    for (auto& w : group) {
      if (w.after_commit) w.after_commit();
      for (auto& cb : w.on_commit) callbacks.push_back(std::move(cb));
    }
    // Callbacks reach the finisher before committed_ moves, so whoever sees
    // the commit and then drains the finisher (flush) also sees them run.
    if (!callbacks.empty()) {
      std::lock_guard<std::mutex> l(fin_mutex_);
      for (auto& cb : callbacks) fin_queue_.push_back(std::move(cb));
      fin_cv_.notify_one();
    }
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
                  .count();
    std::vector<std::function<void()>> woken;
    {
      std::lock_guard<std::mutex> l(mutex_);
      committed_.store(group.back().seq, std::memory_order_release);
      auto end = waiters_.upper_bound(group.back().seq);
      for (auto it = waiters_.begin(); it != end; ++it) woken.push_back(std::move(it->second));
      waiters_.erase(waiters_.begin(), end);
      stats_.transactions += group.size();
      stats_.groups += 1;
      stats_.device_flushes += flushes;
      stats_.commit_latency_ns_total += static_cast<uint64_t>(ns);
    }
    // After the group's on_commit callbacks, which are already queued.
    if (!woken.empty()) {
      std::lock_guard<std::mutex> l(fin_mutex_);
      for (auto& cb : woken) fin_queue_.push_back(std::move(cb));
      fin_cv_.notify_one();
    }
    committed_cv_.notify_all();
    if (perf_.set) {
      uint64_t now = perf_now_ns();
      perf_.set->inc(perf_.txc, group.size());
      perf_.set->inc(perf_.groups);
      for (const auto& w : group) {
        perf_.set->tinc(perf_.kv_committing_lat, now - t0_ns);
        if (w.start_ns) perf_.set->tinc(perf_.commit_lat, now - std::min(now, w.start_ns));
      }
    }
  }
}

void KvCommitter::finisher_loop() {
  std::unique_lock<std::mutex> l(fin_mutex_);
  for (;;) {
    fin_cv_.wait(l, [&] { return !fin_queue_.empty() || fin_stopping_; });
    if (fin_queue_.empty() && fin_stopping_) return;
    auto cb = std::move(fin_queue_.front());
    fin_queue_.pop_front();
    fin_busy_ = true;
    l.unlock();
    cb();
    l.lock();
    fin_busy_ = false;
    if (fin_queue_.empty()) fin_idle_cv_.notify_all();
  }
}

void KvCommitter::drain_callbacks() {
  std::unique_lock<std::mutex> l(fin_mutex_);
  fin_idle_cv_.wait(l, [&] { return (fin_queue_.empty() && !fin_busy_) || fin_stopping_; });
}

}  // namespace hybridstore
