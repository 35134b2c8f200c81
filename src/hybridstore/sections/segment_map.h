// Segment partitioning of one extent and the HFM / ReHypar map function.
//
// An extent of `s` blocks (s a power of two, n = log2 s) is partitioned into
// segments: a segment of length 2^p starting at b is split into a head (b, len 1)
// and children j = 0..p-1 at (b + 2^j, len 2^j). Level 0 is the partition of
// the whole extent. Which segments are partitioned again depends on rho:
//   rho 1   only level 0;
//   rho 2   level-0 segment n-1 (the upper half) is partitioned once into level 1;
//   rho 3   every segment of length >= delta is partitioned, recursively.
// (docs/algorithms.md states the reading the code follows; the paper's formulas
// are damaged in the OCR text.)
//
// The map function takes `pos`, the last block of the previous allocation, and
// returns where the next allocation starts: the end of the leaf segment that
// holds `pos`. It is labelled by the shallowest segment that begins there, the
// (index, level) under which the map table files the extent.
//
// Reading of docs/algorithms.md made precise here: when `pos` lies in the last child
// of a partition (e.g. s = 512, delta = 32, pos = 255) the spec's "following
// segment of that level" does not exist; the start block it gives
// (base + 2^(i+1)) is the end of the parent, so we label the start with the
// segment that begins there one or more levels up (segment 8 of level 0 in the
// example). The start block is exactly the spec's. A start equal to `s` means
// the extent is full and is labelled (index n, level 0).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace hybridstore {

enum class PartitionMode : uint8_t { kBypass = 0, kRho1 = 1, kRho2 = 2, kRho3 = 3 };

const char* partition_mode_name(PartitionMode m);  // "rho1", ..., "bypass"

// Index -1 is the head segment of a partition.
struct SegmentLabel {
  int index = -1;
  int level = 0;
};

struct MapPosition {
  int index;       // segment index at `level` (-1 head); n when full
  int level;
  uint32_t start;  // block within the extent; == extent_blocks when full
};

struct SegmentNode {
  int level;
  int index;
  uint32_t start;
  uint32_t length;
  bool partitioned;  // its children form level + 1
};

class SegmentMap {
 public:
  static constexpr uint32_t kMaxExtentBlocks = 1u << 20;

  SegmentMap() = default;

  // Builds the partition of an extent of `extent_blocks` blocks. `delta` is used
  // by rho 3 only (a power of two, 2 <= delta <= extent_blocks). Returns 0, or
  // -EINVAL with *error explaining what is wrong. Bypass has no layout.
  static int make(uint32_t extent_blocks, PartitionMode mode, uint32_t delta, SegmentMap* out,
                  std::string* error);

  uint32_t extent_blocks() const { return s_; }
  int order() const { return n_; }  // log2(extent_blocks)
  PartitionMode mode() const { return mode_; }
  uint32_t delta() const { return delta_; }
  // Number of levels (map tables) of the partition.
  int levels() const { return levels_; }
  // Entries per level: indices -1 .. n-1 plus the "full" slot n (n + 2).
  int entries_per_level() const { return n_ + 2; }

  // The map function. Requires pos < extent_blocks.
  MapPosition next(uint32_t pos) const;

  // Label of the shallowest segment beginning at `start`; false when no segment
  // begins there. start == extent_blocks gives the full label (n, 0).
  bool label_of(uint32_t start, SegmentLabel* out) const;

  // Whether the segment (level, index) of length `len` is partitioned further.
  bool partitioned(int level, int index, uint32_t len) const;

  // Every segment of the tree in pre-order (parents before their children).
  std::vector<SegmentNode> nodes() const;

 private:
  void collect(int level, uint32_t base, int p, std::vector<SegmentNode>* out) const;

  uint32_t s_ = 0;
  int n_ = 0;
  PartitionMode mode_ = PartitionMode::kRho1;
  uint32_t delta_ = 0;  // 0 unless rho 3
  int levels_ = 0;
};

// floor(log2(x)) for x > 0.
inline int floor_log2(uint32_t x) { return 31 - __builtin_clz(x); }
inline bool is_power_of_two(uint64_t x) { return x && !(x & (x - 1)); }

}  // namespace hybridstore
