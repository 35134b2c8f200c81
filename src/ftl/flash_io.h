// Raw reads and writes of PEBs with header checks (the role of UBI's io.c).
//
// Everything above this layer speaks in EC headers, page tags and page data;
// FlashIo encodes them, programs them, and on the way back checks every tag
// and every page's data checksum, so a torn or rotten page is an error
// (-EBADMSG) rather than wrong data. It also knows the PEB layout shared by the
// mapping policies:
//   page 0                      EC header
//   pages 1 .. d                data area, slot s at page 1 + s (logical order)
//   pages 1+d .. d+l            log area, slot s at page 1 + d + s
//   remaining pages             unused (the paper reserves 2 metadata pages; we need 1)
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ftl/nand_model.h"
#include "ftl/peb_headers.h"

namespace hybridstore::ftl {

// Where the slots of one PEB live (see the file comment).
struct PebLayout {
  uint32_t data_slots = 0;
  uint32_t log_slots = 0;
  uint32_t data_page(uint32_t slot) const { return 1 + slot; }
  uint32_t log_page(uint32_t slot) const { return 1 + data_slots + slot; }
};
// The layout of PEBs that hold a LEB (hubi: d + l; ubi and pubi data blocks:
// every page after the EC header is a data slot).
PebLayout leb_layout(const ImageParams& image, const NandGeometry& g);
// pUBI log blocks: every page after the EC header is a log slot.
PebLayout log_block_layout(const NandGeometry& g);

struct IoCounters {
  uint64_t header_writes = 0;  // EC headers
  uint64_t page_writes = 0;    // pages with a tag (host data, copies, holes)
  uint64_t page_reads = 0;
  uint64_t tag_reads = 0;
};

class FlashIo {
 public:
  explicit FlashIo(NandModel* nand);

  NandModel* nand() { return nand_; }
  const NandGeometry& geometry() const { return nand_->geometry(); }
  uint32_t page_size() const { return nand_->geometry().page_size; }
  bool power_lost() const { return nand_->power_lost(); }

  // -EIO without power. *status says whether a valid header was found.
  int read_ec_header(uint32_t peb, HeaderStatus* status, EcHeader* out);
  int write_ec_header(uint32_t peb, const EcHeader& h);

  // OOB-only read of one page's tag.
  int read_tag(uint32_t peb, uint32_t page, HeaderStatus* status, PageTag* out);
  // Reads data and tag, checks both. 0 (or -EUCLEAN: good, but the PEB should
  // be scrubbed), -ENODATA (page erased), -EBADMSG (tag or data damaged; *tag
  // is filled when the tag itself was readable), -EIO (no power).
  int read_page(uint32_t peb, uint32_t page, char* data, PageTag* tag);
  // Sets tag.data_crc and programs data + tag. `data` null = a page of 0xFF.
  int write_page(uint32_t peb, uint32_t page, const char* data, PageTag tag);
  // True when data and OOB are all 0xFF (full read: a page torn so early that
  // its OOB still looks erased is found here). -EIO without power.
  int page_is_empty(uint32_t peb, uint32_t page, bool* empty);

  int erase(uint32_t peb) { return nand_->erase_block(peb); }
  bool is_bad(uint32_t peb) const { return nand_->is_bad(peb); }
  int mark_bad(uint32_t peb) { return nand_->mark_bad(peb); }

  const IoCounters& counters() const { return counters_; }

 private:
  NandModel* nand_;
  std::vector<char> page_buf_;
  std::vector<char> oob_buf_;
  std::vector<char> ff_page_;
  IoCounters counters_;
};

}  // namespace hybridstore::ftl
