// The SSD tier's section allocator: HFM data sections over a range of blocks.
//
// Engine-independent: it knows block numbers, never devices, RocksDB or
// objects. Time is a parameter (`now_us`), so callers decide the clock.
//
// What it guarantees
//  * Every allocation follows the section's segment map: a small object (fewer
//    blocks than the extent) goes to a staged gap that fits (best fit, sections
//    with gaps=on), else to the free tail of an open extent chosen by the
//    section's policy from the map table (HFM: longest in table; ReHypar: best
//    fit, then nearest neighbour), else - when the SSD is short of clean space
//    and the section has holes=fill - into the tightest free run of any
//    holes=fill section of the same group (holes of written extents, staged
//    gaps of other sections) when it fits more tightly than the chosen tail,
//    else to the tail, else to a clean extent. After a tail placement the next
//    start is the map function's; an extent whose free tail drops below theta
//    is sealed.
//  * An object of len >= s takes floor(len/s) clean extents (contiguous where
//    the erase unit allows, reported as few pieces as possible). Its remainder
//    follows the section's `remainder` mode: fresh = docs/algorithms.md, the head of
//    one more clean extent whose tail re-enters the map table; table = placed
//    like a small object of this section; down (default) = allocated like an
//    object of its own size in the next smaller section (recursively), falling
//    back to `table`. `down` keeps the tails of large extents from waiting for
//    remainders that fit them: see docs/hfm-allocation.md for the measurement.
//  * Work per call is bounded by levels x segments of the map table plus the
//    free-run buckets; nothing scans all extents.
//  * An erase unit (see extent_state.h) is filled by one (section, group) lane
//    only, so one flash erase block never mixes hotness groups. Extents are
//    staged (the engine keeps their data in memory, durable through its
//    deferred path) until every extent of their write unit is sealed; then
//    collect() hands out a WriteRegion asking the engine to write the whole
//    write unit in one aligned I/O. Gaps of staged extents keep taking small
//    objects until then. A staging timeout (tick), a cap on staged write units
//    per lane and flush() force the write of partly filled units.
//  * release() of a range leaves a hole; holes in written extents are counted
//    per extent and per erase unit; an erase unit without live blocks returns
//    to the free pool. The cleaner (hole_cleaner.h) picks victims from the
//    per-unit accounting and lists their live ranges; the engine moves them.
//
// What the caller must do
//  * Write the data of every staged piece into the staging buffer of its
//    extent; call collect() (or tick()) once per transaction batch and write
//    each WriteRegion's extents (zero elsewhere) in one I/O; write in_place
//    pieces directly (they land in extents already written; use the deferred
//    path because blocks may be smaller than the device sector). Keep staged
//    data durable (deferred records) until its region is on the device.
//  * Persist drain_records() in the same RocksDB batch as the metadata that
//    references the blocks, and rebuild() at mount from what was persisted.
//  * Serialise calls: the allocator is not thread-safe - except for the
//    lending calls (lend_units, take_back_units, lent_units) and the counts
//    free_erase_units() and consumed_blocks(), which may run on any thread
//    at any time (see pool_mutex_).
#pragma once
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "hybridstore/sections/extent_state.h"
#include "hybridstore/sections/free_run_index.h"
#include "hybridstore/sections/map_table.h"
#include "hybridstore/sections/section_config.h"
#include "hybridstore/sections/segment_map.h"

namespace hybridstore {

class Config;

struct AllocatorGeometry {
  uint64_t first_block = 0;  // start of the SSD range, in allocation blocks
  uint64_t blocks = 0;       // length of the range, in allocation blocks
  uint32_t block_size = 256;
  uint64_t erase_block_bytes = 0;  // flash erase block; 0 = unknown (no collection)
  uint32_t groups = 1;             // hotness groups (lanes per section)
  std::vector<SectionSpec> sections;
};

// The geometry of an SSD range [offset, offset + bytes) (device bytes) from the
// registry: hybridstore_ssd_block_size, hybridstore_ssd_sections,
// hybridstore_flash_erase_block, hybridstore_ssd_hotness_groups. Returns 0, or
// -EINVAL with *error (a bad section text, a range not aligned to the block).
int make_allocator_geometry(const Config& cfg, uint64_t offset, uint64_t bytes,
                            AllocatorGeometry* out, std::string* error);

struct AllocatorTuning {
  uint64_t staging_timeout_us = 5'000'000;
  uint32_t max_staged_units = 4;  // per lane, staged write units besides the newest
  double hole_fill_below = 0.05;  // free-EU fraction under which holes=fill fills holes

