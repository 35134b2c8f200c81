#include "hybridstore/store/op_applier.h"

#include <fmt/format.h>
#include <rocksdb/db.h>

#include <algorithm>
#include <cstring>

#include "hscommon/log.h"
#include "hybridstore/kv/kv_committer.h"
#include "hybridstore/kv/kv_schema.h"
#include "hybridstore/kv/onode_delta.h"
#include "hybridstore/store/data_writer.h"
#include "hybridstore/store/object_heat.h"
#include "hybridstore/store/onode_store.h"
#include "hybridstore/store/tier_set.h"

namespace hybridstore {

namespace {
constexpr size_t kMaxAttrNameLen = 256;
}

// ---------------------------------------------------------------- the overlay

std::shared_ptr<Onode> OpApplier::get(const CollectionId& c, const ObjectId& o) {
  ObjectKey key{c.name, o};
  auto it = tx_.onodes.find(key);
  if (it != tx_.onodes.end()) return it->second;
  OnodeRef cached;
  switch (p_.onodes->cached(c, o, &cached)) {
    case OnodeCache::Lookup::kHit: {
      auto copy = std::make_shared<Onode>(*cached);
      tx_.onodes[key] = copy;
      tx_.home_before[key] = p_.tiers->home(*copy);
      if (p_.onodes->journal_deltas()) {
        tx_.before[key] = cached;
        // A dirty onode's shards are not what RocksDB holds.
        StoredShards in_db;
        if (p_.onodes->dirty_stored(key, &in_db)) {
          tx_.stored[key] = std::move(in_db);
          return copy;
        }
      }
      tx_.stored[key] = OnodeStore::stored_shards(copy.get());
      return copy;
    }
    case OnodeCache::Lookup::kTombstone:
      tx_.onodes[key] = nullptr;
      tx_.home_before[key] = std::nullopt;
      tx_.stored[key] = {};
      return nullptr;
    case OnodeCache::Lookup::kMiss:
      break;
  }
  auto on = std::make_shared<Onode>();
  std::string why;
  if (int r = p_.onodes->load(kv::onode_key(c, o), on.get(), &why); r == -ENOENT) {
    on.reset();
  } else if (r < 0) {
    // A corrupt onode is treated as unreadable, never as absent: callers
    // see -EIO through load_error_.
    HS_ERROR("reading onode {} in {}: {}", o.to_string(), c.name, why);
    load_error_ = -EIO;
    return nullptr;
  }
  tx_.onodes[key] = on;
  tx_.home_before[key] = on ? p_.tiers->home(*on) : std::nullopt;
  tx_.stored[key] = OnodeStore::stored_shards(on.get());
  return on;
}

std::shared_ptr<Onode> OpApplier::get_or_create(const CollectionId& c, const ObjectId& o) {
  auto on = get(c, o);
  if (on || load_error_) return on;
  on = std::make_shared<Onode>();
  on->incarnation = p_.onodes->allocate_incarnation();
  tx_.onodes[{c.name, o}] = on;
  tx_.stat_delta[kv::kStatObjects] += 1;
  mark_dirty(c, o);
  return on;
}

void OpApplier::set_removed(const CollectionId& c, const ObjectId& o) {
  tx_.onodes[{c.name, o}] = nullptr;
  mark_dirty(c, o);
}

bool OpApplier::coll_exists(const CollectionId& c, uint32_t* bits) {
  auto it = tx_.colls.find(c);
  if (it != tx_.colls.end()) {
    if (bits) *bits = it->second.bits;
    return it->second.exists;
  }
  auto st = tx_.locked.at(c);
  if (bits) *bits = st->bits;
  return st->exists;
}

void OpApplier::raise_versions() {
  if (!p_.onodes->versions()) return;
  for (const auto& key : tx_.dirty) {
    const auto& on = tx_.onodes.at(key);
    if (on && tx_.versioned.insert(on.get()).second) ++on->version;
  }
}

void OpApplier::sync_dirty() { sync_dirty_into(tx_.batch.get()); }

void OpApplier::sync_dirty_into(rocksdb::WriteBatchBase* batch) {
  raise_versions();
  for (const auto& key : tx_.dirty) {
    std::string k = kv::onode_key(CollectionId(key.first), key.second);
    auto st = tx_.stored.find(key);
    if (st == tx_.stored.end()) st = tx_.stored.emplace(key, p_.onodes->shards_in_store(k)).first;
    const auto& on = tx_.onodes.at(key);
    tx_.written.insert(key);
    if (on) {
      // What the batch holds for the key from now on: a later sync (after
      // more ops) compares with it, so no shard written here is left behind.
      st->second = p_.onodes->put(batch, k, *on, st->second);
    } else {
      OnodeStore::delete_shards(batch, k, st->second);
      st->second.clear();
      batch->Delete(k);
    }
  }
  tx_.dirty.clear();
}

void OpApplier::journal_deltas() {
  raise_versions();
  for (const auto& [key, before] : tx_.before) {
    const auto& after = tx_.onodes.at(key);
    // Removed, or not changed (a read-only op left it as it was).
    if (!after || !tx_.versioned.count(after.get())) continue;
    if (!onode_deltas_between(*before, *after, kv::onode_key(CollectionId(key.first), key.second),
                              &tx_.onode_deltas))
      continue;
    // Not put, when the deltas alone carry it. Not when the batch holds an
    // earlier put of it (a sync before a listing): that put names the
    // deltas' version, so replay would take them as included.
    if (p_.onodes->deltas_replace_puts() && !tx_.written.count(key) && tx_.dirty.erase(key))
      tx_.by_deltas.insert(key);
  }
}

void OpApplier::put_instead_of_deltas(rocksdb::WriteBatchBase* batch) {
  for (const auto& key : tx_.by_deltas) tx_.dirty.insert(key);
  tx_.by_deltas.clear();
  sync_dirty_into(batch);
}

int OpApplier::wait_prior(const CollectionId& c) {
  // KV lacks what earlier, still uncommitted transactions on this collection
  // did; wait for them before listing or iterating through KV. If the store
  // failed before they reached KV, KV never gets them: what it lists is
  // stale (a removed object still there), so the error is the answer.
  return p_.committer->wait_committed(tx_.locked.at(c)->last_seq);
}

int OpApplier::list_objects(const CollectionId& c, std::vector<ObjectId>* out) {
  sync_dirty();
  if (int r = wait_prior(c); r < 0) return r;
  std::string prefix = kv::onode_prefix(c);
  rocksdb::WriteBatchWithIndex* indexed = tx_.batch.indexed();
  if (!indexed) return -EIO;
  std::unique_ptr<rocksdb::Iterator> it(indexed->NewIteratorWithBase(p_.db->NewIterator(rocksdb::ReadOptions())));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    CollectionId kc;
    ObjectId o;
    if (!kv::decode_onode_key(it->key().ToStringView(), &kc, &o)) return -EIO;
    out->push_back(std::move(o));
  }
  return it->status().ok() ? 0 : -EIO;
}

