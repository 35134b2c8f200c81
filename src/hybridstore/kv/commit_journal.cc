#include "hybridstore/kv/commit_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <climits>
#include <cstring>
#include <filesystem>
#include <map>

#include <rocksdb/write_batch.h>

#include "hscommon/crc32c.h"
#include "hscommon/encoding.h"
#include "hscommon/log.h"
#include "hybridstore/kv/kv_schema.h"

namespace hybridstore {

namespace {
uint64_t pad(uint64_t n) { return (n + CommitJournal::kBlock - 1) / CommitJournal::kBlock * CommitJournal::kBlock; }

bool fsync_path(const std::string& p) {
  int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}
}  // namespace

std::string CommitJournal::unusable_ring(const BlockDevice& dev, uint64_t bytes) {
  if (bytes < kMinRingBlocks * kBlock) return "is too small (" + std::to_string(bytes) + " bytes)";
  // Records are written whole blocks at block offsets.
  if (kBlock % dev.alignment() != 0)
    return "is on a device whose alignment (" + std::to_string(dev.alignment()) + " bytes) does not divide " +
           std::to_string(kBlock);
  return "";
}

int CommitJournal::format_region(BlockDevice& ring, std::string* error) {
  const uint64_t size = ring.size();
  AlignedBuffer zeros(std::min<uint64_t>(size, 4ull << 20), 4096, AlignedBuffer::kZeroed);
  for (uint64_t off = 0; off < size; off += zeros.size())
    if (int r = ring.write(off, zeros.data(), std::min<uint64_t>(zeros.size(), size - off)); r < 0) {
      *error = "writing zeros over the commit journal ring on " + ring.path() + ": " + strerror(-r);
      return r;
    }
  if (int r = ring.flush(); r < 0) {
    *error = "syncing the commit journal ring on " + ring.path() + ": " + strerror(-r);
    return r;
  }
  return 0;
}

namespace {
// Made under another name and renamed over `path` once complete, so a
// crash while making it never leaves a short or sparse ring, nor a ring
// that is neither the old one nor the new.
int make_ring_file(const std::string& path, uint64_t size, std::string* error) {
  namespace fs = std::filesystem;
  size = CommitJournal::ring_file_bytes(size);
  const std::string tmp = path + ".tmp";
  std::error_code ec;
  fs::remove(tmp, ec);
  DeviceOpenOptions c;
  c.direct_io = true;
  c.backend = IoBackend::kPosix;
  c.create = true;
  c.create_size = size;
  auto dev = open_block_device(tmp, c, error);
  if (!dev) return -EIO;
  if (int r = CommitJournal::format_region(*dev, error); r < 0) return r;
  dev.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0 || !fsync_path(fs::path(path).parent_path().string())) {
    *error = "making the commit journal " + path + ": " + strerror(errno);
    return -EIO;
  }
  return 0;
}
}  // namespace

std::unique_ptr<CommitJournal> CommitJournal::open(const std::string& path, uint64_t size, const Uuid& fsid,
                                                   const Wrap& wrap, std::string* error) {
  namespace fs = std::filesystem;
  DeviceOpenOptions o;
  o.direct_io = true;
  // Plain pwrite and fdatasync: each committer lane blocks on its own
  // record, and the ring needs no reaper thread of its own.
  o.backend = IoBackend::kPosix;
  std::error_code ec;
  if (!fs::exists(path, ec) && make_ring_file(path, size, error) < 0) return nullptr;
  auto dev = open_block_device(path, o, error);
  if (!dev) return nullptr;
  // The ring is the file's whole blocks (a file made elsewhere may end in a part of one).
  const uint64_t have = dev->size() / kBlock * kBlock;
  if (std::string why = unusable_ring(*dev, have); !why.empty()) {
    *error = "commit journal " + path + " " + why;
    return nullptr;
  }
  if (wrap) dev = wrap(std::move(dev));
  if (!dev) {
    *error = "commit journal " + path + ": the storage hooks refused the device";
    return nullptr;
  }
  return std::unique_ptr<CommitJournal>(new CommitJournal(std::move(dev), have, fsid));
}

uint64_t CommitJournal::ring_file_bytes(uint64_t size) {
  return std::max<uint64_t>(pad(size), kMinRingBlocks * kBlock);
}

std::unique_ptr<CommitJournal> CommitJournal::remake(const std::string& path, uint64_t size, const Uuid& fsid,
                                                     const Wrap& wrap, std::string* error) {
  if (make_ring_file(path, size, error) < 0) return nullptr;
  return open(path, size, fsid, wrap, error);
}

