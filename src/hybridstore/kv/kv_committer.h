// Group commit: one thread makes queued transactions durable together.
//
// Submitters hand over a prepared RocksDB batch (their data is already on the
// devices). The committer takes everything queued, flushes each device that
// was written since its last flush, writes the batches in queue order with a
// single WAL sync for the whole group, then releases space the transactions
// freed and hands their on_commit callbacks to a finisher thread (FIFO, so
// callbacks of one collection run in submission order). Sixteen concurrent
// submitters therefore share one fdatasync and one RocksDB sync.
//
// With a commit journal (commit_journal.h) the group's batches go to RocksDB
// without a sync and one record of them to the journal, written and flushed
// by one of `lanes` threads; the committer meanwhile takes the next group, so
// up to `lanes` groups are in flight at once and their device flushes
// overlap. Groups complete strictly in queue order whatever order their
// flushes finish in: a group is acknowledged only once it and every group
// before it is durable, which is what lets mount replay a prefix.
//
// Sequence numbers are assigned at submission, in queue order; a transaction
// is durable once committed_seq() reaches its number. A failed device flush or
// RocksDB write makes the error sticky: the store stops accepting
// transactions, and nothing queued after the failure is acknowledged.
#pragma once
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/merge_operator.h>
#include <rocksdb/write_batch.h>

#include "hscommon/perf_counters.h"
#include "hybridstore/format/onode.h"
#include "hsio/block_device.h"
#include "hybridstore/kv/commit_journal.h"

namespace hybridstore {

// Counts completed writes per device, so the committer flushes only devices
// that saw writes since their last flush.
class WriteTracker {
 public:
  void note_write(Tier tier) { written_[tier].fetch_add(1, std::memory_order_release); }
  uint64_t written(Tier tier) const { return written_[tier].load(std::memory_order_acquire); }

 private:
  PerTier<std::atomic<uint64_t>> written_;
};

// Device writes a transaction started without waiting for them
// (BlockDevice::write_many_async); its commit waits for them before the
// flush that makes them durable. Holds the buffers they write from.
class PendingWrites {
 public:
  explicit PendingWrites(WriteTracker* tracker) : tracker_(tracker) {}
  // Before each batch is started.
  void add() {
    std::lock_guard<std::mutex> l(mu_);
    ++outstanding_;
  }
  // A batch to device `tier` is done (r: 0 or -errno).
  void finish(Tier tier, int r);
  // Blocks until every batch is done; 0, or the first error.
  int wait();
  std::vector<AlignedBuffer> buffers;

 private:
  WriteTracker* tracker_;
  std::mutex mu_;
  std::condition_variable cv_;
  int outstanding_ = 0;
  int err_ = 0;
};

struct CommitWork {
  std::unique_ptr<rocksdb::WriteBatch> batch;
  // Writes to wait for before the group's device flush (null: none; the
  // others completed before the work was queued).
  std::shared_ptr<PendingWrites> writes;
  std::vector<std::function<void()>> on_commit;
  // Runs on the committer thread once the group is durable, before callbacks
  // (returns freed space to the allocators), with the transaction's commit
  // journal number (0 without a journal).
  std::function<void(uint64_t journal_seq)> after_commit;
  // Runs next, with the transaction's own number (the dirty onodes'
  // committed changes, docs/small-writes.md 6.1).
  std::function<void(uint64_t seq)> on_committed;
  // Small overwrites whose data rides in the journal record instead of a D
  // record (hybridstore_small_write_journal=data, docs/small-writes.md
  // step 5): RING_DATA deltas, their first_block counted in `ring_data`,
  // whose buffers are whole 4 KiB blocks in the deltas' order; and the
  // transaction's onode deltas (format 7, step 6), which name no block.
  std::vector<JournalDelta> ring_deltas;
  std::vector<std::shared_ptr<const std::string>> ring_data;
  uint64_t journal_seq = 0;  // set by the committer
  uint64_t seq = 0;
  uint64_t start_ns = 0;  // when the transaction entered the store (commit_lat)
  uint64_t submit_ns = 0;  // set by submit()
};

// An upper bound of what `w` adds to a version-2 record: its batch with the
// journal number the committer puts into it, its entry, deltas and data.
uint64_t record_bytes_of(const CommitWork& w);

// The representation of one WriteBatch holding every record of `parts`, in
// order (for WriteBatch(const std::string&)).
std::string join_write_batches(const std::vector<const rocksdb::WriteBatch*>& parts);

// One WriteBatch with the effect of applying `parts` in order, each key
// written once where it can be: a Put or Delete drops the key's earlier
// records, and a Merge that follows a Merge of the same key is folded into
// it with `merge`'s PartialMerge. Records of different keys may change
// order; the batch must therefore be applied as one write. Returns false
// (and leaves `out` unspecified) when a part holds anything else (other
// column families, single or range deletes, log data), or when a partial
// merge fails: the caller then joins the parts as they are.
bool collapse_write_batches(const std::vector<const rocksdb::WriteBatch*>& parts,
                            const rocksdb::MergeOperator* merge, rocksdb::WriteBatch* out);

// Counter ids the committer updates; without a set it counts nothing.
struct CommitterPerf {
  PerfCounterSet* set = nullptr;
  int txc = -1, groups = -1, commit_lat = -1, kv_queued_lat = -1, kv_committing_lat = -1;
  int kv_flush_lat = -1, kv_commit_lat = -1, kv_sync_lat = -1;
};

struct CommitterStats {
  uint64_t transactions = 0;
  uint64_t groups = 0;
  uint64_t device_flushes = 0;
  uint64_t journal_records = 0;      // groups made durable by one journal write
  uint64_t journal_checkpoints = 0;  // RocksDB WAL syncs that freed ring space (the checkpointer's, and large groups')
  uint64_t commit_latency_ns_total = 0;
};

class KvCommitter {
 public:
  static constexpr int kMaxLanes = 16;
  KvCommitter(rocksdb::DB* db, PerTier<BlockDevice*> devices, WriteTracker* tracker,
              size_t max_queued);
  ~KvCommitter();

