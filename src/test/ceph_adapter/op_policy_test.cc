// The Ceph adapter's op table and error policy, without Ceph: every op code
// the OSD can send has a rule, the tolerated-ENOENT set is exactly the
// contract's, and each translated op does on a real store what Ceph's
// ObjectStore does.
#include <gtest/gtest.h>

#include <set>

#include "hybridstore/ceph/op_policy.h"
#include "store_helpers.h"

namespace hybridstore::test {
namespace {

using ceph_adapter::CephOp;
using ceph_adapter::DecodedOp;
using ceph_adapter::Disposition;
using ceph_adapter::find_op_rule;
using ceph_adapter::op_rules;
using ceph_adapter::translate_op;

// Ceph's Transaction op codes: 0 and 7..43 except 27 (never assigned).
std::set<uint32_t> ceph_codes() {
  std::set<uint32_t> s{0};
  for (uint32_t c = 7; c <= 43; ++c)
    if (c != 27) s.insert(c);
  return s;
}

TEST(OpPolicy, EveryCephOpCodeHasExactlyOneRule) {
  std::set<uint32_t> seen;
  for (const auto& r : op_rules()) {
    EXPECT_TRUE(seen.insert(static_cast<uint32_t>(r.op)).second) << r.name << " twice";
    if (r.disposition != Disposition::kApply) {
      EXPECT_NE(r.why, nullptr) << r.name;
    }
  }
  EXPECT_EQ(seen, ceph_codes());
  for (uint32_t c : {1u, 2u, 6u, 27u, 44u, 1000u}) EXPECT_EQ(find_op_rule(c), nullptr) << c;
}

TEST(OpPolicy, ToleratedEnoentIsExactlyTheContractList) {
  // shared/docs/ceph-objectstore-contract.md 2.3, plus the deprecated forms
  // of remove and move, which inherit it.
  const std::set<CephOp> expected = {CephOp::kTruncate,        CephOp::kRemove,     CephOp::kRmAttrs,
                                     CephOp::kOmapClear,       CephOp::kCollMoveRename, CephOp::kTryRename,
                                     CephOp::kSetAllocHint,    CephOp::kCollRemove, CephOp::kCollMove};
  std::set<CephOp> got;
  for (const auto& r : op_rules())
    if (r.enoent_tolerated) got.insert(r.op);
  EXPECT_EQ(got, expected);
  // What BlueStore treats as fatal stays fatal.
  for (CephOp op : {CephOp::kClone, CephOp::kCloneRange2, CephOp::kOmapSetKeys, CephOp::kOmapRmKeys,
                    CephOp::kOmapRmKeyRange, CephOp::kOmapSetHeader, CephOp::kSetAttrs, CephOp::kRmAttr})
    EXPECT_FALSE(find_op_rule(static_cast<uint32_t>(op))->enoent_tolerated) << find_op_rule(static_cast<uint32_t>(op))->name;
  EXPECT_TRUE(ceph_adapter::error_is_tolerated(static_cast<uint32_t>(CephOp::kRmAttr), -ENODATA));
  EXPECT_FALSE(ceph_adapter::error_is_tolerated(static_cast<uint32_t>(CephOp::kRmAttr), -ENOENT));
  EXPECT_FALSE(ceph_adapter::error_is_tolerated(static_cast<uint32_t>(CephOp::kWrite), -ENOSPC));
}

TEST(OpPolicy, RejectedAndUnknownCodesAreRefusedWithAReason) {
  Transaction t;
  for (const auto& r : op_rules()) {
    if (r.disposition != Disposition::kReject) continue;
    DecodedOp d;
    d.code = static_cast<uint32_t>(r.op);
    std::string why;
    EXPECT_EQ(translate_op(std::move(d), 0, &t, &why), -EOPNOTSUPP) << r.name;
    EXPECT_NE(why.find(r.name), std::string::npos) << why;
  }
  DecodedOp unknown;
  unknown.code = 27;
  std::string why;
  EXPECT_EQ(translate_op(std::move(unknown), 0, &t, &why), -EINVAL);
  EXPECT_TRUE(t.empty());
}

TEST(OpPolicy, AdviceIsDecodedAndDropped) {
  Transaction t;
  for (CephOp op : {CephOp::kNop, CephOp::kCollHint, CephOp::kTrimCache}) {
    DecodedOp d;
    d.code = static_cast<uint32_t>(op);
    d.cid = CollectionId("1.0_head");
    std::string why;
    EXPECT_EQ(translate_op(std::move(d), 0, &t, &why), 0);
  }
  EXPECT_TRUE(t.empty());
}

TEST(OpPolicy, ReadFlagsOfScrubAndRecoveryDoNotHeatAndReadTheMedia) {
  using ceph_adapter::engine_read_flags;
  EXPECT_EQ(engine_read_flags(0), 0u);
  EXPECT_EQ(engine_read_flags(0x8 /* SEQUENTIAL */), 0u);
  EXPECT_EQ(engine_read_flags(0x4 /* RANDOM */ | 0x10 /* WILLNEED */), 0u);
  EXPECT_EQ(engine_read_flags(0x20 /* DONTNEED */), kReadNoHeat | kReadUncached);
  EXPECT_EQ(engine_read_flags(0x40 /* NOCACHE */), kReadNoHeat | kReadUncached);
  EXPECT_EQ(engine_read_flags(0x100 /* BYPASS_CLEAN_CACHE */ | 0x8), kReadNoHeat | kReadUncached);
}

// The translated ops against a real store.
class OpTranslation : public StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    make_store();
    make_coll(coll_);
  }
  DecodedOp op(CephOp code, const std::string& name = "") {
    DecodedOp d;
    d.code = static_cast<uint32_t>(code);
    d.cid = coll_;
    if (!name.empty()) d.oid = obj(name);
    return d;
  }
  void add(Transaction* t, DecodedOp d, uint32_t fadvise = 0) {
    std::string why;
    ASSERT_EQ(translate_op(std::move(d), fadvise, t, &why), 0) << why;
  }
  DecodedOp write_op(const std::string& name, uint64_t off, const std::string& bytes) {
    auto owner = std::make_shared<std::string>(bytes);
    DecodedOp d = op(CephOp::kWrite, name);
    d.off = off;
    d.data.segments.emplace_back(owner->data(), owner->size());
    d.data.owner = owner;
    return d;
  }
};

