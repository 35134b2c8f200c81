// What the rados-style modes run against: the store (an existing one, or a
// fresh file-backed one in a temporary directory), the collections and
// object names of a run, the run's metadata object, and the bytes objects
// hold.
//
// Content: every byte of a benchmark object is a function of the object's
// name, its offset and a generation (0 unless randwrite overwrote the block),
// so a read can be checked without keeping a copy, by another process too.
// A 4 KiB block is a slice of a fixed random table with (name hash, offset,
// generation) stamped over its first 24 bytes: distinct for every block of
// every object, and cheap (a memcpy) to produce and to compare.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hybridstore/store/hybrid_store.h"
#include "rados_args.h"

namespace hybridstore::bench {

uint64_t name_hash(const std::string& name);
// Writes the content of [off, off + len) of the object with hash `h`.
void fill_pattern(char* out, uint64_t h, uint64_t off, uint64_t len, uint32_t gen = 0);
// Offset of the first byte of `data` (read at `off`) that differs from the
// pattern, or -1 when all match.
int64_t check_pattern(const char* data, uint64_t h, uint64_t off, uint64_t len, uint32_t gen = 0);

// The run recorded by a write, for the reads and the cleanup after it.
struct RunMeta {
  std::string prefix;        // object names: <prefix>_object<N>
  uint64_t op_size = 0;
  uint64_t object_size = 0;
  uint64_t objects = 0;      // objects written (the last possibly partly)
  uint64_t ops = 0;          // writes made
  std::vector<std::pair<uint64_t, unsigned>> mix;  // object sizes by weight; empty: all object_size
  uint64_t seed = 0;         // picks the sizes of a mix
  uint64_t size_of(uint64_t n) const;
  uint64_t ops_per_object() const { return mix.empty() ? object_size / op_size : 1; }
};

constexpr int kPgs = 16;          // objects spread over PG collections 1.0 .. 1.f, by number
CollectionId pg_coll(uint64_t n);
std::string object_prefix();      // benchmark_data_<host>_<pid>, as rados bench names them
std::string object_name(const std::string& prefix, uint64_t n);
ObjectId bench_oid(const std::string& name);

struct BenchTarget {
  std::unique_ptr<HybridStore> store;
  std::string path;
  bool temporary = false;  // made in a temporary directory by this run
  bool fresh = false;      // made by this run
  Config cfg;
  ~BenchTarget();
  // Removes a temporary store (after umount) unless keep.
  void finish(bool keep);
};

// Opens the store for a mode. A missing store is made (mkfs) only when the
// mode writes; `extra_sets` apply to a store made here (before --set).
// Prints the reason and returns false on failure.
bool open_target(const RadosArgs& a, bool may_create, const std::vector<std::string>& extra_sets,
                 BenchTarget* t);
// Creates the PG collections that do not exist yet.
int ensure_collections(HybridStore* s);

std::string meta_name(const std::string& run_name);
int save_meta(HybridStore* s, const std::string& run_name, const RunMeta& m);
// -ENOENT when no write left a run under that name.
int load_meta(HybridStore* s, const std::string& run_name, RunMeta* m);
int remove_meta(HybridStore* s, const std::string& run_name);

}  // namespace hybridstore::bench
