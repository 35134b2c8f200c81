// Commit journal: one durable write per commit group instead of a RocksDB
// WAL sync.
//
// A RocksDB WAL sync is one fdatasync of a file that grows, and RocksDB runs
// one at a time: with group commit, every group waits for the one before it
// to be synced. The journal is a preallocated ring: a file (<store>/journal,
// written full of zeros when it is made, so a write into it never changes
// the file's size or allocation and its flush carries no filesystem
// metadata), or a region of the fastest tier's device that the caller holds
// and zeroed when it made it (open_region; docs/kvfs.md, section 4). The
// committer writes each group's batches to RocksDB without a
// sync and the same batches, as one record, into the ring with one
// synchronous-data write (BlockDevice::write_durable); several groups may be
// in flight at once (kv_committer.h). RocksDB keeps its WAL in its own
// buffer meanwhile (manual_wal_flush): it reaches the file in large pieces,
// or with any synced RocksDB write, which writes out everything before it.
//
// Why it is safe:
//  - Every transaction's batch carries the journal sequence number of that
//    transaction (kv::journal_seq_key()), so RocksDB says exactly which
//    transactions it holds after any crash: its recovery keeps a prefix of
//    its WAL, in commit order.
//  - At mount, before anything reads the store, replay() writes to RocksDB
//    every transaction the ring holds past that number, in order, stopping at
//    the first one it does not hold, then syncs RocksDB. A transaction is
//    acknowledged only once its record and those of every earlier
//    transaction are durable, so every acknowledged transaction is replayed
//    and what is replayed is a prefix. It finds the records by walking them
//    from the tail RocksDB keeps (format 5), never by trying every block,
//    so client bytes inside a record are never read as one (RingRead).
//  - Ring space is reused only behind the ring's tail: the oldest record
//    whose transactions RocksDB does not yet hold durably (docs/
//    small-writes.md 6.2). The committer's checkpointer thread moves it with
//    a RocksDB WAL flush and sync, off the commit path, once half the ring
//    is needed; a group that finds no room waits for it. So a record
//    overwritten can never be one RocksDB still needs.
//  - Records are versioned, checksummed and carry the store's fsid; garbage,
//    a torn write or a record of another store fails decoding and is skipped.
//
// The records (versions 1 and 2) and their codec: journal_record.h.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <rocksdb/db.h>

#include "hybridstore/format/store_format.h"
#include "hybridstore/format/tier.h"
#include "hsio/block_device.h"
#include "hybridstore/kv/journal_record.h"

namespace hybridstore {

class CommitJournal {
 public:
  static constexpr uint64_t kBlock = kJournalBlock;
  // Opens the ring at `path`, creating it (`size` bytes of zeros, synced,
  // its directory synced) when it does not exist. `wrap` may put a decorator
  // around the device (the storage hooks' fault injection).
  using Wrap = std::function<std::unique_ptr<BlockDevice>(std::unique_ptr<BlockDevice>)>;
  static std::unique_ptr<CommitJournal> open(const std::string& path, uint64_t size, const Uuid& fsid,
                                             const Wrap& wrap, std::string* error);
  // A new ring of `size` at `path` in place of the file there: made under
  // another name, zeroed and synced, then renamed over it, so that a crash
  // leaves the old ring or the new one, whole. Only once a replay of the
  // old ring is finished and durable in RocksDB (its tail then names
  // position 0, which a walk of the new, empty ring accepts); the caller has
  // closed the old journal. Then open()ed, and start_empty() is the caller's.
  // The bytes of a ring open() or remake() makes for `size`.
  static uint64_t ring_file_bytes(uint64_t size);
  static std::unique_ptr<CommitJournal> remake(const std::string& path, uint64_t size, const Uuid& fsid,
                                               const Wrap& wrap, std::string* error);
  // The journal whose ring is the whole of `region` (a RegionDevice over the
  // ring's extents, already decorated as the caller's device stack is).
  // Nothing is created: the caller made the ring and zeroed it
  // (format_region). Its size must be whole journal blocks, at least
  // kMinRingBlocks of them, and its alignment must divide kBlock.
  static std::unique_ptr<CommitJournal> open_region(std::unique_ptr<BlockDevice> region, const Uuid& fsid,
                                                    std::string* error);
  // Writes zeros over all of `ring` and flushes it: for a ring made where
  // other bytes were (object data a client wrote could decode as a record
  // of this store), so that every record in it is one the committer wrote.
  // 0, or -errno with *error.
  static int format_region(BlockDevice& ring, std::string* error);
  static constexpr uint64_t kMinRingBlocks = 16;

