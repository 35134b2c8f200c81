#include "hybridstore/kvfs/kvfs_inspect.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <type_traits>

#include <fmt/format.h>

namespace hybridstore {

namespace {
std::string ext(const KvFsExtent& e) { return fmt::format("{:#x}+{:#x}", e.offset, e.length); }

std::string exts(const std::vector<KvFsExtent>& v) {
  std::string s;
  for (const KvFsExtent& e : v) s += (s.empty() ? "" : " ") + ext(e);
  return s.empty() ? "-" : s;
}

const char* tail_name(KvTailKind k) {
  switch (k) {
    case KvTailKind::kNone: return "none";
    case KvTailKind::kInline: return "inline";
    case KvTailKind::kInData: return "in-data";
  }
  return "?";
}
}  // namespace

int inspect_kvfs(BlockDevice* dev, const KvFsParams& params, const Uuid& kvfs_uuid, const Uuid& fsid,
                 bool with_records, KvFsInspection* out, std::string* why) {
  if (params.slots.slot_size == 0) {
    *why = "the kvfs's superblock slots have no size";
    return -EINVAL;
  }
  // A garbage length can still make an allocation fail; an inspection of a
  // damaged device must say so, not die of it.
  try {
    if (int r = read_kvfs_super(dev, params.slots, kvfs_uuid, fsid, &out->super, why, &out->slots); r < 0)
      return r;
    for (uint32_t i = 0; i < kKvFsSuperSlots; ++i) out->slot_blank[i] = kvfs_slot_blank(dev, params.slots, i);
    const KvFsSuper& s = out->super;
    out->geometry = KvFsGeometry{s.block, s.alloc_unit, s.lend_unit, params.head, dev->size()};
    out->state = std::make_unique<KvFsState>(kvfs_uuid, out->geometry);
    KvFsLogEnd end;
    std::string rwhy;
    if (replay_kvfs_log(dev, s, out->state.get(), &end, &rwhy, with_records ? &out->records : nullptr) < 0)
      out->damage = rwhy;
  } catch (const std::exception& e) {
    *why = fmt::format("reading the kvfs stopped: {}", e.what());
    return -EIO;
  }
  return 0;
}

std::string describe_kv_record(const KvRecord& record) {
  return std::visit(
      [](const auto& r) -> std::string {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, KvInit>)
          return fmt::format("INIT uuid {} b {} A {} G {}", uuid_to_string(r.kvfs_uuid), r.block, r.alloc_unit,
                             r.lend_unit);
        else if constexpr (std::is_same_v<T, KvGrant>)
          return "GRANT " + ext(r.chunk);
        else if constexpr (std::is_same_v<T, KvReturn>)
          return "RETURN " + ext(r.chunk);
        else if constexpr (std::is_same_v<T, KvNext>)
          return "NEXT " + ext(r.segment);
        else if constexpr (std::is_same_v<T, KvMkdir>)
          return "MKDIR " + r.dir;
        else if constexpr (std::is_same_v<T, KvRmdir>)
          return "RMDIR " + r.dir;
        else if constexpr (std::is_same_v<T, KvCreate>)
          return fmt::format("CREATE {}/{} ino {}", r.dir, r.name, r.ino);
        else if constexpr (std::is_same_v<T, KvUpdate>)
          return fmt::format("UPDATE ino {} size {} mtime {} keep {} extents {} tail {}{}", r.ino, r.size, r.mtime,
                             r.keep, exts(r.extents), tail_name(r.tail_kind),
                             r.tail_kind == KvTailKind::kInline ? fmt::format(" ({} bytes)", r.tail.size()) : "");
        else if constexpr (std::is_same_v<T, KvRename>)
          return fmt::format("RENAME {}/{} -> {}/{}", r.src_dir, r.src, r.dst_dir, r.dst);
        else if constexpr (std::is_same_v<T, KvUnlink>)
          return fmt::format("UNLINK {}/{}", r.dir, r.name);
        else if constexpr (std::is_same_v<T, KvJournal>)
          return "JOURNAL " + exts(r.extents);
        else
          return "SNAPSHOT_DONE";
      },
      record);
}

int read_kvfs_inode(BlockDevice* dev, const KvFsState& state, uint64_t block, uint64_t ino, std::string* out,
                    std::string* why) {
  auto it = state.inodes().find(ino);
  if (it == state.inodes().end()) {
    *why = fmt::format("no inode {}", ino);
    return -ENOENT;
  }
  const KvInode& i = it->second;
  // An inline tail holds the last partial block; the extents the rest.
  const uint64_t in_data = i.tail_kind == KvTailKind::kInline ? i.size / block * block : i.size;
  if (i.tail_kind == KvTailKind::kInline && i.tail.size() != i.size - in_data) {
    *why = fmt::format("inode {}: an inline tail of {} bytes for a size of {}", ino, i.tail.size(), i.size);
    return -EIO;
  }
  out->clear();
  out->reserve(i.size);
  uint64_t pos = 0;
  for (const KvFsExtent& e : i.extents) {
    if (pos >= in_data) break;
    const uint64_t want = std::min(e.length, in_data - pos);
    const uint64_t len = (want + block - 1) / block * block;  // the device reads whole blocks
    if (e.end() > dev->size() || len > e.length) {
      *why = fmt::format("inode {}: extent {} lies beyond the device", ino, ext(e));
      return -EIO;
    }
    AlignedBuffer buf(len, 4096, AlignedBuffer::kUninitialized);
    if (int r = dev->read(e.offset, buf.data(), len); r < 0) {
      *why = fmt::format("inode {}: bytes [{:#x}, {:#x}) at {} cannot be read: {}", ino, pos, pos + want, ext(e),
                         strerror(-r));
      return -EIO;
    }
    out->append(buf.data(), want);
    pos += want;
  }
  if (pos < in_data) {
    *why = fmt::format("inode {}: its extents hold {} of its {} bytes", ino, pos, in_data);
    return -EIO;
  }
  if (i.tail_kind == KvTailKind::kInline) out->append(i.tail);
  return 0;
}

}  // namespace hybridstore
