// A region of a device as a device of its own (hsio/region_device.h), and a
// device shared by two stacks (hsio/shared_device.h): random I/O across
// extent boundaries against a model of the region, on O_DIRECT and buffered
// files, with every byte outside the extents left alone; overlapping writes
// of one batch landing in order across extents; the extents a region
// refuses and the I/O it refuses; and which call of the device below each
// call becomes.
#include "hsio/region_device.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <future>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common_helpers.h"
#include "hsio/async_write_device.h"
#include "hsio/shared_device.h"

using namespace hybridstore;
using hybridstore::test::TempDir;

namespace {

constexpr uint64_t kB = 4096;

std::string span(uint64_t offset, uint64_t len) { return std::to_string(offset) + "+" + std::to_string(len); }
template <typename Io>
std::string spans(const std::vector<Io>& ios) {
  std::string s;
  for (const Io& io : ios) s += (s.empty() ? "" : ",") + span(io.offset, io.len);
  return s;
}

// Memory that logs every call it gets, so a test sees what the region (or a
// shared device) turned each of its own calls into.
class RecordingDevice final : public BlockDevice {
 public:
  explicit RecordingDevice(uint64_t size, uint32_t align = kB) : bytes_(size, '\0'), align_(align) {}
  uint64_t size() const override { return bytes_.size(); }
  uint32_t alignment() const override { return align_; }
  std::string backend() const override { return "recording"; }
  std::string path() const override { return "memory"; }
  Media media() const override { return Media::kSolidState; }
  BlockDeviceStats io_stats() const override { return {11, 22, 33, 44}; }

  int read(uint64_t offset, char* buf, uint64_t len) override {
    log("read " + span(offset, len));
    std::memcpy(buf, bytes_.data() + offset, len);
    return 0;
  }
  int write(uint64_t offset, const char* buf, uint64_t len) override {
    log("write " + span(offset, len));
    std::memcpy(bytes_.data() + offset, buf, len);
    return 0;
  }
  int read_many(const std::vector<ReadIo>& ios) override {
    log("read_many " + spans(ios));
    for (const ReadIo& io : ios) std::memcpy(io.buf, bytes_.data() + io.offset, io.len);
    return 0;
  }
  int write_many(const std::vector<WriteIo>& ios) override {
    log("write_many " + spans(ios));
    for (const WriteIo& io : ios) std::memcpy(bytes_.data() + io.offset, io.buf, io.len);
    return 0;
  }
  void write_many_async(std::vector<WriteIo> ios, WriteDone done) override {
    log("write_many_async " + spans(ios));
    for (const WriteIo& io : ios) std::memcpy(bytes_.data() + io.offset, io.buf, io.len);
    done(0);
  }
  int write_durable(uint64_t offset, const char* buf, uint64_t len) override {
    log("write_durable " + span(offset, len));
    std::memcpy(bytes_.data() + offset, buf, len);
    return 0;
  }
  int flush() override {
    log("flush");
    return 0;
  }
  int discard(uint64_t offset, uint64_t len) override {
    log("discard " + span(offset, len));
    return 0;
  }

  std::vector<std::string> take_calls() {
    std::lock_guard<std::mutex> l(mu_);
    return std::exchange(calls_, {});
  }
  const std::string& bytes() const { return bytes_; }

 private:
  void log(std::string call) {
    std::lock_guard<std::mutex> l(mu_);
    calls_.push_back(std::move(call));
  }
  std::string bytes_;
  uint32_t align_;
  std::mutex mu_;
  std::vector<std::string> calls_;
};

using Calls = std::vector<std::string>;

std::unique_ptr<RegionDevice> make_region(std::shared_ptr<BlockDevice> inner, std::vector<RegionExtent> extents) {
  std::string err;
  auto r = RegionDevice::make(std::move(inner), std::move(extents), &err);
  EXPECT_TRUE(r) << err;
  return r;
}

// The reason make() gives for refusing `extents` of `inner` ("" if it took them).
std::string refusal(std::shared_ptr<BlockDevice> inner, std::vector<RegionExtent> extents) {
  std::string err;
  auto r = RegionDevice::make(std::move(inner), std::move(extents), &err);
  return r ? "" : err;
}

}  // namespace

