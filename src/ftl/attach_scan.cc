#include "ftl/attach_scan.h"

#include <cerrno>
#include <vector>

#include <fmt/format.h>

namespace hybridstore::ftl {

namespace {

struct TagRead {
  HeaderStatus status = HeaderStatus::kErased;
  PageTag tag;
};

class PebScanner {
 public:
  PebScanner(FlashIo* io, const ImageParams& image, ScanResult* res)
      : io_(io), image_(image), res_(res) {}

  int scan(uint32_t peb, PebScan* s);

 private:
  int tag_at(uint32_t peb, uint32_t page, TagRead* t) {
    return io_->read_tag(peb, page, &t->status, &t->tag);
  }
  int find_data_end(uint32_t peb, const PebLayout& lay, const TagRead& first, uint32_t* a,
                    TagRead* last_data);
  int find_power_cut_traces(uint32_t peb, const PebLayout& lay, uint32_t log_used, uint32_t* a,
                            std::vector<ScannedLogPage>* log, bool* torn);
  int check_merge_complete(uint32_t peb, const PebLayout& lay, bool log_block, const TagRead& first,
                           uint32_t a, const std::vector<ScannedLogPage>& log, PebScan* s);

  FlashIo* io_;
  ImageParams image_;
  ScanResult* res_;
  std::vector<char> buf_;
};

int PebScanner::scan(uint32_t peb, PebScan* s) {
  const NandGeometry& g = io_->geometry();
  PebLayout lay = leb_layout(image_, g);
  TagRead first;
  if (int r = tag_at(peb, 1, &first); r < 0) return r;
  bool log_block = image_.policy == PolicyKind::kPubi && first.status == HeaderStatus::kValid &&
                   first.tag.kind == PageKind::kLog;
  if (log_block) lay = log_block_layout(g);

  uint32_t a = 0;
  TagRead last_data;
  if (int r = find_data_end(peb, lay, first, &a, &last_data); r < 0) return r;

  // Log area: read forward to the first erased slot.
  std::vector<ScannedLogPage> log;
  uint32_t log_used = 0;
  for (uint32_t slot = 0; slot < lay.log_slots; ++slot) {
    TagRead t;
    if (log_block && slot == 0) t = first;
    else if (int r = tag_at(peb, lay.log_page(slot), &t); r < 0) return r;
    if (t.status == HeaderStatus::kErased) break;
    log_used = slot + 1;
    if (t.status == HeaderStatus::kCorrupt || t.tag.kind != PageKind::kLog) {
      ++res_->damaged_tags;
      continue;
    }
    log.push_back({slot, t.tag});
  }

  bool torn = false;
  if (int r = find_power_cut_traces(peb, lay, log_used, &a, &log, &torn); r < 0) return r;

  // Identity: the first readable tag (the earliest page written).
  const PageTag* id = nullptr;
  if (a > 0 && first.status == HeaderStatus::kValid && !log_block) id = &first.tag;
  else if (a > 0 && last_data.status == HeaderStatus::kValid) id = &last_data.tag;
  else if (!log.empty()) id = &log.front().tag;
  if (!id) {
    if (first.status == HeaderStatus::kCorrupt || last_data.status == HeaderStatus::kCorrupt)
      ++res_->damaged_tags;
    s->kind = (s->ec_known && !torn && log_used == 0 && a == 0) ? PebScan::Kind::kEmpty
                                                                 : PebScan::Kind::kNeedsErase;
    return 0;
  }
  s->kind = log_block ? PebScan::Kind::kLogBlock : PebScan::Kind::kLeb;
  s->leb = id->leb;
  s->first_seq = id->seq;
  s->data_used = a;
  s->log_used = log_used;
  s->torn = torn;
  // Pages of another LEB in this PEB are damage, not data.
  if (!log_block) {
    std::vector<ScannedLogPage> kept;
    for (auto& p : log) {
      if (p.tag.leb == s->leb) kept.push_back(p);
      else ++res_->damaged_tags;
    }
    log.swap(kept);
  }
  for (auto& p : log) {
    if (p.tag.seq > res_->max_seq) res_->max_seq = p.tag.seq;
    if (p.tag.seq < s->first_seq) s->first_seq = p.tag.seq;
  }
  if (first.status == HeaderStatus::kValid && first.tag.seq > res_->max_seq)
    res_->max_seq = first.tag.seq;
  if (last_data.status == HeaderStatus::kValid && last_data.tag.seq > res_->max_seq)
    res_->max_seq = last_data.tag.seq;

  if (int r = check_merge_complete(peb, lay, log_block, first, a, log, s); r < 0) return r;
  s->log = std::move(log);
  return 0;
}

// Data area: the programmed slots form a prefix; finds its end (*a, the
// slots used) and the tag of its last slot.
int PebScanner::find_data_end(uint32_t peb, const PebLayout& lay, const TagRead& first, uint32_t* a,
                              TagRead* last_data) {
  if (lay.data_slots == 0 || first.status == HeaderStatus::kErased) return 0;
  TagRead t;
  uint32_t d = lay.data_slots;
  if (int r = tag_at(peb, lay.data_page(d - 1), &t); r < 0) return r;
  if (t.status != HeaderStatus::kErased) {
    *a = d;
    *last_data = t;
    return 0;
  }
  uint32_t lo = 0, hi = d - 1;  // slot lo programmed, slot hi erased
  TagRead lo_tag = first;
  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (int r = tag_at(peb, lay.data_page(mid), &t); r < 0) return r;
    if (t.status != HeaderStatus::kErased) {
      lo = mid;
      lo_tag = t;
    } else {
      hi = mid;
    }
  }
  *a = lo + 1;
  *last_data = lo_tag;
  return 0;
}

// Power-cut traces. Only the last programmed page can be torn, and only the
// pages a next program would use can hold residue under an erased OOB. A torn
// last page leaves the data (*a) or the log (*log) it was to extend.
int PebScanner::find_power_cut_traces(uint32_t peb, const PebLayout& lay, uint32_t log_used,
                                      uint32_t* a, std::vector<ScannedLogPage>* log, bool* torn) {
  buf_.resize(io_->geometry().page_size);
  bool have_last = log_used > 0 || *a > 0;
  if (have_last) {
    uint32_t page = log_used > 0 ? lay.log_page(log_used - 1) : lay.data_page(*a - 1);
    PageTag t;
    int r = io_->read_page(peb, page, buf_.data(), &t);
    if (r == -EIO) return r;
    if (r == -EBADMSG) {
      *torn = true;
      if (log_used > 0) {
        if (!log->empty() && log->back().slot == log_used - 1) log->pop_back();
      } else {
        --*a;  // the slot is consumed, but holds nothing that was acknowledged
      }
    }
  }
  std::vector<uint32_t> next_pages;
  if (log_used > 0) {
    if (log_used < lay.log_slots) next_pages.push_back(lay.log_page(log_used));
  } else {
    uint32_t consumed = *a + (*torn ? 1 : 0);
    if (consumed < lay.data_slots) next_pages.push_back(lay.data_page(consumed));
    if (lay.log_slots > 0) next_pages.push_back(lay.log_page(0));
  }
  for (uint32_t page : next_pages) {
    bool empty = true;
    if (int r = io_->page_is_empty(peb, page, &empty); r < 0) return r;
    if (!empty) *torn = true;
  }
  return 0;
}

// A merge target is complete when its final page (kTagLast) is there.
int PebScanner::check_merge_complete(uint32_t peb, const PebLayout& lay, bool log_block,
                                     const TagRead& first, uint32_t a,
                                     const std::vector<ScannedLogPage>& log, PebScan* s) {
  if (!log_block && a > 0 && first.status == HeaderStatus::kValid &&
      (first.tag.flags & kTagMerge)) {
    s->merge = true;
    s->complete = false;
    uint32_t end = first.tag.merge_end;
    if (end < a) {
      TagRead t;
      if (end == 0) t = first;
      else if (int r = tag_at(peb, lay.data_page(end), &t); r < 0) return r;
      if (t.status == HeaderStatus::kValid && (t.tag.flags & kTagLast) &&
          t.tag.seq >= first.tag.seq)
        s->complete = true;
    }
    for (auto& p : log)
      if ((p.tag.flags & (kTagMerge | kTagLast)) == (kTagMerge | kTagLast)) s->complete = true;
  }
  return 0;
}

}  // namespace

