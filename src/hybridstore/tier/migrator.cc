#include "hybridstore/tier/migrator.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>

#include "hscommon/log.h"
#include "hybridstore/kv/kv_schema.h"
#include "hybridstore/tier/heat_tracker.h"

namespace hybridstore {

namespace {
double now_sec() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
constexpr int kMaxRetries = 3;
}  // namespace

Migrator::Migrator(Store* store, const Config& cfg)
    : store_(store),
      interval_us_(static_cast<uint64_t>(cfg.get_int("hybridstore_tier_migrate_interval_sec")) * 1000000),
      idle_ops_(static_cast<uint64_t>(cfg.get_int("hybridstore_tier_migrate_idle_ops"))),
      idle_us_(static_cast<uint64_t>(cfg.get_int("hybridstore_tier_migrate_idle_sec")) * 1000000),
      bandwidth_(cfg.get_size("hybridstore_tier_migrate_bandwidth")),
      persist_us_(static_cast<uint64_t>(cfg.get_int("hybridstore_tier_heat_persist_interval_sec")) * 1000000),
      ssd_target_ratio_(cfg.get_double("hybridstore_tier_ssd_target_ratio")),
      min_accesses_(static_cast<double>(cfg.get_int("hybridstore_tier_promote_min_accesses"))),
      break_even_(cfg.get_size("hybridstore_tier_promote_break_even")) {
  parse_tier_policy(cfg.get_str("hybridstore_tier_policy"), &policy_);
}

Migrator::~Migrator() { stop(); }

void Migrator::start() { thread_ = std::thread([this] { run(); }); }

void Migrator::stop() {
  {
    std::lock_guard<std::mutex> l(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Migrator::throttle(uint64_t bytes, double started) {
  if (!bandwidth_) return;
  double due = started + static_cast<double>(bytes) / static_cast<double>(bandwidth_);
  double wait = due - now_sec();
  if (wait <= 0) return;
  std::unique_lock<std::mutex> l(mutex_);
  cv_.wait_for(l, std::chrono::duration<double>(wait), [&] { return stopping_; });
}

namespace {
// The rank of the tier an object lives on, from rank `from` on; -1 when it
// holds no data there.
int home_rank(const ObjectStat& s, const TierOrder& order, int from = 0) { return order.heaviest(s.bytes_on, from); }

// The rank of the slower tier an object holding absorbed writes on the
// fastest tier lives on: one below the fastest holding at least as many of
// its bytes (the most, the faster on a tie); -1 when there is none.
int absorbed_home(const ObjectStat& s, const TierOrder& order) {
  const uint64_t on_fastest = s.bytes_on[order.fastest()];
  if (!on_fastest) return -1;
  const int lower = home_rank(s, order, 1);
  return lower > 0 && s.bytes_on[order[lower]] >= on_fastest ? lower : -1;
}
}  // namespace

struct Migrator::Pass {
  struct Obj {
    CollectionId c;
    ObjectId o;
    int home;  // rank
    TierCandidate heat;
  };
  MigrationReport* rep;
  double t0;
  TierOrder order;
  uint64_t fast_total = 0, fast_unit = 0;
  std::vector<Obj> objs;
  uint64_t absorbed_bytes = 0;  // fastest-tier bytes of objects that live on another tier
  std::vector<bool> moved;
  uint64_t arrived[kMaxTiers] = {};  // bytes moved onto each rank by this pass
  uint64_t left[kMaxTiers] = {};     // bytes moved off each rank by this pass
  // Bounded pass (hybridstore_tier_plan_max_candidates > 0, docs/memory.md):
  // one planner per pair of neighbouring ranks, fed by the scan; `objs` is a
  // slab holding only the objects some planner keeps (refs: how many of the
  // planners' sets hold a slot; a slot at 0 is reused).
  bool bounded = false;
  std::vector<std::unique_ptr<BoundedPlanner>> planners;
  std::vector<uint64_t> on_upper;  // per pair: weight on its faster tier, every object
  std::vector<uint32_t> refs;
  std::vector<size_t> free_slots;
  size_t slot_for(Obj obj) {
    if (!free_slots.empty()) {
      size_t i = free_slots.back();
      free_slots.pop_back();
      objs[i] = std::move(obj);
      return i;
    }
    objs.push_back(std::move(obj));
    refs.push_back(0);
    return objs.size() - 1;
  }
  void release(size_t i) {
    if (--refs[i] == 0) free_slots.push_back(i);
  }
  // The objects held and their bytes, names out of line not included.
  std::pair<uint64_t, uint64_t> memory() const {
    uint64_t bytes = objs.capacity() * sizeof(Obj) + refs.capacity() * sizeof(uint32_t) +
                     free_slots.capacity() * sizeof(size_t) + moved.capacity() / 8;
    for (const auto& bp : planners) bytes += bp->memory_bytes();
    return {objs.size() - free_slots.size(), bytes};
  }
};

int Migrator::run_once(MigrationReport* rep) {
  std::lock_guard<std::mutex> lock(pass_mutex_);
  *rep = MigrationReport();
  rep->policy = tier_policy_name(policy_);
  Pass pass;
  struct PlanMemoryCleared {
    Store* store;
    ~PlanMemoryCleared() { store->note_plan_memory(0, 0); }
  } cleared{store_};
  pass.rep = rep;
  pass.t0 = now_sec();
  pass.order = store_->tier_order();
  uint64_t fast_free = 0;
  if (int r = store_->tier_space(pass.order.fastest(), &pass.fast_total, &pass.fast_unit, &fast_free); r < 0)
    return r;
  rep->ssd_budget = planner_options_from_config(store_->config(), pass.fast_total, pass.fast_unit).ssd_budget;
  if (policy_ == TierPolicy::kNone) return 0;
  if (int r = scan(&pass); r < 0) return r;
  for (int upper = 0; upper + 1 < pass.order.count(); ++upper) {
    {
      std::lock_guard<std::mutex> l(mutex_);
      if (stopping_) break;
    }
    if (int r = plan_pair(&pass, upper); r < 0) return r;
  }
  rep->seconds = now_sec() - pass.t0;
  store_->on_pass(*rep);
  HS_INFO("migration ({}): {} objects, {} promoted, {} demoted, {} skipped, {} moved in {:.1f} s", rep->policy,
          rep->objects, rep->promoted, rep->demoted, rep->skipped, rep->bytes_moved, rep->seconds);
  return 0;
}

int Migrator::scan(Pass* pass) {
  HeatTracker* heat = store_->heat();
  std::vector<std::pair<CollectionId, ObjectId>> mixed;
  const Config& cfg = store_->config();
  const size_t max_candidates = plan_max_candidates(cfg);
  pass->bounded = max_candidates > 0;
  bool heat_on_disk = heat->options().on_demand;
  if (pass->bounded) {
    for (int upper = 0; upper + 1 < pass->order.count(); ++upper) {
      // The budget is set when the pair is planned (it depends on what the
      // scan and the faster pairs leave); the kept sets do not depend on it.
      PlannerOptions po = planner_options_from_config(cfg, 0, pass->fast_unit);
      auto bp = std::make_unique<BoundedPlanner>(po);
      bp->set_on_drop([pass](uint64_t slot) { pass->release(static_cast<size_t>(slot)); });
      pass->planners.push_back(std::move(bp));
    }
    pass->on_upper.assign(pass->planners.size(), 0);
  }
  size_t offered = 0;
  auto offer = [&](const CollectionId& c, const ObjectId& o, const ObjectStat& s, const HeatSample* merged) {
    if (!s.allocated) return;  // nothing to place
    const int home = home_rank(s, pass->order);
    if (home < 0) return;
    if (absorbed_home(s, pass->order) > 0) {
      mixed.emplace_back(c, o);
      pass->absorbed_bytes += s.bytes_on[pass->order.fastest()];
    }
    TierCandidate cand;
    cand.size = s.allocated;
    HeatSample h;
    if (merged) {
      cand.frequency = merged->frequency;
      cand.randomness = merged->randomness;
      cand.last_access_us = merged->last_time_us;
    } else if (!heat_on_disk && heat->lookup(kv::onode_key(c, o), &h)) {
      cand.frequency = h.frequency;
      cand.randomness = h.randomness;
      cand.last_access_us = h.last_time_us;
    }
    if (++offered % 4096 == 0) {
      const auto [items, bytes] = pass->memory();
      store_->note_plan_memory(items, bytes);
    }
    if (!pass->bounded) {
      pass->objs.push_back({c, o, home, cand});
      return;
    }
    // Offered to the pair it is the faster tier of, and to the pair it is
    // the slower tier of, as plan_pair would see it.
    const size_t slot = pass->slot_for({c, o, home, cand});
    unsigned kept = 0;
    for (int upper : {home, home - 1}) {
      if (upper < 0 || upper + 1 >= pass->order.count()) continue;
      TierCandidate pc = candidate_for_pair(cand, upper == home);
      BoundedPlanner* bp = pass->planners[static_cast<size_t>(upper)].get();
      if (pc.on_ssd) pass->on_upper[static_cast<size_t>(upper)] += knapsack_weight(pc.size, pass->fast_unit);
      pass->refs[slot] += 1;  // held while offered, so a drop during the offer cannot free it
      kept += bp->offer(pc, slot);
      pass->refs[slot] -= 1;
    }
    pass->refs[slot] += kept;
    if (pass->refs[slot] == 0) pass->free_slots.push_back(slot);
  };
  auto offer_stat = [&](const CollectionId& c, const ObjectId& o, const ObjectStat& s) { offer(c, o, s, nullptr); };
  // With the heat in RocksDB the scan reads it with the onodes, bounded pass
  // or not. The bounded pass keeps only what its planners keep, so its scan
  // must not keep every object either (the moves look the kept ones up again).
  int r = heat_on_disk ? store_->scan_objects_heat(offer) : -EOPNOTSUPP;
  if (r == -EOPNOTSUPP) {
    heat_on_disk = false;
    r = pass->bounded ? store_->scan_objects(offer_stat) : store_->for_each_object(offer_stat);
  }
  if (r < 0) return r;
  for (const auto& [c, o] : mixed) note_absorbed(c, o);
  pass->rep->objects = offered;
  pass->moved.assign(pass->objs.size(), false);
  const auto [items, bytes] = pass->memory();
  store_->note_plan_memory(items, bytes);
  // Later accesses count in a new window; the plans use this one.
  heat->advance_to(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                              std::chrono::system_clock::now().time_since_epoch())
                                              .count()));
  return 0;
}

void Migrator::move(Pass* pass, size_t idx, int to_rank, bool up) {
  MigrationReport* rep = pass->rep;
  const Pass::Obj& obj = pass->objs[idx];
  for (int attempt = 0; attempt <= kMaxRetries; ++attempt) {
    {
      std::lock_guard<std::mutex> l(mutex_);
      if (stopping_) return;
    }
    int m = store_->migrate(obj.c, obj.o, pass->order[to_rank]);
    if (m == -EAGAIN) {
      ++rep->retries;
      continue;
    }
    if (m == 0) {
      (up ? rep->promoted : rep->demoted) += 1;
      rep->bytes_moved += obj.heat.size;
      pass->moved[idx] = true;
      pass->arrived[to_rank] += obj.heat.size;
      if (obj.home >= 0) pass->left[obj.home] += obj.heat.size;
      throttle(rep->bytes_moved, pass->t0);
    } else {
      ++rep->skipped;
      HS_DEBUG("migration of {} to {} skipped: {}", obj.o.to_string(), tier_name(pass->order[to_rank]),
               strerror(-m));
    }
    return;
  }
  ++rep->skipped;
}

TierCandidate Migrator::candidate_for_pair(const TierCandidate& heat, bool on_faster) const {
  TierCandidate cand = heat;
  cand.on_ssd = on_faster;
  // Written once and not read since is not heat: filling the faster
  // tier's budget with such objects (a pass soon after an RBD image was
  // written) costs the slower tier a copy each and takes the room small
  // writes need.
  if (!cand.on_ssd && cand.frequency < min_accesses_) cand.frequency = 0;
  // A pass that copied every 4 MiB object rados bench had just read once
  // in order took 15% of the HDD's time from the reads that followed.
  if (!cand.on_ssd && !random_requests_pay_for_copy(cand.randomness, cand.size, break_even_))
    cand.frequency = 0;
  return cand;
}

// The pair of ranks upper and upper + 1: the faster tier of the pair plays
// the SSD, the slower the HDD.
int Migrator::plan_pair(Pass* pass, int upper) {
  uint64_t total = 0, unit = 0, free = 0;
  if (upper == 0) {
    total = pass->fast_total, unit = pass->fast_unit;
  } else if (int e = store_->tier_space(pass->order[upper], &total, &unit, &free); e < 0) {
    return e;
  }
  PlannerOptions po = planner_options_from_config(store_->config(), total, unit);
  // Absorbed small writes hold fastest-tier space the plan cannot move
  // (write-back does, when the tier runs full): a plan that filled the
  // whole budget regardless would push the tier over its target at the
  // next absorbed write, and promotion and write-back would take turns.
  // Objects this pass already moved onto the tier hold room the same way.
  po.ssd_budget -= std::min(po.ssd_budget, (upper == 0 ? pass->absorbed_bytes : 0) + pass->arrived[upper]);
  if (upper == 0) pass->rep->ssd_budget = po.ssd_budget;
  std::vector<size_t> idx;
  std::vector<TierCandidate> cands;
  uint64_t on_upper = 0;
  if (pass->bounded) {
    // The kept objects; those a faster pair moved meanwhile are left out,
    // as below (they were planned with the rest, which only matters with
    // three tiers or more). On the faster tier: every object the scan
    // offered there, less what this pass moved off it.
    std::vector<uint64_t> ids;
    std::vector<TierCandidate> kept;
    pass->planners[static_cast<size_t>(upper)]->take(&kept, &ids);
    for (size_t k = 0; k < ids.size(); ++k) {
      if (pass->moved[ids[k]]) continue;
      idx.push_back(static_cast<size_t>(ids[k]));
      cands.push_back(kept[k]);
    }
    on_upper = pass->on_upper[static_cast<size_t>(upper)];
    on_upper -= std::min(on_upper, pass->left[upper]);
  } else {
    for (size_t i = 0; i < pass->objs.size(); ++i) {
      const Pass::Obj& obj = pass->objs[i];
      if (pass->moved[i] || (obj.home != upper && obj.home != upper + 1)) continue;
      idx.push_back(i);
      cands.push_back(candidate_for_pair(obj.heat, obj.home == upper));
    }
    for (const auto& c : cands)
      if (c.on_ssd) on_upper += knapsack_weight(c.size, po.alloc_unit);
  }
  if (cands.empty()) return 0;
  TierPlan plan = plan_tiers(cands, po);
  // Demote only what the promotions need room for, coldest first: the
  // planner leaves out objects of no benefit even when the faster tier
  // has space for them, and moving those down would be I/O for nothing.
  // Demote first: it makes the room the promotions need.
  uint64_t after = on_upper + plan.promote_bytes;
  std::vector<size_t> demote = plan.demote;
  std::sort(demote.begin(), demote.end(), [&](size_t a, size_t b) {
    return policy_score(policy_, cands[a], po.alloc_unit) < policy_score(policy_, cands[b], po.alloc_unit);
  });
  for (size_t i : demote) {
    if (after <= po.ssd_budget) break;
    move(pass, idx[i], upper + 1, false);
    after -= std::min(after, knapsack_weight(cands[i].size, po.alloc_unit));
  }
  for (size_t i : plan.promote) move(pass, idx[i], upper, true);
  return 0;
}

void Migrator::request_promotion(const CollectionId& c, const ObjectId& o, uint64_t bytes) {
  // Bounded: a scan reading every object of an HDD full of small ones must
  // not grow this without limit; the dropped ones come back on later reads.
  constexpr size_t kMaxQueued = 4096;
  std::string key = kv::onode_key(c, o);
  {
    std::lock_guard<std::mutex> l(mutex_);
    if (stopping_ || promote_queued_keys_.count(key)) return;
    if (promote_queue_.size() >= kMaxQueued) {
      ++promotion_stats_.dropped;
      return;
    }
    promote_queued_keys_.insert(std::move(key));
    promote_queue_.push_back({c, o, bytes});
    ++promotion_stats_.requested;
  }
  cv_.notify_all();
}

Migrator::PromotionStats Migrator::promotion_stats() const {
  std::lock_guard<std::mutex> l(const_cast<std::mutex&>(mutex_));
  return promotion_stats_;
}

size_t Migrator::promote_queued() {
  std::lock_guard<std::mutex> pass(pass_mutex_);
  std::vector<PendingPromotion> batch;
  {
    std::lock_guard<std::mutex> l(mutex_);
    batch.swap(promote_queue_);
    promote_queued_keys_.clear();
  }
  if (batch.empty() || policy_ == TierPolicy::kNone) return 0;
  const TierOrder order = store_->tier_order();
  // Promotions may use a tier down to the share kept free for new writes;
  // each tier's room is read once per batch, when first needed.
  uint64_t room[kMaxTiers], unit[kMaxTiers];
  bool known[kMaxTiers] = {};
  const double t0 = now_sec();
  uint64_t moved = 0;
  size_t promoted = 0;
  PromotionStats delta;
  for (const PendingPromotion& p : batch) {
    {
      std::lock_guard<std::mutex> l(mutex_);
      if (stopping_) break;
    }
    // One step up from where the object lives now.
    ObjectStat st;
    const int home = store_->stat(p.c, p.o, &st) == 0 ? home_rank(st, order) : -1;
    if (home <= 0) {  // gone, empty, or already on the fastest tier
      ++delta.skipped;
      continue;
    }
    const int to = home - 1;
    if (!known[to]) {
      uint64_t total = 0, free = 0;
      if (store_->tier_space(order[to], &total, &unit[to], &free) < 0) break;
      const uint64_t keep_free = static_cast<uint64_t>(static_cast<double>(total) * (1.0 - ssd_target_ratio_));
      room[to] = free > keep_free ? free - keep_free : 0;
      known[to] = true;
    }
    const uint64_t need = knapsack_weight(p.bytes, unit[to] ? unit[to] : 4096);
    if (need > room[to]) {
      ++delta.no_room;
      continue;
    }
    int r = -EAGAIN;
    for (int attempt = 0; attempt <= kMaxRetries && r == -EAGAIN; ++attempt)
      r = store_->migrate(p.c, p.o, order[to]);
    if (r == 0) {
      room[to] -= need;
      moved += p.bytes;
      ++promoted;
      ++delta.promoted;
      delta.bytes += p.bytes;
      throttle(moved, t0);
    } else {
      ++delta.failed;
      HS_DEBUG("promotion of {} skipped: {}", p.o.to_string(), strerror(-r));
    }
  }
  {
    std::lock_guard<std::mutex> l(mutex_);
    promotion_stats_.promoted += delta.promoted;
    promotion_stats_.bytes += delta.bytes;
    promotion_stats_.no_room += delta.no_room;
    promotion_stats_.failed += delta.failed;
    promotion_stats_.skipped += delta.skipped;
  }
  if (promoted) {
    MigrationReport rep;
    rep.promoted = promoted;
    rep.bytes_moved = moved;
    rep.seconds = now_sec() - t0;
    rep.policy = "promote-on-read";
    store_->on_promotions(rep);
  }
  return promoted;
}

void Migrator::note_absorbed(const CollectionId& c, const ObjectId& o) {
  // Bounded like the promotion queue; a pass's scan finds what was dropped.
  constexpr size_t kMaxAbsorbed = 1 << 18;
  std::string key = kv::onode_key(c, o);
  std::lock_guard<std::mutex> l(mutex_);
  if (absorbed_.size() >= kMaxAbsorbed && !absorbed_.count(key)) return;
  absorbed_.emplace(std::move(key), std::make_pair(c, o));
}

size_t Migrator::absorbed_count() const {
  std::lock_guard<std::mutex> l(const_cast<std::mutex&>(mutex_));
  return absorbed_.size();
}

size_t Migrator::destage(bool all) {
  std::lock_guard<std::mutex> pass(pass_mutex_);
  std::vector<std::pair<std::string, std::pair<CollectionId, ObjectId>>> objs;
  {
    std::lock_guard<std::mutex> l(mutex_);
    if (absorbed_.empty()) return 0;
    objs.assign(absorbed_.begin(), absorbed_.end());
  }
  const TierOrder order = store_->tier_order();
  const Tier fastest = order.fastest();
  uint64_t total = 0, unit = 0, free = 0;
  if (store_->tier_space(fastest, &total, &unit, &free) < 0) return 0;
  const uint64_t keep_free = static_cast<uint64_t>(static_cast<double>(total) * (1.0 - ssd_target_ratio_));
  if (!all && free >= keep_free) return 0;
  // Coldest first: what is written back is what will not be read or
  // overwritten soon.
  HeatTracker* heat = store_->heat();
  std::vector<std::pair<double, size_t>> by_heat;
  by_heat.reserve(objs.size());
  for (size_t i = 0; i < objs.size(); ++i) {
    HeatSample h;
    by_heat.push_back({heat->lookup(objs[i].first, &h) ? h.frequency : 0.0, i});
  }
  std::sort(by_heat.begin(), by_heat.end());
  const double t0 = now_sec();
  MigrationReport rep;
  rep.policy = "destage";
  for (const auto& [f, i] : by_heat) {
    {
      std::lock_guard<std::mutex> l(mutex_);
      if (stopping_) break;
    }
    if (!all && free >= keep_free) break;
    const auto& [c, o] = objs[i].second;
    ObjectStat st;
    // Still holding absorbed blocks on the fastest tier while it lives on another.
    const int home = store_->stat(c, o, &st) == 0 ? absorbed_home(st, order) : -1;
    const bool mixed = home > 0;
    int r = 0;
    if (mixed) {
      r = -EAGAIN;
      for (int attempt = 0; attempt <= kMaxRetries && r == -EAGAIN; ++attempt)
        r = store_->migrate(c, o, order[home]);
      if (r == 0) {
        ++rep.demoted;
        rep.bytes_moved += st.bytes_on[fastest];  // what moved: the absorbed part
        free += st.bytes_on[fastest];
        throttle(rep.bytes_moved, t0);
      } else {
        ++rep.skipped;
      }
    }
    if (r == 0 || !mixed) {
      // Written back, gone, or whole on one tier by now (promoted, rewritten).
      std::lock_guard<std::mutex> l(mutex_);
      absorbed_.erase(objs[i].first);
    }
  }
  rep.seconds = now_sec() - t0;
  if (rep.demoted) {
    store_->on_destage(rep);
    HS_INFO("destage: {} objects with absorbed writes written back to their tiers ({} bytes) in {:.1f} s",
            rep.demoted, rep.bytes_moved, rep.seconds);
  }
  return rep.demoted;
}

void Migrator::run() {
  double last_pass = now_sec(), last_persist = now_sec(), last_tick = now_sec();
  double idle_since = 0;
  bool idle_pass_done = false;
  uint64_t last_ops = ops_.load();
  std::unique_lock<std::mutex> l(mutex_);
  while (!stopping_) {
    cv_.wait_for(l, std::chrono::seconds(1), [&] { return stopping_ || !promote_queue_.empty(); });
    if (stopping_) break;
    const bool promotions = !promote_queue_.empty();
    l.unlock();
    if (promotions) promote_queued();
    double now = now_sec();
    if (now - last_tick < 1.0) {
      l.lock();
      continue;  // woken for promotions: the once-a-second chores are not due
    }
    uint64_t ops = ops_.load();
    double rate = static_cast<double>(ops - last_ops) / std::max(1e-3, now - last_tick);
    last_ops = ops;
    last_tick = now;
    bool idle = idle_ops_ && rate < static_cast<double>(idle_ops_);
    if (!idle) {
      idle_since = 0;
      idle_pass_done = false;
    } else if (idle_since == 0) {
      idle_since = now;
    }
    bool periodic = interval_us_ && (now - last_pass) * 1e6 >= static_cast<double>(interval_us_);
    bool idle_due = idle && !idle_pass_done && (now - idle_since) * 1e6 >= static_cast<double>(idle_us_);
    if (periodic || idle_due) {
      MigrationReport rep;
      run_once(&rep);
      last_pass = now_sec();
      idle_pass_done = idle_due || idle_pass_done;
    }
    store_->tick();
    destage();
    if (persist_us_ && (now - last_persist) * 1e6 >= static_cast<double>(persist_us_)) {
      store_->save_heat();
      last_persist = now;
    }
    l.lock();
  }
}

}  // namespace hybridstore
