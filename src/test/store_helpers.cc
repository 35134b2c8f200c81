#include "store_helpers.h"

#include <cstdlib>
#include <stdexcept>

namespace hybridstore::test {

Config small_store_config(uint64_t ssd_size, uint64_t hdd_size) {
  Config c;
  std::string err;
  c.set("hybridstore_ssd_size", std::to_string(ssd_size), &err);
  c.set("hybridstore_hdd_size", std::to_string(hdd_size), &err);
  c.set("hybridstore_onode_cache_size", "1000", &err);
  c.set("hybridstore_rocksdb_options", "write_buffer_size=4M;compression=kNoCompression", &err);
  // The same code paths whatever disk the machine's temporary directory is
  // on: "auto" would absorb only where the kernel calls the SSD file's disk
  // solid-state and the HDD file's rotational.
  c.set("hybridstore_tier_absorb", "always", &err);
  // HS_TEST_SET="k=v k=v" runs a suite under other options (ctest uses it to
  // run the conformance suite on the NAND FTL as well).
  if (const char* extra = getenv("HS_TEST_SET")) {
    std::string all = extra;
    size_t pos = 0;
    while (pos < all.size()) {
      size_t end = all.find(' ', pos);
      if (end == std::string::npos) end = all.size();
      std::string kv = all.substr(pos, end - pos);
      if (!kv.empty() && c.set_from_arg(kv, &err) < 0) throw std::runtime_error("HS_TEST_SET: " + err);
      pos = end + 1;
    }
  }
  return c;
}

void StoreTest::SetUp() {
  dir_ = std::make_unique<TempDir>("store", backing());
  make_store();
}

void StoreTest::TearDown() {
  if (store_ && store_->is_mounted()) {
    FsckReport rep;
    int r = store_->fsck(false, &rep);
    EXPECT_EQ(r, 0) << "fsck after test: " << (rep.problems.empty() ? "" : rep.problems[0]);
    EXPECT_EQ(store_->umount(), 0);
  }
  store_.reset();
  dir_.reset();
}

void StoreTest::make_store() {
  store_ = std::make_unique<HybridStore>(dir_->path() + "/store", config());
  std::string err;
  ASSERT_EQ(store_->mkfs(&err), 0) << err;
  ASSERT_EQ(store_->mount(&err), 0) << err;
}

void StoreTest::remount() {
  ASSERT_EQ(store_->umount(), 0);
  store_ = std::make_unique<HybridStore>(dir_->path() + "/store", config());
  std::string err;
  ASSERT_EQ(store_->mount(&err), 0) << err;
}

void StoreTest::apply(Transaction t) {
  TxnError e;
  int r = store_->queue_transaction(std::move(t), &e);
  ASSERT_EQ(r, 0) << "op " << e.op_index << " (" << e.op << "): " << e.message;
}

int StoreTest::try_apply(Transaction t, TxnError* err) {
  TxnError e;
  int r = store_->queue_transaction(std::move(t), &e);
  if (err) *err = e;
  return r;
}

std::string StoreTest::read_all(const CollectionId& c, const ObjectId& o) {
  std::string out;
  int r = store_->read(c, o, 0, 0, &out);
  EXPECT_GE(r, 0) << "read " << o.to_string();
  return out;
}

void StoreTest::make_coll(const CollectionId& c, uint32_t bits) {
  Transaction t;
  t.create_collection(c, bits);
  apply(std::move(t));
}

int StoreTest::fsck_errors(bool deep) {
  FsckReport rep;
  int r = store_->fsck(deep, &rep);
  for (const auto& p : rep.problems) ADD_FAILURE() << "fsck: " << p;
  return r;
}

Config TierStoreTest::config() {
  Config c = small_store_config();
  std::string err;
  c.set("hybridstore_tier_migrate_bandwidth", "0", &err);
  fixture_options(&c);
  for (const auto& [k, v] : extra_) EXPECT_EQ(c.set(k, v, &err), 0) << k << ": " << err;
  return c;
}

void TierStoreTest::SetUp() {
  StoreTest::SetUp();
  make_coll(coll_);
}

void TierStoreTest::with(const Options& options) {
  for (const auto& kv : options) extra_.push_back(kv);
  ASSERT_EQ(store_->umount(), 0);
  store_.reset();
  dir_ = std::make_unique<TempDir>("store", backing());
  make_store();
  make_coll(coll_);
}

ObjectStat TierStoreTest::st(const ObjectId& o) {
  ObjectStat s;
  EXPECT_EQ(store_->stat(coll_, o, &s), 0);
  return s;
}

uint64_t TierStoreTest::counter(const std::string& name) {
  int i = store_->perf().find(name);
  EXPECT_GE(i, 0) << name;
  return store_->perf().get(i);
}

}  // namespace hybridstore::test
