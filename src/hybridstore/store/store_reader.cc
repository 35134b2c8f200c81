#include "hybridstore/store/store_reader.h"

#include <rocksdb/db.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "hscommon/log.h"
#include "hsio/read_cache.h"
#include "hybridstore/kv/kv_committer.h"
#include "hybridstore/kv/kv_schema.h"
#include "hybridstore/store/collections.h"
#include "hybridstore/store/data_reader.h"
#include "hybridstore/store/object_heat.h"
#include "hybridstore/store/onode_store.h"
#include "hybridstore/store/store_perf.h"

namespace hybridstore {

int StoreReader::collection_list(const CollectionId& c, const ObjectId& start, const ObjectId& end, int max,
                                 std::vector<ObjectId>* out, ObjectId* next) {
  auto st = colls_->state(c);
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

int StoreReader::stat(const CollectionId& c, const ObjectId& o, ObjectStat* st) {
  OnodeRef on;
  std::shared_lock<std::shared_mutex> l;
  if (int r = onodes_->get_for_read(c, o, &on, &l); r < 0) return r;
  *st = ObjectStat();
  st->size = on->size;
  st->omap_id = on->nid;
  for (const auto& [off, e] : on->extents.extents()) {
    st->allocated += e.length;
    st->bytes_on[e.tier] += e.length;
  }
  return 0;
}

int StoreReader::read_into(const CollectionId& c, const ObjectId& o, uint64_t off, uint64_t len,
                           const std::function<char*(uint64_t)>& buffer, uint32_t read_flags,
                           std::vector<ReadPiece>* pieces) {
  const uint64_t t0 = perf_now_ns();
  OnodeRef on;
  std::shared_lock<std::shared_mutex> lock;
  // Built once for both the onode's lookup and the heat tracker's.
  const bool heat = !(read_flags & kReadNoHeat);
  const std::string key = heat ? kv::onode_key(c, o) : std::string();
  if (int r = onodes_->get_for_read(c, o, &on, &lock, heat ? &key : nullptr); r < 0) return r;
  if (off >= on->size) return 0;
  if (len == 0 || len > on->size - off) len = on->size - off;
  if (len > (1ull << 31)) return -E2BIG;  // the return value is a byte count
  if (heat) heat_->note(key, AccessType::kRead, off, len, on->size);
  std::optional<ReadCache::Bypass> from_the_media;
  if (read_flags & kReadUncached) from_the_media.emplace();
  if (!pieces || !data_->read_cached(*on, off, len, pieces)) {
    char* out = buffer(len);
    if (!out) return -ENOMEM;
    if (int r = data_->read(c, o, *on, off, len, out); r < 0) {
      if (r == -EIO) perf_->set.inc(perf_->read_eio);
      return r;
    }
  }
  if (heat) heat_->maybe_promote(c, o, key, *on);
  perf_->set.tinc(perf_->read_lat, perf_now_ns() - t0);
  perf_->set.inc(perf_->read_bytes, len);
  return static_cast<int>(len);
}

int StoreReader::fiemap(const CollectionId& c, const ObjectId& o, uint64_t off, uint64_t len,
                        std::map<uint64_t, uint64_t>* out) {
  OnodeRef on;
  std::shared_lock<std::shared_mutex> l;
  if (int r = onodes_->get_for_read(c, o, &on, &l); r < 0) return r;
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

int StoreReader::getattr(const CollectionId& c, const ObjectId& o, const std::string& name, std::string* value) {
  OnodeRef on;
  std::shared_lock<std::shared_mutex> l;
  if (int r = onodes_->get_for_read(c, o, &on, &l); r < 0) return r;
  auto it = on->attrs.find(name);
  if (it == on->attrs.end()) return -ENODATA;
  *value = it->second;
  return 0;
}

int StoreReader::getattrs(const CollectionId& c, const ObjectId& o, std::map<std::string, std::string>* out) {
  OnodeRef on;
  std::shared_lock<std::shared_mutex> l;
  if (int r = onodes_->get_for_read(c, o, &on, &l); r < 0) return r;
  *out = on->attrs;
  return 0;
}

int StoreReader::omap_read(const CollectionId& c, const ObjectId& o,
                           const std::function<int(rocksdb::DB*, uint64_t)>& fn) {
  if (int r = committer_->wait_committed(colls_->state(c)->last_seq); r < 0) return r;
  OnodeRef on;
  std::shared_lock<std::shared_mutex> lock;
  if (int r = onodes_->get_for_read(c, o, &on, &lock); r < 0) return r;
  return fn(db_, on->nid);
}

int StoreReader::omap_get(const CollectionId& c, const ObjectId& o, std::string* header,
                          std::map<std::string, std::string>* out) {
  return omap_read(c, o, [&](rocksdb::DB* db, uint64_t nid) {
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

int StoreReader::omap_get_header(const CollectionId& c, const ObjectId& o, std::string* header) {
  return omap_read(c, o, [&](rocksdb::DB* db, uint64_t nid) {
    header->clear();
    if (!nid) return 0;
    rocksdb::Status s = db->Get(rocksdb::ReadOptions(), kv::omap_header_key(nid), header);
    return s.ok() || s.IsNotFound() ? 0 : -EIO;
  });
}

int StoreReader::omap_get_values(const CollectionId& c, const ObjectId& o, const std::set<std::string>& keys,
                                 std::map<std::string, std::string>* out) {
  return omap_read(c, o, [&](rocksdb::DB* db, uint64_t nid) {
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

std::unique_ptr<OmapIterator> StoreReader::omap_iterator(const CollectionId& c, const ObjectId& o) {
  std::unique_ptr<OmapIterator> out;
  omap_read(c, o, [&](rocksdb::DB* db, uint64_t nid) {
    out = std::make_unique<StoreOmapIterator>(db, nid);
    return 0;
  });
  return out;
}

}  // namespace hybridstore
