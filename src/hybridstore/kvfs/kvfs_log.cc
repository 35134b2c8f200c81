#include "hybridstore/kvfs/kvfs_log.h"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "hscommon/encoding.h"
#include "hybridstore/kvfs/kvfs_state.h"

namespace hybridstore {

namespace {
constexpr uint32_t kGroupMagic = 0x564b5348;     // "HSKV" as it reads on the device
constexpr uint32_t kKvfsGroupTag = 0x4b564c47;   // "KVLG"
constexpr uint8_t kGroupVersion = 1;
constexpr uint64_t kGroupHeader = 8;             // magic and n
// Bound of an inline tail: below the largest block a superblock accepts.
constexpr uint64_t kMaxTail = (1 << 20) - 1;

uint64_t align_up(uint64_t v, uint64_t unit) { return (v + unit - 1) / unit * unit; }

void put_extents(std::string* out, const std::vector<KvFsExtent>& es) {
  put_varint(out, es.size());
  for (const KvFsExtent& e : es) {
    put_varint(out, e.offset);
    put_varint(out, e.length);
  }
}

bool get_extent(Decoder* d, KvFsExtent* e) { return d->get_varint(&e->offset) && d->get_varint(&e->length); }

bool get_extents(Decoder* d, std::vector<KvFsExtent>* es) {
  uint64_t n;
  // Each extent takes at least two bytes: a count beyond that is garbage,
  // and must not size an allocation.
  if (!d->get_varint(&n) || n > d->remaining() / 2) return d->fail();
  es->resize(n);
  for (KvFsExtent& e : *es)
    if (!get_extent(d, &e)) return false;
  return true;
}

bool get_name(Decoder* d, std::string* s) { return d->get_bytes(s, kKvFsMaxName); }

void encode_fields(const KvRecord& rec, std::string* out) {
  std::visit(
      [out](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, KvInit>) {
          out->append(reinterpret_cast<const char*>(r.kvfs_uuid.data()), r.kvfs_uuid.size());
          put_varint(out, r.block);
          put_varint(out, r.alloc_unit);
          put_varint(out, r.lend_unit);
        } else if constexpr (std::is_same_v<T, KvGrant> || std::is_same_v<T, KvReturn>) {
          put_varint(out, r.chunk.offset);
          put_varint(out, r.chunk.length);
        } else if constexpr (std::is_same_v<T, KvNext>) {
          put_varint(out, r.segment.offset);
          put_varint(out, r.segment.length);
        } else if constexpr (std::is_same_v<T, KvMkdir> || std::is_same_v<T, KvRmdir>) {
          put_bytes(out, r.dir);
        } else if constexpr (std::is_same_v<T, KvCreate>) {
          put_bytes(out, r.dir);
          put_bytes(out, r.name);
          put_varint(out, r.ino);
        } else if constexpr (std::is_same_v<T, KvUpdate>) {
          put_varint(out, r.ino);
          put_varint(out, r.size);
          put_varint(out, r.mtime);
          put_varint(out, r.keep);
          put_extents(out, r.extents);
          put_u8(out, static_cast<uint8_t>(r.tail_kind));
          if (r.tail_kind == KvTailKind::kInline) put_bytes(out, r.tail);
        } else if constexpr (std::is_same_v<T, KvRename>) {
          put_bytes(out, r.src_dir);
          put_bytes(out, r.src);
          put_bytes(out, r.dst_dir);
          put_bytes(out, r.dst);
        } else if constexpr (std::is_same_v<T, KvUnlink>) {
          put_bytes(out, r.dir);
          put_bytes(out, r.name);
        } else if constexpr (std::is_same_v<T, KvJournal>) {
          put_extents(out, r.extents);
        } else {
          static_assert(std::is_same_v<T, KvSnapshotDone>);
        }
      },
      rec);
}

// One case per op, each the mirror of its encoder above: side by side, the
// pairs are easy to check against each other.
bool decode_fields(KvOp op, std::string_view fields, KvRecord* out) {
  Decoder d(fields);
  switch (op) {
    case KvOp::kInit: {
      KvInit r;
      std::string_view uuid;
      if (!d.get_raw(16, &uuid) || !d.get_varint(&r.block) || !d.get_varint(&r.alloc_unit) ||
          !d.get_varint(&r.lend_unit))
        return false;
      std::memcpy(r.kvfs_uuid.data(), uuid.data(), 16);
      *out = r;
      break;
    }
    case KvOp::kGrant: {
      KvGrant r;
      if (!get_extent(&d, &r.chunk)) return false;
      *out = r;
      break;
    }
    case KvOp::kReturn: {
      KvReturn r;
      if (!get_extent(&d, &r.chunk)) return false;
      *out = r;
      break;
    }
    case KvOp::kNext: {
      KvNext r;
      if (!get_extent(&d, &r.segment)) return false;
      *out = r;
      break;
    }
    case KvOp::kMkdir: {
      KvMkdir r;
      if (!get_name(&d, &r.dir)) return false;
      *out = r;
      break;
    }
    case KvOp::kRmdir: {
      KvRmdir r;
      if (!get_name(&d, &r.dir)) return false;
      *out = r;
      break;
    }
    case KvOp::kCreate: {
      KvCreate r;
      if (!get_name(&d, &r.dir) || !get_name(&d, &r.name) || !d.get_varint(&r.ino)) return false;
      *out = r;
      break;
    }
    case KvOp::kUpdate: {
      KvUpdate r;
      uint8_t kind;
      if (!d.get_varint(&r.ino) || !d.get_varint(&r.size) || !d.get_varint(&r.mtime) || !d.get_varint(&r.keep) ||
          !get_extents(&d, &r.extents) || !d.get_u8(&kind) || kind > static_cast<uint8_t>(KvTailKind::kInData))
        return false;
      r.tail_kind = static_cast<KvTailKind>(kind);
      if (r.tail_kind == KvTailKind::kInline && !d.get_bytes(&r.tail, kMaxTail)) return false;
      *out = std::move(r);
      break;
    }
    case KvOp::kRename: {
      KvRename r;
      if (!get_name(&d, &r.src_dir) || !get_name(&d, &r.src) || !get_name(&d, &r.dst_dir) || !get_name(&d, &r.dst))
        return false;
      *out = r;
      break;
    }
    case KvOp::kUnlink: {
      KvUnlink r;
      if (!get_name(&d, &r.dir) || !get_name(&d, &r.name)) return false;
      *out = r;
      break;
    }
    case KvOp::kJournal: {
      KvJournal r;
      if (!get_extents(&d, &r.extents)) return false;
      *out = r;
      break;
    }
    case KvOp::kSnapshotDone:
      *out = KvSnapshotDone();
      break;
  }
  return d.done();
}

bool known_op(uint8_t op) { return op >= 1 && op <= static_cast<uint8_t>(KvOp::kSnapshotDone); }

std::string encode_body(const KvGroup& g) {
  std::string body;
  put_fixed64(&body, g.log_id);
  put_fixed64(&body, g.first_seq);
  put_varint(&body, g.records.size());
  std::string fields;
  for (const KvRecord& r : g.records) {
    fields.clear();
    encode_fields(r, &fields);
    put_u8(&body, static_cast<uint8_t>(kv_record_op(r)));
    put_bytes(&body, fields);
  }
  return body;
}
}  // namespace

