// fsck's rows of docs/kvfs.md section 6 that set the KV file system against
// RocksDB and the commit journal, for a store whose RocksDB is on its SSD
// (the kvfs's own rows are kvfs/kvfs_check.h's):
//  - the kvfs's files against the files RocksDB lives on: each live table,
//    WAL, CURRENT, the MANIFEST it names, OPTIONS and IDENTITY must exist (an
//    error naming it); every other file is an orphan (a warning), which
//    repair deletes;
//  - the ring's records against RocksDB's journal number;
//  - deep: every kvfs file read whole from the device, and RocksDB's
//    checksums verified, table by table.
// Problems are added to the FsckReport as the store fsck's lines, prefixed
// "kvfs: ".
#pragma once
#include <string>
#include <vector>

#include "hsio/block_device.h"
#include "hybridstore/format/store_format.h"
#include "hybridstore/kvfs/kvfs.h"
#include "hybridstore/store/api_types.h"

namespace rocksdb {
class DB;
}  // namespace rocksdb

namespace hybridstore {

// `db` is RocksDB open in `fs` (in its directory "db"). With `changes`
// (repair), orphans are deleted and each deletion is listed there. RocksDB's
// background work is paused meanwhile: a table being written by a
// compaction is in no live list yet and must not read as an orphan.
void check_kvfs_files(rocksdb::DB* db, KvFs* fs, bool deep, FsckReport* report, std::vector<std::string>* changes);

// The ring `ring` (in ring order) of `dev`, whose records carry `fsid`,
// walked as a mount walks it from the tail RocksDB keeps: the records
// taken, the last number and where the walk stopped into the report, and
// an error when a record taken is numbered above RocksDB's journal number:
// mount's replay brings RocksDB up to every record it could apply, and
// fsck runs with every commit in RocksDB.
void check_kvfs_ring(rocksdb::DB* db, BlockDevice* dev, const std::vector<KvFsExtent>& ring, const Uuid& fsid,
                     FsckReport* report);

}  // namespace hybridstore
