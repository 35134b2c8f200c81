#include "hybridstore/kv/deferred.h"

#include <pthread.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "hscommon/encoding.h"
#include "hscommon/log.h"
#include "hybridstore/kv/kv_schema.h"

namespace hybridstore {

namespace {
constexpr uint32_t kDeferredTag = 0x44454652;  // "DEFR"
}

std::string deferred_key(uint64_t seq) {
  std::string k(1, kv::kDeferred);
  put_be64(&k, seq);
  return k;
}

std::string encode_deferred(Tier tier, uint64_t offset, std::string_view data) {
  std::string head;
  put_u8(&head, static_cast<uint8_t>(tier));
  put_varint(&head, offset);
  put_varint(&head, data.size());
  return seal_record_parts(kDeferredTag, 1, {head, data});
}

bool decode_deferred(std::string_view v, Tier* tier, uint64_t* offset, std::string* data) {
  uint8_t ver, t;
  std::string_view body;
  if (open_record(kDeferredTag, 1, v, &ver, &body) != RecordError::kNone) return false;
  Decoder d(body);
  if (!d.get_u8(&t) || t >= kMaxTiers || !d.get_varint(offset) || !d.get_bytes(data) || !d.done()) return false;
  *tier = tier_at(t);
  return true;
}

DeferredWriter::DeferredWriter(rocksdb::DB* db, PerTier<BlockDevice*> devices,
                               WriteTracker* tracker, Release release, DeferredOptions opts)
    : db_(db), devices_(devices), tracker_(tracker), release_(std::move(release)), opts_(opts) {}

DeferredWriter::~DeferredWriter() { stop(); }

void DeferredWriter::start() {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "hs-deferred");
    run();
  });
}

