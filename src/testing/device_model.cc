#include "testing/device_model.h"

#include <cmath>

#include <fmt/format.h>

#include "hscommon/config.h"

namespace hybridstore {

namespace {

double frac(double x) { return x - std::floor(x); }
uint64_t ns_of(double ns) { return ns <= 0 ? 0 : static_cast<uint64_t>(std::llround(ns)); }

}  // namespace

// ---- HDD ----

bool HddModel::valid_params(const HddModelParams& p, std::string* why) {
  const char* w = nullptr;
  if (!(p.seek_track_ms > 0 && p.seek_track_ms <= p.seek_avg_ms && p.seek_avg_ms < p.seek_full_ms))
    w = "seek times must satisfy 0 < track-to-track <= average < full stroke";
  else if (!(p.rpm > 0)) w = "rpm must be positive";
  else if (!(p.transfer_bytes_per_s > 0)) w = "transfer rate must be positive";
  else if (p.surfaces == 0) w = "surfaces must be positive";
  else if (p.capacity_bytes == 0) w = "capacity must be positive";
  if (w && why) *why = w;
  return w == nullptr;
}

HddModel::HddModel(const HddModelParams& params) : p_(params) {
  if (!valid_params(p_, nullptr)) {
    uint64_t cap = p_.capacity_bytes ? p_.capacity_bytes : HddModelParams{}.capacity_bytes;
    p_ = HddModelParams{};
    p_.capacity_bytes = cap;
  }
  rev_ns_ = 60e9 / p_.rpm;
  track_bytes_ = std::max<uint64_t>(
      512, static_cast<uint64_t>(std::llround(p_.transfer_bytes_per_s * rev_ns_ / 1e9)));
  cylinder_bytes_ = track_bytes_ * p_.surfaces;
  cylinders_ = p_.cylinders ? p_.cylinders : p_.capacity_bytes / cylinder_bytes_;
  if (cylinders_ < 3) cylinders_ = 3;
  if (p_.cylinders) cylinder_bytes_ = std::max<uint64_t>(1, p_.capacity_bytes / cylinders_);

  // Solve for A and B: t(N-1) = full and E[t(d) | d >= 1] = avg, where for
  // independent uniform cylinders P(d) = 2 (N - d) / N^2 (d >= 1).
  const double n = static_cast<double>(cylinders_);
  const double m = n - 2;
  double p1 = 0, s1 = 0, s2 = 0;
  for (uint64_t d = 1; d < cylinders_; ++d) {
    double pd = 2.0 * (n - static_cast<double>(d)) / (n * n);
    double x = static_cast<double>(d - 1) / m;
    p1 += pd;
    s1 += pd * std::sqrt(x);
    s2 += pd * x;
  }
  s1 /= p1;
  s2 /= p1;
  const double c = p_.seek_track_ms;
  const double full = p_.seek_full_ms - c;
  const double avg = p_.seek_avg_ms - c;
  // A + B = full;  A s1 + B s2 = avg.
  coef_a_ms_ = (avg - full * s2) / (s1 - s2);
  coef_b_ms_ = full - coef_a_ms_;
}

double HddModel::seek_ms(uint64_t d) const {
  if (d == 0) return 0;
  if (d >= cylinders_) d = cylinders_ - 1;
  double x = static_cast<double>(d - 1) / static_cast<double>(cylinders_ - 2);
  return p_.seek_track_ms + coef_a_ms_ * std::sqrt(x) + coef_b_ms_ * x;
}

double HddModel::mean_random_seek_ms() const {
  const double n = static_cast<double>(cylinders_);
  double p1 = 0, t = 0;
  for (uint64_t d = 1; d < cylinders_; ++d) {
    double pd = 2.0 * (n - static_cast<double>(d)) / (n * n);
    p1 += pd;
    t += pd * seek_ms(d);
  }
  return t / p1;
}

uint64_t HddModel::cylinder_of(uint64_t offset) const {
  uint64_t c = offset / cylinder_bytes_;
  return c < cylinders_ ? c : cylinders_ - 1;
}

ModeledIo HddModel::access(IoDir, uint64_t offset, uint64_t len) {
  ModeledIo io;
  const double target_angle =
      static_cast<double>(offset % track_bytes_) / static_cast<double>(track_bytes_);
  const uint64_t target_cyl = cylinder_of(offset);
  double position_ns = 0;
  if (positioned_ && offset == next_offset_) {
    io.sequential = true;
  } else {
    if (positioned_) {
      io.seek_distance = offset > next_offset_ ? offset - next_offset_ : next_offset_ - offset;
      io.seek_cylinders =
          target_cyl > head_cylinder_ ? target_cyl - head_cylinder_ : head_cylinder_ - target_cyl;
    } else {
      // First request after a reset: the head is somewhere; charge an average seek.
      io.seek_cylinders = cylinders_ / 3;
    }
    double seek_ns = seek_ms(io.seek_cylinders) * 1e6;
    double arrival = frac(angle_ + seek_ns / rev_ns_);
    double wait_ns = frac(target_angle - arrival) * rev_ns_;
    position_ns = seek_ns + wait_ns;
    angle_ = target_angle;
  }
  double transfer_ns = static_cast<double>(len) / p_.transfer_bytes_per_s * 1e9;
  angle_ = frac(angle_ + transfer_ns / rev_ns_);
  uint64_t end = offset + len < offset ? UINT64_MAX : offset + len;
  head_cylinder_ = cylinder_of(len ? end - 1 : offset);
  next_offset_ = end;
  positioned_ = true;
  io.seek_ns = ns_of(position_ns);
  io.service_ns = ns_of(position_ns + transfer_ns);
  return io;
}

void HddModel::idle(uint64_t ns) { angle_ = frac(angle_ + static_cast<double>(ns) / rev_ns_); }

void HddModel::reset() {
  positioned_ = false;
  angle_ = 0;
}

std::string HddModel::describe() const {
  return fmt::format(
      "hdd: {} cylinders x {} B, seek {:.1f}/{:.1f}/{:.1f} ms (track/avg/full), {:.0f} rpm, "
      "{:.0f} MB/s",
      cylinders_, cylinder_bytes_, p_.seek_track_ms, p_.seek_avg_ms, p_.seek_full_ms, p_.rpm,
      p_.transfer_bytes_per_s / 1e6);
}

// ---- SSD ----

SsdModel::SsdModel(const SsdModelParams& p) : p_(p) {
  SsdModelParams d;
  if (!(p_.seq_read_us > 0)) p_.seq_read_us = d.seq_read_us;
  if (!(p_.seq_write_us > 0)) p_.seq_write_us = d.seq_write_us;
  if (!(p_.rand_read_us > 0)) p_.rand_read_us = d.rand_read_us;
  if (!(p_.rand_write_us > 0)) p_.rand_write_us = d.rand_write_us;
  if (p_.page_bytes == 0) p_.page_bytes = d.page_bytes;
}

ModeledIo SsdModel::access(IoDir dir, uint64_t offset, uint64_t len) {
  ModeledIo io;
  io.sequential = positioned_ && dir == last_dir_ && offset == next_offset_;
  if (positioned_ && !io.sequential)
    io.seek_distance = offset > next_offset_ ? offset - next_offset_ : next_offset_ - offset;
  double seq_us = dir == IoDir::kRead ? p_.seq_read_us : p_.seq_write_us;
  double first_us = io.sequential ? seq_us : (dir == IoDir::kRead ? p_.rand_read_us
                                                                    : p_.rand_write_us);
  uint64_t pages = len == 0 ? 1 : (len + p_.page_bytes - 1) / p_.page_bytes;
  io.service_ns = ns_of((first_us + static_cast<double>(pages - 1) * seq_us) * 1e3);
  positioned_ = true;
  last_dir_ = dir;
  next_offset_ = offset + len;
  return io;
}

std::string SsdModel::describe() const {
  return fmt::format("ssd: read {:.0f}/{:.0f} us, write {:.0f}/{:.0f} us (seq/random per {} B)",
                     p_.seq_read_us, p_.rand_read_us, p_.seq_write_us, p_.rand_write_us,
                     p_.page_bytes);
}

// ---- From the configuration ----

HddModelParams hdd_params_from_config(const Config& conf, uint64_t capacity) {
  HddModelParams p;
  p.capacity_bytes = capacity;
  p.seek_track_ms = conf.get_double("hybridstore_model_hdd_seek_track_ms");
  p.seek_avg_ms = conf.get_double("hybridstore_model_hdd_seek_avg_ms");
  p.seek_full_ms = conf.get_double("hybridstore_model_hdd_seek_full_ms");
  p.rpm = conf.get_double("hybridstore_model_hdd_rpm");
  p.transfer_bytes_per_s = conf.get_double("hybridstore_model_hdd_transfer_mbps") * 1e6;
  return p;
}

SsdModelParams ssd_params_from_config(const Config& conf) {
  SsdModelParams p;
  p.seq_read_us = conf.get_double("hybridstore_model_ssd_seq_read_us");
  p.seq_write_us = conf.get_double("hybridstore_model_ssd_seq_write_us");
  p.rand_read_us = conf.get_double("hybridstore_model_ssd_rand_read_us");
  p.rand_write_us = conf.get_double("hybridstore_model_ssd_rand_write_us");
  return p;
}

std::unique_ptr<DeviceModel> make_device_model(const Config& conf, DeviceRole role,
                                               uint64_t capacity) {
  if (conf.get_str("hybridstore_device_model") == "none") return nullptr;
  if (role == DeviceRole::kHdd) return std::make_unique<HddModel>(hdd_params_from_config(conf, capacity));
  return std::make_unique<SsdModel>(ssd_params_from_config(conf));
}

// ---- Decorator ----

ModeledBlockDevice::ModeledBlockDevice(std::unique_ptr<BlockDevice> inner,
                                       std::unique_ptr<DeviceModel> model,
                                       std::shared_ptr<VirtualClock> clock)
    : inner_(std::move(inner)),
      clock_(clock ? std::move(clock) : std::make_shared<VirtualClock>()),
      model_(std::move(model)) {}

std::string ModeledBlockDevice::backend() const { return "modeled+" + inner_->backend(); }

Media ModeledBlockDevice::media() const {
  std::lock_guard<std::mutex> l(mu_);
  return model_->media();
}

void ModeledBlockDevice::charge(IoDir dir, uint64_t offset, uint64_t len) {
  std::lock_guard<std::mutex> g(mu_);
  ModeledIo io = model_->access(dir, offset, len);
  if (dir == IoDir::kRead) {
    ++stats_.reads;
    stats_.bytes_read += len;
    stats_.read_ns += io.service_ns;
  } else {
    ++stats_.writes;
    stats_.bytes_written += len;
    stats_.write_ns += io.service_ns;
  }
  stats_.busy_ns += io.service_ns;
  stats_.positioning_ns += io.seek_ns;
  if (!io.sequential) ++stats_.random_ios;
  stats_.seek_distance_bytes += io.seek_distance;
  clock_->advance(io.service_ns);
}

int ModeledBlockDevice::read(uint64_t offset, char* buf, uint64_t len) {
  int r = inner_->read(offset, buf, len);
  if (r == 0) charge(IoDir::kRead, offset, len);
  return r;
}

int ModeledBlockDevice::write(uint64_t offset, const char* buf, uint64_t len) {
  int r = inner_->write(offset, buf, len);
  if (r == 0) charge(IoDir::kWrite, offset, len);
  return r;
}

int ModeledBlockDevice::read_many(const std::vector<ReadIo>& ios) {
  int r = inner_->read_many(ios);
  if (r == 0)
    for (const auto& io : ios) charge(IoDir::kRead, io.offset, io.len);
  return r;
}

int ModeledBlockDevice::write_many(const std::vector<WriteIo>& ios) {
  int r = inner_->write_many(ios);
  if (r == 0)
    for (const auto& io : ios) charge(IoDir::kWrite, io.offset, io.len);
  return r;
}

ModeledDeviceStats ModeledBlockDevice::stats() const {
  std::lock_guard<std::mutex> g(mu_);
  return stats_;
}

void ModeledBlockDevice::reset_stats() {
  std::lock_guard<std::mutex> g(mu_);
  stats_ = ModeledDeviceStats{};
}

}  // namespace hybridstore
