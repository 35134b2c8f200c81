// The SSD tier on HFM data sections, through the engine: staged data is
// readable at once, written out whole, survives a crash before it was
// written, and the sections' state persists and reconciles.
#include <sys/wait.h>
#include <cstdio>
#include <functional>
#include <future>
#include <random>
#include <thread>
#include <unistd.h>

#include "hybridstore/tier/tier_cleaner.h"
#include "hybridstore/store/test_hooks.h"
#include "store_helpers.h"

using namespace hybridstore;
using hybridstore::test::StoreTest;

namespace {

class SectionsStoreTest : public StoreTest {
 protected:
  Config config() override {
    Config c = hybridstore::test::small_store_config();
    std::string err;
    // Objects of several write units stay on the SSD here.
    EXPECT_EQ(c.set("hybridstore_placement_hdd_threshold", "16M", &err), 0) << err;
    EXPECT_EQ(c.set("hybridstore_ssd_allocator", "hfm", &err), 0);
    EXPECT_EQ(c.set("hybridstore_ssd_section_rules", "coll:9.0_head=bypass", &err), 0) << err;
    EXPECT_EQ(c.set("hybridstore_ssd_hotness_groups", "4", &err), 0);
    for (const auto& [k, v] : extra_) EXPECT_EQ(c.set(k, v, &err), 0) << err;
    return c;
  }
  void SetUp() override {
    StoreTest::SetUp();
    make_coll(coll_);
  }
  uint64_t pending() { return StoreTestHooks::deferred_pending_bytes(*store_); }
  // What umount does: every staged unit written out, every record applied.
  void write_out_staged() {
    ASSERT_EQ(StoreTestHooks::write_out_staged(*store_), 0);
  }
  void random_overwrites_keep_data_and_space_exact();
  // A child process mounts the store, runs `work` (false: it failed) and
  // dies without umount, as a crash would; then the store is mounted again.
  void crash_after(const std::function<bool(HybridStore&)>& work) {
    ASSERT_EQ(store_->umount(), 0);
    store_.reset();
    const std::string path = dir_->path() + "/store";
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      HybridStore s(path, config());
      std::string err;
      if (s.mount(&err) < 0) _exit(2);
      _exit(work(s) ? 0 : 3);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    store_ = std::make_unique<HybridStore>(path, config());
    std::string err;
    ASSERT_EQ(store_->mount(&err), 0) << err;
  }
  std::map<std::string, std::string> extra_;
};

TEST_F(SectionsStoreTest, SmallObjectsTakeBlocksNotPages) {
  StoreStats before;
  store_->statfs(&before);
  Transaction t;
  t.write(coll_, obj("a"), 0, std::string(1000, 'a'));   // 4 blocks of 256 B
  t.write(coll_, obj("b"), 0, std::string(5000, 'b'));   // 20 blocks
  apply(std::move(t));
  StoreStats after;
  store_->statfs(&after);
  EXPECT_EQ(after.tier[0].allocated - before.tier[0].allocated, 1024u + 5120u);
  EXPECT_EQ(read_all(coll_, obj("a")), std::string(1000, 'a'));
  EXPECT_EQ(read_all(coll_, obj("b")), std::string(5000, 'b'));
  EXPECT_NE(store_->sections_report().find("small"), std::string::npos);
}

TEST_F(SectionsStoreTest, StagedDataIsReadableAtOnceAndWrittenWholeLater) {
  std::map<std::string, std::string> model;
  for (int i = 0; i < 200; ++i) {
    std::string name = "s" + std::to_string(i);
    model[name] = hybridstore::test::random_bytes(rng_, 300 + rng_() % 9000);
    Transaction t;
    t.write(coll_, obj(name), 0, model[name]);
    apply(std::move(t));
  }
  EXPECT_GT(pending(), 0u);  // staged, not yet on the device
  for (auto& [name, data] : model) ASSERT_EQ(read_all(coll_, obj(name)), data) << name;
  ASSERT_EQ(store_->flush(), 0);
  EXPECT_GT(pending(), 0u);  // a sync does not force partly filled units out
  write_out_staged();
  EXPECT_EQ(pending(), 0u);
  StoreStats st;
  store_->statfs(&st);
  // Hundreds of small objects reached the device in a handful of writes.
  EXPECT_LT(st.deferred_device_writes, 20u);
  remount();
  for (auto& [name, data] : model) ASSERT_EQ(read_all(coll_, obj(name)), data) << name;
  EXPECT_EQ(fsck_errors(true), 0);
}

// Random overwrites, appends, removes and truncates of 30 objects, checked
// against a model after every op and across a remount.
void SectionsStoreTest::random_overwrites_keep_data_and_space_exact() {
  std::map<std::string, std::string> model;
  for (int round = 0; round < 400; ++round) {
    std::string name = "o" + std::to_string(rng_() % 30);
    Transaction t;
    auto& m = model[name];
    switch (rng_() % 4) {
      case 0: {
        std::string d = hybridstore::test::random_bytes(rng_, 1 + rng_() % 6000);
        uint64_t off = rng_() % 8000;
        t.write(coll_, obj(name), off, d);
        if (m.size() < off + d.size()) m.resize(off + d.size(), '\0');
        m.replace(off, d.size(), d);
        break;
      }
      case 1: {
        std::string d = hybridstore::test::random_bytes(rng_, 1 + rng_() % 700);
        t.write(coll_, obj(name), m.size(), d);
        m += d;
        break;
      }
      case 2:
        t.remove(coll_, obj(name));
        model.erase(name);
        break;
      default: {
        if (!store_->exists(coll_, obj(name))) {
          continue;
        }
        uint64_t sz = rng_() % (m.size() + 1);
        t.truncate(coll_, obj(name), sz);
        m.resize(sz);
      }
    }
    apply(std::move(t));
    // Checked after every op: a truncate once left section blocks past the
    // end only when fsck's flush and the op met in one order.
    ASSERT_EQ(fsck_errors(false), 0) << "round " << round << " on " << name;
    if (round % 100 == 99) {
      ASSERT_EQ(store_->flush(), 0);
    }
  }
  for (auto& [name, data] : model) ASSERT_EQ(read_all(coll_, obj(name)), data) << name;
  EXPECT_EQ(fsck_errors(true), 0);
  StoreStats st;
  store_->statfs(&st);
  uint64_t blocks = 0;
  store_->for_each_object([&](const CollectionId&, const ObjectId&, const ObjectStat& s) { blocks += s.bytes_on[0]; });
  EXPECT_EQ(st.tier[0].allocated, blocks);  // df matches what the objects hold
  remount();
  for (auto& [name, data] : model) ASSERT_EQ(read_all(coll_, obj(name)), data) << name;
  EXPECT_EQ(fsck_errors(true), 0);
}

TEST_F(SectionsStoreTest, OverwritesRemovesAndAppendsKeepDataAndSpaceExact) {
  random_overwrites_keep_data_and_space_exact();
}

TEST_F(SectionsStoreTest, RedirectedSmallOverwritesKeepDataAndSpaceExact) {
  ASSERT_EQ(store_->umount(), 0);
  extra_["hybridstore_ssd_small_overwrites"] = "redirect";
  dir_ = std::make_unique<hybridstore::test::TempDir>("store");
  make_store();
  make_coll(coll_);
  random_overwrites_keep_data_and_space_exact();
}

// Where a 4 KiB overwrite of data already on the device lands, for each
// mode: in place (a deferred record, the extent's place unchanged) or
// redirected (a new extent, nothing deferred, the old space freed).
TEST_F(SectionsStoreTest, SmallOverwritesGoInPlaceOrToNewExtentsAsConfigured) {
  struct Case {
    std::string mode, kind;
    bool redirected;
  };
  const std::vector<Case> cases = {{"in-place", "file", false}, {"redirect", "file", true},
                                   {"auto", "file", false},     {"auto", "nand", true},
                                   {"in-place", "nand", false}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.mode + " on " + c.kind);
    ASSERT_EQ(store_->umount(), 0);
    extra_ = {{"hybridstore_ssd_small_overwrites", c.mode}, {"hybridstore_ssd_kind", c.kind}};
    if (c.kind == "nand") extra_["hybridstore_nand_size"] = "32M";
    dir_ = std::make_unique<hybridstore::test::TempDir>("store");
    make_store();
    make_coll(coll_);
    std::string data = hybridstore::test::random_bytes(rng_, 16384);
    Transaction t;
    t.write(coll_, obj("x"), 0, data);
    apply(std::move(t));
    write_out_staged();
    ASSERT_EQ(pending(), 0u);
    StoreStats before;
    store_->statfs(&before);
    auto physical_at = [&](uint64_t logical) {
      std::shared_ptr<const Onode> on;
      EXPECT_EQ(StoreTestHooks::onode(*store_, coll_, obj("x"), &on), 0);
      for (const auto& [off, e] : on->extents.extents())
        if (e.logical <= logical && logical < e.logical_end()) return e.physical + (logical - e.logical);
      ADD_FAILURE() << "no extent holds " << logical;
      return uint64_t(0);
    };
    const uint64_t old_place = physical_at(4096);
    const uint64_t staged_before = StoreTestHooks::deferred_stats(*store_).records_staged;
    std::string patch = hybridstore::test::random_bytes(rng_, 4096);
    Transaction o;
    o.write(coll_, obj("x"), 4096, patch);
    apply(std::move(o));
    ASSERT_EQ(store_->flush(), 0);
    data.replace(4096, patch.size(), patch);
    EXPECT_EQ(read_all(coll_, obj("x")), data);
    // One record either way: the deferred overwrite, or the new extent's
    // staged data (held until its write unit goes out whole).
    EXPECT_EQ(StoreTestHooks::deferred_stats(*store_).records_staged, staged_before + 1);
    if (c.redirected)
      EXPECT_NE(physical_at(4096), old_place);
    else
      EXPECT_EQ(physical_at(4096), old_place);
    write_out_staged();
    StoreStats after;
    store_->statfs(&after);
    EXPECT_EQ(after.tier[0].allocated, before.tier[0].allocated);  // the old 4 KiB was freed
    remount();
    EXPECT_EQ(read_all(coll_, obj("x")), data);
    EXPECT_EQ(fsck_errors(true), 0);
  }
}

