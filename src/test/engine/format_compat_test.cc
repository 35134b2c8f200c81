// Stores that earlier versions of the engine wrote still open, read back
// what was written and pass a deep fsck. The fixtures under src/test/data
// (README.md there says which commit made each) are unpacked into a
// temporary directory, so a test never changes them.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

#include "hscommon/log.h"
#include "hsio/block_device.h"
#include "hsio/forwarding_device.h"
#include "hybridstore/store/storage_hooks.h"
#include "hybridstore/format/store_format.h"
#include "hybridstore/store/hybrid_store.h"
#include "hybridstore/txn_json/txn_json.h"
#include "store_helpers.h"

using namespace hybridstore;
using hybridstore::test::TempDir;

namespace {

// The generator's content patterns (make-format-stores.sh).
std::string pattern(size_t n, int mul, int add, int mod) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * mul + add) % mod);
  return s;
}

ObjectId oid(const std::string& name, const std::string& coll) {
  ObjectId o;
  std::string err;
  EXPECT_EQ(parse_object_id_arg(name, CollectionId(coll), &o, &err), 0) << err;
  return o;
}

std::string unpack(const std::string& fixture, const TempDir& dir) {
  std::string cmd = "tar -C '" + dir.path() + "' -xzf '" + std::string(HS_TEST_DATA_DIR) + "/" + fixture + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return dir.path() + "/store";
}

std::string read_all(HybridStore& s, const std::string& coll, const ObjectId& o) {
  ObjectStat st;
  EXPECT_EQ(s.stat(coll, o, &st), 0);
  std::string out;
  EXPECT_EQ(s.read(coll, o, 0, st.size, &out), static_cast<int>(st.size));
  return out;
}

// What make-format-stores.sh wrote, as the store shows it.
// Still a working store: a write lands and survives a remount (the store
// is mounted on entry and left unmounted).
void expect_write_survives_remount(HybridStore& store, const std::string& text) {
  Transaction t;
  t.write("1.0_head", oid("after", "1.0_head"), 0, text);
  TxnError terr;
  ASSERT_EQ(store.apply_transaction(std::move(t), &terr), 0) << terr.message;
  ASSERT_EQ(store.umount(), 0);
  std::string err;
  ASSERT_EQ(store.mount(&err), 0) << err;
  EXPECT_EQ(read_all(store, "1.0_head", oid("after", "1.0_head")), text);
  ASSERT_EQ(store.umount(), 0);
}

void expect_fixture_content(HybridStore& store) {
  std::vector<CollectionId> colls = store.list_collections();
  ASSERT_EQ(colls.size(), 2u);
  EXPECT_EQ(colls[0].name, "1.0_head");
  EXPECT_EQ(colls[1].name, "meta");

  const std::string small = pattern(12288, 13, 1, 253);
  std::string expect_small = small;
  expect_small.replace(4096, 11, "overwritten");
  EXPECT_EQ(read_all(store, "1.0_head", oid("small", "1.0_head")), expect_small);
  EXPECT_EQ(read_all(store, "1.0_head", oid("small-clone", "1.0_head")), small);
  EXPECT_EQ(read_all(store, "1.0_head", oid("big", "1.0_head")), pattern(3 << 20, 7, 3, 251).substr(0, 3000000));

  ObjectStat st;
  ASSERT_EQ(store.stat("1.0_head", oid("big", "1.0_head"), &st), 0);
  EXPECT_GT(st.bytes_on[tier_index(Tier::kHdd)], 0u);
  EXPECT_EQ(st.bytes_on[tier_index(Tier::kSsd)], 0u);
  ASSERT_EQ(store.stat("1.0_head", oid("small", "1.0_head"), &st), 0);
  EXPECT_GT(st.bytes_on[tier_index(Tier::kSsd)], 0u);

  std::map<std::string, std::string> attrs;
  ASSERT_EQ(store.getattrs("1.0_head", oid("small", "1.0_head"), &attrs), 0);
  EXPECT_EQ(attrs, (std::map<std::string, std::string>{{"_", "object-info"}, {"snapset", "ss"}}));
  std::string header;
  std::map<std::string, std::string> kv;
  ASSERT_EQ(store.omap_get("meta", oid("pgmeta", "meta"), &header, &kv), 0);
  EXPECT_EQ(header, "header");
  EXPECT_EQ(kv, (std::map<std::string, std::string>{{"k1", "v1"}, {"k2", "v2"}}));
}

