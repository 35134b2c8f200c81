#include "ftl/flash_io.h"

#include <cerrno>
#include <cstring>

#include "hscommon/crc32c.h"

namespace hybridstore::ftl {

PebLayout leb_layout(const ImageParams& image, const NandGeometry& g) {
  PebLayout l;
  if (image.policy == PolicyKind::kHubi) {
    l.data_slots = image.data_pages;
    l.log_slots = image.log_pages;
  } else {
    l.data_slots = g.pages_per_block - 1;
  }
  return l;
}

PebLayout log_block_layout(const NandGeometry& g) {
  PebLayout l;
  l.log_slots = g.pages_per_block - 1;
  return l;
}

FlashIo::FlashIo(NandModel* nand)
    : nand_(nand),
      page_buf_(nand->geometry().page_size),
      oob_buf_(nand->geometry().oob_size),
      ff_page_(nand->geometry().page_size, static_cast<char>(0xff)) {}

int FlashIo::read_ec_header(uint32_t peb, HeaderStatus* status, EcHeader* out) {
  int r = nand_->read_page(peb, 0, page_buf_.data(), nullptr);
  ++counters_.page_reads;
  if (r == -EIO || r == -EINVAL) return r;
  // A header with uncorrectable damage fails its checksum below.
  *status = decode_ec_header(page_buf_.data(), page_size(), out);
  return 0;
}

int FlashIo::write_ec_header(uint32_t peb, const EcHeader& h) {
  encode_ec_header(h, page_buf_.data(), page_size());
  ++counters_.header_writes;
  return nand_->program_page(peb, 0, page_buf_.data(), nullptr);
}

int FlashIo::read_tag(uint32_t peb, uint32_t page, HeaderStatus* status, PageTag* out) {
  int r = nand_->read_page(peb, page, nullptr, oob_buf_.data());
  ++counters_.tag_reads;
  if (r < 0) return r;
  *status = decode_page_tag(oob_buf_.data(), geometry().oob_size, out);
  return 0;
}

int FlashIo::read_page(uint32_t peb, uint32_t page, char* data, PageTag* tag) {
  int r = nand_->read_page(peb, page, data, oob_buf_.data());
  ++counters_.page_reads;
  if (r == -EIO || r == -EINVAL) return r;
  HeaderStatus st = decode_page_tag(oob_buf_.data(), geometry().oob_size, tag);
  if (st == HeaderStatus::kErased) return all_ff(data, page_size()) ? -ENODATA : -EBADMSG;
  if (st == HeaderStatus::kCorrupt) return -EBADMSG;
  if (r == -EBADMSG) return -EBADMSG;
  if (crc32c(0, data, page_size()) != tag->data_crc) return -EBADMSG;
  return r;  // 0 or -EUCLEAN
}

int FlashIo::write_page(uint32_t peb, uint32_t page, const char* data, PageTag tag) {
  if (!data) data = ff_page_.data();
  tag.data_crc = crc32c(0, data, page_size());
  encode_page_tag(tag, oob_buf_.data(), geometry().oob_size);
  ++counters_.page_writes;
  return nand_->program_page(peb, page, data, oob_buf_.data());
}

int FlashIo::page_is_empty(uint32_t peb, uint32_t page, bool* empty) {
  int r = nand_->read_page(peb, page, page_buf_.data(), oob_buf_.data());
  ++counters_.page_reads;
  if (r == -EIO || r == -EINVAL) return r;
  *empty = all_ff(page_buf_.data(), page_size()) &&
           all_ff(oob_buf_.data(), geometry().oob_size);
  return 0;
}

}  // namespace hybridstore::ftl
