#include "testing/disk_model_queue.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace hybridstore {

namespace {

double frac(double x) { return x - std::floor(x); }
uint64_t ns_of(double ns) { return ns <= 0 ? 0 : static_cast<uint64_t>(std::llround(ns)); }

unsigned log2_bucket(uint64_t v) {
  unsigned b = 0;
  while (b < 63 && (1ull << b) < v) ++b;
  return b;
}

}  // namespace

const char* disk_op_name(DiskOp op) {
  switch (op) {
    case DiskOp::kRead: return "read";
    case DiskOp::kWrite: return "write";
    case DiskOp::kFlush: return "flush";
    case DiskOp::kDiscard: return "discard";
  }
  return "?";
}

// ---- The queue ----

DiskModelQueue::DiskModelQueue(const DiskProfile& p, uint64_t device_bytes)
    : p_(p), device_bytes_(device_bytes ? device_bytes : 1) {
  if (p_.kind == DiskKind::kHdd) {
    drive_bytes_ = std::max<uint64_t>(
        device_bytes_, static_cast<uint64_t>(static_cast<double>(device_bytes_) / p_.stroke_share));
    rev_ns_ = 60e9 / p_.rpm;
    tb0_ = p_.rate_outer_mbps * 1e6 * rev_ns_ / 1e9;
    const double tb_end = p_.rate_inner_mbps * 1e6 * rev_ns_ / 1e9;
    slope_ = (tb0_ - tb_end) / static_cast<double>(drive_bytes_);
    cylinders_ = std::max<uint64_t>(
        3, static_cast<uint64_t>(std::ceil(tracks_at(drive_bytes_) / p_.heads)));
    HddModelParams rp;
    rp.capacity_bytes = drive_bytes_;
    rp.cylinders = cylinders_;
    rp.rpm = p_.rpm;
    rp.transfer_bytes_per_s = (p_.rate_outer_mbps + p_.rate_inner_mbps) / 2 * 1e6;
    rp.surfaces = p_.heads;
    HddModelParams wp = rp;
    rp.seek_track_ms = p_.seek_track_read_ms;
    rp.seek_avg_ms = p_.seek_avg_read_ms;
    rp.seek_full_ms = p_.seek_full_read_ms;
    wp.seek_track_ms = p_.seek_track_write_ms;
    wp.seek_avg_ms = p_.seek_avg_write_ms;
    wp.seek_full_ms = p_.seek_full_write_ms;
    read_curve_ = std::make_unique<HddModel>(rp);
    write_curve_ = std::make_unique<HddModel>(wp);
  } else if (p_.kind == DiskKind::kSsd) {
    channel_free_.assign(p_.channels, 0);
  }
}

DiskModelQueue::~DiskModelQueue() = default;

size_t DiskModelQueue::outstanding() const {
  switch (p_.kind) {
    case DiskKind::kHdd: return pending_.size() + (inflight_.active && !inflight_.destage ? 1 : 0);
    case DiskKind::kSsd: return ssd_wait_.size() + ssd_inflight_.size();
    case DiskKind::kNone: return 0;
  }
  return 0;
}

std::string DiskModelQueue::describe() const {
  std::string s = p_.describe();
  if (p_.kind == DiskKind::kHdd)
    s += fmt::format("; image {:.1f} GiB at the outer edge of a {:.1f} GiB drive, {} cylinders, "
                     "mean random read seek {:.2f} ms",
                     device_bytes_ / 1073741824.0, drive_bytes_ / 1073741824.0, cylinders_,
                     mean_random_seek_ms());
  return s;
}

void DiskModelQueue::note_arrival(const DiskRequest& r) {
  size_t depth = outstanding() + 1;
  auto& h = stats_.qd_hist;
  ++h[std::min(depth, h.size()) - 1];
  if (r.op == DiskOp::kRead || r.op == DiskOp::kWrite) {
    ++stats_.size_hist[std::min<unsigned>(log2_bucket(r.len), stats_.size_hist.size() - 1)];
    stats_.max_request_bytes = std::max(stats_.max_request_bytes, r.len);
  }
}