struct Labels {
  DeviceLabel label;
  LabelPairStatus status;
};

// Both copies of a tier's label, read as show-label reads them.
Labels read_tier_labels(const std::string& store, Tier t) {
  DeviceOpenOptions o;
  o.direct_io = false;
  o.backend = IoBackend::kPosix;
  std::string err;
  auto dev = open_block_device(store + "/" + tier_device_link(t), o, &err);
  EXPECT_TRUE(dev) << err;
  Labels l;
  if (dev) {
    EXPECT_EQ(read_labels(dev.get(), &l.label, &l.status, &err), 0) << err;
  }
  return l;
}

// The first `n` bytes of a file, and putting them back.
std::string head_of(const std::string& path, size_t n) {
  std::ifstream f(path, std::ios::binary);
  std::string s(n, '\0');
  f.read(s.data(), static_cast<std::streamsize>(n));
  return s;
}
void put_head(const std::string& path, const std::string& bytes) {
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

uint32_t probed_format(const std::string& path) {
  StoreProbe probe;
  EXPECT_EQ(HybridStore::probe(path, Config(), &probe, nullptr), 0);
  return probe.format_version;
}

// What the labels of a store of format 4 or later say: pairs of record
// version 2, intact, mkfs done, and on the SSD the store's tiers, fastest
// first.
void expect_label_pairs(const std::string& path) {
  for (Tier t : {Tier::kSsd, Tier::kHdd}) {
    SCOPED_TRACE(tier_name(t));
    const Labels l = read_tier_labels(path, t);
    EXPECT_EQ(l.label.record_version, 2);
    EXPECT_EQ(l.label.format_version, kFormatVersion);
    EXPECT_TRUE(l.status.intact()) << l.status.problem();
    EXPECT_TRUE(l.label.flags & kLabelMkfsDone);
    EXPECT_FALSE(l.label.flags & kLabelKvOnDevice);
    EXPECT_EQ(l.label.slot, kLabelSize);
    EXPECT_GE(l.label.head, 2 * kLabelSize);
    EXPECT_EQ(l.label.role, t);
    if (t == Tier::kSsd) {
      ASSERT_EQ(l.label.tiers.size(), 2u);
      EXPECT_EQ(l.label.tiers[0].role, Tier::kSsd);
      EXPECT_EQ(l.label.tiers[1].role, Tier::kHdd);
      EXPECT_EQ(l.label.meta.count("path_block.hdd"), 1u);
    } else {
      EXPECT_TRUE(l.label.tiers.empty());
    }
  }
}

void expect_clean_fsck(HybridStore& store, uint64_t objects) {
  FsckReport report;
  EXPECT_EQ(store.fsck(/*deep=*/true, &report), 0);
  EXPECT_EQ(report.objects, objects);
  EXPECT_EQ(report.warnings, 0u);
  for (const auto& p : report.problems) ADD_FAILURE() << p;
}

// A fixture cut after its second transaction's journal record: the first
// mount replays it, a second one finds it in RocksDB, and fsck --deep is
// clean.
void expect_replayed_and_clean(const std::string& path) {
  HybridStore store(path);
  std::string err;
  for (int mount = 0; mount < 2; ++mount) {
    ASSERT_EQ(store.mount(&err), 0) << err;
    expect_fixture_content(store);
    ASSERT_EQ(store.umount(), 0);
  }
  FsckReport report;
  EXPECT_EQ(store.fsck(/*deep=*/true, &report), 0);
  EXPECT_EQ(report.objects, 4u);
  for (const auto& p : report.problems) ADD_FAILURE() << p;
}

}  // namespace