// ---------------------------------------------------------------- objects

int OpApplier::remove_object(const CollectionId& c, const ObjectId& oid) {
  auto o = get(c, oid);
  if (!o) return load_error_ ? load_error_ : -ENOENT;
  p_.writer->release_all(tx_, *o);
  if (o->nid) {
    if (int r = omap_clear_keys(c, o->nid, true); r < 0) return r;
  }
  set_object_size(tx_, *o, 0);
  tx_.stat_delta[kv::kStatObjects] -= 1;
  set_removed(c, oid);
  return 0;
}

int OpApplier::move_object(const CollectionId& sc, const ObjectId& so, const CollectionId& dc,
                           const ObjectId& dobj) {
  auto src = get(sc, so);
  if (!src) return load_error_ ? load_error_ : -ENOENT;
  if (sc == dc && so == dobj) return 0;
  auto dst = get(dc, dobj);
  if (load_error_) return load_error_;
  if (dst) return -EEXIST;
  auto moved = std::make_shared<Onode>(*src);
  // A life of its own under the new name (docs/small-writes.md 12.10).
  moved->incarnation = p_.onodes->allocate_incarnation();
  moved->version = 0;
  tx_.onodes[{dc.name, dobj}] = moved;
  mark_dirty(dc, dobj);
  set_removed(sc, so);
  return 0;
}

