// The KV file system itself (docs/kvfs.md 3): format and mount over the
// superblock and the log, a flat namespace of directories and names, files
// written through a buffer and read by position, the allocator over the
// chunks the kvfs owns, growth through a KvFsLender, group commit and log
// compaction. Plain C++: step 6 adapts it to rocksdb::FileSystem.
//
// Not yet here (docs/kvfs.md section 9): a balancer thread of its own
// (growth happens inline in the allocation that runs short; give_back is
// called by the store's tick), the asynchronous write-behind (whole blocks
// are written synchronously by the thread that fills them), and
// preallocation.
//
// Lock order, outermost first; no path takes them the other way round:
//   KvFsNode::mutex     (one file's data: its buffer, size, extents)
//   KvFs::commit_mutex_ (the log writer: one leader writes groups at a time)
//   KvFs::meta_mutex_   (the namespace, the live KvFsState, the pending
//                        records, open nodes, locks, pending release)
//   KvFs::spare_mutex_  (the log's spare segment)
//   the ExtentAllocator's own mutex (a leaf)
// A group commit leader holds commit_mutex_ and takes meta_mutex_ only to
// take the pending records and to publish the result, so writers queue
// records while a group is on its way to the device.
#pragma once
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hsio/block_device.h"
#include "hybridstore/alloc/allocator.h"
#include "hybridstore/format/store_format.h"
#include "hybridstore/kvfs/kvfs_log.h"
#include "hybridstore/kvfs/kvfs_state.h"
#include "hybridstore/kvfs/kvfs_super.h"

namespace hybridstore {

// Where the kvfs's space comes from (docs/kvfs.md 2.5): the store implements
// it over the fastest tier; tests use a fake.
class KvFsLender {
 public:
  virtual ~KvFsLender() = default;
  virtual uint64_t unit() const = 0;  // G
  // Up to `want` bytes (a multiple of G), at least G, in G-aligned
  // intervals; -ENOSPC when the tier has none. Never waits for a
  // transaction.
  virtual int lend(uint64_t want, std::vector<Interval>* out) = 0;
  virtual void take_back(const std::vector<Interval>& ranges) = 0;
  // Bytes lend() could hand out now, at most: an estimate for RocksDB's
  // free-space question, never a promise (the tier may give it to objects
  // first).
  virtual uint64_t lendable() const = 0;
};

struct KvFsParams {
  uint64_t block = 4096;          // b (format only)
  uint64_t alloc_unit = 64 << 10;  // A (format only)
  uint64_t head = 0;              // H: chunks lie in [H, device size)
  KvFsSuperSlotsAt slots;         // the superblock's two slots
  uint64_t initial_size = 0;      // lent at format, a multiple of G
  std::vector<std::string> dirs{"db"};  // made at format
  uint64_t log_segment = 4 << 20;       // a multiple of A
  uint64_t log_compact = 16 << 20;      // compact once the log is this long ...
  uint64_t log_compact_ratio = 4;       // ... and this many times its snapshot
  uint64_t write_buffer = 1 << 20;      // per writable file, before whole blocks go out
  uint64_t grow_step = 0;               // bytes asked of the lender; 0: one G
  std::chrono::milliseconds grow_wait{5000};  // before a refused growth is -ENOSPC
};

// An inode some handle has open: what readers and the one writer share.
// A writable file's bytes not yet in the data area, kept block-aligned so
// that their whole blocks go to the device straight from here: the kvfs then
// copies a file's bytes once (as the page cache did), not once more into an
// I/O buffer per write-out. What is left past the last whole block moves to
// the front; the memory stays for the next appends.
class KvFsWriteBuffer {
 public:
  KvFsWriteBuffer() = default;
  KvFsWriteBuffer& operator=(std::string_view bytes) {
    size_ = 0;
    append(bytes.data(), bytes.size());
    return *this;
  }
  const char* data() const { return mem_.data(); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::string str() const { return std::string(mem_.data(), size_); }
  void append(const char* p, size_t n);
  // Shorter: cut; longer: zeros, as std::string::resize.
  void resize(size_t n);
  void clear() { size_ = 0; }
  // Gives the memory back (a closed file keeps nothing).
  void release() { mem_ = AlignedBuffer(); size_ = 0; }
  // Drops the first n bytes (written out), moving the rest to the front.
  void erase_front(size_t n);
  // The bytes with zeros after them up to `len` (padding of the last
  // block); the size is unchanged.
  const char* padded(size_t len);

 private:
  void reserve(size_t n);
  AlignedBuffer mem_;
  size_t size_ = 0;
};

// The data fields below `mutex` are guarded by it; `writing`, `handles`,
// `unlinked` and `unlink_ticket` by KvFs::meta_mutex_.
struct KvFsNode {
  explicit KvFsNode(uint64_t i) : ino(i) {}
  const uint64_t ino;
  std::mutex mutex;
  uint64_t size = 0;
  std::vector<KvFsExtent> extents;  // in file order
  size_t logged_extents = 0;        // the log knows the first this many
  uint64_t written = 0;             // [0, written) is in the data area; a multiple of b
  KvFsWriteBuffer buffer;           // the bytes [written, size)

