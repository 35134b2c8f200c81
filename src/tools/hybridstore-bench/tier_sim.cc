#include "tier_sim.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace hybridstore::bench {

void TierCounters::add(const TierCounters& o) {
  reads += o.reads;
  writes += o.writes;
  meta_ops += o.meta_ops;
  read_bytes += o.read_bytes;
  write_bytes += o.write_bytes;
  read_ns += o.read_ns;
  write_ns += o.write_ns;
  meta_ns += o.meta_ns;
  readahead_hits += o.readahead_hits;
  ssd_requests += o.ssd_requests;
  hdd_ios += o.hdd_ios;
  hdd_random_ios += o.hdd_random_ios;
  hdd_seek_bytes += o.hdd_seek_bytes;
  hdd_ns += o.hdd_ns;
  ssd_ios += o.ssd_ios;
  ssd_ns += o.ssd_ns;
  promoted += o.promoted;
  demoted += o.demoted;
  migrated_bytes += o.migrated_bytes;
  migration_ns += o.migration_ns;
}

double TierCounters::bandwidth_mbps() const {
  uint64_t ns = foreground_ns();
  return ns ? static_cast<double>(read_bytes + write_bytes) / static_cast<double>(ns) * 1e3 : 0;
}
double TierCounters::mean_read_ms() const {
  return reads ? static_cast<double>(read_ns) / static_cast<double>(reads) / 1e6 : 0;
}
double TierCounters::mean_write_ms() const {
  return writes ? static_cast<double>(write_ns) / static_cast<double>(writes) / 1e6 : 0;
}
double TierCounters::mean_hdd_seek_mib() const {
  return hdd_ios ? static_cast<double>(hdd_seek_bytes) / static_cast<double>(hdd_ios) / 1048576.0
                 : 0;
}

namespace {

struct Object {
  uint64_t size = 0;
  uint64_t hdd_addr = 0;
  uint64_t ssd_addr = 0;
  bool on_ssd = false;
  // Readahead state (object offsets): [ra_begin, ra_end) is in memory.
  uint64_t ra_begin = 0, ra_end = 0, ra_next = 0;
  uint64_t ra_window = 0;
};

// A dirty extent in the write-back cache, in device addresses.
struct Dirty {
  uint32_t object;
  bool ssd;
  uint64_t addr_begin, addr_end;
  uint64_t obj_end;  // object offset where a continuing write would start
};

class Simulation {
 public:
  Simulation(const WorkloadProfile& profile, const WorkloadOptions& wopts, const TierSimConfig& cfg)
      : cfg_(cfg), gen_(profile, wopts), heat_(heat_options(cfg, gen_.object_sizes().size())) {
    if (cfg.heat_hot_set > 0) {
      heat_.set_spill([this](std::vector<HeatOp>&& ops) {
        for (const auto& op : ops) store_op(op);
      });
    }
    const auto& sizes = gen_.object_sizes();
    objects_.resize(sizes.size());
    uint64_t addr = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      objects_[i].size = sizes[i];
      objects_[i].hdd_addr = addr;
      addr += (sizes[i] + 4095) / 4096 * 4096;
    }
    // The data spans image / disk of the stroke, as on the paper's disks.
    double span = std::min(1.0, profile.paper.image_gb * 1e9 / cfg.disk_bytes);
    HddModelParams hp = cfg.hdd;
    hp.capacity_bytes = static_cast<uint64_t>(static_cast<double>(addr) / span);
    hp.cylinders = 0;
    hdd_ = HddModel(hp);
    ssd_ = SsdModel(cfg.ssd);
    budget_ = static_cast<uint64_t>(cfg.ssd_fraction * static_cast<double>(gen_.dataset_bytes()));
  }

