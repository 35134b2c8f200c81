// The move of a directory store's RocksDB and commit journal into the KV
// file system on its SSD tier (docs/kvfs.md 7.3 and 8.5): what a moved store
// holds and mounts from, the refusals that change nothing, the rollback,
// the move at mount, and power cuts at device writes of the move and at its
// step boundaries.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "crash_model.h"
#include "hybridstore/format/store_format.h"
#include "hsio/block_device.h"
#include "store_helpers.h"
#include "testing/fault_injection.h"

using namespace hybridstore;
using namespace hybridstore::test;
using hybridstore::crashtest::StoreModel;

namespace fs = std::filesystem;

namespace {

Config with(Config c, const std::string& k, const std::string& v) {
  std::string err;
  EXPECT_EQ(c.set(k, v, &err), 0) << k << ": " << err;
  return c;
}

DeviceLabel ssd_label(const std::string& store) {
  DeviceOpenOptions o;
  o.direct_io = false;
  std::string why;
  std::unique_ptr<BlockDevice> dev = open_block_device(store + "/block.ssd", o, &why);
  EXPECT_TRUE(dev) << why;
  DeviceLabel l;
  LabelPairStatus st;
  if (dev) {
    EXPECT_EQ(read_labels(dev.get(), &l, &st, &why), 0) << why;
  }
  return l;
}

StoreModel model_of(HybridStore& s) {
  StoreModel m;
  std::string err;
  EXPECT_EQ(crashtest::read_store_model(s, &m, &err), 0) << err;
  return m;
}

// Mounts `path` with `cfg`, checks it holds `want` and fsck --deep is
// clean, and says whether RocksDB was on the device.
bool expect_store(const std::string& path, const Config& cfg, const StoreModel& want) {
  HybridStore s(path, cfg);
  std::string err;
  EXPECT_EQ(s.mount(&err), 0) << err;
  if (!s.is_mounted()) return false;
  EXPECT_EQ(crashtest::diff_models(want, model_of(s)), "");
  StoreStats st;
  EXPECT_EQ(s.statfs(&st), 0);
  FsckReport rep;
  EXPECT_EQ(s.fsck(true, &rep), 0) << (rep.problems.empty() ? "" : rep.problems[0]);
  EXPECT_EQ(s.umount(), 0);
  return st.kv_on_device;
}

class MoveKvTest : public StoreTest {
 protected:
  // A directory store, whatever HS_TEST_SET says.
  Config config() override { return with(small_store_config(), "hybridstore_kv_location", "directory"); }
  std::string path() const { return dir_->path() + "/store"; }

  void write_objects(int n, const std::string& tag) {
    for (int i = 0; i < n; ++i) {
      Transaction t;
      const ObjectId o = obj(tag + std::to_string(i));
      t.write(coll_, o, 0, std::string(4096 * (1 + i % 5) + i, static_cast<char>('a' + i % 26)));
      t.setattr(coll_, o, "attr", tag + std::to_string(i));
      t.setattr(coll_, o, "_", std::string(200, static_cast<char>('A' + i % 26)));
      t.omap_setheader(coll_, o, "header-" + std::to_string(i));
      t.omap_setkeys(coll_, o, {{"key-" + std::to_string(i), std::string(100, 'v')}, {"k2", tag}});
      apply(std::move(t));
    }
  }
  // A store of `n` objects, unmounted; its content.
  StoreModel populate(int n) {
    make_coll(coll_);
    write_objects(n, "o");
    StoreModel m = model_of(*store_);
    EXPECT_EQ(store_->umount(), 0);
    store_.reset();
    return m;
  }
  int move(const MoveKvOptions& o, std::string* err, MoveKvReport* rep = nullptr, const Config* cfg = nullptr) {
    HybridStore s(path(), cfg ? *cfg : config());
    MoveKvReport local;
    return s.move_kv_to_device(o, rep ? rep : &local, err);
  }
};

}  // namespace