  // From hybridstore_ssd_staging_timeout, hybridstore_ssd_max_staged_units and
  // hybridstore_ssd_hole_fill_below.
  static AllocatorTuning from_config(const Config& cfg);
};

struct AllocRequest {
  uint64_t bytes = 0;    // object length, > 0
  int section = 0;       // from SectionRouter; not a bypass section
  uint32_t group = 0;    // hotness group, < groups
  uint64_t owner = 0;    // back reference for the cleaner
  uint64_t hint = 0;     // locality key for ReHypar's nearest neighbour
  uint32_t writes = 1;   // hotness inputs (SFS): the object's write count ...
  uint64_t born_us = 0;  // ... and creation time
  uint64_t now_us = 0;
  // The caller can write whole write units now, from the data in hand: a
  // unit this request fills alone is handed over written (AllocPiece::direct)
  // instead of being staged until a region asks for it.
  bool direct = false;
};

// One contiguous piece of an allocation, in object order; the last piece holds
// the object's last (possibly partial) block.
struct AllocPiece {
  uint64_t block;   // absolute block number
  uint64_t blocks;
  uint64_t bytes;   // object bytes in the piece
  bool in_place;    // lands in an already written extent: write it directly
  // Whole write units this request filled alone (AllocRequest::direct): the
  // caller writes them before the allocation commits; no region follows.
  bool direct = false;
};

// A write unit whose extents are all sealed: write [block, block + blocks) in
// one aligned I/O, with the staged data of `extents` and zeros elsewhere.
struct WriteRegion {
  uint64_t block;
  uint32_t blocks;
  int section;
  uint32_t group;
  bool forced;  // timeout, staging cap or flush wrote it partly filled
  std::vector<std::pair<uint64_t, uint32_t>> extents;  // (block, blocks) holding data
};

struct AllocEvents {
  std::vector<WriteRegion> regions;
  std::vector<uint64_t> sealed;  // first block of each extent sealed
  void clear() {
    regions.clear();
    sealed.clear();
  }
};

// A live range inside an erase unit, for the cleaner.
struct LiveRange {
  uint64_t block;
  uint32_t blocks;
  uint32_t bytes;
  uint32_t writes;
  uint64_t owner;
  uint64_t born_us;
};

struct EraseUnitInfo {
  bool owned = false;
  int section = -1;
  uint32_t group = 0;
  uint32_t live_blocks = 0;
  uint32_t capacity_blocks = 0;
  bool written = false;   // every write unit written and no longer the lane's current
  bool cleaning = false;
  uint64_t last_modified_us = 0;
  double mean_writes = 0;   // over live blocks
  double mean_born_us = 0;  // over live blocks
};

// Space of one section, in blocks unless said otherwise. consumed = erase
// units owned x unit size = live + open_tail + staged_free + holes + untaken.
struct SectionUsage {
  std::string name;
  uint32_t erase_units = 0;
  uint64_t consumed_blocks = 0;
  uint64_t live_blocks = 0;
  uint64_t live_bytes = 0;
  uint64_t open_tail_blocks = 0;    // free tails of open extents
  uint64_t staged_free_blocks = 0;  // free below the tail / in sealed extents, not yet written
  uint64_t hole_blocks = 0;         // free inside written extents
  uint64_t untaken_blocks = 0;      // extents of owned units not handed out yet
  uint64_t extents_open = 0, extents_sealed = 0, extents_written = 0;
  uint64_t placements = 0;
};

// A record the engine must persist (put) or delete, keyed by key().
struct PersistOp {
  enum class Kind : uint8_t { kPut, kDelete };
  enum class Type : uint8_t { kEraseUnit = 1, kExtent = 2 };
  Kind kind;
  Type type;
  uint32_t eu;
  uint32_t extent;     // kExtent only
  std::string value;   // sealed record (kPut)
  // Big-endian [type][eu][extent]: byte order = numeric order.
  std::string key() const;
};

// The persisted records rebuild() reads, one at a time, in ascending byte
// order of their keys (PersistOp::key(); RocksDB's order), so that a mount
// holds one record at a time, not all of them. next() returns 1 with a
// record, whose views stay valid until the next call, 0 at the end, or < 0
// with *error when the records cannot be read.
class AllocatorRecordSource {
 public:
  virtual ~AllocatorRecordSource() = default;
  virtual int next(std::string_view* key, std::string_view* value, std::string* error) = 0;
};

// Where a mount may leave the placements of written extents: in their
// records, read back when a release, a hole fill, the cleaner or a check
// needs them (docs/memory.md, step 8). At 10M small objects they were 311 MB
// of a mount's memory; almost none of them is touched between two mounts.
class PlacementStore {
 public:
  virtual ~PlacementStore() = default;
  // The extent's record as drain_records() last wrote it. 0, or < 0 with
  // *error.
  virtual int read_extent_record(uint32_t eu, uint32_t idx, std::string* value, std::string* error) = 0;
};

// What rebuild() does with written extents' placements: with a store, it
// leaves them there, but for an extent one of whose placements `keep`
// returns true for (the caller will look at it after the rebuild, as a
// mount does at crash leftovers).
struct RebuildOptions {
  PlacementStore* placements = nullptr;
  std::function<bool(uint64_t block, uint64_t blocks)> keep;
};

class SectionAllocator {
 public:
  // Returns 0, or -EINVAL with *error when the geometry is unusable.
  static int create(const AllocatorGeometry& geo, const AllocatorTuning& tune,
                    std::unique_ptr<SectionAllocator>* out, std::string* error);

