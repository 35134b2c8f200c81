#include "hybridstore/store/onode_store.h"

#include <fmt/format.h>
#include <rocksdb/db.h>

#include "hscommon/encoding.h"
#include "hscommon/log.h"
#include "hybridstore/kv/kv_committer.h"
#include "hybridstore/kv/kv_schema.h"
#include "hybridstore/store/collections.h"
#include "hybridstore/store/store_perf.h"

namespace hybridstore {

OnodeStore::OnodeStore(rocksdb::DB* db, KvCommitter* committer, CollectionTable* colls, const Config& cfg,
                       int tiers, StorePerf* perf)
    : db_(db),
      committer_(committer),
      colls_(colls),
      perf_(perf),
      tiers_(tiers),
      extent_map_inline_max_(cfg.get_size("hybridstore_extent_map_inline_max")),
      cache_(static_cast<size_t>(cfg.get_int("hybridstore_onode_cache_size")),
             cfg.get_size("hybridstore_onode_cache_bytes")) {}

OnodeStore::~OnodeStore() = default;

int OnodeStore::load_nids(std::string* error) {
  std::string v;
  if (!db_->Get(rocksdb::ReadOptions(), kv::nid_max_key(), &v).ok() || v.size() != 8) {
    *error = "store has no nid_max record";
    return -EIO;
  }
  nids_.next = nids_.reserved = load_fixed64(v.data());
  return 0;
}

uint64_t OnodeStore::take_reserved(Counter& c, const std::string& key, const char* what) {
  std::lock_guard<std::mutex> l(nid_mutex_);
  if (c.next >= c.reserved) {
    // Reserve a block with a synced write of its own, so no transaction's
    // fate can make the store forget a number it handed out, and no crash
    // make it hand one out twice.
    uint64_t want = c.next + 4096;
    std::string v;
    put_fixed64(&v, want);
    rocksdb::WriteOptions wo;
    wo.sync = true;
    if (rocksdb::Status s = db_->Put(wo, key, v); !s.ok()) {
      committer_->fail(-EIO, fmt::format("RocksDB write reserving {} failed: {}", what, s.ToString()));
      return 0;
    }
    c.reserved = want;
  }
  return c.next++;
}

uint64_t OnodeStore::allocate_nid() { return take_reserved(nids_, kv::nid_max_key(), "omap ids"); }

int OnodeStore::enable_versions(std::string* error) {
  std::string v;
  if (!db_->Get(rocksdb::ReadOptions(), kv::incarnation_max_key(), &v).ok() || v.size() != 8) {
    *error = "format-7 store has no incarnation_max record";
    return -EIO;
  }
  std::lock_guard<std::mutex> l(nid_mutex_);
  incarnations_.next = incarnations_.reserved = load_fixed64(v.data());
  versions_.store(true, std::memory_order_release);
  return 0;
}

uint64_t OnodeStore::allocate_incarnation() {
  if (!versions()) return 0;
  return take_reserved(incarnations_, kv::incarnation_max_key(), "object incarnations");
}

int OnodeStore::complete(const std::string& key, std::string_view value, const rocksdb::ReadOptions& ro, Onode* out,
                         std::string* why) const {
  std::vector<ShardRef> refs;
  if (!decode_onode(value, out, why, tiers_, &refs)) return -EIO;
  if (refs.empty()) return 0;
  std::vector<std::string> keys;
  keys.reserve(refs.size());
  for (const auto& r : refs) keys.push_back(kv::extent_shard_key(key, r.index));
  std::vector<rocksdb::Slice> slices(keys.begin(), keys.end());
  std::vector<std::string> values;
  std::vector<rocksdb::Status> st = db_->MultiGet(ro, slices, &values);
  for (size_t i = 0; i < refs.size(); ++i) {
    if (st[i].IsNotFound()) {
      *why = fmt::format("onode: extent shard {} is missing", refs[i].index);
      return -EIO;
    }
    if (!st[i].ok()) {
      *why = fmt::format("onode: reading extent shard {}: {}", refs[i].index, st[i].ToString());
      return -EIO;
    }
    if (!decode_extent_shard(values[i], refs[i], &out->extents, why, tiers_)) return -EIO;
  }
  return 0;
}

int OnodeStore::load(const std::string& key, Onode* out, std::string* why) const {
  // The onode and its shards from one view of the DB. Readers and writers
  // of an object hold its collection's lock, so two plain reads see the
  // same commit; if they did not, the shards would not match the refs, and
  // a read under one snapshot settles whether that was a race or damage.
  for (int attempt = 0; attempt < 2; ++attempt) {
    rocksdb::ReadOptions ro;
    const rocksdb::Snapshot* snap = attempt ? db_->GetSnapshot() : nullptr;
    ro.snapshot = snap;
    std::string v;
    rocksdb::Status st = db_->Get(ro, key, &v);
    int r;
    if (st.IsNotFound()) {
      r = -ENOENT;
    } else if (!st.ok()) {
      *why = st.ToString();
      r = -EIO;
    } else {
      *out = Onode();
      r = complete(key, v, ro, out, why);
    }
    if (snap) db_->ReleaseSnapshot(snap);
    if (r != -EIO || !st.ok()) return r;
  }
  return -EIO;
}

int OnodeStore::scan_space(const std::string& from, const std::string& end, size_t max,
                           const std::function<void(std::string_view key, const OnodeSpace&)>& fn,
                           std::string* next) const {
  next->clear();
  const rocksdb::Snapshot* snap = db_->GetSnapshot();
  rocksdb::ReadOptions ro;
  ro.snapshot = snap;
  ro.fill_cache = false;
  const rocksdb::Slice upper(end);
  rocksdb::ReadOptions iro = ro;
  iro.iterate_upper_bound = &upper;
  int r = 0;
  {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(iro));
    std::vector<ShardRef> refs;
    std::vector<std::string> keys, values;
    size_t n = 0;
    for (it->Seek(from); it->Valid(); it->Next()) {
      const std::string_view key = it->key().ToStringView();
      if (n++ == max) {
        *next = std::string(key);
        break;
      }
      OnodeSpace sp;
      std::string why;
      bool ok = decode_onode_space(it->value().ToStringView(), &sp, &why, tiers_, &refs);
      if (ok && !refs.empty()) {
        keys.clear();
        for (const auto& ref : refs) keys.push_back(kv::extent_shard_key(key, ref.index));
        std::vector<rocksdb::Slice> slices(keys.begin(), keys.end());
        std::vector<rocksdb::Status> st = db_->MultiGet(ro, slices, &values);
        for (size_t i = 0; ok && i < refs.size(); ++i) {
          if (!st[i].ok()) {
            why = fmt::format("onode: reading extent shard {}: {}", refs[i].index, st[i].ToString());
            ok = false;
          } else {
            ok = add_extent_shard_space(values[i], refs[i], &sp, &why, tiers_);
          }
        }
      }
      if (!ok) {
        CollectionId c;
        ObjectId o;
        if (kv::decode_onode_key(key, &c, &o))
          HS_ERROR("onode {} in {} left out of a scan: {}", o.to_string(), c.name, why);
        else
          HS_ERROR("a record in the onode range left out of a scan: {}", why);
        continue;
      }
      fn(key, sp);
    }
    if (!it->status().ok()) {
      HS_ERROR("scanning onode records: {}", it->status().ToString());
      r = -EIO;
    }
  }
  db_->ReleaseSnapshot(snap);
  return r;
}

