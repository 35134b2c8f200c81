// Block devices under large batches (issue 10): any number of requests in one
// read_many/write_many completes, on io_uring (at several ring depths) and on
// pread/pwrite; requests that follow each other on the device join into one
// I/O; overlapping writes land in order; short transfers are continued; the
// ring never holds more I/Os than its depth, also when several threads submit
// large batches at once.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <numeric>
#include <ostream>
#include <random>
#include <thread>

#include "common_helpers.h"
#include "hsio/block_device.h"

using namespace hybridstore;
using hybridstore::test::TempDir;

namespace {

constexpr uint64_t kPiece = 4096;

struct Backend {
  IoBackend backend;
  unsigned depth;
  const char* name;
};
void PrintTo(const Backend& b, std::ostream* os) { *os << b.name; }

// Each check draws its data from a seed of its own (derived from its name),
// printed, and replaced by HS_TEST_SEED when that is set, so a failure repeats.
uint64_t seed_for(const char* what) {
  return test::test_seed(
      std::accumulate(what, what + strlen(what), uint64_t{17}, [](uint64_t h, char c) { return h * 131 + c; }));
}

class BatchTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam().backend == IoBackend::kUring && !uring_available()) GTEST_SKIP() << "no io_uring here";
  }
  // O_DIRECT unless `buffered`: the checks with tens of thousands of
  // scattered I/Os go through the page cache, where the ring and the
  // batching work the same but a busy disk does not make them take minutes.
  std::unique_ptr<BlockDevice> open(uint64_t size, uint64_t max_transfer = 0, bool buffered = false,
                                    const std::string& name = "dev") {
    DeviceOpenOptions o;
    o.backend = GetParam().backend;
    o.uring_depth = GetParam().depth;
    o.create = true;
    o.create_size = size;
    o.debug_max_transfer = max_transfer;
    o.direct_io = !buffered;
    std::string err;
    auto d = open_block_device(dir_.file(name), o, &err);
    EXPECT_TRUE(d) << err;
    return d;
  }
  // One ring can hold at most its depth; pread/pwrite does one I/O at a time.
  uint64_t in_flight_bound() const { return GetParam().backend == IoBackend::kUring ? GetParam().depth : 1; }

  TempDir dir_;
};

// `n` separate 4 KiB buffers of seeded bytes, each for its own device offset.
struct Pieces {
  std::vector<uint64_t> offsets;
  std::vector<AlignedBuffer> bufs;
  std::vector<std::string> want;

  Pieces(std::mt19937_64& rng, const std::vector<uint64_t>& offs) : offsets(offs) {
    for (size_t i = 0; i < offs.size(); ++i) {
      want.push_back(test::random_bytes(rng, kPiece));
      bufs.emplace_back(kPiece);
      memcpy(bufs.back().data(), want.back().data(), kPiece);
    }
  }
  std::vector<WriteIo> writes() const {
    std::vector<WriteIo> v;
    for (size_t i = 0; i < offsets.size(); ++i) v.push_back({offsets[i], bufs[i].data(), kPiece});
    return v;
  }
};

// Reads every piece back in one batch, into fresh buffers, and compares.
void expect_reads_back(BlockDevice* d, const Pieces& p) {
  std::vector<AlignedBuffer> got;
  std::vector<ReadIo> ios;
  for (size_t i = 0; i < p.offsets.size(); ++i) {
    got.emplace_back(kPiece);
    memset(got.back().data(), 0xee, kPiece);
    ios.push_back({p.offsets[i], got.back().data(), kPiece});
  }
  ASSERT_EQ(d->read_many(ios), 0);
  for (size_t i = 0; i < p.offsets.size(); ++i)
    ASSERT_EQ(std::string(got[i].data(), kPiece), p.want[i]) << "piece " << i << " at " << p.offsets[i];
}

// Offsets of `n` pieces with a gap after each (no two adjacent), shuffled.
std::vector<uint64_t> scattered(std::mt19937_64& rng, size_t n) {
  std::vector<uint64_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = i * 2 * kPiece;
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

}  // namespace

// Around the ring depth (127/128/129 for the default 128) and far beyond it.
TEST_P(BatchTest, BatchesOfAnySizeComplete) {
  auto direct = open(256 << 20);
  auto buffered = open(256 << 20, 0, true, "buffered");
  ASSERT_TRUE(direct && buffered);
  std::mt19937_64 rng(seed_for("BatchesOfAnySizeComplete"));
  std::vector<size_t> sizes = {1, 2, 127, 128, 129, 1000, 10000, 30000};
  if (size_t depth = GetParam().depth; depth > 1) sizes.insert(sizes.end(), {depth - 1, depth, depth + 1});
  for (size_t n : sizes) {
    SCOPED_TRACE("batch of " + std::to_string(n));
    BlockDevice* d = n <= 1000 ? direct.get() : buffered.get();
    Pieces p(rng, scattered(rng, n));
    uint64_t ios0 = d->io_stats().device_ios;
    ASSERT_EQ(d->write_many(p.writes()), 0);
    // No two pieces are adjacent: each is an I/O of its own.
    EXPECT_EQ(d->io_stats().device_ios - ios0, n);
    expect_reads_back(d, p);
  }
  for (BlockDevice* d : {direct.get(), buffered.get()}) {
    EXPECT_LE(d->io_stats().max_in_flight, in_flight_bound());
    EXPECT_GE(d->io_stats().max_in_flight, 1u);
  }
}

