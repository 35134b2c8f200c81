#include "crash_workload.h"

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "hscommon/crc32c.h"

namespace hybridstore::crashtest {

namespace {

constexpr int64_t kPool = 1;
constexpr int64_t kTempPool = -2 - kPool;  // Ceph's temp pool of pool 1
constexpr int64_t kScratchPool = 2;
const char* kTempColl = "1.0_TEMP";
constexpr int kScratchColls = 4;

std::string pg_name(uint32_t seed) { return fmt::format("1.{:x}_head", seed); }

bool is_pg(const std::string& name, uint32_t* seed) {
  int64_t pool;
  int shard;
  uint32_t s;
  if (!CollectionId(name).parse_pg(&pool, &s, &shard) || pool != kPool) return false;
  if (seed) *seed = s;
  return true;
}

bool is_scratch(const std::string& name) {
  int64_t pool;
  int shard;
  uint32_t s;
  return CollectionId(name).parse_pg(&pool, &s, &shard) && pool == kScratchPool;
}

}  // namespace

WorkloadGenerator::WorkloadGenerator(uint64_t seed, StoreModel base, WorkloadParams p)
    : rng_(seed), model_(std::move(base)), p_(p) {}

std::string WorkloadGenerator::bytes(size_t n) {
  std::string s(n, '\0');
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = rng_();
    std::memcpy(&s[i], &v, 8);
  }
  uint64_t v = rng_();
  for (; i < n; ++i, v >>= 8) s[i] = static_cast<char>(v);
  return s;
}

std::string WorkloadGenerator::pick_pg(const StoreModel& m) {
  std::vector<std::string> pgs;
  for (const auto& [name, c] : m.colls)
    if (is_pg(name, nullptr)) pgs.push_back(name);
  return pgs.empty() ? "" : pgs[below(pgs.size())];
}

ObjectId WorkloadGenerator::pick_name_for(const StoreModel& m, const std::string& coll) {
  uint32_t seed;
  if (is_pg(coll, &seed)) {
    // Objects live in the PG their hash selects, as in Ceph.
    const uint32_t bits = m.colls.at(coll).bits;
    std::vector<ObjectId> fits;
    for (int k = 0; k < p_.names_per_pool; ++k) {
      ObjectId o = ObjectId::from_name("obj" + std::to_string(k), kPool);
      if (o.matches(bits, seed)) fits.push_back(std::move(o));
    }
    if (!fits.empty()) return fits[below(fits.size())];
    // No name of the pool falls in this PG: any name will do.
    return ObjectId::from_name("obj-x" + std::to_string(below(8)), kPool);
  }
  if (coll == kTempColl) return ObjectId::from_name("temp" + std::to_string(below(16)), kTempPool);
  return ObjectId::from_name("s" + std::to_string(below(8)), kScratchPool);
}

const ObjectId* WorkloadGenerator::pick_existing(const StoreModel& m, const std::string& coll) {
  auto it = m.colls.find(coll);
  if (it == m.colls.end() || it->second.objects.empty()) return nullptr;
  auto o = it->second.objects.begin();
  std::advance(o, static_cast<long>(below(it->second.objects.size())));
  return &o->first;
}

bool WorkloadGenerator::try_op(Transaction* t, StoreModel* work, Op op) {
  // Ops built field by field get what Transaction's builders give them.
  op.enoent_ok = default_enoent_tolerated(op.code);
  if (op.code == OpCode::kWrite && op.scatter.segments.empty()) {
    op.scatter = ScatterData::of(std::move(op.data));
    op.data.clear();
  }
  std::string why;
  if (work->apply_op(op, &why) < 0) return false;
  t->mutable_ops().push_back(std::move(op));
  return true;
}

bool WorkloadGenerator::bootstrap(Transaction* t, StoreModel* work) {
  if (pick_pg(*work).empty()) {
    for (uint32_t s : {0u, 1u}) {
      Op op;
      op.code = OpCode::kMkColl;
      op.cid = pg_name(s);
      op.bits = 1;
      try_op(t, work, op);
    }
  }
  if (!work->colls.count(kTempColl)) {
    Op op;
    op.code = OpCode::kMkColl;
    op.cid = kTempColl;
    try_op(t, work, op);
  }
  return !t->empty();
}

