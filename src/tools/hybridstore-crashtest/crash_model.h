// The reference model of what a client can observe in a store: collections
// with their hash bits, objects with their bytes, xattrs, omap header and
// omap keys. Crash tests compare a recovered store with the model after some
// prefix of the transactions they queued.
//
// StoreModel::apply() implements ObjectStore transaction semantics
// independently of the engine (its rules are those of store/op_applier.cc
// and docs/txn-json.md: which ops create their object, which missing objects
// are tolerated, which errors fail the transaction), so a disagreement between
// the two is a finding, not a tautology.
//
// Objects are shared between models (copy-on-write at object granularity),
// so copying a model to try a transaction costs one map copy per collection.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "hybridstore/store/hybrid_store.h"
#include "hybridstore/store/transaction.h"

namespace hybridstore::crashtest {

struct ObjectState {
  std::string data;  // data.size() is the object size; holes are zeros
  std::map<std::string, std::string> attrs;
  std::string omap_header;  // an absent header reads as empty
  std::map<std::string, std::string> omap;
};
bool operator==(const ObjectState& a, const ObjectState& b);
using ObjectRef = std::shared_ptr<const ObjectState>;

struct ModelCollection {
  uint32_t bits = 0;
  std::map<ObjectId, ObjectRef> objects;  // Ceph's object order, as listed
};

class StoreModel {
 public:
  std::map<std::string, ModelCollection> colls;

  // Applies a transaction all or nothing. Returns 0, or the negative errno of
  // the first failing op (then the model is unchanged) with *why naming it.
  int apply(const Transaction& t, std::string* why = nullptr);
  // Applies one op; on error the model is unchanged (each op checks before it
  // changes anything). Tolerated ENOENT (a no-op) returns 0.
  int apply_op(const Op& op, std::string* why);

  uint64_t object_count() const;
  uint64_t data_bytes() const;
  // A 64-bit digest of everything observable, to compare models cheaply.
  uint64_t digest() const;
};

// Reads everything observable from a mounted store. 0 or a negative errno
// with *error naming what could not be read.
int read_store_model(HybridStore& store, StoreModel* out, std::string* error);

// Empty when equal; otherwise the first difference, readable.
std::string diff_models(const StoreModel& expected, const StoreModel& actual);

}  // namespace hybridstore::crashtest
