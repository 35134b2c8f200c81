// A store whose RocksDB and commit journal live in the KV file system on its
// SSD tier (hybridstore_kv_location=device, docs/kvfs.md 5.1-5.5): what mkfs
// leaves in the directory, a directory that lost its files, the refusals,
// and RocksDB beside object data on one tier. The conformance suite and the
// power cuts run on such a store too (their ".kvdev" variants).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <fstream>
#include <set>
#include <thread>
#include <tuple>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "hscommon/encoding.h"
#include "hybridstore/format/store_format.h"
#include "hsio/block_device.h"
#include "hybridstore/space/tier_device.h"
#include "hybridstore/store/test_hooks.h"
#include "hybridstore/tier/migrator.h"
#include "store_helpers.h"

using namespace hybridstore;
using namespace hybridstore::test;

namespace fs = std::filesystem;

namespace {

Config device_config(uint64_t ssd_size = 256ull << 20) {
  Config c = small_store_config(ssd_size);
  std::string err;
  EXPECT_EQ(c.set("hybridstore_kv_location", "device", &err), 0) << err;
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

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

class KvOnDeviceTest : public StoreTest {
 protected:
  Config config() override { return device_config(); }
  std::string store_path() const { return dir_->path() + "/store"; }

  void write_objects(int n, const std::string& tag) {
    for (int i = 0; i < n; ++i) {
      Transaction t;
      const ObjectId o = obj(tag + std::to_string(i));
      t.write(coll_, o, 0, std::string(4096 * (1 + i % 5), static_cast<char>('a' + i % 26)));
      t.setattr(coll_, o, "attr", tag);
      t.omap_setkeys(coll_, o, {{"key-" + std::to_string(i), std::string(100, 'v')}});
      apply(std::move(t));
    }
  }
  void expect_objects(int n, const std::string& tag) {
    for (int i = 0; i < n; ++i)
      ASSERT_EQ(read_all(coll_, obj(tag + std::to_string(i))),
                std::string(4096 * (1 + i % 5), static_cast<char>('a' + i % 26)))
          << tag << i;
  }
};

}  // namespace

TEST_F(KvOnDeviceTest, TheDirectoryHoldsOnlyLinksAndMetaFiles) {
  make_coll(coll_);
  write_objects(50, "o");
  ASSERT_EQ(store_->umount(), 0);
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(store_path())) names.insert(e.path().filename().string());
  EXPECT_EQ(names, (std::set<std::string>{"block.hdd", "block.ssd", "fsid", "type"}));
  const DeviceLabel l = ssd_label(store_path());
  EXPECT_TRUE(l.flags & kLabelKvOnDevice);
  EXPECT_TRUE(l.flags & kLabelMkfsDone);
  EXPECT_NE(l.kvfs_uuid, Uuid{});
  EXPECT_EQ(uuid_to_string(l.fsid), read_line(store_path() + "/fsid"));

  StoreProbe p;
  std::string err;
  ASSERT_EQ(HybridStore::probe(store_path(), config(), &p, &err), 0) << err;
  EXPECT_TRUE(p.exists);
  EXPECT_FALSE(p.in_use);
  EXPECT_EQ(p.fsid, uuid_to_string(l.fsid));
  EXPECT_EQ(p.tiers, 2);
  EXPECT_EQ(p.format_version, kFormatVersion);

  store_ = std::make_unique<HybridStore>(store_path(), config());
  ASSERT_EQ(store_->mount(&err), 0) << err;
  ASSERT_EQ(HybridStore::probe(store_path(), config(), &p, &err), 0) << err;
  EXPECT_TRUE(p.in_use);
  expect_objects(50, "o");
  EXPECT_EQ(fsck_errors(true), 0);
}

TEST_F(KvOnDeviceTest, ADirectoryThatLostItsFilesMountsFromTheSsdLabel) {
  make_coll(coll_);
  write_objects(40, "p");
  ASSERT_EQ(store_->umount(), 0);
  const std::string fsid = read_line(store_path() + "/fsid");
  fs::remove(store_path() + "/fsid");
  fs::remove(store_path() + "/type");
  store_ = std::make_unique<HybridStore>(store_path(), config());
  std::string err;
  ASSERT_EQ(store_->mount(&err), 0) << err;
  expect_objects(40, "p");
  EXPECT_EQ(read_line(store_path() + "/fsid"), fsid);
  EXPECT_EQ(read_line(store_path() + "/type"), "hybridstore");
  EXPECT_EQ(fsck_errors(true), 0);
}

TEST_F(KvOnDeviceTest, AFsidFileOfAnotherStoreIsRefused) {
  ASSERT_EQ(store_->umount(), 0);
  {
    std::ofstream f(store_path() + "/fsid", std::ios::trunc);
    f << "00000000-0000-0000-0000-000000000001\n";
  }
  store_ = std::make_unique<HybridStore>(store_path(), config());
  std::string err;
  EXPECT_EQ(store_->mount(&err), -EINVAL);
  EXPECT_NE(err.find("carries store"), std::string::npos) << err;
  store_.reset();
}