void DiskModelQueue::complete(const Pending& p, uint64_t t, uint64_t service_ns, bool on_arrival,
                              std::vector<DiskCompletion>* done) {
  DiskOpStats& s = stats_.ops[static_cast<int>(p.r.op)];
  ++s.count;
  s.bytes += p.r.len;
  s.service_ns += service_ns;
  uint64_t lat = t - p.arrival;
  s.latency_ns += lat;
  s.max_latency_ns = std::max(s.max_latency_ns, lat);
  if (on_arrival) ++s.on_arrival;
  if (done) done->push_back({p.r.id, t});
}

bool DiskModelQueue::submit(const DiskRequest& r, uint64_t now_ns) {
  now_ns = std::max(now_ns, last_now_);
  // Bring the device up to the arrival first: what it finished before then
  // (room freed in the cache, a free channel) decides how this one goes.
  // Decisions at the arrival time itself wait for the next advance(), so that
  // requests submitted together are seen together.
  if (p_.kind == DiskKind::kHdd && now_ns > 0) hdd_advance(now_ns - 1, &early_);
  if (p_.kind == DiskKind::kSsd) ssd_advance(now_ns, &early_);
  last_now_ = now_ns;
  note_arrival(r);
  Pending p{r, now_ns, false};
  switch (p_.kind) {
    case DiskKind::kNone:
      complete(p, now_ns, 0, true, nullptr);
      return true;
    case DiskKind::kHdd: return hdd_submit(p);
    case DiskKind::kSsd: return ssd_submit(p);
  }
  return true;
}

uint64_t DiskModelQueue::advance(uint64_t now_ns, std::vector<DiskCompletion>* done) {
  now_ns = std::max(now_ns, last_now_);
  last_now_ = now_ns;
  if (!early_.empty()) {
    if (done) done->insert(done->end(), early_.begin(), early_.end());
    early_.clear();
  }
  switch (p_.kind) {
    case DiskKind::kNone: return kNever;
    case DiskKind::kHdd: return hdd_advance(now_ns, done);
    case DiskKind::kSsd: return ssd_advance(now_ns, done);
  }
  return kNever;
}

uint64_t DiskModelQueue::next_event() const {
  if (!early_.empty()) return last_now_;
  switch (p_.kind) {
    case DiskKind::kNone: return kNever;
    case DiskKind::kHdd:
      if (inflight_.active) return inflight_.end;
      // An idle actuator with work decides at once.
      return pending_.empty() && dirty_.empty() ? kNever : last_now_;
    case DiskKind::kSsd: return ssd_inflight_.empty() ? kNever : ssd_inflight_.top().time;
  }
  return kNever;
}

uint64_t DiskModelQueue::drain(std::vector<DiskCompletion>* done) {
  uint64_t t = last_now_;
  for (;;) {
    uint64_t next = advance(t, done);
    if (next == kNever) return t;
    t = next;
  }
}

// ---- hdd geometry ----

double DiskModelQueue::tracks_at(uint64_t offset) const {
  const double x = static_cast<double>(offset);
  // Track bytes fall linearly, tb(x) = tb0 - slope x; tracks = integral of dx / tb.
  if (slope_ * static_cast<double>(drive_bytes_) < 1e-9 * tb0_) return x / tb0_;
  return std::log(tb0_ / (tb0_ - slope_ * x)) / slope_;
}

double DiskModelQueue::rate_at(uint64_t offset) const {
  if (p_.kind != DiskKind::kHdd) return 0;
  return (tb0_ - slope_ * static_cast<double>(offset)) * 1e9 / rev_ns_;
}

uint64_t DiskModelQueue::track_bytes_at(uint64_t offset) const {
  return static_cast<uint64_t>(tb0_ - slope_ * static_cast<double>(offset));
}

