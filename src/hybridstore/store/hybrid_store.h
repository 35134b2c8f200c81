// HybridStore: the engine, an object store with the model of Ceph's ObjectStore.
//
// A store is a directory holding a RocksDB database (metadata: collections,
// onodes, omap, allocation state) and a device per tier, 2 to 4 of them
// fastest first (files or block devices, named by symlinks block.ssd,
// block.hdd, block.tier2, block.tier3 or created there as sparse files by
// mkfs).
//
// Guarantees:
//  - A transaction (or a vector of them passed together) is atomic: on error
//    nothing of it is applied and the failing op is reported.
//  - It is visible to reads as soon as queue_transaction returns, and durable
//    (survives a crash) once its on_commit callbacks run.
//  - Transactions on one collection apply and commit in submission order;
//    transactions on different collections may run in parallel, and all
//    concurrent submitters share one device flush and one RocksDB sync.
// Callers must not read an object while a transaction changing it is being
// queued (Ceph's isolation rule); reads are otherwise thread-safe.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "hscommon/config.h"
#include "hscommon/perf_counters.h"
#include "hybridstore/format/collection_id.h"
#include "hybridstore/format/object_id.h"
#include "hybridstore/format/object_stat.h"
#include "hybridstore/format/onode.h"
#include "hybridstore/store/api_types.h"
#include "hybridstore/store/transaction.h"

namespace hybridstore {

class MountedStore;
class Migrator;
struct MigrationReport;
class TierCleaner;
struct CleanerReport;
struct StorePerf;
class StoreTestHooks;
struct HeatSample;

class HybridStore {
 public:
  HybridStore(std::string path, Config cfg = Config());
  ~HybridStore();
  HybridStore(const HybridStore&) = delete;
  HybridStore& operator=(const HybridStore&) = delete;

  const std::string& path() const;
  const Config& config() const;
  // The identity mkfs gives a new store (a Ceph OSD passes its osd uuid);
  // without it mkfs generates one. Ignored for an existing store.
  int set_fsid(const std::string& uuid);

  // Reads what `path` holds without mounting; works while another process
  // has it mounted. 0, or -ENOENT when there is no store there yet (the
  // devices are still described from cfg).
  static int probe(const std::string& path, const Config& cfg, StoreProbe* out, std::string* error);
  // A store directory made again from the devices alone, as
  // `ceph-bluestore-tool prime-osd-dir` does for BlueStore: only for a store
  // whose RocksDB and journal are on its SSD. Never writes to a device and
  // refuses one a mount holds (-EBUSY). Writes `type`, `fsid`, one file per
  // meta key of the SSD label (but the secret osd_key, which becomes
  // `keyring`, and the path hints), and the block.* links, each file
  // written to a temporary name, synced and renamed. A directory holding an
  // earlier prime of the same store is primed again; one holding a RocksDB
  // or journal, or another store's fsid, is refused. `done` lists what was
  // written, for people.
  static int prime_dir(const PrimeRequest& req, std::vector<std::string>* done, std::string* error);

  // Moves the RocksDB and commit journal of a store that keeps them in its
  // directory into a KV file system on its SSD tier (docs/kvfs.md 7.3): the
  // store is mounted and closed first (which upgrades a format-3 store),
  // the database copied into chunks the SSD tier lends and verified, and
  // one rewrite of the SSD label pair commits the move; <dir>/db and
  // <dir>/journal are then renamed *.format3-moved, and deleted by the first
  // read-write mount from the device. Before that commit a failure leaves
  // the store as it was. Not while mounted (-EBUSY). Refusals, with nothing
  // changed: a store already on the device (-EEXIST), raw NAND
  // (-EOPNOTSUPP), an SSD tier without the space (-ENOSPC), a bad
  // opts.verify (-EINVAL).
  int move_kv_to_device(const MoveKvOptions& opts, MoveKvReport* report, std::string* error = nullptr);
  // Undoes a move that no read-write mount from the device has followed
  // (the SSD label's kv_moved_pending): the *.format3-moved renamed back,
  // then the label pair says directory again. -EPERM after such a mount,
  // -EINVAL for a store whose RocksDB is in its directory.
  int move_kv_rollback(std::string* error = nullptr);