// Long on purpose: one branch per op kind, chosen by weight; split, the weights would no longer read as one table.
void WorkloadGenerator::add_object_op(Transaction* t, StoreModel* work) {
  const std::string coll = pick_pg(*work);
  if (coll.empty()) return;
  const ObjectId* existing = pick_existing(*work, coll);
  ObjectId fresh = pick_name_for(*work, coll);
  const ObjectId& any = (existing && chance(0.7)) ? *existing : fresh;
  auto base = [&](OpCode code, const ObjectId& o) {
    Op op;
    op.code = code;
    op.cid = coll;
    op.oid = o;
    return op;
  };
  auto size_of = [&](const ObjectId& o) -> uint64_t {
    auto& objs = work->colls.at(coll).objects;
    auto it = objs.find(o);
    return it == objs.end() ? 0 : it->second->data.size();
  };
  auto length = [&]() -> uint64_t {
    switch (below(4)) {
      case 0: return 1 + below(4096);
      case 1: return 4096 * (1 + below(16));
      case 2: return 1 + below(p_.max_write);
      default: return 1 + below(512);
    }
  };
  const uint64_t w = below(100);
  if (w < 8 && existing && size_of(*existing) >= 4096) {
    // Whole 4 KiB blocks over an object's own data: what an RBD or RGW
    // client's small overwrites are, and the only writes whose data rides in
    // the commit journal's ring (hybridstore_small_write_journal = data).
    Op op = base(OpCode::kWrite, *existing);
    const uint64_t blocks = size_of(*existing) / 4096;
    op.off = 4096 * below(blocks);
    op.len = 4096 * (1 + below(std::min<uint64_t>(4, blocks - op.off / 4096)));
    op.data = bytes(op.len);
    try_op(t, work, std::move(op));
  } else if (w < 24) {  // write: append, overwrite or anywhere
    Op op = base(OpCode::kWrite, any);
    uint64_t len = std::min<uint64_t>(length(), p_.max_object_size / 2);
    uint64_t size = size_of(any);
    uint64_t room = p_.max_object_size - len;
    switch (below(3)) {
      case 0: op.off = std::min(size, room); break;
      case 1: op.off = size ? below(std::min(size, room + 1)) : 0; break;
      default: op.off = below(room + 1); break;
    }
    op.data = bytes(len);
    op.len = len;
    try_op(t, work, std::move(op));
  } else if (w < 30) {
    Op op = base(OpCode::kZero, any);
    uint64_t size = size_of(any);
    op.off = below(size + 4096);
    op.len = std::min<uint64_t>(length(), p_.max_object_size - op.off);
    try_op(t, work, std::move(op));
  } else if (w < 35) {
    Op op = base(OpCode::kTruncate, any);
    uint64_t size = size_of(any);
    op.off = chance(0.6) ? below(size + 1) : below(p_.max_object_size);
    try_op(t, work, std::move(op));
  } else if (w < 40) {
    if (!existing) return;
    Op op = base(OpCode::kClone, *existing);
    if (chance(0.5)) {
      op.dst_oid = *existing;  // a snapshot clone: same name and hash, another snap
      op.dst_oid.snap = 1 + below(4);
    } else {
      op.dst_oid = fresh;
    }
    try_op(t, work, std::move(op));
  } else if (w < 45) {
    if (!existing || size_of(*existing) == 0) return;
    Op op = base(OpCode::kCloneRange, *existing);
    uint64_t size = size_of(*existing);
    op.off = below(size);
    op.len = 1 + below(std::min<uint64_t>(size - op.off, 128 << 10));
    op.dst_oid = chance(0.3) ? *existing : fresh;
    op.dst_off = below(p_.max_object_size - op.len);
    try_op(t, work, std::move(op));
  } else if (w < 53) {
    Op op = base(OpCode::kOmapSetKeys, any);
    for (uint64_t i = 0, n = 1 + below(8); i < n; ++i) op.kv["k" + std::to_string(below(40))] = bytes(below(120));
    try_op(t, work, std::move(op));
  } else if (w < 57) {
    Op op = base(OpCode::kOmapRmKeys, any);
    for (uint64_t i = 0, n = 1 + below(4); i < n; ++i) op.keys.push_back("k" + std::to_string(below(40)));
    try_op(t, work, std::move(op));
  } else if (w < 59) {
    Op op = base(OpCode::kOmapRmKeyRange, any);
    op.name = "k" + std::to_string(below(40));
    op.name2 = "k" + std::to_string(below(40));
    try_op(t, work, std::move(op));
  } else if (w < 61) {
    try_op(t, work, base(OpCode::kOmapClear, any));
  } else if (w < 64) {
    Op op = base(OpCode::kOmapSetHeader, any);
    op.data = bytes(below(64));
    try_op(t, work, std::move(op));
  } else if (w < 71) {
    Op op = base(OpCode::kSetAttrs, any);
    for (uint64_t i = 0, n = 1 + below(3); i < n; ++i) op.kv["_a" + std::to_string(below(8))] = bytes(below(300));
    try_op(t, work, std::move(op));
  } else if (w < 74) {
    Op op = base(OpCode::kRmAttr, any);
    op.name = "_a" + std::to_string(below(8));
    try_op(t, work, std::move(op));
  } else if (w < 75) {
    try_op(t, work, base(OpCode::kRmAttrs, any));
  } else if (w < 79) {
    if (!existing) return;
    Op op = base(chance(0.8) ? OpCode::kCollMoveRename : OpCode::kTryRename, *existing);
    op.dst_cid = coll;
    op.dst_oid = fresh;
    try_op(t, work, std::move(op));  // refused by the model when fresh exists: not added
  } else if (w < 85) {
    try_op(t, work, base(OpCode::kRemove, any));
  } else if (w < 87) {
    try_op(t, work, base(chance(0.5) ? OpCode::kTouch : OpCode::kCreate, fresh));
  } else if (w < 90) {
    Op op = base(OpCode::kSetAllocHint, any);
    const uint64_t sizes[] = {0, 64 << 10, 4 << 20};
    op.expected_object_size = sizes[below(3)];
    op.expected_write_size = sizes[below(3)];
    const uint32_t flags[] = {0, kHintRandomWrite, kHintSequentialWrite, kHintAppendOnly};
    op.flags = flags[below(4)];
    try_op(t, work, std::move(op));
  } else if (w < 96) {
    // Ceph's temp objects: written in the temp collection, then moved into their PG.
    const ObjectId* tmp = pick_existing(*work, kTempColl);
    if (tmp && chance(0.6)) {
      Op op;
      op.code = OpCode::kCollMoveRename;
      op.cid = kTempColl;
      op.oid = *tmp;
      op.dst_cid = coll;
      op.dst_oid = fresh;
      try_op(t, work, std::move(op));
    } else {
      Op op;
      op.code = OpCode::kWrite;
      op.cid = kTempColl;
      op.oid = pick_name_for(*work, kTempColl);
      op.off = below(64 << 10);
      op.data = bytes(1 + below(32 << 10));
      op.len = op.data.size();
      try_op(t, work, std::move(op));
    }
  } else {
    // Scratch collections of pool 2: objects come and go with them.
    std::vector<std::string> scratch;
    for (const auto& [name, c] : work->colls)
      if (is_scratch(name)) scratch.push_back(name);
    if (scratch.empty()) return;
    Op op;
    op.code = OpCode::kWrite;
    op.cid = scratch[below(scratch.size())];
    op.oid = pick_name_for(*work, op.cid.name);
    op.off = below(16 << 10);
    op.data = bytes(1 + below(16 << 10));
    op.len = op.data.size();
    try_op(t, work, std::move(op));
  }
}

