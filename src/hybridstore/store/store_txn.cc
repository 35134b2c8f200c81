// Transaction pipeline: lock the collections a transaction names, apply its
// ops to a private overlay, then hand the batch to the group committer and
// publish the overlay. On error the overlay is dropped and any space it
// allocated is released, so a failed transaction leaves nothing behind.
#include <algorithm>
#include <cstring>

#include "hscommon/log.h"
#include "hybridstore/store/store_impl.h"

namespace hybridstore {

rocksdb::WriteBatchWithIndex* TxnBatch::indexed() {
  if (indexed_) return indexed_.get();
  // The records so far, replayed in order into the index (later ones win,
  // as they will in RocksDB).
  struct Replay : rocksdb::WriteBatch::Handler {
    rocksdb::WriteBatchWithIndex* to;
    // The store writes the default column family only.
    rocksdb::Status PutCF(uint32_t cf, const rocksdb::Slice& k, const rocksdb::Slice& v) override {
      return cf ? rocksdb::Status::NotSupported() : to->Put(k, v);
    }
    rocksdb::Status DeleteCF(uint32_t cf, const rocksdb::Slice& k) override {
      return cf ? rocksdb::Status::NotSupported() : to->Delete(k);
    }
    rocksdb::Status SingleDeleteCF(uint32_t cf, const rocksdb::Slice& k) override {
      return cf ? rocksdb::Status::NotSupported() : to->SingleDelete(k);
    }
    rocksdb::Status MergeCF(uint32_t cf, const rocksdb::Slice& k, const rocksdb::Slice& v) override {
      return cf ? rocksdb::Status::NotSupported() : to->Merge(k, v);
    }
  };
  auto idx = std::make_unique<rocksdb::WriteBatchWithIndex>(rocksdb::BytewiseComparator(), 0, true);
  Replay r;
  r.to = idx.get();
  if (!plain_.Iterate(&r).ok()) return nullptr;
  plain_.Clear();
  indexed_ = std::move(idx);
  return indexed_.get();
}

rocksdb::WriteBatch TxnBatch::take() {
  if (!indexed_) return std::move(plain_);
  rocksdb::WriteBatch out(*indexed_->GetWriteBatch());
  indexed_.reset();
  return out;
}

int StoreImpl::queue_transactions(std::vector<Transaction>& ts, TxnError* error, uint64_t* seq_out,
                                  bool caller_waits) {
  if (!mounted_) return -ENOTCONN;
  PerfCounterSet& perf = perf_->set;
  const uint64_t t_start = perf_now_ns();
  if (int e = committer_->error(); e) {
    if (error) *error = TxnError{-EROFS, -1, -1, "", "store is read-only after an I/O error: " + committer_->error_message()};
    return -EROFS;
  }
  deferred_->throttle();
  uint64_t t_phase = perf_now_ns();
  perf.tinc(perf_->throttle_lat, t_phase - t_start);
  // Every collection the transactions name, locked in name order.
  std::set<CollectionId> names;
  for (const auto& t : ts)
    for (const auto& op : t.ops()) {
      if (op.code == OpCode::kNop) continue;
      names.insert(op.cid);
      if (!op.dst_cid.name.empty()) names.insert(op.dst_cid);
    }
  for (const auto& n : names)
    if (!n.valid()) {
      if (error) *error = TxnError{-EINVAL, -1, -1, "", "invalid collection name"};
      return -EINVAL;
    }

  TxnContext tx;
  std::vector<std::unique_lock<std::shared_mutex>> locks;
  for (const auto& n : names) {
    auto st = coll_state(n);
    locks.emplace_back(st->lock);
    tx.locked[n] = st;
  }

  OpApplier ap{*this, tx};
  auto rollback = [&] {
    if (!tx.deferred.empty()) deferred_->cancel(tx.deferred);
    for (const auto& e : tx.allocated) return_space(e);
  };
  for (size_t ti = 0; ti < ts.size(); ++ti) {
    const auto& ops = ts[ti].ops();
    for (size_t oi = 0; oi < ops.size(); ++oi) {
      std::string why;
      int r = ap.apply(ops[oi], &why);
      if (r == -ENOENT && ops[oi].enoent_ok) r = 0;
      if (r < 0) {
        rollback();
        if (error) {
          error->code = r;
          error->txn_index = static_cast<int>(ti);
          error->op_index = static_cast<int>(oi);
          error->op = op_name(ops[oi].code);
          error->message = why.empty() ? strerror(-r) : why;
        }
        HS_DEBUG("transaction failed at op {} ({}): {}", oi, op_name(ops[oi].code), why);
        return r;
      }
    }
  }
  // Every op succeeded: now, and only now, the data goes to the devices.
  uint64_t t_now = perf_now_ns();
  perf.tinc(perf_->state_prepare_lat, t_now - t_phase);
  t_phase = t_now;
  int wr = ap.write_pending();
  perf.tinc(perf_->state_aio_wait_lat, perf_now_ns() - t_phase);
  if (wr < 0) {
    rollback();
    if (error) *error = TxnError{wr, -1, -1, "", "device write failed"};
    return wr;
  }
  ap.sync_dirty();
  for (const auto& [c, ch] : tx.colls) {
    if (ch.exists)
      tx.batch->Put(kv::collection_key(c), kv::encode_collection(ch.bits));
    else
      tx.batch->Delete(kv::collection_key(c));
  }
  // Objects per tier follow the tier holding most of each object's data.
  int64_t home_delta[kMaxTiers] = {};
  for (const auto& [key, on] : tx.onodes) {
    auto b = tx.home_before.find(key);
    int before = b == tx.home_before.end() ? -1 : b->second;
    int after = on ? home_tier(*on) : -1;
    if (before == after) continue;
    if (before >= 0) --home_delta[before];
    if (after >= 0) ++home_delta[after];
  }
  for (int t = 0; t < tiers(); ++t) tx.stat_delta[kv::kStatSsdObjects + t] += home_delta[t];
  bool any_stat = false;
  for (auto v : tx.stat_delta) any_stat |= v != 0;
  if (any_stat) tx.batch->Merge(kv::stats_key(), kv::encode_stat_delta(tx.stat_delta));

  CommitWork work;
  work.start_ns = t_start;
  work.batch = std::make_unique<rocksdb::WriteBatch>(tx.batch.take());
  work.writes = std::move(tx.pending);
  for (auto& t : ts)
    for (auto& cb : t.take_on_commit()) work.on_commit.push_back(std::move(cb));
  if (!tx.released.empty() || !tx.deferred.empty()) {
    // Freed space goes back through the deferred writer: it must not be
    // reused while a deferred write staged before it may still land there.
    // A staged tier's space is the exception: its writes are deferred
    // records applied in staging order, or whole units written before the
    // commit only where no older record or region covers them
    // (DeferredWriter::range_quiet), so reuse cannot overtake an old one.
    std::vector<PExtent> held, now;
    for (auto& e : tx.released) (space(e.tier).reuse_at_commit() ? now : held).push_back(e);
    work.after_commit = [this, held = std::move(held), now = std::move(now), staged = tx.deferred] {
      deferred_->committed(staged, held);
      for (const auto& e : now) {
        deferred_->discard_held(e.tier, e.offset, e.length);
        return_space(e);
      }
    };
  }
  // The staged tiers' state is drained into this batch and submitted under
  // their locks (taken fastest tier first), so states commit in the order
  // they were drained.
  std::vector<TierSpace::Region> regions[kMaxTiers];
  std::unique_lock<std::mutex> state_locks[kMaxTiers];
  for (int t = 0; t < tiers(); ++t)
    if (space_[t]->keeps_state())
      state_locks[t] = space_[t]->drain_state(TierSpace::Drain::kCommit, work.batch.get(), &regions[t]);
  uint64_t seq = committer_->submit(std::move(work), caller_waits);
  // Regions are queued before the tiers' locks drop: an allocation made after
  // that may write a whole unit directly, and must see a region still to be
  // written over its space (DeferredWriter::range_quiet).
  for (int t = 0; t < tiers(); ++t)
    for (const auto& r : regions[t]) deferred_->write_region(static_cast<Tier>(t), r.begin, r.end);
  for (int t = tiers() - 1; t >= 0; --t)
    if (state_locks[t].owns_lock()) state_locks[t].unlock();
  if (seq == 0) {
    rollback();
    if (error) *error = TxnError{-EROFS, -1, -1, "", "store is read-only after an I/O error: " + committer_->error_message()};
    return -EROFS;
  }

  // Publish: from here on reads see the transaction.
  for (auto& [key, onode] : tx.onodes)
    cache_->put_pending(CollectionId(key.first), key.second, onode, seq);
  for (const auto& [c, ch] : tx.colls) {
    auto st = tx.locked.at(c);
    st->exists = ch.exists;
    st->bits = ch.bits;
  }
  for (auto& [c, st] : tx.locked) st->last_seq = seq;
  locks.clear();
  for (int t = 0; t < tiers(); ++t) {
    if (home_delta[t] > 0) perf.inc(perf_->objects[t], static_cast<uint64_t>(home_delta[t]));
    if (home_delta[t] < 0) perf.dec(perf_->objects[t], static_cast<uint64_t>(-home_delta[t]));
  }

  std::vector<Transaction::Callback> applied;
  for (auto& t : ts)
    for (auto& cb : t.take_on_applied()) applied.push_back(std::move(cb));
  for (auto& cb : applied) cb();
  cache_->trim(committer_->committed_seq());
  if (seq_out) *seq_out = seq;
  perf.tinc(perf_->submit_lat, perf_now_ns() - t_start);
  return 0;
}

}  // namespace hybridstore