const char* kv_op_name(KvOp op) {
  switch (op) {
    case KvOp::kInit: return "INIT";
    case KvOp::kGrant: return "GRANT";
    case KvOp::kReturn: return "RETURN";
    case KvOp::kNext: return "NEXT";
    case KvOp::kMkdir: return "MKDIR";
    case KvOp::kRmdir: return "RMDIR";
    case KvOp::kCreate: return "CREATE";
    case KvOp::kUpdate: return "UPDATE";
    case KvOp::kRename: return "RENAME";
    case KvOp::kUnlink: return "UNLINK";
    case KvOp::kJournal: return "JOURNAL";
    case KvOp::kSnapshotDone: return "SNAPSHOT_DONE";
  }
  return "unknown";
}

KvOp kv_record_op(const KvRecord& r) { return static_cast<KvOp>(r.index() + 1); }

bool KvInit::operator==(const KvInit& o) const {
  return kvfs_uuid == o.kvfs_uuid && block == o.block && alloc_unit == o.alloc_unit && lend_unit == o.lend_unit;
}
bool KvUpdate::operator==(const KvUpdate& o) const {
  return ino == o.ino && size == o.size && mtime == o.mtime && keep == o.keep && extents == o.extents &&
         tail_kind == o.tail_kind && tail == o.tail;
}
bool KvRename::operator==(const KvRename& o) const {
  return src_dir == o.src_dir && src == o.src && dst_dir == o.dst_dir && dst == o.dst;
}

uint64_t kvfs_group_size(const KvGroup& g, uint64_t block) {
  return align_up(kGroupHeader + sealed_record_size(encode_body(g).size()), block);
}

