#include "hybridstore/sections/ssd_sections.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "hscommon/log.h"
#include "hybridstore/kv/kv_schema.h"
#include "hybridstore/sections/section_report.h"

namespace hybridstore {

namespace {
std::string geometry_key() { return std::string(1, kv::kSection) + 'g'; }
std::string groups_key() { return std::string(1, kv::kSection) + 'h'; }
std::string record_prefix() { return std::string(1, kv::kSection) + 'r'; }
// Allocations whose hotness feeds each refinement of the group centres.
constexpr size_t kGroupSample = 4096;

void write_ops(const std::vector<PersistOp>& ops, rocksdb::WriteBatchBase* batch) {
  for (const auto& op : ops) {
    std::string k = record_prefix() + op.key();
    if (op.kind == PersistOp::Kind::kPut)
      batch->Put(k, op.value);
    else
      batch->Delete(k);
  }
}
}  // namespace

uint64_t SsdSections::now_us() const {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

int SsdSections::format(const Config& cfg, uint64_t offset, uint64_t bytes, rocksdb::WriteBatchBase* batch,
                        std::string* error) {
  AllocatorGeometry geo;
  if (int r = make_allocator_geometry(cfg, offset, bytes, &geo, error); r < 0) return r;
  std::unique_ptr<SectionAllocator> sa;
  if (int r = SectionAllocator::create(geo, AllocatorTuning::from_config(cfg), &sa, error); r < 0) return r;
  SectionRouter router;
  if (int r = SectionRouter::make(geo.sections, geo.block_size, cfg.get_str("hybridstore_ssd_section_rules"),
                                  &router, error);
      r < 0)
    return r;
  batch->Put(geometry_key(), sa->geometry_record());
  std::vector<PersistOp> ops;
  sa->drain_records(&ops);
  write_ops(ops, batch);
  return 0;
}

namespace {

// The allocator's records under `prefix`, keys without it, in RocksDB's order.
class RocksDbRecords : public AllocatorRecordSource {
 public:
  RocksDbRecords(rocksdb::Iterator* it, std::string prefix) : it_(it), prefix_(std::move(prefix)) {}
  int next(std::string_view* key, std::string_view* value, std::string* error) override {
    if (started_) it_->Next(); else it_->Seek(prefix_);
    started_ = true;
    if (!it_->Valid() || !it_->key().starts_with(prefix_)) {
      if (it_->status().ok()) return 0;
      *error = "reading SSD section records: " + it_->status().ToString();
      return -EIO;
    }
    *key = it_->key().ToStringView().substr(prefix_.size());
    *value = it_->value().ToStringView();
    return 1;
  }

 private:
  std::unique_ptr<rocksdb::Iterator> it_;
  std::string prefix_;
  bool started_ = false;
};

std::string extent_record_key(uint32_t eu, uint32_t idx) {
  return record_prefix() + PersistOp{PersistOp::Kind::kPut, PersistOp::Type::kExtent, eu, idx, {}}.key();
}

// Written extents' placements, read back from their records.
class RocksDbPlacements : public PlacementStore {
 public:
  explicit RocksDbPlacements(rocksdb::DB* db) : db_(db) {}
  int read_extent_record(uint32_t eu, uint32_t idx, std::string* value, std::string* error) override {
    const std::string key = extent_record_key(eu, idx);
    rocksdb::Status st = db_->Get(rocksdb::ReadOptions(), key, value);
    if (st.ok()) return 0;
    *error = st.IsNotFound() ? "the record is missing" : st.ToString();
    HS_ERROR("SSD sections: extent {}/{}: {}", eu, idx, *error);
    return -EIO;
  }

 private:
  rocksdb::DB* db_;
};

// The same records for a walk over the units in order (fsck's), through
// one iterator: 2.3M lookups by key made a 10M store's shallow fsck 35%
// slower. A key behind the iterator is sought again.
class RocksDbPlacementWalk : public PlacementStore {
 public:
  explicit RocksDbPlacementWalk(rocksdb::DB* db) {
    rocksdb::ReadOptions ro;
    ro.fill_cache = false;  // read once
    it_.reset(db->NewIterator(ro));
  }
  int read_extent_record(uint32_t eu, uint32_t idx, std::string* value, std::string* error) override {
    const std::string key = extent_record_key(eu, idx);
    const rocksdb::Slice k(key);
    if (!it_->Valid() || it_->key().compare(k) > 0) it_->Seek(k);
    while (it_->Valid() && it_->key().compare(k) < 0) it_->Next();
    if (it_->Valid() && it_->key() == k) {
      value->assign(it_->value().data(), it_->value().size());
      return 0;
    }
    *error = it_->status().ok() ? "the record is missing" : it_->status().ToString();
    HS_ERROR("SSD sections: extent {}/{}: {}", eu, idx, *error);
    return -EIO;
  }

 private:
  std::unique_ptr<rocksdb::Iterator> it_;
};

}  // namespace

int SsdSections::open(const Config& cfg, rocksdb::DB* db, uint64_t offset, uint64_t bytes,
                      const std::function<bool(uint64_t, uint64_t)>& marked_used, const Ranges& lent,
                      std::unique_ptr<SsdSections>* out, std::string* error) {
  std::unique_ptr<SsdSections> s(new SsdSections());
  AllocatorGeometry geo;
  if (int r = make_allocator_geometry(cfg, offset, bytes, &geo, error); r < 0) return r;
  s->block_size_ = geo.block_size;
  // Every write unit (max(extent, erase block), aligned) is a multiple of the
  // smallest of these, and starts on one.
  s->split_ = geo.erase_block_bytes ? geo.erase_block_bytes : UINT64_MAX;
  for (const auto& sec : geo.sections)
    if (!sec.bypass()) s->split_ = std::min<uint64_t>(s->split_, uint64_t(sec.extent_blocks) * geo.block_size);
  if (int r = SectionRouter::make(geo.sections, geo.block_size, cfg.get_str("hybridstore_ssd_section_rules"),
                                  &s->router_, error);
      r < 0)
    return r;
  std::string georec;
  if (!db->Get(rocksdb::ReadOptions(), geometry_key(), &georec).ok()) {
    *error = "the SSD section geometry record is missing";
    return -EIO;
  }
  // The records go to the allocator one at a time, straight from the
  // iterator: at 10M small objects, copying them all first doubled the
  // mount's peak. They are read once, so they stay out of the block cache.
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;
  RocksDbRecords records(db->NewIterator(ro), record_prefix());
  // Written extents keep their placements in their records (docs/memory.md,
  // step 8), but for those holding a crash leftover, which the walk below
  // looks at.
  const uint64_t bs = geo.block_size;
  RebuildOptions rebuild_opts;
  if (!cfg.get_bool("hybridstore_ssd_placements_resident")) {
    s->placements_ = std::make_unique<RocksDbPlacements>(db);
    s->db_ = db;
    rebuild_opts.placements = s->placements_.get();
    rebuild_opts.keep = [&](uint64_t block, uint64_t blocks) { return !marked_used(block * bs, blocks * bs); };
  }
  if (int r = SectionAllocator::rebuild(geo, AllocatorTuning::from_config(cfg), &records, s->now_us(), &s->sa_,
                                        error, rebuild_opts);
      r < 0) {
    *error = "SSD sections: " + *error;
    return r;
  }
  if (int r = s->sa_->check_geometry_record(georec, error); r < 0) {
    *error = "SSD sections do not match the store's: " + *error;
    return r;
  }
  HotnessGroupOptions gopts = hotness_group_options_from_config(cfg);
  gopts.groups = geo.groups;
  s->groups_ = std::make_unique<HotnessGroups>(gopts);
  s->cleaner_ = std::make_unique<HoleCleaner>(CleanerConfig::from_config(cfg));
  std::string grec, gerr;
  if (db->Get(rocksdb::ReadOptions(), groups_key(), &grec).ok() && s->groups_->decode(grec, &gerr) < 0)
    HS_WARN("SSD hotness group centres unreadable ({}); they will be learned again", gerr);

  // Live ranges of transactions that never committed: the bitmap, written by
  // each transaction's own batch, does not mark them.
  uint64_t dropped = 0;
  for (uint32_t eu = 0; eu < s->sa_->erase_unit_count(); ++eu) {
    std::vector<LiveRange> live;
    // Evicted extents were marked whole (rebuild_opts.keep).
    s->sa_->live_ranges(eu, &live, nullptr, /*resident_only=*/true);
    for (const auto& r : live) {
      for (uint64_t b = r.block; b < r.block + r.blocks;) {
        uint64_t e = b;
        while (e < r.block + r.blocks && !marked_used(e * bs, bs)) ++e;
        if (e > b) {
          s->sa_->release(b, e - b, s->now_us());
          dropped += e - b;
          b = e;
        } else {
          ++b;
        }
      }
    }
  }
  if (dropped) {
    HS_INFO("SSD sections: returned {} blocks allocated by transactions that never committed", dropped);
    rocksdb::WriteBatch b;
    std::vector<PersistOp> ops;
    s->sa_->drain_records(&ops);
    write_ops(ops, &b);
    rocksdb::WriteOptions wo;
    wo.sync = true;
    if (!db->Write(wo, &b).ok()) {
      *error = "writing reconciled SSD section state failed";
      return -EIO;
    }
  }
  // Only now: a unit whose placements were all crash leftovers is no
  // conflict with the kvfs.
  std::vector<uint32_t> lent_eus, stale;
  if (!s->units_of(lent, &lent_eus)) {
    *error = "SSD sections: the KV file system owns ranges that are not whole erase units";
    return -EIO;
  }
  if (int r = s->sa_->exclude_units(lent_eus, &stale, error); r < 0) return r;
  // Not written here: the records of a unit that is neither free nor
  // anyone's but the kvfs's mislead nothing until they are deleted.
  for (uint32_t eu : stale)
    HS_WARN("SSD sections: erase unit {} belongs to the KV file system but kept allocator records (freed "
            "before the crash, deleted with the next batch)",
            eu);
  *out = std::move(s);
  return 0;
}

bool SsdSections::units_of(const Ranges& ranges, std::vector<uint32_t>* eus) const {
  const uint64_t g = lend_unit(), base = sa_->erase_unit_block(0) * block_size_;
  for (const auto& [off, len] : ranges) {
    if (off < base || (off - base) % g || len % g || len == 0) return false;
    for (uint64_t o = off; o < off + len; o += g) {
      const uint64_t eu = (o - base) / g;
      if (eu >= sa_->erase_unit_count()) return false;
      eus->push_back(static_cast<uint32_t>(eu));
    }
  }
  return true;
}

SsdSections::Ranges SsdSections::ranges_of(std::vector<uint32_t> eus) const {
  std::sort(eus.begin(), eus.end());
  const uint64_t g = lend_unit();
  Ranges out;
  for (uint32_t eu : eus) {
    const uint64_t off = sa_->erase_unit_block(eu) * block_size_;
    if (!out.empty() && out.back().first + out.back().second == off)
      out.back().second += g;
    else
      out.emplace_back(off, g);
  }
  return out;
}

int SsdSections::lend(uint64_t want, Ranges* out) {
  const uint64_t g = lend_unit();
  if (want < g) return -EINVAL;
  std::vector<uint32_t> eus;
  if (int r = sa_->lend_units(static_cast<uint32_t>(std::min<uint64_t>(want / g, UINT32_MAX)), &eus); r < 0)
    return r;
  Ranges got = ranges_of(std::move(eus));
  out->insert(out->end(), got.begin(), got.end());
  return 0;
}

int SsdSections::take_back(const Ranges& ranges) {
  std::vector<uint32_t> eus;
  if (!units_of(ranges, &eus)) return -EINVAL;
  return sa_->take_back_units(eus);
}

SsdSections::Ranges SsdSections::lent() const { return ranges_of(sa_->lent_units()); }

void SsdSections::set_floor(uint64_t bytes) { sa_->set_floor_units(static_cast<uint32_t>(bytes / lend_unit())); }

std::vector<std::string> SsdSections::section_names() const {
  std::vector<std::string> out;
  for (int i = 0; i < sa_->section_count(); ++i) out.push_back(sa_->section(i).name);
  return out;
}

void SsdSections::set_perf(SectionPerf p) {
  std::lock_guard<std::mutex> l(mutex_);
  perf_ = std::move(p);
  if (perf_.set) perf_.set->set(perf_.free_erase_units, sa_->free_erase_units());
}

void SsdSections::count_locked(const AllocEvents& ev, const std::vector<WriteRegion>& regions) {
  if (!perf_.set) return;
  for (uint64_t block : ev.sealed) {
    perf_.set->inc(perf_.seals);
    uint32_t eu = static_cast<uint32_t>((block - sa_->erase_unit_block(0)) / sa_->erase_unit_blocks());
    int sec = sa_->erase_unit_info(eu).section;
    if (sec >= 0 && static_cast<size_t>(sec) < perf_.section_seals.size() && perf_.section_seals[sec] >= 0)
      perf_.set->inc(perf_.section_seals[sec]);
  }
  for (const auto& r : regions) {
    perf_.set->inc(perf_.write_units);
    if (r.forced) perf_.set->inc(perf_.write_units_forced);
  }
  perf_.set->set(perf_.free_erase_units, sa_->free_erase_units());
}

bool SsdSections::bypass(const ObjectPlacementKey& key, uint64_t object_bytes) const {
  return router_.route(key, std::max<uint64_t>(object_bytes, 1)) == SectionRouter::kBypass;
}

uint32_t SsdSections::group_of_locked(double hotness) {
  if (sa_->geometry().groups <= 1) return 0;
  hotness_sample_.push_back(hotness);
  if (hotness_sample_.size() >= kGroupSample || !groups_->has_centres()) {
    groups_->refine(hotness_sample_);
    hotness_sample_.clear();
    groups_dirty_ = true;
  }
  return std::min(groups_->classify(hotness), sa_->geometry().groups - 1);
}

void SsdSections::apply_releases_locked() {
  std::vector<std::pair<uint64_t, uint64_t>> todo;
  {
    std::lock_guard<std::mutex> l(release_mutex_);
    todo.swap(pending_release_);
  }
  uint64_t now = now_us();
  for (const auto& [b, n] : todo)
    if (sa_->release(b, n, now) < 0) HS_ERROR("SSD sections refused to release blocks {}~{}", b, n);
}

int SsdSections::allocate(const ObjectPlacementKey& key, uint64_t object_bytes, uint64_t len, double hotness,
                          uint64_t owner, std::vector<Piece>* out,
                          const std::function<void(const std::vector<Piece>&)>& stage, bool direct) {
  std::lock_guard<std::mutex> l(mutex_);
  apply_releases_locked();
  int section = router_.route(key, std::max<uint64_t>(object_bytes, len));
  if (section == SectionRouter::kBypass) return -ENOSPC;
  AllocRequest req;
  req.bytes = len;
  req.section = section;
  req.group = group_of_locked(hotness);
  req.owner = owner;
  req.hint = owner;
  req.now_us = now_us();
  req.born_us = req.now_us;
  req.direct = direct;
  std::vector<AllocPiece> pieces;
  AllocEvents ev;
  int used;
  int r = sa_->allocate_with_fallback(req, &pieces, &ev, &used);
  // Write units this call completed or forced out (staging cap) are handed
  // to the engine at the next finish, failed allocation or not.
  for (const auto& reg : ev.regions) forced_.push_back(reg);
  count_locked(ev, {});
  if (r < 0) return r;
  if (perf_.set) {
    perf_.set->inc(perf_.allocs);
    if (used >= 0 && static_cast<size_t>(used) < perf_.section_allocs.size() && perf_.section_allocs[used] >= 0)
      perf_.set->inc(perf_.section_allocs[used]);
  }
  // A piece may run across write units (whole extents of a large object);
  // staged data is written per unit, so pieces are cut at unit boundaries.
  size_t first = out->size();
  for (const auto& p : pieces) {
    uint64_t b = p.block * block_size_, e = (p.block + p.blocks) * block_size_;
    if (p.direct) {
      out->push_back({b, e - b, false, true});
      continue;
    }
    while (b < e) {
      uint64_t cut = p.in_place ? e : std::min(e, (b / split_ + 1) * split_);
      out->push_back({b, cut - b, !p.in_place});
      b = cut;
    }
  }
  stage(std::vector<Piece>(out->begin() + static_cast<long>(first), out->end()));
  return 0;
}

void SsdSections::release(uint64_t offset, uint64_t len) {
  std::lock_guard<std::mutex> l(release_mutex_);
  pending_release_.emplace_back(offset / block_size_, len / block_size_);
}

void SsdSections::drain_locked(rocksdb::WriteBatchBase* batch, std::vector<Region>* regions, const AllocEvents& ev) {
  for (const auto& r : forced_) regions->push_back({r.block * block_size_, (r.block + r.blocks) * block_size_});
  // Regions count when handed out; allocate() counted its seals already.
  count_locked(AllocEvents{{}, ev.sealed}, forced_);
  count_locked({}, ev.regions);
  forced_.clear();
  for (const auto& r : ev.regions)
    regions->push_back({r.block * block_size_, (r.block + r.blocks) * block_size_});
  std::vector<PersistOp> ops;
  sa_->drain_records(&ops);
  write_ops(ops, batch);
  if (groups_dirty_) {
    batch->Put(groups_key(), groups_->encode());
    groups_dirty_ = false;
  }
}

void SsdSections::finish_locked(rocksdb::WriteBatchBase* batch, std::vector<Region>* regions) {
  apply_releases_locked();
  AllocEvents ev;
  sa_->collect(&ev);
  drain_locked(batch, regions, ev);
}

void SsdSections::tick_locked(rocksdb::WriteBatchBase* batch, std::vector<Region>* regions) {
  apply_releases_locked();
  AllocEvents ev;
  sa_->tick(now_us(), &ev);
  drain_locked(batch, regions, ev);
}

void SsdSections::flush_locked(rocksdb::WriteBatchBase* batch, std::vector<Region>* regions) {
  apply_releases_locked();
  AllocEvents ev;
  sa_->flush(now_us(), &ev);
  drain_locked(batch, regions, ev);
}

uint64_t SsdSections::live_bytes() {
  std::lock_guard<std::mutex> l(mutex_);
  apply_releases_locked();
  return sa_->live_blocks() * block_size_;
}

void SsdSections::memory(uint64_t* placements, uint64_t* bytes) {
  std::lock_guard<std::mutex> l(mutex_);
  sa_->memory(placements, bytes);
}

uint64_t SsdSections::consumed_bytes() {
  std::lock_guard<std::mutex> l(mutex_);
  apply_releases_locked();
  return sa_->consumed_blocks() * block_size_;
}

void SsdSections::for_each_live(const std::function<void(uint64_t, uint64_t)>& fn) {
  std::lock_guard<std::mutex> l(mutex_);
  apply_releases_locked();
  WalkInKeyOrder walk(this);
  for (uint32_t eu = 0; eu < sa_->erase_unit_count(); ++eu) {
    std::vector<LiveRange> live;
    std::string error;
    if (sa_->live_ranges(eu, &live, &error) < 0) HS_ERROR("SSD sections: {}", error);
    for (const auto& r : live) fn(r.block * block_size_, uint64_t(r.blocks) * block_size_);
  }
}

std::string SsdSections::report() {
  std::lock_guard<std::mutex> l(mutex_);
  apply_releases_locked();
  return format_section_report(*sa_);
}

bool SsdSections::cleaning_needed(bool started) {
  std::lock_guard<std::mutex> l(mutex_);
  apply_releases_locked();
  return started ? cleaner_->should_continue(*sa_) : cleaner_->should_start(*sa_);
}

std::vector<uint32_t> SsdSections::begin_cleaning(size_t max_victims) {
  std::lock_guard<std::mutex> l(mutex_);
  apply_releases_locked();
  std::vector<VictimCandidate> v;
  cleaner_->pick_victims(*sa_, now_us(), max_victims, &v);
  std::vector<uint32_t> out;
  for (const auto& c : v)
    if (sa_->begin_cleaning(c.eu) == 0) out.push_back(c.eu);
  return out;
}

void SsdSections::end_cleaning(uint32_t eu) {
  std::lock_guard<std::mutex> l(mutex_);
  apply_releases_locked();
  sa_->end_cleaning(eu);  // -EINVAL when the unit emptied and left the section: fine
}

std::vector<SsdSections::Live> SsdSections::live_in(uint32_t eu) {
  std::lock_guard<std::mutex> l(mutex_);
  apply_releases_locked();
  std::vector<LiveRange> live;
  std::string error;
  if (sa_->live_ranges(eu, &live, &error) < 0) HS_ERROR("SSD sections: cleaning erase unit {}: {}", eu, error);
  std::vector<Live> out;
  for (const auto& r : live) out.push_back({r.block * block_size_, uint64_t(r.blocks) * block_size_, r.owner});
  return out;
}

bool SsdSections::erase_unit_free(uint32_t eu) {
  std::lock_guard<std::mutex> l(mutex_);
  apply_releases_locked();
  return !sa_->erase_unit_info(eu).owned;
}

std::string SsdSections::verify() {
  std::lock_guard<std::mutex> l(mutex_);
  apply_releases_locked();
  WalkInKeyOrder walk(this);
  return sa_->verify();
}

SsdSections::WalkInKeyOrder::WalkInKeyOrder(SsdSections* s) : s_(s) {
  if (!s_->db_) return;
  walk_ = std::make_unique<RocksDbPlacementWalk>(s_->db_);
  old_ = s_->sa_->swap_placement_store(walk_.get());
}

SsdSections::WalkInKeyOrder::~WalkInKeyOrder() {
  if (walk_) s_->sa_->swap_placement_store(old_);
}

}  // namespace hybridstore
