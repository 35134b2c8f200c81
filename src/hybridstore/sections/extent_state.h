// In-memory descriptors of the section allocator: placements, extents and
// erase units. Shared by the allocator, its map table and free-run index, the
// persistence code and the cleaner; only SectionAllocator mutates them.
//
// Vocabulary
//   block        the allocation unit (hybridstore_ssd_block_size).
//   extent       s blocks of one section; objects are placed inside extents by
//                the segment map / map function.
//   write unit   max(extent, flash erase block): the extents of one write unit
//                are staged in memory and written together in one aligned I/O.
//   erase unit   (EU) the SSD range is cut into EUs of U = max over sections of
//                the write unit; an EU is free or owned by one (section, group)
//                lane and holds U / s extents of that section. The cleaner
//                reclaims whole EUs, like SFS segments.
#pragma once
#include <cstdint>
#include <vector>

namespace hybridstore {

// One allocation inside an extent (a piece of an object).
struct Placement {
  uint32_t start;    // block within the extent
  uint32_t blocks;   // > 0
  uint32_t bytes;    // bytes of object data in it: (blocks-1)*bs < bytes <= blocks*bs
  uint32_t writes;   // hotness input: writes the object had when this was placed
  uint64_t owner;    // the engine's handle of the object (back reference)
  uint64_t born_us;  // hotness input: when the object was created
  uint32_t end() const { return start + blocks; }
};

enum class ExtentState : uint8_t {
  kUntaken = 0,  // never handed out since its EU was taken (no record)
  kOpen = 1,     // in the map table: free tail [tail, s) takes new objects
  kSealed = 2,   // out of the map table, still staged in memory (not written)
  kWritten = 3,  // its write unit was handed to the engine to write
};

struct ExtentDesc {
  uint32_t eu = 0;
  uint32_t idx = 0;  // index within the EU
  ExtentState state = ExtentState::kUntaken;
  bool dirty = false;  // has an unsaved persistence record
  // A written extent whose placements were left in its record at mount
  // (PlacementStore): `placements` is empty and `stored` counts them. Read
  // back before anything changes them, so the record stays their truth.
  bool evicted = false;
  // Open: first block of the free tail, always a segment start given by the map
  // function of the highest placement (0 when empty). Otherwise == s.
  uint32_t tail = 0;
  uint32_t live = 0;        // sum of placement blocks
  uint32_t stored = 0;      // placements in the record while evicted (fits the padding)
  uint64_t entered_us = 0;  // when it became open: the map table's "time in table"
  uint64_t seq = 0;         // order of entry into its map-table bucket
  uint64_t last_hint = 0;   // locality hint of the last placement (ReHypar)
  // Sorted by start, non-overlapping, all below `tail`.
  std::vector<Placement> placements;
  // Free runs of this extent currently in a FreeRunIndex (node ids).
  std::vector<uint32_t> runs;
  // Map-table bucket links (valid while open).
  ExtentDesc* prev = nullptr;
  ExtentDesc* next = nullptr;
};

// One per handed-out extent, 2.3M of them at 10M small objects: the
// eviction flag and count sit in what was padding.
static_assert(sizeof(ExtentDesc) <= 112, "ExtentDesc grew");

struct EraseUnit {
  int32_t lane = -1;          // owning lane, -1 when free
  uint32_t generation = 0;    // bumped each time the EU is taken (stale-queue check)
  uint32_t next_untaken = 0;  // extents [0, next_untaken) have been handed out
  uint32_t live = 0;          // live blocks
  uint32_t open = 0;          // extents in kOpen
  uint32_t unwritten_wus = 0; // write units not yet written
  bool current = false;       // the lane takes fresh extents from this EU
  bool cleaning = false;      // the cleaner is moving its live data out
  bool dirty = false;
  uint64_t last_modified_us = 0;  // latest placement time (cost-benefit age)
  // Exact integer sums over live blocks (hotness inputs of the cleaner).
  uint64_t sum_writes = 0;         // sum of writes x blocks
  unsigned __int128 sum_born = 0;  // sum of born_us x blocks
  // U / s descriptors of the owning section (addresses never move while
  // owned); those at and above next_untaken are pristine. Kept, reset, while
  // the unit is free.
  std::vector<ExtentDesc> extents;
  std::vector<uint8_t> wu_written;     // per write unit
  std::vector<uint64_t> wu_first_us;   // per write unit: when its first extent was taken
  std::vector<uint16_t> wu_open;       // per write unit: extents in kOpen
};

}  // namespace hybridstore