  bool writing = false;  // a writable handle is open
  int handles = 0;
  bool unlinked = false;       // its name is gone: its extents go when the last handle closes
  uint64_t unlink_ticket = 0;  // the record that dropped the name
};

class KvFs;

// What `df` and fsck show of a mounted kvfs. `used` is what the live
// metadata gives an owner (files, the ring, the log's segments); owned −
// used − free is what is held without an owner in the metadata yet: the
// log's spare segments, extents waiting for their release record to be
// durable, and blocks written but not yet logged.
struct KvFsStats {
  uint64_t owned = 0;    // the chunks
  uint64_t used = 0;     // files + ring + log
  uint64_t log = 0;      // the log's segments
  uint64_t journal = 0;  // the ring (inode 2)
  uint64_t files = 0;    // inodes with a name
  uint64_t free = 0;     // the allocator's free bytes
};

// Where a block of a mounted kvfs that no record owns yet is (see
// KvFs::check_snapshot).
struct KvFsHeld {
  KvFsExtent extent;
  const char* what;  // "a spare log segment", "pending release", ...
};

// A mounted kvfs as one consistent picture, for its check (kvfs_check.h).
struct KvFsSnapshot {
  KvFsSuper super;                            // the one the kvfs runs on
  std::unique_ptr<KvFsState> state;           // a copy of the live state
  std::vector<KvFsHeld> held;                 // allocated, owned by no record
  std::vector<std::pair<uint64_t, uint64_t>>  // the allocator's free map
      free;
  KvFsGeometry geometry;                      // b, A, G, H, the device's size
  std::array<KvFsSlotReport, kKvFsSuperSlots> slots;  // read from the device
  std::array<bool, kKvFsSuperSlots> slot_blank{};     // all zeros: never written
  int slots_result = 0;                               // read_kvfs_super's
  std::string slots_why;
};

// A file being written (docs/kvfs.md 3.4). Appends are buffered; sync()
// makes every byte appended before it durable. Safe to call sync() from
// another thread than append(); not to share one handle between writers.
class KvFsWritableFile {
 public:
  ~KvFsWritableFile();
  KvFsWritableFile(const KvFsWritableFile&) = delete;
  KvFsWritableFile& operator=(const KvFsWritableFile&) = delete;

  // -EOPNOTSUPP on a handle from reopen_for_truncate.
  int append(std::string_view data, std::string* why);
  // Starts the writes of the whole blocks buffered so far; makes nothing
  // durable.
  int flush(std::string* why);
  int sync(std::string* why);
  // Writes out the buffer and logs the size; promises no durability.
  int close(std::string* why);
  // Cuts the file to `size` (never longer); the next sync or the close
  // logs it, and the close frees the extents beyond.
  int truncate(uint64_t size, std::string* why);
  uint64_t size() const;

 private:
  friend class KvFs;
  KvFsWritableFile(KvFs* fs, std::shared_ptr<KvFsNode> node, bool truncate_only)
      : fs_(fs), node_(std::move(node)), truncate_only_(truncate_only) {}
  KvFs* fs_;
  std::shared_ptr<KvFsNode> node_;
  // A reopened file takes truncate and close only: an append would have to
  // rewrite a block that holds durable bytes (docs/kvfs.md 3.4).
  const bool truncate_only_;
  bool closed_ = false;
};

// Positioned reads (docs/kvfs.md 3.5): bytes in the data area from the
// device (straight into the caller's buffer when offset, length and buffer
// are aligned to b, through a bounce buffer otherwise), the inline tail and
// a writer's buffered bytes from memory.
class KvFsReadableFile {
 public:
  ~KvFsReadableFile();
  KvFsReadableFile(const KvFsReadableFile&) = delete;
  KvFsReadableFile& operator=(const KvFsReadableFile&) = delete;

  // Up to `n` bytes at `offset`, fewer at the end of the file: *got says.
  int read(uint64_t offset, uint64_t n, char* out, uint64_t* got, std::string* why);
  uint64_t size() const;

