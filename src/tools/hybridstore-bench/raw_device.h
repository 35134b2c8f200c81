// Raw device figures for `hybridstore-bench compare`: the same I/O pattern as
// each store row, on scratch space beside the store's device files, so every
// ratio compares like with like in the same minute.
//
// Two sources: fio (the reference the targets are stated against;
// only for file-backed tiers) and an in-process runner over the engine's own
// BlockDevice layer, which is also the only way to reach the embedded FTL (a
// NAND tier has no kernel device fio could open).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hsio/block_device.h"

namespace hybridstore::bench {

enum class RawPattern {
  kSyncWrite,  // each job: write bs, then flush (fdatasync), again; jobs independent
  kWrite,      // sequential writes, `jobs` in flight, one flush at the end
  kSeqRead,    // sequential reads, `jobs` in flight
  kRandRead,   // random aligned reads, `jobs` in flight
};

struct RawRun {
  RawPattern pattern = RawPattern::kSyncWrite;
  uint64_t block_size = 4096;
  int jobs = 1;
  double seconds = 3;
  uint64_t span = 64ull << 20;  // bytes each job (sync) or the whole run covers
  uint64_t seed = 1;
  // Reads only: `jobs` threads each with one blocking read in flight (fio's
  // psync engine, one shared file), as a caller of a synchronous read API
  // does, instead of one thread keeping `jobs` in flight through io_uring.
  bool sync_readers = false;
};

struct RawFigure {
  bool ok = false;
  std::string source;  // "fio" / "in-process" / "in-process (FTL)"
  std::string note;    // why it failed
  double iops = 0;
  double mib_s = 0;
};

// fio, `--output-format=json`, on files in `dir` (removed afterwards).
bool fio_available();
RawFigure raw_fio(const std::string& dir, const RawRun& run);

// In process over block devices: `open(i)` opens job i's device for sync
// writes (independent writers each with their own file), or the one shared
// device for the other patterns (i = 0). Each device must be at least
// `span` (sync: per job) bytes.
using DeviceOpener = std::function<std::unique_ptr<BlockDevice>(int job, std::string* error)>;
RawFigure raw_in_process(const DeviceOpener& open, bool one_device_for_all, const RawRun& run);

}  // namespace hybridstore::bench
