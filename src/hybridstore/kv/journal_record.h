// The commit journal's records (commit_journal.h), versions 1 and 2: their
// encoders and the one decoder that takes both. Kept apart from the ring and
// its replay so that the fuzz targets (qa/fuzz) can feed the decoder without
// linking RocksDB.
//
// Version 1 ("HSJ1"), at a 4 KiB boundary of the ring, padded to 4 KiB:
//   [fixed32 magic "HSJ1"][fixed32 n][n bytes: seal_record(kJournalTag, 1,
//    body)] with body = [16 bytes fsid][varint count]{[fixed64 seq][bytes
//    batch]}*count.
//
// Version 2 ("HSJ2", docs/small-writes.md section 5): a header of metadata,
// then the data of small overwrites in whole 4 KiB blocks, so that the data
// reaches its place later straight from an aligned block and the record can
// be written from the write's own buffers:
//   header blocks 0..h-1:
//     [fixed32 magic "HSJ2"][fixed32 n][fixed32 data_blocks]
//     [n bytes: seal_record(kJournalTag, 2, body)], zeros to the block's end
//   data blocks h..h+data_blocks-1, 4 KiB each, in the order the deltas name
//   them.
//   body  = [16 bytes fsid][varint count] entry*count
//   entry = [fixed64 seq][varint flags][bytes batch][varint ndeltas] delta*
//   delta = [u8 kind][bytes object key][varint version it makes] payload,
//           and for the kinds that change an onode (1-4) the payload starts
//           with [varint incarnation] (the object's life, format 7)
//     OVERWRITE (1): [varint logical][varint blocks][u8 tier][varint physical]
//                    [fixed32 crc32c]*blocks: the new checksums of 4 KiB
//                    blocks of the object's map; it names no data block
//                    (the data rides in the entry's RING_DATA deltas, or
//                    reached its place before the commit)
//     SETATTR (2):   [bytes name][bytes value]
//     RMATTR (3):    [bytes name]
//     SETSIZE (4):   [varint size]
//     RING_DATA (5): [varint staged][varint blocks][u8 tier][varint physical]
//                    [varint first data block][fixed32 crc32c]*blocks,
//                    with an empty key and version 0: data only, for the
//                    deferred writer (its staging number `staged`), no onode
//                    change (the transaction's batch carries its onode).
// The seal covers the header, and through the crcs it holds every data
// block: a record is intact when its seal verifies and each data block
// matches its crc. A torn record fails one or the other and is absent.
//
// The magic fixes the version: an "HSJ1" record sealed as version 2 (or the
// reverse) is refused, as is any version above 2.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "hybridstore/format/store_format.h"

