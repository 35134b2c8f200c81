// The checkpointer of docs/small-writes.md 6.1. A transaction whose change
// to an object the commit journal's onode deltas carry leaves the object's
// onode dirty: in the cache (pinned) and in the ring, not in RocksDB. The
// checkpointer writes dirty onodes into RocksDB, under their collection's
// lock taken for 32 of them at a time, and then lets the ring's tail pass
// the records whose deltas RocksDB now holds (the kClean hold), with one
// synced RocksDB write per round.
//
// Its writes go to RocksDB directly, not through the committer: a round
// must free ring space even when the committer waits for ring space. It
// writes each object's last committed onode (an unacknowledged change must
// never reach RocksDB ahead of its record); an object with a put not yet
// committed is left for the next round (the put's batch could land after
// the checkpoint's write and must not be overtaken by an older onode).
//
// Rounds run on its own thread (hs-onode-ckpt): every period while the
// ring has records past the last round, at once when the ring's needed
// span passes half of it or dirty onodes pass half their bound; and on
// demand (umount, fsck).
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace rocksdb {
class DB;
}  // namespace rocksdb

namespace hybridstore {

class CollectionTable;
class CommitJournal;
class KvCommitter;
class OnodeStore;
struct StorePerf;

class OnodeCheckpointer {
 public:
  struct Options {
    std::chrono::milliseconds period{1000};  // hybridstore_small_write_checkpoint_ms
    size_t dirty_max = 65536;                // hybridstore_small_write_dirty_max
    uint64_t dirty_bytes_max = 64ull << 20;  // hybridstore_small_write_dirty_bytes
  };
  // `perf` (may be null) gets the rounds' counters (small_write_ckpt_*).
  OnodeCheckpointer(rocksdb::DB* db, OnodeStore* onodes, CollectionTable* colls, KvCommitter* committer,
                    CommitJournal* journal, const Options& opts, StorePerf* perf = nullptr);
  ~OnodeCheckpointer();
  OnodeCheckpointer(const OnodeCheckpointer&) = delete;
  OnodeCheckpointer& operator=(const OnodeCheckpointer&) = delete;

  void start();
  // Runs a last round (unless the store failed) and joins the thread.
  void stop();
  // One round now: 0, or -errno (the store has failed then).
  int checkpoint();
  // Something may be due (the ring wants room, dirty onodes grew).
  void wake();
  // Before a transaction: waits while dirty onodes exceed their bounds or
  // the ring's needed span exceeds three quarters of it, so that the
  // records a round needs are never behind a full ring.
  void throttle();

  struct Stats {
    uint64_t rounds = 0;
    uint64_t onodes = 0;     // dirty onodes written
    uint64_t postponed = 0;  // left for a later round (a put not committed)
    uint64_t holds = 0;      // collection lock holds, 32 onodes at most each
  };
  Stats stats() const;

 private:
  void loop();
  bool due() const;
  bool dirty_over() const;  // past either bound on dirty onodes

  rocksdb::DB* db_;
  OnodeStore* onodes_;
  CollectionTable* colls_;
  KvCommitter* committer_;
  CommitJournal* journal_;
  const Options opts_;
  StorePerf* perf_;

  std::mutex round_mutex_;  // one round at a time
  uint64_t last_round_seq_ = 0;  // the committer's last number at the last round (round_mutex_)
  uint64_t last_clean_ = 0;      // the kClean hold's last value, in the committer's numbers
  mutable std::mutex mutex_;
  std::condition_variable cv_;       // wake / stop
  std::condition_variable done_cv_;  // a round ended (throttle)
  bool stopping_ = false;
  bool woken_ = false;
  Stats stats_;
  std::thread thread_;
};

}  // namespace hybridstore
