#include "ftl/wear_leveler.h"

#include <cerrno>

#include <fmt/format.h>

#include "hscommon/log.h"

namespace hybridstore::ftl {

WearLeveler::WearLeveler(FlashIo* io, uint32_t wl_threshold)
    : io_(io), threshold_(wl_threshold ? wl_threshold : 1),
      pebs_(io->geometry().block_count) {}

void WearLeveler::leave_state(uint32_t peb) {
  Peb& p = pebs_[peb];
  switch (p.state) {
    case PebState::kFree: free_by_ec_.erase({p.ec, peb}); break;
    case PebState::kUsed: used_by_ec_.erase({p.ec, peb}); break;
    case PebState::kErase:
      for (auto it = erase_queue_.begin(); it != erase_queue_.end(); ++it)
        if (*it == peb) {
          erase_queue_.erase(it);
          break;
        }
      break;
    case PebState::kBad: --bad_count_; break;
  }
}

void WearLeveler::add_peb(uint32_t peb, PebState state, uint64_t ec, bool ec_known,
                          uint32_t owner) {
  Peb& p = pebs_[peb];
  p = Peb{};
  p.state = state;
  p.ec = ec;
  p.ec_known = ec_known;
  p.owner = owner;
  switch (state) {
    case PebState::kFree: free_by_ec_.insert({ec, peb}); break;
    case PebState::kUsed: used_by_ec_.insert({ec, peb}); break;
    case PebState::kErase: erase_queue_.push_back(peb); break;
    case PebState::kBad: ++bad_count_; break;
  }
}

void WearLeveler::finish_attach() {
  uint64_t sum = 0, n = 0;
  for (const Peb& p : pebs_)
    if (p.state != PebState::kBad && p.ec_known) {
      sum += p.ec;
      ++n;
    }
  uint64_t mean = n ? sum / n : 0;
  for (uint32_t i = 0; i < pebs_.size(); ++i) {
    Peb& p = pebs_[i];
    if (p.state == PebState::kBad || p.ec_known) continue;
    // Re-key the sets that order by EC.
    if (p.state == PebState::kFree) free_by_ec_.erase({p.ec, i});
    if (p.state == PebState::kUsed) used_by_ec_.erase({p.ec, i});
    p.ec = mean;
    p.ec_known = true;
    if (p.state == PebState::kFree) free_by_ec_.insert({p.ec, i});
    if (p.state == PebState::kUsed) used_by_ec_.insert({p.ec, i});
  }
}

int WearLeveler::get_free(bool for_wear_levelling, uint32_t* peb) {
  if (free_by_ec_.empty()) return -ENOSPC;
  auto it = for_wear_levelling ? std::prev(free_by_ec_.end()) : free_by_ec_.begin();
  uint32_t p = it->second;
  free_by_ec_.erase(it);
  pebs_[p].state = PebState::kUsed;
  pebs_[p].owner = kNoOwner;
  used_by_ec_.insert({pebs_[p].ec, p});
  *peb = p;
  return 0;
}

void WearLeveler::set_owner(uint32_t peb, uint32_t owner) { pebs_[peb].owner = owner; }

void WearLeveler::release(uint32_t peb, bool failing) {
  if (pebs_[peb].state == PebState::kErase || pebs_[peb].state == PebState::kBad) return;
  leave_state(peb);
  Peb& p = pebs_[peb];
  p.owner = kNoOwner;
  p.failing = p.failing || failing;
  p.state = PebState::kErase;
  erase_queue_.push_back(peb);
}

int WearLeveler::mark_bad(uint32_t peb) {
  if (pebs_[peb].state == PebState::kBad) return 0;
  leave_state(peb);
  Peb& p = pebs_[peb];
  p.state = PebState::kBad;
  p.owner = kNoOwner;
  ++bad_count_;
  ++grown_bad_;
  HS_WARN("ftl: PEB {} marked bad (erase counter {})", peb, p.ec);
  int r = io_->mark_bad(peb);
  return r == -EIO && io_->power_lost() ? -EIO : 0;
}

int WearLeveler::erase_one() {
  if (erase_queue_.empty()) return 0;
  uint32_t peb = erase_queue_.front();
  Peb& p = pebs_[peb];
  if (p.failing) {
    erase_queue_.pop_front();
    p.state = PebState::kUsed;  // leave_state() below must not search the queue
    used_by_ec_.insert({p.ec, peb});
    if (int r = mark_bad(peb); r < 0) return r;
    return 1;
  }
  int r = io_->erase(peb);
  if (r < 0) {
    if (io_->power_lost()) return -EIO;
    erase_queue_.pop_front();
    p.state = PebState::kUsed;
    used_by_ec_.insert({p.ec, peb});
    if (int m = mark_bad(peb); m < 0) return m;
    return 1;
  }
  ++erases_;
  ++p.ec;
  EcHeader h;
  h.erase_count = p.ec;
  h.image = image_;
  r = io_->write_ec_header(peb, h);
  erase_queue_.pop_front();
  if (r < 0) {
    if (io_->power_lost()) {
      p.state = PebState::kErase;  // keep it queued in RAM; the FTL is dead anyway
      erase_queue_.push_front(peb);
      return -EIO;
    }
    p.state = PebState::kUsed;
    used_by_ec_.insert({p.ec, peb});
    if (int m = mark_bad(peb); m < 0) return m;
    return 1;
  }
  p.state = PebState::kFree;
  free_by_ec_.insert({p.ec, peb});
  return 1;
}

int WearLeveler::drain() {
  for (;;) {
    int r = erase_one();
    if (r <= 0) return r;
  }
}

bool WearLeveler::pick_wear_level_source(const std::set<uint32_t>& skip, uint32_t* peb) const {
  if (free_by_ec_.empty() || used_by_ec_.empty()) return false;
  uint64_t top = free_by_ec_.rbegin()->first;
  for (const auto& [ec, p] : used_by_ec_) {
    if (top < ec || top - ec <= threshold_) return false;
    if (skip.count(p) || pebs_[p].owner == kNoOwner) continue;
    *peb = p;
    return true;
  }
  return false;
}

WearLeveler::EcSpread WearLeveler::ec_spread() const {
  EcSpread s;
  bool first = true;
  uint64_t sum = 0, n = 0;
  for (const Peb& p : pebs_) {
    if (p.state == PebState::kBad) continue;
    if (first || p.ec < s.min) s.min = p.ec;
    if (first || p.ec > s.max) s.max = p.ec;
    first = false;
    sum += p.ec;
    ++n;
  }
  s.mean = n ? double(sum) / double(n) : 0;
  return s;
}

int WearLeveler::check(std::string* error) const {
  size_t f = 0, u = 0, e = 0, b = 0;
  for (uint32_t i = 0; i < pebs_.size(); ++i) {
    const Peb& p = pebs_[i];
    switch (p.state) {
      case PebState::kFree:
        ++f;
        if (!free_by_ec_.count({p.ec, i})) {
          *error = fmt::format("free PEB {} missing from the free set", i);
          return -EINVAL;
        }
        break;
      case PebState::kUsed:
        ++u;
        if (!used_by_ec_.count({p.ec, i})) {
          *error = fmt::format("used PEB {} missing from the used set", i);
          return -EINVAL;
        }
        break;
      case PebState::kErase: ++e; break;
      case PebState::kBad: ++b; break;
    }
  }
  if (f != free_by_ec_.size() || u != used_by_ec_.size() || e != erase_queue_.size() ||
      b != bad_count_) {
    *error = fmt::format("PEB sets disagree: free {}/{} used {}/{} erase {}/{} bad {}/{}", f,
                         free_by_ec_.size(), u, used_by_ec_.size(), e, erase_queue_.size(), b,
                         bad_count_);
    return -EINVAL;
  }
  return 0;
}

}  // namespace hybridstore::ftl