bool WorkloadGenerator::add_collection_op(Transaction* t, StoreModel* work) {
  switch (below(4)) {
    case 0: {  // split a PG in two
      std::string parent = pick_pg(*work);
      uint32_t seed;
      if (parent.empty() || !is_pg(parent, &seed)) return false;
      uint32_t bits = work->colls.at(parent).bits;
      if (bits >= p_.max_pg_bits) return false;
      uint32_t child = seed | (1u << bits);
      Op mk;
      mk.code = OpCode::kMkColl;
      mk.cid = pg_name(child);
      mk.bits = bits + 1;
      Op split;
      split.code = OpCode::kSplitCollection;
      split.cid = parent;
      split.bits = bits + 1;
      split.rem = child;
      split.dst_cid = pg_name(child);
      return try_op(t, work, mk) && try_op(t, work, split);
    }
    case 1: {  // merge a PG back into its parent
      std::string src = pick_pg(*work);
      uint32_t seed;
      if (src.empty() || !is_pg(src, &seed)) return false;
      uint32_t bits = work->colls.at(src).bits;
      if (bits < 2 || !(seed & (1u << (bits - 1)))) return false;
      std::string parent = pg_name(seed & ~(1u << (bits - 1)));
      auto it = work->colls.find(parent);
      if (it == work->colls.end() || it->second.bits != bits) return false;
      Op merge;
      merge.code = OpCode::kMergeCollection;
      merge.cid = src;
      merge.dst_cid = parent;
      merge.bits = bits - 1;
      return try_op(t, work, merge);
    }
    case 2: {  // a scratch collection and a few objects, in one transaction
      std::string name = fmt::format("2.{:x}_head", below(kScratchColls));
      Op mk;
      mk.code = OpCode::kMkColl;
      mk.cid = name;
      if (!try_op(t, work, mk)) return false;
      for (uint64_t i = 0, n = 1 + below(3); i < n; ++i) {
        Op w;
        w.code = OpCode::kWrite;
        w.cid = name;
        w.oid = pick_name_for(*work, name);
        w.data = bytes(1 + below(8 << 10));
        w.len = w.data.size();
        try_op(t, work, std::move(w));
      }
      return true;
    }
    default: {  // empty a scratch collection and remove it, in one transaction
      std::vector<std::string> scratch;
      for (const auto& [name, c] : work->colls)
        if (is_scratch(name)) scratch.push_back(name);
      if (scratch.empty()) return false;
      const std::string name = scratch[below(scratch.size())];
      std::vector<ObjectId> objs;
      for (const auto& [o, st] : work->colls.at(name).objects) objs.push_back(o);
      for (const auto& o : objs) {
        Op rm;
        rm.code = OpCode::kRemove;
        rm.cid = name;
        rm.oid = o;
        try_op(t, work, std::move(rm));
      }
      Op rmc;
      rmc.code = OpCode::kRmColl;
      rmc.cid = name;
      return try_op(t, work, rmc);
    }
  }
}

