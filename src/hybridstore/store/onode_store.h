// Onodes in RocksDB, as a mounted store keeps them: the record under the
// object's key and, for an extent map larger than
// hybridstore_extent_map_inline_max, its shards under keys of their own
// (format 3); the cache of onodes every read looks in first; and the omap
// ids objects get (nids), reserved in blocks that survive any crash.
//
// Readers hold the object's collection lock (shared) while they use what
// they read; transactions read through their own overlay (OpApplier) and
// publish what they wrote here once queued.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <atomic>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hscommon/config.h"
#include "hybridstore/format/collection_id.h"
#include "hybridstore/format/object_id.h"
#include "hybridstore/format/onode.h"
#include "hybridstore/kv/onode_cache.h"
#include "hybridstore/store/txn_context.h"

namespace rocksdb {
class DB;
class WriteBatchBase;
struct ReadOptions;
}  // namespace rocksdb

namespace hybridstore {

class CollectionTable;
class KvCommitter;
struct StorePerf;

class OnodeStore {
 public:
  // `tiers`: how many tiers the store has (an extent on another is corrupt).
  OnodeStore(rocksdb::DB* db, KvCommitter* committer, CollectionTable* colls, const Config& cfg, int tiers,
             StorePerf* perf);
  ~OnodeStore();
  OnodeStore(const OnodeStore&) = delete;
  OnodeStore& operator=(const OnodeStore&) = delete;

  // Mount: where omap ids continue.
  int load_nids(std::string* error);
  // A fresh omap id; 0 when its reservation could not be written (the
  // store has failed then).
  uint64_t allocate_nid();
  // Format 7: onode records carry incarnation and version (record version
  // 3). Mount, before any transaction: where incarnations continue.
  int enable_versions(std::string* error);
  bool versions() const { return versions_.load(std::memory_order_acquire); }
  // Format 7 with hybridstore_small_write_journal=on: transactions put
  // their onode deltas into the commit journal's record (docs/small-
  // writes.md step 6). Mount or upgrade, after enable_versions.
  void enable_journal_deltas() {
    replace_puts_.store(true, std::memory_order_release);
    deltas_.store(true, std::memory_order_release);
  }
  bool journal_deltas() const { return deltas_.load(std::memory_order_acquire); }
  // Objects whose change the deltas carry are not put in the batch: their
  // onodes are dirty (below) until the checkpointer writes them. Off, the
  // deltas ride beside the puts (the test hook turns it off for mount's
  // replay alone).
  void set_deltas_replace_puts(bool on) { replace_puts_.store(on, std::memory_order_release); }
  bool deltas_replace_puts() const { return replace_puts_.load(std::memory_order_acquire); }

  // ---- Dirty onodes (docs/small-writes.md 6.1) ----
  // An object whose latest onode only the commit journal's deltas carry:
  // its cache entry is pinned until a checkpoint writes it to RocksDB.
  // Every call below but dirty_keys and dirty_count is made under the
  // object's collection lock (the transaction's, or the checkpointer's).
  //
  // Before the transaction whose deltas alone carry `key` is submitted:
  // `stored`, the shards RocksDB holds for it, and `first_seq`, a number at
  // or below that transaction's (kept from the first time it became dirty).
  void note_dirty(const ObjectKey& key, const StoredShards& stored, uint64_t first_seq);
  // The shards RocksDB holds for `key` if it is dirty (true).
  bool dirty_stored(const ObjectKey& key, StoredShards* out) const;
  // How a queued transaction left an object (publish).
  enum class Left { kPut, kByDeltas, kUnchanged };
  // A queued transaction's onode, visible to reads from now on (null:
  // removed). A dirty object stays pinned whatever the transaction did:
  // a put of it (kPut) lands in RocksDB only when `seq` commits, so the
  // checkpointer leaves it for later until then.
  void publish(const ObjectKey& key, OnodeRef onode, uint64_t seq, Left how);
  // Transaction `seq`, which changed the dirty object `key` to `onode`, is
  // committed (from the committer's thread, in commit order): what a
  // checkpoint may write of it.
  void committed_change(const ObjectKey& key, OnodeRef onode, uint64_t seq);
  std::vector<ObjectKey> dirty_keys() const;
  size_t dirty_count() const;
  // The heap the dirty objects' committed onodes hold (onode_memory_bytes
  // of each), which the cache cannot evict until a round writes them.
  uint64_t dirty_bytes() const { return dirty_bytes_.load(std::memory_order_relaxed); }
  // The least first_seq of the dirty objects; UINT64_MAX when none is.
  uint64_t first_dirty_seq() const;
  // Checkpoint, under the collection's lock, with `committed` the
  // committer's committed number read before: puts the last committed
  // onode of the dirty object `key` into `batch` and returns what the
  // checkpoint must tell wrote() once the batch is in RocksDB; false when
  // there is nothing to write: no change committed since the last
  // checkpoint (the ring then needs it only after `committed`), or a put of
  // it not yet committed (its batch could reach RocksDB after the
  // checkpoint's and must not be overtaken by an older onode). Only
  // committed changes are written: an unacknowledged one must never reach
  // RocksDB ahead of its record.
  struct Checkpointed {
    OnodeRef onode;       // what reads hold now (published)
    OnodeRef written;     // the copy put into the batch
    uint64_t seq = 0;     // the last transaction it includes
    uint64_t floor = 0;   // the first transaction whose change it cannot include
  };
  bool put_dirty(rocksdb::WriteBatchBase* batch, const ObjectKey& key, uint64_t committed, Checkpointed* out);
  // The batch is in RocksDB: `key` needs the ring only for changes after
  // c.seq, and is clean (evictable) when no later change was published.
  void wrote(const ObjectKey& key, const Checkpointed& c);
  // A fresh incarnation for an object being made; 0 without versions, or
  // when its reservation could not be written (the store has failed then).
  uint64_t allocate_incarnation();

