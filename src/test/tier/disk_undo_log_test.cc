// The power cuts of hybridstore-diskmodel without FUSE: the undo log over a
// plain image file, driven the way the FUSE handlers drive it.
#include "testing/disk_undo_log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <random>
#include <thread>

#include "common_helpers.h"

using namespace hybridstore;
using hybridstore::test::TempDir;

namespace {

constexpr uint64_t kImage = 8 << 20;
constexpr uint64_t kB = DiskUndoLog::kBlock;

std::string filled(uint64_t len, char c) { return std::string(len, c); }

// An image file and the undo log over it, written as DiskFs writes: log,
// write, land, acknowledge.
class Disk {
 public:
  explicit Disk(const TempDir& dir, uint64_t compact_at = 64ull << 20, bool sparse = false)
      : image_(dir.file("disk.img")), undo_(dir.file("disk.undo")) {
    fd_ = open(image_.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
    EXPECT_GE(fd_, 0);
    if (sparse) {
      EXPECT_EQ(0, ftruncate(fd_, kImage));
    } else {
      put(0, filled(kImage, 'o'));  // "old": everything before the test's writes
    }
    std::string err;
    EXPECT_TRUE(log_.open(undo_, image_, kImage, &err, compact_at)) << err;
  }
  ~Disk() { close(fd_); }

  // A write up to its reply; `ack` false leaves it in flight.
  bool write(uint64_t off, const std::string& data, bool ack = true) {
    uint64_t seq = 0;
    int e = 0;
    if (!log_.begin_write(off, data.size(), &seq, &e)) {
      EXPECT_EQ(EIO, e);
      return false;
    }
    put(off, data);
    log_.write_landed(seq);
    if (ack) log_.write_acknowledged(seq);
    return true;
  }
  bool flush() { return log_.flush_done(log_.flush_begin()); }
  std::string read(uint64_t off, uint64_t len) const {
    std::string s(len, '\0');
    EXPECT_EQ(static_cast<ssize_t>(len), pread(fd_, s.data(), len, static_cast<off_t>(off)));
    return s;
  }
  DiskUndoLog::CutReport cut(DiskUndoLog::Keep keep, bool tear, uint64_t seed) {
    DiskUndoLog::CutReport r;
    std::string err;
    EXPECT_TRUE(log_.cut({keep, tear, seed}, &r, &err)) << err;
    std::printf("  cut: %s\n", r.describe().c_str());
    return r;
  }
  uint64_t undo_size() const {
    struct stat st;
    EXPECT_EQ(0, stat(undo_.c_str(), &st));
    return static_cast<uint64_t>(st.st_size);
  }
  DiskUndoLog& log() { return log_; }
  const std::string& undo_path() const { return undo_; }

 private:
  void put(uint64_t off, const std::string& data) {
    ASSERT_EQ(static_cast<ssize_t>(data.size()), pwrite(fd_, data.data(), data.size(), static_cast<off_t>(off)));
  }

  std::string image_, undo_;
  int fd_ = -1;
  DiskUndoLog log_;
};

TEST(DiskUndoLog, KeepNoneLosesEverythingUnflushedAndNothingFlushed) {
  TempDir dir("undo");
  Disk d(dir);
  ASSERT_TRUE(d.write(0, filled(64 << 10, 'A')));
  ASSERT_TRUE(d.flush());
  ASSERT_TRUE(d.write(1 << 20, filled(64 << 10, 'B')));
  ASSERT_TRUE(d.write(2 << 20, filled(8 << 10, 'C'), /*ack=*/false));
  const auto r = d.cut(DiskUndoLog::Keep::kNone, false, 1);
  EXPECT_EQ(2u, r.writes);
  EXPECT_EQ(1u, r.in_flight);
  EXPECT_EQ(filled(64 << 10, 'A'), d.read(0, 64 << 10));
  EXPECT_EQ(filled(64 << 10, 'o'), d.read(1 << 20, 64 << 10));
  EXPECT_EQ(filled(8 << 10, 'o'), d.read(2 << 20, 8 << 10));
}

TEST(DiskUndoLog, AFlushCoversOnlyWritesAcknowledgedBeforeItArrived) {
  TempDir dir("undo");
  Disk d(dir);
  ASSERT_TRUE(d.write(0, filled(kB, 'A')));
  const uint64_t ticket = d.log().flush_begin();
  ASSERT_TRUE(d.write(kB, filled(kB, 'B')));  // acknowledged while the flush runs
  ASSERT_TRUE(d.log().flush_done(ticket));
  d.cut(DiskUndoLog::Keep::kNone, false, 1);
  EXPECT_EQ(filled(kB, 'A'), d.read(0, kB));
  EXPECT_EQ(filled(kB, 'o'), d.read(kB, kB));
}

TEST(DiskUndoLog, OverlappingWritesComeBackToTheOldestPreImage) {
  TempDir dir("undo");
  Disk d(dir);
  ASSERT_TRUE(d.write(0, filled(3 * kB, 'A')));
  ASSERT_TRUE(d.write(kB, filled(3 * kB, 'B')));
  ASSERT_TRUE(d.write(512, filled(1024, 'C')));
  d.cut(DiskUndoLog::Keep::kNone, false, 1);
  EXPECT_EQ(filled(4 * kB, 'o'), d.read(0, 4 * kB));
}

TEST(DiskUndoLog, AFlushWithNothingLeftEmptiesTheFile) {
  TempDir dir("undo");
  Disk d(dir);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(d.write(i * kB, filled(kB, 'A')));
  EXPECT_GT(d.undo_size(), 10 * kB);
  ASSERT_TRUE(d.flush());
  EXPECT_EQ(DiskUndoLog::kFileHeaderBytes, d.undo_size());
  EXPECT_EQ(0u, d.log().stats().live_writes);
  EXPECT_EQ(1u, d.log().stats().truncations);
}

TEST(DiskUndoLog, KeepRandomKeepsOrLosesWholeBlocks) {
  const uint64_t seed = test::test_seed(20261201);
  TempDir dir("undo");
  Disk d(dir);
  ASSERT_TRUE(d.write(0, filled(64 << 10, 'A')));
  ASSERT_TRUE(d.flush());
  // Two overlapping unflushed writes, the second not 4 KiB-aligned: every
  // block ends up old, or the data of one of them, never a mix within a
  // block of one write.
  ASSERT_TRUE(d.write(1 << 20, filled(64 << 10, 'B')));
  ASSERT_TRUE(d.write((1 << 20) + 32 * kB, filled(64 << 10, 'C')));
  const auto r = d.cut(DiskUndoLog::Keep::kRandom, false, seed);
  EXPECT_EQ(seed, r.seed);
  EXPECT_EQ(filled(64 << 10, 'A'), d.read(0, 64 << 10));
  int old_blocks = 0, new_blocks = 0;
  for (uint64_t b = 0; b < 24; ++b) {
    const std::string got = d.read((1 << 20) + b * kB, kB);
    const bool whole = got == filled(kB, 'o') || got == filled(kB, 'B') || got == filled(kB, 'C');
    EXPECT_TRUE(whole) << "block " << b << " is torn: " << got.substr(0, 8) << "..." << got.substr(kB - 8);
    (got == filled(kB, 'o') ? old_blocks : new_blocks)++;
  }
  std::printf("  %d blocks old, %d new\n", old_blocks, new_blocks);
  EXPECT_GT(old_blocks, 0);
  EXPECT_GT(new_blocks, 0);
  EXPECT_GT(r.blocks_kept, 0u);
  EXPECT_GT(r.blocks_restored, 0u);
}

TEST(DiskUndoLog, TheSameSeedGivesTheSameImage) {
  const uint64_t seed = test::test_seed(77);
  std::string images[2];
  for (auto& image : images) {
    TempDir dir("undo");
    Disk d(dir);
    for (int i = 0; i < 8; ++i) ASSERT_TRUE(d.write(i * 48 * kB, filled(40 * kB, static_cast<char>('a' + i))));
    ASSERT_TRUE(d.write(3 * kB, filled(20 * kB, 'z'), /*ack=*/false));
    d.cut(DiskUndoLog::Keep::kRandom, true, seed);
    image = d.read(0, 1 << 20);
  }
  EXPECT_TRUE(images[0] == images[1]);
}

TEST(DiskUndoLog, TearKeepsASectorPrefixOfAWriteInFlight) {
  const uint64_t seed = test::test_seed(4242);
  std::mt19937_64 rng(seed);
  int partial = 0;
  for (int round = 0; round < 20; ++round) {
    TempDir dir("undo");
    Disk d(dir);
    ASSERT_TRUE(d.write(0, filled(64 << 10, 'F'), /*ack=*/false));
    ASSERT_TRUE(d.write(1 << 20, filled(8 << 10, 'D')));  // acknowledged: not torn, lost whole
    const auto r = d.cut(DiskUndoLog::Keep::kNone, true, rng());
    EXPECT_EQ(1u, r.torn);
    const std::string got = d.read(0, 64 << 10);
    const size_t prefix = got.find_first_not_of('F');
    const size_t kept = prefix == std::string::npos ? got.size() : prefix;
    EXPECT_EQ(0u, kept % DiskUndoLog::kSector);
    EXPECT_EQ(got.substr(kept), std::string(got.size() - kept, 'o'));
    EXPECT_EQ(filled(8 << 10, 'o'), d.read(1 << 20, 8 << 10));
    partial += kept > 0 && kept < got.size();
  }
  EXPECT_GT(partial, 0);
}

TEST(DiskUndoLog, HolesOfTheSparseImageComeBackAsZeroesWithoutAPayload) {
  TempDir dir("undo");
  Disk d(dir, 64ull << 20, /*sparse=*/true);
  ASSERT_TRUE(d.write(1 << 20, filled(256 << 10, 'S')));
  const auto s = d.log().stats();
  EXPECT_GT(s.zero_pieces, 0u);
  EXPECT_EQ(0u, s.logged_payload_bytes);
  d.cut(DiskUndoLog::Keep::kNone, false, 1);
  EXPECT_EQ(std::string(256 << 10, '\0'), d.read(1 << 20, 256 << 10));
}

TEST(DiskUndoLog, AfterTheCutEveryRequestFails) {
  TempDir dir("undo");
  Disk d(dir);
  ASSERT_TRUE(d.write(0, filled(kB, 'A')));
  const uint64_t ticket = d.log().flush_begin();
  d.cut(DiskUndoLog::Keep::kNone, false, 1);
  EXPECT_TRUE(d.log().is_cut());
  EXPECT_FALSE(d.log().flush_done(ticket));  // in flight at the cut: it never completed
  EXPECT_FALSE(d.write(kB, filled(kB, 'B')));
  EXPECT_EQ(filled(2 * kB, 'o'), d.read(0, 2 * kB));
  DiskUndoLog::CutReport r;
  std::string err;
  EXPECT_FALSE(d.log().cut({}, &r, &err));
  EXPECT_NE(std::string::npos, err.find("already cut")) << err;
}

TEST(DiskUndoLog, CompactionKeepsTheLiveEntriesOnly) {
  TempDir dir("undo");
  Disk d(dir, /*compact_at=*/256 << 10);
  // One write stays unacknowledged the whole time: the file never empties.
  ASSERT_TRUE(d.write(4 << 20, filled(8 << 10, 'L'), /*ack=*/false));
  for (int i = 0; i < 64; ++i) {
    ASSERT_TRUE(d.write((i % 16) * 16 * kB, filled(16 * kB, static_cast<char>('a' + i % 26))));
    ASSERT_TRUE(d.flush());
  }
  const auto s = d.log().stats();
  EXPECT_GT(s.compactions, 0u);
  EXPECT_LT(d.undo_size(), 256u << 10);
  ASSERT_TRUE(d.write(0, filled(kB, 'N')));
  const std::string flushed = d.read(kB, 255 * kB);
  d.cut(DiskUndoLog::Keep::kNone, false, 1);
  EXPECT_EQ(filled(8 << 10, 'o'), d.read(4 << 20, 8 << 10));
  EXPECT_EQ(std::string(kB, static_cast<char>('a' + 48 % 26)), d.read(0, kB));
  EXPECT_TRUE(flushed == d.read(kB, 255 * kB));
}

TEST(DiskUndoLog, ConcurrentWritersFlushersAndACut) {
  const uint64_t seed = test::test_seed(99);
  TempDir dir("undo");
  Disk d(dir, /*compact_at=*/1 << 20);
  constexpr int kThreads = 4;
  // Each thread owns a region and writes versions 1, 2, ... of it, flushing
  // after some of them.
  std::atomic<int> flushed_version[kThreads], acked_version[kThreads];
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    flushed_version[t] = 0;
    acked_version[t] = 0;
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(seed + t);
      for (int v = 1;; ++v) {
        if (!d.write(t * 64 * kB, filled(16 * kB, static_cast<char>('A' + v % 50)))) return;
        acked_version[t] = v;
        if (rng() % 3 == 0) {
          if (!d.flush()) return;
          flushed_version[t] = v;
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  d.cut(DiskUndoLog::Keep::kNone, false, seed);
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    const std::string got = d.read(t * 64 * kB, 16 * kB);
    // At least the thread's own last flushed version; a later one only when
    // another thread's flush covered it.
    bool ok = false;
    for (int v = flushed_version[t]; v <= acked_version[t] && !ok; ++v)
      ok = got == (v == 0 ? filled(16 * kB, 'o') : filled(16 * kB, static_cast<char>('A' + v % 50)));
    EXPECT_TRUE(ok) << "thread " << t << ": flushed " << flushed_version[t] << ", acked " << acked_version[t];
  }
  std::printf("  compactions %llu\n", static_cast<unsigned long long>(d.log().stats().compactions));
}

TEST(DiskUndoLog, ScanReadsEntriesAndTellsATornTailFromDamage) {
  TempDir dir("undo");
  Disk d(dir);
  ASSERT_TRUE(d.write(0, filled(kB, 'A')));
  ASSERT_TRUE(d.write(3 * kB, filled(2 * kB, 'B')));
  std::vector<DiskUndoLog::Entry> entries;
  bool torn = true;
  std::string err;
  ASSERT_TRUE(DiskUndoLog::scan(d.undo_path(), &entries, &torn, &err)) << err;
  ASSERT_EQ(2u, entries.size());
  EXPECT_FALSE(torn);
  EXPECT_EQ(3 * kB, entries[1].offset);
  EXPECT_EQ(filled(2 * kB, 'o'), entries[1].payload);
  EXPECT_LT(entries[0].seq, entries[1].seq);

  const std::string whole = d.undo_path() + ".copy";
  auto copy_with = [&](uint64_t size, int64_t flip_at) {
    std::string bytes(d.undo_size(), '\0');
    int fd = open(d.undo_path().c_str(), O_RDONLY);
    EXPECT_EQ(static_cast<ssize_t>(bytes.size()), pread(fd, bytes.data(), bytes.size(), 0));
    close(fd);
    bytes.resize(size);
    if (flip_at >= 0) bytes[flip_at] ^= 0x20;
    fd = open(whole.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    EXPECT_EQ(static_cast<ssize_t>(bytes.size()), write(fd, bytes.data(), bytes.size()));
    close(fd);
  };
  const uint64_t second = entries[1].file_offset;
  // Cut short in the last entry's payload, and in its header: torn.
  for (uint64_t size : {d.undo_size() - 100, second + 20}) {
    copy_with(size, -1);
    ASSERT_TRUE(DiskUndoLog::scan(whole, &entries, &torn, &err)) << err;
    EXPECT_TRUE(torn);
    EXPECT_EQ(1u, entries.size());
  }
  // A flipped bit in the last entry: torn too (it is where an append stops).
  copy_with(d.undo_size(), static_cast<int64_t>(second + 100));
  ASSERT_TRUE(DiskUndoLog::scan(whole, &entries, &torn, &err)) << err;
  EXPECT_TRUE(torn);
  // In the first entry, followed by another: damage.
  copy_with(d.undo_size(), DiskUndoLog::kFileHeaderBytes + 100);
  EXPECT_FALSE(DiskUndoLog::scan(whole, &entries, &torn, &err));
  EXPECT_NE(std::string::npos, err.find("checksum")) << err;
  // In the file header: not an undo file.
  copy_with(d.undo_size(), 9);
  EXPECT_FALSE(DiskUndoLog::scan(whole, &entries, &torn, &err));
  EXPECT_NE(std::string::npos, err.find("header")) << err;
  copy_with(d.undo_size(), 0);
  EXPECT_FALSE(DiskUndoLog::scan(whole, &entries, &torn, &err));
  EXPECT_NE(std::string::npos, err.find("not an undo file")) << err;
  // Garbage after the header.
  copy_with(d.undo_size(), static_cast<int64_t>(DiskUndoLog::kFileHeaderBytes));
  EXPECT_FALSE(DiskUndoLog::scan(whole, &entries, &torn, &err));
}

TEST(DiskUndoLog, TheCutRejectsADamagedUndoFile) {
  TempDir dir("undo");
  Disk d(dir);
  ASSERT_TRUE(d.write(0, filled(kB, 'A')));
  int fd = open(d.undo_path().c_str(), O_WRONLY);
  ASSERT_EQ(1, pwrite(fd, "x", 1, DiskUndoLog::kFileHeaderBytes + DiskUndoLog::kEntryHeaderBytes + 10));
  close(fd);
  DiskUndoLog::CutReport r;
  std::string err;
  EXPECT_FALSE(d.log().cut({}, &r, &err));
  EXPECT_NE(std::string::npos, err.find("checksum")) << err;
}

}  // namespace