void WorkloadGenerator::add_failing_op(Transaction* t, const StoreModel& work) {
  const std::string coll = pick_pg(work);
  std::vector<Op> candidates;
  Op clone_missing;
  clone_missing.code = OpCode::kClone;
  clone_missing.cid = coll;
  clone_missing.oid = ObjectId::from_name("never-written-" + std::to_string(below(1000)), kPool);
  clone_missing.dst_oid = pick_name_for(work, coll);
  candidates.push_back(clone_missing);
  Op mk_existing;
  mk_existing.code = OpCode::kMkColl;
  mk_existing.cid = coll;
  candidates.push_back(mk_existing);
  Op attr_missing;
  attr_missing.code = OpCode::kSetAttrs;
  attr_missing.cid = coll;
  attr_missing.oid = clone_missing.oid;
  attr_missing.kv["_a0"] = "x";
  candidates.push_back(attr_missing);
  const auto& objs = work.colls.at(coll).objects;
  if (objs.size() >= 2) {
    Op onto;
    onto.code = OpCode::kCollMoveRename;
    onto.cid = coll;
    onto.oid = objs.begin()->first;
    onto.dst_cid = coll;
    onto.dst_oid = std::next(objs.begin())->first;
    candidates.push_back(onto);
    Op rmc;
    rmc.code = OpCode::kRmColl;
    rmc.cid = coll;
    candidates.push_back(rmc);
  }
  Op op = candidates[below(candidates.size())];
  StoreModel probe = work;
  std::string why;
  if (probe.apply_op(op, &why) == 0) op = mk_existing;  // always refused: the PG exists
  t->mutable_ops().push_back(std::move(op));
}

