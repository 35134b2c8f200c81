#include "ftl/nand_block_device.h"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "hscommon/config.h"
#include "hscommon/log.h"

namespace hybridstore::ftl {

NandBlockDevice::NandBlockDevice(std::unique_ptr<Ftl> ftl, std::string path)
    : ftl_(std::move(ftl)), path_(std::move(path)) {}

NandBlockDevice::~NandBlockDevice() {
  std::lock_guard<SpinThenSleepMutex> g(mu_);
  if (ftl_ && !ftl_->dead())
    if (int r = ftl_->close(); r < 0) HS_ERROR("{}: FTL shutdown failed: {}", path_, r);
}

uint64_t NandBlockDevice::size() const { return ftl_->size_bytes(); }
uint32_t NandBlockDevice::alignment() const { return ftl_->sector_size(); }
std::string NandBlockDevice::backend() const {
  return fmt::format("nand:{}", policy_name(ftl_->image().policy));
}

bool NandBlockDevice::aligned(uint64_t offset, uint64_t len) const {
  uint32_t a = ftl_->sector_size();
  return offset % a == 0 && len % a == 0;
}

int NandBlockDevice::read(uint64_t offset, char* buf, uint64_t len) {
  if (!aligned(offset, len)) return -EINVAL;
  std::lock_guard<SpinThenSleepMutex> g(mu_);
  uint32_t a = ftl_->sector_size();
  int64_t t0 = ftl_->clock()->now_ns();
  int r = ftl_->read_sectors(offset / a, len / a, buf);
  pace(t0);
  return r;
}

void NandBlockDevice::set_perf(const FtlPerf& p) {
  std::lock_guard<SpinThenSleepMutex> g(mu_);
  perf_ = p;
  // Only what happens from now on counts.
  perf_.set = nullptr;
  count_locked();
  perf_.set = p.set;
}

void NandBlockDevice::count_locked() {
  const PolicyStats& st = ftl_->context().stats;
  uint64_t merges = st.merges[0] + st.merges[1] + st.merges[2];
  uint64_t erases = ftl_->wear_leveler()->erase_count_total();
  if (perf_.set) {
    perf_.set->inc(perf_.merges, merges - seen_merges_);
    perf_.set->inc(perf_.erases, erases - seen_erases_);
    perf_.set->inc(perf_.pages_copied, st.pages_copied - seen_copied_);
    perf_.set->inc(perf_.host_pages_written, st.host_pages_written - seen_host_);
  }
  seen_merges_ = merges;
  seen_erases_ = erases;
  seen_copied_ = st.pages_copied;
  seen_host_ = st.host_pages_written;
}

void NandBlockDevice::pace(int64_t t0) {
  if (!ftl_->options().emulate_latency) return;
  int64_t ns = ftl_->clock()->now_ns() - t0;
  if (ns > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
}

int NandBlockDevice::write(uint64_t offset, const char* buf, uint64_t len) {
  if (!aligned(offset, len)) return -EINVAL;
  std::lock_guard<SpinThenSleepMutex> g(mu_);
  uint32_t a = ftl_->sector_size();
  int64_t t0 = ftl_->clock()->now_ns();
  int r = ftl_->write_sectors(offset / a, len / a, buf);
  count_locked();
  pace(t0);
  return r;
}

int NandBlockDevice::flush() {
  std::lock_guard<SpinThenSleepMutex> g(mu_);
  int64_t t0 = ftl_->clock()->now_ns();
  int r = ftl_->flush();
  count_locked();
  pace(t0);
  return r;
}

int NandBlockDevice::discard(uint64_t offset, uint64_t len) {
  uint32_t a = ftl_->sector_size();
  uint64_t first = (offset + a - 1) / a;
  uint64_t end = (offset + len) / a;
  if (end <= first) return 0;
  std::lock_guard<SpinThenSleepMutex> g(mu_);
  if (end > ftl_->sector_count()) return -EINVAL;
  int64_t t0 = ftl_->clock()->now_ns();
  int r = ftl_->trim_sectors(first, end - first);
  count_locked();
  pace(t0);
  return r;
}

std::unique_ptr<BlockDevice> open_nand_block_device(const Config& cfg, const std::string& path,
                                                    bool create, std::string* error) {
  FtlOptions opts;
  if (int r = ftl_options_from_config(cfg, &opts, error); r < 0) {
    *error = fmt::format("{}: {}", path, *error);
    return nullptr;
  }
  std::shared_ptr<NandMedia> media;
  std::unique_ptr<Ftl> ftl;
  struct stat st;
  bool exists = ::stat(path.c_str(), &st) == 0;
  std::string err;
  if (!exists) {
    if (!create) {
      *error = fmt::format("{}: no such flash file", path);
      return nullptr;
    }
    if (int r = NandMedia::create_file(path, opts.geometry, &media, &err); r < 0) {
      *error = err;
      errno = -r;  // EBUSY tells the store the file is in use
      return nullptr;
    }
    if (Ftl::format(media, opts, &ftl, &err) < 0) {
      *error = fmt::format("{}: format failed: {}", path, err);
      return nullptr;
    }
    HS_INFO("{}: created {} flash, policy {}, {} usable", path, describe(opts.geometry),
            policy_name(opts.policy), format_size(ftl->size_bytes()));
  } else {
    if (int r = NandMedia::open_file(path, &media, &err); r < 0) {
      *error = err;
      errno = -r;
      return nullptr;
    }
    if (media->geometry() != opts.geometry && !cfg.is_default("hybridstore_nand_size"))
      HS_WARN("{}: flash file geometry ({}) differs from the configured one; using the file's",
              path, describe(media->geometry()));
    int r = Ftl::attach(media, opts, &ftl, &err);
    if (r == -ENODATA && create) r = Ftl::format(media, opts, &ftl, &err);
    if (r < 0) {
      *error = fmt::format("{}: attach failed: {}", path, err);
      return nullptr;
    }
  }
  return std::make_unique<NandBlockDevice>(std::move(ftl), path);
}

}  // namespace hybridstore::ftl
