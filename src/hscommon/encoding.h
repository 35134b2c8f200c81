// Byte encoders and a bounds-checked decoder shared by every on-disk record.
//
// Integers in record bodies are little-endian fixed or LEB128 varints; integers
// in RocksDB keys are big-endian so that byte order equals numeric order.
// A Decoder never reads past its end: every get_* returns false on short or
// malformed input and leaves the decoder failed, so a caller can decode a whole
// record and check ok() once.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>

namespace hybridstore {

void put_u8(std::string* dst, uint8_t v);
void put_fixed16(std::string* dst, uint16_t v);
void put_fixed32(std::string* dst, uint32_t v);
void put_fixed64(std::string* dst, uint64_t v);
void put_varint(std::string* dst, uint64_t v);
// Bytes put_varint writes for v.
size_t varint_size(uint64_t v);
void put_svarint(std::string* dst, int64_t v);  // zig-zag
// Length-prefixed bytes (varint length).
void put_bytes(std::string* dst, std::string_view s);

void put_be32(std::string* dst, uint32_t v);
void put_be64(std::string* dst, uint64_t v);
uint32_t get_be32(const char* p);
uint64_t get_be64(const char* p);
uint32_t load_fixed32(const char* p);
uint64_t load_fixed64(const char* p);
void store_fixed32(char* p, uint32_t v);
void store_fixed64(char* p, uint64_t v);

class Decoder {
 public:
  explicit Decoder(std::string_view in) : p_(in.data()), end_(in.data() + in.size()) {}

  bool get_u8(uint8_t* v);
  bool get_fixed16(uint16_t* v);
  bool get_fixed32(uint32_t* v);
  bool get_fixed64(uint64_t* v);
  bool get_varint(uint64_t* v);
  bool get_varint32(uint32_t* v);  // fails if the value does not fit 32 bits
  bool get_svarint(int64_t* v);
  // Bytes written by put_bytes; fails when the length passes the end or `max_len`.
  bool get_bytes(std::string* out, uint64_t max_len = UINT64_MAX);
  bool get_bytes_view(std::string_view* out, uint64_t max_len = UINT64_MAX);
  bool get_raw(size_t n, std::string_view* out);
  bool skip(size_t n);

  bool ok() const { return ok_; }
  size_t remaining() const { return ok_ ? static_cast<size_t>(end_ - p_) : 0; }
  bool done() const { return ok_ && p_ == end_; }
  // What is left to decode (empty after a failure).
  std::string_view rest() const { return ok_ ? std::string_view(p_, static_cast<size_t>(end_ - p_)) : std::string_view(); }
  // Marks the decoder failed (for semantic checks done by the caller).
  bool fail() {
    ok_ = false;
    return false;
  }

 private:
  const char* p_;
  const char* end_;
  bool ok_ = true;
};

// A versioned, checksummed record: [u8 version][varint body length][body]
// [fixed32 crc32c of everything before it, seeded with `tag`]. The tag is a
// small per-kind constant so that a record of one kind never decodes as another.
std::string seal_record(uint32_t tag, uint8_t version, std::string_view body);
// The same record for a body given in pieces (their concatenation), built
// in one buffer: no copy of the body is made first (records that carry data
// are built on the write path).
std::string seal_record_parts(uint32_t tag, uint8_t version, std::initializer_list<std::string_view> body_parts);
// Bytes of a sealed record whose body is `body_size` bytes.
uint64_t sealed_record_size(uint64_t body_size);
// Appends the sealed record to *out, its body (exactly `body_size` bytes)
// appended by `append_body`: for records built straight into a larger buffer.
void append_sealed_record(std::string* out, uint32_t tag, uint8_t version, uint64_t body_size,
                          const std::function<void(std::string*)>& append_body);

enum class RecordError { kNone, kTruncated, kBadChecksum, kBadVersion };
const char* record_error_name(RecordError e);

// Checks framing and checksum; on success sets *version and *body (a view into
// `in`). Versions above `max_version` are rejected.
RecordError open_record(uint32_t tag, uint8_t max_version, std::string_view in,
                        uint8_t* version, std::string_view* body);

// What a decoder of the store's own records returns, everywhere:
//   -EIO        the bytes are damaged: framing, checksum, truncation, or a body
//               that does not parse or holds values out of range. The errno a
//               read of a damaged extent returns, so a caller treats a bad
//               record and a bad sector alike (Ceph repairs both from a replica).
//   -EOPNOTSUPP the record is intact but written by a newer build.
//   -EINVAL     only for what a caller passes: options, arguments, a device
//               that carries no HybridStore label at all.
int record_errno(RecordError e);

// open_record for a record the store wrote earlier: 0, or record_errno() with
// *error = "<what>: <reason>" (error may be null).
int open_stored_record(uint32_t tag, uint8_t max_version, std::string_view in, std::string_view what,
                       uint8_t* version, std::string_view* body, std::string* error);

}  // namespace hybridstore
