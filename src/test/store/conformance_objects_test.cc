// Conformance: attributes, clones, omap and renames.
#include <set>

#include "store_helpers.h"

using namespace hybridstore;
using hybridstore::test::StoreTest;

namespace {

class ObjectsTest : public StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    make_coll(coll_);
  }
  void put(const ObjectId& o, const std::string& data) {
    Transaction t;
    t.write(coll_, o, 0, data);
    apply(std::move(t));
  }
  std::map<std::string, std::string> omap(const ObjectId& o, std::string* header = nullptr) {
    std::string h;
    std::map<std::string, std::string> m;
    EXPECT_EQ(store_->omap_get(coll_, o, &h, &m), 0);
    if (header) *header = h;
    return m;
  }
};

// ---- attributes

TEST_F(ObjectsTest, SetattrThenGetattr) {
  put(obj("a"), "x");
  Transaction t;
  t.setattr(coll_, obj("a"), "_", "object_info");
  t.setattr(coll_, obj("a"), "snapset", "ss");
  apply(std::move(t));
  std::string v;
  ASSERT_EQ(store_->getattr(coll_, obj("a"), "_", &v), 0);
  EXPECT_EQ(v, "object_info");
  std::map<std::string, std::string> all;
  ASSERT_EQ(store_->getattrs(coll_, obj("a"), &all), 0);
  EXPECT_EQ(all.size(), 2u);
}

TEST_F(ObjectsTest, GetattrMissingObjectIsENOENTMissingAttrIsENODATA) {
  std::string v;
  EXPECT_EQ(store_->getattr(coll_, obj("none"), "x", &v), -ENOENT);
  put(obj("a"), "x");
  EXPECT_EQ(store_->getattr(coll_, obj("a"), "x", &v), -ENODATA);
}

TEST_F(ObjectsTest, SetattrReplacesAndRmattrRemoves) {
  put(obj("a"), "x");
  Transaction t;
  t.setattrs(coll_, obj("a"), {{"k1", "v1"}, {"k2", "v2"}, {"k3", "v3"}});
  t.setattr(coll_, obj("a"), "k1", "v1b");
  t.rmattr(coll_, obj("a"), "k2");
  t.rmattr(coll_, obj("a"), "never-set");
  apply(std::move(t));
  std::map<std::string, std::string> all;
  ASSERT_EQ(store_->getattrs(coll_, obj("a"), &all), 0);
  EXPECT_EQ(all, (std::map<std::string, std::string>{{"k1", "v1b"}, {"k3", "v3"}}));
  Transaction t2;
  t2.rmattrs(coll_, obj("a"));
  apply(std::move(t2));
  ASSERT_EQ(store_->getattrs(coll_, obj("a"), &all), 0);
  EXPECT_TRUE(all.empty());
}

TEST_F(ObjectsTest, LargeAttrValuesSurviveRemount) {
  put(obj("a"), "x");
  std::string big = hybridstore::test::random_bytes(rng_, 10000);
  Transaction t;
  t.setattr(coll_, obj("a"), "big", big);
  t.setattr(coll_, obj("a"), "small", std::string(10, 's'));
  apply(std::move(t));
  remount();
  std::string v;
  ASSERT_EQ(store_->getattr(coll_, obj("a"), "big", &v), 0);
  EXPECT_EQ(v, big);
}

TEST_F(ObjectsTest, SetattrOnMissingObjectFails) {
  Transaction t;
  t.setattr(coll_, obj("none"), "k", "v");
  TxnError e;
  EXPECT_EQ(try_apply(std::move(t), &e), -ENOENT);
  EXPECT_EQ(e.op, "setattrs");
  EXPECT_FALSE(store_->exists(coll_, obj("none")));
}

TEST_F(ObjectsTest, OverlongAttrNameIsRejected) {
  put(obj("a"), "x");
  Transaction t;
  t.setattr(coll_, obj("a"), std::string(300, 'n'), "v");
  EXPECT_EQ(try_apply(std::move(t)), -ENAMETOOLONG);
}

// ---- clone

