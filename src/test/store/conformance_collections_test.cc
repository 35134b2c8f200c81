// Conformance: collections, listing order and paging, split and merge,
// transactions (atomicity, ordering, callbacks) and the store lifecycle.
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "store_helpers.h"

using namespace hybridstore;
using hybridstore::test::StoreTest;

namespace {

class CollTest : public StoreTest {
 protected:
  std::vector<ObjectId> list_all(const CollectionId& c, int page = 7) {
    std::vector<ObjectId> all;
    ObjectId start = ObjectId::make_min();
    for (;;) {
      std::vector<ObjectId> got;
      ObjectId next;
      EXPECT_EQ(store_->collection_list(c, start, ObjectId::make_max(), page, &got, &next), 0);
      all.insert(all.end(), got.begin(), got.end());
      if (next.max) break;
      EXPECT_FALSE(got.empty());
      start = next;
    }
    return all;
  }
  ObjectId hashed(const std::string& name, uint32_t hash, int64_t pool = 1) {
    ObjectId o;
    o.pool = pool;
    o.name = name;
    o.hash = hash;
    return o;
  }
};

// ---- collections

TEST_F(CollTest, CreateListAndRemoveCollections) {
  make_coll("2.0_head");
  make_coll("1.0_head");
  make_coll("meta");
  auto cs = store_->list_collections();
  ASSERT_EQ(cs.size(), 3u);
  EXPECT_EQ(cs[0].name, "1.0_head");
  EXPECT_TRUE(store_->collection_exists("meta"));
  Transaction t;
  t.remove_collection("meta");
  apply(std::move(t));
  EXPECT_FALSE(store_->collection_exists("meta"));
  make_coll("meta");  // and again
  EXPECT_TRUE(store_->collection_exists("meta"));
}

TEST_F(CollTest, CreatingAnExistingCollectionFailsWithEEXIST) {
  make_coll(coll_);
  Transaction t;
  t.create_collection(coll_, 3);
  EXPECT_EQ(try_apply(std::move(t)), -EEXIST);
  EXPECT_EQ(store_->collection_bits(coll_), 0);
}

TEST_F(CollTest, RemovingANonEmptyCollectionFailsWithENOTEMPTY) {
  make_coll(coll_);
  Transaction t;
  t.touch(coll_, obj("a"));
  apply(std::move(t));
  Transaction t2;
  t2.remove_collection(coll_);
  EXPECT_EQ(try_apply(std::move(t2)), -ENOTEMPTY);
  EXPECT_TRUE(store_->collection_exists(coll_));
  // Emptying it in the same transaction makes the removal legal.
  Transaction t3;
  t3.remove(coll_, obj("a"));
  t3.remove_collection(coll_);
  apply(std::move(t3));
  EXPECT_FALSE(store_->collection_exists(coll_));
}

TEST_F(CollTest, RemovingAMissingCollectionFails) {
  Transaction t;
  t.remove_collection("7.7_head");
  EXPECT_EQ(try_apply(std::move(t)), -ENOENT);
}

TEST_F(CollTest, ObjectOpsOnAMissingCollectionFailWithENOENT) {
  Transaction t;
  t.write("4.2_head", obj("a"), 0, "x");
  TxnError e;
  EXPECT_EQ(try_apply(std::move(t), &e), -ENOENT);
  EXPECT_NE(e.message.find("4.2_head"), std::string::npos);
  std::vector<ObjectId> ls;
  ObjectId next;
  EXPECT_EQ(store_->collection_list("4.2_head", ObjectId::make_min(), ObjectId::make_max(), 10, &ls, &next), -ENOENT);
}

TEST_F(CollTest, CollectionCreatedAndUsedInOneTransaction) {
  Transaction t;
  t.create_collection(coll_, 5);
  t.write(coll_, obj("a"), 0, "x");
  apply(std::move(t));
  EXPECT_EQ(store_->collection_bits(coll_), 5);
  EXPECT_EQ(read_all(coll_, obj("a")), "x");
}

TEST_F(CollTest, CollectionEmptyReflectsQueuedWork) {
  make_coll(coll_);
  bool empty = false;
  ASSERT_EQ(store_->collection_empty(coll_, &empty), 0);
  EXPECT_TRUE(empty);
  Transaction t;
  t.touch(coll_, obj("a"));
  apply(std::move(t));
  ASSERT_EQ(store_->collection_empty(coll_, &empty), 0);
  EXPECT_FALSE(empty);
}

TEST_F(CollTest, SetBitsChangesCollectionBits) {
  make_coll(coll_, 2);
  Transaction t;
  t.collection_set_bits(coll_, 6);
  apply(std::move(t));
  EXPECT_EQ(store_->collection_bits(coll_), 6);
  remount();
  EXPECT_EQ(store_->collection_bits(coll_), 6);
}

// ---- listing

TEST_F(CollTest, ListingFollowsCephOrder) {
  make_coll(coll_);
  Transaction t;
  std::vector<ObjectId> objs;
  for (int i = 0; i < 60; ++i) {
    ObjectId o = hashed("obj" + std::to_string(i), static_cast<uint32_t>(rng_()));
    if (i % 5 == 0) o.nspace = "ns";
    if (i % 7 == 0) o.snap = static_cast<uint64_t>(i);
    if (i % 11 == 0) o.pool = -3;  // a temp object: sorts first
    objs.push_back(o);
    t.touch(coll_, o);
  }
  apply(std::move(t));
  std::sort(objs.begin(), objs.end());
  auto listed = list_all(coll_);
  ASSERT_EQ(listed.size(), objs.size());
  for (size_t i = 0; i < objs.size(); ++i) EXPECT_EQ(listed[i], objs[i]) << i;
  EXPECT_LT(listed.front().pool, 0);
}

TEST_F(CollTest, PagedListingIsCompleteAndNextIsTheFirstNotReturned) {
  make_coll(coll_);
  Transaction t;
  for (int i = 0; i < 200; ++i) {
    ObjectId o = hashed("p" + std::to_string(i), static_cast<uint32_t>(i * 2654435761u));
    o.shard = 1;
    t.touch(coll_, o);
  }
  apply(std::move(t));
  std::vector<ObjectId> page;
  ObjectId next;
  ASSERT_EQ(store_->collection_list(coll_, ObjectId::make_min(), ObjectId::make_max(), 50, &page, &next), 0);
  ASSERT_EQ(page.size(), 50u);
  auto all = list_all(coll_, 50);
  ASSERT_EQ(all.size(), 200u);
  EXPECT_EQ(next, all[50]);
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
}

TEST_F(CollTest, ListingNeverReturnsTheEndBound) {
  make_coll(coll_);
  Transaction t;
  for (int i = 0; i < 20; ++i) t.touch(coll_, hashed("e" + std::to_string(i), static_cast<uint32_t>(i)));
  apply(std::move(t));
  auto all = list_all(coll_);
  std::vector<ObjectId> got;
  ObjectId next;
  ASSERT_EQ(store_->collection_list(coll_, all[3], all[9], 100, &got, &next), 0);
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got.front(), all[3]);
  EXPECT_EQ(got.back(), all[8]);
  EXPECT_EQ(next, all[9]);  // stopped by the end bound: the next object there, as BlueStore answers
}

