// A random transaction workload for crash tests, reproducible from a seed
// and the state it starts from, and the check that a recovered store holds a
// prefix of it.
//
// WorkloadGenerator draws transactions from a seed against its own model of
// the store (crash_model.h): writes, overwrites (some of whole 4 KiB blocks
// over an object's data), zero, truncate, clone,
// clone_range, omap set/rm/rmrange/clear/header, xattrs, renames within and
// across collections (temp objects moved into a PG), removes, touch, alloc
// hints, collection create/remove, PG split and merge. Objects live in the PG
// their hash selects, as in Ceph, so splits and merges move real objects.
// A few transactions are built to fail (an op the model rejects at the end):
// the store must reject them and keep nothing of them. The same seed and the
// same starting model give the same transactions, which is how a verifier in
// another process regenerates what a killed process queued.
//
// Transaction numbers are 1-based and count only transactions expected to
// succeed; "prefix p" is the model after transactions 1..p.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <random>
#include <string>

#include "crash_model.h"

namespace hybridstore::crashtest {

struct WorkloadParams {
  int max_ops = 6;                        // ops per transaction (1..max_ops)
  uint64_t max_object_size = 256 << 10;   // writes stay below this offset
  uint64_t max_write = 96 << 10;
  int names_per_pool = 160;               // object names per pool
  uint32_t max_pg_bits = 3;               // PG split limit (8 PGs)
  double failing_ratio = 0.03;            // transactions built to fail
};

struct GeneratedTxn {
  Transaction txn;
  bool expect_failure = false;
  uint64_t number = 0;  // 1-based; 0 for a transaction built to fail
};

class WorkloadGenerator {
 public:
  WorkloadGenerator(uint64_t seed, StoreModel base, WorkloadParams p = WorkloadParams());
  // Draws the next transaction. The model advances by it unless it is
  // built to fail.
  GeneratedTxn next();
  const StoreModel& model() const { return model_; }
  uint64_t generated() const { return number_; }  // transactions expected to succeed so far

 private:
  bool bootstrap(Transaction* t, StoreModel* work);
  void add_object_op(Transaction* t, StoreModel* work);
  bool add_collection_op(Transaction* t, StoreModel* work);
  void add_failing_op(Transaction* t, const StoreModel& work);
  // Adds `op` to `t` when the model accepts it.
  bool try_op(Transaction* t, StoreModel* work, Op op);
  std::string bytes(size_t n);
  uint64_t below(uint64_t n) { return n ? std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_) : 0; }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  // A PG collection of pool 1 (random), or empty when none exists.
  std::string pick_pg(const StoreModel& m);
  ObjectId pick_name_for(const StoreModel& m, const std::string& coll);
  const ObjectId* pick_existing(const StoreModel& m, const std::string& coll);

  std::mt19937_64 rng_;
  StoreModel model_;
  WorkloadParams p_;
  uint64_t number_ = 0;
};

// Runs a workload against a mounted store with at most `max_inflight`
// transactions queued but not yet durable.
struct RunOptions {
  uint64_t max_txns = UINT64_MAX;
  int max_inflight = 16;
  std::function<void(uint64_t)> on_submit;  // before transaction n is queued
  std::function<void(uint64_t)> on_ack;     // from its on_commit callback
  const std::atomic<bool>* stop = nullptr;
};

struct RunResult {
  uint64_t submitted = 0;  // highest number queued successfully
  uint64_t acked = 0;      // highest number whose on_commit ran
  uint64_t rejected_as_expected = 0;
  bool store_failed = false;  // the store returned an I/O error or went read-only
  bool mismatch = false;      // the store disagreed with the model: a finding
  std::string message;
};

RunResult run_workload(HybridStore& store, WorkloadGenerator& gen, const RunOptions& o);

// Checks that `actual` is the model after some prefix p with
// acked <= p <= submitted of the workload (seed, base). On success returns
// true with *matched = p; otherwise false with *message describing how the
// store differs from prefix `acked`.
bool verify_prefix(const StoreModel& actual, uint64_t seed, const StoreModel& base, const WorkloadParams& p,
                   uint64_t acked, uint64_t submitted, uint64_t* matched, std::string* message);

// One line per op, readable: what a failing round's transactions were.
std::string describe_op(const Op& op);

// Writes the transactions of workload (seed, base) numbered up to `last`
// (those built to fail too, marked), one op per line, to `path`. False when
// the file cannot be written.
bool dump_transactions(const std::string& path, uint64_t seed, const StoreModel& base, const WorkloadParams& p,
                       uint64_t last);

}  // namespace hybridstore::crashtest
