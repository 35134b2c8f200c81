// Internals of HybridStore, shared by the store_*.cc files. Not a public API.
//
// Lock order: collection locks (in collection-name order, exclusive for a
// transaction, shared for reads), then the short internal mutexes (collection
// map, onode cache, allocators, committer). A thread holding a short mutex
// never takes a collection lock, and the committer takes no collection lock,
// so a transaction may wait for earlier commits while holding its locks.
#pragma once
#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/utilities/write_batch_with_index.h>

#include "hscommon/config.h"
#include "hybridstore/format/store_format.h"
#include "hsio/block_device.h"
#include "hsio/read_cache.h"
#include "hybridstore/kv/commit_journal.h"
#include "hybridstore/kv/deferred.h"
#include "hybridstore/kv/kv_committer.h"
#include "hybridstore/kv/kv_schema.h"
#include "hybridstore/kv/onode_cache.h"
#include "hybridstore/space/tier_space.h"
#include "hybridstore/store/hybrid_store.h"
#include "hybridstore/store/store_perf.h"
#include "hybridstore/tier/heat_tracker.h"
#include "hybridstore/tier/migrator.h"
#include "hybridstore/tier/placement.h"

namespace hybridstore {

// One per collection name ever used since mount, existing or not: the lock
// must exist before the collection does (mkcoll) and outlive it (rmcoll).
struct CollectionState {
  explicit CollectionState(CollectionId c) : cid(std::move(c)) {}
  const CollectionId cid;
  std::shared_mutex lock;
  std::atomic<bool> exists{false};
  std::atomic<uint32_t> bits{0};
  std::atomic<uint64_t> last_seq{0};  // last transaction that touched it
};

// The tier an object counts on (kStatSsdObjects + home): the one holding most
// of its data, the faster on a tie; -1 when it holds no data. `order` is the
// store's tiers, fastest first.
inline int home_tier(const Onode& o, const Tier* order, int tiers) {
  uint64_t bytes[kMaxTiers];
  for (int t = 0; t < kMaxTiers; ++t) bytes[t] = o.extents.bytes_on(tier_at(t));
  const int r = heaviest_rank(bytes, order, tiers);
  return r < 0 ? -1 : tier_index(order[r]);
}

using ObjectKey = std::pair<std::string, ObjectId>;  // (collection name, object)
struct ObjectKeyHash {
  size_t operator()(const ObjectKey& k) const {
    return std::hash<std::string>()(k.first) * 31 + ObjectIdHash()(k.second);
  }
};

// A transaction's RocksDB writes. Nearly every transaction only adds to
// them, so they start as a plain WriteBatch that goes to the committer as it
// is. The few ops that read keys back through the batch (listing a
// collection, deleting or copying an omap range) make it an indexed batch
// first, which then takes every later write as well.
class TxnBatch {
 public:
  rocksdb::WriteBatchBase* get() {
    return indexed_ ? static_cast<rocksdb::WriteBatchBase*>(indexed_.get()) : &plain_;
  }
  rocksdb::WriteBatchBase* operator->() { return get(); }
  // Null when the batch holds a record an indexed batch cannot take.
  rocksdb::WriteBatchWithIndex* indexed();
  // The finished batch; this one is empty afterwards.
  rocksdb::WriteBatch take();