double DiskModelQueue::transfer_ns(uint64_t offset, uint64_t len) const {
  if (p_.kind != DiskKind::kHdd || len == 0) return 0;
  return (tracks_at(offset + len) - tracks_at(offset)) * rev_ns_;
}

uint64_t DiskModelQueue::cylinder_of(uint64_t offset) const {
  uint64_t c = static_cast<uint64_t>(tracks_at(offset) / p_.heads);
  return std::min(c, cylinders_ - 1);
}

double DiskModelQueue::seek_ms(uint64_t d, bool write) const {
  return (write ? write_curve_ : read_curve_)->seek_ms(d);
}

double DiskModelQueue::mean_random_seek_ms() const {
  return read_curve_ ? read_curve_->mean_random_seek_ms() : 0;
}

double DiskModelQueue::platter_at(uint64_t t_ns) const {
  // In long double: revolutions since time 0 reach 10^8 within a day, and a
  // double would keep too few digits of their fraction.
  long double revs = static_cast<long double>(t_ns) / static_cast<long double>(rev_ns_);
  return static_cast<double>(revs - std::floor(revs));
}

double DiskModelQueue::position_ns(uint64_t target, bool write, uint64_t t) const {
  if (target == head_off_ && (!write || (t == head_time_ && head_write_))) return 0;
  const uint64_t from = cylinder_of(head_off_), to = cylinder_of(target);
  const uint64_t d = from > to ? from - to : to - from;
  const double seek = d ? seek_ms(d, write) * 1e6 : 0;
  const double arrive = platter_at(t + ns_of(seek));
  return seek + frac(frac(tracks_at(target)) - arrive) * rev_ns_;
}

// ---- hdd queue ----

bool DiskModelQueue::cacheable(const DiskRequest& r) const {
  return r.op == DiskOp::kWrite && p_.cache_bytes > 0 && r.len <= p_.cache_bytes;
}

bool DiskModelQueue::cache_room(const DiskRequest& r) const {
  if (cache_used_ + r.len > p_.cache_bytes) return false;
  // Counted as a new segment even when it would merge: the drive allocates
  // the segment before it looks for a neighbour.
  return p_.cache_segments == 0 || dirty_.size() + (inflight_.active && inflight_.destage) < p_.cache_segments;
}

bool DiskModelQueue::read_hit(uint64_t offset, uint64_t len) const {
  if (dirty_.empty() || len == 0) return false;
  auto it = dirty_.upper_bound(offset);
  if (it == dirty_.begin()) return false;
  --it;
  return it->first <= offset && offset + len <= it->second.end;
}

void DiskModelQueue::add_dirty(uint64_t offset, uint64_t len, uint64_t t) {
  uint64_t start = offset, end = offset + len, since = t;
  uint64_t covered = 0;  // bytes of the new range already dirty
  auto it = dirty_.upper_bound(start);
  if (it != dirty_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.end >= start) it = prev;
  }
  // Merge every range that overlaps or touches [start, end): one destage
  // then writes them in one pass.
  while (it != dirty_.end() && it->first <= end) {
    uint64_t os = std::max(it->first, offset), oe = std::min(it->second.end, offset + len);
    if (oe > os) covered += oe - os;
    start = std::min(start, it->first);
    end = std::max(end, it->second.end);
    since = std::min(since, it->second.since);
    dirty_since_.erase(dirty_since_.find(it->second.since));
    it = dirty_.erase(it);
  }
  dirty_[start] = Dirty{end, since};
  dirty_since_.insert(since);
  cache_used_ += len - covered;
  stats_.max_dirty_bytes = std::max(stats_.max_dirty_bytes, cache_used_);
}

