#include "analytic_model.h"

namespace hybridstore::ftl::sim {

ModelParams ModelParams::from(const NandTiming& t, uint32_t k, uint32_t d, uint32_t l,
                              uint32_t D, uint32_t L) {
  ModelParams p;
  p.t_r = double(t.t_read_ns) / 1000;
  p.t_w = double(t.t_prog_ns) / 1000;
  p.t_e = double(t.t_erase_ns) / 1000;
  p.t_x = double(t.t_xfer_ns) / 1000;
  p.k = k;
  p.d = d;
  p.l = l;
  p.D = D;
  p.L = L;
  return p;
}

ModelFigures paper_model(const ModelParams& p) {
  ModelFigures f;
  double copy = p.t_r + p.t_w + 2 * p.t_x;
  f.hubi_mttm = p.d * copy + p.t_e;                              // (1)
  f.hubi_rw_mttpw = f.hubi_mttm / p.l + p.t_w + p.t_x;           // (2)
  f.hubi_sw_mttpw = (p.d * copy + p.t_e) / p.d;                  // (7)
  f.ubi_mttm = p.k * copy + p.t_e;                               // (3)
  f.ubi_rw_mttpw = f.ubi_mttm + p.t_w + p.t_x;                   // (4)
  f.ubi_sw_mttpw = (p.k * copy + p.t_e) / p.k;                   // (9)
  // (5) with alpha = 1, beta = 0 (every LEB merged in full), and alpha = beta.
  double mblock = p.t_w + p.t_e / p.k;
  f.pubi_mttm_max = p.D * (p.k * copy + p.t_e) + p.L * p.t_e + mblock;
  f.pubi_mttm_min = p.L * p.t_e + mblock;
  f.pubi_rw_mttpw = f.pubi_mttm_max / (p.k * p.L) + p.t_w + p.t_x;  // (6)
  f.pubi_sw_mttpw = (p.L * p.t_e + mblock) / (p.k * p.L) + p.t_w + p.t_x;  // (8)
  return f;
}

ModelFigures our_model(const ModelParams& p, bool mtdblock_fetch) {
  ModelFigures f;
  double copy = p.t_r + p.t_w + 2 * p.t_x;
  double write = p.t_w + p.t_x;
  double erase = p.t_e + write;  // erase + EC header
  double fetch = mtdblock_fetch ? p.t_r + p.t_x : 0;
  uint32_t kd = p.k - 1;  // data pages of a UBI/pUBI block
  f.hubi_mttm = p.d * copy + erase;
  f.hubi_rw_mttpw = f.hubi_mttm / p.l + write;
  // A cached LEB: (fetch +) one program per page into a new block, one erase.
  f.hubi_sw_mttpw = fetch + write + erase / p.d;
  // A random update of a full block: the other pages copied, the new one
  // written, the old block erased. The page write is part of the merge.
  f.ubi_mttm = (kd - 1) * copy + write + erase;
  f.ubi_rw_mttpw = f.ubi_mttm;
  f.ubi_sw_mttpw = fetch + write + erase / kd;
  f.pubi_mttm_max = p.D * (kd * copy + erase) + p.L * erase;
  f.pubi_mttm_min = p.L * erase;
  f.pubi_rw_mttpw = f.pubi_mttm_max / (kd * p.L) + write;
  // Sequential: each LEB's pages form a log block that is switched in; the
  // old data block is erased.
  f.pubi_sw_mttpw = fetch + write + erase / kd;
  return f;
}

}  // namespace hybridstore::ftl::sim