void CommitJournal::start_empty(uint64_t last_seq) {
  std::lock_guard<std::mutex> l(mutex_);
  before_tail_seq_ = last_seq;
}

std::unique_ptr<CommitJournal> CommitJournal::open_region(std::unique_ptr<BlockDevice> region, const Uuid& fsid,
                                                          std::string* error) {
  if (!region) {
    *error = "commit journal ring: no device";
    return nullptr;
  }
  const uint64_t size = region->size();
  std::string why = size % kBlock != 0 ? "is not a whole number of " + std::to_string(kBlock) + "-byte blocks (" +
                                             std::to_string(size) + " bytes)"
                                       : unusable_ring(*region, size);
  if (!why.empty()) {
    *error = "commit journal ring on " + region->path() + " " + why;
    return nullptr;
  }
  return std::unique_ptr<CommitJournal>(new CommitJournal(std::move(region), size, fsid));
}

int CommitJournal::read_start(rocksdb::DB* db, bool walk, uint64_t* held, JournalTail* from, std::string* error) {
  std::string v;
  rocksdb::Status s = db->Get(rocksdb::ReadOptions(), kv::journal_seq_key(), &v);
  if (s.ok()) {
    if (v.size() != 8) {
      *error = "corrupt commit journal number in RocksDB";
      return -EIO;
    }
    *held = load_fixed64(v.data());
  } else if (!s.IsNotFound()) {
    *error = "reading the commit journal number: " + s.ToString();
    return -EIO;
  }
  // Absent on a ring nothing has written since mkfs: its first record is
  // at 0, numbered 1.
  if (!walk) return 0;
  s = db->Get(rocksdb::ReadOptions(), kv::journal_tail_key(), &v);
  if (s.ok()) return decode_journal_tail(v, from, error);
  if (s.IsNotFound()) return 0;
  *error = "reading the commit journal's tail: " + s.ToString();
  return -EIO;
}

namespace {

// A journal entry the walk found, by number: the batch to replay (none for
// a version-2 entry that put nothing into RocksDB, whose number still
// counts for the prefix), and whether it holds what the caller cannot
// apply.
struct RecordedEntry {
  bool has_batch = false;
  bool has_deltas = false;
  std::string batch;
};

// Writes the batches of the numbers after `held`, up to the first one
// missing, into RocksDB: how many, or -EIO. *seq: the last one.
int replay_prefix(rocksdb::DB* db, const std::map<uint64_t, RecordedEntry>& recorded, uint64_t held, uint64_t* seq,
                  std::string* error) {
  int replayed = 0;
  for (auto it = recorded.find(held + 1); it != recorded.end() && it->first == *seq + 1; ++it) {
    // Onode deltas and ring data are applied only by a caller that asked
    // for them (docs/small-writes.md, steps 5 and 6), which a store of an
    // older format never does; meeting them then means a ring that must
    // not be half-replayed: refusing loses nothing, skipping would.
    if (it->second.has_deltas) {
      *error = "commit journal: transaction " + std::to_string(it->first) +
               " holds onode deltas or ring data, which this build cannot replay here";
      return -EIO;
    }
    if (it->second.has_batch) {
      rocksdb::WriteBatch b(it->second.batch);
      rocksdb::Status s = db->Write(rocksdb::WriteOptions(), &b);
      if (!s.ok()) {
        *error = "replaying the commit journal: " + s.ToString();
        return -EIO;
      }
    }
    *seq = it->first;
    ++replayed;
  }
  return replayed;
}

}  // namespace

