// Reads: collections, listing, object data, attributes and omap.
//
// Data and attribute reads see queued transactions at once (onodes are
// published before queue_transaction returns). Listing and omap reads go to
// RocksDB, so they first wait for the collection's queued transactions to
// commit, as BlueStore's onode flush does.
#include <cstring>
#include <optional>

#include "hscommon/log.h"
#include "hybridstore/store/store_impl.h"

namespace hybridstore {

std::vector<CollectionId> StoreImpl::list_collections() {
  std::vector<CollectionId> out;
  std::lock_guard<std::mutex> l(colls_mutex_);
  for (const auto& [c, st] : colls_)
    if (st->exists) out.push_back(c);
  return out;
}

bool StoreImpl::collection_exists(const CollectionId& c) {
  std::lock_guard<std::mutex> l(colls_mutex_);
  auto it = colls_.find(c);
  return it != colls_.end() && it->second->exists;
}

int StoreImpl::collection_bits(const CollectionId& c) {
  std::lock_guard<std::mutex> l(colls_mutex_);
  auto it = colls_.find(c);
  if (it == colls_.end() || !it->second->exists) return -ENOENT;
  return static_cast<int>(it->second->bits.load());
}

int StoreImpl::complete_onode(const std::string& key, std::string_view value, const rocksdb::ReadOptions& ro,
                              Onode* out, std::string* why) {
  std::vector<ShardRef> refs;
  if (!decode_onode(value, out, why, tiers(), &refs)) return -EIO;
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
    if (!decode_extent_shard(values[i], refs[i], &out->extents, why, tiers())) return -EIO;
  }
  return 0;
}

int StoreImpl::load_onode(const std::string& key, Onode* out, std::string* why) {
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
      r = complete_onode(key, v, ro, out, why);
    }
    if (snap) db_->ReleaseSnapshot(snap);
    if (r != -EIO || !st.ok()) return r;
  }
  return -EIO;
}

StoredShards StoreImpl::shards_in_store(const std::string& key) {
  StoredShards out;
  std::string v;
  if (!db_->Get(rocksdb::ReadOptions(), key, &v).ok()) return out;
  Onode o;
  std::vector<ShardRef> refs;
  if (!decode_onode(v, &o, nullptr, tiers(), &refs)) return out;
  for (const auto& r : refs) out.emplace_back(r.index, nullptr);
  return out;
}

