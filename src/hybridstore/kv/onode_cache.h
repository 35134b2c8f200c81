// In-memory onodes, keyed by collection and object.
//
// Entries are immutable snapshots (shared_ptr<const Onode>); a transaction
// works on copies and installs the results at the end. An entry may also be
// a tombstone (null onode): the object was removed by a transaction that is
// not yet durable, so RocksDB still holds the old onode and must not be
// consulted. An entry written by transaction `seq` is pinned until that
// transaction is committed (committed_seq >= seq); only then may it be
// evicted, because until then RocksDB does not have it.
//
// Every read looks here first, from as many threads as the OSD has op
// shards, so the cache is split into shards by key hash, each with its own
// mutex, map and LRU (one mutex for all took ~10% of a 4 KiB random read's
// CPU with 16 readers, most of it waiting and waking). Capacity is divided
// among the shards; a small cache keeps one shard and so an exact LRU.
//
// The cache may also be bounded in bytes: each entry is charged an estimate
// of the heap it holds (the entry, its key's strings, the onode with its
// extent map: onode_memory_bytes, a walk of its extents), taken when it is
// cached or replaced, and the cache evicts to stay within the bytes as
// within the count, whichever binds first. A count alone let a cache of
// fragmented onodes (hundreds of extents each, 4 KiB overwrites of RBD
// objects) hold many times what the same count of small ones holds
// (docs/memory.md).
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "hybridstore/format/collection_id.h"
#include "hybridstore/format/object_id.h"
#include "hybridstore/format/onode.h"

namespace hybridstore {

using OnodeRef = std::shared_ptr<const Onode>;

class OnodeCache {
 public:
  // `byte_capacity`: 0 for no bound in bytes.
  explicit OnodeCache(size_t capacity, uint64_t byte_capacity = 0);
  ~OnodeCache();
  OnodeCache(const OnodeCache&) = delete;
  OnodeCache& operator=(const OnodeCache&) = delete;

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
  // What the entries are charged, together (0 without a bound in bytes).
  uint64_t bytes() const;
  // A new bound in bytes at run time (the memory tuner's; 0: none): a cache
  // that had none charges every entry it holds first, then evicts what is
  // over as a trim would.
  void set_byte_capacity(uint64_t byte_capacity, uint64_t committed_seq);
  uint64_t byte_capacity() const;
  // The entries and their bytes for the mempools: what they are charged,
  // or, in a cache not charging (no bound in bytes), the same estimate
  // taken now by a walk of every entry, which holds each shard's lock for
  // the walk of its entries: for an operator's dump, not a hot path.
  void measure(uint64_t* items, uint64_t* bytes) const;
  size_t shard_count() const { return shards_.size(); }

 private:
  // Keyed by the key's hash, computed once per call: a lookup neither copies
  // the key's strings nor hashes them again, and entries with equal hashes
  // are told apart by comparing the key.
  struct Entry {
    std::string coll;
    ObjectId oid;
    OnodeRef onode;  // null: tombstone
    uint64_t seq = 0;
    size_t hash = 0;
    size_t charge = 0;       // bytes counted for it in its shard
    Entry* newer = nullptr;  // LRU links within the shard
    Entry* older = nullptr;
  };
  using Map = std::unordered_multimap<size_t, Entry>;
  struct Shard {
    mutable std::mutex mutex;
    Map map;
    Entry* newest = nullptr;
    Entry* oldest = nullptr;
    size_t capacity = 0;
    uint64_t bytes = 0;
    uint64_t byte_capacity = UINT64_MAX;
    bool over() const { return map.size() > capacity || bytes > byte_capacity; }
  };
  // The bytes an entry holding `onode` is charged.
  static size_t charge_of(const Entry& e);
  static void set_onode_locked(Shard& s, Entry* e, OnodeRef onode);
  static size_t hash_of(const CollectionId& c, const ObjectId& o);
  Shard& shard_for(size_t hash);
  static Map::iterator find_locked(Shard& s, size_t hash, const CollectionId& c, const ObjectId& o);
  static Map::iterator find_entry_locked(Shard& s, size_t hash, const Entry* e);
  static void link_newest_locked(Shard& s, Entry* e);
  static void unlink_locked(Shard& s, Entry* e);
  // Erases `e`; its onode goes to `dead` so the caller frees it (an onode
  // and its extent maps) after dropping the shard's lock.
  static void evict_locked(Shard& s, Entry* e, std::vector<OnodeRef>* dead);
  static void trim_locked(Shard& s, uint64_t committed_seq, std::vector<OnodeRef>* dead);

  std::vector<std::unique_ptr<Shard>> shards_;
  unsigned shard_shift_ = 64;  // shard = mixed hash >> shard_shift_
};

}  // namespace hybridstore
