// Writing and replaying the kvfs log on a device (docs/kvfs.md 3.2, 3.7):
// replay rebuilds what applying the records directly builds, across
// segments; a torn last group ends the log, damage before later valid groups
// fails the mount, stale groups of an older log are ignored, and after a
// power cut at any write the log holds a prefix that includes every group
// whose append returned.
#include <gtest/gtest.h>

#include <cstring>

#include <fmt/format.h>

#include "common_helpers.h"
#include "hybridstore/kvfs/kvfs_log.h"
#include "hybridstore/kvfs/kvfs_state.h"
#include "kvfs/kvfs_workload.h"
#include "testing/fault_device.h"
#include "testing/fault_injection.h"

using namespace hybridstore;
using namespace hybridstore::test;

namespace {

std::unique_ptr<BlockDevice> open_media(const std::string& path) {
  DeviceOpenOptions o;
  o.create = true;
  o.create_size = kDevSize;
  o.backend = IoBackend::kPosix;
  std::string err;
  auto dev = open_block_device(path, o, &err);
  EXPECT_TRUE(dev) << err;
  return dev;
}

// The state that applying `logged` (with the superblock's first segment)
// builds, without any device.
std::string direct_state(const std::vector<KvLoggedRecord>& logged, size_t count) {
  KvFsState s(test_uuid(0x11), test_geometry());
  std::string why;
  EXPECT_EQ(s.begin_log(test_super().log_segment, &why), 0) << why;
  for (size_t i = 0; i < count; ++i) EXPECT_EQ(s.apply(logged[i].record, logged[i].seq, &why), 0) << why;
  return s.describe();
}

struct Replayed {
  int result = 0;
  std::string why;
  KvFsLogEnd end;
  std::string state;
};

Replayed replay(BlockDevice* dev, const KvFsSuper& super = test_super()) {
  Replayed out;
  KvFsState s(super.kvfs_uuid, test_geometry());
  out.result = replay_kvfs_log(dev, super, &s, &out.end, &out.why);
  out.state = s.describe();
  return out;
}

// A log written by `groups` appends of a seeded workload: where each
// append's group began, and every record made durable.
struct WrittenLog {
  std::vector<uint64_t> group_at;  // position of each append's own group
  std::vector<KvLoggedRecord> logged;
};

WrittenLog write_log(BlockDevice* dev, uint64_t seed, size_t groups, uint64_t log_id = test_super().log_id) {
  KvWorkload w(seed);
  const KvFsSuper super = test_super();
  KvFsLogWriter writer(dev, kB, log_id, super.log_segment, super.log_segment.offset, super.log_first_seq,
                       [&w](KvFsExtent* seg, std::string* why) { return w.next_segment(seg, why); });
  WrittenLog out;
  for (size_t i = 0; i < groups; ++i) {
    auto batch = i == 0 ? w.first_batch() : w.batch(1 + i % 4);
    std::string why;
    const size_t before = out.logged.size();
    EXPECT_EQ(writer.append_group(batch, &out.logged, &why), 0) << why;
    // The group itself starts where its records' blocks end minus its size.
    KvGroup g{log_id, out.logged.back().seq + 1 - batch.size(), batch};
    out.group_at.push_back(writer.position() - kvfs_group_size(g, kB));
    EXPECT_GE(out.logged.size() - before, batch.size());
  }
  return out;
}

size_t segments_used(const WrittenLog& log) {
  size_t n = 1;
  for (const auto& r : log.logged) n += kv_record_op(r.record) == KvOp::kNext;
  return n;
}

void damage(BlockDevice* dev, uint64_t offset, char value, uint64_t len = 1) {
  const uint64_t blk = offset / kB * kB;
  AlignedBuffer b(kB);
  ASSERT_EQ(dev->read(blk, b.data(), kB), 0);
  std::memset(b.data() + (offset - blk), value, len);
  ASSERT_EQ(dev->write(blk, b.data(), kB), 0);
}

}  // namespace

