#include "hsio/block_device.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include "common_helpers.h"

using namespace hybridstore;
using hybridstore::test::TempDir;

namespace {

std::unique_ptr<BlockDevice> open_dev(const std::string& path, IoBackend be, uint64_t size) {
  DeviceOpenOptions o;
  o.backend = be;
  o.create = true;
  o.create_size = size;
  std::string err;
  auto d = open_block_device(path, o, &err);
  EXPECT_TRUE(d) << err;
  return d;
}

class BlockDeviceTest : public ::testing::TestWithParam<IoBackend> {
 protected:
  void SetUp() override {
    if (GetParam() == IoBackend::kUring && !uring_available()) GTEST_SKIP() << "no io_uring here";
  }
};

}  // namespace

TEST_P(BlockDeviceTest, CreatesSparseFileOfRequestedSize) {
  TempDir dir;
  auto d = open_dev(dir.file("dev"), GetParam(), 64 << 20);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->size(), 64u << 20);
}

TEST_P(BlockDeviceTest, RandomWritesReadBackAfterReopen) {
  TempDir dir;
  std::mt19937_64 rng(1);
  std::map<uint64_t, std::string> written;
  {
    auto d = open_dev(dir.file("dev"), GetParam(), 16 << 20);
    ASSERT_TRUE(d);
    std::vector<AlignedBuffer> bufs;
    std::vector<WriteIo> ios;
    for (int i = 0; i < 64; ++i) {
      uint64_t off = (rng() % 4096) * 4096;
      if (written.count(off)) continue;
      std::string data = test::random_bytes(rng, 4096);
      AlignedBuffer b(4096);
      memcpy(b.data(), data.data(), 4096);
      ios.push_back({off, b.data(), 4096});
      bufs.push_back(std::move(b));
      written[off] = data;
    }
    ASSERT_EQ(d->write_many(ios), 0);
    ASSERT_EQ(d->flush(), 0);
  }
  auto d = open_dev(dir.file("dev"), GetParam(), 16 << 20);
  ASSERT_TRUE(d);
  for (auto& [off, data] : written) {
    AlignedBuffer b(4096);
    ASSERT_EQ(d->read(off, b.data(), 4096), 0);
    EXPECT_EQ(std::string(b.data(), 4096), data) << "offset " << off;
  }
}

TEST_P(BlockDeviceTest, ConcurrentWritersDoNotInterfere) {
  TempDir dir;
  auto d = open_dev(dir.file("dev"), GetParam(), 64 << 20);
  ASSERT_TRUE(d);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      AlignedBuffer b(65536);
      for (int i = 0; i < 16; ++i) {
        memset(b.data(), 'a' + t, 65536);
        uint64_t off = (static_cast<uint64_t>(t) * 16 + i) * 65536;
        ASSERT_EQ(d->write(off, b.data(), 65536), 0);
      }
    });
  for (auto& th : threads) th.join();
  AlignedBuffer b(65536);
  for (int t = 0; t < 8; ++t)
    for (int i = 0; i < 16; ++i) {
      ASSERT_EQ(d->read((static_cast<uint64_t>(t) * 16 + i) * 65536, b.data(), 65536), 0);
      EXPECT_EQ(b.data()[0], 'a' + t);
      EXPECT_EQ(b.data()[65535], 'a' + t);
    }
}

TEST_P(BlockDeviceTest, OutOfRangeIsRejected) {
  TempDir dir;
  auto d = open_dev(dir.file("dev"), GetParam(), 1 << 20);
  ASSERT_TRUE(d);
  AlignedBuffer b(4096);
  EXPECT_EQ(d->write(1 << 20, b.data(), 4096), -EINVAL);
  EXPECT_EQ(d->read((1 << 20) - 2048, b.data(), 4096), -EINVAL);
}

// write_durable (the commit journal's writes): the bytes are there after the
// device is reopened, several threads may write at once, and a write the
// device cannot take fails cleanly.
TEST_P(BlockDeviceTest, DurableWritesReadBackAfterReopen) {
  TempDir dir;
  std::mt19937_64 rng(7);
  std::map<uint64_t, std::string> written;
  auto block = [&](uint64_t off, uint64_t len) {
    std::string data = test::random_bytes(rng, len);
    written[off] = data;
    AlignedBuffer b(len);
    memcpy(b.data(), data.data(), len);
    return b;
  };
  {
    auto d = open_dev(dir.file("dev"), GetParam(), 16 << 20);
    ASSERT_TRUE(d);
    AlignedBuffer one = block(0, 8192);
    ASSERT_EQ(d->write_durable(0, one.data(), 8192), 0);
    // Records of several sizes, then a large one.
    for (int i = 0; i < 8; ++i) {
      AlignedBuffer b = block((1 + i) * 65536, 4096 * (1 + i));
      EXPECT_EQ(d->write_durable((1 + i) * 65536, b.data(), b.size()), 0) << i;
    }
    AlignedBuffer large = block(4 << 20, 1 << 20);
    EXPECT_EQ(d->write_durable(4 << 20, large.data(), large.size()), 0);
    EXPECT_EQ(d->io_stats().requests, 10u);
  }
  auto d = open_dev(dir.file("dev"), GetParam(), 16 << 20);
  ASSERT_TRUE(d);
  for (auto& [off, data] : written) {
    AlignedBuffer b(data.size());
    ASSERT_EQ(d->read(off, b.data(), data.size()), 0);
    EXPECT_EQ(std::string(b.data(), data.size()), data) << "offset " << off;
  }
}