std::string encode_kvfs_group(const KvGroup& g, uint64_t block) {
  const std::string rec = seal_record(kKvfsGroupTag, kGroupVersion, encode_body(g));
  std::string out;
  put_fixed32(&out, kGroupMagic);
  put_fixed32(&out, static_cast<uint32_t>(rec.size()));
  out += rec;
  out.resize(align_up(out.size(), block), '\0');
  return out;
}

int decode_kvfs_group(std::string_view in, uint64_t block, KvGroup* out, uint64_t* padded_len, std::string* why) {
  if (in.size() < kGroupHeader || load_fixed32(in.data()) != kGroupMagic) {
    *why = "no kvfs log group (magic not found)";
    return -EIO;
  }
  const uint32_t n = load_fixed32(in.data() + 4);
  if (n > in.size() - kGroupHeader) {
    *why = "kvfs log group length out of range";
    return -EIO;
  }
  uint8_t ver;
  std::string_view body;
  if (int r = open_stored_record(kKvfsGroupTag, kGroupVersion, in.substr(kGroupHeader, n), "kvfs log group", &ver,
                                 &body, why);
      r < 0)
    return r;
  Decoder d(body);
  KvGroup g;
  uint64_t count;
  // A record takes at least two bytes (op and length).
  if (!d.get_fixed64(&g.log_id) || !d.get_fixed64(&g.first_seq) || !d.get_varint(&count) ||
      count > d.remaining() / 2 || g.first_seq + count < g.first_seq) {
    *why = "kvfs log group header malformed";
    return -EIO;
  }
  g.records.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    uint8_t op;
    std::string_view fields;
    if (!d.get_u8(&op) || !d.get_bytes_view(&fields)) {
      *why = fmt::format("kvfs log group: record {} of {} truncated", i, count);
      return -EIO;
    }
    if (!known_op(op)) {
      *why = fmt::format("kvfs log seq {}: record op {} unknown, written by a newer build", g.first_seq + i, op);
      return -EOPNOTSUPP;
    }
    KvRecord rec;
    if (!decode_fields(static_cast<KvOp>(op), fields, &rec)) {
      *why = fmt::format("kvfs log seq {}: {} record malformed", g.first_seq + i, kv_op_name(static_cast<KvOp>(op)));
      return -EIO;
    }
    g.records.push_back(std::move(rec));
  }
  if (!d.done()) {
    *why = "kvfs log group: bytes after its records";
    return -EIO;
  }
  *padded_len = align_up(kGroupHeader + n, block);
  *out = std::move(g);
  return 0;
}

// ---- writer

KvFsLogWriter::KvFsLogWriter(BlockDevice* dev, uint64_t block, uint64_t log_id, KvFsExtent segment,
                             uint64_t position, uint64_t next_seq, SegmentSource next_segment)
    : dev_(dev),
      block_(block),
      log_id_(log_id),
      segment_(segment),
      position_(position),
      next_seq_(next_seq),
      next_segment_(std::move(next_segment)),
      next_group_room_(kvfs_group_size(KvGroup{UINT64_MAX, UINT64_MAX, {KvNext{{UINT64_MAX, UINT64_MAX}}}}, block)) {}

int KvFsLogWriter::write_group(const KvGroup& g, std::string* why) {
  const std::string enc = encode_kvfs_group(g, block_);
  AlignedBuffer buf(enc.size(), 4096, AlignedBuffer::kUninitialized);
  std::memcpy(buf.data(), enc.data(), enc.size());
  int r = dev_->flush();
  if (r == 0) r = dev_->write_durable(position_, buf.data(), enc.size());
  if (r < 0) {
    *why = fmt::format("kvfs log: cannot write the group of seq {} at {:#x} on {}: {}", g.first_seq, position_,
                       dev_->path(), strerror(-r));
    return r;
  }
  position_ += enc.size();
  return 0;
}

int KvFsLogWriter::append_group(const std::vector<KvRecord>& records, std::vector<KvLoggedRecord>* logged,
                                std::string* why) {
  if (records.empty()) return 0;
  KvGroup g{log_id_, next_seq_, records};
  const uint64_t size = kvfs_group_size(g, block_);
  if (position_ + size + next_group_room_ > segment_.end()) {
    KvFsExtent seg;
    if (int r = next_segment_(&seg, why); r < 0) return r;
    if (seg.offset % block_ != 0 || seg.length % block_ != 0 || size + next_group_room_ > seg.length) {
      *why = fmt::format("kvfs log: a group of {} bytes (and room for NEXT) does not fit in segment {:#x}+{:#x}",
                         size, seg.offset, seg.length);
      return -EFBIG;
    }
    KvGroup next{log_id_, next_seq_, {KvNext{seg}}};
    if (int r = write_group(next, why); r < 0) return r;
    if (logged) logged->push_back({next_seq_, next.records.front()});
    ++next_seq_;
    segment_ = seg;
    position_ = seg.offset;
    g.first_seq = next_seq_;
  }
  if (int r = write_group(g, why); r < 0) return r;
  for (const KvRecord& rec : records) {
    if (logged) logged->push_back({next_seq_, rec});
    ++next_seq_;
  }
  return 0;
}