int CommitJournal::replay(rocksdb::DB* db, uint64_t* next_seq, std::string* error, RingRead how,
                          std::vector<RingWrite>* ring_data, std::vector<TxnDeltas>* onode_deltas) {
  uint64_t held = 0;
  JournalTail from;
  if (int r = read_start(db, how == RingRead::kWalkFromTail, &held, &from, error); r < 0) return r;
  rocksdb::Status s;
  AlignedBuffer ring(size_, 4096, AlignedBuffer::kUninitialized);
  if (int r = dev_->read(0, ring.data(), size_); r < 0) {
    *error = std::string("reading the commit journal: ") + strerror(-r);
    return -EIO;
  }
  std::map<uint64_t, RecordedEntry> recorded;
  std::map<uint64_t, RingWrite> data;  // by staging number
  std::map<uint64_t, std::vector<JournalDelta>> deltas;  // by transaction number
  uint64_t highest = std::max(held, from.covered);
  auto keep = [&](JournalRecord& rec) {
    for (auto& e : rec.entries) {
      highest = std::max(highest, e.seq);
      bool unplaced = false;
      for (JournalDelta& d : e.deltas) {
        if (d.kind != JournalDeltaKind::kRingData) {
          if (onode_deltas)
            deltas[e.seq].push_back(std::move(d));
          else
            unplaced = true;
          continue;
        }
        // The walk took the whole record, and a transaction's data counts
        // whether or not RocksDB holds its batch: the deferred writer's
        // applied number says which pieces are in place.
        if (!ring_data) {
          unplaced = true;  // refused below, as data this caller cannot place
          continue;
        }
        RingWrite w{d.staged, tier_at(d.tier), d.physical, {}};
        w.data.reserve(d.crcs.size() * kBlock);
        for (size_t i = 0; i < d.crcs.size(); ++i) w.data.append(rec.data[d.first_block + i]);
        data[d.staged] = std::move(w);
      }
      if (e.seq > held) recorded[e.seq] = {e.has_batch, unplaced, std::move(e.batch)};
    }
  };
  std::string_view all(ring.data(), size_);
  if (how == RingRead::kWalkFromTail) {
    const JournalWalk w = walk_journal_ring(all, fsid_, from, held, keep);
    HS_DEBUG("commit journal: walked {} records from ring position {} (transaction {}) to {}", w.records, from.pos,
             from.covered, w.end);
  } else {
    // Format 4: every block is tried. The data blocks of a record that
    // decodes are stepped over whole (client bytes, never a record); a
    // torn record's are not, which is why format 5 walks instead.
    for (uint64_t off = 0; off < size_;) {
      JournalRecord rec;
      uint64_t len;
      if (!decode_journal_record(all.substr(off), fsid_, &rec, &len)) {
        off += kBlock;
        continue;
      }
      keep(rec);
      off += len;
    }
  }
  uint64_t seq = held;
  const int replayed = replay_prefix(db, recorded, held, &seq, error);
  if (replayed < 0) return replayed;
  // Numbers past a gap belong to transactions never acknowledged; the next
  // ones handed out must not meet them again in the ring.
  const uint64_t last = highest + renumber_gap();
  {
    std::lock_guard<std::mutex> l(mutex_);
    before_tail_seq_ = last;
  }
  // Only the prefix's: the walk takes nothing past a gap, the scan might.
  deltas.erase(deltas.upper_bound(seq), deltas.end());
  if ((ring_data && !data.empty()) || !deltas.empty()) {
    if (ring_data)
      for (auto& [staged, w] : data) ring_data->push_back(std::move(w));
    for (auto& [n, d] : deltas) onode_deltas->push_back({n, std::move(d)});
    s = db->FlushWAL(true);
  } else {
    rocksdb::WriteBatch b;
    finish_replay(&b, last + 1);
    rocksdb::WriteOptions wo;
    wo.sync = true;
    s = db->Write(wo, &b);
  }
  if (!s.ok()) {
    *error = "recording the commit journal number: " + s.ToString();
    return -EIO;
  }
  if (replayed) HS_INFO("commit journal: replayed {} transactions ({}..{})", replayed, held + 1, seq);
  if (highest > seq) HS_INFO("commit journal: {} unacknowledged transactions after a gap dropped", highest - seq);
  *next_seq = last + 1;
  return replayed;
}

void CommitJournal::finish_replay(rocksdb::WriteBatch* b, uint64_t next_seq) const {
  std::string n;
  put_fixed64(&n, next_seq - 1);
  b->Put(kv::journal_seq_key(), n);
  b->Put(kv::journal_tail_key(), encode_journal_tail({0, next_seq - 1}));
  // The deferred writer numbers its stagings from 1 again in this life.
  std::string zero;
  put_fixed64(&zero, 0);
  b->Put(kv::journal_applied_key(), zero);
}

