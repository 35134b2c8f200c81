// Applies a transaction's ops, one at a time, to its private overlay
// (TxnContext): the objects it touched as copies, the collections it
// changed, the omap keys in its batch. Object data changes go to the
// DataWriter. An op that fails leaves the overlay to be dropped whole.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hybridstore/format/collection_id.h"
#include "hybridstore/format/object_id.h"
#include "hybridstore/format/onode.h"
#include "hybridstore/store/transaction.h"
#include "hybridstore/store/txn_context.h"

namespace rocksdb {
class DB;
class WriteBatchBase;
}  // namespace rocksdb

namespace hybridstore {

class DataWriter;
class KvCommitter;
class ObjectHeat;
class OnodeStore;
class TierSet;

class OpApplier {
 public:
  // What applying ops needs of the mounted store.
  struct Parts {
    rocksdb::DB* db;            // listing and omap ranges, through the batch
    KvCommitter* committer;     // waits for earlier transactions before those
    OnodeStore* onodes;
    TierSet* tiers;             // home tiers (statistics), space given back
    DataWriter* writer;
    ObjectHeat* heat;
    uint64_t max_object_size;   // hybridstore_max_object_size
  };
  OpApplier(const Parts& parts, TxnContext* tx) : p_(parts), tx_(*tx) {}

  int apply(const Op& op, std::string* why);
  // Writes dirty onodes to the batch (before listing through it, and at the end).
  void sync_dirty();
  // At the end, with OnodeStore::journal_deltas(): the onode deltas of each
  // object the transaction changed and found in the cache, into
  // tx.onode_deltas (docs/small-writes.md 2.3). Objects whose change deltas
  // cannot say are left to their onode put.
  void journal_deltas();
  // The objects journal_deltas left to their deltas, put after all (the
  // record has no room for the deltas).
  void put_instead_of_deltas(rocksdb::WriteBatchBase* batch);

 private:
  int apply_object_op(const Op& op, std::string* why);
  int apply_write(const Op& op, std::string* why);
  int apply_attr_op(const Op& op, std::string* why);
  int apply_omap_op(const Op& op, std::string* why);
  int apply_collection_op(const Op& op, std::string* why);
  int need_coll(const CollectionId& c, std::string* why);
  // The op's object, which must exist (need) or is made (make): 0 or an
  // errno, with *why.
  int need_object(const Op& op, std::shared_ptr<Onode>* out, std::string* why);
  int new_object(const Op& op, std::shared_ptr<Onode>* out, std::string* why);
  // True (with *why) when [off, off+len) reaches past the largest object.
  bool too_big(uint64_t off, uint64_t len, std::string* why) const;

  // Lookup through the overlay; null when the object does not exist (or
  // could not be read: then load_error_ is set).
  std::shared_ptr<Onode> get(const CollectionId& c, const ObjectId& o);
  std::shared_ptr<Onode> get_or_create(const CollectionId& c, const ObjectId& o);
  void mark_dirty(const CollectionId& c, const ObjectId& o) { tx_.dirty.insert({c.name, o}); }
  // Each dirty onode's version raised, once per transaction.
  void raise_versions();
  void sync_dirty_into(rocksdb::WriteBatchBase* batch);
  void set_removed(const CollectionId& c, const ObjectId& o);
  bool coll_exists(const CollectionId& c, uint32_t* bits = nullptr);
  int wait_prior(const CollectionId& c);
  int list_objects(const CollectionId& c, std::vector<ObjectId>* out);
  int remove_object(const CollectionId& c, const ObjectId& o);
  int move_object(const CollectionId& sc, const ObjectId& so, const CollectionId& dc, const ObjectId& dobj);
  int clone(const CollectionId& c, const ObjectId& src, const ObjectId& dst, std::string* why);
  int clone_range(const CollectionId& c, const Op& op, std::string* why);
  int migrate(const CollectionId& c, const Op& op, std::string* why);

  // Omap.
  int ensure_nid(const CollectionId& c, const ObjectId& oid, Onode& o);
  int omap_delete_range(const CollectionId& c, const std::string& begin, const std::string& end);
  int omap_clear_keys(const CollectionId& c, uint64_t nid, bool include_header);
  int omap_copy(const CollectionId& c, uint64_t from, uint64_t to);

  const Parts p_;
  TxnContext& tx_;
  int load_error_ = 0;  // set when an onode could not be read (-EIO)
};

}  // namespace hybridstore
