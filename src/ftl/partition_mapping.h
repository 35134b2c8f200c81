// pUBI: partitioned hybrid mapping with FAST-like shared log blocks.
//
// LEBs are grouped into partitions of D consecutive LEBs. Each LEB has a data
// block (a PEB, pages in logical order). Updates to any LEB of a partition are
// appended to the partition's log blocks (at most L), fully associative: a
// page map in RAM finds the newest copy; the page tag in the OOB names the LEB
// and page, so attach rebuilds the map by scanning.
//
// When the L log blocks are full the partition is merged: every LEB with pages
// in the log gets a new data block with the newest copy of each page (or, when
// a log block holds exactly that LEB's pages in order, the log block simply
// becomes its data block: a switch merge); the old data blocks and the log
// blocks are erased. A merge can touch D + L blocks, which is where pUBI's long
// worst-case write latency comes from (the paper's eq. 5).
//
// Validity across a crash is decided by sequence numbers: a log page is newer
// than a LEB's data block iff its sequence number is above the data block's
// first one (a merge or switch takes new numbers). So a merge cut by a power
// loss leaves a consistent mapping whichever LEBs it had reached.
//
// Unlike the paper's pUBI there is no m-block: the mapping lives in the page
// tags, so the paper's "t_w + t_e/k" per merge for the m-block is not spent.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "ftl/mapping_policy.h"

namespace hybridstore::ftl {

class PartitionMapping : public MappingPolicy {
 public:
  explicit PartitionMapping(FtlContext* ctx);

  PolicyKind kind() const override { return PolicyKind::kPubi; }
  uint32_t pages_per_leb() const override { return ppl_; }
  void init_empty() override;
  int attach(const ScanResult& scan) override;
  int recover() override;
  int read_page(uint32_t leb, uint32_t lpn, char* buf) override;
  int write_pages(uint32_t leb, const std::vector<PageWrite>& pages) override;
  int trim(uint32_t leb, uint32_t first, uint32_t count) override;
  int relocate(uint32_t peb) override;
  int check(std::string* error) const override;

 private:
  static constexpr uint32_t kNone = 0xffffffffu;

  struct Leb {
    int32_t peb = -1;       // data block
    uint16_t data_used = 0; // programmed prefix of the data block
    bool sealed = false;    // torn/failed page: relocate before programming
    bool failing = false;
    std::vector<bool> trimmed;
  };
  struct LogBlock {
    uint32_t peb = 0;
    uint32_t used = 0;          // slots consumed
    bool sealed = false;        // no more programs (torn or failed page)
    bool failing = false;       // a program failed: mark bad instead of erasing
    uint32_t single_leb = kNone; // all pages so far are this LEB's, slot == lpn
  };
  struct Partition {
    std::vector<LogBlock> logs;  // oldest first; the last one is active
    // (leb - first_leb) * ppl + lpn  ->  log block index * ppb + slot
    std::unordered_map<uint32_t, uint32_t> map;
  };

  uint32_t part_of(uint32_t leb) const { return leb / image().partition_data; }
  const ImageParams& image() const { return ctx_->image; }
  uint32_t key(uint32_t leb, uint32_t lpn) const {
    return (leb % image().partition_data) * ppl_ + lpn;
  }
  int read_data_slot(uint32_t leb, uint32_t lpn, char* buf, bool* hole, bool* damaged);
  int read_newest(uint32_t leb, uint32_t lpn, char* buf, bool* hole, bool* damaged);
  bool is_trimmed(const Leb& st, uint32_t lpn) const {
    return !st.trimmed.empty() && st.trimmed[lpn];
  }
  int append_log(uint32_t leb, uint32_t lpn, const char* data);
  int new_log_block(Partition* part);
  // One LEB into a new data block (partition merge, relocation, whole-LEB write).
  int merge_leb(uint32_t leb, MergeKind kind, const std::vector<PageWrite>* full);
  int merge_partition(uint32_t p);
  void drop_log_entries(uint32_t leb);

  uint32_t ppl_;   // pages per LEB (= per block, minus the EC header page)
  PebLayout data_layout_;
  PebLayout log_layout_;
  std::vector<Leb> lebs_;
  std::vector<Partition> parts_;
  std::vector<char> buf_;
};

}  // namespace hybridstore::ftl
