// SSD space utilization of the HFM sections against fixed min_alloc
// allocators, under the PostMark-like and IOzone-like mixes of the HFM paper.
//
// Every run fills an SSD smaller than the population, so the SSD ends up
// full and "consumed" is the honest denominator: every erase unit (HFM) or
// allocation unit (min_alloc) that is not free, whatever it holds - live
// data, the unused part of each object's last block, gaps and tails of staged
// extents, holes in written extents, extents not yet handed out.
#include <chrono>
#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

#include "alloc_bench.h"
#include "hybridstore/sections/section_allocator.h"
#include "hybridstore/sections/section_rules.h"

namespace hybridstore::bench {
namespace {

class SpaceTarget {
 public:
  virtual ~SpaceTarget() = default;
  // false when it does not fit (the object goes to the HDD).
  virtual bool create(uint64_t id, uint64_t bytes, uint64_t now) = 0;
  virtual void remove(uint64_t id, uint64_t now) = 0;
  // Grows an object: new space first, then the old is freed. false when the
  // new size does not fit; the object is then removed from the SSD.
  virtual bool resize(uint64_t id, uint64_t old_bytes, uint64_t new_bytes, uint64_t now) = 0;
  virtual void tick(uint64_t now) { (void)now; }
  virtual SpaceBreakdown breakdown() const = 0;
  virtual uint64_t in_place_bytes() const { return 0; }
  virtual uint64_t forced_regions() const { return 0; }
};

// The HFM sections, mapped dynamically by size, with fallback to the other
// sections before spilling.
class SectionTarget : public SpaceTarget {
 public:
  SectionTarget(const SpaceConfig& cfg, uint64_t ssd_bytes) : bs_(cfg.block_size) {
    AllocatorGeometry g;
    g.block_size = cfg.block_size;
    g.blocks = ssd_bytes / cfg.block_size;
    g.erase_block_bytes = cfg.erase_block;
    SectionDefaults d;
    d.block_size = cfg.block_size;
    std::string err;
    if (parse_sections(cfg.sections, d, &g.sections, &err) < 0 ||
        SectionAllocator::create(g, AllocatorTuning{}, &a_, &err) < 0 ||
        SectionRouter::make(g.sections, cfg.block_size, "", &router_, &err) < 0)
      throw std::runtime_error(cfg.label + ": " + err);
    a_->set_track_records(false);
  }

  bool create(uint64_t id, uint64_t bytes, uint64_t now) override {
    std::vector<AllocPiece> p;
    if (!place(id, bytes, now, &p)) return false;
    objects_[id] = std::move(p);
    return true;
  }
  void remove(uint64_t id, uint64_t now) override {
    auto it = objects_.find(id);
    for (const auto& p : it->second) a_->release(p.block, p.blocks, now);
    objects_.erase(it);
  }
  bool resize(uint64_t id, uint64_t old_bytes, uint64_t new_bytes, uint64_t now) override {
    if ((old_bytes + bs_ - 1) / bs_ == (new_bytes + bs_ - 1) / bs_) return true;
    std::vector<AllocPiece> p;
    bool ok = place(id, new_bytes, now, &p);
    remove(id, now);
    if (ok) objects_[id] = std::move(p);
    return ok;
  }
  void tick(uint64_t now) override {
    a_->tick(now, &ev_);
    count_events();
  }
  SpaceBreakdown breakdown() const override {
    SpaceBreakdown b;
    for (const auto& u : a_->usage()) {
      b.consumed += u.consumed_blocks * bs_;
      b.live += u.live_bytes;
      b.rounding += u.live_blocks * bs_ - u.live_bytes;
      b.staged_free += (u.open_tail_blocks + u.staged_free_blocks) * bs_;
      b.holes += u.hole_blocks * bs_;
      b.untaken += u.untaken_blocks * bs_;
    }
    return b;
  }
  uint64_t in_place_bytes() const override { return in_place_; }
  uint64_t forced_regions() const override { return forced_; }

 private:
  bool place(uint64_t id, uint64_t bytes, uint64_t now, std::vector<AllocPiece>* p) {
    AllocRequest r;
    r.bytes = bytes;
    r.section = router_.route_by_size(bytes);
    r.owner = id;
    r.hint = id;
    r.now_us = now;
    r.born_us = now;
    int used;
    int rc = a_->allocate_with_fallback(r, p, &ev_, &used);
    count_events();
    if (rc != 0) return false;
    for (const auto& piece : *p)
      if (piece.in_place) in_place_ += piece.bytes;
    return true;
  }
  void count_events() {
    for (const auto& r : ev_.regions) forced_ += r.forced;
    ev_.clear();
  }

