#include "hybridstore/space/tier_space.h"
#include "hybridstore/space/tier_device.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>

#include "ftl/nand_block_device.h"
#include "ftl/nand_media.h"
#include "hscommon/log.h"
#include "hscommon/perf_counters.h"
#include "hybridstore/alloc/allocator.h"
#include "hybridstore/kv/deferred.h"
#include "hybridstore/sections/section_cleaner.h"
#include "hybridstore/sections/ssd_sections.h"

namespace hybridstore {

namespace {

// A disk tier, or an SSD made without HFM sections: extents written in place.
class ExtentSpace final : public TierSpace {
 public:
  // `defers_small`: a small synchronous write would cost this device a seek
  // (a disk), so writes below hybridstore_deferred_max ride in the batch
  // and join a sorted batch later; otherwise every write is made before the
  // commit.
  ExtentSpace(Tier tier, TierLayout layout, std::unique_ptr<BlockDevice> dev, const Superblock& super,
              bool defers_small)
      : TierSpace(tier, layout, std::move(dev), super),
        alloc_(super.tier[tier].size, unit()),
        defers_small_(defers_small) {}

  void configure(const Config& cfg) override { deferred_max_ = cfg.get_size("hybridstore_deferred_max"); }

  int check_device(std::string* error) const override {
    // Units are written whole, without read-modify-write.
    if (device()->alignment() > unit()) {
      *error = fmt::format("{} device {} needs {}-byte aligned I/O, coarser than the allocation unit {}",
                           tier_name(tier()), device()->path(), device()->alignment(), unit());
      return -EINVAL;
    }
    return 0;
  }

  int load(rocksdb::DB* db, const Config&, const std::vector<Interval>& lent, std::string* error) override {
    std::vector<Interval> chunks = lent;
    std::sort(chunks.begin(), chunks.end(), [](const Interval& a, const Interval& b) { return a.offset < b.offset; });
    uint64_t lent_bytes = 0;
    for (size_t i = 0; i < chunks.size(); ++i) {
      const Interval& c = chunks[i];
      if (c.offset < reserved() || c.offset + c.length > size() || c.offset % unit() || c.length % unit() ||
          (i && chunks[i - 1].offset + chunks[i - 1].length > c.offset)) {
        *error = fmt::format("{}: the KV file system's range {}~{} is not inside the tier's space, unit-aligned "
                             "and apart from the others",
                             tier_name(tier()), c.offset, c.length);
        return -EIO;
      }
      lent_bytes += c.length;
    }
    // Free space is the complement of what the bitmap marks used and what
    // the kvfs owns; an overlap of the two is fsck's to report.
    size_t next = 0;
    auto add_free = [&](uint64_t b, uint64_t e) {
      while (next < chunks.size() && chunks[next].offset + chunks[next].length <= b) ++next;
      for (size_t k = next; b < e && k < chunks.size() && chunks[k].offset < e; ++k) {
        if (chunks[k].offset > b) alloc_.init_add_free(b, chunks[k].offset - b);
        b = std::max(b, chunks[k].offset + chunks[k].length);
      }
      if (e > b) alloc_.init_add_free(b, e - b);
    };
    uint64_t pos = reserved();
    int r = load_bitmap(
        db,
        [&](uint64_t off, uint64_t len) {
          if (off > pos) add_free(pos, off);
          pos = std::max(pos, off + len);
        },
        error);
    if (r < 0) return r;
    if (size() > pos) add_free(pos, size());
    std::lock_guard<std::mutex> l(lent_mutex_);
    lent_.clear();
    for (const auto& c : chunks) lent_[c.offset] = c.length;
    lent_bytes_ = lent_bytes;
    return 0;
  }

  // G = align_up(max(1 MiB, A), A) for the kvfs's allocation unit A
  // (kvfs.md 1): 64 KiB until the store has the option (step 7); and whole
  // units of this tier.
  uint64_t lend_unit() const override {
    constexpr uint64_t kA = 64 << 10, kMin = 1 << 20;
    const uint64_t g = (std::max(kMin, kA) + kA - 1) / kA * kA;
    return (g + unit() - 1) / unit() * unit();
  }