StoredShards OnodeStore::shards_in_store(const std::string& key) const {
  StoredShards out;
  std::string v;
  if (!db_->Get(rocksdb::ReadOptions(), key, &v).ok()) return out;
  Onode o;
  std::vector<ShardRef> refs;
  if (!decode_onode(v, &o, nullptr, tiers_, &refs)) return out;
  for (const auto& r : refs) out.emplace_back(r.index, nullptr);
  return out;
}

StoredShards OnodeStore::put(rocksdb::WriteBatchBase* batch, const std::string& key, Onode& o,
                             const StoredShards& stored) const {
  if (!extents_go_in_shards(o, extent_map_inline_max_)) {
    delete_shards(batch, key, stored);
    o.extents_in_shards = false;
    batch->Put(key, encode_onode(o, false, versions()));
    return {};
  }
  StoredShards now = o.extents.shard_handles();
  // Both in shard order: write the shards that are new or changed, delete
  // the ones gone.
  size_t j = 0;
  for (const auto& [idx, h] : now) {
    for (; j < stored.size() && stored[j].first < idx; ++j) batch->Delete(kv::extent_shard_key(key, stored[j].first));
    bool same = false;
    if (j < stored.size() && stored[j].first == idx) {
      same = stored[j].second && stored[j].second == h;
      ++j;
    }
    if (!same) batch->Put(kv::extent_shard_key(key, idx), encode_extent_shard(o.extents, idx));
  }
  for (; j < stored.size(); ++j) batch->Delete(kv::extent_shard_key(key, stored[j].first));
  o.extents_in_shards = true;
  batch->Put(key, encode_onode(o, true, versions()));
  return now;
}