  uint32_t bs_;
  std::unique_ptr<SectionAllocator> a_;
  SectionRouter router_;
  AllocEvents ev_;
  std::unordered_map<uint64_t, std::vector<AllocPiece>> objects_;
  uint64_t in_place_ = 0, forced_ = 0;
};

// A fixed-unit allocator in the manner of BlueStore's bitmap allocator: every
// object takes ceil(bytes / unit) units, contiguous or not (next fit).
class MinAllocTarget : public SpaceTarget {
 public:
  MinAllocTarget(uint64_t unit, uint64_t ssd_bytes)
      : unit_(unit), units_(ssd_bytes / unit), used_(units_, false) {}

  bool create(uint64_t id, uint64_t bytes, uint64_t) override {
    uint64_t k = (bytes + unit_ - 1) / unit_;
    if (k > units_ - in_use_) return false;
    std::vector<std::pair<uint64_t, uint64_t>> runs;
    for (uint64_t got = 0; got < k;) {
      while (used_[cursor_]) cursor_ = (cursor_ + 1) % units_;
      uint64_t start = cursor_, len = 0;
      while (got < k && cursor_ < units_ && !used_[cursor_]) {
        used_[cursor_] = true;
        ++cursor_;
        ++len;
        ++got;
      }
      if (cursor_ == units_) cursor_ = 0;
      runs.emplace_back(start, len);
    }
    in_use_ += k;
    live_ += bytes;
    objects_[id] = Obj{bytes, std::move(runs)};
    return true;
  }
  void remove(uint64_t id, uint64_t) override {
    auto it = objects_.find(id);
    for (auto [s, n] : it->second.runs)
      for (uint64_t u = s; u < s + n; ++u) used_[u] = false;
    for (auto [s, n] : it->second.runs) in_use_ -= n;
    live_ -= it->second.bytes;
    objects_.erase(it);
  }
  bool resize(uint64_t id, uint64_t old_bytes, uint64_t new_bytes, uint64_t now) override {
    if ((old_bytes + unit_ - 1) / unit_ == (new_bytes + unit_ - 1) / unit_) {
      objects_[id].bytes = new_bytes;
      live_ += new_bytes - old_bytes;
      return true;
    }
    // Keep the old units while the new ones are taken (copy-on-write), like the
    // section target; uses one temporary id.
    const uint64_t tmp = UINT64_MAX;
    bool ok = create(tmp, new_bytes, now);
    remove(id, now);
    if (ok) {
      objects_[id] = std::move(objects_[tmp]);
      objects_.erase(tmp);
    }
    return ok;
  }
  SpaceBreakdown breakdown() const override {
    SpaceBreakdown b;
    b.consumed = in_use_ * unit_;
    b.live = live_;
    b.rounding = b.consumed - live_;
    return b;
  }

