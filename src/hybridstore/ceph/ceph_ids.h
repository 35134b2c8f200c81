// Ceph identities (coll_t, ghobject_t) to the engine's and back.
//
// The engine's ObjectId holds every field of ghobject_t and sorts exactly as
// ghobject_t does, so listing order and bounds carry over unchanged. One
// bound has no engine value: a ghobject_t that is not max but holds the max
// hobject (pg_t::get_hobj_end() of the last PG, with the PG's shard). Every
// object with a shard up to that shard sorts before it and every object with
// a larger shard after it, which is exactly the order of the smallest object
// of the next shard: that is what it maps to.
#pragma once
#include "common/hobject.h"
#include "osd/osd_types.h"

#include "hybridstore/format/collection_id.h"
#include "hybridstore/format/object_id.h"

namespace hybridstore::ceph_adapter {

inline CollectionId to_engine(const coll_t& c) { return CollectionId(c.to_str()); }

inline ObjectId to_engine(const ghobject_t& g) {
  if (g.is_max()) return ObjectId::make_max();
  if (g.hobj.is_max()) {
    if (g.shard_id.id == INT8_MAX) return ObjectId::make_max();
    ObjectId o = ObjectId::make_min();
    o.shard = static_cast<int8_t>(g.shard_id.id + 1);
    return o;
  }
  ObjectId o;
  o.pool = g.hobj.pool;
  o.nspace = g.hobj.nspace;
  o.key = g.hobj.get_key();
  o.name = g.hobj.oid.name;
  o.hash = g.hobj.get_hash();
  o.snap = g.hobj.snap.val;
  o.generation = g.generation;
  o.shard = g.shard_id.id;
  return o;
}

inline ghobject_t to_ceph(const ObjectId& o) {
  if (o.max) return ghobject_t::get_max();
  hobject_t h(object_t(o.name), o.key, snapid_t(o.snap), o.hash, o.pool, o.nspace);
  return ghobject_t(h, o.generation, shard_id_t(o.shard));
}

inline bool to_ceph(const CollectionId& c, coll_t* out) { return out->parse(c.name); }

}  // namespace hybridstore::ceph_adapter
