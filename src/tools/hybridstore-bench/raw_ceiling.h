// The fair ceiling for a store figure: the best the device under the store
// does at the same block size and queue depth, measured in the same run.
//
// It runs on a scratch file beside the tier's device file (same
// filesystem, same disk), never on the device itself, so the store's data
// is safe: `queue_depth` threads each keep one I/O in flight through the
// engine's own block-device layer (io_uring, O_DIRECT where the filesystem
// allows), like fio with iodepth spread over jobs. Writes go to fresh
// blocks of the file in order and end with one flush (durable, as the
// store's commits are); reads first fill the file (not timed), then read it
// in order (seq) or at random blocks (rand). Where the tier is a block
// device there is no scratch file to use and the ceiling is skipped.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hybridstore::bench {

enum class RawOp { kWrite, kSeqRead, kRandRead };

struct RawResult {
  bool ok = false;
  RawOp op = RawOp::kWrite;
  std::string note;       // why it was skipped or failed
  std::string file;       // the scratch file
  std::string backend;    // "uring" / "posix"
  uint64_t block_size = 0;  // the largest size when sizes are mixed
  std::string sizes;        // the mix, as given ("" for one size)
  int queue_depth = 0;
  double seconds = 0;
  uint64_t ops = 0, bytes = 0;
  double mb_s = 0;        // 2^20 bytes per second, as rados bench's MB
  double iops = 0;
};

// `device` is the tier's device path (a store's block.ssd / block.hdd).
RawResult measure_raw(const std::string& device, RawOp op, uint64_t block_size, int queue_depth, double seconds,
                      uint64_t seed);
// The same with I/O sizes drawn from `mix` (size, weight), as a run of
// mixed object sizes draws them: like for like with the store's run.
RawResult measure_raw_mix(const std::string& device, RawOp op, const std::vector<std::pair<uint64_t, unsigned>>& mix,
                          const std::string& mix_text, int queue_depth, double seconds, uint64_t seed);

const char* raw_op_name(RawOp op);

}  // namespace hybridstore::bench
