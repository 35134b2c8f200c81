// The kvfs metadata log (docs/kvfs.md 3.2): its records, the groups they are
// written in, a writer that appends groups segment after segment, and the
// replay that rebuilds the kvfs's state from the durable prefix.
//
// A group starts on a block boundary and is padded with zeros to whole
// blocks:
//   [fixed32 magic "HSKV"][fixed32 n][n bytes: seal_record(kKvfsGroupTag
//    "KVLG", 1, body)] zeros to b
//   body   = [fixed64 log_id][fixed64 first_seq][varint count]{record}*count
//   record = [u8 op][varint len][len bytes of fields]; record i has seq
//            first_seq + i.
// Integer fields are varints, names length-prefixed bytes, the kvfs uuid 16
// raw bytes.
//
// Guarantees: decoders never read past their input; a damaged group is
// -EIO, an intact group holding an op this build does not know is
// -EOPNOTSUPP ("written by a newer build"). A group is durable before the
// next one is written, and the device is flushed before each group, so the
// data a record describes is on the media before the record is.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "hsio/block_device.h"
#include "hybridstore/format/store_format.h"
#include "hybridstore/kvfs/kvfs_super.h"

namespace hybridstore {

class KvFsState;

// Inode numbers with a meaning of their own (docs/kvfs.md 3.1); files start
// at kKvFsFirstFileIno.
constexpr uint64_t kKvFsLogIno = 1;
constexpr uint64_t kKvFsJournalIno = 2;
constexpr uint64_t kKvFsFirstFileIno = 16;
constexpr size_t kKvFsMaxName = 255;

enum class KvOp : uint8_t {
  kInit = 1,
  kGrant = 2,
  kReturn = 3,
  kNext = 4,
  kMkdir = 5,
  kRmdir = 6,
  kCreate = 7,
  kUpdate = 8,
  kRename = 9,
  kUnlink = 10,
  kJournal = 11,
  kSnapshotDone = 12,
};
const char* kv_op_name(KvOp op);

// Where the bytes of a file's last partial block are.
enum class KvTailKind : uint8_t { kNone = 0, kInline = 1, kInData = 2 };

struct KvInit {
  Uuid kvfs_uuid{};
  uint64_t block = 0, alloc_unit = 0, lend_unit = 0;
  bool operator==(const KvInit& o) const;
};
struct KvGrant {
  KvFsExtent chunk;
  bool operator==(const KvGrant& o) const { return chunk == o.chunk; }
};
struct KvReturn {
  KvFsExtent chunk;
  bool operator==(const KvReturn& o) const { return chunk == o.chunk; }
};
struct KvNext {
  KvFsExtent segment;
  bool operator==(const KvNext& o) const { return segment == o.segment; }
};
struct KvMkdir {
  std::string dir;
  bool operator==(const KvMkdir& o) const { return dir == o.dir; }
};
struct KvRmdir {
  std::string dir;
  bool operator==(const KvRmdir& o) const { return dir == o.dir; }
};
struct KvCreate {
  std::string dir, name;
  uint64_t ino = 0;
  bool operator==(const KvCreate& o) const { return dir == o.dir && name == o.name && ino == o.ino; }
};
struct KvUpdate {
  uint64_t ino = 0, size = 0, mtime = 0;
  uint64_t keep = 0;  // the inode's first `keep` extents stay; the rest are freed
  std::vector<KvFsExtent> extents;  // appended after the kept ones
  KvTailKind tail_kind = KvTailKind::kNone;
  std::string tail;  // kInline only: the bytes [floor(size/b)·b, size)
  bool operator==(const KvUpdate& o) const;
};
struct KvRename {
  std::string src_dir, src, dst_dir, dst;
  bool operator==(const KvRename& o) const;
};
struct KvUnlink {
  std::string dir, name;
  bool operator==(const KvUnlink& o) const { return dir == o.dir && name == o.name; }
};
struct KvJournal {
  std::vector<KvFsExtent> extents;
  bool operator==(const KvJournal& o) const { return extents == o.extents; }
};
struct KvSnapshotDone {
  bool operator==(const KvSnapshotDone&) const { return true; }
};

// The alternatives are in op order: index + 1 is the op (kv_record_op).
using KvRecord = std::variant<KvInit, KvGrant, KvReturn, KvNext, KvMkdir, KvRmdir, KvCreate, KvUpdate, KvRename,
                              KvUnlink, KvJournal, KvSnapshotDone>;
KvOp kv_record_op(const KvRecord& r);

struct KvGroup {
  uint64_t log_id = 0;
  uint64_t first_seq = 0;
  std::vector<KvRecord> records;
};

// The group, padded to whole blocks of `block` bytes.
std::string encode_kvfs_group(const KvGroup& g, uint64_t block);
// Its padded size, without building it.
uint64_t kvfs_group_size(const KvGroup& g, uint64_t block);
// Parses the group at the start of `in` (which may go on past it). 0 with
// *padded_len = the group's bytes rounded up to `block`; -EIO when `in`
// does not start with an intact group; -EOPNOTSUPP for an op or record
// version of a newer build.
int decode_kvfs_group(std::string_view in, uint64_t block, KvGroup* out, uint64_t* padded_len, std::string* why);

struct KvLoggedRecord {
  uint64_t seq = 0;
  KvRecord record;
};

// Appends groups to the log, synchronously, one durable group at a time.
// Not thread-safe: the caller serialises appends (group commit, with its
// leader, sits above this).
class KvFsLogWriter {
 public:
  // Hands out the next segment (A-aligned, inside the kvfs's chunks, unused)
  // when the current one is full: 0, or -errno with *why.
  using SegmentSource = std::function<int(KvFsExtent* segment, std::string* why)>;

