// Device timing models on a virtual clock, and a BlockDevice decorator that
// charges modelled time for real I/O.
//
// Tiering results measured in wall-clock time on a shared machine with
// file-backed "devices" say nothing about a real SSD and HDD. A DeviceModel
// turns each request into a modelled service time from its offset, length and
// the device's mechanical state, deterministically: the same request sequence
// always gives the same times.
//
// HddModel (defaults: the HRO paper's WD7500AAKS, Table III):
//  - geometry: the device's capacity is spread over `cylinders`; a cylinder
//    holds `surfaces` tracks of (transfer rate x revolution time) bytes.
//  - seek time by cylinder distance d (Lee's three-point curve):
//        t(0) = 0,   t(d) = t_track + A sqrt((d-1)/M) + B (d-1)/M,   M = N-2
//    with A, B solved so that t(1) = track-to-track (2 ms), t(N-1) = full
//    stroke (21 ms) and the mean over seeks between independent uniformly
//    random cylinders (d >= 1) is the average seek (8.9 ms), computed exactly
//    over the discrete distance distribution P(d) ~ (N - d).
//  - rotation: the platter turns at `rpm` during seeks and transfers; after a
//    seek the head waits until the target sector's angle comes round (angle =
//    position within its track). Over random requests this averages half a
//    revolution (4.17 ms at 7200 rpm).
//  - a request that starts exactly where the previous one ended streams on
//    without seek or rotational delay.
//  - transfer = length / sequential transfer rate; reads and writes alike.
//  Ignored (documented simplifications): zoned recording, head-switch time,
//  the drive's cache and command queueing.
//
// SsdModel (defaults: the HRO paper's SSD, Table III): the first 4 KiB page of
// a request costs the sequential or random latency of its direction (20/70 us
// sequential read/write, 270/375 us random read/write); every further page
// streams at the sequential cost. A request is sequential when it has the same
// direction as the previous one and starts where it ended.
//
// Models are not thread-safe; ModeledBlockDevice serializes access to its model.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "hscommon/virtual_clock.h"
#include "hsio/block_device.h"

namespace hybridstore {

class Config;

enum class IoDir : uint8_t { kRead = 0, kWrite = 1 };

struct ModeledIo {
  uint64_t service_ns = 0;
  uint64_t seek_ns = 0;           // positioning: seek + rotational wait (HDD), 0 on SSD
  uint64_t seek_distance = 0;     // bytes between the previous end and this start
  uint64_t seek_cylinders = 0;    // HDD only
  bool sequential = false;        // continued the previous request
};

class DeviceModel {
 public:
  virtual ~DeviceModel() = default;
  // Service time of one request; advances the model's state (head, platter).
  virtual ModeledIo access(IoDir dir, uint64_t offset, uint64_t len) = 0;
  // The device was idle for `ns` (the platter keeps turning).
  virtual void idle(uint64_t ns) {}
  // Forget the head position (the next request is never "sequential").
  virtual void reset() = 0;
  virtual std::string describe() const = 0;
  virtual Media media() const = 0;
};

struct HddModelParams {
  uint64_t capacity_bytes = 750000000000ull;  // mapped onto the full stroke
  double seek_track_ms = 2.0;
  double seek_avg_ms = 8.9;
  double seek_full_ms = 21.0;
  double rpm = 7200;
  double transfer_bytes_per_s = 100e6;
  unsigned surfaces = 6;   // tracks per cylinder
  uint64_t cylinders = 0;  // 0: capacity / (track bytes * surfaces)
};

class HddModel : public DeviceModel {
 public:
  // Parameters must satisfy 0 < track <= avg < full, rpm > 0, rate > 0; invalid
  // values are replaced by the defaults (check with valid_params()).
  explicit HddModel(const HddModelParams& p = {});
  static bool valid_params(const HddModelParams& p, std::string* why);

  ModeledIo access(IoDir dir, uint64_t offset, uint64_t len) override;
  void idle(uint64_t ns) override;
  void reset() override;
  Media media() const override { return Media::kRotational; }
  std::string describe() const override;

  // Seek time in milliseconds for a distance of `d` cylinders.
  double seek_ms(uint64_t d) const;
  // Mean seek time over independent uniformly random cylinder pairs with d >= 1.
  double mean_random_seek_ms() const;
  uint64_t cylinders() const { return cylinders_; }
  uint64_t track_bytes() const { return track_bytes_; }
  uint64_t cylinder_of(uint64_t offset) const;
  double revolution_ms() const { return rev_ns_ / 1e6; }
  const HddModelParams& params() const { return p_; }

