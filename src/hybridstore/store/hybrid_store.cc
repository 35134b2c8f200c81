// The public facade: argument checks, a read-only mount's refusals, and the
// components that run beside a store mounted for writing (the migrator, the
// tiers' cleaners); the work is the mounted store's parts' (store_mount.h).
#include "hybridstore/store/hybrid_store.h"
#include "hybridstore/store/memory_tuner.h"

#include <filesystem>

#include <rocksdb/db.h>

#include <cstring>

#include "hscommon/log.h"
#include "hybridstore/kv/kv_committer.h"
#include "hybridstore/kv/kv_schema.h"
#include "hybridstore/store/collections.h"
#include "hybridstore/store/data_reader.h"
#include "hybridstore/store/object_heat.h"
#include "hybridstore/store/onode_checkpointer.h"
#include "hybridstore/store/onode_store.h"
#include "hybridstore/store/store_mount.h"
#include "hybridstore/store/store_perf.h"
#include "hybridstore/store/store_reader.h"
#include "hybridstore/store/tier_set.h"
#include "hybridstore/store/txn_pipeline.h"
#include "hybridstore/tier/migrator.h"
#include "hybridstore/tier/tier_cleaner.h"

namespace hybridstore {

namespace {

// The tiers a store at `path` has (its superblock), or, before mkfs, the
// tiers mkfs will make: the per-tier counters are registered for them.
int counted_tiers(const std::string& path, const Config& cfg) {
  int n = static_cast<int>(cfg.get_int("hybridstore_tiers"));
  StoreProbe p;
  if (HybridStore::probe(path, cfg, &p, nullptr) == 0) n = p.tiers;
  return n;
}

int refuse_read_only(TxnError* error) {
  if (error) *error = TxnError{-EROFS, -1, -1, "", "the store is mounted read-only"};
  return -EROFS;
}

}  // namespace

// What the migrator and the cleaners get of the store: the public calls,
// the moves between and within tiers (move_data), the heat, the tiers'
// order and the chores (on_pass and the like only add to the counters).
class HybridStore::ComponentView final : public Migrator::Store, public TierCleaner::Store {
 public:
  explicit ComponentView(HybridStore* store) : s_(store) {}

  const Config& config() const override { return s_->config(); }
  HeatTracker* heat() override { return s_->store_->heat().tracker(); }
  TierOrder tier_order() override { return s_->store_->tiers().order(); }
  int tier_space(Tier t, uint64_t* total, uint64_t* unit, uint64_t* free) override {
    StoreStats st;
    if (int r = s_->statfs(&st); r < 0) return r;
    if (!st.order.has(t)) return -EINVAL;
    *total = st.tier[t].total;
    *unit = st.tier[t].unit;
    *free = st.tier[t].free;
    // The migrator sizes its budget as a share of the total: what the tier
    // lent RocksDB's file system, and the floor kept for its growth, can
    // hold no object, and a budget over them kept the SSD of a store with
    // RocksDB on it full (its cleaner at work under clients; benchmarks.md,
    // the 70/30 mix).
    const TierSpace& space = s_->store_->tiers().space(t);
    uint64_t held = space.floor();
    for (const Interval& i : space.lent()) held += i.length;
    *total -= std::min(*total, held);
    return 0;
  }
  int for_each_object(
      const std::function<void(const CollectionId&, const ObjectId&, const ObjectStat&)>& fn) override {
    return s_->for_each_object(fn);
  }
  int scan_objects(
      const std::function<void(const CollectionId&, const ObjectId&, const ObjectStat&)>& fn) override {
    return s_->scan_objects(fn);
  }
  int scan_objects_heat(const std::function<void(const CollectionId&, const ObjectId&, const ObjectStat&,
                                                 const HeatSample*)>& fn) override {
    return s_->scan_objects_heat(fn);
  }
  int migrate(const CollectionId& c, const ObjectId& o, Tier target) override { return s_->migrate(c, o, target); }
  void tick() override {
    s_->tick();
    CleanerReport cleaned;
    s_->clean_now(false, &cleaned);
  }
  int save_heat() override { return s_->save_heat(); }
  void on_pass(const MigrationReport& rep) override {
    StorePerf& p = *s_->perf_;
    p.set.inc(p.migration_passes);
    p.set.tinc(p.migration_lat, static_cast<uint64_t>(rep.seconds * 1e9));
    p.set.inc(p.migrate_retries, rep.retries);
    p.set.inc(p.migrate_skipped, rep.skipped);
  }
  void note_plan_memory(uint64_t items, uint64_t bytes) override {
    if (s_->store_) s_->store_->set_plan_memory(items, bytes);
  }
  void on_destage(const MigrationReport& rep) override {
    StorePerf& p = *s_->perf_;
    p.set.inc(p.destage_ops, rep.demoted);
    p.set.inc(p.destage_bytes, rep.bytes_moved);
  }
  int stat(const CollectionId& c, const ObjectId& o, ObjectStat* st) override { return s_->stat(c, o, st); }
  void on_promotions(const MigrationReport& rep) override {
    StorePerf& p = *s_->perf_;
    p.set.inc(p.promote_on_read_ops, rep.promoted);
    p.set.inc(p.promote_on_read_bytes, rep.bytes_moved);
  }
  int flush() override { return s_->flush(); }
  int relocate(const CollectionId& c, const ObjectId& o, Tier tier, uint64_t begin, uint64_t end) override {
    return s_->move_data(c, o, tier, begin, end);
  }

