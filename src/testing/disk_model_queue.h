// A disk's command queue and mechanics on a virtual clock: the model behind
// hybridstore-diskmodel (a FUSE file that delays every request as a real disk
// would), kept free of FUSE and of real time so a unit test can drive it.
//
// The caller owns time. It submits each request with its arrival time and asks
// advance(now) for the completions due by `now`; advance returns when the next
// one is due. Time only moves forward: every call passes a `now` no smaller
// than the previous call's. Decisions are taken at model time, not at call
// time: when advance() runs late (the real-time driver woke up late), the
// device still started each operation when it became free, choosing among the
// requests that had arrived by then, so lateness never accumulates and the
// same arrival sequence always gives the same completion times.
//
// HDD (kind = hdd):
//  - Geometry. The image covers the outer `stroke_share` of a drive (1: the
//    image is the whole drive; 0.5: its outer half, the rest unused). The
//    media rate falls linearly with the drive offset from `rate_outer_mbps` to
//    `rate_inner_mbps` (zoned recording); a track holds one revolution's worth
//    of bytes at its rate, and `heads` tracks make a cylinder. Offsets map to a
//    continuous track count, whose fraction is the sector's angle.
//  - Seek by cylinder distance: Lee's curve from HddModel (device_model.h),
//    one curve through the read figures and one through the write figures.
//  - Rotation: the platter angle is a function of absolute model time, so it
//    keeps turning while the disk is idle. After the seek the head waits for
//    the target's angle to come round; a target a short way ahead on the same
//    track costs just the rotation over the gap.
//  - A read that starts where the previous media operation ended costs only
//    its transfer (the drive's look-ahead has it); a write does so only when
//    it follows without an idle gap (otherwise the sector has gone by).
//  - Command queue: the first `queue_depth` outstanding requests are visible
//    to the scheduler (NCQ). `scheduler = clook` serves the nearest start at or
//    after the head, wrapping to the lowest; `scheduler = satf` serves the one
//    with the shortest positioning time (seek + rotational wait), as drive
//    firmware does; under both a request older than `max_wait_ms` goes first.
//  - Volatile write cache of `cache_bytes` (0: off, writes go to the media)
//    holding at most `cache_segments` separate dirty ranges (0: no limit;
//    adjacent writes merge into one). A write completes when it enters the
//    cache; when the cache is full it waits (in arrival order) for the
//    destage to free room. The actuator destages dirty ranges in elevator
//    order (satf: the quickest to reach among the next `cache_segments`), at
//    most `destage_max_bytes` per operation, whenever no read is waiting (or
//    first, when writes wait for room). A read wholly inside dirty data
//    completes on arrival.
//  - Flush: a barrier. Requests that arrive after it wait until it completes;
//    it completes once every earlier request has and the cache is empty.
//  - Discard costs nothing (a disk has no TRIM to spend time on).
//
// SSD (kind = ssd): requests are served in arrival order, at most
// `queue_depth` at a time, through two stages: one of `channels` flash
// channels (latency `read_us` / `write_us`) and the shared front end (link and
// controller: max(bytes / rate, 1 / iops)). A read takes the channel first,
// a write the front end first. A flush waits for every earlier request and
// costs `flush_us`; a discard costs `trim_us` on the front end.
//
// kind = none completes everything on arrival.
//
// Not thread-safe: the real-time driver serializes calls.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "testing/device_model.h"
#include "testing/disk_profile.h"