TEST(FormatCompat, AFormat1StoreOfMainOn20261128OpensReadsAndChecksClean) {
  TempDir dir("fmt1");
  const std::string path = unpack("format1-20261128/store.tar.gz", dir);
  HybridStore store(path);
  std::string err;
  ASSERT_EQ(store.mount(&err), 0) << err;
  // Mounting upgraded it to the current format: two tiers, SSD first.
  StoreStats ss;
  ASSERT_EQ(store.statfs(&ss), 0);
  EXPECT_EQ(ss.format_version, kFormatVersion);
  EXPECT_EQ(kFormatVersion, 6u);
  EXPECT_EQ(ss.tiers, 2);
  EXPECT_EQ(ss.order[0], Tier::kSsd);
  EXPECT_EQ(ss.order[1], Tier::kHdd);

  expect_fixture_content(store);

  expect_write_survives_remount(store, "written by today's engine");
  if (HasFatalFailure()) return;

  FsckReport report;
  EXPECT_EQ(store.fsck(/*deep=*/true, &report), 0);
  EXPECT_EQ(report.objects, 5u);
  for (const auto& p : report.problems) ADD_FAILURE() << p;
}

TEST(FormatCompat, AFormat3StoreOfMainOn20261129OpensReadsAndChecksClean) {
  TempDir dir("fmt3");
  const std::string path = unpack("format3-20261129/store.tar.gz", dir);
  StoreProbe probe;
  ASSERT_EQ(HybridStore::probe(path, Config(), &probe, nullptr), 0);
  EXPECT_EQ(probe.format_version, 3u);
  HybridStore store(path);
  std::string err;
  ASSERT_EQ(store.mount(&err), 0) << err;
  expect_fixture_content(store);
  ASSERT_EQ(store.umount(), 0);
  FsckReport report;
  EXPECT_EQ(store.fsck(/*deep=*/true, &report), 0);
  EXPECT_EQ(report.objects, 4u);
  for (const auto& p : report.problems) ADD_FAILURE() << p;
}

// The fixture's second transaction is only in its commit journal (the power
// failed before RocksDB synced it): today's engine must replay a journal that
// the format-3 engine wrote.
TEST(FormatCompat, AFormat3StoreCutAfterAJournalRecordReplaysItAtMount) {
  TempDir dir("fmt3-cut");
  expect_replayed_and_clean(unpack("format3-20261129/store-powercut.tar.gz", dir));
}

// The move of RocksDB and the journal onto the SSD (docs/kvfs.md 7.3, 8.5):
// a format-3 fixture is upgraded by the move's own mount, moved, read from
// the device (read-only, so that the move can still be undone), rolled
// back, read from its directory, moved again and mounted read-write.
void expect_moved_rolled_back_and_moved_again(const std::string& fixture, const char* tag) {
  TempDir dir(tag);
  const std::string path = unpack(fixture, dir);
  // The fixtures' SSD has 64 MiB, too little for the automatic sizes: a
  // smaller ring, log and floor, and 40 MiB for the kvfs.
  Config cfg;
  std::string err;
  for (const auto& [k, v] : {std::pair<std::string, std::string>{"hybridstore_commit_journal_size", "4M"},
                             {"hybridstore_kvfs_log_segment", "1M"},
                             {"hybridstore_kvfs_reserve", "4M"}})
    ASSERT_EQ(cfg.set(k, v, &err), 0) << err;
  HybridStore store(path, cfg);
  MoveKvOptions files;
  files.kvfs_size = 40ull << 20;
  ASSERT_EQ(store.move_kv_to_device(files, nullptr, &err), 0) << err;
  EXPECT_FALSE(std::filesystem::exists(path + "/db"));
  StoreStats st;
  ASSERT_EQ(store.mount_read_only(&err), 0) << err;
  expect_fixture_content(store);
  ASSERT_EQ(store.statfs(&st), 0);
  EXPECT_TRUE(st.kv_on_device);
  EXPECT_EQ(st.format_version, kFormatVersion);
  ASSERT_EQ(store.umount(), 0);

  ASSERT_EQ(store.move_kv_rollback(&err), 0) << err;
  ASSERT_EQ(store.mount(&err), 0) << err;
  expect_fixture_content(store);
  st = StoreStats();
  ASSERT_EQ(store.statfs(&st), 0);
  EXPECT_FALSE(st.kv_on_device);
  ASSERT_EQ(store.umount(), 0);

  MoveKvOptions keys = files;
  keys.verify = "keys";
  ASSERT_EQ(store.move_kv_to_device(keys, nullptr, &err), 0) << err;
  ASSERT_EQ(store.mount(&err), 0) << err;
  expect_fixture_content(store);
  ASSERT_EQ(store.statfs(&st), 0);
  EXPECT_TRUE(st.kv_on_device);
  ASSERT_EQ(store.umount(), 0);
  EXPECT_FALSE(std::filesystem::exists(path + "/db.format3-moved"));
  FsckReport report;
  EXPECT_EQ(store.fsck(/*deep=*/true, &report), 0);
  EXPECT_EQ(report.objects, 4u);
  for (const auto& p : report.problems) ADD_FAILURE() << p;
}

