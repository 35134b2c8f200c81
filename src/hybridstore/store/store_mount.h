// A mounted store: the parts mount opens, in the order it opens them,
// each owning its own state behind its own header, and what works on them
// together (flush, statistics, fsck, the upgrade of an older format).
// Umount closes them in the reverse order.
//
//   RocksDB and the commit journal   metadata, made durable by the committer
//   TierSet                          the tiers' spaces and devices, in order
//   DeferredWriter                   small writes and staged data, applied later
//   CollectionTable, OnodeStore      collections, onodes, omap ids
//   ObjectHeat                       access history, promotion on read
//   DataReader, DataWriter           object data on the tiers
//   TxnPipeline                      transactions: ops, commit, publish
//   StoreReader                      reads
//
// Lock order: collection locks (in collection-name order, exclusive for a
// transaction, shared for reads), then the short internal mutexes
// (collection table, onode cache, allocators, committer). A thread holding
// a short mutex never takes a collection lock, and the committer takes no
// collection lock, so a transaction may wait for earlier commits while
// holding its locks.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hscommon/config.h"
#include "hybridstore/format/store_format.h"
#include "hybridstore/kv/kv_committer.h"
#include "hybridstore/space/tier_space.h"
#include "hybridstore/store/api_types.h"
#include "hybridstore/store/memory_tuner.h"

namespace rocksdb {
class Cache;
class DB;
class Env;
}  // namespace rocksdb

namespace hybridstore {

class CollectionTable;
class CommitJournal;
class DataReader;
class DataWriter;
class DeferredWriter;
class KvDevice;
class KvFsLender;
class ObjectHeat;
class OnodeCheckpointer;
class OnodeStore;
class StoreReader;
class TierSet;
class TxnPipeline;
struct StorePerf;

// mkfs: makes a store at `path` from `cfg` (harmless on an existing one);
// `fsid` all zeros: a new one is generated.
int make_store(const std::string& path, const Config& cfg, const Uuid& fsid, std::string* error);
// The store's RocksDB at <path>/db, opened (with `create`: made) with the
// store's options: what mkfs and mount share. With `kv_env` (a KvDevice's
// Env), RocksDB is the one in the kvfs on the fastest tier instead.
// With `compactions_held`, automatic compactions start off (and *compactions_held
// says whether they were on in the options): a mount whose kvfs has no lender
// yet cannot grow for a compaction, which would fail it with NoSpace.
// `block_cache`: the block cache made for it, for a mount that resizes it.
int open_store_db(const std::string& path, const Config& cfg, bool create, std::unique_ptr<rocksdb::DB>* out,
                  std::string* error, rocksdb::Env* kv_env = nullptr, bool* compactions_held = nullptr,
                  std::shared_ptr<rocksdb::Cache>* block_cache = nullptr);
// The block cache's size from hybridstore_kv_block_cache_size (and, when
// set, the memory target's first cut of it, before the tuner sizes it).
uint64_t kv_block_cache_bytes(const Config& cfg, bool on_device);
// Fault injection and device models are test machinery that test tools
// install as hooks; a store without them must not run as if they were on.
int check_storage_hooks(const Config& cfg, std::string* error);
// Whether small in-place writes' data rides in the commit journal's record
// (hybridstore_small_write_journal=data, format 6): only with a journal.
// Left at its default, the option yields to hybridstore_commit_journal_size=0;
// set to data explicitly with no journal, -EINVAL says why.
int small_writes_in_ring(const Config& cfg, bool* in_ring, std::string* error);
// The format mkfs makes, and a read-write mount upgrades to, for the
// options: 7 with hybridstore_small_write_journal=on (onode versions), 6
// with ring data, else 5. `in_ring` from small_writes_in_ring.
uint32_t target_format(const Config& cfg, bool in_ring);

class MountedStore {
 public:
  // Mounts the store at `path`. `cfg` takes the values of the mkfs options
  // the store was made with; `perf` outlives the mount. With `repair_log`,
  // what mount would refuse (corrupt deferred or collection records) is
  // dropped and described there. A read-only mount leaves the store's
  // format (and its labels) as it found them.
  static int open(const std::string& path, Config* cfg, StorePerf* perf, std::vector<std::string>* repair_log,
                  bool read_only, std::unique_ptr<MountedStore>* out, std::string* error);
  // Closes without settling: what is queued stays queued (and is replayed
  // at the next mount). close() first for an orderly umount.
  ~MountedStore();
  MountedStore(const MountedStore&) = delete;
  MountedStore& operator=(const MountedStore&) = delete;

  // Umount: everything queued made durable and written out, the heat
  // saved, then closed.
  int close();

