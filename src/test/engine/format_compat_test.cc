// Stores that earlier versions of the engine wrote still open, read back
// what was written and pass a deep fsck. The fixtures under src/test/data
// (README.md there says which commit made each) are unpacked into a
// temporary directory, so a test never changes them.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

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
  EXPECT_EQ(kFormatVersion, 3u);
  EXPECT_EQ(ss.tiers, 2);
  EXPECT_EQ(ss.order[0], Tier::kSsd);
  EXPECT_EQ(ss.order[1], Tier::kHdd);

  expect_fixture_content(store);

  // Still a working store: a write lands and survives a remount.
  Transaction t;
  t.write("1.0_head", oid("after", "1.0_head"), 0, "written by today's engine");
  TxnError terr;
  ASSERT_EQ(store.apply_transaction(std::move(t), &terr), 0) << terr.message;
  ASSERT_EQ(store.umount(), 0);
  ASSERT_EQ(store.mount(&err), 0) << err;
  EXPECT_EQ(read_all(store, "1.0_head", oid("after", "1.0_head")), "written by today's engine");
  ASSERT_EQ(store.umount(), 0);

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
  const std::string path = unpack("format3-20261129/store-powercut.tar.gz", dir);
  HybridStore store(path);
  std::string err;
  ASSERT_EQ(store.mount(&err), 0) << err;
  expect_fixture_content(store);
  ASSERT_EQ(store.umount(), 0);
  ASSERT_EQ(store.mount(&err), 0) << err;
  expect_fixture_content(store);
  ASSERT_EQ(store.umount(), 0);
  FsckReport report;
  EXPECT_EQ(store.fsck(/*deep=*/true, &report), 0);
  EXPECT_EQ(report.objects, 4u);
  for (const auto& p : report.problems) ADD_FAILURE() << p;
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
