// The kvfs's own check (kvfs_check.h; the kvfs rows of docs/kvfs.md
// section 6): a kvfs after a RocksDB-like load checks clean mounted and
// unmounted, and reads nothing but writes nothing; damage made on the
// device image is reported with the words fsck shows (a bad slot that is
// not current is a warning only; a damaged log, a forged extent or chunk
// an error); the mounted check finds an allocator that disagrees with the
// metadata; and no bytes on the device crash it (seeded, printed).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "common_helpers.h"
#include "hybridstore/kvfs/kvfs_check.h"
#include "kvfs/kvfs_fs_util.h"

using namespace hybridstore;
using namespace hybridstore::test;

namespace {

std::string pattern(size_t len, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(len, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

void write_file(KvFs* fs, const std::string& name, const std::string& data) {
  std::unique_ptr<KvFsWritableFile> f;
  std::string why;
  ASSERT_EQ(fs->open_writable("db", name, &f, &why), 0) << why;
  ASSERT_EQ(f->append(data, &why), 0) << why;
  ASSERT_EQ(f->sync(&why), 0) << why;
  ASSERT_EQ(f->close(&why), 0) << why;
}

std::string problems_of(const KvFsCheckReport& r) {
  std::string out = fmt::format("{} errors, {} warnings:", r.errors, r.warnings);
  for (const std::string& p : r.problems) out += "\n  " + p;
  return out;
}

bool has_problem(const KvFsCheckReport& r, const std::string& words) {
  for (const std::string& p : r.problems)
    if (p.find(words) != std::string::npos) return true;
  return false;
}

// What RocksDB does to its directory, in small: an IDENTITY, a MANIFEST
// appended and synced as versions change, CURRENT replaced by a rename, WALs
// appended with a sync every few writes then deleted, SSTs written whole
// and deleted by compactions, OPTIONS files.
void rocksdb_like_load(KvFs* fs, uint64_t seed, int rounds) {
  std::mt19937_64 rng(seed);
  std::string why;
  write_file(fs, "IDENTITY", pattern(36, seed));
  std::unique_ptr<KvFsWritableFile> manifest;
  ASSERT_EQ(fs->open_writable("db", "MANIFEST-000001", &manifest, &why), 0) << why;
  std::vector<std::string> ssts;
  uint64_t number = 2;
  std::string previous_wal;
  for (int round = 0; round < rounds; ++round) {
    const std::string wal = fmt::format("{:06}.log", number++);
    std::unique_ptr<KvFsWritableFile> w;
    ASSERT_EQ(fs->open_writable("db", wal, &w, &why), 0) << why;
    for (int k = 0; k < 20; ++k) {
      ASSERT_EQ(w->append(pattern(1 + rng() % 3000, rng()), &why), 0) << why;
      if (k % 3 == 0) {
        ASSERT_EQ(w->sync(&why), 0) << why;
      }
    }
    ASSERT_EQ(w->close(&why), 0) << why;
    const std::string sst = fmt::format("{:06}.sst", number++);
    write_file(fs, sst, pattern(4096 + rng() % (200 << 10), rng()));
    ssts.push_back(sst);
    if (round % 3 == 2 && ssts.size() >= 3) {
      // A compaction: two tables in, one out.
      const std::string out = fmt::format("{:06}.sst", number++);
      write_file(fs, out, pattern(64 << 10, rng()));
      for (int i = 0; i < 2; ++i) {
        ASSERT_EQ(fs->unlink("db", ssts.front(), &why), 0) << why;
        ssts.erase(ssts.begin());
      }
      ssts.push_back(out);
    }
    ASSERT_EQ(manifest->append(pattern(100 + rng() % 400, rng()), &why), 0) << why;
    ASSERT_EQ(manifest->sync(&why), 0) << why;
    if (!previous_wal.empty()) {
      ASSERT_EQ(fs->unlink("db", previous_wal, &why), 0) << why;
    }
    previous_wal = wal;
    write_file(fs, "CURRENT.dbtmp", "MANIFEST-000001\n");
    ASSERT_EQ(fs->rename("db", "CURRENT.dbtmp", "db", "CURRENT", &why), 0) << why;
    if (round % 4 == 0) write_file(fs, fmt::format("OPTIONS-{:06}", number++), pattern(5000, rng()));
  }
  ASSERT_EQ(manifest->close(&why), 0) << why;
}

struct Kvfs {
  Kvfs() : dir("kvfsck"), params(test_params()), lender(48 * kG) {
    params.initial_size = 2 * kG;  // small, so a load grows it
    dev = open_kvfs_media(dir.file("dev"));
    fs = format_and_mount(dev.get(), &lender, params);
  }
  void unmount() {
    std::string why;
    ASSERT_EQ(fs->unmount(&why), 0) << why;
    fs.reset();
  }
  void remount() { fs = mount_kvfs(dev.get(), &lender, params); }
  KvFsCheckReport check(const KvFsCheckOptions& opts = KvFsCheckOptions()) {
    KvFsCheckReport r;
    EXPECT_EQ(check_kvfs(dev.get(), params, fs_uuid(), fs_fsid(), opts, &r), 0);
    EXPECT_EQ(r.problems.size(), std::min<uint64_t>(r.errors + r.warnings, KvFsCheckReport::kMaxProblems));
    return r;
  }
  KvFsCheckReport check_mounted(const KvFsCheckOptions& opts = KvFsCheckOptions()) {
    KvFsCheckReport r;
    EXPECT_EQ(check_mounted_kvfs(fs.get(), opts, &r), 0);
    return r;
  }
  KvFsSuper super() {
    KvFsSuper s;
    std::string why;
    EXPECT_EQ(read_kvfs_super(dev.get(), params.slots, fs_uuid(), fs_fsid(), &s, &why), 0) << why;
    return s;
  }
  // Any bytes anywhere: the device reads whole blocks only.
  std::string read(uint64_t off, uint64_t len) {
    const uint64_t start = off / kB * kB;
    const uint64_t end = (off + len + kB - 1) / kB * kB;
    AlignedBuffer buf(end - start);
    EXPECT_EQ(dev->read(start, buf.data(), end - start), 0);
    return std::string(buf.data() + (off - start), len);
  }
  // Any bytes anywhere: whole blocks are read, changed and written back.
  void write(uint64_t off, const std::string& bytes) {
    const uint64_t start = off / kB * kB;
    const uint64_t end = (off + bytes.size() + kB - 1) / kB * kB;
    AlignedBuffer buf(end - start);
    ASSERT_EQ(dev->read(start, buf.data(), end - start), 0);
    std::memcpy(buf.data() + (off - start), bytes.data(), bytes.size());
    ASSERT_EQ(dev->write(start, buf.data(), end - start), 0);
    ASSERT_EQ(dev->flush(), 0);
  }
  uint64_t slot_offset(uint32_t slot) const { return params.slots.first_offset + slot * params.slots.slot_size; }
  // The state a replay builds, and where the log ends.
  std::unique_ptr<KvFsState> replay(KvFsLogEnd* end) {
    const KvFsSuper s = super();
    auto st = std::make_unique<KvFsState>(fs_uuid(),
                                          KvFsGeometry{s.block, s.alloc_unit, s.lend_unit, params.head, dev->size()});
    std::string why;
    EXPECT_EQ(replay_kvfs_log(dev.get(), s, st.get(), end, &why), 0) << why;
    return st;
  }
  // Appends `records` as the log's next group, as the kvfs would have.
  void append_to_log(const std::vector<KvRecord>& records) {
    KvFsLogEnd end;
    replay(&end);
    const KvFsSuper s = super();
    KvFsLogWriter w(dev.get(), s.block, s.log_id, end.segment, end.position, end.next_seq,
                    [](KvFsExtent*, std::string* why) {
                      *why = "no more segments in this test";
                      return -ENOSPC;
                    });
    std::string why;
    ASSERT_EQ(w.append_group(records, nullptr, &why), 0) << why;
  }

  TempDir dir;
  KvFsParams params;
  FakeLender lender;
  std::unique_ptr<BlockDevice> dev;
  std::unique_ptr<KvFs> fs;
};

size_t device_hash(Kvfs& k) { return std::hash<std::string>()(k.read(0, k.dev->size())); }

constexpr uint64_t kRing = 256 << 10;

}  // namespace

TEST(KvFsCheck, ARocksDbLikeLoadChecksCleanMountedAndUnmounted) {
  Kvfs k;
  std::string why;
  std::vector<KvFsExtent> ring;
  ASSERT_EQ(k.fs->make_journal(kRing, &ring, &why), 0) << why;
  rocksdb_like_load(k.fs.get(), test_seed(31), 12);
  KvFsCheckOptions opts;
  opts.lend_unit = kG;
  opts.journal_size = kRing;

  // Blocks held outside the records: a WAL written past its last sync, and
  // a table unlinked while a reader has it open.
  std::unique_ptr<KvFsWritableFile> wal;
  ASSERT_EQ(k.fs->open_writable("db", "000999.log", &wal, &why), 0) << why;
  ASSERT_EQ(wal->append(pattern(200 << 10, 5), &why), 0) << why;
  std::vector<std::string> names;
  ASSERT_EQ(k.fs->list("db", &names, &why), 0) << why;
  std::string table;
  for (const std::string& n : names)
    if (n.size() > 4 && n.substr(n.size() - 4) == ".sst") table = n;
  ASSERT_FALSE(table.empty());
  std::unique_ptr<KvFsReadableFile> reader;
  ASSERT_EQ(k.fs->open_readable("db", table, &reader, &why), 0) << why;
  ASSERT_EQ(k.fs->unlink("db", table, &why), 0) << why;

  KvFsCheckReport r = k.check_mounted(opts);
  EXPECT_TRUE(r.clean()) << problems_of(r);
  EXPECT_GT(r.held_bytes, 0u);
  const KvFsStats st = k.fs->stats();
  EXPECT_EQ(r.owned_bytes, st.owned);
  EXPECT_EQ(r.used_bytes, st.used);
  EXPECT_EQ(r.log_bytes, st.log);
  EXPECT_EQ(r.journal_bytes, kRing);
  EXPECT_EQ(st.journal, kRing);
  EXPECT_EQ(r.files, st.files);
  EXPECT_EQ(r.free_bytes, st.free);
  EXPECT_EQ(r.used_bytes + r.held_bytes + r.free_bytes, r.owned_bytes);
  EXPECT_GT(st.owned, 2 * kG) << "the load should have grown the kvfs";

  // A kvfs this small compacts by itself whenever its log runs short.
  const uint64_t generation = k.fs->generation();
  ASSERT_EQ(k.fs->compact(&why), 0) << why;
  r = k.check_mounted(opts);
  EXPECT_TRUE(r.clean()) << problems_of(r);
  EXPECT_EQ(r.generation, generation + 1);
  EXPECT_EQ(r.current_slot, static_cast<int>((generation + 1) % 2));

  ASSERT_EQ(wal->close(&why), 0) << why;
  wal.reset();
  reader.reset();
  const KvFsStats before = k.fs->stats();
  k.unmount();
  const size_t hash = device_hash(k);
  r = k.check(opts);
  EXPECT_TRUE(r.clean()) << problems_of(r);
  EXPECT_EQ(device_hash(k), hash) << "the check wrote to the device";
  EXPECT_EQ(r.generation, generation + 1);
  EXPECT_TRUE(r.other_slot_valid);
  EXPECT_EQ(r.owned_bytes, before.owned);
  EXPECT_EQ(r.used_bytes, before.used);
  EXPECT_EQ(r.log_bytes, before.log);
  EXPECT_EQ(r.files, before.files);
  EXPECT_EQ(r.free_bytes, before.owned - before.used);

  // A ring of another size than the option's (a mount that had no room to
  // make it again) is a warning.
  opts.journal_size = 2 * kRing;
  r = k.check(opts);
  EXPECT_EQ(r.errors, 0u) << problems_of(r);
  EXPECT_EQ(r.warnings, 1u) << problems_of(r);
  EXPECT_TRUE(has_problem(r, "journal ring is 262144 bytes, the option says 524288")) << problems_of(r);
  // The tier lending in another unit is an error.
  opts = KvFsCheckOptions();
  opts.lend_unit = 2 * kG;
  r = k.check(opts);
  EXPECT_TRUE(has_problem(r, "lend unit G 1048576 is not the tier's 2097152")) << problems_of(r);

  // The mounted figures after a remount are the same.
  k.remount();
  ASSERT_TRUE(k.fs);
  r = k.check_mounted();
  EXPECT_TRUE(r.clean()) << problems_of(r);
  EXPECT_EQ(r.used_bytes, before.used);
}

TEST(KvFsCheck, ABadSlotThatIsNotCurrentIsAWarningOnly) {
  Kvfs k;
  rocksdb_like_load(k.fs.get(), test_seed(32), 3);
  k.unmount();
  // Generation 0: slot 1 was never written, and says so by its zeros.
  KvFsCheckReport r = k.check();
  EXPECT_TRUE(r.clean()) << problems_of(r);
  EXPECT_EQ(r.current_slot, 0);
  k.write(k.slot_offset(1) + 100, "garbage");
  r = k.check();
  EXPECT_EQ(r.errors, 0u) << problems_of(r);
  EXPECT_EQ(r.warnings, 1u) << problems_of(r);
  EXPECT_TRUE(has_problem(r, "warning: kvfs superblock slot 1 (not current) is bad")) << problems_of(r);

  // After a compaction slot 1 is current and slot 0 the previous
  // generation; a byte of slot 0 flipped is a warning, both slots an error.
  k.remount();
  ASSERT_TRUE(k.fs);
  std::string why;
  ASSERT_EQ(k.fs->compact(&why), 0) << why;
  k.unmount();
  r = k.check();
  EXPECT_TRUE(r.clean()) << problems_of(r);
  EXPECT_EQ(r.current_slot, 1);
  EXPECT_TRUE(r.other_slot_valid);
  std::string byte = k.read(k.slot_offset(0), kB).substr(40, 1);
  byte[0] ^= 0x10;
  k.write(k.slot_offset(0) + 40, byte);
  r = k.check();
  EXPECT_EQ(r.errors, 0u) << problems_of(r);
  EXPECT_EQ(r.warnings, 1u) << problems_of(r);
  EXPECT_TRUE(has_problem(r, "slot 0 (not current) is bad")) << problems_of(r);
  EXPECT_FALSE(r.other_slot_valid);
  k.write(k.slot_offset(1) + 40, "x");
  r = k.check();
  EXPECT_EQ(r.errors, 1u) << problems_of(r);
  EXPECT_TRUE(has_problem(r, "kvfs superblock unreadable")) << problems_of(r);
  EXPECT_EQ(r.current_slot, -1);
}

// Groups at the start of the first segment: where each begins.
std::vector<uint64_t> group_offsets(Kvfs& k) {
  const KvFsSuper s = k.super();
  const std::string seg = k.read(s.log_segment.offset, s.log_segment.length);
  std::vector<uint64_t> out;
  uint64_t pos = 0;
  for (;;) {
    KvGroup g;
    uint64_t len;
    std::string why;
    if (decode_kvfs_group(std::string_view(seg).substr(pos), s.block, &g, &len, &why) < 0) break;
    out.push_back(s.log_segment.offset + pos);
    pos += len;
  }
  return out;
}

TEST(KvFsCheck, ADamagedLogIsAnErrorATornLastGroupIsNot) {
  Kvfs k;
  for (int i = 0; i < 10; ++i) write_file(k.fs.get(), fmt::format("f{}", i), pattern(5000 + i * 100, i));
  k.unmount();
  std::vector<uint64_t> groups = group_offsets(k);
  ASSERT_GE(groups.size(), 5u);
  ASSERT_TRUE(k.check().clean());

  // The last group torn: the log ends before it, as after a power cut.
  {
    std::string b = k.read(groups.back() + 16, 1);
    b[0] ^= 0xff;
    k.write(groups.back() + 16, b);
    const KvFsCheckReport r = k.check();
    EXPECT_TRUE(r.clean()) << problems_of(r);
  }
  // One of the middle: later records exist.
  std::string b = k.read(groups[2] + 16, 1);
  b[0] ^= 0xff;
  k.write(groups[2] + 16, b);
  const KvFsCheckReport r = k.check();
  EXPECT_EQ(r.errors, 1u) << problems_of(r);
  EXPECT_TRUE(has_problem(r, "kvfs log does not replay to its end")) << problems_of(r);
  EXPECT_TRUE(has_problem(r, "later records exist")) << problems_of(r);
  EXPECT_EQ(r.owned_bytes, 0u) << "no figures from a log cut short";
}

// Records a kvfs never writes, appended as valid groups of its log.
TEST(KvFsCheck, ForgedRecordsAreErrorsNamingWhatIsWrong) {
  struct Case {
    const char* words;
    std::function<std::vector<KvRecord>(const KvFsState&)> records;
  };
  const std::vector<Case> cases = {
      {"is outside the kvfs's chunks",
       [](const KvFsState&) {
         return std::vector<KvRecord>{KvCreate{"db", "forged", 1000},
                                      KvUpdate{1000, kA, 0, 0, {{kDevSize - 2 * kA, kA}}, KvTailKind::kNone, ""}};
       }},
      {"has two owners: it is in use by inode",
       [](const KvFsState& st) {
         const KvFsExtent taken = st.inodes().begin()->second.extents.front();
         return std::vector<KvRecord>{KvCreate{"db", "forged", 1000},
                                      KvUpdate{1000, kA, 0, 0, {taken}, KvTailKind::kNone, ""}};
       }},
      {"has two owners: it is in use by the log",
       [](const KvFsState& st) {
         return std::vector<KvRecord>{KvJournal{{st.log_segments().front()}}};
       }},
      {"is not a 1048576-aligned range inside", [](const KvFsState&) { return std::vector<KvRecord>{KvGrant{{0, kG}}}; }},
      {"overlaps a chunk the kvfs owns already",
       [](const KvFsState&) { return std::vector<KvRecord>{KvGrant{{kHead, kG}}}; }},
      {"has extents covering only",
       [](const KvFsState&) {
         return std::vector<KvRecord>{KvCreate{"db", "forged", 1000},
                                      KvUpdate{1000, 3 * kA, 0, 0, {}, KvTailKind::kNone, ""}};
       }},
      // A size whose round-up to b wraps to 0 once let a file of no extents
      // through.
      {"of size 18446744073709551610 has extents covering only 0 bytes",
       [](const KvFsState&) {
         return std::vector<KvRecord>{KvCreate{"db", "forged", 1000},
                                      KvUpdate{1000, UINT64_MAX - 5, 0, 0, {}, KvTailKind::kNone, ""}};
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.words);
    Kvfs k;
    write_file(k.fs.get(), "000001.sst", pattern(100 << 10, 1));
    k.unmount();
    KvFsLogEnd end;
    const auto state = k.replay(&end);
    k.append_to_log(c.records(*state));
    const KvFsCheckReport r = k.check();
    EXPECT_EQ(r.errors, 1u) << problems_of(r);
    EXPECT_TRUE(has_problem(r, "kvfs log does not replay to its end")) << problems_of(r);
    EXPECT_TRUE(has_problem(r, c.words)) << problems_of(r);
  }
}

// What a replay refuses never reaches the state, so the state's own checks
// are reached by checking a good state against a geometry it was not built
// for.
TEST(KvFsCheck, StateChecksAgainstAnotherGeometry) {
  Kvfs k;
  std::string why;
  std::vector<KvFsExtent> ring;
  ASSERT_EQ(k.fs->make_journal(kRing, &ring, &why), 0) << why;
  rocksdb_like_load(k.fs.get(), test_seed(33), 3);
  k.unmount();
  KvFsLogEnd end;
  const auto state = k.replay(&end);
  const KvFsGeometry geo{kB, kA, kG, kHead, kDevSize};
  {
    KvFsCheckReport r;
    check_kvfs_state(*state, geo, KvFsCheckOptions(), &r);
    EXPECT_TRUE(r.clean()) << problems_of(r);
  }
  {
    KvFsCheckReport r;
    KvFsGeometry moved = geo;
    moved.head = kHead + kG;
    check_kvfs_state(*state, moved, KvFsCheckOptions(), &r);
    EXPECT_TRUE(has_problem(r, "is not inside [H 0x200000")) << problems_of(r);
  }
  {
    KvFsCheckReport r;
    KvFsGeometry small = geo;
    small.device_size = kHead + kG;
    check_kvfs_state(*state, small, KvFsCheckOptions(), &r);
    EXPECT_TRUE(has_problem(r, "device size 0x200000")) << problems_of(r);
  }
  {
    KvFsCheckReport r;
    KvFsCheckOptions three_g;
    three_g.lend_unit = 3 * kG;
    check_kvfs_state(*state, geo, three_g, &r);
    EXPECT_TRUE(has_problem(r, "is not aligned to G (3145728)")) << problems_of(r);
  }
  {
    KvFsCheckReport r;
    KvFsGeometry wide = geo;
    wide.alloc_unit = 3 * kA;
    check_kvfs_state(*state, wide, KvFsCheckOptions(), &r);
    EXPECT_TRUE(has_problem(r, "is not a non-empty range aligned to A (196608)")) << problems_of(r);
  }
  {
    KvFsCheckReport r;
    KvFsGeometry zero = geo;
    zero.alloc_unit = 0;
    check_kvfs_state(*state, zero, KvFsCheckOptions(), &r);
    EXPECT_TRUE(has_problem(r, "has a zero unit")) << problems_of(r);
  }
}

// The allocator is private; a snapshot of it is not, so the comparison is
// fed one changed the way a bug in the kvfs would.
TEST(KvFsCheck, AnAllocatorThatDisagreesIsAnError) {
  Kvfs k;
  rocksdb_like_load(k.fs.get(), test_seed(34), 4);
  KvFsSnapshot snap;
  ASSERT_EQ(k.fs->check_snapshot(&snap), 0);
  KvFsCheckReport r;
  check_kvfs_snapshot(snap, KvFsCheckOptions(), &r);
  ASSERT_TRUE(r.clean()) << problems_of(r);
  ASSERT_FALSE(snap.free.empty());
  const KvFsExtent file_extent = snap.state->inodes().begin()->second.extents.front();

  {
    KvFsSnapshot s;
    ASSERT_EQ(k.fs->check_snapshot(&s), 0);
    s.free.emplace_back(file_extent.offset, file_extent.length);  // a file's blocks free
    check_kvfs_snapshot(s, KvFsCheckOptions(), &r);
    EXPECT_EQ(r.errors, 1u) << problems_of(r);
    EXPECT_TRUE(has_problem(r, "in-memory kvfs allocator disagrees")) << problems_of(r);
    EXPECT_TRUE(has_problem(r, fmt::format("{} bytes free that are in use", file_extent.length))) << problems_of(r);
  }
  {
    KvFsSnapshot s;
    ASSERT_EQ(k.fs->check_snapshot(&s), 0);
    const uint64_t lost = s.free.front().second;
    s.free.erase(s.free.begin());  // free blocks nobody has
    check_kvfs_snapshot(s, KvFsCheckOptions(), &r);
    EXPECT_TRUE(has_problem(r, fmt::format("in-memory kvfs allocator disagrees with the metadata: {} bytes neither "
                                           "in use nor free",
                                           lost)))
        << problems_of(r);
  }
  {
    KvFsSnapshot s;
    ASSERT_EQ(k.fs->check_snapshot(&s), 0);
    s.held.push_back({file_extent, "a forged hold"});
    check_kvfs_snapshot(s, KvFsCheckOptions(), &r);
    EXPECT_TRUE(has_problem(r, "of a forged hold is in use by a file, the ring or the log too")) << problems_of(r);
  }
}

// The mounted check takes its snapshot while files are written, synced,
// closed, renamed over, unlinked and read: a block half allocated would be
// a disagreement, and a lock taken the wrong way round a hang.
TEST(KvFsCheck, TheMountedCheckIsCleanWhileFilesChange) {
  Kvfs k;
  const uint64_t seed = test_seed(36);
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(seed + t);
      std::string why;
      for (int i = 0; !stop; ++i) {
        const std::string name = fmt::format("t{}-{}", t, i % 5);
        std::unique_ptr<KvFsWritableFile> f;
        if (k.fs->open_writable("db", name, &f, &why) < 0) {
          ++failures;
          return;
        }
        for (int j = 0; j < 6; ++j) {
          if (f->append(pattern(1 + rng() % 40000, rng()), &why) < 0 || (j % 2 == 0 && f->sync(&why) < 0)) {
            ++failures;
            return;
          }
        }
        std::unique_ptr<KvFsReadableFile> reader;
        if (i % 3 == 0 && k.fs->open_readable("db", name, &reader, &why) < 0) ++failures;
        if (i % 4 == 0 && k.fs->unlink("db", name, &why) < 0) ++failures;
        if (f->close(&why) < 0) ++failures;
        if (i % 4 == 1 && k.fs->rename("db", name, "db", fmt::format("t{}-0", t), &why) < 0) ++failures;
      }
    });
  }
  int checks = 0;
  for (; checks < 40 && failures == 0; ++checks) {
    const KvFsCheckReport r = k.check_mounted();
    EXPECT_TRUE(r.clean()) << "check " << checks << ": " << problems_of(r);
    if (!r.clean()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, 0);
  const KvFsCheckReport r = k.check_mounted();
  EXPECT_TRUE(r.clean()) << problems_of(r);
  k.unmount();
  const KvFsCheckReport u = k.check();
  EXPECT_TRUE(u.clean()) << problems_of(u);
}

// Garbage of four kinds: random bytes where the kvfs would be; random spans
// over a valid kvfs's slots and log; superblocks that decode but say
// anything; valid groups of random records. The check returns, and its
// counts and figures make sense.
TEST(KvFsCheck, NoBytesOnTheDeviceCrashTheCheck) {
  const uint64_t seed = test_seed(35);
  std::mt19937_64 rng(seed);
  Kvfs k;
  rocksdb_like_load(k.fs.get(), seed, 3);
  k.unmount();
  ASSERT_TRUE(k.check().clean());
  const KvFsSuper good = k.super();
  const uint64_t image_len = 8 << 20;  // the slots and everything lent so far
  ASSERT_LE(k.lender.lent() + kHead, image_len);
  const std::string image = k.read(0, image_len);
  auto random_u64 = [&](uint64_t below) { return below == 0 ? 0 : rng() % below; };
  auto any_u64 = [&]() {
    switch (rng() % 4) {
      case 0: return rng();
      case 1: return UINT64_MAX - rng() % 4096;
      case 2: return rng() % (2 * kDevSize);
      default: return rng() % 16 * kA;
    }
  };
  auto any_extent = [&]() { return KvFsExtent{any_u64(), any_u64()}; };
  auto any_name = [&]() { return std::string(1 + rng() % 3, static_cast<char>('a' + rng() % 3)); };
  auto any_record = [&]() -> KvRecord {
    switch (rng() % 12) {
      case 0: return KvInit{test_uuid(0x11), kB, kA, kG};
      case 1: return KvGrant{any_extent()};
      case 2: return KvReturn{any_extent()};
      case 3: return KvNext{any_extent()};
      case 4: return KvMkdir{any_name()};
      case 5: return KvRmdir{any_name()};
      case 6: return KvCreate{"db", any_name(), 16 + rng() % 8};
      case 7: {
        KvUpdate u{16 + rng() % 8, any_u64(), 0, rng() % 3, {}, KvTailKind::kNone, ""};
        for (uint64_t i = rng() % 3; i > 0; --i) u.extents.push_back(any_extent());
        return u;
      }
      case 8: return KvRename{"db", any_name(), "db", any_name()};
      case 9: return KvUnlink{"db", any_name()};
      case 10: return KvJournal{{any_extent()}};
      default: return KvSnapshotDone{};
    }
  };

  for (int round = 0; round < 48; ++round) {
    SCOPED_TRACE(fmt::format("seed {} round {}", seed, round));
    k.write(0, image);
    switch (round % 4) {
      case 0:
        k.write(0, random_bytes(rng, image_len));
        break;
      case 1:
        for (int i = 0; i < 8; ++i) {
          const bool slots = rng() % 3 == 0;
          const uint64_t at = slots ? k.slot_offset(0) + random_u64(2 * kB)
                                    : good.log_segment.offset + random_u64(good.log_segment.length);
          k.write(at, random_bytes(rng, 1 + rng() % 512));
        }
        break;
      case 2: {
        KvFsSuper s = good;
        s.generation = rng() % 4;
        s.block = kB << (rng() % 2);
        s.alloc_unit = s.block << (rng() % 5);
        s.lend_unit = s.alloc_unit << (rng() % 4);
        s.log_first_seq = rng() % 3;
        s.log_segment = KvFsExtent{random_u64(kDevSize / s.alloc_unit + 2) * s.alloc_unit,
                                   (1 + random_u64(64)) * s.alloc_unit};
        if (rng() % 4 == 0) s.log_segment.length = UINT64_MAX / s.alloc_unit * s.alloc_unit;
        std::string enc, why;
        ASSERT_EQ(encode_kvfs_super(s, k.params.slots.slot_size, &enc, &why), 0) << why;
        k.write(k.slot_offset(s.generation % kKvFsSuperSlots), enc);
        break;
      }
      default: {
        std::vector<KvRecord> records;
        for (uint64_t i = 1 + rng() % 6; i > 0; --i) records.push_back(any_record());
        k.append_to_log(records);
        break;
      }
    }
    const KvFsCheckReport r = k.check();
    if (r.errors == 0) {
      EXPECT_LE(r.used_bytes, r.owned_bytes) << problems_of(r);
      EXPECT_EQ(r.free_bytes, r.owned_bytes - r.used_bytes) << problems_of(r);
    } else {
      EXPECT_FALSE(r.problems.empty());
    }
    if (round % 4 == 0) {
      EXPECT_TRUE(has_problem(r, "kvfs superblock unreadable")) << problems_of(r);
    }
  }
}