  // Blocks until everything queued so far is durable and its callbacks ran.
  int flush();
  // flush() plus every staged write unit written out and every held free
  // returned: what umount and fsck need (a sync does not force partly
  // filled units).
  int settle();
  // The once-a-second chores: the staged tiers' timeouts, the memory tuner.
  void tick();
  // Every holder of memory the store counts (docs/memory.md, step 3), in
  // dump_mempools' terms.
  std::vector<MemPoolStat> mempools();
  // The tuner of hybridstore_memory_target; null when it is 0. Tests give
  // it their own heap readings (the tuner is made again with `heap`).
  MemoryTuner* memory_tuner() { return tuner_.get(); }
  void restart_memory_tuner(std::function<uint64_t()> heap);
  // hybridstore_memory_target changed at run time (0: the caches go back to
  // their own options).
  void set_memory_target(uint64_t bytes);
  // The migration pass's planner while it runs: set by the migrator.
  void set_plan_memory(uint64_t items, uint64_t bytes);
  int save_heat();
  int statfs(StoreStats* st);
  // `lent`: the KV file system's chunks per tier (StoreFsck::set_lent).
  int fsck(bool deep, FsckReport* report, const PerTier<std::vector<Interval>>* lent = nullptr);
  int repair(FsckReport* report, std::vector<std::string>* changes);
  const Uuid& fsid() const { return super_.fsid; }
  const Superblock& superblock() const { return super_; }

  TxnPipeline& pipeline() { return *pipeline_; }
  StoreReader& reads() { return *reads_; }
  CollectionTable& collections() { return *colls_; }
  OnodeStore& onodes() { return *onodes_; }
  TierSet& tiers() { return *tiers_; }
  const DataReader& data() const { return *data_; }
  ObjectHeat& heat() { return *heat_; }
  KvCommitter& committer() { return *committer_; }
  DeferredWriter& deferred() { return *deferred_; }
  // Null unless hybridstore_small_write_journal=on.
  OnodeCheckpointer* checkpointer() { return checkpointer_.get(); }
  rocksdb::DB* db() { return db_.get(); }
  // RocksDB's KV file system on the SSD; null for a directory store.
  KvDevice* kv_device() { return kv_.get(); }

 private:
  MountedStore(std::string path, Config* cfg, StorePerf* perf);
  // The steps of open(), in order.
  // A store whose RocksDB is on its SSD (docs/kvfs.md 5.2, steps 1-7):
  // the SSD opened, locked and wrapped once, its label read (and <dir>/fsid
  // and type written when the directory lost them), the kvfs mounted, and
  // RocksDB opened in it.
  int open_kv_device(std::string* error);
  int lock_fsid(std::string* error);
  int read_superblock(std::string* error);
  // Opens <store>/journal (making it when the option asks for one) and
  // replays it into RocksDB; *next_seq gets the first journal number to use.
  int open_journal(uint64_t* next_seq, std::string* error);
  // A read-write mount, once the replay is durable in RocksDB: a ring whose
  // size is not what hybridstore_commit_journal_size makes, when the option
  // is set, is made again at that size (docs/small-writes.md 9, "As built
  // (step 4)"), empty. Without the room on the device the old ring stays
  // and the mount says so.
  int resize_journal(std::string* error);
  void set_kvfs_mount_headroom();
  // The storage hooks' decorator for the directory's ring (none without hooks).
  CommitJournal::Wrap journal_wrap() const;
  std::vector<CommitJournal::RingWrite>* ring_writes_ptr() {
    return super_.format_version >= kFormatSmallWriteJournal ? &ring_writes_ : nullptr;
  }
  std::vector<CommitJournal::TxnDeltas>* onode_deltas_ptr() {
    return super_.format_version >= kFormatOnodeVersions ? &onode_deltas_ : nullptr;
  }
  // Mount's step 3 (docs/small-writes.md section 7): the deltas replay
  // found, applied to the stored onodes, which go into `finish` (the batch
  // that also ends the replay).
  int replay_deltas(rocksdb::WriteBatch* finish, std::string* error);
  // Transactions put their onode deltas into the journal's records
  // (hybridstore_small_write_journal=on, on a store of format 7).
  bool journal_deltas() const;
  CommitJournal::RingRead ring_read() const {
    return super_.format_version >= kFormatWalkedJournal ? CommitJournal::RingRead::kWalkFromTail
                                                         : CommitJournal::RingRead::kScanEveryBlock;
  }
  int open_tiers(std::vector<std::string>* repair_log, std::string* error);
  // Once the tiers are loaded: the kvfs grows into the SSD's space, which
  // keeps a floor free for it.
  void lend_to_kvfs();
  // What the kvfs owns, per tier (the SSD's chunks); empty for a directory
  // store.
  PerTier<std::vector<Interval>> kvfs_chunks() const;
  // fsck's rows of the kvfs, added to *report (deep: the files read whole,
  // RocksDB's checksums verified).
  void check_kvfs(FsckReport* report, bool deep);
  // The kvfs's owned and used bytes into the perf gauges, and what it did
  // since into the counters (once a second).
  void set_kvfs_gauges();
  // Gives the kvfs's free peaks back to the SSD tier (from tick()).
  void balance_kvfs();
  void start_writers(uint64_t next_journal_seq);
  // The gauges of objects per tier (counted once for a store made before
  // they were kept).
  int set_object_gauges(std::string* error);
  // The upgrade to the current format (docs/kvfs.md 7.2): the superblock
  // first, durable, then every tier's label pair. Either step a crash left
  // undone is done by the next read-write mount.
  int upgrade_format(std::string* error);
  int upgrade_labels(std::string* error);
  // docs/kvfs.md 7.3, M10: the first read-write mount from the device after
  // a move clears kv_moved_pending, then deletes the directory's old
  // RocksDB and journal (*.format3-moved).
  int finish_move(std::string* error);
  // Writes the write units staged tiers completed (tick: staging timeout;
  // flush: all) with the state they drained: the state's commit sequence
  // number, 0 when there was none.
  uint64_t submit_staged_state(TierSpace::Drain how);

