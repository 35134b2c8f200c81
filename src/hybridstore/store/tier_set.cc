#include "hybridstore/store/tier_set.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "hsio/async_write_device.h"
#include "hybridstore/kv/deferred.h"
#include "hybridstore/store/hybrid_store.h"
#include "hybridstore/store/storage_hooks.h"
#include "hybridstore/store/store_perf.h"

namespace hybridstore {

std::string tier_device_link(Tier t) { return std::string("block.") + tier_name(t); }

TierSet::~TierSet() = default;

int TierSet::open(const std::string& store_path, const Superblock& super, const Config& cfg, std::string* error) {
  count_ = super.tiers;
  std::copy(super.order, super.order + kMaxTiers, order_);
  DeviceOpenOptions o;
  if (!parse_io_backend(cfg.get_str("hybridstore_io_backend"), &o.backend)) o.backend = IoBackend::kAuto;
  o.direct_io = cfg.get_bool("hybridstore_direct_io");
  o.uring_depth = static_cast<unsigned>(cfg.get_int("hybridstore_uring_depth"));
  const NandCounters nand{&perf_->set, perf_->ftl_merges, perf_->ftl_erases, perf_->ftl_pages_copied,
                          perf_->ftl_host_pages_written};
  read_cache_.reset();
  if (const uint64_t bytes = cfg.get_size("hybridstore_data_cache_size"); bytes > 0) {
    read_cache_ = std::make_shared<ReadCache>(bytes);
    PerfCounterSet* ps = &perf_->set;
    const int hit = perf_->data_cache_hit_bytes, miss = perf_->data_cache_miss_bytes, held = perf_->data_cache_bytes;
    read_cache_->set_observer({[ps, hit](uint64_t n) { ps->inc(hit, n); },
                               [ps, miss](uint64_t n) { ps->inc(miss, n); },
                               [ps, held](int64_t n) {
                                 if (n > 0) ps->inc(held, static_cast<uint64_t>(n));
                                 else ps->dec(held, static_cast<uint64_t>(-n));
                               }});
    perf_->set.set(held, 0);
  }
  for (int t = 0; t < count_; ++t) {
    Tier tier = tier_at(t);
    std::string p = store_path + "/" + tier_device_link(tier);
    // What the device is (raw NAND behind the embedded FTL, say): mkfs recorded it.
    std::unique_ptr<BlockDevice> dev = open_tier_device(super.layout[t], cfg, p, o, false, &nand, error);
    if (!dev) return -ENOENT;
    DeviceLabel label;
    std::string why;
    if (int r = read_label(dev.get(), &label, &why); r < 0) {
      *error = fmt::format("{} device {}: {}", tier_name(tier), p, why);
      return r;
    }
    if (label.fsid != super.fsid) {
      *error = fmt::format("{} device {} belongs to store {}, not to this store ({})", tier_name(tier), p,
                           uuid_to_string(label.fsid), uuid_to_string(super.fsid));
      return -EINVAL;
    }
    if (label.role != tier) {
      *error = fmt::format("device {} is labelled as the {} device of this store, not the {} device", p,
                           tier_name(label.role), tier_name(tier));
      return -EINVAL;
    }
    if (dev->size() < label.size || label.size < super.tier_size[t]) {
      *error = fmt::format("{} device {} is {} bytes but its label says {} (store expects {}): "
                           "truncated or wrong device",
                           tier_name(tier), p, dev->size(), label.size, super.tier_size[t]);
      return -EINVAL;
    }
    // Test tools put fault injection and device models in between here.
    if (auto hooks = storage_hooks()) dev = hooks->wrap_device(store_path, tier, cfg, std::move(dev));
    // Writes that go on while the transaction is queued (DataWriter::
    // write_pending): above the test wrappers, which then see them as the
    // writes they are.
    if (const int n = static_cast<int>(cfg.get_int("hybridstore_async_write_threads"));
        n > 0 && cfg.get_size("hybridstore_async_write_min") > 0)
      dev = std::make_unique<AsyncWriteDevice>(std::move(dev), n);
    // Above any test wrapper: what the cache serves is what the media
    // (faulty or modelled) returned, and every write reaches both.
    if (read_cache_) dev = std::make_unique<CachingBlockDevice>(std::move(dev), read_cache_, t);
    spaces_[t] = make_tier_space(tier, std::move(dev), super);
    spaces_[t]->configure(cfg);
    if (int r = spaces_[t]->check_device(error); r < 0) return r;
  }
  return 0;
}

int TierSet::load(rocksdb::DB* db, const Config& cfg, std::string* error) {
  coarsest_unit_ = 0;
  finest_unit_ = UINT64_MAX;
  for (int t = 0; t < count_; ++t) {
    coarsest_unit_ = std::max(coarsest_unit_, spaces_[t]->unit());
    finest_unit_ = std::min(finest_unit_, spaces_[t]->unit());
    if (int r = spaces_[t]->load(db, cfg, error); r < 0) return r;
  }
  return 0;
}

void TierSet::set_gauges() {
  SpaceCounters counters;
  counters.set = &perf_->set;
  counters.direct_unit_bytes = perf_->ssd_direct_unit_bytes;
  counters.sections = [perf = perf_](const std::vector<std::string>& names) { return perf->sections(names); };
  for (int t = 0; t < count_; ++t) spaces_[t]->set_counters(counters);
  PerfCounterSet& ps = perf_->set;
  for (int t = 0; t < count_; ++t) {
    const TierSpace::Usage u = spaces_[t]->usage();
    ps.set(perf_->bytes_total[t], u.total);
    ps.set(perf_->bytes_used[t], u.allocated);
  }
}

void TierSet::flush_devices() {
  for (int t = 0; t < count_; ++t)
    if (spaces_[t]) spaces_[t]->device()->flush();
}

int TierSet::rank(Tier t) const {
  for (int r = 0; r < count_; ++r)
    if (order_[r] == t) return r;
  return count_;  // not a tier of this store
}

Tier TierSet::next(Tier t, int step) const {
  const int r = rank(t) + step;
  return r >= 0 && r < count_ ? order_[r] : t;
}

int TierSet::spill_order(Tier preferred, Tier* out) const {
  int n = 0;
  const int p = rank(preferred);
  for (int r = p; r < count_; ++r) out[n++] = order_[r];
  for (int r = p - 1; r >= 0; --r) out[n++] = order_[r];
  return n;
}

int TierSet::home_tier(const Onode& o) const {
  uint64_t bytes[kMaxTiers];
  for (int t = 0; t < kMaxTiers; ++t) bytes[t] = o.extents.bytes_on(tier_at(t));
  const int r = heaviest_rank(bytes, order_, count_);
  return r < 0 ? -1 : tier_index(order_[r]);
}

std::array<BlockDevice*, kMaxTiers> TierSet::devices() const {
  std::array<BlockDevice*, kMaxTiers> d{};
  for (int t = 0; t < count_; ++t) d[t] = spaces_[t]->device();
  return d;
}

void TierSet::count_allocated(Tier t, uint64_t bytes) {
  perf_->set.inc(perf_->write_bytes[tier_index(t)], bytes);
  perf_->set.inc(perf_->bytes_used[tier_index(t)], bytes);
}

void TierSet::release(const PExtent& e) {
  perf_->set.dec(perf_->bytes_used[tier_index(e.tier)], e.length);
  space(e.tier).release(e.offset, e.length);
}

bool TierSet::keeps_state() const {
  for (int t = 0; t < count_; ++t)
    if (spaces_[t]->keeps_state()) return true;
  return false;
}

TierSet::Drained TierSet::drain_state(TierSpace::Drain how, rocksdb::WriteBatchBase* batch) const {
  Drained d;
  for (int t = 0; t < count_; ++t)
    if (spaces_[t]->keeps_state()) d.locks_[t] = spaces_[t]->drain_state(how, batch, &d.regions_[t]);
  return d;
}

void TierSet::Drained::queue_regions(DeferredWriter* deferred) const {
  for (int t = 0; t < kMaxTiers; ++t)
    for (const auto& r : regions_[t]) deferred->write_region(tier_at(t), r.begin, r.end);
}

TierSet::Drained::~Drained() {
  for (int t = kMaxTiers - 1; t >= 0; --t)
    if (locks_[t].owns_lock()) locks_[t].unlock();
}

void TierSet::usage(StoreStats* st) const {
  st->tiers = count_;
  std::copy(std::begin(order_), std::end(order_), std::begin(st->order));
  for (int t = 0; t < count_; ++t) {
    TierStats& ts = st->tier[t];
    // A staged tier counts space it holds but cannot give any object yet
    // (rounding gaps, holes awaiting cleaning) as consumed.
    const TierSpace::Usage u = spaces_[t]->usage();
    ts.total = u.total;
    ts.consumed = u.consumed;
    ts.allocated = u.allocated;
    ts.free = u.free;
    ts.fragmentation = u.fragmentation;
    ts.unit = spaces_[t]->unit();
    ts.device = spaces_[t]->device()->path();
    ts.backend = spaces_[t]->device()->backend();
  }
}

std::string TierSet::report() const {
  std::string out;
  for (int t = 0; t < count_; ++t) out += spaces_[t]->report();
  return out;
}

std::vector<std::unique_ptr<TierCleaner>> TierSet::make_cleaners(TierCleaner::Store* store) const {
  std::vector<std::unique_ptr<TierCleaner>> out;
  for (int t = 0; t < count_; ++t)
    if (auto c = spaces_[t]->make_cleaner(store)) out.push_back(std::move(c));
  return out;
}

}  // namespace hybridstore