TEST_F(SectionsStoreTest, StagedDataSurvivesACrashBeforeItWasWritten) {
  extra_["hybridstore_ssd_staging_timeout"] = "3600";  // nothing written by timeout
  // Acknowledged, staged, never written to the device.
  ASSERT_NO_FATAL_FAILURE(crash_after([&](HybridStore& s) {
    for (int i = 0; i < 50; ++i) {
      Transaction t;
      t.write(coll_, obj("c" + std::to_string(i)), 0, std::string(700 + i * 37, static_cast<char>('A' + i % 26)));
      if (s.apply_transaction(std::move(t)) < 0) return false;
    }
    return true;
  }));
  for (int i = 0; i < 50; ++i)
    EXPECT_EQ(read_all(coll_, obj("c" + std::to_string(i))), std::string(700 + i * 37, static_cast<char>('A' + i % 26)));
  EXPECT_EQ(fsck_errors(true), 0);
  // And the sections go on working on top of it.
  Transaction t;
  t.write(coll_, obj("after"), 0, std::string(3000, 'z'));
  apply(std::move(t));
  remount();
  EXPECT_EQ(read_all(coll_, obj("after")), std::string(3000, 'z'));
  EXPECT_EQ(fsck_errors(true), 0);
}

TEST_F(SectionsStoreTest, ConcurrentWritersFillWriteUnitsWithoutLosingStagedData) {
  // Writers in different collections complete each other's write units: no
  // unit may be written out before all the data placed in it is staged.
  const int kThreads = 8, kWrites = 250;
  for (int t = 0; t < kThreads; ++t) make_coll("3." + std::to_string(t) + "_head");
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      CollectionId c("3." + std::to_string(t) + "_head");
      for (int i = 0; i < kWrites; ++i) {
        Transaction w;
        w.write(c, obj("w" + std::to_string(i)), 0, std::string(200 + (i * 53 + t * 31) % 3000, static_cast<char>('a' + t)));
        ASSERT_EQ(store_->queue_transaction(std::move(w)), 0);
      }
    });
  for (auto& th : threads) th.join();
  auto flushed = std::async(std::launch::async, [&] { return store_->flush(); });
  ASSERT_EQ(flushed.wait_for(std::chrono::seconds(60)), std::future_status::ready) << "flush hangs: staged data stranded";
  ASSERT_EQ(flushed.get(), 0);
  write_out_staged();
  EXPECT_EQ(pending(), 0u);
  remount();
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kWrites; i += 7)
      ASSERT_EQ(read_all("3." + std::to_string(t) + "_head", obj("w" + std::to_string(i))),
                std::string(200 + (i * 53 + t * 31) % 3000, static_cast<char>('a' + t)));
  EXPECT_EQ(fsck_errors(true), 0);
}