  const std::string path_;
  Config* cfg_;
  StorePerf* perf_;
  int fsid_lock_fd_ = -1;
  Superblock super_;
  // With RocksDB on the SSD: the SSD's device (test hooks around it), which
  // the kvfs, the journal's ring and the SSD tier's stack share; the kvfs
  // and RocksDB's Env over it; the tier's space as the kvfs's lender.
  std::shared_ptr<BlockDevice> ssd_base_;
  // The FTL's erase block on raw NAND (0 elsewhere): the ring's spans
  // discarded at a checkpoint, so its next pass writes unmapped erase blocks.
  uint64_t journal_discard_span_ = 0;
  std::unique_ptr<KvDevice> kv_;
  std::unique_ptr<KvFsLender> lender_;
  // What the tick gives back from the kvfs (docs/kvfs.md 2.5): down to
  // 2 x step free (or the mount headroom and a step), never below what mkfs
  // lent, once two steps more are free; zero
  // step when hybridstore_kvfs_give_back is off. fsck and repair hold the
  // mutex, so no range leaves the kvfs while they compare it with the tier.
  uint64_t kvfs_give_back_step_ = 0;
  uint64_t kvfs_keep_owned_ = 0;
  // Kept free in the kvfs for the next mount (KvFs::set_mount_headroom).
  uint64_t kvfs_mount_headroom_ = 0;
  std::mutex kvfs_balance_mutex_;
  // RocksDB opened with its automatic compactions off until the kvfs has its
  // lender (open_store_db); lend_to_kvfs turns them back on.
  bool compactions_held_ = false;
  std::unique_ptr<rocksdb::DB> db_;
  std::unique_ptr<CommitJournal> journal_;  // outlives committer_, which writes it
  // Format 6: the ring data the journal's replay found, written by the
  // deferred replay in open_tiers; the journal number replay handed out.
  std::vector<CommitJournal::RingWrite> ring_writes_;
  // Format 7: the onode deltas it found, applied in open_tiers.
  std::vector<CommitJournal::TxnDeltas> onode_deltas_;
  uint64_t journal_next_seq_ = 0;
  // hybridstore_small_write_journal=data
  bool ring_data_ = false;
  // Acknowledged deferred writes this mount put in place before anything
  // read them: from the commit journal's ring, and from D records.
  uint64_t replayed_from_ring_ = 0;
  uint64_t replayed_from_records_ = 0;
  uint64_t deltas_applied_ = 0, deltas_included_ = 0;
  WriteTracker write_tracker_;
  std::unique_ptr<TierSet> tiers_;
  std::unique_ptr<CollectionTable> colls_;
  std::unique_ptr<KvCommitter> committer_;
  std::unique_ptr<OnodeStore> onodes_;
  std::unique_ptr<DeferredWriter> deferred_;
  // hybridstore_small_write_journal=on: writes dirty onodes to RocksDB.
  std::unique_ptr<OnodeCheckpointer> checkpointer_;
  std::unique_ptr<ObjectHeat> heat_;
  std::unique_ptr<DataReader> data_;
  std::unique_ptr<DataWriter> writer_;
  std::unique_ptr<TxnPipeline> pipeline_;
  std::unique_ptr<StoreReader> reads_;
  // RocksDB's block cache, resized by the tuner.
  std::shared_ptr<rocksdb::Cache> block_cache_;
  // Held over tick's use of the tuner and over its replacement.
  std::mutex tuner_mutex_;
  std::unique_ptr<MemoryTuner> tuner_;
  std::atomic<uint64_t> plan_items_{0}, plan_bytes_{0};
  // The caches' sizes from their own options (no memory target).
  void apply_cache_options();
};

}  // namespace hybridstore