  uint64_t lendable() const override { return alloc_.free_bytes() / lend_unit() * lend_unit(); }

  int lend(uint64_t want, std::vector<Interval>* out) override {
    std::vector<Interval> got;
    if (int r = alloc_.allocate_aligned(want, lend_unit(), &got); r < 0) return r;
    std::lock_guard<std::mutex> l(lent_mutex_);
    for (const auto& g : got) {
      lent_[g.offset] = g.length;
      lent_bytes_ += g.length;
    }
    out->insert(out->end(), got.begin(), got.end());
    return 0;
  }

  void take_back(const std::vector<Interval>& ranges) override {
    std::vector<Interval> back;
    {
      std::lock_guard<std::mutex> l(lent_mutex_);
      for (const auto& r : ranges) {
        // Only what is lent: a range given back twice must not free space
        // an object has since been given.
        if (!take_from_lent_locked(r.offset, r.length)) {
          HS_ERROR("{}: the KV file system gave back {}~{}, which it was not lent", tier_name(tier()), r.offset,
                   r.length);
          continue;
        }
        back.push_back(r);
      }
    }
    alloc_.release(back);
  }

  void set_floor(uint64_t bytes) override {
    floor_ = bytes;
    alloc_.set_floor(bytes);
  }

  uint64_t floor() const override { return floor_; }

  std::vector<Interval> lent() const override {
    std::lock_guard<std::mutex> l(lent_mutex_);
    std::vector<Interval> out;
    for (const auto& [off, len] : lent_) out.push_back({off, len});
    return out;
  }

  int write_new(const Request& req, const char* data, const TxnWrites& to, std::vector<PExtent>* out) override {
    std::vector<Interval> iv;
    if (int r = alloc_.allocate(req.length, req.hint, &iv); r < 0) return r;
    const bool deferred = defers_small_ && req.length < deferred_max_;
    uint64_t pos = 0;
    for (const auto& i : iv) {
      out->push_back(PExtent{tier(), i.offset, i.length});
      if (deferred)
        to.records->push_back(to.deferred->stage(to.batch, tier(), i.offset, std::string(data + pos, i.length)));
      else
        to.writes->push_back(TierWrite{tier(), i.offset, data + pos, i.length});
      pos += i.length;
    }
    return 0;
  }

  // Strictly smaller: a write of the limit's size, deferred, would cross the
  // device twice (the log, then its place) where one to new space crosses
  // it once.
  bool overwrites_in_place(uint64_t len) const override { return len < deferred_max_; }

  void release(uint64_t offset, uint64_t length) override { alloc_.release({{offset, length}}); }

  Usage usage() const override {
    Usage u;
    u.total = size() - reserved();
    const uint64_t free = alloc_.free_bytes(), floor = floor_;
    uint64_t lent;
    {
      std::lock_guard<std::mutex> l(lent_mutex_);
      lent = lent_bytes_;
    }
    // The floor is the kvfs's to grow into: no object can have it.
    u.free = free > floor ? free - floor : 0;
    u.allocated = u.total - std::min(u.total, free + lent);
    u.consumed = u.allocated;
    u.fragmentation = alloc_.fragmentation();
    return u;
  }

  void for_each_free(const Range& fn) const override { alloc_.for_each_free(fn); }

 private:
  // Removes [off, off + len) from lent_ when all of it is lent.
  bool take_from_lent_locked(uint64_t off, uint64_t len) {
    auto it = lent_.upper_bound(off);
    if (it == lent_.begin()) return false;
    --it;
    const uint64_t b = it->first, e = it->first + it->second;
    if (off + len > e) return false;
    lent_.erase(it);
    if (off > b) lent_[b] = off - b;
    if (off + len < e) lent_[off + len] = e - off - len;
    lent_bytes_ -= len;
    return true;
  }

