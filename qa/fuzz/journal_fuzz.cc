// libFuzzer target: the commit journal's record decoder (kv/journal_record.h),
// versions 1 and 2, fed untrusted bytes. Input: one mode byte, then
//   mode bit 0 set: raw record bytes;
//   mode bit 0 clear: a record body that the target seals and frames as
//     version 2 (mode bit 1) or 1, followed for version 2 by (mode >> 2) % 4
//     data blocks, block i filled with the byte i (the seeds, made by the
//     real encoder over the same blocks, carry their crcs, so mutations
//     reach the checks behind them).
// The same input also goes to the ring tail's decoder and, padded to whole
// blocks, to the ring walk (walk_journal_ring).
// Properties: never a crash, an out-of-bounds read or undefined behaviour;
// a rejected record says why; an accepted one has a size of whole blocks
// within the input (version 1: but for its padding), and re-encodes to a record that decodes to the same
// entries and encodes identically again.
#include <cstdint>
#include <vector>

#include "fuzz_common.h"
#include "hybridstore/kv/journal_record.h"

using namespace hybridstore;
using namespace hybridstore::fuzz;

namespace {

const Uuid kFsid{0x5e, 0xed, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};

bool same(const std::vector<JournalEntry>& a, const std::vector<JournalEntry>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].seq != b[i].seq || a[i].batch != b[i].batch || a[i].has_batch != b[i].has_batch ||
        a[i].deltas != b[i].deltas)
      return false;
  return true;
}

std::string reencode(const JournalRecord& r) {
  return r.version == 1 ? encode_journal_record(kFsid, r.entries) : encode_journal_record_v2(kFsid, r.entries, r.data);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool tags_ok = [] {
    const std::string v1 = encode_journal_record(kFsid, std::vector<JournalEntry>{{1, "b"}});
    require(load_fixed32(v1.data()) == kJournalMagicV1, "journal v1 magic copy");
    body_of(kJournalTag, std::string_view(v1).substr(8, load_fixed32(v1.data() + 4)));
    const std::string v2 = encode_journal_record_v2(kFsid, std::vector<JournalEntry>{{1, "b"}}, {});
    require(load_fixed32(v2.data()) == kJournalMagicV2, "journal v2 magic copy");
    body_of(kJournalTag, std::string_view(v2).substr(12, load_fixed32(v2.data() + 4)));
    return true;
  }();
  (void)tags_ok;
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const std::string_view rest = as_view(data + 1, size - 1);
  std::string in;
  if (mode & 1) {
    in = std::string(rest);
  } else {
    in = frame_journal_record(mode, rest);
  }
  {
    // The tail's decoder over the raw bytes, and the walk over the record
    // as a ring of whole blocks, from a tail the mode picks.
    JournalTail t;
    std::string terr;
    if (decode_journal_tail(rest, &t, &terr) == 0)
      require(t.pos % kJournalBlock == 0, "an accepted tail is at a block boundary");
    else
      require(!terr.empty(), "a rejected tail must say why");
    std::string ring = in;
    ring.resize((ring.size() + kJournalBlock - 1) / kJournalBlock * kJournalBlock, '\0');
    uint64_t prev = 0;
    const JournalWalk w = walk_journal_ring(ring, kFsid, {(mode >> 4) % 4 * kJournalBlock, mode & 2u}, mode % 8,
                                            [&](JournalRecord& rec) {
                                              require(!rec.entries.empty() && rec.entries.front().seq > prev,
                                                      "a walk takes rising numbers");
                                              prev = rec.entries.back().seq;
                                            });
    require(ring.empty() || w.end < ring.size(), "a walk ends inside the ring");
    require(w.records <= ring.size() / kJournalBlock, "a walk takes at most a lap");
  }
  JournalRecord r;
  uint64_t len = 0;
  std::string why;
  if (!decode_journal_record(in, kFsid, &r, &len, &why)) {
    require(!why.empty(), "a rejected journal record must say why");
    return 0;
  }
  // Version 1 never required its padding to be there (the ring always has
  // it); version 2 needs its header blocks and data blocks whole.
  require(len > 0 && len % kJournalBlock == 0, "an accepted record's size is whole blocks");
  require(r.version == 1 ? len < in.size() + kJournalBlock : len <= in.size(), "an accepted record lies in its input");
  require(r.version == 1 || r.version == 2, "only versions 1 and 2 are accepted");
  require(!r.entries.empty(), "an accepted record holds an entry");
  const std::string again = reencode(r);
  JournalRecord r2;
  uint64_t len2 = 0;
  require(decode_journal_record(again, kFsid, &r2, &len2, &why), "a re-encoded journal record must decode");
  require(len2 == again.size() && r2.version == r.version && same(r.entries, r2.entries) && r2.data == r.data,
          "journal record round trip changed it");
  require(reencode(r2) == again, "journal record encoding must be stable");
  return 0;
}
