// The kvfs's own consistency check: the kvfs rows of docs/kvfs.md section
// 6's table. The store's fsck calls it (store_fsck.cc) and shows its
// figures, and so does `df`.
//
// Two entry points. check_kvfs reads an unmounted kvfs: the two superblock
// slots, then the log replayed into a KvFsState of its own; it writes
// nothing. check_mounted_kvfs checks a mounted KvFs from a snapshot of its
// live state and, besides, recomputes the free map and compares it with
// the kvfs's allocator.
//
// Neither ever trusts the device: whatever the bytes, a decoder returns an
// error and the check reports it; nothing asserts.
//
// The report's problems follow the store fsck's lines: an error plainly, a
// warning prefixed "warning: "; every line starts with "kvfs".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "hsio/block_device.h"
#include "hybridstore/format/store_format.h"
#include "hybridstore/kvfs/kvfs.h"
#include "hybridstore/kvfs/kvfs_state.h"
#include "hybridstore/kvfs/kvfs_super.h"

namespace hybridstore {

struct KvFsCheckOptions {
  // G as the tier lends it; 0: the superblock's. An error when they differ:
  // the chunks would not line up with the tier's units.
  uint64_t lend_unit = 0;
  // The ring's size as the option says (rounded up to A here, as
  // make_journal does); 0: not checked. A ring of another size, or none, is
  // a warning: a read-write mount resizes the ring to the option's size, so
  // only a mount without the room for it (or none since the option
  // changed) leads there.
  uint64_t journal_size = 0;
};

struct KvFsCheckReport {
  uint64_t errors = 0;
  uint64_t warnings = 0;
  std::vector<std::string> problems;  // one line each, at most kMaxProblems

  // Which superblock slot is current (-1: none could be read) and its
  // generation.
  int current_slot = -1;
  uint64_t generation = 0;
  bool other_slot_valid = false;  // the previous generation, intact
  // The figures (0 when the log could not be replayed).
  uint64_t owned_bytes = 0;    // the chunks
  uint64_t used_bytes = 0;     // files + ring + log segments
  uint64_t log_bytes = 0;      // the log's segments
  uint64_t journal_bytes = 0;  // the ring
  uint64_t files = 0;
  uint64_t free_bytes = 0;     // owned − used − held
  uint64_t held_bytes = 0;     // mounted only: allocated, owned by no record yet

  static constexpr size_t kMaxProblems = 1000;
  void error(std::string msg);
  void warning(std::string msg);
  bool clean() const { return errors == 0 && warnings == 0; }
};

// Checks the kvfs on `dev` read-only. `params` gives H and the slots'
// place (the other fields are not used). Returns 0 when the check ran (the
// report says what it found) or -EINVAL for parameters no kvfs can have.
int check_kvfs(BlockDevice* dev, const KvFsParams& params, const Uuid& kvfs_uuid, const Uuid& fsid,
               const KvFsCheckOptions& opts, KvFsCheckReport* report);

// Checks a mounted kvfs, as check_kvfs does but for the replay (the live
// state stands for it), and compares the free map recomputed from the state
// with the allocator's: an error "in-memory kvfs allocator disagrees" when
// they differ. Returns 0, or -EAGAIN from KvFs::check_snapshot.
int check_mounted_kvfs(KvFs* fs, const KvFsCheckOptions& opts, KvFsCheckReport* report);

// check_mounted_kvfs past its snapshot; apart so the tests can feed it a
// snapshot they changed.
void check_kvfs_snapshot(const KvFsSnapshot& snap, const KvFsCheckOptions& opts, KvFsCheckReport* report);

// The checks of a state alone (chunks, extents, ring, names), shared by
// both; fills the figures but free_bytes. A replayed state has passed the
// same rules record by record, so these find what a build's replay let
// through; exposed so the tests reach them with a state built under one
// geometry and checked against another.
void check_kvfs_state(const KvFsState& state, const KvFsGeometry& geo, const KvFsCheckOptions& opts,
                      KvFsCheckReport* report);

}  // namespace hybridstore
