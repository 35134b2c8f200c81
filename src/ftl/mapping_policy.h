// The interface the three mapping policies share, and the context they run in.
//
//   ubi   block mapping: a LEB lives in one PEB, pages in logical order; a page
//         update copies the whole block (the paper's UBI baseline);
//   pubi  partitions of D LEBs whose updates go to L shared log blocks,
//         page-mapped, merged FAST-style when the log is full;
//   hubi  each PEB holds a data area (logical order) and a log area (updates,
//         mapping in the OOB); per-LEB page-mapping table + bitmap; a merge
//         involves one block only.
//
// A policy owns the mapping of logical pages (LEB, page) to flash pages. It is
// rebuilt from a scan at attach; writes are durable when a call returns 0 (the
// write-back cache sits above, in LebCache). Errors are negative errno: -EIO
// when the chip failed or lost power (after a power loss the FTL must be
// reopened), -ENOSPC when no PEB can be found, -EINVAL for bad addresses.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ftl/attach_scan.h"
#include "ftl/wear_leveler.h"

namespace hybridstore::ftl {

// Why a merge ran; MTTM is measured over kUpdate merges.
enum class MergeKind : uint8_t {
  kUpdate,    // the log area (hubi, pubi) or the block (ubi) had no room for an update
  kDirect,    // hubi sequential shortcut: a flush of >= l pages written into a new block
  kRelocate,  // wear levelling or scrubbing moved the data
};

struct PolicyStats {
  uint64_t host_pages_written = 0;
  uint64_t host_pages_read = 0;
  uint64_t pages_copied = 0;   // copies made by merges and relocations
  uint64_t holes_written = 0;  // data-area slots without data, written by merges
  uint64_t merges[3] = {0, 0, 0};        // by MergeKind
  int64_t merge_ns[3] = {0, 0, 0};       // device time, victim erases included
  int64_t max_merge_ns[3] = {0, 0, 0};   // longest single merge (copy part)
  uint64_t switch_merges = 0;  // pubi: log blocks turned into data blocks
  uint64_t foreground_merge_waits = 0;   // hubi background mode: a write finished a merge
  uint64_t damaged_pages = 0;  // copies of pages that could not be read intact
};

// Shared by the policy and the FTL that owns it.
struct FtlContext {
  FlashIo* io = nullptr;
  WearLeveler* wl = nullptr;
  VirtualClock* clock = nullptr;
  ImageParams image;
  NandGeometry geo;
  bool background = false;  // erases (and hubi merges) run as background steps
  uint64_t next_seq = 1;    // next page sequence number
  PolicyStats stats;
  std::set<uint32_t> scrub;  // PEBs whose reads needed ECC correction
  // Merge victims waiting for erase, so the erase time is charged to the merge.
  std::map<uint32_t, MergeKind> victims;

  uint64_t take_seq() { return next_seq++; }
  int64_t now() const { return clock->now_ns(); }
  // A PEB from the free pool; when the pool is empty, erases a queued PEB first
  // (in the foreground: this is what a background mode avoids).
  int alloc_peb(bool for_wear_levelling, uint32_t* peb);
  // Hands a PEB back. Without background mode it is erased at once.
  int retire(uint32_t peb, bool failing = false);
  int retire_victim(uint32_t peb, MergeKind kind, bool failing = false);
  // One erase from the queue (charged to the merge that queued it, if any).
  int erase_step();
  void note_read_status(uint32_t peb, int r) {
    if (r == -EUCLEAN) scrub.insert(peb);
  }
};

// The PEB-ownership part of MappingPolicy::check(), shared by every policy so
// that each one checks the same things: every PEB a policy claims is in
// range, claimed once and in use, and no used PEB is left unclaimed.
class PebOwnershipCheck {
 public:
  explicit PebOwnershipCheck(const FtlContext& ctx);
  // A LEB's PEB: also owned by that LEB in the wear leveller.
  int claim_for_leb(uint32_t leb, uint32_t peb, std::string* error);
  // Every mapped LEB of a policy's table (an entry with a PEB, peb >= 0)
  // through claim_for_leb, each followed by `also(leb, entry)`, the policy's
  // own checks of it (0 or -EINVAL); stops at the first error.
  template <typename Leb, typename Also>
  int claim_lebs(const std::vector<Leb>& lebs, std::string* error, Also&& also) {
    for (uint32_t leb = 0; leb < lebs.size(); ++leb) {
      const Leb& st = lebs[leb];
      if (st.peb < 0) continue;
      if (int r = claim_for_leb(leb, static_cast<uint32_t>(st.peb), error); r < 0) return r;
      if (int r = also(leb, st); r < 0) return r;
    }
    return 0;
  }
  // A PEB a policy holds for itself (a log block, a merge target).
  int claim(uint32_t peb, std::string_view what, std::string* error);
  // Leaks, then the wear leveller's own invariants.
  int finish(std::string* error) const;
  // A broken invariant: *error = why, and -EINVAL.
  static int broken(std::string* error, std::string why) {
    *error = std::move(why);
    return -EINVAL;
  }