TEST(KvFsReplay, ThreeSegmentsGiveTheStateOfTheRecords) {
  TempDir dir("kvfs-replay");
  auto dev = open_media(dir.file("dev"));
  const uint64_t seed = test_seed(1);
  const WrittenLog log = write_log(dev.get(), seed, 40);
  ASSERT_GE(segments_used(log), 3u) << "the workload must span three segments";
  const Replayed r = replay(dev.get());
  ASSERT_EQ(r.result, 0) << r.why;
  EXPECT_EQ(r.end.next_seq, log.logged.back().seq + 1);
  EXPECT_EQ(r.state, direct_state(log.logged, log.logged.size()));
  // The writer continues where replay says, and a second replay sees it.
  KvFsLogWriter more(dev.get(), kB, test_super().log_id, r.end.segment, r.end.position, r.end.next_seq,
                     [](KvFsExtent*, std::string* why) {
                       *why = "no more segments";
                       return -ENOSPC;
                     });
  std::vector<KvLoggedRecord> logged = log.logged;
  std::string why;
  ASSERT_EQ(more.append_group({KvMkdir{"extra"}}, &logged, &why), 0) << why;
  const Replayed again = replay(dev.get());
  ASSERT_EQ(again.result, 0) << again.why;
  EXPECT_EQ(again.state, direct_state(logged, logged.size()));
}

TEST(KvFsReplay, TornLastGroupEndsTheLog) {
  TempDir dir("kvfs-replay");
  auto dev = open_media(dir.file("dev"));
  const uint64_t seed = test_seed(2);
  const WrittenLog log = write_log(dev.get(), seed, 6);
  const Replayed before = replay(dev.get());
  ASSERT_EQ(before.result, 0) << before.why;
  const uint64_t at = before.end.position;
  // A last group of long names, so that it spans blocks.
  std::string why;
  KvFsLogWriter tail_writer(dev.get(), kB, test_super().log_id, before.end.segment, at, before.end.next_seq,
                            [](KvFsExtent*, std::string*) { return -ENOSPC; });
  std::vector<KvLoggedRecord> logged = log.logged;
  ASSERT_EQ(tail_writer.append_group({KvMkdir{"x"}, KvMkdir{"y" + std::string(200, 'y')},
                                      KvCreate{"x", std::string(255, 'n'), 1000},
                                      KvCreate{"x", std::string(254, 'm'), 1001},
                                      KvRename{"x", std::string(255, 'n'), "x", std::string(255, 'o')},
                                      KvRename{"x", std::string(254, 'm'), "x", std::string(254, 'p')},
                                      KvCreate{"x", std::string(253, 'q'), 1002},
                                      KvRename{"x", std::string(253, 'q'), "x", std::string(253, 'r')},
                                      KvCreate{"x", std::string(252, 's'), 1003},
                                      KvRename{"x", std::string(252, 's'), "x", std::string(252, 't')},
                                      KvCreate{"x", std::string(251, 'u'), 1004},
                                      KvRename{"x", std::string(251, 'u'), "x", std::string(251, 'v')},
                                      KvCreate{"x", std::string(250, 'w'), 1005},
                                      KvRename{"x", std::string(250, 'w'), "x", std::string(250, 'z')}},
                                     &logged, &why),
            0)
      << why;
  ASSERT_GE(tail_writer.position() - at, 2 * kB) << "the last group must span blocks";
  ASSERT_EQ(replay(dev.get()).state, direct_state(logged, logged.size()));
  damage(dev.get(), at + kB, '\0', kB);  // its second block torn away
  const Replayed r = replay(dev.get());
  ASSERT_EQ(r.result, 0) << r.why;
  EXPECT_EQ(r.end.position, at);
  EXPECT_EQ(r.end.next_seq, before.end.next_seq);
  EXPECT_EQ(r.state, before.state);
}

TEST(KvFsReplay, DamageBeforeLaterGroupsFailsTheMount) {
  TempDir dir("kvfs-replay");
  auto dev = open_media(dir.file("dev"));
  const WrittenLog log = write_log(dev.get(), test_seed(3), 5);
  ASSERT_EQ(segments_used(log), 1u) << "all five groups in the first segment";
  damage(dev.get(), log.group_at[1] + 20, 'X');
  const Replayed r = replay(dev.get());
  EXPECT_EQ(r.result, -EIO);
  EXPECT_NE(r.why.find(fmt::format("kvfs log damaged at offset {:#x}; later records exist", log.group_at[1])),
            std::string::npos)
      << r.why;
  // Damage to the last group alone is a torn end, not damage.
  TempDir dir2("kvfs-replay");
  auto dev2 = open_media(dir2.file("dev"));
  const WrittenLog log2 = write_log(dev2.get(), test_seed(3), 5);
  damage(dev2.get(), log2.group_at[4] + 20, 'X');
  const Replayed r2 = replay(dev2.get());
  ASSERT_EQ(r2.result, 0) << r2.why;
  EXPECT_EQ(r2.end.position, log2.group_at[4]);
}