TEST_F(MoveKvTest, AMovedStoreMountsFromTheDeviceWithEverythingIdentical) {
  const StoreModel before = populate(60);
  {
    std::ofstream(path() + "/whoami") << "7\n";
    std::ofstream(path() + "/ceph_fsid") << "4a1c7c3e-0000-4000-8000-000000000001\n";
    std::ofstream(path() + "/keyring") << "[osd.7]\n\tkey = AQBsecretsecretsecret==\n";
  }
  std::string err;
  MoveKvReport rep;
  ASSERT_EQ(move(MoveKvOptions(), &err, &rep), 0) << err;
  EXPECT_GT(rep.files, 2u);
  EXPECT_GT(rep.db_bytes, 0u);
  EXPECT_GT(rep.kvfs_bytes, rep.db_bytes);
  EXPECT_FALSE(fs::exists(path() + "/db"));
  EXPECT_TRUE(fs::exists(path() + "/db.format3-moved/CURRENT"));
  DeviceLabel l = ssd_label(path());
  EXPECT_TRUE(l.flags & kLabelKvOnDevice);
  EXPECT_TRUE(l.flags & kLabelKvMovedPending);
  EXPECT_NE(l.kvfs_uuid, Uuid{});
  EXPECT_EQ(l.meta["whoami"], "7");
  EXPECT_EQ(l.meta["ceph_fsid"], "4a1c7c3e-0000-4000-8000-000000000001");
  EXPECT_EQ(l.meta["osd_key"], "AQBsecretsecretsecret==");

  // The first read-write mount from the device ends the move (M10).
  EXPECT_TRUE(expect_store(path(), config(), before));
  EXPECT_FALSE(fs::exists(path() + "/db.format3-moved"));
  EXPECT_FALSE(fs::exists(path() + "/journal.format3-moved"));
  EXPECT_FALSE(fs::exists(path() + "/db"));
  l = ssd_label(path());
  EXPECT_TRUE(l.flags & kLabelKvOnDevice);
  EXPECT_FALSE(l.flags & kLabelKvMovedPending);

  store_ = std::make_unique<HybridStore>(path(), config());
  ASSERT_EQ(store_->mount(&err), 0) << err;
  StoreStats st;
  ASSERT_EQ(store_->statfs(&st), 0);
  EXPECT_TRUE(st.kv_on_device);
  EXPECT_GT(st.kvfs_used, 0u);
  EXPECT_GE(st.kvfs_owned, rep.kvfs_bytes);
  // Still a working store.
  write_objects(10, "after");
  ASSERT_EQ(store_->umount(), 0);
  EXPECT_EQ(store_->move_kv_rollback(&err), -EPERM);
  EXPECT_NE(err.find("can no longer be rolled back"), std::string::npos) << err;
  ASSERT_EQ(store_->mount(&err), 0) << err;
  EXPECT_EQ(read_all(coll_, obj("after9")).size(), 4096u * 5 + 9);
}

TEST_F(MoveKvTest, VerifyKeysComparesEveryKeyOfBothDatabases) {
  const StoreModel before = populate(30);
  MoveKvOptions o;
  o.verify = "keys";
  MoveKvReport rep;
  std::string err;
  ASSERT_EQ(move(o, &err, &rep), 0) << err;
  EXPECT_GT(rep.keys_compared, 60u);
  EXPECT_TRUE(expect_store(path(), config(), before));
}

TEST_F(MoveKvTest, ABadVerifyValueIsRefused) {
  populate(3);
  MoveKvOptions o;
  o.verify = "bytes";
  std::string err;
  EXPECT_EQ(move(o, &err), -EINVAL);
  EXPECT_NE(err.find("verify must be files, keys or none"), std::string::npos) << err;
  EXPECT_TRUE(fs::exists(path() + "/db/CURRENT"));
}

TEST_F(MoveKvTest, AMountedStoreIsRefused) {
  std::string err;
  EXPECT_EQ(store_->move_kv_to_device(MoveKvOptions(), nullptr, &err), -EBUSY);
  EXPECT_NE(err.find("mounted"), std::string::npos) << err;
}

TEST_F(MoveKvTest, AnSsdTierWithoutTheSpaceIsRefusedAndTheStoreIsUnchanged) {
  const StoreModel before = populate(20);
  const DeviceLabel l0 = ssd_label(path());
  MoveKvOptions o;
  o.kvfs_size = 1ull << 30;  // more than the 256 MiB tier has
  std::string err;
  EXPECT_EQ(move(o, &err), -ENOSPC);
  EXPECT_NE(err.find("the move needs 1073741824 bytes free on the SSD tier, it has"), std::string::npos) << err;
  const DeviceLabel l1 = ssd_label(path());
  EXPECT_EQ(l1.generation, l0.generation);
  EXPECT_FALSE(l1.flags & kLabelKvOnDevice);
  EXPECT_TRUE(fs::exists(path() + "/db/CURRENT"));
  EXPECT_FALSE(expect_store(path(), config(), before));
}

