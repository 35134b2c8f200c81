#include "ftl/hybrid_mapping.h"

#include <cerrno>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "hscommon/log.h"

namespace hybridstore::ftl {

HybridMapping::HybridMapping(FtlContext* ctx, uint32_t merge_watermark, uint32_t steps_per_write)
    : MappingPolicy(ctx), layout_(leb_layout(ctx->image, ctx->geo)) {
  uint32_t l = layout_.log_slots;
  // Merging early wastes the log slots still free in the old block, so the
  // default starts a merge only when l/8 slots are left; a LEB written that
  // fast is the most urgent job and is merged first.
  watermark_ = l == 0 ? 0 : merge_watermark ? std::min(merge_watermark, l - 1)
                                            : std::max(1u, l / 8);
  // A merge is about d + 2 steps (copies, the victim's erase) and one is due
  // every l - watermark written pages: run that many steps per page, with a
  // quarter more so the queue drains when the chip is never idle.
  uint32_t per_merge = l > watermark_ ? l - watermark_ : 1;
  steps_per_write_ = steps_per_write
                         ? steps_per_write
                         : (5 * (layout_.data_slots + 2) + 4 * per_merge - 1) / (4 * per_merge);
  buf_.resize(ctx->geo.page_size);
}

void HybridMapping::reset_leb(Leb* st) { *st = Leb{}; }

void HybridMapping::init_empty() {
  lebs_.assign(leb_count(), Leb{});
  jobs_.clear();
}

int32_t HybridMapping::locate(const Leb& st, uint32_t lpn) const {
  if (st.peb < 0) return kNowhere;
  if (is_trimmed(st, lpn)) return kTrimmed;
  if (!st.in_log.empty() && st.in_log[lpn]) {
    for (int s = st.log_used - 1; s >= 0; --s)
      if (st.pmt[s] == lpn) return static_cast<int32_t>(layout_.data_slots) + s;
  }
  if (lpn < st.data_used) return static_cast<int32_t>(lpn);
  return kNowhere;
}

int HybridMapping::read_loc(uint32_t leb, const Leb& st, int32_t loc, uint32_t lpn, char* buf,
                            bool* hole) {
  *hole = false;
  if (loc < 0) {
    memset(buf, 0, ctx_->geo.page_size);
    *hole = true;
    return 0;
  }
  uint32_t d = layout_.data_slots;
  uint32_t page = static_cast<uint32_t>(loc) < d ? layout_.data_page(loc) : layout_.log_page(loc - d);
  PageTag tag;
  int r = ctx_->io->read_page(st.peb, page, buf, &tag);
  ctx_->note_read_status(st.peb, r);
  if (r == -EIO) return r;
  if (r == -ENODATA) {
    memset(buf, 0, ctx_->geo.page_size);
    *hole = true;
    return 0;
  }
  if (r == -EBADMSG) return -EBADMSG;
  if (tag.leb != leb || tag.lpn != lpn) {
    HS_ERROR("ftl: PEB {} page {} holds LEB {} page {}, expected LEB {} page {}", st.peb, page,
             tag.leb, tag.lpn, leb, lpn);
    return -EBADMSG;
  }
  if (tag.flags & kTagDamaged) return -EBADMSG;
  if (tag.kind == PageKind::kHole) {
    memset(buf, 0, ctx_->geo.page_size);
    *hole = true;
  }
  return 0;
}

int HybridMapping::read_page(uint32_t leb, uint32_t lpn, char* buf) {
  if (leb >= lebs_.size() || lpn >= layout_.data_slots) return -EINVAL;
  if (MergeJob* job = find_job(leb)) {
    auto it = job->overrides.find(lpn);
    if (it != job->overrides.end()) {
      memcpy(buf, it->second.data(), ctx_->geo.page_size);
      ++ctx_->stats.host_pages_read;
      return 0;
    }
  }
  const Leb& st = lebs_[leb];
  bool hole;
  int r = read_loc(leb, st, locate(st, lpn), lpn, buf, &hole);
  if (r == -EBADMSG) return -EIO;
  if (r == 0) ++ctx_->stats.host_pages_read;
  return r;
}

int HybridMapping::map_fresh(uint32_t leb) {
  uint32_t peb;
  if (int r = ctx_->alloc_peb(false, &peb); r < 0) return r;
  ctx_->wl->set_owner(peb, leb);
  Leb& st = lebs_[leb];
  reset_leb(&st);
  st.peb = static_cast<int32_t>(peb);
  st.epoch = host_writes_;
  return 0;
}

int HybridMapping::write_one(uint32_t leb, uint32_t lpn, const char* data) {
  MergeJob* job = find_job(leb);
  if (job && !job->overrides.empty()) {
    // Its pages are older than this one and only in RAM: land them first.
    ++ctx_->stats.foreground_merge_waits;
    if (int r = run_job(job); r < 0) return r;
    job = nullptr;
  }
  if (lebs_[leb].peb < 0)
    if (int r = map_fresh(leb); r < 0) return r;
  Leb& st = lebs_[leb];
  uint32_t d = layout_.data_slots, l = layout_.log_slots;
  bool in_place = !job && !st.sealed && st.log_used == 0 && lpn == st.data_used && lpn < d;
  bool log_room = !st.sealed && st.log_used < l;
  if (!in_place && !log_room) {
    if (job) {
      ++ctx_->stats.foreground_merge_waits;
      if (int r = run_job(job); r < 0) return r;
      return write_one(leb, lpn, data);
    }
    std::map<uint32_t, std::string> ov;
    ov.emplace(lpn, std::string(data, ctx_->geo.page_size));
    if (int r = merge_now(leb, MergeKind::kUpdate, std::move(ov)); r < 0) return r;
    ++ctx_->stats.host_pages_written;
    return 0;
  }
  PageTag tag;
  tag.leb = leb;
  tag.lpn = static_cast<uint16_t>(lpn);
  tag.seq = ctx_->take_seq();
  uint32_t page;
  if (in_place) {
    tag.kind = PageKind::kData;
    page = layout_.data_page(lpn);
  } else {
    tag.kind = PageKind::kLog;
    page = layout_.log_page(st.log_used);
  }
  int r = ctx_->io->write_page(st.peb, page, data, tag);
  if (r < 0) {
    if (ctx_->io->power_lost()) return -EIO;
    // The PEB is failing: move the LEB to a healthy one, this page included.
    HS_WARN("ftl: program failed on PEB {} (LEB {}); relocating", st.peb, leb);
    st.sealed = true;
    st.failing = true;
    if (job)
      if (int c = cancel_job(job); c < 0) return c;
    std::map<uint32_t, std::string> ov;
    ov.emplace(lpn, std::string(data, ctx_->geo.page_size));
    if (int m = merge_now(leb, MergeKind::kRelocate, std::move(ov)); m < 0) return m;
    ++ctx_->stats.host_pages_written;
    return 0;
  }
  if (in_place) {
    ++st.data_used;
  } else {
    if (st.pmt.empty()) st.pmt.assign(l, kNoLpn);
    if (st.in_log.empty()) st.in_log.assign(d, false);
    st.pmt[st.log_used++] = static_cast<uint16_t>(lpn);
    st.in_log[lpn] = true;
  }
  if (!st.trimmed.empty()) st.trimmed[lpn] = false;
  ++ctx_->stats.host_pages_written;
  ++host_writes_;
  if (l > 0 && !ctx_->background && st.log_used == l)
    return merge_now(leb, MergeKind::kUpdate, {});  // Algorithm 2: the log is full
  if (l > 0 && ctx_->background && !find_job(leb) && merge_due(st))
    add_job(leb, MergeKind::kUpdate);
  return 0;
}

bool HybridMapping::merge_due(const Leb& st) const {
  uint32_t l = layout_.log_slots;
  uint32_t free = l - std::min<uint32_t>(st.log_used, l);
  if (free <= watermark_) return true;
  // Three times the LEB's expected writes while a merge runs at full pace,
  // plus two: writes to one LEB come in bursts.
  double merge_writes = double(layout_.data_slots + 2) / std::max(1u, steps_per_write_);
  return free <= static_cast<uint32_t>(std::ceil(write_share(st) * merge_writes * 3)) + 2;
}

double HybridMapping::write_share(const Leb& st) const {
  uint64_t span = host_writes_ - st.epoch;
  double now = span >= 64 ? double(st.log_used) / double(span) : 0;
  return std::max<double>(st.share, now);
}

int HybridMapping::write_pages(uint32_t leb, const std::vector<PageWrite>& pages) {
  if (leb >= lebs_.size()) return -EINVAL;
  for (size_t i = 0; i < pages.size(); ++i)
    if (pages[i].lpn >= layout_.data_slots || (i && pages[i].lpn <= pages[i - 1].lpn))
      return -EINVAL;
  if (pages.empty()) return 0;
  const Leb& st = lebs_[leb];
  MergeJob* job = find_job(leb);
  // Appends in place need no merge (a fresh LEB filled in order).
  bool appends = !job && !st.sealed && st.log_used == 0;
  for (size_t i = 0; appends && i < pages.size(); ++i)
    appends = pages[i].lpn == (st.peb < 0 ? 0u : st.data_used) + i;
  uint32_t l = layout_.log_slots;
  int r = 0;
  if (!appends && pages.size() > 1 && (l == 0 || pages.size() >= l)) {
    // The sequential shortcut (hubi) or a block update (ubi): one merge that
    // writes the new pages directly into the new block.
    MergeKind kind = l == 0 ? MergeKind::kUpdate : MergeKind::kDirect;
    std::map<uint32_t, std::string> ov;
    for (const PageWrite& p : pages) ov.emplace(p.lpn, std::string(p.data, ctx_->geo.page_size));
    if (ctx_->background && l > 0) {
      if (job && !job->overrides.empty()) {
        ++ctx_->stats.foreground_merge_waits;
        if ((r = run_job(job)) < 0) return r;
      } else if (job) {
        // A queued merge of the same LEB is superseded by this one.
        if ((r = cancel_job(job)) < 0) return r;
      }
      MergeJob* nj = add_job(leb, kind);
      nj->overrides = std::move(ov);
      ctx_->stats.host_pages_written += pages.size();
    } else {
      if ((r = merge_now(leb, kind, std::move(ov))) < 0) return r;
      ctx_->stats.host_pages_written += pages.size();
    }
  } else {
    for (const PageWrite& p : pages)
      if ((r = write_one(leb, p.lpn, p.data)) < 0) return r;
  }
  return 0;
}

int HybridMapping::trim(uint32_t leb, uint32_t first, uint32_t count) {
  uint32_t d = layout_.data_slots;
  if (leb >= lebs_.size() || first >= d || count > d - first) return -EINVAL;
  if (count == 0) return 0;
  Leb& st = lebs_[leb];
  MergeJob* job = find_job(leb);
  if (first == 0 && count == d) {
    if (job)
      if (int r = cancel_job(job); r < 0) return r;
    if (st.peb < 0) return 0;
    int32_t peb = st.peb;
    bool failing = st.failing;
    reset_leb(&st);
    return ctx_->retire(static_cast<uint32_t>(peb), failing);
  }
  if (st.peb < 0) return 0;
  if (st.trimmed.empty()) st.trimmed.assign(d, false);
  for (uint32_t p = first; p < first + count; ++p) {
    st.trimmed[p] = true;
    if (job) job->overrides.erase(p);
  }
  return 0;
}

int HybridMapping::relocate(uint32_t peb) {
  uint32_t leb = ctx_->wl->owner(peb);
  if (leb >= lebs_.size() || lebs_[leb].peb != static_cast<int32_t>(peb) || find_job(leb))
    return -EBUSY;
  if (ctx_->background && has_log()) {
    add_job(leb, MergeKind::kRelocate);
    return 0;
  }
  return merge_now(leb, MergeKind::kRelocate, {});
}

int HybridMapping::attach(const ScanResult& scan) {
  init_empty();
  uint32_t d = layout_.data_slots, l = layout_.log_slots;
  WearLeveler* wl = ctx_->wl;
  // The newest complete PEB of each LEB wins; every other copy is stale.
  std::vector<int32_t> best(lebs_.size(), -1);
  for (uint32_t peb = 0; peb < scan.pebs.size(); ++peb) {
    const PebScan& s = scan.pebs[peb];
    if (s.kind != PebScan::Kind::kLeb || !s.complete || s.leb >= lebs_.size()) continue;
    int32_t& b = best[s.leb];
    if (b < 0 || scan.pebs[b].first_seq < s.first_seq) b = static_cast<int32_t>(peb);
  }
  for (uint32_t peb = 0; peb < scan.pebs.size(); ++peb) {
    const PebScan& s = scan.pebs[peb];
    switch (s.kind) {
      case PebScan::Kind::kBad: wl->add_peb(peb, PebState::kBad, 0, true); break;
      case PebScan::Kind::kEmpty: wl->add_peb(peb, PebState::kFree, s.ec, s.ec_known); break;
      case PebScan::Kind::kNeedsErase:
      case PebScan::Kind::kLogBlock:
        wl->add_peb(peb, PebState::kErase, s.ec, s.ec_known);
        break;
      case PebScan::Kind::kLeb: {
        if (s.leb >= lebs_.size() || best[s.leb] != static_cast<int32_t>(peb)) {
          wl->add_peb(peb, PebState::kErase, s.ec, s.ec_known);
          break;
        }
        wl->add_peb(peb, PebState::kUsed, s.ec, s.ec_known, s.leb);
        Leb& st = lebs_[s.leb];
        st.peb = static_cast<int32_t>(peb);
        st.data_used = static_cast<uint16_t>(std::min(s.data_used, d));
        st.log_used = static_cast<uint16_t>(std::min(s.log_used, l));
        st.sealed = s.torn;
        if (l > 0 && st.log_used > 0) {
          st.pmt.assign(l, kNoLpn);
          st.in_log.assign(d, false);
          for (const ScannedLogPage& p : s.log) {
            if (p.slot >= st.log_used || p.tag.lpn >= d) continue;
            st.pmt[p.slot] = p.tag.lpn;
            st.in_log[p.tag.lpn] = true;
          }
        }
        break;
      }
    }
  }
  wl->finish_attach();
  ctx_->next_seq = scan.max_seq + 1;
  return 0;
}

int HybridMapping::recover() {
  // Sealed PEBs (a torn page from the power cut) are copied to fresh ones now,
  // so normal operation never meets them.
  for (uint32_t leb = 0; leb < lebs_.size(); ++leb) {
    if (lebs_[leb].peb < 0 || !lebs_[leb].sealed) continue;
    if (int r = merge_now(leb, MergeKind::kRelocate, {}); r < 0) return r;
  }
  return ctx_->wl->drain();
}

int HybridMapping::check(std::string* error) const {
  uint32_t d = layout_.data_slots, l = layout_.log_slots;
  PebOwnershipCheck owners(*ctx_);
  auto leb_ok = [&](uint32_t leb, const Leb& st) {
    if (st.data_used > d || st.log_used > l)
      return PebOwnershipCheck::broken(
          error, fmt::format("LEB {}: fill {}/{} out of range", leb, st.data_used, st.log_used));
    if (l > 0 && st.log_used > 0) {
      std::vector<bool> in(d, false);
      for (uint32_t s = 0; s < st.log_used; ++s)
        if (st.pmt[s] != kNoLpn) in[st.pmt[s]] = true;
      if (in != st.in_log)
        return PebOwnershipCheck::broken(error, fmt::format("LEB {}: bitmap disagrees with PMT", leb));
    }
    return 0;
  };
  if (int r = owners.claim_lebs(lebs_, error, leb_ok); r < 0) return r;
  for (const auto& job : jobs_) {
    if (job->target < 0) continue;
    if (int r = owners.claim(static_cast<uint32_t>(job->target), "merge target", error); r < 0) return r;
  }
  return owners.finish(error);
}

}  // namespace hybridstore::ftl