  // Before start().
  void set_perf(const CommitterPerf& p) { perf_ = p; }
  // Before start(): commit through `journal` (not owned) with up to `lanes`
  // groups in flight; journal numbers start at `next_journal_seq` (from
  // CommitJournal::replay). Without it every group ends with a RocksDB sync.
  void set_journal(CommitJournal* journal, uint64_t next_journal_seq, int lanes);
  // Before start(): free ring space with a RocksDB sync on the commit path,
  // by the group that needs it, as before the checkpointer (A/B runs).
  void set_inline_checkpoints(bool on) { inline_checkpoints_ = on; }
  // The most a transaction may carry in the journal record, batch and ring
  // data together (0: it may carry no ring data: no journal).
  uint64_t ring_work_room() const;
  // The deferred writer applied every ring piece of transactions up to
  // `journal_seq`: writes `b` (its deletes and applied number) with the
  // ring's tail mark for that, synced, then lets the tail move past them.
  // One at a time with the other syncs that move the tail. 0 or -EIO.
  int sync_applied_ring_data(rocksdb::WriteBatch* b, uint64_t journal_seq, std::string* failure) {
    return sync_tail_hold(CommitJournal::TailHold::kApplied, b, journal_seq, failure);
  }
  // The same for any hold of the ring's tail (the onode checkpointer's
  // kClean): `b` with the tail's mark, synced, then the hold moves.
  int sync_tail_hold(CommitJournal::TailHold h, rocksdb::WriteBatch* b, uint64_t journal_seq, std::string* failure);
  // The journal number transaction `seq` gets (or got): numbers are given
  // in queue order, one per transaction, from set_journal's first one.
  uint64_t journal_seq_of(uint64_t seq) const { return seq + journal_base_; }
  void start();
  // Drains the queue and joins the threads.
  void stop();

  // Queues work; blocks while max_queued transactions are waiting. Returns the
  // sequence number, or 0 when the store has failed (see error()).
  // `caller_waits`: the caller calls wait_committed(seq) next, which may
  // then commit the group itself instead of waking the committer thread.
  uint64_t submit(CommitWork work, bool caller_waits = false);
  // Blocks until `seq` is durable; returns 0, or the sticky error.
  int wait_committed(uint64_t seq);
  uint64_t committed_seq() const { return committed_.load(std::memory_order_acquire); }
  uint64_t last_seq() const;
  // Blocks until every callback handed to the finisher so far has run.
  void drain_callbacks();
  // False when `seq` is already durable (cb is dropped); otherwise cb runs on
  // the finisher once it is, after the on_commit callbacks of its group.
  bool call_when_committed(uint64_t seq, std::function<void()> cb);
  int error() const { return error_.load(); }
  // Makes the error sticky as a failed commit does. For the synced RocksDB
  // writes the store makes outside the committer (omap id reservation): once
  // RocksDB failed a write, nothing more may be acknowledged or written.
  void fail(int err, const std::string& msg);
  std::string error_message() const;
  CommitterStats stats() const;