void OnodeStore::delete_shards(rocksdb::WriteBatchBase* batch, const std::string& key, const StoredShards& stored) {
  for (const auto& sh : stored) batch->Delete(kv::extent_shard_key(key, sh.first));
}

OnodeCache::Lookup OnodeStore::cached(const CollectionId& c, const ObjectId& o, OnodeRef* out) {
  const OnodeCache::Lookup l = cache_.get(c, o, out);
  perf_->set.inc(l == OnodeCache::Lookup::kMiss ? perf_->onode_misses : perf_->onode_hits);
  return l;
}

int OnodeStore::get_for_read(const CollectionId& c, const ObjectId& o, OnodeRef* out,
                             std::shared_lock<std::shared_mutex>* lock, const std::string* key) {
  if (o.max) return -ENOENT;
  auto st = colls_->state(c);
  *lock = std::shared_lock<std::shared_mutex>(st->lock);
  if (!st->exists) return -ENOENT;
  switch (cached(c, o, out)) {
    case OnodeCache::Lookup::kHit:
      return 0;
    case OnodeCache::Lookup::kTombstone:
      return -ENOENT;
    case OnodeCache::Lookup::kMiss:
      break;
  }
  std::string built;
  if (!key) {
    built = kv::onode_key(c, o);
    key = &built;
  }
  auto on = std::make_shared<Onode>();
  std::string why;
  if (int r = load(*key, on.get(), &why); r < 0) {
    if (r != -ENOENT) HS_ERROR("reading onode {} in {}: {}", o.to_string(), c.name, why);
    return r;
  }
  cache_.put_clean(c, o, on, committer_->committed_seq());
  *out = std::move(on);
  return 0;
}

namespace {
// A cache entry never evicted until a checkpoint republishes it.
constexpr uint64_t kDirtySeq = UINT64_MAX;
}  // namespace

void OnodeStore::note_dirty(const ObjectKey& key, const StoredShards& stored, uint64_t first_seq) {
  std::lock_guard<std::mutex> l(dirty_mutex_);
  auto [it, fresh] = dirty_.try_emplace(key);
  if (fresh) {
    it->second.stored = stored;
    it->second.first_seq = first_seq;
  }
}

bool OnodeStore::dirty_stored(const ObjectKey& key, StoredShards* out) const {
  std::lock_guard<std::mutex> l(dirty_mutex_);
  auto it = dirty_.find(key);
  if (it == dirty_.end()) return false;
  *out = it->second.stored;
  return true;
}

void OnodeStore::publish(const ObjectKey& key, OnodeRef onode, uint64_t seq, Left how) {
  bool dirty = how == Left::kByDeltas;
  if (!dirty) {
    std::lock_guard<std::mutex> l(dirty_mutex_);
    auto it = dirty_.find(key);
    if (it != dirty_.end()) {
      // Left as it was: the pinned entry stays (its copy would differ from
      // the committed change a checkpoint compares it with).
      if (how == Left::kUnchanged) return;
      dirty = true;
      if (how == Left::kPut) {
        it->second.put_seq = seq;
        // What the put leaves in RocksDB: its shards, from now on.
        it->second.stored = stored_shards(onode.get());
      }
    }
  }
  cache_.put_pending(CollectionId(key.first), key.second, std::move(onode), dirty ? kDirtySeq : seq);
}