  TierSimResult run() {
    TierSimResult res;
    res.dataset_bytes = gen_.dataset_bytes();
    res.ssd_budget = cfg_.hdd_only ? 0 : budget_;
    res.objects = objects_.size();
    WorkloadRequest rq;
    unsigned day = 0;
    res.days.emplace_back();
    cur_ = &res.days.back();
    while (gen_.next(&rq)) {
      while (rq.day != day) {
        end_of_day(day);
        ++day;
        res.days.emplace_back();
        cur_ = &res.days.back();
      }
      serve(rq);
    }
    end_of_day(day);
    for (const auto& d : res.days) res.total.add(d);
    res.heat_entries = heat_.size();
    res.heat_memory = heat_.memory_bytes();
    res.heat_stored = stored_.size();
    return res;
  }

 private:
  static HeatTrackerOptions heat_options(const TierSimConfig& cfg, size_t objects) {
    HeatTrackerOptions o = cfg.heat;
    if (cfg.heat_hot_set > 0) {
      o.on_demand = true;
      o.max_bytes = static_cast<size_t>(cfg.heat_hot_set * static_cast<double>(objects) *
                                        static_cast<double>(HeatTracker::bytes_per_entry(4)));
    }
    return o;
  }
  // What the engine's RocksDB does with the tracker's operands.
  void store_op(const HeatOp& op) {
    const uint32_t id = id_of(op.key);
    if (op.operand.empty()) {
      stored_.erase(id);
      return;
    }
    HeatRecord r;
    if (decode_heat_record(op.operand, &r, nullptr) == 0) merge_heat(&stored_[id], r);
  }

  bool tracking() const { return !cfg_.hdd_only && cfg_.policy != TierPolicy::kNone; }

  static std::string_view key_of(uint32_t id, char* buf) {
    buf[0] = static_cast<char>(id >> 24);
    buf[1] = static_cast<char>(id >> 16);
    buf[2] = static_cast<char>(id >> 8);
    buf[3] = static_cast<char>(id);
    return std::string_view(buf, 4);
  }
  static uint32_t id_of(const std::string& k) {
    return static_cast<uint32_t>(static_cast<uint8_t>(k[0])) << 24 |
           static_cast<uint32_t>(static_cast<uint8_t>(k[1])) << 16 |
           static_cast<uint32_t>(static_cast<uint8_t>(k[2])) << 8 |
           static_cast<uint32_t>(static_cast<uint8_t>(k[3]));
  }

  // One device request; returns its modelled time and updates the counters.
  uint64_t device_io(bool ssd, IoDir dir, uint64_t addr, uint64_t len, TierCounters* c) {
    if (ssd) {
      ModeledIo io = ssd_.access(dir, addr, len);
      ++c->ssd_ios;
      c->ssd_ns += io.service_ns;
      return io.service_ns;
    }
    ModeledIo io = hdd_.access(dir, addr, len);
    ++c->hdd_ios;
    if (!io.sequential) ++c->hdd_random_ios;
    c->hdd_seek_bytes += io.seek_distance;
    c->hdd_ns += io.service_ns;
    return io.service_ns;
  }

  uint64_t addr_of(const Object& o, uint64_t off) const {
    return (o.on_ssd ? o.ssd_addr : o.hdd_addr) + off;
  }

  void serve(const WorkloadRequest& rq) {
    if (rq.op == WorkloadOp::kMetadata) {
      ++cur_->meta_ops;
      cur_->meta_ns += static_cast<uint64_t>(cfg_.metadata_op_us * 1e3);
      return;
    }
    Object& o = objects_[rq.object];
    if (o.on_ssd) ++cur_->ssd_requests;
    if (tracking()) {
      char kb[4];
      heat_.record(key_of(rq.object, kb),
                   rq.op == WorkloadOp::kRead ? AccessType::kRead : AccessType::kWrite, rq.offset,
                   rq.length, rq.time_us, o.size);
    }
    if (rq.op == WorkloadOp::kRead) read(rq.object, o, rq.offset, rq.length);
    else write(rq.object, o, rq.offset, rq.length);
  }

