#include "hybridstore/tier/heat_tracker.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <functional>

#include <fmt/format.h>

#include "hscommon/config.h"
#include "hscommon/encoding.h"
#include "hscommon/string_table.h"

namespace hybridstore {

namespace {

constexpr uint32_t kStateTag = 0x48545354;  // "HTST"
constexpr uint8_t kStateVersion = 1;

uint64_t key_hash(std::string_view key) { return std::hash<std::string_view>()(key); }

}  // namespace

HeatTrackerOptions heat_tracker_options_from_config(const Config& conf) {
  HeatTrackerOptions o;
  o.max_objects = static_cast<size_t>(conf.get_int("hybridstore_tier_heat_max_objects"));
  o.window_us = static_cast<uint64_t>(conf.get_int("hybridstore_tier_heat_window_sec")) * 1000000;
  o.decay = conf.get_double("hybridstore_tier_heat_decay");
  o.continuation_us =
      static_cast<uint64_t>(conf.get_int("hybridstore_tier_heat_continuation_ms")) * 1000;
  o.on_demand = conf.get_str("hybridstore_tier_heat_mode") == "on_demand";
  o.max_bytes = conf.get_size("hybridstore_tier_heat_memory");
  return o;
}

struct HeatTracker::Shard {
  mutable std::mutex mu;
  StringTable<Entry> map;
  // Keys evicted or forgotten since the last export (their stored records must go).
  std::vector<std::string> erased;
  // Set when `erased` hit its cap and dropped keys: the next export is full.
  bool erase_overflow = false;
  // On demand without a spill: operands waiting for export_dirty(), in order.
  std::vector<HeatOp> pending;
  // Operands leave the shard in the order its lock made them, though they
  // are written outside it. Otherwise an eviction's merge could reach
  // RocksDB after a forget's delete of the same key and leave a record for
  // a removed object. A ticket is taken under `mu` and served in turn.
  uint64_t spill_tickets = 0;  // under mu
  std::mutex spill_mu;
  std::condition_variable spill_cv;
  uint64_t spill_turn = 0;  // under spill_mu
};

HeatTracker::HeatTracker(const HeatTrackerOptions& opts) : opts_(opts) {
  if (opts_.shards == 0 || (opts_.shards & (opts_.shards - 1)) != 0) opts_.shards = 32;
  if (opts_.max_objects < 1) opts_.max_objects = 1;
  while (opts_.shards > 1 && opts_.shards > opts_.max_objects) opts_.shards /= 2;
  if (!(opts_.decay >= 0.0)) opts_.decay = 0.0;  // also catches NaN
  if (opts_.decay > 1.0) opts_.decay = 1.0;
  if (opts_.window_us == 0) opts_.window_us = 1;
  // A shard's table grows in chunks of 64 entries: with a small hot set,
  // fewer shards keep each one able to hold a few hundred entries, so the
  // byte cap evicts the coldest of many, not of a handful.
  if (opts_.on_demand)
    while (opts_.shards > 1 && opts_.max_bytes / opts_.shards < 256 * StringTable<Entry>::bytes_per_entry(0))
      opts_.shards /= 2;
  shard_cap_ = std::min<size_t>(opts_.max_objects / opts_.shards, StringTable<Entry>::kMaxEntries);
  erase_cap_ = std::max<size_t>(64, shard_cap_ / 8);
  shards_ = std::make_unique<Shard[]>(opts_.shards);
  if (opts_.on_demand) {
    shard_cap_ = StringTable<Entry>::kMaxEntries;
    const size_t fixed = sizeof(*this) + opts_.shards * sizeof(Shard);
    shard_bytes_ = (opts_.max_bytes > fixed ? opts_.max_bytes - fixed : 0) / opts_.shards;
  }
}

HeatTracker::~HeatTracker() = default;

HeatTracker::Shard& HeatTracker::shard_for(uint64_t hash) const {
  // High bits pick the shard; the table itself uses the low bits for the slot.
  return shards_[(hash >> 40) & (opts_.shards - 1)];
}

double HeatTracker::decayed(double v, uint32_t from, uint32_t to) const {
  return heat_decayed(v, from, to, opts_.decay);
}

void HeatTracker::fold(Entry* e, uint32_t epoch) const {
  if (e->epoch >= epoch) return;
  double f = decayed(static_cast<double>(e->hist_f) + e->cur_f, e->epoch, epoch);
  double r = decayed(static_cast<double>(e->hist_r) + e->cur_r, e->epoch, epoch);
  e->hist_f = static_cast<float>(f);
  e->hist_r = static_cast<float>(r);
  e->cur_f = 0;
  e->cur_r = 0;
  // The same arithmetic as fold_heat(), so a delta merged into its stored
  // record equals what the fold of every access would give.
  e->d_hist_f = static_cast<float>(decayed(static_cast<double>(e->d_hist_f) + e->d_cur_f, e->epoch, epoch));
  e->d_hist_r = static_cast<float>(decayed(static_cast<double>(e->d_hist_r) + e->d_cur_r, e->epoch, epoch));
  e->d_cur_f = 0;
  e->d_cur_r = 0;
  e->epoch = epoch;
}

HeatRecord HeatTracker::delta_of(const Entry& e) const {
  HeatRecord r;
  r.size = e.size;
  r.last_offset = e.last_offset;
  r.last_end = e.last_end;
  r.last_time_us = e.last_time_us;
  r.hist_f = e.d_hist_f;
  r.hist_r = e.d_hist_r;
  r.cur_f = e.d_cur_f;
  r.cur_r = e.d_cur_r;
  r.epoch = e.epoch;
  r.last_type = e.last_type;
  r.decay = opts_.decay;
  return r;
}

bool HeatTracker::over_budget(const Shard& s, size_t key_len) const {
  return opts_.on_demand && s.map.memory_bytes_with(key_len) > shard_bytes_;
}

void HeatTracker::spill(Shard* s, std::vector<HeatOp>* ops, uint64_t ticket) {
  if (ops->empty()) return;
  std::unique_lock<std::mutex> turn(s->spill_mu);
  s->spill_cv.wait(turn, [&] { return s->spill_turn == ticket; });
  if (spill_) {
    spill_(std::move(*ops));
  } else {
    std::lock_guard<std::mutex> g(s->mu);
    for (auto& op : *ops) s->pending.push_back(std::move(op));
  }
  ops->clear();
  ++s->spill_turn;
  s->spill_cv.notify_all();
}

double HeatTracker::coldness_f(const Entry& e, uint32_t epoch) const {
  return decayed(static_cast<double>(e.hist_f) + e.cur_f, e.epoch, epoch);
}

void HeatTracker::record(std::string_view key, AccessType type, uint64_t offset, uint64_t len,
                         uint64_t now_us, uint64_t object_size, bool counts) {
  const uint64_t h = key_hash(key);
  Shard& s = shard_for(h);
  uint32_t epoch = epoch_.load(std::memory_order_relaxed);
  std::vector<HeatOp> evicted;
  uint64_t ticket = 0;
  {
    std::lock_guard<std::mutex> g(s.mu);
    ptrdiff_t found = s.map.find(key, h);
    uint64_t end = offset + len < offset ? UINT64_MAX : offset + len;
    if (found < 0) {
      if (s.map.size() >= shard_cap_) evict_coldest(&s, epoch, &evicted);
      while (s.map.size() > 0 && over_budget(s, key.size())) evict_coldest(&s, epoch, &evicted);
      Entry e;
      e.size = object_size;
      e.last_type = type;
      e.last_offset = offset;
      e.last_end = end;
      e.last_time_us = now_us;
      e.cur_f = counts ? 1 : 0;
      e.cur_r = counts ? 1 : 0;
      e.d_cur_f = e.cur_f;
      e.d_cur_r = e.cur_r;
      e.epoch = epoch;
      e.dirty = true;
      s.map.insert(key, h, e);
      if (!evicted.empty()) ticket = s.spill_tickets++;
    } else {
      Entry& e = s.map.at(static_cast<size_t>(found)).value;
      fold(&e, epoch);
      e.size = object_size;
      e.dirty = true;
      if (counts && e.cur_f != UINT32_MAX) {
        ++e.cur_f;
        if (e.d_cur_f != UINT32_MAX) ++e.d_cur_f;
      }
      // A clock that stepped backwards never counts as "within 0.5 s".
      bool continues = type == e.last_type && now_us >= e.last_time_us &&
                       now_us - e.last_time_us < opts_.continuation_us && offset == e.last_end;
      if (continues) {
        e.last_end = end;
        e.last_time_us = now_us;
      } else {
        if (counts && e.cur_r != UINT32_MAX) {
          ++e.cur_r;
          if (e.d_cur_r != UINT32_MAX) ++e.d_cur_r;
        }
        e.last_type = type;
        e.last_offset = offset;
        e.last_end = end;
        e.last_time_us = now_us;
      }
    }
  }
  spill(&s, &evicted, ticket);
}

void HeatTracker::note_erased(Shard* s, const std::string& key) {
  if (s->erased.size() < erase_cap_) {
    s->erased.push_back(key);
  } else {
    s->erase_overflow = true;
  }
}

void HeatTracker::evict_coldest(Shard* s, uint32_t epoch, std::vector<HeatOp>* out) {
  size_t n = std::max<size_t>(1, (opts_.on_demand ? s->map.size() : shard_cap_) / 16);
  if (n > s->map.size()) n = s->map.size();
  struct Cand {
    double f;
    uint64_t t;
    size_t index;
  };
  std::vector<Cand> c;
  c.reserve(s->map.size());
  for (size_t i = 0; i < s->map.size(); ++i) {
    const Entry& e = s->map.at(i).value;
    c.push_back({coldness_f(e, epoch), e.last_time_us, i});
  }
  auto colder = [](const Cand& a, const Cand& b) {
    if (a.f != b.f) return a.f < b.f;
    return a.t < b.t;
  };
  if (n < c.size()) std::nth_element(c.begin(), c.begin() + static_cast<ptrdiff_t>(n), c.end(), colder);
  // Highest index first: an erase moves the table's last entry into the hole,
  // and the last entry is then never one still to be erased.
  std::sort(c.begin(), c.begin() + static_cast<ptrdiff_t>(n),
            [](const Cand& a, const Cand& b) { return a.index > b.index; });
  for (size_t i = 0; i < n; ++i) {
    auto& kv = s->map.at(c[i].index);
    if (!opts_.on_demand) {
      note_erased(s, kv.key);
    } else if (kv.value.dirty) {
      // Its history is the stored record plus this: nothing is lost.
      fold(&kv.value, epoch);
      out->push_back({kv.key, encode_heat_record(delta_of(kv.value))});
    }
    s->map.erase(c[i].index);
  }
  evictions_.fetch_add(n, std::memory_order_relaxed);
}

void HeatTracker::forget(std::string_view key) {
  const uint64_t h = key_hash(key);
  Shard& s = shard_for(h);
  std::vector<HeatOp> ops;
  uint64_t ticket = 0;
  {
    std::lock_guard<std::mutex> g(s.mu);
    ptrdiff_t found = s.map.find(key, h);
    if (opts_.on_demand) {
      // The stored record may exist whether or not the object is hot.
      ops.push_back({std::string(key), std::string()});
      if (found >= 0) s.map.erase(static_cast<size_t>(found));
      ticket = s.spill_tickets++;
    } else {
      if (found < 0) return;
      note_erased(&s, s.map.at(static_cast<size_t>(found)).key);
      s.map.erase(static_cast<size_t>(found));
    }
  }
  spill(&s, &ops, ticket);
}

HeatSample HeatTracker::sample_of(const std::string& key, const Entry& e, uint32_t epoch) const {
  HeatSample h;
  h.key = key;
  h.size = e.size;
  h.frequency = decayed(static_cast<double>(e.hist_f) + e.cur_f, e.epoch, epoch);
  h.randomness = decayed(static_cast<double>(e.hist_r) + e.cur_r, e.epoch, epoch);
  h.last_type = e.last_type;
  h.last_time_us = e.last_time_us;
  h.last_offset = e.last_offset;
  h.last_end = e.last_end;
  return h;
}

bool HeatTracker::lookup(std::string_view key, HeatSample* out) const {
  const uint64_t h = key_hash(key);
  Shard& s = shard_for(h);
  uint32_t epoch = epoch_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> g(s.mu);
  ptrdiff_t found = s.map.find(key, h);
  if (found < 0) return false;
  const auto& kv = s.map.at(static_cast<size_t>(found));
  *out = sample_of(kv.key, kv.value, epoch);
  return true;
}

bool HeatTracker::lookup_merged(std::string_view key, const HeatRecord* stored, HeatSample* out) const {
  const uint64_t h = key_hash(key);
  Shard& s = shard_for(h);
  uint32_t epoch = epoch_.load(std::memory_order_relaxed);
  HeatRecord acc;
  bool have = stored != nullptr;
  if (stored) acc = *stored;
  {
    std::lock_guard<std::mutex> g(s.mu);
    ptrdiff_t found = s.map.find(key, h);
    if (found >= 0) {
      Entry e = s.map.at(static_cast<size_t>(found)).value;
      fold(&e, epoch);
      merge_heat(&acc, delta_of(e));
      have = true;
    }
  }
  if (!have) return false;
  fold_heat(&acc, epoch, opts_.decay);
  out->key = std::string(key);
  out->size = acc.size;
  out->frequency = static_cast<double>(acc.hist_f) + acc.cur_f;
  out->randomness = static_cast<double>(acc.hist_r) + acc.cur_r;
  out->last_type = acc.last_type;
  out->last_time_us = acc.last_time_us;
  out->last_offset = acc.last_offset;
  out->last_end = acc.last_end;
  return true;
}

std::vector<HeatSample> HeatTracker::snapshot() const {
  std::vector<HeatSample> out;
  out.reserve(size());
  uint32_t epoch = epoch_.load(std::memory_order_relaxed);
  for (unsigned i = 0; i < opts_.shards; ++i) {
    Shard& s = shards_[i];
    std::lock_guard<std::mutex> g(s.mu);
    for (size_t j = 0; j < s.map.size(); ++j) out.push_back(sample_of(s.map.at(j).key, s.map.at(j).value, epoch));
  }
  return out;
}

void HeatTracker::advance_window() { epoch_.fetch_add(1, std::memory_order_relaxed); }

uint32_t HeatTracker::advance_to(uint64_t now_us) {
  std::lock_guard<std::mutex> g(window_mu_);
  uint64_t idx = now_us / opts_.window_us;
  if (!window_anchored_) {
    window_anchored_ = true;
    window_index_ = idx;
    return 0;
  }
  if (idx <= window_index_) return 0;
  uint64_t n = idx - window_index_;
  window_index_ = idx;
  uint32_t step = n > UINT32_MAX / 2 ? UINT32_MAX / 2 : static_cast<uint32_t>(n);
  epoch_.fetch_add(step, std::memory_order_relaxed);
  return step;
}

size_t HeatTracker::size() const {
  size_t n = 0;
  for (unsigned i = 0; i < opts_.shards; ++i) {
    std::lock_guard<std::mutex> g(shards_[i].mu);
    n += shards_[i].map.size();
  }
  return n;
}

size_t HeatTracker::bytes_per_entry(size_t key_len) { return StringTable<Entry>::bytes_per_entry(key_len); }

size_t HeatTracker::memory_bytes() const {
  size_t total = sizeof(*this) + opts_.shards * sizeof(Shard);
  for (unsigned i = 0; i < opts_.shards; ++i) {
    const Shard& s = shards_[i];
    std::lock_guard<std::mutex> g(s.mu);
    total += s.map.memory_bytes();
    total += s.erased.capacity() * sizeof(std::string);
    for (const auto& k : s.erased) total += StringTable<Entry>::key_heap_bytes(k.size());
    total += s.pending.capacity() * sizeof(HeatOp);
    for (const auto& op : s.pending)
      total += StringTable<Entry>::key_heap_bytes(op.key.size()) + StringTable<Entry>::key_heap_bytes(op.operand.size());
  }
  return total;
}

std::string HeatTracker::encode_entry(const Entry& e) const {
  HeatRecord r = delta_of(e);
  r.hist_f = e.hist_f;
  r.hist_r = e.hist_r;
  r.cur_f = e.cur_f;
  r.cur_r = e.cur_r;
  return encode_heat_record(r);
}

int HeatTracker::decode_entry(std::string_view record, Entry* out, std::string* error) const {
  HeatRecord r;
  if (int rc = decode_heat_record(record, &r, error); rc < 0) return rc;
  if (r.epoch > epoch_.load(std::memory_order_relaxed)) {
    if (error) *error = "heat record: entry from a future window";
    return -EIO;
  }
  Entry e;
  e.size = r.size;
  e.last_offset = r.last_offset;
  e.last_end = r.last_end;
  e.last_time_us = r.last_time_us;
  e.hist_f = r.hist_f;
  e.hist_r = r.hist_r;
  e.cur_f = r.cur_f;
  e.cur_r = r.cur_r;
  e.epoch = r.epoch;
  e.last_type = r.last_type;
  *out = e;
  return 0;
}

// State record v1 body: varint epoch, u8 anchored, varint window_index.
std::string HeatTracker::encode_state() const {
  std::string body;
  put_varint(&body, epoch_.load(std::memory_order_relaxed));
  {
    std::lock_guard<std::mutex> g(window_mu_);
    put_u8(&body, window_anchored_ ? 1 : 0);
    put_varint(&body, window_index_);
  }
  return seal_record(kStateTag, kStateVersion, body);
}

int HeatTracker::import_state(std::string_view record, std::string* error) {
  uint8_t version;
  std::string_view body;
  if (int r = open_stored_record(kStateTag, kStateVersion, record, "heat state record", &version, &body, error);
      r < 0)
    return r;
  Decoder d(body);
  uint32_t epoch;
  uint8_t anchored;
  uint64_t index;
  if (!d.get_varint32(&epoch) || !d.get_u8(&anchored) || !d.get_varint(&index) || !d.done() ||
      anchored > 1) {
    if (error) *error = "heat state record: malformed body";
    return -EIO;
  }
  epoch_.store(epoch, std::memory_order_relaxed);
  std::lock_guard<std::mutex> g(window_mu_);
  window_anchored_ = anchored != 0;
  window_index_ = index;
  return 0;
}

int HeatTracker::import_entry(std::string_view key, std::string_view record, std::string* error) {
  Entry e;
  int r = decode_entry(record, &e, error);
  if (r < 0) return r;
  const uint64_t h = key_hash(key);
  Shard& s = shard_for(h);
  uint32_t epoch = epoch_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> g(s.mu);
  ptrdiff_t found = s.map.find(key, h);
  if (found >= 0) {
    s.map.at(static_cast<size_t>(found)).value = e;  // the stored record is authoritative at mount
    return 0;
  }
  std::vector<HeatOp> none;  // load mode: nothing is spilled
  if (s.map.size() >= shard_cap_) evict_coldest(&s, epoch, &none);
  s.map.insert(key, h, e);
  return 0;
}

HeatDelta HeatTracker::export_dirty() {
  HeatDelta d;
  d.full = begin_export();
  for (unsigned i = 0; i < opts_.shards; ++i) export_shard(i, d.full, &d);
  d.state = encode_state();
  return d;
}

bool HeatTracker::begin_export() {
  bool full = false;
  for (unsigned i = 0; i < opts_.shards; ++i) {
    std::lock_guard<std::mutex> g(shards_[i].mu);
    if (shards_[i].erase_overflow) full = true;
  }
  return full;
}

void HeatTracker::export_shard(unsigned shard, bool full, HeatDelta* d) {
  Shard& s = shards_[shard];
  std::lock_guard<std::mutex> g(s.mu);
  // An overflow that appeared after begin_export() waits for the next export,
  // which will then be full; this export still carries what it has.
  if (full) s.erase_overflow = false;
  if (opts_.on_demand) {
    // Operands only: what eviction and forget() left without a spill, in
    // order, then the deltas of the dirty entries.
    for (auto& op : s.pending) d->ops.push_back(std::move(op));
    s.pending.clear();
    uint32_t epoch = epoch_.load(std::memory_order_relaxed);
    for (size_t j = 0; j < s.map.size(); ++j) {
      Entry& e = s.map.at(j).value;
      if (!e.dirty) continue;
      fold(&e, epoch);
      d->ops.push_back({s.map.at(j).key, encode_heat_record(delta_of(e))});
      e.d_hist_f = e.d_hist_r = 0;
      e.d_cur_f = e.d_cur_r = 0;
      e.dirty = false;
    }
    return;
  }
  for (size_t j = 0; j < s.map.size(); ++j) {
    auto& kv = s.map.at(j);
    if (full || kv.value.dirty) {
      d->put.emplace_back(kv.key, encode_entry(kv.value));
      kv.value.dirty = false;
    }
  }
  if (!full)
    for (auto& k : s.erased) d->erase.push_back(std::move(k));
  s.erased.clear();
}

}  // namespace hybridstore
