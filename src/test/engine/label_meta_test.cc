// Ceph's meta keys in the SSD label (docs/kvfs.md 5.5): set_meta, get_meta
// and rm_meta on a mounted and an unmounted store, what survives a remount,
// and every refusal leaving the label pair as it was.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "hsio/block_device.h"
#include "hybridstore/format/store_format.h"
#include "store_helpers.h"

using namespace hybridstore;
using hybridstore::test::StoreTest;
using hybridstore::test::TempDir;

namespace {

// The SSD label pair as the device holds it, read beside any mount.
LabelPairStatus ssd_labels(const std::string& store_path) {
  DeviceOpenOptions o;
  o.direct_io = false;
  o.backend = IoBackend::kPosix;
  std::string err;
  auto dev = open_block_device(store_path + "/" + tier_device_link(Tier::kSsd), o, &err);
  EXPECT_TRUE(dev) << err;
  LabelPairStatus st;
  if (!dev) return st;
  DeviceLabel l;
  EXPECT_EQ(read_labels(dev.get(), &l, &st, &err), 0) << err;
  return st;
}

uint64_t ssd_generation(const std::string& store_path) {
  LabelPairStatus st = ssd_labels(store_path);
  EXPECT_TRUE(st.intact()) << st.problem();
  return st.label_a.generation;
}

std::string file_head(const std::string& path, size_t n) {
  std::ifstream f(path, std::ios::binary);
  std::string s(n, '\0');
  f.read(s.data(), static_cast<std::streamsize>(n));
  s.resize(static_cast<size_t>(f.gcount()));
  return s;
}

class LabelMetaTest : public StoreTest {
 protected:
  std::string path() const { return dir_->path() + "/store"; }
  std::string err_;
};

TEST_F(LabelMetaTest, SetGetAndRemoveWhileMountedWriteANewPairAndSurviveARemount) {
  const uint64_t g0 = ssd_generation(path());
  std::string err, v;
  EXPECT_EQ(store_->get_meta("whoami", &v, &err), -ENOENT);
  ASSERT_EQ(store_->set_meta("whoami", "3", &err), 0) << err;
  ASSERT_EQ(store_->set_meta("ceph_fsid", "0f6b4a1e-0000-4000-8000-000000000001", &err), 0) << err;
  EXPECT_EQ(ssd_generation(path()), g0 + 2);
  ASSERT_EQ(store_->get_meta("whoami", &v, &err), 0) << err;
  EXPECT_EQ(v, "3");
  // The same value again: nothing to rewrite.
  ASSERT_EQ(store_->set_meta("whoami", "3", &err), 0) << err;
  EXPECT_EQ(ssd_generation(path()), g0 + 2);
  EXPECT_EQ(ssd_labels(path()).label_a.meta.at("whoami"), "3");

  remount();
  ASSERT_EQ(store_->get_meta("whoami", &v, &err), 0) << err;
  EXPECT_EQ(v, "3");
  ASSERT_EQ(store_->rm_meta("whoami", &err), 0) << err;
  EXPECT_EQ(store_->get_meta("whoami", &v, &err), -ENOENT);
  EXPECT_EQ(store_->rm_meta("whoami", &err), -ENOENT);
  EXPECT_NE(err.find("whoami"), std::string::npos) << err;
  remount();
  EXPECT_EQ(store_->get_meta("whoami", &v, &err), -ENOENT);
  ASSERT_EQ(store_->get_meta("ceph_fsid", &v, &err), 0) << err;
  EXPECT_EQ(v, "0f6b4a1e-0000-4000-8000-000000000001");
  EXPECT_TRUE(ssd_labels(path()).intact());
}

TEST_F(LabelMetaTest, SetGetAndRemoveUnmountedRewriteThePairTheNextMountReads) {
  ASSERT_EQ(store_->umount(), 0);
  const uint64_t g0 = ssd_generation(path());
  std::string err, v;
  ASSERT_EQ(store_->set_meta("ready", "ready", &err), 0) << err;
  ASSERT_EQ(store_->set_meta("whoami", "7", &err), 0) << err;
  EXPECT_EQ(ssd_generation(path()), g0 + 2);
  ASSERT_EQ(store_->get_meta("whoami", &v, &err), 0) << err;
  EXPECT_EQ(v, "7");
  ASSERT_EQ(store_->rm_meta("ready", &err), 0) << err;
  EXPECT_EQ(store_->get_meta("ready", &v, &err), -ENOENT);
  EXPECT_EQ(ssd_generation(path()), g0 + 3);

  ASSERT_EQ(store_->mount(&err), 0) << err;
  ASSERT_EQ(store_->get_meta("whoami", &v, &err), 0) << err;
  EXPECT_EQ(v, "7");
  ASSERT_EQ(store_->set_meta("whoami", "8", &err), 0) << err;
  ASSERT_EQ(store_->umount(), 0);
  // A fresh object, as OSD::peek_meta reads before any mount.
  HybridStore other(path(), config());
  ASSERT_EQ(other.get_meta("whoami", &v, &err), 0) << err;
  EXPECT_EQ(v, "8");
  ASSERT_EQ(store_->mount(&err), 0) << err;
}

TEST_F(LabelMetaTest, ThePathBlockKeysAreTheStoresOwn) {
  const uint64_t g0 = ssd_generation(path());
  std::string err, v;
  EXPECT_EQ(store_->set_meta("path_block.ssd", "/dev/elsewhere", &err), -EINVAL);
  EXPECT_NE(err.find("reserved"), std::string::npos) << err;
  EXPECT_EQ(store_->set_meta("path_block.new", "/dev/elsewhere", &err), -EINVAL);
  EXPECT_EQ(store_->rm_meta("path_block.ssd", &err), -EINVAL);
  EXPECT_EQ(store_->set_meta("", "x", &err), -EINVAL);
  ASSERT_EQ(store_->umount(), 0);
  EXPECT_EQ(store_->set_meta("path_block.hdd", "/dev/elsewhere", &err), -EINVAL);
  EXPECT_EQ(store_->rm_meta("path_block.hdd", &err), -EINVAL);
  EXPECT_EQ(ssd_generation(path()), g0);
  EXPECT_EQ(store_->get_meta("path_block.new", &v, &err), -ENOENT);
  ASSERT_EQ(store_->mount(&err), 0) << err;
}

TEST_F(LabelMetaTest, KeysValuesAndLabelsOverTheLimitsAreRefusedAndNothingIsWritten) {
  std::string err;
  const LabelPairStatus before = ssd_labels(path());
  EXPECT_EQ(store_->set_meta(std::string(kLabelMaxMetaKey + 1, 'k'), "v", &err), -E2BIG);
  EXPECT_NE(err.find("longer than"), std::string::npos) << err;
  EXPECT_EQ(store_->set_meta("osd_key", std::string(kLabelMaxMetaValue + 1, 'v'), &err), -E2BIG);
  EXPECT_NE(err.find("more than"), std::string::npos) << err;
  EXPECT_EQ(ssd_generation(path()), before.label_a.generation);

  // Values of the largest size until the label is full: the one that
  // would not fit is refused, the label keeps the others.
  int kept = 0;
  int r = 0;
  for (; kept < 8; ++kept) {
    r = store_->set_meta("big" + std::to_string(kept), std::string(kLabelMaxMetaValue, 'a' + kept), &err);
    if (r < 0) break;
  }
  EXPECT_EQ(r, -E2BIG);
  EXPECT_GE(kept, 1);
  EXPECT_NE(err.find("would not fit"), std::string::npos) << err;
  const uint64_t g = ssd_generation(path());
  EXPECT_EQ(g, before.label_a.generation + static_cast<uint64_t>(kept));
  std::string v;
  EXPECT_EQ(store_->get_meta("big" + std::to_string(kept), &v, &err), -ENOENT);
  remount();
  for (int i = 0; i < kept; ++i) {
    ASSERT_EQ(store_->get_meta("big" + std::to_string(i), &v, &err), 0) << err;
    EXPECT_EQ(v, std::string(kLabelMaxMetaValue, 'a' + i));
  }
  ASSERT_EQ(store_->umount(), 0);
  EXPECT_EQ(store_->set_meta("big" + std::to_string(kept), std::string(kLabelMaxMetaValue, 'z'), &err), -E2BIG);
  EXPECT_EQ(ssd_generation(path()), g);
  ASSERT_EQ(store_->mount(&err), 0) << err;
}

TEST_F(LabelMetaTest, AnotherMountHoldsTheDeviceAndAReadOnlyMountRefusesChanges) {
  ASSERT_EQ(store_->set_meta("whoami", "1", &err_), 0) << err_;
  const uint64_t g = ssd_generation(path());
  HybridStore other(path(), config());
  EXPECT_EQ(other.set_meta("whoami", "2", &err_), -EBUSY);
  EXPECT_NE(err_.find("in use"), std::string::npos) << err_;
  EXPECT_EQ(other.rm_meta("whoami", &err_), -EBUSY);
  // Reading needs no lock: it sees what the mount wrote.
  std::string v;
  ASSERT_EQ(other.get_meta("whoami", &v, &err_), 0) << err_;
  EXPECT_EQ(v, "1");
  EXPECT_EQ(ssd_generation(path()), g);

  ASSERT_EQ(store_->umount(), 0);
  ASSERT_EQ(store_->mount_read_only(&err_), 0) << err_;
  EXPECT_EQ(store_->set_meta("whoami", "2", &err_), -EROFS);
  EXPECT_EQ(store_->rm_meta("whoami", &err_), -EROFS);
  ASSERT_EQ(store_->get_meta("whoami", &v, &err_), 0) << err_;
  EXPECT_EQ(v, "1");
  EXPECT_EQ(other.set_meta("whoami", "2", &err_), -EBUSY);
  ASSERT_EQ(store_->umount(), 0);
  EXPECT_EQ(ssd_generation(path()), g);
  ASSERT_EQ(store_->mount(&err_), 0) << err_;
}

// Raw flash keeps its label behind the FTL: unmounted, the SSD is opened as
// what the store's superblock says it is.
class NandLabelMetaTest : public LabelMetaTest {
 protected:
  Config config() override {
    Config c = hybridstore::test::small_store_config();
    std::string err;
    EXPECT_EQ(c.set("hybridstore_ssd_kind", "nand", &err), 0) << err;
    EXPECT_EQ(c.set("hybridstore_nand_size", "32M", &err), 0) << err;
    return c;
  }
};

TEST_F(NandLabelMetaTest, KeysOfARawFlashSsdWorkMountedAndNot) {
  std::string err, v;
  ASSERT_EQ(store_->set_meta("whoami", "4", &err), 0) << err;
  {
    HybridStore other(path(), config());
    EXPECT_EQ(other.set_meta("whoami", "5", &err), -EBUSY);
    EXPECT_NE(err.find("in use"), std::string::npos) << err;
  }
  ASSERT_EQ(store_->umount(), 0);
  ASSERT_EQ(store_->set_meta("ready", "ready", &err), 0) << err;
  ASSERT_EQ(store_->get_meta("whoami", &v, &err), 0) << err;
  EXPECT_EQ(v, "4");
  ASSERT_EQ(store_->mount(&err), 0) << err;
  ASSERT_EQ(store_->get_meta("ready", &v, &err), 0) << err;
  EXPECT_EQ(v, "ready");
  ASSERT_EQ(store_->rm_meta("ready", &err), 0) << err;
  remount();
  EXPECT_EQ(store_->get_meta("ready", &v, &err), -ENOENT);
}

TEST(LabelMeta, AStoreWithNoDeviceIsNoStore) {
  TempDir dir("meta-none");
  HybridStore store(dir.path() + "/nothing");
  std::string err, v;
  EXPECT_EQ(store.set_meta("whoami", "1", &err), -ENOENT);
  EXPECT_NE(err.find("block.ssd"), std::string::npos) << err;
  EXPECT_EQ(store.get_meta("whoami", &v, &err), -ENOENT);
}

// A format-3 store not yet mounted by this build has v1 labels, which have
// no meta map: the change is refused, and its devices stay as they were.
TEST(LabelMeta, AFormat3StoreNotYetUpgradedAnswersEOPNOTSUPP) {
  TempDir dir("meta-fmt3");
  const std::string cmd = "tar -C '" + dir.path() + "' -xzf '" + std::string(HS_TEST_DATA_DIR) +
                          "/format3-20261129/store.tar.gz'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::string path = dir.path() + "/store";
  const std::string ssd = path + "/" + tier_device_link(Tier::kSsd);
  const std::string head = file_head(ssd, 65536);
  HybridStore store(path);
  std::string err;
  EXPECT_EQ(store.set_meta("whoami", "1", &err), -EOPNOTSUPP);
  EXPECT_NE(err.find("record version 1"), std::string::npos) << err;
  EXPECT_EQ(store.rm_meta("whoami", &err), -EOPNOTSUPP);
  EXPECT_EQ(file_head(ssd, 65536), head);
  // One read-write mount upgrades it; then the keys work.
  ASSERT_EQ(store.mount(&err), 0) << err;
  ASSERT_EQ(store.set_meta("whoami", "1", &err), 0) << err;
  ASSERT_EQ(store.umount(), 0);
  std::string v;
  ASSERT_EQ(store.get_meta("whoami", &v, &err), 0) << err;
  EXPECT_EQ(v, "1");
}

TEST(LabelMeta, ChangeLabelMetaChecksBeforeItChanges) {
  DeviceLabel l;
  std::string why;
  EXPECT_EQ(change_label_meta(&l, "", nullptr, &why), -EINVAL);
  EXPECT_EQ(change_label_meta(&l, "k", nullptr, &why), -ENOENT);
  const std::string v = "value";
  ASSERT_EQ(change_label_meta(&l, "k", &v, &why), 0) << why;
  EXPECT_EQ(l.meta.at("k"), "value");
  const std::string too_long(kLabelMaxMetaValue + 1, 'x');
  EXPECT_EQ(change_label_meta(&l, "k", &too_long, &why), -E2BIG);
  EXPECT_EQ(l.meta.at("k"), "value");
  ASSERT_EQ(change_label_meta(&l, "k", nullptr, &why), 0) << why;
  EXPECT_TRUE(l.meta.empty());
  DeviceLabel v1;
  v1.record_version = 1;
  EXPECT_EQ(change_label_meta(&v1, "k", &v, &why), -EOPNOTSUPP);
  EXPECT_TRUE(label_meta_key_reserved("path_block.tier2"));
  EXPECT_FALSE(label_meta_key_reserved("path_blocks"));
}

}  // namespace