  // Creates a store at path(). Harmless on an existing store of the same
  // configuration (returns 0 and leaves it as it is).
  int mkfs(std::string* error = nullptr);
  int mount(std::string* error = nullptr);
  // For readers of a stopped store (ceph-objectstore-tool's list, export,
  // get-bytes): mounts with no background work (no migration, no cleaning)
  // and refuses every transaction with -EROFS. Recovery of the commit
  // journal runs as at any mount: it finishes what was acknowledged.
  int mount_read_only(std::string* error = nullptr);
  bool is_read_only_mount() const { return read_only_mount_; }
  // Waits for every queued transaction to be durable, then closes.
  int umount();
  bool is_mounted() const;
  // The store's fsid; all zeros when there is no store at path() yet.
  std::string fsid() const;

  // Applies the transaction(s) atomically; 0 or negative errno with *error
  // saying which op failed. Callbacks registered on the transactions run on
  // commit. A vector is applied as one atomic unit.
  int queue_transaction(Transaction t, TxnError* error = nullptr);
  int queue_transactions(std::vector<Transaction> ts, TxnError* error = nullptr);
  // queue_transaction, then wait until it is durable.
  int apply_transaction(Transaction t, TxnError* error = nullptr);
  // Blocks until everything queued so far is durable and its callbacks ran.
  int flush();
  // True when everything queued on `c` so far is durable (`on_durable` is
  // dropped); otherwise false, and `on_durable` runs once it is, after the
  // on_commit callbacks of those transactions.
  bool flush_commit(const CollectionId& c, std::function<void()> on_durable);

  std::vector<CollectionId> list_collections();
  bool collection_exists(const CollectionId& c);
  int collection_bits(const CollectionId& c);  // bits, or -ENOENT
  int collection_empty(const CollectionId& c, bool* empty);
  // Objects o with start <= o < end in ghobject order, at most max; *next is
  // the first object not returned (when stopped by `end`, the first object at
  // or after it), or ObjectId::make_max() when the collection has no more.
  int collection_list(const CollectionId& c, const ObjectId& start, const ObjectId& end, int max,
                      std::vector<ObjectId>* out, ObjectId* next);

  bool exists(const CollectionId& c, const ObjectId& o);
  int stat(const CollectionId& c, const ObjectId& o, ObjectStat* st);
  // Returns bytes read. Reading at or past EOF returns 0; off=0,len=0 reads
  // the whole object; holes read as zeros; a checksum mismatch is -EIO.
  int read(const CollectionId& c, const ObjectId& o, uint64_t off, uint64_t len, std::string* out,
           uint32_t read_flags = 0);
  // The same read into memory the caller provides, so that a front end with
  // buffers of its own (the Ceph adapter's bufferlists) gets the data without
  // a string's zero-fill and a copy out of it. `buffer(n)` is called once the
  // object's size is known, with the n > 0 bytes that will be returned, and
  // gives where they go; it is not called when nothing is read. A buffer
  // aligned to 4096 bytes lets whole aligned blocks be read from the device
  // straight into it. On error its contents are undefined.
  using ReadBuffer = std::function<char*(uint64_t n)>;
  int read_into(const CollectionId& c, const ObjectId& o, uint64_t off, uint64_t len, const ReadBuffer& buffer,
                uint32_t read_flags = 0);
  // As read_into, but when the data cache holds all of the range it hands
  // out the cached bytes themselves (no copy, and `buffer` is not called):
  // `pieces` then covers the result in order. Each piece keeps its memory
  // alive while held; nothing changes it. Otherwise `pieces` stays empty
  // and the read goes to `buffer` as read_into's.
  using ReadPiece = hybridstore::ReadPiece;
  int read_shared(const CollectionId& c, const ObjectId& o, uint64_t off, uint64_t len, const ReadBuffer& buffer,
                  std::vector<ReadPiece>* pieces, uint32_t read_flags = 0);
  // Allocated ranges {offset: length} within [off, off+len).
  int fiemap(const CollectionId& c, const ObjectId& o, uint64_t off, uint64_t len,
             std::map<uint64_t, uint64_t>* out);
  int getattr(const CollectionId& c, const ObjectId& o, const std::string& name, std::string* value);
  int getattrs(const CollectionId& c, const ObjectId& o, std::map<std::string, std::string>* out);