TEST_F(CollTest, ListingFromMaxIsEmpty) {
  make_coll(coll_);
  Transaction t;
  t.touch(coll_, obj("a"));
  apply(std::move(t));
  std::vector<ObjectId> got;
  ObjectId next;
  ASSERT_EQ(store_->collection_list(coll_, ObjectId::make_max(), ObjectId::make_max(), 10, &got, &next), 0);
  EXPECT_TRUE(got.empty());
  EXPECT_TRUE(next.max);
}

TEST_F(CollTest, HashCollisionsListCompletelyAndSorted) {
  make_coll(coll_);
  Transaction t;
  std::vector<ObjectId> objs;
  for (int ns = 0; ns < 4; ++ns)
    for (int i = 0; i < 100; ++i) {
      ObjectId o = hashed(std::string(200, 'n') + std::to_string(i), 0);
      o.nspace = "ns" + std::to_string(ns);
      objs.push_back(o);
      t.touch(coll_, o);
    }
  apply(std::move(t));
  std::sort(objs.begin(), objs.end());
  auto all = list_all(coll_, 33);
  EXPECT_EQ(all, objs);
  // Listing from any start gives exactly the sorted suffix.
  for (size_t s : {0ul, 1ul, 150ul, 399ul}) {
    std::vector<ObjectId> got;
    ObjectId next;
    ASSERT_EQ(store_->collection_list(coll_, objs[s], ObjectId::make_max(), 1000, &got, &next), 0);
    EXPECT_EQ(got.size(), objs.size() - s);
    EXPECT_EQ(got.front(), objs[s]);
  }
}