// An SSD tier whose object data leaves less free than the kvfs needs.
TEST_F(MoveKvTest, AFullSsdTierIsRefusedAndTheStoreIsUnchanged) {
  make_coll(coll_);
  ASSERT_EQ(store_->umount(), 0);
  // Large objects on the SSD as well, so that they fill it.
  store_ = std::make_unique<HybridStore>(path(), with(config(), "hybridstore_placement_hdd_threshold", "1G"));
  std::string err;
  ASSERT_EQ(store_->mount(&err), 0) << err;
  StoreStats st;
  for (int i = 0; i < 64; ++i) {
    ASSERT_EQ(store_->statfs(&st), 0);
    if (st.tier[Tier::kSsd].free < (48ull << 20)) break;
    Transaction t;
    t.write(coll_, obj("big" + std::to_string(i)), 0, std::string(8 << 20, static_cast<char>('0' + i % 10)));
    apply(std::move(t));
    ASSERT_EQ(store_->flush(), 0);
  }
  ASSERT_LT(st.tier[Tier::kSsd].free, 48ull << 20) << "the test needs the objects on the ssd tier";
  const StoreModel before = model_of(*store_);
  ASSERT_EQ(store_->umount(), 0);
  store_.reset();
  const DeviceLabel l0 = ssd_label(path());
  EXPECT_EQ(move(MoveKvOptions(), &err), -ENOSPC);
  EXPECT_NE(err.find("bytes free on the SSD tier, it has"), std::string::npos) << err;
  EXPECT_EQ(ssd_label(path()).generation, l0.generation);
  EXPECT_TRUE(fs::exists(path() + "/db/CURRENT"));
  EXPECT_FALSE(expect_store(path(), config(), before));
}

TEST_F(MoveKvTest, AStoreAlreadyOnTheDeviceIsRefused) {
  const StoreModel before = populate(5);
  std::string err;
  ASSERT_EQ(move(MoveKvOptions(), &err), 0) << err;
  EXPECT_EQ(move(MoveKvOptions(), &err), -EEXIST);
  EXPECT_NE(err.find("already"), std::string::npos) << err;
  EXPECT_TRUE(expect_store(path(), config(), before));
  EXPECT_EQ(move(MoveKvOptions(), &err), -EEXIST);
}

// Raw NAND: the moved store's label records how the flash was made, and
// the store then mounts from the device with no NAND option given; a
// rollback leaves a directory store that mounts as before.
class MoveKvNandTest : public MoveKvTest {
 protected:
  Config config() override {
    return with(with(MoveKvTest::config(), "hybridstore_ssd_kind", "nand"), "hybridstore_nand_size", "256M");
  }
};

TEST_F(MoveKvNandTest, ARawNandStoreMovesAndMountsFromItsLabelAlone) {
  const StoreModel before = populate(30);
  std::string err;
  ASSERT_EQ(move(MoveKvOptions(), &err), 0) << err;
  const Config no_nand_options = MoveKvTest::config();
  {
    HybridStore s(path(), no_nand_options);
    ASSERT_EQ(s.move_kv_rollback(&err), 0) << err;
  }
  EXPECT_FALSE(expect_store(path(), config(), before));
  ASSERT_EQ(move(MoveKvOptions(), &err), 0) << err;
  EXPECT_TRUE(expect_store(path(), no_nand_options, before));
  // A configuration that contradicts the label is refused, not obeyed.
  HybridStore s(path(), with(no_nand_options, "hybridstore_nand_size", "512M"));
  EXPECT_EQ(s.mount(&err), -EINVAL);
  EXPECT_NE(err.find("hybridstore_nand_size"), std::string::npos) << err;
}

