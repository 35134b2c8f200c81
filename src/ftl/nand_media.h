// The storage behind a simulated NAND chip: every page's data and OOB bytes and
// the chip's own per-block state, in a memory mapping that is either a file
// (the flash survives a restart) or anonymous memory (tests, simulations).
//
// NandMedia knows nothing of NAND rules; NandModel enforces them on top. Two
// NandModels may be opened on the same media one after the other, which is how
// tests "reboot" the chip after an injected power cut.
//
// File format (version 1), little-endian:
//   [0, 4096)      image header: seal_record(kNandImageTag, v1, body) with body =
//                  magic "HSNANDIM", page_size, pages_per_block, oob_size,
//                  block_count (fixed32 each)
//   [4096, T)      block table: one 16-byte entry per block, rounded up to 4096:
//                  wear (erase cycles), write pointer (first page after the highest
//                  programmed one), flags (factory-bad, grown-bad), crc32c of the
//                  12 bytes before it. An all-zero entry is a fresh block.
//   [T, end)       pages: block-major, page-major, page_size data then oob_size OOB.
// Page bytes are stored inverted (erased 0xFF is stored as 0x00), so a fresh
// flash file is a sparse file (creating a 1 GiB flash is instant).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "ftl/nand_geometry.h"

namespace hybridstore::ftl {

struct NandBlockState {
  uint32_t wear = 0;        // erase cycles the block has seen
  uint32_t write_ptr = 0;   // pages below it may be programmed already; above are erased
  uint32_t flags = 0;
};
constexpr uint32_t kBlockFactoryBad = 1u << 0;
constexpr uint32_t kBlockGrownBad = 1u << 1;

// Whether the file at `path` starts with a valid flash image header: how a
// store tells raw NAND (its label behind the FTL) from a file or block device
// before it has read any label.
bool looks_like_flash_image(const std::string& path);

class NandMedia {
 public:
  ~NandMedia();
  NandMedia(const NandMedia&) = delete;
  NandMedia& operator=(const NandMedia&) = delete;

  // A new flash file (fails with -EEXIST if `path` exists) or anonymous memory,
  // every block erased and fresh.
  static int create_file(const std::string& path, const NandGeometry& g,
                         std::shared_ptr<NandMedia>* out, std::string* error);
  static std::shared_ptr<NandMedia> create_memory(const NandGeometry& g);
  // An existing flash file; the geometry comes from its header. A header or
  // block-table entry that fails its checksum is -EIO, a foreign file -EINVAL.
  static int open_file(const std::string& path, std::shared_ptr<NandMedia>* out,
                       std::string* error);

  const NandGeometry& geometry() const { return geo_; }
  const std::string& path() const { return path_; }  // empty for memory
  bool is_file() const { return fd_ >= 0; }

  // Copies a page out (data and/or OOB may be null) or in. No rules checked.
  void read(uint32_t block, uint32_t page, char* data, char* oob) const;
  void write(uint32_t block, uint32_t page, const char* data, const char* oob);
  // Sets every byte of the block's pages to 0xFF.
  void erase(uint32_t block);
  // Only byte `index` of one page's OOB (bad-block marking).
  void write_oob_byte(uint32_t block, uint32_t page, uint32_t index, uint8_t value);

  // Block table. get() of an entry whose checksum fails returns false.
  bool get_state(uint32_t block, NandBlockState* out) const;
  void set_state(uint32_t block, const NandBlockState& s);

  // Makes everything written so far durable in the file (msync); 0 or -errno.
  int sync();

 private:
  NandMedia() = default;
  static int map(const std::string& path, int fd, const NandGeometry& g, bool fresh,
                 std::shared_ptr<NandMedia>* out, std::string* error);
  char* page_ptr(uint32_t block, uint32_t page) const;

  NandGeometry geo_;
  std::string path_;
  int fd_ = -1;
  char* base_ = nullptr;
  size_t map_len_ = 0;
  uint64_t table_offset_ = 0;
  uint64_t data_offset_ = 0;
};

}  // namespace hybridstore::ftl