int scan_flash(FlashIo* io, ScanResult* out, std::string* error) {
  const NandGeometry& g = io->geometry();
  *out = ScanResult{};
  out->pebs.resize(g.block_count);
  // Pass 1: EC headers; they also say what the flash was formatted as.
  std::vector<HeaderStatus> ec_status(g.block_count, HeaderStatus::kErased);
  for (uint32_t peb = 0; peb < g.block_count; ++peb) {
    PebScan& s = out->pebs[peb];
    if (io->is_bad(peb)) {
      s.kind = PebScan::Kind::kBad;
      ++out->bad;
      continue;
    }
    EcHeader h;
    if (int r = io->read_ec_header(peb, &ec_status[peb], &h); r < 0) return r;
    if (ec_status[peb] != HeaderStatus::kValid) continue;
    s.ec = h.erase_count;
    s.ec_known = true;
    if (!out->formatted) {
      out->formatted = true;
      out->image = h.image;
    } else if (h.image != out->image) {
      *error = fmt::format(
          "PEB {} belongs to another image (image seq {:#x}, policy {}) than the rest "
          "(image seq {:#x}, policy {})",
          peb, h.image.image_seq, policy_name(h.image.policy), out->image.image_seq,
          policy_name(out->image.policy));
      return -EINVAL;
    }
  }
  if (!out->formatted) return 0;
  // Pass 2: page tags.
  PebScanner scanner(io, out->image, out);
  for (uint32_t peb = 0; peb < g.block_count; ++peb) {
    PebScan& s = out->pebs[peb];
    if (s.kind == PebScan::Kind::kBad) continue;
    if (int r = scanner.scan(peb, &s); r < 0) return r;
    switch (s.kind) {
      case PebScan::Kind::kEmpty: ++out->empty; break;
      case PebScan::Kind::kNeedsErase: ++out->needs_erase; break;
      case PebScan::Kind::kLeb: ++out->lebs; break;
      case PebScan::Kind::kLogBlock: ++out->log_blocks; break;
      case PebScan::Kind::kBad: break;
    }
    if (s.torn) ++out->torn;
    if (!s.complete) ++out->incomplete;
  }
  return 0;
}

}  // namespace hybridstore::ftl
