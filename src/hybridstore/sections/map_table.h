// The in-core map table MT(E, s, rho) of one section lane (HFM section 3.3).
//
// One table mt_L per level L of the segment map; entry ent_i of mt_L holds the
// open extents whose free tail starts at segment i of level L, ordered by free
// space, largest first (within one start block: first in, first out). Clean
// extents sit at the head entry of level 0 (tail 0).
//
// An entry of rho-3 layouts collects tails of several start blocks (segment i
// of level L exists under several parents), so each start block has its own
// FIFO bucket and each entry keeps a bitmap of its non-empty buckets in start
// order: the entry's first descriptor is found with a find-first-set. Every
// operation costs O(levels x segments) word operations at most; nothing ever
// walks the extents.
//
// The table does not own extents; the caller keeps them alive while they are
// in the table and sets `tail` and `seq` before insert.
#pragma once
#include <cstdint>
#include <vector>

#include "hybridstore/sections/extent_state.h"
#include "hybridstore/sections/section_config.h"
#include "hybridstore/sections/segment_map.h"

namespace hybridstore {

class MapTable {
 public:
  MapTable() = default;
  explicit MapTable(const SegmentMap& map) { init(map); }
  void init(const SegmentMap& map);

  // Files `e` under the entry of e->tail (a segment start < s), at the end of
  // its bucket. Requires e not in the table.
  void insert(ExtentDesc* e);
  // Requires e in the table.
  void remove(ExtentDesc* e);

  // Policies over the first descriptor of every entry, among those with a free
  // tail >= blocks (HFM Algorithm 1 step 7; ReHypar ALLOCATE step 10):
  //   HFM      the one longest in the table (smallest entered_us, then seq);
  //   ReHypar  the best fit (least free space), then the nearest neighbour
  //            (|hint - last_hint| smallest), then the longest in the table.
  // nullptr when none fits.
  ExtentDesc* pick(SelectionPolicy policy, uint32_t blocks, uint64_t hint) const;

  // The oldest clean extent (head entry of level 0), or nullptr.
  ExtentDesc* clean_head() const { return buckets_.empty() ? nullptr : buckets_[0].head; }

  size_t size() const { return size_; }
  size_t clean_count() const { return clean_; }
  const SegmentMap& segment_map() const { return map_; }

  // Entry of a start block: level and index (for reports and tests).
  SegmentLabel entry_label(uint32_t start) const;
  // Extents of one entry in table order (tests and reports; O(entry)).
  std::vector<const ExtentDesc*> entry_extents(int level, int index) const;

 private:
  struct Bucket {
    ExtentDesc* head = nullptr;
    ExtentDesc* tail = nullptr;
  };
  struct Entry {
    std::vector<uint32_t> starts;     // ascending = free space descending
    std::vector<uint64_t> nonempty;   // bit per start ordinal
  };
  int entry_id(int level, int index) const { return level * width_ + index + 1; }
  ExtentDesc* entry_first(const Entry& en) const;

  SegmentMap map_;
  int width_ = 0;                       // entries per level
  std::vector<Bucket> buckets_;         // by start block, [0, s)
  std::vector<int32_t> entry_of_;       // by start block; -1 when not a segment start
  std::vector<uint32_t> ordinal_;       // by start block: position in its entry
  std::vector<Entry> entries_;          // level * width + index + 1
  std::vector<uint64_t> level_nonempty_;  // per level, bit (index + 1)
  size_t size_ = 0;
  size_t clean_ = 0;  // extents in the head entry of level 0
};

}  // namespace hybridstore
