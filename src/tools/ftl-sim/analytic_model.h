// The hUBI paper's analytic write model (eqs. 1-9) and our refinement of it
// for what this implementation actually does, so the simulation can be
// checked against both.
//
// Our refinement differs from the paper's equations in three places, each a
// cost the implementation really pays:
//   - every erase is followed by the EC header program (t_x + t_w), as in UBI;
//   - a UBI/pUBI block holds k - 1 data pages (page 0 is the EC header);
//   - pUBI keeps its mapping in page tags: no m-block page per merge.
#pragma once
#include <cstdint>

#include "ftl/nand_timing.h"

namespace hybridstore::ftl::sim {

struct ModelParams {
  double t_r, t_w, t_e, t_x;  // microseconds
  uint32_t k = 128, d = 100, l = 26, D = 16, L = 4;
  static ModelParams from(const NandTiming& t, uint32_t k, uint32_t d, uint32_t l, uint32_t D,
                          uint32_t L);
};

struct ModelFigures {
  double hubi_mttm, hubi_rw_mttpw, hubi_sw_mttpw;
  double ubi_mttm, ubi_rw_mttpw, ubi_sw_mttpw;
  double pubi_mttm_max, pubi_mttm_min, pubi_rw_mttpw, pubi_sw_mttpw;
};

// The paper's equations as printed (microseconds).
ModelFigures paper_model(const ModelParams& p);
// What this implementation should measure. `mtdblock_fetch`: the cache reads
// the whole LEB on a write miss (eqs. 7 and 9 charge that read; eq. 8 does not).
ModelFigures our_model(const ModelParams& p, bool mtdblock_fetch);

}  // namespace hybridstore::ftl::sim