TEST(RegionDevice, RefusesExtentsItCannotPresent) {
  auto dev = std::make_shared<RecordingDevice>(64 * kB);
  auto refused = [&](std::vector<RegionExtent> extents, const std::string& why) {
    std::string err = refusal(dev, std::move(extents));
    EXPECT_NE(err.find(why), std::string::npos) << "wanted \"" << why << "\", got \"" << err << "\"";
  };
  EXPECT_NE(refusal(nullptr, {{0, kB}}), "");
  refused({}, "at least one extent");
  refused({{0, kB}, {4 * kB, 0}}, "extent 1 [0x4000, 0x4000) is empty");
  refused({{100, kB}}, "not aligned to the 4096 bytes of memory");
  refused({{kB, kB + 512}}, "not aligned");
  refused({{60 * kB, 8 * kB}}, "runs past the end of memory (262144 bytes)");
  refused({{64 * kB, kB}}, "runs past the end");
  // An offset so large that offset + length wraps around.
  refused({{UINT64_MAX - kB + 1, kB}}, "runs past the end");
  refused({{kB, UINT64_MAX - kB + 1}}, "runs past the end");
  // Overlaps between extents that are not neighbours in the list, and the
  // same extent twice.
  refused({{0, 4 * kB}, {10 * kB, 2 * kB}, {3 * kB, 2 * kB}}, "extent 0 [0x0, 0x4000) overlaps extent 2");
  refused({{8 * kB, kB}, {8 * kB, kB}}, "overlaps");
  refused({{8 * kB, 4 * kB}, {9 * kB, kB}}, "overlaps");
  // Neighbours that touch, the device's last block, and finer extents on a
  // device that allows them are fine.
  EXPECT_EQ(refusal(dev, {{2 * kB, 2 * kB}, {0, 2 * kB}, {63 * kB, kB}}), "");
  EXPECT_EQ(refusal(std::make_shared<RecordingDevice>(64 * kB, 512), {{512, 1024}, {4096, 512}}), "");
}