  // Rebuilds the allocator (extent descriptors, map tables, free-run indices,
  // staging queues) from persisted records, as produced by PersistOp::key() and
  // drain_records(). Every record is checked; garbage, records that contradict
  // each other or the geometry give -EINVAL / -EIO with *error.
  static int rebuild(const AllocatorGeometry& geo, const AllocatorTuning& tune,
                     const std::vector<std::pair<std::string, std::string>>& records,
                     uint64_t now_us, std::unique_ptr<SectionAllocator>* out,
                     std::string* error, const RebuildOptions& opts = {});
  // The same from a source that yields the records in key order, as a mount
  // reads them from RocksDB; a key out of order or repeated is -EIO.
  static int rebuild(const AllocatorGeometry& geo, const AllocatorTuning& tune,
                     AllocatorRecordSource* records, uint64_t now_us,
                     std::unique_ptr<SectionAllocator>* out, std::string* error,
                     const RebuildOptions& opts = {});

  // The geometry record written at mkfs; check_geometry_record() at mount says
  // whether the configured geometry matches it (mkfs-only options).
  std::string geometry_record() const;
  int check_geometry_record(std::string_view record, std::string* error) const;

  // 0, -EINVAL (bad request) or -ENOSPC (section full; nothing stays allocated,
  // but regions already emitted must still be written). `pieces` is replaced.
  int allocate(const AllocRequest& req, std::vector<AllocPiece>* pieces, AllocEvents* ev);
  // Tries req.section, then the other sections nearest in extent size.
  // *used gets the section that took it.
  int allocate_with_fallback(const AllocRequest& req, std::vector<AllocPiece>* pieces,
                             AllocEvents* ev, int* used);
  // Frees [block, block + blocks), which must lie in live placements (a whole
  // piece or part of one). 0 or -EINVAL (nothing changed).
  int release(uint64_t block, uint64_t blocks, uint64_t now_us);

  // WriteRegion events for the write units completed since the last call.
  // Completing a unit only queues it, so that building the region stays off
  // the allocation path; the engine calls this once per transaction batch
  // (tick and flush call it too). Forced writes (staging cap) are reported by
  // the call that forced them.
  void collect(AllocEvents* ev);
  // Staging timeout: collect(), then seals and writes write units staged for
  // too long.
  void tick(uint64_t now_us, AllocEvents* ev);
  // Seals and writes every staged write unit (umount, sync).
  void flush(uint64_t now_us, AllocEvents* ev);

