// Lifecycle, configuration and collections of the Ceph adapter; the
// transaction path is in hybrid_object_store_write.cc, reads and omap in
// hybrid_object_store_read.cc.
#include "hybridstore/ceph/hybrid_object_store.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "common/Formatter.h"
#include "common/debug.h"
#include "common/errno.h"
#include "include/ceph_assert.h"
#include "include/mempool.h"
#include "include/msgr.h"
#include "include/uuid.h"

#include "hybridstore/ceph/ceph_ids.h"
#include "hybridstore/ceph/op_policy.h"
#include "hybridstore/ceph/perf_bridge.h"
#include "hscommon/log.h"

#define dout_context cct
#define dout_subsys ceph_subsys_hybridstore
#undef dout_prefix
#define dout_prefix *_dout << "hybridstore(" << path << ") "

namespace hybridstore::ceph_adapter {

HybridObjectStore::Collection::Collection(HybridObjectStore* s, const coll_t& c)
    : CollectionImpl(s->cct, c), store(s), id(to_engine(c)) {}

bool HybridObjectStore::Collection::flush_commit(Context* c) {
  ceph::ref_t<Collection> self(this);
  return store->engine_->flush_commit(id, [self, c] {
    std::list<Context*> ls{c};
    self->store->deliver(self.get(), ls);
  });
}

namespace {

// Engine log lines go to Ceph's log under "debug hybridstore".
void route_engine_log(CephContext* cct) {
  // The engine filters before formatting: let through what `debug
  // hybridstore` would print.
  const int gather = cct->_conf->subsys.get_gather_level(ceph_subsys_hybridstore);
  set_log_level(gather >= 20 ? LogLevel::kDebug : gather >= 5 ? LogLevel::kInfo : LogLevel::kWarn);
  static std::once_flag once;
  std::call_once(once, [cct] {
    set_log_sink([cct](LogLevel level, const std::string& msg) {
      const int ceph_level = level == LogLevel::kError ? -1
                             : level == LogLevel::kWarn ? 0
                             : level == LogLevel::kInfo ? 5
                                                        : 20;
      // Not ldout: its prefix names a store, and these lines have none.
      dout_impl(cct, ceph_subsys_hybridstore, ceph::dout::need_dynamic(ceph_level)) *_dout << "hybridstore: " << msg
                                                                                         << dendl;
    });
  });
}

}  // namespace

HybridObjectStore::HybridObjectStore(CephContext* cct, const std::string& path)
    : ObjectStore(cct, path), finisher_(cct, "hybridstore_finisher", "hs_fin") {
  route_engine_log(cct);
  Config cfg;
  std::string error;
  if (build_engine_config(&cfg, &error) < 0) {
    // Reported again by mkfs/mount, which fail; queries keep working.
    derr << "configuration: " << error << dendl;
    cfg = Config();
  }
  replace_engine(std::move(cfg));
  cct->_conf.add_observer(this);
}

void HybridObjectStore::replace_engine(Config cfg) {
  // The bridge holds the engine's counter names: it goes first.
  perf_bridge_.reset();
  logger_ = nullptr;
  engine_ = std::make_unique<HybridStore>(path, std::move(cfg));
  perf_bridge_ = std::make_unique<PerfBridge>(cct, &engine_->perf());
  logger_ = perf_bridge_->logger();
}

HybridObjectStore::~HybridObjectStore() {
  cct->_conf.remove_observer(this);
  if (mounted_) umount();
  perf_bridge_.reset();
}

int HybridObjectStore::build_engine_config(Config* cfg, std::string* error) const {
  Config defaults;
  for (const auto& spec : option_registry()) {
    std::string text;
    switch (spec.type) {
      case OptionType::kBool: text = cct->_conf.get_val<bool>(spec.name) ? "true" : "false"; break;
      case OptionType::kInt: text = std::to_string(cct->_conf.get_val<int64_t>(spec.name)); break;
      case OptionType::kSize: text = std::to_string(cct->_conf.get_val<Option::size_t>(spec.name).value); break;
      case OptionType::kDouble: text = std::to_string(cct->_conf.get_val<double>(spec.name)); break;
      case OptionType::kString: text = cct->_conf.get_val<std::string>(spec.name); break;
    }
    // Only what the operator changed: an option that matters at mkfs only is
    // then compared with the store's own value only when it was asked for.
    Config probe;
    if (probe.set(spec.name, text, error) < 0) return -EINVAL;
    if (probe.get_text(spec.name) == defaults.get_text(spec.name)) continue;
    if (cfg->set(spec.name, text, error) < 0) return -EINVAL;
  }
  return 0;
}

// ---- lifecycle --------------------------------------------------------------

bool HybridObjectStore::test_mount_in_use() {
  StoreProbe p;
  std::string error;
  if (HybridStore::probe(path, engine_->config(), &p, &error) < 0) return false;
  return p.in_use;
}

int HybridObjectStore::mkfs() {
  std::string error;
  Config cfg;
  if (build_engine_config(&cfg, &error) < 0) {
    derr << "mkfs: " << error << dendl;
    return -EINVAL;
  }
  if (mounted_) return -EBUSY;
  replace_engine(std::move(cfg));
  if (!fsid_.is_zero()) engine_->set_fsid(fsid_.to_string());
  int r = engine_->mkfs(&error);
  if (r < 0) {
    derr << "mkfs failed: " << error << " (" << cpp_strerror(r) << ")" << dendl;
    return r;
  }
  uuid_d got;
  if (!got.parse(engine_->fsid().c_str())) {
    derr << "mkfs: the engine reports an unparsable fsid " << engine_->fsid() << dendl;
    return -EIO;
  }
  if (!fsid_.is_zero() && got != fsid_) {
    derr << "mkfs: the store at " << path << " already belongs to " << got << ", not to " << fsid_ << dendl;
    return -EEXIST;
  }
  fsid_ = got;
  // The engine wrote <path>/type ("hybridstore", what ceph-osd and
  // ceph-objectstore-tool read to pick this store) and <path>/fsid.
  dout(1) << "mkfs done, fsid " << fsid_ << dendl;
  return 0;
}

int HybridObjectStore::open_engine(std::string* error, bool read_only) {
  Config cfg;
  if (build_engine_config(&cfg, error) < 0) return -EINVAL;
  // A fresh engine object: umount leaves the old one unusable for a mount.
  if (engine_->is_mounted()) return -EBUSY;
  // Given here, not after the mount: the engine sizes its block cache from
  // the target before it reads anything through it.
  if (cfg.get_size("hybridstore_memory_target") == 0) {
    if (const uint64_t target = memory_target()) {
      if (cfg.set("hybridstore_memory_target", std::to_string(target), error) < 0) return -EINVAL;
      dout(1) << "memory target " << target << " bytes (osd_memory_target)" << dendl;
    }
  }
  replace_engine(std::move(cfg));
  return read_only ? engine_->mount_read_only(error) : engine_->mount(error);
}

// ---- memory -----------------------------------------------------------------

uint64_t HybridObjectStore::memory_target() const {
  const uint64_t own = cct->_conf.get_val<Option::size_t>("hybridstore_memory_target").value;
  if (own) return own;
  // osd_memory_target is an OSD's budget for its whole process, which is
  // what the engine's tuner reads (the heap); a tool that opens a store has
  // no such budget.
  if (cct->get_module_type() != CEPH_ENTITY_TYPE_OSD) return 0;
  if (!cct->_conf.get_val<bool>("hybridstore_cache_autotune")) return 0;
  return cct->_conf.get_val<Option::size_t>("osd_memory_target").value;
}

#if HS_CEPH_RELEASE >= 20
std::vector<std::string> HybridObjectStore::get_tracked_keys() const noexcept {
  return {"osd_memory_target", "hybridstore_memory_target", "hybridstore_cache_autotune"};
}
#else
const char** HybridObjectStore::get_tracked_conf_keys() const {
  static const char* keys[] = {"osd_memory_target", "hybridstore_memory_target", "hybridstore_cache_autotune",
                               nullptr};
  return keys;
}
#endif

void HybridObjectStore::handle_conf_change(const ConfigProxy&, const std::set<std::string>&) {
  std::lock_guard l(mount_lock_);
  if (!mounted_ || read_only_mount_) return;
  const uint64_t target = memory_target();
  dout(1) << "memory target now " << target << " bytes" << dendl;
  engine_->set_memory_target(target);
}

namespace {

// Ceph's pools are fixed at build time (include/mempool.h); the engine's
// holders go to the BlueStore pools that hold the same kind of thing, so
// that dashboards and `dump_mempools` readers find them where they look.
// RocksDB's memory is not charged, as BlueStore does not charge its own.
constexpr std::array<mempool::pool_index_t, 4> kChargedPools = {
    mempool::mempool_bluestore_cache_onode, mempool::mempool_bluestore_cache_data,
    mempool::mempool_bluestore_alloc, mempool::mempool_bluestore_cache_other};

int charged_pool_slot(const std::string& engine_pool) {
  if (engine_pool == "onode_cache") return 0;
  if (engine_pool == "data_cache") return 1;
  if (engine_pool == "tier_sections") return 2;
  if (engine_pool.rfind("kv_", 0) == 0) return -1;
  return 3;  // heat, tier_plan, io_buffers_idle and whatever comes next
}

}  // namespace

void HybridObjectStore::charge_mempools(bool release) {
  std::array<std::pair<int64_t, int64_t>, 4> now{};
  if (!release)
    for (const MemPoolStat& p : engine_->mempools()) {
      const int slot = charged_pool_slot(p.name);
      if (slot < 0) continue;
      now[slot].first += static_cast<int64_t>(p.items);
      now[slot].second += static_cast<int64_t>(p.bytes);
    }
  std::lock_guard l(mempool_lock_);
  for (size_t i = 0; i < kChargedPools.size(); ++i) {
    const auto [items, bytes] = now[i];
    mempool::get_pool(kChargedPools[i])
        .adjust_count(items - mempool_charged_[i].first, bytes - mempool_charged_[i].second);
    mempool_charged_[i] = now[i];
  }
}

void HybridObjectStore::start_mempool_thread() {
  {
    std::lock_guard l(mempool_thread_lock_);
    mempool_thread_stop_ = false;
  }
  charge_mempools();
  mempool_thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "hs_mempool");
    std::unique_lock l(mempool_thread_lock_);
    // As often as the engine's tuner reads the heap: a reading costs a walk
    // of the SSD sections' extents.
    while (!mempool_thread_cv_.wait_for(l, std::chrono::seconds(5), [this] { return mempool_thread_stop_; })) {
      l.unlock();
      charge_mempools();
      l.lock();
    }
  });
}

