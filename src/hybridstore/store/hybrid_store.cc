// The public facade: argument checks and forwarding to StoreImpl.
#include "hybridstore/store/hybrid_store.h"

#include <cstring>

#include "hybridstore/store/store_impl.h"
#include "hybridstore/tier/tier_cleaner.h"
#include "hybridstore/tier/migrator.h"

namespace hybridstore {

// Forwards to the public calls, and to the moves between and within tiers
// (move_data): the components get no more of the store than their
// interfaces say (on_pass only adds to the store's counters).
class HybridStore::ComponentView final : public Migrator::Store, public TierCleaner::Store {
 public:
  explicit ComponentView(HybridStore* store) : s_(store) {}

  const Config& config() const override { return s_->config(); }
  HeatTracker* heat() override { return s_->heat(); }
  int tier_order(Tier* order) override {
    const StoreImpl& impl = *s_->impl_;
    for (int r = 0; r < impl.tiers(); ++r) order[r] = impl.super_.order[r];
    return impl.tiers();
  }
  int tier_space(Tier t, uint64_t* total, uint64_t* unit, uint64_t* free) override {
    StoreStats st;
    if (int r = s_->statfs(&st); r < 0) return r;
    if (tier_index(t) >= st.tiers) return -EINVAL;
    *total = st.tier[tier_index(t)].total;
    *unit = st.tier[tier_index(t)].unit;
    *free = st.tier[tier_index(t)].free;
    return 0;
  }
  int for_each_object(
      const std::function<void(const CollectionId&, const ObjectId&, const ObjectStat&)>& fn) override {
    return s_->for_each_object(fn);
  }
  int migrate(const CollectionId& c, const ObjectId& o, Tier target) override { return s_->migrate(c, o, target); }
  void tick() override {
    s_->tick();
    CleanerReport cleaned;
    s_->clean_now(false, &cleaned);
  }
  int save_heat() override { return s_->save_heat(); }
  void on_pass(const MigrationReport& rep) override {
    StorePerf& p = *s_->impl_->perf_;
    p.set.inc(p.migration_passes);
    p.set.tinc(p.migration_lat, static_cast<uint64_t>(rep.seconds * 1e9));
    p.set.inc(p.migrate_retries, rep.retries);
    p.set.inc(p.migrate_skipped, rep.skipped);
  }
  void on_destage(const MigrationReport& rep) override {
    StorePerf& p = *s_->impl_->perf_;
    p.set.inc(p.destage_ops, rep.demoted);
    p.set.inc(p.destage_bytes, rep.bytes_moved);
  }
  int stat(const CollectionId& c, const ObjectId& o, ObjectStat* st) override { return s_->stat(c, o, st); }
  void on_promotions(const MigrationReport& rep) override {
    StorePerf& p = *s_->impl_->perf_;
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
    : impl_(std::make_unique<StoreImpl>(std::move(path), std::move(cfg))),
      view_(std::make_unique<ComponentView>(this)) {}
HybridStore::~HybridStore() { umount(); }

const std::string& HybridStore::path() const { return impl_->path_; }
int HybridStore::set_fsid(const std::string& uuid) {
  Uuid u;
  if (!parse_uuid(uuid, &u) || u == Uuid{}) return -EINVAL;
  impl_->requested_fsid_ = u;
  return 0;
}
const Config& HybridStore::config() const { return impl_->cfg_; }

int HybridStore::mkfs(std::string* error) {
  std::string e;
  int r = impl_->mkfs(&e);
  if (error) *error = e;
  return r;
}
int HybridStore::mount(std::string* error) {
  std::string e;
  int r = impl_->mount(&e);
  if (error) *error = e;
  if (r == 0) {
    {
      std::lock_guard<std::mutex> l(cleaner_mutex_);
      for (int t = 0; t < impl_->tiers(); ++t)
        if (auto c = impl_->space(tier_at(t)).make_cleaner(view_.get())) cleaners_.push_back(std::move(c));
      cleaning_ = true;
    }
    migrator_ = std::make_unique<Migrator>(view_.get(), impl_->cfg_);
    migrator_->start();
    impl_->promoter_.store(migrator_.get(), std::memory_order_release);
  }
  return r;
}
int HybridStore::mount_read_only(std::string* error) {
  std::string e;
  int r = impl_->mount(&e);
  if (error) *error = e;
  read_only_mount_ = r == 0;
  return r;
}
int HybridStore::umount() {
  read_only_mount_ = false;
  impl_->promoter_.store(nullptr, std::memory_order_release);
  if (migrator_) {
    migrator_->stop();
    migrator_.reset();
  }
  {
    std::lock_guard<std::mutex> l(cleaner_mutex_);
    cleaners_.clear();
    cleaning_ = false;
  }
  return impl_->umount();
}
HeatTracker* HybridStore::heat() { return impl_->heat_.get(); }
PerfCounterSet& HybridStore::perf() { return impl_->perf_->set; }
std::string HybridStore::sections_report() {
  if (!impl_->mounted_) return {};
  impl_->flush();
  std::string out;
  for (int t = 0; t < impl_->tiers(); ++t) out += impl_->space(tier_at(t)).report();
  return out;
}
void HybridStore::tick() { impl_->tick_staged_state(); }
int HybridStore::save_heat() { return impl_->save_heat(); }
int HybridStore::clean_now(bool force, CleanerReport* report) {
  std::lock_guard<std::mutex> l(cleaner_mutex_);
  if (!cleaning_) return -ENOTCONN;
  *report = CleanerReport();
  const uint64_t cap = impl_->cfg_.get_size("hybridstore_tier_migrate_bandwidth");
  int r = 0;
  for (auto& cleaner : cleaners_) {
    const uint64_t t0 = perf_now_ns();
    CleanerReport pass;
    if (int rr = cleaner->run_pass(cap ? cap : (64ull << 20), force, &pass); rr < 0 && r == 0) r = rr;
    if (pass.victims) {
      StorePerf& p = *impl_->perf_;
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
bool HybridStore::is_mounted() const { return impl_->mounted_; }
std::string HybridStore::fsid() const {
  if (impl_->mounted_) return uuid_to_string(impl_->super_.fsid);
  // Not mounted (after mkfs, say): what the store directory says.
  StoreProbe p;
  std::string error;
  if (probe(impl_->path_, impl_->cfg_, &p, &error) == 0 && !p.fsid.empty()) return p.fsid;
  return uuid_to_string(Uuid{});
}

namespace {
int refuse_read_only(TxnError* error) {
  if (error) *error = TxnError{-EROFS, -1, -1, "", "the store is mounted read-only"};
  return -EROFS;
}
}  // namespace

int HybridStore::queue_transaction(Transaction t, TxnError* error) {
  if (read_only_mount_) return refuse_read_only(error);
  if (migrator_) migrator_->note_op();
  std::vector<Transaction> v;
  v.push_back(std::move(t));
  return impl_->queue_transactions(v, error, nullptr);
}
int HybridStore::queue_transactions(std::vector<Transaction> ts, TxnError* error) {
  // The Ceph adapter writes only through here: every transaction is client
  // load the migrator's idle detection must see.
  if (read_only_mount_) return refuse_read_only(error);
  if (migrator_) migrator_->note_op(ts.size());
  return impl_->queue_transactions(ts, error, nullptr);
}
int HybridStore::apply_transaction(Transaction t, TxnError* error) {
  if (read_only_mount_) return refuse_read_only(error);
  if (migrator_) migrator_->note_op();
  std::vector<Transaction> v;
  v.push_back(std::move(t));
  uint64_t seq = 0;
  if (int r = impl_->queue_transactions(v, error, &seq, /*caller_waits=*/true); r < 0) return r;
  int r = impl_->wait_committed(seq);
  if (r < 0 && error)
    *error = TxnError{r, -1, -1, "", "not made durable: " + impl_->committer_->error_message()};
  return r;
}
int HybridStore::flush() { return impl_->flush(); }
bool HybridStore::flush_commit(const CollectionId& c, std::function<void()> on_durable) {
  if (!impl_->mounted_) return true;
  const uint64_t seq = impl_->coll_state(c)->last_seq.load();
  return !impl_->committer_->call_when_committed(seq, std::move(on_durable));
}

std::vector<CollectionId> HybridStore::list_collections() { return impl_->list_collections(); }
bool HybridStore::collection_exists(const CollectionId& c) { return impl_->collection_exists(c); }
int HybridStore::collection_bits(const CollectionId& c) { return impl_->collection_bits(c); }
int HybridStore::collection_empty(const CollectionId& c, bool* empty) {
  std::vector<ObjectId> v;
  ObjectId next;
  int r = impl_->collection_list(c, ObjectId::make_min(), ObjectId::make_max(), 1, &v, &next);
  if (r < 0) return r;
  *empty = v.empty();
  return 0;
}
int HybridStore::collection_list(const CollectionId& c, const ObjectId& start, const ObjectId& end, int max,
                                 std::vector<ObjectId>* out, ObjectId* next) {
  return impl_->collection_list(c, start, end, max, out, next);
}

bool HybridStore::exists(const CollectionId& c, const ObjectId& o) {
  OnodeRef on;
  std::shared_lock<std::shared_mutex> l;
  return impl_->get_onode_for_read(c, o, &on, &l) == 0;
}

int HybridStore::stat(const CollectionId& c, const ObjectId& o, ObjectStat* st) {
  OnodeRef on;
  std::shared_lock<std::shared_mutex> l;
  if (int r = impl_->get_onode_for_read(c, o, &on, &l); r < 0) return r;
  *st = ObjectStat();
  st->size = on->size;
  st->omap_id = on->nid;
  for (const auto& [off, e] : on->extents.extents()) {
    st->allocated += e.length;
    st->bytes_on[tier_index(e.tier)] += e.length;
  }
  return 0;
}

int HybridStore::read(const CollectionId& c, const ObjectId& o, uint64_t off, uint64_t len, std::string* out,
                      uint32_t read_flags) {
  // Background reads are load all the same: the migrator waits for idle.
  if (migrator_) migrator_->note_op();
  return impl_->read(c, o, off, len, out, read_flags);
}

int HybridStore::read_into(const CollectionId& c, const ObjectId& o, uint64_t off, uint64_t len,
                           const ReadBuffer& buffer, uint32_t read_flags) {
  if (migrator_) migrator_->note_op();
  return impl_->read_into(c, o, off, len, buffer, read_flags);
}

int HybridStore::read_shared(const CollectionId& c, const ObjectId& o, uint64_t off, uint64_t len,
                             const ReadBuffer& buffer, std::vector<ReadPiece>* pieces, uint32_t read_flags) {
  if (migrator_) migrator_->note_op();
  return impl_->read_into(c, o, off, len, buffer, read_flags, pieces);
}

int HybridStore::fiemap(const CollectionId& c, const ObjectId& o, uint64_t off, uint64_t len,
                        std::map<uint64_t, uint64_t>* out) {
  OnodeRef on;
  std::shared_lock<std::shared_mutex> l;
  if (int r = impl_->get_onode_for_read(c, o, &on, &l); r < 0) return r;
  out->clear();
  uint64_t end = std::min(off + len, on->size);
  for (const DataExtent* e : on->extents.overlapping(off, end)) {
    uint64_t b = std::max(off, e->logical), f = std::min(end, e->logical_end());
    if (b >= f) continue;
    // Adjacent extents read as one allocated range.
    if (!out->empty()) {
      auto last = std::prev(out->end());
      if (last->first + last->second == b) {
        last->second += f - b;
        continue;
      }
    }
    (*out)[b] = f - b;
  }
  return 0;
}

int HybridStore::getattr(const CollectionId& c, const ObjectId& o, const std::string& name, std::string* value) {
  OnodeRef on;
  std::shared_lock<std::shared_mutex> l;
  if (int r = impl_->get_onode_for_read(c, o, &on, &l); r < 0) return r;
  auto it = on->attrs.find(name);
  if (it == on->attrs.end()) return -ENODATA;
  *value = it->second;
  return 0;
}

int HybridStore::getattrs(const CollectionId& c, const ObjectId& o, std::map<std::string, std::string>* out) {
  OnodeRef on;
  std::shared_lock<std::shared_mutex> l;
  if (int r = impl_->get_onode_for_read(c, o, &on, &l); r < 0) return r;
  *out = on->attrs;
  return 0;
}

int HybridStore::omap_get(const CollectionId& c, const ObjectId& o, std::string* header,
                          std::map<std::string, std::string>* out) {
  return impl_->omap_read(c, o, [&](rocksdb::DB* db, uint64_t nid) {
    header->clear();
    out->clear();
    if (!nid) return 0;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
    std::string end = kv::omap_nid_end(nid);
    for (it->Seek(kv::omap_nid_begin(nid)); it->Valid() && it->key().compare(end) < 0; it->Next()) {
      uint64_t n;
      bool hdr;
      std::string_view user;
      if (!kv::decode_omap_key(it->key().ToStringView(), &n, &hdr, &user)) return -EIO;
      if (hdr)
        *header = it->value().ToString();
      else
        (*out)[std::string(user)] = it->value().ToString();
    }
    return it->status().ok() ? 0 : -EIO;
  });
}

int HybridStore::omap_get_header(const CollectionId& c, const ObjectId& o, std::string* header) {
  return impl_->omap_read(c, o, [&](rocksdb::DB* db, uint64_t nid) {
    header->clear();
    if (!nid) return 0;
    rocksdb::Status s = db->Get(rocksdb::ReadOptions(), kv::omap_header_key(nid), header);
    return s.ok() || s.IsNotFound() ? 0 : -EIO;
  });
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
  return impl_->omap_read(c, o, [&](rocksdb::DB* db, uint64_t nid) {
    out->clear();
    if (!nid) return 0;
    for (const auto& k : keys) {
      std::string v;
      rocksdb::Status s = db->Get(rocksdb::ReadOptions(), kv::omap_key(nid, k), &v);
      if (s.ok())
        (*out)[k] = std::move(v);
      else if (!s.IsNotFound())
        return -EIO;
    }
    return 0;
  });
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
  return impl_->omap_iterator(c, o);
}

int HybridStore::statfs(StoreStats* st) { return impl_->statfs(st); }

int HybridStore::migrate(const CollectionId& c, const ObjectId& o, Tier target) {
  return move_data(c, o, target, 0, 0);
}

int HybridStore::move_data(const CollectionId& c, const ObjectId& o, Tier target, uint64_t begin, uint64_t end) {
  constexpr uint64_t kMaxMove = 256ull << 20;
  if (tier_index(target) >= impl_->tiers()) return -EINVAL;
  std::string fingerprint;
  uint64_t moving = 0;  // bytes not yet on the target tier (migrate)
  bool up = false;      // the object lived on a slower tier than `target`
  auto image = std::make_shared<std::string>();
  {
    OnodeRef on;
    std::shared_lock<std::shared_mutex> l;
    if (int r = impl_->get_onode_for_read(c, o, &on, &l); r < 0) return r;
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
    const int home = impl_->home_tier(*on);
    up = home >= 0 && impl_->rank(tier_at(home)) > impl_->rank(target);
    fingerprint = extent_fingerprint(on->extents);
    image->resize(last);
    // Only what moves is read (in the target's units, as the migrate op
    // moves it): writing back a few absorbed blocks of a 4 MiB object on the
    // HDD must not read the whole object from the HDD. The read verifies
    // every checksum it covers: damaged data is not moved.
    const uint64_t tu = impl_->space(target).unit();
    const bool whole = impl_->space(target).moves_rewrite_whole();
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
      if (int r = impl_->read_data(c, o, *on, a, b - a, image->data() + a); r < 0) return r;
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
    StorePerf& p = *impl_->perf_;
    p.set.inc(up ? p.migrate_up_ops : p.migrate_down_ops);
    p.set.inc(up ? p.migrate_up_bytes : p.migrate_down_bytes, moving);
  }
  return r;
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
int HybridStore::fsck(bool deep, FsckReport* report) {
  if (impl_->mounted_) {
    // A move between tiers commits the onode, the freelists and the
    // statistics at once, but fsck reads them one after another: no move
    // may commit in between (promotions follow reads within a second).
    auto hold = migrator_ ? migrator_->hold_moves() : std::unique_lock<std::mutex>();
    return impl_->fsck(deep, report);
  }
  std::string error;
  if (int r = mount(&error); r < 0) {
    report->problems.push_back("cannot mount for fsck: " + error);
    return r;
  }
  int r;
  {
    auto hold = migrator_ ? migrator_->hold_moves() : std::unique_lock<std::mutex>();
    r = impl_->fsck(deep, report);
  }
  int u = umount();
  return r < 0 ? r : (u < 0 ? u : r);
}
int HybridStore::compact() {
  if (!impl_->mounted_) return -ENOTCONN;
  rocksdb::CompactRangeOptions o;
  return impl_->db_->CompactRange(o, nullptr, nullptr).ok() ? 0 : -EIO;
}
void HybridStore::drop_caches() {
  if (!impl_->mounted_) return;
  impl_->cache_->drop_committed(impl_->committer_->committed_seq());
}
std::string HybridStore::kv_statistics() {
  std::string s;
  if (!impl_->mounted_) return s;
  impl_->db_->GetProperty(rocksdb::DB::Properties::kStats, &s);
  // Not part of RocksDB's dump, and what an operator sizing
  // hybridstore_kv_block_cache_size looks for.
  uint64_t capacity = 0, usage = 0, pinned = 0;
  auto* db = impl_->db_.get();
  if (db->GetIntProperty(rocksdb::DB::Properties::kBlockCacheCapacity, &capacity) &&
      db->GetIntProperty(rocksdb::DB::Properties::kBlockCacheUsage, &usage) &&
      db->GetIntProperty(rocksdb::DB::Properties::kBlockCachePinnedUsage, &pinned))
    s += "Block cache: capacity " + std::to_string(capacity) + " bytes, usage " + std::to_string(usage) +
         " bytes, pinned " + std::to_string(pinned) + " bytes\n";
  return s;
}
int HybridStore::mount_for_repair(std::string* error, std::vector<std::string>* dropped) {
  impl_->repair_mode_ = true;
  int r = mount(error);
  *dropped = impl_->repair_log_;
  return r;
}
int HybridStore::repair(FsckReport* found, std::vector<std::string>* changes) {
  auto hold = migrator_ ? migrator_->hold_moves() : std::unique_lock<std::mutex>();
  return impl_->repair(found, changes);
}

}  // namespace hybridstore