  // --- cleaner support ---
  uint32_t erase_unit_count() const { return static_cast<uint32_t>(eus_.size()); }
  uint32_t free_erase_units() const { return free_count_.load(std::memory_order_relaxed); }
  // Free units a lane may still take: those above the floor. What the
  // cleaner weighs, so that a floor kept for the kvfs reads as a full tier.
  uint32_t takeable_units() const {
    const uint32_t f = free_erase_units(), fl = floor_units_.load(std::memory_order_relaxed);
    return f > fl ? f - fl : 0;
  }
  uint32_t erase_unit_blocks() const { return eu_blocks_; }
  uint64_t erase_unit_block(uint32_t eu) const { return base_ + uint64_t(eu) * eu_blocks_; }
  EraseUnitInfo erase_unit_info(uint32_t eu) const;
  // The live ranges of a unit; with `resident_only`, not those of extents
  // whose placements are in their records. -EIO with *error when a record
  // cannot be read back.
  int live_ranges(uint32_t eu, std::vector<LiveRange>* out, std::string* error = nullptr,
                  bool resident_only = false) const;
  // Written extents whose placements are in their records, and how many
  // placements those hold.
  void evicted(uint64_t* extents, uint64_t* placements) const;
  // Where placements are read back from, for a walk that reads them in
  // key order (fsck) through an iterator instead of one lookup each.
  // Returns the one it replaces, to be put back.
  PlacementStore* swap_placement_store(PlacementStore* s) {
    PlacementStore* old = placement_store_;
    placement_store_ = s;
    return old;
  }
  // Marks an erase unit as being cleaned: its holes take no new data. Requires
  // a written unit. 0 or -EINVAL.
  int begin_cleaning(uint32_t eu);
  // Abandons cleaning (the unit keeps its remaining live data). 0 or -EINVAL.
  int end_cleaning(uint32_t eu);

  // --- lending whole erase units to the KV file system (docs/kvfs.md 2.5) ---
  // A lent unit is in neither the free pool nor a lane, and has no record:
  // the kvfs's own log is the only record of it. These three take only
  // pool_mutex_, never the caller's serialisation, so a lend cannot wait
  // behind a transaction.
  // Up to `n` free units, appended to *out (the highest numbers first: data
  // lanes take the lowest); the number lent, or -ENOSPC when none is free.
  // The floor does not apply.
  int lend_units(uint32_t n, std::vector<uint32_t>* out);
  // Lent units back to the free pool; -EINVAL (nothing changed) when one is
  // not lent.
  int take_back_units(const std::vector<uint32_t>& eus);
  std::vector<uint32_t> lent_units() const;
  // take_eu leaves the last `n` free units to lend_units.
  void set_floor_units(uint32_t n) { floor_units_.store(n, std::memory_order_relaxed); }
  // Mount, after rebuild: takes the units the kvfs owns out of the pool. A
  // unit with live placements is a conflict (-EIO, *error names it); one
  // owned without them holds records that survived the unit's free (its
  // record delete had not committed): it is freed first, even when it is a
  // lane's current unit, and its record deletes ride the next drain.
  // *stale gets those units.
  int exclude_units(const std::vector<uint32_t>& eus, std::vector<uint32_t>* stale, std::string* error);

  // --- persistence ---
  // Records changed since the last call: deletes first, then puts.
  void drain_records(std::vector<PersistOp>* out);
  // Benches that never persist can turn the bookkeeping off.
  void set_track_records(bool on) { track_ = on; }

