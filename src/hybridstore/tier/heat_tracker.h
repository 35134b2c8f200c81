// HeatTracker: per-object access history for tier placement (seed: HRO).
//
// For every tracked object it keeps the fields of HRO's hash entry: access
// frequency f, randomness count R, size, and the last request (type, time,
// offset, end). record() applies HRO's Algorithm 1 as docs/algorithms.md fixes it:
//
//   a request *continues* the last one when it has the same type, arrives less
//   than `continuation_us` (0.5 s) after it, and starts exactly where the last
//   one ended; then only the last end and time move. Otherwise R += 1 and the
//   request becomes the new last request. Every request adds 1 to f.
//
// (The paper's pseudo-code nests the three tests without an else branch, so a
// same-type request that fails the time or offset test would change nothing;
// we follow docs/algorithms.md and count it as random, which is what the prose of
// the paper describes.) The first request to an object starts a segment, so a
// new entry has f = R = 1.
//
// Windows and decay. f and R count accesses per *window*. advance_window()
// (or advance_to(now) for time-aligned windows) closes the current window:
// afterwards a count seen k windows ago weighs decay^k. decay = 0 keeps only
// the current window (the paper's per-day counts), decay = 1 never forgets.
// Folding is lazy (an entry is brought up to date when next touched), so
// advancing a window is O(1). Take the planner's snapshot() *before*
// advance_window(), or with decay = 0 it would see only empty windows.
//
// Bounded memory. At most `max_objects` entries are tracked. When a shard is
// full, the coldest 1/16 of that shard is evicted in one pass before the new
// entry goes in. "Coldest" = lowest decayed frequency f (as of the current
// window); among equals, the least recently accessed goes first. Eviction is
// exact within a shard; keys are spread evenly over shards by hash, so it
// approximates the global order. memory_bytes() estimates the heap footprint:
// 136 bytes per entry with a key of up to 15 bytes (16 of them the on-demand
// delta below), plus one heap block for a longer key (200 bytes in all with a
// 40-byte key; measured in heat_tracker_test).
// Each shard is a StringTable (common/string_table.h): a lookup costs about
// three cache misses, not the five of a std::unordered_map.
//
// Thread safety: every method may be called concurrently. Entries are spread
// over `shards` hash shards, each with its own mutex; record() takes one shard
// lock and does one hash lookup. snapshot() and export_dirty() lock one shard at
// a time, so they see each shard consistently but not all shards at one instant.
//
// Persistence. The engine stores one RocksDB record per object (key = its own
// prefix + the object key, value = a HeatRecord, kv/heat_record.h) and one
// tracker-state record. export_dirty() returns what changed since the last
// export; at mount the engine calls import_state() and then import_entry() for
// every stored record, before any record(). Records are versioned and
// crc32c-checked; import rejects garbage with -EIO and a message, and never
// crashes on it.
//
// On demand (options.on_demand; docs/memory.md, "1. Heat"). Memory holds a
// hot set of at most `max_bytes`, and the stored records are the history:
// the mount imports the state only. A miss inserts a fresh entry (f = R = 1,
// as for a new object) without reading the store; each entry also keeps the
// delta of its counts since it was last written, and what leaves memory
// (evicted coldest first, or written by export_dirty()) goes out as a merge
// operand of that delta, which HeatMergeOperator adds to the stored record.
// forget() writes a delete. lookup() and snapshot() see the hot set only;
// lookup_merged() adds an entry's unwritten delta to its stored record, for
// the migration pass that reads the records in key order.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hybridstore/kv/heat_record.h"

namespace hybridstore {

class Config;

struct HeatTrackerOptions {
  size_t max_objects = 1000000;          // cap on tracked objects (>= shards)
  double decay = 0.5;                    // weight of a window per window of age, in [0, 1]
  uint64_t continuation_us = 500000;     // HRO's 0.5 s continuation window
  uint64_t window_us = 86400000000ull;   // window length for advance_to() (one day)
  unsigned shards = 32;                  // power of two, <= max_objects
  // The hot set over stored records (see the top of this file); max_objects
  // then does not apply, max_bytes does (what memory_bytes() reports).
  bool on_demand = false;
  size_t max_bytes = 64ull << 20;
};

// From hybridstore_tier_heat_max_objects, _window_sec, _decay, _continuation_ms,
// _mode and _memory.
HeatTrackerOptions heat_tracker_options_from_config(const Config& conf);

// One object's heat, as of the current window (decay applied).
struct HeatSample {
  std::string key;
  uint64_t size = 0;
  double frequency = 0;   // f: accesses in the window, plus decayed history
  double randomness = 0;  // R: segments (non-continuing requests), same weighting
  AccessType last_type = AccessType::kRead;
  uint64_t last_time_us = 0;
  uint64_t last_offset = 0;
  uint64_t last_end = 0;
};

// What changed since the last export_dirty(), for the engine to write in one
// RocksDB batch. When `full` is set the stored set is no longer trustworthy
// (too many erasures were dropped): delete every stored heat record first, then
// write `put`, which then holds every tracked entry. Otherwise apply `erase`
// before `put` (a key evicted and tracked again appears in both).
struct HeatDelta {
  bool full = false;
  std::vector<std::pair<std::string, std::string>> put;  // object key -> encoded entry
  std::vector<std::string> erase;                        // object keys to delete
  std::string state;                                     // encoded tracker state
  // On demand only, in the order they must be applied: merge operands of
  // deltas, and deletes.
  struct Op {
    std::string key;
    std::string operand;  // an encoded HeatRecord; empty: delete the key's record
  };
  std::vector<Op> ops;
};
using HeatOp = HeatDelta::Op;

class HeatTracker {
 public:
  explicit HeatTracker(const HeatTrackerOptions& opts);
  ~HeatTracker();
  HeatTracker(const HeatTracker&) = delete;
  HeatTracker& operator=(const HeatTracker&) = delete;