TEST_F(ObjectsTest, CloneCopiesDataAttrsAndOmap) {
  put(obj("src"), "payload-bytes");
  Transaction t;
  t.setattr(coll_, obj("src"), "a", "1");
  t.omap_setheader(coll_, obj("src"), "hdr");
  t.omap_setkeys(coll_, obj("src"), {{"k", "v"}});
  t.clone(coll_, obj("src"), obj("dst"));
  apply(std::move(t));
  EXPECT_EQ(read_all(coll_, obj("dst")), "payload-bytes");
  std::string v;
  ASSERT_EQ(store_->getattr(coll_, obj("dst"), "a", &v), 0);
  EXPECT_EQ(v, "1");
  std::string h;
  auto m = omap(obj("dst"), &h);
  EXPECT_EQ(h, "hdr");
  EXPECT_EQ(m, (std::map<std::string, std::string>{{"k", "v"}}));
}

TEST_F(ObjectsTest, CloneIsIndependentOfLaterWritesToEitherSide) {
  std::string base(100000, 'b');
  put(obj("src"), base);
  Transaction t;
  t.clone(coll_, obj("src"), obj("dst"));
  t.write(coll_, obj("src"), 10, "SRC");
  t.write(coll_, obj("dst"), 20, "DST");
  t.setattr(coll_, obj("dst"), "only-dst", "1");
  t.omap_setkeys(coll_, obj("src"), {{"only-src", "1"}});
  apply(std::move(t));
  std::string s = base, d = base;
  s.replace(10, 3, "SRC");
  d.replace(20, 3, "DST");
  EXPECT_EQ(read_all(coll_, obj("src")), s);
  EXPECT_EQ(read_all(coll_, obj("dst")), d);
  std::string v;
  EXPECT_EQ(store_->getattr(coll_, obj("src"), "only-dst", &v), -ENODATA);
  EXPECT_TRUE(omap(obj("dst")).empty());
  remount();
  EXPECT_EQ(read_all(coll_, obj("src")), s);
  EXPECT_EQ(read_all(coll_, obj("dst")), d);
}

TEST_F(ObjectsTest, CloneOverExistingDestinationReplacesIt) {
  put(obj("src"), "short");
  put(obj("dst"), std::string(50000, 'd'));
  Transaction t;
  t.setattr(coll_, obj("dst"), "old", "1");
  t.omap_setkeys(coll_, obj("dst"), {{"old", "1"}});
  t.clone(coll_, obj("src"), obj("dst"));
  apply(std::move(t));
  EXPECT_EQ(read_all(coll_, obj("dst")), "short");
  std::string v;
  EXPECT_EQ(store_->getattr(coll_, obj("dst"), "old", &v), -ENODATA);
  EXPECT_TRUE(omap(obj("dst")).empty());
}

TEST_F(ObjectsTest, CloneOfMissingSourceFailsAndLeavesNothing) {
  Transaction t;
  t.touch(coll_, obj("side-effect"));
  t.clone(coll_, obj("none"), obj("dst"));
  TxnError e;
  EXPECT_EQ(try_apply(std::move(t), &e), -ENOENT);
  EXPECT_EQ(e.op_index, 1);
  EXPECT_FALSE(store_->exists(coll_, obj("side-effect")));
  EXPECT_FALSE(store_->exists(coll_, obj("dst")));
}

TEST_F(ObjectsTest, CloneRangeIntoNewObject) {
  put(obj("src"), "0123456789abcdef");
  Transaction t;
  t.clone_range(coll_, obj("src"), obj("dst"), 4, 6, 100);
  apply(std::move(t));
  std::string d = read_all(coll_, obj("dst"));
  ASSERT_EQ(d.size(), 106u);
  EXPECT_EQ(d.substr(0, 100), std::string(100, '\0'));
  EXPECT_EQ(d.substr(100), "456789");
}

TEST_F(ObjectsTest, CloneRangeIntoExistingObjectOverwritesAndGrows) {
  put(obj("src"), std::string(20000, 's'));
  put(obj("dst"), std::string(10000, 'd'));
  Transaction t;
  t.clone_range(coll_, obj("src"), obj("dst"), 0, 8000, 5000);
  apply(std::move(t));
  std::string d = read_all(coll_, obj("dst"));
  ASSERT_EQ(d.size(), 13000u);
  EXPECT_EQ(d.substr(0, 5000), std::string(5000, 'd'));
  EXPECT_EQ(d.substr(5000), std::string(8000, 's'));
}

TEST_F(ObjectsTest, CloneRangeKeepsSourceHolesSparse) {
  Transaction t;
  t.write(coll_, obj("src"), 0, std::string(4096, 'a'));
  t.write(coll_, obj("src"), 1 << 19, std::string(4096, 'b'));
  t.clone_range(coll_, obj("src"), obj("dst"), 0, (1 << 19) + 4096, 0);
  apply(std::move(t));
  ObjectStat st;
  ASSERT_EQ(store_->stat(coll_, obj("dst"), &st), 0);
  EXPECT_EQ(st.size, (1u << 19) + 4096);
  EXPECT_LT(st.allocated, 64u * 1024);
  EXPECT_EQ(read_all(coll_, obj("dst")), read_all(coll_, obj("src")));
}

