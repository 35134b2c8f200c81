// The transaction pipeline: locks the collections a transaction names,
// applies its ops to a private overlay (OpApplier), writes its new data
// (DataWriter), then hands its batch to the group committer together with
// the staged tiers' state, and publishes the overlay. On error the overlay
// is dropped and any space it allocated is released, so a failed
// transaction leaves nothing behind.
#pragma once
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "hybridstore/store/op_applier.h"
#include "hybridstore/store/transaction.h"
#include "hybridstore/store/txn_context.h"

namespace hybridstore {

class CollectionTable;
class DeferredWriter;
class OnodeCheckpointer;
struct StorePerf;

class TxnPipeline {
 public:
  // `checkpointer`: the dirty onodes' (hybridstore_small_write_journal=on),
  // or null.
  TxnPipeline(const OpApplier::Parts& parts, CollectionTable* colls, DeferredWriter* deferred, StorePerf* perf,
              OnodeCheckpointer* checkpointer = nullptr)
      : parts_(parts), colls_(colls), deferred_(deferred), perf_(perf), checkpointer_(checkpointer) {}

  // Applies and queues `ts` as one atomic unit: 0 or a negative errno with
  // *error saying which op failed. *seq_out: its commit sequence number.
  // `caller_waits`: the caller waits for the commit next (apply_transaction).
  int queue(std::vector<Transaction>& ts, TxnError* error, uint64_t* seq_out, bool caller_waits = false);

 private:
  // The collections `ts` names, locked in name order into tx->locked.
  int lock_collections(const std::vector<Transaction>& ts, TxnContext* tx,
                       std::vector<std::unique_lock<std::shared_mutex>>* locks, TxnError* error);
  int apply_ops(const std::vector<Transaction>& ts, OpApplier* ap, TxnError* error);
  // The rest of the batch: dirty onodes, collection records, statistics.
  // Fills home_delta (objects per tier).
  void finish_batch(OpApplier* ap, TxnContext* tx, PerTier<int64_t>* home_delta);
  // Hands the transaction to the committer: its sequence number, 0 when
  // the store is read-only.
  uint64_t commit(std::vector<Transaction>& ts, OpApplier* ap, TxnContext* tx, uint64_t start_ns, bool caller_waits);
  // From here on reads see the transaction.
  void publish(TxnContext* tx, uint64_t seq, const PerTier<int64_t>& home_delta);
  // The transaction's ring pieces into its commit work (data blocks and
  // RING_DATA deltas), or into D records when one record cannot carry them.
  void carry_ring_data(TxnContext* tx, CommitWork* work);
  // The transaction's onode deltas into its commit work when the record
  // has room for them; else the onodes only they carried are put.
  void carry_onode_deltas(OpApplier* ap, TxnContext* tx, CommitWork* work);
  // Gives back what a failed transaction took.
  void roll_back(const TxnContext& tx);

  const OpApplier::Parts parts_;
  CollectionTable* colls_;
  DeferredWriter* deferred_;
  StorePerf* perf_;
  OnodeCheckpointer* checkpointer_;
};

}  // namespace hybridstore