  // One read or write of `len` bytes at `offset`, at time `now_us` (any
  // monotonic microsecond clock; the engine's or a virtual one). `object_size`
  // is the object's size after the request. With `counts` false only the
  // last request moves (for the next one's continuation test) and f and R
  // stay: the engine records so the small writes the SSD absorbs into
  // objects on the HDD, which need no promotion to be fast.
  void record(std::string_view key, AccessType type, uint64_t offset, uint64_t len,
              uint64_t now_us, uint64_t object_size, bool counts = true);
  // The object was removed: drop its entry (and its stored record at next export).
  void forget(std::string_view key);

  bool lookup(std::string_view key, HeatSample* out) const;
  // On demand: the object's heat as the store would have it after the next
  // export, its stored record (null: none) plus the hot entry's unwritten
  // delta. False when neither exists.
  bool lookup_merged(std::string_view key, const HeatRecord* stored, HeatSample* out) const;
  // On demand: where entries leaving memory go, called outside the tracker's
  // locks with the operands in order (evictions on a client's record(), a
  // forget()). Unset, they wait for export_dirty(). Set before use.
  void set_spill(std::function<void(std::vector<HeatOp>&&)> spill) { spill_ = std::move(spill); }
  // Every tracked entry; order is unspecified.
  std::vector<HeatSample> snapshot() const;

  // Closes the current window.
  void advance_window();
  // Closes every window that ended at or before `now_us` (windows are aligned
  // on multiples of window_us); returns how many. The first call only anchors.
  uint32_t advance_to(uint64_t now_us);
  uint32_t window() const { return epoch_.load(std::memory_order_relaxed); }

  size_t size() const;
  uint64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }
  size_t memory_bytes() const;
  // Estimated heap bytes per tracked entry whose key is `key_len` bytes long.
  static size_t bytes_per_entry(size_t key_len);

  HeatDelta export_dirty();
  // export_dirty() in parts, so that a caller can write each and free it
  // before the next is built (a million dirty entries are ~150 MB as a
  // delta, ~50 MB more as one batch): begin_export() says whether this
  // export is full, export_shard(i, full, &d) adds shard i's part to d
  // (0 <= i < shards()), export_state() is the tracker-state record.
  bool begin_export();
  void export_shard(unsigned shard, bool full, HeatDelta* d);
  std::string export_state() const { return encode_state(); }
  unsigned shards() const { return opts_.shards; }
  int import_state(std::string_view record, std::string* error);
  int import_entry(std::string_view key, std::string_view record, std::string* error);

  const HeatTrackerOptions& options() const { return opts_; }

 private:
  struct Entry {
    uint64_t size = 0;
    uint64_t last_offset = 0;
    uint64_t last_end = 0;  // invariant: last_end >= last_offset
    uint64_t last_time_us = 0;
    // Counts of windows before `epoch`, already weighted to `epoch`.
    float hist_f = 0;
    float hist_r = 0;
    // Counts in window `epoch`; invariant: cur_r <= cur_f (every segment start
    // is an access).
    uint32_t cur_f = 0;
    uint32_t cur_r = 0;
    uint32_t epoch = 0;  // invariant: <= the tracker's epoch_
    // On demand: the part of the counts above not yet written (same epoch).
    float d_hist_f = 0;
    float d_hist_r = 0;
    uint32_t d_cur_f = 0;
    uint32_t d_cur_r = 0;
    AccessType last_type = AccessType::kRead;
    bool dirty = false;  // changed since the last export
  };
  struct Shard;

  Shard& shard_for(uint64_t key_hash) const;
  // Brings e's counts to window `epoch` (applies decay for the windows missed).
  void fold(Entry* e, uint32_t epoch) const;
  double decayed(double v, uint32_t from, uint32_t to) const;
  double coldness_f(const Entry& e, uint32_t epoch) const;
  // Evicts the coldest 1/16 of the shard; on demand their deltas go to *out.
  void evict_coldest(Shard* s, uint32_t epoch, std::vector<HeatOp>* out);
  // On demand: the entry's unwritten delta, as a merge operand's record.
  HeatRecord delta_of(const Entry& e) const;
  // On demand: whether one more entry of this key length would take the
  // shard past its share of max_bytes.
  bool over_budget(const Shard& s, size_t key_len) const;
  // Hands `ops` on once every earlier ticket of the shard was served.
  void spill(Shard* s, std::vector<HeatOp>* ops, uint64_t ticket);
  HeatSample sample_of(const std::string& key, const Entry& e, uint32_t epoch) const;
  std::string encode_entry(const Entry& e) const;
  int decode_entry(std::string_view record, Entry* e, std::string* error) const;
  std::string encode_state() const;
  void note_erased(Shard* s, const std::string& key);

  HeatTrackerOptions opts_;
  size_t shard_cap_;   // entries per shard; shards * shard_cap_ <= max_objects
  size_t erase_cap_;   // erasures remembered per shard before a full export is needed
  size_t shard_bytes_ = 0;  // on demand: each shard's share of max_bytes
  std::function<void(std::vector<HeatOp>&&)> spill_;
  std::unique_ptr<Shard[]> shards_;
  std::atomic<uint32_t> epoch_{0};
  mutable std::mutex window_mu_;      // serializes advance_to() and state encoding
  bool window_anchored_ = false;      // guarded by window_mu_
  uint64_t window_index_ = 0;         // guarded by window_mu_
  std::atomic<uint64_t> evictions_{0};
};

}  // namespace hybridstore
