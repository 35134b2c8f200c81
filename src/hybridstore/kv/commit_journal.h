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
//    and what is replayed is a prefix.
//  - Ring space is reused only after a RocksDB WAL flush and sync covering
//    every transaction recorded in it (checkpoint()), so a record
//    overwritten can never be one RocksDB still needs.
//  - Records are versioned, checksummed and carry the store's fsid; garbage,
//    a torn write or a record of another store fails decoding and is skipped.
//
// The records (versions 1 and 2) and their codec: journal_record.h.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <rocksdb/db.h>

#include "hybridstore/format/store_format.h"
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

  // Mount: replays into `db` every transaction recorded past the one RocksDB
  // holds (see above), then makes RocksDB's journal number cover everything
  // the ring holds, so numbers handed out next are new. Returns how many were
  // replayed, or -EIO with *error; *next_seq gets the first number to use.
  int replay(rocksdb::DB* db, uint64_t* next_seq, std::string* error);

  uint64_t size() const { return size_; }
  std::string encode(const std::vector<JournalEntryView>& entries) const { return encode_journal_record(fsid_, entries); }
  std::string encode(const std::vector<JournalEntry>& entries) const { return encode_journal_record(fsid_, entries); }
  uint64_t record_size(const std::vector<JournalEntryView>& entries) const {
    return journal_record_size(fsid_, entries);
  }
  // Records larger than this go through a RocksDB sync instead: small
  // enough that the records of `lanes` groups in flight never reach around
  // the ring onto each other.
  uint64_t max_record(int lanes) const { return size_ / (2 * static_cast<uint64_t>(lanes)) / kBlock * kBlock; }

  // Where the next record of `len` bytes goes. *needs_checkpoint says that
  // RocksDB must be synced (checkpoint()) before the record is written:
  // the space it takes was last used by records RocksDB may not hold yet.
  uint64_t reserve(uint64_t len, bool* needs_checkpoint);
  // After a RocksDB WAL sync that covers every record reserved so far.
  // With a discard span set, also discards every whole span of the ring
  // but the one holding the head (see set_discard_span).
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
      : dev_(std::move(dev)), size_(size), fsid_(fsid), reusable_(size) {}
  // Why a ring of `bytes` on `dev` cannot hold the journal, or "".
  static std::string unusable_ring(const BlockDevice& dev, uint64_t bytes);

  std::unique_ptr<BlockDevice> dev_;
  const uint64_t size_;
  const Uuid fsid_;
  mutable std::mutex mutex_;
  uint64_t head_ = 0;      // bytes reserved since open (position = head_ % size_)
  uint64_t reusable_;      // head_ may grow to this before a checkpoint
  uint64_t discard_span_ = 0;
  uint64_t discarded_spans_ = 0;
};

}  // namespace hybridstore