TEST_F(SectionsStoreTest, CleanerMovesLiveDataOutOfHoleyUnitsAndFreesThem) {
  // Four erase units' worth of small objects, then most of them removed:
  // the units are mostly holes.
  std::map<std::string, std::string> keep;
  for (int i = 0; i < 900; ++i) {
    std::string name = "h" + std::to_string(i);
    std::string d(3500 + i % 900, static_cast<char>('a' + i % 26));
    Transaction t;
    t.write(coll_, obj(name), 0, d);
    apply(std::move(t));
    if (i % 5 == 0) keep[name] = d;
  }
  ASSERT_EQ(store_->flush(), 0);
  for (int i = 0; i < 900; ++i) {
    if (i % 5 == 0) continue;
    Transaction t;
    t.remove(coll_, obj("h" + std::to_string(i)));
    apply(std::move(t));
  }
  // Objects in units of their own, which no pass has to move: a pass keeps
  // only its victims' owners, not every object on the tier.
  constexpr size_t kBystanders = 300;
  for (size_t i = 0; i < kBystanders; ++i) {
    std::string name = "b" + std::to_string(i);
    std::string d(3000, static_cast<char>('A' + i % 26));
    Transaction t;
    t.write(coll_, obj(name), 0, d);
    apply(std::move(t));
    keep[name] = d;
  }
  ASSERT_EQ(store_->flush(), 0);
  StoreStats before;
  store_->statfs(&before);
  ASSERT_GT(before.tier[0].consumed, 2 * before.tier[0].allocated);  // holes
  size_t freed = 0, moved = 0;
  for (int pass = 0; pass < 10; ++pass) {
    CleanerReport rep;
    ASSERT_EQ(store_->clean_now(true, &rep), 0);
    freed += rep.units_freed;
    moved += rep.objects_moved;
    std::printf("pass %d: %zu victims, %zu objects moved, %zu skipped, %zu owners held from %zu scans\n", pass,
                rep.victims, rep.objects_moved, rep.skipped, rep.owners_held, rep.owner_scans);
    if (rep.victims == 0) break;
    EXPECT_LE(rep.owner_scans, 1u);
    if (rep.objects_moved) {
      EXPECT_GT(rep.owners_held, 0u);
    }
    EXPECT_LT(rep.owners_held, keep.size()) << "only the victims' owners, not every object on the tier";
  }
  EXPECT_GT(freed, 0u);
  EXPECT_GT(moved, 0u);
  StoreStats after;
  store_->statfs(&after);
  EXPECT_LT(after.tier[0].consumed, before.tier[0].consumed);
  EXPECT_EQ(after.tier[0].allocated, before.tier[0].allocated);  // same live data, elsewhere
  for (auto& [name, data] : keep) ASSERT_EQ(read_all(coll_, obj(name)), data) << name;
  EXPECT_EQ(fsck_errors(true), 0);
  remount();
  for (auto& [name, data] : keep) ASSERT_EQ(read_all(coll_, obj(name)), data) << name;
  EXPECT_EQ(fsck_errors(true), 0);
}

