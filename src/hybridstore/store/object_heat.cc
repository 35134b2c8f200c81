#include "hybridstore/store/object_heat.h"

#include <rocksdb/db.h>

#include <chrono>

#include "hscommon/log.h"
#include "hybridstore/kv/kv_committer.h"
#include "hybridstore/kv/kv_schema.h"
#include "hybridstore/store/tier_set.h"
#include "hybridstore/tier/knapsack_planner.h"
#include "hybridstore/tier/migrator.h"

namespace hybridstore {

namespace {
std::string heat_state_key() { return std::string(1, kv::kHeat) + 's'; }
std::string heat_entry_prefix() { return std::string(1, kv::kHeat) + 'o'; }
uint64_t wall_us() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}
}  // namespace

ObjectHeat::ObjectHeat(const Config& cfg, const TierSet* tiers)
    : tiers_(tiers),
      tracker_(std::make_unique<HeatTracker>(heat_tracker_options_from_config(cfg))),
      promote_hits_(static_cast<uint64_t>(cfg.get_int("hybridstore_tier_promote_hits"))),
      promote_max_size_(cfg.get_size("hybridstore_tier_promote_max_size")),
      promote_break_even_(cfg.get_size("hybridstore_tier_promote_break_even")) {}

ObjectHeat::~ObjectHeat() = default;

std::string ObjectHeat::record_prefix() { return heat_entry_prefix(); }

namespace {
void add_ops(rocksdb::WriteBatch* b, const std::vector<HeatOp>& ops) {
  const std::string prefix = heat_entry_prefix();
  for (const auto& op : ops) {
    if (op.operand.empty()) b->Delete(prefix + op.key);
    else b->Merge(prefix + op.key, op.operand);
  }
}
}  // namespace

void ObjectHeat::load(rocksdb::DB* db) {
  std::string v, err;
  if (db->Get(rocksdb::ReadOptions(), heat_state_key(), &v).ok() && tracker_->import_state(v, &err) < 0)
    HS_WARN("heat history state unreadable ({}); starting fresh", err);
  if (on_demand()) {
    // Written straight away, off the commit path as the periodic save is:
    // a crash loses at most what the last seconds added to cold objects.
    tracker_->set_spill([this, db](std::vector<HeatOp>&& ops) {
      rocksdb::WriteBatch b;
      add_ops(&b, ops);
      rocksdb::Status st = db->Write(rocksdb::WriteOptions(), &b);
      if (!st.ok() && spill_errors_.fetch_add(1, std::memory_order_relaxed) == 0)
        HS_WARN("writing evicted heat records failed ({}); their history is lost", st.ToString());
    });
    return;
  }
  std::string prefix = heat_entry_prefix();
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  size_t bad = 0;
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    std::string_view key = it->key().ToStringView().substr(prefix.size());
    if (tracker_->import_entry(key, it->value().ToStringView(), &err) < 0) ++bad;
  }
  if (bad) HS_WARN("{} heat records were unreadable and are ignored", bad);
}

// One batch per shard of the tracker, each built, written and freed before
// the next: as one batch, a 1M-object OSD's heap rose by 320 MB for the
// seconds a save took, past its memory target. Heat records are
// independent per object and the state record goes last, so a crash between
// two batches leaves each record old or new (a full export's range delete
// goes with the first shard: a crash after it loses the heat of the shards
// not yet written, which the tracker rebuilds from new accesses).
int ObjectHeat::save(rocksdb::DB* db, KvCommitter* committer) {
  if (committer->error()) return -EROFS;
  const std::string prefix = heat_entry_prefix();
  const bool full = tracker_->begin_export();
  auto write = [&](rocksdb::WriteBatch* b) {
    rocksdb::Status st = db->Write(rocksdb::WriteOptions(), b);
    if (st.ok()) return 0;
    committer->fail(-EIO, "saving heat records failed: " + st.ToString());
    return -EIO;
  };
  for (unsigned i = 0; i < tracker_->shards(); ++i) {
    HeatDelta d;
    tracker_->export_shard(i, full, &d);
    rocksdb::WriteBatch b;
    if (full && i == 0) b.DeleteRange(prefix, kv::prefix_end(prefix));
    for (const auto& k : d.erase) b.Delete(prefix + k);
    for (const auto& [k, v] : d.put) b.Put(prefix + k, v);
    add_ops(&b, d.ops);
    if (b.Count() == 0) continue;
    if (int r = write(&b); r < 0) return r;
  }
  rocksdb::WriteBatch b;
  b.Put(heat_state_key(), tracker_->export_state());
  return write(&b);
}

void ObjectHeat::detach() {
  // Later evictions wait in the tracker's memory, never written.
  if (on_demand()) tracker_->set_spill(nullptr);
}

void ObjectHeat::note(const CollectionId& c, const ObjectId& o, AccessType type, uint64_t off, uint64_t len,
                      uint64_t size, bool counts) {
  note(kv::onode_key(c, o), type, off, len, size, counts);
}

void ObjectHeat::note(const std::string& onode_key, AccessType type, uint64_t off, uint64_t len, uint64_t size,
                      bool counts) {
  tracker_->record(onode_key, type, off, len, wall_us(), size, counts);
}

void ObjectHeat::forget(const std::string& onode_key) { tracker_->forget(onode_key); }

double ObjectHeat::hotness(const CollectionId& c, const ObjectId& o) const {
  HeatSample h;
  return tracker_->lookup(kv::onode_key(c, o), &h) ? h.frequency : 0.0;
}

bool ObjectHeat::write_continues(const CollectionId& c, const ObjectId& o, uint64_t off) const {
  HeatSample h;
  if (!tracker_->lookup(kv::onode_key(c, o), &h)) return false;
  const uint64_t now = wall_us();
  return h.last_type == AccessType::kWrite && h.last_end == off && now >= h.last_time_us &&
         now - h.last_time_us < tracker_->options().continuation_us;
}

// Only objects mostly below the fastest tier are looked at, so reads from it
// pay nothing beyond two comparisons. The migrator promotes queued objects
// within a second rather than at its next pass (a day by default).
void ObjectHeat::maybe_promote(const CollectionId& c, const ObjectId& o, const std::string& key, const Onode& on) {
  if (!promote_hits_ || on.extents.empty()) return;
  Migrator* m = migrator_.load(std::memory_order_acquire);
  if (!m) return;
  // Lives on a tier a promotion can lift it from (one step, Migrator::promote_queued).
  const std::optional<Tier> home = tiers_->home(on);
  if (!home || *home == tiers_->fastest()) return;
  uint64_t bytes = 0;
  for (Tier t : tiers_->ids()) bytes += on.extents.bytes_on(t);
  if (bytes > promote_max_size_) return;
  HeatSample h;
  if (tracker_->lookup(key, &h) && h.frequency >= static_cast<double>(promote_hits_) &&
      random_requests_pay_for_copy(h.randomness, bytes, promote_break_even_))
    m->request_promotion(c, o, bytes);
}

void ObjectHeat::note_absorbed(const CollectionId& c, const ObjectId& o) {
  if (Migrator* m = migrator_.load(std::memory_order_acquire)) m->note_absorbed(c, o);
}

}  // namespace hybridstore