 private:
  friend class KvFs;
  KvFsReadableFile(KvFs* fs, std::shared_ptr<KvFsNode> node) : fs_(fs), node_(std::move(node)) {}
  KvFs* fs_;
  std::shared_ptr<KvFsNode> node_;
};

class KvFs {
 public:
  // Lends params.initial_size, writes the log's first group (INIT, a GRANT
  // per chunk, MKDIR of params.dirs) into the first chunk, then superblock
  // slot 0. The kvfs exists once the slot is durable.
  static int format(BlockDevice* dev, const KvFsParams& params, const Uuid& kvfs_uuid, const Uuid& fsid,
                    KvFsLender* lender, std::string* why);
  // Reads the slots, replays the log, and builds the free map: the chunks
  // minus the files' extents, the journal ring and the log's segments.
  // `lender` may be null: the kvfs then lives within what it owns.
  static int mount(BlockDevice* dev, const KvFsParams& params, const Uuid& kvfs_uuid, const Uuid& fsid,
                   KvFsLender* lender, std::unique_ptr<KvFs>* out, std::string* why);
  // Every handle must be gone first: a handle points at its KvFs.
  ~KvFs();
  // Makes every queued record durable. -EBUSY while a handle is open.
  int unmount(std::string* why);

  int mkdir(const std::string& dir, std::string* why);
  // An empty directory only: -ENOTEMPTY otherwise.
  int rmdir(const std::string& dir, std::string* why);
  int list(const std::string& dir, std::vector<std::string>* names, std::string* why) const;
  std::vector<std::string> list_dirs() const;
  // A new, empty file at dir/name; an existing one there loses the name.
  int open_writable(const std::string& dir, const std::string& name, std::unique_ptr<KvFsWritableFile>* out,
                    std::string* why);
  int open_readable(const std::string& dir, const std::string& name, std::unique_ptr<KvFsReadableFile>* out,
                    std::string* why);
  // An existing file, for truncate() and close() only (RocksDB reopens a
  // WAL to cut what it preallocated). -EBUSY while a writer has it open.
  int reopen_for_truncate(const std::string& dir, const std::string& name, std::unique_ptr<KvFsWritableFile>* out,
                          std::string* why);
  int file_size(const std::string& dir, const std::string& name, uint64_t* size, std::string* why) const;
  // Seconds since the epoch of the file's last logged update (a sync or a
  // close); 0 for a file created and never synced.
  int file_mtime(const std::string& dir, const std::string& name, uint64_t* mtime, std::string* why) const;
  // Atomic; a file at the destination loses its name.
  int rename(const std::string& src_dir, const std::string& src, const std::string& dst_dir,
             const std::string& dst, std::string* why);
  // The extents stay until the last handle closes and the UNLINK is durable.
  int unlink(const std::string& dir, const std::string& name, std::string* why);
  // In-process exclusion: a second lock of a name is -EBUSY.
  int lock(const std::string& dir, const std::string& name, std::string* why);
  int unlock(const std::string& dir, const std::string& name, std::string* why);
  // Makes every name change so far durable (a directory fsync).
  int sync_log(std::string* why);
  // Writes the log anew as a snapshot and switches the superblock slot
  // (docs/kvfs.md 3.2). Also run by a commit once the log is long enough.
  int compact(std::string* why);

  // The commit journal's ring, inode 2 (docs/kvfs.md 4). Made once, of
  // `size` bytes rounded up to A, in one extent when a free run holds it;
  // its space is written with zeros and flushed before the JOURNAL record
  // is durable, because that space may have held bytes a client wrote that
  // decode as records of this store. A ring the kvfs has is kept as it is,
  // whatever `size` says (resize_journal replaces it): *extents is the ring
  // either way, in ring order. Called before the ring's user opens it; not
  // concurrently with itself. With `align` (raw NAND: the FTL's erase
  // block) a ring in one extent starts on a multiple of it, so that its
  // align-sized spans are whole erase blocks; a kvfs too fragmented for
  // that gets the ring unaligned.
  int make_journal(uint64_t size, std::vector<KvFsExtent>* extents, std::string* why, uint64_t align = 0);
  // A new ring of `size` made as make_journal makes one, in place of the
  // one the kvfs has; the old ring's space is free once the JOURNAL record
  // naming the new one is durable, so a crash leaves one ring or the other,
  // whole. Its user must have closed the old ring, and must hold nothing in
  // it that is not elsewhere (RocksDB) already. On a failure the old ring
  // stays, untouched.
  int resize_journal(uint64_t size, std::vector<KvFsExtent>* extents, std::string* why, uint64_t align = 0);
  std::vector<KvFsExtent> journal() const;
  // The bytes of a ring make_journal makes for `size`.
  uint64_t ring_bytes_for(uint64_t size) const { return (size + geo_.alloc_unit - 1) / geo_.alloc_unit * geo_.alloc_unit; }