// What a mount keeps of the SSD sections: by default, no placement of a
// written extent (they stay in their records until a release, the cleaner
// or fsck reads them); with hybridstore_ssd_placements_resident, all.
class SectionPlacementsTest : public SectionsStoreTest, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    extra_["hybridstore_ssd_placements_resident"] = GetParam() ? "true" : "false";
    SectionsStoreTest::SetUp();
  }
  uint64_t placements_in_memory() {
    for (const MemPoolStat& p : store_->mempools())
      if (p.name == "tier_sections") return p.items;
    ADD_FAILURE() << "no tier_sections pool";
    return 0;
  }
};

TEST_P(SectionPlacementsTest, AfterAMountReleasesOverwritesAndTheCleanerReadThemBack) {
  const bool resident = GetParam();
  std::map<std::string, std::string> data;
  for (int i = 0; i < 900; ++i) {
    std::string name = "p" + std::to_string(i);
    data[name] = std::string(600 + (i * 37) % 3500, static_cast<char>('a' + i % 26));
    Transaction t;
    t.write(coll_, obj(name), 0, data[name]);
    apply(std::move(t));
  }
  const uint64_t before = placements_in_memory();
  ASSERT_GE(before, 900u);
  remount();
  const uint64_t after = placements_in_memory();
  std::printf("placements in memory: %llu before the remount, %llu after (resident=%d)\n",
              (unsigned long long)before, (unsigned long long)after, resident);
  if (resident)
    EXPECT_EQ(after, before);
  else
    EXPECT_LT(after, before / 10);
  EXPECT_EQ(fsck_errors(true), 0);  // reads every record back
  if (!resident) {
    EXPECT_EQ(placements_in_memory(), after);
  }
  // Releases into evicted extents: removes, and overwrites that move.
  for (int i = 0; i < 900; ++i) {
    std::string name = "p" + std::to_string(i);
    Transaction t;
    if (i % 5 == 0) {
      data[name] = std::string(4000 + i, static_cast<char>('A' + i % 26));
      t.write(coll_, obj(name), 0, data[name]);
    } else if (i % 5 != 1) {
      t.remove(coll_, obj(name));
      data.erase(name);
    } else {
      continue;
    }
    apply(std::move(t));
  }
  for (auto& [name, d] : data) ASSERT_EQ(read_all(coll_, obj(name)), d) << name;
  EXPECT_EQ(fsck_errors(true), 0);
  remount();
  size_t moved = 0;
  for (int pass = 0; pass < 10; ++pass) {
    CleanerReport rep;
    ASSERT_EQ(store_->clean_now(true, &rep), 0);
    moved += rep.objects_moved;
    if (rep.victims == 0) break;
  }
  EXPECT_GT(moved, 0u);
  for (auto& [name, d] : data) ASSERT_EQ(read_all(coll_, obj(name)), d) << name;
  EXPECT_EQ(fsck_errors(true), 0);
  remount();
  for (auto& [name, d] : data) ASSERT_EQ(read_all(coll_, obj(name)), d) << name;
  EXPECT_EQ(fsck_errors(true), 0);
}

