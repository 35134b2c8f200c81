#include "hybridstore/kvfs/kvfs_state.h"

#include <algorithm>
#include <cerrno>
#include <set>

#include <fmt/format.h>

namespace hybridstore {

namespace {
std::string extent_str(const KvFsExtent& e) { return fmt::format("{:#x}+{:#x}", e.offset, e.length); }

bool valid_name(const std::string& n) { return !n.empty() && n.size() <= kKvFsMaxName; }

const char* owner_name(uint64_t ino) {
  if (ino == kKvFsLogIno) return "the log";
  if (ino == kKvFsJournalIno) return "the journal ring";
  return "inode";
}

std::string owner_str(uint64_t ino) {
  return ino >= kKvFsFirstFileIno ? fmt::format("inode {}", ino) : owner_name(ino);
}
}  // namespace

KvFsState::KvFsState(const Uuid& kvfs_uuid, const KvFsGeometry& geometry) : kvfs_uuid_(kvfs_uuid), geo_(geometry) {}

bool KvFsState::owned(const KvFsExtent& e) const {
  auto it = chunks_.upper_bound(e.offset);
  if (it == chunks_.begin()) return false;
  --it;
  return e.end() <= it->first + it->second;
}

bool KvFsState::overlaps_chunk(const KvFsExtent& e) const {
  auto it = chunks_.lower_bound(e.end());
  if (it == chunks_.begin()) return false;
  --it;
  return it->first + it->second > e.offset;
}

bool KvFsState::overlaps_use(const KvFsExtent& e, const std::set<uint64_t>& released, uint64_t* owner) const {
  auto it = used_.upper_bound(e.offset);
  if (it != used_.begin()) --it;
  for (; it != used_.end() && it->first < e.end(); ++it) {
    if (it->first + it->second.length <= e.offset || released.count(it->first)) continue;
    *owner = it->second.ino;
    return true;
  }
  return false;
}

// Shape and ownership of one extent a record hands to the log, the ring or a
// file: A-aligned, non-empty, inside the kvfs's chunks.
int KvFsState::check_extent(const KvFsExtent& e, std::string* problem) const {
  if (e.length == 0 || e.offset % geo_.alloc_unit != 0 || e.length % geo_.alloc_unit != 0 || e.end() < e.offset) {
    *problem = fmt::format("extent {} is not a non-empty range aligned to {}", extent_str(e), geo_.alloc_unit);
    return -EIO;
  }
  if (!owned(e)) {
    *problem = fmt::format("extent {} is outside the kvfs's chunks", extent_str(e));
    return -EIO;
  }
  return 0;
}

// check_extent for each, and no block of two of them or of one of them and
// a block in use, other than those `released` (offsets of used extents the
// record itself gives up).
int KvFsState::check_extents(const std::vector<KvFsExtent>& es, const std::set<uint64_t>& released,
                             std::string* problem) const {
  std::vector<KvFsExtent> sorted;
  for (const KvFsExtent& e : es) {
    if (int r = check_extent(e, problem); r < 0) return r;
    uint64_t owner = 0;
    if (overlaps_use(e, released, &owner)) {
      *problem = fmt::format("extent {} has two owners: it is in use by {}", extent_str(e), owner_str(owner));
      return -EIO;
    }
    sorted.push_back(e);
  }
  std::sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.offset < b.offset; });
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i - 1].end() > sorted[i].offset) {
      *problem = fmt::format("extents {} and {} of one record overlap", extent_str(sorted[i - 1]),
                             extent_str(sorted[i]));
      return -EIO;
    }
  }
  return 0;
}

void KvFsState::drop_inode(uint64_t ino) {
  auto it = inodes_.find(ino);
  if (it == inodes_.end()) return;
  for (const KvFsExtent& e : it->second.extents) used_.erase(e.offset);
  inodes_.erase(it);
}

int KvFsState::begin_log(const KvFsExtent& segment, std::string* why) {
  if (segment.length == 0 || segment.offset % geo_.alloc_unit != 0 || segment.length % geo_.alloc_unit != 0 ||
      segment.end() < segment.offset || segment.end() > geo_.device_size) {
    *why = fmt::format("kvfs log: first segment {} is not an A-aligned range of the device", extent_str(segment));
    return -EIO;
  }
  used_[segment.offset] = Use{segment.length, kKvFsLogIno};
  log_segments_.push_back(segment);
  return 0;
}