std::string CommitJournal::tail_mark_after(TailHold h, uint64_t seq) const {
  std::lock_guard<std::mutex> l(mutex_);
  uint64_t durable = UINT64_MAX;
  for (int i = 0; i < kTailHolds; ++i)
    if (holds_[i]) durable = std::min(durable, i == static_cast<int>(h) ? std::max(durable_[i], seq) : durable_[i]);
  // The first record a walk needs, and the last number before it: the
  // record's first is the next one (or one after numbers RocksDB holds
  // without a record), as the walk wants it.
  uint64_t before = before_tail_seq_;
  for (const Placed& p : placed_) {
    if (p.last_seq > durable) return encode_journal_tail({p.start % size_, before});
    before = std::max(before, p.last_seq);
  }
  // None: the next record goes at the head (or at 0), numbered after
  // everything a sync up to `durable` covers.
  return encode_journal_tail({head_ % size_, std::max(before, durable == UINT64_MAX ? 0 : durable)});
}

uint64_t CommitJournal::batches_written_seq() const {
  std::lock_guard<std::mutex> l(mutex_);
  return batches_written_;
}

uint64_t CommitJournal::next_start(uint64_t len) const {
  return head_ % size_ + len > size_ ? head_ + (size_ - head_ % size_) : head_;
}

uint64_t CommitJournal::place(uint64_t len, uint64_t last_seq) {
  const uint64_t start = next_start(len);
  head_ = start + len;
  if (placed_.empty()) tail_ = start;
  placed_.push_back({start, head_, last_seq});
  // Half the ring needed: the checkpointer syncs RocksDB now, well before
  // a writer would have to wait for room.
  if (head_ - tail_ > size_ / 2) due_cv_.notify_one();
  return start % size_;
}

void CommitJournal::move_tail() {
  uint64_t durable = UINT64_MAX;
  for (int h = 0; h < kTailHolds; ++h)
    if (holds_[h]) durable = std::min(durable, durable_[h]);
  while (!placed_.empty() && placed_.front().last_seq <= durable) {
    before_tail_seq_ = std::max(before_tail_seq_, placed_.front().last_seq);
    placed_.pop_front();
  }
  tail_ = placed_.empty() ? head_ : placed_.front().start;
}

void CommitJournal::hold_tail_for(TailHold h) {
  std::lock_guard<std::mutex> l(mutex_);
  holds_[static_cast<int>(h)] = true;
}

uint64_t CommitJournal::reserve(uint64_t len, uint64_t last_seq) {
  std::unique_lock<std::mutex> l(mutex_);
  if (!fits(len) && !aborted_) {
    // The checkpointer frees room with a RocksDB sync; the throttle of
    // small-writes.md 6.4 keeps writers from getting here in steady state.
    ++waiting_;
    due_cv_.notify_one();
    if (room_wanted_) {
      l.unlock();
      room_wanted_();
      l.lock();
    }
    room_cv_.wait(l, [&] { return fits(len) || aborted_; });
    --waiting_;
  }
  if (aborted_) return kStopped;
  return place(len, last_seq);
}

void CommitJournal::want_room() {
  {
    std::lock_guard<std::mutex> l(mutex_);
    due_cv_.notify_one();
  }
  if (room_wanted_) room_wanted_();
}

bool CommitJournal::try_reserve(uint64_t len, uint64_t last_seq, uint64_t* pos) {
  std::lock_guard<std::mutex> l(mutex_);
  if (aborted_ || !fits(len)) return false;
  *pos = place(len, last_seq);
  return true;
}

void CommitJournal::advance(TailHold h, uint64_t seq) {
  std::lock_guard<std::mutex> l(mutex_);
  uint64_t& d = durable_[static_cast<int>(h)];
  d = std::max(d, seq);
  const uint64_t before = tail_;
  move_tail();
  if (tail_ != before) {
    room_cv_.notify_all();
    discard_free();
  }
  // Another hold let go of the oldest record: a RocksDB sync may now free it.
  if (h != TailHold::kRocksDb) due_cv_.notify_all();
}

bool CommitJournal::rocksdb_holds_tail() const {
  if (placed_.empty()) return false;
  const uint64_t front = placed_.front().last_seq;
  for (int h = 0; h < kTailHolds; ++h)
    if (holds_[h] && h != static_cast<int>(TailHold::kRocksDb) && durable_[h] < front) return false;
  return durable_[static_cast<int>(TailHold::kRocksDb)] < front && front <= batches_written_;
}

void CommitJournal::batches_written(uint64_t seq) {
  std::lock_guard<std::mutex> l(mutex_);
  batches_written_ = std::max(batches_written_, seq);
  // A writer waiting for room may have waited for these: a group's batches
  // can follow its record, after the next group reserved.
  if (waiting_ > 0) due_cv_.notify_one();
}

