// Shared by the fuzz targets: the record tags of the formats under test.
//
// A fuzzer almost never produces a valid crc32c, so each target also feeds
// the decoders bodies it seals itself, reaching the parsing behind the
// checksum. The tags are private to their encoders; these copies are checked
// against the real encoders once per process (check_tags), so a changed tag
// fails loudly instead of silently fuzzing only the checksum test.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "hscommon/encoding.h"

namespace hybridstore::fuzz {

constexpr uint32_t kOnodeTag = 0x4f4e4f44;  // onode.cc
constexpr uint32_t kShardTag = 0x45585348;  // onode.cc, extent shards
constexpr uint32_t kHeatTag = 0x48454154;   // kv/heat_record.cc, "HEAT"
constexpr uint32_t kLabelTag = 0x4c41424c;  // store_format.cc
constexpr uint32_t kSuperTag = 0x53555052;  // store_format.cc
constexpr char kLabelMagic[] = "HYBRIDSTORE-LABEL\n";
constexpr size_t kLabelMagicLen = sizeof(kLabelMagic) - 1;
constexpr uint32_t kKvfsSuperTag = 0x4b565342;   // kvfs_super.cc, "KVSB"
constexpr uint32_t kKvfsGroupTag = 0x4b564c47;   // kvfs_log.cc, "KVLG"
constexpr uint32_t kKvfsGroupMagic = 0x564b5348;  // kvfs_log.cc, "HSKV"
constexpr char kKvfsSuperMagic[] = "HYBRIDSTORE-KVFS\n";
constexpr size_t kKvfsSuperMagicLen = sizeof(kKvfsSuperMagic) - 1;
constexpr uint32_t kJournalTag = 0x4a524e4c;      // journal_record.cc, "JRNL"
constexpr uint32_t kJournalMagicV1 = 0x314a5348;  // journal_record.cc, "HSJ1"
constexpr uint32_t kJournalMagicV2 = 0x324a5348;  // journal_record.cc, "HSJ2"

inline void require(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "fuzz target setup: %s\n", what);
    abort();
  }
}

// The body of a sealed record made by the real encoder (for seeds and checks).
inline std::string_view body_of(uint32_t tag, std::string_view record) {
  uint8_t ver;
  std::string_view body;
  require(open_record(tag, 255, record, &ver, &body) == RecordError::kNone, "tag copy does not match its encoder");
  return body;
}

inline std::string_view as_view(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

// The data blocks journal_fuzz appends to a version-2 record it frames:
// block i is the byte i, 4 KiB of it.
inline std::string journal_fuzz_block(size_t i) { return std::string(4096, static_cast<char>(i)); }

// journal_fuzz's framing of a body (mode bit 1: version 2 with (mode >> 2) % 4
// data blocks; else version 1), padded as the encoders pad.
inline std::string frame_journal_record(uint8_t mode, std::string_view body) {
  const bool v2 = mode & 2;
  const size_t blocks = v2 ? (mode >> 2) % 4 : 0;
  const std::string sealed = seal_record(kJournalTag, v2 ? 2 : 1, body);
  std::string out;
  put_fixed32(&out, v2 ? kJournalMagicV2 : kJournalMagicV1);
  put_fixed32(&out, static_cast<uint32_t>(sealed.size()));
  if (v2) put_fixed32(&out, static_cast<uint32_t>(blocks));
  out += sealed;
  out.resize((out.size() + 4095) / 4096 * 4096, '\0');
  for (size_t i = 0; i < blocks; ++i) out += journal_fuzz_block(i);
  return out;
}

}  // namespace hybridstore::fuzz