// ---- replay

namespace {
// The first valid group of log `log_id` with a seq at or past `expected` in
// seg[from, end), or -1.
int64_t find_later_group(std::string_view seg, uint64_t from, uint64_t block, uint64_t log_id, uint64_t expected,
                         uint64_t* seq) {
  for (uint64_t p = from; p + block <= seg.size(); p += block) {
    KvGroup g;
    uint64_t len;
    std::string why;
    if (decode_kvfs_group(seg.substr(p), block, &g, &len, &why) == 0 && g.log_id == log_id &&
        g.first_seq >= expected) {
      *seq = g.first_seq;
      return static_cast<int64_t>(p);
    }
  }
  return -1;
}
}  // namespace

// The replay loop of docs/kvfs.md 3.2 (follow NEXT, stop at the first bad
// group, then look past it for later records) as one piece; decoding and
// checking live in decode_kvfs_group and KvFsState.
int replay_kvfs_log(BlockDevice* dev, const KvFsSuper& super, KvFsState* state, KvFsLogEnd* end, std::string* why,
                    std::vector<KvLoggedRecord>* records) {
  if (int r = state->begin_log(super.log_segment, why); r < 0) return r;
  KvFsExtent seg = super.log_segment;
  uint64_t expected = super.log_first_seq;
  uint64_t groups = 0;
  for (;;) {
    if (seg.end() > dev->size()) {
      *why = fmt::format("kvfs log segment {:#x}+{:#x} lies beyond the device ({} bytes)", seg.offset, seg.length,
                         dev->size());
      return -EIO;
    }
    AlignedBuffer buf(seg.length, 4096, AlignedBuffer::kUninitialized);
    if (int r = dev->read(seg.offset, buf.data(), seg.length); r < 0) {
      *why = fmt::format("cannot read kvfs log segment {:#x}+{:#x}: {}", seg.offset, seg.length, strerror(-r));
      return r;
    }
    const std::string_view bytes(buf.data(), seg.length);
    uint64_t pos = 0;
    bool next_segment = false;
    while (pos + super.block <= bytes.size()) {
      KvGroup g;
      uint64_t len;
      std::string gwhy;
      const int r = decode_kvfs_group(bytes.substr(pos), super.block, &g, &len, &gwhy);
      if (r == -EOPNOTSUPP) {
        *why = fmt::format("kvfs log at offset {:#x}: {}", seg.offset + pos, gwhy);
        return r;
      }
      if (r < 0 || g.log_id != super.log_id || g.first_seq != expected) break;
      for (size_t i = 0; i < g.records.size(); ++i) {
        const uint64_t seq = g.first_seq + i;
        if (kv_record_op(g.records[i]) == KvOp::kNext && i + 1 != g.records.size()) {
          *why = fmt::format("kvfs log seq {} (NEXT): not the last record of its group", seq);
          return -EIO;
        }
        if (int ar = state->apply(g.records[i], seq, why); ar < 0) return ar;
        if (records) records->push_back(KvLoggedRecord{seq, g.records[i]});
      }
      expected += g.records.size();
      ++groups;
      pos += len;
      if (!g.records.empty() && kv_record_op(g.records.back()) == KvOp::kNext) {
        seg = std::get<KvNext>(g.records.back()).segment;
        next_segment = true;
        break;
      }
    }
    if (next_segment) continue;
    uint64_t later_seq = 0;
    const int64_t later = find_later_group(bytes, pos + super.block, super.block, super.log_id, expected, &later_seq);
    if (later >= 0) {
      *why = fmt::format(
          "kvfs log damaged at offset {:#x}; later records exist (a valid group of seq {} at offset {:#x})",
          seg.offset + pos, later_seq, seg.offset + static_cast<uint64_t>(later));
      return -EIO;
    }
    if (int r = state->finish(why); r < 0) return r;
    *end = KvFsLogEnd{seg, seg.offset + pos, expected, groups};
    return 0;
  }
}

}  // namespace hybridstore