void HybridObjectStore::stop_mempool_thread() {
  if (!mempool_thread_.joinable()) return;
  {
    std::lock_guard l(mempool_thread_lock_);
    mempool_thread_stop_ = true;
  }
  mempool_thread_cv_.notify_all();
  mempool_thread_.join();
  charge_mempools(/*release=*/true);
}

int HybridObjectStore::mount() {
  std::lock_guard l(mount_lock_);
  std::string error;
  int r = open_engine(&error);
  if (r < 0) {
    derr << "mount failed: " << error << " (" << cpp_strerror(r) << ")" << dendl;
    return r;
  }
  if (!fsid_.parse(engine_->fsid().c_str())) {
    derr << "mount: unparsable fsid " << engine_->fsid() << dendl;
    engine_->umount();
    return -EIO;
  }
  finisher_.start();
  mounted_ = true;
  start_mempool_thread();
  dout(1) << "mounted, fsid " << fsid_ << dendl;
  return 0;
}

int HybridObjectStore::umount() {
  std::lock_guard l(mount_lock_);
  if (!mounted_) return 0;
  dout(1) << "umount" << dendl;
  stop_mempool_thread();
  // Every commit callback has been delivered once the engine is down.
  int r = engine_->umount();
  finisher_.wait_for_empty();
  finisher_.stop();
  {
    std::unique_lock l{coll_lock_};
    coll_map_.clear();
    new_coll_map_.clear();
  }
  mounted_ = false;
  return r;
}

