// Mount's step 3 of docs/small-writes.md section 7: the onode deltas the
// commit journal's walk found, applied to the onodes RocksDB holds once
// the ring's batches are in it. Each transaction's deltas of one object
// are applied exactly when the stored onode lacks them (apply_onode_deltas),
// so any mix of checkpointed and unchecked onodes a crash leaves comes out
// as the last acknowledged state, and a second replay changes nothing.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "hybridstore/kv/commit_journal.h"

namespace rocksdb {
class WriteBatchBase;
}  // namespace rocksdb

namespace hybridstore {

class OnodeStore;

struct OnodeReplayCounts {
  uint64_t transactions = 0;  // with deltas
  uint64_t applied = 0;       // one transaction's deltas of one object
  uint64_t included = 0;      // the stored onode had them already
  uint64_t other_life = 0;    // of an earlier life of the key
  uint64_t absent = 0;        // the object was removed later
  uint64_t onodes_written = 0;
};

// Applies `txns` (in number order) and puts every onode they changed into
// `out`, at its new version. 0, or -EIO with *error when a delta is more
// than one version ahead of its onode (a record is missing), does not fit
// it, or an onode cannot be read: the store must not mount as if the
// acknowledged change were there.
int replay_onode_deltas(const OnodeStore& onodes, const std::vector<CommitJournal::TxnDeltas>& txns,
                        rocksdb::WriteBatchBase* out, OnodeReplayCounts* counts, std::string* error);

}  // namespace hybridstore