  ExtentAllocator alloc_;
  // What the kvfs was lent, merged only as lent: offset -> length. The
  // allocator forgets lent space, so this is what usage() and fsck know.
  mutable std::mutex lent_mutex_;
  std::map<uint64_t, uint64_t> lent_;
  uint64_t lent_bytes_ = 0;
  std::atomic<uint64_t> floor_{0};
  const bool defers_small_;
  uint64_t deferred_max_ = 0;
};

// A flash tier under HFM data sections.
class SectionSpace final : public TierSpace {
 public:
  SectionSpace(Tier tier, TierLayout layout, std::unique_ptr<BlockDevice> dev, const Superblock& super)
      : TierSpace(tier, layout, std::move(dev), super) {}

  void configure(const Config& cfg) override {
    deferred_max_ = cfg.get_size("hybridstore_deferred_max");
    direct_units_ = cfg.get_bool("hybridstore_ssd_direct_units");
    // Small overwrites go to new space (hybridstore_ssd_small_overwrites =
    // redirect; auto: on raw flash, where an in-place page write costs the
    // FTL a merge). Only a staged tier can: a redirected write elsewhere
    // would reach the device before the commit.
    const std::string mode = cfg.get_str("hybridstore_ssd_small_overwrites");
    redirect_small_overwrites_ = mode == "redirect" || (mode == "auto" && layout().device == DeviceKind::kNand);
  }

  // Pieces smaller than a sector are written by read-modify-write: any
  // device alignment will do.
  int check_device(std::string*) const override { return 0; }

  int load(rocksdb::DB* db, const Config& cfg, const std::vector<Interval>& lent, std::string* error) override {
    SsdSections::Ranges chunks;
    for (const auto& c : lent) chunks.emplace_back(c.offset, c.length);
    std::vector<std::pair<uint64_t, uint64_t>> used;
    if (int r = load_bitmap(db, [&](uint64_t off, uint64_t len) { used.emplace_back(off, len); }, error); r < 0)
      return r;
    // Live placements the bitmap does not mark are crash leftovers.
    auto marked = [&](uint64_t off, uint64_t len) {
      auto it = std::upper_bound(used.begin(), used.end(), std::make_pair(off, UINT64_MAX));
      if (it == used.begin()) return false;
      --it;
      return it->first <= off && off + len <= it->first + it->second;
    };
    return SsdSections::open(cfg, db, reserved(), size() - reserved(), marked, chunks, &sections_, error);
  }

  uint64_t lend_unit() const override { return sections_->lend_unit(); }
  uint64_t lendable() const override { return sections_->lendable(); }

  int lend(uint64_t want, std::vector<Interval>* out) override {
    SsdSections::Ranges got;
    if (int r = sections_->lend(want, &got); r < 0) return r;
    for (const auto& [off, len] : got) out->push_back({off, len});
    return 0;
  }

  void take_back(const std::vector<Interval>& ranges) override {
    SsdSections::Ranges back;
    for (const auto& r : ranges) back.emplace_back(r.offset, r.length);
    if (sections_->take_back(back) < 0)
      HS_ERROR("{}: the KV file system gave back ranges that are not whole lent erase units; kept lent",
               tier_name(tier()));
  }

  void set_floor(uint64_t bytes) override {
    floor_ = bytes;
    sections_->set_floor(bytes);
  }

  uint64_t floor() const override { return floor_; }

  std::vector<Interval> lent() const override {
    std::vector<Interval> out;
    for (const auto& [off, len] : sections_->lent()) out.push_back({off, len});
    return out;
  }

