// fsck and repair: cross-check everything a mounted store keeps about
// space and objects, and (repair) put it back in order.
//
// Checks:
//  - every onode decodes, lives in an existing collection, and its extents
//    lie inside the device, on unit boundaries, each unit referenced once;
//  - every extent shard belongs to an onode that names it;
//  - the persisted allocation bitmap marks exactly the referenced units
//    (more is leaked space, less is data at risk of being overwritten);
//  - the in-memory allocator agrees with both;
//  - every omap entry belongs to an object, no two objects share an omap id;
//  - the object and byte counters match the onodes;
//  - deep: every extent reads back and matches its checksums.
//
// Repair fixes what the scan can attribute: unreadable onodes are dropped,
// objects of a missing collection get the collection back, bad or doubly
// referenced extents are cut out of the object that holds them (those bytes
// read as zeros afterwards), a second owner of an omap id loses the link,
// orphaned omap entries are deleted, the bitmap is made to match the
// references exactly (leaked space returns), counters are rewritten. Every
// change is printed. Data that fails its checksum is reported, not changed:
// the bytes are gone and only a replica can bring them back.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "hybridstore/alloc/allocator.h"
#include "hybridstore/format/store_format.h"
#include "hybridstore/store/api_types.h"

namespace rocksdb {
class DB;
class Iterator;
}  // namespace rocksdb

namespace hybridstore {

class CollectionTable;
class DataReader;
class OnodeStore;
class TierSet;
struct FsckScan;
struct RepairPlan;

class StoreFsck {
 public:
  // The store must be mounted, and everything queued durable (flushed),
  // and stay so: no transaction may commit during a check.
  StoreFsck(rocksdb::DB* db, const Superblock* super, const TierSet* tiers, const CollectionTable* colls,
            const OnodeStore* onodes, const DataReader* data)
      : db_(db), super_(super), tiers_(tiers), colls_(colls), onodes_(onodes), data_(data) {}

  // Ranges of `tier` the KV file system owns (its chunks): neither free nor
  // object data. Until the store lends (kvfs.md 9, step 7) only tests name
  // them.
  void set_lent(Tier tier, std::vector<Interval> ranges) { lent_[tier] = std::move(ranges); }

  // The number of errors (0 = clean) or a negative errno.
  int check(bool deep, FsckReport* report);
  // Fixes what a check finds; *changes says what changed. Returns the number
  // of changes or a negative errno. Mount for repair first.
  int repair(FsckReport* report, std::vector<std::string>* changes);

 private:
  int scan(bool deep, FsckReport* report, RepairPlan* plan);
  // The passes of a scan, in order.
  void scan_onodes(FsckScan& s, rocksdb::Iterator* it, bool deep);
  void scan_shards(FsckScan& s, rocksdb::Iterator* it);
  void scan_omap(FsckScan& s, rocksdb::Iterator* it);
  void check_space(FsckScan& s, Tier tier);
  void check_labels(FsckScan& s);
  void check_statistics(FsckScan& s);

  rocksdb::DB* db_;
  const Superblock* super_;
  const TierSet* tiers_;
  const CollectionTable* colls_;
  const OnodeStore* onodes_;
  const DataReader* data_;
  PerTier<std::vector<Interval>> lent_;
};

}  // namespace hybridstore
