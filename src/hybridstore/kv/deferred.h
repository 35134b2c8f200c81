// Deferred writes: small writes acknowledged through RocksDB, applied to the
// devices later in large sorted batches.
//
// A transaction stages a deferred write by putting a D record (tier, device
// offset, bytes) in its own RocksDB batch; the bytes also enter an in-memory
// overlay so that reads see them at once. Once the transaction commits, the
// applier thread takes committed records in staging order, merges them into
// one image per device range, writes them sorted by offset (adjacent ranges
// merged), flushes the devices, deletes the D records with a synced batch and
// drops them from the overlay. Mount replays every D record left (replay()).
//
// Space freed by a transaction is handed back to the allocator only after
// every deferred write staged before it *onto that space* has been applied
// and its record deleted durably; otherwise a record replayed after a crash
// could land on space that already belongs to someone else.
//
// Held records (the SSD's staged extents, see ssd_sections.h) are not applied
// on their own: they wait until write_region() names the write unit holding
// them, which is then written whole — read, overlaid with every committed
// record in it, written in one aligned I/O. Records smaller than the device's
// I/O alignment are applied by read-modify-write.
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
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/write_batch_base.h>

#include "hscommon/perf_counters.h"
#include "hybridstore/format/onode.h"
#include "hsio/block_device.h"
#include "hybridstore/kv/commit_journal.h"
#include "hybridstore/kv/kv_committer.h"

namespace hybridstore {

struct DeferredOptions {
  uint64_t batch_bytes = 4 << 20;     // apply once this much is committed...
  uint64_t max_delay_ms = 20;         // ...or the oldest committed record is this old
  uint64_t max_pending_bytes = 256 << 20;  // stage() callers wait above this
};

struct DeferredStats {
  uint64_t records_staged = 0;
  uint64_t records_in_ring = 0;  // of those committed: data in the commit journal's record, no D record
  uint64_t records_applied = 0;
  uint64_t bytes_applied = 0;
  uint64_t device_writes = 0;  // after merging adjacent ranges
  uint64_t batches = 0;
  uint64_t records_discarded = 0;  // staged data that died before its unit was written
};

// Counter ids the deferred writer updates; without a set it counts nothing.
struct DeferredPerf {
  PerfCounterSet* set = nullptr;
  int write_ops = -1, write_bytes = -1, ring_ops = -1, queue_bytes = -1, apply_ops = -1, apply_bytes = -1,
      apply_lat = -1;
};

class DeferredWriter {
 public:
  using Release = std::function<void(const PExtent&)>;
  DeferredWriter(rocksdb::DB* db, PerTier<BlockDevice*> devices, WriteTracker* tracker,
                 Release release, DeferredOptions opts);
  ~DeferredWriter();

  // Before start().
  void set_perf(const DeferredPerf& p) { perf_ = p; }
  void start();
  // The store's failure state: `failed` says whether the store already
  // failed (then nothing more is written), `report` fails it.
  void set_store_failure(std::function<int()> failed, std::function<void(int, const std::string&)> report) {
    store_failed_ = std::move(failed);
    report_failure_ = std::move(report);
  }
  // Applies everything committed, then stops the thread.
  // Applies what is committed and ready (unless !write_out: after an I/O
  // error nothing more is written), then ends the worker.
  void stop(bool write_out = true);

  // Blocks while too many bytes are pending (backpressure for submitters).
  void throttle();
  // Stages `data` for (tier, offset): adds its D record to `batch` and makes
  // it visible to reads. Returns the record's sequence number.
  uint64_t stage(rocksdb::WriteBatchBase* batch, Tier tier, uint64_t offset, std::string data,
                 bool held = false);
  // The same, without a D record, when *ring (data to carry in the commit
  // journal's record instead, docs/small-writes.md step 5) and no staged D
  // record overlaps the range (the two kinds land in staging order only
  // when a range never mixes them); *ring then says which it did, and
  // *bytes gets the data the record must carry.
  uint64_t stage_ring(rocksdb::WriteBatchBase* batch, Tier tier, uint64_t offset, std::string data, bool* ring,
                      std::shared_ptr<const std::string>* bytes);
  // The transaction of these ring entries cannot carry them in its record:
  // they become D records in `batch`.
  void record_instead(rocksdb::WriteBatchBase* batch, const std::vector<uint64_t>& seqs);
  // Ring entries on: every applied batch records, in the synced batch that
  // deletes its D records, the staging number up to which every ring entry
  // is applied (Sjournal_applied), through `sync` with the journal number
  // up to which every ring entry's transaction is applied (the ring's tail
  // hold, KvCommitter::sync_applied_ring_data). Before start().
  // `written` gives the journal number up to which the committer wrote its
  // batches: with no ring entry pending, every number up to it is applied
  // as far as ring data goes (an entry staged later commits above it).
  using RingSync = std::function<int(rocksdb::WriteBatch*, uint64_t journal_seq, std::string* failure)>;
  void set_ring_sync(RingSync sync, std::function<uint64_t()> written) {
    ring_sync_ = std::move(sync);
    journal_written_ = std::move(written);
  }
  // The commit journal waits for ring space its ring entries hold: apply
  // what is committed now, whatever the batch size and delay say.
  void ring_room_wanted();
  // The device range [begin, end) of `tier` (aligned) is complete: write it
  // whole once every record in it is committed.
  void write_region(Tier tier, uint64_t begin, uint64_t end);
  // The transaction that staged these failed: forget them.
  void cancel(const std::vector<uint64_t>& seqs);
  // The transaction that staged `seqs` and freed `released` is durable, as
  // commit journal number `journal_seq` (0 without a journal).
  void committed(const std::vector<uint64_t>& seqs, std::vector<PExtent> released, uint64_t journal_seq = 0);