 private:
  // A group between the committer and its acknowledgement.
  struct Flight {
    std::deque<CommitWork> group;
    std::string record;  // journal record still to write; empty when durable already
    uint64_t pos = 0;
    uint64_t journal_last = 0;  // the journal number of its last transaction
    bool claimed = false;
    bool record_written = false, kv_written = false;
    // The group carries ring data or onode deltas, which only its record
    // holds: its batches may reach RocksDB only after the record is
    // written. RocksDB's WAL reaches its file whenever anyone syncs it, or
    // its buffer fills, and a batch there without its record would come
    // back after a crash without the rest of its transaction.
    bool record_first = false;
    bool done = false;  // both: the record durable and the batches in RocksDB
    int err = 0;
    uint64_t flushes = 0;
    uint64_t t0_ns = 0, flushed_ns = 0;
    std::chrono::steady_clock::time_point t0;
  };
  void commit_loop();
  void process_group(const std::shared_ptr<Flight>& f);
  bool flush_written_data(Flight& f);
  bool write_metadata(Flight& f, bool* overlap);
  bool write_record(Flight& f, bool ring, bool sync_now, bool checkpoint, bool* overlap);
  bool write_batches(Flight& f);
  // Writes, in queue order, the batches of the flights in flight that may
  // go to RocksDB now (all before them written, their record written when
  // record_first), then acknowledges what is done. From the committer and
  // from the lanes.
  void write_ready_batches();
  // Until every flight in flight has its batches in RocksDB: before this
  // thread writes a group's batches itself, or syncs the whole ring.
  bool wait_earlier_batches();
  void lane_loop();
  void checkpoint_loop();
  // The RocksDB WAL sync that lets the ring's tail move: the tail's mark,
  // FlushWAL(true), then the tail moved (or, `whole_ring`, every record
  // freed: the inline checkpoint). False after a failure.
  bool sync_rocksdb_for_ring(bool whole_ring);
  // Moves the queue's front into f's group: all of it, but when it holds
  // ring data only as much as one record carries.
  void take_group_locked(Flight* f);
  // Acknowledges, in queue order, every group at the front that is durable.
  void complete_ready();
  void acknowledge(Flight& f);
  void finisher_loop();

  rocksdb::DB* db_;
  std::shared_ptr<rocksdb::MergeOperator> merge_op_;  // folds a group's merges of one key
  PerTier<BlockDevice*> devices_;
  WriteTracker* tracker_;
  PerTier<uint64_t> flushed_;  // tracker counts covered by the last flush
  const size_t max_queued_;

  mutable std::mutex mutex_;
  std::mutex kv_write_mutex_;             // one write_ready_batches at a time
  std::condition_variable kv_written_cv_;  // a flight's batches went to RocksDB
  std::condition_variable queue_cv_;      // work arrived / stop
  std::condition_variable space_cv_;      // queue has room
  // wait_committed() callers, by the sequence each waits for: a group wakes
  // only the threads it made durable, not every waiter (with 16 writers and
  // groups of a few transactions, waking all of them cost more CPU than the
  // commit).
  // Shared, so that a group can signal its waiters after releasing mutex_
  // (a waiter signalled under it would wake only to block on it again)
  // even if one of them has already returned.
  struct SyncWaiter {
    std::condition_variable cv;
    bool woken = false;
  };
  std::multimap<uint64_t, std::shared_ptr<SyncWaiter>> sync_waiters_;
  std::deque<CommitWork> queue_;
  std::deque<std::shared_ptr<Flight>> flights_;  // queue order; guarded by mutex_
  std::condition_variable lane_cv_;              // a record to write / lanes stop
  bool lanes_stopping_ = false;
  bool busy_ = false;  // a thread is in process_group (groups are processed in queue order)
  std::mutex complete_mutex_;  // one thread acknowledges at a time (taken before mutex_)
  CommitJournal* journal_ = nullptr;
  uint64_t next_journal_seq_ = 1;  // committer thread only
  uint64_t journal_base_ = 0;      // journal number minus submission number (set_journal)
  size_t ring_works_queued_ = 0;   // works in queue_ with ring data (mutex_)
  int lanes_ = 1;
  std::vector<std::thread> lane_threads_;
  std::thread checkpoint_thread_;  // hs-ckpt: RocksDB WAL syncs that move the ring's tail
  bool checkpoint_stopping_ = false;
  bool inline_checkpoints_ = false;
  // Syncs that move the ring's tail run one at a time, in the order of the
  // tails they mark: RocksDB must never end up with a mark older than a
  // tail already passed (the checkpointer and a group too large for a
  // record both sync).
  std::mutex ring_sync_mutex_;
  std::multimap<uint64_t, std::function<void()>> waiters_;  // call_when_committed
  uint64_t next_seq_ = 1;
  bool stopping_ = false;
  std::atomic<uint64_t> committed_{0};
  std::atomic<int> error_{0};
  std::string error_message_;
  CommitterStats stats_;
  CommitterPerf perf_;

  std::mutex fin_mutex_;
  std::condition_variable fin_cv_;
  std::condition_variable fin_idle_cv_;
  std::deque<std::function<void()>> fin_queue_;
  bool fin_busy_ = false;
  bool fin_stopping_ = false;

  std::thread commit_thread_;
  std::thread finisher_thread_;
};

}  // namespace hybridstore