  void read(uint32_t, Object& o, uint64_t off, uint64_t len) {
    ++cur_->reads;
    cur_->read_bytes += len;
    uint64_t end = off + len;
    if (off >= o.ra_begin && end <= o.ra_end && o.ra_end > o.ra_begin) {
      ++cur_->readahead_hits;
      o.ra_next = end;
      return;
    }
    bool in_window = off >= o.ra_begin && off < o.ra_end;
    uint64_t fetch_begin = off, fetch_end = end;
    if (off == o.ra_next || in_window) {
      o.ra_window = std::clamp(o.ra_window * 2, cfg_.readahead_min, cfg_.readahead_max);
      if (in_window) fetch_begin = o.ra_end;
      fetch_end = std::min(o.size, std::max(end, fetch_begin + o.ra_window));
      o.ra_begin = off;
    } else {
      o.ra_window = 0;
      o.ra_begin = off;
    }
    o.ra_end = fetch_end;
    o.ra_next = end;
    cur_->read_ns +=
        device_io(o.on_ssd, IoDir::kRead, addr_of(o, fetch_begin), fetch_end - fetch_begin, cur_);
  }

  void write(uint32_t id, Object& o, uint64_t off, uint64_t len) {
    ++cur_->writes;
    cur_->write_bytes += len;
    uint64_t addr = addr_of(o, off);
    for (size_t i = 0; i < open_.size(); ++i) {
      Dirty& d = open_[i];
      if (d.object != id) continue;
      if (d.obj_end == off && d.addr_end - d.addr_begin + len <= cfg_.writeback_extent_max) {
        d.addr_end += len;
        d.obj_end += len;
        if (d.addr_end - d.addr_begin >= cfg_.writeback_extent_max) complete(i);
        return;
      }
      complete(i);
      break;
    }
    if (open_.size() >= cfg_.writeback_open) complete(0);
    open_.push_back({id, o.on_ssd, addr, addr + len, off + len});
  }

  // Moves open extent i to its device's flush queue; flushes a queue when it
  // is full (per-device write-back, like Linux's per-device flusher).
  void complete(size_t i) {
    std::vector<Dirty>& q = queue_[open_[i].ssd ? 1 : 0];
    q.push_back(open_[i]);
    open_.erase(open_.begin() + static_cast<ptrdiff_t>(i));
    if (q.size() >= cfg_.writeback_batch) flush_queue(&q);
  }

  void flush_queue(std::vector<Dirty>* q) {
    std::sort(q->begin(), q->end(),
              [](const Dirty& a, const Dirty& b) { return a.addr_begin < b.addr_begin; });
    for (const Dirty& d : *q)
      cur_->write_ns += device_io(d.ssd, IoDir::kWrite, d.addr_begin, d.addr_end - d.addr_begin, cur_);
    q->clear();
  }

  void flush_all() {
    for (const Dirty& d : open_) queue_[d.ssd ? 1 : 0].push_back(d);
    open_.clear();
    for (auto& q : queue_)
      if (!q.empty()) flush_queue(&q);
  }

  void end_of_day(unsigned day) {
    flush_all();
    if (tracking()) migrate(day);
    if (cfg_.on_day) cfg_.on_day(day);
  }

  // On demand: every object's merged heat, as the engine's pass reads it
  // (the stored records beside the onodes, plus the hot set's unwritten part).
  std::vector<HeatSample> merged_snapshot() {
    std::vector<HeatSample> out;
    char kb[4];
    for (uint32_t id = 0; id < objects_.size(); ++id) {
      auto it = stored_.find(id);
      HeatSample h;
      if (heat_.lookup_merged(key_of(id, kb), it == stored_.end() ? nullptr : &it->second, &h))
        out.push_back(std::move(h));
    }
    return out;
  }