 private:
  HybridStore* s_;
};

HybridStore::HybridStore(std::string path, Config cfg)
    : path_(std::move(path)),
      cfg_(std::move(cfg)),
      perf_(std::make_unique<StorePerf>(cfg_, counted_tiers(path_, cfg_))),
      view_(std::make_unique<ComponentView>(this)) {}
HybridStore::~HybridStore() { umount(); }

const std::string& HybridStore::path() const { return path_; }
int HybridStore::set_fsid(const std::string& uuid) {
  Uuid u;
  if (!parse_uuid(uuid, &u) || u == Uuid{}) return -EINVAL;
  requested_fsid_ = u;
  return 0;
}
const Config& HybridStore::config() const { return cfg_; }

int HybridStore::mkfs(std::string* error) {
  std::string e;
  int r = make_store(path_, cfg_, requested_fsid_, &e);
  if (error) *error = e;
  return r;
}

int HybridStore::open_store(std::string* error, bool read_only) {
  std::string e;
  int r;
  if (store_) {
    e = "already mounted";
    r = -EBUSY;
  } else {
    if (!read_only && !repair_mode_ && cfg_.get_bool("hybridstore_kv_move_on_mount") &&
        std::filesystem::exists(path_ + "/db/CURRENT")) {
      // A move refused or failed before its commit changed nothing: the
      // store still mounts, from its directory (the move logged why).
      std::string why;
      if (move_kv_to_device(MoveKvOptions(), nullptr, &why) == 0)
        HS_INFO("store at {}: RocksDB and the commit journal moved to the ssd device at mount", path_);
    }
    r = MountedStore::open(path_, &cfg_, perf_.get(), repair_mode_ ? &repair_log_ : nullptr, read_only, &store_,
                           &e);
  }
  if (error) *error = e;
  return r;
}

int HybridStore::mount_read_only(std::string* error) {
  int r = open_store(error, true);
  read_only_mount_ = r == 0;
  return r;
}

int HybridStore::mount(std::string* error) {
  if (int r = open_store(error); r < 0) return r;
  {
    std::lock_guard<std::mutex> l(cleaner_mutex_);
    cleaners_ = store_->tiers().make_cleaners(view_.get());
    cleaning_ = true;
  }
  migrator_ = std::make_unique<Migrator>(view_.get(), cfg_);
  migrator_->start();
  store_->heat().set_migrator(migrator_.get());
  return 0;
}

int HybridStore::umount() {
  if (store_) store_->heat().set_migrator(nullptr);
  if (migrator_) {
    migrator_->stop();
    migrator_.reset();
  }
  {
    std::lock_guard<std::mutex> l(cleaner_mutex_);
    cleaners_.clear();
    cleaning_ = false;
  }
  // Only now: the migrator's thread (its cleaning relocates through
  // apply_transaction, which reads the flag) has stopped.
  read_only_mount_ = false;
  if (!store_) return 0;
  int r = store_->close();
  store_.reset();
  return r;
}

bool HybridStore::is_mounted() const { return store_ != nullptr; }

std::string HybridStore::fsid() const {
  if (store_) return uuid_to_string(store_->fsid());
  // Not mounted (after mkfs, say): what the store directory says.
  StoreProbe p;
  std::string error;
  if (probe(path_, cfg_, &p, &error) == 0 && !p.fsid.empty()) return p.fsid;
  return uuid_to_string(Uuid{});
}

PerfCounterSet& HybridStore::perf() { return perf_->set; }

// ---------------------------------------------------------------- transactions

int HybridStore::queue_transaction(Transaction t, TxnError* error) {
  std::vector<Transaction> v;
  v.push_back(std::move(t));
  return queue_transactions(std::move(v), error);
}

int HybridStore::queue_transactions(std::vector<Transaction> ts, TxnError* error) {
  // The Ceph adapter writes only through here: every transaction is client
  // load the migrator's idle detection must see.
  if (read_only_mount_) return refuse_read_only(error);
  if (migrator_) migrator_->note_op(ts.size());
  if (!store_) return -ENOTCONN;
  return store_->pipeline().queue(ts, error, nullptr);
}

int HybridStore::apply_transaction(Transaction t, TxnError* error) {
  if (read_only_mount_) return refuse_read_only(error);
  if (migrator_) migrator_->note_op();
  if (!store_) return -ENOTCONN;
  std::vector<Transaction> v;
  v.push_back(std::move(t));
  uint64_t seq = 0;
  if (int r = store_->pipeline().queue(v, error, &seq, /*caller_waits=*/true); r < 0) return r;
  int r = store_->committer().wait_committed(seq);
  if (r < 0 && error)
    *error = TxnError{r, -1, -1, "", "not made durable: " + store_->committer().error_message()};
  return r;
}

int HybridStore::flush() { return store_ ? store_->flush() : -ENOTCONN; }

bool HybridStore::flush_commit(const CollectionId& c, std::function<void()> on_durable) {
  if (!store_) return true;
  const uint64_t seq = store_->collections().state(c)->last_seq.load();
  return !store_->committer().call_when_committed(seq, std::move(on_durable));
}

// ---------------------------------------------------------------- reads

std::vector<CollectionId> HybridStore::list_collections() {
  return store_ ? store_->collections().list() : std::vector<CollectionId>();
}
bool HybridStore::collection_exists(const CollectionId& c) { return store_ && store_->collections().exists(c); }
int HybridStore::collection_bits(const CollectionId& c) { return store_ ? store_->collections().bits(c) : -ENOENT; }
int HybridStore::collection_empty(const CollectionId& c, bool* empty) {
  std::vector<ObjectId> v;
  ObjectId next;
  int r = collection_list(c, ObjectId::make_min(), ObjectId::make_max(), 1, &v, &next);
  if (r < 0) return r;
  *empty = v.empty();
  return 0;
}
int HybridStore::collection_list(const CollectionId& c, const ObjectId& start, const ObjectId& end, int max,
                                 std::vector<ObjectId>* out, ObjectId* next) {
  if (!store_) return -ENOTCONN;
  return store_->reads().collection_list(c, start, end, max, out, next);
}

bool HybridStore::exists(const CollectionId& c, const ObjectId& o) {
  if (!store_) return false;
  OnodeRef on;
  std::shared_lock<std::shared_mutex> l;
  return store_->onodes().get_for_read(c, o, &on, &l) == 0;
}

int HybridStore::stat(const CollectionId& c, const ObjectId& o, ObjectStat* st) {
  return store_ ? store_->reads().stat(c, o, st) : -ENOTCONN;
}

int HybridStore::read(const CollectionId& c, const ObjectId& o, uint64_t off, uint64_t len, std::string* out,
                      uint32_t read_flags) {
  out->clear();
  int r = read_into(
      c, o, off, len,
      [out](uint64_t n) {
        out->resize(n);
        return out->data();
      },
      read_flags);
  if (r < 0) out->clear();
  return r;
}

int HybridStore::read_into(const CollectionId& c, const ObjectId& o, uint64_t off, uint64_t len,
                           const ReadBuffer& buffer, uint32_t read_flags) {
  // Background reads are load all the same: the migrator waits for idle.
  if (migrator_) migrator_->note_op();
  if (!store_) return -ENOTCONN;
  return store_->reads().read_into(c, o, off, len, buffer, read_flags);
}

int HybridStore::read_shared(const CollectionId& c, const ObjectId& o, uint64_t off, uint64_t len,
                             const ReadBuffer& buffer, std::vector<ReadPiece>* pieces, uint32_t read_flags) {
  if (migrator_) migrator_->note_op();
  if (!store_) return -ENOTCONN;
  return store_->reads().read_into(c, o, off, len, buffer, read_flags, pieces);
}

int HybridStore::fiemap(const CollectionId& c, const ObjectId& o, uint64_t off, uint64_t len,
                        std::map<uint64_t, uint64_t>* out) {
  return store_ ? store_->reads().fiemap(c, o, off, len, out) : -ENOTCONN;
}

int HybridStore::getattr(const CollectionId& c, const ObjectId& o, const std::string& name, std::string* value) {
  return store_ ? store_->reads().getattr(c, o, name, value) : -ENOTCONN;
}

int HybridStore::getattrs(const CollectionId& c, const ObjectId& o, std::map<std::string, std::string>* out) {
  return store_ ? store_->reads().getattrs(c, o, out) : -ENOTCONN;
}

int HybridStore::omap_get(const CollectionId& c, const ObjectId& o, std::string* header,
                          std::map<std::string, std::string>* out) {
  return store_ ? store_->reads().omap_get(c, o, header, out) : -ENOTCONN;
}

int HybridStore::omap_get_header(const CollectionId& c, const ObjectId& o, std::string* header) {
  return store_ ? store_->reads().omap_get_header(c, o, header) : -ENOTCONN;
}

int HybridStore::omap_get_keys(const CollectionId& c, const ObjectId& o, std::set<std::string>* keys) {
  keys->clear();
  auto it = get_omap_iterator(c, o);
  if (!it) return exists(c, o) ? -EIO : -ENOENT;
  for (; it->valid(); it->next()) keys->insert(it->key());
  return it->status();
}

int HybridStore::omap_get_values(const CollectionId& c, const ObjectId& o, const std::set<std::string>& keys,
                                 std::map<std::string, std::string>* out) {
  return store_ ? store_->reads().omap_get_values(c, o, keys, out) : -ENOTCONN;
}

int HybridStore::omap_check_keys(const CollectionId& c, const ObjectId& o, const std::set<std::string>& keys,
                                 std::set<std::string>* present) {
  std::map<std::string, std::string> vals;
  int r = omap_get_values(c, o, keys, &vals);
  present->clear();
  for (auto& [k, v] : vals) present->insert(k);
  return r;
}

std::unique_ptr<OmapIterator> HybridStore::get_omap_iterator(const CollectionId& c, const ObjectId& o) {
  return store_ ? store_->reads().omap_iterator(c, o) : nullptr;
}

int HybridStore::for_each_object(
    const std::function<void(const CollectionId&, const ObjectId&, const ObjectStat&)>& fn) {
  for (const auto& c : list_collections()) {
    ObjectId start = ObjectId::make_min();
    for (;;) {
      std::vector<ObjectId> page;
      ObjectId next;
      if (int r = collection_list(c, start, ObjectId::make_max(), 1024, &page, &next); r < 0) {
        if (r == -ENOENT) break;  // removed meanwhile
        return r;
      }
      for (const auto& o : page) {
        ObjectStat st;
        if (stat(c, o, &st) == 0) fn(c, o, st);
      }
      if (next.max) break;
      start = next;
    }
  }
  return 0;
}

int HybridStore::scan_objects(
    const std::function<void(const CollectionId&, const ObjectId&, const ObjectStat&)>& fn) {
  return scan_objects_impl(false, [&](const CollectionId& c, const ObjectId& o, const ObjectStat& s,
                                      const HeatSample*) { fn(c, o, s); });
}

int HybridStore::scan_objects_heat(
    const std::function<void(const CollectionId&, const ObjectId&, const ObjectStat&, const HeatSample*)>& fn) {
  if (!store_) return -ENOTCONN;
  if (!store_->heat().on_demand()) return -EOPNOTSUPP;
  return scan_objects_impl(true, fn);
}

int HybridStore::scan_objects_impl(
    bool with_heat,
    const std::function<void(const CollectionId&, const ObjectId&, const ObjectStat&, const HeatSample*)>& fn) {
  // Enough objects per range that the seeks cost nothing against the reads,
  // few enough that a range's snapshot is let go within a fraction of a
  // second.
  constexpr size_t kRange = 4096;
  if (!store_) return -ENOTCONN;
  if (OnodeCheckpointer* ck = store_->checkpointer()) {
    // With onode deltas RocksDB lacks the committed changes of dirty
    // objects until a round writes them: one round, after everything queued
    // before the scan has committed.
    if (int r = store_->committer().wait_committed(store_->committer().last_seq()); r < 0) return r;
    if (int r = ck->checkpoint(); r < 0) return r;
  }
  const std::string heat_prefix = ObjectHeat::record_prefix();
  HeatTracker* tracker = store_->heat().tracker();
  size_t bad_heat = 0;
  for (const auto& c : list_collections()) {
    // As collection_list: what was queued on the collection before the scan
    // is in RocksDB before the scan reads it.
    auto st = store_->collections().state(c);
    if (int r = store_->committer().wait_committed(st->last_seq); r < 0) return r;
    const std::string prefix = kv::onode_prefix(c);
    const std::string end = kv::prefix_end(prefix);
    std::string from = prefix;
    while (!from.empty()) {
      std::string next;
      // The heat records of the range, walked beside its onodes: an `H`
      // key is its prefix + the onode key, so both come in the same order
      // and the join is one step of each iterator (the merge operator has
      // folded each record's operands by the time the iterator yields it).
      std::unique_ptr<rocksdb::Iterator> hit;
      const std::string heat_end = heat_prefix + end;
      const rocksdb::Slice heat_upper(heat_end);
      std::string want;
      if (with_heat) {
        rocksdb::ReadOptions ro;
        ro.fill_cache = false;
        ro.iterate_upper_bound = &heat_upper;
        hit.reset(store_->db()->NewIterator(ro));
        hit->Seek(heat_prefix + from);
      }
      int r = store_->onodes().scan_space(
          from, end, kRange,
          [&](std::string_view key, const OnodeSpace& sp) {
            CollectionId kc;
            ObjectId o;
            if (!kv::decode_onode_key(key, &kc, &o)) return;
            ObjectStat s;
            s.size = sp.size;
            s.omap_id = sp.nid;
            s.allocated = sp.allocated;
            s.bytes_on = sp.bytes_on;
            if (!with_heat) {
              fn(c, o, s, nullptr);
              return;
            }
            want.assign(heat_prefix).append(key);
            const rocksdb::Slice target(want);
            while (hit->Valid() && hit->key().compare(target) < 0) hit->Next();
            HeatRecord stored;
            bool have = false;
            if (hit->Valid() && hit->key() == target) {
              if (decode_heat_record(hit->value().ToStringView(), &stored, nullptr) == 0) have = true;
              else ++bad_heat;
            }
            HeatSample h;
            fn(c, o, s, tracker->lookup_merged(key, have ? &stored : nullptr, &h) ? &h : nullptr);
          },
          &next);
      if (r < 0) return r;
      if (hit && !hit->status().ok()) return -EIO;
      from = std::move(next);
    }
  }
  if (bad_heat) HS_WARN("{} heat records were unreadable and left out of the scan", bad_heat);
  return 0;
}

// ---------------------------------------------------------------- tiers

int HybridStore::migrate(const CollectionId& c, const ObjectId& o, Tier target) {
  return move_data(c, o, target, 0, 0);
}

int HybridStore::move_data(const CollectionId& c, const ObjectId& o, Tier target, uint64_t begin, uint64_t end) {
  constexpr uint64_t kMaxMove = 256ull << 20;
  if (!store_) return -ENOTCONN;
  const TierSet& tiers = store_->tiers();
  if (!tiers.order().has(target)) return -EINVAL;
  std::string fingerprint;
  uint64_t moving = 0;  // bytes not yet on the target tier (migrate)
  bool up = false;      // the object lived on a slower tier than `target`
  auto image = std::make_shared<std::string>();
  {
    OnodeRef on;
    std::shared_lock<std::shared_mutex> l;
    if (int r = store_->onodes().get_for_read(c, o, &on, &l); r < 0) return r;
    uint64_t last = 0;
    bool nothing = true;
    for (const auto& [off, e] : on->extents.extents()) {
      last = std::max(last, e.logical_end());
      if (e.tier != target) moving += e.length;
      if (begin == end)
        nothing &= e.tier == target;
      else
        nothing &= !(e.tier == target && e.physical < end && e.physical + e.length > begin);
    }
    if (nothing) return 0;
    if (last > kMaxMove) return -EFBIG;
    const std::optional<Tier> home = tiers.home(*on);
    up = home && tiers.order().rank(*home) > tiers.order().rank(target);
    fingerprint = extent_fingerprint(on->extents);
    image->resize(last);
    // Only what moves is read (in the target's units, as the migrate op
    // moves it): writing back a few absorbed blocks of a 4 MiB object on the
    // HDD must not read the whole object from the HDD. The read verifies
    // every checksum it covers: damaged data is not moved.
    const TierSpace& sp = tiers.space(target);
    const uint64_t tu = sp.unit();
    const bool whole = sp.moves_rewrite_whole();
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (const auto& [off, e] : on->extents.extents()) {
      const bool moves = begin == end ? whole || e.tier != target
                                      : e.tier == target && e.physical < end && e.physical + e.length > begin;
      if (!moves) continue;
      uint64_t a = e.logical / tu * tu, b = std::min(last, (e.logical_end() + tu - 1) / tu * tu);
      if (!ranges.empty() && a <= ranges.back().second)
        ranges.back().second = std::max(ranges.back().second, b);
      else
        ranges.emplace_back(a, b);
    }
    for (const auto& [a, b] : ranges)
      if (int r = store_->data().read(c, o, *on, a, b - a, image->data() + a); r < 0) return r;
  }
  // The copy was made without blocking writers; the transaction checks that
  // nothing changed meanwhile and aborts (-EAGAIN) if something did.
  Transaction t;
  if (begin == end)
    t.migrate(c, o, target, std::move(fingerprint), std::move(image));
  else
    t.relocate(c, o, target, begin, end, std::move(fingerprint), std::move(image));
  int r = apply_transaction(std::move(t));
  if (r == 0 && begin == end) {
    StorePerf& p = *perf_;
    p.set.inc(up ? p.migrate_up_ops : p.migrate_down_ops);
    p.set.inc(up ? p.migrate_up_bytes : p.migrate_down_bytes, moving);
  }
  return r;
}

std::string HybridStore::sections_report() {
  if (!store_) return {};
  store_->flush();
  return store_->tiers().report();
}

void HybridStore::tick() {
  if (store_) store_->tick();
}

int HybridStore::save_heat() { return store_ ? store_->save_heat() : 0; }

int HybridStore::clean_now(bool force, CleanerReport* report) {
  std::lock_guard<std::mutex> l(cleaner_mutex_);
  if (!cleaning_) return -ENOTCONN;
  *report = CleanerReport();
  const uint64_t cap = cfg_.get_size("hybridstore_tier_migrate_bandwidth");
  int r = 0;
  for (auto& cleaner : cleaners_) {
    const uint64_t t0 = perf_now_ns();
    CleanerReport pass;
    if (int rr = cleaner->run_pass(cap ? cap : (64ull << 20), force, &pass); rr < 0 && r == 0) r = rr;
    if (pass.victims) {
      StorePerf& p = *perf_;
      p.set.inc(p.cleaner_passes);
      p.set.tinc(p.cleaner_lat, perf_now_ns() - t0);
      p.set.inc(p.cleaner_victims, pass.victims);
      p.set.inc(p.cleaner_units_freed, pass.units_freed);
      p.set.inc(p.cleaner_objects_moved, pass.objects_moved);
      p.set.inc(p.cleaner_bytes_moved, pass.bytes_moved);
    }
    report->victims += pass.victims;
    report->units_freed += pass.units_freed;
    report->objects_moved += pass.objects_moved;
    report->skipped += pass.skipped;
    report->bytes_moved += pass.bytes_moved;
    report->owner_scans += pass.owner_scans;
    report->owners_held = std::max(report->owners_held, pass.owners_held);
  }
  return r;
}

int HybridStore::migrate_now(MigrationReport* report) {
  if (!migrator_) return -ENOTCONN;
  return migrator_->run_once(report);
}
int HybridStore::promote_now() {
  if (!migrator_) return -ENOTCONN;
  return static_cast<int>(migrator_->promote_queued());
}
int HybridStore::destage_now() {
  if (!migrator_) return -ENOTCONN;
  return static_cast<int>(migrator_->destage(/*all=*/true));
}
uint64_t HybridStore::client_ops_counted() const { return migrator_ ? migrator_->client_ops() : 0; }

// ---------------------------------------------------------------- maintenance

int HybridStore::statfs(StoreStats* st) { return store_ ? store_->statfs(st) : -ENOTCONN; }

HybridStore::Quiet HybridStore::hold_background() {
  // A move between tiers, and a cleaner's relocation, commits the onode,
  // the freelists and the statistics at once, but fsck reads them one
  // after another: none may commit in between (promotions follow reads
  // within a second; the cleaner runs every second while the fastest tier
  // is short of free units). The cleaner's lock first: the migrator's
  // thread never holds its pass lock while it cleans.
  Quiet q;
  q.cleaning = std::unique_lock<std::mutex>(cleaner_mutex_);
  if (migrator_) q.moves = migrator_->hold_moves();
  return q;
}

int HybridStore::fsck(bool deep, FsckReport* report) {
  if (store_) {
    Quiet quiet = hold_background();
    std::lock_guard<std::mutex> meta(meta_mutex_);
    return store_->fsck(deep, report);
  }
  std::string error;
  if (int r = mount(&error); r < 0) {
    report->problems.push_back("cannot mount for fsck: " + error);
    return r;
  }
  int r;
  {
    Quiet quiet = hold_background();
    std::lock_guard<std::mutex> meta(meta_mutex_);
    r = store_->fsck(deep, report);
  }
  int u = umount();
  return r < 0 ? r : (u < 0 ? u : r);
}

int HybridStore::compact() {
  if (!store_) return -ENOTCONN;
  // A transaction is acknowledged once its journal record is durable; its
  // batch may still be on its way to RocksDB. A compaction that ran ahead
  // of it would keep what an acknowledged removal deleted.
  if (int r = store_->flush(); r < 0) return r;
  rocksdb::CompactRangeOptions o;
  return store_->db()->CompactRange(o, nullptr, nullptr).ok() ? 0 : -EIO;
}

std::vector<MemPoolStat> HybridStore::mempools() {
  return store_ ? store_->mempools() : std::vector<MemPoolStat>();
}

uint64_t HybridStore::heap_bytes(std::string* source) {
  const char* s = "none";
  const uint64_t n = read_heap_bytes(&s);
  if (source) *source = s;
  return n;
}

int HybridStore::set_memory_target(uint64_t bytes) {
  if (!store_) return -ENOTCONN;
  store_->set_memory_target(bytes);  // into cfg_, which the mount shares
  return 0;
}

void HybridStore::drop_caches() {
  if (store_) store_->onodes().drop_clean();
}

std::string HybridStore::kv_statistics() {
  std::string s;
  if (!store_) return s;
  rocksdb::DB* db = store_->db();
  db->GetProperty(rocksdb::DB::Properties::kStats, &s);
  // Not part of RocksDB's dump, and what an operator sizing
  // hybridstore_kv_block_cache_size looks for.
  uint64_t capacity = 0, usage = 0, pinned = 0;
  if (db->GetIntProperty(rocksdb::DB::Properties::kBlockCacheCapacity, &capacity) &&
      db->GetIntProperty(rocksdb::DB::Properties::kBlockCacheUsage, &usage) &&
      db->GetIntProperty(rocksdb::DB::Properties::kBlockCachePinnedUsage, &pinned))
    s += "Block cache: capacity " + std::to_string(capacity) + " bytes, usage " + std::to_string(usage) +
         " bytes, pinned " + std::to_string(pinned) + " bytes\n";
  return s;
}

int HybridStore::mount_for_repair(std::string* error, std::vector<std::string>* dropped) {
  repair_mode_ = true;
  int r = mount(error);
  *dropped = repair_log_;
  return r;
}

int HybridStore::repair(FsckReport* found, std::vector<std::string>* changes) {
  if (!store_) return -ENOTCONN;
  Quiet quiet = hold_background();
  std::lock_guard<std::mutex> meta(meta_mutex_);
  return store_->repair(found, changes);
}

}  // namespace hybridstore