INSTANTIATE_TEST_SUITE_P(Both, SectionPlacementsTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "resident" : "in_records"; });

TEST_F(SectionsStoreTest, BypassRuleSendsACollectionToTheHdd) {
  make_coll("9.0_head");
  Transaction t;
  t.write("9.0_head", obj("x"), 0, std::string(2000, 'x'));
  apply(std::move(t));
  ObjectStat st;
  ASSERT_EQ(store_->stat("9.0_head", obj("x"), &st), 0);
  EXPECT_EQ(st.bytes_on[tier_index(Tier::kHdd)], st.allocated);
}

uint64_t counter(HybridStore& s, const std::string& name) { return s.perf().get(s.perf().find(name)); }

TEST_F(SectionsStoreTest, WholeUnitsOfLargeObjectsAreWrittenBeforeTheCommitNotStaged) {
  const uint64_t direct_before = counter(*store_, "ssd_direct_unit_bytes");
  const uint64_t staged_before = counter(*store_, "deferred_write_bytes");
  std::map<std::string, std::string> model;
  for (int i = 0; i < 6; ++i) {
    std::string name = "L" + std::to_string(i);
    model[name] = hybridstore::test::random_bytes(rng_, (3 << 20) + 5000 + i * 777);
    Transaction t;
    t.write(coll_, obj(name), 0, model[name]);
    apply(std::move(t));
  }
  const uint64_t direct = counter(*store_, "ssd_direct_unit_bytes") - direct_before;
  const uint64_t staged = counter(*store_, "deferred_write_bytes") - staged_before;
  // Each object has at least two whole 1 MiB units to itself.
  EXPECT_GE(direct, 6u * (2u << 20));
  EXPECT_LT(staged, direct / 4) << "most of the data still went through RocksDB";
  for (auto& [name, data] : model) ASSERT_EQ(read_all(coll_, obj(name)), data) << name;
  // Overwrites of data in such units go in place, in order after it.
  Transaction o;
  o.write(coll_, obj("L0"), 4096, std::string(8192, 'o'));
  apply(std::move(o));
  model["L0"].replace(4096, 8192, std::string(8192, 'o'));
  EXPECT_EQ(read_all(coll_, obj("L0")), model["L0"]);
  remount();
  for (auto& [name, data] : model) ASSERT_EQ(read_all(coll_, obj(name)), data) << name;
  EXPECT_EQ(fsck_errors(true), 0);
}