TEST(KvFsReplay, StaleGroupsOfAnOlderLogAreIgnored) {
  TempDir dir("kvfs-replay");
  auto dev = open_media(dir.file("dev"));
  // An older log (another log_id) filled the segment; the current one
  // reuses it and is shorter.
  const WrittenLog old_log = write_log(dev.get(), test_seed(4), 8, 0xdeadbeef);
  const WrittenLog log = write_log(dev.get(), test_seed(5), 3);
  ASSERT_LT(log.group_at.back(), old_log.group_at.back());
  const Replayed r = replay(dev.get());
  ASSERT_EQ(r.result, 0) << r.why;
  EXPECT_EQ(r.end.next_seq, log.logged.back().seq + 1);
  EXPECT_EQ(r.state, direct_state(log.logged, log.logged.size()));
}

TEST(KvFsReplay, ARecordTheStateRefusesFailsNamingTheSeq) {
  TempDir dir("kvfs-replay");
  auto dev = open_media(dir.file("dev"));
  const KvFsSuper super = test_super();
  KvFsLogWriter writer(dev.get(), kB, super.log_id, super.log_segment, super.log_segment.offset,
                       super.log_first_seq, [](KvFsExtent*, std::string*) { return -ENOSPC; });
  std::string why;
  ASSERT_EQ(writer.append_group({KvInit{test_uuid(0x11), kB, kA, kG}, KvGrant{{kHead, kG}}}, nullptr, &why), 0);
  ASSERT_EQ(writer.append_group({KvUnlink{"db", "gone"}}, nullptr, &why), 0);
  const Replayed r = replay(dev.get());
  EXPECT_EQ(r.result, -EIO);
  EXPECT_NE(r.why.find("seq 3"), std::string::npos) << r.why;
}

TEST(KvFsReplay, AnEmptyLogIsDamage) {
  TempDir dir("kvfs-replay");
  auto dev = open_media(dir.file("dev"));
  const Replayed r = replay(dev.get());
  EXPECT_EQ(r.result, -EIO);
  EXPECT_NE(r.why.find("no INIT"), std::string::npos) << r.why;
}

// Appends K groups through a device with a volatile cache, the power
// failing at write N, for every N; replay of what the media hold must give
// a prefix of the groups that holds every group whose append returned 0.
// The first group (INIT, the first GRANT) is mkfs's: it is durable before
// the superblock names the log, so the clock starts after it.
TEST(KvFsPowerCut, EveryCutLeavesAnAcknowledgedPrefix) {
  const uint64_t seed = test_seed(6);
  constexpr size_t kGroups = 24;
  TempDir ref_dir("kvfs-cut-ref");
  auto ref = open_media(ref_dir.file("dev"));
  const WrittenLog full = write_log(ref.get(), seed, kGroups);
  ASSERT_GE(segments_used(full), 2u) << "the cuts must cross a NEXT";
  const size_t writes = kGroups - 1 + segments_used(full) - 1;
  for (bool tear : {false, true}) {
    for (uint64_t n = 1; n <= writes; ++n) {
      SCOPED_TRACE(fmt::format("cut at write {} tear {} seed {}", n, tear, seed));
      TempDir dir("kvfs-cut");
      FaultSettings fs;
      fs.enabled = true;
      fs.seed = seed + n;
      auto injector = std::make_shared<FaultInjector>(dir.path(), fs);
      auto dev = std::make_unique<FaultInjectionDevice>(open_media(dir.file("dev")), injector);
      KvWorkload w(seed);
      const KvFsSuper super = test_super();
      KvFsLogWriter writer(dev.get(), kB, super.log_id, super.log_segment, super.log_segment.offset,
                           super.log_first_seq,
                           [&w](KvFsExtent* seg, std::string* why) { return w.next_segment(seg, why); });
      std::vector<KvLoggedRecord> acked;
      std::string why;
      ASSERT_EQ(writer.append_group(w.first_batch(), &acked, &why), 0) << why;
      injector->powercut_after_writes(n, tear);
      for (size_t i = 1; i < kGroups; ++i) {
        if (writer.append_group(w.batch(1 + i % 4), &acked, &why) != 0) break;
      }
      ASSERT_TRUE(injector->power_is_off());
      std::string err;
      ASSERT_EQ(injector->restore_power(&err), 0) << err;
      dev.reset();
      auto media = open_media(dir.file("dev"));
      const Replayed r = replay(media.get());
      ASSERT_EQ(r.result, 0) << r.why;
      const size_t replayed = r.end.next_seq - super.log_first_seq;
      ASSERT_GE(replayed, acked.size()) << "an acknowledged group was lost";
      ASSERT_LE(replayed, full.logged.size());
      // A prefix of the reference log, ending at a group boundary.
      ASSERT_EQ(r.state, direct_state(full.logged, replayed));
    }
  }
}
