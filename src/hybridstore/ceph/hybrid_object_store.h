// HybridObjectStore: Ceph's ObjectStore (Pacific) over the HybridStore engine.
//
// Built only inside a Ceph tree (src/tools/ceph-integrate links it into the
// `os` library and registers the name "hybridstore" in ObjectStore::create).
// The OSD's data directory is the engine's store directory: RocksDB in db/,
// the devices as block.ssd and block.hdd (symlinks to devices, or sparse
// files mkfs creates), Ceph's meta files (type, fsid, whoami, ...) beside them.
//
// How the contract maps onto the engine:
//  - A transaction vector is translated op by op (op_policy.h) into one engine
//    transaction vector, applied atomically: visible to reads when
//    queue_transactions returns (is_sync_onreadable), durable when the engine
//    commits it. on_applied_sync runs before returning; on_applied and
//    on_commit go to the collection's commit queue when the OSD set one, and
//    to the store's finisher otherwise: never inline under the caller's locks.
//  - Collections are the engine's ordering domain; flush() has nothing to
//    wait for, flush_commit() asks the engine whether anything queued on the
//    collection is not yet durable.
//  - A failed transaction aborts the daemon, as Ceph's stores do, after
//    logging the failing op and the whole transaction; nothing of it is
//    applied (the engine applies all or nothing).
//  - Configuration: every hybridstore_* option is declared in Ceph's option
//    table (ceph_options.cc), so ceph.conf [osd]/[osd.N] and the mon's config
//    database reach it; the adapter copies the values that differ from the
//    engine's defaults into the engine's Config at mkfs and mount.
#pragma once
#include <array>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>

#include "common/Finisher.h"
#include "common/ceph_mutex.h"
#include "common/config_obs.h"
#include "common/perf_counters.h"
#include "os/ObjectStore.h"

#include "hybridstore/store/hybrid_store.h"

namespace hybridstore::ceph_adapter {

class PerfBridge;

// What moved in ObjectStore's interface between the releases the adapter
// builds against (HS_CEPH_RELEASE, from the tree's src/ceph_release; the
// table is checked by qa/short/ceph_integrate.sh):
//   18 (Reef): getattrs() takes a map with a transparent comparator (the old
//     signature would silently stop overriding; `override` makes it an
//     error); ObjectStore::create() returns a unique_ptr (ceph-integrate's
//     edit follows the tree's signature); PerfCounters::dump_formatted()
//     takes whether to dump labeled counters.
//   19 (Squid): refresh_perf_counters() is pure virtual (the store brings
//     its PerfCounters up to date; store_test calls it before it reads them):
//     here it re-reads the engine's gauges (PerfBridge::refresh_gauges).
//     Transaction::claim_and_reset() lets the OSD hand a transaction to
//     queue_transaction and reuse the emptied one: nothing to implement, as
//     the adapter keeps nothing of a Transaction once queue_transactions
//     returns (write payloads hold their buffers by reference count).
//     Checked by a syntax-only compile against a 19.2.0 development tree
//     (qa/ceph/squid-syntax.sh); ceph-integrate itself still refuses
//     Squid trees.
//   20 (Tentacle): PerfCounters::dump_formatted() takes a select_labeled_t
//     instead of a bool; Option's constructor takes the name by rvalue;
//     compact() returns int (-ENOTSUP by default);
//     get_omap_iterator() is gone from the interface (omap_iterate() is the
//     only omap walk, pure virtual); mount_readonly()/umount_readonly()
//     are new, and ceph-objectstore-tool mounts with them for its read-only
//     ops (list, export, get-bytes, ...), so they must work;
//     get_ideal_list_max() is no longer virtual (never overridden here);
//     md_config_obs_t names its keys with get_tracked_keys() (a vector)
//     instead of get_tracked_conf_keys() (a null-ended char* array).
// Features a release gained in a point release, keyed on the tree's
// os/ObjectStore.h rather than on HS_CEPH_RELEASE (CMakeLists.txt here sets
// them; 0 when unset):
//   HS_CEPH_HAS_OMAP_ITERATE (Squid 19.2.3 on, by issue 40: ObjectStore
//     declares omap_iter_seek_t and omap_iterate()): omap_iterate() walks the
//     object's omap with a callback instead of an iterator object. Only
//     with HS_CEPH_RELEASE >= 19 too. Compiled against Tentacle 20.2.4.
//   HS_CEPH_COMPACT_RETURNS_INT (ObjectStore.h declares `virtual int
//     compact()`: Tentacle, and Debian's Reef 18.2.7, which took the change
//     in a point release; 18.2.4 declares it void): compact() returns int.
//     Defaults to HS_CEPH_RELEASE >= 20 where the header was not read.
//   HS_CEPH_REFRESHES_PERF_COUNTERS (ObjectStore.h declares the pure
//     virtual refresh_perf_counters(): Squid on, and Debian's Reef 18.2.7 by
//     a backport): the OSD asks the store to refresh its gauges. Defaults to
//     HS_CEPH_RELEASE >= 19 where the header was not read.
//   HS_CEPH_HAS_THROW_ON_FAILED_TXC (the tree's option table has
//     objectstore_debug_throw_on_failed_txc, as Tentacle's does): when it is
//     true a failed transaction throws its error (an int) instead of
//     aborting the process, which store_test's cases that expect a failure
//     catch.
#ifndef HS_CEPH_RELEASE
#error "HS_CEPH_RELEASE is not defined: build the adapter through src/tools/ceph-integrate"
#endif
#ifndef HS_CEPH_HAS_OMAP_ITERATE
#define HS_CEPH_HAS_OMAP_ITERATE 0
#endif
#ifndef HS_CEPH_HAS_THROW_ON_FAILED_TXC
#define HS_CEPH_HAS_THROW_ON_FAILED_TXC 0
#endif
#ifndef HS_CEPH_REFRESHES_PERF_COUNTERS
#define HS_CEPH_REFRESHES_PERF_COUNTERS (HS_CEPH_RELEASE >= 19)
#endif
#ifndef HS_CEPH_COMPACT_RETURNS_INT
#define HS_CEPH_COMPACT_RETURNS_INT (HS_CEPH_RELEASE >= 20)
#endif
#if HS_CEPH_RELEASE >= 18
using AttrPtrMap = std::map<std::string, ceph::buffer::ptr, std::less<>>;
#else
using AttrPtrMap = std::map<std::string, ceph::buffer::ptr>;
#endif

class HybridObjectStore : public ObjectStore, public md_config_obs_t {
 public:
  struct Collection;
  using CollectionRef = ceph::ref_t<Collection>;

