// In-memory onodes, keyed by collection and object.
//
// Entries are immutable snapshots (shared_ptr<const Onode>); a transaction
// works on copies and installs the results at the end. An entry may also be
// a tombstone (null onode): the object was removed by a transaction that is
// not yet durable, so RocksDB still holds the old onode and must not be
// consulted. An entry written by transaction `seq` is pinned until that
// transaction is committed (committed_seq >= seq); only then may it be
// evicted, because until then RocksDB does not have it.
#pragma once
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "hybridstore/format/collection_id.h"
#include "hybridstore/format/object_id.h"
#include "hybridstore/format/onode.h"

namespace hybridstore {

using OnodeRef = std::shared_ptr<const Onode>;

class OnodeCache {
 public:
  explicit OnodeCache(size_t capacity) : capacity_(capacity) {}

  enum class Lookup { kMiss, kHit, kTombstone };
  Lookup get(const CollectionId& c, const ObjectId& o, OnodeRef* out);
  // Installs the result of transaction `seq` (null onode = removed).
  void put_pending(const CollectionId& c, const ObjectId& o, OnodeRef onode, uint64_t seq);
  // Caches an onode read from RocksDB (never overrides a newer entry), then
  // trims as trim(committed_seq) does: a store that only reads must stay
  // within capacity too.
  void put_clean(const CollectionId& c, const ObjectId& o, OnodeRef onode, uint64_t committed_seq);
  void erase(const CollectionId& c, const ObjectId& o);
  // Evicts least recently used committed entries beyond capacity.
  void trim(uint64_t committed_seq);
  // Evicts every entry that RocksDB already holds (an operator's cache
  // drop); returns how many went.
  size_t drop_committed(uint64_t committed_seq);
  void clear();
  size_t size() const;

 private:
  struct Key {
    std::string coll;
    ObjectId oid;
    bool operator==(const Key& k) const { return coll == k.coll && oid == k.oid; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<std::string>()(k.coll) * 31 + ObjectIdHash()(k.oid);
    }
  };
  struct Entry {
    OnodeRef onode;  // null: tombstone
    uint64_t seq = 0;
    std::list<Key>::iterator lru;
  };
  void touch_locked(Entry& e);
  void trim_locked(uint64_t committed_seq);

  const size_t capacity_;
  mutable std::mutex mutex_;
  std::unordered_map<Key, Entry, KeyHash> map_;
  std::list<Key> lru_;  // front = most recent
};

}  // namespace hybridstore
