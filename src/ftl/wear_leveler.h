// PEB accounting, the erase queue, wear levelling and bad-block handling (the
// role of UBI's wl.c).
//
// Every good PEB is in exactly one state:
//   kFree   erased, with a valid EC header: can be handed out at once
//   kUsed   owned by the mapping policy (owner = a LEB, or a pUBI log block)
//   kErase  queued for erase (no longer referenced by any mapping)
// plus kBad for blocks never to be used again (factory or grown bad).
//
// Allocation hands out the free PEB with the lowest erase counter (dynamic wear
// levelling); a wear-levelling move asks for the one with the highest. When the
// gap between the most-worn free PEB and the least-worn used PEB passes the
// threshold, pick_wear_level_source() names the used PEB whose data should move
// (static wear levelling: cold data parked on young blocks is moved onto old
// ones, and the young block goes back into circulation).
//
// Erasing happens in erase_one(): erase, then write the EC header with the
// counter + 1. A failed erase or a PEB retired as failing is marked bad.
#pragma once
#include <cstdint>
#include <deque>
#include <set>
#include <string>
#include <vector>

#include "ftl/flash_io.h"

namespace hybridstore::ftl {

enum class PebState : uint8_t { kFree, kUsed, kErase, kBad };

constexpr uint32_t kNoOwner = 0xffffffffu;

class WearLeveler {
 public:
  WearLeveler(FlashIo* io, uint32_t wl_threshold);

  void set_image(const ImageParams& image) { image_ = image; }
  const ImageParams& image() const { return image_; }

  // --- building the state (format or attach) ---
  // ec_known=false: the EC header was lost; the PEB gets the mean EC of the
  // others in finish_attach(), as UBI does.
  void add_peb(uint32_t peb, PebState state, uint64_t ec, bool ec_known,
               uint32_t owner = kNoOwner);
  void finish_attach();

  // --- allocation ---
  // 0 and *peb, or -ENOSPC when no PEB is free (callers may erase_one() first).
  int get_free(bool for_wear_levelling, uint32_t* peb);
  // PEB handed out by get_free() now holds `owner`'s data.
  void set_owner(uint32_t peb, uint32_t owner);
  // No longer referenced: queue for erase. `failing`: the block misbehaved
  // (program failure): it is marked bad instead of erased.
  void release(uint32_t peb, bool failing = false);

  // --- erase work ---
  size_t erase_pending() const { return erase_queue_.size(); }
  // The PEB erase_one() would erase next (erase_pending() must be > 0).
  uint32_t erase_front() const { return erase_queue_.front(); }
  // Erases the oldest queued PEB and writes its EC header. 1 when one was
  // processed (even if it turned out bad), 0 when the queue is empty, -EIO when
  // power was lost.
  int erase_one();
  int drain();
  // Adds a PEB that attach found without a usable EC header or with stale data.
  void queue_erase(uint32_t peb) { release(peb); }

  // --- wear levelling ---
  // A used PEB whose data should move, or false. `skip` lists PEBs the policy
  // cannot move now.
  bool pick_wear_level_source(const std::set<uint32_t>& skip, uint32_t* peb) const;
  uint32_t threshold() const { return threshold_; }

  // --- bad blocks ---
  int mark_bad(uint32_t peb);

  // --- inspection ---
  PebState state(uint32_t peb) const { return pebs_[peb].state; }
  uint32_t owner(uint32_t peb) const { return pebs_[peb].owner; }
  uint64_t ec(uint32_t peb) const { return pebs_[peb].ec; }
  uint32_t peb_count() const { return static_cast<uint32_t>(pebs_.size()); }
  size_t free_count() const { return free_by_ec_.size(); }
  size_t bad_count() const { return bad_count_; }
  size_t used_count() const { return used_by_ec_.size(); }
  uint64_t grown_bad() const { return grown_bad_; }
  uint64_t erase_count_total() const { return erases_; }
  struct EcSpread {
    uint64_t min = 0, max = 0;
    double mean = 0;
  };
  EcSpread ec_spread() const;  // over good PEBs
  // Internal consistency (tests): each good PEB in exactly one set.
  int check(std::string* error) const;

 private:
  struct Peb {
    PebState state = PebState::kBad;
    uint64_t ec = 0;
    bool ec_known = true;
    bool failing = false;
    uint32_t owner = kNoOwner;
  };
  void leave_state(uint32_t peb);

  FlashIo* io_;
  ImageParams image_;
  uint32_t threshold_;
  std::vector<Peb> pebs_;
  std::set<std::pair<uint64_t, uint32_t>> free_by_ec_;
  std::set<std::pair<uint64_t, uint32_t>> used_by_ec_;
  std::deque<uint32_t> erase_queue_;
  size_t bad_count_ = 0;
  uint64_t grown_bad_ = 0;
  uint64_t erases_ = 0;
};

}  // namespace hybridstore::ftl