TEST_P(BatchTest, AdjacentRequestsJoinIntoOneIo) {
  auto d = open(128 << 20);
  ASSERT_TRUE(d);
  std::mt19937_64 rng(seed_for("AdjacentRequestsJoinIntoOneIo"));
  // 10,000 pieces that follow each other on the device, each with its own
  // buffer, in random order: one vectored I/O per IOV_MAX buffers at most.
  const size_t n = 10000;
  std::vector<uint64_t> offs(n);
  for (size_t i = 0; i < n; ++i) offs[i] = (1 << 20) + i * kPiece;
  std::shuffle(offs.begin(), offs.end(), rng);
  Pieces p(rng, offs);
  uint64_t ios0 = d->io_stats().device_ios;
  ASSERT_EQ(d->write_many(p.writes()), 0);
  const uint64_t most = (n + IOV_MAX - 1) / IOV_MAX;
  EXPECT_LE(d->io_stats().device_ios - ios0, most);
  ios0 = d->io_stats().device_ios;
  expect_reads_back(d.get(), p);
  EXPECT_LE(d->io_stats().device_ios - ios0, most);

  // Adjacent both on the device and in memory: a single plain I/O.
  AlignedBuffer big(n * kPiece);
  std::vector<ReadIo> ios;
  for (size_t i = 0; i < n; ++i) ios.push_back({(1 << 20) + i * kPiece, big.data() + i * kPiece, kPiece});
  std::shuffle(ios.begin(), ios.end(), rng);
  ios0 = d->io_stats().device_ios;
  ASSERT_EQ(d->read_many(ios), 0);
  EXPECT_EQ(d->io_stats().device_ios - ios0, 1u);
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(std::string(big.data() + (offs[i] - (1 << 20)), kPiece), p.want[i]) << "piece " << i;
}

TEST_P(BatchTest, OverlappingAndRepeatedReadsInOneBatch) {
  auto d = open(16 << 20);
  ASSERT_TRUE(d);
  std::mt19937_64 rng(seed_for("OverlappingAndRepeatedReadsInOneBatch"));
  std::string data = test::random_bytes(rng, 64 * kPiece);
  AlignedBuffer w(data.size());
  memcpy(w.data(), data.data(), data.size());
  ASSERT_EQ(d->write(0, w.data(), data.size()), 0);
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // offset, length (pieces)
  for (int i = 0; i < 500; ++i) {
    uint64_t a = rng() % 64, len = 1 + rng() % (64 - a);
    ranges.emplace_back(a, len);
  }
  std::vector<AlignedBuffer> got;
  std::vector<ReadIo> ios;
  for (auto [a, len] : ranges) {
    got.emplace_back(len * kPiece);
    ios.push_back({a * kPiece, got.back().data(), len * kPiece});
  }
  ASSERT_EQ(d->read_many(ios), 0);
  for (size_t i = 0; i < ranges.size(); ++i)
    ASSERT_EQ(std::string(got[i].data(), ranges[i].second * kPiece),
              data.substr(ranges[i].first * kPiece, ranges[i].second * kPiece))
        << "range " << i;
}

TEST_P(BatchTest, OverlappingWritesInOneBatchLandInOrder) {
  auto d = open(16 << 20);
  ASSERT_TRUE(d);
  std::mt19937_64 rng(seed_for("OverlappingWritesInOneBatchLandInOrder"));
  // Random overlapping ranges among scattered others; a model applies them
  // in order: the device must end up the same.
  const uint64_t pages = 256;
  std::string model(pages * kPiece, '\0');
  std::vector<AlignedBuffer> bufs;
  std::vector<WriteIo> ios;
  for (int i = 0; i < 300; ++i) {
    uint64_t a = rng() % pages, len = 1 + rng() % std::min<uint64_t>(16, pages - a);
    std::string data = test::random_bytes(rng, len * kPiece);
    model.replace(a * kPiece, data.size(), data);
    bufs.emplace_back(data.size());
    memcpy(bufs.back().data(), data.data(), data.size());
    ios.push_back({a * kPiece, bufs.back().data(), data.size()});
  }
  ASSERT_EQ(d->write_many(ios), 0);
  AlignedBuffer got(model.size());
  ASSERT_EQ(d->read(0, got.data(), model.size()), 0);
  for (uint64_t p = 0; p < pages; ++p)
    ASSERT_EQ(std::string(got.data() + p * kPiece, kPiece), model.substr(p * kPiece, kPiece)) << "page " << p;
}

