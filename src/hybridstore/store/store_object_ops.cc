// The ops of a transaction, applied to the transaction's private overlay.
// Collection-level ops live here too; the data path (allocation, copy on
// write, checksums) is in store_data_ops.cc.
#include <algorithm>
#include <cstring>

#include "hscommon/log.h"
#include "hybridstore/store/store_impl.h"

namespace hybridstore {

namespace {
constexpr size_t kMaxAttrNameLen = 256;
}

std::shared_ptr<Onode> OpApplier::get(const CollectionId& c, const ObjectId& o) {
  ObjectKey key{c.name, o};
  auto it = tx.onodes.find(key);
  if (it != tx.onodes.end()) return it->second;
  OnodeRef cached;
  switch (s.cache_->get(c, o, &cached)) {
    case OnodeCache::Lookup::kHit: {
      s.perf_->set.inc(s.perf_->onode_hits);
      auto copy = std::make_shared<Onode>(*cached);
      tx.onodes[key] = copy;
      tx.home_before[key] = s.home_tier(*copy);
      tx.stored[key] = StoreImpl::stored_shards(copy.get());
      return copy;
    }
    case OnodeCache::Lookup::kTombstone:
      s.perf_->set.inc(s.perf_->onode_hits);
      tx.onodes[key] = nullptr;
      tx.home_before[key] = -1;
      tx.stored[key] = {};
      return nullptr;
    case OnodeCache::Lookup::kMiss:
      s.perf_->set.inc(s.perf_->onode_misses);
      break;
  }
  auto on = std::make_shared<Onode>();
  std::string why;
  if (int r = s.load_onode(kv::onode_key(c, o), on.get(), &why); r == -ENOENT) {
    on.reset();
  } else if (r < 0) {
    // A corrupt onode is treated as unreadable, never as absent: callers
    // see -EIO through load_error.
    HS_ERROR("reading onode {} in {}: {}", o.to_string(), c.name, why);
    load_error = -EIO;
    return nullptr;
  }
  tx.onodes[key] = on;
  tx.home_before[key] = on ? s.home_tier(*on) : -1;
  tx.stored[key] = StoreImpl::stored_shards(on.get());
  return on;
}

std::shared_ptr<Onode> OpApplier::get_or_create(const CollectionId& c, const ObjectId& o) {
  auto on = get(c, o);
  if (on || load_error) return on;
  on = std::make_shared<Onode>();
  tx.onodes[{c.name, o}] = on;
  tx.stat_delta[kv::kStatObjects] += 1;
  mark_dirty(c, o);
  return on;
}

void OpApplier::set_removed(const CollectionId& c, const ObjectId& o) {
  tx.onodes[{c.name, o}] = nullptr;
  mark_dirty(c, o);
}

bool OpApplier::coll_exists(const CollectionId& c, uint32_t* bits) {
  auto it = tx.colls.find(c);
  if (it != tx.colls.end()) {
    if (bits) *bits = it->second.bits;
    return it->second.exists;
  }
  auto st = tx.locked.at(c);
  if (bits) *bits = st->bits;
  return st->exists;
}

void OpApplier::sync_dirty() {
  for (const auto& key : tx.dirty) {
    std::string k = kv::onode_key(CollectionId(key.first), key.second);
    auto st = tx.stored.find(key);
    if (st == tx.stored.end()) st = tx.stored.emplace(key, s.shards_in_store(k)).first;
    const auto& on = tx.onodes.at(key);
    if (on) {
      // What the batch holds for the key from now on: a later sync (after
      // more ops) compares with it, so no shard written here is left behind.
      st->second = s.put_onode(tx.batch.get(), k, *on, st->second);
    } else {
      StoreImpl::delete_shards(tx.batch.get(), k, st->second);
      st->second.clear();
      tx.batch->Delete(k);
    }
  }
  tx.dirty.clear();
}

int OpApplier::wait_prior(const CollectionId& c) {
  // KV lacks what earlier, still uncommitted transactions on this collection
  // did; wait for them before listing or iterating through KV. If the store
  // failed before they reached KV, KV never gets them: what it lists is
  // stale (a removed object still there), so the error is the answer.
  return s.committer_->wait_committed(tx.locked.at(c)->last_seq);
}

int OpApplier::list_objects(const CollectionId& c, std::vector<ObjectId>* out) {
  sync_dirty();
  if (int r = wait_prior(c); r < 0) return r;
  std::string prefix = kv::onode_prefix(c);
  rocksdb::WriteBatchWithIndex* indexed = tx.batch.indexed();
  if (!indexed) return -EIO;
  std::unique_ptr<rocksdb::Iterator> it(indexed->NewIteratorWithBase(s.db_->NewIterator(rocksdb::ReadOptions())));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    CollectionId kc;
    ObjectId o;
    if (!kv::decode_onode_key(it->key().ToStringView(), &kc, &o)) return -EIO;
    out->push_back(std::move(o));
  }
  return it->status().ok() ? 0 : -EIO;
}

