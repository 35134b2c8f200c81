// The collections of a mounted store: one state per collection name used
// since mount (its lock, whether it exists, its hash bits, the last
// transaction that touched it), loaded from the collection records at mount
// and changed by the transactions that publish their changes.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hybridstore/format/collection_id.h"
#include "hybridstore/store/txn_context.h"

namespace rocksdb {
class DB;
}  // namespace rocksdb

namespace hybridstore {

class CollectionTable {
 public:
  // Mount: the collection records. With `dropped` (repair), a corrupt
  // record is deleted and described there instead of failing the mount.
  int load(rocksdb::DB* db, std::vector<std::string>* dropped, std::string* error);

  // The state of `c`, made on first use (a lock for a collection that does
  // not exist yet).
  std::shared_ptr<CollectionState> state(const CollectionId& c);
  std::vector<CollectionId> list() const;
  bool exists(const CollectionId& c) const;
  int bits(const CollectionId& c) const;  // or -ENOENT

 private:
  mutable std::mutex mutex_;
  std::map<CollectionId, std::shared_ptr<CollectionState>> colls_;
};

}  // namespace hybridstore