 private:
  int claim_once(uint32_t peb, std::string_view what, std::string* error);
  const FtlContext& ctx_;
  std::vector<bool> seen_;
};

struct PageWrite {
  uint32_t lpn;
  const char* data;  // one page
};

class MappingPolicy {
 public:
  virtual ~MappingPolicy() = default;

  virtual PolicyKind kind() const = 0;
  uint32_t leb_count() const { return ctx_->image.leb_count; }
  virtual uint32_t pages_per_leb() const = 0;

  // Nothing mapped (right after format).
  virtual void init_empty() = 0;
  // Rebuilds the mapping from a scan; queues stale PEBs for erase and gives
  // every PEB its state in the WearLeveler. Recovery work that needs writes
  // (relocating torn PEBs) is done by recover() afterwards.
  virtual int attach(const ScanResult& scan) = 0;
  virtual int recover() = 0;

  // Unwritten or trimmed pages read as zeros.
  virtual int read_page(uint32_t leb, uint32_t lpn, char* buf) = 0;
  // Pages of one LEB, sorted by lpn, no duplicates.
  virtual int write_pages(uint32_t leb, const std::vector<PageWrite>& pages) = 0;
  int write_page(uint32_t leb, uint32_t lpn, const char* buf) {
    return write_pages(leb, {PageWrite{lpn, buf}});
  }
  // Advisory. A whole LEB is unmapped (its PEB erased); single pages read as
  // zeros from now on, and the space is reclaimed at the next merge. After an
  // unclean shutdown trimmed data may come back.
  virtual int trim(uint32_t leb, uint32_t first, uint32_t count) = 0;

  // Moves the data out of `peb` (wear levelling, scrubbing). -EBUSY when the
  // PEB cannot be moved now.
  virtual int relocate(uint32_t peb) = 0;

  // Deferred work (hubi background mode). step() does at most one page copy or
  // one erase and returns 1, or 0 when nothing is pending.
  virtual bool background_pending() const { return ctx_->wl->erase_pending() > 0; }
  virtual int background_step() { return ctx_->erase_step(); }
  // Finishes every pending merge and erase (clean shutdown).
  virtual int finish_background();
  // Makes every acknowledged write durable on flash (background mode may hold
  // a merge's new pages in RAM until its job completes).
  virtual int make_durable() { return 0; }
  // In background mode, how many steps the FTL may run after each host page so
  // that deferred work keeps up when the chip is never idle, and whether the
  // work is behind (else steps wait for idle time).
  virtual uint32_t background_steps_per_page() const { return 1; }
  virtual bool background_behind() const { return ctx_->wl->erase_pending() > 2; }

  // Invariants, for tests and fsck-like checks: 0 or -EINVAL with *error.
  virtual int check(std::string* error) const = 0;

 protected:
  explicit MappingPolicy(FtlContext* ctx) : ctx_(ctx) {}
  FtlContext* ctx_;
};

// ubi and hubi share one implementation (ubi = no log area); see hybrid_mapping.h.
std::unique_ptr<MappingPolicy> make_policy(FtlContext* ctx, uint32_t merge_watermark,
                                           uint32_t background_steps_per_write);

}  // namespace hybridstore::ftl
