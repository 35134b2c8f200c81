#include "ftl/partition_mapping.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include <fmt/format.h>

#include "hscommon/log.h"

namespace hybridstore::ftl {

PartitionMapping::PartitionMapping(FtlContext* ctx)
    : MappingPolicy(ctx),
      ppl_(ctx->geo.pages_per_block - 1),
      data_layout_(leb_layout(ctx->image, ctx->geo)),
      log_layout_(log_block_layout(ctx->geo)) {
  buf_.resize(ctx->geo.page_size);
}

void PartitionMapping::init_empty() {
  lebs_.assign(leb_count(), Leb{});
  uint32_t d = std::max<uint32_t>(1, image().partition_data);
  parts_.assign((leb_count() + d - 1) / d, Partition{});
}

int PartitionMapping::read_data_slot(uint32_t leb, uint32_t lpn, char* buf, bool* hole,
                                     bool* damaged) {
  const Leb& st = lebs_[leb];
  *hole = false;
  *damaged = false;
  if (st.peb < 0 || lpn >= st.data_used) {
    memset(buf, 0, ctx_->geo.page_size);
    *hole = true;
    return 0;
  }
  PageTag tag;
  int r = ctx_->io->read_page(static_cast<uint32_t>(st.peb), data_layout_.data_page(lpn), buf,
                              &tag);
  ctx_->note_read_status(static_cast<uint32_t>(st.peb), r);
  if (r == -EIO) return r;
  if (r == -ENODATA) {
    memset(buf, 0, ctx_->geo.page_size);
    *hole = true;
    return 0;
  }
  if (r == -EBADMSG || tag.leb != leb || tag.lpn != lpn || (tag.flags & kTagDamaged)) {
    *damaged = true;
    return 0;
  }
  if (tag.kind == PageKind::kHole) {
    memset(buf, 0, ctx_->geo.page_size);
    *hole = true;
  }
  return 0;
}

int PartitionMapping::read_newest(uint32_t leb, uint32_t lpn, char* buf, bool* hole,
                                  bool* damaged) {
  const Leb& st = lebs_[leb];
  *hole = false;
  *damaged = false;
  if (is_trimmed(st, lpn)) {
    memset(buf, 0, ctx_->geo.page_size);
    *hole = true;
    return 0;
  }
  Partition& part = parts_[part_of(leb)];
  auto it = part.map.find(key(leb, lpn));
  if (it == part.map.end()) return read_data_slot(leb, lpn, buf, hole, damaged);
  uint32_t ppb = ctx_->geo.pages_per_block;
  const LogBlock& lb = part.logs[it->second / ppb];
  PageTag tag;
  int r = ctx_->io->read_page(lb.peb, log_layout_.log_page(it->second % ppb), buf, &tag);
  ctx_->note_read_status(lb.peb, r);
  if (r == -EIO) return r;
  if (r < 0 && r != -EUCLEAN) *damaged = true;
  else if (tag.leb != leb || tag.lpn != lpn || (tag.flags & kTagDamaged)) *damaged = true;
  return 0;
}

int PartitionMapping::read_page(uint32_t leb, uint32_t lpn, char* buf) {
  if (leb >= lebs_.size() || lpn >= ppl_) return -EINVAL;
  bool hole, damaged;
  if (int r = read_newest(leb, lpn, buf, &hole, &damaged); r < 0) return r;
  if (damaged) return -EIO;
  ++ctx_->stats.host_pages_read;
  return 0;
}

int PartitionMapping::new_log_block(Partition* part) {
  uint32_t peb;
  if (int r = ctx_->alloc_peb(false, &peb); r < 0) return r;
  LogBlock lb;
  lb.peb = peb;
  part->logs.push_back(lb);
  return 0;
}

int PartitionMapping::append_log(uint32_t leb, uint32_t lpn, const char* data) {
  uint32_t p = part_of(leb);
  for (int attempt = 0; attempt < 8; ++attempt) {
    Partition& part = parts_[p];
    if (part.logs.empty() || part.logs.back().sealed || part.logs.back().used >= ppl_) {
      if (part.logs.size() >= image().partition_log)
        if (int r = merge_partition(p); r < 0) return r;
      if (int r = new_log_block(&parts_[p]); r < 0) return r;
    }
    Partition& pt = parts_[p];
    uint32_t idx = static_cast<uint32_t>(pt.logs.size() - 1);
    LogBlock& lb = pt.logs.back();
    PageTag tag;
    tag.kind = PageKind::kLog;
    tag.leb = leb;
    tag.lpn = static_cast<uint16_t>(lpn);
    tag.seq = ctx_->take_seq();
    uint32_t slot = lb.used;
    int r = ctx_->io->write_page(lb.peb, log_layout_.log_page(slot), data, tag);
    if (r < 0) {
      if (ctx_->io->power_lost()) return -EIO;
      HS_WARN("ftl: program failed on log block PEB {}; sealing it", lb.peb);
      lb.sealed = true;
      lb.failing = true;
      ++lb.used;
      continue;
    }
    if (slot == 0) lb.single_leb = lpn == 0 ? leb : kNone;
    else if (lb.single_leb != leb || lpn != slot) lb.single_leb = kNone;
    ++lb.used;
    pt.map[key(leb, lpn)] = idx * ctx_->geo.pages_per_block + slot;
    Leb& st = lebs_[leb];
    if (!st.trimmed.empty()) st.trimmed[lpn] = false;
    ++ctx_->stats.host_pages_written;
    if (lb.used >= ppl_ && pt.logs.size() >= image().partition_log) return merge_partition(p);
    return 0;
  }
  return -EIO;
}

void PartitionMapping::drop_log_entries(uint32_t leb) {
  Partition& part = parts_[part_of(leb)];
  for (uint32_t lpn = 0; lpn < ppl_; ++lpn) part.map.erase(key(leb, lpn));
}

int PartitionMapping::merge_leb(uint32_t leb, MergeKind kind, const std::vector<PageWrite>* full) {
  Leb& st = lebs_[leb];
  Partition& part = parts_[part_of(leb)];
  int32_t m = full ? static_cast<int32_t>(ppl_) - 1 : -1;
  for (uint32_t lpn = 0; !full && lpn < ppl_; ++lpn)
    if (!is_trimmed(st, lpn) && (part.map.count(key(leb, lpn)) || lpn < st.data_used))
      m = static_cast<int32_t>(lpn);
  if (m < 0) {
    int32_t old = st.peb;
    bool failing = st.failing;
    drop_log_entries(leb);
    lebs_[leb] = Leb{};
    return old >= 0 ? ctx_->retire(static_cast<uint32_t>(old), failing) : 0;
  }
  for (int attempt = 0;; ++attempt) {
    if (attempt > 8) return -EIO;
    uint32_t target;
    if (int r = ctx_->alloc_peb(kind == MergeKind::kRelocate, &target); r < 0) return r;
    bool failed = false;
    for (int32_t slot = 0; slot <= m && !failed; ++slot) {
      const char* data = nullptr;
      bool hole = false, damaged = false;
      if (full) {
        data = (*full)[slot].data;
      } else {
        if (int r = read_newest(leb, static_cast<uint32_t>(slot), buf_.data(), &hole, &damaged);
            r < 0)
          return r;
        if (!hole) data = buf_.data();
        if (damaged) ++ctx_->stats.damaged_pages;
      }
      PageTag tag;
      tag.kind = hole ? PageKind::kHole : PageKind::kData;
      tag.leb = leb;
      tag.lpn = static_cast<uint16_t>(slot);
      tag.seq = ctx_->take_seq();
      tag.merge_end = static_cast<uint16_t>(m);
      tag.flags = kTagMerge | (slot == m ? kTagLast : 0) | (damaged ? kTagDamaged : 0);
      int r = ctx_->io->write_page(target, data_layout_.data_page(slot), data, tag);
      if (r < 0) {
        if (ctx_->io->power_lost()) return -EIO;
        HS_WARN("ftl: program failed on merge target PEB {}; retrying", target);
        if (int e = ctx_->retire(target, true); e < 0) return e;
        failed = true;
        break;
      }
      if (hole) ++ctx_->stats.holes_written;
      else if (!full) ++ctx_->stats.pages_copied;
    }
    if (failed) continue;
    int32_t old = st.peb;
    bool failing = st.failing;
    st.peb = static_cast<int32_t>(target);
    st.data_used = static_cast<uint16_t>(m + 1);
    st.sealed = false;
    st.failing = false;
    ctx_->wl->set_owner(target, leb);
    drop_log_entries(leb);
    return old >= 0 ? ctx_->retire_victim(static_cast<uint32_t>(old), kind, failing) : 0;
  }
}

int PartitionMapping::merge_partition(uint32_t p) {
  int64_t t0 = ctx_->now();
  int k = static_cast<int>(MergeKind::kUpdate);
  int64_t erase_before = ctx_->stats.merge_ns[k];
  Partition& part = parts_[p];
  uint32_t ppb = ctx_->geo.pages_per_block;
  uint32_t first = p * image().partition_data;
  std::set<uint32_t> touched;
  for (const auto& [kk, loc] : part.map) touched.insert(first + kk / ppl_);
  std::set<size_t> switched;
  for (uint32_t leb : touched) {
    // Switch merge: a full log block holding exactly this LEB, in order.
    int sw = -1;
    for (size_t b = 0; b < part.logs.size() && sw < 0; ++b) {
      const LogBlock& lb = part.logs[b];
      if (lb.single_leb != leb || lb.used != ppl_ || lb.sealed) continue;
      bool all = lebs_[leb].trimmed.empty();
      for (uint32_t lpn = 0; all && lpn < ppl_; ++lpn) {
        auto it = part.map.find(key(leb, lpn));
        all = it != part.map.end() && it->second == b * ppb + lpn;
      }
      if (all) sw = static_cast<int>(b);
    }
    if (sw >= 0) {
      Leb& st = lebs_[leb];
      int32_t old = st.peb;
      bool failing = st.failing;
      st.peb = static_cast<int32_t>(part.logs[sw].peb);
      st.data_used = static_cast<uint16_t>(ppl_);
      st.sealed = false;
      st.failing = false;
      ctx_->wl->set_owner(part.logs[sw].peb, leb);
      switched.insert(static_cast<size_t>(sw));
      ++ctx_->stats.switch_merges;
      if (old >= 0)
        if (int r = ctx_->retire_victim(static_cast<uint32_t>(old), MergeKind::kUpdate, failing);
            r < 0)
          return r;
      continue;
    }
    if (int r = merge_leb(leb, MergeKind::kUpdate, nullptr); r < 0) return r;
  }
  // Every page of the log is now in a data block: the log blocks go.
  std::vector<LogBlock> logs;
  logs.swap(parts_[p].logs);
  parts_[p].map.clear();
  for (size_t b = 0; b < logs.size(); ++b) {
    if (switched.count(b)) continue;
    if (int r = ctx_->retire_victim(logs[b].peb, MergeKind::kUpdate, logs[b].failing); r < 0)
      return r;
  }
  int64_t copy = (ctx_->now() - t0) - (ctx_->stats.merge_ns[k] - erase_before);
  ++ctx_->stats.merges[k];
  ctx_->stats.merge_ns[k] += copy;
  if (copy > ctx_->stats.max_merge_ns[k]) ctx_->stats.max_merge_ns[k] = copy;
  return 0;
}

int PartitionMapping::write_pages(uint32_t leb, const std::vector<PageWrite>& pages) {
  if (leb >= lebs_.size()) return -EINVAL;
  for (size_t i = 0; i < pages.size(); ++i)
    if (pages[i].lpn >= ppl_ || (i && pages[i].lpn <= pages[i - 1].lpn)) return -EINVAL;
  if (pages.size() == ppl_) {
    // A whole LEB: straight into a new data block, no log.
    int k = static_cast<int>(MergeKind::kDirect);
    int64_t t0 = ctx_->now();
    int64_t erase_before = ctx_->stats.merge_ns[k];
    if (int r = merge_leb(leb, MergeKind::kDirect, &pages); r < 0) return r;
    int64_t copy = (ctx_->now() - t0) - (ctx_->stats.merge_ns[k] - erase_before);
    ++ctx_->stats.merges[k];
    ctx_->stats.merge_ns[k] += copy;
    ctx_->stats.max_merge_ns[k] = std::max(ctx_->stats.max_merge_ns[k], copy);
    ctx_->stats.host_pages_written += pages.size();
    lebs_[leb].trimmed.clear();
    return 0;
  }
  for (const PageWrite& p : pages)
    if (int r = append_log(leb, p.lpn, p.data); r < 0) return r;
  return 0;
}

int PartitionMapping::trim(uint32_t leb, uint32_t first, uint32_t count) {
  if (leb >= lebs_.size() || first >= ppl_ || count > ppl_ - first) return -EINVAL;
  if (count == 0) return 0;
  Leb& st = lebs_[leb];
  if (first == 0 && count == ppl_) {
    int32_t old = st.peb;
    bool failing = st.failing;
    drop_log_entries(leb);
    st = Leb{};
    return old >= 0 ? ctx_->retire(static_cast<uint32_t>(old), failing) : 0;
  }
  if (st.trimmed.empty()) st.trimmed.assign(ppl_, false);
  for (uint32_t p = first; p < first + count; ++p) st.trimmed[p] = true;
  return 0;
}

int PartitionMapping::relocate(uint32_t peb) {
  uint32_t leb = ctx_->wl->owner(peb);
  if (leb >= lebs_.size() || lebs_[leb].peb != static_cast<int32_t>(peb)) return -EBUSY;
  int k = static_cast<int>(MergeKind::kRelocate);
  int64_t t0 = ctx_->now();
  int64_t erase_before = ctx_->stats.merge_ns[k];
  if (int r = merge_leb(leb, MergeKind::kRelocate, nullptr); r < 0) return r;
  ++ctx_->stats.merges[k];
  ctx_->stats.merge_ns[k] += (ctx_->now() - t0) - (ctx_->stats.merge_ns[k] - erase_before);
  return 0;
}

int PartitionMapping::attach(const ScanResult& scan) {
  init_empty();
  WearLeveler* wl = ctx_->wl;
  const uint32_t ppb = ctx_->geo.pages_per_block;
  const uint32_t D = std::max<uint32_t>(1, image().partition_data);
  // Data-block candidates: complete merge targets, and full log blocks that
  // hold exactly one LEB in order (switched, or switchable: the same thing).
  std::vector<int32_t> best(lebs_.size(), -1);
  auto adoptable = [&](const PebScan& s) {
    if (s.kind != PebScan::Kind::kLogBlock || s.torn || s.log.size() != ppl_ ||
        s.leb >= lebs_.size())
      return false;
    for (const ScannedLogPage& p : s.log)
      if (p.tag.leb != s.leb || p.tag.lpn != p.slot) return false;
    return true;
  };
  for (uint32_t peb = 0; peb < scan.pebs.size(); ++peb) {
    const PebScan& s = scan.pebs[peb];
    bool cand = (s.kind == PebScan::Kind::kLeb && s.complete && s.leb < lebs_.size()) ||
                adoptable(s);
    if (!cand) continue;
    int32_t& b = best[s.leb];
    if (b < 0 || scan.pebs[b].first_seq < s.first_seq) b = static_cast<int32_t>(peb);
  }
  std::vector<uint64_t> data_seq(lebs_.size(), 0);  // 0: no data block
  for (uint32_t leb = 0; leb < lebs_.size(); ++leb)
    if (best[leb] >= 0) data_seq[leb] = scan.pebs[best[leb]].first_seq;

  // Log blocks per partition, oldest first.
  std::map<uint32_t, std::vector<std::pair<uint64_t, uint32_t>>> logs_by_part;
  for (uint32_t peb = 0; peb < scan.pebs.size(); ++peb) {
    const PebScan& s = scan.pebs[peb];
    switch (s.kind) {
      case PebScan::Kind::kBad: wl->add_peb(peb, PebState::kBad, 0, true); break;
      case PebScan::Kind::kEmpty: wl->add_peb(peb, PebState::kFree, s.ec, s.ec_known); break;
      case PebScan::Kind::kNeedsErase: wl->add_peb(peb, PebState::kErase, s.ec, s.ec_known); break;
      case PebScan::Kind::kLeb:
      case PebScan::Kind::kLogBlock: {
        if (s.leb < lebs_.size() && best[s.leb] == static_cast<int32_t>(peb)) {
          wl->add_peb(peb, PebState::kUsed, s.ec, s.ec_known, s.leb);
          Leb& st = lebs_[s.leb];
          st.peb = static_cast<int32_t>(peb);
          st.data_used = static_cast<uint16_t>(
              s.kind == PebScan::Kind::kLogBlock ? ppl_ : std::min(s.data_used, ppl_));
          st.sealed = s.torn;
          break;
        }
        bool live = false;
        if (s.kind == PebScan::Kind::kLogBlock && s.leb < lebs_.size()) {
          for (const ScannedLogPage& p : s.log)
            if (p.tag.leb < lebs_.size() && p.tag.leb / D == s.leb / D && p.tag.lpn < ppl_ &&
                p.tag.seq > data_seq[p.tag.leb])
              live = true;
        }
        if (live) {
          wl->add_peb(peb, PebState::kUsed, s.ec, s.ec_known, kNoOwner);
          logs_by_part[s.leb / D].push_back({s.first_seq, peb});
        } else {
          wl->add_peb(peb, PebState::kErase, s.ec, s.ec_known);
        }
        break;
      }
    }
  }
  for (auto& [p, list] : logs_by_part) {
    std::sort(list.begin(), list.end());
    Partition& part = parts_[p];
    std::unordered_map<uint32_t, uint64_t> newest;  // key -> seq of the mapped copy
    for (const auto& [seq, peb] : list) {
      const PebScan& s = scan.pebs[peb];
      uint32_t idx = static_cast<uint32_t>(part.logs.size());
      LogBlock lb;
      lb.peb = peb;
      lb.used = s.log_used;
      lb.sealed = s.torn;
      for (size_t i = 0; i < s.log.size(); ++i) {
        const ScannedLogPage& pg = s.log[i];
        bool in_order = pg.tag.leb == s.leb && pg.tag.lpn == pg.slot && pg.slot == i;
        if (!in_order) lb.single_leb = kNone;
        else if (i == 0) lb.single_leb = s.leb;
        if (pg.tag.leb >= lebs_.size() || pg.tag.leb / D != p || pg.tag.lpn >= ppl_ ||
            pg.tag.seq <= data_seq[pg.tag.leb])
          continue;
        uint32_t k = key(pg.tag.leb, pg.tag.lpn);
        auto it = newest.find(k);
        if (it != newest.end() && it->second > pg.tag.seq) continue;
        newest[k] = pg.tag.seq;
        part.map[k] = idx * ppb + pg.slot;
      }
      if (s.log.size() != s.log_used) lb.single_leb = kNone;
      part.logs.push_back(lb);
    }
  }
  wl->finish_attach();
  ctx_->next_seq = scan.max_seq + 1;
  return 0;
}

int PartitionMapping::recover() {
  for (uint32_t leb = 0; leb < lebs_.size(); ++leb)
    if (lebs_[leb].peb >= 0 && lebs_[leb].sealed)
      if (int r = relocate(static_cast<uint32_t>(lebs_[leb].peb)); r < 0) return r;
  for (uint32_t p = 0; p < parts_.size(); ++p)
    if (parts_[p].logs.size() > image().partition_log)
      if (int r = merge_partition(p); r < 0) return r;
  return ctx_->wl->drain();
}

int PartitionMapping::check(std::string* error) const {
  PebOwnershipCheck owners(*ctx_);
  auto leb_ok = [&](uint32_t leb, const Leb& st) {
    if (st.data_used > ppl_) return PebOwnershipCheck::broken(error, fmt::format("LEB {}: fill out of range", leb));
    return 0;
  };
  if (int r = owners.claim_lebs(lebs_, error, leb_ok); r < 0) return r;
  uint32_t ppb = ctx_->geo.pages_per_block;
  for (uint32_t p = 0; p < parts_.size(); ++p) {
    const Partition& part = parts_[p];
    for (const LogBlock& lb : part.logs)
      if (int r = owners.claim(lb.peb, fmt::format("partition {}: log block", p), error); r < 0) return r;
    for (const auto& [k, loc] : part.map)
      if (loc / ppb >= part.logs.size() || loc % ppb >= part.logs[loc / ppb].used)
        return PebOwnershipCheck::broken(error, fmt::format("partition {}: map entry points past the log", p));
  }
  return owners.finish(error);
}

}  // namespace hybridstore::ftl