  // How mount finds the records. A store of format 5 keeps the ring's tail
  // in RocksDB (Sjournal_tail) and mount walks the records from there by
  // their lengths (walk_journal_ring); a store of format 4 never wrote it,
  // so its ring is read as format 4 read it, trying every block, once,
  // before its upgrade.
  enum class RingRead { kWalkFromTail, kScanEveryBlock };
  // Mount: replays into `db` every transaction recorded past the one RocksDB
  // holds (see above). Then, in one synced write, makes RocksDB's journal
  // number cover everything the ring can hold and marks the tail at the
  // ring's start, where the next record goes: the numbers handed out next
  // start renumber_gap() past the last one seen, so no record left in the
  // ring (a torn one's successors, never acknowledged) can ever continue
  // the new sequence. Returns how many were replayed, or -EIO with *error;
  // *next_seq gets the first number to use.
  // Small overwrites' data the walk found (format 6, RING_DATA deltas):
  // each piece with the deferred writer's staging number. With `ring_data`
  // and any found, replay leaves RocksDB's journal number and tail as they
  // were (the data is not in place yet: a crash must walk these records
  // again) and syncs only the batches it replayed; the caller writes the
  // data, then finish_replay() into the batch that records it.
  struct RingWrite {
    uint64_t staged = 0;
    Tier tier = Tier::kSsd;
    uint64_t physical = 0;
    std::string data;
  };
  // Onode deltas the walk found (format 7, docs/small-writes.md section 7
  // step 3): each transaction's, in number order, for every transaction of
  // the replayed prefix, those RocksDB held already included (whether their
  // onodes are in RocksDB the onodes' versions tell). With `onode_deltas`
  // and any found, replay leaves RocksDB's journal number and tail as with
  // ring data; without it, deltas past what RocksDB holds are refused.
  struct TxnDeltas {
    uint64_t seq = 0;
    std::vector<JournalDelta> deltas;
  };
  int replay(rocksdb::DB* db, uint64_t* next_seq, std::string* error, RingRead how = RingRead::kWalkFromTail,
             std::vector<RingWrite>* ring_data = nullptr, std::vector<TxnDeltas>* onode_deltas = nullptr);
  // Where a replay starts: the number RocksDB holds (0 when absent) and,
  // with `walk`, the tail it keeps (the ring's start when absent). 0, or
  // -EIO with *error.
  static int read_start(rocksdb::DB* db, bool walk, uint64_t* held, JournalTail* from, std::string* error);
  // What replay() left out when it returned ring data: RocksDB's journal
  // number and the tail at the ring's start, for `next_seq` from replay.
  void finish_replay(rocksdb::WriteBatch* b, uint64_t next_seq) const;
  // In place of replay() on a ring made empty after one (remake,
  // KvFs::resize_journal): the numbers RocksDB holds end at `last_seq`.
  void start_empty(uint64_t last_seq);
  // Every number in the ring takes 8 bytes of it at least (an entry's
  // number), so the ring never holds more numbers than this.
  uint64_t renumber_gap() const { return size_ / 8; }