TEST_F(MoveKvTest, RollbackBringsTheDirectoryStoreBackAndTheMoveCanBeRepeated) {
  const StoreModel before = populate(25);
  std::string err;
  ASSERT_EQ(move(MoveKvOptions(), &err), 0) << err;
  {
    HybridStore s(path(), config());
    ASSERT_EQ(s.move_kv_rollback(&err), 0) << err;
    EXPECT_EQ(s.move_kv_rollback(&err), -EINVAL);  // nothing left to roll back
  }
  EXPECT_TRUE(fs::exists(path() + "/db/CURRENT"));
  EXPECT_FALSE(fs::exists(path() + "/db.format3-moved"));
  const DeviceLabel l = ssd_label(path());
  EXPECT_FALSE(l.flags & (kLabelKvOnDevice | kLabelKvMovedPending));
  EXPECT_FALSE(expect_store(path(), config(), before));
  // A read-only mount from the device does not end the move: rollback still
  // works after one.
  ASSERT_EQ(move(MoveKvOptions(), &err), 0) << err;
  {
    HybridStore s(path(), config());
    ASSERT_EQ(s.mount_read_only(&err), 0) << err;
    EXPECT_EQ(crashtest::diff_models(before, model_of(s)), "");
    ASSERT_EQ(s.umount(), 0);
    ASSERT_EQ(s.move_kv_rollback(&err), 0) << err;
  }
  EXPECT_FALSE(expect_store(path(), config(), before));
  ASSERT_EQ(move(MoveKvOptions(), &err), 0) << err;
  EXPECT_TRUE(expect_store(path(), config(), before));
}

TEST_F(MoveKvTest, ALeftoverDbIsRenamedAsideByTheDeviceMount) {
  const StoreModel before = populate(10);
  std::string err;
  MoveKvOptions o;
  // The commit happened, the renames did not (M9).
  o.after_step = [](int step) { return step < 8; };
  EXPECT_EQ(move(o, &err), -EINTR);
  EXPECT_TRUE(fs::exists(path() + "/db/CURRENT"));
  EXPECT_TRUE(ssd_label(path()).flags & kLabelKvOnDevice);
  EXPECT_TRUE(expect_store(path(), config(), before));
  EXPECT_FALSE(fs::exists(path() + "/db"));
  EXPECT_FALSE(fs::exists(path() + "/journal"));
  EXPECT_FALSE(fs::exists(path() + "/db.format3-moved"));
}

TEST_F(MoveKvTest, MoveOnMountMovesAndMountsFromTheDevice) {
  const StoreModel before = populate(15);
  const Config c = with(config(), "hybridstore_kv_move_on_mount", "true");
  EXPECT_TRUE(expect_store(path(), c, before));
  EXPECT_FALSE(fs::exists(path() + "/db"));
  EXPECT_FALSE(fs::exists(path() + "/db.format3-moved"));
  EXPECT_FALSE(ssd_label(path()).flags & kLabelKvMovedPending);
  // Set on a device store it does nothing.
  EXPECT_TRUE(expect_store(path(), c, before));
}

TEST_F(MoveKvTest, MoveOnMountThatCannotMoveMountsFromTheDirectory) {
  const StoreModel before = populate(5);
  // A floor for RocksDB that leaves the tier no room for it: refused.
  const Config c = with(config(), "hybridstore_kv_move_on_mount", "true");
  const Config big = with(c, "hybridstore_kvfs_reserve", "250M");
  EXPECT_FALSE(expect_store(path(), big, before));
  EXPECT_TRUE(fs::exists(path() + "/db/CURRENT"));
}

