// On-flash formats of the FTL, each versioned and checksummed (seal_record):
//
// EC header: the data area of page 0 of every good PEB, written right after
// the PEB is erased (as UBI does), so an erase counter survives a restart even
// for free PEBs. It also carries the image parameters (policy, hUBI layout,
// pUBI partitioning, LEB count, image sequence), so a flash file describes
// itself and attach needs no other metadata.
//
// Page tag: bytes 2.. of the OOB of every other programmed page (bytes 0..1
// are the bad-block marker). It names the LEB and logical page the page holds,
// the kind of page (data area, log area, or a hole that reads as zeros), a
// global sequence number, merge flags and the crc32c of the page data, so a
// page program writes data and mapping at once (hUBI's key idea) and a torn
// page is detected by its checksum.
//
// Decoders treat their input as untrusted: any byte pattern is either a valid
// header or an error, never a crash or a read past the buffer.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace hybridstore::ftl {

enum class PolicyKind : uint8_t { kUbi = 1, kPubi = 2, kHubi = 3 };
const char* policy_name(PolicyKind p);
bool parse_policy(std::string_view s, PolicyKind* out);

// What the flash was formatted as. Identical in every EC header of one image.
struct ImageParams {
  PolicyKind policy = PolicyKind::kHubi;
  uint16_t data_pages = 0;      // hubi d; ubi/pubi: pages per LEB
  uint16_t log_pages = 0;       // hubi l; 0 otherwise
  uint16_t partition_data = 0;  // pubi D
  uint16_t partition_log = 0;   // pubi L
  uint32_t leb_count = 0;
  uint32_t image_seq = 0;       // random at format: tells images apart
  bool operator==(const ImageParams& o) const;
  bool operator!=(const ImageParams& o) const { return !(*this == o); }
};

struct EcHeader {
  uint64_t erase_count = 0;
  ImageParams image;
};

enum class HeaderStatus {
  kValid,
  kErased,   // all 0xFF: nothing was written
  kCorrupt,  // written, but not a valid header (torn, half-erased, foreign, rotten)
};

// Encodes into a page-sized buffer (rest 0xFF).
void encode_ec_header(const EcHeader& h, char* page, uint32_t page_size);
HeaderStatus decode_ec_header(const char* page, uint32_t page_size, EcHeader* out);

enum class PageKind : uint8_t { kData = 1, kLog = 2, kHole = 3 };
// Set on every page a merge writes into its target PEB.
constexpr uint8_t kTagMerge = 1u << 0;
// Set on the final page of a merge: the target PEB is complete.
constexpr uint8_t kTagLast = 1u << 1;
// A copy of a page whose source could not be read intact: reading it fails
// (-EIO) instead of returning made-up data.
constexpr uint8_t kTagDamaged = 1u << 2;

struct PageTag {
  PageKind kind = PageKind::kData;
  uint8_t flags = 0;
  uint32_t leb = 0;
  uint16_t lpn = 0;        // logical page inside the LEB
  uint16_t merge_end = 0;  // merge pages: the last data-area slot the merge writes
  uint64_t seq = 0;        // global program sequence number, never reused
  uint32_t data_crc = 0;   // crc32c of the page data
};

// Needs oob_size >= kMinOobSize. Encodes into an OOB buffer (marker bytes 0xFF).
void encode_page_tag(const PageTag& t, char* oob, uint32_t oob_size);
HeaderStatus decode_page_tag(const char* oob, uint32_t oob_size, PageTag* out);

bool all_ff(const char* p, size_t n);

}  // namespace hybridstore::ftl
