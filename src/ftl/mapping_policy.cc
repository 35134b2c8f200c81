#include "ftl/mapping_policy.h"

#include <fmt/format.h>

#include <cerrno>

#include "ftl/hybrid_mapping.h"
#include "ftl/partition_mapping.h"

namespace hybridstore::ftl {

int FtlContext::alloc_peb(bool for_wear_levelling, uint32_t* peb) {
  for (;;) {
    int r = wl->get_free(for_wear_levelling, peb);
    if (r != -ENOSPC) return r;
    r = erase_step();
    if (r < 0) return r;
    if (r == 0) return -ENOSPC;
  }
}

int FtlContext::retire(uint32_t peb, bool failing) {
  wl->release(peb, failing);
  if (background) return 0;
  for (;;) {
    int r = erase_step();
    if (r <= 0) return r;
  }
}

int FtlContext::retire_victim(uint32_t peb, MergeKind kind, bool failing) {
  victims[peb] = kind;
  return retire(peb, failing);
}

int FtlContext::erase_step() {
  if (wl->erase_pending() == 0) return 0;
  uint32_t peb = wl->erase_front();
  int64_t t0 = now();
  int r = wl->erase_one();
  auto it = victims.find(peb);
  if (it != victims.end()) {
    stats.merge_ns[static_cast<int>(it->second)] += now() - t0;
    victims.erase(it);
  }
  return r;
}

int MappingPolicy::finish_background() {
  for (;;) {
    int r = background_step();
    if (r <= 0) return r;
  }
}

std::unique_ptr<MappingPolicy> make_policy(FtlContext* ctx, uint32_t merge_watermark,
                                           uint32_t background_steps_per_write) {
  if (ctx->image.policy == PolicyKind::kPubi)
    return std::make_unique<PartitionMapping>(ctx);
  return std::make_unique<HybridMapping>(ctx, merge_watermark, background_steps_per_write);
}

PebOwnershipCheck::PebOwnershipCheck(const FtlContext& ctx) : ctx_(ctx), seen_(ctx.wl->peb_count(), false) {}

int PebOwnershipCheck::claim_once(uint32_t peb, std::string_view what, std::string* error) {
  if (peb >= seen_.size()) {
    *error = fmt::format("{}: PEB {} out of range (the chip has {})", what, peb, seen_.size());
    return -EINVAL;
  }
  if (seen_[peb]) {
    *error = fmt::format("{}: PEB {} reused", what, peb);
    return -EINVAL;
  }
  seen_[peb] = true;
  return 0;
}

int PebOwnershipCheck::claim_for_leb(uint32_t leb, uint32_t peb, std::string* error) {
  const std::string what = fmt::format("LEB {}", leb);
  if (int r = claim_once(peb, what, error); r < 0) return r;
  if (ctx_.wl->state(peb) != PebState::kUsed || ctx_.wl->owner(peb) != leb) {
    *error = fmt::format("{}: PEB {} is not used by it", what, peb);
    return -EINVAL;
  }
  return 0;
}

int PebOwnershipCheck::claim(uint32_t peb, std::string_view what, std::string* error) {
  if (int r = claim_once(peb, what, error); r < 0) return r;
  if (ctx_.wl->state(peb) != PebState::kUsed) {
    *error = fmt::format("{}: PEB {} not in use", what, peb);
    return -EINVAL;
  }
  return 0;
}

int PebOwnershipCheck::finish(std::string* error) const {
  for (uint32_t peb = 0; peb < seen_.size(); ++peb)
    if (ctx_.wl->state(peb) == PebState::kUsed && !seen_[peb]) {
      *error = fmt::format("PEB {} is used but nothing maps it (leak)", peb);
      return -EINVAL;
    }
  return ctx_.wl->check(error);
}

}  // namespace hybridstore::ftl
