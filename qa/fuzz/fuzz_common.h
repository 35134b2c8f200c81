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

}  // namespace hybridstore::fuzz