TEST_F(CollTest, ObjectsWithHashFfffffffAreListed) {
  make_coll(coll_);
  Transaction t;
  t.touch(coll_, hashed("top", 0xffffffffu));
  t.touch(coll_, hashed("bottom", 0));
  apply(std::move(t));
  EXPECT_EQ(list_all(coll_).size(), 2u);
}

TEST_F(CollTest, GenerationsAndSnapsAreDistinctObjects) {
  make_coll(coll_);
  Transaction t;
  ObjectId o = obj("g");
  t.write(coll_, o, 0, "head");
  ObjectId g1 = o, g2 = o, s5 = o;
  g1.generation = 1;
  g2.generation = 2;
  s5.snap = 5;
  t.write(coll_, g1, 0, "gen1");
  t.write(coll_, g2, 0, "gen2");
  t.write(coll_, s5, 0, "snap5");
  apply(std::move(t));
  EXPECT_EQ(list_all(coll_).size(), 4u);
  EXPECT_EQ(read_all(coll_, g2), "gen2");
  EXPECT_EQ(read_all(coll_, s5), "snap5");
}

// ---- split and merge

TEST_F(CollTest, SplitMovesObjectsMatchingTheHashBits) {
  make_coll("5.0_head", 1);
  Transaction t;
  for (uint32_t i = 0; i < 64; ++i) {
    ObjectId o = hashed("s" + std::to_string(i), i * 0x9E3779B1u);
    t.write("5.0_head", o, 0, "d" + std::to_string(i));
    t.omap_setkeys("5.0_head", o, {{"k", std::to_string(i)}});
  }
  apply(std::move(t));
  Transaction s;
  s.create_collection("5.2_head", 2);
  s.split_collection("5.0_head", 2, 2, "5.2_head");
  apply(std::move(s));
  auto parent = list_all("5.0_head");
  auto child = list_all("5.2_head");
  EXPECT_EQ(parent.size() + child.size(), 64u);
  EXPECT_FALSE(child.empty());
  for (const auto& o : parent) EXPECT_FALSE(o.matches(2, 2));
  for (const auto& o : child) {
    EXPECT_TRUE(o.matches(2, 2));
    std::string idx = o.name.substr(1);
    EXPECT_EQ(read_all("5.2_head", o), "d" + idx);
    std::map<std::string, std::string> vals;
    ASSERT_EQ(store_->omap_get_values("5.2_head", o, {"k"}, &vals), 0);
    EXPECT_EQ(vals["k"], idx);
  }
  EXPECT_EQ(store_->collection_bits("5.0_head"), 2);
}

TEST_F(CollTest, MergeBringsEverythingBackAndRemovesTheSource) {
  make_coll("6.0_head", 1);
  Transaction t;
  for (uint32_t i = 0; i < 40; ++i) t.touch("6.0_head", hashed("m" + std::to_string(i), i * 0x9E3779B1u));
  apply(std::move(t));
  Transaction s;
  s.create_collection("6.1_head", 1);
  s.split_collection("6.0_head", 1, 1, "6.1_head");
  apply(std::move(s));
  ASSERT_FALSE(list_all("6.1_head").empty());
  Transaction m;
  m.merge_collection("6.1_head", "6.0_head", 0);
  apply(std::move(m));
  ASSERT_EQ(store_->flush(), 0);
  EXPECT_FALSE(store_->collection_exists("6.1_head"));
  EXPECT_EQ(list_all("6.0_head").size(), 40u);
  EXPECT_EQ(store_->collection_bits("6.0_head"), 0);
}