bool DiskModelQueue::hdd_submit(const Pending& p) {
  const DiskRequest& r = p.r;
  if (r.op == DiskOp::kDiscard) {
    complete(p, p.arrival, 0, true, nullptr);
    return true;
  }
  if (r.op == DiskOp::kRead && read_hit(r.offset, r.len)) {
    ++stats_.read_hits;
    complete(p, p.arrival, 0, true, nullptr);
    return true;
  }
  if (cacheable(r) && pending_.size() < p_.queue_depth && cache_room(r)) {
    // Nothing may overtake an earlier write still waiting for room, nor a flush.
    const bool blocked = std::any_of(pending_.begin(), pending_.end(), [&](const Pending& q) {
      return q.r.op == DiskOp::kFlush || cacheable(q.r);
    });
    if (!blocked) {
      add_dirty(r.offset, r.len, p.arrival);
      complete(p, p.arrival, 0, true, nullptr);
      return true;
    }
  }
  pending_.push_back(p);
  return false;
}

void DiskModelQueue::admit_writes(uint64_t t, std::vector<DiskCompletion>* done) {
  size_t seen = 0;
  for (auto it = pending_.begin(); it != pending_.end() && seen < p_.queue_depth; ++seen) {
    if (it->arrival > t || it->r.op == DiskOp::kFlush) break;
    if (!cacheable(it->r)) {
      ++it;
      continue;
    }
    if (!cache_room(it->r)) {
      if (!it->waited_for_cache) {
        it->waited_for_cache = true;
        ++stats_.cache_waits;
      }
      break;  // writes enter the cache in arrival order
    }
    add_dirty(it->r.offset, it->r.len, t);
    complete(*it, t, 0, false, done);
    it = pending_.erase(it);
  }
}

uint64_t DiskModelQueue::next_work_time(uint64_t after) const {
  uint64_t t = kNever;
  if (!pending_.empty()) t = std::max(after, pending_.front().arrival);
  if (!dirty_since_.empty()) t = std::min(t, std::max(after, *dirty_since_.begin()));
  return t;
}

void DiskModelQueue::start_media(const Pending& p, uint64_t t) {
  const bool write = p.r.op == DiskOp::kWrite;
  const double pos = position_ns(p.r.offset, write, t);
  const double xfer = transfer_ns(p.r.offset, p.r.len);
  const uint64_t service = ns_of(p_.command_overhead_us * 1e3 + pos + xfer);
  if (pos == 0) ++stats_.contiguous;
  else if (cylinder_of(head_off_) != cylinder_of(p.r.offset)) ++stats_.seeks;
  else ++stats_.rotational_only;
  stats_.positioning_ns += ns_of(pos);
  ++stats_.media_ops;
  inflight_ = Inflight{true, false, p, p.r.offset, p.r.len, t, t + service};
}

void DiskModelQueue::start_destage(std::map<uint64_t, Dirty>::iterator it, uint64_t t) {
  const uint64_t off = it->first;
  const uint64_t len = std::min(it->second.end - off, p_.destage_max_bytes);
  const Dirty rest = it->second;
  dirty_.erase(it);
  if (off + len < rest.end) dirty_[off + len] = rest;
  else dirty_since_.erase(dirty_since_.find(rest.since));
  const double pos = position_ns(off, true, t);
  const uint64_t service = ns_of(p_.command_overhead_us * 1e3 + pos + transfer_ns(off, len));
  if (pos == 0) ++stats_.contiguous;
  else if (cylinder_of(head_off_) != cylinder_of(off)) ++stats_.seeks;
  else ++stats_.rotational_only;
  stats_.positioning_ns += ns_of(pos);
  ++stats_.media_ops;
  inflight_ = Inflight{true, true, Pending{}, off, len, t, t + service};
}

