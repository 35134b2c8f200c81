#include "hybridstore/format/tier.h"

#include <fmt/format.h>

namespace hybridstore {

const char* tier_name(Tier t) {
  static const char* const kNames[kMaxTiers] = {"ssd", "hdd", "tier2", "tier3"};
  const int i = tier_index(t);
  return i >= 0 && i < kMaxTiers ? kNames[i] : "unknown-tier";
}

std::string tier_option(Tier t, std::string_view what) {
  return fmt::format("hybridstore_{}_{}", tier_name(t), what);
}

TierOrder::TierOrder(std::initializer_list<Tier> fastest_first) {
  for (Tier t : fastest_first) add(t);
}

TierOrder TierOrder::made_by_mkfs(int tiers) {
  TierOrder o;
  o.add(Tier::kSsd);
  for (int i = 2; i < tiers; ++i) o.add(tier_at(i));
  o.add(Tier::kHdd);
  return o;
}

int TierOrder::rank(Tier t) const {
  for (int r = 0; r < count_; ++r)
    if (at_[r] == t) return r;
  return count_;
}

Tier TierOrder::next(Tier t, int step) const {
  const int r = rank(t) + step;
  return r >= 0 && r < count_ ? at_[r] : t;
}

int TierOrder::spill_order(Tier preferred, Tier* out) const {
  int n = 0;
  const int p = rank(preferred);
  for (int r = p; r < count_; ++r) out[n++] = at_[r];
  for (int r = p - 1; r >= 0; --r) out[n++] = at_[r];
  return n;
}

int TierOrder::heaviest(const PerTier<uint64_t>& bytes, int from) const {
  int best = -1;
  uint64_t most = 0;
  for (int r = from; r < count_; ++r)
    if (uint64_t b = bytes[at_[r]]; b > most) {
      most = b;
      best = r;
    }
  return best;
}

bool TierOrder::operator==(const TierOrder& o) const {
  if (count_ != o.count_) return false;
  for (int r = 0; r < count_; ++r)
    if (at_[r] != o.at_[r]) return false;
  return true;
}

}  // namespace hybridstore
