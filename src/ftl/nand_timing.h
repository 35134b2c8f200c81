// The NAND timing model and the virtual clock it advances.
//
// One chip, one operation at a time: every operation the NandModel performs
// advances the VirtualClock by its cost, so "now" is the time at which the chip
// becomes free. Costs follow the hUBI paper's Table I:
//   page read     = t_r + t_x   (array to register, then the page to the host)
//   OOB-only read = t_r + t_x * oob / page
//   page program  = t_x + t_w   (the page to the chip, then program)
//   block erase   = t_e
// Preset `paper`: t_e 1500 us, t_r 50 us, t_w 800 us, t_x 50 us. Preset `none`:
// everything free (the engine runs on the FTL without being slowed down).
#pragma once
#include <cstdint>
#include <string>

#include "hscommon/virtual_clock.h"

namespace hybridstore::ftl {

struct NandTiming {
  // Nanoseconds, so that fractional per-byte transfer costs do not drift.
  int64_t t_read_ns = 0;
  int64_t t_prog_ns = 0;
  int64_t t_erase_ns = 0;
  int64_t t_xfer_ns = 0;  // one full page over the bus

  static NandTiming none() { return {}; }
  static NandTiming paper() { return {50'000, 800'000, 1'500'000, 50'000}; }
  // "none" or "paper"; false for anything else.
  static bool from_preset(const std::string& name, NandTiming* out);
  bool is_zero() const { return !t_read_ns && !t_prog_ns && !t_erase_ns && !t_xfer_ns; }
};

// One clock type for the FTL and the test-only device models.
using hybridstore::VirtualClock;

}  // namespace hybridstore::ftl