namespace hybridstore {

constexpr uint64_t kJournalBlock = 4096;

enum class JournalDeltaKind : uint8_t { kOverwrite = 1, kSetAttr = 2, kRmAttr = 3, kSetSize = 4, kRingData = 5 };

// One change a transaction made to one object's onode, named by the
// onode's RocksDB key and the onode version it makes (onode record v3).
struct JournalDelta {
  JournalDeltaKind kind = JournalDeltaKind::kOverwrite;
  std::string key;
  uint64_t version = 0;
  // The life of the object the delta belongs to (Onode::incarnation): a
  // delta never changes a later life of the same key (docs/small-writes.md
  // 12.10). Not in RING_DATA deltas.
  uint64_t incarnation = 0;
  // kOverwrite: `crcs.size()` blocks of 4 KiB at `logical` in the object and
  // `physical` on tier index `tier` now have these checksums (first_block
  // unused).
  uint64_t logical = 0;
  uint8_t tier = 0;
  uint64_t physical = 0;
  uint64_t first_block = 0;
  std::vector<uint32_t> crcs;
  // kSetAttr, kRmAttr
  std::string name;
  std::string value;
  // kSetSize
  uint64_t size = 0;
  // kRingData: `crcs.size()` blocks at `physical` on tier index `tier`, the
  // record's data blocks from `first_block` on, staged by the deferred
  // writer as number `staged` (replay applies them in that order, among
  // the D records).
  uint64_t staged = 0;
};
bool operator==(const JournalDelta& a, const JournalDelta& b);

struct JournalEntry {
  uint64_t seq = 0;
  std::string batch;  // rocksdb::WriteBatch::Data()
  // False for a version-2 entry that put nothing into RocksDB (a pure
  // overwrite); version 1 entries always have one.
  bool has_batch = true;
  std::vector<JournalDelta> deltas;
};

// An entry to encode: the batch is read where it lies (the committer's
// batches), not copied.
struct JournalEntryView {
  uint64_t seq = 0;
  std::string_view batch;
  bool has_batch = true;
  const std::vector<JournalDelta>* deltas = nullptr;  // version 2 only
};

// A decoded record of either version.
struct JournalRecord {
  uint8_t version = 0;
  std::vector<JournalEntry> entries;
  // Version 2: the data blocks, kJournalBlock bytes each, viewing the
  // decoder's input (valid as long as it is).
  std::vector<std::string_view> data;
};

// Version 1. The padded size of the record of `entries`, known before
// building it.
uint64_t journal_record_size(const Uuid& fsid, const std::vector<JournalEntryView>& entries);
// One record, padded to whole 4 KiB blocks. Its length field is 32 bits:
// callers write only records below CommitJournal::max_record (< 4 GiB).
std::string encode_journal_record(const Uuid& fsid, const std::vector<JournalEntryView>& entries);
std::string encode_journal_record(const Uuid& fsid, const std::vector<JournalEntry>& entries);

// Version 2: header blocks and `data` (each exactly kJournalBlock bytes,
// named by the deltas' first_block in order). The deltas must name every
// data block once, in order; the encoder does not check the crcs (the
// writer computed them once for the extent map), the decoder does.
uint64_t journal_record_v2_size(const Uuid& fsid, const std::vector<JournalEntryView>& entries,
                                size_t data_blocks);
std::string encode_journal_record_v2(const Uuid& fsid, const std::vector<JournalEntryView>& entries,
                                     const std::vector<std::string_view>& data);
std::string encode_journal_record_v2(const Uuid& fsid, const std::vector<JournalEntry>& entries,
                                     const std::vector<std::string_view>& data);

// Decodes the record of either version at the start of `in` (which may run
// on past it). False with *why on anything but an intact record of store
// `fsid`; *len gets its size in the ring (padding and data blocks included).
bool decode_journal_record(std::string_view in, const Uuid& fsid, JournalRecord* out, uint64_t* len,
                           std::string* why = nullptr);
// The entries alone (what a version-1 caller needs).
bool decode_journal_record(std::string_view in, const Uuid& fsid, std::vector<JournalEntry>* out, uint64_t* len);

// Where mount starts reading the ring (format 5; docs/small-writes.md 6.2):
// RocksDB holds durably every transaction up to `covered`, and the record of
// the next one, if the ring has it, starts at byte `pos` of the ring, or at
// 0 when the writer wrapped there. Written (key Sjournal_tail) before every
// RocksDB WAL sync that lets the ring's tail move, so the value RocksDB
// recovers never points behind a record it lacks. Value: seal_record(
// "JTAL", 1, [varint pos][varint covered]).
struct JournalTail {
  uint64_t pos = 0;
  uint64_t covered = 0;
};
std::string encode_journal_tail(const JournalTail& t);
// 0, or -EIO (damaged) / -EOPNOTSUPP (a newer version) with *error.
int decode_journal_tail(std::string_view in, JournalTail* out, std::string* error);

// The records mount replays, found by walking the ring from `from` by their
// lengths, never by trying every block: client bytes inside a record (a
// batch's values, a version-2 record's data blocks) are never read as a
// record, even where a later lap left a record's middle without its head.
// A record is taken when its entries are numbered one after another and its
// first is the next number: `last` + 1, or at most `held` + 1 after numbers
// RocksDB holds without a record (groups too large for one, synced
// instead). At a place where the next record does not start, the walk
// tries the ring's start once (a record never wraps: its writer starts over
// there), then stops. `take` gets each record taken, in ring order.
struct JournalWalk {
  uint64_t last = 0;      // the last number taken (from.covered when none)
  uint64_t records = 0;   // records taken
  uint64_t end = 0;       // ring position where the walk stopped
};
JournalWalk walk_journal_ring(std::string_view ring, const Uuid& fsid, const JournalTail& from, uint64_t held,
                              const std::function<void(JournalRecord&)>& take);

}  // namespace hybridstore