TEST_P(BlockDeviceTest, DurableWritesFromSeveralThreadsAtOnce) {
  TempDir dir;
  auto d = open_dev(dir.file("dev"), GetParam(), 64 << 20);
  ASSERT_TRUE(d);
  // As the journal's lanes write: each thread its own records, all at once.
  std::vector<std::thread> threads;
  for (int t = 0; t < 24; ++t)
    threads.emplace_back([&, t] {
      AlignedBuffer b(8192);
      for (int i = 0; i < 20; ++i) {
        memset(b.data(), 'A' + t, 8192);
        memcpy(b.data(), &i, sizeof i);
        uint64_t off = (static_cast<uint64_t>(t) * 20 + i) * 8192;
        ASSERT_EQ(d->write_durable(off, b.data(), 8192), 0);
      }
    });
  for (auto& th : threads) th.join();
  AlignedBuffer b(8192);
  for (int t = 0; t < 24; ++t)
    for (int i = 0; i < 20; ++i) {
      ASSERT_EQ(d->read((static_cast<uint64_t>(t) * 20 + i) * 8192, b.data(), 8192), 0);
      int seen;
      memcpy(&seen, b.data(), sizeof seen);
      EXPECT_EQ(seen, i);
      EXPECT_EQ(b.data()[8191], 'A' + t);
    }
}

TEST_P(BlockDeviceTest, DurableWriteOutOfRangeIsRejected) {
  TempDir dir;
  auto d = open_dev(dir.file("dev"), GetParam(), 1 << 20);
  ASSERT_TRUE(d);
  AlignedBuffer b(8192);
  EXPECT_EQ(d->write_durable((1 << 20) - 4096, b.data(), 8192), -EINVAL);
  EXPECT_EQ(d->write_durable(1 << 20, b.data(), 4096), -EINVAL);
  // A buffer O_DIRECT cannot take is the kernel's error, not a crash.
  if (d->alignment() > 1) {
    EXPECT_EQ(d->write_durable(0, b.data() + 1, 4096), -EINVAL);
  }
  EXPECT_EQ(d->write_durable(0, b.data(), 4096), 0) << "the device still works after";
  EXPECT_EQ(d->write_durable(4096, b.data(), 0), 0) << "nothing to write: a flush";
}

INSTANTIATE_TEST_SUITE_P(Backends, BlockDeviceTest,
                         ::testing::Values(IoBackend::kUring, IoBackend::kPosix),
                         [](const auto& info) {
                           return std::string(info.param == IoBackend::kUring ? "uring" : "posix");
                         });

// Through the page cache, and with the transfer cap of the short-transfer
// tests (which takes the generic write-then-flush path).
TEST(BlockDevice, DurableWritesBufferedAndCapped) {
  TempDir dir;
  for (bool capped : {false, true}) {
    DeviceOpenOptions o;
    o.backend = IoBackend::kPosix;
    o.direct_io = capped;
    o.create = true;
    o.create_size = 1 << 20;
    o.debug_max_transfer = capped ? 4096 : 0;
    std::string err;
    auto d = open_block_device(dir.file(capped ? "capped" : "buffered"), o, &err);
    ASSERT_TRUE(d) << err;
    AlignedBuffer b(16384);
    memset(b.data(), capped ? 'c' : 'b', 16384);
    EXPECT_EQ(d->write_durable(8192, b.data(), 16384), 0);
    if (capped) {
      EXPECT_EQ(d->io_stats().short_transfers, 3u) << "the cap split the write";
    }
    AlignedBuffer r(16384);
    ASSERT_EQ(d->read(8192, r.data(), 16384), 0);
    EXPECT_EQ(memcmp(r.data(), b.data(), 16384), 0);
  }
}

TEST(BlockDevice, MissingDeviceGivesClearError) {
  DeviceOpenOptions o;
  std::string err;
  auto d = open_block_device("/nonexistent/dir/dev", o, &err);
  EXPECT_FALSE(d);
  EXPECT_NE(err.find("/nonexistent/dir/dev"), std::string::npos);
}

TEST(BlockDevice, DirectoryIsNotADevice) {
  TempDir dir;
  DeviceOpenOptions o;
  o.direct_io = false;
  std::string err;
  auto d = open_block_device(dir.path(), o, &err);
  EXPECT_FALSE(d);
}

