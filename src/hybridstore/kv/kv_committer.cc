#include "hybridstore/kv/kv_committer.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include "hscommon/encoding.h"
#include "hscommon/log.h"
#include "hybridstore/kv/kv_schema.h"

namespace hybridstore {

KvCommitter::KvCommitter(rocksdb::DB* db, PerTier<BlockDevice*> devices,
                         WriteTracker* tracker, size_t max_queued)
    : db_(db), merge_op_(db->GetOptions().merge_operator), devices_(devices), tracker_(tracker),
      max_queued_(max_queued) {}

KvCommitter::~KvCommitter() { stop(); }

void KvCommitter::set_journal(CommitJournal* journal, uint64_t next_journal_seq, int lanes) {
  journal_ = journal;
  next_journal_seq_ = next_journal_seq;
  journal_base_ = next_journal_seq - next_seq_;
  lanes_ = journal ? std::clamp(lanes, 1, kMaxLanes) : 1;
}

void KvCommitter::start() {
  // Named, so that a profile (perf report --sort comm) shows who spends what.
  commit_thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "hs-commit");
    commit_loop();
  });
  if (journal_)
    for (int i = 0; i < lanes_; ++i)
      lane_threads_.emplace_back([this] {
        pthread_setname_np(pthread_self(), "hs-journal");
        lane_loop();
      });
  if (journal_ && !inline_checkpoints_)
    checkpoint_thread_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "hs-ckpt");
      checkpoint_loop();
    });
  finisher_thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "hs-finisher");
    finisher_loop();
  });
}

