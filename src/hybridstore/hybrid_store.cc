// The public facade: argument checks and forwarding to StoreImpl.
#include "hybridstore/hybrid_store.h"

#include <cstring>

#include "hybridstore/store_impl.h"

namespace hybridstore {

HybridStore::HybridStore(std::string path, Config cfg)
    : impl_(std::make_unique<StoreImpl>(std::move(path), std::move(cfg))) {}
HybridStore::~HybridStore() = default;

const std::string& HybridStore::path() const { return impl_->path_; }
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
  return r;
}
int HybridStore::umount() { return impl_->umount(); }
bool HybridStore::is_mounted() const { return impl_->mounted_; }
std::string HybridStore::fsid() const { return uuid_to_string(impl_->super_.fsid); }

int HybridStore::queue_transaction(Transaction t, TxnError* error) {
  std::vector<Transaction> v;
  v.push_back(std::move(t));
  return impl_->queue_transactions(v, error, nullptr);
}
int HybridStore::queue_transactions(std::vector<Transaction> ts, TxnError* error) {
  return impl_->queue_transactions(ts, error, nullptr);
}
int HybridStore::apply_transaction(Transaction t, TxnError* error) {
  std::vector<Transaction> v;
  v.push_back(std::move(t));
  uint64_t seq = 0;
  if (int r = impl_->queue_transactions(v, error, &seq); r < 0) return r;
  int r = impl_->wait_committed(seq);
  if (r < 0 && error)
    *error = TxnError{r, -1, -1, "", "not made durable: " + impl_->committer_->error_message()};
  return r;
}
int HybridStore::flush() { return impl_->flush(); }

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

int HybridStore::read(const CollectionId& c, const ObjectId& o, uint64_t off, uint64_t len, std::string* out) {
  return impl_->read(c, o, off, len, out);
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
int HybridStore::fsck(bool deep, FsckReport* report) { return impl_->fsck(deep, report); }

}  // namespace hybridstore