  // Overlay for reads: copies every staged range overlapping
  // [offset, offset+len) of `tier` into `buf` (which holds the device bytes
  // of that range), newest last. Callers take the snapshot before reading the
  // device and patch after (see store/data_reader.cc for why that order).
  struct Snapshot {
    std::vector<std::pair<uint64_t, std::shared_ptr<const std::string>>> pieces;  // offset, bytes
  };
  Snapshot snapshot(Tier tier, uint64_t offset, uint64_t len) const;
  static void patch(const Snapshot& s, uint64_t offset, char* buf, uint64_t len);

  // Applies everything committed so far and waits for it. Held records stay
  // (they are durable and readable; write_region() sends them out) unless
  // `held_too`, for which the caller must have handed out every region.
  int drain(bool held_too = false);
  // Space [offset, offset + len) was freed: held records wholly inside it
  // hold dead data and will never be written out by a region (the allocator
  // may drop a write unit whose blocks all died). They leave now; their
  // records are deleted with the next applied batch, never after a later
  // region over the same space.
  void discard_held(Tier tier, uint64_t offset, uint64_t len);
  // True when no record staged so far, applied or not, no discarded record
  // whose deletion is not yet durable, and no region queued or being written
  // covers any of [offset, offset + len): a write there from now on cannot
  // be overtaken by older data, neither by the applier (a region rewrites
  // what it read of its range) nor by a replay after a crash.
  bool range_quiet(Tier tier, uint64_t offset, uint64_t len) const;
  uint64_t pending_bytes() const;
  DeferredStats stats() const;

  // Space a replay must not write: the KV file system's chunks, device byte
  // ranges (offset, length) of one tier.
  struct Exclude {
    Tier tier = Tier::kSsd;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
  };

  // Mount: writes every D record to its device, flushes, deletes the records.
  // Returns the number replayed, or -EIO with *error on a corrupt record.
  // With `dropped`, records that cannot be decoded or target an invalid
  // range are deleted (and described there) instead of failing the mount.
  // The part of a record inside `exclude` is not written (docs/kvfs.md
  // 2.6: a stale record of space since lent would overwrite kvfs data); the
  // record is deleted all the same, and the drop logged.
  // Ring data the commit journal's replay found (format 6): the pieces
  // staged after `applied` are written too, in staging order among the D
  // records; `also` goes into the synced batch that deletes them.
  // `written` (when set) counts the ring pieces written.
  struct RingReplay {
    const std::vector<CommitJournal::RingWrite>* writes = nullptr;
    uint64_t applied = 0;
    rocksdb::WriteBatch* also = nullptr;
    int* written = nullptr;
  };
  static int replay(rocksdb::DB* db, PerTier<BlockDevice*> devices, std::string* error,
                    std::vector<std::string>* dropped = nullptr, const Exclude* exclude = nullptr,
                    const RingReplay* ring = nullptr);

