// The KV file system's lender over the fastest tier's space (docs/kvfs.md
// 2.5). Here because it is the one layer that sees both: kvfs/ knows no
// tier, and space/ knows no kvfs. The store hands one to its KvFs at mount
// (kvfs.md 5.2, step 13).
#pragma once
#include <vector>

#include "hybridstore/kvfs/kvfs.h"
#include "hybridstore/space/tier_space.h"

namespace hybridstore {

class TierLender final : public KvFsLender {
 public:
  // `space` outlives the lender.
  explicit TierLender(TierSpace* space) : space_(space) {}

  uint64_t unit() const override { return space_->lend_unit(); }
  int lend(uint64_t want, std::vector<Interval>* out) override { return space_->lend(want, out); }
  void take_back(const std::vector<Interval>& ranges) override { space_->take_back(ranges); }

 private:
  TierSpace* const space_;
};

}  // namespace hybridstore