#if HS_CEPH_RELEASE >= 20
int HybridObjectStore::mount_readonly() {
  std::lock_guard l(mount_lock_);
  std::string error;
  int r = open_engine(&error, /*read_only=*/true);
  if (r < 0) {
    derr << "mount_readonly failed: " << error << " (" << cpp_strerror(r) << ")" << dendl;
    return r;
  }
  if (!fsid_.parse(engine_->fsid().c_str())) {
    derr << "mount_readonly: unparsable fsid " << engine_->fsid() << dendl;
    engine_->umount();
    return -EIO;
  }
  finisher_.start();
  mounted_ = true;
  read_only_mount_ = true;
  dout(1) << "mounted read-only, fsid " << fsid_ << dendl;
  return 0;
}

int HybridObjectStore::umount_readonly() {
  if (!read_only_mount_) return mounted_ ? -EINVAL : 0;
  int r = umount();
  read_only_mount_ = false;
  return r;
}
#endif

int HybridObjectStore::fsck(bool deep) {
  FsckReport report;
  // The engine mounts and unmounts the store itself when it is not mounted.
  int r = engine_->fsck(deep, &report);
  for (const auto& p : report.problems) derr << "fsck: " << p << dendl;
  if (r < 0) return r;
  dout(1) << "fsck" << (deep ? " --deep" : "") << ": " << report.errors << " errors, " << report.warnings
          << " warnings, " << report.objects << " objects" << dendl;
  return static_cast<int>(report.errors);
}