int OpApplier::clone(const CollectionId& c, const ObjectId& src, const ObjectId& dst, std::string* why) {
  auto so = get(c, src);
  if (!so) {
    *why = load_error_ ? "source has a corrupt onode" : "clone source " + src.to_string() + " does not exist";
    return load_error_ ? load_error_ : -ENOENT;
  }
  if (src == dst) return 0;
  auto existing = get(c, dst);
  if (load_error_) return load_error_;
  if (existing)
    if (int r = remove_object(c, dst); r < 0) return r;
  // `so` stays valid: the overlay owns it and removing dst did not touch it.
  auto d = get_or_create(c, dst);
  d->attrs = so->attrs;
  d->alloc_hint_flags = so->alloc_hint_flags;
  d->expected_object_size = so->expected_object_size;
  d->expected_write_size = so->expected_write_size;
  if (int r = p_.writer->copy(tx_, c, src, *so, dst, *d, why); r < 0) return r;
  set_object_size(tx_, *d, so->size);
  if (so->nid) {
    if (int r = ensure_nid(c, dst, *d); r < 0) return r;
    if (int r = omap_copy(c, so->nid, d->nid); r < 0) return r;
  }
  mark_dirty(c, dst);
  return 0;
}

int OpApplier::clone_range(const CollectionId& c, const Op& op, std::string* why) {
  auto so = get(c, op.oid);
  if (!so) {
    *why = load_error_ ? "source has a corrupt onode" : "clone_range source " + op.oid.to_string() + " does not exist";
    return load_error_ ? load_error_ : -ENOENT;
  }
  if (op.off + op.len < op.off || op.off + op.len > so->size) {
    *why = fmt::format("source range {}~{} lies outside the source object (size {})", op.off, op.len, so->size);
    return -EINVAL;
  }
  // The sum can wrap: a huge dst_off must not pass as a small end.
  if (op.dst_off + op.len < op.dst_off || op.dst_off + op.len > p_.max_object_size) {
    *why = fmt::format("destination range {}~{} reaches past the largest object size {}", op.dst_off, op.len,
                       p_.max_object_size);
    return -E2BIG;
  }
  // The source as it is before the copy: when source and destination are
  // one object, an overlapping copy reads the old bytes.
  Onode snapshot = *so;
  auto d = get_or_create(c, op.dst_oid);
  if (load_error_) return load_error_;
  mark_dirty(c, op.dst_oid);
  return p_.writer->copy_range(tx_, c, op, snapshot, *d, why);
}

int OpApplier::migrate(const CollectionId& c, const Op& op, std::string* why) {
  auto o = get(c, op.oid);
  if (!o) {
    *why = "object is gone";
    return load_error_ ? load_error_ : -ENOENT;
  }
  if (extent_fingerprint(o->extents) != op.name) {
    *why = "object changed while it was being copied";
    return -EAGAIN;
  }
  if (int r = p_.writer->move(tx_, c, op, *o, why); r < 0) return r;
  mark_dirty(c, op.oid);
  return 0;
}

// ---------------------------------------------------------------- omap

int OpApplier::ensure_nid(const CollectionId& c, const ObjectId& oid, Onode& o) {
  if (o.nid) return 0;
  o.nid = p_.onodes->allocate_nid();
  if (!o.nid) return -EIO;
  mark_dirty(c, oid);
  return 0;
}

int OpApplier::omap_delete_range(const CollectionId& c, const std::string& begin, const std::string& end) {
  if (int r = wait_prior(c); r < 0) return r;
  rocksdb::WriteBatchWithIndex* indexed = tx_.batch.indexed();
  if (!indexed) return -EIO;
  std::unique_ptr<rocksdb::Iterator> it(indexed->NewIteratorWithBase(p_.db->NewIterator(rocksdb::ReadOptions())));
  std::vector<std::string> doomed;
  for (it->Seek(begin); it->Valid() && it->key().compare(end) < 0; it->Next())
    doomed.push_back(it->key().ToString());
  if (!it->status().ok()) return -EIO;
  for (const auto& k : doomed) tx_.batch->Delete(k);
  return 0;
}