  // Continues the log `log_id` at `position` inside `segment`, the next
  // record taking `next_seq` (a fresh log: the superblock's first segment,
  // its offset and log_first_seq; a replayed one: replay's KvFsLogEnd).
  KvFsLogWriter(BlockDevice* dev, uint64_t block, uint64_t log_id, KvFsExtent segment, uint64_t position,
                uint64_t next_seq, SegmentSource next_segment);

  // Writes `records` as one group: flush() the device (the data the records
  // describe must be durable first, and write_durable may make only itself
  // durable), then write_durable the group. When the group does not fit
  // beside the room kept for a NEXT group, a new segment is taken and a
  // NEXT group naming it is written durably first. *logged (optional) gets
  // every record made durable, NEXT included, with its seq; on an error it
  // holds those that were before the failure.
  int append_group(const std::vector<KvRecord>& records, std::vector<KvLoggedRecord>* logged, std::string* why);

  uint64_t next_seq() const { return next_seq_; }
  uint64_t position() const { return position_; }
  const KvFsExtent& segment() const { return segment_; }

 private:
  int write_group(const KvGroup& g, std::string* why);

  BlockDevice* const dev_;
  const uint64_t block_;
  const uint64_t log_id_;
  KvFsExtent segment_;
  uint64_t position_;
  uint64_t next_seq_;
  SegmentSource next_segment_;
  const uint64_t next_group_room_;  // the padded size of the largest NEXT group
};

// Where the durable log ends: the next group goes at `position` in
// `segment` and its first record takes `next_seq`.
struct KvFsLogEnd {
  KvFsExtent segment;
  uint64_t position = 0;
  uint64_t next_seq = 0;
  uint64_t groups = 0;  // groups replayed
};

// Rebuilds `state` (fresh, made for this superblock's kvfs) from the log
// the superblock names: follows NEXT from segment to segment and stops at
// the first group that is not a valid group of this log with the expected
// seq. A valid group of this log with a higher seq later in that segment
// means damaged media: -EIO "kvfs log damaged at offset X; later records
// exist". A record the state refuses: its -EIO naming the seq.
// With `records`, every record applied is appended there with its seq (the
// tool's log-dump).
int replay_kvfs_log(BlockDevice* dev, const KvFsSuper& super, KvFsState* state, KvFsLogEnd* end, std::string* why,
                    std::vector<KvLoggedRecord>* records = nullptr);

}  // namespace hybridstore
