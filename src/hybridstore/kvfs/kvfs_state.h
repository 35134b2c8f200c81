// The kvfs's metadata as the log builds it (docs/kvfs.md 3.1, 3.2): the
// chunks it owns, the directories and their names, the inodes with their
// extents and tails, the commit-journal ring and the log's own segments.
//
// apply() checks each record against the state before changing anything: a
// record that contradicts it (an extent outside the chunks, a block with two
// owners, a GRANT outside [H, size) or over another chunk, a RETURN of
// space in use, a name or inode that does not exist, ...) leaves the state
// as it was and returns -EIO naming the record's seq. Replay and the live
// kvfs apply the same records through this one class, so what a mount
// rebuilds is what the running kvfs had.
//
// Unlinking a name drops its inode here, with its extents: the log carries
// no record of open handles, and after a crash there are none. A live kvfs
// keeps such an inode's extents pending until its last handle closes and
// logs nothing more about it.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "hybridstore/format/store_format.h"
#include "hybridstore/kvfs/kvfs_log.h"
#include "hybridstore/kvfs/kvfs_super.h"

namespace hybridstore {

// What every record is checked against: b, A, G, the tier's reserved head H
// and the device's size.
struct KvFsGeometry {
  uint64_t block = 0;
  uint64_t alloc_unit = 0;
  uint64_t lend_unit = 0;
  uint64_t head = 0;
  uint64_t device_size = 0;
};

struct KvInode {
  uint64_t size = 0;
  uint64_t mtime = 0;
  std::vector<KvFsExtent> extents;  // in file order
  KvTailKind tail_kind = KvTailKind::kNone;
  std::string tail;
};

class KvFsState {
 public:
  KvFsState(const Uuid& kvfs_uuid, const KvFsGeometry& geometry);

  // Starts a log whose first segment is `segment` (from the superblock):
  // the segment belongs to the log before any record says so, and finish()
  // checks it lies in the chunks the log's records grant.
  int begin_log(const KvFsExtent& segment, std::string* why);
  // 0, or -EIO with *why naming `seq`; on an error nothing changed.
  int apply(const KvRecord& record, uint64_t seq, std::string* why);
  // The checks only the end of the log can make.
  int finish(std::string* why) const;

  // Owned chunks, coalesced: offset -> length.
  const std::map<uint64_t, uint64_t>& chunks() const { return chunks_; }
  const std::map<std::string, std::map<std::string, uint64_t>>& dirs() const { return dirs_; }
  const std::map<uint64_t, KvInode>& inodes() const { return inodes_; }
  const std::vector<KvFsExtent>& journal() const { return journal_; }
  const std::vector<KvFsExtent>& log_segments() const { return log_segments_; }
  // Inodes allocated from here on take at least this number.
  uint64_t next_ino() const { return next_ino_; }
  bool snapshot_done() const { return snapshot_done_; }
  // Every byte in use: offset -> (length, owning inode).
  struct Use {
    uint64_t length;
    uint64_t ino;
  };
  const std::map<uint64_t, Use>& used() const { return used_; }

  // Everything above, one item a line, in a fixed order: for tests that
  // compare two states, and for fsck output.
  std::string describe() const;

 private:
  int apply_checked(const KvRecord& record, uint64_t seq, std::string* why);
  int check_extent(const KvFsExtent& e, std::string* problem) const;
  int check_extents(const std::vector<KvFsExtent>& es, const std::set<uint64_t>& released,
                    std::string* problem) const;
  bool owned(const KvFsExtent& e) const;
  bool overlaps_chunk(const KvFsExtent& e) const;
  bool overlaps_use(const KvFsExtent& e, const std::set<uint64_t>& released, uint64_t* owner) const;
  void drop_inode(uint64_t ino);

  int on_grant(const KvGrant& r, std::string* problem);
  int on_return(const KvReturn& r, std::string* problem);
  int on_next(const KvNext& r, std::string* problem);
  int on_create(const KvCreate& r, std::string* problem);
  int on_update(const KvUpdate& r, std::string* problem);
  int on_rename(const KvRename& r, std::string* problem);
  int on_unlink(const KvUnlink& r, std::string* problem);
  int on_journal(const KvJournal& r, std::string* problem);

  const Uuid kvfs_uuid_;
  const KvFsGeometry geo_;
  bool seen_init_ = false;
  bool snapshot_done_ = false;
  std::map<uint64_t, uint64_t> chunks_;
  std::map<uint64_t, Use> used_;
  std::map<std::string, std::map<std::string, uint64_t>> dirs_;
  std::map<uint64_t, KvInode> inodes_;
  std::vector<KvFsExtent> journal_;
  std::vector<KvFsExtent> log_segments_;
  uint64_t next_ino_ = kKvFsFirstFileIno;
};

}  // namespace hybridstore
