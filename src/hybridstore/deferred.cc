#include "hybridstore/deferred.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "hybridstore/common/encoding.h"
#include "hybridstore/common/log.h"
#include "hybridstore/kv_schema.h"

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
  std::string b;
  put_u8(&b, static_cast<uint8_t>(tier));
  put_varint(&b, offset);
  put_bytes(&b, data);
  return seal_record(kDeferredTag, 1, b);
}

bool decode_deferred(std::string_view v, Tier* tier, uint64_t* offset, std::string* data) {
  uint8_t ver, t;
  std::string_view body;
  if (open_record(kDeferredTag, 1, v, &ver, &body) != RecordError::kNone) return false;
  Decoder d(body);
  if (!d.get_u8(&t) || t >= kNumTiers || !d.get_varint(offset) || !d.get_bytes(data) || !d.done()) return false;
  *tier = static_cast<Tier>(t);
  return true;
}

DeferredWriter::DeferredWriter(rocksdb::DB* db, std::array<BlockDevice*, kNumTiers> devices,
                               WriteTracker* tracker, Release release, DeferredOptions opts)
    : db_(db), devices_(devices), tracker_(tracker), release_(std::move(release)), opts_(opts) {}

DeferredWriter::~DeferredWriter() { stop(); }

void DeferredWriter::start() { thread_ = std::thread([this] { run(); }); }