  HybridObjectStore(CephContext* cct, const std::string& path);
  ~HybridObjectStore() override;

  std::string get_type() override { return "hybridstore"; }

  // Lifecycle.
  bool test_mount_in_use() override;
  int mkfs() override;
  int mount() override;
  int umount() override;
#if HS_CEPH_RELEASE >= 20
  // For ceph-objectstore-tool's reading ops: the store is mounted with its
  // background work (migration, cleaning) off and refuses transactions
  // (-EROFS). Recovery of the commit journal runs as at any mount.
  int mount_readonly() override;
  int umount_readonly() override;
#endif
  int fsck(bool deep) override;
  int repair(bool deep) override;
  int quick_fix() override;
  int mkjournal() override { return 0; }
  bool needs_journal() override { return false; }
  bool wants_journal() override { return false; }
  bool allows_journal() override { return false; }
  void set_fsid(uuid_d u) override { fsid_ = u; }
  uuid_d get_fsid() override { return fsid_; }

  // Limits and hardware; every one of these works before mount.
  int validate_hobject_key(const hobject_t& obj) const override;
  unsigned get_max_attr_name_length() override { return 256; }
  uint64_t get_min_alloc_size() const override;
  int get_devices(std::set<std::string>* devls) override;
  bool is_rotational() override;
  bool is_journal_rotational() override;
  uint64_t estimate_objects_overhead(uint64_t num_objects) override;
  bool has_builtin_csum() const override { return true; }

  // Ceph's meta keys (whoami, ceph_fsid, osd_key, ...): in the SSD label
  // as well as in the directory, so that a directory made again from the
  // devices (prime-osd-dir) has them back.
  int write_meta(const std::string& key, const std::string& value) override;
  int read_meta(const std::string& key, std::string* value) override;

