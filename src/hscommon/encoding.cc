#include "hscommon/encoding.h"

#include <fmt/format.h>

#include <cassert>
#include <cerrno>
#include <cstring>

#include "hscommon/crc32c.h"

namespace hybridstore {

void put_u8(std::string* dst, uint8_t v) { dst->push_back(static_cast<char>(v)); }

void put_fixed16(std::string* dst, uint16_t v) {
  char b[2] = {static_cast<char>(v), static_cast<char>(v >> 8)};
  dst->append(b, 2);
}

void store_fixed32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
void store_fixed64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
uint32_t load_fixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
uint64_t load_fixed64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

void put_fixed32(std::string* dst, uint32_t v) {
  char b[4];
  store_fixed32(b, v);
  dst->append(b, 4);
}
void put_fixed64(std::string* dst, uint64_t v) {
  char b[8];
  store_fixed64(b, v);
  dst->append(b, 8);
}

void put_varint(std::string* dst, uint64_t v) {
  while (v >= 0x80) {
    dst->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  dst->push_back(static_cast<char>(v));
}

void put_svarint(std::string* dst, int64_t v) {
  put_varint(dst, (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
}

size_t varint_size(uint64_t v) {
  size_t n = 1;
  for (; v >= 0x80; v >>= 7) ++n;
  return n;
}

void put_bytes(std::string* dst, std::string_view s) {
  put_varint(dst, s.size());
  dst->append(s.data(), s.size());
}

void put_be32(std::string* dst, uint32_t v) {
  for (int i = 3; i >= 0; --i) dst->push_back(static_cast<char>(v >> (8 * i)));
}
void put_be64(std::string* dst, uint64_t v) {
  for (int i = 7; i >= 0; --i) dst->push_back(static_cast<char>(v >> (8 * i)));
}
uint32_t get_be32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
uint64_t get_be64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

bool Decoder::get_u8(uint8_t* v) {
  if (!ok_ || end_ - p_ < 1) return fail();
  *v = static_cast<uint8_t>(*p_++);
  return true;
}
bool Decoder::get_fixed16(uint16_t* v) {
  if (!ok_ || end_ - p_ < 2) return fail();
  *v = static_cast<uint16_t>(static_cast<uint8_t>(p_[0]) | (static_cast<uint8_t>(p_[1]) << 8));
  p_ += 2;
  return true;
}
bool Decoder::get_fixed32(uint32_t* v) {
  if (!ok_ || end_ - p_ < 4) return fail();
  *v = load_fixed32(p_);
  p_ += 4;
  return true;
}
bool Decoder::get_fixed64(uint64_t* v) {
  if (!ok_ || end_ - p_ < 8) return fail();
  *v = load_fixed64(p_);
  p_ += 8;
  return true;
}
bool Decoder::get_varint(uint64_t* v) {
  if (!ok_) return false;
  uint64_t result = 0;
  for (int shift = 0; shift <= 63; shift += 7) {
    if (p_ >= end_) return fail();
    uint8_t byte = static_cast<uint8_t>(*p_++);
    if (shift == 63 && byte > 1) return fail();  // would overflow 64 bits
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80)) {
      *v = result;
      return true;
    }
  }
  return fail();
}
bool Decoder::get_varint32(uint32_t* v) {
  uint64_t x;
  if (!get_varint(&x)) return false;
  if (x > UINT32_MAX) return fail();
  *v = static_cast<uint32_t>(x);
  return true;
}
bool Decoder::get_svarint(int64_t* v) {
  uint64_t x;
  if (!get_varint(&x)) return false;
  *v = static_cast<int64_t>((x >> 1) ^ (0 - (x & 1)));
  return true;
}
bool Decoder::get_bytes_view(std::string_view* out, uint64_t max_len) {
  uint64_t n;
  if (!get_varint(&n)) return false;
  if (n > max_len || n > static_cast<uint64_t>(end_ - p_)) return fail();
  *out = std::string_view(p_, n);
  p_ += n;
  return true;
}
bool Decoder::get_bytes(std::string* out, uint64_t max_len) {
  std::string_view v;
  if (!get_bytes_view(&v, max_len)) return false;
  out->assign(v.data(), v.size());
  return true;
}
bool Decoder::get_raw(size_t n, std::string_view* out) {
  if (!ok_ || static_cast<size_t>(end_ - p_) < n) return fail();
  *out = std::string_view(p_, n);
  p_ += n;
  return true;
}
bool Decoder::skip(size_t n) {
  if (!ok_ || static_cast<size_t>(end_ - p_) < n) return fail();
  p_ += n;
  return true;
}

uint64_t sealed_record_size(uint64_t body_size) { return 1 + varint_size(body_size) + body_size + 4; }

void append_sealed_record(std::string* out, uint32_t tag, uint8_t version, uint64_t body_size,
                          const std::function<void(std::string*)>& append_body) {
  const size_t begin = out->size();
  out->reserve(begin + sealed_record_size(body_size));
  put_u8(out, version);
  put_varint(out, body_size);
  append_body(out);
  assert(out->size() - begin == sealed_record_size(body_size) - 4);
  put_fixed32(out, crc32c(tag, out->data() + begin, out->size() - begin));
}

std::string seal_record(uint32_t tag, uint8_t version, std::string_view body) {
  std::string out;
  append_sealed_record(&out, tag, version, body.size(), [&](std::string* o) { o->append(body.data(), body.size()); });
  return out;
}

std::string seal_record_parts(uint32_t tag, uint8_t version, std::initializer_list<std::string_view> body_parts) {
  uint64_t body = 0;
  for (auto p : body_parts) body += p.size();
  std::string out;
  append_sealed_record(&out, tag, version, body, [&](std::string* o) {
    for (auto p : body_parts) o->append(p.data(), p.size());
  });
  return out;
}

const char* record_error_name(RecordError e) {
  switch (e) {
    case RecordError::kNone: return "ok";
    case RecordError::kTruncated: return "truncated or malformed record";
    case RecordError::kBadChecksum: return "checksum mismatch";
    case RecordError::kBadVersion: return "unsupported record version";
  }
  return "unknown";
}

RecordError open_record(uint32_t tag, uint8_t max_version, std::string_view in,
                        uint8_t* version, std::string_view* body) {
  Decoder d(in);
  uint8_t v;
  std::string_view b;
  if (!d.get_u8(&v) || !d.get_bytes_view(&b)) return RecordError::kTruncated;
  size_t framed = in.size() - d.remaining();
  uint32_t stored;
  if (!d.get_fixed32(&stored) || !d.done()) return RecordError::kTruncated;
  if (crc32c(tag, in.data(), framed) != stored) return RecordError::kBadChecksum;
  if (v == 0 || v > max_version) return RecordError::kBadVersion;
  *version = v;
  *body = b;
  return RecordError::kNone;
}

int record_errno(RecordError e) {
  switch (e) {
    case RecordError::kNone: return 0;
    case RecordError::kBadVersion: return -EOPNOTSUPP;
    case RecordError::kTruncated:
    case RecordError::kBadChecksum: break;
  }
  return -EIO;
}

int open_stored_record(uint32_t tag, uint8_t max_version, std::string_view in, std::string_view what,
                       uint8_t* version, std::string_view* body, std::string* error) {
  RecordError re = open_record(tag, max_version, in, version, body);
  if (re == RecordError::kNone) return 0;
  if (error) *error = fmt::format("{}: {}", what, record_error_name(re));
  return record_errno(re);
}

}  // namespace hybridstore