TEST_F(SectionsStoreTest, WithDirectUnitsOffEverythingIsStaged) {
  extra_["hybridstore_ssd_direct_units"] = "false";
  remount();
  const uint64_t direct_before = counter(*store_, "ssd_direct_unit_bytes");
  std::string data = hybridstore::test::random_bytes(rng_, 3 << 20);
  Transaction t;
  t.write(coll_, obj("S"), 0, data);
  apply(std::move(t));
  EXPECT_EQ(counter(*store_, "ssd_direct_unit_bytes"), direct_before);
  EXPECT_GT(pending(), 0u);
  EXPECT_EQ(read_all(coll_, obj("S")), data);
}

TEST_F(SectionsStoreTest, WholeUnitsWrittenBeforeACrashSurviveIt) {
  extra_["hybridstore_ssd_staging_timeout"] = "3600";
  auto data = [](int i) {
    std::mt19937_64 r(static_cast<uint64_t>(i));
    return hybridstore::test::random_bytes(r, (2 << 20) + 300 + static_cast<uint64_t>(i) * 4099);
  };
  ASSERT_NO_FATAL_FAILURE(crash_after([&](HybridStore& s) {
    for (int i = 0; i < 8; ++i) {
      Transaction t;
      t.write(coll_, obj("d" + std::to_string(i)), 0, data(i));
      // Small objects too: their units stay staged around the direct ones.
      t.write(coll_, obj("s" + std::to_string(i)), 0, std::string(900 + i, static_cast<char>('a' + i)));
      if (s.apply_transaction(std::move(t)) < 0) return false;
    }
    return true;
  }));
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(read_all(coll_, obj("d" + std::to_string(i))), data(i)) << i;
    EXPECT_EQ(read_all(coll_, obj("s" + std::to_string(i))), std::string(900 + i, static_cast<char>('a' + i)));
  }
  EXPECT_EQ(fsck_errors(true), 0);
}

