// The working state of one transaction, between its first op and its
// commit: the overlay of the objects it touched, its RocksDB batch, the
// space it allocated and freed, and its writes of new data. Plain data that
// the transaction's parts fill in (OpApplier, DataWriter) and the pipeline
// commits (TxnPipeline); nothing here is visible to other transactions
// until the pipeline publishes it, and on failure it is dropped and its
// allocations released.
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <rocksdb/utilities/write_batch_with_index.h>

#include "hsio/block_device.h"
#include "hybridstore/format/collection_id.h"
#include "hybridstore/format/object_id.h"
#include "hybridstore/format/onode.h"
#include "hybridstore/kv/kv_committer.h"
#include "hybridstore/kv/kv_schema.h"
#include "hybridstore/space/tier_space.h"

namespace hybridstore {

// One per collection name ever used since mount, existing or not: the lock
// must exist before the collection does (mkcoll) and outlive it (rmcoll).
struct CollectionState {
  explicit CollectionState(CollectionId c) : cid(std::move(c)) {}
  const CollectionId cid;
  std::shared_mutex lock;
  std::atomic<bool> exists{false};
  std::atomic<uint32_t> bits{0};
  std::atomic<uint64_t> last_seq{0};  // last transaction that touched it
};

using ObjectKey = std::pair<std::string, ObjectId>;  // (collection name, object)
struct ObjectKeyHash {
  size_t operator()(const ObjectKey& k) const {
    return std::hash<std::string>()(k.first) * 31 + ObjectIdHash()(k.second);
  }
};

// A transaction's RocksDB writes. Nearly every transaction only adds to
// them, so they start as a plain WriteBatch that goes to the committer as it
// is. The few ops that read keys back through the batch (listing a
// collection, deleting or copying an omap range) make it an indexed batch
// first, which then takes every later write as well.
class TxnBatch {
 public:
  rocksdb::WriteBatchBase* get() {
    return indexed_ ? static_cast<rocksdb::WriteBatchBase*>(indexed_.get()) : &plain_;
  }
  rocksdb::WriteBatchBase* operator->() { return get(); }
  // Null when the batch holds a record an indexed batch cannot take.
  rocksdb::WriteBatchWithIndex* indexed();
  // The finished batch; this one is empty afterwards.
  rocksdb::WriteBatch take();

 private:
  rocksdb::WriteBatch plain_;
  std::unique_ptr<rocksdb::WriteBatchWithIndex> indexed_;
};

// An onode key's extent shards as stored (OnodeStore::put).
using StoredShards = std::vector<std::pair<uint64_t, ExtentMap::ShardHandle>>;

struct TxnContext {
  TxnBatch batch;
  // Objects touched: a private copy, or null when removed in this txn.
  std::unordered_map<ObjectKey, std::shared_ptr<Onode>, ObjectKeyHash> onodes;
  std::unordered_map<ObjectKey, std::optional<Tier>, ObjectKeyHash> home_before;  // when first loaded
  std::set<ObjectKey> dirty;  // onodes to write to the batch
  // Onodes whose version this transaction raised already (a transaction
  // raises an object's version once, however often it syncs it).
  std::set<const Onode*> versioned;
  // The extent shards each touched key holds in the store, or in this
  // batch once written to it (OnodeStore::put). The handles also keep a
  // loaded shard from being changed in place: a change copies it.
  std::unordered_map<ObjectKey, StoredShards, ObjectKeyHash> stored;
  // The cached onode each touched object had when the transaction found it
  // there (format 7 with hybridstore_small_write_journal=on): what its
  // onode deltas are taken from (OpApplier::journal_deltas).
  std::unordered_map<ObjectKey, std::shared_ptr<const Onode>, ObjectKeyHash> before;
  // The onode deltas of this transaction, for its journal record.
  std::vector<JournalDelta> onode_deltas;
  // Objects whose onode only the deltas carry (not put in the batch).
  std::set<ObjectKey> by_deltas;
  // Objects whose onode (or its delete) the batch holds.
  std::set<ObjectKey> written;
  struct CollChange {
    bool exists;
    uint32_t bits;
  };
  std::map<CollectionId, CollChange> colls;
  std::vector<PExtent> allocated;  // released at once if the txn fails
  std::vector<PExtent> released;   // released after commit
  std::vector<uint64_t> deferred;  // deferred writes staged by this txn
  // Those of `deferred` whose data rides in the commit journal's record
  // (hybridstore_small_write_journal=data): staging number, place, bytes.
  struct RingPiece {
    uint64_t seq;
    Tier tier;
    uint64_t physical;
    std::shared_ptr<const std::string> data;
    // crc32c of each 4 KiB block when the extent map's checksums are those
    // (4 KiB checksum blocks), so the record does not compute them again;
    // empty otherwise.
    std::vector<uint32_t> crcs;
  };
  std::vector<RingPiece> ring;
  uint64_t relocated = 0;          // bytes the cleaner moved in this txn
  // Data for freshly allocated space, written to the devices only once every
  // op succeeded (a failing transaction writes nothing). Reads inside the
  // transaction see it through DataReader's overlay.
  std::vector<AlignedBuffer> buffers;
  std::vector<TierWrite> writes;
  // Those of `writes` still going on when the transaction is queued (and
  // then `buffers` too); its commit waits for them.
  std::shared_ptr<PendingWrites> pending;
  int64_t stat_delta[kv::kStatCount] = {};
  std::map<CollectionId, std::shared_ptr<CollectionState>> locked;
};

// An object's new size, counted in the transaction's statistics.
inline void set_object_size(TxnContext& tx, Onode& o, uint64_t new_size) {
  tx.stat_delta[kv::kStatBytes] += static_cast<int64_t>(new_size) - static_cast<int64_t>(o.size);
  o.size = new_size;
}

}  // namespace hybridstore
