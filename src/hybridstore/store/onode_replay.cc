#include "hybridstore/store/onode_replay.h"

#include <fmt/format.h>

#include <map>
#include <memory>

#include "hybridstore/kv/onode_delta.h"
#include "hybridstore/store/onode_store.h"

namespace hybridstore {

int replay_onode_deltas(const OnodeStore& onodes, const std::vector<CommitJournal::TxnDeltas>& txns,
                        rocksdb::WriteBatchBase* out, OnodeReplayCounts* counts, std::string* error) {
  struct Object {
    std::unique_ptr<Onode> onode;  // null: no such object in RocksDB
    StoredShards stored;           // its shards as RocksDB holds them
    bool changed = false;
  };
  std::map<std::string, Object> objects;
  for (const auto& t : txns) {
    ++counts->transactions;
    // One transaction's deltas, by object, in their order.
    std::map<std::string, std::vector<const JournalDelta*>> by_key;
    for (const JournalDelta& d : t.deltas) by_key[d.key].push_back(&d);
    for (const auto& [key, deltas] : by_key) {
      auto [it, fresh] = objects.try_emplace(key);
      Object& ob = it->second;
      if (fresh) {
        auto on = std::make_unique<Onode>();
        std::string why;
        const int r = onodes.load(key, on.get(), &why);
        if (r == 0) {
          ob.stored = OnodeStore::stored_shards(on.get());
          ob.onode = std::move(on);
        } else if (r != -ENOENT) {
          *error = fmt::format("commit journal: reading the onode transaction {} changed: {}", t.seq, why);
          return -EIO;
        }
      }
      if (!ob.onode) {
        ++counts->absent;
        continue;
      }
      std::string why;
      switch (apply_onode_deltas(ob.onode.get(), deltas, &why)) {
        case OnodeDeltaResult::kApplied:
          ob.changed = true;
          ++counts->applied;
          break;
        case OnodeDeltaResult::kIncluded:
          ++counts->included;
          break;
        case OnodeDeltaResult::kOtherLife:
          ++counts->other_life;
          break;
        case OnodeDeltaResult::kGap:
        case OnodeDeltaResult::kMismatch:
          *error = fmt::format("commit journal: transaction {}'s onode deltas do not follow the stored onode: {}",
                               t.seq, why);
          return -EIO;
      }
    }
  }
  for (auto& [key, ob] : objects)
    if (ob.changed) {
      onodes.put(out, key, *ob.onode, ob.stored);
      ++counts->onodes_written;
    }
  return 0;
}

}  // namespace hybridstore