int OpApplier::omap_clear_keys(const CollectionId& c, uint64_t nid, bool include_header) {
  if (include_header) return omap_delete_range(c, kv::omap_nid_begin(nid), kv::omap_nid_end(nid));
  return omap_delete_range(c, kv::omap_keys_begin(nid), kv::omap_keys_end(nid));
}

int OpApplier::omap_copy(const CollectionId& c, uint64_t from, uint64_t to) {
  if (int r = wait_prior(c); r < 0) return r;
  rocksdb::WriteBatchWithIndex* indexed = tx_.batch.indexed();
  if (!indexed) return -EIO;
  std::unique_ptr<rocksdb::Iterator> it(indexed->NewIteratorWithBase(p_.db->NewIterator(rocksdb::ReadOptions())));
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
  for (auto& [k, v] : copies) tx_.batch->Put(k, v);
  return 0;
}

// ---------------------------------------------------------------- ops

int OpApplier::need_coll(const CollectionId& c, std::string* why) {
  if (coll_exists(c)) return 0;
  *why = "collection " + c.name + " does not exist";
  return -ENOENT;
}

int OpApplier::need_object(const Op& op, std::shared_ptr<Onode>* out, std::string* why) {
  if (int r = need_coll(op.cid, why); r < 0) return r;
  *out = get(op.cid, op.oid);
  if (load_error_) {
    *why = "object " + op.oid.to_string() + " has a corrupt onode";
    return load_error_;
  }
  if (!*out) {
    *why = "object " + op.oid.to_string() + " does not exist";
    return -ENOENT;
  }
  return 0;
}

int OpApplier::new_object(const Op& op, std::shared_ptr<Onode>* out, std::string* why) {
  if (int r = need_coll(op.cid, why); r < 0) return r;
  *out = get_or_create(op.cid, op.oid);
  if (load_error_) {
    *why = "object " + op.oid.to_string() + " has a corrupt onode";
    return load_error_;
  }
  return 0;
}

bool OpApplier::too_big(uint64_t off, uint64_t len, std::string* why) const {
  if (off + len >= off && off + len <= p_.max_object_size) return false;
  *why = fmt::format("range {}~{} reaches past the largest object size {}", off, len, p_.max_object_size);
  return true;
}

int OpApplier::apply(const Op& op, std::string* why) {
  load_error_ = 0;
  switch (op.code) {
    case OpCode::kNop:
      return 0;
    case OpCode::kTouch:
    case OpCode::kCreate:
    case OpCode::kWrite:
    case OpCode::kZero:
    case OpCode::kTruncate:
    case OpCode::kRemove:
    case OpCode::kClone:
    case OpCode::kCloneRange:
    case OpCode::kMigrate:
    case OpCode::kSetAllocHint:
      return apply_object_op(op, why);
    case OpCode::kSetAttrs:
    case OpCode::kRmAttr:
    case OpCode::kRmAttrs:
      return apply_attr_op(op, why);
    case OpCode::kOmapSetKeys:
    case OpCode::kOmapRmKeys:
    case OpCode::kOmapRmKeyRange:
    case OpCode::kOmapClear:
    case OpCode::kOmapSetHeader:
      return apply_omap_op(op, why);
    case OpCode::kMkColl:
    case OpCode::kRmColl:
    case OpCode::kCollMoveRename:
    case OpCode::kTryRename:
    case OpCode::kSplitCollection:
    case OpCode::kMergeCollection:
    case OpCode::kCollSetBits:
      return apply_collection_op(op, why);
  }
  *why = "unknown op";
  return -EINVAL;
}