  // Statistics and admin hooks.
  int statfs(store_statfs_t* buf, osd_alert_list_t* alerts = nullptr) override;
  int pool_statfs(uint64_t pool_id, store_statfs_t* buf, bool* per_pool_omap) override;
  void collect_metadata(std::map<std::string, std::string>* pm) override;
  objectstore_perf_stat_t get_cur_stats() override;
#if HS_CEPH_REFRESHES_PERF_COUNTERS
  void refresh_perf_counters() override;
#endif
  const PerfCounters* get_perf_counters() const override { return logger_; }
  void get_db_statistics(ceph::Formatter* f) override;
  void dump_perf_counters(ceph::Formatter* f) override;
  int flush_cache(std::ostream* os = nullptr) override;
#if HS_CEPH_COMPACT_RETURNS_INT
  int compact() override;
#else
  void compact() override;
#endif

  // Collections.
  CollectionHandle open_collection(const coll_t& cid) override;
  CollectionHandle create_new_collection(const coll_t& cid) override;
  void set_collection_commit_queue(const coll_t& cid, ContextQueue* commit_queue) override;
  int list_collections(std::vector<coll_t>& ls) override;
  bool collection_exists(const coll_t& c) override;
  int collection_empty(CollectionHandle& c, bool* empty) override;
  int collection_bits(CollectionHandle& c) override;
  int collection_list(CollectionHandle& c, const ghobject_t& start, const ghobject_t& end, int max,
                      std::vector<ghobject_t>* ls, ghobject_t* next) override;
  int set_collection_opts(CollectionHandle& c, const pool_opts_t& opts) override;

  // Objects.
  bool exists(CollectionHandle& c, const ghobject_t& oid) override;
  int stat(CollectionHandle& c, const ghobject_t& oid, struct stat* st, bool allow_eio = false) override;
  int read(CollectionHandle& c, const ghobject_t& oid, uint64_t offset, size_t len, ceph::buffer::list& bl,
           uint32_t op_flags = 0) override;
  int fiemap(CollectionHandle& c, const ghobject_t& oid, uint64_t offset, size_t len,
             ceph::buffer::list& bl) override;
  int fiemap(CollectionHandle& c, const ghobject_t& oid, uint64_t offset, size_t len,
             std::map<uint64_t, uint64_t>& destmap) override;
  int getattr(CollectionHandle& c, const ghobject_t& oid, const char* name, ceph::buffer::ptr& value) override;
  int getattrs(CollectionHandle& c, const ghobject_t& oid, AttrPtrMap& aset) override;

  // Omap.
  int omap_get(CollectionHandle& c, const ghobject_t& oid, ceph::buffer::list* header,
               std::map<std::string, ceph::buffer::list>* out) override;
  int omap_get_header(CollectionHandle& c, const ghobject_t& oid, ceph::buffer::list* header,
                      bool allow_eio = false) override;
  int omap_get_keys(CollectionHandle& c, const ghobject_t& oid, std::set<std::string>* keys) override;
  int omap_get_values(CollectionHandle& c, const ghobject_t& oid, const std::set<std::string>& keys,
                      std::map<std::string, ceph::buffer::list>* out) override;
  int omap_check_keys(CollectionHandle& c, const ghobject_t& oid, const std::set<std::string>& keys,
                      std::set<std::string>* out) override;
#if HS_CEPH_RELEASE < 20
  ObjectMap::ObjectMapIterator get_omap_iterator(CollectionHandle& c, const ghobject_t& oid) override;
#endif
#if HS_CEPH_RELEASE >= 19 && HS_CEPH_HAS_OMAP_ITERATE
  // The omap from start_from on, key by key, until f says STOP: 1 when it
  // did, 0 at the end of the omap, -ENOENT without the object, -EIO on a
  // read error.
  int omap_iterate(CollectionHandle& c, const ghobject_t& oid, omap_iter_seek_t start_from,
                   std::function<omap_iter_ret_t(std::string_view, std::string_view)> f) override;
#endif

  // Transactions.
  int queue_transactions(CollectionHandle& ch, std::vector<Transaction>& tls,
                         TrackedOpRef op = TrackedOpRef(), ThreadPool::TPHandle* handle = nullptr) override;

  // The engine (tests and the admin hooks look at it).
  HybridStore* engine() { return engine_.get(); }

  // Error injection, as BlueStore does it: the OSD's injectdataerr and
  // injectmdataerr commands mark an object; while
  // hybridstore_debug_inject_read_err is true (Ceph's qa sets
  // <store type>_debug_inject_read_err at run time) its data reads (data)
  // or its stat and attribute reads (mdata) fail with -EIO. Removing the
  // object, or renaming another onto it (recovery does), clears the mark.
  void inject_data_error(const ghobject_t& oid) override;
  void inject_mdata_error(const ghobject_t& oid) override;