std::vector<ObjectKey> OnodeStore::dirty_keys() const {
  std::lock_guard<std::mutex> l(dirty_mutex_);
  std::vector<ObjectKey> out;
  out.reserve(dirty_.size());
  for (const auto& [k, d] : dirty_) out.push_back(k);
  return out;
}

size_t OnodeStore::dirty_count() const {
  std::lock_guard<std::mutex> l(dirty_mutex_);
  return dirty_.size();
}

uint64_t OnodeStore::first_dirty_seq() const {
  std::lock_guard<std::mutex> l(dirty_mutex_);
  uint64_t least = UINT64_MAX;
  for (const auto& [k, d] : dirty_) least = std::min(least, d.first_seq);
  return least;
}

void OnodeStore::committed_change(const ObjectKey& key, OnodeRef onode, uint64_t seq) {
  std::lock_guard<std::mutex> l(dirty_mutex_);
  auto it = dirty_.find(key);
  if (it == dirty_.end() || seq <= it->second.committed_seq) return;
  const size_t charge = onode ? onode_memory_bytes(*onode) : 0;
  dirty_bytes_.store(dirty_bytes_.load(std::memory_order_relaxed) - it->second.charge + charge,
                     std::memory_order_relaxed);
  it->second.charge = charge;
  it->second.committed = std::move(onode);
  it->second.committed_seq = seq;
}

bool OnodeStore::put_dirty(rocksdb::WriteBatchBase* batch, const ObjectKey& key, uint64_t committed,
                           Checkpointed* out) {
  StoredShards stored;
  {
    std::lock_guard<std::mutex> l(dirty_mutex_);
    auto it = dirty_.find(key);
    if (it == dirty_.end()) return false;
    Dirty& d = it->second;
    if (d.put_seq > d.committed_seq) return false;
    // Every change of it up to `committed` told committed_change before
    // `committed` was read: one not in `d.committed` is numbered above it.
    out->floor = std::max(d.committed_seq, committed) + 1;
    if (d.committed_seq < d.first_seq) {
      // Nothing committed since RocksDB got it: the ring needs it only
      // from its next change on.
      d.first_seq = std::max(d.first_seq, out->floor);
      return false;
    }
    out->written = d.committed;
    out->seq = d.committed_seq;
    stored = d.stored;
  }
  const CollectionId c(key.first);
  if (cache_.get(c, key.second, &out->onode) != OnodeCache::Lookup::kHit) out->onode = nullptr;
  const std::string k = kv::onode_key(c, key.second);
  if (!out->written) {
    // Removed by a committed transaction: its batch deleted it.
    return true;
  }
  auto copy = std::make_shared<Onode>(*out->written);
  put(batch, k, *copy, stored);
  out->written = std::move(copy);
  return true;
}

void OnodeStore::wrote(const ObjectKey& key, const Checkpointed& c) {
  bool clean = false;
  {
    std::lock_guard<std::mutex> l(dirty_mutex_);
    auto it = dirty_.find(key);
    if (it == dirty_.end()) return;
    Dirty& d = it->second;
    d.stored = stored_shards(c.written.get());
    d.first_seq = std::max(d.first_seq, c.floor);
    // Nothing published after the change written: reads hold exactly it.
    clean = d.committed_seq == c.seq && (c.onode ? c.onode == d.committed : !d.committed);
    if (clean) {
      dirty_bytes_.store(dirty_bytes_.load(std::memory_order_relaxed) - d.charge, std::memory_order_relaxed);
      dirty_.erase(it);
    }
  }
  // RocksDB holds it (synced with the round's tail mark; until then the
  // ring keeps its deltas), so the entry may go like any committed one.
  if (clean) cache_.put_pending(CollectionId(key.first), key.second, c.written, committer_->committed_seq());
}

void OnodeStore::trim() { cache_.trim(committer_->committed_seq()); }

void OnodeStore::drop_clean() { cache_.drop_committed(committer_->committed_seq()); }

size_t OnodeStore::cached_count() const { return cache_.size(); }

uint64_t OnodeStore::cached_bytes() const { return cache_.bytes(); }

void OnodeStore::set_cache_byte_capacity(uint64_t bytes) {
  cache_.set_byte_capacity(bytes, committer_->committed_seq());
}

}  // namespace hybridstore