GeneratedTxn WorkloadGenerator::next() {
  GeneratedTxn g;
  StoreModel work = model_;
  if (!bootstrap(&g.txn, &work)) {
    if (!(chance(0.04) && add_collection_op(&g.txn, &work))) {
      g.txn = Transaction();
      work = model_;
      for (uint64_t i = 0, n = 1 + below(static_cast<uint64_t>(p_.max_ops)); i < n; ++i) add_object_op(&g.txn, &work);
      if (g.txn.empty()) g.txn.nop();
    }
    if (chance(p_.failing_ratio)) {
      add_failing_op(&g.txn, work);
      g.expect_failure = true;
      return g;
    }
  }
  model_ = std::move(work);
  g.number = ++number_;
  return g;
}

// ---------------------------------------------------------------- running

RunResult run_workload(HybridStore& store, WorkloadGenerator& gen, const RunOptions& o) {
  struct Acks {
    std::mutex m;
    std::condition_variable cv;
    uint64_t acked = 0;
  };
  auto acks = std::make_shared<Acks>();
  RunResult res;
  auto failed = [&](int r, const TxnError& e, const std::string& what) {
    if (r == -EROFS || r == -EIO || r == -ENOTCONN) {
      res.store_failed = true;
      res.message = fmt::format("{}: the store failed: {} ({})", what, e.message, strerror(-r));
    } else {
      res.mismatch = true;
      res.message = fmt::format("{}: op {} ({}) failed: {} ({}), the model accepts it", what, e.op_index, e.op,
                                e.message, strerror(-r));
    }
  };
  while (gen.generated() < o.max_txns && !(o.stop && o.stop->load())) {
    GeneratedTxn g = gen.next();
    if (g.expect_failure) {
      TxnError e;
      int r = store.queue_transaction(std::move(g.txn), &e);
      if (r == 0) {
        res.mismatch = true;
        res.message = fmt::format("after transaction {}: the store accepted a transaction the model rejects",
                                  gen.generated());
        break;
      }
      if (r == -EROFS || r == -EIO) {
        failed(r, e, "a transaction built to fail");
        break;
      }
      ++res.rejected_as_expected;
      continue;
    }
    const uint64_t n = g.number;
    // Bound what is queued but not yet durable.
    for (;;) {
      std::unique_lock<std::mutex> l(acks->m);
      if (n - 1 - acks->acked < static_cast<uint64_t>(o.max_inflight)) break;
      if (acks->cv.wait_for(l, std::chrono::milliseconds(200), [&] {
            return n - 1 - acks->acked < static_cast<uint64_t>(o.max_inflight);
          }))
        break;
      l.unlock();
      // No progress: either slow, or the store failed and nothing will come.
      if (int r = store.flush(); r < 0) {
        failed(r, TxnError{r, -1, -1, "", "flush"}, fmt::format("waiting to queue transaction {}", n));
        break;
      }
    }
    if (res.store_failed) break;
    if (o.on_submit) o.on_submit(n);
    g.txn.register_on_commit([acks, n, cb = o.on_ack] {
      {
        std::lock_guard<std::mutex> l(acks->m);
        acks->acked = std::max(acks->acked, n);
      }
      if (cb) cb(n);
      acks->cv.notify_all();
    });
    TxnError e;
    if (int r = store.queue_transaction(std::move(g.txn), &e); r < 0) {
      failed(r, e, fmt::format("transaction {}", n));
      break;
    }
    res.submitted = n;
  }
  if (!res.store_failed && !res.mismatch) {
    if (int r = store.flush(); r < 0) failed(r, TxnError{r, -1, -1, "", "flush"}, "final flush");
  }
  std::lock_guard<std::mutex> l(acks->m);
  res.acked = acks->acked;
  return res;
}