TEST_F(ObjectsTest, CloneRangeOutsideSourceIsInvalid) {
  put(obj("src"), "tiny");
  Transaction t;
  t.clone_range(coll_, obj("src"), obj("dst"), 2, 10, 0);
  EXPECT_EQ(try_apply(std::move(t)), -EINVAL);
  EXPECT_FALSE(store_->exists(coll_, obj("dst")));
}

// ---- omap

TEST_F(ObjectsTest, OmapSetKeysThenReadThemBack) {
  put(obj("o"), "");
  Transaction t;
  t.omap_setkeys(coll_, obj("o"), {{"b", "2"}, {"a", "1"}, {"c", std::string(100000, 'v')}});
  apply(std::move(t));
  auto m = omap(obj("o"));
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m["c"].size(), 100000u);
  std::set<std::string> keys;
  ASSERT_EQ(store_->omap_get_keys(coll_, obj("o"), &keys), 0);
  EXPECT_EQ(keys, (std::set<std::string>{"a", "b", "c"}));
  std::map<std::string, std::string> vals;
  ASSERT_EQ(store_->omap_get_values(coll_, obj("o"), {"a", "zz"}, &vals), 0);
  EXPECT_EQ(vals, (std::map<std::string, std::string>{{"a", "1"}}));
  std::set<std::string> present;
  ASSERT_EQ(store_->omap_check_keys(coll_, obj("o"), {"b", "q"}, &present), 0);
  EXPECT_EQ(present, (std::set<std::string>{"b"}));
}

TEST_F(ObjectsTest, OmapHeaderIsSeparateFromKeys) {
  put(obj("o"), "");
  Transaction t;
  t.omap_setheader(coll_, obj("o"), "the header");
  apply(std::move(t));
  std::string h;
  EXPECT_TRUE(omap(obj("o"), &h).empty());
  EXPECT_EQ(h, "the header");
  ASSERT_EQ(store_->omap_get_header(coll_, obj("o"), &h), 0);
  EXPECT_EQ(h, "the header");
  auto it = store_->get_omap_iterator(coll_, obj("o"));
  ASSERT_TRUE(it);
  EXPECT_FALSE(it->valid());
}

TEST_F(ObjectsTest, OmapRmKeysIgnoresAbsentKeys) {
  put(obj("o"), "");
  Transaction t;
  t.omap_setkeys(coll_, obj("o"), {{"a", "1"}, {"b", "2"}});
  t.omap_rmkeys(coll_, obj("o"), {"a", "nope"});
  apply(std::move(t));
  EXPECT_EQ(omap(obj("o")), (std::map<std::string, std::string>{{"b", "2"}}));
}

TEST_F(ObjectsTest, OmapRmKeyRangeIsHalfOpen) {
  put(obj("o"), "");
  std::map<std::string, std::string> kv;
  for (int i = 0; i < 10; ++i) kv[std::to_string(i)] = "v";
  Transaction t;
  t.omap_setkeys(coll_, obj("o"), kv);
  apply(std::move(t));
  Transaction t2;
  t2.omap_rmkeyrange(coll_, obj("o"), "3", "7");
  apply(std::move(t2));
  std::set<std::string> keys;
  ASSERT_EQ(store_->omap_get_keys(coll_, obj("o"), &keys), 0);
  EXPECT_EQ(keys, (std::set<std::string>{"0", "1", "2", "7", "8", "9"}));
}