void DeferredWriter::stop() {
  {
    std::lock_guard<std::mutex> l(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void DeferredWriter::throttle() {
  std::unique_lock<std::mutex> l(mutex_);
  space_cv_.wait(l, [&] { return pending_bytes_ < opts_.max_pending_bytes || error_ || stopping_; });
}

uint64_t DeferredWriter::stage(rocksdb::WriteBatchBase* batch, Tier tier, uint64_t offset, std::string data) {
  std::lock_guard<std::mutex> l(mutex_);
  uint64_t seq = next_seq_++;
  ++stats_.records_staged;
  batch->Put(deferred_key(seq), encode_deferred(tier, offset, data));
  max_entry_len_ = std::max<uint64_t>(max_entry_len_, data.size());
  pending_bytes_ += data.size();
  by_offset_[tier_index(tier)].emplace(offset, seq);
  entries_.emplace(seq, Entry{tier, offset, std::make_shared<const std::string>(std::move(data)), false});
  return seq;
}

void DeferredWriter::erase_locked(std::map<uint64_t, Entry>::iterator it) {
  auto& idx = by_offset_[tier_index(it->second.tier)];
  auto range = idx.equal_range(it->second.offset);
  for (auto i = range.first; i != range.second; ++i)
    if (i->second == it->first) {
      idx.erase(i);
      break;
    }
  pending_bytes_ -= it->second.data->size();
  if (it->second.committed) committed_bytes_ -= it->second.data->size();
  entries_.erase(it);
}

void DeferredWriter::release_ready_locked(std::vector<PExtent>* out) {
  uint64_t low = lowest_pending_locked();
  while (!held_.empty() && held_.front().tag < low) {
    out->push_back(held_.front().extent);
    held_.pop_front();
  }
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

void DeferredWriter::committed(const std::vector<uint64_t>& seqs, std::vector<PExtent> released) {
  std::vector<PExtent> ready;
  bool kick = false;
  {
    std::lock_guard<std::mutex> l(mutex_);
    for (uint64_t s : seqs) {
      auto it = entries_.find(s);
      if (it == entries_.end() || it->second.committed) continue;
      if (committed_bytes_ == 0) oldest_committed_ = std::chrono::steady_clock::now();
      it->second.committed = true;
      committed_bytes_ += it->second.data->size();
    }
    // Everything staged so far must reach the device before this space can
    // be reused (conservative: it may include later, unrelated records).
    uint64_t tag = next_seq_ - 1;
    for (const auto& e : released) held_.push_back({tag, e});
    release_ready_locked(&ready);
    kick = committed_bytes_ >= opts_.batch_bytes;
  }
  for (const auto& e : ready) release_(e);
  if (kick) work_cv_.notify_one();
}

DeferredWriter::Snapshot DeferredWriter::snapshot(Tier tier, uint64_t offset, uint64_t len) const {
  Snapshot s;
  if (pending_bytes_.load(std::memory_order_acquire) == 0) return s;
  std::lock_guard<std::mutex> l(mutex_);
  const auto& idx = by_offset_[tier_index(tier)];
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

int DeferredWriter::drain() {
  std::unique_lock<std::mutex> l(mutex_);
  uint64_t target = next_seq_ - 1;
  ++drain_requests_;
  work_cv_.notify_one();
  auto ready = [&] {
    bool applied = lowest_pending_locked() > target;
    bool released = held_.empty() || held_.front().tag > target;
    return (applied && released) || error_;
  };
  while (!done_cv_.wait_for(l, std::chrono::seconds(10), ready))
    HS_WARN("deferred drain waiting: lowest pending {}, target {}, {} records ({} committed bytes), {} held",
            lowest_pending_locked(), target, entries_.size(), committed_bytes_, held_.size());
  --drain_requests_;
  return error_;
}

int DeferredWriter::apply_committed_prefix(std::unique_lock<std::mutex>& l) {
  // Records apply in staging order, so stop at the first one whose
  // transaction is not yet durable.
  std::vector<std::pair<uint64_t, Entry>> batch;
  for (auto& [seq, e] : entries_) {
    if (!e.committed) break;
    batch.emplace_back(seq, e);
  }
  if (batch.empty()) return 0;
  l.unlock();

  // One image per tier: later records overwrite earlier ones where they
  // overlap; then adjacent pieces merge into single writes.
  int err = 0;
  uint64_t bytes = 0, writes = 0;
  for (int t = 0; t < kNumTiers && !err; ++t) {
    std::map<uint64_t, std::string> image;
    for (const auto& [seq, e] : batch) {
      if (tier_index(e.tier) != t) continue;
      uint64_t b = e.offset, f = e.offset + e.data->size();
      // Trim or split older pieces overlapping [b, f).
      auto it = image.upper_bound(b);
      if (it != image.begin()) --it;
      while (it != image.end() && it->first < f) {
        uint64_t pb = it->first, pf = pb + it->second.size();
        if (pf <= b) {
          ++it;
          continue;
        }
        std::string old = std::move(it->second);
        it = image.erase(it);
        if (pb < b) image.emplace(pb, old.substr(0, b - pb));
        if (pf > f) image.emplace(f, old.substr(f - pb));
      }
      image.emplace(b, *e.data);
      bytes += e.data->size();
    }
    if (image.empty()) continue;
    std::vector<std::pair<uint64_t, std::string>> runs;
    for (auto& [off, data] : image) {
      if (!runs.empty() && runs.back().first + runs.back().second.size() == off)
        runs.back().second += data;
      else
        runs.emplace_back(off, std::move(data));
    }
    std::vector<AlignedBuffer> bufs;
    std::vector<WriteIo> ios;
    for (auto& [off, data] : runs) {
      AlignedBuffer b(data.size(), 4096, AlignedBuffer::kUninitialized);
      std::memcpy(b.data(), data.data(), data.size());
      ios.push_back({off, b.data(), data.size()});
      bufs.push_back(std::move(b));
    }
    writes += ios.size();
    err = devices_[t]->write_many(ios);
    if (!err) err = devices_[t]->flush();
    if (err)
      HS_ERROR("applying deferred writes to the {} device failed: {}", tier_name(static_cast<Tier>(t)),
               strerror(-err));
  }
  if (!err) {
    rocksdb::WriteBatch del;
    for (const auto& [seq, e] : batch) del.Delete(deferred_key(seq));
    rocksdb::WriteOptions wo;
    wo.sync = true;
    rocksdb::Status s = db_->Write(wo, &del);
    if (!s.ok()) {
      HS_ERROR("deleting applied deferred records failed: {}", s.ToString());
      err = -EIO;
    }
  }

  std::vector<PExtent> ready;
  l.lock();
  if (err) {
    error_ = err;
  } else {
    for (const auto& [seq, e] : batch) {
      auto it = entries_.find(seq);
      if (it != entries_.end()) erase_locked(it);
    }
    stats_.records_applied += batch.size();
    stats_.bytes_applied += bytes;
    stats_.device_writes += writes;
    stats_.batches += 1;
    if (committed_bytes_) oldest_committed_ = std::chrono::steady_clock::now();
  }
  release_ready_locked(&ready);
  l.unlock();
  for (const auto& e : ready) release_(e);
  space_cv_.notify_all();
  done_cv_.notify_all();
  l.lock();
  return err;
}

void DeferredWriter::run() {
  std::unique_lock<std::mutex> l(mutex_);
  for (;;) {
    // Only committed records can be applied, so only they make work.
    auto due = [&] {
      if (committed_bytes_ == 0) return false;
      if (stopping_ || drain_requests_ || committed_bytes_ >= opts_.batch_bytes) return true;
      return std::chrono::steady_clock::now() - oldest_committed_ >= std::chrono::milliseconds(opts_.max_delay_ms);
    };
    work_cv_.wait_for(l, std::chrono::milliseconds(opts_.max_delay_ms), [&] { return stopping_ || due(); });
    if (!error_ && due()) apply_committed_prefix(l);
    done_cv_.notify_all();
    if (stopping_ && (committed_bytes_ == 0 || error_)) return;
  }
}

int DeferredWriter::replay(rocksdb::DB* db, std::array<BlockDevice*, kNumTiers> devices, std::string* error,
                           std::vector<std::string>* dropped) {
  std::string prefix(1, kv::kDeferred);
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  rocksdb::WriteBatch del;
  int n = 0;
  bool wrote[kNumTiers] = {false, false};
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    Tier t;
    uint64_t off;
    std::string data;
    std::string bad;
    BlockDevice* dev = nullptr;
    if (it->key().size() != 9 || !decode_deferred(it->value().ToStringView(), &t, &off, &data)) {
      bad = "corrupt deferred write record " + it->key().ToString(true);
    } else {
      dev = devices[tier_index(t)];
      if (off < 4096 || off % dev->alignment() || data.size() % dev->alignment() || data.empty() ||
          off + data.size() > dev->size())
        bad = fmt::format("deferred write record {} targets an invalid {} range {}~{}", it->key().ToString(true),
                          tier_name(t), off, data.size());
    }
    if (!bad.empty()) {
      if (!dropped) {
        *error = bad + " (hybridstore-tool repair can drop it)";
        return -EIO;
      }
      dropped->push_back("deleted " + bad);
      del.Delete(it->key());
      continue;
    }
    AlignedBuffer b(data.size(), 4096, AlignedBuffer::kUninitialized);
    std::memcpy(b.data(), data.data(), data.size());
    if (int r = dev->write(off, b.data(), data.size()); r < 0) {
      *error = fmt::format("replaying deferred write to {}: {}", tier_name(t), strerror(-r));
      return r;
    }
    wrote[tier_index(t)] = true;
    del.Delete(it->key());
    ++n;
  }
  if (!it->status().ok()) {
    *error = "reading deferred records: " + it->status().ToString();
    return -EIO;
  }
  for (int t = 0; t < kNumTiers; ++t)
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
    if (n) HS_INFO("replayed {} deferred writes", n);
  }
  return n;
}

}  // namespace hybridstore