  void migrate(unsigned day) {
    std::vector<HeatSample> snap = cfg_.heat_hot_set > 0 ? merged_snapshot() : heat_.snapshot();
    std::vector<TierCandidate> cands;
    std::vector<uint32_t> ids;
    std::vector<bool> seen(objects_.size(), false);
    cands.reserve(snap.size());
    for (const HeatSample& h : snap) {
      uint32_t id = id_of(h.key);
      seen[id] = true;
      ids.push_back(id);
      const Object& o = objects_[id];
      cands.push_back({o.size, h.frequency, h.randomness, h.last_time_us, o.on_ssd});
    }
    // Objects on the SSD whose heat was evicted still need a decision.
    for (uint32_t id = 0; id < objects_.size(); ++id) {
      if (objects_[id].on_ssd && !seen[id]) {
        ids.push_back(id);
        cands.push_back({objects_[id].size, 0, 0, 0, true});
      }
    }
    if (cfg_.on_plan) cfg_.on_plan(day, cands, budget_);
    PlannerOptions po{cfg_.policy, budget_, cfg_.alloc_unit};
    TierPlan plan;
    if (cfg_.plan_max_candidates > 0) {
      po.max_candidates = cfg_.plan_max_candidates;
      BoundedPlanner bp(po);
      for (size_t i = 0; i < cands.size(); ++i) bp.offer(cands[i], ids[i]);
      std::vector<uint64_t> kept;
      plan = bp.finish(&kept);
      // The plan's indices refer to `kept`; make them this function's.
      ids.assign(kept.begin(), kept.end());
    } else {
      plan = plan_tiers(cands, po);
    }
    TierCounters mig;  // device counters of migration I/O are not foreground
    std::vector<uint32_t> demote, promote;
    for (size_t i : plan.demote) demote.push_back(ids[i]);
    for (size_t i : plan.promote) promote.push_back(ids[i]);
    std::sort(demote.begin(), demote.end(),
              [&](uint32_t a, uint32_t b) { return objects_[a].ssd_addr < objects_[b].ssd_addr; });
    std::sort(promote.begin(), promote.end(),
              [&](uint32_t a, uint32_t b) { return objects_[a].hdd_addr < objects_[b].hdd_addr; });
    uint64_t ns = 0;
    for (uint32_t id : demote) {
      Object& o = objects_[id];
      ns += device_io(true, IoDir::kRead, o.ssd_addr, o.size, &mig);
      ns += device_io(false, IoDir::kWrite, o.hdd_addr, o.size, &mig);
      o.on_ssd = false;
      o.ra_begin = o.ra_end = o.ra_next = o.ra_window = 0;
      cur_->migrated_bytes += o.size;
      ++cur_->demoted;
    }
    for (uint32_t id : promote) {
      Object& o = objects_[id];
      ns += device_io(false, IoDir::kRead, o.hdd_addr, o.size, &mig);
      o.ssd_addr = ssd_next_;
      ssd_next_ += (o.size + cfg_.alloc_unit - 1) / cfg_.alloc_unit * cfg_.alloc_unit;
      ns += device_io(true, IoDir::kWrite, o.ssd_addr, o.size, &mig);
      o.on_ssd = true;
      o.ra_begin = o.ra_end = o.ra_next = o.ra_window = 0;
      cur_->migrated_bytes += o.size;
      ++cur_->promoted;
    }
    cur_->migration_ns += ns;
    heat_.advance_window();
  }

  TierSimConfig cfg_;
  WorkloadGenerator gen_;
  HeatTracker heat_;
  std::unordered_map<uint32_t, HeatRecord> stored_;  // on demand: the `H` records
  std::vector<Object> objects_;
  HddModel hdd_;
  SsdModel ssd_;
  uint64_t budget_ = 0;
  uint64_t ssd_next_ = 0;
  std::vector<Dirty> open_;   // growing extents, oldest first
  std::vector<Dirty> queue_[2];  // complete extents awaiting a sweep: [0] HDD, [1] SSD
  TierCounters* cur_ = nullptr;
};

}  // namespace

TierSimResult run_tier_sim(const WorkloadProfile& profile, const WorkloadOptions& wopts,
                           const TierSimConfig& cfg) {
  Simulation sim(profile, wopts, cfg);
  return sim.run();
}

}  // namespace hybridstore::bench