  int write_new(const Request& req, const char* data, const TxnWrites& to, std::vector<PExtent>* out) override {
    const uint64_t align = device()->alignment();
    // Runs under the sections' lock, so no write unit can be handed out for
    // writing between the allocation and the staging of its data.
    auto stage = [&](const std::vector<SsdSections::Piece>& pieces) {
      uint64_t pos = 0;
      for (const auto& p : pieces) {
        const char* src = data + pos;
        pos += p.length;
        // Whole write units go to the device with the transaction's other
        // writes, before it commits: the space is new, so nothing
        // references it until then. Older data still headed for that space
        // (a record, a record replayed after a crash, a region still to be
        // written) sends the unit the ordered way instead: an in-place
        // record applied after it. Staged records of an earlier owner there
        // are dead (the space was free) and leave first: no region will come
        // for them now.
        if (p.direct) {
          to.deferred->discard_held(tier(), p.offset, p.length);
          if (p.offset % align == 0 && p.length % align == 0 && reinterpret_cast<uintptr_t>(src) % 4096 == 0 &&
              to.deferred->range_quiet(tier(), p.offset, p.length)) {
            to.writes->push_back(TierWrite{tier(), p.offset, src, p.length, /*before_queue=*/true});
            if (counters_.set) counters_.set->inc(counters_.direct_unit_bytes, p.length);
            continue;
          }
        }
        to.records->push_back(
            to.deferred->stage(to.batch, tier(), p.offset, std::string(src, p.length), p.staged));
      }
    };
    std::vector<SsdSections::Piece> pieces;
    // The object's section and hotness group decide where its data goes.
    const double hotness = req.hotness ? req.hotness() : 0;
    if (int r = sections_->allocate(req.key, req.object_size, req.length, hotness, req.owner, &pieces, stage,
                                    direct_units_);
        r < 0)
      return r;
    for (const auto& p : pieces) out->push_back(PExtent{tier(), p.offset, p.length, p.staged, p.direct});
    return 0;
  }

  bool overwrites_in_place(uint64_t len) const override {
    return len < deferred_max_ && !redirect_small_overwrites_;
  }
  // Its writes are records applied in staging order, or whole units written
  // before the commit only where no older record or region covers them, so
  // reuse cannot overtake an old one.
  bool reuse_at_commit() const override { return true; }
  bool moves_rewrite_whole() const override { return true; }

  void release(uint64_t offset, uint64_t length) override { sections_->release(offset, length); }

  bool bypass(const ObjectPlacementKey& key, uint64_t object_size) const override {
    return sections_->bypass(key, object_size);
  }

  Usage usage() const override {
    // Space a section holds but cannot give any object yet (rounding gaps,
    // holes awaiting cleaning) counts as consumed.
    Usage u;
    u.total = size() - reserved();
    u.consumed = sections_->consumed_bytes();
    u.allocated = sections_->live_bytes();
    const uint64_t free = u.total - std::min(u.total, u.consumed), floor = floor_;
    u.free = free > floor ? free - floor : 0;
    u.fragmentation =
        u.consumed ? 1.0 - static_cast<double>(u.allocated) / static_cast<double>(u.consumed) : 0;
    return u;
  }

  void for_each_free(const Range& fn) const override {
    // The sections track live placements, not free space: the gaps between
    // them (from the reserved head on) are free, but for what is lent.
    uint64_t pos = reserved();
    std::vector<std::pair<uint64_t, uint64_t>> live = sections_->lent();
    sections_->for_each_live([&](uint64_t off, uint64_t len) { live.emplace_back(off, len); });
    std::sort(live.begin(), live.end());
    for (const auto& [off, len] : live) {
      if (off > pos) fn(pos, off - pos);
      pos = std::max(pos, off + len);
    }
    if (size() > pos) fn(pos, size() - pos);
  }

  std::string verify() const override {
    std::string bad = sections_->verify();
    return bad.empty() ? bad : "sections: " + bad;
  }

  bool keeps_state() const override { return true; }

  std::unique_lock<std::mutex> drain_state(Drain how, rocksdb::WriteBatchBase* batch,
                                           std::vector<Region>* regions) override {
    std::unique_lock<std::mutex> l(sections_->lock());
    std::vector<SsdSections::Region> rs;
    switch (how) {
      case Drain::kCommit: sections_->finish_locked(batch, &rs); break;
      case Drain::kTick: sections_->tick_locked(batch, &rs); break;
      case Drain::kFlush: sections_->flush_locked(batch, &rs); break;
    }
    for (const auto& r : rs) regions->push_back(Region{r.begin, r.end});
    return l;
  }