TEST(RegionDevice, IsTheSumOfItsExtentsUnderTheDevicesName) {
  auto dev = std::make_shared<RecordingDevice>(64 * kB);
  auto r = make_region(dev, {{8 * kB, 2 * kB}, {2 * kB, 3 * kB}, {16 * kB, kB}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->size(), 6 * kB);
  EXPECT_EQ(r->alignment(), kB);
  EXPECT_EQ(r->backend(), "region+recording");
  EXPECT_EQ(r->path(), "memory");
  EXPECT_EQ(r->media(), Media::kSolidState);
  EXPECT_EQ(r->extents().size(), 3u);
  EXPECT_EQ(r->inner(), dev.get());
  // The device's counters are its owner's to report, not the region's.
  EXPECT_EQ(r->io_stats().requests, 0u);
}

// Region [0, 2B) is device [8B, 10B), [2B, 5B) is [2B, 5B), [5B, 6B) is
// [16B, 17B): each call becomes the calls below, pieces in region order.
TEST(RegionDevice, EachCallBecomesTheDeviceCallsOfItsPieces) {
  auto dev = std::make_shared<RecordingDevice>(64 * kB);
  auto r = make_region(dev, {{8 * kB, 2 * kB}, {2 * kB, 3 * kB}, {16 * kB, kB}});
  ASSERT_TRUE(r);
  AlignedBuffer buf(6 * kB);
  ASSERT_EQ(r->write(2 * kB, buf.data(), 2 * kB), 0);
  EXPECT_EQ(dev->take_calls(), Calls{"write 8192+8192"});
  ASSERT_EQ(r->write(kB, buf.data(), 3 * kB), 0);
  EXPECT_EQ(dev->take_calls(), Calls{"write_many 36864+4096,8192+8192"});
  ASSERT_EQ(r->read(0, buf.data(), 6 * kB), 0);
  EXPECT_EQ(dev->take_calls(), Calls{"read_many 32768+8192,8192+12288,65536+4096"});
  ASSERT_EQ(r->read(5 * kB, buf.data(), kB), 0);
  EXPECT_EQ(dev->take_calls(), Calls{"read 65536+4096"});
  ASSERT_EQ(r->read_many({{0, buf.data(), kB}, {4 * kB, buf.data() + kB, 2 * kB}}), 0);
  EXPECT_EQ(dev->take_calls(), Calls{"read_many 32768+4096,16384+4096,65536+4096"});
  ASSERT_EQ(r->write_many({{4 * kB, buf.data(), 2 * kB}, {0, buf.data(), kB}}), 0);
  EXPECT_EQ(dev->take_calls(), Calls{"write_many 16384+4096,65536+4096,32768+4096"});

  // Durable inside one extent: the device's own durable write. Across
  // extents: the pieces, then a flush.
  ASSERT_EQ(r->write_durable(0, buf.data(), 2 * kB), 0);
  EXPECT_EQ(dev->take_calls(), Calls{"write_durable 32768+8192"});
  ASSERT_EQ(r->write_durable(kB, buf.data(), 5 * kB), 0);
  EXPECT_EQ(dev->take_calls(), (Calls{"write_many 36864+4096,8192+12288,65536+4096", "flush"}));
  ASSERT_EQ(r->write_durable(3 * kB, buf.data(), 0), 0);
  EXPECT_EQ(dev->take_calls(), Calls{"flush"});

  ASSERT_EQ(r->flush(), 0);
  EXPECT_EQ(dev->take_calls(), Calls{"flush"});
  ASSERT_EQ(r->discard(0, 6 * kB), 0);
  EXPECT_EQ(dev->take_calls(), (Calls{"discard 32768+8192", "discard 8192+12288", "discard 65536+4096"}));
  ASSERT_EQ(r->discard(3 * kB, kB), 0);
  EXPECT_EQ(dev->take_calls(), Calls{"discard 12288+4096"});

  std::promise<int> done;
  r->write_many_async({{4 * kB, buf.data(), 2 * kB}}, [&](int res) { done.set_value(res); });
  EXPECT_EQ(done.get_future().get(), 0);
  EXPECT_EQ(dev->take_calls(), Calls{"write_many_async 16384+4096,65536+4096"});
}

TEST(RegionDevice, RefusesIoPastItsEndWithoutTouchingTheDevice) {
  auto dev = std::make_shared<RecordingDevice>(64 * kB);
  auto r = make_region(dev, {{8 * kB, 2 * kB}, {2 * kB, 3 * kB}, {16 * kB, kB}});
  ASSERT_TRUE(r);
  AlignedBuffer buf(8 * kB);
  EXPECT_EQ(r->read(5 * kB, buf.data(), 2 * kB), -EINVAL);
  EXPECT_EQ(r->write(6 * kB, buf.data(), kB), -EINVAL);
  EXPECT_EQ(r->write(7 * kB, buf.data(), 0), -EINVAL);
  EXPECT_EQ(r->read(UINT64_MAX - kB + 1, buf.data(), 2 * kB), -EINVAL);
  EXPECT_EQ(r->write_durable(4 * kB, buf.data(), 4 * kB), -EINVAL);
  EXPECT_EQ(r->discard(0, 7 * kB), -EINVAL);
  // A batch with one request out of range is refused whole.
  EXPECT_EQ(r->write_many({{0, buf.data(), kB}, {5 * kB, buf.data(), 2 * kB}}), -EINVAL);
  EXPECT_EQ(r->read_many({{0, buf.data(), kB}, {6 * kB + 1, buf.data(), 0}}), -EINVAL);
  std::promise<int> done;
  r->write_many_async({{0, buf.data(), kB}, {6 * kB, buf.data(), kB}}, [&](int res) { done.set_value(res); });
  EXPECT_EQ(done.get_future().get(), -EINVAL);
  EXPECT_EQ(dev->take_calls(), Calls{});
  EXPECT_EQ(std::count(dev->bytes().begin(), dev->bytes().end(), '\0'), static_cast<long>(dev->bytes().size()));
  // Nothing at the very end is nothing to do.
  EXPECT_EQ(r->read(6 * kB, buf.data(), 0), 0);
  EXPECT_EQ(r->write_many({{6 * kB, buf.data(), 0}}), 0);
  EXPECT_EQ(dev->take_calls(), Calls{});
}

namespace {

// A region on a real device file: O_DIRECT (block-sized extents and I/O)
// or buffered (extents and I/O at any byte).
struct FileCase {
  IoBackend backend;
  bool direct;
  uint64_t seed;
  const char* name;
};
void PrintTo(const FileCase& c, std::ostream* os) { *os << c.name; }

class RegionOnFile : public ::testing::TestWithParam<FileCase> {
 protected:
  static constexpr uint64_t kDeviceSize = 4 << 20;

  void SetUp() override {
    if (GetParam().backend == IoBackend::kUring && !uring_available()) GTEST_SKIP() << "no io_uring here";
    DeviceOpenOptions o;
    o.backend = GetParam().backend;
    o.direct_io = GetParam().direct;
    o.create = true;
    o.create_size = kDeviceSize;
    std::string err;
    std::shared_ptr<BlockDevice> dev = open_block_device(dir_.file("dev"), o, &err);
    ASSERT_TRUE(dev) << err;
    ASSERT_EQ(dev->alignment(), GetParam().direct ? kB : 1u) << "the filesystem under the test directory";
    device_ = dev;
    // Out of device order, apart from each other, of unequal sizes.
    extents_ = GetParam().direct
                   ? std::vector<RegionExtent>{{0x300000, 5 * kB}, {0x10000, 3 * kB}, {0x200000, kB}, {0x80000, 9 * kB}}
                   : std::vector<RegionExtent>{{0x300007, 0x4ffd}, {0x10003, 0x3001}, {0x200000, 1}, {0x80011, 0x9000}};
    for (const auto& e : extents_) {
      starts_.push_back(region_bytes_);
      region_bytes_ += e.length;
    }
    rng_.seed(test::test_seed(GetParam().seed));
    // The whole device holds random bytes first: what lies between the
    // extents must still be there at the end.
    device_bytes_ = test::random_bytes(rng_, kDeviceSize);
    ASSERT_EQ(write_all(*device_, 0, device_bytes_), 0);
    region_ = make_region(device_, extents_);
    ASSERT_TRUE(region_);
    model_.resize(region_bytes_);
    for (size_t i = 0; i < extents_.size(); ++i)
      model_.replace(starts_[i], extents_[i].length, device_bytes_, extents_[i].offset, extents_[i].length);
  }

  static int write_all(BlockDevice& d, uint64_t offset, const std::string& bytes) {
    AlignedBuffer b(bytes.size());
    std::memcpy(b.data(), bytes.data(), bytes.size());
    return d.write(offset, b.data(), bytes.size());
  }
  uint64_t unit() const { return GetParam().direct ? kB : 1; }
  // A random range of the region, whole units, at most 12 blocks long.
  std::pair<uint64_t, uint64_t> random_range() {
    const uint64_t off = rng_() % (region_bytes_ / unit()) * unit();
    const uint64_t most = std::min<uint64_t>(region_bytes_ - off, 12 * kB) / unit();
    return {off, (1 + rng_() % most) * unit()};
  }
  // How many extent boundaries lie strictly inside [off, off + len).
  int boundaries_in(uint64_t off, uint64_t len) const {
    return static_cast<int>(std::count_if(starts_.begin(), starts_.end(),
                                          [&](uint64_t s) { return s > off && s < off + len; }));
  }
  // Writes through the region, as one batch, and into the model in order.
  struct Writes {
    std::vector<AlignedBuffer> bufs;
    std::vector<WriteIo> ios;
  };
  Writes writes_of(const std::vector<std::pair<uint64_t, uint64_t>>& ranges) {
    Writes w;
    for (auto [off, len] : ranges) {
      std::string data = test::random_bytes(rng_, len);
      w.bufs.emplace_back(len);
      std::memcpy(w.bufs.back().data(), data.data(), len);
      w.ios.push_back({off, w.bufs.back().data(), len});
      model_.replace(off, len, data);
    }
    return w;
  }
  // Reads the ranges through the region as one batch and compares them with the model.
  void expect_reads(const std::vector<std::pair<uint64_t, uint64_t>>& ranges, const std::string& what) {
    std::vector<AlignedBuffer> bufs;
    std::vector<ReadIo> ios;
    for (auto [off, len] : ranges) {
      bufs.emplace_back(len);
      ios.push_back({off, bufs.back().data(), len});
    }
    ASSERT_EQ(ios.size() == 1 ? region_->read(ios[0].offset, ios[0].buf, ios[0].len) : region_->read_many(ios), 0)
        << what;
    for (size_t i = 0; i < ranges.size(); ++i)
      ASSERT_TRUE(std::string(bufs[i].data(), ranges[i].second) == model_.substr(ranges[i].first, ranges[i].second))
          << what << ": range " << span(ranges[i].first, ranges[i].second);
  }
  // The device file read directly: the extents hold the model, the rest
  // holds the bytes written before the region was made.
  void expect_device_matches_model() {
    std::string want = device_bytes_;
    for (size_t i = 0; i < extents_.size(); ++i)
      want.replace(extents_[i].offset, extents_[i].length, model_, starts_[i], extents_[i].length);
    AlignedBuffer got(kDeviceSize);
    ASSERT_EQ(device_->read(0, got.data(), kDeviceSize), 0);
    for (uint64_t off = 0; off < kDeviceSize; off += kB)
      ASSERT_TRUE(std::memcmp(got.data() + off, want.data() + off, kB) == 0) << "device block at " << off;
  }

  TempDir dir_{"region"};
  std::shared_ptr<BlockDevice> device_;
  std::vector<RegionExtent> extents_;
  std::vector<uint64_t> starts_;
  uint64_t region_bytes_ = 0;
  std::unique_ptr<RegionDevice> region_;
  std::mt19937_64 rng_;
  std::string device_bytes_;  // the device as it was before the region was made
  std::string model_;         // what the region must read back
};

}  // namespace

// Every kind of read and write, at random places and lengths, most of them
// across one or more extent boundaries, against the model.
TEST_P(RegionOnFile, RandomIoAcrossExtentsMatchesTheModel) {
  int crossing = 0;
  for (int round = 0; round < 600; ++round) {
    const std::string what = "round " + std::to_string(round);
    const bool batch = rng_() % 2 == 0;
    std::vector<std::pair<uint64_t, uint64_t>> ranges(batch ? 1 + rng_() % 6 : 1);
    for (auto& r : ranges) {
      r = random_range();
      crossing += boundaries_in(r.first, r.second) > 0;
    }
    switch (rng_() % 5) {
      case 0: {
        Writes w = writes_of({ranges[0]});
        ASSERT_EQ(region_->write(w.ios[0].offset, w.ios[0].buf, w.ios[0].len), 0) << what;
        break;
      }
      case 1: {  // overlapping requests land in the order given
        Writes w = writes_of(ranges);
        ASSERT_EQ(region_->write_many(w.ios), 0) << what;
        break;
      }
      case 2: {
        Writes w = writes_of({ranges[0]});
        ASSERT_EQ(region_->write_durable(w.ios[0].offset, w.ios[0].buf, w.ios[0].len), 0) << what;
        break;
      }
      case 3: {
        Writes w = writes_of(ranges);
        std::promise<int> done;
        region_->write_many_async(w.ios, [&](int r) { done.set_value(r); });
        ASSERT_EQ(done.get_future().get(), 0) << what;
        break;
      }
      default:
        expect_reads(ranges, what);
    }
  }
  EXPECT_GT(crossing, 300) << "most ranges should cross an extent boundary";
  ASSERT_EQ(region_->flush(), 0);
  expect_reads({{0, region_bytes_}}, "the whole region");
  expect_device_matches_model();
}

// Overlapping writes of one batch, each across extent boundaries: the later
// one's bytes win everywhere, on every extent they share.
TEST_P(RegionOnFile, OverlappingWritesOfABatchLandInOrderAcrossExtents) {
  auto at = [&](double fraction) { return static_cast<uint64_t>(fraction * region_bytes_) / unit() * unit(); };
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto [from, to] : std::vector<std::pair<double, double>>{
           {0.2, 0.7}, {0.25, 0.55}, {0.4, 0.5}, {0.47, 0.75}, {0.0, 0.35}, {0.45, 1.0}})
    ranges.emplace_back(at(from), at(to) - at(from));
  for (auto [off, len] : ranges) ASSERT_GT(boundaries_in(off, len), 0) << span(off, len) << " crosses no boundary";
  for (int repeat = 0; repeat < 20; ++repeat) {
    Writes w = writes_of(ranges);
    ASSERT_EQ(region_->write_many(w.ios), 0);
    expect_reads({{0, region_bytes_}}, "repeat " + std::to_string(repeat));
  }
  expect_device_matches_model();
}