int KvFsState::apply(const KvRecord& record, uint64_t seq, std::string* why) {
  std::string problem;
  int r = apply_checked(record, seq, &problem);
  if (r < 0) *why = fmt::format("kvfs log seq {} ({}): {}", seq, kv_op_name(kv_record_op(record)), problem);
  return r;
}

// One dispatch over every op keeps the "is this record allowed here at all"
// rules (INIT first, once; SNAPSHOT_DONE once) in one place; the ops with
// more to check have handlers of their own.
int KvFsState::apply_checked(const KvRecord& record, uint64_t seq, std::string* problem) {
  const KvOp op = kv_record_op(record);
  if (!seen_init_ && op != KvOp::kInit) {
    *problem = "the log does not start with INIT";
    return -EIO;
  }
  switch (op) {
    case KvOp::kInit: {
      const auto& r = std::get<KvInit>(record);
      if (seen_init_) {
        *problem = "a second INIT";
        return -EIO;
      }
      if (r.kvfs_uuid != kvfs_uuid_ || r.block != geo_.block || r.alloc_unit != geo_.alloc_unit ||
          r.lend_unit != geo_.lend_unit) {
        *problem = fmt::format("INIT of kvfs {} (b {}, A {}, G {}) does not match the superblock's {} ({}, {}, {})",
                               uuid_to_string(r.kvfs_uuid), r.block, r.alloc_unit, r.lend_unit,
                               uuid_to_string(kvfs_uuid_), geo_.block, geo_.alloc_unit, geo_.lend_unit);
        return -EIO;
      }
      seen_init_ = true;
      return 0;
    }
    case KvOp::kGrant: return on_grant(std::get<KvGrant>(record), problem);
    case KvOp::kReturn: return on_return(std::get<KvReturn>(record), problem);
    case KvOp::kNext: return on_next(std::get<KvNext>(record), problem);
    case KvOp::kMkdir: {
      const auto& r = std::get<KvMkdir>(record);
      if (!valid_name(r.dir) || dirs_.count(r.dir)) {
        *problem = fmt::format("directory '{}' is not a valid new directory", r.dir);
        return -EIO;
      }
      dirs_[r.dir];
      return 0;
    }
    case KvOp::kRmdir: {
      const auto& r = std::get<KvRmdir>(record);
      auto it = dirs_.find(r.dir);
      if (it == dirs_.end() || !it->second.empty()) {
        *problem = fmt::format("directory '{}' {}", r.dir, it == dirs_.end() ? "does not exist" : "is not empty");
        return -EIO;
      }
      dirs_.erase(it);
      return 0;
    }
    case KvOp::kCreate: return on_create(std::get<KvCreate>(record), problem);
    case KvOp::kUpdate: return on_update(std::get<KvUpdate>(record), problem);
    case KvOp::kRename: return on_rename(std::get<KvRename>(record), problem);
    case KvOp::kUnlink: return on_unlink(std::get<KvUnlink>(record), problem);
    case KvOp::kJournal: return on_journal(std::get<KvJournal>(record), problem);
    case KvOp::kSnapshotDone:
      if (snapshot_done_) {
        *problem = "a second SNAPSHOT_DONE";
        return -EIO;
      }
      snapshot_done_ = true;
      return 0;
  }
  *problem = fmt::format("op {} unknown", static_cast<int>(op));
  return -EIO;
}

int KvFsState::on_grant(const KvGrant& r, std::string* problem) {
  const KvFsExtent& c = r.chunk;
  if (c.length == 0 || c.offset % geo_.lend_unit != 0 || c.length % geo_.lend_unit != 0 || c.end() < c.offset ||
      c.offset < geo_.head || c.end() > geo_.device_size) {
    *problem = fmt::format("chunk {} is not a {}-aligned range inside [{:#x}, {:#x})", extent_str(c), geo_.lend_unit,
                           geo_.head, geo_.device_size);
    return -EIO;
  }
  if (overlaps_chunk(c)) {
    *problem = fmt::format("chunk {} overlaps a chunk the kvfs owns already", extent_str(c));
    return -EIO;
  }
  KvFsExtent merged = c;
  auto next = chunks_.find(c.end());
  if (next != chunks_.end()) {
    merged.length += next->second;
    chunks_.erase(next);
  }
  auto it = chunks_.lower_bound(c.offset);
  if (it != chunks_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == c.offset) {
      prev->second += merged.length;
      return 0;
    }
  }
  chunks_[merged.offset] = merged.length;
  return 0;
}

