// hUBI merges (Algorithm 3) as jobs of single-page steps: run to completion at
// once in the paper's mode, one step at a time in background mode.
#include <cerrno>
#include <cstring>

#include "ftl/hybrid_mapping.h"
#include "hscommon/log.h"

namespace hybridstore::ftl {

HybridMapping::MergeJob* HybridMapping::find_job(uint32_t leb) {
  for (auto& j : jobs_)
    if (j->leb == leb) return j.get();
  return nullptr;
}

HybridMapping::MergeJob* HybridMapping::add_job(uint32_t leb, MergeKind kind) {
  auto j = std::make_unique<MergeJob>();
  j->leb = leb;
  j->kind = kind;
  jobs_.push_back(std::move(j));
  return jobs_.back().get();
}

void HybridMapping::drop_job(MergeJob* job) {
  for (auto it = jobs_.begin(); it != jobs_.end(); ++it)
    if (it->get() == job) {
      jobs_.erase(it);
      return;
    }
}

int HybridMapping::cancel_job(MergeJob* job) {
  // The target never got kTagLast: after a crash it would be discarded, and
  // now it simply goes back to be erased.
  int32_t t = job->target;
  drop_job(job);
  return t >= 0 ? ctx_->retire(static_cast<uint32_t>(t)) : 0;
}

int HybridMapping::merge_now(uint32_t leb, MergeKind kind,
                             std::map<uint32_t, std::string> overrides) {
  if (MergeJob* existing = find_job(leb)) {
    if (!existing->overrides.empty()) {
      if (int r = run_job(existing); r < 0) return r;
    } else if (int r = cancel_job(existing); r < 0) {
      return r;
    }
  }
  MergeJob* job = add_job(leb, kind);
  job->overrides = std::move(overrides);
  return run_job(job);
}

int HybridMapping::run_job(MergeJob* job) {
  for (;;) {
    bool done = false;
    if (int r = job_step(job, &done); r < 0) return r;
    if (done) return 0;
  }
}

int HybridMapping::start_job(MergeJob* job, bool* done) {
  Leb& st = lebs_[job->leb];
  uint32_t d = layout_.data_slots;
  int32_t end = -1;
  for (uint32_t lpn = 0; lpn < d; ++lpn)
    if (job->overrides.count(lpn) || locate(st, lpn) >= 0) end = static_cast<int32_t>(lpn);
  if (end < 0) {
    // Nothing valid is left: the LEB becomes unmapped.
    int32_t old = st.peb;
    bool failing = st.failing;
    reset_leb(&st);
    drop_job(job);
    *done = true;
    return old >= 0 ? ctx_->retire(static_cast<uint32_t>(old), failing) : 0;
  }
  uint32_t target;
  if (int r = ctx_->alloc_peb(job->kind == MergeKind::kRelocate, &target); r < 0) return r;
  job->target = static_cast<int32_t>(target);
  job->end = end;
  job->next_slot = 0;
  job->copied.assign(d, kNowhere);
  job->catchup.clear();
  job->started = true;
  return 0;
}

int HybridMapping::restart_job(MergeJob* job) {
  HS_WARN("ftl: program failed on merge target PEB {}; retrying on another", job->target);
  int32_t t = job->target;
  job->target = -1;
  job->started = false;
  if (++job->retries > 8) return -EIO;
  return ctx_->retire(static_cast<uint32_t>(t), true);
}

int HybridMapping::next_catchup(const MergeJob& job, const Leb& st, uint32_t* lpn,
                                int* remaining) const {
  *remaining = 0;
  for (uint32_t p = 0; p < layout_.data_slots; ++p) {
    int32_t cur = job.overrides.count(p) ? kOverride : locate(st, p);
    if (cur == kNowhere || cur == kTrimmed) continue;
    if (job.copied[p] != cur) {
      if (*remaining == 0) *lpn = p;
      ++*remaining;
    }
  }
  return 0;
}

int HybridMapping::job_step(MergeJob* job, bool* done) {
  *done = false;
  if (!job->started) return start_job(job, done);
  int64_t t0 = ctx_->now();
  Leb& st = lebs_[job->leb];
  uint32_t lpn;
  bool catchup = job->next_slot > static_cast<uint32_t>(job->end);
  bool last = false;
  int remaining = 0;
  if (!catchup) {
    lpn = job->next_slot;
    if (static_cast<int32_t>(lpn) == job->end) {
      uint32_t ignored;
      next_catchup(*job, st, &ignored, &remaining);
      // This data page is the last unless a later copy must follow; the catch-up
      // check excludes lpn itself, which is copied now.
      int32_t cur = job->overrides.count(lpn) ? kOverride : locate(st, lpn);
      if (cur != kNowhere && cur != kTrimmed && job->copied[lpn] != cur) --remaining;
      last = remaining == 0;
    }
  } else {
    next_catchup(*job, st, &lpn, &remaining);
    if (remaining == 0) lpn = static_cast<uint32_t>(job->end);  // trims removed them: re-copy
    last = remaining <= 1;
    if (job->catchup.size() >= layout_.log_slots) {
      HS_ERROR("ftl: merge of LEB {} needs more catch-up pages than the log holds", job->leb);
      return -EIO;
    }
  }
  int32_t src = job->overrides.count(lpn) ? kOverride : locate(st, lpn);
  const char* data = nullptr;
  bool hole = false, damaged = false;
  if (src == kOverride) {
    data = job->overrides[lpn].data();
  } else {
    int r = read_loc(job->leb, st, src, lpn, buf_.data(), &hole);
    if (r == -EIO) return r;
    if (r == -EBADMSG) {
      damaged = true;
      ++ctx_->stats.damaged_pages;
      HS_ERROR("ftl: LEB {} page {} is damaged; its copy stays marked damaged", job->leb, lpn);
    }
    if (!hole) data = buf_.data();
  }
  PageTag tag;
  tag.leb = job->leb;
  tag.lpn = static_cast<uint16_t>(lpn);
  tag.seq = ctx_->take_seq();
  tag.merge_end = static_cast<uint16_t>(job->end);
  tag.flags = kTagMerge | (last ? kTagLast : 0) | (damaged ? kTagDamaged : 0);
  uint32_t page;
  if (!catchup) {
    tag.kind = hole ? PageKind::kHole : PageKind::kData;
    page = layout_.data_page(lpn);
  } else {
    tag.kind = PageKind::kLog;
    page = layout_.log_page(static_cast<uint32_t>(job->catchup.size()));
  }
  int r = ctx_->io->write_page(static_cast<uint32_t>(job->target), page, data, tag);
  if (r < 0) {
    if (ctx_->io->power_lost()) return -EIO;
    job->copy_ns += ctx_->now() - t0;
    return restart_job(job);
  }
  if (hole) ++ctx_->stats.holes_written;
  else if (src != kOverride) ++ctx_->stats.pages_copied;
  job->copied[lpn] = src;
  if (catchup) job->catchup.push_back(static_cast<uint16_t>(lpn));
  else ++job->next_slot;
  job->copy_ns += ctx_->now() - t0;
  if (last) {
    *done = true;
    return finish_job(job);
  }
  return 0;
}

int HybridMapping::finish_job(MergeJob* job) {
  uint32_t leb = job->leb;
  Leb& st = lebs_[leb];
  int32_t old = st.peb;
  bool failing = st.failing;
  Leb n;
  n.peb = job->target;
  n.data_used = static_cast<uint16_t>(job->end + 1);
  n.log_used = static_cast<uint16_t>(job->catchup.size());
  if (!job->catchup.empty()) {
    n.pmt.assign(layout_.log_slots, kNoLpn);
    n.in_log.assign(layout_.data_slots, false);
    for (size_t s = 0; s < job->catchup.size(); ++s) {
      n.pmt[s] = job->catchup[s];
      n.in_log[job->catchup[s]] = true;
    }
  }
  n.trimmed = std::move(st.trimmed);
  n.epoch = host_writes_;
  uint64_t span = host_writes_ - st.epoch;
  n.share = span ? static_cast<float>(double(st.log_used) / double(span)) : st.share;
  if (!n.trimmed.empty())
    for (const auto& [lpn, data] : job->overrides) n.trimmed[lpn] = false;
  st = std::move(n);
  ctx_->wl->set_owner(static_cast<uint32_t>(st.peb), leb);
  int k = static_cast<int>(job->kind);
  ++ctx_->stats.merges[k];
  ctx_->stats.merge_ns[k] += job->copy_ns;
  if (job->copy_ns > ctx_->stats.max_merge_ns[k]) ctx_->stats.max_merge_ns[k] = job->copy_ns;
  MergeKind kind = job->kind;
  drop_job(job);
  if (old < 0) return 0;
  return ctx_->retire_victim(static_cast<uint32_t>(old), kind, failing);
}

uint32_t HybridMapping::urgency(const MergeJob& j) const {
  // Free log slots left to the LEB (0 = a write to it would have to wait).
  const Leb& st = lebs_[j.leb];
  if (!j.overrides.empty() || st.sealed) return 0;
  if (j.kind == MergeKind::kRelocate) return layout_.log_slots + 1;
  return layout_.log_slots - std::min<uint32_t>(st.log_used, layout_.log_slots);
}

bool HybridMapping::background_behind() const {
  if (ctx_->wl->erase_pending() > 2) return true;
  if (ctx_->wl->free_count() < 2 && ctx_->wl->erase_pending() > 0) return true;
  if (jobs_.size() > 1) return true;
  for (const auto& j : jobs_) {
    uint32_t free = urgency(*j);
    if (free <= 1) return true;
    if (j->kind == MergeKind::kRelocate) continue;
    // Host writes left before the LEB's log is full, against the host writes
    // the rest of the merge needs at full pace (three times, for bursts).
    double left = double(free) / std::max(write_share(lebs_[j->leb]), 1e-9);
    double steps = j->started ? double(j->end + 1 - j->next_slot) + 2 : layout_.data_slots + 2.0;
    if (3 * steps / std::max(1u, steps_per_write_) >= left) return true;
  }
  return false;
}

HybridMapping::MergeJob* HybridMapping::most_urgent_job() {
  MergeJob* best = nullptr;
  uint32_t best_u = 0;
  for (auto& j : jobs_) {
    uint32_t u = urgency(*j);
    if (!best || u < best_u) {
      best = j.get();
      best_u = u;
    }
  }
  return best;
}

bool HybridMapping::background_pending() const {
  return !jobs_.empty() || ctx_->wl->erase_pending() > 0;
}

int HybridMapping::background_step() {
  // Keep a couple of erased PEBs ready so a merge never waits for an erase.
  if (ctx_->wl->free_count() < 2 && ctx_->wl->erase_pending() > 0) return ctx_->erase_step();
  if (MergeJob* job = most_urgent_job()) {
    bool done;
    int r = job_step(job, &done);
    return r < 0 ? r : 1;
  }
  return ctx_->erase_step();
}

int HybridMapping::make_durable() {
  for (;;) {
    MergeJob* pending = nullptr;
    for (auto& j : jobs_)
      if (!j->overrides.empty()) pending = j.get();
    if (!pending) return 0;
    if (int r = run_job(pending); r < 0) return r;
  }
}

}  // namespace hybridstore::ftl
