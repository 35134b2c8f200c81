// The store's perf counters move when the engine does what they count, and
// the gauges agree with what statfs and a walk over the objects say.
#include <fcntl.h>
#include <unistd.h>

#include <rocksdb/db.h>

#include "hsio/block_device.h"
#include "hybridstore/kv/kv_schema.h"
#include "hybridstore/tier/tier_cleaner.h"
#include "hybridstore/tier/migrator.h"
#include "store_helpers.h"

using namespace hybridstore;
using hybridstore::test::TierStoreTest;

namespace {

class PerfCountersTest : public TierStoreTest {
 protected:
  int id(const std::string& name) {
    int i = store_->perf().find(name);
    EXPECT_GE(i, 0) << name;
    return i;
  }
  uint64_t get(const std::string& name) { return store_->perf().get(id(name)); }
  uint64_t lat_sum(const std::string& name) { return store_->perf().snapshot()[id(name)].sum_ns; }
  void write_hdd(const ObjectId& o, const std::string& data) {
    Transaction t;
    t.touch(coll_, o);
    t.set_alloc_hint(coll_, o, 64ull << 20, 0, kHintSequentialWrite);
    t.write(coll_, o, 0, data);
    apply(std::move(t));
  }
  void write(const ObjectId& o, const std::string& data) {
    Transaction t;
    t.write(coll_, o, 0, data);
    apply(std::move(t));
  }
  // Objects by the tier holding most of their data, from stat().
  std::array<uint64_t, 2> objects_by_tier() {
    std::array<uint64_t, 2> n{0, 0};
    store_->for_each_object([&](const CollectionId&, const ObjectId&, const ObjectStat& s) {
      if (!s.allocated) return;
      n[s.bytes_on[0] >= s.bytes_on[1] ? 0 : 1]++;
    });
    return n;
  }
  void expect_gauges_match_store() {
    StoreStats st;
    ASSERT_EQ(store_->statfs(&st), 0);
    auto objs = objects_by_tier();
    ASSERT_EQ(st.tiers, 2);
    for (int t = 0; t < st.tiers; ++t) {
      std::string tn = tier_name(static_cast<Tier>(t));
      EXPECT_EQ(get(tn + "_bytes_used"), st.tier[t].allocated) << tn;
      EXPECT_EQ(get(tn + "_bytes_total"), st.tier[t].total) << tn;
      EXPECT_EQ(get(tn + "_objects"), objs[t]) << tn;
    }
  }
};

TEST_F(PerfCountersTest, SchemaExistsBeforeMountAndLivesWithTheObject) {
  HybridStore fresh(dir_->path() + "/not-made-yet", config());
  const PerfCounterSet& set = fresh.perf();
  EXPECT_EQ(set.group(), "hybridstore");
  for (const char* n : {"txc", "commit_lat", "kv_flush_lat", "kv_sync_lat", "kv_commit_lat", "state_prepare_lat",
                        "deferred_write_ops", "deferred_write_bytes", "read_eio", "csum_errors", "onode_hits",
                        "onode_misses", "ssd_bytes_used", "hdd_objects", "ssd_section_allocs", "section_small_allocs",
                        "section_large_seals", "migrate_up_ops", "migrate_down_bytes", "cleaner_passes",
                        "cleaner_bytes_moved", "ftl_merges", "ftl_erases"})
    EXPECT_GE(set.find(n), 0) << n;
  for (const auto& c : set.schema()) EXPECT_FALSE(c.description.empty()) << c.name;
  // The same set before and after mount: a client may hold on to it.
  const PerfCounterSet* mounted = &store_->perf();
  ASSERT_EQ(store_->umount(), 0);
  EXPECT_EQ(mounted, &store_->perf());
  std::string err;
  ASSERT_EQ(store_->mount(&err), 0) << err;
  EXPECT_EQ(mounted, &store_->perf());
}

TEST_F(PerfCountersTest, ACommitMovesTheCommitPathLatencies) {
  ASSERT_EQ(store_->flush(), 0);  // the fixture's collection is committed: a stable start
  uint64_t txc = get("txc");
  uint64_t commits = get("commit_lat");
  write(obj("a"), std::string(10000, 'a'));
  ASSERT_EQ(store_->flush(), 0);
  EXPECT_EQ(get("txc"), txc + 1);
  EXPECT_EQ(get("commit_lat"), commits + 1);
  EXPECT_GT(lat_sum("commit_lat"), 0u);
  for (const char* n : {"submit_lat", "state_prepare_lat", "state_aio_wait_lat", "state_kv_queued_lat",
                        "state_kv_committing_lat", "kv_sync_lat", "kv_commit_lat", "kv_flush_lat"})
    EXPECT_GE(get(n), 1u) << n;
  EXPECT_GE(get("kv_commit_groups"), 1u);
  // commit_lat covers every state after submission.
  EXPECT_GE(lat_sum("commit_lat"), lat_sum("state_kv_committing_lat"));
}

TEST_F(PerfCountersTest, ReadsMoveReadAndOnodeCounters) {
  write(obj("r"), std::string(30000, 'r'));
  remount();  // a cold onode cache
  EXPECT_EQ(get("onode_misses"), 0u);
  EXPECT_EQ(read_all(coll_, obj("r")), std::string(30000, 'r'));
  EXPECT_EQ(get("onode_misses"), 1u);
  EXPECT_EQ(read_all(coll_, obj("r")), std::string(30000, 'r'));
  EXPECT_GE(get("onode_hits"), 1u);
  EXPECT_EQ(get("read_lat"), 2u);
  EXPECT_EQ(get("read_bytes"), 60000u);
  // The second read's blocks come from the data cache, not a device.
  EXPECT_GE(get("ssd_read_bytes") + get("hdd_read_bytes"), 30000u);
  EXPECT_GE(get("ssd_read_bytes") + get("hdd_read_bytes") + get("data_cache_hit_bytes"), 60000u);
}

TEST_F(PerfCountersTest, SmallOverwriteOfAnHddObjectIsADeferredWrite) {
  // With absorption on, the SSD would take this write (counted below).
  with({{"hybridstore_tier_absorb_max", "0"}});
  write_hdd(obj("big"), std::string(1 << 20, 'b'));
  ASSERT_EQ(store_->flush(), 0);
  uint64_t ops = get("deferred_write_ops"), bytes = get("deferred_write_bytes");
  uint64_t applied = get("deferred_apply_ops");
  Transaction t;
  t.write(coll_, obj("big"), 8192, std::string(4096, 'X'));
  apply(std::move(t));
  EXPECT_EQ(get("deferred_write_ops"), ops + 1);
  EXPECT_EQ(get("deferred_write_bytes"), bytes + 4096);
  ASSERT_EQ(store_->flush(), 0);  // drains the deferred queue
  EXPECT_GE(get("deferred_apply_ops"), applied + 1);
  EXPECT_EQ(get("deferred_queue_bytes"), 0u);
  EXPECT_GE(get("deferred_apply_lat"), 1u);
}

TEST_F(PerfCountersTest, SmallRandomWriteIntoAnHddObjectIsAnAbsorbedWrite) {
  write_hdd(obj("big"), std::string(1 << 20, 'b'));
  ASSERT_EQ(store_->flush(), 0);
  uint64_t ops = get("tier_absorb_ops"), bytes = get("tier_absorb_bytes");
  Transaction t;
  t.write(coll_, obj("big"), 8192, std::string(4096, 'X'));
  apply(std::move(t));
  EXPECT_EQ(get("tier_absorb_ops"), ops + 1);
  EXPECT_EQ(get("tier_absorb_bytes"), bytes + 4096);
  std::string want(1 << 20, 'b');
  want.replace(8192, 4096, std::string(4096, 'X'));
  EXPECT_EQ(read_all(coll_, obj("big")), want);
}

TEST_F(PerfCountersTest, TierGaugesFollowWritesRemovesAndMigrationsAndSurviveRemount) {
  for (int i = 0; i < 20; ++i) write(obj("s" + std::to_string(i)), std::string(3000 + 100 * i, 's'));
  for (int i = 0; i < 4; ++i) write_hdd(obj("h" + std::to_string(i)), std::string(600000, 'h'));
  expect_gauges_match_store();
  EXPECT_EQ(get("ssd_objects"), 20u);
  EXPECT_EQ(get("hdd_objects"), 4u);
  for (int i = 0; i < 5; ++i) {
    Transaction t;
    t.remove(coll_, obj("s" + std::to_string(i)));
    apply(std::move(t));
  }
  ASSERT_EQ(store_->migrate(coll_, obj("h0"), Tier::kSsd), 0);
  ASSERT_EQ(store_->migrate(coll_, obj("s10"), Tier::kHdd), 0);
  expect_gauges_match_store();
  EXPECT_EQ(get("ssd_objects"), 15u);
  EXPECT_EQ(get("hdd_objects"), 4u);
  remount();  // the object counts are persisted, the space is recomputed
  expect_gauges_match_store();
  EXPECT_EQ(fsck_errors(), 0);
}

TEST_F(PerfCountersTest, AMigrationMovesMigrationCounters) {
  write_hdd(obj("m"), std::string(300000, 'm'));
  ObjectStat st;
  ASSERT_EQ(store_->stat(coll_, obj("m"), &st), 0);
  ASSERT_EQ(store_->migrate(coll_, obj("m"), Tier::kSsd), 0);
  EXPECT_EQ(get("migrate_up_ops"), 1u);
  EXPECT_EQ(get("migrate_up_bytes"), st.allocated);
  EXPECT_EQ(get("migrate_down_ops"), 0u);
  ASSERT_EQ(store_->migrate(coll_, obj("m"), Tier::kSsd), 0);  // already there: nothing moved
  EXPECT_EQ(get("migrate_up_ops"), 1u);
  ASSERT_EQ(store_->migrate(coll_, obj("m"), Tier::kHdd), 0);
  EXPECT_EQ(get("migrate_down_ops"), 1u);
  EXPECT_GE(get("migrate_down_bytes"), 300000u);
  MigrationReport rep;
  ASSERT_EQ(store_->migrate_now(&rep), 0);
  EXPECT_EQ(get("migration_passes"), 1u);
  EXPECT_EQ(get("migration_lat"), 1u);
}

TEST_F(PerfCountersTest, SectionAllocationsSealsAndWriteUnitsAreCounted) {
  uint64_t allocs = get("ssd_section_allocs");
  for (int i = 0; i < 300; ++i) write(obj("w" + std::to_string(i)), std::string(2000 + i * 10, 'w'));
  EXPECT_GE(get("ssd_section_allocs"), allocs + 300);
  EXPECT_GE(get("section_small_allocs"), 1u);
  ASSERT_EQ(store_->umount(), 0);  // settles: every staged unit is written
  EXPECT_GE(get("ssd_section_seals"), 1u);
  EXPECT_GE(get("ssd_write_units"), 1u);
  uint64_t per_section = 0;
  for (const auto& c : store_->perf().schema())
    if (c.name.rfind("section_", 0) == 0 && c.name.size() > 6 && c.name.substr(c.name.size() - 6) == "_seals")
      per_section += store_->perf().get(store_->perf().find(c.name));
  EXPECT_EQ(per_section, get("ssd_section_seals"));
  std::string err;
  ASSERT_EQ(store_->mount(&err), 0) << err;
  EXPECT_GT(get("ssd_free_erase_units"), 0u);
}

TEST_F(PerfCountersTest, ACleanerPassMovesCleaningCounters) {
  for (int i = 0; i < 900; ++i) write(obj("h" + std::to_string(i)), std::string(3500 + i % 900, 'c'));
  ASSERT_EQ(store_->flush(), 0);
  for (int i = 0; i < 900; ++i) {
    if (i % 5 == 0) continue;
    Transaction t;
    t.remove(coll_, obj("h" + std::to_string(i)));
    apply(std::move(t));
  }
  uint64_t moved = 0;
  for (int pass = 0; pass < 10; ++pass) {
    CleanerReport rep;
    ASSERT_EQ(store_->clean_now(true, &rep), 0);
    moved += rep.bytes_moved;
    if (rep.victims == 0) break;
  }
  ASSERT_GT(moved, 0u);
  EXPECT_GE(get("cleaner_passes"), 1u);
  EXPECT_EQ(get("cleaner_passes"), get("cleaner_lat"));
  EXPECT_EQ(get("cleaner_bytes_moved"), moved);
  EXPECT_GE(get("cleaner_victims"), get("cleaner_units_freed"));
  EXPECT_GE(get("cleaner_objects_moved"), 1u);
  expect_gauges_match_store();
}

// The bytes of `data` are found in the device file by scanning its data
// regions (the file is sparse), and one byte there is flipped.
bool flip_byte_of(const std::string& dev, const std::string& data) {
  int fd = ::open(dev.c_str(), O_RDWR);
  if (fd < 0) return false;
  off_t end = ::lseek(fd, 0, SEEK_END);
  std::string buf(1 << 20, '\0');
  bool done = false;
  for (off_t pos = ::lseek(fd, 0, SEEK_DATA); pos >= 0 && pos < end && !done;) {
    off_t hole = ::lseek(fd, pos, SEEK_HOLE);
    for (off_t p = pos; p < hole && !done; p += static_cast<off_t>(buf.size()) - 4096) {
      ssize_t n = ::pread(fd, buf.data(), buf.size(), p);
      if (n <= 0) break;
      size_t at = std::string_view(buf.data(), static_cast<size_t>(n)).find(data.substr(0, 4096));
      if (at != std::string::npos) {
        char c = static_cast<char>(buf[at + 100] ^ 0x5a);
        done = ::pwrite(fd, &c, 1, p + static_cast<off_t>(at) + 100) == 1;
      }
    }
    pos = ::lseek(fd, hole, SEEK_DATA);
  }
  ::fsync(fd);
  ::close(fd);
  return done;
}

TEST_F(PerfCountersTest, AChecksumErrorMovesCsumErrorsAndReadEio) {
  std::string data;
  for (int i = 0; i < 8192; ++i) data += "unique-pattern-" + std::to_string(i) + ";";
  data.resize(1 << 18);
  write_hdd(obj("victim"), data);
  ASSERT_EQ(store_->umount(), 0);
  ASSERT_TRUE(flip_byte_of(dir_->path() + "/store/block.hdd", data));
  std::string err;
  ASSERT_EQ(store_->mount(&err), 0) << err;
  std::string out;
  EXPECT_EQ(store_->read(coll_, obj("victim"), 0, 0, &out), -EIO);
  EXPECT_EQ(get("csum_errors"), 1u);
  EXPECT_EQ(get("read_eio"), 1u);
  // Read in place into aligned memory, the damage is found all the same.
  AlignedBuffer mem(data.size(), 4096, AlignedBuffer::kZeroed);
  EXPECT_EQ(store_->read_into(coll_, obj("victim"), 0, 0, [&](uint64_t) { return mem.data(); }), -EIO);
  EXPECT_EQ(get("csum_errors"), 2u);
  EXPECT_EQ(get("read_eio"), 2u);
  // The store is fine otherwise; drop the damaged object so the fixture's
  // closing fsck has nothing to say.
  Transaction t;
  t.remove(coll_, obj("victim"));
  apply(std::move(t));
}

TEST_F(PerfCountersTest, StoresWithoutPerTierObjectCountsAreRecountedAtMount) {
  for (int i = 0; i < 6; ++i) write(obj("s" + std::to_string(i)), std::string(5000, 's'));
  for (int i = 0; i < 3; ++i) write_hdd(obj("h" + std::to_string(i)), std::string(500000, 'h'));
  ASSERT_EQ(store_->umount(), 0);
  {
    // The statistics record as stores made before the per-tier counts wrote it.
    rocksdb::Options o;
    o.merge_operator = kv::make_merge_operator();
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, dir_->path() + "/store/db", &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    std::string v;
    ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), kv::stats_key(), &v).ok());
    ASSERT_EQ(v.size(), 8u * kv::kStatCount);
    v.resize(24);
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), kv::stats_key(), v).ok());
  }
  std::string err;
  store_ = std::make_unique<HybridStore>(dir_->path() + "/store", config());
  ASSERT_EQ(store_->mount(&err), 0) << err;
  EXPECT_EQ(get("ssd_objects"), 6u);
  EXPECT_EQ(get("hdd_objects"), 3u);
  EXPECT_EQ(fsck_errors(), 0);
}

TEST_F(PerfCountersTest, TheNandSsdCountsFtlMergesAndErases) {
  with({{"hybridstore_ssd_kind", "nand"}, {"hybridstore_nand_size", "32M"}});
  // Overwrite a small working set many times: the flash fills with stale
  // pages and the FTL must merge and erase.
  for (int round = 0; round < 12; ++round) {
    for (int i = 0; i < 40; ++i) write(obj("n" + std::to_string(i)), std::string(64 << 10, static_cast<char>('a' + round)));
    ASSERT_EQ(store_->flush(), 0);
  }
  ASSERT_EQ(store_->umount(), 0);  // the FTL flushes its cache
  EXPECT_GT(get("ftl_host_pages_written"), 0u);
  EXPECT_GT(get("ftl_erases"), 0u);
  EXPECT_GT(get("ftl_merges"), 0u);
  std::string err;
  ASSERT_EQ(store_->mount(&err), 0) << err;
  EXPECT_EQ(read_all(coll_, obj("n7")), std::string(64 << 10, 'a' + 11));
}

}  // namespace