int KvFsState::on_return(const KvReturn& r, std::string* problem) {
  const KvFsExtent& c = r.chunk;
  if (c.length == 0 || c.offset % geo_.lend_unit != 0 || c.length % geo_.lend_unit != 0 || c.end() < c.offset) {
    *problem = fmt::format("chunk {} is not a non-empty {}-aligned range", extent_str(c), geo_.lend_unit);
    return -EIO;
  }
  if (!owned(c)) {
    *problem = fmt::format("chunk {} is not wholly the kvfs's", extent_str(c));
    return -EIO;
  }
  uint64_t owner = 0;
  if (overlaps_use(c, {}, &owner)) {
    *problem = fmt::format("chunk {} is in use by {}", extent_str(c), owner_str(owner));
    return -EIO;
  }
  auto it = std::prev(chunks_.upper_bound(c.offset));
  const uint64_t start = it->first, end = it->first + it->second;
  chunks_.erase(it);
  if (start < c.offset) chunks_[start] = c.offset - start;
  if (c.end() < end) chunks_[c.end()] = end - c.end();
  return 0;
}

int KvFsState::on_next(const KvNext& r, std::string* problem) {
  if (int e = check_extents({r.segment}, {}, problem); e < 0) return e;
  if (r.segment.length % geo_.block != 0) {
    *problem = fmt::format("segment {} is not whole blocks", extent_str(r.segment));
    return -EIO;
  }
  used_[r.segment.offset] = Use{r.segment.length, kKvFsLogIno};
  log_segments_.push_back(r.segment);
  return 0;
}

int KvFsState::on_create(const KvCreate& r, std::string* problem) {
  auto dir = dirs_.find(r.dir);
  if (dir == dirs_.end()) {
    *problem = fmt::format("directory '{}' does not exist", r.dir);
    return -EIO;
  }
  if (!valid_name(r.name)) {
    *problem = fmt::format("name '{}' is not valid", r.name);
    return -EIO;
  }
  if (r.ino < kKvFsFirstFileIno || inodes_.count(r.ino)) {
    *problem = fmt::format("inode {} is {}", r.ino, r.ino < kKvFsFirstFileIno ? "reserved" : "in use");
    return -EIO;
  }
  auto old = dir->second.find(r.name);
  if (old != dir->second.end()) drop_inode(old->second);
  dir->second[r.name] = r.ino;
  inodes_[r.ino] = KvInode();
  next_ino_ = std::max(next_ino_, r.ino + 1);
  return 0;
}

int KvFsState::on_update(const KvUpdate& r, std::string* problem) {
  auto it = inodes_.find(r.ino);
  if (it == inodes_.end()) {
    *problem = fmt::format("inode {} does not exist", r.ino);
    return -EIO;
  }
  KvInode& ino = it->second;
  if (r.keep > ino.extents.size()) {
    *problem = fmt::format("keeps {} extents of inode {}, which has {}", r.keep, r.ino, ino.extents.size());
    return -EIO;
  }
  // The blocks the inode gives up are free for the record's own new extents:
  // a rewrite in place of a trimmed tail is one record.
  std::set<uint64_t> released;
  for (size_t i = r.keep; i < ino.extents.size(); ++i) released.insert(ino.extents[i].offset);
  if (int e = check_extents(r.extents, released, problem); e < 0) return e;
  uint64_t covered = 0;
  for (size_t i = 0; i < r.keep; ++i) covered += ino.extents[i].length;
  for (const KvFsExtent& e : r.extents) covered += e.length;
  // An inline tail lives in the record; its block may not be allocated yet.
  // Counted in blocks: align_up of a size near 2^64 wraps to 0, and would
  // let a file of any size through with no extents.
  const uint64_t tail_len = r.size % geo_.block;
  const uint64_t need_blocks = r.size / geo_.block + (r.tail_kind != KvTailKind::kInline && tail_len != 0 ? 1 : 0);
  if (covered / geo_.block < need_blocks) {
    *problem = fmt::format("inode {} of size {} has extents covering only {} bytes", r.ino, r.size, covered);
    return -EIO;
  }
  if (r.tail_kind == KvTailKind::kInline ? r.tail.size() != tail_len : !r.tail.empty()) {
    *problem = fmt::format("inode {} of size {}: a tail of {} bytes does not fit its kind", r.ino, r.size,
                           r.tail.size());
    return -EIO;
  }
  for (size_t i = r.keep; i < ino.extents.size(); ++i) used_.erase(ino.extents[i].offset);
  ino.extents.resize(r.keep);
  for (const KvFsExtent& e : r.extents) {
    used_[e.offset] = Use{e.length, r.ino};
    ino.extents.push_back(e);
  }
  ino.size = r.size;
  ino.mtime = r.mtime;
  ino.tail_kind = r.tail_kind;
  ino.tail = r.tail;
  return 0;
}