  // --- inspection ---
  const AllocatorGeometry& geometry() const { return geo_; }
  const AllocatorTuning& tuning() const { return tune_; }
  int section_count() const { return static_cast<int>(geo_.sections.size()); }
  const SectionSpec& section(int i) const { return geo_.sections[i]; }
  std::vector<SectionUsage> usage() const;
  // The heap its per-unit and per-extent state holds (descriptors,
  // placements, free-run lists), and how many placements: a walk of every
  // owned unit's extents, for the store's mempools, not a hot path.
  void memory(uint64_t* placements, uint64_t* bytes) const;
  // The totals of usage()'s consumed_blocks and live_blocks without its scan
  // of every extent: the store asks on every small write whether the SSD can
  // absorb it, and the scan grew with the SSD's fill (40% of a 4 KiB
  // overwrite run's CPU once the SSD held many absorbed pieces).
  // Lent units count: kvfs space is consumed space of the tier.
  uint64_t consumed_blocks() const {
    return uint64_t(eus_.size() - free_count_.load(std::memory_order_relaxed)) * eu_blocks_;
  }
  uint64_t live_blocks() const;
  // Sections ordered for fallback from `section` (itself first).
  const std::vector<int>& fallback_order(int section) const { return fallback_[section]; }
  // Map table of a lane (tests and reports).
  const MapTable& map_table(int section, uint32_t group) const;
  // Checks every invariant against a recomputation from the descriptors; an
  // empty string when all hold. O(everything): for tests and fsck.
  std::string verify() const;
  // A canonical text of the whole state (tests compare rebuilt allocators).
  std::string dump() const;

 private:
  struct SectionRt {
    SegmentMap map;
    uint32_t s = 0;              // extent blocks
    uint32_t extents_per_eu = 0;
    uint32_t extents_per_wu = 0;
  };
  struct StagedRef {
    uint32_t eu;
    uint32_t wu;
    uint32_t generation;
    uint64_t first_us;
  };
  struct Lane {
    int section = -1;
    uint32_t group = 0;
    MapTable table;
    FreeRunIndex gaps;   // free runs of staged extents
    FreeRunIndex holes;  // free runs of written extents (holes=fill)
    int32_t current = -1;
    std::deque<StagedRef> staged;
    uint32_t staged_count = 0;  // started, unwritten write units
    uint64_t live_blocks = 0;
    uint64_t live_bytes = 0;
    uint32_t eus = 0;
  };
  struct DirtyExtent {
    uint32_t eu, idx, generation;
  };

  SectionAllocator() = default;
  int init(const AllocatorGeometry& geo, const AllocatorTuning& tune, std::string* error);

  Lane& lane_of(const EraseUnit& u) { return lanes_[u.lane]; }
  const SectionRt& rt_of(const EraseUnit& u) const { return secs_[lanes_[u.lane].section]; }
  uint64_t extent_block(const ExtentDesc& e) const {
    return erase_unit_block(e.eu) + uint64_t(e.idx) * rt_of(eus_[e.eu]).s;
  }
  uint32_t wu_of(const EraseUnit& u, uint32_t idx) const { return idx / rt_of(u).extents_per_wu; }
  bool holes_indexed(const Lane& l, const EraseUnit& u) const {
    return geo_.sections[l.section].holes == HoleMode::kFill && !u.cleaning;
  }
  double free_fraction() const { return eus_.empty() ? 0 : double(takeable_units()) / eus_.size(); }