TEST_F(CollTest, SplitWithClonesKeepsEachCloneWithItsHead) {
  make_coll("8.0_head", 0);
  Transaction t;
  for (uint32_t i = 0; i < 20; ++i) {
    ObjectId o = hashed("c" + std::to_string(i), i * 0x9E3779B1u);
    ObjectId clone = o;
    clone.snap = 1;
    t.write("8.0_head", o, 0, "head");
    t.clone("8.0_head", o, clone);
  }
  apply(std::move(t));
  Transaction s;
  s.create_collection("8.1_head", 1);
  s.split_collection("8.0_head", 1, 1, "8.1_head");
  apply(std::move(s));
  for (const auto& c : {"8.0_head", "8.1_head"}) {
    auto objs = list_all(c);
    EXPECT_EQ(objs.size() % 2, 0u);
    for (const auto& o : objs) EXPECT_EQ(read_all(c, o), "head");
  }
}

// ---- transactions

TEST_F(CollTest, AFailedTransactionLeavesNothingBehind) {
  make_coll(coll_);
  Transaction setup;
  setup.write(coll_, obj("keep"), 0, "original");
  apply(std::move(setup));
  StoreStats before;
  ASSERT_EQ(store_->statfs(&before), 0);
  Transaction t;
  t.write(coll_, obj("keep"), 0, std::string(100000, 'X'));
  t.write(coll_, obj("new"), 0, "new object");
  t.setattr(coll_, obj("keep"), "a", "1");
  t.omap_setkeys(coll_, obj("keep"), {{"k", "v"}});
  t.create_collection("3.0_head", 0);
  t.clone(coll_, obj("missing"), obj("x"));  // fails
  TxnError e;
  EXPECT_EQ(try_apply(std::move(t), &e), -ENOENT);
  EXPECT_EQ(e.op_index, 5);
  EXPECT_EQ(e.op, "clone");
  EXPECT_EQ(read_all(coll_, obj("keep")), "original");
  EXPECT_FALSE(store_->exists(coll_, obj("new")));
  std::string v;
  EXPECT_EQ(store_->getattr(coll_, obj("keep"), "a", &v), -ENODATA);
  EXPECT_FALSE(store_->collection_exists("3.0_head"));
  StoreStats after;
  ASSERT_EQ(store_->statfs(&after), 0);
  for (int t = 0; t < after.tiers; ++t) EXPECT_EQ(after.tier[t].free, before.tier[t].free);
  EXPECT_EQ(after.objects, before.objects);
}

TEST_F(CollTest, OnCommitCallbacksRunInSubmissionOrderAfterDurability) {
  make_coll(coll_);
  std::mutex m;
  std::condition_variable cv;
  std::vector<int> order;
  for (int i = 0; i < 50; ++i) {
    Transaction t;
    t.write(coll_, obj("o" + std::to_string(i % 5)), static_cast<uint64_t>(i) * 10, "x");
    t.register_on_commit([&, i] {
      std::lock_guard<std::mutex> l(m);
      order.push_back(i);
      cv.notify_all();
    });
    apply(std::move(t));
  }
  std::unique_lock<std::mutex> l(m);
  cv.wait(l, [&] { return order.size() == 50; });
  for (int i = 0; i < 50; ++i) EXPECT_EQ(order[i], i);
}

TEST_F(CollTest, OnAppliedRunsBeforeQueueReturns) {
  make_coll(coll_);
  bool applied = false;
  Transaction t;
  t.touch(coll_, obj("a"));
  t.register_on_applied([&] { applied = true; });
  apply(std::move(t));
  EXPECT_TRUE(applied);
}

TEST_F(CollTest, ATransactionVectorIsOneAtomicUnit) {
  make_coll(coll_);
  std::vector<Transaction> v(2);
  v[0].write(coll_, obj("first"), 0, "1");
  v[1].clone(coll_, obj("missing"), obj("x"));
  TxnError e;
  EXPECT_EQ(store_->queue_transactions(std::move(v), &e), -ENOENT);
  EXPECT_EQ(e.txn_index, 1);
  EXPECT_FALSE(store_->exists(coll_, obj("first")));
}

TEST_F(CollTest, AppendedTransactionBehavesLikeTheOriginal) {
  make_coll(coll_);
  Transaction a, b;
  a.write(coll_, obj("x"), 0, "abc");
  b.write(coll_, obj("x"), 3, "def");
  b.setattr(coll_, obj("x"), "k", "v");
  a.append(std::move(b));
  EXPECT_TRUE(b.empty());
  apply(std::move(a));
  EXPECT_EQ(read_all(coll_, obj("x")), "abcdef");
}