  uint64_t size() const { return size_; }
  std::string encode(const std::vector<JournalEntryView>& entries) const { return encode_journal_record(fsid_, entries); }
  std::string encode(const std::vector<JournalEntry>& entries) const { return encode_journal_record(fsid_, entries); }
  uint64_t record_size(const std::vector<JournalEntryView>& entries) const {
    return journal_record_size(fsid_, entries);
  }
  std::string encode_v2(const std::vector<JournalEntryView>& entries, const std::vector<std::string_view>& data) const {
    return encode_journal_record_v2(fsid_, entries, data);
  }
  uint64_t record_v2_size(const std::vector<JournalEntryView>& entries, size_t data_blocks) const {
    return journal_record_v2_size(fsid_, entries, data_blocks);
  }
  // Records larger than this go through a RocksDB sync instead: small
  // enough that the records of `lanes` groups in flight never reach around
  // the ring onto each other.
  uint64_t max_record(int lanes) const { return size_ / (2 * static_cast<uint64_t>(lanes)) / kBlock * kBlock; }

  // The ring's tail (docs/small-writes.md 6.2): space is reused only behind
  // the oldest record something still needs. A record is needed until every
  // hold below has passed its last transaction number; each hold is a value
  // that only grows and that RocksDB holds durably.
  enum class TailHold { kRocksDb = 0, kApplied = 1, kClean = 2 };
  static constexpr int kTailHolds = 3;
  // kRocksDb (RocksDB holds the record's batches durably) always holds;
  // the others only once enabled here, before the first reserve (nothing
  // writes ring data or deltas yet: small-writes.md steps 5 and 6).
  void hold_tail_for(TailHold h);
  // The value of Sjournal_tail for a RocksDB sync that will cover every
  // transaction up to `covered`: the start of the first record past it
  // (the head when none is reserved yet). Written into RocksDB before the
  // sync, in the order of the syncs.
  std::string tail_mark(uint64_t covered) const { return tail_mark_after(TailHold::kRocksDb, covered); }
  // The value of Sjournal_tail RocksDB must hold before advance(h, seq):
  // the walk's start once hold `h` reaches `seq` and the others stay.
  std::string tail_mark_after(TailHold h, uint64_t seq) const;
  // The last number whose batches the committer wrote into RocksDB.
  uint64_t batches_written_seq() const;
  // Where the record of transactions up to `last_seq`, `len` bytes, goes.
  // Waits while the ring has no room for it behind the tail (backpressure:
  // the checkpointer frees room, see checkpoint_due); kStopped once
  // abort() was called.
  static constexpr uint64_t kStopped = UINT64_MAX;
  uint64_t reserve(uint64_t len, uint64_t last_seq);
  // Called (without the journal's lock) when a reserve starts to wait for
  // room: whoever holds the tail back may hurry (the deferred writer, whose
  // applied ring data moves the kApplied hold). Before the first reserve.
  void set_room_wanted(std::function<void()> f) { room_wanted_ = std::move(f); }
  // What reserve() does before it waits for room, for a writer held back
  // before it reaches reserve() (the onode checkpointer's throttle): the
  // checkpointer's sync and the room-wanted callback (the deferred writer
  // records how far ring data is applied, which nothing else makes it do
  // while it has no data to apply).
  void want_room();
  // The same without waiting: false when the ring has no room now.
  bool try_reserve(uint64_t len, uint64_t last_seq, uint64_t* pos);
  // Every transaction up to `seq` is now durable for `h`: the tail moves
  // past the records wholly at or below it on every hold. With a discard
  // span set, whole spans of the room ahead of the head are discarded.
  void advance(TailHold h, uint64_t seq);
  // The committer wrote the batches of every transaction up to `seq` into
  // RocksDB (not synced): what a RocksDB sync would make durable.
  void batches_written(uint64_t seq);
  // For the checkpointer: waits up to `timeout` until a RocksDB sync is due
  // (the ring's needed span passed half of it, or a reserve is waiting for
  // room) and would free something (batches were written past the last
  // sync); then true, *seq the number a sync started now covers. False on
  // timeout, after wake() or abort().
  bool checkpoint_due(std::chrono::milliseconds timeout, uint64_t* seq);
  // Wakes a checkpoint_due caller (its thread is stopping).
  void wake();
  // Reserves waiting and to come return kStopped (the store failed).
  void abort();
  // Bytes from the tail to the head: what the ring must keep.
  uint64_t needed() const;
  // Hold `h` is among those keeping the oldest record (moving it would
  // help free the ring).
  bool keeps_oldest(TailHold h) const;