TEST_P(BatchTest, ShortTransfersAreContinued) {
  // Every kernel call moves at most 12 KiB: each larger request comes back
  // short, several times, and must be continued where it stopped.
  auto d = open(64 << 20, 3 * kPiece);
  ASSERT_TRUE(d);
  std::mt19937_64 rng(seed_for("ShortTransfersAreContinued"));
  std::string data = test::random_bytes(rng, 1 << 20);
  AlignedBuffer w(data.size());
  memcpy(w.data(), data.data(), data.size());
  ASSERT_EQ(d->write(8 << 20, w.data(), data.size()), 0);
  EXPECT_GT(d->io_stats().short_transfers, 0u);
  AlignedBuffer r(data.size());
  ASSERT_EQ(d->read(8 << 20, r.data(), data.size()), 0);
  ASSERT_EQ(std::string(r.data(), data.size()), data);

  // Vectored: adjacent pieces in separate buffers, cut mid-buffer.
  std::vector<uint64_t> offs;
  for (size_t i = 0; i < 300; ++i) offs.push_back((16 << 20) + i * kPiece);
  for (size_t i = 0; i < 300; ++i) offs.push_back((32 << 20) + i * 2 * kPiece);
  std::shuffle(offs.begin(), offs.end(), rng);
  Pieces p(rng, offs);
  uint64_t shorts0 = d->io_stats().short_transfers;
  ASSERT_EQ(d->write_many(p.writes()), 0);
  EXPECT_GT(d->io_stats().short_transfers, shorts0);
  expect_reads_back(d.get(), p);
}

TEST_P(BatchTest, ReadPastTheEndOfAShrunkFileFailsInsteadOfHanging) {
  auto d = open(1 << 20);
  ASSERT_TRUE(d);
  AlignedBuffer b(1 << 20);
  memset(b.data(), 'x', 1 << 20);
  ASSERT_EQ(d->write(0, b.data(), 1 << 20), 0);
  ASSERT_EQ(d->flush(), 0);
  // The file shrinks under the open device: the kernel returns short reads,
  // then nothing; that is an I/O error, not a retry forever.
  ASSERT_EQ(::truncate(dir_.file("dev").c_str(), 256 << 10), 0);
  EXPECT_EQ(d->read(0, b.data(), 1 << 20), -EIO);
  std::vector<ReadIo> ios;
  for (int i = 0; i < 200; ++i) ios.push_back({static_cast<uint64_t>(i) * kPiece, b.data() + i * kPiece, kPiece});
  EXPECT_EQ(d->read_many(ios), -EIO);
  EXPECT_EQ(d->read(0, b.data(), 256 << 10), 0);
}

TEST_P(BatchTest, ConcurrentLargeBatchesShareTheDevice) {
  auto d = open(256 << 20, 0, true);
  ASSERT_TRUE(d);
  const uint64_t seed = seed_for("ConcurrentLargeBatchesShareTheDevice");
  // Each thread owns a region: a batch of 3000 scattered pieces written,
  // then read back, several times, all threads at once.
  const int threads = 4, rounds = 3;
  std::vector<std::thread> ts;
  std::vector<std::string> failures(threads);
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      std::mt19937_64 rng(seed + t);
      for (int r = 0; r < rounds && failures[t].empty(); ++r) {
        std::vector<uint64_t> offs = scattered(rng, 3000);
        for (auto& o : offs) o += static_cast<uint64_t>(t) * (32 << 20);
        Pieces p(rng, offs);
        if (int e = d->write_many(p.writes()); e != 0) {
          failures[t] = "write_many: " + std::to_string(e);
          break;
        }
        std::vector<AlignedBuffer> got;
        std::vector<ReadIo> ios;
        for (size_t i = 0; i < offs.size(); ++i) {
          got.emplace_back(kPiece);
          ios.push_back({offs[i], got.back().data(), kPiece});
        }
        if (int e = d->read_many(ios); e != 0) {
          failures[t] = "read_many: " + std::to_string(e);
          break;
        }
        for (size_t i = 0; i < offs.size(); ++i)
          if (std::string(got[i].data(), kPiece) != p.want[i]) {
            failures[t] = "round " + std::to_string(r) + ": piece at " + std::to_string(offs[i]) + " differs";
            break;
          }
      }
    });
  for (auto& th : ts) th.join();
  for (int t = 0; t < threads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
  EXPECT_LE(d->io_stats().max_in_flight, in_flight_bound());
}

INSTANTIATE_TEST_SUITE_P(Backends, BatchTest,
                         ::testing::Values(Backend{IoBackend::kUring, 128, "uring"},
                                           Backend{IoBackend::kUring, 1, "uring_depth1"},
                                           Backend{IoBackend::kUring, 8, "uring_depth8"},
                                           Backend{IoBackend::kPosix, 0, "posix"}),
                         [](const auto& info) { return std::string(info.param.name); });
