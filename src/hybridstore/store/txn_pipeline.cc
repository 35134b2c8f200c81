#include "hybridstore/store/txn_pipeline.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "hscommon/crc32c.h"
#include "hscommon/log.h"
#include "hybridstore/kv/deferred.h"
#include "hybridstore/kv/kv_committer.h"
#include "hybridstore/store/collections.h"
#include "hybridstore/store/data_writer.h"
#include "hybridstore/store/onode_checkpointer.h"
#include "hybridstore/store/onode_store.h"
#include "hybridstore/store/store_perf.h"
#include "hybridstore/store/tier_set.h"

namespace hybridstore {

namespace {
TxnError read_only_error(const KvCommitter& committer) {
  return TxnError{-EROFS, -1, -1, "", "store is read-only after an I/O error: " + committer.error_message()};
}
}  // namespace

int TxnPipeline::queue(std::vector<Transaction>& ts, TxnError* error, uint64_t* seq_out, bool caller_waits) {
  PerfCounterSet& perf = perf_->set;
  const uint64_t t_start = perf_now_ns();
  if (int e = parts_.committer->error(); e) {
    if (error) *error = read_only_error(*parts_.committer);
    return -EROFS;
  }
  deferred_->throttle();
  if (checkpointer_) checkpointer_->throttle();
  uint64_t t_phase = perf_now_ns();
  perf.tinc(perf_->throttle_lat, t_phase - t_start);

  TxnContext tx;
  std::vector<std::unique_lock<std::shared_mutex>> locks;
  if (int r = lock_collections(ts, &tx, &locks, error); r < 0) return r;
  OpApplier ap(parts_, &tx);
  if (int r = apply_ops(ts, &ap, error); r < 0) {
    roll_back(tx);
    return r;
  }
  // Every op succeeded: now, and only now, the data goes to the devices.
  uint64_t t_now = perf_now_ns();
  perf.tinc(perf_->state_prepare_lat, t_now - t_phase);
  t_phase = t_now;
  int wr = parts_.writer->write_pending(tx);
  perf.tinc(perf_->state_aio_wait_lat, perf_now_ns() - t_phase);
  if (wr < 0) {
    roll_back(tx);
    if (error) *error = TxnError{wr, -1, -1, "", "device write failed"};
    return wr;
  }
  PerTier<int64_t> home_delta;
  finish_batch(&ap, &tx, &home_delta);
  const uint64_t seq = commit(ts, &ap, &tx, t_start, caller_waits);
  if (seq == 0) {
    roll_back(tx);
    if (error) *error = read_only_error(*parts_.committer);
    return -EROFS;
  }
  publish(&tx, seq, home_delta);
  locks.clear();

  std::vector<Transaction::Callback> applied;
  for (auto& t : ts)
    for (auto& cb : t.take_on_applied()) applied.push_back(std::move(cb));
  for (auto& cb : applied) cb();
  parts_.onodes->trim();
  if (seq_out) *seq_out = seq;
  perf.tinc(perf_->submit_lat, perf_now_ns() - t_start);
  return 0;
}

int TxnPipeline::lock_collections(const std::vector<Transaction>& ts, TxnContext* tx,
                                  std::vector<std::unique_lock<std::shared_mutex>>* locks, TxnError* error) {
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
  for (const auto& n : names) {
    auto st = colls_->state(n);
    locks->emplace_back(st->lock);
    tx->locked[n] = st;
  }
  return 0;
}

int TxnPipeline::apply_ops(const std::vector<Transaction>& ts, OpApplier* ap, TxnError* error) {
  for (size_t ti = 0; ti < ts.size(); ++ti) {
    const auto& ops = ts[ti].ops();
    for (size_t oi = 0; oi < ops.size(); ++oi) {
      std::string why;
      int r = ap->apply(ops[oi], &why);
      if (r == -ENOENT && ops[oi].enoent_ok) r = 0;
      if (r < 0) {
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
  return 0;
}

void TxnPipeline::finish_batch(OpApplier* ap, TxnContext* tx, PerTier<int64_t>* home_delta) {
  // Deltas first: an object they carry alone is not put.
  if (!tx->before.empty()) ap->journal_deltas();
  ap->sync_dirty();
  for (const auto& [c, ch] : tx->colls) {
    if (ch.exists)
      tx->batch->Put(kv::collection_key(c), kv::encode_collection(ch.bits));
    else
      tx->batch->Delete(kv::collection_key(c));
  }
  // Objects per tier follow the tier holding most of each object's data.
  for (const auto& [key, on] : tx->onodes) {
    auto b = tx->home_before.find(key);
    const std::optional<Tier> before = b == tx->home_before.end() ? std::nullopt : b->second;
    const std::optional<Tier> after = on ? parts_.tiers->home(*on) : std::nullopt;
    if (before == after) continue;
    if (before) --(*home_delta)[*before];
    if (after) ++(*home_delta)[*after];
  }
  for (Tier t : parts_.tiers->ids()) tx->stat_delta[kv::stat_objects_on(t)] += (*home_delta)[t];
  bool any_stat = false;
  for (auto v : tx->stat_delta) any_stat |= v != 0;
  if (any_stat) tx->batch->Merge(kv::stats_key(), kv::encode_stat_delta(tx->stat_delta));
}

uint64_t TxnPipeline::commit(std::vector<Transaction>& ts, OpApplier* ap, TxnContext* tx, uint64_t start_ns,
                             bool caller_waits) {
  CommitWork work;
  work.start_ns = start_ns;
  work.batch = std::make_unique<rocksdb::WriteBatch>(tx->batch.take());
  work.writes = std::move(tx->pending);
  for (auto& t : ts)
    for (auto& cb : t.take_on_commit()) work.on_commit.push_back(std::move(cb));
  if (!tx->released.empty() || !tx->deferred.empty()) {
    // Freed space goes back through the deferred writer: it must not be
    // reused while a deferred write staged before it may still land there,
    // unless the tier's space says it may be reused at once.
    std::vector<PExtent> held, now;
    for (auto& e : tx->released) (parts_.tiers->space(e.tier).reuse_at_commit() ? now : held).push_back(e);
    TierSet* tiers = parts_.tiers;
    work.after_commit = [deferred = deferred_, tiers, held = std::move(held), now = std::move(now),
                         staged = tx->deferred](uint64_t journal_seq) {
      deferred->committed(staged, held, journal_seq);
      for (const auto& e : now) {
        deferred->discard_held(e.tier, e.offset, e.length);
        tiers->release(e);
      }
    };
  }
  if (!tx->ring.empty()) carry_ring_data(tx, &work);
  if (!tx->onode_deltas.empty()) carry_onode_deltas(ap, tx, &work);
  // Dirty before it is submitted: a checkpoint that finds the object
  // clean cannot let the ring's tail pass this record (docs/small-writes.md
  // 6.1). Its number is above the committer's last one now.
  if (!tx->by_deltas.empty()) {
    const uint64_t next = parts_.committer->last_seq() + 1;
    for (const auto& key : tx->by_deltas) parts_.onodes->note_dirty(key, tx->stored.at(key), next);
  }
  if (parts_.onodes->journal_deltas() && (!tx->by_deltas.empty() || !tx->written.empty())) {
    // What a checkpoint may write of dirty objects, once this commits.
    std::vector<std::pair<ObjectKey, OnodeRef>> changed;
    for (const auto& key : tx->by_deltas) changed.emplace_back(key, tx->onodes.at(key));
    for (const auto& key : tx->written) changed.emplace_back(key, tx->onodes.at(key));
    work.on_committed = [onodes = parts_.onodes, changed = std::move(changed)](uint64_t seq) {
      for (const auto& [key, onode] : changed) onodes->committed_change(key, onode, seq);
    };
  }
  // The staged tiers' state rides in this batch, submitted under their
  // locks, so states commit in the order they were drained.
  TierSet::Drained state = parts_.tiers->drain_state(TierSpace::Drain::kCommit, work.batch.get());
  const uint64_t seq = parts_.committer->submit(std::move(work), caller_waits);
  state.queue_regions(deferred_);
  return seq;
}

void TxnPipeline::carry_ring_data(TxnContext* tx, CommitWork* work) {
  uint64_t bytes = work->batch->GetDataSize();
  for (const auto& p : tx->ring) bytes += p.data->size() + 128;
  if (bytes > parts_.committer->ring_work_room()) {
    // Too much for one record (or no journal): D records, as without the option.
    std::vector<uint64_t> seqs;
    for (const auto& p : tx->ring) seqs.push_back(p.seq);
    deferred_->record_instead(work->batch.get(), seqs);
    return;
  }
  uint64_t block = 0;
  for (auto& p : tx->ring) {
    JournalDelta d;
    d.kind = JournalDeltaKind::kRingData;
    d.staged = p.seq;
    d.tier = static_cast<uint8_t>(tier_index(p.tier));
    d.physical = p.physical;
    d.first_block = block;
    if (p.crcs.size() * kJournalBlock == p.data->size())
      d.crcs = std::move(p.crcs);
    else
      for (uint64_t off = 0; off < p.data->size(); off += kJournalBlock)
        d.crcs.push_back(crc32c(0, p.data->data() + off, kJournalBlock));
    block += d.crcs.size();
    work->ring_deltas.push_back(std::move(d));
    work->ring_data.push_back(std::move(p.data));
  }
}

void TxnPipeline::carry_onode_deltas(OpApplier* ap, TxnContext* tx, CommitWork* work) {
  const size_t had = work->ring_deltas.size();
  for (auto& d : tx->onode_deltas) work->ring_deltas.push_back(std::move(d));
  tx->onode_deltas.clear();
  if (parts_.committer->ring_work_room() && record_bytes_of(*work) <= parts_.committer->ring_work_room()) return;
  // No room in one record: the onodes the deltas alone would carry are put
  // after all; the others' puts in the batch say what the deltas say.
  work->ring_deltas.resize(had);
  if (tx->by_deltas.empty()) return;
  ap->put_instead_of_deltas(work->batch.get());
}

void TxnPipeline::publish(TxnContext* tx, uint64_t seq, const PerTier<int64_t>& home_delta) {
  for (auto& [key, onode] : tx->onodes) {
    const OnodeStore::Left how = tx->by_deltas.count(key) ? OnodeStore::Left::kByDeltas
                                 : tx->written.count(key) ? OnodeStore::Left::kPut
                                                          : OnodeStore::Left::kUnchanged;
    parts_.onodes->publish(key, onode, seq, how);
  }
  for (const auto& [c, ch] : tx->colls) {
    auto st = tx->locked.at(c);
    st->exists = ch.exists;
    st->bits = ch.bits;
  }
  for (auto& [c, st] : tx->locked) st->last_seq = seq;
  for (Tier t : parts_.tiers->ids()) {
    if (home_delta[t] > 0) perf_->set.inc(perf_->objects[t], static_cast<uint64_t>(home_delta[t]));
    if (home_delta[t] < 0) perf_->set.dec(perf_->objects[t], static_cast<uint64_t>(-home_delta[t]));
  }
}

void TxnPipeline::roll_back(const TxnContext& tx) {
  if (!tx.deferred.empty()) deferred_->cancel(tx.deferred);
  for (const auto& e : tx.allocated) parts_.tiers->release(e);
}

}  // namespace hybridstore