  int omap_get(const CollectionId& c, const ObjectId& o, std::string* header,
               std::map<std::string, std::string>* out);
  int omap_get_header(const CollectionId& c, const ObjectId& o, std::string* header);
  int omap_get_keys(const CollectionId& c, const ObjectId& o, std::set<std::string>* keys);
  int omap_get_values(const CollectionId& c, const ObjectId& o, const std::set<std::string>& keys,
                      std::map<std::string, std::string>* out);
  int omap_check_keys(const CollectionId& c, const ObjectId& o, const std::set<std::string>& keys,
                      std::set<std::string>* present);
  // Null when the object does not exist.
  std::unique_ptr<OmapIterator> get_omap_iterator(const CollectionId& c, const ObjectId& o);

  // Moves all of an object's data to `target`, crash-safely: the copy goes
  // to new space, the extent map switches in one commit, the old space is
  // freed after. Returns 0 (also when already there), -ENOENT (gone),
  // -EAGAIN (written while being copied: nothing moved, try again),
  // -ENOSPC, -EIO (the source fails its checksums), -EFBIG (too large to move).
  int migrate(const CollectionId& c, const ObjectId& o, Tier target);
  // Calls fn for every object of every collection, in key order.
  int for_each_object(const std::function<void(const CollectionId&, const ObjectId&, const ObjectStat&)>& fn);
  // The same, read from the onode records in RocksDB in ranges, not through
  // the onode cache (OnodeStore::scan_space): what the migration pass's scan
  // uses when its planner is bounded. Sees what was committed.
  int scan_objects(const std::function<void(const CollectionId&, const ObjectId&, const ObjectStat&)>& fn);
  // The same with each object's heat read from its record beside the onode
  // and the hot set's unwritten part added (null: no heat), when the heat
  // is on demand (hybridstore_tier_heat_mode); -EOPNOTSUPP in load mode.
  int scan_objects_heat(
      const std::function<void(const CollectionId&, const ObjectId&, const ObjectStat&, const HeatSample*)>& fn);

  int statfs(StoreStats* st);
  // Checks metadata (every extent referenced once, allocation state agrees
  // with the onodes, omap owned); deep also reads and verifies all data.
  // Returns the number of errors (0 = clean) or a negative errno. On a store
  // that is not mounted, it mounts it for the check and unmounts it again.
  int fsck(bool deep, FsckReport* report);
  // Maintenance: compacts RocksDB; drops the clean onodes kept in memory;
  // RocksDB's own statistics, as text.
  int compact();
  void drop_caches();
  std::string kv_statistics();
  // Offline repair: mount_for_repair() instead of mount(), then repair().
  // *changes lists every change made; returns how many, or a negative errno.
  int mount_for_repair(std::string* error, std::vector<std::string>* dropped);
  int repair(FsckReport* found, std::vector<std::string>* changes);

  // Tiering: a migration pass now, and saving the heat history (also done
  // periodically and at umount).
  // The report of every tier's space that has one (the SSD's HFM sections;
  // empty when the tiers use plain extents).
  std::string sections_report();
  int migrate_now(MigrationReport* report);
  // Promotes now the objects reads have queued for promotion (the migrator
  // thread does it within a second anyway): how many moved, or -ENOTCONN.
  int promote_now();
  // Writes the absorbed small writes of every object back to the HDD
  // (the migrator does it by itself while the SSD is over its target ratio):
  // how many, or -ENOTCONN.
  int destage_now();
  // Client ops (transactions and reads) the migrator's idle detection has
  // counted since mount.
  uint64_t client_ops_counted() const;
  // One pass of each tier's cleaner (the cleaners run by themselves when
  // their tier runs short of free erase units); `force` cleans even when it
  // does not. *report sums the passes.
  int clean_now(bool force, CleanerReport* report);
  int save_heat();

  // Ceph's meta keys (ObjectStore::write_meta/read_meta), kept in the meta
  // map of the SSD device's label (docs/kvfs.md 5.5), mounted or not: a
  // mounted store rewrites its label pair; an unmounted one opens block.ssd
  // exclusively (-EBUSY while another mount holds it), rewrites the pair
  // and closes it. Any format-4 store; a label of record version 1 (format
  // 3, not yet upgraded) answers -EOPNOTSUPP. -EINVAL for an empty key or a
  // path_block.* key (the store's own); -E2BIG for a key or value over the
  // label's limits or a label that would not fit; -EROFS on a read-only
  // mount. Nothing is written on error, and *error says why.
  int set_meta(const std::string& key, const std::string& value, std::string* error = nullptr);
  // -ENOENT when the label has no such key.
  int get_meta(const std::string& key, std::string* value, std::string* error = nullptr);
  int rm_meta(const std::string& key, std::string* error = nullptr);

