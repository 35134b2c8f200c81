#include "hsio/region_device.h"

#include <algorithm>
#include <cerrno>
#include <numeric>
#include <utility>

#include <fmt/format.h>

namespace hybridstore {

namespace {

std::string describe(size_t index, const RegionExtent& e) {
  return fmt::format("extent {} [{:#x}, {:#x})", index, e.offset, e.offset + e.length);
}

// Why `extents` cannot be a region of `inner`, or "" when they can.
std::string check_extents(const BlockDevice& inner, const std::vector<RegionExtent>& extents) {
  if (extents.empty()) return "a region needs at least one extent";
  const uint64_t align = inner.alignment();
  for (size_t i = 0; i < extents.size(); ++i) {
    const RegionExtent& e = extents[i];
    if (e.length == 0) return describe(i, e) + " is empty";
    if (e.offset % align != 0 || e.length % align != 0)
      return fmt::format("{} is not aligned to the {} bytes of {}", describe(i, e), align, inner.path());
    if (e.offset > inner.size() || e.length > inner.size() - e.offset)
      return fmt::format("{} runs past the end of {} ({} bytes)", describe(i, e), inner.path(), inner.size());
  }
  std::vector<size_t> by_offset(extents.size());
  std::iota(by_offset.begin(), by_offset.end(), size_t{0});
  std::sort(by_offset.begin(), by_offset.end(),
            [&](size_t a, size_t b) { return extents[a].offset < extents[b].offset; });
  for (size_t k = 1; k < by_offset.size(); ++k) {
    const size_t prev = by_offset[k - 1], cur = by_offset[k];
    if (extents[prev].offset + extents[prev].length > extents[cur].offset)
      return describe(prev, extents[prev]) + " overlaps " + describe(cur, extents[cur]);
  }
  return "";
}

}  // namespace

std::unique_ptr<RegionDevice> RegionDevice::make(std::shared_ptr<BlockDevice> inner,
                                                 std::vector<RegionExtent> extents, std::string* error) {
  if (!inner) {
    *error = "a region needs a device to lie on";
    return nullptr;
  }
  if (std::string why = check_extents(*inner, extents); !why.empty()) {
    *error = "region of " + inner->path() + ": " + why;
    return nullptr;
  }
  return std::unique_ptr<RegionDevice>(new RegionDevice(std::move(inner), std::move(extents)));
}

RegionDevice::RegionDevice(std::shared_ptr<BlockDevice> inner, std::vector<RegionExtent> extents)
    : inner_(std::move(inner)), extents_(std::move(extents)) {
  starts_.reserve(extents_.size());
  for (const RegionExtent& e : extents_) {
    starts_.push_back(size_);
    size_ += e.length;
  }
}

template <typename Fn>
void RegionDevice::split(uint64_t offset, uint64_t len, Fn&& piece) const {
  if (len == 0) return;
  size_t i = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin()) - 1;
  for (uint64_t done = 0; done < len; ++i) {
    const uint64_t within = offset + done - starts_[i];
    const uint64_t n = std::min(len - done, extents_[i].length - within);
    piece(extents_[i].offset + within, done, n);
    done += n;
  }
}

template <typename Io>
void RegionDevice::translate(const Io& io, std::vector<Io>* out) const {
  split(io.offset, io.len,
        [&](uint64_t device_offset, uint64_t done, uint64_t n) { out->push_back(Io{device_offset, io.buf + done, n}); });
}

// The pieces keep the order of the requests they come from. Two requests
// overlap on the device exactly when they overlap in the region (the
// extents are disjoint), so the device's rule that overlapping writes land
// in the order given carries over, and pieces of one request never overlap
// each other.
template <typename Io>
bool RegionDevice::translate_all(const std::vector<Io>& ios, std::vector<Io>* out) const {
  for (const Io& io : ios)
    if (!in_range(io.offset, io.len)) return false;
  out->reserve(ios.size());
  for (const Io& io : ios) translate(io, out);
  return true;
}

int RegionDevice::read(uint64_t offset, char* buf, uint64_t len) {
  if (!in_range(offset, len)) return -EINVAL;
  std::vector<ReadIo> pieces;
  translate(ReadIo{offset, buf, len}, &pieces);
  if (pieces.empty()) return 0;
  if (pieces.size() == 1) return inner_->read(pieces[0].offset, pieces[0].buf, pieces[0].len);
  return inner_->read_many(pieces);
}

int RegionDevice::write(uint64_t offset, const char* buf, uint64_t len) {
  if (!in_range(offset, len)) return -EINVAL;
  std::vector<WriteIo> pieces;
  translate(WriteIo{offset, buf, len}, &pieces);
  if (pieces.empty()) return 0;
  if (pieces.size() == 1) return inner_->write(pieces[0].offset, pieces[0].buf, pieces[0].len);
  return inner_->write_many(pieces);
}

int RegionDevice::read_many(const std::vector<ReadIo>& ios) {
  std::vector<ReadIo> pieces;
  if (!translate_all(ios, &pieces)) return -EINVAL;
  return pieces.empty() ? 0 : inner_->read_many(pieces);
}

int RegionDevice::write_many(const std::vector<WriteIo>& ios) {
  std::vector<WriteIo> pieces;
  if (!translate_all(ios, &pieces)) return -EINVAL;
  return pieces.empty() ? 0 : inner_->write_many(pieces);
}

void RegionDevice::write_many_async(std::vector<WriteIo> ios, WriteDone done) {
  std::vector<WriteIo> pieces;
  if (!translate_all(ios, &pieces)) {
    done(-EINVAL);
    return;
  }
  inner_->write_many_async(std::move(pieces), std::move(done));
}

int RegionDevice::write_durable(uint64_t offset, const char* buf, uint64_t len) {
  if (!in_range(offset, len)) return -EINVAL;
  std::vector<WriteIo> pieces;
  translate(WriteIo{offset, buf, len}, &pieces);
  if (pieces.empty()) return inner_->flush();
  if (pieces.size() == 1) return inner_->write_durable(pieces[0].offset, pieces[0].buf, pieces[0].len);
  // A range over several extents is several device writes, and no single
  // durable request covers them all. One write_durable per piece would not
  // do: where the device makes it a FUA write, it makes that piece durable
  // and not necessarily the others (docs/kvfs.md, section 4), and it would
  // wait for the device once per piece. Writing every piece together and
  // then flushing makes all of them durable, with one wait for the cache.
  if (int r = inner_->write_many(pieces); r < 0) return r;
  return inner_->flush();
}

int RegionDevice::discard(uint64_t offset, uint64_t len) {
  if (!in_range(offset, len)) return -EINVAL;
  int first_error = 0;
  split(offset, len, [&](uint64_t device_offset, uint64_t, uint64_t n) {
    if (first_error == 0) first_error = inner_->discard(device_offset, n);
  });
  return first_error;
}

}  // namespace hybridstore