TEST_F(CollTest, AllocHintOnARemovedObjectIsANoop) {
  make_coll(coll_);
  Transaction t;
  t.touch(coll_, obj("h"));
  t.set_alloc_hint(coll_, obj("h"), 4 << 20, 4 << 20, kHintRandomWrite);
  t.remove(coll_, obj("h"));
  t.set_alloc_hint(coll_, obj("h"), 4 << 20, 4 << 20, 0);
  apply(std::move(t));
  EXPECT_FALSE(store_->exists(coll_, obj("h")));
}

TEST_F(CollTest, ConcurrentWritersOnManyCollectionsAllLand) {
  for (int c = 0; c < 8; ++c) make_coll("9." + std::to_string(c) + "_head");
  std::atomic<int> commits{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < 8; ++c)
    threads.emplace_back([&, c] {
      CollectionId cid("9." + std::to_string(c) + "_head");
      for (int i = 0; i < 40; ++i) {
        Transaction t;
        t.write(cid, obj("w" + std::to_string(i)), 0, std::string(3000 + i, static_cast<char>('a' + c)));
        t.register_on_commit([&] { commits++; });
        ASSERT_EQ(store_->queue_transaction(std::move(t)), 0);
      }
    });
  for (auto& th : threads) th.join();
  ASSERT_EQ(store_->flush(), 0);
  EXPECT_EQ(commits.load(), 320);
  for (int c = 0; c < 8; ++c) {
    CollectionId cid("9." + std::to_string(c) + "_head");
    EXPECT_EQ(list_all(cid).size(), 40u);
    EXPECT_EQ(read_all(cid, obj("w7")), std::string(3007, static_cast<char>('a' + c)));
  }
  EXPECT_EQ(fsck_errors(), 0);
}

// ---- lifecycle

TEST_F(CollTest, EverythingCommittedSurvivesRemount) {
  make_coll(coll_, 3);
  Transaction t;
  t.write(coll_, obj("d"), 0, std::string(50000, 'd'));
  t.write(coll_, obj("big"), 0, std::string(2 << 20, 'b'));
  t.setattr(coll_, obj("d"), "a", "1");
  t.omap_setheader(coll_, obj("d"), "h");
  t.omap_setkeys(coll_, obj("d"), {{"k", "v"}});
  apply(std::move(t));
  StoreStats before;
  ASSERT_EQ(store_->statfs(&before), 0);
  remount();
  EXPECT_EQ(store_->collection_bits(coll_), 3);
  EXPECT_EQ(read_all(coll_, obj("d")), std::string(50000, 'd'));
  EXPECT_EQ(read_all(coll_, obj("big")), std::string(2 << 20, 'b'));
  std::string v;
  EXPECT_EQ(store_->getattr(coll_, obj("d"), "a", &v), 0);
  std::map<std::string, std::string> m;
  std::string h;
  ASSERT_EQ(store_->omap_get(coll_, obj("d"), &h, &m), 0);
  EXPECT_EQ(h, "h");
  EXPECT_EQ(m.size(), 1u);
  StoreStats after;
  ASSERT_EQ(store_->statfs(&after), 0);
  for (int t = 0; t < after.tiers; ++t) EXPECT_EQ(after.tier[t].free, before.tier[t].free);
  EXPECT_EQ(after.objects, 2u);
  EXPECT_EQ(after.data_bytes, 50000u + (2u << 20));
}

TEST_F(CollTest, RemoveEverythingThenRemountShowsAnEmptyStore) {
  make_coll(coll_);
  Transaction t;
  t.write(coll_, obj("a"), 0, "x");
  apply(std::move(t));
  remount();
  Transaction t2;
  t2.remove(coll_, obj("a"));
  t2.remove_collection(coll_);
  apply(std::move(t2));
  remount();
  EXPECT_TRUE(store_->list_collections().empty());
  make_coll(coll_);
  EXPECT_FALSE(store_->exists(coll_, obj("a")));
}