 private:
  rocksdb::WriteBatch plain_;
  std::unique_ptr<rocksdb::WriteBatchWithIndex> indexed_;
};

// An onode key's extent shards as stored (StoreImpl::put_onode).
using StoredShards = std::vector<std::pair<uint64_t, ExtentMap::ShardHandle>>;

// The working state of one transaction. Nothing here is visible to others
// until install; on failure it is dropped and its allocations released.
struct TxnContext {
  TxnBatch batch;
  // Objects touched: a private copy, or null when removed in this txn.
  std::unordered_map<ObjectKey, std::shared_ptr<Onode>, ObjectKeyHash> onodes;
  std::unordered_map<ObjectKey, int, ObjectKeyHash> home_before;  // home_tier() when first loaded
  std::set<ObjectKey> dirty;  // onodes to write to the batch
  // The extent shards each touched key holds in the store, or in this
  // batch once written to it (StoreImpl::put_onode). The handles also keep
  // a loaded shard from being changed in place: a change copies it.
  std::unordered_map<ObjectKey, StoredShards, ObjectKeyHash> stored;
  struct CollChange {
    bool exists;
    uint32_t bits;
  };
  std::map<CollectionId, CollChange> colls;
  std::vector<PExtent> allocated;  // released at once if the txn fails
  std::vector<PExtent> released;   // released after commit
  std::vector<uint64_t> deferred;  // deferred writes staged by this txn
  uint64_t relocated = 0;          // bytes the SSD cleaner moved in this txn
  // Data for freshly allocated space, written to the devices only once every
  // op succeeded (a failing transaction writes nothing). Reads inside the
  // transaction see it through read_data's overlay.
  std::vector<AlignedBuffer> buffers;
  std::vector<TierWrite> writes;
  // Those of `writes` still going on when the transaction is queued (and
  // then `buffers` too); its commit waits for them.
  std::shared_ptr<PendingWrites> pending;
  int64_t stat_delta[kv::kStatCount] = {};
  std::map<CollectionId, std::shared_ptr<CollectionState>> locked;
};

// Absorbing a small write moves it from the object's tier to the fastest,
// for an allocation, an extent split and a write-back later: it pays only
// when the fastest tier does random writes without seeking and the object's
// tier does not. Tiers on one kind of device (files on one disk, two SSDs)
// write in place instead, as BlueStore would. A device of unknown media
// counts as its role: the fastest solid-state, the others disks.
bool absorb_pays(Media fastest, Media below);

class StoreImpl {
 public:
  StoreImpl(std::string path, Config cfg);
  ~StoreImpl();

  // ---- lifecycle (store_lifecycle.cc)
  int mkfs(std::string* error);
  int mount(std::string* error);
  int umount();
  int statfs(StoreStats* st);
  // Sets the gauges of space and objects per tier at mount.
  int init_perf_gauges(std::string* error);
  int flush();
  // flush() plus every staged SSD write unit written out and every held free
  // returned: what umount and fsck need (a sync does not force partly filled
  // units).
  int settle();

  // ---- transactions (store_txn.cc)
  // `caller_waits`: the caller waits for the commit next (apply_transaction).
  int queue_transactions(std::vector<Transaction>& ts, TxnError* error, uint64_t* seq_out,
                         bool caller_waits = false);
  int wait_committed(uint64_t seq) { return committer_->wait_committed(seq); }

  // ---- reads (store_read.cc)
  std::vector<CollectionId> list_collections();
  bool collection_exists(const CollectionId& c);
  int collection_bits(const CollectionId& c);
  int collection_list(const CollectionId& c, const ObjectId& start, const ObjectId& end, int max,
                      std::vector<ObjectId>* out, ObjectId* next);
  // The onode stored under `key`, its extent shards included: 0, -ENOENT, or
  // -EIO with *why (corrupt, a shard missing or not the one the onode names).
  int load_onode(const std::string& key, Onode* out, std::string* why);
  // The same for an onode record in hand (read from an iterator): its shards
  // are read with `ro`.
  int complete_onode(const std::string& key, std::string_view value, const rocksdb::ReadOptions& ro, Onode* out,
                     std::string* why);
  // Puts `o` under `key` in `batch`: the record, and the extent shards that
  // differ from `stored` (the shards the key holds now: empty when it holds
  // none or an inline map; a null handle for a shard of unknown content),
  // deleting shards it no longer has. Sets o.extents_in_shards; returns the
  // shards the key holds afterwards.
  StoredShards put_onode(rocksdb::WriteBatchBase* batch, const std::string& key, Onode& o,
                         const StoredShards& stored);
  // The shards the onode under `key` names in the store now, with null
  // handles (content unknown); empty when it names none or cannot be read.
  StoredShards shards_in_store(const std::string& key);
  // Deletes the shards in `stored`.
  static void delete_shards(rocksdb::WriteBatchBase* batch, const std::string& key, const StoredShards& stored);
  // The shards an onode holds under its key as loaded (see put_onode).
  static StoredShards stored_shards(const Onode* o) {
    return o && o->extents_in_shards ? o->extents.shard_handles() : StoredShards();
  }
  // `key`: the object's onode key when the caller has built it already.
  int get_onode_for_read(const CollectionId& c, const ObjectId& o, OnodeRef* out,
                         std::shared_lock<std::shared_mutex>* lock, const std::string* key = nullptr);
  int read(const CollectionId& c, const ObjectId& o, uint64_t off, uint64_t len, std::string* out,
           uint32_t read_flags = 0);
  // With `pieces`, a range the data cache holds whole comes back as the
  // cached bytes themselves (HybridStore::read_shared).
  int read_into(const CollectionId& c, const ObjectId& o, uint64_t off, uint64_t len,
                const std::function<char*(uint64_t)>& buffer, uint32_t read_flags = 0,
                std::vector<HybridStore::ReadPiece>* pieces = nullptr);
  int omap_read(const CollectionId& c, const ObjectId& o,
                const std::function<int(rocksdb::DB*, uint64_t nid)>& fn);
  std::unique_ptr<OmapIterator> omap_iterator(const CollectionId& c, const ObjectId& o);

