// Attach by scanning (the role of UBI's attach.c): reads the EC header and the
// page tags of every PEB and reports what each one holds. Nothing else is
// needed to recover: no journal, no checkpoint.
//
// Per PEB the scan reads the EC header (page 0), the tag of the first data
// slot, a binary search for the end of the data area (data-area slots are
// programmed as a prefix), the tags of the log area up to the first erased
// slot, and then checks for the traces a power cut leaves:
//   - the last programmed page is read in full: a torn page fails its data or
//     tag checksum and is dropped (its write was never acknowledged);
//   - the page(s) a next program would have gone to are checked to be really
//     empty (a program cut very early leaves data but an erased-looking OOB).
// A PEB with such a trace is reported `torn`: the policy must not program it
// again and relocates its data. A merge target whose final page (kTagLast)
// is missing is reported incomplete: the merge never finished.
//
// Every header is untrusted: damaged tags are skipped, never followed.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ftl/flash_io.h"

namespace hybridstore::ftl {

struct ScannedLogPage {
  uint32_t slot;
  PageTag tag;
};

struct PebScan {
  enum class Kind : uint8_t {
    kBad,         // bad-block marker set
    kEmpty,       // valid EC header, nothing else: free
    kNeedsErase,  // no usable EC header and no data, or residue only
    kLeb,         // holds (a version of) a LEB
    kLogBlock,    // pUBI log block
  };
  Kind kind = Kind::kNeedsErase;
  uint64_t ec = 0;
  bool ec_known = false;
  // kLeb / kLogBlock:
  uint32_t leb = 0;          // owner LEB (for a log block: the LEB of its first page)
  uint64_t first_seq = 0;    // sequence number of the earliest page: the PEB's age
  bool merge = false;        // written by a merge
  bool complete = true;      // false: a merge target whose last page is missing
  uint32_t data_used = 0;    // valid data-area prefix (slots 0 .. data_used-1)
  uint32_t log_used = 0;     // log slots consumed, damaged ones included
  std::vector<ScannedLogPage> log;  // readable log pages, in slot order
  bool torn = false;         // power-cut trace: seal the PEB and relocate it
};

struct ScanResult {
  bool formatted = false;  // at least one valid EC header
  ImageParams image;
  std::vector<PebScan> pebs;
  uint64_t max_seq = 0;
  // What the scan found, for tools.
  uint64_t bad = 0, empty = 0, needs_erase = 0, lebs = 0, log_blocks = 0, torn = 0,
           incomplete = 0, damaged_tags = 0;
};

// 0, -EINVAL (two different images on one flash: *error says which PEBs), or
// -EIO (power lost during the scan).
int scan_flash(FlashIo* io, ScanResult* out, std::string* error);

}  // namespace hybridstore::ftl
