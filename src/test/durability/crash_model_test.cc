// The crash harness's reference model against the engine, with no crash:
// if they disagree here, a crash test could not tell a lost transaction from
// a modelling error. Two independent implementations of ObjectStore
// semantics agreeing over thousands of random transactions (including ones
// built to fail) is also a conformance check of the engine.
#include <fstream>

#include <gtest/gtest.h>

#include "crash_workload.h"
#include "store_helpers.h"

using namespace hybridstore;
using namespace hybridstore::crashtest;

namespace {

class CrashModelTest : public test::StoreTest {};

}  // namespace

TEST_F(CrashModelTest, ModelAndEngineAgreeOverARandomWorkloadAndAcrossRemount) {
  StoreModel base;
  std::string err;
  ASSERT_EQ(read_store_model(*store_, &base, &err), 0) << err;
  WorkloadGenerator gen(42, base);
  RunOptions ro;
  ro.max_txns = 1500;
  RunResult res = run_workload(*store_, gen, ro);
  ASSERT_FALSE(res.mismatch) << res.message;
  ASSERT_FALSE(res.store_failed) << res.message;
  EXPECT_EQ(res.submitted, 1500u);
  EXPECT_EQ(res.acked, 1500u) << "every transaction acknowledged once flush() returned";
  EXPECT_GT(res.rejected_as_expected, 10u) << "the workload includes transactions built to fail";

  StoreModel actual;
  ASSERT_EQ(read_store_model(*store_, &actual, &err), 0) << err;
  EXPECT_EQ(diff_models(gen.model(), actual), "");
  // The workload reaches every kind of state it is meant to.
  EXPECT_GT(actual.object_count(), 50u);
  size_t pgs = 0;
  bool omap = false, attrs = false, clones = false;
  for (const auto& [name, c] : actual.colls) {
    if (name.rfind("1.", 0) == 0 && name.find("_head") != std::string::npos) ++pgs;
    for (const auto& [o, st] : c.objects) {
      omap |= !st->omap.empty();
      attrs |= !st->attrs.empty();
      clones |= o.snap != kNoSnap;
    }
  }
  EXPECT_GE(pgs, 2u);
  EXPECT_TRUE(omap && attrs && clones);
  StoreStats st;
  ASSERT_EQ(store_->statfs(&st), 0);
  EXPECT_GT(st.tier[1].allocated, 0u) << "both tiers hold data";
  EXPECT_GT(st.tier[0].allocated, 0u);

  remount();
  StoreModel after;
  ASSERT_EQ(read_store_model(*store_, &after, &err), 0) << err;
  EXPECT_EQ(diff_models(gen.model(), after), "");
  EXPECT_EQ(after.digest(), gen.model().digest());
  EXPECT_EQ(fsck_errors(true), 0);
}

TEST_F(CrashModelTest, VerifierFindsTheMatchingPrefixAndRejectsAHalfAppliedState) {
  StoreModel base;
  std::string err;
  ASSERT_EQ(read_store_model(*store_, &base, &err), 0) << err;
  WorkloadGenerator gen(7, base);
  RunOptions ro;
  ro.max_txns = 40;
  RunResult res = run_workload(*store_, gen, ro);
  ASSERT_FALSE(res.mismatch || res.store_failed) << res.message;
  StoreModel actual;
  ASSERT_EQ(read_store_model(*store_, &actual, &err), 0) << err;
  uint64_t matched = 0;
  std::string why;
  EXPECT_TRUE(verify_prefix(actual, 7, base, WorkloadParams(), 30, 40, &matched, &why)) << why;
  EXPECT_EQ(matched, 40u);
  EXPECT_FALSE(verify_prefix(actual, 7, base, WorkloadParams(), 10, 39, &matched, &why))
      << "the state after 40 is not a prefix up to 39";

  // Half of transaction 41: its first op only.
  GeneratedTxn g;
  do g = gen.next(); while (g.expect_failure || g.txn.ops().size() < 2);
  Transaction half;
  half.mutable_ops().push_back(g.txn.ops().front());
  StoreModel broken = actual;
  ASSERT_EQ(broken.apply(half), 0);
  ASSERT_NE(diff_models(actual, broken), "") << "the first op of a transaction changes something";
  EXPECT_FALSE(verify_prefix(broken, 7, base, WorkloadParams(), 40, 41, &matched, &why));
}

TEST_F(CrashModelTest, AFailedRoundsTransactionsAreWrittenDownOpByOp) {
  StoreModel base;
  std::string err;
  ASSERT_EQ(read_store_model(*store_, &base, &err), 0) << err;
  const std::string path = dir_->path() + "/round.txns";
  ASSERT_TRUE(dump_transactions(path, 7, base, WorkloadParams(), 40));
  // The dump regenerates the same workload: every op of 1..40, in order.
  std::vector<std::string> expected;
  WorkloadGenerator gen(7, base);
  while (gen.generated() < 40) {
    GeneratedTxn g = gen.next();
    const std::string tag = g.expect_failure ? "F" : std::to_string(g.number);
    for (const Op& op : g.txn.ops()) expected.push_back(tag + " " + describe_op(op));
  }
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  EXPECT_NE(line.find("seed 7"), std::string::npos) << line;
  std::vector<std::string> got;
  while (std::getline(f, line)) got.push_back(line);
  EXPECT_EQ(got, expected);
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.back().rfind("40 ", 0), 0u) << got.back();

  Op w;
  w.code = OpCode::kWrite;
  w.cid = CollectionId("1.0_head");
  w.oid = ObjectId::from_name("obj1", 1);
  w.off = 4096;
  w.scatter = ScatterData::of(std::string(8192, 'x'));
  EXPECT_NE(describe_op(w).find("off 4096 len 8192"), std::string::npos) << describe_op(w);
  EXPECT_FALSE(dump_transactions("/nonexistent-dir/round.txns", 7, base, WorkloadParams(), 1));
}