TEST_F(KvOnDeviceTest, MkfsAgainLeavesTheStoreAndRefusesAnotherFsid) {
  make_coll(coll_);
  write_objects(10, "q");
  ASSERT_EQ(store_->umount(), 0);
  const std::string fsid = read_line(store_path() + "/fsid");
  std::string err;
  {
    HybridStore again(store_path(), config());
    ASSERT_EQ(again.mkfs(&err), 0) << err;
    HybridStore other(store_path(), config());
    ASSERT_EQ(other.set_fsid("11111111-2222-3333-4444-555555555555"), 0);
    EXPECT_EQ(other.mkfs(&err), -EEXIST);
    EXPECT_NE(err.find(fsid), std::string::npos) << err;
  }
  store_ = std::make_unique<HybridStore>(store_path(), config());
  ASSERT_EQ(store_->mount(&err), 0) << err;
  expect_objects(10, "q");
}

TEST_F(KvOnDeviceTest, RocksDBTakesItsShareOfTheSsdTierAndObjectsTheRest) {
  StoreStats st;
  ASSERT_EQ(store_->statfs(&st), 0);
  const TierStats& ssd = st.tier[Tier::kSsd];
  // 256 MiB: the kvfs's 64 MiB and the 8 MiB floor kept for its growth are
  // not free for objects.
  EXPECT_LE(ssd.free + (64ull << 20) + (8ull << 20), ssd.total);
  EXPECT_GT(ssd.free, ssd.total / 2);
  // Fill what objects may take: the writes spill to the HDD instead of
  // eating the floor.
  make_coll(coll_);
  for (int i = 0; i < 60; ++i) {
    Transaction t;
    t.write(coll_, obj("big" + std::to_string(i)), 0, std::string(4 << 20, static_cast<char>('A' + i % 26)));
    apply(std::move(t));
  }
  ASSERT_EQ(store_->statfs(&st), 0);
  EXPECT_GT(st.tier[Tier::kHdd].allocated, 0u) << "objects past the ssd's share went to the hdd";
  // RocksDB can still grow: a burst of omap keeps committing.
  for (int i = 0; i < 200; ++i) {
    Transaction t;
    std::map<std::string, std::string> kv;
    for (int k = 0; k < 20; ++k) kv["k" + std::to_string(i * 20 + k)] = std::string(400, 'x');
    t.omap_setkeys(coll_, obj("big0"), kv);
    apply(std::move(t));
  }
  remount();
  EXPECT_EQ(read_all(coll_, obj("big59")), std::string(4 << 20, static_cast<char>('A' + 59 % 26)));
  EXPECT_EQ(fsck_errors(true), 0);
}

// The migrator's budget is a share of the room objects may have: the space
// lent to the kvfs and the floor kept for its growth are not in it. Planned
// over the tier's whole total, a device store kept its SSD full and its
// cleaner at work under clients (benchmarks.md, the 70/30 mix).
TEST_F(KvOnDeviceTest, TheMigratorPlansOnlyTheSsdRoomObjectsMayHave) {
  StoreStats st;
  ASSERT_EQ(store_->statfs(&st), 0);
  const TierStats& ssd = st.tier[Tier::kSsd];
  ASSERT_GT(st.kvfs_owned, 0u);
  MigrationReport rep;
  ASSERT_EQ(store_->migrate_now(&rep), 0);
  const double ratio = config().get_double("hybridstore_tier_ssd_target_ratio");
  const auto share = [&](uint64_t bytes) { return static_cast<uint64_t>(ratio * static_cast<double>(bytes)); };
  EXPECT_LE(rep.ssd_budget, share(ssd.total - st.kvfs_owned));
  // No more than the floor (8 MiB here) and a unit's rounding below that.
  EXPECT_GE(rep.ssd_budget + ssd.unit, share(ssd.total - st.kvfs_owned - (8ull << 20)));
}

TEST(KvOnDevice, ATierTooSmallForRocksDBIsRefusedWithTheReason) {
  TempDir dir("kvdev-small");
  HybridStore s(dir.file("store"), device_config(64ull << 20));
  std::string err;
  EXPECT_EQ(s.mkfs(&err), -EINVAL);
  EXPECT_NE(err.find("too small to hold RocksDB"), std::string::npos) << err;
}

// Raw NAND with RocksDB inside it: the options that shaped the flash are
// in the SSD label, because mount needs the device before the superblock.
// A page size other than the default shows the label, not the defaults,
// is what mount goes by.
Config nand_device_config() {
  Config c = device_config();
  std::string err;
  EXPECT_EQ(c.set("hybridstore_ssd_kind", "nand", &err), 0) << err;
  EXPECT_EQ(c.set("hybridstore_nand_size", "256M", &err), 0) << err;
  EXPECT_EQ(c.set("hybridstore_nand_page_size", "4K", &err), 0) << err;
  return c;
}

// The SSD of an unmounted store, opened as what it is (NAND behind the FTL).
std::unique_ptr<BlockDevice> open_ssd_by_kind(const std::string& store, std::string* why) {
  DeviceOpenOptions o;
  o.direct_io = false;
  return open_detected_device(Config(), store + "/block.ssd", o, nullptr, why);
}

// What the NAND device's label holds, read with the store unmounted.
DeviceLabel nand_ssd_label(const std::string& store, uint64_t* erase_block = nullptr) {
  std::string why;
  std::unique_ptr<BlockDevice> dev = open_ssd_by_kind(store, &why);
  EXPECT_TRUE(dev) << why;
  DeviceLabel l;
  LabelPairStatus st;
  if (dev) {
    EXPECT_EQ(read_labels(dev.get(), &l, &st, &why), 0) << why;
  }
  if (erase_block) *erase_block = erase_block_bytes(dev.get());
  return l;
}