// Range removal and clone read keys back through the transaction's own
// batch: what earlier ops of the transaction wrote counts, and what later
// ops write after the read lands too.
TEST_F(ObjectsTest, OmapRangeOpsSeeAndKeepTheSameTransactionsWrites) {
  put(obj("o"), "data");
  Transaction base;
  base.omap_setkeys(coll_, obj("o"), {{"1", "committed"}, {"5", "committed"}});
  apply(std::move(base));
  Transaction t;
  t.omap_setkeys(coll_, obj("o"), {{"2", "this txn"}, {"4", "this txn"}, {"8", "this txn"}});
  t.omap_setheader(coll_, obj("o"), "hdr");
  t.omap_rmkeyrange(coll_, obj("o"), "2", "5");  // takes 2 and 4 of this txn, keeps 1 and 5
  t.omap_setkeys(coll_, obj("o"), {{"3", "after the range"}});
  t.clone(coll_, obj("o"), obj("copy"));
  t.omap_setkeys(coll_, obj("copy"), {{"9", "copy only"}});
  apply(std::move(t));
  const std::map<std::string, std::string> want{
      {"1", "committed"}, {"3", "after the range"}, {"5", "committed"}, {"8", "this txn"}};
  std::string h;
  EXPECT_EQ(omap(obj("o"), &h), want);
  EXPECT_EQ(h, "hdr");
  auto copy_want = want;
  copy_want["9"] = "copy only";
  EXPECT_EQ(omap(obj("copy"), &h), copy_want);
  EXPECT_EQ(h, "hdr");
  EXPECT_EQ(read_all(coll_, obj("copy")), "data");
  remount();
  EXPECT_EQ(omap(obj("o")), want);
  EXPECT_EQ(omap(obj("copy")), copy_want);
}

TEST_F(ObjectsTest, OmapClearRemovesHeaderAndKeys) {
  put(obj("o"), "");
  Transaction t;
  t.omap_setheader(coll_, obj("o"), "h");
  t.omap_setkeys(coll_, obj("o"), {{"a", "1"}});
  apply(std::move(t));
  Transaction t2;
  t2.omap_clear(coll_, obj("o"));
  apply(std::move(t2));
  std::string h = "x";
  EXPECT_TRUE(omap(obj("o"), &h).empty());
  EXPECT_EQ(h, "");
}

TEST_F(ObjectsTest, OmapIteratorWalksKeysInOrderWithBounds) {
  put(obj("o"), "");
  Transaction t;
  t.omap_setkeys(coll_, obj("o"), {{"b", "2"}, {"d", "4"}, {"a", "1"}, {"c", "3"}});
  t.omap_setheader(coll_, obj("o"), "not a key");
  apply(std::move(t));
  auto it = store_->get_omap_iterator(coll_, obj("o"));
  ASSERT_TRUE(it);
  std::string seen;
  for (it->seek_to_first(); it->valid(); it->next()) seen += it->key() + it->value();
  EXPECT_EQ(seen, "a1b2c3d4");
  it->lower_bound("b");
  ASSERT_TRUE(it->valid());
  EXPECT_EQ(it->key(), "b");
  it->upper_bound("b");
  ASSERT_TRUE(it->valid());
  EXPECT_EQ(it->key(), "c");
  it->lower_bound("bb");
  EXPECT_EQ(it->key(), "c");
  it->upper_bound("d");
  EXPECT_FALSE(it->valid());
  EXPECT_EQ(store_->get_omap_iterator(coll_, obj("none")), nullptr);
}

TEST_F(ObjectsTest, OmapKeysAddedLaterAreSeenByANewIterator) {
  put(obj("o"), "");
  Transaction t;
  t.omap_setkeys(coll_, obj("o"), {{"a", "1"}});
  apply(std::move(t));
  Transaction t2;
  t2.omap_setkeys(coll_, obj("o"), {{"b", "2"}});
  apply(std::move(t2));
  auto it = store_->get_omap_iterator(coll_, obj("o"));
  int n = 0;
  for (; it->valid(); it->next()) ++n;
  EXPECT_EQ(n, 2);
}

TEST_F(ObjectsTest, OmapOpsOnMissingObjectFail) {
  Transaction t;
  t.omap_setkeys(coll_, obj("none"), {{"a", "1"}});
  EXPECT_EQ(try_apply(std::move(t)), -ENOENT);
  std::map<std::string, std::string> m;
  std::string h;
  EXPECT_EQ(store_->omap_get(coll_, obj("none"), &h, &m), -ENOENT);
}

TEST_F(ObjectsTest, RemovedObjectTakesItsOmapAlong) {
  put(obj("o"), "");
  Transaction t;
  t.omap_setkeys(coll_, obj("o"), {{"a", "1"}});
  t.omap_setheader(coll_, obj("o"), "h");
  apply(std::move(t));
  Transaction t2;
  t2.remove(coll_, obj("o"));
  t2.touch(coll_, obj("o"));
  apply(std::move(t2));
  std::string h;
  EXPECT_TRUE(omap(obj("o"), &h).empty());
  EXPECT_EQ(h, "");
}

// ---- rename