  // The onode stored under `key`, its extent shards included: 0, -ENOENT, or
  // -EIO with *why (corrupt, a shard missing or not the one the onode names).
  int load(const std::string& key, Onode* out, std::string* why) const;
  // The same for an onode record in hand (read from an iterator): its shards
  // are read with `ro`.
  int complete(const std::string& key, std::string_view value, const rocksdb::ReadOptions& ro, Onode* out,
               std::string* why) const;
  // Puts `o` under `key` in `batch`: the record, and the extent shards that
  // differ from `stored` (the shards the key holds now: empty when it holds
  // none or an inline map; a null handle for a shard of unknown content),
  // deleting shards it no longer has. Sets o.extents_in_shards; returns the
  // shards the key holds afterwards.
  StoredShards put(rocksdb::WriteBatchBase* batch, const std::string& key, Onode& o,
                   const StoredShards& stored) const;
  // The shards the onode under `key` names in the store now, with null
  // handles (content unknown); empty when it names none or cannot be read.
  StoredShards shards_in_store(const std::string& key) const;
  // Deletes the shards in `stored`.
  static void delete_shards(rocksdb::WriteBatchBase* batch, const std::string& key, const StoredShards& stored);
  // The shards an onode holds under its key as loaded (see put).
  static StoredShards stored_shards(const Onode* o) {
    return o && o->extents_in_shards ? o->extents.shard_handles() : StoredShards();
  }

  // Reads the onode records in [from, end), at most `max` of them, and calls
  // fn with each one's key and space (decode_onode_space), its shards
  // included; a record that does not decode is logged and left out, as a
  // stat of it would fail. For a scan of every object (the migration pass,
  // docs/memory.md): one iterator on one snapshot for the range, so an
  // onode and its shards agree, and nothing goes into the block cache or
  // the onode cache, so the scan neither grows the process nor evicts what
  // clients use. *next: where the next range starts, empty when the range
  // is done. A caller scans in ranges so the snapshot and the memtables it
  // pins are let go between them.
  int scan_space(const std::string& from, const std::string& end, size_t max,
                 const std::function<void(std::string_view key, const OnodeSpace&)>& fn, std::string* next) const;

  // The object's onode for a reader, with its collection's lock held in
  // *lock: 0, -ENOENT (no such collection or object) or -EIO. `key`: the
  // object's onode key when the caller has built it already.
  int get_for_read(const CollectionId& c, const ObjectId& o, OnodeRef* out,
                   std::shared_lock<std::shared_mutex>* lock, const std::string* key = nullptr);
  // The cached onode for a transaction's overlay (counted as a hit or a miss).
  OnodeCache::Lookup cached(const CollectionId& c, const ObjectId& o, OnodeRef* out);
  // Keeps the cache within its capacity (entries RocksDB holds may go).
  void trim();
  // Drops every cached onode RocksDB already holds (an operator's drop).
  void drop_clean();
  size_t cached_count() const;
  uint64_t cached_bytes() const;  // what the cache charges its entries
  // The cache's bound in bytes, set at run time (the memory tuner; 0: none).
  void set_cache_byte_capacity(uint64_t bytes);
  uint64_t cache_byte_capacity() const { return cache_.byte_capacity(); }
  // Entries and their estimated heap, for the mempools (OnodeCache::measure).
  void cache_memory(uint64_t* items, uint64_t* bytes) const { cache_.measure(items, bytes); }

 private:
  rocksdb::DB* db_;
  KvCommitter* committer_;
  CollectionTable* colls_;
  StorePerf* perf_;
  const int tiers_;
  const uint64_t extent_map_inline_max_;
  OnodeCache cache_;
  // A store-wide number handed out from blocks reserved in RocksDB: the
  // persisted value says every number below it may be in use.
  struct Counter {
    uint64_t next = 1;
    uint64_t reserved = 0;
  };
  // The next number of `c`, reserving a block under `key` first when it is
  // used up; 0 (and the store failed) when that write fails.
  uint64_t take_reserved(Counter& c, const std::string& key, const char* what);
  std::mutex nid_mutex_;  // both counters
  Counter nids_;
  Counter incarnations_;
  std::atomic<bool> versions_{false};  // set once, at mount
  std::atomic<bool> deltas_{false};    // set once, at mount or upgrade
  std::atomic<bool> replace_puts_{false};
  struct Dirty {
    StoredShards stored;     // the shards RocksDB holds
    uint64_t first_seq = 0;  // at or below the first change RocksDB lacks
    uint64_t put_seq = 0;    // the last transaction that put it while dirty
    OnodeRef committed;      // the onode of the last committed change
    uint64_t committed_seq = 0;
    size_t charge = 0;       // its part of dirty_bytes_
  };
  mutable std::mutex dirty_mutex_;
  std::unordered_map<ObjectKey, Dirty, ObjectKeyHash> dirty_;
  std::atomic<uint64_t> dirty_bytes_{0};  // written under dirty_mutex_
};

}  // namespace hybridstore