void rewrite_nand_label(const std::string& store, const std::function<void(DeviceLabel*)>& change) {
  std::string why;
  std::unique_ptr<BlockDevice> dev = open_ssd_by_kind(store, &why);
  ASSERT_TRUE(dev) << why;
  DeviceLabel l;
  ASSERT_EQ(read_label(dev.get(), &l, &why), 0) << why;
  change(&l);
  ASSERT_EQ(write_label_pair(dev.get(), &l, &why), 0) << why;
}

class KvOnNandTest : public KvOnDeviceTest {
 protected:
  Config config() override { return nand_device_config(); }
};

TEST_F(KvOnNandTest, RemountReadsTheGeometryFromTheLabelAlone) {
  make_coll(coll_);
  write_objects(40, "n");
  store_->umount();
  store_.reset();
  EXPECT_FALSE(fs::exists(store_path() + "/db"));
  uint64_t erase_block = 0;
  const DeviceLabel l = nand_ssd_label(store_path(), &erase_block);
  EXPECT_EQ(l.device_kind, DeviceKind::kNand);
  EXPECT_TRUE(l.flags & kLabelKvOnDevice);
  EXPECT_EQ(l.meta.at("mkfs.hybridstore_ssd_kind"), "nand");
  EXPECT_EQ(l.meta.at("mkfs.hybridstore_nand_page_size"), "4096");
  EXPECT_EQ(l.meta.at("mkfs.hybridstore_nand_size"), std::to_string(256ull << 20));
  ASSERT_GT(erase_block, 0u);

  // No NAND option at all: the device says what it is.
  store_ = std::make_unique<HybridStore>(store_path(), device_config());
  std::string err;
  ASSERT_EQ(store_->mount(&err), 0) << err;
  expect_objects(40, "n");
  StoreStats st;
  ASSERT_EQ(store_->statfs(&st), 0);
  EXPECT_TRUE(st.kv_on_device);
  EXPECT_NE(st.tier[Tier::kSsd].backend.find("nand"), std::string::npos) << st.tier[Tier::kSsd].backend;
  write_objects(10, "m");
  EXPECT_EQ(fsck_errors(true), 0);
  store_->umount();
  store_.reset();

  // The kvfs commands read the same device; the ring starts on an erase
  // block, so the checkpoint's discards are whole erase blocks.
  KvFsView view;
  ASSERT_EQ(HybridStore::kvfs_inspect(store_path(), device_config(), KvFsInspectRequest(), &view, nullptr, &err), 0)
      << err;
  EXPECT_FALSE(view.files.empty());
  ASSERT_EQ(view.journal.size(), 1u);
  EXPECT_EQ(view.journal[0].first % erase_block, 0u) << view.journal[0].first << " " << erase_block;

  store_ = std::make_unique<HybridStore>(store_path(), config());
  ASSERT_EQ(store_->mount(&err), 0) << err;
  expect_objects(40, "n");
  expect_objects(10, "m");
}

TEST_F(KvOnNandTest, AConfigurationThatContradictsTheLabelIsRefusedNamingBoth) {
  store_->umount();
  store_.reset();
  for (const auto& [name, value, as_text, in_label] :
       std::vector<std::tuple<std::string, std::string, std::string, std::string>>{
           {"hybridstore_nand_page_size", "2K", "2048", "4096"},
           {"hybridstore_nand_size", "512M", std::to_string(512ull << 20), std::to_string(256ull << 20)},
           {"hybridstore_ftl_policy", "ubi", "ubi", "hubi"},
           {"hybridstore_ssd_kind", "file", "file", "nand"}}) {
    Config c = device_config();
    std::string err;
    ASSERT_EQ(c.set(name, value, &err), 0) << err;
    HybridStore s(store_path(), c);
    EXPECT_EQ(s.mount(&err), -EINVAL) << name;
    for (const std::string& part : {name, as_text, in_label, std::string("label")})
      EXPECT_NE(err.find(part), std::string::npos) << part << " not in: " << err;
    KvFsView view;
    EXPECT_EQ(HybridStore::kvfs_inspect(store_path(), c, KvFsInspectRequest(), &view, nullptr, &err), -EINVAL)
        << name;
  }
  // The same values as the label's are no contradiction.
  store_ = std::make_unique<HybridStore>(store_path(), config());
  std::string err;
  ASSERT_EQ(store_->mount(&err), 0) << err;
}

TEST_F(KvOnNandTest, ALabelWithoutItsNandOptionsOrWithGarbageInThemIsAnError) {
  store_->umount();
  store_.reset();
  rewrite_nand_label(store_path(), [](DeviceLabel* l) { l->meta["mkfs.hybridstore_nand_page_size"] = "banana"; });
  std::string err;
  {
    HybridStore s(store_path(), device_config());
    EXPECT_EQ(s.mount(&err), -EIO);
    EXPECT_NE(err.find("banana"), std::string::npos) << err;
  }
  rewrite_nand_label(store_path(), [](DeviceLabel* l) { l->meta.erase("mkfs.hybridstore_nand_page_size"); });
  {
    HybridStore s(store_path(), device_config());
    EXPECT_EQ(s.mount(&err), -EIO);
    EXPECT_NE(err.find("does not record hybridstore_nand_page_size"), std::string::npos) << err;
  }
  // The keys are the store's: the label commands may not change them.
  rewrite_nand_label(store_path(), [](DeviceLabel* l) { l->meta["mkfs.hybridstore_nand_page_size"] = "4096"; });
  {
    HybridStore s(store_path(), device_config());
    const std::string v = "8192";
    EXPECT_EQ(s.set_meta("mkfs.hybridstore_nand_page_size", v, &err), -EINVAL);
    EXPECT_NE(err.find("reserved"), std::string::npos) << err;
    ASSERT_EQ(s.mount(&err), 0) << err;
    EXPECT_EQ(s.umount(), 0);
  }
}