TEST_F(OpTranslation, ToleratedOpsOnAMissingObjectLeaveTheRestOfTheTransaction) {
  Transaction t;
  for (CephOp code : {CephOp::kTruncate, CephOp::kRemove, CephOp::kRmAttrs, CephOp::kOmapClear,
                      CephOp::kSetAllocHint, CephOp::kCollRemove}) {
    DecodedOp d = op(code, "missing");
    d.expected_object_size = 4096;
    add(&t, std::move(d));
  }
  DecodedOp rename = op(CephOp::kTryRename, "missing");
  rename.dest_oid = obj("elsewhere");
  add(&t, std::move(rename));
  add(&t, write_op("present", 0, "abc"));
  apply(std::move(t));
  EXPECT_EQ(read_all(coll_, obj("present")), "abc");
  EXPECT_FALSE(store_->exists(coll_, obj("missing")));
  EXPECT_FALSE(store_->exists(coll_, obj("elsewhere")));
}

TEST_F(OpTranslation, OmapOpsOnAMissingObjectFailTheWholeTransaction) {
  // BlueStore aborts on these: the adapter must see the error, not skip it.
  for (CephOp code : {CephOp::kOmapRmKeys, CephOp::kOmapRmKeyRange, CephOp::kOmapSetHeader, CephOp::kRmAttr}) {
    Transaction t;
    add(&t, write_op("kept-out", 0, "x"));
    DecodedOp d = op(code, "missing");
    d.keys = {"a"};
    d.name = "a";
    d.name2 = "b";
    add(&t, std::move(d));
    TxnError err;
    EXPECT_EQ(try_apply(std::move(t), &err), -ENOENT) << find_op_rule(static_cast<uint32_t>(code))->name;
    EXPECT_FALSE(store_->exists(coll_, obj("kept-out")));
  }
}