void KvCommitter::stop() {
  {
    std::lock_guard<std::mutex> l(mutex_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  space_cv_.notify_all();
  if (commit_thread_.joinable()) commit_thread_.join();
  // Lanes write every record handed to them before they end.
  {
    std::lock_guard<std::mutex> l(mutex_);
    lanes_stopping_ = true;
  }
  lane_cv_.notify_all();
  for (auto& t : lane_threads_)
    if (t.joinable()) t.join();
  lane_threads_.clear();
  // Last: the commit thread may have waited for it to free ring space.
  {
    std::lock_guard<std::mutex> l(mutex_);
    checkpoint_stopping_ = true;
  }
  if (journal_) journal_->wake();
  if (checkpoint_thread_.joinable()) checkpoint_thread_.join();
  {
    std::lock_guard<std::mutex> l(fin_mutex_);
    fin_stopping_ = true;
  }
  fin_cv_.notify_all();
  if (finisher_thread_.joinable()) finisher_thread_.join();
}

void PendingWrites::finish(Tier tier, int r) {
  // Counted before the waiter wakes: its flush must cover this write.
  if (r == 0) tracker_->note_write(tier);
  {
    std::lock_guard<std::mutex> l(mu_);
    if (r < 0 && err_ == 0) err_ = r;
    --outstanding_;
  }
  cv_.notify_all();
}

int PendingWrites::wait() {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [&] { return outstanding_ == 0; });
  return err_;
}

uint64_t KvCommitter::submit(CommitWork work, bool caller_waits) {
  std::unique_lock<std::mutex> l(mutex_);
  space_cv_.wait(l, [&] { return queue_.size() < max_queued_ || stopping_ || error_; });
  if (error_ || stopping_) return 0;
  work.seq = next_seq_++;
  if (perf_.set) work.submit_ns = perf_now_ns();
  uint64_t seq = work.seq;
  if (!work.ring_deltas.empty()) ++ring_works_queued_;
  // Nothing else to commit and the caller is about to wait for it: the
  // caller commits it itself (wait_committed), so that a lone writer does
  // not pay two thread switches per transaction for the committer thread.
  const bool self = caller_waits && queue_.empty() && !busy_ && flights_.empty();
  queue_.push_back(std::move(work));
  if (!self) queue_cv_.notify_one();
  return seq;
}

int KvCommitter::wait_committed(uint64_t seq) {
  std::unique_lock<std::mutex> l(mutex_);
  if (committed_.load() < seq && !error_ && !busy_ && !queue_.empty() && flights_.empty() &&
      queue_.back().seq >= seq) {
    auto f = std::make_shared<Flight>();
    take_group_locked(f.get());
    busy_ = true;
    l.unlock();
    process_group(f);
    l.lock();
    busy_ = false;
    // What arrived meanwhile is the committer thread's; a stop() that came
    // meanwhile waits for this thread to leave process_group.
    if (!queue_.empty() || stopping_) queue_cv_.notify_one();
  }
  if (committed_.load() < seq && !error_) {
    auto w = std::make_shared<SyncWaiter>();
    auto it = sync_waiters_.emplace(seq, w);
    w->cv.wait(l, [&] { return w->woken || committed_.load() >= seq || error_; });
    if (!w->woken) sync_waiters_.erase(it);
  }
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
  for (auto& [seq, w] : sync_waiters_) {
    w->woken = true;
    w->cv.notify_one();
  }
  sync_waiters_.clear();
  space_cv_.notify_all();
  kv_written_cv_.notify_all();
  // A group waiting for ring space would wait for a checkpointer that has
  // stopped (or for one whose syncs no longer matter).
  if (journal_) journal_->abort();
}

void KvCommitter::commit_loop() {
  for (;;) {
    auto f = std::make_shared<Flight>();
    {
      std::unique_lock<std::mutex> l(mutex_);
      // At most lanes_ groups in flight: the next waits (and grows) meanwhile.
      queue_cv_.wait(l, [&] {
        return (!queue_.empty() && !busy_ && flights_.size() < static_cast<size_t>(lanes_)) ||
               (stopping_ && queue_.empty() && !busy_);
      });
      if (queue_.empty() && stopping_) return;
      take_group_locked(f.get());
      busy_ = true;
    }
    process_group(f);
    {
      std::lock_guard<std::mutex> l(mutex_);
      busy_ = false;
    }
  }
}

uint64_t record_bytes_of(const CommitWork& w) {
  uint64_t n = w.batch->GetDataSize() + 64;
  for (const JournalDelta& d : w.ring_deltas) n += 64 + d.key.size() + 4 * d.crcs.size() + d.name.size() + d.value.size();
  for (const auto& b : w.ring_data) n += b->size();
  return n;
}

void KvCommitter::take_group_locked(Flight* f) {
  if (!journal_ || ring_works_queued_ == 0) {
    f->group.swap(queue_);
    return;
  }
  // A group whose record would not fit is synced through RocksDB instead,
  // which ring data cannot be: such groups stop where one record is full
  // (the pipeline never submits one transaction larger than that).
  const uint64_t room = journal_->max_record(lanes_);
  uint64_t bytes = 2 * kJournalBlock;
  bool ring = false;
  while (!queue_.empty()) {
    CommitWork& w = queue_.front();
    const uint64_t n = record_bytes_of(w);
    const bool has_ring = !w.ring_deltas.empty();
    if (!f->group.empty() && (ring || has_ring) && bytes + n > room) break;
    bytes += n;
    ring |= has_ring;
    if (has_ring) --ring_works_queued_;
    f->group.push_back(std::move(w));
    queue_.pop_front();
  }
}

uint64_t KvCommitter::ring_work_room() const {
  if (!journal_) return 0;
  return journal_->max_record(lanes_) / 2;
}

int KvCommitter::sync_tail_hold(CommitJournal::TailHold h, rocksdb::WriteBatch* b, uint64_t journal_seq,
                                std::string* failure) {
  std::lock_guard<std::mutex> order(ring_sync_mutex_);
  b->Put(kv::journal_tail_key(), journal_->tail_mark_after(h, journal_seq));
  rocksdb::Status s = db_->Write(rocksdb::WriteOptions(), b);
  if (s.ok()) s = db_->FlushWAL(true);
  if (!s.ok()) {
    *failure = (h == CommitJournal::TailHold::kApplied ? "recording applied ring data failed: "
                                                       : "recording written onodes failed: ") +
               s.ToString();
    return -EIO;
  }
  journal_->advance(h, journal_seq);
  return 0;
}

// Everything between taking a group and handing it on, in queue order (one
// thread at a time: busy_).
void KvCommitter::process_group(const std::shared_ptr<Flight>& f) {
  space_cv_.notify_all();
  if (error_) return;  // never acknowledge anything after a failure
  f->t0 = std::chrono::steady_clock::now();
  f->t0_ns = perf_.set ? perf_now_ns() : 0;
  if (perf_.set)
    for (const auto& w : f->group) perf_.set->tinc(perf_.kv_queued_lat, f->t0_ns - std::min(f->t0_ns, w.submit_ns));

  if (!flush_written_data(*f)) return;
  f->flushed_ns = perf_.set ? perf_now_ns() : 0;
  bool overlap;
  if (!write_metadata(*f, &overlap)) return;
  // From here on a lane may be writing the record: f is read and written
  // under mutex_ only.
  bool to_lane, done;
  {
    std::lock_guard<std::mutex> l(mutex_);
    to_lane = !f->record.empty();
    f->kv_written = !overlap;
    done = f->done = !to_lane && f->kv_written;
    flights_.push_back(f);
  }
  if (to_lane) lane_cv_.notify_one();
  if (overlap) {
    write_ready_batches();
    return;
  }
  if (done) complete_ready();
}

void KvCommitter::write_ready_batches() {
  std::lock_guard<std::mutex> one(kv_write_mutex_);
  for (;;) {
    std::shared_ptr<Flight> f;
    bool skip = false;
    {
      std::lock_guard<std::mutex> l(mutex_);
      for (const auto& x : flights_) {
        if (x->kv_written) continue;
        // The first one not written decides: none after it may overtake it.
        if (x->record_first && !x->record_written) break;
        f = x;
        // Its record failed: its batches must never reach RocksDB (the
        // sticky error acknowledges nothing from here on).
        skip = x->record_first && x->err != 0;
        break;
      }
    }
    if (!f) break;
    // A failed write still finishes the flight (with its error), so that it
    // leaves the queue of flights once its record is written: the sticky
    // error keeps it and everything after it from being acknowledged.
    const bool written = skip || write_batches(*f);
    {
      std::lock_guard<std::mutex> l(mutex_);
      if (!written && f->err == 0) f->err = -EIO;
      f->kv_written = true;
      f->done = f->record_written;
    }
    kv_written_cv_.notify_all();
  }
  complete_ready();
}

bool KvCommitter::wait_earlier_batches() {
  std::unique_lock<std::mutex> l(mutex_);
  kv_written_cv_.wait(l, [&] {
    if (error_) return true;
    for (const auto& x : flights_)
      if (!x->kv_written) return false;
    return true;
  });
  return !error_;
}

// Data first: every write these transactions made completed before they
// were queued, or completes now (written while the caller went on), so
// one flush per written device covers them all. False after a failure.
bool KvCommitter::flush_written_data(Flight& f) {
  for (const auto& w : f.group)
    if (w.writes)
      if (int r = w.writes->wait(); r < 0) {
        fail(r, fmt::format("write to a device failed: {}", strerror(-r)));
        return false;
      }
  bool ok = true;
  for (Tier t : tier_ids(kMaxTiers)) {
    if (!ok) break;
    uint64_t w = tracker_->written(t);
    if (w != flushed_[t] && devices_[t]) {
      int r = devices_[t]->flush();
      ++f.flushes;
      if (r < 0) {
        fail(r, fmt::format("flush of {} device failed: {}", tier_name(t), strerror(-r)));
        ok = false;
      } else {
        flushed_[t] = w;
      }
    }
  }
  return ok;
}

// Then metadata: the journal record (when there is a journal) and the
// batches into RocksDB, or only the batches. *overlap: the batches still have
// to go to RocksDB while a lane writes the record. False after a failure.
bool KvCommitter::write_metadata(Flight& f, bool* overlap) {
  // Each batch records its journal number.
  // The batches are read where they lie until the record is built.
  std::vector<JournalEntryView> entries;
  // With ring data the record is of version 2: the deltas of each
  // transaction, their data blocks numbered across the group.
  std::vector<std::vector<JournalDelta>> deltas;
  std::vector<std::string_view> data;
  bool ring = false;
  for (const auto& w : f.group) ring |= !w.ring_deltas.empty();
  if (journal_) {
    if (ring) deltas.resize(f.group.size());
    size_t i = 0;
    for (auto& w : f.group) {
      std::string n;
      put_fixed64(&n, next_journal_seq_);
      w.batch->Put(kv::journal_seq_key(), n);
      w.journal_seq = next_journal_seq_;
      if (w.journal_seq != journal_seq_of(w.seq)) {
        // The ring's kClean hold maps numbers so (journal_seq_of): never
        // let it pass a record it did not mean.
        fail(-EIO, fmt::format("transaction {} got journal number {}, not {}", w.seq, w.journal_seq,
                               journal_seq_of(w.seq)));
        return false;
      }
      entries.push_back({next_journal_seq_++, w.batch->Data()});
      if (ring) {
        const uint64_t base = data.size();
        for (JournalDelta d : w.ring_deltas) {
          d.first_block += base;
          deltas[i].push_back(std::move(d));
        }
        for (const auto& buf : w.ring_data)
          for (uint64_t off = 0; off < buf->size(); off += kJournalBlock)
            data.push_back(std::string_view(*buf).substr(off, kJournalBlock));
        entries.back().deltas = &deltas[i];
      }
      ++i;
    }
  }
  *overlap = false;
  if (journal_) {
    f.journal_last = next_journal_seq_ - 1;
    const uint64_t size = ring ? journal_->record_v2_size(entries, data.size()) : journal_->record_size(entries);
    const bool sync_now = size > journal_->max_record(lanes_);
    if (sync_now && ring) {
      // take_group_locked and the pipeline's bound keep this from happening;
      // a RocksDB sync would not make the data durable.
      fail(-EIO, fmt::format("a commit group's record with ring data needs {} bytes, more than the {} a record "
                             "may take",
                             size, journal_->max_record(lanes_)));
      return false;
    }
    bool checkpoint = false;
    auto encode = [&] { return ring ? journal_->encode_v2(entries, data) : journal_->encode(entries); };
    if (!sync_now && inline_checkpoints_) {
      f.record = encode();
      f.pos = journal_->reserve(f.record.size(), &checkpoint);
    } else if (!sync_now) {
      f.record = encode();
      // Never a RocksDB sync here: the checkpointer keeps room behind the
      // ring's tail (docs/small-writes.md 6.2), and this waits only when
      // it falls behind. The batches before this group's reach RocksDB in
      // queue order (those with deltas after their records), so its sync
      // frees room without this group's batches.
      f.pos = journal_->reserve(f.record.size(), f.journal_last);
      if (f.pos == CommitJournal::kStopped) {
        fail(-EIO, "commit journal stopped while waiting for ring space");
        return false;
      }
    }
    if (!write_record(f, ring, sync_now, checkpoint, overlap)) return false;
  } else if (!write_batches(f)) {
    return false;
  }
  return true;
}

// The group's record placed at f.pos: written here, or left to a lane, and
// the batches written or left for later (*overlap), as write_metadata says.
bool KvCommitter::write_record(Flight& f, bool ring, bool sync_now, bool checkpoint, bool* overlap) {
  // The record goes to a lane before the batches go to RocksDB, so the
  // device writes it while this thread fills the memtable; not when (with
  // inline checkpoints) its space must first be freed by a RocksDB sync
  // that has to cover this group's batches as well. With ring data or
  // deltas the batches wait for the record instead (Flight::record_first).
  *overlap = !sync_now && !checkpoint;
  f.record_first = ring;
  bool alone;
  {
    std::lock_guard<std::mutex> l(mutex_);
    alone = flights_.empty();
  }
  // One writer: handing the record to a lane would add two thread
  // switches to its latency (more than the RocksDB write it would hide).
  // This thread writes the record itself, synchronously, then fills the
  // memtable. Starting the write through io_uring and filling the
  // memtable meanwhile was measured slower (docs/benchmarks.md,
  // item 28): the asynchronous write took longer than the
  // synchronous one, and the device's work did not overlap the insert.
  const bool inline_write = *overlap && alone && f.group.size() == 1;
  if (inline_write) {
    *overlap = false;
    f.err = journal_->write(f.pos, f.record);
    f.record.clear();
    if (f.err < 0) {
      fail(f.err, fmt::format("commit journal write failed: {}", strerror(-f.err)));
      return false;
    }
    {
      std::lock_guard<std::mutex> l(mutex_);
      ++stats_.journal_records;
    }
    if (!write_batches(f)) return false;
  } else if (ring) {
    // The batches after the record, which only then goes to a lane; the
    // inline checkpoint's sync first, over every earlier batch.
    *overlap = true;
    return !checkpoint || (wait_earlier_batches() && sync_rocksdb_for_ring(true));
  } else if (!*overlap && (!wait_earlier_batches() || !write_batches(f))) {
    return false;
  }
  // A group too large for a record is made durable by RocksDB alone:
  // one WAL flush and sync (FlushWAL first writes out what
  // manual_wal_flush keeps in RocksDB's buffer), which covers every
  // batch before it too; so is the space of an inline checkpoint.
  if ((sync_now || checkpoint) && !sync_rocksdb_for_ring(checkpoint)) return false;
  return true;
}

// The group's batches into RocksDB, in queue order, as one write: one WAL
// record and one pass through RocksDB's write path per group instead of one
// per transaction. The group then lands in RocksDB whole or not at all,
// which keeps what it holds after a crash a prefix of the transactions.
// With a journal it is not synced (the journal record makes the group
// durable); without one it is.
bool KvCommitter::write_batches(Flight& f) {
  rocksdb::WriteOptions wo;
  wo.sync = !journal_;
  rocksdb::Status s;
  if (f.group.size() == 1) {
    s = db_->Write(wo, f.group[0].batch.get());
  } else {
    std::vector<const rocksdb::WriteBatch*> parts;
    for (const auto& w : f.group) parts.push_back(w.batch.get());
    // Most of a group's keys are written by every transaction in it (the
    // stats, the allocation chunk, the section's records, the journal
    // number): written once, the memtable takes about half the inserts.
    rocksdb::WriteBatch all;
    if (!collapse_write_batches(parts, merge_op_.get(), &all)) all = rocksdb::WriteBatch(join_write_batches(parts));
    s = db_->Write(wo, &all);
  }
  if (!s.ok()) {
    fail(-EIO, "RocksDB commit failed: " + s.ToString());
    return false;
  }
  if (journal_) journal_->batches_written(f.journal_last);
  return true;
}

// RocksDB's WAL syncs, off the commit path: when the ring's needed span
// passes half of it (or a group waits for room), one FlushWAL(true) makes
// every batch written so far durable in RocksDB, and the ring's tail moves
// past their records. Before this thread, the group whose record needed the
// space ran the sync itself, once per lap, and every group behind it waited.
void KvCommitter::checkpoint_loop() {
  for (;;) {
    uint64_t seq = 0;
    const bool due = journal_->checkpoint_due(std::chrono::milliseconds(200), &seq);
    {
      std::lock_guard<std::mutex> l(mutex_);
      if (checkpoint_stopping_ || error_) return;
    }
    if (!due) continue;
    if (!sync_rocksdb_for_ring(false)) return;
  }
}

bool KvCommitter::sync_rocksdb_for_ring(bool whole_ring) {
  std::lock_guard<std::mutex> order(ring_sync_mutex_);
  // Every batch written so far precedes the mark in RocksDB's WAL, and the
  // sync covers them all: RocksDB recovers the mark only with them.
  const uint64_t covered = journal_->batches_written_seq();
  rocksdb::WriteBatch mark;
  mark.Put(kv::journal_tail_key(), journal_->tail_mark(covered));
  rocksdb::Status s = db_->Write(rocksdb::WriteOptions(), &mark);
  if (s.ok()) s = db_->FlushWAL(true);
  if (!s.ok()) {
    fail(-EIO, "RocksDB WAL sync failed: " + s.ToString());
    return false;
  }
  if (whole_ring)
    journal_->checkpoint();
  else
    journal_->advance(CommitJournal::TailHold::kRocksDb, covered);
  std::lock_guard<std::mutex> l(mutex_);
  ++stats_.journal_checkpoints;
  return true;
}

// A WriteBatch's representation is a 12-byte header (fixed64 sequence,
// fixed32 count of records) followed by its records; batches are joined by
// summing the counts and concatenating the records, which is what RocksDB's
// own WriteBatchInternal::Append does.
std::string join_write_batches(const std::vector<const rocksdb::WriteBatch*>& parts) {
  constexpr size_t kHeader = 12;
  size_t bytes = kHeader;
  uint32_t count = 0;
  for (const auto* b : parts) {
    bytes += b->GetDataSize() - kHeader;
    count += b->Count();
  }
  std::string rep;
  rep.reserve(bytes);
  put_fixed64(&rep, 0);
  put_fixed32(&rep, count);
  for (const auto* b : parts) rep.append(b->Data(), kHeader, std::string::npos);
  return rep;
}

bool collapse_write_batches(const std::vector<const rocksdb::WriteBatch*>& parts,
                            const rocksdb::MergeOperator* merge, rocksdb::WriteBatch* out) {
  enum Kind : char { kPut, kDelete, kMerge };
  struct Record {
    Kind kind;
    bool live = true;
    bool folded = false;  // the value is `merged`, not `value`
    rocksdb::Slice key, value;
    std::string merged;
  };
  // Per key, the records still live: at most a Put or Delete, then at most
  // one Merge (later merges fold into it).
  struct Live {
    int64_t base = -1, merge = -1;
  };
  struct Collect : rocksdb::WriteBatch::Handler {
    const rocksdb::MergeOperator* merge_op;
    std::vector<Record> records;
    std::unordered_map<std::string_view, Live> keys;
    bool failed = false;
    void replace(Kind kind, const rocksdb::Slice& k, const rocksdb::Slice& v) {
      Live& l = keys[k.ToStringView()];
      if (l.base >= 0) records[l.base].live = false;
      if (l.merge >= 0) records[l.merge].live = false;
      l.merge = -1;
      l.base = static_cast<int64_t>(records.size());
      records.push_back(Record{kind, true, false, k, v, {}});
    }
    rocksdb::Status PutCF(uint32_t cf, const rocksdb::Slice& k, const rocksdb::Slice& v) override {
      if (cf) return rocksdb::Status::NotSupported();
      replace(kPut, k, v);
      return rocksdb::Status::OK();
    }
    rocksdb::Status DeleteCF(uint32_t cf, const rocksdb::Slice& k) override {
      if (cf) return rocksdb::Status::NotSupported();
      replace(kDelete, k, rocksdb::Slice());
      return rocksdb::Status::OK();
    }
    rocksdb::Status MergeCF(uint32_t cf, const rocksdb::Slice& k, const rocksdb::Slice& v) override {
      if (cf) return rocksdb::Status::NotSupported();
      Live& l = keys[k.ToStringView()];
      if (l.merge >= 0 && merge_op) {
        Record& m = records[l.merge];
        std::string combined;
        rocksdb::Slice left = m.folded ? rocksdb::Slice(m.merged) : m.value;
        if (!merge_op->PartialMerge(k, left, v, &combined, nullptr)) return rocksdb::Status::NotSupported();
        m.merged = std::move(combined);
        m.folded = true;
        return rocksdb::Status::OK();
      }
      if (l.merge >= 0) return rocksdb::Status::NotSupported();
      l.merge = static_cast<int64_t>(records.size());
      records.push_back(Record{kMerge, true, false, k, v, {}});
      return rocksdb::Status::OK();
    }
    // Anything the store's transactions do not write ends the collapse.
    rocksdb::Status SingleDeleteCF(uint32_t, const rocksdb::Slice&) override { return rocksdb::Status::NotSupported(); }
    rocksdb::Status DeleteRangeCF(uint32_t, const rocksdb::Slice&, const rocksdb::Slice&) override {
      return rocksdb::Status::NotSupported();
    }
    void LogData(const rocksdb::Slice&) override { failed = true; }
  } c;
  c.merge_op = merge;
  size_t count = 0;
  for (const auto* b : parts) count += b->Count();
  c.records.reserve(count);
  c.keys.reserve(count);
  for (const auto* b : parts)
    if (!b->Iterate(&c).ok() || c.failed) return false;
  out->Clear();
  for (const Record& r : c.records) {
    if (!r.live) continue;
    rocksdb::Status s;
    switch (r.kind) {
      case kPut: s = out->Put(r.key, r.value); break;
      case kDelete: s = out->Delete(r.key); break;
      case kMerge: s = out->Merge(r.key, r.folded ? rocksdb::Slice(r.merged) : r.value); break;
    }
    if (!s.ok()) return false;
  }
  return true;
}

void KvCommitter::lane_loop() {
  for (;;) {
    std::shared_ptr<Flight> f;
    {
      std::unique_lock<std::mutex> l(mutex_);
      auto next = [&] {
        for (auto& x : flights_)
          if (!x->claimed && !x->record.empty()) return x;
        return std::shared_ptr<Flight>();
      };
      lane_cv_.wait(l, [&] { return next() || lanes_stopping_; });
      f = next();
      if (!f) return;
      f->claimed = true;
    }
    int r = journal_->write(f->pos, f->record);
    if (r < 0) fail(r, fmt::format("commit journal write failed: {}", strerror(-r)));
    {
      std::lock_guard<std::mutex> l(mutex_);
      if (r < 0) f->err = r;
      f->record_written = true;
      f->done = f->kv_written;
      f->record.clear();
      if (r == 0) ++stats_.journal_records;
    }
    // A group whose batches waited for this record may go to RocksDB now.
    write_ready_batches();
  }
}

void KvCommitter::complete_ready() {
  std::lock_guard<std::mutex> c(complete_mutex_);
  for (;;) {
    std::shared_ptr<Flight> f;
    bool queued;
    {
      std::lock_guard<std::mutex> l(mutex_);
      if (flights_.empty() || !flights_.front()->done) return;
      f = flights_.front();
      flights_.pop_front();
      queued = !queue_.empty() || stopping_;
    }
    // Room for another group in flight, which matters only to a group
    // already waiting: a lone writer committing its own transactions would
    // otherwise wake the committer thread for nothing after each of them
    // (two thread switches per transaction). Work queued later wakes it
    // from submit().
    if (queued) queue_cv_.notify_one();
    // After a failure nothing more is acknowledged, in flight or not.
    if (!f->err && !error_) acknowledge(*f);
  }
}

void KvCommitter::acknowledge(Flight& f) {
  auto& group = f.group;
  if (perf_.set) {
    uint64_t now = perf_now_ns();
    perf_.set->tinc(perf_.kv_flush_lat, f.flushed_ns - f.t0_ns);
    perf_.set->tinc(perf_.kv_commit_lat, now - f.flushed_ns);
    perf_.set->tinc(perf_.kv_sync_lat, now - f.t0_ns);
  }
  const uint64_t t0_ns = f.t0_ns;
  const auto t0 = f.t0;
  const uint64_t flushes = f.flushes;

  std::vector<std::function<void()>> callbacks;
  for (auto& w : group) {
    if (w.after_commit) w.after_commit(w.journal_seq);
    if (w.on_committed) w.on_committed(w.seq);
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
  // Counted before committed_ moves: whoever sees the commit (flush) must
  // also see it counted.
  if (perf_.set) {
    uint64_t now = perf_now_ns();
    perf_.set->inc(perf_.txc, group.size());
    perf_.set->inc(perf_.groups);
    for (const auto& w : group) {
      perf_.set->tinc(perf_.kv_committing_lat, now - t0_ns);
      if (w.start_ns) perf_.set->tinc(perf_.commit_lat, now - std::min(now, w.start_ns));
    }
  }
  std::vector<std::function<void()>> woken;
  std::vector<std::shared_ptr<SyncWaiter>> to_signal;
  {
    std::lock_guard<std::mutex> l(mutex_);
    committed_.store(group.back().seq, std::memory_order_release);
    auto end = waiters_.upper_bound(group.back().seq);
    for (auto it = waiters_.begin(); it != end; ++it) woken.push_back(std::move(it->second));
    waiters_.erase(waiters_.begin(), end);
    auto sync_end = sync_waiters_.upper_bound(group.back().seq);
    for (auto it = sync_waiters_.begin(); it != sync_end; ++it) {
      it->second->woken = true;
      to_signal.push_back(std::move(it->second));
    }
    sync_waiters_.erase(sync_waiters_.begin(), sync_end);
    stats_.transactions += group.size();
    stats_.groups += 1;
    stats_.device_flushes += flushes;
    stats_.commit_latency_ns_total += static_cast<uint64_t>(ns);
  }
  for (auto& w : to_signal) w->cv.notify_one();
  // After the group's on_commit callbacks, which are already queued.
  if (!woken.empty()) {
    std::lock_guard<std::mutex> l(fin_mutex_);
    for (auto& cb : woken) fin_queue_.push_back(std::move(cb));
    fin_cv_.notify_one();
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