int HybridObjectStore::repair(bool deep) {
  if (mounted_) return -EBUSY;
  std::string error;
  std::vector<std::string> dropped, changes;
  int r = engine_->mount_for_repair(&error, &dropped);
  if (r < 0) {
    derr << "repair: " << error << dendl;
    return r;
  }
  for (const auto& d : dropped) derr << "repair: dropped " << d << dendl;
  FsckReport found;
  r = engine_->repair(&found, &changes);
  for (const auto& c : changes) dout(0) << "repair: " << c << dendl;
  engine_->umount();
  if (r < 0) return r;
  // What is left after the repair, as fsck counts it.
  return fsck(deep);
}

int HybridObjectStore::quick_fix() { return repair(false); }

// ---- limits and hardware ---------------------------------------------------

int HybridObjectStore::validate_hobject_key(const hobject_t& obj) const {
  // RocksDB takes keys of any size, but an object's key is repeated in every
  // omap key; keep it well below what makes that unreasonable.
  constexpr size_t kMaxKeyBytes = 64 * 1024;
  return encode_object_key(to_engine(ghobject_t(obj))).size() > kMaxKeyBytes ? -ENAMETOOLONG : 0;
}

uint64_t HybridObjectStore::get_min_alloc_size() const {
  StoreProbe p;
  std::string error;
  if (HybridStore::probe(path, engine_->config(), &p, &error) < 0) return 0;
  return p.min_alloc_size;
}

int HybridObjectStore::get_devices(std::set<std::string>* devls) {
  StoreProbe p;
  std::string error;
  if (int r = HybridStore::probe(path, engine_->config(), &p, &error); r < 0) return r;
  for (const auto& t : p.tier)
    for (const auto& d : t.kernel_devices) devls->insert(d);
  return 0;
}

bool HybridObjectStore::is_rotational() {
  // The capacity (slowest) tier decides: the OSD's _hdd tunables suit a store whose
  // bulk data lives on the HDD, as for BlueStore with an SSD block.db.
  StoreProbe p;
  std::string error;
  if (HybridStore::probe(path, engine_->config(), &p, &error) < 0) return true;
  return p.tier[tier_index(p.slowest)].rotational;
}

bool HybridObjectStore::is_journal_rotational() {
  // Commits go to RocksDB's WAL, in the data directory.
  StoreProbe p;
  std::string error;
  if (HybridStore::probe(path, engine_->config(), &p, &error) < 0) return true;
  return p.kv_rotational;
}

uint64_t HybridObjectStore::estimate_objects_overhead(uint64_t num_objects) {
  // An onode record and its key in RocksDB; data has no per-object slack on
  // the SSD (256-byte blocks) and at most one HDD unit on the HDD.
  return num_objects * 300;
}

// ---- statistics and admin hooks -------------------------------------------