  // Small-object path; false when nothing fits. `allow_fresh` = may take a clean extent.
  bool allocate_in(int section, const AllocRequest& req, uint64_t bytes,
                   std::vector<AllocPiece>* pieces, AllocEvents* ev);
  int remainder_section(int section, uint32_t blocks) const;
  bool place_small(Lane& l, const AllocRequest& req, uint32_t blocks, uint32_t bytes,
                   AllocEvents* ev, AllocPiece* out);
  uint32_t best_free_run(Lane& l, uint32_t blocks, Lane** lane, FreeRunIndex** index);
  ExtentDesc* take_fresh(Lane& l, uint64_t now, AllocEvents* ev);
  uint64_t fresh_available(const Lane& l) const;
  void place_at_tail(Lane& l, ExtentDesc* e, const AllocRequest& req, uint32_t blocks,
                     uint32_t bytes, AllocEvents* ev, AllocPiece* out);
  bool place_in_run(Lane& l, FreeRunIndex& idx, uint32_t run, const AllocRequest& req,
                    uint32_t blocks, uint32_t bytes, AllocPiece* out);
  void account(ExtentDesc* e, const Placement& p, int sign, uint64_t now);
  // e's placements, read back from its record when evicted: into e itself
  // (load_placements, before a change), or into *scratch for a reader.
  int load_placements(ExtentDesc* e, std::string* error);
  const std::vector<Placement>* placements_of(const ExtentDesc& e, std::vector<Placement>* scratch,
                                              std::string* error) const;
  int read_back(const ExtentDesc& e, std::vector<Placement>* out, std::string* error) const;
  // Restore: a written extent's holes indexed, then its placements left in
  // the record when the rebuild's options allow.
  void settle_written(ExtentDesc* e, const RebuildOptions& opts);
  void seal(ExtentDesc* e, bool in_table, AllocEvents* ev);
  bool wu_complete(uint32_t eu, uint32_t wu) const;
  void emit(uint32_t eu, uint32_t wu, bool forced, AllocEvents* ev);
  // Marks write units that pieces[from..] fill whole as written by the
  // caller, splitting pieces at their edges (AllocRequest::direct).
  void hand_over_whole_units(std::vector<AllocPiece>* pieces, size_t from);
  void force_wu(uint32_t eu, uint32_t wu, AllocEvents* ev);
  void enforce_staging_cap(Lane& l, AllocEvents* ev);
  void maybe_free_eu(uint32_t eu);
  int take_eu(Lane& l);
  void refresh_runs(ExtentDesc* e, uint32_t lo, uint32_t hi);
  void add_free_runs(FreeRunIndex& idx, ExtentDesc* e, uint32_t lo, uint32_t hi);
  int release_in_extent(ExtentDesc* e, uint32_t a, uint32_t b, uint64_t now, bool apply);
  void mark(ExtentDesc* e);
  void mark(uint32_t eu);
  std::string encode_eu(uint32_t eu) const;
  std::string encode_extent(const ExtentDesc& e) const;
  int restore(AllocatorRecordSource* records, const RebuildOptions& opts, std::string* error);
  // restore()'s steps: one erase unit's record; the lanes' current units,
  // once every unit is in; one extent's record.
  int restore_eu(uint32_t eu, std::string_view value, std::string* error);
  int restore_current_units(std::string* error);
  int restore_extent(uint32_t eu, uint32_t idx, std::string_view value, const RebuildOptions& opts,
                     std::string* error);
  // The second half of restore(): the open-extent tables, free runs and
  // staged write units, derived from the restored units and extents.
  int index_restored(std::string* error);
  // What verify() counts per lane while it walks the erase units.
  struct LaneTally {
    uint64_t live = 0, bytes = 0;
    uint32_t eus = 0, staged = 0;
    size_t open = 0;
    int32_t current = -1;
  };
  std::string verify_free_runs(const Lane& l, const EraseUnit& u, const ExtentDesc& e,
                               const std::vector<Placement>& placements, uint32_t limit) const;
  std::string verify_lane(size_t li, const LaneTally& t) const;

  AllocatorGeometry geo_;
  AllocatorTuning tune_;
  std::vector<SectionRt> secs_;              // indexed like geo_.sections (bypass: s = 0)
  std::vector<std::vector<int>> fallback_;
  FreeRunIndex::Pool run_pool_;              // nodes of every lane's gaps and holes
  std::vector<Lane> lanes_;                  // section * groups + group
  std::vector<EraseUnit> eus_;
  uint64_t base_ = 0;        // first block of EU 0 (aligned to the unit)
  uint32_t eu_blocks_ = 0;   // U
  // The pool: lending runs on other threads than the serialised calls, so
  // the bits and the count change only under pool_mutex_ (the innermost
  // lock: nothing else is taken while it is held). free_count_ is atomic
  // for the readers that take no lock.
  mutable std::mutex pool_mutex_;
  std::vector<uint64_t> free_bits_;  // bit per free EU
  std::vector<uint64_t> lent_bits_;  // bit per EU lent to the kvfs
  std::atomic<uint32_t> free_count_{0};
  std::atomic<uint32_t> floor_units_{0};
  uint64_t seq_ = 0;
  bool track_ = true;
  PlacementStore* placement_store_ = nullptr;  // set by rebuild(); outlives the allocator
  std::vector<DirtyExtent> dirty_extents_;
  std::vector<uint32_t> dirty_eus_;
  std::vector<std::pair<uint32_t, uint32_t>> deleted_extents_;
  std::vector<StagedRef> ready_;  // completed write units awaiting collect()
  // Scratch for release() validation.
  std::vector<std::pair<ExtentDesc*, std::pair<uint32_t, uint32_t>>> scratch_;
};

}  // namespace hybridstore