// A format-4 store whose RocksDB and commit journal live in the KV file
// system on its SSD: its directory holds only the devices, fsid and type.
TEST(FormatCompat, AFormat4DeviceStoreOfMainOn20261129OpensReadsAndChecksClean) {
  TempDir dir("fmt4dev");
  const std::string path = unpack("format4-device-20261129/store.tar.gz", dir);
  EXPECT_FALSE(std::filesystem::exists(path + "/db"));
  StoreProbe probe;
  ASSERT_EQ(HybridStore::probe(path, Config(), &probe, nullptr), 0);
  EXPECT_EQ(probe.format_version, 4u);
  HybridStore store(path);
  std::string err;
  ASSERT_EQ(store.mount(&err), 0) << err;
  expect_fixture_content(store);
  StoreStats st;
  ASSERT_EQ(store.statfs(&st), 0);
  EXPECT_TRUE(st.kv_on_device);
  // Upgraded at this first read-write mount: its ring read by the scan of
  // format 4 once, walked from then on.
  EXPECT_EQ(st.format_version, kFormatVersion);
  ASSERT_EQ(store.umount(), 0);
  EXPECT_EQ(probed_format(path), kFormatVersion);
  EXPECT_EQ(read_tier_labels(path, Tier::kSsd).label.format_version, kFormatVersion);
  FsckReport report;
  EXPECT_EQ(store.fsck(/*deep=*/true, &report), 0);
  EXPECT_EQ(report.objects, 4u);
  for (const auto& p : report.problems) ADD_FAILURE() << p;
}

// The upgrade to format 5 cut after the mount's replay wrote the ring's
// tail and before the superblock said 5 (a read-only mount stops there
// too): the store is still of format 4, its ring read by the scan again,
// and the next read-write mount upgrades it; the record the power cut left
// only in the ring survives every step.
TEST(FormatCompat, AFormat4StoreCutBeforeItsUpgradeTo5IsScannedAgainAndUpgraded) {
  TempDir dir("fmt4dev-cut-up");
  const std::string path = unpack("format4-device-20261129/store-powercut.tar.gz", dir);
  std::string err;
  {
    HybridStore store(path);
    ASSERT_EQ(store.mount_read_only(&err), 0) << err;
    expect_fixture_content(store);
    ASSERT_EQ(store.umount(), 0);
  }
  EXPECT_EQ(probed_format(path), 4u);
  {
    HybridStore store(path);
    ASSERT_EQ(store.mount(&err), 0) << err;
    expect_fixture_content(store);
    expect_write_survives_remount(store, "written after the upgrade to format 5");
    if (HasFatalFailure()) return;
  }
  EXPECT_EQ(probed_format(path), kFormatVersion);
  HybridStore store(path);
  ASSERT_EQ(store.mount(&err), 0) << err;
  expect_fixture_content(store);
  ASSERT_EQ(store.umount(), 0);
  expect_clean_fsck(store, 5);
}

// hybridstore_small_write_journal=on (docs/small-writes.md step 6): the
// format-4 device fixture, its last record only in the ring, goes up to 7 at
// its first read-write mount (through 5 and 6 in the same commit); what it
// held and what is written afterwards survive remounts with the option and
// with the default, which leaves the store at 7; fsck --deep is clean.
TEST(FormatCompat, AFormat4DeviceStoreMountedWithOnReaches7AndStaysThereUnderTheDefault) {
  TempDir dir("fmt4dev-on");
  const std::string path = unpack("format4-device-20261129/store-powercut.tar.gz", dir);
  Config on;
  std::string err;
  ASSERT_EQ(on.set("hybridstore_small_write_journal", "on", &err), 0) << err;
  {
    HybridStore store(path, on);
    ASSERT_EQ(store.mount(&err), 0) << err;
    expect_fixture_content(store);
    StoreStats st;
    ASSERT_EQ(store.statfs(&st), 0);
    EXPECT_EQ(st.format_version, kFormatOnodeVersions);
    expect_write_survives_remount(store, "written after the upgrade to format 7");
    if (HasFatalFailure()) return;
  }
  EXPECT_EQ(probed_format(path), kFormatOnodeVersions);
  EXPECT_EQ(read_tier_labels(path, Tier::kSsd).label.format_version, kFormatOnodeVersions);
  HybridStore store(path);
  ASSERT_EQ(store.mount(&err), 0) << err;
  expect_fixture_content(store);
  EXPECT_EQ(read_all(store, "1.0_head", oid("after", "1.0_head")), "written after the upgrade to format 7");
  ASSERT_EQ(store.umount(), 0);
  EXPECT_EQ(probed_format(path), kFormatOnodeVersions);
  expect_clean_fsck(store, 5);
}

