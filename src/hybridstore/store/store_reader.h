// Reads of a mounted store: collections, listing, objects (stat, data,
// attributes, allocated ranges) and omap.
//
// Data and attribute reads see queued transactions at once (onodes are
// published before queue_transaction returns). Listing and omap reads go to
// RocksDB, so they first wait for the collection's queued transactions to
// commit, as BlueStore's onode flush does. A client read is noted in the
// object's heat (unless kReadNoHeat) and may queue it for promotion.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "hybridstore/format/collection_id.h"
#include "hybridstore/format/object_id.h"
#include "hybridstore/format/object_stat.h"
#include "hybridstore/store/api_types.h"

namespace rocksdb {
class DB;
}  // namespace rocksdb

namespace hybridstore {

class CollectionTable;
class DataReader;
class KvCommitter;
class ObjectHeat;
class OnodeStore;
struct StorePerf;

class StoreReader {
 public:
  StoreReader(rocksdb::DB* db, KvCommitter* committer, CollectionTable* colls, OnodeStore* onodes,
              const DataReader* data, ObjectHeat* heat, StorePerf* perf)
      : db_(db), committer_(committer), colls_(colls), onodes_(onodes), data_(data), heat_(heat), perf_(perf) {}

  // As HybridStore's calls of the same names.
  int collection_list(const CollectionId& c, const ObjectId& start, const ObjectId& end, int max,
                      std::vector<ObjectId>* out, ObjectId* next);
  int stat(const CollectionId& c, const ObjectId& o, ObjectStat* st);
  // With `pieces`, a range the data cache holds whole comes back as the
  // cached bytes themselves (HybridStore::read_shared).
  int read_into(const CollectionId& c, const ObjectId& o, uint64_t off, uint64_t len,
                const std::function<char*(uint64_t)>& buffer, uint32_t read_flags = 0,
                std::vector<ReadPiece>* pieces = nullptr);
  int fiemap(const CollectionId& c, const ObjectId& o, uint64_t off, uint64_t len, std::map<uint64_t, uint64_t>* out);
  int getattr(const CollectionId& c, const ObjectId& o, const std::string& name, std::string* value);
  int getattrs(const CollectionId& c, const ObjectId& o, std::map<std::string, std::string>* out);

  int omap_get(const CollectionId& c, const ObjectId& o, std::string* header, std::map<std::string, std::string>* out);
  int omap_get_header(const CollectionId& c, const ObjectId& o, std::string* header);
  int omap_get_values(const CollectionId& c, const ObjectId& o, const std::set<std::string>& keys,
                      std::map<std::string, std::string>* out);
  // Null when the object does not exist.
  std::unique_ptr<OmapIterator> omap_iterator(const CollectionId& c, const ObjectId& o);

 private:
  // Runs `fn` on the object's omap id once the collection's queued
  // transactions are in RocksDB.
  int omap_read(const CollectionId& c, const ObjectId& o, const std::function<int(rocksdb::DB*, uint64_t nid)>& fn);

  rocksdb::DB* db_;
  KvCommitter* committer_;
  CollectionTable* colls_;
  OnodeStore* onodes_;
  const DataReader* data_;
  ObjectHeat* heat_;
  StorePerf* perf_;
};

}  // namespace hybridstore