int HybridObjectStore::statfs(store_statfs_t* buf, osd_alert_list_t* alerts) {
  buf->reset();
  StoreStats st;
  if (int r = engine_->statfs(&st); r < 0) return r;
  for (const auto& t : st.tier) {
    buf->total += t.total;
    buf->available += t.free;
    buf->allocated += t.allocated;
    // Space freed but not reusable yet (SSD sections before cleaning).
    buf->internally_reserved += t.consumed > t.allocated ? t.consumed - t.allocated : 0;
  }
  buf->data_stored = st.data_bytes;
  buf->omap_allocated = st.omap_bytes;
  // With RocksDB on the SSD its space is the tier's: what Ceph's full ratios
  // must count is what the KV file system holds there.
  buf->internal_metadata = st.kv_on_device ? st.kvfs_used : st.metadata_bytes;
  if (alerts && st.read_only) (*alerts)["HYBRIDSTORE_READ_ONLY"] = "store is read-only after an I/O error";
  return 0;
}

int HybridObjectStore::pool_statfs(uint64_t, store_statfs_t*, bool*) {
  // The OSD asserts on any other error: this is how a store says "no
  // per-pool statistics", as MemStore and KStore do.
  return -ENOTSUP;
}

int HybridObjectStore::write_meta(const std::string& key, const std::string& value) {
  // The label first, then the file, as BlueStore keeps its meta. A label
  // that cannot hold the key (too long, full) or cannot be written fails
  // the call: with a disposable directory the label is the copy that
  // lasts. No store yet (the OSD writes some keys before mkfs), a format-3
  // label that no mount has upgraded, or another process holding the
  // devices leave the file as the only copy, as before.
  std::string error;
  const int r = engine_->set_meta(key, value, &error);
  if (r == -E2BIG || r == -EIO) {
    derr << "write_meta " << key << ": " << error << dendl;
    return r;
  }
  if (r < 0) dout(10) << "write_meta " << key << ": not in the label (" << error << ")" << dendl;
  return ObjectStore::write_meta(key, value);
}

int HybridObjectStore::read_meta(const std::string& key, std::string* value) {
  std::string error;
  if (engine_->get_meta(key, value, &error) == 0) return 0;
  return ObjectStore::read_meta(key, value);
}

void HybridObjectStore::collect_metadata(std::map<std::string, std::string>* pm) {
  StoreProbe p;
  std::string error;
  if (HybridStore::probe(path, engine_->config(), &p, &error) < 0) return;
  for (Tier t : tier_ids(p.tiers)) {
    const auto& d = p.tier[t];
    (*pm)[tier_option(t, "path")] = d.resolved;
    (*pm)[tier_option(t, "size")] = std::to_string(d.size);
    (*pm)[tier_option(t, "rotational")] = d.rotational ? "1" : "0";
    (*pm)[tier_option(t, "type")] = d.is_block ? "block" : "file";
    (*pm)[tier_option(t, "kind")] = d.kind;
    std::string devs;
    for (const auto& k : d.kernel_devices) devs += (devs.empty() ? "" : ",") + k;
    (*pm)[tier_option(t, "dev_node")] = devs;
  }
  (*pm)["hybridstore_kv_rotational"] = p.kv_rotational ? "1" : "0";
}

objectstore_perf_stat_t HybridObjectStore::get_cur_stats() {
  objectstore_perf_stat_t s;
  s.os_commit_latency_ns = commit_lat_ns_.load(std::memory_order_relaxed);
  s.os_apply_latency_ns = apply_lat_ns_.load(std::memory_order_relaxed);
  return s;
}

#if HS_CEPH_REFRESHES_PERF_COUNTERS
// Every counter reaches Ceph as it changes; only a gauge can lag (see
// PerfBridge::refresh_gauges). Works before mount too: the bridge lives as
// long as the store object.
void HybridObjectStore::refresh_perf_counters() { perf_bridge_->refresh_gauges(); }
#endif

void HybridObjectStore::get_db_statistics(ceph::Formatter* f) {
  f->open_object_section("hybridstore_kv");
  f->dump_string("rocksdb_stats", engine_->kv_statistics());
  f->close_section();
}

void HybridObjectStore::dump_perf_counters(ceph::Formatter* f) {
  f->open_object_section("perf_counters");
#if HS_CEPH_RELEASE >= 20
  logger_->dump_formatted(f, /*schema=*/false, select_labeled_t::unlabeled);
#elif HS_CEPH_RELEASE >= 18
  logger_->dump_formatted(f, /*schema=*/false, /*dump_labeled=*/false);
#else
  logger_->dump_formatted(f, false);
#endif
  f->close_section();
}

