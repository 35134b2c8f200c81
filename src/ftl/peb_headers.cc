#include "ftl/peb_headers.h"

#include <cstring>

#include "hscommon/encoding.h"

namespace hybridstore::ftl {

namespace {

constexpr uint32_t kEcHeaderTag = 0x48434550;  // "PECH"
constexpr uint8_t kEcHeaderVersion = 1;
constexpr uint32_t kEcMagic = 0x43455348;      // "HSEC"
constexpr uint32_t kPageTagTag = 0x47415450;   // "PTAG"
constexpr uint8_t kPageTagVersion = 1;
constexpr uint16_t kPageTagMagic = 0x5450;     // "PT"
constexpr uint32_t kTagOffset = 2;             // after the bad-block marker

// A sealed record at the start of `buf`, followed by anything. Finds its length
// from the framing, then checks version and checksum. False on any damage.
bool open_prefixed(uint32_t tag, uint8_t max_version, const char* buf, size_t n,
                   std::string_view* body) {
  Decoder d(std::string_view(buf, n));
  uint8_t ver;
  uint64_t len;
  if (!d.get_u8(&ver) || !d.get_varint(&len) || len > d.remaining() ||
      d.remaining() - len < 4)
    return false;
  size_t total = n - d.remaining() + static_cast<size_t>(len) + 4;
  return open_record(tag, max_version, std::string_view(buf, total), &ver, body) ==
         RecordError::kNone;
}

}  // namespace

const char* policy_name(PolicyKind p) {
  switch (p) {
    case PolicyKind::kUbi: return "ubi";
    case PolicyKind::kPubi: return "pubi";
    case PolicyKind::kHubi: return "hubi";
  }
  return "?";
}

bool parse_policy(std::string_view s, PolicyKind* out) {
  if (s == "ubi") *out = PolicyKind::kUbi;
  else if (s == "pubi") *out = PolicyKind::kPubi;
  else if (s == "hubi") *out = PolicyKind::kHubi;
  else return false;
  return true;
}

bool ImageParams::operator==(const ImageParams& o) const {
  return policy == o.policy && data_pages == o.data_pages && log_pages == o.log_pages &&
         partition_data == o.partition_data && partition_log == o.partition_log &&
         leb_count == o.leb_count && image_seq == o.image_seq;
}

bool all_ff(const char* p, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    if (w != ~uint64_t(0)) return false;
  }
  for (; i < n; ++i)
    if (static_cast<uint8_t>(p[i]) != 0xff) return false;
  return true;
}

void encode_ec_header(const EcHeader& h, char* page, uint32_t page_size) {
  std::string body;
  put_fixed32(&body, kEcMagic);
  put_fixed64(&body, h.erase_count);
  put_u8(&body, static_cast<uint8_t>(h.image.policy));
  put_fixed16(&body, h.image.data_pages);
  put_fixed16(&body, h.image.log_pages);
  put_fixed16(&body, h.image.partition_data);
  put_fixed16(&body, h.image.partition_log);
  put_fixed32(&body, h.image.leb_count);
  put_fixed32(&body, h.image.image_seq);
  std::string rec = seal_record(kEcHeaderTag, kEcHeaderVersion, body);
  memset(page, 0xff, page_size);
  memcpy(page, rec.data(), std::min<size_t>(rec.size(), page_size));
}

HeaderStatus decode_ec_header(const char* page, uint32_t page_size, EcHeader* out) {
  // The header is at most a few dozen bytes; look only at the first 256.
  size_t n = std::min<size_t>(page_size, 256);
  if (all_ff(page, n)) return HeaderStatus::kErased;
  std::string_view body;
  if (!open_prefixed(kEcHeaderTag, kEcHeaderVersion, page, n, &body))
    return HeaderStatus::kCorrupt;
  Decoder d(body);
  uint32_t magic, leb_count, image_seq;
  uint64_t ec;
  uint8_t policy;
  uint16_t dp, lp, pd, pl;
  if (!d.get_fixed32(&magic) || magic != kEcMagic || !d.get_fixed64(&ec) || !d.get_u8(&policy) ||
      !d.get_fixed16(&dp) || !d.get_fixed16(&lp) || !d.get_fixed16(&pd) || !d.get_fixed16(&pl) ||
      !d.get_fixed32(&leb_count) || !d.get_fixed32(&image_seq) || !d.done())
    return HeaderStatus::kCorrupt;
  if (policy < 1 || policy > 3 || ec > (uint64_t(1) << 40)) return HeaderStatus::kCorrupt;
  out->erase_count = ec;
  out->image.policy = static_cast<PolicyKind>(policy);
  out->image.data_pages = dp;
  out->image.log_pages = lp;
  out->image.partition_data = pd;
  out->image.partition_log = pl;
  out->image.leb_count = leb_count;
  out->image.image_seq = image_seq;
  return HeaderStatus::kValid;
}

void encode_page_tag(const PageTag& t, char* oob, uint32_t oob_size) {
  std::string body;
  put_fixed16(&body, kPageTagMagic);
  put_u8(&body, static_cast<uint8_t>(t.kind));
  put_u8(&body, t.flags);
  put_fixed32(&body, t.leb);
  put_fixed16(&body, t.lpn);
  put_fixed16(&body, t.merge_end);
  put_fixed64(&body, t.seq);
  put_fixed32(&body, t.data_crc);
  std::string rec = seal_record(kPageTagTag, kPageTagVersion, body);
  memset(oob, 0xff, oob_size);
  memcpy(oob + kTagOffset, rec.data(), std::min<size_t>(rec.size(), oob_size - kTagOffset));
}

HeaderStatus decode_page_tag(const char* oob, uint32_t oob_size, PageTag* out) {
  if (oob_size <= kTagOffset) return HeaderStatus::kCorrupt;
  const char* p = oob + kTagOffset;
  size_t n = oob_size - kTagOffset;
  if (all_ff(p, n)) return HeaderStatus::kErased;
  std::string_view body;
  if (!open_prefixed(kPageTagTag, kPageTagVersion, p, n, &body)) return HeaderStatus::kCorrupt;
  Decoder d(body);
  uint16_t magic, lpn, merge_end;
  uint8_t kind, flags;
  uint32_t leb, crc;
  uint64_t seq;
  if (!d.get_fixed16(&magic) || magic != kPageTagMagic || !d.get_u8(&kind) || !d.get_u8(&flags) ||
      !d.get_fixed32(&leb) || !d.get_fixed16(&lpn) || !d.get_fixed16(&merge_end) ||
      !d.get_fixed64(&seq) || !d.get_fixed32(&crc) || !d.done())
    return HeaderStatus::kCorrupt;
  if (kind < 1 || kind > 3 || (flags & ~(kTagMerge | kTagLast | kTagDamaged))) return HeaderStatus::kCorrupt;
  out->kind = static_cast<PageKind>(kind);
  out->flags = flags;
  out->leb = leb;
  out->lpn = lpn;
  out->merge_end = merge_end;
  out->seq = seq;
  out->data_crc = crc;
  return HeaderStatus::kValid;
}

}  // namespace hybridstore::ftl