bool DiskModelQueue::start_next(uint64_t t, std::vector<DiskCompletion>* done) {
  admit_writes(t, done);
  // A flush at the head of the queue completes once the cache is empty.
  if (!pending_.empty() && pending_.front().r.op == DiskOp::kFlush &&
      pending_.front().arrival <= t && dirty_.empty()) {
    Pending f = pending_.front();
    pending_.pop_front();
    complete(f, t, 0, false, done);
    admit_writes(t, done);
  }
  // The drive's view: the first queue_depth commands, up to a flush.
  std::vector<size_t> media;  // indexes into pending_
  bool writes_wait = false;
  size_t oldest = SIZE_MAX;
  for (size_t i = 0; i < pending_.size() && i < p_.queue_depth; ++i) {
    const Pending& q = pending_[i];
    if (q.arrival > t || q.r.op == DiskOp::kFlush) break;
    if (cacheable(q.r)) {
      writes_wait = true;
      continue;
    }
    if (oldest == SIZE_MAX) oldest = i;
    media.push_back(i);
  }
  // Dirty ranges destageable now, in elevator order from the head.
  auto destage_candidates = [&](size_t limit) {
    std::vector<std::map<uint64_t, Dirty>::iterator> c;
    if (dirty_.empty()) return c;
    auto it = dirty_.lower_bound(head_off_);
    if (it != dirty_.begin()) {
      // A range that holds the head's position continues from there.
      auto prev = std::prev(it);
      if (prev->second.end > head_off_) it = prev;
    }
    for (size_t n = 0; n < dirty_.size() && c.size() < limit; ++n) {
      if (it == dirty_.end()) it = dirty_.begin();
      if (it->second.since <= t) c.push_back(it);
      ++it;
    }
    return c;
  };
  const bool destage_first = writes_wait && !dirty_.empty();
  if (!media.empty() && !destage_first) {
    size_t pick = SIZE_MAX;
    if (t - pending_[oldest].arrival >= static_cast<uint64_t>(p_.max_wait_ms * 1e6) &&
        media.size() > 1) {
      pick = oldest;
      ++stats_.aged;
    } else if (p_.satf) {
      double best = 0;
      for (size_t i : media) {
        double pos = position_ns(pending_[i].r.offset, pending_[i].r.op == DiskOp::kWrite, t);
        if (pick == SIZE_MAX || pos < best) {
          best = pos;
          pick = i;
        }
      }
    } else {
      // C-LOOK: the nearest start at or after the head, else the lowest.
      size_t ahead = SIZE_MAX, lowest = SIZE_MAX;
      for (size_t i : media) {
        uint64_t off = pending_[i].r.offset;
        if (off >= head_off_ && (ahead == SIZE_MAX || off < pending_[ahead].r.offset)) ahead = i;
        if (lowest == SIZE_MAX || off < pending_[lowest].r.offset) lowest = i;
      }
      pick = ahead != SIZE_MAX ? ahead : lowest;
    }
    Pending p = pending_[pick];
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(pick));
    start_media(p, t);
    return true;
  }
  // The drive reorders its whole cache, up to the segments it tracks.
  const size_t window = p_.cache_segments ? p_.cache_segments : std::max(p_.queue_depth, 64u);
  auto cands = destage_candidates(p_.satf ? window : 1);
  if (!cands.empty()) {
    auto pick = cands.front();
    if (p_.satf) {
      double best = position_ns(pick->first, true, t);
      for (auto c : cands) {
        double pos = position_ns(c->first, true, t);
        if (pos < best) {
          best = pos;
          pick = c;
        }
      }
    }
    start_destage(pick, t);
    return true;
  }
  return false;
}

void DiskModelQueue::finish_inflight(std::vector<DiskCompletion>* done) {
  const Inflight f = inflight_;
  inflight_.active = false;
  const uint64_t service = f.end - f.start;
  stats_.busy_ns += service;
  head_off_ = f.offset + f.len;
  head_time_ = f.end;
  free_at_ = f.end;
  if (f.destage) {
    head_write_ = true;
    cache_used_ -= f.len;
    ++stats_.destages;
    stats_.destage_bytes += f.len;
    stats_.destage_ns += service;
  } else {
    head_write_ = f.req.r.op == DiskOp::kWrite;
    complete(f.req, f.end, service, false, done);
  }
}