 private:
  struct Obj {
    uint64_t bytes;
    std::vector<std::pair<uint64_t, uint64_t>> runs;
  };
  uint64_t unit_, units_;
  std::vector<bool> used_;
  uint64_t cursor_ = 0, in_use_ = 0, live_ = 0;
  std::unordered_map<uint64_t, Obj> objects_;
};

uint64_t uniform(std::mt19937_64& rng, uint64_t lo, uint64_t hi) {
  return lo + rng() % (hi - lo + 1);
}

std::vector<uint64_t> population(const MixSpec& mix, std::mt19937_64& rng) {
  std::vector<uint64_t> sizes(mix.objects);
  for (auto& s : sizes) {
    switch (mix.kind) {
      case MixKind::kPostMark: s = uniform(rng, 500, 10240); break;
      case MixKind::kIozone1:
        s = rng() % 100 < 96 ? uniform(rng, 8 << 10, 16 << 10) : uniform(rng, 512 << 10, 4 << 20);
        break;
      case MixKind::kIozone2: s = uniform(rng, 512 << 10, 4 << 20); break;
    }
  }
  return sizes;
}

}  // namespace

std::vector<MixSpec> default_mixes(bool quick) {
  if (quick)
    return {{MixKind::kPostMark, "postmark", 5000, 20000, 16 << 20},
            {MixKind::kIozone1, "iozone-1", 2000, 0, 0},
            {MixKind::kIozone2, "iozone-2", 200, 0, 0}};
  return {{MixKind::kPostMark, "postmark", 20000, 100000, 64 << 20},
          {MixKind::kIozone1, "iozone-1", 10000, 0, 0},
          {MixKind::kIozone2, "iozone-2", 1000, 0, 0}};
}

std::vector<SpaceConfig> default_space_configs(const std::string& default_sections,
                                               uint32_t block_size, uint64_t erase_block) {
  std::vector<SpaceConfig> v;
  v.push_back({"default", 0, default_sections, block_size, erase_block});
  for (uint32_t b : {1024u, 512u, 256u})
    if (b != block_size)
      v.push_back({fmt::format("default sections, {} B blocks", b), 0, default_sections, b,
                   erase_block});
  // Each section of the default set alone.
  size_t b = 0;
  while (b <= default_sections.size()) {
    size_t e = default_sections.find(',', b);
    std::string one = default_sections.substr(b, e == std::string::npos ? std::string::npos
                                                                        : e - b);
    if (one.find("bypass") == std::string::npos)
      v.push_back({"only " + one.substr(0, one.find(':')), 0, one, block_size, erase_block});
    if (e == std::string::npos) break;
    b = e + 1;
  }
  // The papers' configuration: 1 KiB blocks, HFM policy, none of our additions.
  // HFM updates in place, so freed space is reused in place (holes=fill).
  v.push_back({"HFM paper (1K blocks, hfm, remainder fresh, no gap fill)", 0,
               "small:8K:rho1:hfm:gaps=off:remainder=fresh,"
               "mid:64K:rho2:hfm:gaps=off:remainder=fresh,"
               "large:512K:rho3:delta32:hfm:gaps=off:remainder=fresh",
               1024, erase_block});
  // The same sections in the log-structured mode without a cleaner: freed
  // space only comes back when a whole erase unit empties.
  v.push_back({"HFM paper, holes=clean and no cleaner", 0,
               "small:8K:rho1:hfm:gaps=off:remainder=fresh:holes=clean,"
               "mid:64K:rho2:hfm:gaps=off:remainder=fresh:holes=clean,"
               "large:512K:rho3:delta32:hfm:gaps=off:remainder=fresh:holes=clean",
               1024, erase_block});
  v.push_back({"min_alloc 4K", 4096, ""});
  v.push_back({"min_alloc 64K", 65536, ""});
  return v;
}

SpaceResult run_space(const MixSpec& mix, const SpaceConfig& cfg, uint64_t seed) {
  auto t0 = std::chrono::steady_clock::now();
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> sizes = population(mix, rng);
  uint64_t pop_bytes = 0;
  for (uint64_t s : sizes) pop_bytes += s;
  uint64_t ssd = mix.ssd_bytes ? mix.ssd_bytes : (pop_bytes / 3) >> 20 << 20;
  std::unique_ptr<SpaceTarget> t;
  if (cfg.min_alloc)
    t = std::make_unique<MinAllocTarget>(cfg.min_alloc, ssd);
  else
    t = std::make_unique<SectionTarget>(cfg, ssd);

  SpaceResult r;
  r.config = cfg.label;
  r.mix = mix.name;
  r.ssd_bytes = ssd;
  r.population_bytes = pop_bytes;
  r.fit_before_spill = sizes.size();

  struct Obj {
    uint64_t bytes;
    bool on_ssd;
  };
  std::vector<Obj> objs;
  std::vector<uint64_t> alive;  // ids of objects that exist (SSD or HDD)
  const uint64_t step_us = 200;  // 5,000 operations per second
  uint64_t now = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    now += step_us;
    bool ok = t->create(i, sizes[i], now);
    if (!ok && r.fit_before_spill == sizes.size()) r.fit_before_spill = i;
    objs.push_back({sizes[i], ok});
    alive.push_back(i);
    r.on_ssd_after_fill += ok;
    t->tick(now);
  }
  r.after_fill = t->breakdown();

  if (mix.kind == MixKind::kPostMark && mix.transactions) {
    r.has_transactions = true;
    // PostMark: each transaction pairs create-or-delete with read-or-append
    // (biases 5/10). Appends add U[1, 10240 - size] bytes, keeping the file
    // within the population's size range.
    for (uint64_t tx = 0; tx < mix.transactions; ++tx) {
      now += step_us;
      if (rng() % 2 || alive.empty()) {
        uint64_t id = objs.size();
        uint64_t bytes = uniform(rng, 500, 10240);
        bool ok = t->create(id, bytes, now);
        r.spilled_creates += !ok;
        objs.push_back({bytes, ok});
        alive.push_back(id);
      } else {
        size_t k = rng() % alive.size();
        uint64_t id = alive[k];
        if (objs[id].on_ssd) t->remove(id, now);
        alive[k] = alive.back();
        alive.pop_back();
      }
      now += step_us;
      if (!alive.empty() && rng() % 2) {
        uint64_t id = alive[rng() % alive.size()];
        Obj& o = objs[id];
        if (o.bytes < 10240) {
          uint64_t grown = o.bytes + uniform(rng, 1, 10240 - o.bytes);
          if (o.on_ssd && !t->resize(id, o.bytes, grown, now)) {
            o.on_ssd = false;
            ++r.spilled_creates;
          }
          o.bytes = grown;
        }
      }
      t->tick(now);
    }
    r.after_tx = t->breakdown();
    for (uint64_t id : alive) r.on_ssd_after_tx += objs[id].on_ssd;
  }
  r.in_place_bytes = t->in_place_bytes();
  r.forced_regions = t->forced_regions();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace hybridstore::bench