  void set_counters(const SpaceCounters& counters) override {
    counters_ = counters;
    if (counters.sections) sections_->set_perf(counters.sections(sections_->section_names()));
  }

  std::string report() override { return sections_->report(); }
  void memory(uint64_t* items, uint64_t* bytes) override { sections_->memory(items, bytes); }

  std::unique_ptr<TierCleaner> make_cleaner(TierCleaner::Store* store) override {
    return std::make_unique<SectionCleaner>(store, tier(), sections_.get());
  }

 private:
  std::unique_ptr<SsdSections> sections_;
  std::atomic<uint64_t> floor_{0};
  SpaceCounters counters_;
  uint64_t deferred_max_ = 0;
  bool direct_units_ = true;
  bool redirect_small_overwrites_ = false;
};

}  // namespace

TierLayout tier_layout(Tier tier, const std::map<std::string, std::string>& mkfs_options) {
  return format1_tier_layout(tier, mkfs_options);
}

uint64_t tier_alloc_unit(Tier tier, const TierLayout& layout, const Config& cfg) {
  // Sections allocate in blocks of their own option (sections are the SSD's).
  if (layout.space == SpaceKind::kSections) return cfg.get_size("hybridstore_ssd_block_size");
  return cfg.get_size(tier_option(tier, "alloc_unit"));
}

const char* device_kind_name(DeviceKind kind) { return kind == DeviceKind::kNand ? "nand" : ""; }

Media layout_media(const TierLayout& layout) {
  return layout.device == DeviceKind::kNand ? Media::kSolidState : Media::kUnknown;
}

std::unique_ptr<BlockDevice> open_tier_device(const TierLayout& layout, const Config& cfg, const std::string& path,
                                              const DeviceOpenOptions& options, bool create,
                                              const NandCounters* counters, std::string* error) {
  if (layout.device == DeviceKind::kBlock) return open_block_device(path, options, error);
  // Raw flash behind the embedded FTL; mkfs formats a new flash file.
  auto dev = ftl::open_nand_block_device(cfg, path, create, error);
  if (dev && counters) {
    // open_nand_block_device makes a NandBlockDevice; its FTL counters are
    // the one thing a NAND tier adds to the store's.
    auto* nand = static_cast<ftl::NandBlockDevice*>(dev.get());
    nand->set_perf({counters->set, counters->merges, counters->erases, counters->pages_copied,
                    counters->host_pages_written});
  }
  return dev;
}

DeviceKind detect_device_kind(const std::string& path) {
  return ftl::looks_like_flash_image(path) ? DeviceKind::kNand : DeviceKind::kBlock;
}

std::unique_ptr<BlockDevice> open_detected_device(const Config& cfg, const std::string& path,
                                                  const DeviceOpenOptions& options, const NandCounters* counters,
                                                  std::string* error) {
  TierLayout layout;
  layout.device = detect_device_kind(path);
  return open_tier_device(layout, cfg, path, options, false, counters, error);
}

uint64_t erase_block_bytes(const BlockDevice* dev) {
  auto* nand = dynamic_cast<const ftl::NandBlockDevice*>(dev);
  return nand ? nand->erase_block_bytes() : 0;
}

namespace {

// What shapes a NAND tier's image: its kind, the chip's geometry and the
// FTL's layout. Timing and fault models are the simulator's, not the image's.
bool shapes_nand_device(const OptionSpec& o) {
  return o.mkfs_only && (o.name == "hybridstore_ssd_kind" || o.name.rfind("hybridstore_nand_", 0) == 0 ||
                         o.name.rfind("hybridstore_ftl_", 0) == 0);
}

}  // namespace

void record_device_options(const Config& cfg, DeviceKind kind, DeviceLabel* label) {
  if (kind != DeviceKind::kNand) return;
  for (const OptionSpec& o : option_registry())
    if (shapes_nand_device(o)) label->meta[kLabelDeviceOptionPrefix + o.name] = cfg.get_text(o.name);
}

int take_label_device_options(const DeviceLabel& label, const std::string& where, Config* cfg,
                              std::string* error) {
  if (label.device_kind != DeviceKind::kNand) return 0;
  Config from_label;
  for (const OptionSpec& o : option_registry()) {
    if (!shapes_nand_device(o)) continue;
    auto it = label.meta.find(kLabelDeviceOptionPrefix + o.name);
    if (it == label.meta.end()) {
      *error = fmt::format("the label of {} (raw NAND) does not record {}, which mount needs before RocksDB: "
                           "damaged, or not made by mkfs",
                           where, o.name);
      return -EIO;
    }
    std::string why;
    if (from_label.set(o.name, it->second, &why) < 0) {
      *error = fmt::format("the label of {} records {}='{}', which is not a valid value: {}", where, o.name,
                           it->second, why);
      return -EIO;
    }
    if (!cfg->is_default(o.name) && cfg->get_text(o.name) != from_label.get_text(o.name)) {
      *error = fmt::format("{} is {} in the configuration, but the label of {} says the device was made with "
                           "{}; remove the option or set it to the label's value",
                           o.name, cfg->get_text(o.name), where, from_label.get_text(o.name));
      return -EINVAL;
    }
  }
  for (const OptionSpec& o : option_registry()) {
    std::string ignored;
    if (shapes_nand_device(o) && cfg->is_default(o.name)) cfg->set(o.name, from_label.get_text(o.name), &ignored);
  }
  return 0;
}

TierSpace::TierSpace(Tier tier, TierLayout layout, std::unique_ptr<BlockDevice> dev, const Superblock& super)
    : tier_(tier),
      layout_(layout),
      dev_(std::move(dev)),
      size_(super.tier[tier].size),
      reserved_(super.tier[tier].reserved),
      unit_(super.tier[tier].alloc_unit),
      csum_block_(static_cast<uint32_t>(std::min<uint64_t>(super.csum_block, unit_))),
      freelist_(tier, unit_) {}

TierSpace::~TierSpace() = default;

void TierSpace::configure(const Config&) {}
int TierSpace::check_device(std::string*) const { return 0; }
void TierSpace::set_counters(const SpaceCounters&) {}
bool TierSpace::overwrites_in_place(uint64_t) const { return false; }
bool TierSpace::reuse_at_commit() const { return false; }
bool TierSpace::moves_rewrite_whole() const { return false; }
bool TierSpace::bypass(const ObjectPlacementKey&, uint64_t) const { return false; }
std::string TierSpace::verify() const { return ""; }
std::string TierSpace::report() { return ""; }
void TierSpace::memory(uint64_t* items, uint64_t* bytes) { *items = *bytes = 0; }
bool TierSpace::keeps_state() const { return false; }
std::unique_lock<std::mutex> TierSpace::drain_state(Drain, rocksdb::WriteBatchBase*, std::vector<Region>*) {
  return {};
}
std::unique_ptr<TierCleaner> TierSpace::make_cleaner(TierCleaner::Store*) { return nullptr; }

int TierSpace::load_bitmap(rocksdb::DB* db, const Range& used, std::string* error) const {
  return freelist_.load(db, size_, used, error);
}

std::unique_ptr<TierSpace> make_tier_space(Tier tier, std::unique_ptr<BlockDevice> dev, const Superblock& super) {
  const TierLayout layout = super.tier[tier].layout;
  if (layout.space == SpaceKind::kSections)
    return std::make_unique<SectionSpace>(tier, layout, std::move(dev), super);
  // A small synchronous write to a disk costs a seek: the slowest tier, the
  // disk, defers them; faster extent tiers take them directly.
  const bool slowest = tier == super.order.slowest();
  return std::make_unique<ExtentSpace>(tier, layout, std::move(dev), super, slowest);
}

int format_tier_space(Tier tier, const Config& cfg, const Superblock& super, rocksdb::WriteBatchBase* batch,
                      std::string* error) {
  const TierDescriptor& d = super.tier[tier];
  if (d.layout.space != SpaceKind::kSections) return 0;  // an empty bitmap is an empty tier
  return SsdSections::format(cfg, d.reserved, d.size - d.reserved, batch, error);
}

}  // namespace hybridstore