TEST_F(ObjectsTest, MoveRenameCarriesDataAttrsAndOmap) {
  put(obj("tmp"), "contents");
  Transaction t;
  t.setattr(coll_, obj("tmp"), "a", "1");
  t.omap_setkeys(coll_, obj("tmp"), {{"k", "v"}});
  t.collection_move_rename(coll_, obj("tmp"), coll_, obj("final"));
  apply(std::move(t));
  EXPECT_FALSE(store_->exists(coll_, obj("tmp")));
  EXPECT_EQ(read_all(coll_, obj("final")), "contents");
  std::string v;
  EXPECT_EQ(store_->getattr(coll_, obj("final"), "a", &v), 0);
  EXPECT_EQ(omap(obj("final")).size(), 1u);
  remount();
  EXPECT_EQ(read_all(coll_, obj("final")), "contents");
  EXPECT_EQ(omap(obj("final")).size(), 1u);
}

TEST_F(ObjectsTest, RenameOntoExistingObjectFailsWithEEXIST) {
  put(obj("a"), "A");
  put(obj("b"), "B");
  Transaction t;
  t.collection_move_rename(coll_, obj("a"), coll_, obj("b"));
  EXPECT_EQ(try_apply(std::move(t)), -EEXIST);
  EXPECT_EQ(read_all(coll_, obj("a")), "A");
  EXPECT_EQ(read_all(coll_, obj("b")), "B");
}

TEST_F(ObjectsTest, RemoveThenRenameReplacesTheDestination) {
  put(obj("tmp"), "new");
  put(obj("dst"), "old");
  Transaction t;
  t.omap_setkeys(coll_, obj("dst"), {{"old", "1"}});
  t.remove(coll_, obj("dst"));
  t.collection_move_rename(coll_, obj("tmp"), coll_, obj("dst"));
  apply(std::move(t));
  EXPECT_EQ(read_all(coll_, obj("dst")), "new");
  EXPECT_TRUE(omap(obj("dst")).empty());
  EXPECT_FALSE(store_->exists(coll_, obj("tmp")));
}

TEST_F(ObjectsTest, RenamedSourceNameIsFreeInTheSameTransaction) {
  put(obj("src"), "first");
  Transaction t;
  t.collection_move_rename(coll_, obj("src"), coll_, obj("dst"));
  t.write(coll_, obj("src"), 0, "second");
  t.setattr(coll_, obj("src"), "a", "2");
  apply(std::move(t));
  EXPECT_EQ(read_all(coll_, obj("dst")), "first");
  EXPECT_EQ(read_all(coll_, obj("src")), "second");
  std::string v;
  EXPECT_EQ(store_->getattr(coll_, obj("dst"), "a", &v), -ENODATA);
}

TEST_F(ObjectsTest, TryRenameOfMissingSourceIsANoop) {
  Transaction t;
  t.try_rename(coll_, obj("none"), obj("dst"));
  apply(std::move(t));
  EXPECT_FALSE(store_->exists(coll_, obj("dst")));
  put(obj("src"), "x");
  Transaction t2;
  t2.try_rename(coll_, obj("src"), obj("dst"));
  apply(std::move(t2));
  EXPECT_EQ(read_all(coll_, obj("dst")), "x");
}

TEST_F(ObjectsTest, RenameAcrossCollections) {
  CollectionId other("1.1_head");
  make_coll(other);
  put(obj("a"), "moving");
  Transaction t;
  t.collection_move_rename(coll_, obj("a"), other, obj("b"));
  apply(std::move(t));
  EXPECT_FALSE(store_->exists(coll_, obj("a")));
  EXPECT_EQ(read_all(other, obj("b")), "moving");
}

TEST_F(ObjectsTest, ObjectNameWithEveryByteSurvivesRemount) {
  std::string name;
  for (int i = 0; i < 256; ++i) name.push_back(static_cast<char>(i));
  ObjectId o = ObjectId::from_name(name, 1);
  o.nspace = std::string("\0\x01ns", 4);
  o.key = std::string("\x01\0k", 3);
  Transaction t;
  t.write(coll_, o, 0, "weird");
  apply(std::move(t));
  remount();
  EXPECT_EQ(read_all(coll_, o), "weird");
  std::vector<ObjectId> ls;
  ObjectId next;
  ASSERT_EQ(store_->collection_list(coll_, ObjectId::make_min(), ObjectId::make_max(), 10, &ls, &next), 0);
  ASSERT_EQ(ls.size(), 1u);
  EXPECT_EQ(ls[0], o);
  EXPECT_EQ(ls[0].name, name);
}

}  // namespace
