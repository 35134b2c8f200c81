#include "hybridstore/kv/journal_record.h"

#include <cassert>
#include <cerrno>
#include <climits>
#include <cstring>
#include <map>

#include "hscommon/crc32c.h"
#include "hscommon/encoding.h"
#include "hybridstore/format/tier.h"

namespace hybridstore {

namespace {
constexpr uint32_t kJournalMagicV1 = 0x314a5348;  // "HSJ1"
constexpr uint32_t kJournalMagicV2 = 0x324a5348;  // "HSJ2"
constexpr uint32_t kJournalTag = 0x4a524e4c;      // "JRNL"
constexpr uint32_t kJournalTailTag = 0x4a54414c;  // "JTAL"
constexpr uint64_t kEntryHasBatch = 1;
// Offsets and lengths past this are not an object's or a device's: the same
// bound the onode decoder puts on them.
constexpr uint64_t kMaxOffset = 1ull << 58;

uint64_t pad(uint64_t n) { return (n + kJournalBlock - 1) / kJournalBlock * kJournalBlock; }

uint64_t journal_body_size(const Uuid& fsid, const std::vector<JournalEntryView>& entries) {
  uint64_t body = fsid.size() + varint_size(entries.size());
  for (const auto& e : entries) body += 8 + varint_size(e.batch.size()) + e.batch.size();
  return body;
}

void put_delta(std::string* o, const JournalDelta& d) {
  put_u8(o, static_cast<uint8_t>(d.kind));
  put_bytes(o, d.key);
  put_varint(o, d.version);
  if (d.kind != JournalDeltaKind::kRingData) put_varint(o, d.incarnation);
  switch (d.kind) {
    case JournalDeltaKind::kOverwrite:
    case JournalDeltaKind::kRingData:
      put_varint(o, d.kind == JournalDeltaKind::kRingData ? d.staged : d.logical);
      put_varint(o, d.crcs.size());
      put_u8(o, d.tier);
      put_varint(o, d.physical);
      // An OVERWRITE's data is not its own: it rides in the entry's
      // RING_DATA deltas or reached its place before the commit.
      if (d.kind == JournalDeltaKind::kRingData) put_varint(o, d.first_block);
      for (uint32_t c : d.crcs) put_fixed32(o, c);
      break;
    case JournalDeltaKind::kSetAttr:
      put_bytes(o, d.name);
      put_bytes(o, d.value);
      break;
    case JournalDeltaKind::kRmAttr:
      put_bytes(o, d.name);
      break;
    case JournalDeltaKind::kSetSize:
      put_varint(o, d.size);
      break;
  }
}

std::string v2_body(const Uuid& fsid, const std::vector<JournalEntryView>& entries) {
  // Built apart and copied into the seal once: nothing writes version 2 on
  // the commit path yet (docs/small-writes.md step 7 builds it in place).
  std::string b(reinterpret_cast<const char*>(fsid.data()), fsid.size());
  put_varint(&b, entries.size());
  for (const auto& e : entries) {
    put_fixed64(&b, e.seq);
    put_varint(&b, e.has_batch ? kEntryHasBatch : 0);
    put_bytes(&b, e.has_batch ? e.batch : std::string_view());
    const size_t n = e.deltas ? e.deltas->size() : 0;
    put_varint(&b, n);
    for (size_t i = 0; i < n; ++i) put_delta(&b, (*e.deltas)[i]);
  }
  return b;
}

std::vector<JournalEntryView> views_of(const std::vector<JournalEntry>& entries) {
  std::vector<JournalEntryView> views;
  views.reserve(entries.size());
  for (const auto& e : entries) views.push_back({e.seq, e.batch, e.has_batch, &e.deltas});
  return views;
}

bool fail(std::string* why, const char* what) {
  if (why) *why = std::string("journal record: ") + what;
  return false;
}

// One delta of a version-2 entry; *next_block is the first data block not
// yet named, which an OVERWRITE must start at.
bool decode_delta(Decoder& d, const std::vector<std::string_view>& data, uint64_t* next_block, JournalDelta* out,
                  std::string* why) {
  uint8_t kind;
  JournalDelta x;
  if (!d.get_u8(&kind) || !d.get_bytes(&x.key) || !d.get_varint(&x.version)) return fail(why, "truncated delta");
  if (kind == static_cast<uint8_t>(JournalDeltaKind::kRingData)) {
    // Data only: no object, no version.
    if (!x.key.empty() || x.version != 0) return fail(why, "ring data naming an object");
  } else {
    if (x.key.empty()) return fail(why, "delta without an object key");
    // A delta makes a version; the first one any object can get is 1.
    if (x.version == 0) return fail(why, "delta making version 0");
    if (!d.get_varint(&x.incarnation)) return fail(why, "truncated delta");
  }
  switch (kind) {
    case static_cast<uint8_t>(JournalDeltaKind::kOverwrite):
    case static_cast<uint8_t>(JournalDeltaKind::kRingData): {
      uint64_t blocks;
      const bool ring = kind == static_cast<uint8_t>(JournalDeltaKind::kRingData);
      if ((ring ? !d.get_varint(&x.staged) || x.staged == 0 : !d.get_varint(&x.logical)) || !d.get_varint(&blocks) ||
          !d.get_u8(&x.tier) || !d.get_varint(&x.physical) || (ring && !d.get_varint(&x.first_block)))
        return fail(why, "truncated overwrite");
      if (blocks == 0 || blocks > d.remaining() / 4) return fail(why, "overwrite block count out of range");
      if (x.tier >= kMaxTiers) return fail(why, "overwrite on a bad tier");
      if (x.logical % kJournalBlock || x.physical % kJournalBlock || x.logical > kMaxOffset ||
          x.physical > kMaxOffset)
        return fail(why, "overwrite offset misaligned or out of range");
      if (ring && (x.first_block != *next_block || blocks > data.size() - *next_block))
        return fail(why, "ring data names data blocks out of order or past the record");
      x.crcs.resize(blocks);
      for (uint64_t i = 0; i < blocks; ++i) {
        if (!d.get_fixed32(&x.crcs[i])) return fail(why, "truncated overwrite crcs");
        if (ring && crc32c(data[x.first_block + i]) != x.crcs[i]) return fail(why, "data block crc mismatch");
      }
      if (ring) *next_block += blocks;
      break;
    }
    case static_cast<uint8_t>(JournalDeltaKind::kSetAttr):
      if (!d.get_bytes(&x.name) || !d.get_bytes(&x.value)) return fail(why, "truncated setattr");
      break;
    case static_cast<uint8_t>(JournalDeltaKind::kRmAttr):
      if (!d.get_bytes(&x.name)) return fail(why, "truncated rmattr");
      break;
    case static_cast<uint8_t>(JournalDeltaKind::kSetSize):
      if (!d.get_varint(&x.size)) return fail(why, "truncated setsize");
      if (x.size > kMaxOffset) return fail(why, "setsize out of range");
      break;
    default:
      return fail(why, "unknown delta kind");
  }
  x.kind = static_cast<JournalDeltaKind>(kind);
  *out = std::move(x);
  return true;
}

bool decode_entries(Decoder& d, uint8_t version, const std::vector<std::string_view>& data, uint64_t body_size,
                    std::vector<JournalEntry>* out, std::string* why) {
  uint64_t count;
  if (!d.get_varint(&count) || count == 0 || count > body_size) return fail(why, "entry count out of range");
  std::vector<JournalEntry> entries;
  uint64_t prev = 0, next_block = 0;
  for (uint64_t i = 0; i < count; ++i) {
    JournalEntry e;
    if (!d.get_fixed64(&e.seq)) return fail(why, "truncated entry");
    if (version >= 2) {
      uint64_t flags;
      if (!d.get_varint(&flags)) return fail(why, "truncated entry");
      // Unknown flags are a later version's meaning, not one to guess.
      if (flags & ~kEntryHasBatch) return fail(why, "unknown entry flags");
      e.has_batch = flags & kEntryHasBatch;
    }
    if (!d.get_bytes(&e.batch)) return fail(why, "truncated batch");
    if (!e.has_batch && !e.batch.empty()) return fail(why, "a batch in an entry flagged without one");
    // Numbers within a record follow each other: anything else is not ours.
    if (e.seq == 0 || (i > 0 && e.seq != prev + 1)) return fail(why, "entry numbers not consecutive");
    prev = e.seq;
    if (version >= 2) {
      uint64_t ndeltas;
      // A delta takes at least three bytes.
      if (!d.get_varint(&ndeltas) || ndeltas > d.remaining() / 3) return fail(why, "delta count out of range");
      e.deltas.resize(ndeltas);
      // A transaction raises an object's version once: every delta of the
      // entry on one object makes the same version, so replay applies or
      // skips them together.
      std::map<std::string, uint64_t> made;
      for (auto& x : e.deltas) {
        if (!decode_delta(d, data, &next_block, &x, why)) return false;
        if (x.kind == JournalDeltaKind::kRingData) continue;
        auto [it, fresh] = made.emplace(x.key, x.version);
        if (!fresh && it->second != x.version) return fail(why, "deltas of one object in one entry disagree on its version");
      }
    }
    entries.push_back(std::move(e));
  }
  if (!d.done()) return fail(why, "trailing bytes in the header");
  if (next_block != data.size()) return fail(why, "data blocks no delta names");
  *out = std::move(entries);
  return true;
}
}  // namespace

bool operator==(const JournalDelta& a, const JournalDelta& b) {
  return a.kind == b.kind && a.key == b.key && a.version == b.version && a.incarnation == b.incarnation &&
         a.logical == b.logical &&
         a.tier == b.tier && a.physical == b.physical && a.first_block == b.first_block && a.crcs == b.crcs &&
         a.name == b.name && a.value == b.value && a.size == b.size && a.staged == b.staged;
}

uint64_t journal_record_size(const Uuid& fsid, const std::vector<JournalEntryView>& entries) {
  return pad(8 + sealed_record_size(journal_body_size(fsid, entries)));
}

std::string encode_journal_record(const Uuid& fsid, const std::vector<JournalEntryView>& entries) {
  // Built in one buffer of the final size: a group's record carries every
  // batch of the group, and the committer builds it on the commit path,
  // where each extra copy of it is time every writer of the group waits.
  const uint64_t body_size = journal_body_size(fsid, entries);
  const uint64_t sealed_size = sealed_record_size(body_size);
  assert(sealed_size <= UINT32_MAX);
  std::string out;
  out.reserve(pad(8 + sealed_size));
  put_fixed32(&out, kJournalMagicV1);
  put_fixed32(&out, static_cast<uint32_t>(sealed_size));
  append_sealed_record(&out, kJournalTag, 1, body_size, [&](std::string* o) {
    o->append(reinterpret_cast<const char*>(fsid.data()), fsid.size());
    put_varint(o, entries.size());
    for (const auto& e : entries) {
      put_fixed64(o, e.seq);
      put_bytes(o, e.batch);
    }
  });
  out.resize(pad(out.size()), '\0');
  return out;
}

std::string encode_journal_record(const Uuid& fsid, const std::vector<JournalEntry>& entries) {
  return encode_journal_record(fsid, views_of(entries));
}

uint64_t journal_record_v2_size(const Uuid& fsid, const std::vector<JournalEntryView>& entries,
                                size_t data_blocks) {
  return pad(12 + sealed_record_size(v2_body(fsid, entries).size())) + data_blocks * kJournalBlock;
}

std::string encode_journal_record_v2(const Uuid& fsid, const std::vector<JournalEntryView>& entries,
                                     const std::vector<std::string_view>& data) {
  const std::string body = v2_body(fsid, entries);
  const uint64_t sealed_size = sealed_record_size(body.size());
  assert(sealed_size <= UINT32_MAX && data.size() <= UINT32_MAX);
  std::string out;
  out.reserve(pad(12 + sealed_size) + data.size() * kJournalBlock);
  put_fixed32(&out, kJournalMagicV2);
  put_fixed32(&out, static_cast<uint32_t>(sealed_size));
  put_fixed32(&out, static_cast<uint32_t>(data.size()));
  append_sealed_record(&out, kJournalTag, 2, body.size(), [&](std::string* o) { o->append(body); });
  out.resize(pad(out.size()), '\0');
  for (std::string_view b : data) {
    assert(b.size() == kJournalBlock);
    out.append(b);
  }
  return out;
}

std::string encode_journal_record_v2(const Uuid& fsid, const std::vector<JournalEntry>& entries,
                                     const std::vector<std::string_view>& data) {
  return encode_journal_record_v2(fsid, views_of(entries), data);
}

bool decode_journal_record(std::string_view in, const Uuid& fsid, JournalRecord* out, uint64_t* len,
                           std::string* why) {
  if (in.size() < 8) return fail(why, "truncated");
  const uint32_t magic = load_fixed32(in.data());
  uint8_t want;
  size_t fixed;
  if (magic == kJournalMagicV1) {
    want = 1;
    fixed = 8;
  } else if (magic == kJournalMagicV2) {
    want = 2;
    fixed = 12;
  } else {
    return fail(why, "no record magic");
  }
  if (in.size() < fixed) return fail(why, "truncated");
  const uint64_t n = load_fixed32(in.data() + 4);
  if (n > in.size() - fixed) return fail(why, "truncated header");
  const uint64_t header = pad(fixed + n);
  uint64_t data_blocks = 0;
  if (want == 2) {
    data_blocks = load_fixed32(in.data() + 8);
    if (header > in.size() || data_blocks > (in.size() - header) / kJournalBlock)
      return fail(why, "truncated data blocks");
  }
  uint8_t version;
  std::string_view body;
  // The magic says which version the seal must carry: a record of one
  // version under the other's magic is damage, not a record.
  if (RecordError re = open_record(kJournalTag, want, in.substr(fixed, n), &version, &body); re != RecordError::kNone)
    return fail(why, record_error_name(re));
  if (version != want) return fail(why, "version does not match the magic");
  if (body.size() < fsid.size() || std::memcmp(body.data(), fsid.data(), fsid.size()) != 0)
    return fail(why, "another store's record");
  JournalRecord r;
  r.version = version;
  r.data.reserve(data_blocks);
  for (uint64_t i = 0; i < data_blocks; ++i) r.data.push_back(in.substr(header + i * kJournalBlock, kJournalBlock));
  Decoder d(body.substr(fsid.size()));
  if (!decode_entries(d, version, r.data, body.size(), &r.entries, why)) return false;
  *out = std::move(r);
  *len = want == 1 ? pad(8 + n) : header + data_blocks * kJournalBlock;
  return true;
}

bool decode_journal_record(std::string_view in, const Uuid& fsid, std::vector<JournalEntry>* out, uint64_t* len) {
  JournalRecord r;
  if (!decode_journal_record(in, fsid, &r, len)) return false;
  *out = std::move(r.entries);
  return true;
}

std::string encode_journal_tail(const JournalTail& t) {
  std::string body;
  put_varint(&body, t.pos);
  put_varint(&body, t.covered);
  return seal_record(kJournalTailTag, 1, body);
}

int decode_journal_tail(std::string_view in, JournalTail* out, std::string* error) {
  uint8_t version;
  std::string_view body;
  if (int r = open_stored_record(kJournalTailTag, 1, in, "the commit journal's tail", &version, &body, error); r < 0)
    return r;
  Decoder d(body);
  JournalTail t;
  if (!d.get_varint(&t.pos) || !d.get_varint(&t.covered) || !d.done() || t.pos % kJournalBlock != 0 || t.pos > kMaxOffset) {
    if (error) *error = "the commit journal's tail: malformed body";
    return -EIO;
  }
  *out = t;
  return 0;
}

JournalWalk walk_journal_ring(std::string_view ring, const Uuid& fsid, const JournalTail& from, uint64_t held,
                              const std::function<void(JournalRecord&)>& take) {
  JournalWalk w;
  w.last = from.covered;
  const uint64_t size = ring.size();
  // A ring made again since the mark (smaller) starts over at 0.
  uint64_t pos = from.pos < size ? from.pos : 0;
  uint64_t walked = 0;  // bytes from `from` on, wrapped skips included: at most one lap
  auto next_of = [&](uint64_t at, JournalRecord* rec, uint64_t* len) {
    if (!decode_journal_record(ring.substr(at), fsid, rec, len) || rec->entries.empty()) return false;
    for (size_t i = 1; i < rec->entries.size(); ++i)
      if (rec->entries[i].seq != rec->entries[i - 1].seq + 1) return false;
    const uint64_t first = rec->entries.front().seq;
    return first == w.last + 1 || (first > w.last && first <= held + 1);
  };
  for (;;) {
    JournalRecord rec;
    uint64_t len = 0;
    uint64_t at = pos;
    if (!next_of(at, &rec, &len)) {
      at = 0;
      if (pos == 0 || !next_of(at, &rec, &len)) break;
    }
    const uint64_t step = (at == pos ? 0 : size - pos) + len;
    if (walked + step > size) break;
    walked += step;
    w.last = rec.entries.back().seq;
    ++w.records;
    take(rec);
    pos = (at + len) % size;
  }
  w.end = pos;
  return w;
}

}  // namespace hybridstore
