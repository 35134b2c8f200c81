// Geometry of a raw NAND chip: pages of data plus an out-of-band (OOB) spare
// area, grouped in erase blocks. The defaults are the hUBI paper's Huawei MLC
// part (2 KiB pages, 128 pages per block = 256 KiB blocks, 64 B OOB).
#pragma once
#include <cstdint>
#include <string>

namespace hybridstore::ftl {

struct NandGeometry {
  uint32_t page_size = 2048;       // data bytes per page (power of two, >= 512)
  uint32_t pages_per_block = 128;  // >= 4
  uint32_t oob_size = 64;          // spare bytes per page (>= 32: bad-block marker + page tag)
  uint32_t block_count = 4096;     // physical erase blocks (1 GiB of data by default)

  uint64_t block_bytes() const { return uint64_t(page_size) * pages_per_block; }
  uint64_t total_bytes() const { return block_bytes() * block_count; }
  uint64_t total_pages() const { return uint64_t(pages_per_block) * block_count; }

  // 0, or -EINVAL with *error saying which field is out of range.
  int validate(std::string* error) const;
  bool operator==(const NandGeometry& o) const {
    return page_size == o.page_size && pages_per_block == o.pages_per_block &&
           oob_size == o.oob_size && block_count == o.block_count;
  }
  bool operator!=(const NandGeometry& o) const { return !(*this == o); }
};

// Smallest OOB the FTL can use: 2 bytes of bad-block marker + the page tag.
constexpr uint32_t kMinOobSize = 32;
// Bytes 0..1 of the OOB of a block's first page are the bad-block marker
// (anything but 0xFF in byte 0 means bad), as on real large-page NAND.
constexpr uint32_t kBadBlockMarkerBytes = 2;

std::string describe(const NandGeometry& g);

}  // namespace hybridstore::ftl