TEST(KvOnDevice, ADirectoryStoreIsUnchanged) {
  TempDir dir("kvdev-dir");
  HybridStore s(dir.file("store"), small_store_config());
  std::string err;
  ASSERT_EQ(s.mkfs(&err), 0) << err;
  EXPECT_TRUE(fs::exists(dir.file("store/db/CURRENT")));
  const DeviceLabel l = ssd_label(dir.file("store"));
  EXPECT_FALSE(l.flags & kLabelKvOnDevice);
  ASSERT_EQ(s.mount(&err), 0) << err;
  EXPECT_EQ(s.umount(), 0);
}

// hybridstore_block_preallocate=auto writes out the SSD file that will hold
// the kvfs (its journal ring's DSYNC writes would otherwise wait behind
// writes filling holes elsewhere in the file) and leaves every other file
// mkfs creates sparse; a layout asked for by name is kept.
TEST(KvOnDevice, MkfsWritesOutTheFileThatHoldsTheKvfsAndNoOther) {
  TempDir dir("kvdev-layout");
  auto allocated = [](const std::string& path) {
    struct stat st;
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    return static_cast<uint64_t>(st.st_blocks) * 512;
  };
  struct Case {
    const char* name;
    bool device;
    const char* layout;
    bool ssd_written;
  };
  for (const Case& c : {Case{"device-auto", true, nullptr, true}, Case{"directory-auto", false, nullptr, false},
                        Case{"device-none", true, "none", false}, Case{"directory-zero", false, "zero", true}}) {
    SCOPED_TRACE(c.name);
    Config cfg = c.device ? device_config() : small_store_config();
    std::string err;
    if (c.layout) {
      ASSERT_EQ(cfg.set("hybridstore_block_preallocate", c.layout, &err), 0) << err;
    }
    const std::string store = dir.file(c.name);
    HybridStore s(store, cfg);
    ASSERT_EQ(s.mkfs(&err), 0) << err;
    const uint64_t ssd = cfg.get_size("hybridstore_ssd_size"), hdd = cfg.get_size("hybridstore_hdd_size");
    if (c.ssd_written) {
      EXPECT_GE(allocated(store + "/block.ssd"), ssd);
    } else {
      EXPECT_LT(allocated(store + "/block.ssd"), ssd / 2);
    }
    // zero asked for by name lays out every file; auto never the HDD's.
    if (c.layout && std::string(c.layout) == "zero") {
      EXPECT_GE(allocated(store + "/block.hdd"), hdd);
    } else {
      EXPECT_LT(allocated(store + "/block.hdd"), hdd / 2);
    }
  }
  Config bad = small_store_config();
  std::string err;
  EXPECT_NE(bad.set("hybridstore_block_preallocate", "zeros", &err), 0);
}

// Before mkfs, probe answers for where mkfs would put RocksDB (the Ceph
// adapter's is_db_rotational): by default, as when asked for, the SSD's
// media; in the directory, that of the filesystem holding it. After mkfs,
// where the store has it.
TEST(KvOnDevice, ProbeBeforeMkfsAnswersForTheDeviceByDefault) {
  TempDir dir("kvdev-probe");
  std::string err;
  // Config(): the product's defaults, not the test runs' pin (test_main.cc).
  ASSERT_EQ(Config().get_str("hybridstore_kv_location"), "device");
  for (const Config& c : {Config(), device_config()}) {
    StoreProbe p;
    EXPECT_EQ(HybridStore::probe(dir.file("store"), c, &p, &err), -ENOENT);
    EXPECT_FALSE(p.exists);
    // No file yet: the SSD is taken for the role it plays, not for the
    // disk of the directory (rotational on CI's virtual disks).
    EXPECT_FALSE(p.tier[Tier::kSsd].rotational);
    EXPECT_FALSE(p.kv_rotational);
  }
  // Made: the store's own place, whatever the configuration says.
  HybridStore s(dir.file("store"), device_config());
  ASSERT_EQ(s.mkfs(&err), 0) << err;
  StoreProbe made;
  ASSERT_EQ(HybridStore::probe(dir.file("store"), small_store_config(), &made, &err), 0) << err;
  EXPECT_EQ(made.kv_rotational, made.tier[Tier::kSsd].rotational);
}

// The devices outside the directory, as a real OSD's are: the directory can
// go and be made again from them (docs/kvfs.md 5.5).
class KvOnDevicePrimeTest : public KvOnDeviceTest {
 protected:
  Config config() override {
    Config c = device_config();
    std::string err;
    EXPECT_EQ(c.set("hybridstore_ssd_path", dir_->file("ssd.img"), &err), 0) << err;
    EXPECT_EQ(c.set("hybridstore_hdd_path", dir_->file("hdd.img"), &err), 0) << err;
    return c;
  }
  // What a mount of a primed directory knows: the links, nothing else.
  Config mount_config() { return device_config(); }
  int prime(const std::string& dir, std::vector<std::string> devs, bool ssd_only = false,
            std::string* err = nullptr) {
    PrimeRequest req;
    req.dir = dir;
    req.devices = std::move(devs);
    req.ssd_only = ssd_only;
    std::vector<std::string> done;
    std::string e;
    int r = HybridStore::prime_dir(req, &done, err ? err : &e);
    return r;
  }
};