  // Without a committer (tests, tools): where the next record of `len`
  // bytes goes, never waiting; *needs_checkpoint says that it overwrites
  // records still needed, so RocksDB must be synced (checkpoint()) first.
  uint64_t reserve(uint64_t len, bool* needs_checkpoint);
  // After a RocksDB WAL sync that covers every record reserved so far:
  // nothing behind the head is needed any more. With a discard span set,
  // also discards every whole span of the ring but the one holding the head.
  void checkpoint();
  // On raw NAND behind the FTL (docs/kvfs.md 4), `span` is the FTL's
  // erase-block size: overwriting ring pages in place would send each into
  // the FTL's log area and cost a merge, while a discarded span's next pass
  // writes unmapped erase blocks. At a checkpoint RocksDB holds every
  // record reserved so far, and nothing is reserved past the head yet, so
  // no span but the head's holds a record that replay may need. 0 (the
  // default): nothing is discarded. A multiple of kBlock.
  void set_discard_span(uint64_t span);
  uint64_t discarded_spans() const;
  // Writes the record at `pos` (from reserve()) and makes it durable.
  int write(uint64_t pos, const std::string& record);

 private:
  // `size`: the ring's bytes, from the device's start; the first lap needs
  // no checkpoint.
  CommitJournal(std::unique_ptr<BlockDevice> dev, uint64_t size, const Uuid& fsid)
      : dev_(std::move(dev)), size_(size), fsid_(fsid) {}
  // Why a ring of `bytes` on `dev` cannot hold the journal, or "".
  static std::string unusable_ring(const BlockDevice& dev, uint64_t bytes);
  // Under mutex_: where a record of `len` bytes would start (a record never
  // wraps: it starts over at the ring's beginning), and whether the ring
  // has room for it behind the tail.
  uint64_t next_start(uint64_t len) const;
  bool fits(uint64_t len) const { return next_start(len) + len - tail_ <= size_; }
  uint64_t place(uint64_t len, uint64_t last_seq);
  void move_tail();
  // Under mutex_: the oldest record waits for RocksDB's sync alone, and a
  // sync now would cover it.
  bool rocksdb_holds_tail() const;
  void discard_free();

  struct Placed {
    uint64_t start, end;  // bytes since open, as head_
    uint64_t last_seq;
  };
  // The last number of the record before the tail (what the mark of a
  // walk starting at the tail says it covers).
  uint64_t before_tail_seq_ = 0;
  std::unique_ptr<BlockDevice> dev_;
  const uint64_t size_;
  const Uuid fsid_;
  mutable std::mutex mutex_;
  std::condition_variable room_cv_;  // the tail moved / abort
  std::condition_variable due_cv_;   // a checkpoint may be due / wake
  uint64_t head_ = 0;  // bytes reserved since open (position = head_ % size_)
  uint64_t tail_ = 0;  // start of the oldest needed record (head_ when none)
  std::deque<Placed> placed_;  // records from the tail on, in ring order
  uint64_t durable_[kTailHolds] = {0, 0, 0};
  bool holds_[kTailHolds] = {true, false, false};
  uint64_t batches_written_ = 0;
  int waiting_ = 0;  // reserves waiting for room
  std::function<void()> room_wanted_;
  bool woken_ = false, aborted_ = false;
  uint64_t discard_span_ = 0;
  uint64_t discarded_spans_ = 0;
  uint64_t discard_next_ = 0;  // bytes since open: free space before it was discarded
};

}  // namespace hybridstore