void OpApplier::set_size(Onode& o, uint64_t new_size) {
  tx.stat_delta[kv::kStatBytes] += static_cast<int64_t>(new_size) - static_cast<int64_t>(o.size);
  o.size = new_size;
}

int OpApplier::remove_object(const CollectionId& c, const ObjectId& oid) {
  auto o = get(c, oid);
  if (!o) return load_error ? load_error : -ENOENT;
  release_all_data(*o);
  if (o->nid) {
    if (int r = omap_clear_keys(c, o->nid, true); r < 0) return r;
  }
  set_size(*o, 0);
  tx.stat_delta[kv::kStatObjects] -= 1;
  set_removed(c, oid);
  return 0;
}

int OpApplier::move_object(const CollectionId& sc, const ObjectId& so, const CollectionId& dc,
                           const ObjectId& dobj) {
  auto src = get(sc, so);
  if (!src) return load_error ? load_error : -ENOENT;
  if (sc == dc && so == dobj) return 0;
  auto dst = get(dc, dobj);
  if (load_error) return load_error;
  if (dst) return -EEXIST;
  tx.onodes[{dc.name, dobj}] = std::make_shared<Onode>(*src);
  mark_dirty(dc, dobj);
  set_removed(sc, so);
  return 0;
}

int OpApplier::ensure_nid(const CollectionId& c, const ObjectId& oid, Onode& o) {
  if (o.nid) return 0;
  o.nid = s.allocate_nid();
  if (!o.nid) return -EIO;
  mark_dirty(c, oid);
  return 0;
}

int OpApplier::omap_delete_range(const CollectionId& c, const std::string& begin, const std::string& end) {
  if (int r = wait_prior(c); r < 0) return r;
  rocksdb::WriteBatchWithIndex* indexed = tx.batch.indexed();
  if (!indexed) return -EIO;
  std::unique_ptr<rocksdb::Iterator> it(indexed->NewIteratorWithBase(s.db_->NewIterator(rocksdb::ReadOptions())));
  std::vector<std::string> doomed;
  for (it->Seek(begin); it->Valid() && it->key().compare(end) < 0; it->Next())
    doomed.push_back(it->key().ToString());
  if (!it->status().ok()) return -EIO;
  for (const auto& k : doomed) tx.batch->Delete(k);
  return 0;
}

int OpApplier::omap_clear_keys(const CollectionId& c, uint64_t nid, bool include_header) {
  if (include_header) return omap_delete_range(c, kv::omap_nid_begin(nid), kv::omap_nid_end(nid));
  return omap_delete_range(c, kv::omap_keys_begin(nid), kv::omap_keys_end(nid));
}

int OpApplier::omap_copy(const CollectionId& c, uint64_t from, uint64_t to) {
  if (int r = wait_prior(c); r < 0) return r;
  rocksdb::WriteBatchWithIndex* indexed = tx.batch.indexed();
  if (!indexed) return -EIO;
  std::unique_ptr<rocksdb::Iterator> it(indexed->NewIteratorWithBase(s.db_->NewIterator(rocksdb::ReadOptions())));
  std::string end = kv::omap_nid_end(from);
  std::vector<std::pair<std::string, std::string>> copies;
  for (it->Seek(kv::omap_nid_begin(from)); it->Valid() && it->key().compare(end) < 0; it->Next()) {
    uint64_t nid;
    bool hdr;
    std::string_view user;
    if (!kv::decode_omap_key(it->key().ToStringView(), &nid, &hdr, &user)) return -EIO;
    copies.emplace_back(hdr ? kv::omap_header_key(to) : kv::omap_key(to, user), it->value().ToString());
  }
  if (!it->status().ok()) return -EIO;
  for (auto& [k, v] : copies) tx.batch->Put(k, v);
  return 0;
}