  // The live metadata (what the log will hold once the queue is flushed).
  std::string describe() const;
  uint64_t free_bytes() const { return alloc_.free_bytes(); }
  // What the lender could add now (0 without one): with free_bytes(), the
  // room RocksDB sees (GetFreeSpace).
  uint64_t growable_bytes() const {
    KvFsLender* const lender = lender_.load(std::memory_order_acquire);
    return lender ? lender->lendable() : 0;
  }
  // Bytes kept aside for the log's next segments (free again after a
  // remount).
  uint64_t spare_log_bytes() const { return spare_segments() * params_.log_segment; }
  uint64_t owned_bytes() const;
  // What the kvfs owns of the device (its chunks, coalesced, in offset
  // order): what the tier must neither hand out nor count as free.
  std::vector<Interval> chunks() const;
  KvFsStats stats() const;
  // Takes every open file's lock, the log writer's and the metadata lock,
  // so no allocation is half done, and copies the state, the allocator's
  // free map and what is allocated outside the state; then reads the
  // superblock slots (a compaction, which writes them, waits meanwhile).
  // Not while make_journal runs: it allocates outside these locks.
  // -EAGAIN when files kept opening for long enough to never settle.
  int check_snapshot(KvFsSnapshot* out);
  uint64_t generation() const;
  uint64_t block() const { return geo_.block; }
  // The lender for growth from now on (null: none).
  void set_lender(KvFsLender* lender) { lender_.store(lender, std::memory_order_release); }
  // Bytes asked of the lender per growth from now on (params.grow_step
  // until then): the store knows its tier's sizes only once it is loaded.
  void set_grow_step(uint64_t bytes) { grow_step_.store(bytes, std::memory_order_relaxed); }
  // Bytes a file allocation leaves free while there is a lender: it grows
  // first, and fails with -ENOSPC rather than take them when the tier
  // refuses. Without a lender (a mount, before the tier is loaded) they are
  // there for RocksDB's open and the commit journal's replay, so a store
  // whose RocksDB filled the tier still mounts (docs/kvfs.md 2.5).
  void set_mount_headroom(uint64_t bytes) { mount_headroom_.store(bytes, std::memory_order_relaxed); }
  // Gives whole free lend units back to the lender (docs/kvfs.md 2.5), as
  // many as leave at least `keep_free` bytes free and `keep_owned` bytes
  // owned; *returned says how many bytes went. RETURN is durable before the
  // lender hears of a range: a crash in between leaves it owned by neither
  // side, which a mount finds free in the tier. 0 with nothing returned
  // when there is no lender or no whole free unit.
  int give_back(uint64_t keep_free, uint64_t keep_owned, uint64_t* returned, std::string* why);
  // What the kvfs did since the last call, for the store's perf counters:
  // file syncs asked for, log groups written, log compactions, bytes given
  // back.
  struct Counts {
    uint64_t syncs = 0, log_flushes = 0, compactions = 0, returns = 0, return_bytes = 0;
  };
  Counts take_counts();

 private:
  friend class KvFsWritableFile;
  friend class KvFsReadableFile;
  struct Pending {
    uint64_t ticket;
    KvRecord record;
  };

  KvFs(BlockDevice* dev, const KvFsParams& params, const KvFsSuper& super, KvFsLender* lender,
       std::unique_ptr<KvFsState> state);
  void build_free_map();
  int segment_for_log(KvFsExtent* segment, std::string* why);
  std::unique_ptr<KvFsLogWriter> make_writer(uint64_t log_id, const KvFsExtent& segment, uint64_t position,
                                             uint64_t next_seq);

  // ---- queue and group commit (kvfs.cc)
  // Applies `record` to the live state and queues it: its ticket, or -EIO.
  // meta_mutex_ held.
  int queue_locked(const KvRecord& record, uint64_t* ticket, std::string* why);
  // The inode a name held, taken before the record that drops the name is
  // applied (which forgets its extents).
  struct Victim {
    uint64_t ino = 0;
    std::vector<KvFsExtent> extents;
  };
  Victim victim_locked(const std::string& dir, const std::string& name) const;
  // Its extents go to pending release with `ticket`, or to its open node.
  void drop_victim_locked(const Victim& victim, uint64_t ticket);
  void release_after_locked(uint64_t ticket, const std::vector<KvFsExtent>& extents);
  void release_durable_locked();
  // Returns once the records up to `ticket` are durable.
  int commit_through(uint64_t ticket, std::string* why);
  int lead_commit(std::string* why);
  int write_pending(std::vector<Pending> batch, std::string* why);
  bool compaction_due() const;
  int compact_locked(std::string* why);
  std::vector<KvRecord> snapshot_records() const;

