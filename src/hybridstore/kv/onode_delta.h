// The rule by which mount will replay an onode delta from the commit journal
// onto the onode RocksDB holds (docs/small-writes.md section 8, I3, and
// 12.10): whatever mix of checkpointed and unchecked state a crash leaves,
// a delta is applied exactly when the onode lacks it; and the deltas a
// transaction's change to an onode is made of.
#pragma once
#include <string>
#include <vector>

#include "hybridstore/format/onode.h"
#include "hybridstore/kv/journal_record.h"

namespace hybridstore {

enum class OnodeDeltaResult {
  kApplied,    // the onode lacked it; it now has it, at the delta's version
  kIncluded,   // the onode already includes it (its version is at or past it)
  kOtherLife,  // a delta of an earlier life of the key: dropped
  kGap,        // a delta more than one version ahead: a record is missing
  kMismatch,   // the delta does not fit the onode it should apply to (corrupt)
};
const char* onode_delta_result_name(OnodeDeltaResult r);

// Applies the deltas one transaction made to one object (OVERWRITE,
// SETATTR, RMATTR, SETSIZE; all of one key, incarnation and version: a
// transaction raises an object's version once, whatever it does to it) to
// `o`, in their order, when `o` is of their incarnation at the version just
// before theirs. An OVERWRITE sets the checksums of its 4 KiB blocks in the
// extents that hold them, which must lie where the delta says the data went,
// in 4 KiB checksum blocks. Deltas that disagree, or do not fit, give
// kMismatch with *why, and `o` is left as it was.
OnodeDeltaResult apply_onode_deltas(Onode* o, const std::vector<const JournalDelta*>& deltas, std::string* why);

// The deltas of one transaction's change to one object, from the onode as
// the transaction found it (`before`) to what it made (`after`, one version
// on, of the same incarnation), appended to *out under the object's onode
// key: OVERWRITE for each run of 4 KiB checksum blocks whose checksum
// changed, SETATTR and RMATTR, SETSIZE; at least one delta (a SETSIZE to
// the same size when nothing else changed), so that every version has its
// record. False, with *out as it was, when the change is not one deltas can
// say: the extents' layout, the omap id, the hints or the life changed, or
// a checksum changed in an extent whose checksum blocks are not 4 KiB. The
// onode must then be written whole. Replaying the deltas onto `before`
// (apply_onode_deltas) gives `after`.
bool onode_deltas_between(const Onode& before, const Onode& after, const std::string& key,
                          std::vector<JournalDelta>* out);

}  // namespace hybridstore
