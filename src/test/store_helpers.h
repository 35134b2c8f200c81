// A fixture that makes a fresh, small, file-backed store per test.
#pragma once
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common_helpers.h"
#include "hybridstore/store/hybrid_store.h"

namespace hybridstore::test {

// Small devices keep tests quick; they are sparse files.
Config small_store_config(uint64_t ssd_size = 256ull << 20, uint64_t hdd_size = 1ull << 30);

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Options to use for mkfs/mount; tests may change them before make_store().
  virtual Config config() { return small_store_config(); }
  // Where the store's directory and device files live: kMemory for the
  // fixtures that loop over simulated power cuts (TempDir says why).
  virtual TempDir::Backing backing() { return TempDir::Backing::kDisk; }
  void make_store();
  void remount();

  // Queues and asserts success (does not wait for commit: reads must see it).
  void apply(Transaction t);
  // Queues and returns the error code; checks the store is unchanged is up to the test.
  int try_apply(Transaction t, TxnError* err = nullptr);
  std::string read_all(const CollectionId& c, const ObjectId& o);
  ObjectId obj(const std::string& name) { return ObjectId::from_name(name, 1); }
  void make_coll(const CollectionId& c, uint32_t bits = 0);
  int fsck_errors(bool deep = false);

  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<HybridStore> store_;
  CollectionId coll_{"1.0_head"};
  std::mt19937_64 rng_{12345};
};

// A StoreTest for the tiers and what counts their work: migrations copy at
// full speed (hybridstore_tier_migrate_bandwidth 0), coll_ exists, and a test
// adds options (extra_, before the store is made, or with() for a fresh one).
class TierStoreTest : public StoreTest {
 protected:
  using Options = std::vector<std::pair<std::string, std::string>>;

  // small_store_config(), the migrations unthrottled, fixture_options(),
  // then extra_: a test's options override the fixture's.
  Config config() override;
  // The options of a fixture built on this one.
  virtual void fixture_options(Config* c) {}
  void SetUp() override;
  // A fresh store (and coll_) with these options as well.
  void with(const Options& options);

  ObjectStat st(const ObjectId& o);
  uint64_t counter(const std::string& name);

  Options extra_;
};

}  // namespace hybridstore::test
