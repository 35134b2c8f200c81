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
#include <memory>
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

struct ExtentDesc;

// What only some extents need, on the heap while they need it: the
// placements while they are in memory, the free runs while an index lists
// them, and the map-table state of an open or sealed extent. A written
// extent whose placements are in its record and which has no holes
// indexed needs none of it (ExtentDesc::compact): at 10M small objects
// that is nearly every one of 2.3M extents (docs/memory.md, step 8).
struct ExtentDetail {
  // Sorted by start, non-overlapping, all below the extent's tail.
  std::vector<Placement> placements;
  // Free runs of this extent currently in a FreeRunIndex (node ids).
  std::vector<uint32_t> runs;
  // Map-table state; zero once the extent is written (it never re-enters
  // the table).
  uint64_t entered_us = 0;  // when it became open: the map table's "time in table"
  uint64_t seq = 0;         // order of entry into its map-table bucket
  uint64_t last_hint = 0;   // locality hint of the last placement (ReHypar)
  // Map-table bucket links (valid while open).
  ExtentDesc* prev = nullptr;
  ExtentDesc* next = nullptr;
};

struct ExtentDesc {
  uint32_t eu = 0;
  uint32_t idx = 0;  // index within the EU
  ExtentState state = ExtentState::kUntaken;
  bool dirty = false;  // has an unsaved persistence record
  // A written extent whose placements were left in its record at mount
  // (PlacementStore): it holds none and `stored` counts them. Read back
  // before anything changes them, so the record stays their truth.
  bool evicted = false;
  // Open: first block of the free tail, always a segment start given by the map
  // function of the highest placement (0 when empty). Otherwise == s.
  uint32_t tail = 0;
  uint32_t live = 0;    // sum of placement blocks
  uint32_t stored = 0;  // placements in the record while evicted
  std::unique_ptr<ExtentDetail> detail;

  ExtentDesc() = default;
  ExtentDesc(ExtentDesc&&) = default;
  ExtentDesc& operator=(ExtentDesc&&) = default;

  // Reads never allocate: an extent without detail has none of these.
  const std::vector<Placement>& placements() const { return detail ? detail->placements : kNoPlacements; }
  const std::vector<uint32_t>& runs() const { return detail ? detail->runs : kNoRuns; }
  uint64_t entered_us() const { return detail ? detail->entered_us : 0; }
  uint64_t seq() const { return detail ? detail->seq : 0; }
  uint64_t last_hint() const { return detail ? detail->last_hint : 0; }
  ExtentDesc* prev() const { return detail ? detail->prev : nullptr; }
  ExtentDesc* next() const { return detail ? detail->next : nullptr; }
  // For a change: the detail, made when the extent had none.
  ExtentDetail& more() {
    if (!detail) detail = std::make_unique<ExtentDetail>();
    return *detail;
  }
  std::vector<Placement>& placements_mut() { return more().placements; }
  std::vector<uint32_t>& runs_mut() { return more().runs; }
  // Drops the detail of a written extent that keeps nothing in it.
  void compact() {
    if (detail && state == ExtentState::kWritten && detail->placements.empty() && detail->runs.empty())
      detail.reset();
  }

 private:
  static const std::vector<Placement> kNoPlacements;
  static const std::vector<uint32_t> kNoRuns;
};

// One per extent of an owned erase unit, 2.3M of them at 10M small objects.
static_assert(sizeof(ExtentDesc) <= 32, "ExtentDesc grew");

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