 private:
  struct Entry {
    Tier tier;
    uint64_t offset;
    std::shared_ptr<const std::string> data;
    bool committed = false;
    bool held = false;
    bool ring = false;          // its data rides in the commit journal, no D record
    uint64_t journal_seq = 0;   // ring entries, once committed
  };
  struct Region {
    Tier tier;
    uint64_t begin, end;
  };
  struct Held {
    uint64_t tag;  // applied once every seq <= tag is applied
    PExtent extent;
  };
  uint64_t stage_locked(rocksdb::WriteBatchBase* batch, Tier tier, uint64_t offset, std::string data, bool held,
                        bool ring, std::shared_ptr<const std::string>* bytes);
  void run();
  // Picks committed work (regions whose records are all committed, and
  // unheld records in staging order up to the first uncommitted one).
  bool has_work_locked() const;
  // Writes one batch of ready work outside the lock: 1 when it wrote one, 0
  // when nothing was ready, or a negative errno (the store has failed).
  int apply_batch(std::unique_lock<std::mutex>& l);
  // What a batch applies, chosen under the lock.
  struct Batch {
    std::vector<Region> regions;                      // whole write units, ready
    std::vector<std::pair<uint64_t, Entry>> records;  // applied in place
    std::vector<std::pair<uint64_t, Entry>> covered;  // applied through a region
    std::vector<uint64_t> discarded;                  // records only to delete
    uint64_t bytes = 0, writes = 0;
    // Ring entries on: once this batch is applied, every ring entry staged
    // up to applied_staged, and every ring entry of a transaction numbered
    // up to applied_journal, is in place.
    uint64_t applied_staged = 0, applied_journal = 0;
  };
  struct Run;
  void pick_work_locked(Batch* b);
  // The images to write: each region as the device holds it with its
  // records over it, then each tier's records merged and widened to the
  // device's alignment.
  int region_runs(Batch* b, std::vector<Run>* runs) const;
  int record_runs(Batch* b, Tier t, std::vector<Run>* runs) const;
  // Writes and flushes the runs, then deletes the applied records durably.
  int write_runs(const std::vector<Run>& runs, Batch* b, std::string* failure);
  int delete_records(const Batch& b, std::string* failure);
  // Back under the lock: the applied records leave, the counters move.
  void finish_batch_locked(const Batch& b, int err, uint64_t t0_ns);
  void release_ready_locked(std::vector<PExtent>* out);
  bool overlaps_pending_locked(const PExtent& e, uint64_t up_to_seq) const;
  bool region_ready_locked(const Region& r) const;
  bool overlaps_held_locked(const Entry& e) const;
  // Whether `e` (visited in staging order) must go out with a region: it is
  // held, lies over held data, or over an earlier record that waits (so
  // overlapping records still land in order). Waiting spans gather in *waiting.
  struct Span {
    Tier tier;
    uint64_t begin, end;
  };
  bool waits_for_region_locked(const Entry& e, std::vector<Span>* waiting) const;
  void erase_locked(std::map<uint64_t, Entry>::iterator it);
  void discard_locked(std::map<uint64_t, Entry>::iterator it);

  rocksdb::DB* db_;
  PerTier<BlockDevice*> devices_;
  WriteTracker* tracker_;
  Release release_;
  DeferredOptions opts_;

  mutable std::mutex mutex_;
  std::condition_variable work_cv_;   // something to apply / stop / drain request
  std::condition_variable done_cv_;   // a batch finished
  std::condition_variable space_cv_;  // pending bytes dropped
  std::map<uint64_t, Entry> entries_; // seq -> entry, staged order
  // Per tier: device offset -> seq, to find the entries a read overlaps.
  PerTier<std::multimap<uint64_t, uint64_t>> by_offset_;
  uint64_t max_entry_len_ = 0;
  uint64_t committed_bytes_ = 0;
  std::vector<Held> held_;
  std::deque<Region> regions_;
  std::vector<Region> inflight_regions_;  // being written by apply_batch outside the lock
  std::vector<uint64_t> discarded_;  // seqs whose records are still to delete
  std::map<uint64_t, Span> dead_spans_;  // discarded seq -> its range, until deleted durably
  bool in_flight_ = false;           // apply_batch is writing outside the lock
  uint64_t next_seq_ = 1;
  RingSync ring_sync_;
  std::function<uint64_t()> journal_written_;
  bool ring_room_wanted_ = false;
  std::set<uint64_t> ring_seqs_;            // staging numbers of ring entries in entries_
  std::multiset<uint64_t> ring_journal_;    // journal numbers of committed ones
  uint64_t last_committed_journal_ = 0;     // highest journal number committed() saw
  std::atomic<uint64_t> pending_bytes_{0};
  uint64_t drain_requests_ = 0;
  bool stopping_ = false;
  bool write_out_ = true;
  std::function<int()> store_failed_;
  std::function<void(int, const std::string&)> report_failure_;
  int error_ = 0;
  std::chrono::steady_clock::time_point oldest_committed_{};
  DeferredStats stats_;
  DeferredPerf perf_;
  std::thread thread_;
};

// D record: versioned, checksummed (tier, offset, bytes).
std::string encode_deferred(Tier tier, uint64_t offset, std::string_view data);
bool decode_deferred(std::string_view v, Tier* tier, uint64_t* offset, std::string* data);
std::string deferred_key(uint64_t seq);

}  // namespace hybridstore