TEST_F(KvOnDevicePrimeTest, AnEmptyDirectoryPrimedFromTheDevicesMountsWithEveryObject) {
  make_coll(coll_);
  write_objects(30, "r");
  ASSERT_EQ(store_->umount(), 0);
  store_.reset();
  fs::remove_all(store_path());
  const std::string primed = dir_->file("primed");
  std::string err;
  // The HDD is found through the path the SSD label remembers.
  ASSERT_EQ(prime(primed, {dir_->file("ssd.img")}, false, &err), 0) << err;
  EXPECT_EQ(fs::read_symlink(primed + "/block.hdd"), dir_->file("hdd.img"));
  EXPECT_EQ(read_line(primed + "/type"), "hybridstore");
  store_ = std::make_unique<HybridStore>(primed, mount_config());
  ASSERT_EQ(store_->mount(&err), 0) << err;
  expect_objects(30, "r");
  EXPECT_EQ(fsck_errors(true), 0);
  // Primed again while mounted: refused, the SSD is in use.
  EXPECT_EQ(prime(primed, {dir_->file("ssd.img")}, false, &err), -EBUSY) << err;
  ASSERT_EQ(store_->umount(), 0);
  // And again once it is not: the same files.
  EXPECT_EQ(prime(primed, {dir_->file("ssd.img"), dir_->file("hdd.img")}, false, &err), 0) << err;
}

TEST_F(KvOnDevicePrimeTest, DevicesMovedElsewhereArePrimedFromWhereTheyAreNow) {
  make_coll(coll_);
  write_objects(10, "m");
  ASSERT_EQ(store_->umount(), 0);
  store_.reset();
  // Another host: the devices under other names, the hint stale.
  fs::create_directories(dir_->file("elsewhere"));
  fs::rename(dir_->file("ssd.img"), dir_->file("elsewhere/a"));
  fs::rename(dir_->file("hdd.img"), dir_->file("elsewhere/b"));
  const std::string primed = dir_->file("host2");
  std::string err;
  EXPECT_EQ(prime(primed, {dir_->file("elsewhere/a")}, false, &err), -ENOENT);
  EXPECT_NE(err.find("no device found for the hdd tier"), std::string::npos) << err;
  // Given in any order after the SSD.
  ASSERT_EQ(prime(primed, {dir_->file("elsewhere/a"), dir_->file("elsewhere/b")}, false, &err), 0) << err;
  store_ = std::make_unique<HybridStore>(primed, mount_config());
  ASSERT_EQ(store_->mount(&err), 0) << err;
  expect_objects(10, "m");
}

