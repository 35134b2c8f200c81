#include "hybridstore/io/block_device.h"

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

INSTANTIATE_TEST_SUITE_P(Backends, BlockDeviceTest,
                         ::testing::Values(IoBackend::kUring, IoBackend::kPosix),
                         [](const auto& info) {
                           return std::string(info.param == IoBackend::kUring ? "uring" : "posix");
                         });

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

// What hybridstore_block_preallocate asks mkfs for: blocks the filesystem
// holds before the first write (st_blocks), and for `zero` written zeros.
TEST(BlockDevice, CreatedFileLayouts) {
  TempDir dir;
  const uint64_t size = 8 << 20;
  auto create = [&](FileLayout layout, const std::string& name, std::string* err) {
    DeviceOpenOptions o;
    o.create = true;
    o.create_size = size;
    o.create_layout = layout;
    o.direct_io = false;
    return open_block_device(dir.file(name), o, err);
  };
  auto allocated = [&](const std::string& name) {
    struct stat st;
    EXPECT_EQ(::stat(dir.file(name).c_str(), &st), 0);
    return static_cast<uint64_t>(st.st_blocks) * 512;
  };
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
