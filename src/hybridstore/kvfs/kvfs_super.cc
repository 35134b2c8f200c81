#include "hybridstore/kvfs/kvfs_super.h"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "hscommon/encoding.h"

namespace hybridstore {

namespace {
constexpr char kSuperMagic[] = "HYBRIDSTORE-KVFS\n";
constexpr size_t kMagicLen = sizeof(kSuperMagic) - 1;
constexpr uint32_t kKvfsSuperTag = 0x4b565342;  // "KVSB"
constexpr uint8_t kSuperVersion = 1;
// Bounds of b: below 512 no device writes; above 1 MiB a slot would be a
// waste of the head, and no device we know aligns that coarsely.
constexpr uint64_t kMinBlock = 512;
constexpr uint64_t kMaxBlock = 1 << 20;

bool is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Why the geometry cannot be one mkfs made, or "" when it can.
std::string geometry_problem(const KvFsSuper& s) {
  if (!is_pow2(s.block) || s.block < kMinBlock || s.block > kMaxBlock)
    return fmt::format("block size {} is not a power of two in [{}, {}]", s.block, kMinBlock, kMaxBlock);
  if (!is_pow2(s.alloc_unit) || s.alloc_unit % s.block != 0)
    return fmt::format("allocation unit {} is not a power-of-two multiple of the block {}", s.alloc_unit, s.block);
  if (s.lend_unit == 0 || s.lend_unit % s.alloc_unit != 0)
    return fmt::format("lend unit {} is not a multiple of the allocation unit {}", s.lend_unit, s.alloc_unit);
  const KvFsExtent& seg = s.log_segment;
  if (seg.length == 0 || seg.offset % s.alloc_unit != 0 || seg.length % s.alloc_unit != 0 ||
      seg.offset + seg.length < seg.offset)
    return fmt::format("log segment {:#x}+{:#x} is not a non-empty range aligned to {}", seg.offset, seg.length,
                       s.alloc_unit);
  return "";
}
}  // namespace

bool KvFsSuper::operator==(const KvFsSuper& o) const {
  return kvfs_uuid == o.kvfs_uuid && fsid == o.fsid && generation == o.generation && block == o.block &&
         alloc_unit == o.alloc_unit && lend_unit == o.lend_unit && log_id == o.log_id &&
         log_first_seq == o.log_first_seq && log_segment == o.log_segment && created_us == o.created_us;
}

int encode_kvfs_super(const KvFsSuper& s, uint64_t slot_size, std::string* out, std::string* why) {
  std::string body;
  body.append(reinterpret_cast<const char*>(s.kvfs_uuid.data()), s.kvfs_uuid.size());
  body.append(reinterpret_cast<const char*>(s.fsid.data()), s.fsid.size());
  put_fixed64(&body, s.generation);
  put_fixed64(&body, s.block);
  put_fixed64(&body, s.alloc_unit);
  put_fixed64(&body, s.lend_unit);
  put_fixed64(&body, s.log_id);
  put_fixed64(&body, s.log_first_seq);
  put_fixed64(&body, s.log_segment.offset);
  put_fixed64(&body, s.log_segment.length);
  put_fixed64(&body, s.created_us);
  const std::string rec = seal_record(kKvfsSuperTag, kSuperVersion, body);
  std::string slot(kSuperMagic, kMagicLen);
  put_fixed32(&slot, static_cast<uint32_t>(rec.size()));
  slot += rec;
  if (slot.size() > slot_size) {
    *why = fmt::format("kvfs superblock needs {} bytes, the slot has {}", slot.size(), slot_size);
    return -EINVAL;
  }
  slot.resize(slot_size, '\0');
  *out = std::move(slot);
  return 0;
}

int decode_kvfs_super(std::string_view slot, KvFsSuper* out, std::string* why) {
  if (slot.size() < kMagicLen + 4 || std::memcmp(slot.data(), kSuperMagic, kMagicLen) != 0) {
    *why = "no kvfs superblock (magic not found)";
    return -EINVAL;
  }
  const uint32_t len = load_fixed32(slot.data() + kMagicLen);
  if (len > slot.size() - kMagicLen - 4) {
    *why = "kvfs superblock length out of range";
    return -EIO;
  }
  uint8_t ver;
  std::string_view body;
  if (int r = open_stored_record(kKvfsSuperTag, kSuperVersion, slot.substr(kMagicLen + 4, len), "kvfs superblock",
                                 &ver, &body, why);
      r < 0)
    return r;
  Decoder d(body);
  KvFsSuper s;
  std::string_view uuid, fsid;
  if (!d.get_raw(16, &uuid) || !d.get_raw(16, &fsid) || !d.get_fixed64(&s.generation) || !d.get_fixed64(&s.block) ||
      !d.get_fixed64(&s.alloc_unit) || !d.get_fixed64(&s.lend_unit) || !d.get_fixed64(&s.log_id) ||
      !d.get_fixed64(&s.log_first_seq) || !d.get_fixed64(&s.log_segment.offset) ||
      !d.get_fixed64(&s.log_segment.length) || !d.get_fixed64(&s.created_us) || !d.done()) {
    *why = "kvfs superblock body malformed";
    return -EIO;
  }
  std::memcpy(s.kvfs_uuid.data(), uuid.data(), 16);
  std::memcpy(s.fsid.data(), fsid.data(), 16);
  if (std::string problem = geometry_problem(s); !problem.empty()) {
    *why = "kvfs superblock: " + problem;
    return -EIO;
  }
  *out = s;
  return 0;
}

int write_kvfs_super(BlockDevice* dev, const KvFsSuperSlotsAt& at, const KvFsSuper& s, std::string* why) {
  std::string enc;
  if (int r = encode_kvfs_super(s, at.slot_size, &enc, why); r < 0) return r;
  const uint64_t slot = s.generation % kKvFsSuperSlots;
  AlignedBuffer buf(at.slot_size);
  std::memcpy(buf.data(), enc.data(), at.slot_size);
  const uint64_t off = at.first_offset + slot * at.slot_size;
  if (int r = dev->write_durable(off, buf.data(), at.slot_size); r < 0) {
    *why = fmt::format("cannot write kvfs superblock slot {} of {}: {}", slot, dev->path(), strerror(-r));
    return r;
  }
  return 0;
}

namespace {
KvFsSlotReport read_slot(BlockDevice* dev, const KvFsSuperSlotsAt& at, uint32_t slot, const Uuid& kvfs_uuid,
                         const Uuid& fsid) {
  KvFsSlotReport rep;
  const uint64_t off = at.first_offset + slot * at.slot_size;
  if (at.slot_size == 0 || off + at.slot_size > dev->size()) {
    rep.result = -EINVAL;
    rep.why = fmt::format("slot at {:#x} lies beyond the device ({} bytes)", off, dev->size());
    return rep;
  }
  AlignedBuffer buf(at.slot_size);
  if (int r = dev->read(off, buf.data(), at.slot_size); r < 0) {
    rep.result = r;
    rep.why = fmt::format("cannot read: {}", strerror(-r));
    return rep;
  }
  rep.result = decode_kvfs_super(std::string_view(buf.data(), at.slot_size), &rep.super, &rep.why);
  if (rep.result < 0) return rep;
  if (rep.super.generation % kKvFsSuperSlots != slot) {
    rep.result = -EIO;
    rep.why = fmt::format("generation {} does not belong in this slot", rep.super.generation);
  } else if (rep.super.kvfs_uuid != kvfs_uuid) {
    rep.result = -EIO;
    rep.why = fmt::format("belongs to another kvfs ({}, expected {})", uuid_to_string(rep.super.kvfs_uuid),
                          uuid_to_string(kvfs_uuid));
  } else if (rep.super.fsid != fsid) {
    rep.result = -EIO;
    rep.why = fmt::format("belongs to another store (fsid {}, expected {})", uuid_to_string(rep.super.fsid),
                          uuid_to_string(fsid));
  }
  return rep;
}
}  // namespace

bool kvfs_slot_blank(BlockDevice* dev, const KvFsSuperSlotsAt& at, uint32_t slot) {
  const uint64_t off = at.first_offset + slot * at.slot_size;
  if (at.slot_size == 0 || off + at.slot_size > dev->size() || off + at.slot_size < off) return false;
  AlignedBuffer buf(at.slot_size);
  if (dev->read(off, buf.data(), at.slot_size) < 0) return false;
  for (uint64_t i = 0; i < at.slot_size; ++i)
    if (buf.data()[i] != 0) return false;
  return true;
}

int read_kvfs_super(BlockDevice* dev, const KvFsSuperSlotsAt& at, const Uuid& kvfs_uuid, const Uuid& fsid,
                    KvFsSuper* out, std::string* why, std::array<KvFsSlotReport, kKvFsSuperSlots>* slots) {
  std::array<KvFsSlotReport, kKvFsSuperSlots> reps;
  int best = -1;
  for (uint32_t i = 0; i < kKvFsSuperSlots; ++i) {
    reps[i] = read_slot(dev, at, i, kvfs_uuid, fsid);
    if (reps[i].result == 0 && (best < 0 || reps[i].super.generation > reps[best].super.generation))
      best = static_cast<int>(i);
  }
  if (slots) *slots = reps;
  if (best < 0) {
    *why = fmt::format("kvfs superblock unreadable on {}: slot 0: {}; slot 1: {}", dev->path(), reps[0].why,
                       reps[1].why);
    return -EIO;
  }
  *out = reps[best].super;
  return 0;
}

}  // namespace hybridstore
