// The transaction path of the Ceph adapter: Ceph's ops decoded into the
// engine's, queued as one batch, and the completions delivered in each
// collection's order.
#include <sstream>

#include "common/Formatter.h"
#include "common/debug.h"
#include "common/errno.h"

#include "hybridstore/ceph/ceph_ids.h"
#include "hybridstore/ceph/hybrid_object_store.h"
#include "hybridstore/ceph/op_codes_check.h"
#include "hybridstore/ceph/op_policy.h"
#include "hybridstore/ceph/perf_bridge.h"

#define dout_context cct
#define dout_subsys ceph_subsys_hybridstore
#undef dout_prefix
#define dout_prefix *_dout << "hybridstore(" << path << ") "

namespace hybridstore::ceph_adapter {

void HybridObjectStore::deliver(Collection* c, std::list<Context*>& ls) {
  if (ls.empty()) return;
  if (ContextQueue* q = c ? c->commit_queue.load() : nullptr) q->queue(ls);
  else finisher_.queue(ls);
}

void HybridObjectStore::abort_transaction(std::vector<Transaction>& tls, const TxnError& err) {
  derr << "transaction failed: " << err.op << " (transaction " << err.txn_index << ", op " << err.op_index
       << "): " << err.message << " (" << cpp_strerror(err.code) << ")" << dendl;
  derr << "aborting before anything of it is applied; the transaction was:" << dendl;
  JSONFormatter f(true);
  f.open_array_section("transactions");
  for (auto& t : tls) {
    f.open_object_section("transaction");
    t.dump(&f);
    f.close_section();
  }
  f.close_section();
  std::ostringstream os;
  f.flush(os);
  derr << os.str() << dendl;
#if HS_CEPH_HAS_THROW_ON_FAILED_TXC
  // store_test asks the stores to throw the error instead (its cases that
  // expect a transaction to fail, e.g. removing a collection that is not
  // empty, catch it); nothing of the transaction was applied.
  if (cct->_conf.get_val<bool>("objectstore_debug_throw_on_failed_txc")) throw err.code;
#endif
  ceph_abort_msg("hybridstore: unexpected error in a transaction");
}

namespace {

// Exponentially weighted mean, for `ceph osd perf`.
void update_mean(std::atomic<uint64_t>* mean, uint64_t sample_ns) {
  uint64_t old = mean->load(std::memory_order_relaxed);
  uint64_t next = old == 0 ? sample_ns : (old * 7 + sample_ns) / 8;
  mean->store(next, std::memory_order_relaxed);
}

// Decodes one Ceph op into the engine's terms.
// An op's map or set of names, decoded from its own bytes: decoding it from
// the transaction's data directly first copies everything after it there
// (a write's whole payload, when the write follows) into one contiguous
// buffer, as Ceph's decoder does for a bufferlist that is not.
template <typename Map>
void decode_attr_map(ObjectStore::Transaction::iterator& i, Map& out) {
  ceph::buffer::list bl;
  i.decode_attrset_bl(&bl);
  auto p = bl.cbegin();
  ceph::decode(out, p);
}

void decode_name_set(ObjectStore::Transaction::iterator& i, std::set<std::string>& out) {
  ceph::buffer::list bl;
  i.decode_keyset_bl(&bl);
  auto p = bl.cbegin();
  ceph::decode(out, p);
}

// Long on purpose: one case per Ceph op code, each a few lines; split, the cases would scatter over files.
DecodedOp decode_op(ObjectStore::Transaction::iterator& i, const ObjectStore::Transaction::Op* op) {
  using CT = ObjectStore::Transaction;
  DecodedOp d;
  d.code = op->op;
  auto cid = [&] { return to_engine(i.get_cid(op->cid)); };
  auto oid = [&] { return to_engine(i.get_oid(op->oid)); };
  switch (op->op) {
    case CT::OP_NOP:
    case CT::OP_COLL_RENAME:
      break;
    case CT::OP_CREATE:
    case CT::OP_TOUCH:
    case CT::OP_REMOVE:
    case CT::OP_RMATTRS:
    case CT::OP_OMAP_CLEAR:
    case CT::OP_COLL_REMOVE:
      d.cid = cid();
      d.oid = oid();
      break;
    case CT::OP_WRITE: {
      d.cid = cid();
      d.oid = oid();
      d.off = op->off;
      auto owner = std::make_shared<ceph::buffer::list>();
      i.decode_bl(*owner);
      // The engine keeps the bufferlist's buffers, not a copy.
      for (const auto& p : owner->buffers())
        if (p.length()) d.data.segments.emplace_back(p.c_str(), p.length());
      d.data.owner = owner;
      break;
    }
    case CT::OP_ZERO:
    case CT::OP_TRIMCACHE:
      d.cid = cid();
      d.oid = oid();
      d.off = op->off;
      d.len = op->len;
      break;
    case CT::OP_TRUNCATE:
      d.cid = cid();
      d.oid = oid();
      d.off = op->off;
      break;
    case CT::OP_SETATTR: {
      d.cid = cid();
      d.oid = oid();
      d.name = i.decode_string();
      ceph::buffer::list bl;
      i.decode_bl(bl);
      d.blob = bl.to_str();
      break;
    }
    case CT::OP_SETATTRS:
    case CT::OP_OMAP_SETKEYS: {
      d.cid = cid();
      d.oid = oid();
      std::map<std::string, ceph::buffer::list> aset;
      decode_attr_map(i, aset);
      for (auto& [k, v] : aset) d.kv.emplace(k, v.to_str());
      break;
    }
    case CT::OP_RMATTR:
      d.cid = cid();
      d.oid = oid();
      d.name = i.decode_string();
      break;
    case CT::OP_CLONE:
      d.cid = cid();
      d.oid = oid();
      d.dest_oid = to_engine(i.get_oid(op->dest_oid));
      break;
    case CT::OP_CLONERANGE:
      d.cid = cid();
      d.oid = oid();
      d.dest_oid = to_engine(i.get_oid(op->dest_oid));
      d.off = op->off;
      d.len = op->len;
      break;
    case CT::OP_CLONERANGE2:
      d.cid = cid();
      d.oid = oid();
      d.dest_oid = to_engine(i.get_oid(op->dest_oid));
      d.off = op->off;
      d.len = op->len;
      d.dest_off = op->dest_off;
      break;
    case CT::OP_MKCOLL:
      d.cid = cid();
      d.bits = op->split_bits;
      break;
    case CT::OP_RMCOLL:
      d.cid = cid();
      break;
    case CT::OP_COLL_HINT: {
      // Advice only; its payload is decoded so the ops after it decode right.
      d.cid = cid();
      d.hint_type = op->hint;
      ceph::buffer::list hint;
      i.decode_bl(hint);
      break;
    }
    case CT::OP_COLL_SET_BITS:
      d.cid = cid();
      d.bits = op->split_bits;
      break;
    case CT::OP_COLL_ADD:
    case CT::OP_COLL_MOVE:
      d.cid = cid();
      d.dest_cid = to_engine(i.get_cid(op->dest_cid));
      d.oid = oid();
      break;
    case CT::OP_COLL_SETATTR: {
      d.cid = cid();
      d.name = i.decode_string();
      ceph::buffer::list bl;
      i.decode_bl(bl);
      break;
    }
    case CT::OP_COLL_RMATTR:
      d.cid = cid();
      d.name = i.decode_string();
      break;
    case CT::OP_COLL_SETATTRS: {
      d.cid = cid();
      std::map<std::string, ceph::buffer::ptr> aset;
      decode_attr_map(i, aset);
      break;
    }
    case CT::OP_OMAP_RMKEYS: {
      d.cid = cid();
      d.oid = oid();
      std::set<std::string> keys;
      decode_name_set(i, keys);
      d.keys.assign(keys.begin(), keys.end());
      break;
    }
    case CT::OP_OMAP_SETHEADER: {
      d.cid = cid();
      d.oid = oid();
      ceph::buffer::list bl;
      i.decode_bl(bl);
      d.blob = bl.to_str();
      break;
    }
    case CT::OP_SPLIT_COLLECTION:
    case CT::OP_SPLIT_COLLECTION2:
      d.cid = cid();
      d.bits = op->split_bits;
      d.rem = op->split_rem;
      d.dest_cid = to_engine(i.get_cid(op->dest_cid));
      break;
    case CT::OP_MERGE_COLLECTION:
      d.cid = cid();
      d.bits = op->split_bits;
      d.dest_cid = to_engine(i.get_cid(op->dest_cid));
      break;
    case CT::OP_OMAP_RMKEYRANGE:
      d.cid = cid();
      d.oid = oid();
      d.name = i.decode_string();
      d.name2 = i.decode_string();
      break;
    case CT::OP_COLL_MOVE_RENAME:
      d.cid = cid();
      d.oid = oid();
      d.dest_cid = to_engine(i.get_cid(op->dest_cid));
      d.dest_oid = to_engine(i.get_oid(op->dest_oid));
      break;
    case CT::OP_TRY_RENAME:
      d.cid = cid();
      d.oid = oid();
      d.dest_oid = to_engine(i.get_oid(op->dest_oid));
      break;
    case CT::OP_SETALLOCHINT:
      d.cid = cid();
      d.oid = oid();
      d.expected_object_size = op->expected_object_size;
      d.expected_write_size = op->expected_write_size;
      d.alloc_hint_flags = op->hint;
      break;
    default:
      break;  // translate_op refuses the unknown code
  }
  return d;
}

}  // namespace

int HybridObjectStore::queue_transactions(CollectionHandle& ch, std::vector<Transaction>& tls, TrackedOpRef op,
                                          ThreadPool::TPHandle* handle) {
  if (read_only_mount_) {
    derr << "queue_transactions: the store is mounted read-only" << dendl;
    return -EROFS;
  }
  const uint64_t t0 = perf_now_ns();
  auto* coll = static_cast<Collection*>(ch.get());
  std::list<Context*> on_applied, on_commit, on_applied_sync;
  Transaction::collect_contexts(tls, &on_applied, &on_commit, &on_applied_sync);
  if (tls.empty()) {
    for (Context* c : on_applied_sync) c->complete(0);
    deliver(coll, on_applied);
    deliver(coll, on_commit);
    return 0;
  }

  std::vector<hybridstore::Transaction> ets(tls.size());
  std::vector<CollectionId> created, removed;
  for (size_t ti = 0; ti < tls.size(); ++ti) {
    auto& t = tls[ti];
    const uint32_t fadvise = t.get_fadvise_flags();
    auto it = t.begin();
    int op_index = 0;
    while (it.have_op()) {
      Transaction::Op* cop = it.decode_op();
      DecodedOp d = decode_op(it, cop);
      if (cop->op == Transaction::OP_REMOVE) debug_forget(d.oid);
      if (cop->op == Transaction::OP_COLL_MOVE_RENAME || cop->op == Transaction::OP_TRY_RENAME)
        debug_forget(d.dest_oid);
      if (cop->op == Transaction::OP_MKCOLL) created.push_back(d.cid);
      if (cop->op == Transaction::OP_RMCOLL) removed.push_back(d.cid);
      if (cop->op == Transaction::OP_MERGE_COLLECTION) removed.push_back(d.cid);
      std::string why;
      if (int r = translate_op(std::move(d), fadvise, &ets[ti], &why); r < 0) {
        const OpRule* rule = find_op_rule(cop->op);
        abort_transaction(tls, TxnError{r, static_cast<int>(ti), op_index, rule ? rule->name : "unknown", why});
      }
      ++op_index;
    }
  }

  // Durable: deliver on_commit in the collection's order, and time it.
  ets.back().register_on_commit([this, c = CollectionRef(coll), on_commit, t0, op]() mutable {
    const uint64_t lat = perf_now_ns() - t0;
    logger_->tinc(l_hs_commit_lat, ceph::make_timespan(lat / 1e9));
    update_mean(&commit_lat_ns_, lat);
    if (op) op->mark_event("hybridstore_committed");
    deliver(c.get(), on_commit);
  });

  if (handle) handle->suspend_tp_timeout();
  TxnError err;
  int r = engine_->queue_transactions(std::move(ets), &err);
  if (handle) handle->reset_tp_timeout();
  if (r < 0) abort_transaction(tls, err);

  if (!created.empty() || !removed.empty()) {
    std::unique_lock l{coll_lock_};
    for (const auto& c : removed) {
      coll_t cid;
      if (to_ceph(c, &cid)) coll_map_.erase(cid);
    }
    for (const auto& c : created) {
      coll_t cid;
      if (!to_ceph(c, &cid)) continue;
      auto it = new_coll_map_.find(cid);
      if (it != new_coll_map_.end()) {
        coll_map_[cid] = it->second;
        new_coll_map_.erase(it);
      } else if (!coll_map_.count(cid)) {
        coll_map_[cid] = ceph::make_ref<Collection>(this, cid);
      }
    }
  }

  const uint64_t lat = perf_now_ns() - t0;
  logger_->tinc(l_hs_apply_lat, ceph::make_timespan(lat / 1e9));
  logger_->inc(l_hs_queue_txns, tls.size());
  update_mean(&apply_lat_ns_, lat);
  // Visible now: on_applied_sync runs here, on_applied never under the
  // caller's locks.
  for (Context* c : on_applied_sync) c->complete(0);
  deliver(coll, on_applied);
  return 0;
}

}  // namespace hybridstore::ceph_adapter