void DeferredWriter::stop(bool write_out) {
  {
    std::lock_guard<std::mutex> l(mutex_);
    stopping_ = true;
    write_out_ = write_out;
  }
  work_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void DeferredWriter::throttle() {
  std::unique_lock<std::mutex> l(mutex_);
  space_cv_.wait(l, [&] { return pending_bytes_ < opts_.max_pending_bytes || error_ || stopping_; });
}

uint64_t DeferredWriter::stage(rocksdb::WriteBatchBase* batch, Tier tier, uint64_t offset, std::string data,
                               bool held) {
  std::lock_guard<std::mutex> l(mutex_);
  return stage_locked(batch, tier, offset, std::move(data), held, false, nullptr);
}

uint64_t DeferredWriter::stage_locked(rocksdb::WriteBatchBase* batch, Tier tier, uint64_t offset, std::string data,
                                      bool held, bool ring, std::shared_ptr<const std::string>* bytes) {
  uint64_t seq = next_seq_++;
  ++stats_.records_staged;
  if (!ring) batch->Put(deferred_key(seq), encode_deferred(tier, offset, data));
  max_entry_len_ = std::max<uint64_t>(max_entry_len_, data.size());
  pending_bytes_ += data.size();
  if (perf_.set) {
    perf_.set->inc(perf_.write_ops);
    perf_.set->inc(perf_.write_bytes, data.size());
    perf_.set->inc(perf_.queue_bytes, data.size());
  }
  by_offset_[tier].emplace(offset, seq);
  Entry e{tier, offset, std::make_shared<const std::string>(std::move(data)), false, held};
  e.ring = ring;
  if (ring) ring_seqs_.insert(seq);
  if (bytes) *bytes = e.data;
  entries_.emplace(seq, std::move(e));
  return seq;
}

uint64_t DeferredWriter::stage_ring(rocksdb::WriteBatchBase* batch, Tier tier, uint64_t offset, std::string data,
                                    bool* ring, std::shared_ptr<const std::string>* bytes) {
  std::lock_guard<std::mutex> l(mutex_);
  if (*ring) {
    // Over a D record still pending, the replay order of the two kinds
    // would not be the staging order of this range: a D record it is.
    const auto& idx = by_offset_[tier];
    auto it = idx.lower_bound(offset > max_entry_len_ ? offset - max_entry_len_ : 0);
    for (; it != idx.end() && it->first < offset + data.size(); ++it) {
      const Entry& en = entries_.at(it->second);
      if (!en.ring && en.offset + en.data->size() > offset) {
        *ring = false;
        break;
      }
    }
  }
  return stage_locked(batch, tier, offset, std::move(data), false, *ring, bytes);
}

void DeferredWriter::ring_room_wanted() {
  {
    std::lock_guard<std::mutex> l(mutex_);
    ring_room_wanted_ = true;
  }
  work_cv_.notify_one();
}

void DeferredWriter::record_instead(rocksdb::WriteBatchBase* batch, const std::vector<uint64_t>& seqs) {
  std::lock_guard<std::mutex> l(mutex_);
  for (uint64_t seq : seqs) {
    auto it = entries_.find(seq);
    if (it == entries_.end() || !it->second.ring) continue;
    batch->Put(deferred_key(seq), encode_deferred(it->second.tier, it->second.offset, *it->second.data));
    it->second.ring = false;
    ring_seqs_.erase(seq);
  }
}

void DeferredWriter::write_region(Tier tier, uint64_t begin, uint64_t end) {
  {
    std::lock_guard<std::mutex> l(mutex_);
    regions_.push_back({tier, begin, end});
  }
  work_cv_.notify_one();
}

void DeferredWriter::erase_locked(std::map<uint64_t, Entry>::iterator it) {
  auto& idx = by_offset_[it->second.tier];
  auto range = idx.equal_range(it->second.offset);
  for (auto i = range.first; i != range.second; ++i)
    if (i->second == it->first) {
      idx.erase(i);
      break;
    }
  pending_bytes_ -= it->second.data->size();
  if (perf_.set) perf_.set->dec(perf_.queue_bytes, it->second.data->size());
  if (it->second.ring) {
    ring_seqs_.erase(it->first);
    if (it->second.committed) ring_journal_.erase(ring_journal_.find(it->second.journal_seq));
  }
  if (it->second.committed && !it->second.held) committed_bytes_ -= it->second.data->size();
  entries_.erase(it);
}

bool DeferredWriter::overlaps_pending_locked(const PExtent& e, uint64_t up_to_seq) const {
  const auto& idx = by_offset_[e.tier];
  auto it = idx.lower_bound(e.offset > max_entry_len_ ? e.offset - max_entry_len_ : 0);
  for (; it != idx.end() && it->first < e.offset + e.length; ++it) {
    if (it->second > up_to_seq) continue;
    const Entry& en = entries_.at(it->second);
    if (en.offset + en.data->size() > e.offset) return true;
  }
  return false;
}

bool DeferredWriter::range_quiet(Tier tier, uint64_t offset, uint64_t len) const {
  std::lock_guard<std::mutex> l(mutex_);
  if (overlaps_pending_locked(PExtent{tier, offset, len}, UINT64_MAX)) return false;
  for (const auto& [seq, sp] : dead_spans_)
    if (sp.tier == tier && sp.begin < offset + len && offset < sp.end) return false;
  for (const auto& r : regions_)
    if (r.tier == tier && r.begin < offset + len && offset < r.end) return false;
  for (const auto& r : inflight_regions_)
    if (r.tier == tier && r.begin < offset + len && offset < r.end) return false;
  return true;
}

void DeferredWriter::release_ready_locked(std::vector<PExtent>* out) {
  size_t keep = 0;
  for (size_t i = 0; i < held_.size(); ++i) {
    if (overlaps_pending_locked(held_[i].extent, held_[i].tag))
      held_[keep++] = held_[i];
    else
      out->push_back(held_[i].extent);
  }
  held_.resize(keep);
}

void DeferredWriter::discard_locked(std::map<uint64_t, Entry>::iterator it) {
  discarded_.push_back(it->first);
  dead_spans_[it->first] = Span{it->second.tier, it->second.offset, it->second.offset + it->second.data->size()};
  ++stats_.records_discarded;
  erase_locked(it);
}

void DeferredWriter::discard_held(Tier tier, uint64_t offset, uint64_t len) {
  std::vector<PExtent> ready;
  {
    std::lock_guard<std::mutex> l(mutex_);
    auto& idx = by_offset_[tier];
    std::vector<uint64_t> dead;
    for (auto it = idx.lower_bound(offset); it != idx.end() && it->first < offset + len; ++it) {
      const Entry& e = entries_.at(it->second);
      if (e.held && e.offset + e.data->size() <= offset + len) dead.push_back(it->second);
    }
    if (dead.empty()) return;
    for (uint64_t seq : dead) discard_locked(entries_.find(seq));
    release_ready_locked(&ready);
  }
  for (const auto& e : ready) release_(e);
  space_cv_.notify_all();
  done_cv_.notify_all();
}

void DeferredWriter::cancel(const std::vector<uint64_t>& seqs) {
  std::vector<PExtent> ready;
  {
    std::lock_guard<std::mutex> l(mutex_);
    for (uint64_t s : seqs) {
      auto it = entries_.find(s);
      if (it != entries_.end()) erase_locked(it);
    }
    release_ready_locked(&ready);
  }
  for (const auto& e : ready) release_(e);
  space_cv_.notify_all();
  done_cv_.notify_all();
}

void DeferredWriter::committed(const std::vector<uint64_t>& seqs, std::vector<PExtent> released,
                               uint64_t journal_seq) {
  std::vector<PExtent> ready;
  bool kick = false;
  {
    std::lock_guard<std::mutex> l(mutex_);
    last_committed_journal_ = std::max(last_committed_journal_, journal_seq);
    for (uint64_t s : seqs) {
      auto it = entries_.find(s);
      if (it == entries_.end() || it->second.committed) continue;
      it->second.committed = true;
      if (it->second.ring) {
        it->second.journal_seq = journal_seq;
        ring_journal_.insert(journal_seq);
        ++stats_.records_in_ring;
        if (perf_.set) perf_.set->inc(perf_.ring_ops);
      }
      if (it->second.held) continue;
      if (committed_bytes_ == 0) oldest_committed_ = std::chrono::steady_clock::now();
      committed_bytes_ += it->second.data->size();
    }
    // Records staged so far onto the freed space must land first.
    uint64_t tag = next_seq_ - 1;
    for (const auto& e : released) held_.push_back({tag, e});
    release_ready_locked(&ready);
    kick = committed_bytes_ >= opts_.batch_bytes || !regions_.empty();
  }
  for (const auto& e : ready) release_(e);
  if (kick) work_cv_.notify_one();
}

DeferredWriter::Snapshot DeferredWriter::snapshot(Tier tier, uint64_t offset, uint64_t len) const {
  Snapshot s;
  if (pending_bytes_.load(std::memory_order_acquire) == 0) return s;
  std::lock_guard<std::mutex> l(mutex_);
  const auto& idx = by_offset_[tier];
  std::vector<std::pair<uint64_t, const Entry*>> hits;  // seq, entry
  auto it = idx.lower_bound(offset > max_entry_len_ ? offset - max_entry_len_ : 0);
  for (; it != idx.end() && it->first < offset + len; ++it) {
    const Entry& e = entries_.at(it->second);
    if (e.offset + e.data->size() > offset) hits.emplace_back(it->second, &e);
  }
  std::sort(hits.begin(), hits.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [seq, e] : hits) s.pieces.emplace_back(e->offset, e->data);
  return s;
}

void DeferredWriter::patch(const Snapshot& s, uint64_t offset, char* buf, uint64_t len) {
  for (const auto& [off, data] : s.pieces) {
    uint64_t b = std::max(off, offset), e = std::min(off + data->size(), offset + len);
    if (b < e) std::memcpy(buf + (b - offset), data->data() + (b - off), e - b);
  }
}

uint64_t DeferredWriter::pending_bytes() const { return pending_bytes_.load(); }

DeferredStats DeferredWriter::stats() const {
  std::lock_guard<std::mutex> l(mutex_);
  return stats_;
}

int DeferredWriter::drain(bool held_too) {
  std::unique_lock<std::mutex> l(mutex_);
  uint64_t target = next_seq_ - 1;
  ++drain_requests_;
  work_cv_.notify_one();
  // Held records leave only through write_region(): the caller flushes the
  // staged write units before draining.
  auto ready = [&] {
    if (held_too && regions_.empty() && !in_flight_) {
      // Every region the caller handed out is written: held records left
      // belong to write units the allocator dropped (their blocks all died).
      std::vector<uint64_t> orphans;
      for (const auto& [seq, e] : entries_)
        if (seq <= target && e.held) orphans.push_back(seq);
      for (uint64_t seq : orphans) discard_locked(entries_.find(seq));
      if (!orphans.empty()) {
        HS_INFO("deferred: discarded {} staged records of write units no longer allocated", orphans.size());
        work_cv_.notify_one();
      }
    }
    bool applied = true;
    std::vector<Span> waiting;
    for (const auto& [seq, e] : entries_) {
      if (seq > target) break;
      if (held_too || !waits_for_region_locked(e, &waiting)) {
        applied = false;
        break;
      }
    }
    // Frees still held now wait only on records that go out with regions;
    // a sync need not wait for them, umount (held_too) does.
    bool released = true;
    if (held_too)
      for (const auto& h : held_) released &= h.tag > target;
    // Discarded records are still to delete, or their deletion is in flight.
    if (held_too && !dead_spans_.empty()) released = false;
    if (!error_ && store_failed_) error_ = store_failed_();  // read-only: nothing will be written
    return (applied && released) || error_;
  };
  while (!done_cv_.wait_for(l, std::chrono::seconds(10), ready)) {
    if (entries_.empty()) {
      HS_WARN("deferred drain waiting: {} frees held, {} discarded records to delete", held_.size(),
              discarded_.size());
      continue;
    }
    const auto& [seq, e] = *entries_.begin();
    HS_WARN("deferred drain waiting: {} records ({} committed bytes, {} regions queued), {} frees held; "
            "oldest: #{} {} {}~{}{}{}",
            entries_.size(), committed_bytes_, regions_.size(), held_.size(), seq, tier_name(e.tier), e.offset,
            e.data->size(), e.held ? " held" : "", e.committed ? " committed" : "");
  }
  --drain_requests_;
  return error_;
}

bool DeferredWriter::overlaps_held_locked(const Entry& e) const {
  const auto& idx = by_offset_[e.tier];
  uint64_t end = e.offset + e.data->size();
  auto it = idx.lower_bound(e.offset > max_entry_len_ ? e.offset - max_entry_len_ : 0);
  for (; it != idx.end() && it->first < end; ++it) {
    const Entry& o = entries_.at(it->second);
    if (o.held && o.offset + o.data->size() > e.offset) return true;
  }
  return false;
}

bool DeferredWriter::waits_for_region_locked(const Entry& e, std::vector<Span>* waiting) const {
  uint64_t end = e.offset + e.data->size();
  bool waits = e.held || overlaps_held_locked(e);
  for (size_t i = 0; i < waiting->size() && !waits; ++i) {
    const Span& s = (*waiting)[i];
    waits = s.tier == e.tier && s.begin < end && e.offset < s.end;
  }
  if (waits) waiting->push_back({e.tier, e.offset, end});
  return waits;
}

bool DeferredWriter::region_ready_locked(const Region& r) const {
  const auto& idx = by_offset_[r.tier];
  auto it = idx.lower_bound(r.begin > max_entry_len_ ? r.begin - max_entry_len_ : 0);
  for (; it != idx.end() && it->first < r.end; ++it) {
    const Entry& e = entries_.at(it->second);
    if (e.offset + e.data->size() > r.begin && !e.committed) return false;
  }
  return true;
}

bool DeferredWriter::has_work_locked() const {
  for (const auto& r : regions_)
    if (region_ready_locked(r)) return true;
  return committed_bytes_ > 0 || !discarded_.empty();
}

// One write: [offset, offset + image.size()), aligned for the device.
struct DeferredWriter::Run {
  Tier tier;
  uint64_t offset;
  std::string image;
};

void DeferredWriter::pick_work_locked(Batch* b) {
  // Whole regions whose records all committed, and unheld committed
  // records in staging order up to the first one not yet committed (so
  // overlapping records land in order).
  for (auto it = regions_.begin(); it != regions_.end();) {
    if (region_ready_locked(*it)) {
      b->regions.push_back(*it);
      it = regions_.erase(it);
    } else {
      ++it;
    }
  }
  std::vector<Span> waiting;
  for (auto& [seq, e] : entries_) {
    bool in_region = false;
    for (const auto& r : b->regions)
      in_region |= r.tier == e.tier && e.offset >= r.begin && e.offset + e.data->size() <= r.end;
    if (in_region) {
      b->covered.emplace_back(seq, e);
      continue;
    }
    // A record over staged data must land in order with it: it goes out
    // with the staged data's region.
    if (waits_for_region_locked(e, &waiting)) continue;
    if (!e.committed) break;
    b->records.emplace_back(seq, e);
  }
  b->discarded.swap(discarded_);
  if (!ring_sync_) return;
  // What this batch leaves pending of the ring entries. Entries not yet
  // committed get journal numbers above every one committed so far.
  std::set<uint64_t> going;
  std::multiset<uint64_t> going_journal;
  for (auto* list : {&b->records, &b->covered})
    for (const auto& [seq, e] : *list)
      if (e.ring) {
        going.insert(seq);
        if (e.committed) going_journal.insert(e.journal_seq);
      }
  b->applied_staged = next_seq_ - 1;
  bool any_left = false;
  for (uint64_t seq : ring_seqs_)
    if (!going.count(seq)) {
      b->applied_staged = seq - 1;
      any_left = true;
      break;
    }
  // Read under this lock: a ring entry staged after it is numbered after
  // every batch written now.
  b->applied_journal = any_left ? last_committed_journal_ : std::max(last_committed_journal_, journal_written_());
  for (auto it = ring_journal_.begin(); it != ring_journal_.end(); ++it) {
    auto g = going_journal.find(*it);
    if (g != going_journal.end()) {
      going_journal.erase(g);
      continue;
    }
    b->applied_journal = std::min(b->applied_journal, *it - 1);
    break;
  }
}

int DeferredWriter::apply_batch(std::unique_lock<std::mutex>& l) {
  Batch b;
  pick_work_locked(&b);
  // Nothing ready yet; unless the commit journal waits for ring space, which
  // recording how far ring data is applied may free.
  const bool ring_only = ring_sync_ && ring_room_wanted_;
  if (b.records.empty() && b.regions.empty() && b.discarded.empty() && !ring_only) return 0;
  if (store_failed_) {
    if (int e = store_failed_(); e < 0) {
      // Read-only after a failure elsewhere: the records stay for replay.
      regions_.insert(regions_.begin(), b.regions.begin(), b.regions.end());
      discarded_.insert(discarded_.end(), b.discarded.begin(), b.discarded.end());
      error_ = e;
      return e;
    }
  }
  in_flight_ = true;
  inflight_regions_ = b.regions;
  const uint64_t t0_ns = perf_.set ? perf_now_ns() : 0;
  l.unlock();

  std::string failure;
  std::vector<Run> runs;
  int err = region_runs(&b, &runs);
  for (Tier t : tier_ids(kMaxTiers))
    if (!err && devices_[t]) err = record_runs(&b, t, &runs);  // no device: a tier the store does not have
  if (!err) err = write_runs(runs, &b, &failure);
  if (!err) err = delete_records(b, &failure);
  if (err) {
    if (failure.empty()) failure = fmt::format("reading around a deferred write failed: {}", strerror(-err));
    if (report_failure_)
      report_failure_(err, failure);
    else
      HS_ERROR("{}", failure);
  }
  std::vector<PExtent> ready;
  l.lock();
  finish_batch_locked(b, err, t0_ns);
  release_ready_locked(&ready);
  l.unlock();
  for (const auto& e : ready) release_(e);
  space_cv_.notify_all();
  done_cv_.notify_all();
  l.lock();
  return err < 0 ? err : 1;
}

int DeferredWriter::region_runs(Batch* b, std::vector<Run>* runs) const {
  // The device's current bytes (earlier data of the unit, or what a replay
  // after a crash put there) overlaid with every record in the range.
  for (const auto& r : b->regions) {
    Run run{r.tier, r.begin, std::string(r.end - r.begin, '\0')};
    AlignedBuffer buf(run.image.size(), 4096, AlignedBuffer::kUninitialized);
    if (int err = devices_[run.tier]->read(r.begin, buf.data(), run.image.size()); err < 0) return err;
    std::memcpy(run.image.data(), buf.data(), run.image.size());
    for (const auto& [seq, e] : b->covered) {
      if (e.tier != r.tier || e.offset < r.begin || e.offset + e.data->size() > r.end) continue;
      std::memcpy(run.image.data() + (e.offset - r.begin), e.data->data(), e.data->size());
      b->bytes += e.data->size();
    }
    runs->push_back(std::move(run));
  }
  return 0;
}

int DeferredWriter::record_runs(Batch* b, Tier t, std::vector<Run>* runs) const {
  // One image per tier, later records over earlier ones; adjacent pieces
  // merge; pieces not aligned for the device are widened by reading.
  std::map<uint64_t, std::string> image;
  for (const auto& [seq, e] : b->records) {
    if (e.tier != t) continue;
    uint64_t eb = e.offset, ef = e.offset + e.data->size();
    auto it = image.upper_bound(eb);
    if (it != image.begin()) --it;
    while (it != image.end() && it->first < ef) {
      uint64_t pb = it->first, pf = pb + it->second.size();
      if (pf <= eb) {
        ++it;
        continue;
      }
      std::string old = std::move(it->second);
      it = image.erase(it);
      if (pb < eb) image.emplace(pb, old.substr(0, eb - pb));
      if (pf > ef) image.emplace(ef, old.substr(ef - pb));
    }
    image.emplace(eb, *e.data);
    b->bytes += e.data->size();
  }
  BlockDevice* dev = devices_[t];
  const uint64_t a = dev->alignment();
  std::vector<Run> merged;
  for (auto& [off, data] : image) {
    uint64_t rb = off / a * a, re = (off + data.size() + a - 1) / a * a;
    if (!merged.empty() && merged.back().offset + merged.back().image.size() >= rb) {
      Run& m = merged.back();
      uint64_t mend = m.offset + m.image.size();
      if (re > mend) {
        m.image.resize(re - m.offset);
        // Sectors the run gains but this piece does not cover in full keep
        // the device's bytes.
        if (off > mend || off + data.size() < re) {
          AlignedBuffer buf(re - mend, 4096, AlignedBuffer::kUninitialized);
          if (int err = dev->read(mend, buf.data(), re - mend); err < 0) return err;
          std::memcpy(m.image.data() + (mend - m.offset), buf.data(), re - mend);
        }
      }
      std::memcpy(m.image.data() + (off - m.offset), data.data(), data.size());
      continue;
    }
    Run run{t, rb, std::string(re - rb, '\0')};
    if (rb != off || re != off + data.size()) {
      // Partial sectors at either end: start from what the device holds.
      AlignedBuffer buf(re - rb, 4096, AlignedBuffer::kUninitialized);
      if (int err = dev->read(rb, buf.data(), re - rb); err < 0) return err;
      std::memcpy(run.image.data(), buf.data(), re - rb);
    }
    std::memcpy(run.image.data() + (off - rb), data.data(), data.size());
    merged.push_back(std::move(run));
  }
  for (auto& m : merged) runs->push_back(std::move(m));
  return 0;
}

int DeferredWriter::write_runs(const std::vector<Run>& runs, Batch* b, std::string* failure) {
  for (Tier t : tier_ids(kMaxTiers)) {
    std::vector<AlignedBuffer> bufs;
    std::vector<WriteIo> ios;
    for (const auto& run : runs) {
      if (run.tier != t) continue;
      AlignedBuffer buf(run.image.size(), 4096, AlignedBuffer::kUninitialized);
      std::memcpy(buf.data(), run.image.data(), run.image.size());
      ios.push_back({run.offset, buf.data(), run.image.size()});
      bufs.push_back(std::move(buf));
    }
    if (ios.empty()) continue;
    b->writes += ios.size();
    int err = devices_[t]->write_many(ios);
    if (!err) err = devices_[t]->flush();
    if (err) {
      *failure = fmt::format("applying deferred writes to the {} device failed: {}", tier_name(t), strerror(-err));
      return err;
    }
  }
  return 0;
}

int DeferredWriter::delete_records(const Batch& b, std::string* failure) {
  rocksdb::WriteBatch del;
  for (const auto& [seq, e] : b.records) del.Delete(deferred_key(seq));
  for (const auto& [seq, e] : b.covered) del.Delete(deferred_key(seq));
  for (uint64_t seq : b.discarded) del.Delete(deferred_key(seq));
  // The deletions must be durable before the space they covered can be
  // reused (a record replayed over a new owner's data would clobber it).
  // Written unsynced, then synced with FlushWAL: a synced Write holds
  // RocksDB's write path through its fsync, and the committer's next write
  // waited behind it (0.4% of a lone writer's RocksDB writes, about 500 us
  // each). FlushWAL's sync runs beside later writes and covers everything
  // written before it.
  if (ring_sync_) {
    // The same synced batch says which ring data is in place now: replay
    // writes only what was staged after it, among the D records left.
    std::string n;
    put_fixed64(&n, b.applied_staged);
    del.Put(kv::journal_applied_key(), n);
    return ring_sync_(&del, b.applied_journal, failure);
  }
  rocksdb::Status s = db_->Write(rocksdb::WriteOptions(), &del);
  if (s.ok()) s = db_->FlushWAL(true);
  if (s.ok()) return 0;
  *failure = "deleting applied deferred records failed: " + s.ToString();
  return -EIO;
}

void DeferredWriter::finish_batch_locked(const Batch& b, int err, uint64_t t0_ns) {
  in_flight_ = false;
  ring_room_wanted_ = false;
  inflight_regions_.clear();
  if (err) {
    error_ = err;
    return;
  }
  for (auto* list : {&b.records, &b.covered})
    for (const auto& [seq, e] : *list) {
      auto it = entries_.find(seq);
      if (it != entries_.end()) erase_locked(it);
    }
  for (uint64_t seq : b.discarded) dead_spans_.erase(seq);
  const size_t applied = b.records.size() + b.covered.size();
  stats_.records_applied += applied;
  stats_.bytes_applied += b.bytes;
  stats_.device_writes += b.writes;
  stats_.batches += 1;
  if (perf_.set) {
    perf_.set->inc(perf_.apply_ops, applied);
    perf_.set->inc(perf_.apply_bytes, b.bytes);
    perf_.set->tinc(perf_.apply_lat, perf_now_ns() - t0_ns);
  }
  if (committed_bytes_) oldest_committed_ = std::chrono::steady_clock::now();
}

void DeferredWriter::run() {
  std::unique_lock<std::mutex> l(mutex_);
  for (;;) {
    // Committed records, or regions whose records all committed, make work.
    auto due = [&] {
      if (!regions_.empty() && has_work_locked()) return true;
      if (!discarded_.empty() && (stopping_ || drain_requests_)) return true;
      if (ring_room_wanted_) return true;
      if (committed_bytes_ == 0) return false;
      if (stopping_ || drain_requests_ || committed_bytes_ >= opts_.batch_bytes) return true;
      return std::chrono::steady_clock::now() - oldest_committed_ >= std::chrono::milliseconds(opts_.max_delay_ms);
    };
    // After an error nothing is due: the worker only waits to stop.
    work_cv_.wait_for(l, std::chrono::milliseconds(opts_.max_delay_ms),
                      [&] { return stopping_ || (!error_ && due()); });
    if (stopping_) {
      // What is committed and ready goes out; anything else (records of a
      // transaction whose commit failed, staged data of units never handed
      // out) stays in RocksDB for the next mount to replay.
      while (write_out_ && !error_ && apply_batch(l) == 1) {
      }
      done_cv_.notify_all();
      return;
    }
    // Committed records may all be waiting behind staged data: then there is
    // nothing to do until a region is queued or something commits.
    if (!error_ && due() && apply_batch(l) == 0)
      work_cv_.wait_for(l, std::chrono::milliseconds(opts_.max_delay_ms));
    done_cv_.notify_all();
  }
}

namespace {

// The parts of [off, off + len) outside `ranges` (sorted by offset), as
// (offset, length); *inside gets the bytes left out.
std::vector<std::pair<uint64_t, uint64_t>> outside(uint64_t off, uint64_t len,
                                                   const std::vector<std::pair<uint64_t, uint64_t>>& ranges,
                                                   uint64_t* inside) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  uint64_t pos = off;
  const uint64_t end = off + len;
  *inside = 0;
  for (const auto& [b, n] : ranges) {
    if (b + n <= pos) continue;
    if (b >= end) break;
    if (b > pos) out.emplace_back(pos, b - pos);
    const uint64_t cut = std::min(end, b + n);
    *inside += cut - std::max(pos, b);
    pos = cut;
  }
  if (end > pos) out.emplace_back(pos, end - pos);
  return out;
}

}  // namespace