TEST_F(OpTranslation, ScatteredWritePayloadIsSharedNotCopiedAndLandsInOrder) {
  auto owner = std::make_shared<std::vector<std::string>>(std::vector<std::string>{"first-", "second-", "third"});
  std::weak_ptr<std::vector<std::string>> watch = owner;
  {
    Transaction t;
    DecodedOp d = op(CephOp::kWrite, "obj");
    d.off = 10;
    for (const auto& s : *owner) d.data.segments.emplace_back(s.data(), s.size());
    // The engine reads the caller's memory: the pointers it gets are these.
    const char* first_segment = (*owner)[0].data();
    d.data.owner = std::move(owner);
    add(&t, std::move(d));
    ASSERT_EQ(t.ops().size(), 1u);
    EXPECT_EQ(t.ops()[0].scatter.segments.at(0).data(), first_segment);
    EXPECT_EQ(t.ops()[0].len, std::string("first-second-third").size());
    apply(std::move(t));
  }
  ASSERT_EQ(store_->flush(), 0);
  EXPECT_EQ(read_all(coll_, obj("obj")), std::string(10, '\0') + "first-second-third");
  // Released once the transaction is done with it.
  EXPECT_TRUE(watch.expired());
}

TEST_F(OpTranslation, DeprecatedMoveAndCloneRangeKeepTheirOldMeaning) {
  CollectionId other("1.1_head");
  make_coll(other);
  Transaction t;
  add(&t, write_op("src", 0, "0123456789"));
  DecodedOp cr = op(CephOp::kCloneRange, "src");
  cr.dest_oid = obj("dst");
  cr.off = 4;
  cr.len = 3;
  add(&t, std::move(cr));
  apply(std::move(t));
  // OP_CLONERANGE copies to the same offset in the destination.
  EXPECT_EQ(read_all(coll_, obj("dst")), std::string(4, '\0') + "456");

  Transaction m;
  DecodedOp mv = op(CephOp::kCollMove, "src");
  mv.dest_cid = other;
  add(&m, std::move(mv));
  apply(std::move(m));
  EXPECT_FALSE(store_->exists(coll_, obj("src")));
  EXPECT_EQ(read_all(other, obj("src")), "0123456789");
}

TEST_F(OpTranslation, AttrsOmapAndCollectionOps) {
  Transaction t;
  add(&t, op(CephOp::kTouch, "o"));
  DecodedOp sa = op(CephOp::kSetAttr, "o");
  sa.name = "_";
  sa.blob = "object-info";
  add(&t, std::move(sa));
  DecodedOp keys = op(CephOp::kOmapSetKeys, "o");
  keys.kv = {{"k1", "v1"}, {"k2", "v2"}, {"k3", "v3"}};
  add(&t, std::move(keys));
  DecodedOp hdr = op(CephOp::kOmapSetHeader, "o");
  hdr.blob = "header";
  add(&t, std::move(hdr));
  DecodedOp range = op(CephOp::kOmapRmKeyRange, "o");
  range.name = "k2";
  range.name2 = "k3";
  add(&t, std::move(range));
  DecodedOp hint = op(CephOp::kCollHint);
  hint.hint_type = 1;
  add(&t, std::move(hint));
  DecodedOp bits = op(CephOp::kCollSetBits);
  bits.bits = 5;
  add(&t, std::move(bits));
  apply(std::move(t));

  std::string v;
  EXPECT_EQ(store_->getattr(coll_, obj("o"), "_", &v), 0);
  EXPECT_EQ(v, "object-info");
  std::string header;
  std::map<std::string, std::string> kv;
  ASSERT_EQ(store_->omap_get(coll_, obj("o"), &header, &kv), 0);
  EXPECT_EQ(header, "header");
  EXPECT_EQ(kv, (std::map<std::string, std::string>{{"k1", "v1"}, {"k3", "v3"}}));  // [k2, k3)
  EXPECT_EQ(store_->collection_bits(coll_), 5);
}

}  // namespace
}  // namespace hybridstore::test