  // The store's performance counters (group "hybridstore"): registered when
  // the object is constructed, so the schema is there before mount; they
  // live as long as the object and keep counting across remounts (gauges
  // are set again at mount). Names and meanings: store/store_perf.cc.
  PerfCounterSet& perf();

  // Memory (docs/memory.md): every holder the store counts, by name, with
  // its items and bytes (dump_mempools' by_pool; empty when not mounted),
  // and hybridstore_memory_target changed on a mounted store (the Ceph
  // adapter follows osd_memory_target with it; 0: each cache back to its
  // own option). -ENOTCONN when not mounted.
  std::vector<MemPoolStat> mempools();
  int set_memory_target(uint64_t bytes);
  // The process's heap in use as the memory target reads it (tcmalloc's
  // allocated bytes, else mallinfo2's); *source says which ("none": 0).
  static uint64_t heap_bytes(std::string* source = nullptr);

  // The KV file system under the RocksDB of the store at `path` (a device
  // store), read from its SSD without writing to it (docs/kvfs.md 5.5): the
  // superblock slots, the chunks, the files and their extents, with
  // req.log every log record, with req.export_dir a copy of every file
  // there, whose names go to *exported. The SSD is opened under its
  // exclusive lock: a device a mount holds is refused with -EBUSY, because
  // the running kvfs may reuse the extents being read. -ENOTSUP for a
  // store whose RocksDB is in <path>/db.
  static int kvfs_inspect(const std::string& path, const Config& cfg, const KvFsInspectRequest& req, KvFsView* out,
                          std::vector<std::string>* exported, std::string* error);

 private:
  int scan_objects_impl(
      bool with_heat,
      const std::function<void(const CollectionId&, const ObjectId&, const ObjectStat&, const HeatSample*)>& fn);
  // White-box tests reach a few internals through these narrow hooks
  // (store/test_hooks.h), nothing else.
  friend class StoreTestHooks;
  // Moves the object's data to `target`: all of it (begin == end), or what
  // lies on `target` in its device range [begin, end) (cleaning).
  int move_data(const CollectionId& c, const ObjectId& o, Tier target, uint64_t begin, uint64_t end);
  // The store as the migrator and the tiers' cleaners see it (their Store
  // interfaces); outlives them.
  class ComponentView;
  // Mounts the store (mount, mount_read_only): -EBUSY when it is mounted.
  int open_store(std::string* error, bool read_only = false);
  // The once-a-second chores of a store mounted for writing, on the
  // migrator's thread: the staged tiers' timeouts, then each cleaner's pass.
  void tick();

  const std::string path_;
  Config cfg_;
  // Lives as long as the store object; registered before mkfs and mount.
  std::unique_ptr<StorePerf> perf_;
  // The fsid mkfs gives a new store (set_fsid); zero: generate one.
  std::array<uint8_t, 16> requested_fsid_{};
  // mount_for_repair: mounts drop what they would otherwise refuse (corrupt
  // deferred or collection records), listing it here.
  bool repair_mode_ = false;
  std::vector<std::string> repair_log_;
  std::unique_ptr<MountedStore> store_;  // null while not mounted
  std::unique_ptr<ComponentView> view_;
  std::unique_ptr<Migrator> migrator_;
  // One per tier whose space needs cleaning, while mounted for writing.
  std::vector<std::unique_ptr<TierCleaner>> cleaners_;
  bool cleaning_ = false;
  std::mutex cleaner_mutex_;
  // No move between tiers and no cleaner relocation while held (fsck).
  struct Quiet {
    std::unique_lock<std::mutex> cleaning, moves;
  };
  Quiet hold_background();
  bool read_only_mount_ = false;
  // Held over a change of the SSD label's meta keys, and over fsck and
  // repair, which read the label pair from the device and must not meet
  // half of a rewrite.
  // set_meta and rm_meta: value null removes the key.
  int change_meta(const std::string& key, const std::string* value, std::string* error);
  std::mutex meta_mutex_;
};


}  // namespace hybridstore