namespace {

std::unique_ptr<BlockDevice> create_laid_out(const std::string& path, uint64_t size, FileLayout layout,
                                             std::string* err) {
  DeviceOpenOptions o;
  o.create = true;
  o.create_size = size;
  o.create_layout = layout;
  o.direct_io = false;
  return open_block_device(path, o, err);
}

// Bytes the filesystem holds for the file (st_blocks).
uint64_t allocated_bytes(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

}  // namespace

// What hybridstore_block_preallocate asks mkfs for: blocks the filesystem
// holds before the first write (st_blocks), and for `zero` written zeros.
TEST(BlockDevice, CreatedFileLayouts) {
  TempDir dir;
  const uint64_t size = 8 << 20;
  auto create = [&](FileLayout layout, const std::string& name, std::string* err) {
    return create_laid_out(dir.file(name), size, layout, err);
  };
  auto allocated = [&](const std::string& name) { return allocated_bytes(dir.file(name)); };
  for (auto [layout, name] : {std::pair{FileLayout::kSparse, "sparse"}, {FileLayout::kZeros, "zeros"}}) {
    std::string err;
    auto d = create(layout, name, &err);
    ASSERT_TRUE(d) << err;
    EXPECT_EQ(d->size(), size);
    std::string buf(size, 'x');
    EXPECT_EQ(d->read(0, buf.data(), size), 0);
    EXPECT_EQ(buf, std::string(size, '\0')) << name;
  }
  EXPECT_LT(allocated("sparse"), size / 2);
  EXPECT_GE(allocated("zeros"), size);
  // Filesystems without fallocate (tmpfs has it; some overlays do not)
  // make creation fail with a message naming the file, and leave no file.
  std::string err;
  if (create(FileLayout::kFallocate, "falloc", &err)) {
    EXPECT_GE(allocated("falloc"), size);
  } else {
    EXPECT_NE(err.find("falloc"), std::string::npos) << err;
    EXPECT_FALSE(std::filesystem::exists(dir.file("falloc")));
  }

  FileLayout l;
  EXPECT_TRUE(parse_file_layout("zero", &l));
  EXPECT_EQ(l, FileLayout::kZeros);
  EXPECT_TRUE(parse_file_layout("none", &l));
  EXPECT_EQ(l, FileLayout::kSparse);
  EXPECT_FALSE(parse_file_layout("zeros!", &l));
}

// Discard punches a hole in a sparse file (the space goes back to the
// filesystem) and leaves a written-out one as it is: a hole there would make
// the next write allocate, and every DSYNC write to the file wait for it.
TEST(BlockDevice, DiscardPunchesSparseFilesAndLeavesWrittenOutOnes) {
  TempDir dir;
  const uint64_t size = 8 << 20;
  auto allocated = [&](const std::string& name) { return allocated_bytes(dir.file(name)); };
  for (auto [layout, name] : {std::pair{FileLayout::kSparse, "sparse"}, {FileLayout::kZeros, "zeros"}}) {
    std::string err;
    auto d = create_laid_out(dir.file(name), size, layout, &err);
    ASSERT_TRUE(d) << err;
    std::string ones(size, '\1');
    ASSERT_EQ(d->write(0, ones.data(), size), 0);
    ASSERT_EQ(d->flush(), 0);
    const uint64_t before = allocated(name);
    EXPECT_EQ(d->discard(1 << 20, 4 << 20), 0);
    if (layout == FileLayout::kZeros) {
      EXPECT_EQ(allocated(name), before) << name;
    } else {
      EXPECT_LE(allocated(name) + (4 << 20), before) << name;
    }
  }
  // A sparse file filled by writes counts as written out when opened again.
  DeviceOpenOptions o;
  o.direct_io = false;
  std::string err;
  auto again = open_block_device(dir.file("sparse"), o, &err);
  ASSERT_TRUE(again) << err;
  std::string ones(4 << 20, '\1');
  ASSERT_EQ(again->write(1 << 20, ones.data(), ones.size()), 0);
  ASSERT_EQ(again->flush(), 0);
  again.reset();
  again = open_block_device(dir.file("sparse"), o, &err);
  ASSERT_TRUE(again) << err;
  const uint64_t full = allocated("sparse");
  EXPECT_EQ(again->discard(1 << 20, 4 << 20), 0);
  EXPECT_EQ(allocated("sparse"), full);
}

TEST(BlockDeviceLock, AnExclusiveOpenIsRefusedWhileAnotherHoldsTheDevice) {
  TempDir dir("lock");
  const std::string path = dir.file("dev");
  DeviceOpenOptions o;
  o.create = true;
  o.create_size = 1 << 20;
  o.exclusive = true;
  std::string err;
  auto first = open_block_device(path, o, &err);
  ASSERT_TRUE(first) << err;
  errno = 0;
  EXPECT_FALSE(open_block_device(path, o, &err)) << "the same process, a second open file description";
  EXPECT_EQ(errno, EBUSY);
  EXPECT_NE(err.find("in use"), std::string::npos) << err;
  EXPECT_NE(err.find(path), std::string::npos) << err;
  DeviceOpenOptions shared = o;
  shared.exclusive = false;
  EXPECT_TRUE(open_block_device(path, shared, &err)) << "readers that take no lock (show-label) still open it: " << err;
  first.reset();
  EXPECT_TRUE(open_block_device(path, o, &err)) << "closing the holder releases the lock: " << err;
}