  // ---- allocation (kvfs.cc)
  // `need` (at most `want`): what the caller cannot do without; the rest of
  // `want` is room to grow into, given up before the allocation fails.
  int allocate(uint64_t want, uint64_t hint, std::vector<KvFsExtent>* out, std::string* why, uint64_t need = 0);
  // A ring allocated, zeroed and recorded (make_journal's, resize_journal's).
  int new_ring(uint64_t size, std::vector<KvFsExtent>* extents, std::string* why, uint64_t align);
  int grow(uint64_t want, bool wait_if_refused, std::string* why);
  bool take_contiguous_segment(KvFsExtent* segment);
  // Puts segments aside for the log until kSpareSegments are (no growth):
  // false when no free run holds one more.
  bool refill_spare_segments();
  size_t spare_segments() const;

  // ---- files (kvfs_file.cc)
  int write_blocks(KvFsNode* node, uint64_t upto, std::string* why);
  int sync_file(KvFsNode* node, std::string* why);
  int close_writer(KvFsNode* node, std::string* why);
  // A handle goes away (`writer`: the writable one).
  void put_node(const std::shared_ptr<KvFsNode>& node, bool writer);
  // The node of a named file, shared with its open handles; meta_mutex_ held.
  std::shared_ptr<KvFsNode> node_locked(uint64_t ino);
  int truncate_file(KvFsNode* node, uint64_t size, std::string* why);
  int read_file(KvFsNode* node, uint64_t offset, uint64_t n, char* out, uint64_t* got, std::string* why);
  int read_data(const KvFsNode& node, uint64_t offset, uint64_t len, char* out, std::string* why);
  KvUpdate update_of(const KvFsNode& node, KvTailKind tail_kind) const;
  int queue_update(KvFsNode* node, KvUpdate update, uint64_t* ticket, std::string* why);

  BlockDevice* const dev_;
  const KvFsParams params_;
  // Set later when the kvfs is mounted before its tier's space is loaded
  // (the store reads RocksDB first).
  std::atomic<KvFsLender*> lender_;
  std::atomic<uint64_t> grow_step_;
  std::atomic<uint64_t> mount_headroom_{0};
  // b, A, G: fixed for the kvfs's life, so the file paths read them without
  // the lock that guards super_.
  const KvFsGeometry geo_;
  ExtentAllocator alloc_;

  std::mutex commit_mutex_;
  std::unique_ptr<KvFsLogWriter> writer_;  // commit_mutex_
  uint64_t log_bytes_ = 0;                 // commit_mutex_: groups written to this log
  uint64_t snapshot_bytes_ = 0;            // commit_mutex_: of which the snapshot

  mutable std::mutex meta_mutex_;
  std::condition_variable committed_;
  KvFsSuper super_;
  std::unique_ptr<KvFsState> state_;
  std::vector<Pending> pending_;
  uint64_t last_ticket_ = 0;
  uint64_t durable_ticket_ = 0;
  bool leading_ = false;
  int log_error_ = 0;  // sticky: once a group or superblock write failed, nothing more is logged
  std::string log_error_why_;
  // Segments kept aside for the log, out of the free map and in no record
  // (a remount finds them free again): the next one, and one more for a
  // compaction, which gives the old ones back when the kvfs has no room
  // left (log_short_).
  static constexpr size_t kSpareSegments = 2;
  mutable std::mutex spare_mutex_;
  std::vector<KvFsExtent> spare_segments_;
  std::atomic<bool> log_short_{false};
  std::vector<std::pair<uint64_t, KvFsExtent>> pending_release_;  // (ticket, extent)
  // Chunks a grow has logged but not yet handed to the allocator; meta_mutex_
  // held. A check taken in between counts them as held, not as lost.
  std::vector<KvFsExtent> granting_;
  std::map<uint64_t, std::shared_ptr<KvFsNode>> open_;  // nodes with handles
  std::set<std::string> locks_;
  uint64_t next_ino_ = kKvFsFirstFileIno;
  std::atomic<uint64_t> syncs_{0}, log_flushes_{0}, compactions_{0}, returns_{0}, return_bytes_{0};
};

}  // namespace hybridstore