TEST_F(CollTest, MkfsOnAnExistingStoreIsHarmless) {
  make_coll(coll_);
  Transaction t;
  t.write(coll_, obj("a"), 0, "keep me");
  apply(std::move(t));
  ASSERT_EQ(store_->umount(), 0);
  HybridStore again(dir_->path() + "/store", config());
  std::string err;
  ASSERT_EQ(again.mkfs(&err), 0) << err;
  ASSERT_EQ(again.mount(&err), 0) << err;
  std::string out;
  EXPECT_EQ(again.read(coll_, obj("a"), 0, 0, &out), 7);
  EXPECT_EQ(again.umount(), 0);
  ASSERT_EQ(store_->mount(&err), 0) << err;
}

TEST_F(CollTest, ASecondMountOfAMountedStoreIsRefused) {
  HybridStore other(dir_->path() + "/store", config());
  std::string err;
  EXPECT_EQ(other.mount(&err), -EBUSY);
  EXPECT_NE(err.find("in use"), std::string::npos);
}

TEST_F(CollTest, MountingANonStoreFailsClearly) {
  HybridStore nothing(dir_->path() + "/nothing", config());
  std::string err;
  EXPECT_EQ(nothing.mount(&err), -ENOENT);
  EXPECT_NE(err.find("mkfs"), std::string::npos);
}

TEST_F(CollTest, StatfsCountsPerTierAndFreesOnRemove) {
  make_coll(coll_);
  StoreStats empty;
  ASSERT_EQ(store_->statfs(&empty), 0);
  Transaction t;
  t.write(coll_, obj("s"), 0, std::string(40960, 's'));
  t.write(coll_, obj("h"), 0, std::string(4 << 20, 'h'));
  apply(std::move(t));
  StoreStats full;
  ASSERT_EQ(store_->statfs(&full), 0);
  EXPECT_EQ(full.tier[0].allocated - empty.tier[0].allocated, 40960u);
  EXPECT_EQ(full.tier[1].allocated - empty.tier[1].allocated, 4u << 20);
  EXPECT_EQ(empty.tier[1].free - full.tier[1].free, 4u << 20);
  Transaction r;
  r.remove(coll_, obj("s"));
  r.remove(coll_, obj("h"));
  apply(std::move(r));
  StoreStats again;
  ASSERT_EQ(store_->statfs(&again), 0);
  EXPECT_EQ(again.tier[0].allocated, empty.tier[0].allocated);
  EXPECT_EQ(again.tier[1].free, empty.tier[1].free);
}

}  // namespace

// A data directory can be made again (copied, or rebuilt from the labels), so
// two directories may name the same devices: the devices themselves must
// refuse a second user, or two stores would write one device.
TEST(DeviceLock, AStoreWhoseDevicesAnotherMountHoldsIsRefused) {
  hybridstore::test::TempDir dir("devlock");
  Config cfg = hybridstore::test::small_store_config();
  std::string err;
  ASSERT_EQ(cfg.set("hybridstore_ssd_path", dir.file("ssd.img"), &err), 0) << err;
  ASSERT_EQ(cfg.set("hybridstore_hdd_path", dir.file("hdd.img"), &err), 0) << err;
  const std::string a_path = dir.file("a"), b_path = dir.file("b");
  {
    HybridStore a(a_path, cfg);
    ASSERT_EQ(a.mkfs(&err), 0) << err;
  }
  std::filesystem::copy(a_path, b_path,
                        std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
  HybridStore a(a_path, cfg);
  ASSERT_EQ(a.mount(&err), 0) << err;
  HybridStore b(b_path, hybridstore::test::small_store_config());
  EXPECT_EQ(b.mount(&err), -EBUSY);
  EXPECT_NE(err.find("in use"), std::string::npos) << err;
  EXPECT_NE(err.find("img"), std::string::npos) << "names the device: " << err;
  {
    HybridStore c(dir.file("c"), cfg);
    EXPECT_EQ(c.mkfs(&err), -EBUSY) << "mkfs never writes labels over a mounted store's devices: " << err;
  }
  ASSERT_EQ(a.umount(), 0);
  // The same object tries again once the devices are free, as the crash
  // harness does while a killed workload's lock lingers.
  err.clear();
  ASSERT_EQ(b.mount(&err), 0) << "the copy mounts once the devices are free: " << err;
  EXPECT_EQ(b.umount(), 0);
}