int HybridObjectStore::flush_cache(std::ostream* os) {
  if (!mounted_) return -EINVAL;
  engine_->drop_caches();
  if (os) *os << "hybridstore: onode cache dropped";
  return 0;
}

#if HS_CEPH_COMPACT_RETURNS_INT
int HybridObjectStore::compact() {
  if (!mounted_) return -EINVAL;
  dout(1) << "compacting RocksDB" << dendl;
  const int r = engine_->compact();
  if (r < 0) derr << "hybridstore: compaction failed: " << cpp_strerror(r) << dendl;
  return r;
}
#else
void HybridObjectStore::compact() {
  if (!mounted_) return;
  dout(1) << "compacting RocksDB" << dendl;
  // This Ceph's compact() returns nothing: the failure can only be logged.
  if (const int r = engine_->compact(); r < 0) derr << "hybridstore: compaction failed: " << cpp_strerror(r) << dendl;
}
#endif

// ---- collections -----------------------------------------------------------

HybridObjectStore::CollectionRef HybridObjectStore::lookup(const coll_t& cid) {
  std::shared_lock l{coll_lock_};
  auto it = coll_map_.find(cid);
  return it == coll_map_.end() ? CollectionRef() : it->second;
}

ObjectStore::CollectionHandle HybridObjectStore::open_collection(const coll_t& cid) {
  if (!engine_->collection_exists(to_engine(cid))) return CollectionHandle();
  std::unique_lock l{coll_lock_};
  auto& slot = coll_map_[cid];
  if (!slot) slot = ceph::make_ref<Collection>(this, cid);
  return slot;
}

ObjectStore::CollectionHandle HybridObjectStore::create_new_collection(const coll_t& cid) {
  std::unique_lock l{coll_lock_};
  auto c = ceph::make_ref<Collection>(this, cid);
  new_coll_map_[cid] = c;
  return c;
}

void HybridObjectStore::set_collection_commit_queue(const coll_t& cid, ContextQueue* commit_queue) {
  // Called right after create_new_collection, before the mkcoll is queued.
  std::shared_lock l{coll_lock_};
  for (auto* m : {&coll_map_, &new_coll_map_}) {
    auto it = m->find(cid);
    if (it != m->end()) it->second->commit_queue.store(commit_queue);
  }
}

int HybridObjectStore::list_collections(std::vector<coll_t>& ls) {
  for (const auto& c : engine_->list_collections()) {
    coll_t cid;
    if (to_ceph(c, &cid)) ls.push_back(cid);
    else dout(0) << "skipping collection with a non-Ceph name " << c.name << dendl;
  }
  std::sort(ls.begin(), ls.end());
  return 0;
}

bool HybridObjectStore::collection_exists(const coll_t& c) { return engine_->collection_exists(to_engine(c)); }

int HybridObjectStore::collection_empty(CollectionHandle& ch, bool* empty) {
  return engine_->collection_empty(static_cast<Collection*>(ch.get())->id, empty);
}

int HybridObjectStore::collection_bits(CollectionHandle& ch) {
  return engine_->collection_bits(static_cast<Collection*>(ch.get())->id);
}

int HybridObjectStore::collection_list(CollectionHandle& ch, const ghobject_t& start, const ghobject_t& end,
                                       int max, std::vector<ghobject_t>* ls, ghobject_t* pnext) {
  const uint64_t t0 = perf_now_ns();
  std::vector<ObjectId> out;
  ObjectId next;
  int r = engine_->collection_list(static_cast<Collection*>(ch.get())->id, to_engine(start), to_engine(end),
                                   max, &out, &next);
  if (r < 0) return r;
  ls->reserve(ls->size() + out.size());
  for (const auto& o : out) ls->push_back(to_ceph(o));
  if (pnext) *pnext = to_ceph(next);
  logger_->tinc(l_hs_clist_lat, ceph::make_timespan((perf_now_ns() - t0) / 1e9));
  return 0;
}

int HybridObjectStore::set_collection_opts(CollectionHandle&, const pool_opts_t&) {
  // Pool options are about compression and checksums, which this store
  // decides by itself (crc32c on every block, no compression).
  return 0;
}

}  // namespace hybridstore::ceph_adapter

ObjectStore* make_hybridstore(CephContext* cct, const std::string& path) {
  return new hybridstore::ceph_adapter::HybridObjectStore(cct, path);
}