bool CommitJournal::checkpoint_due(std::chrono::milliseconds timeout, uint64_t* seq) {
  std::unique_lock<std::mutex> l(mutex_);
  // Only a sync that would move the tail: while another hold keeps the
  // oldest record, syncing again as each group's batches arrive frees
  // nothing (with the kClean hold that was five to eight times the syncs).
  auto due = [&] {
    return (head_ - tail_ > size_ / 2 || waiting_ > 0) &&
           batches_written_ > durable_[static_cast<int>(TailHold::kRocksDb)] && rocksdb_holds_tail();
  };
  due_cv_.wait_for(l, timeout, [&] { return due() || woken_ || aborted_; });
  if (woken_ || aborted_ || !due()) {
    woken_ = false;
    return false;
  }
  *seq = batches_written_;
  return true;
}

void CommitJournal::wake() {
  std::lock_guard<std::mutex> l(mutex_);
  woken_ = true;
  due_cv_.notify_all();
}

void CommitJournal::abort() {
  std::lock_guard<std::mutex> l(mutex_);
  aborted_ = true;
  room_cv_.notify_all();
  due_cv_.notify_all();
}

bool CommitJournal::keeps_oldest(TailHold h) const {
  std::lock_guard<std::mutex> l(mutex_);
  return holds_[static_cast<int>(h)] && !placed_.empty() &&
         durable_[static_cast<int>(h)] < placed_.front().last_seq;
}

uint64_t CommitJournal::needed() const {
  std::lock_guard<std::mutex> l(mutex_);
  return head_ - tail_;
}

void CommitJournal::discard_free() {
  if (discard_span_ == 0) return;
  // The room ahead of the head, up to a ring's length past the tail, holds
  // no record anyone needs: its whole spans go back to the FTL, once per
  // lap (discard_next_), so that the head's next pass writes erased pages.
  // The ring's last partial span, if any, is never discarded.
  uint64_t from = std::max(head_, discard_next_);
  const uint64_t to = tail_ + size_;
  while (from < to) {
    const uint64_t lap = from / size_ * size_;
    const uint64_t k = (from - lap + discard_span_ - 1) / discard_span_;
    if ((k + 1) * discard_span_ > size_) {
      from = lap + size_;
      continue;
    }
    const uint64_t at = lap + k * discard_span_;
    if (at + discard_span_ > to) break;
    // Advisory: a failed discard only costs the FTL a merge later.
    if (dev_->discard(k * discard_span_, discard_span_) == 0) ++discarded_spans_;
    from = at + discard_span_;
  }
  discard_next_ = std::max(discard_next_, std::min(from, to));
}

uint64_t CommitJournal::reserve(uint64_t len, bool* needs_checkpoint) {
  std::lock_guard<std::mutex> l(mutex_);
  *needs_checkpoint = !fits(len);
  // Numbered 0: only checkpoint() frees them.
  const uint64_t start = next_start(len);
  head_ = start + len;
  if (placed_.empty()) tail_ = start;
  placed_.push_back({start, head_, 0});
  return start % size_;
}

void CommitJournal::checkpoint() {
  std::lock_guard<std::mutex> l(mutex_);
  // Every record reserved so far is in RocksDB, durably: a whole ring's
  // length from here on only overwrites such records.
  placed_.clear();
  tail_ = head_;
  room_cv_.notify_all();
  if (discard_span_ == 0) return;
  // Under the mutex: a record reserved after this goes past the head, into
  // a span already discarded, never one being discarded.
  const uint64_t head_span = head_ % size_ / discard_span_;
  for (uint64_t s = 0; (s + 1) * discard_span_ <= size_; ++s) {
    if (s == head_span) continue;
    // Advisory: a failed discard only costs the FTL a merge later.
    if (dev_->discard(s * discard_span_, discard_span_) == 0) ++discarded_spans_;
  }
  discard_next_ = head_ + size_;
}

void CommitJournal::set_discard_span(uint64_t span) {
  std::lock_guard<std::mutex> l(mutex_);
  discard_span_ = span % kBlock == 0 ? span : 0;
}

uint64_t CommitJournal::discarded_spans() const {
  std::lock_guard<std::mutex> l(mutex_);
  return discarded_spans_;
}

int CommitJournal::write(uint64_t pos, const std::string& record) {
  // O_DIRECT wants the buffer aligned too.
  AlignedBuffer b(record.size(), 4096, AlignedBuffer::kUninitialized);
  std::memcpy(b.data(), record.data(), record.size());
  return dev_->write_durable(pos, b.data(), b.size());
}

}  // namespace hybridstore