int OpApplier::apply(const Op& op, std::string* why) {
  const CollectionId& c = op.cid;
  load_error = 0;
  auto need_coll = [&](const CollectionId& cc) {
    if (coll_exists(cc)) return 0;
    *why = "collection " + cc.name + " does not exist";
    return -ENOENT;
  };
  auto need_object = [&](std::shared_ptr<Onode>* out) {
    if (int r = need_coll(c); r < 0) return r;
    *out = get(c, op.oid);
    if (load_error) {
      *why = "object " + op.oid.to_string() + " has a corrupt onode";
      return load_error;
    }
    if (!*out) {
      *why = "object " + op.oid.to_string() + " does not exist";
      return -ENOENT;
    }
    return 0;
  };
  auto new_object = [&](std::shared_ptr<Onode>* out) {
    if (int r = need_coll(c); r < 0) return r;
    *out = get_or_create(c, op.oid);
    if (load_error) {
      *why = "object " + op.oid.to_string() + " has a corrupt onode";
      return load_error;
    }
    return 0;
  };
  auto too_big = [&](uint64_t off, uint64_t len) {
    if (off + len >= off && off + len <= s.max_object_size_) return false;
    *why = fmt::format("range {}~{} reaches past the largest object size {}", off, len, s.max_object_size_);
    return true;
  };
  std::shared_ptr<Onode> o;

  switch (op.code) {
    case OpCode::kNop:
      return 0;
    case OpCode::kTouch:
    case OpCode::kCreate:
      return new_object(&o);
    case OpCode::kWrite: {
      const ScatterData& data = op.scatter;
      if (too_big(op.off, data.size())) return -E2BIG;
      if (int r = new_object(&o); r < 0) return r;
      if (data.empty()) return 0;  // creates the object; size unchanged
      mark_dirty(c, op.oid);
      // Asked before note_access moves the object's last request to this one.
      bool absorbable = false;
      if (s.absorb_max_ && data.size() <= s.absorb_max_ && !o->extents.empty()) {
        const Tier home = s.placement_->choose(*o, op.off + data.size());
        if (home != s.fastest() && s.absorb_from_[tier_index(home)])
          absorbable = !s.write_continues(c, op.oid, op.off);
      }
      // A write the SSD may absorb is not heat: it is fast without the
      // object being promoted, and counting it would have passes copy
      // objects up only because they are written at random (an RBD image
      // under random writes), each copy a read of the object from the HDD.
      s.note_access(c, op.oid, AccessType::kWrite, op.off, data.size(), std::max(o->size, op.off + data.size()),
                    /*counts=*/!absorbable);
      return write_data(c, op.oid, *o, op.off, data, absorbable);
    }
    case OpCode::kZero: {
      if (too_big(op.off, op.len)) return -E2BIG;
      if (int r = new_object(&o); r < 0) return r;
      if (op.len == 0) return 0;
      mark_dirty(c, op.oid);
      return zero_range(c, op.oid, *o, op.off, op.len);
    }
    case OpCode::kTruncate: {
      if (too_big(op.off, 0)) return -E2BIG;
      if (int r = need_object(&o); r < 0) return r;
      mark_dirty(c, op.oid);
      return truncate(c, op.oid, *o, op.off);
    }
    case OpCode::kRemove: {
      if (int r = need_coll(c); r < 0) return r;
      int r = remove_object(c, op.oid);
      if (r == -ENOENT) *why = "object " + op.oid.to_string() + " does not exist";
      if (r == 0) s.heat_->forget(kv::onode_key(c, op.oid));
      return r;
    }
    case OpCode::kSetAttrs: {
      for (const auto& [k, v] : op.kv)
        if (k.empty() || k.size() > kMaxAttrNameLen) {
          *why = fmt::format("attribute name of {} bytes (must be 1..{})", k.size(), kMaxAttrNameLen);
          return -ENAMETOOLONG;
        }
      if (int r = need_object(&o); r < 0) return r;
      for (const auto& [k, v] : op.kv) o->attrs[k] = v;
      mark_dirty(c, op.oid);
      return 0;
    }
    case OpCode::kRmAttr:
      if (int r = need_object(&o); r < 0) return r;
      o->attrs.erase(op.name);
      mark_dirty(c, op.oid);
      return 0;
    case OpCode::kRmAttrs:
      if (int r = need_object(&o); r < 0) return r;
      o->attrs.clear();
      mark_dirty(c, op.oid);
      return 0;
    case OpCode::kClone:
      if (int r = need_coll(c); r < 0) return r;
      return clone(c, op.oid, op.dst_oid, why);
    case OpCode::kCloneRange:
      if (int r = need_coll(c); r < 0) return r;
      return clone_range(c, op, why);
    case OpCode::kOmapSetKeys:
      if (int r = need_object(&o); r < 0) return r;
      if (int r = ensure_nid(c, op.oid, *o); r < 0) return r;
      for (const auto& [k, v] : op.kv) tx.batch->Put(kv::omap_key(o->nid, k), v);
      return 0;
    case OpCode::kOmapRmKeys:
      if (int r = need_object(&o); r < 0) return r;
      if (o->nid)
        for (const auto& k : op.keys) tx.batch->Delete(kv::omap_key(o->nid, k));
      return 0;
    case OpCode::kOmapRmKeyRange:
      if (int r = need_object(&o); r < 0) return r;
      if (!o->nid || op.name >= op.name2) return 0;
      return omap_delete_range(c, kv::omap_key(o->nid, op.name), kv::omap_key(o->nid, op.name2));
    case OpCode::kOmapClear:
      if (int r = need_object(&o); r < 0) return r;
      if (!o->nid) return 0;
      return omap_clear_keys(c, o->nid, true);
    case OpCode::kOmapSetHeader:
      if (int r = need_object(&o); r < 0) return r;
      if (int r = ensure_nid(c, op.oid, *o); r < 0) return r;
      tx.batch->Put(kv::omap_header_key(o->nid), op.data);
      return 0;
    case OpCode::kMkColl:
      if (coll_exists(c)) {
        *why = "collection " + c.name + " already exists";
        return -EEXIST;
      }
      if (op.bits > 32) {
        *why = "hash bits must be 0..32";
        return -EINVAL;
      }
      tx.colls[c] = {true, op.bits};
      return 0;
    case OpCode::kRmColl: {
      if (int r = need_coll(c); r < 0) return r;
      std::vector<ObjectId> objs;
      if (int r = list_objects(c, &objs); r < 0) return r;
      if (!objs.empty()) {
        *why = fmt::format("collection {} is not empty ({} objects)", c.name, objs.size());
        return -ENOTEMPTY;
      }
      tx.colls[c] = {false, 0};
      return 0;
    }
    case OpCode::kCollMoveRename:
    case OpCode::kTryRename: {
      if (int r = need_coll(c); r < 0) return r;
      if (int r = need_coll(op.dst_cid); r < 0) return r;
      int r = move_object(c, op.oid, op.dst_cid, op.dst_oid);
      if (r == -EEXIST) *why = "destination " + op.dst_oid.to_string() + " already exists";
      if (r == -ENOENT) *why = "source " + op.oid.to_string() + " does not exist";
      return r;
    }
    case OpCode::kSplitCollection: {
      if (int r = need_coll(c); r < 0) return r;
      if (int r = need_coll(op.dst_cid); r < 0) return r;
      if (op.bits > 32) return -EINVAL;
      std::vector<ObjectId> objs;
      if (int r = list_objects(c, &objs); r < 0) return r;
      for (const auto& obj : objs)
        if (obj.matches(op.bits, op.rem))
          if (int r = move_object(c, obj, op.dst_cid, obj); r < 0) {
            *why = "moving " + obj.to_string() + " during split";
            return r;
          }
      tx.colls[c] = {true, op.bits};
      return 0;
    }
    case OpCode::kMergeCollection: {
      if (int r = need_coll(c); r < 0) return r;
      if (int r = need_coll(op.dst_cid); r < 0) return r;
      if (c == op.dst_cid) {
        *why = "cannot merge a collection into itself";
        return -EINVAL;
      }
      std::vector<ObjectId> objs;
      if (int r = list_objects(c, &objs); r < 0) return r;
      for (const auto& obj : objs)
        if (int r = move_object(c, obj, op.dst_cid, obj); r < 0) {
          *why = "moving " + obj.to_string() + " during merge";
          return r;
        }
      tx.colls[c] = {false, 0};
      tx.colls[op.dst_cid] = {true, op.bits};
      return 0;
    }
    case OpCode::kCollSetBits:
      if (int r = need_coll(c); r < 0) return r;
      tx.colls[c] = {true, op.bits};
      return 0;
    case OpCode::kMigrate:
      if (int r = need_coll(c); r < 0) return r;
      return migrate(c, op, why);
    case OpCode::kSetAllocHint:
      if (int r = need_object(&o); r < 0) return r;
      if (op.expected_object_size == 0 && op.expected_write_size == 0 && op.flags == 0) return 0;
      o->expected_object_size = op.expected_object_size;
      o->expected_write_size = op.expected_write_size;
      o->alloc_hint_flags = op.flags;
      mark_dirty(c, op.oid);
      return 0;
  }
  *why = "unknown op";
  return -EINVAL;
}

}  // namespace hybridstore