  // ---- fsck and repair (store_fsck.cc)
  int fsck(bool deep, FsckReport* report);
  // Fixes what a scan finds; *changes says what changed. Returns the number
  // of changes or a negative errno. Mount with repair_mode_ first.
  int repair(FsckReport* report, std::vector<std::string>* changes);
  int scan(bool deep, FsckReport* report, struct RepairPlan* plan);
  // Set before mount: tolerate and drop what mount would otherwise refuse
  // (corrupt deferred or collection records), listing it in repair_log_.
  bool repair_mode_ = false;
  std::vector<std::string> repair_log_;

  // ---- data path (store_data_ops.cc)
  // Reads logical [off, off+len) of `o` into out (holes as zeros), verifying
  // checksums. The range must lie within the object's allocated units or holes.
  int read_data(const CollectionId& c, const ObjectId& oid, const Onode& o, uint64_t off,
                uint64_t len, char* out, const TxnContext* tx = nullptr);
  int read_extent_raw(const DataExtent& e, std::string* out);  // verifies csums
  // The range as pieces of the data cache, when it holds every block of it
  // and read_data would have used them (no holes, no staged records over
  // them); false (and `out` unchanged) otherwise.
  bool read_data_cached(const Onode& o, uint64_t off, uint64_t len, std::vector<HybridStore::ReadPiece>* out);