uint64_t DiskModelQueue::hdd_advance(uint64_t now, std::vector<DiskCompletion>* done) {
  for (;;) {
    if (inflight_.active) {
      if (inflight_.end > now) return inflight_.end;
      finish_inflight(done);
      continue;
    }
    uint64_t t = next_work_time(free_at_);
    if (t == kNever) return kNever;
    if (t > now) return t;  // work that arrives after `now` (submit runs us to its arrival - 1)
    if (start_next(t, done)) continue;
    // Nothing could start at t (work only after it, or a flush completed and
    // freed the queue): look again just after.
    uint64_t later = kNever;
    for (const auto& q : pending_)
      if (q.arrival > t) later = std::min(later, q.arrival);
    auto s = dirty_since_.upper_bound(t);
    if (s != dirty_since_.end()) later = std::min(later, *s);
    if (pending_.empty() && dirty_.empty()) {
      free_at_ = std::max(free_at_, t);
      return kNever;
    }
    if (later == kNever || later > now) {
      // Only a flush waiting for requests not yet arrived, or a write waiting
      // for room with nothing to destage: cannot happen while the invariants
      // hold, but never spin.
      free_at_ = std::max(free_at_, t);
      return later;
    }
    free_at_ = later;
  }
}

// ---- ssd ----

bool DiskModelQueue::ssd_submit(const Pending& p) {
  ssd_wait_.push_back(p);
  ssd_pump(p.arrival);
  return false;
}

void DiskModelQueue::ssd_dispatch(const Pending& p, uint64_t t) {
  const double len = static_cast<double>(p.r.len);
  auto channel = std::min_element(channel_free_.begin(), channel_free_.end());
  uint64_t end = t;
  switch (p.r.op) {
    case DiskOp::kRead: {
      // The flash read on a channel, then the transfer out through the front end.
      const uint64_t e1 = std::max(t, *channel) + ns_of(p_.read_us * 1e3);
      *channel = e1;
      const uint64_t fe = ns_of(std::max(len / (p_.read_mbps * 1e6), 1.0 / p_.read_iops) * 1e9);
      end = std::max(e1, frontend_free_) + fe;
      frontend_free_ = end;
      stats_.busy_ns += fe;
      break;
    }
    case DiskOp::kWrite: {
      // In through the front end, then into a channel's write buffer.
      const uint64_t fe = ns_of(std::max(len / (p_.write_mbps * 1e6), 1.0 / p_.write_iops) * 1e9);
      const uint64_t e1 = std::max(t, frontend_free_) + fe;
      frontend_free_ = e1;
      end = std::max(e1, *channel) + ns_of(p_.write_us * 1e3);
      *channel = end;
      stats_.busy_ns += fe;
      break;
    }
    case DiskOp::kFlush:
    case DiskOp::kDiscard: {
      const uint64_t fe = ns_of((p.r.op == DiskOp::kFlush ? p_.flush_us : p_.trim_us) * 1e3);
      end = std::max(t, frontend_free_) + fe;
      frontend_free_ = end;
      stats_.busy_ns += fe;
      break;
    }
  }
  ssd_inflight_.push(SsdDone{end, ssd_seq_++, p, end - t});
}

void DiskModelQueue::ssd_pump(uint64_t t) {
  while (!ssd_wait_.empty() && ssd_inflight_.size() < p_.queue_depth && !ssd_flush_inflight_) {
    const Pending p = ssd_wait_.front();
    if (p.arrival > t) break;
    // A flush waits for every request before it, and nothing passes it.
    if (p.r.op == DiskOp::kFlush) {
      if (!ssd_inflight_.empty()) break;
      ssd_flush_inflight_ = true;
    }
    ssd_wait_.pop_front();
    ssd_dispatch(p, t);
  }
}

uint64_t DiskModelQueue::ssd_advance(uint64_t now, std::vector<DiskCompletion>* done) {
  for (;;) {
    if (ssd_inflight_.empty()) return kNever;  // the pump never leaves arrived work waiting
    const SsdDone d = ssd_inflight_.top();
    if (d.time > now) return d.time;
    ssd_inflight_.pop();
    if (d.req.r.op == DiskOp::kFlush) ssd_flush_inflight_ = false;
    complete(d.req, d.time, d.service, false, done);
    ssd_pump(d.time);
  }
}

}  // namespace hybridstore