namespace hybridstore {

enum class DiskOp : uint8_t { kRead = 0, kWrite = 1, kFlush = 2, kDiscard = 3 };
inline constexpr int kDiskOps = 4;
const char* disk_op_name(DiskOp op);

struct DiskRequest {
  uint64_t id = 0;
  DiskOp op = DiskOp::kRead;
  uint64_t offset = 0;
  uint64_t len = 0;
};

struct DiskCompletion {
  uint64_t id = 0;
  uint64_t time_ns = 0;
};

struct DiskOpStats {
  uint64_t count = 0;
  uint64_t bytes = 0;
  uint64_t on_arrival = 0;      // completed on arrival (write cache, read hit, discard on hdd)
  uint64_t service_ns = 0;      // modelled device time spent on these requests
  uint64_t latency_ns = 0;      // summed completion - arrival
  uint64_t max_latency_ns = 0;
};

struct DiskModelStats {
  DiskOpStats ops[kDiskOps];
  uint64_t busy_ns = 0;              // hdd: actuator busy (requests and destage); ssd: front end
  uint64_t media_ops = 0;            // hdd: operations of the actuator, destages included
  uint64_t positioning_ns = 0;       // hdd: seek + rotational waits
  uint64_t seeks = 0;                // hdd: media operations that moved to another cylinder
  uint64_t rotational_only = 0;      // hdd: same cylinder, waited for rotation
  uint64_t contiguous = 0;           // hdd: continued the previous media operation
  uint64_t destages = 0, destage_bytes = 0, destage_ns = 0;
  uint64_t read_hits = 0;            // reads served from the write cache
  uint64_t cache_waits = 0;          // writes that had to wait for room in the cache
  uint64_t max_dirty_bytes = 0;
  uint64_t aged = 0;                 // served out of order because of max_wait_ms
  // Outstanding requests seen by each arrival, itself included: [i] counts
  // depth i+1, the last bucket depth >= its index + 1.
  std::vector<uint64_t> qd_hist = std::vector<uint64_t>(64, 0);
  // Request sizes of reads and writes: [i] counts sizes in (2^(i-1), 2^i].
  std::vector<uint64_t> size_hist = std::vector<uint64_t>(32, 0);
  uint64_t max_request_bytes = 0;
};

class DiskModelQueue {
 public:
  static constexpr uint64_t kNever = ~0ull;

  // `p` must validate(); device_bytes > 0.
  DiskModelQueue(const DiskProfile& p, uint64_t device_bytes);
  ~DiskModelQueue();
  DiskModelQueue(const DiskModelQueue&) = delete;
  DiskModelQueue& operator=(const DiskModelQueue&) = delete;

  // Request `r` arrives at `now_ns`. true: it completed on arrival, and
  // advance() will not report it.
  bool submit(const DiskRequest& r, uint64_t now_ns);
  // Runs the device up to `now_ns`, appending every completion due by then
  // (in time order) to `done`; returns the time of the next one (kNever: the
  // device is idle with nothing outstanding).
  uint64_t advance(uint64_t now_ns, std::vector<DiskCompletion>* done);
  // Runs until nothing is outstanding; returns the time it got there.
  uint64_t drain(std::vector<DiskCompletion>* done);
  // The earliest time advance() has something to do (kNever: nothing until
  // the next submit), without doing it: a real-time driver sleeping until a
  // later time must wake up for it.
  uint64_t next_event() const;

  size_t outstanding() const;
  uint64_t dirty_bytes() const { return cache_used_; }
  const DiskModelStats& stats() const { return stats_; }
  const DiskProfile& profile() const { return p_; }
  uint64_t device_bytes() const { return device_bytes_; }
  std::string describe() const;

  // ---- hdd geometry (for tests and the description) ----
  double revolution_ns() const { return rev_ns_; }
  // Media rate (bytes/s) at an image offset.
  double rate_at(uint64_t offset) const;
  uint64_t track_bytes_at(uint64_t offset) const;
  // Media time to transfer [offset, offset + len).
  double transfer_ns(uint64_t offset, uint64_t len) const;
  uint64_t cylinder_of(uint64_t offset) const;
  uint64_t cylinders() const { return cylinders_; }
  double seek_ms(uint64_t cylinders, bool write) const;
  // The read curve's mean over independent uniform cylinder pairs.
  double mean_random_seek_ms() const;