  const std::string path_;
  Config cfg_;
  // Lives as long as the store object; registered before mkfs and mount.
  std::unique_ptr<StorePerf> perf_;
  bool mounted_ = false;
  Superblock super_;
  std::unique_ptr<rocksdb::DB> db_;
  // One per tier, by index (0 .. tiers()-1): the device and its space
  // (space/tier_space.h). Which is faster than which is super_.order.
  std::unique_ptr<TierSpace> space_[kMaxTiers];
  TierSpace& space(Tier t) const { return *space_[tier_index(t)]; }
  int tiers() const { return super_.tiers; }
  Tier fastest() const { return super_.order[0]; }
  Tier slowest() const { return super_.order[super_.tiers - 1]; }
  // The tier's place in the order, 0 = fastest.
  int rank(Tier t) const;
  // The neighbour of `t` one step slower (+1) or faster (-1); `t` itself at
  // the end of the order.
  Tier next_tier(Tier t, int step) const;
  // Where a write that prefers `preferred` goes when a tier is full:
  // `preferred`, then the slower tiers fastest first, then the faster ones
  // nearest first. Fills `out`, returns the count (tiers()).
  int spill_order(Tier preferred, Tier* out) const;
  int home_tier(const Onode& o) const { return hybridstore::home_tier(o, super_.order, super_.tiers); }
  BlockDevice* dev(int t) const { return space_[t]->device(); }
  // Read blocks of every tier's device (hybridstore_data_cache_size; null
  // when 0): the devices the tiers hold are CachingBlockDevices over it.
  std::shared_ptr<ReadCache> read_cache_;
  std::array<BlockDevice*, kMaxTiers> devices() const;  // null past tiers()
  // Gives space back to the tier that owns it.
  void return_space(const PExtent& e);
  // Writes the write units staged tiers completed (staging timeout / all).
  void tick_staged_state();
  void flush_staged_state();
  // The staged tiers' changed state and completed regions (tick or flush):
  // returns the state's commit sequence number, 0 when there was none.
  uint64_t submit_staged_state(TierSpace::Drain how);
  uint64_t max_unit_ = 4096;  // the coarsest unit: punches land on it
  uint64_t min_unit_ = 4096;  // the finest
  std::unique_ptr<TierPlacement> placement_;
  std::unique_ptr<OnodeCache> cache_;
  WriteTracker write_tracker_;
  std::unique_ptr<CommitJournal> journal_;  // outlives committer_, which writes it
  std::unique_ptr<KvCommitter> committer_;
  std::unique_ptr<DeferredWriter> deferred_;
  std::unique_ptr<HeatTracker> heat_;
  // Set while the migrator runs (HybridStore::mount/umount): reads queue hot
  // HDD objects on it for promotion (read_into).
  std::atomic<Migrator*> promoter_{nullptr};
  uint64_t promote_hits_ = 0;      // hybridstore_tier_promote_hits
  uint64_t absorb_max_ = 0;        // hybridstore_tier_absorb_max
  double absorb_min_free_ = 0;     // hybridstore_tier_absorb_min_free
  // By tier index: the fastest tier absorbs small writes into objects there
  // (hybridstore_tier_absorb, and absorb_pays of the devices' media, decided
  // at mount).
  bool absorb_from_[kMaxTiers] = {};
  void decide_absorption();
  // True when the fastest tier has room to absorb `len` more bytes of small
  // writes.
  bool fastest_can_absorb(uint64_t len) const;
  // True when a write at `off` continues the object's previous write (HRO's
  // continuation: same type, starts where it ended, soon after).
  bool write_continues(const CollectionId& c, const ObjectId& o, uint64_t off) const;
  uint64_t promote_max_size_ = 0;  // hybridstore_tier_promote_max_size
  uint64_t promote_break_even_ = 0;  // hybridstore_tier_promote_break_even
  // Heat history in RocksDB (`H` keys): load at mount, save periodically and at umount.
  void load_heat();
  int save_heat();
  void note_access(const CollectionId& c, const ObjectId& o, AccessType type, uint64_t off, uint64_t len,
                   uint64_t size, bool counts = true);
  void note_access(const std::string& onode_key, AccessType type, uint64_t off, uint64_t len, uint64_t size,
                   bool counts = true);
  void maybe_promote(const CollectionId& c, const ObjectId& o, const std::string& onode_key, const Onode& on);
  // A transaction's writes to new space of a tier, from this many bytes on,
  // go on while it is queued (hybridstore_async_write_min; 0 = never).
  uint64_t async_write_min_ = 0;
  // hybridstore_extent_map_inline_max: larger maps are stored in shards.
  uint64_t extent_map_inline_max_ = 1024;
  int fsid_lock_fd_ = -1;

  std::mutex colls_mutex_;
  std::map<CollectionId, std::shared_ptr<CollectionState>> colls_;
  std::shared_ptr<CollectionState> coll_state(const CollectionId& c);  // creates on demand

  std::mutex nid_mutex_;
  uint64_t next_nid_ = 1;
  uint64_t nid_reserved_ = 0;  // persisted: nids below it may be in use
  uint64_t allocate_nid();     // 0 on failure

  uint64_t max_object_size_ = 0;
  // The fsid mkfs gives a new store (set_fsid); zero: generate one.
  Uuid requested_fsid_{};