bool verify_prefix(const StoreModel& actual, uint64_t seed, const StoreModel& base, const WorkloadParams& p,
                   uint64_t acked, uint64_t submitted, uint64_t* matched, std::string* message) {
  WorkloadGenerator gen(seed, base, p);
  while (gen.generated() < acked) gen.next();
  const StoreModel at_acked = gen.model();
  for (;;) {
    if (diff_models(gen.model(), actual).empty()) {
      *matched = gen.generated();
      return true;
    }
    if (gen.generated() >= submitted) break;
    gen.next();
  }
  *message = fmt::format("the store matches no prefix of transactions {}..{}; against prefix {}: {}", acked,
                         submitted, acked, diff_models(at_acked, actual));
  return false;
}

std::string describe_op(const Op& op) {
  std::string s = fmt::format("{} {} {}", op_name(op.code), op.cid.name, op.oid.to_string());
  auto crc_of = [](std::string_view v) { return crc32c(v); };
  switch (op.code) {
    case OpCode::kWrite: {
      const std::string d = op.scatter.to_string();
      s += fmt::format(" off {} len {} crc {:08x}", op.off, d.size(), crc_of(d));
      break;
    }
    case OpCode::kZero: s += fmt::format(" off {} len {}", op.off, op.len); break;
    case OpCode::kTruncate: s += fmt::format(" size {}", op.off); break;
    case OpCode::kClone:
    case OpCode::kTryRename: s += " -> " + op.dst_oid.to_string(); break;
    case OpCode::kCloneRange:
      s += fmt::format(" off {} len {} -> {} off {}", op.off, op.len, op.dst_oid.to_string(), op.dst_off);
      break;
    case OpCode::kCollMoveRename: s += " -> " + op.dst_cid.name + " " + op.dst_oid.to_string(); break;
    case OpCode::kSetAttrs:
    case OpCode::kOmapSetKeys:
      s += " {";
      for (const auto& [k, v] : op.kv) s += fmt::format(" {}={:08x}", k, crc_of(v));
      s += " }";
      break;
    case OpCode::kOmapRmKeys:
      s += " {";
      for (const auto& k : op.keys) s += " " + k;
      s += " }";
      break;
    case OpCode::kRmAttr: s += " " + op.name; break;
    case OpCode::kOmapRmKeyRange: s += fmt::format(" [{}, {})", op.name, op.name2); break;
    case OpCode::kOmapSetHeader: s += fmt::format(" len {} crc {:08x}", op.data.size(), crc_of(op.data)); break;
    case OpCode::kMkColl:
    case OpCode::kCollSetBits: s += fmt::format(" bits {}", op.bits); break;
    case OpCode::kSplitCollection: s += fmt::format(" bits {} rem {} -> {}", op.bits, op.rem, op.dst_cid.name); break;
    case OpCode::kMergeCollection: s += fmt::format(" bits {} -> {}", op.bits, op.dst_cid.name); break;
    default: break;
  }
  return s;
}

bool dump_transactions(const std::string& path, uint64_t seed, const StoreModel& base, const WorkloadParams& p,
                       uint64_t last) {
  FILE* f = fopen(path.c_str(), "w");
  if (!f) return false;
  fprintf(f, "# workload seed %llu: transactions 1..%llu (F = built to fail, not counted)\n",
          static_cast<unsigned long long>(seed), static_cast<unsigned long long>(last));
  WorkloadGenerator gen(seed, base, p);
  while (gen.generated() < last) {
    GeneratedTxn g = gen.next();
    const std::string tag = g.expect_failure ? "F" : std::to_string(g.number);
    for (const Op& op : g.txn.ops()) fprintf(f, "%s %s\n", tag.c_str(), describe_op(op).c_str());
  }
  return fclose(f) == 0;
}

}  // namespace hybridstore::crashtest