// The upgrade to 7 with a ring of another size (docs/small-writes.md 9,
// "Ring size"): the mount replays the fixture's last record, which only the
// old ring holds, before it makes the kvfs's ring again at 8 MiB; the
// upgrade's record is the new ring's first.
TEST(FormatCompat, AFormat4DeviceStoreMountedWithOnAndAnotherRingSizeKeepsItsLastRecord) {
  TempDir dir("fmt4dev-on-ring");
  const std::string path = unpack("format4-device-20261129/store-powercut.tar.gz", dir);
  Config cfg;
  std::string err;
  ASSERT_EQ(cfg.set("hybridstore_small_write_journal", "on", &err), 0) << err;
  ASSERT_EQ(cfg.set("hybridstore_commit_journal_size", "8M", &err), 0) << err;
  HybridStore store(path, cfg);
  ASSERT_EQ(store.mount(&err), 0) << err;
  expect_fixture_content(store);
  StoreStats st;
  ASSERT_EQ(store.statfs(&st), 0);
  EXPECT_NE(st.commit_journal_bytes, 0u);
  EXPECT_EQ(st.commit_journal_bytes, 8ull << 20);
  EXPECT_EQ(st.format_version, kFormatOnodeVersions);
  expect_write_survives_remount(store, "written into the new ring");
  if (HasFatalFailure()) return;
  expect_clean_fsck(store, 5);
}

namespace {
// A journal whose every write fails once it is the ring the mount made
// again (its size tells it apart from the fixture's).
class FailNewRingHooks : public StorageHooks {
 public:
  explicit FailNewRingHooks(uint64_t new_size) : new_size_(new_size) {}
  int setup_kv(const std::string&, const Config&, rocksdb::Options*, std::string*) override { return 0; }
  std::unique_ptr<BlockDevice> wrap_device(const std::string&, Tier, const Config&,
                                           std::unique_ptr<BlockDevice> dev) override {
    return dev;
  }
  std::unique_ptr<BlockDevice> wrap_journal(const std::string&, const Config&,
                                            std::unique_ptr<BlockDevice> dev) override {
    if (dev->size() != new_size_) return dev;
    ++wrapped;
    return std::make_unique<Failing>(std::move(dev));
  }
  int wrapped = 0;

 private:
  class Failing final : public ForwardingBlockDevice {
   public:
    explicit Failing(std::unique_ptr<BlockDevice> d) : ForwardingBlockDevice(std::move(d), "failing") {}
    int write(uint64_t, const char*, uint64_t) override { return -EIO; }
    int write_many(const std::vector<WriteIo>&) override { return -EIO; }
    int write_durable(uint64_t, const char*, uint64_t) override { return -EIO; }
  };
  const uint64_t new_size_;
};
}  // namespace