int OpApplier::apply_write(const Op& op, std::string* why) {
  const CollectionId& c = op.cid;
  const ScatterData& data = op.scatter;
  std::shared_ptr<Onode> o;
  if (too_big(op.off, data.size(), why)) return -E2BIG;
  if (int r = new_object(op, &o, why); r < 0) return r;
  if (data.empty()) return 0;  // creates the object; size unchanged
  mark_dirty(c, op.oid);
  // Asked before the access is noted, which moves the object's last request
  // to this one.
  const bool absorbable = p_.writer->absorbable(c, op.oid, *o, op.off, data.size());
  // A write the SSD may absorb is not heat: it is fast without the object
  // being promoted, and counting it would have passes copy objects up only
  // because they are written at random (an RBD image under random writes),
  // each copy a read of the object from the HDD.
  p_.heat->note(c, op.oid, AccessType::kWrite, op.off, data.size(), std::max(o->size, op.off + data.size()),
                /*counts=*/!absorbable);
  return p_.writer->write(tx_, c, op.oid, *o, op.off, data, absorbable);
}

int OpApplier::apply_object_op(const Op& op, std::string* why) {
  const CollectionId& c = op.cid;
  std::shared_ptr<Onode> o;
  switch (op.code) {
    case OpCode::kTouch:
    case OpCode::kCreate:
      return new_object(op, &o, why);
    case OpCode::kWrite:
      return apply_write(op, why);
    case OpCode::kZero:
      if (too_big(op.off, op.len, why)) return -E2BIG;
      if (int r = new_object(op, &o, why); r < 0) return r;
      if (op.len == 0) return 0;
      mark_dirty(c, op.oid);
      return p_.writer->zero(tx_, c, op.oid, *o, op.off, op.len);
    case OpCode::kTruncate:
      if (too_big(op.off, 0, why)) return -E2BIG;
      if (int r = need_object(op, &o, why); r < 0) return r;
      mark_dirty(c, op.oid);
      return p_.writer->truncate(tx_, c, op.oid, *o, op.off);
    case OpCode::kRemove: {
      if (int r = need_coll(c, why); r < 0) return r;
      int r = remove_object(c, op.oid);
      if (r == -ENOENT) *why = "object " + op.oid.to_string() + " does not exist";
      if (r == 0) p_.heat->forget(kv::onode_key(c, op.oid));
      return r;
    }
    case OpCode::kClone:
      if (int r = need_coll(c, why); r < 0) return r;
      return clone(c, op.oid, op.dst_oid, why);
    case OpCode::kCloneRange:
      if (int r = need_coll(c, why); r < 0) return r;
      return clone_range(c, op, why);
    case OpCode::kMigrate:
      if (int r = need_coll(c, why); r < 0) return r;
      return migrate(c, op, why);
    case OpCode::kSetAllocHint:
      if (int r = need_object(op, &o, why); r < 0) return r;
      if (op.expected_object_size == 0 && op.expected_write_size == 0 && op.flags == 0) return 0;
      o->expected_object_size = op.expected_object_size;
      o->expected_write_size = op.expected_write_size;
      o->alloc_hint_flags = op.flags;
      mark_dirty(c, op.oid);
      return 0;
    default:
      break;
  }
  *why = "unknown op";
  return -EINVAL;
}

int OpApplier::apply_attr_op(const Op& op, std::string* why) {
  std::shared_ptr<Onode> o;
  if (op.code == OpCode::kSetAttrs) {
    for (const auto& [k, v] : op.kv)
      if (k.empty() || k.size() > kMaxAttrNameLen) {
        *why = fmt::format("attribute name of {} bytes (must be 1..{})", k.size(), kMaxAttrNameLen);
        return -ENAMETOOLONG;
      }
  }
  if (int r = need_object(op, &o, why); r < 0) return r;
  if (op.code == OpCode::kSetAttrs)
    for (const auto& [k, v] : op.kv) o->attrs[k] = v;
  else if (op.code == OpCode::kRmAttr)
    o->attrs.erase(op.name);
  else
    o->attrs.clear();
  mark_dirty(op.cid, op.oid);
  return 0;
}

