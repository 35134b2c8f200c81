// hUBI hybrid mapping (and UBI block mapping as its degenerate case).
//
// Each LEB is held by one PEB laid out as [EC header][data area: d slots in
// logical order][log area: l slots]. The in-memory entry of a LEB (the paper's
// EMT entry) holds the PEB, the data-area fill, the next free log slot, the
// page-mapping table (PMT: the logical page in each used log slot) and a
// bitmap saying which logical pages have their newest copy in the log.
//
//   read:  bitmap bit clear -> data slot lpn; set -> search the PMT newest-first
//   write: to the data slot in place when it is the next unprogrammed one and
//          no log page exists yet (sequential fill of a fresh LEB), else to the
//          next free log slot, mapping in the page tag (one program);
//          when the log area fills up: merge
//   merge: a new PEB receives the newest copy of every page in logical order
//          (holes where nothing is valid, so the data area stays a prefix), the
//          last one tagged kTagLast; the LEB is remapped and the old PEB erased.
//          One block per merge.
//   write_pages() of >= l pages (a cache flush): the sequential shortcut, a
//          merge whose new data comes from the caller ("direct" merge).
//
// With l = 0 this is UBI's block mapping: an update that is not an append
// copies the whole block (a merge with the new page folded in).
//
// Background mode ("beyond the paper", FtlContext::background): merges are
// jobs of single-page steps. A LEB's merge is queued when its free log slots
// fall to `merge_watermark` (earlier for a LEB that takes a large share of the
// writes: its expected writes during one merge); steps run while the chip is idle and, so the
// work keeps up under saturation, a few after every host page
// (`steps_per_write`) whenever the work is behind (more than one merge queued,
// a LEB about to run out of log, erased PEBs running low). Writes that arrive during a merge still go to the old
// PEB's log; the job copies them over at the end (catch-up pages in the new
// PEB's log) before it sets kTagLast and remaps. Erases also run as steps, so
// a merge takes a pre-erased PEB and no write waits for an erase. A write
// waits for (the rest of) a merge only when its LEB has no free log slot left.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ftl/mapping_policy.h"

namespace hybridstore::ftl {

class HybridMapping : public MappingPolicy {
 public:
  // merge_watermark = 0 picks l / 8; steps_per_write = 0 picks enough steps
  // per written page to keep up with the merges writes cause.
  HybridMapping(FtlContext* ctx, uint32_t merge_watermark, uint32_t steps_per_write);

  PolicyKind kind() const override { return ctx_->image.policy; }
  uint32_t pages_per_leb() const override { return layout_.data_slots; }
  void init_empty() override;
  int attach(const ScanResult& scan) override;
  int recover() override;
  int read_page(uint32_t leb, uint32_t lpn, char* buf) override;
  int write_pages(uint32_t leb, const std::vector<PageWrite>& pages) override;
  int trim(uint32_t leb, uint32_t first, uint32_t count) override;
  int relocate(uint32_t peb) override;
  bool background_pending() const override;
  int background_step() override;
  int make_durable() override;
  uint32_t background_steps_per_page() const override { return steps_per_write_; }
  bool background_behind() const override;
  int check(std::string* error) const override;

  uint32_t merge_watermark() const { return watermark_; }
    size_t pending_merges() const { return jobs_.size(); }

 private:
  static constexpr uint16_t kNoLpn = 0xffff;
  // A page's newest location: a data slot [0, d), a log slot d + s, or:
  static constexpr int32_t kNowhere = -1;  // never written: reads as zeros
  static constexpr int32_t kTrimmed = -2;
  static constexpr int32_t kOverride = -3; // in a merge job's caller-supplied pages

  // The EMT entry of one LEB.
  struct Leb {
    int32_t peb = -1;
    // Invariant: data slots [0, data_used) are programmed, the rest erased.
    uint16_t data_used = 0;
    // Invariant: log slots [0, log_used) are programmed; pmt[s] is the lpn of
    // slot s (kNoLpn if damaged); in_log[lpn] iff some pmt[s] == lpn.
    uint16_t log_used = 0;
    bool sealed = false;   // a torn or failed page: never program this PEB again
    bool failing = false;  // a program failed: mark the PEB bad when retired
    std::vector<uint16_t> pmt;
    std::vector<bool> in_log;
    std::vector<bool> trimmed;  // empty = none
    uint64_t epoch = 0;  // host pages written (device-wide) when this PEB was mapped
    float share = 0;     // its share of the host writes during the previous PEB's life
  };

  struct MergeJob {
    uint32_t leb = 0;
    MergeKind kind = MergeKind::kUpdate;
    bool started = false;
    int32_t target = -1;
    int32_t end = -1;            // last data slot the merge writes (merge_end)
    uint32_t next_slot = 0;
    std::vector<int32_t> copied; // per lpn: the location that was copied
    std::map<uint32_t, std::string> overrides;
    std::vector<uint16_t> catchup;  // lpn of each log slot written in the target
    int64_t copy_ns = 0;
    int retries = 0;
  };

  bool has_log() const { return layout_.log_slots > 0; }
  int32_t locate(const Leb& st, uint32_t lpn) const;
  bool is_trimmed(const Leb& st, uint32_t lpn) const {
    return !st.trimmed.empty() && st.trimmed[lpn];
  }
  // Reads the copy at `loc` of LEB `leb` (zeros for a hole). -EBADMSG when the
  // page is damaged (buf holds what was read).
  int read_loc(uint32_t leb, const Leb& st, int32_t loc, uint32_t lpn, char* buf, bool* hole);
  int write_one(uint32_t leb, uint32_t lpn, const char* data);
  int map_fresh(uint32_t leb);
  void reset_leb(Leb* st);

  // --- merges (hybrid_merge.cc) ---
  MergeJob* find_job(uint32_t leb);
  MergeJob* add_job(uint32_t leb, MergeKind kind);
  void drop_job(MergeJob* job);
  int cancel_job(MergeJob* job);
  // Foreground merge: creates a job (after finishing any other job of the LEB)
  // and runs it to completion.
  int merge_now(uint32_t leb, MergeKind kind, std::map<uint32_t, std::string> overrides);
  int run_job(MergeJob* job);
  int job_step(MergeJob* job, bool* done);
  int start_job(MergeJob* job, bool* done);
  int finish_job(MergeJob* job);
  int next_catchup(const MergeJob& job, const Leb& st, uint32_t* lpn, int* remaining) const;
  int restart_job(MergeJob* job);
  MergeJob* most_urgent_job();
  uint32_t urgency(const MergeJob& j) const;

  // Background mode: whether the LEB's merge should be queued now. A LEB that
  // takes a large share of the writes is queued earlier, so that its merge
  // can finish before its log runs out.
  bool merge_due(const Leb& st) const;
  // The LEB's share of the host writes: the larger of the last PEB's and the
  // current one's once it has seen enough writes to say.
  double write_share(const Leb& st) const;

  PebLayout layout_;
  uint64_t host_writes_ = 0;
  uint32_t watermark_;
  uint32_t steps_per_write_;
  std::vector<Leb> lebs_;
  std::vector<std::unique_ptr<MergeJob>> jobs_;  // at most one per LEB
  std::vector<char> buf_;
};

}  // namespace hybridstore::ftl