TEST_F(SectionsStoreTest, ARangeUnderADiscardedRecordIsNotQuietUntilItsDeletionIsDurable) {
  // A staged object removed before its unit was written: its held records
  // are discarded, but stay in RocksDB until the next applied batch deletes
  // them. A unit written directly over that space before then could be
  // overwritten by a replay of them after a crash.
  extra_["hybridstore_ssd_staging_timeout"] = "3600";
  remount();
  Transaction t;
  t.write(coll_, obj("gone"), 0, std::string(5000, 'g'));
  apply(std::move(t));
  DataExtent e;
  {
    std::shared_ptr<const Onode> on;
    ASSERT_EQ(StoreTestHooks::onode(*store_, coll_, obj("gone"), &on), 0);
    ASSERT_FALSE(on->extents.empty());
    e = on->extents.extents().begin()->second;
  }
  ASSERT_EQ(e.tier, Tier::kSsd);
  EXPECT_FALSE(StoreTestHooks::deferred_range_quiet(*store_, Tier::kSsd, e.physical, e.length));  // staged
  Transaction r;
  r.remove(coll_, obj("gone"));
  apply(std::move(r));
  EXPECT_FALSE(StoreTestHooks::deferred_range_quiet(*store_, Tier::kSsd, e.physical, e.length));  // discarded, not deleted
  ASSERT_NO_FATAL_FAILURE(write_out_staged());
  EXPECT_TRUE(StoreTestHooks::deferred_range_quiet(*store_, Tier::kSsd, e.physical, e.length));
}

TEST_F(SectionsStoreTest, APromotionRewritesTheWholeObjectInWholeUnits) {
  // A 4 MiB object on the HDD took three small random writes on the SSD
  // (absorbed). Promoted, it becomes one contiguous allocation whose whole
  // units are written at once, not the pieces between the absorbed blocks,
  // each staged apart.
  std::string data = hybridstore::test::random_bytes(rng_, 4 << 20);
  Transaction t;
  t.touch(coll_, obj("p"));
  t.set_alloc_hint(coll_, obj("p"), 64ull << 20, 0, kHintSequentialWrite);
  t.write(coll_, obj("p"), 0, data);
  apply(std::move(t));
  for (uint64_t off : {300000ull, 1900000ull, 3500000ull}) {
    Transaction w;
    std::string piece(4096, static_cast<char>('a' + off % 26));
    w.write(coll_, obj("p"), off, piece);
    apply(std::move(w));
    data.replace(off, piece.size(), piece);
  }
  ObjectStat st;
  ASSERT_EQ(store_->stat(coll_, obj("p"), &st), 0);
  ASSERT_GT(st.bytes_on[0], 0u) << "the small writes were not absorbed";
  ASSERT_GT(st.bytes_on[1], 0u);
  const uint64_t direct_before = counter(*store_, "ssd_direct_unit_bytes");
  ASSERT_EQ(store_->migrate(coll_, obj("p"), Tier::kSsd), 0);
  ASSERT_EQ(store_->stat(coll_, obj("p"), &st), 0);
  EXPECT_EQ(st.bytes_on[0], st.allocated);
  EXPECT_GE(counter(*store_, "ssd_direct_unit_bytes") - direct_before, 3u << 20);
  EXPECT_EQ(read_all(coll_, obj("p")), data);
  remount();
  EXPECT_EQ(read_all(coll_, obj("p")), data);
  EXPECT_EQ(fsck_errors(true), 0);
}

TEST_F(SectionsStoreTest, MigrationIntoAndOutOfSectionsKeepsData) {
  std::string data = hybridstore::test::random_bytes(rng_, 200000);
  Transaction t;
  t.touch(coll_, obj("m"));
  t.set_alloc_hint(coll_, obj("m"), 64ull << 20, 0, kHintSequentialWrite);
  t.write(coll_, obj("m"), 0, data);
  apply(std::move(t));
  ASSERT_EQ(store_->migrate(coll_, obj("m"), Tier::kSsd), 0);
  ObjectStat st;
  ASSERT_EQ(store_->stat(coll_, obj("m"), &st), 0);
  EXPECT_EQ(st.bytes_on[0], st.allocated);
  EXPECT_EQ(read_all(coll_, obj("m")), data);
  ASSERT_EQ(store_->migrate(coll_, obj("m"), Tier::kHdd), 0);
  remount();
  EXPECT_EQ(read_all(coll_, obj("m")), data);
  EXPECT_EQ(fsck_errors(true), 0);
}

}  // namespace