StoredShards StoreImpl::put_onode(rocksdb::WriteBatchBase* batch, const std::string& key, Onode& o,
                                  const StoredShards& stored) {
  if (!extents_go_in_shards(o, extent_map_inline_max_)) {
    delete_shards(batch, key, stored);
    o.extents_in_shards = false;
    batch->Put(key, encode_onode(o));
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
  batch->Put(key, encode_onode(o, true));
  return now;
}

void StoreImpl::delete_shards(rocksdb::WriteBatchBase* batch, const std::string& key, const StoredShards& stored) {
  for (const auto& sh : stored) batch->Delete(kv::extent_shard_key(key, sh.first));
}

int StoreImpl::get_onode_for_read(const CollectionId& c, const ObjectId& o, OnodeRef* out,
                                  std::shared_lock<std::shared_mutex>* lock, const std::string* key) {
  if (!mounted_) return -ENOTCONN;
  if (o.max) return -ENOENT;
  auto st = coll_state(c);
  *lock = std::shared_lock<std::shared_mutex>(st->lock);
  if (!st->exists) return -ENOENT;
  switch (cache_->get(c, o, out)) {
    case OnodeCache::Lookup::kHit:
      perf_->set.inc(perf_->onode_hits);
      return 0;
    case OnodeCache::Lookup::kTombstone:
      perf_->set.inc(perf_->onode_hits);
      return -ENOENT;
    case OnodeCache::Lookup::kMiss:
      perf_->set.inc(perf_->onode_misses);
      break;
  }
  std::string built;
  if (!key) {
    built = kv::onode_key(c, o);
    key = &built;
  }
  auto on = std::make_shared<Onode>();
  std::string why;
  if (int r = load_onode(*key, on.get(), &why); r < 0) {
    if (r != -ENOENT) HS_ERROR("reading onode {} in {}: {}", o.to_string(), c.name, why);
    return r;
  }
  cache_->put_clean(c, o, on, committer_->committed_seq());
  *out = std::move(on);
  return 0;
}

// A small object read often while it lies on the HDD goes to the migrator's
// promotion queue now rather than at its next pass (a day by default). Only
// objects mostly on the HDD are looked at, so reads from the SSD pay nothing
// beyond two comparisons.
void StoreImpl::maybe_promote(const CollectionId& c, const ObjectId& o, const std::string& key, const Onode& on) {
  if (!promote_hits_ || on.extents.empty()) return;
  Migrator* m = promoter_.load(std::memory_order_acquire);
  if (!m) return;
  // Lives on a tier a promotion can lift it from (one step, Migrator::promote_queued).
  const int home = home_tier(on);
  if (home < 0 || tier_at(home) == fastest()) return;
  uint64_t bytes = 0;
  for (int t = 0; t < tiers(); ++t) bytes += on.extents.bytes_on(tier_at(t));
  if (bytes > promote_max_size_) return;
  HeatSample h;
  if (heat_->lookup(key, &h) && h.frequency >= static_cast<double>(promote_hits_) &&
      random_requests_pay_for_copy(h.randomness, bytes, promote_break_even_))
    m->request_promotion(c, o, bytes);
}

int StoreImpl::read(const CollectionId& c, const ObjectId& o, uint64_t off, uint64_t len, std::string* out,
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

int StoreImpl::read_into(const CollectionId& c, const ObjectId& o, uint64_t off, uint64_t len,
                         const std::function<char*(uint64_t)>& buffer, uint32_t read_flags,
                         std::vector<HybridStore::ReadPiece>* pieces) {
  const uint64_t t0 = perf_now_ns();
  OnodeRef on;
  std::shared_lock<std::shared_mutex> lock;
  // Built once for both the onode's lookup and the heat tracker's.
  const bool heat = !(read_flags & kReadNoHeat);
  const std::string key = heat ? kv::onode_key(c, o) : std::string();
  if (int r = get_onode_for_read(c, o, &on, &lock, heat ? &key : nullptr); r < 0) return r;
  if (off >= on->size) return 0;
  if (len == 0 || len > on->size - off) len = on->size - off;
  if (len > (1ull << 31)) return -E2BIG;  // the return value is a byte count
  if (heat) note_access(key, AccessType::kRead, off, len, on->size);
  std::optional<ReadCache::Bypass> from_the_media;
  if (read_flags & kReadUncached) from_the_media.emplace();
  if (!pieces || !read_data_cached(*on, off, len, pieces)) {
    char* out = buffer(len);
    if (!out) return -ENOMEM;
    if (int r = read_data(c, o, *on, off, len, out); r < 0) {
      if (r == -EIO) perf_->set.inc(perf_->read_eio);
      return r;
    }
  }
  if (heat) maybe_promote(c, o, key, *on);
  perf_->set.tinc(perf_->read_lat, perf_now_ns() - t0);
  perf_->set.inc(perf_->read_bytes, len);
  return static_cast<int>(len);
}

int StoreImpl::collection_list(const CollectionId& c, const ObjectId& start, const ObjectId& end, int max,
                               std::vector<ObjectId>* out, ObjectId* next) {
  if (!mounted_) return -ENOTCONN;
  auto st = coll_state(c);
  // A store that failed before earlier transactions on `c` reached KV would
  // list what they removed.
  if (int r = committer_->wait_committed(st->last_seq); r < 0) return r;
  std::shared_lock<std::shared_mutex> lock(st->lock);
  if (!st->exists) return -ENOENT;
  if (next) *next = ObjectId::make_max();
  if (start.max || max <= 0) {
    if (max <= 0 && !start.max && next) *next = start;
    return 0;
  }
  std::string prefix = kv::onode_prefix(c);
  std::string lo = prefix + encode_object_key(start);
  std::string hi = end.max ? kv::prefix_end(prefix) : prefix + encode_object_key(end);
  std::string coll_end = kv::prefix_end(prefix);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(lo); it->Valid() && it->key().compare(hi) < 0; it->Next()) {
    CollectionId kc;
    ObjectId o;
    if (!kv::decode_onode_key(it->key().ToStringView(), &kc, &o)) return -EIO;
    if (static_cast<int>(out->size()) >= max) {
      if (next) *next = o;
      return 0;
    }
    out->push_back(std::move(o));
  }
  if (!it->status().ok()) return -EIO;
  // Stopped by `end` while the collection has more: *next is the first object
  // at or after `end`, as BlueStore answers; max only when nothing is left.
  if (next && it->Valid() && it->key().compare(coll_end) < 0) {
    CollectionId kc;
    if (!kv::decode_onode_key(it->key().ToStringView(), &kc, next)) return -EIO;
  }
  return 0;
}

int StoreImpl::omap_read(const CollectionId& c, const ObjectId& o,
                         const std::function<int(rocksdb::DB*, uint64_t)>& fn) {
  if (!mounted_) return -ENOTCONN;
  if (int r = committer_->wait_committed(coll_state(c)->last_seq); r < 0) return r;
  OnodeRef on;
  std::shared_lock<std::shared_mutex> lock;
  if (int r = get_onode_for_read(c, o, &on, &lock); r < 0) return r;
  return fn(db_.get(), on->nid);
}

namespace {

class StoreOmapIterator final : public OmapIterator {
 public:
  StoreOmapIterator(rocksdb::DB* db, uint64_t nid)
      : it_(db->NewIterator(rocksdb::ReadOptions())),
        begin_(kv::omap_keys_begin(nid)),
        end_(kv::omap_keys_end(nid)),
        nid_(nid) {
    seek_to_first();
  }
  void seek_to_first() override { it_->Seek(begin_); }
  void lower_bound(const std::string& key) override { it_->Seek(kv::omap_key(nid_, key)); }
  void upper_bound(const std::string& key) override {
    lower_bound(key);
    if (valid() && this->key() == key) next();
  }
  bool valid() const override { return nid_ && it_->Valid() && it_->key().compare(end_) < 0; }
  void next() override { it_->Next(); }
  std::string key() const override { return it_->key().ToString().substr(begin_.size()); }
  std::string value() const override { return it_->value().ToString(); }
  int status() const override { return it_->status().ok() ? 0 : -EIO; }

 private:
  std::unique_ptr<rocksdb::Iterator> it_;
  std::string begin_, end_;
  uint64_t nid_;
};

}  // namespace

std::unique_ptr<OmapIterator> StoreImpl::omap_iterator(const CollectionId& c, const ObjectId& o) {
  std::unique_ptr<OmapIterator> out;
  omap_read(c, o, [&](rocksdb::DB* db, uint64_t nid) {
    out = std::make_unique<StoreOmapIterator>(db, nid);
    return 0;
  });
  return out;
}

}  // namespace hybridstore
