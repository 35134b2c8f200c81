// Reads: collections, listing, object data, attributes and omap.
//
// Data and attribute reads see queued transactions at once (onodes are
// published before queue_transaction returns). Listing and omap reads go to
// RocksDB, so they first wait for the collection's queued transactions to
// commit, as BlueStore's onode flush does.
#include <cstring>

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
  std::string v;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), *key, &v);
  if (s.IsNotFound()) return -ENOENT;
  if (!s.ok()) return -EIO;
  auto on = std::make_shared<Onode>();
  std::string why;
  if (!decode_onode(v, on.get(), &why, tiers())) {
    HS_ERROR("corrupt onode {} in {}: {}", o.to_string(), c.name, why);
    return -EIO;
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
                         const std::function<char*(uint64_t)>& buffer, uint32_t read_flags) {
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
  char* out = buffer(len);
  if (!out) return -ENOMEM;
  if (heat) note_access(key, AccessType::kRead, off, len, on->size);
  if (int r = read_data(c, o, *on, off, len, out); r < 0) {
    if (r == -EIO) perf_->set.inc(perf_->read_eio);
    return r;
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
