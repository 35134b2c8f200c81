#include "hybridstore/sections/segment_map.h"

#include <fmt/format.h>

#include <cerrno>

namespace hybridstore {

const char* partition_mode_name(PartitionMode m) {
  switch (m) {
    case PartitionMode::kBypass: return "bypass";
    case PartitionMode::kRho1: return "rho1";
    case PartitionMode::kRho2: return "rho2";
    case PartitionMode::kRho3: return "rho3";
  }
  return "?";
}

int SegmentMap::make(uint32_t extent_blocks, PartitionMode mode, uint32_t delta, SegmentMap* out,
                     std::string* error) {
  if (mode == PartitionMode::kBypass) {
    *error = "a bypass section has no segment layout";
    return -EINVAL;
  }
  if (mode != PartitionMode::kRho1 && mode != PartitionMode::kRho2 &&
      mode != PartitionMode::kRho3) {
    *error = "rho must be 1, 2 or 3";
    return -EINVAL;
  }
  if (!is_power_of_two(extent_blocks) || extent_blocks < 2 || extent_blocks > kMaxExtentBlocks) {
    *error = fmt::format("extent of {} blocks: must be a power of two between 2 and {}",
                         extent_blocks, kMaxExtentBlocks);
    return -EINVAL;
  }
  if (mode == PartitionMode::kRho3) {
    if (!is_power_of_two(delta) || delta < 2 || delta > extent_blocks) {
      *error = fmt::format("delta {}: must be a power of two between 2 and the extent ({} blocks)",
                           delta, extent_blocks);
      return -EINVAL;
    }
  } else {
    delta = 0;
  }
  SegmentMap m;
  m.s_ = extent_blocks;
  m.n_ = floor_log2(extent_blocks);
  m.mode_ = mode;
  m.delta_ = delta;
  switch (mode) {
    case PartitionMode::kRho1: m.levels_ = 1; break;
    case PartitionMode::kRho2: m.levels_ = m.n_ >= 2 ? 2 : 1; break;
    default: {
      // The longest chain splits segments of length 2^(n-1), 2^(n-2), ... while >= delta.
      int ld = floor_log2(delta);
      m.levels_ = (m.n_ - 1 >= ld) ? (m.n_ - 1 - ld + 1) + 1 : 1;
      break;
    }
  }
  *out = m;
  return 0;
}

bool SegmentMap::partitioned(int level, int index, uint32_t len) const {
  if (index < 0 || len < 2) return false;
  switch (mode_) {
    case PartitionMode::kRho2: return level == 0 && index == n_ - 1;
    case PartitionMode::kRho3: return len >= delta_;
    default: return false;
  }
}

MapPosition SegmentMap::next(uint32_t pos) const {
  uint32_t base = 0;
  int level = 0;
  for (;;) {
    uint32_t rel = pos - base;
    int i = rel == 0 ? -1 : floor_log2(rel);
    uint32_t len = i < 0 ? 1 : (1u << i);
    if (partitioned(level, i, len)) {
      base += len;  // child partition of segment i starts at its own start
      ++level;
      continue;
    }
    uint32_t start = base + (1u << (i + 1));
    SegmentLabel l;
    label_of(start, &l);  // always a boundary: the end of a leaf
    return MapPosition{l.index, l.level, start};
  }
}

bool SegmentMap::label_of(uint32_t start, SegmentLabel* out) const {
  if (start >= s_) {
    if (start != s_) return false;
    *out = SegmentLabel{n_, 0};
    return true;
  }
  uint32_t base = 0;
  int level = 0;
  for (;;) {
    uint32_t rel = start - base;
    int i = rel == 0 ? -1 : floor_log2(rel);
    uint32_t len = i < 0 ? 1 : (1u << i);
    uint32_t seg_start = base + (i < 0 ? 0 : len);
    if (seg_start == start) {
      *out = SegmentLabel{i, level};
      return true;
    }
    if (!partitioned(level, i, len)) return false;
    base = seg_start;
    ++level;
  }
}

void SegmentMap::collect(int level, uint32_t base, int p, std::vector<SegmentNode>* out) const {
  out->push_back(SegmentNode{level, -1, base, 1, false});
  for (int j = 0; j < p; ++j) {
    uint32_t len = 1u << j;
    bool part = partitioned(level, j, len);
    out->push_back(SegmentNode{level, j, base + len, len, part});
    if (part) collect(level + 1, base + len, j, out);
  }
}

std::vector<SegmentNode> SegmentMap::nodes() const {
  std::vector<SegmentNode> out;
  if (s_ == 0) return out;
  collect(0, 0, n_, &out);
  return out;
}

}  // namespace hybridstore