  // Memory (docs/memory.md, "In a ceph-osd"): in an OSD the engine's
  // memory target follows osd_memory_target unless hybridstore_memory_target
  // is set or hybridstore_cache_autotune is false, at mount and whenever
  // either changes; the engine's holders are charged to Ceph's mempools, so
  // `ceph daemon osd.N dump_mempools` shows them.
#if HS_CEPH_RELEASE >= 20
  std::vector<std::string> get_tracked_keys() const noexcept override;
#else
  const char** get_tracked_conf_keys() const override;
#endif
  void handle_conf_change(const ConfigProxy& conf, const std::set<std::string>& changed) override;
  // The target the engine is given: 0 = none (each cache by its option).
  uint64_t memory_target() const;
  // Brings Ceph's mempool counts to what the engine holds now; with
  // release, gives back everything charged (at umount).
  void charge_mempools(bool release = false);

 private:
  friend struct Collection;
  // The engine's Config: its defaults, overridden by every hybridstore_*
  // value Ceph's configuration holds that differs from the default.
  int build_engine_config(Config* cfg, std::string* error) const;
  // read_only: no background work (migration, cleaning) is started.
  int open_engine(std::string* error, bool read_only = false);
  void replace_engine(Config cfg);
  // Delivers contexts the way the OSD asked for the collection: its commit
  // queue, else the finisher.
  void deliver(Collection* c, std::list<Context*>& ls);
  // Aborts the process, or throws err.code when the tree's
  // objectstore_debug_throw_on_failed_txc is set (never returns).
  [[noreturn]] void abort_transaction(std::vector<Transaction>& tls, const TxnError& err);
  CollectionRef lookup(const coll_t& cid);
  bool debug_eio(const ObjectId& oid, bool data) const;
  void debug_forget(const ObjectId& oid);

  uuid_d fsid_;
  std::unique_ptr<HybridStore> engine_;
  Finisher finisher_;
  PerfCounters* logger_ = nullptr;
  std::unique_ptr<PerfBridge> perf_bridge_;
  bool mounted_ = false;
  bool read_only_mount_ = false;  // mount_readonly(): transactions refused

  // Mount and umount against the config observer, which may run on any
  // thread at any time.
  std::mutex mount_lock_;
  // What this store has charged to each of Ceph's mempools it uses (items,
  // bytes), so that a new reading adjusts by the difference; and the thread
  // that takes a reading every few seconds while mounted.
  std::mutex mempool_lock_;
  std::array<std::pair<int64_t, int64_t>, 4> mempool_charged_{};
  std::thread mempool_thread_;
  std::mutex mempool_thread_lock_;
  std::condition_variable mempool_thread_cv_;
  bool mempool_thread_stop_ = false;
  void start_mempool_thread();
  void stop_mempool_thread();

  ceph::shared_mutex coll_lock_ = ceph::make_shared_mutex("HybridObjectStore::coll_lock");
  std::map<coll_t, CollectionRef> coll_map_;      // collections that exist (or existed: see open_collection)
  std::map<coll_t, CollectionRef> new_coll_map_;  // created by create_new_collection, mkcoll not yet queued

  // For `ceph osd perf`: the mean commit and apply latencies of recent
  // transactions (exponentially weighted).
  std::atomic<uint64_t> commit_lat_ns_{0};
  std::atomic<uint64_t> apply_lat_ns_{0};

  mutable ceph::shared_mutex debug_eio_lock_ = ceph::make_shared_mutex("HybridObjectStore::debug_eio");
  std::set<ObjectId> debug_data_eio_, debug_mdata_eio_;
  std::atomic<bool> debug_eio_any_{false};  // a cheap test on every read
};

// A collection handle: the ordering domain the OSD queues transactions on.
struct HybridObjectStore::Collection : public ObjectStore::CollectionImpl {
  HybridObjectStore* store;
  const CollectionId id;
  // Where on_applied/on_commit go once the OSD sets it (its shard's queue).
  std::atomic<ContextQueue*> commit_queue{nullptr};

  Collection(HybridObjectStore* s, const coll_t& c);
  // Reads see a transaction as soon as queue_transactions returns, so there
  // is never anything to wait for here.
  void flush() override {}
  bool flush_commit(Context* c) override;
};

}  // namespace hybridstore::ceph_adapter

// The factory ObjectStore::create() calls for type "hybridstore".
ObjectStore* make_hybridstore(CephContext* cct, const std::string& path);