 private:
  // ---- transaction internals (store_txn.cc, store_object_ops.cc)
  friend struct OpApplier;
  int check_storage_hooks(std::string* error) const;
  int open_db(bool create, std::string* error);
  // Opens <store>/journal (making it when the option asks for one) and
  // replays it into RocksDB; *next_seq gets the first journal number to use.
  int open_journal(uint64_t* next_seq, std::string* error);
  int open_devices(bool create, std::string* error);
  void close_all();
};

// Applies ops to a TxnContext (store_object_ops.cc, store_data_ops.cc).
struct OpApplier {
  StoreImpl& s;
  TxnContext& tx;
  int load_error = 0;  // set when an onode could not be read (-EIO)

  int apply(const Op& op, std::string* why);

  // Lookup through the overlay; null when the object does not exist (or
  // could not be read: then load_error is set).
  std::shared_ptr<Onode> get(const CollectionId& c, const ObjectId& o);
  std::shared_ptr<Onode> get_or_create(const CollectionId& c, const ObjectId& o);
  void mark_dirty(const CollectionId& c, const ObjectId& o) { tx.dirty.insert({c.name, o}); }
  void set_removed(const CollectionId& c, const ObjectId& o);
  bool coll_exists(const CollectionId& c, uint32_t* bits = nullptr);
  // Writes dirty onodes to the batch (before listing through it, and at the end).
  void sync_dirty();
  int wait_prior(const CollectionId& c);
  int list_objects(const CollectionId& c, std::vector<ObjectId>* out);

  // Data-changing primitives (store_data_ops.cc).
  int write_data(const CollectionId& c, const ObjectId& oid, Onode& o, uint64_t off,
                 std::string_view data);
  // `absorbable`: the write may go to the SSD although the object lies on
  // the HDD (a small write that does not continue the previous one).
  int write_data(const CollectionId& c, const ObjectId& oid, Onode& o, uint64_t off,
                 const ScatterData& data, bool absorbable = false);
  int zero_range(const CollectionId& c, const ObjectId& oid, Onode& o, uint64_t off, uint64_t len);
  int truncate(const CollectionId& c, const ObjectId& oid, Onode& o, uint64_t size);
  void release_all_data(Onode& o);
  int clone(const CollectionId& c, const ObjectId& src, const ObjectId& dst, std::string* why);
  int clone_range(const CollectionId& c, const Op& op, std::string* why);
  int migrate(const CollectionId& c, const Op& op, std::string* why);
  int remove_object(const CollectionId& c, const ObjectId& o);
  int move_object(const CollectionId& sc, const ObjectId& so, const CollectionId& dc,
                  const ObjectId& dobj);
  // Puts `len` bytes of `data` (a multiple of the tier's unit) in new space
  // on `tier` (no spill), the way the tier's space writes new data, and
  // records the space in the txn.
  int allocate_on(Tier tier, uint64_t len, uint64_t hint, std::vector<PExtent>* out, const CollectionId& c,
                  const ObjectId& oid, uint64_t object_size, const char* data);
  void release(const PExtent& e);
  // The extents, with their checksums, of the data in `buf` (taken over and
  // kept until the writes out of it are made) placed at `where`, starting at
  // logical offset `logical`: added to `into`.
  int store_new_extents(Tier tier, uint64_t logical, AlignedBuffer buf, uint64_t len,
                        const std::vector<PExtent>& where, ExtentMap* into);
  // Writes the pending data of every op; called once all ops succeeded.
  int write_pending();
  // Overwrites [a, a+len) of `o` in place through deferred writes; the range
  // is covered by extents on `tier` whose boundaries it respects.
  void overwrite_deferred(Tier tier, Onode& o, uint64_t a, const char* buf, uint64_t len);
  void set_size(Onode& o, uint64_t new_size);

  // Omap.
  int ensure_nid(const CollectionId& c, const ObjectId& oid, Onode& o);
  int omap_delete_range(const CollectionId& c, const std::string& begin, const std::string& end);
  int omap_clear_keys(const CollectionId& c, uint64_t nid, bool include_header);
  int omap_copy(const CollectionId& c, uint64_t from, uint64_t to);
};

}  // namespace hybridstore