// A mount that made the ring again and then failed before its upgrade's
// record was written (the new ring's writes fail) leaves the old format, an
// empty ring of the new size, and everything the old ring held in RocksDB:
// the next mount reads it all, upgrades, and fsck is clean.
TEST(FormatCompat, AMountThatFailsAfterMakingTheRingAgainLosesNothing) {
  TempDir dir("fmt3-ring-fail");
  const std::string path = unpack("format3-20261129/store-powercut.tar.gz", dir);
  auto hooks = std::make_shared<FailNewRingHooks>(8ull << 20);
  set_storage_hooks(hooks);
  {
    Config cfg;
    std::string err;
    ASSERT_EQ(cfg.set("hybridstore_commit_journal_size", "8M", &err), 0) << err;
    ASSERT_EQ(cfg.set("hybridstore_kv_location", "directory", &err), 0) << err;
    HybridStore store(path, cfg);
    EXPECT_LT(store.mount(&err), 0);
  }
  set_storage_hooks(nullptr);
  EXPECT_EQ(hooks->wrapped, 1) << "the new ring was not made";
  EXPECT_EQ(std::filesystem::file_size(path + "/journal"), 8ull << 20);
  EXPECT_EQ(probed_format(path), 3u);
  expect_replayed_and_clean(path);
  EXPECT_EQ(probed_format(path), kFormatVersion);
}

// Its second transaction is only in the ring inside the kvfs (the power
// failed before RocksDB's WAL reached the device).
TEST(FormatCompat, AFormat4DeviceStoreCutAfterAJournalRecordReplaysItAtMount) {
  TempDir dir("fmt4dev-cut");
  expect_replayed_and_clean(unpack("format4-device-20261129/store-powercut.tar.gz", dir));
}

TEST(FormatCompat, AFormat3StoreIsMovedToTheDeviceRolledBackAndMovedAgain) {
  expect_moved_rolled_back_and_moved_again("format3-20261129/store.tar.gz", "fmt3-move");
}

// The move's mount replays the transaction only the journal held; the copy
// carries it.
TEST(FormatCompat, AFormat3StoreCutAfterAJournalRecordIsMovedWithIt) {
  expect_moved_rolled_back_and_moved_again("format3-20261129/store-powercut.tar.gz", "fmt3-cut-move");
}

TEST(FormatCompat, AMountThatFailsLeavesAFormat1StoreAtFormat1) {
  TempDir dir("fmt1-fail");
  const std::string path = unpack("format1-20261128/store.tar.gz", dir);
  StoreProbe probe;
  ASSERT_EQ(HybridStore::probe(path, Config(), &probe, nullptr), 0);
  EXPECT_EQ(probe.format_version, 1u);
  // Without its HDD the mount fails after reading the superblock: nothing
  // is upgraded, and the previous build could still open the store.
  ASSERT_EQ(std::rename((path + "/block.hdd").c_str(), (path + "/away").c_str()), 0);
  {
    HybridStore store(path);
    std::string err;
    EXPECT_LT(store.mount(&err), 0);
    EXPECT_NE(err.find("hdd"), std::string::npos) << err;
  }
  ASSERT_EQ(HybridStore::probe(path, Config(), &probe, nullptr), 0);
  EXPECT_EQ(probe.format_version, 1u);
  ASSERT_EQ(std::rename((path + "/away").c_str(), (path + "/block.hdd").c_str()), 0);
  {
    HybridStore store(path);
    std::string err;
    ASSERT_EQ(store.mount(&err), 0) << err;
    ASSERT_EQ(store.umount(), 0);
  }
  ASSERT_EQ(HybridStore::probe(path, Config(), &probe, nullptr), 0);
  EXPECT_EQ(probe.format_version, kFormatVersion);
}

// docs/kvfs.md 7.2: the first read-write mount of a format-3 store commits
// the format-4 superblock, then rewrites every tier's label as a v2 pair.
TEST(FormatCompat, AFormat3StoreIsUpgradedToFormat4AtItsFirstReadWriteMount) {
  TempDir dir("fmt3-up");
  const std::string path = unpack("format3-20261129/store.tar.gz", dir);
  EXPECT_EQ(probed_format(path), 3u);
  for (Tier t : {Tier::kSsd, Tier::kHdd}) {
    const Labels l = read_tier_labels(path, t);
    EXPECT_EQ(l.label.record_version, 1);
    EXPECT_TRUE(l.status.single_copy_v1());
    EXPECT_EQ(l.status.problem(), "");
  }
  const std::string ssd_before = head_of(path + "/block.ssd", 2 * kLabelSize);
  {
    // A read-only mount changes nothing: neither the superblock nor a label.
    HybridStore store(path);
    std::string err;
    ASSERT_EQ(store.mount_read_only(&err), 0) << err;
    expect_fixture_content(store);
    ASSERT_EQ(store.umount(), 0);
  }
  EXPECT_EQ(probed_format(path), 3u);
  EXPECT_EQ(head_of(path + "/block.ssd", 2 * kLabelSize), ssd_before);
  {
    HybridStore store(path);
    std::string err;
    ASSERT_EQ(store.mount(&err), 0) << err;
    StoreStats ss;
    ASSERT_EQ(store.statfs(&ss), 0);
    EXPECT_EQ(ss.format_version, kFormatVersion);
    ASSERT_EQ(store.umount(), 0);
  }
  EXPECT_EQ(probed_format(path), kFormatVersion);
  expect_label_pairs(path);
  // The data layout is the store's: the upgrade moved nothing.
  const uint64_t gen = read_tier_labels(path, Tier::kSsd).label.generation;
  HybridStore store(path);
  std::string err;
  ASSERT_EQ(store.mount(&err), 0) << err;
  expect_fixture_content(store);
  ASSERT_EQ(store.umount(), 0);
  // A mount of a format-4 store rewrites no label.
  EXPECT_EQ(read_tier_labels(path, Tier::kSsd).label.generation, gen);
  expect_clean_fsck(store, 4);
}