 private:
  struct Pending {
    DiskRequest r;
    uint64_t arrival = 0;
    bool waited_for_cache = false;
  };
  struct Dirty {
    uint64_t end = 0;
    uint64_t since = 0;  // arrival of the oldest write in the range
  };
  struct Inflight {
    bool active = false;
    bool destage = false;
    Pending req;             // when !destage
    uint64_t offset = 0, len = 0;
    uint64_t start = 0, end = 0;
  };
  struct SsdDone {
    uint64_t time;
    uint64_t seq;
    Pending req;
    uint64_t service;
    bool operator>(const SsdDone& o) const {
      return time != o.time ? time > o.time : seq > o.seq;
    }
  };

  // Bookkeeping shared by the kinds.
  void note_arrival(const DiskRequest& r);
  void complete(const Pending& p, uint64_t t, uint64_t service_ns, bool on_arrival,
                std::vector<DiskCompletion>* done);

  // ---- hdd ----
  double tracks_at(uint64_t offset) const;  // continuous track count from the outer edge
  double platter_at(uint64_t t_ns) const;   // platter angle [0, 1) at model time t
  double position_ns(uint64_t target, bool write, uint64_t t) const;
  bool hdd_submit(const Pending& p);
  uint64_t hdd_advance(uint64_t now, std::vector<DiskCompletion>* done);
  // Admits waiting writes that fit, at time t.
  void admit_writes(uint64_t t, std::vector<DiskCompletion>* done);
  bool read_hit(uint64_t offset, uint64_t len) const;
  void add_dirty(uint64_t offset, uint64_t len, uint64_t t);
  bool cacheable(const DiskRequest& r) const;
  bool cache_room(const DiskRequest& r) const;
  // Starts the next actuator operation at t, if there is one eligible then.
  bool start_next(uint64_t t, std::vector<DiskCompletion>* done);
  uint64_t next_work_time(uint64_t after) const;
  void start_media(const Pending& p, uint64_t t);
  void start_destage(std::map<uint64_t, Dirty>::iterator it, uint64_t t);
  void finish_inflight(std::vector<DiskCompletion>* done);

  // ---- ssd ----
  bool ssd_submit(const Pending& p);
  void ssd_dispatch(const Pending& p, uint64_t t);
  void ssd_pump(uint64_t t);
  uint64_t ssd_advance(uint64_t now, std::vector<DiskCompletion>* done);

  DiskProfile p_;
  uint64_t device_bytes_;
  uint64_t last_now_ = 0;
  // Completions found while bringing the device up to a submit's arrival
  // time; the next advance() hands them over.
  std::vector<DiskCompletion> early_;
  DiskModelStats stats_;

  // hdd geometry
  uint64_t drive_bytes_ = 0;
  double rev_ns_ = 0;
  double tb0_ = 0, slope_ = 0;  // track bytes at offset 0, and their fall per byte
  uint64_t cylinders_ = 0;
  std::unique_ptr<HddModel> read_curve_, write_curve_;
  // hdd state
  std::deque<Pending> pending_;  // arrival order; absorbed writes never enter
  std::map<uint64_t, Dirty> dirty_;
  std::multiset<uint64_t> dirty_since_;  // the ranges' `since`, for the earliest
  uint64_t cache_used_ = 0;  // dirty bytes + the destage in flight
  Inflight inflight_;
  uint64_t free_at_ = 0;     // the actuator is free from this time
  uint64_t head_off_ = 0;    // end of the last media operation
  uint64_t head_time_ = 0;   // when it ended
  bool head_write_ = false;

  // ssd state
  std::vector<uint64_t> channel_free_;
  uint64_t frontend_free_ = 0;
  std::deque<Pending> ssd_wait_;
  std::priority_queue<SsdDone, std::vector<SsdDone>, std::greater<SsdDone>> ssd_inflight_;
  uint64_t ssd_seq_ = 0;
  bool ssd_flush_inflight_ = false;
};

}  // namespace hybridstore