TEST_F(KvOnDevicePrimeTest, WhatCannotBePrimedIsRefusedAndNothingWritten) {
  ASSERT_EQ(store_->umount(), 0);
  store_.reset();
  std::string err;
  // The HDD given first.
  EXPECT_EQ(prime(dir_->file("x"), {dir_->file("hdd.img")}, false, &err), -EINVAL);
  EXPECT_NE(err.find("give the ssd's first"), std::string::npos) << err;
  // A directory of another store.
  fs::create_directories(dir_->file("other"));
  {
    std::ofstream f(dir_->file("other/fsid"));
    f << "00000000-0000-0000-0000-000000000002\n";
  }
  EXPECT_EQ(prime(dir_->file("other"), {dir_->file("ssd.img")}, false, &err), -EEXIST);
  EXPECT_FALSE(fs::exists(dir_->file("other/block.ssd")));
  // A directory store's devices: its RocksDB is in its directory.
  TempDir d2("kvdev-dirstore");
  Config c = small_store_config();
  ASSERT_EQ(c.set("hybridstore_ssd_path", d2.file("ssd.img"), &err), 0) << err;
  ASSERT_EQ(c.set("hybridstore_hdd_path", d2.file("hdd.img"), &err), 0) << err;
  HybridStore dir_store(d2.file("store"), c);
  ASSERT_EQ(dir_store.mkfs(&err), 0) << err;
  EXPECT_EQ(prime(d2.file("primed"), {d2.file("ssd.img")}, false, &err), -EINVAL);
  EXPECT_NE(err.find("keeps its RocksDB in its directory"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(d2.file("primed/fsid")));
  // A directory store's own directory is never primed over.
  EXPECT_EQ(prime(d2.file("store"), {dir_->file("ssd.img")}, false, &err), -EEXIST);
}

// A directory made again must not wipe the devices of the store it lost
// (docs/kvfs.md 5.1): mkfs refuses a device that carries a finished store
// unless told to overwrite it.
TEST(MkfsOverwrite, DevicesOfAFinishedStoreAreRefusedUnlessOverwriteIsSet) {
  TempDir dir("mkfs-overwrite");
  Config c = small_store_config();
  std::string err;
  ASSERT_EQ(c.set("hybridstore_ssd_path", dir.file("ssd.img"), &err), 0) << err;
  ASSERT_EQ(c.set("hybridstore_hdd_path", dir.file("hdd.img"), &err), 0) << err;
  Uuid first;
  {
    HybridStore a(dir.file("a"), c);
    ASSERT_EQ(a.mkfs(&err), 0) << err;
    first = ssd_label(dir.file("a")).fsid;
  }
  fs::remove_all(dir.file("a"));
  HybridStore b(dir.file("b"), c);
  EXPECT_EQ(b.mkfs(&err), -EEXIST);
  EXPECT_NE(err.find("carries store " + uuid_to_string(first)), std::string::npos) << err;
  EXPECT_NE(err.find("zap"), std::string::npos) << err;
  EXPECT_EQ(ssd_label(dir.file("b")).fsid, first) << "the refused mkfs wrote nothing";
  ASSERT_EQ(c.set("hybridstore_mkfs_overwrite", "true", &err), 0) << err;
  HybridStore b2(dir.file("b"), c);
  ASSERT_EQ(b2.mkfs(&err), 0) << err;
  EXPECT_NE(ssd_label(dir.file("b")).fsid, first);
  ASSERT_EQ(b2.mount(&err), 0) << err;
  EXPECT_EQ(b2.umount(), 0);
}

// A kvfs made small grows into the tier as RocksDB fills it, and what it
// took stays its own across a remount.
class KvOnDeviceGrowthTest : public KvOnDeviceTest {
 protected:
  Config config() override {
    Config c = device_config();
    std::string err;
    for (const auto& [k, v] : {std::pair<const char*, const char*>{"hybridstore_kvfs_initial_size", "40M"},
                               {"hybridstore_commit_journal_size", "4M"},
                               {"hybridstore_kvfs_log_segment", "1M"}})
      EXPECT_EQ(c.set(k, v, &err), 0) << err;
    return c;
  }
  // 48,000 omap keys of 1 KiB on one object, 100 a transaction: RocksDB
  // outgrows the kvfs's 40 MiB.
  void fill_omap(char fill) {
    const std::string value(1024, fill);
    for (int i = 0; i < 480; ++i) {
      Transaction t;
      std::map<std::string, std::string> kv;
      for (int k = 0; k < 100; ++k) kv[fmt::format("k{:06}", i * 100 + k)] = value;
      if (i == 0) t.touch(coll_, obj("omap-heavy"));
      t.omap_setkeys(coll_, obj("omap-heavy"), kv);
      apply(std::move(t));
    }
  }
  uint64_t counter(const std::string& name) {
    const int i = store_->perf().find(name);
    EXPECT_GE(i, 0) << name;
    return store_->perf().get(i);
  }
};

TEST_F(KvOnDeviceGrowthTest, RocksDBGrowsIntoTheTierAndKeepsWhatItTookAcrossARemount) {
  make_coll(coll_);
  fill_omap('w');
  StoreStats st;
  ASSERT_EQ(store_->statfs(&st), 0);
  EXPECT_GT(st.kvfs_owned, 40ull << 20);
  EXPECT_GT(counter("kvfs_grows"), 0u);
  EXPECT_EQ(counter("kvfs_grow_bytes"), st.kvfs_owned - (40ull << 20));
  EXPECT_EQ(counter("kvfs_nospace"), 0u);
  const uint64_t owned = st.kvfs_owned;
  remount();
  ASSERT_EQ(store_->statfs(&st), 0);
  EXPECT_GE(st.kvfs_owned, owned);
  std::map<std::string, std::string> got;
  ASSERT_EQ(store_->omap_get_values(coll_, obj("omap-heavy"), {"k000000", "k047999"}, &got), 0);
  EXPECT_EQ(got.size(), 2u);
  EXPECT_EQ(fsck_errors(true), 0);
}

// What RocksDB grew into and no longer uses goes back to the tier at the
// store's tick once its tables are compacted away (docs/kvfs.md 2.5): the
// kvfs keeps two grow steps free and the size mkfs lent, the tier's free
// space rises by what came back, the RETURN holds across a remount, and
// fsck is clean. With hybridstore_kvfs_give_back off it keeps all of it.
TEST_F(KvOnDeviceGrowthTest, WhatRocksDBNoLongerUsesGoesBackToTheTier) {
  make_coll(coll_);
  fill_omap('g');
  write_objects(8, "stays-");
  StoreStats grown;
  ASSERT_EQ(store_->statfs(&grown), 0);
  // Above what mkfs lent by at least the omap's 48 MB (the store's own
  // tick may already have given back a compaction's peak).
  ASSERT_GT(grown.kvfs_owned, 48ull << 20);
  // The store's own tick may have given back a compaction's peak already,
  // so only RETURNs after the removal show that the omap's space came back.
  const uint64_t returns_before = counter("kvfs_returns");
  Transaction rm;
  rm.remove(coll_, obj("omap-heavy"));
  apply(std::move(rm));
  ASSERT_EQ(store_->compact(), 0);
  // compact() waits for the removal's batch to reach RocksDB first, or
  // it would compact the omap back in. RocksDB
  // deletes the compacted tables in the background, and the store ticks on
  // its own too: tick until the omap's tables are gone (used down by half
  // the omap's 48 MB; RocksDB here does not compress), a RETURN has
  // followed, and no more than four steps (4 MiB each on this 256 MiB SSD)
  // are free or the kvfs is back at what mkfs lent (then more may stay
  // free). The wait ends as soon as that holds; its 20 s bound is for a
  // loaded machine.
  const auto settled = [](const StoreStats& st) {
    return st.kvfs_owned - st.kvfs_used <= (16ull << 20) || st.kvfs_owned <= (40ull << 20);
  };
  const auto tables_gone = [&grown](const StoreStats& st) { return st.kvfs_used + (24ull << 20) <= grown.kvfs_used; };
  StoreStats now;
  for (int i = 0; i < 400; ++i) {
    StoreTestHooks::tick(*store_);
    ASSERT_EQ(store_->statfs(&now), 0);
    if (tables_gone(now) && counter("kvfs_returns") > returns_before && settled(now)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(tables_gone(now)) << "the removed omap's tables are still counted: used " << now.kvfs_used
                                << " against " << grown.kvfs_used << " before the removal";
  const uint64_t returned = counter("kvfs_return_bytes");
  StoreStats back;
  ASSERT_EQ(store_->statfs(&back), 0);
  EXPECT_GT(counter("kvfs_returns"), returns_before);
  EXPECT_GE(returned, grown.kvfs_owned - back.kvfs_owned) << "owned " << grown.kvfs_owned << ", used " << back.kvfs_used;
  // Every byte the kvfs owns is what mkfs lent plus what it grew by, less
  // what it gave back.
  EXPECT_EQ(back.kvfs_owned, (40ull << 20) + counter("kvfs_grow_bytes") - counter("kvfs_return_bytes"));
  EXPECT_LT(back.kvfs_owned, grown.kvfs_owned);
  EXPECT_GE(back.kvfs_owned, 40ull << 20) << "never below what mkfs lent";
  EXPECT_TRUE(settled(back)) << "more than four steps (4 MiB each here) stay free above what mkfs lent: owned "
                             << back.kvfs_owned << ", used " << back.kvfs_used;
  EXPECT_GT(back.tier[Tier::kSsd].free, grown.tier[Tier::kSsd].free) << "the tier has it back";
  EXPECT_EQ(fsck_errors(true), 0);
  remount();
  StoreStats after;
  ASSERT_EQ(store_->statfs(&after), 0);
  EXPECT_LT(after.kvfs_owned, grown.kvfs_owned) << "the RETURNs hold across a remount";
  expect_objects(8, "stays-");
  EXPECT_EQ(fsck_errors(true), 0);
}

// RocksDB filling the whole SSD tier, floor included, turns the store
// read-only with RocksDB's NoSpace (docs/kvfs.md 2.5): nothing more is
// acknowledged, and what was stays. The next mount must still open RocksDB
// and replay the ring before the tier can lend again, out of what the kvfs
// kept free for it (its mount headroom), and read every acknowledged key.
TEST_F(KvOnDeviceGrowthTest, RocksDBThatFilledTheTierStillMountsAndReadsBack) {
  make_coll(coll_);
  // Object data up to what the tier gives it, and past it to the HDD.
  for (int i = 0; i < 60; ++i) {
    Transaction t;
    t.write(coll_, obj("big" + std::to_string(i)), 0, std::string(4 << 20, static_cast<char>('A' + i % 26)));
    apply(std::move(t));
  }
  // Then omap until RocksDB can take no more.
  int acked = 0, r = 0;
  TxnError e;
  for (int i = 0; i < 20000 && r == 0; ++i) {
    Transaction t;
    std::map<std::string, std::string> kv;
    for (int k = 0; k < 64; ++k) kv[fmt::format("k{:06}-{:02}", i, k)] = std::string(4000, static_cast<char>('a' + i % 26));
    if (i == 0) t.touch(coll_, obj("omap"));
    t.omap_setkeys(coll_, obj("omap"), kv);
    r = store_->apply_transaction(std::move(t), &e);  // durable when 0
    if (r == 0) acked = i + 1;
  }
  ASSERT_NE(r, 0) << "the tier never filled: raise the load";
  StoreStats st;
  ASSERT_EQ(store_->statfs(&st), 0);
  EXPECT_TRUE(st.read_only) << e.message;
  store_->umount();
  store_ = std::make_unique<HybridStore>(store_path(), config());
  std::string err;
  ASSERT_EQ(store_->mount(&err), 0) << err;
  std::map<std::string, std::string> got;
  ASSERT_EQ(store_->omap_get_values(coll_, obj("omap"), {fmt::format("k{:06}-63", acked - 1)}, &got), 0);
  EXPECT_EQ(got.size(), 1u) << "the last acknowledged transaction, of " << acked;
  EXPECT_EQ(read_all(coll_, obj("big59")), std::string(4 << 20, static_cast<char>('A' + 59 % 26)));
  // The tier is as full as before: RocksDB's next flush may fail the same
  // way and turn the store read-only again, which is the cure's business
  // (objects moved off the tier), not this test's.
  store_->umount();
  store_.reset();
}

// The kvfs's ring made again at another size by a mount after a crash
// (docs/small-writes.md 9, "Ring size"): the transactions only the old ring
// held come back, the new ring's space is the kvfs's (grown from the tier
// when it lacks it) and the old one's free again, and a ring the tier
// cannot give stays as it was, with the store mounted.
TEST_F(KvOnDeviceGrowthTest, TheRingMadeAgainAtAnotherSizeKeepsWhatOnlyTheOldOneHeld) {
  make_coll(coll_);
  write_objects(30, "a");
  auto crash_after = [&](const Config& cfg, const std::string& tag) {
    store_->umount();
    store_.reset();
    pid_t pid = fork();
    if (pid == 0) {
      HybridStore s(store_path(), cfg);
      std::string err;
      if (s.mount(&err) < 0) _exit(2);
      for (int i = 0; i < 20; ++i) {
        Transaction t;
        const ObjectId o = obj(tag + std::to_string(i));
        t.write(coll_, o, 0, std::string(4096 * (1 + i % 5), static_cast<char>('a' + i % 26)));
        if (s.apply_transaction(std::move(t)) < 0) _exit(3);
      }
      _exit(0);  // no umount: RocksDB's WAL buffer is lost, the ring holds them
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  };
  auto mount_with = [&](const Config& cfg) {
    store_ = std::make_unique<HybridStore>(store_path(), cfg);
    std::string err;
    ASSERT_EQ(store_->mount(&err), 0) << err;
  };
  auto stats = [&] {
    StoreStats st;
    EXPECT_EQ(store_->statfs(&st), 0);
    return st;
  };
  auto with_ring = [](Config c, const char* size) {
    std::string err;
    EXPECT_EQ(c.set("hybridstore_commit_journal_size", size, &err), 0) << err;
    return c;
  };
  const Config small = config();
  const Config big = with_ring(small, "64M");
  const uint64_t used_small = stats().kvfs_used;
  EXPECT_EQ(stats().commit_journal_bytes, 4ull << 20);
  crash_after(small, "b");
  if (HasFatalFailure()) return;
  mount_with(big);
  if (HasFatalFailure()) return;
  EXPECT_EQ(stats().commit_journal_bytes, 64ull << 20);
  EXPECT_GT(stats().kvfs_owned, 40ull << 20) << "the kvfs grew for it";
  expect_objects(30, "a");
  expect_objects(20, "b");
  EXPECT_EQ(fsck_errors(true), 0);
  crash_after(big, "c");
  if (HasFatalFailure()) return;
  mount_with(small);
  if (HasFatalFailure()) return;
  EXPECT_EQ(stats().commit_journal_bytes, 4ull << 20);
  EXPECT_LT(stats().kvfs_used, used_small + (16ull << 20)) << "the 64 MiB ring's space is free again";
  expect_objects(20, "b");
  expect_objects(20, "c");
  EXPECT_EQ(fsck_errors(true), 0);
  // More than the tier has: the mount goes on with the ring it had.
  crash_after(small, "d");
  if (HasFatalFailure()) return;
  mount_with(with_ring(small, "1G"));
  if (HasFatalFailure()) return;
  EXPECT_EQ(stats().commit_journal_bytes, 4ull << 20);
  expect_objects(20, "d");
  store_->umount();
  mount_with(small);
  if (HasFatalFailure()) return;
  expect_objects(20, "d");
  EXPECT_EQ(fsck_errors(true), 0);
}

class KvOnDeviceNoGiveBackTest : public KvOnDeviceGrowthTest {
 protected:
  Config config() override {
    Config c = KvOnDeviceGrowthTest::config();
    std::string err;
    EXPECT_EQ(c.set("hybridstore_kvfs_give_back", "false", &err), 0) << err;
    return c;
  }
};

TEST_F(KvOnDeviceNoGiveBackTest, TheKvfsKeepsWhatItGrewTo) {
  make_coll(coll_);
  fill_omap('n');
  StoreStats grown;
  ASSERT_EQ(store_->statfs(&grown), 0);
  Transaction rm;
  rm.remove(coll_, obj("omap-heavy"));
  apply(std::move(rm));
  ASSERT_EQ(store_->compact(), 0);
  StoreTestHooks::tick(*store_);
  StoreStats after;
  ASSERT_EQ(store_->statfs(&after), 0);
  EXPECT_EQ(counter("kvfs_returns"), 0u);
  EXPECT_GE(after.kvfs_owned, grown.kvfs_owned);
}

// The kvfs's own work as perf counters (docs/kvfs.md 5.4): RocksDB's file
// syncs, the log groups they write, and a log compaction once the log is
// long (a 1 MiB threshold here), added at the store's once-a-second tick.
class KvOnDeviceCountersTest : public KvOnDeviceGrowthTest {
 protected:
  Config config() override {
    Config c = KvOnDeviceGrowthTest::config();
    std::string err;
    EXPECT_EQ(c.set("hybridstore_kvfs_log_compact", "1M", &err), 0) << err;
    return c;
  }
};

TEST_F(KvOnDeviceCountersTest, SyncsLogFlushesAndCompactionsAreCounted) {
  make_coll(coll_);
  StoreTestHooks::tick(*store_);
  const uint64_t syncs0 = counter("kvfs_syncs"), flushes0 = counter("kvfs_log_flushes");
  for (int round = 0; round < 40 && counter("kvfs_compactions") == 0; ++round) {
    write_objects(20, "c" + std::to_string(round) + "-");
    ASSERT_EQ(store_->compact(), 0);
    StoreTestHooks::tick(*store_);
  }
  EXPECT_GT(counter("kvfs_syncs"), syncs0);
  EXPECT_GT(counter("kvfs_log_flushes"), flushes0);
  EXPECT_GT(counter("kvfs_compactions"), 0u);
  EXPECT_EQ(fsck_errors(), 0);
}