namespace {
// `bytes` at `off` of `dev`; a piece smaller than the device's alignment by
// read-modify-write.
int write_replayed(BlockDevice* dev, uint64_t off, std::string_view bytes) {
  const uint64_t a = dev->alignment();
  const uint64_t rb = off / a * a, re = std::min(dev->size(), (off + bytes.size() + a - 1) / a * a);
  AlignedBuffer b(re - rb, 4096, AlignedBuffer::kUninitialized);
  if (rb != off || re != off + bytes.size())
    if (int r = dev->read(rb, b.data(), re - rb); r < 0) return r;
  std::memcpy(b.data() + (off - rb), bytes.data(), bytes.size());
  return dev->write(rb, b.data(), re - rb);
}
}  // namespace

int DeferredWriter::replay(rocksdb::DB* db, PerTier<BlockDevice*> devices, std::string* error,
                           std::vector<std::string>* dropped, const Exclude* exclude, const RingReplay* ring) {
  std::vector<std::pair<uint64_t, uint64_t>> excluded;
  if (exclude) {
    excluded = exclude->ranges;
    std::sort(excluded.begin(), excluded.end());
  }
  // Everything to write, by staging number: the D records, and the ring's
  // pieces staged after what was applied. A range never holds both kinds
  // pending out of staging order (stage_ring), so this order is the one
  // the writes were made in.
  struct Pending {
    Tier tier;
    uint64_t offset;
    std::string_view data;
    std::string what;
    bool ring = false;
  };
  std::map<uint64_t, Pending> pending;
  std::vector<std::string> record_bytes;
  std::string prefix(1, kv::kDeferred);
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  rocksdb::WriteBatch own;
  rocksdb::WriteBatch& del = ring && ring->also ? *ring->also : own;
  std::vector<std::pair<uint64_t, std::string>> records;  // staging number, data
  auto check = [&](Tier t, uint64_t off, uint64_t len, const std::string& what, std::string* bad) {
    BlockDevice* dev = devices[t];
    if (!dev)
      *bad = fmt::format("{} targets {}, a tier this store does not have", what, tier_name(t));
    else if (off < 4096 || len == 0 || off + len > dev->size())
      *bad = fmt::format("{} targets an invalid {} range {}~{}", what, tier_name(t), off, len);
  };
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    Tier t = Tier::kSsd;
    uint64_t off = 0;
    std::string data;
    std::string bad;
    const std::string what = "deferred write record " + it->key().ToString(true);
    if (it->key().size() != 9 || !decode_deferred(it->value().ToStringView(), &t, &off, &data))
      bad = "corrupt " + what;
    else
      check(t, off, data.size(), what, &bad);
    if (!bad.empty()) {
      if (!dropped) {
        *error = bad + " (hybridstore-tool repair can drop it)";
        return -EIO;
      }
      dropped->push_back("deleted " + bad);
      del.Delete(it->key());
      continue;
    }
    del.Delete(it->key());
    uint64_t seq = 0;
    for (size_t i = 1; i < 9; ++i) seq = seq << 8 | static_cast<uint8_t>(it->key().data()[i]);
    records.emplace_back(seq, std::move(data));
    pending[seq] = {t, off, {}, what};
  }
  if (!it->status().ok()) {
    *error = "reading deferred records: " + it->status().ToString();
    return -EIO;
  }
  for (const auto& [seq, data] : records) pending[seq].data = data;
  if (ring && ring->writes)
    for (const CommitJournal::RingWrite& w : *ring->writes) {
      if (w.staged <= ring->applied) continue;
      const std::string what = fmt::format("ring data staged as {}", w.staged);
      std::string bad;
      check(w.tier, w.physical, w.data.size(), what, &bad);
      if (!bad.empty()) {
        // The record's checksums held: this is damage of another kind (a
        // store whose tiers changed), not a torn write to skip.
        *error = bad;
        return -EIO;
      }
      pending[w.staged] = {w.tier, w.physical, w.data, what, true};
    }
  int n = 0, from_ring = 0;
  PerTier<bool> wrote;
  for (const auto& [seq, p] : pending) {
    // A record of space that was freed and then lent to the KV file system
    // before its delete committed: its bytes there are stale, the kvfs's are
    // not. Chunks are aligned to whole erase units or more, so the
    // read-modify-write of a piece outside one stays outside it.
    uint64_t inside = 0;
    std::vector<std::pair<uint64_t, uint64_t>> pieces =
        exclude && exclude->tier == p.tier ? outside(p.offset, p.data.size(), excluded, &inside)
                                           : std::vector<std::pair<uint64_t, uint64_t>>{{p.offset, p.data.size()}};
    if (inside)
      HS_WARN("dropped {} of {} bytes at {}: the space belongs to the KV file system", p.what, inside, p.offset);
    for (const auto& [poff, plen] : pieces) {
      const std::string_view bytes = p.data.substr(poff - p.offset, plen);
      if (int r = write_replayed(devices[p.tier], poff, bytes); r < 0) {
        *error = fmt::format("replaying {} to {}: {}", p.what, tier_name(p.tier), strerror(-r));
        return r;
      }
      wrote[p.tier] = true;
    }
    if (!pieces.empty()) {
      ++n;
      if (p.ring) ++from_ring;
    }
  }
  if (ring && ring->written) *ring->written = from_ring;
  for (Tier t : tier_ids(kMaxTiers))
    if (wrote[t])
      if (int r = devices[t]->flush(); r < 0) {
        *error = "flushing after deferred replay failed";
        return r;
      }
  if (del.Count()) {
    rocksdb::WriteOptions wo;
    wo.sync = true;
    if (!db->Write(wo, &del).ok()) {
      *error = "deleting replayed deferred records failed";
      return -EIO;
    }
    if (n) HS_INFO("replayed {} deferred writes, {} of them from the commit journal's ring", n, from_ring);
  }
  return n;
}

}  // namespace hybridstore