// hybridstore_kv_location=device is the default, and a ceph.conf may say it
// for every OSD of a host: a store made with its RocksDB in its directory
// mounts under either, without a warning, and keeps RocksDB and the journal
// where they are (the place is the superblock's, read at mount; only mkfs
// and the move read the option, and the move on mount stays off).
TEST(FormatCompat, AFormat3DirectoryStoreMountsUnderTheDeviceDefaultAndStaysInItsDirectory) {
  const Config defaults;
  ASSERT_EQ(defaults.get_str("hybridstore_kv_location"), "device");
  ASSERT_TRUE(defaults.is_default("hybridstore_kv_location"));
  ASSERT_FALSE(defaults.get_bool("hybridstore_kv_move_on_mount"));
  Config said = defaults;
  std::string err;
  ASSERT_EQ(said.set("hybridstore_kv_location", "device", &err), 0) << err;
  ASSERT_FALSE(said.is_default("hybridstore_kv_location"));
  const Config* configs[] = {&defaults, &said};
  for (const Config* cfg : configs) {
    SCOPED_TRACE(cfg == &defaults ? "default" : "set to device");
    TempDir dir("fmt3-devdefault");
    const std::string path = unpack("format3-20261129/store.tar.gz", dir);
    // Every warning and error of the mounts (from any of the store's
    // threads), gathered until the scope ends.
    struct Complaints {
      std::mutex mu;
      std::vector<std::string> lines;
      LogLevel level = log_level();
      Complaints() {
        set_log_level(LogLevel::kWarn);
        set_log_sink([this](LogLevel, const std::string& msg) {
          std::lock_guard<std::mutex> l(mu);
          lines.push_back(msg);
        });
      }
      ~Complaints() {
        set_log_sink(nullptr);
        set_log_level(level);
      }
    };
    std::vector<std::string> complaints;
    {
      Complaints gathered;
      HybridStore store(path, *cfg);
      ASSERT_EQ(store.mount(&err), 0) << err;
      StoreStats st;
      ASSERT_EQ(store.statfs(&st), 0);
      EXPECT_FALSE(st.kv_on_device);
      EXPECT_EQ(st.format_version, kFormatVersion);  // upgraded in place, not moved
      expect_fixture_content(store);
      expect_write_survives_remount(store, "written under the device default");
      set_log_sink(nullptr);  // no line can come in while they are copied
      complaints = gathered.lines;
    }
    for (const auto& c : complaints) ADD_FAILURE() << "mount complained: " << c;
    EXPECT_TRUE(std::filesystem::exists(path + "/db/CURRENT"));
    EXPECT_TRUE(std::filesystem::exists(path + "/journal"));
    EXPECT_FALSE(std::filesystem::exists(path + "/db.format3-moved"));
    StoreProbe probe;
    ASSERT_EQ(HybridStore::probe(path, *cfg, &probe, nullptr), 0);
    EXPECT_EQ(probe.format_version, kFormatVersion);
    HybridStore store(path, *cfg);
    expect_clean_fsck(store, 5);
  }
}