INSTANTIATE_TEST_SUITE_P(Files, RegionOnFile,
                         ::testing::Values(FileCase{IoBackend::kUring, true, 5501, "uring_direct"},
                                           FileCase{IoBackend::kPosix, true, 5502, "posix_direct"},
                                           FileCase{IoBackend::kPosix, false, 5503, "posix_buffered"}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(SharedBlockDevice, ForwardsEveryCallToTheSharedDevice) {
  auto dev = std::make_shared<RecordingDevice>(16 * kB);
  SharedBlockDevice a(dev), b(dev);
  EXPECT_EQ(a.size(), 16 * kB);
  EXPECT_EQ(a.alignment(), kB);
  EXPECT_EQ(a.backend(), "recording");
  EXPECT_EQ(a.path(), "memory");
  EXPECT_EQ(a.media(), Media::kSolidState);
  const BlockDeviceStats s = b.io_stats();
  EXPECT_EQ(std::vector<uint64_t>({s.requests, s.device_ios, s.short_transfers, s.max_in_flight}),
            std::vector<uint64_t>({11, 22, 33, 44}));
  EXPECT_EQ(a.shared(), dev);

  AlignedBuffer w(2 * kB), r(2 * kB);
  std::memset(w.data(), 'x', 2 * kB);
  ASSERT_EQ(a.write(0, w.data(), kB), 0);
  ASSERT_EQ(b.read(0, r.data(), kB), 0);
  EXPECT_EQ(r.data()[kB - 1], 'x');
  ASSERT_EQ(a.write_many({{kB, w.data(), kB}}), 0);
  ASSERT_EQ(b.read_many({{kB, r.data(), kB}}), 0);
  std::promise<int> done;
  a.write_many_async({{2 * kB, w.data(), kB}}, [&](int res) { done.set_value(res); });
  EXPECT_EQ(done.get_future().get(), 0);
  ASSERT_EQ(b.write_durable(3 * kB, w.data(), kB), 0);
  ASSERT_EQ(a.flush(), 0);
  ASSERT_EQ(b.discard(4 * kB, 2 * kB), 0);
  EXPECT_EQ(dev->take_calls(), (Calls{"write 0+4096", "read 0+4096", "write_many 4096+4096", "read_many 4096+4096",
                                      "write_many_async 8192+4096", "write_durable 12288+4096", "flush",
                                      "discard 16384+8192"}));
}

// Two stacks on one device, as the kvfs and the tier will have: what one
// writes the other reads, and the device lives as long as either stack.
TEST(SharedBlockDevice, TwoStacksOnOneDevice) {
  auto dev = std::make_shared<RecordingDevice>(64 * kB);
  auto tier_stack = std::make_unique<AsyncWriteDevice>(std::make_unique<SharedBlockDevice>(dev), 1);
  auto ring = make_region(std::make_shared<SharedBlockDevice>(dev), {{32 * kB, 2 * kB}, {4 * kB, 2 * kB}});
  ASSERT_TRUE(ring);
  EXPECT_EQ(ring->backend(), "region+recording");
  EXPECT_EQ(tier_stack->backend(), "async+recording");
  dev.reset();

  AlignedBuffer w(3 * kB), r(3 * kB);
  std::memset(w.data(), 'r', 3 * kB);
  ASSERT_EQ(ring->write(kB, w.data(), 3 * kB), 0);  // device [33B, 34B) and [4B, 6B)
  ASSERT_EQ(tier_stack->read(33 * kB, r.data(), kB), 0);
  EXPECT_EQ(r.data()[0], 'r');
  ASSERT_EQ(tier_stack->read(4 * kB, r.data(), 2 * kB), 0);
  EXPECT_EQ(r.data()[2 * kB - 1], 'r');

  std::memset(w.data(), 't', kB);
  std::promise<int> done;
  tier_stack->write_many_async({{32 * kB, w.data(), kB}}, [&](int res) { done.set_value(res); });
  EXPECT_EQ(done.get_future().get(), 0);
  tier_stack.reset();
  ASSERT_EQ(ring->read(0, r.data(), kB), 0);
  EXPECT_EQ(r.data()[0], 't');
}