 private:
  HddModelParams p_;
  uint64_t track_bytes_;
  uint64_t cylinder_bytes_;
  uint64_t cylinders_;  // invariant: >= 3 (so the curve has a distinct full stroke)
  double rev_ns_;
  double coef_a_ms_, coef_b_ms_;  // the curve's sqrt and linear coefficients
  // Mechanical state.
  bool positioned_ = false;
  uint64_t head_cylinder_ = 0;
  uint64_t next_offset_ = 0;   // end of the previous request
  double angle_ = 0;           // platter angle under the head, in revolutions [0, 1)
};

struct SsdModelParams {
  double seq_read_us = 20;
  double seq_write_us = 70;
  double rand_read_us = 270;
  double rand_write_us = 375;
  uint32_t page_bytes = 4096;
};

class SsdModel : public DeviceModel {
 public:
  explicit SsdModel(const SsdModelParams& p = {});
  ModeledIo access(IoDir dir, uint64_t offset, uint64_t len) override;
  void reset() override { positioned_ = false; }
  Media media() const override { return Media::kSolidState; }
  std::string describe() const override;
  const SsdModelParams& params() const { return p_; }

 private:
  SsdModelParams p_;
  bool positioned_ = false;
  IoDir last_dir_ = IoDir::kRead;
  uint64_t next_offset_ = 0;
};

enum class DeviceRole { kSsd, kHdd };

// From the options hybridstore_device_model (none | paper) and
// hybridstore_model_*: null for "none", otherwise the model of `role` for a
// device of `capacity` bytes.
std::unique_ptr<DeviceModel> make_device_model(const Config& conf, DeviceRole role,
                                               uint64_t capacity);
HddModelParams hdd_params_from_config(const Config& conf, uint64_t capacity);
SsdModelParams ssd_params_from_config(const Config& conf);

struct ModeledDeviceStats {
  uint64_t reads = 0, writes = 0;
  uint64_t bytes_read = 0, bytes_written = 0;
  uint64_t busy_ns = 0, read_ns = 0, write_ns = 0;
  uint64_t positioning_ns = 0;       // seek + rotational waits
  uint64_t random_ios = 0;           // requests that did not continue the previous one
  uint64_t seek_distance_bytes = 0;  // summed over all requests
};

// The devices of one store share one VirtualClock: a serial model (one
// request at a time across both tiers), the way the HRO experiments replay a
// trace as fast as the devices allow.
//
// A BlockDevice that forwards every call to `inner` unchanged and, for each
// read or write that succeeds, charges the model's service time to the clock
// and to its own statistics. Batches are charged in submission order. flush
// and discard cost nothing. Thread-safe: the model is behind a mutex, so
// concurrent callers are charged in the order they take it.
class ModeledBlockDevice : public BlockDevice {
 public:
  ModeledBlockDevice(std::unique_ptr<BlockDevice> inner, std::unique_ptr<DeviceModel> model,
                     std::shared_ptr<VirtualClock> clock);

  uint64_t size() const override { return inner_->size(); }
  uint32_t alignment() const override { return inner_->alignment(); }
  std::string backend() const override;
  std::string path() const override { return inner_->path(); }

  int read(uint64_t offset, char* buf, uint64_t len) override;
  int write(uint64_t offset, const char* buf, uint64_t len) override;
  int read_many(const std::vector<ReadIo>& ios) override;
  int write_many(const std::vector<WriteIo>& ios) override;
  int flush() override { return inner_->flush(); }
  int discard(uint64_t offset, uint64_t len) override { return inner_->discard(offset, len); }
  // What the model is, not what the file under it lies on.
  Media media() const override;

  ModeledDeviceStats stats() const;
  void reset_stats();
  const VirtualClock& clock() const { return *clock_; }
  BlockDevice* inner() { return inner_.get(); }

 private:
  void charge(IoDir dir, uint64_t offset, uint64_t len);

  std::unique_ptr<BlockDevice> inner_;
  std::shared_ptr<VirtualClock> clock_;
  mutable std::mutex mu_;
  std::unique_ptr<DeviceModel> model_;  // guarded by mu_
  ModeledDeviceStats stats_;            // guarded by mu_
};

}  // namespace hybridstore