namespace {

// Power cuts during the move (docs/kvfs.md 8.5). A template store is made
// once; each case copies it, runs the move with a cut armed, then mounts
// without faults: before the commit the store must be the template's from
// its directory, after it the same from the device, with fsck --deep clean.
// Where it is still a directory store, the move is run again and must work.
class MoveKvPowerCutTest : public MoveKvTest {
 protected:
  TempDir::Backing backing() override { return TempDir::Backing::kMemory; }
  void SetUp() override {
    MoveKvTest::SetUp();
    before_ = populate(40);
    template_ = dir_->path() + "/template";
    copy_store(path(), template_);
  }
  static void copy_store(const std::string& from, const std::string& to) {
    const std::string cmd = fmt::format("rm -rf '{}' && cp -a --sparse=always '{}' '{}'", to, from, to);
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  // After a cut: the store mounts and holds the template's content.
  void check_after_cut(const std::string& what, bool rerun) {
    SCOPED_TRACE(what);
    const bool committed = ssd_label(path()).flags & kLabelKvOnDevice;
    EXPECT_EQ(expect_store(path(), config(), before_), committed);
    if (committed) {
      EXPECT_FALSE(fs::exists(path() + "/db"));
      EXPECT_FALSE(fs::exists(path() + "/db.format3-moved"));
      ++device_;
    } else {
      ++directory_;
      if (rerun) {
        std::string err;
        ASSERT_EQ(move(move_opts_, &err), 0) << err;
        EXPECT_TRUE(expect_store(path(), config(), before_));
      }
    }
  }
  // Cuts at the move's device writes from M2 on (all of them, or a sample
  // drawn from `seed` when there are many).
  void cut_at_every_write(uint64_t seed);

  StoreModel before_;
  std::string template_;
  MoveKvOptions move_opts_;
  int device_ = 0, directory_ = 0;
};

// The same on format-3 fixture (b) of docs/kvfs.md 8.5: its last
// transaction is only in its journal, so the move's own mount replays it
// before the copy. Its 64 MiB SSD takes a small kvfs (format_compat_test).
class MoveKvFixturePowerCutTest : public MoveKvPowerCutTest {
 protected:
  Config config() override {
    // Directory, as the base class says: SetUp's mkfs (whose store the
    // fixture then replaces) would otherwise lend a kvfs of the default
    // 8 GiB SSD.
    Config c = with(Config(), "hybridstore_kv_location", "directory");
    c = with(c, "hybridstore_commit_journal_size", "4M");
    c = with(c, "hybridstore_kvfs_log_segment", "1M");
    return with(c, "hybridstore_kvfs_reserve", "4M");
  }
  void SetUp() override {
    MoveKvTest::SetUp();
    store_->umount();
    store_.reset();
    const std::string unpacked = dir_->path() + "/fixture";
    fs::create_directories(unpacked);
    const std::string cmd = fmt::format("tar -C '{}' -xzf '{}/format3-20261129/store-powercut.tar.gz'", unpacked,
                                        HS_TEST_DATA_DIR);
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    template_ = unpacked + "/store";
    // The content, read from a copy: the template stays format 3 with the
    // transaction only in its journal.
    copy_store(template_, path());
    {
      HybridStore s(path(), config());
      std::string err;
      ASSERT_EQ(s.mount_read_only(&err), 0) << err;
      before_ = model_of(s);
      ASSERT_EQ(s.umount(), 0);
    }
    EXPECT_EQ(before_.object_count(), 4u);
    move_opts_.kvfs_size = 40ull << 20;
  }
};

}  // namespace

void MoveKvPowerCutTest::cut_at_every_write(uint64_t seed) {
  // How long the move is on the power-cut clock: one move without a cut.
  // The clock runs from M2 (the injector the move makes for its devices).
  uint64_t clock = 0;
  const Config faulty = with(config(), "hybridstore_debug_fault_injection", "true");
  {
    copy_store(template_, path());
    std::string err;
    MoveKvOptions o = move_opts_;
    uint64_t at2 = 0;
    o.after_step = [&](int step) {
      if (step == 2) at2 = fault_injector_for(path())->counters().clock;
      if (step == 9) clock = fault_injector_for(path())->counters().clock - at2;
      return true;
    };
    ASSERT_EQ(move(o, &err, nullptr, &faulty), 0) << err;
    ASSERT_GT(clock, 4u);
    ASSERT_EQ(expect_store(path(), config(), before_), true);
  }
  std::mt19937_64 rng(seed);
  // Every write while the move is short enough for the time limit; past
  // that the last writes (the label pair among them) and a seeded sample.
  std::vector<uint64_t> cuts;
  if (clock <= 64) {
    for (uint64_t n = 1; n <= clock; ++n) cuts.push_back(n);
  } else {
    for (uint64_t n = clock; n + 6 > clock; --n) cuts.push_back(n);
    for (int i = 0; i < 48; ++i) cuts.push_back(1 + rng() % clock);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  printf("move-kv power cuts: seed %llu, %llu writes on the clock after M1, %zu cuts\n",
         static_cast<unsigned long long>(seed), static_cast<unsigned long long>(clock), cuts.size());
  int reached = 0;
  for (size_t i = 0; i < cuts.size(); ++i) {
    const uint64_t n = cuts[i];
    const bool tear = i % 2 == 1, keep_random = i % 3 == 0;
    const std::string what = fmt::format("cut at write {} of the move (tear {}, keep {})", n, tear,
                                         keep_random ? "random" : "none");
    SCOPED_TRACE(what);
    copy_store(template_, path());
    const Config c = with(faulty, "hybridstore_debug_fault_seed", std::to_string(seed + i));
    MoveKvOptions o = move_opts_;
    // Armed once M1's ordinary mount and umount are over: cuts in those are
    // the other power-cut tests' business.
    o.after_step = [&](int step) {
      if (step == 2) {
        auto inj = fault_injector_for(path());
        inj->keep_cached_writes_at_random(keep_random);
        inj->powercut_after_writes(n, tear);
      }
      return true;
    };
    std::string err;
    const int r = move(o, &err, nullptr, &c);
    const bool off = fault_injector_for(path())->power_is_off();
    if (off) ++reached;
    EXPECT_TRUE(off || r == 0) << err;
    check_after_cut(what, i % 8 == 0);
  }
  printf("move-kv power cuts: %d reached, %d left the directory store, %d the device store\n", reached,
         directory_, device_);
  EXPECT_GT(reached, static_cast<int>(cuts.size()) / 2);
  EXPECT_GT(directory_, 0);
  EXPECT_GT(device_, 0);
}

TEST_F(MoveKvPowerCutTest, ACutAtADeviceWriteOfTheMoveLeavesTheOldStoreOrTheMovedOne) {
  cut_at_every_write(20261129);
}

// M1 is an ordinary mount and umount with RocksDB's memtables flushed in
// between: cuts there, RocksDB's file appends and syncs through the fault
// model's file system included, leave the directory store as it was.
TEST_F(MoveKvPowerCutTest, ACutDuringTheMountAndFlushOfM1LeavesTheDirectoryStore) {
  uint64_t clock = 0;
  const Config faulty = with(config(), "hybridstore_debug_fault_injection", "true");
  {
    copy_store(template_, path());
    std::string err;
    MoveKvOptions o;
    o.after_step = [&](int step) {
      if (step == 1) clock = fault_injector_for(path())->counters().clock;
      return step < 1;
    };
    ASSERT_EQ(move(o, &err, nullptr, &faulty), -EINTR) << err;
    ASSERT_GT(clock, 2u);
  }
  const uint64_t seed = 20261131;
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> cuts;
  if (clock <= 32) {
    for (uint64_t n = 1; n <= clock; ++n) cuts.push_back(n);
  } else {
    for (int i = 0; i < 24; ++i) cuts.push_back(1 + rng() % clock);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  printf("move-kv M1 power cuts: seed %llu, %llu writes and appends on the clock in M1, %zu cuts\n",
         static_cast<unsigned long long>(seed), static_cast<unsigned long long>(clock), cuts.size());
  int reached = 0;
  for (size_t i = 0; i < cuts.size(); ++i) {
    const bool tear = i % 2 == 0, keep_random = i % 3 == 1;
    const std::string what = fmt::format("cut at I/O {} of M1 (tear {}, keep {})", cuts[i], tear,
                                         keep_random ? "random" : "none");
    SCOPED_TRACE(what);
    copy_store(template_, path());
    Config c = with(faulty, "hybridstore_debug_fault_seed", std::to_string(seed + i));
    c = with(c, "hybridstore_debug_powercut_after_writes", std::to_string(cuts[i]));
    c = with(c, "hybridstore_debug_powercut_tear", tear ? "true" : "false");
    if (keep_random) c = with(c, "hybridstore_debug_powercut_keep", "random");
    MoveKvOptions o;
    bool cut_in_m1 = false;
    o.after_step = [&](int step) {
      cut_in_m1 = fault_injector_for(path())->power_is_off();
      return step < 1;
    };
    std::string err;
    move(o, &err, nullptr, &c);
    if (cut_in_m1 || fault_injector_for(path())->power_is_off()) ++reached;
    check_after_cut(what, false);
  }
  printf("move-kv M1 power cuts: %d reached\n", reached);
  EXPECT_EQ(device_, 0);
  EXPECT_GT(reached, static_cast<int>(cuts.size()) / 2);
}

TEST_F(MoveKvPowerCutTest, ACutAtEachStepBoundaryLeavesTheOldStoreOrTheMovedOne) {
  for (int at = 1; at <= 9; ++at) {
    const std::string what = fmt::format("cut after step M{}", at);
    SCOPED_TRACE(what);
    copy_store(template_, path());
    MoveKvOptions o;
    o.after_step = [&](int step) {
      if (step != at) return true;
      fault_injector_for(path())->power_cut_now();
      return false;
    };
    std::string err;
    const Config faulty = with(config(), "hybridstore_debug_fault_injection", "true");
    EXPECT_EQ(move(o, &err, nullptr, &faulty), -EINTR) << err;
    check_after_cut(what, true);
  }
  EXPECT_EQ(directory_, 7);  // M1..M7
  EXPECT_EQ(device_, 2);     // M8, M9
}

TEST_F(MoveKvFixturePowerCutTest, ACutAtADeviceWriteOfTheMoveOfTheCutFormat3FixtureLeavesItOrTheMovedOne) {
  cut_at_every_write(20261130);
}