int KvFsState::on_rename(const KvRename& r, std::string* problem) {
  auto src_dir = dirs_.find(r.src_dir);
  auto dst_dir = dirs_.find(r.dst_dir);
  if (src_dir == dirs_.end() || dst_dir == dirs_.end()) {
    *problem = fmt::format("directory '{}' does not exist", src_dir == dirs_.end() ? r.src_dir : r.dst_dir);
    return -EIO;
  }
  auto src = src_dir->second.find(r.src);
  if (src == src_dir->second.end()) {
    *problem = fmt::format("name '{}/{}' does not exist", r.src_dir, r.src);
    return -EIO;
  }
  if (!valid_name(r.dst)) {
    *problem = fmt::format("name '{}' is not valid", r.dst);
    return -EIO;
  }
  if (r.src_dir == r.dst_dir && r.src == r.dst) return 0;
  const uint64_t ino = src->second;
  src_dir->second.erase(src);
  auto old = dst_dir->second.find(r.dst);
  if (old != dst_dir->second.end()) drop_inode(old->second);
  dst_dir->second[r.dst] = ino;
  return 0;
}

int KvFsState::on_unlink(const KvUnlink& r, std::string* problem) {
  auto dir = dirs_.find(r.dir);
  if (dir == dirs_.end() || !dir->second.count(r.name)) {
    *problem = fmt::format("name '{}/{}' does not exist", r.dir, r.name);
    return -EIO;
  }
  auto link = dir->second.find(r.name);
  drop_inode(link->second);
  dir->second.erase(link);
  return 0;
}

int KvFsState::on_journal(const KvJournal& r, std::string* problem) {
  std::set<uint64_t> released;
  for (const KvFsExtent& e : journal_) released.insert(e.offset);
  if (int e = check_extents(r.extents, released, problem); e < 0) return e;
  for (const KvFsExtent& e : journal_) used_.erase(e.offset);
  for (const KvFsExtent& e : r.extents) used_[e.offset] = Use{e.length, kKvFsJournalIno};
  journal_ = r.extents;
  return 0;
}

int KvFsState::finish(std::string* why) const {
  if (!seen_init_) {
    *why = "kvfs log holds no INIT record";
    return -EIO;
  }
  for (const KvFsExtent& s : log_segments_) {
    if (!owned(s)) {
      *why = fmt::format("kvfs log segment {} is outside the kvfs's chunks", extent_str(s));
      return -EIO;
    }
  }
  return 0;
}

std::string KvFsState::describe() const {
  std::string out;
  for (const auto& [off, len] : chunks_) out += fmt::format("chunk {:#x}+{:#x}\n", off, len);
  for (const KvFsExtent& s : log_segments_) out += fmt::format("log segment {}\n", extent_str(s));
  for (const KvFsExtent& e : journal_) out += fmt::format("journal {}\n", extent_str(e));
  for (const auto& [dir, names] : dirs_) {
    out += fmt::format("dir {}\n", dir);
    for (const auto& [name, ino] : names) out += fmt::format("  {} -> {}\n", name, ino);
  }
  for (const auto& [ino, i] : inodes_) {
    out += fmt::format("inode {} size {} mtime {} tail {}:{}", ino, i.size, i.mtime, static_cast<int>(i.tail_kind),
                       i.tail.size());
    for (const KvFsExtent& e : i.extents) out += " " + extent_str(e);
    out += "\n";
  }
  out += fmt::format("next_ino {} snapshot_done {}\n", next_ino_, snapshot_done_);
  return out;
}

}  // namespace hybridstore
