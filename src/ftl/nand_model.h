// A simulated raw NAND chip (the role of Linux's nandsim under MTD).
//
// Rules it enforces, each a -EINVAL error rather than silent corruption:
//   - a page is programmed at most once per erase, and pages of a block are
//     programmed in increasing order (skipping pages is allowed; going back is
//     not: "program twice" and "out-of-order program" are the same violation);
//   - erase works on whole blocks: an MTD-style erase(addr, len) whose range is
//     not block-aligned is rejected;
//   - addresses outside the chip are rejected.
// Faults it models:
//   - factory bad blocks (bad-block marker in byte 0 of the first page's OOB)
//     and grown bad blocks: an injected program or erase failure (-EIO) after
//     which the block keeps failing, and wear-out (erase fails once a block has
//     seen `endurance` cycles);
//   - bit flips on reads: corrected ones (data intact, -EUCLEAN, as MTD reports
//     them) and uncorrectable ones (data damaged, -EBADMSG);
//   - a power cut at the N-th program or erase: that operation is torn (a page
//     partly programmed, or a block partly erased) and the chip is dead (-EIO for
//     everything) until a new NandModel is opened on the same media.
// Every operation advances the VirtualClock by its cost (nand_timing.h).
//
// Not thread-safe: one owner at a time.
#pragma once
#include <cstdint>
#include <memory>
#include <random>
#include <set>

#include "ftl/nand_media.h"
#include "ftl/nand_timing.h"

namespace hybridstore::ftl {

struct NandModelOptions {
  NandTiming timing;
  uint32_t endurance = 0;            // erase cycles a block survives; 0 = unlimited
  double bitflip_rate = 0;           // per page read: corrected bit flips
  double uncorrectable_rate = 0;     // per page read: damage the ECC cannot fix
  uint64_t seed = 1;                 // faults are reproducible
};

struct NandCounters {
  uint64_t page_reads = 0;
  uint64_t oob_reads = 0;
  uint64_t programs = 0;
  uint64_t erases = 0;
  uint64_t corrected = 0;
  uint64_t uncorrectable = 0;
};

class NandModel {
 public:
  // `clock` may be null: the model then keeps its own.
  NandModel(std::shared_ptr<NandMedia> media, const NandModelOptions& opts,
            VirtualClock* clock = nullptr);

  const NandGeometry& geometry() const { return media_->geometry(); }
  NandMedia* media() { return media_.get(); }
  VirtualClock* clock() { return clock_; }
  const NandTiming& timing() const { return opts_.timing; }

  // Data and/or OOB (either may be null; OOB-only reads cost less).
  // 0, -EUCLEAN (bit flips corrected; data is good), -EBADMSG (data damaged),
  // -EINVAL (bad address), -EIO (no power).
  int read_page(uint32_t block, uint32_t page, char* data, char* oob);
  // `data` is page_size bytes, `oob` oob_size bytes (null means all 0xFF).
  // 0, -EINVAL (rule violation), -EIO (program failure or power cut).
  int program_page(uint32_t block, uint32_t page, const char* data, const char* oob);
  // 0, -EINVAL, -EIO (erase failure: the block has gone bad, or power cut).
  int erase_block(uint32_t block);
  // MTD-style erase of a byte range of the data address space; must cover
  // whole blocks.
  int erase(uint64_t addr, uint64_t len);

  // The bad-block marker, read from the chip's bad-block table (free).
  bool is_bad(uint32_t block) const;
  // Writes the marker so the block is never used again (ignores the page rules,
  // as real bad-block marking does). 0 or -EIO without power.
  int mark_bad(uint32_t block);
  // Erase cycles the block has seen (the chip's truth, not the FTL's counter).
  uint32_t wear(uint32_t block) const;

  // --- fault injection ---
  // The n-th program or erase from now (1 = the next one) is torn and power is
  // lost. 0 disarms.
  void arm_power_cut(uint64_t nth_mutation);
  bool power_lost() const { return power_lost_; }
  // Programs and erases performed since this model was opened.
  uint64_t mutations() const { return mutations_; }
  // The next program (or erase) of `block` fails and so does every later one.
  void inject_program_failure(uint32_t block) { failing_program_.insert(block); }
  void inject_erase_failure(uint32_t block) { failing_erase_.insert(block); }
  // Marks blocks bad as the factory would (for fresh media).
  void set_factory_bad(uint32_t block);

  const NandCounters& counters() const { return counters_; }
  int sync();

 private:
  bool addr_ok(uint32_t block, uint32_t page) const;
  bool cut_now();
  void tear_program(uint32_t block, uint32_t page, const char* data, const char* oob);
  void tear_erase(uint32_t block);

  std::shared_ptr<NandMedia> media_;
  NandModelOptions opts_;
  VirtualClock own_clock_;
  VirtualClock* clock_;
  std::mt19937_64 rng_;
  NandCounters counters_;
  uint64_t mutations_ = 0;
  uint64_t cut_at_ = 0;  // 0 = disarmed; else the mutation number that is torn
  bool power_lost_ = false;
  std::set<uint32_t> failing_program_;
  std::set<uint32_t> failing_erase_;
};

}  // namespace hybridstore::ftl
