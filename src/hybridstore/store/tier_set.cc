#include "hybridstore/store/tier_set.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "hscommon/log.h"
#include "hsio/async_write_device.h"
#include "hsio/shared_device.h"
#include "hybridstore/kv/deferred.h"
#include "hybridstore/store/api_types.h"
#include "hybridstore/store/storage_hooks.h"
#include "hybridstore/store/store_perf.h"

namespace hybridstore {

TierSet::~TierSet() = default;

int TierSet::open(const std::string& store_path, const Superblock& super, const Config& cfg, std::string* error,
                  std::shared_ptr<BlockDevice> ssd_base) {
  order_ = super.order;
  DeviceOpenOptions o;
  if (!parse_io_backend(cfg.get_str("hybridstore_io_backend"), &o.backend)) o.backend = IoBackend::kAuto;
  o.direct_io = cfg.get_bool("hybridstore_direct_io");
  o.uring_depth = static_cast<unsigned>(cfg.get_int("hybridstore_uring_depth"));
  // The fsid lock guards this directory; this guards the devices, which
  // another directory may name too (block.* links made again, a copied dir).
  o.exclusive = true;
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
  for (Tier tier : ids()) {
    const TierDescriptor& desc = super.tier[tier];
    std::string p = store_path + "/" + tier_device_link(tier);
    const bool shared = tier == Tier::kSsd && ssd_base;
    // What the device is (raw NAND behind the embedded FTL, say): mkfs recorded it.
    std::unique_ptr<BlockDevice> dev = shared ? std::make_unique<SharedBlockDevice>(ssd_base)
                                              : open_tier_device(desc.layout, cfg, p, o, false, &nand, error);
    if (!dev) return errno == EBUSY ? -EBUSY : -ENOENT;
    DeviceLabel label;
    std::string why;
    if (int r = read_labels(dev.get(), &label, &label_status_[tier], &why); r < 0) {
      *error = fmt::format("{} device {}: {}", tier_name(tier), p, why);
      return r;
    }
    if (std::string bad = label_status_[tier].problem(); !bad.empty())
      HS_WARN("{} device {}: label {}; the other copy carries it (fsck --repair rewrites the pair)",
              tier_name(tier), p, bad);
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
    // A label is rewritten only after the superblock of its format is
    // durable (the upgrade's order), so one of this store newer than the
    // superblock is a newer build's half-done work, or damage.
    if (label.format_version > super.format_version || (label.record_version >= 2 && super.format_version < 4)) {
      *error = fmt::format("{} device {}: label of format {} (record version {}) is newer than the store's "
                           "superblock (format {})",
                           tier_name(tier), p, label.format_version, label.record_version, super.format_version);
      return -EINVAL;
    }
    if (dev->size() < label.size || label.size < desc.size) {
      *error = fmt::format("{} device {} is {} bytes but its label says {} (store expects {}): "
                           "truncated or wrong device",
                           tier_name(tier), p, dev->size(), label.size, desc.size);
      return -EINVAL;
    }
    // Test tools put fault injection and device models in between here.
    if (auto hooks = storage_hooks(); hooks && !shared) dev = hooks->wrap_device(store_path, tier, cfg, std::move(dev));
    // Writes that go on while the transaction is queued (DataWriter::
    // write_pending): above the test wrappers, which then see them as the
    // writes they are.
    if (const int n = static_cast<int>(cfg.get_int("hybridstore_async_write_threads"));
        n > 0 && cfg.get_size("hybridstore_async_write_min") > 0)
      dev = std::make_unique<AsyncWriteDevice>(std::move(dev), n);
    // Above any test wrapper: what the cache serves is what the media
    // (faulty or modelled) returned, and every write reaches both.
    if (read_cache_) dev = std::make_unique<CachingBlockDevice>(std::move(dev), read_cache_, tier_index(tier));
    labels_[tier] = label;
    spaces_[tier] = make_tier_space(tier, std::move(dev), super);
    spaces_[tier]->configure(cfg);
    if (int r = spaces_[tier]->check_device(error); r < 0) return r;
  }
  return 0;
}

int TierSet::write_label(Tier t, DeviceLabel* l, std::string* error) {
  std::string why;
  if (int r = write_label_pair(spaces_[t]->device(), l, &why); r < 0) {
    *error = fmt::format("{} device: {}", tier_name(t), why);
    return r;
  }
  labels_[t] = *l;
  std::string ignored;
  DeviceLabel back;
  read_labels(spaces_[t]->device(), &back, &label_status_[t], &ignored);
  return 0;
}

DeviceLabel store_tier_label(const std::string& store_path, const Superblock& sb, Tier t, const DeviceLabel& prev) {
  DeviceLabel l = prev;
  l.fsid = sb.fsid;
  l.role = t;
  l.format_version = sb.format_version;
  l.flags |= kLabelMkfsDone;
  l.device_kind = sb.tier[t].layout.device;
  l.head = sb.tier[t].reserved;
  l.tiers.clear();
  if (t == Tier::kSsd) {
    l.tiers = label_tier_table(sb);
    for (Tier u : tier_ids(sb.tiers())) {
      std::error_code ec;
      const std::string link = store_path + "/" + tier_device_link(u);
      const std::filesystem::path real = std::filesystem::canonical(link, ec);
      const std::string hint = ec ? link : real.string();
      // A hint is a hint: one too long to keep is left out, not the label.
      if (hint.size() <= kLabelMaxMetaValue) l.meta[std::string("path_block.") + tier_name(u)] = hint;
    }
    std::string enc;
    if (encode_label(l, &enc) == -E2BIG) {
      for (Tier u : tier_ids(sb.tiers())) l.meta.erase(std::string("path_block.") + tier_name(u));
      HS_WARN("the device paths do not fit in the ssd label beside its other keys; it keeps none");
    }
  }
  return l;
}

int TierSet::load(rocksdb::DB* db, const Config& cfg, const PerTier<std::vector<Interval>>& lent,
                  std::string* error) {
  coarsest_unit_ = 0;
  finest_unit_ = UINT64_MAX;
  for (Tier t : ids()) {
    coarsest_unit_ = std::max(coarsest_unit_, spaces_[t]->unit());
    finest_unit_ = std::min(finest_unit_, spaces_[t]->unit());
    if (int r = spaces_[t]->load(db, cfg, lent[t], error); r < 0) return r;
  }
  return 0;
}

void TierSet::set_gauges() {
  SpaceCounters counters;
  counters.set = &perf_->set;
  counters.direct_unit_bytes = perf_->ssd_direct_unit_bytes;
  counters.sections = [perf = perf_](const std::vector<std::string>& names) { return section_counters(perf, names); };
  for (Tier t : ids()) spaces_[t]->set_counters(counters);
  PerfCounterSet& ps = perf_->set;
  for (Tier t : ids()) {
    const TierSpace::Usage u = spaces_[t]->usage();
    ps.set(perf_->bytes_total[t], u.total);
    ps.set(perf_->bytes_used[t], u.allocated);
  }
}

void TierSet::flush_devices() {
  for (Tier t : ids())
    if (spaces_[t]) spaces_[t]->device()->flush();
}

std::optional<Tier> TierSet::home(const Onode& o) const {
  const int r = order_.heaviest(o.extents.bytes_by_tier());
  return r < 0 ? std::nullopt : std::optional<Tier>(order_[r]);
}

PerTier<BlockDevice*> TierSet::devices() const {
  PerTier<BlockDevice*> d;
  for (Tier t : ids()) d[t] = spaces_[t]->device();
  return d;
}

void TierSet::count_allocated(Tier t, uint64_t bytes) {
  perf_->set.inc(perf_->write_bytes[t], bytes);
  perf_->set.inc(perf_->bytes_used[t], bytes);
}

void TierSet::release(const PExtent& e) {
  perf_->set.dec(perf_->bytes_used[e.tier], e.length);
  space(e.tier).release(e.offset, e.length);
}

bool TierSet::keeps_state() const {
  for (Tier t : ids())
    if (spaces_[t]->keeps_state()) return true;
  return false;
}

TierSet::Drained TierSet::drain_state(TierSpace::Drain how, rocksdb::WriteBatchBase* batch) const {
  // Locks in id order, the same for every drain.
  Drained d;
  for (Tier t : ids())
    if (spaces_[t]->keeps_state()) d.locks_[t] = spaces_[t]->drain_state(how, batch, &d.regions_[t]);
  return d;
}

void TierSet::Drained::queue_regions(DeferredWriter* deferred) const {
  for (Tier t : tier_ids(kMaxTiers))
    for (const auto& r : regions_[t]) deferred->write_region(t, r.begin, r.end);
}

TierSet::Drained::~Drained() {
  for (int id = kMaxTiers - 1; id >= 0; --id)
    if (locks_[id].owns_lock()) locks_[id].unlock();
}

void TierSet::usage(StoreStats* st) const {
  st->tiers = count();
  st->order = order_;
  for (Tier t : ids()) {
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

void TierSet::memory(uint64_t* items, uint64_t* bytes) const {
  *items = *bytes = 0;
  for (Tier t : ids()) {
    uint64_t i = 0, b = 0;
    spaces_[t]->memory(&i, &b);
    *items += i;
    *bytes += b;
  }
}

std::string TierSet::report() const {
  std::string out;
  for (Tier t : ids()) out += spaces_[t]->report();
  return out;
}

std::vector<std::unique_ptr<TierCleaner>> TierSet::make_cleaners(TierCleaner::Store* store) const {
  std::vector<std::unique_ptr<TierCleaner>> out;
  for (Tier t : ids())
    if (auto c = spaces_[t]->make_cleaner(store)) out.push_back(std::move(c));
  return out;
}

}  // namespace hybridstore
