// The KV file system's lender over the fastest tier's space (docs/kvfs.md
// 2.5). Here because it is the one layer that sees both: kvfs/ knows no
// tier, and space/ knows no kvfs. The store hands one to its KvFs at mount
// (kvfs.md 5.2, step 13).
#pragma once
#include <vector>

#include "hscommon/perf_counters.h"
#include "hybridstore/kvfs/kvfs.h"
#include "hybridstore/space/tier_space.h"

namespace hybridstore {

class TierLender final : public KvFsLender {
 public:
  // What the lender counts: ids in `set` (-1: not counted).
  struct Counters {
    PerfCounterSet* set = nullptr;
    int grows = -1, grow_bytes = -1, refused = -1;
  };
  // `space` (and the counters' set) outlive the lender.
  TierLender(TierSpace* space, Counters counters) : space_(space), counters_(counters) {}
  explicit TierLender(TierSpace* space) : TierLender(space, Counters()) {}

  uint64_t unit() const override { return space_->lend_unit(); }
  int lend(uint64_t want, std::vector<Interval>* out) override {
    const size_t before = out->size();
    const int r = space_->lend(want, out);
    if (counters_.set) {
      if (r < 0) {
        counters_.set->inc(counters_.refused, 1);
      } else {
        uint64_t bytes = 0;
        for (size_t i = before; i < out->size(); ++i) bytes += (*out)[i].length;
        counters_.set->inc(counters_.grows, 1);
        counters_.set->inc(counters_.grow_bytes, bytes);
      }
    }
    return r;
  }
  void take_back(const std::vector<Interval>& ranges) override { space_->take_back(ranges); }
  uint64_t lendable() const override { return space_->lendable(); }

 private:
  TierSpace* const space_;
  const Counters counters_;
};

}  // namespace hybridstore