int OpApplier::apply_omap_op(const Op& op, std::string* why) {
  std::shared_ptr<Onode> o;
  if (int r = need_object(op, &o, why); r < 0) return r;
  switch (op.code) {
    case OpCode::kOmapSetKeys:
      if (int r = ensure_nid(op.cid, op.oid, *o); r < 0) return r;
      for (const auto& [k, v] : op.kv) tx_.batch->Put(kv::omap_key(o->nid, k), v);
      return 0;
    case OpCode::kOmapRmKeys:
      if (o->nid)
        for (const auto& k : op.keys) tx_.batch->Delete(kv::omap_key(o->nid, k));
      return 0;
    case OpCode::kOmapRmKeyRange:
      if (!o->nid || op.name >= op.name2) return 0;
      return omap_delete_range(op.cid, kv::omap_key(o->nid, op.name), kv::omap_key(o->nid, op.name2));
    case OpCode::kOmapClear:
      if (!o->nid) return 0;
      return omap_clear_keys(op.cid, o->nid, true);
    case OpCode::kOmapSetHeader:
      if (int r = ensure_nid(op.cid, op.oid, *o); r < 0) return r;
      tx_.batch->Put(kv::omap_header_key(o->nid), op.data);
      return 0;
    default:
      break;
  }
  *why = "unknown op";
  return -EINVAL;
}

int OpApplier::apply_collection_op(const Op& op, std::string* why) {
  const CollectionId& c = op.cid;
  if (op.code == OpCode::kMkColl) {
    if (coll_exists(c)) {
      *why = "collection " + c.name + " already exists";
      return -EEXIST;
    }
    if (op.bits > 32) {
      *why = "hash bits must be 0..32";
      return -EINVAL;
    }
    tx_.colls[c] = {true, op.bits};
    return 0;
  }
  if (int r = need_coll(c, why); r < 0) return r;
  std::vector<ObjectId> objs;
  switch (op.code) {
    case OpCode::kRmColl:
      if (int r = list_objects(c, &objs); r < 0) return r;
      if (!objs.empty()) {
        *why = fmt::format("collection {} is not empty ({} objects)", c.name, objs.size());
        return -ENOTEMPTY;
      }
      tx_.colls[c] = {false, 0};
      return 0;
    case OpCode::kCollMoveRename:
    case OpCode::kTryRename: {
      if (int r = need_coll(op.dst_cid, why); r < 0) return r;
      int r = move_object(c, op.oid, op.dst_cid, op.dst_oid);
      if (r == -EEXIST) *why = "destination " + op.dst_oid.to_string() + " already exists";
      if (r == -ENOENT) *why = "source " + op.oid.to_string() + " does not exist";
      return r;
    }
    case OpCode::kSplitCollection:
      if (int r = need_coll(op.dst_cid, why); r < 0) return r;
      if (op.bits > 32) return -EINVAL;
      if (int r = list_objects(c, &objs); r < 0) return r;
      for (const auto& obj : objs)
        if (obj.matches(op.bits, op.rem))
          if (int r = move_object(c, obj, op.dst_cid, obj); r < 0) {
            *why = "moving " + obj.to_string() + " during split";
            return r;
          }
      tx_.colls[c] = {true, op.bits};
      return 0;
    case OpCode::kMergeCollection:
      if (int r = need_coll(op.dst_cid, why); r < 0) return r;
      if (c == op.dst_cid) {
        *why = "cannot merge a collection into itself";
        return -EINVAL;
      }
      if (int r = list_objects(c, &objs); r < 0) return r;
      for (const auto& obj : objs)
        if (int r = move_object(c, obj, op.dst_cid, obj); r < 0) {
          *why = "moving " + obj.to_string() + " during merge";
          return r;
        }
      tx_.colls[c] = {false, 0};
      tx_.colls[op.dst_cid] = {true, op.bits};
      return 0;
    case OpCode::kCollSetBits:
      tx_.colls[c] = {true, op.bits};
      return 0;
    default:
      break;
  }
  *why = "unknown op";
  return -EINVAL;
}

}  // namespace hybridstore