// A crash between the two steps of the upgrade: the superblock says format
// 4, the labels are still version 1 (or a pair is torn between B and A).
// The next mount does what is missing.
TEST(FormatCompat, AnUpgradeCutBetweenItsStepsIsFinishedByTheNextMount) {
  TempDir dir("fmt3-cut-up");
  const std::string path = unpack("format3-20261129/store.tar.gz", dir);
  const std::string ssd_v1 = head_of(path + "/block.ssd", 2 * kLabelSize);
  const std::string hdd_v1 = head_of(path + "/block.hdd", 2 * kLabelSize);
  {
    HybridStore store(path);
    std::string err;
    ASSERT_EQ(store.mount(&err), 0) << err;
    ASSERT_EQ(store.umount(), 0);
  }
  const std::string hdd_v2 = head_of(path + "/block.hdd", 2 * kLabelSize);
  // Superblock committed, no label written yet.
  put_head(path + "/block.ssd", ssd_v1);
  put_head(path + "/block.hdd", hdd_v1);
  EXPECT_EQ(probed_format(path), kFormatVersion);
  EXPECT_EQ(read_tier_labels(path, Tier::kSsd).label.record_version, 1);
  {
    HybridStore store(path);
    std::string err;
    ASSERT_EQ(store.mount(&err), 0) << err;
    expect_fixture_content(store);
    ASSERT_EQ(store.umount(), 0);
  }
  expect_label_pairs(path);

  // The HDD's pair torn: B of version 2 written, A still version 1.
  put_head(path + "/block.hdd", hdd_v1.substr(0, kLabelSize) + hdd_v2.substr(kLabelSize));
  {
    const Labels l = read_tier_labels(path, Tier::kHdd);
    EXPECT_EQ(l.status.chosen, 'B');
    EXPECT_EQ(l.label.record_version, 2);
    EXPECT_FALSE(l.status.intact());
  }
  HybridStore store(path);
  std::string err;
  ASSERT_EQ(store.mount(&err), 0) << err;
  expect_fixture_content(store);
  ASSERT_EQ(store.umount(), 0);
  expect_label_pairs(path);
  expect_clean_fsck(store, 4);
}

// A label may lag the superblock, never lead it: a format-3 store whose
// device carries a label of format 4 is someone else's half-done work.
TEST(FormatCompat, ALabelNewerThanTheSuperblockIsRefused) {
  TempDir dir("fmt3-newer-label");
  const std::string path = unpack("format3-20261129/store.tar.gz", dir);
  DeviceOpenOptions o;
  o.direct_io = false;
  o.backend = IoBackend::kPosix;
  std::string err;
  {
    auto dev = open_block_device(path + "/block.hdd", o, &err);
    ASSERT_TRUE(dev) << err;
    DeviceLabel l;
    ASSERT_EQ(read_label(dev.get(), &l, &err), 0) << err;
    l.format_version = 4;
    ASSERT_EQ(write_label_pair(dev.get(), &l, &err), 0) << err;
  }
  HybridStore store(path);
  EXPECT_LT(store.mount(&err), 0);
  EXPECT_NE(err.find("newer than the store's superblock"), std::string::npos) << err;
  EXPECT_EQ(probed_format(path), 3u);
}

// A new store: format 4, label pairs on every tier, the head reserving at
// least the two label copies and the two kvfs superblock slots.
TEST(FormatCompat, MkfsWritesFormat4WithLabelPairs) {
  TempDir dir("fmt4-mkfs");
  const std::string path = dir.file("store");
  std::string err;
  HybridStore store(path, hybridstore::test::small_store_config(64ull << 20, 64ull << 20));
  ASSERT_EQ(store.mkfs(&err), 0) << err;
  EXPECT_EQ(probed_format(path), kFormatVersion);
  expect_label_pairs(path);
  for (Tier t : {Tier::kSsd, Tier::kHdd}) EXPECT_GE(read_tier_labels(path, t).label.head, 4 * kLabelSize);
  const uint64_t gen = read_tier_labels(path, Tier::kSsd).label.generation;
  EXPECT_EQ(gen, 2u);  // mkfs_done clear, then set
  ASSERT_EQ(store.mount(&err), 0) << err;
  ASSERT_EQ(store.umount(), 0);
  EXPECT_EQ(read_tier_labels(path, Tier::kSsd).label.generation, gen);
  expect_clean_fsck(store, 0);
}
