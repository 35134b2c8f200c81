#include "hybridstore/txn_json/txn_json.h"

#include <gtest/gtest.h>

#include <random>

using namespace hybridstore;

namespace {
int parse(const std::string& text, std::vector<Transaction>* out, std::string* err) {
  return parse_json_transactions(text, "", out, err);
}
}  // namespace

TEST(TxnJson, ParsesEveryDocumentedOp) {
  std::string text = R"([{"ops":[
    {"op":"mkcoll","coll":"1.0_head","bits":3},
    {"op":"write","coll":"1.0_head","oid":"a","off":0,"data":"text"},
    {"op":"write","coll":"1.0_head","oid":"a","off":4,"data_b64":"AAEC"},
    {"op":"zero","coll":"1.0_head","oid":"a","off":0,"len":2},
    {"op":"truncate","coll":"1.0_head","oid":"a","size":100},
    {"op":"touch","coll":"1.0_head","oid":"t"},
    {"op":"setattrs","coll":"1.0_head","oid":"a","attrs":{"k":"v","bin":{"b64":"AP8="}}},
    {"op":"setattr","coll":"1.0_head","oid":"a","name":"n","value":"v"},
    {"op":"rmattr","coll":"1.0_head","oid":"a","name":"k"},
    {"op":"rmattrs","coll":"1.0_head","oid":"t"},
    {"op":"clone","coll":"1.0_head","oid":"a","dst":"b"},
    {"op":"clone_range","coll":"1.0_head","oid":"a","dst":"b","src_off":0,"len":10,"dst_off":0},
    {"op":"omap_setkeys","coll":"1.0_head","oid":"a","kv":{"a":"1"}},
    {"op":"omap_rmkeys","coll":"1.0_head","oid":"a","keys":["a"]},
    {"op":"omap_rmkeyrange","coll":"1.0_head","oid":"a","first":"a","last":"z"},
    {"op":"omap_clear","coll":"1.0_head","oid":"a"},
    {"op":"omap_setheader","coll":"1.0_head","oid":"a","data":"h"},
    {"op":"rename","coll":"1.0_head","oid":"a","dst_coll":"1.0_head","dst":"c"},
    {"op":"try_rename","coll":"1.0_head","oid":"c","dst":"d"},
    {"op":"set_alloc_hint","coll":"1.0_head","oid":"d","expected_object_size":4194304,"flags":1},
    {"op":"remove","coll":"1.0_head","oid":{"name":"d","pool":1,"hash":7,"snap":"head","namespace":"ns"}},
    {"op":"split","coll":"1.0_head","dst_coll":"1.1_head","bits":1,"rem":1},
    {"op":"merge","coll":"1.1_head","dst_coll":"1.0_head","bits":0},
    {"op":"set_bits","coll":"1.0_head","bits":2},
    {"op":"rmcoll","coll":"1.0_head"}
  ]}])";
  std::vector<Transaction> txns;
  std::string err;
  ASSERT_EQ(parse(text, &txns, &err), 0) << err;
  ASSERT_EQ(txns.size(), 1u);
  const auto& ops = txns[0].ops();
  ASSERT_EQ(ops.size(), 25u);
  EXPECT_EQ(ops[2].scatter.to_string(), std::string("\0\1\2", 3));
  EXPECT_EQ(ops[6].kv.at("bin"), std::string("\0\xff", 2));
  EXPECT_EQ(ops[20].oid.hash, 7u);
  EXPECT_EQ(ops[20].oid.nspace, "ns");
  EXPECT_EQ(ops[1].oid.pool, 1);  // the PG's pool
  EXPECT_EQ(ops[0].bits, 3u);
}

TEST(TxnJson, ErrorsNameTransactionOpAndField) {
  std::vector<Transaction> txns;
  std::string err;
  EXPECT_EQ(parse(R"([{"ops":[]},{"ops":[{"op":"touch","coll":"c","oid":"a"},{"op":"write","coll":"c","oid":"a","off":-1,"data":"x"}]}])", &txns, &err), -EINVAL);
  EXPECT_NE(err.find("transaction 1, op 1 (write)"), std::string::npos) << err;
  EXPECT_NE(err.find("\"off\""), std::string::npos) << err;
  EXPECT_TRUE(txns.empty());
  EXPECT_EQ(parse(R"([{"ops":[{"op":"frobnicate","coll":"c","oid":"a"}]}])", &txns, &err), -EINVAL);
  EXPECT_NE(err.find("unknown op"), std::string::npos);
  EXPECT_EQ(parse(R"([{"ops":[{"op":"touch","coll":"c","oid":"a","typo":1}]}])", &txns, &err), -EINVAL);
  EXPECT_NE(err.find("unknown field \"typo\""), std::string::npos);
  EXPECT_EQ(parse(R"([{"ops":[{"op":"write","coll":"c","oid":"a","data":"x","data_b64":"eA=="}]}])", &txns, &err), -EINVAL);
  EXPECT_EQ(parse(R"([{"ops":[{"op":"write","coll":"c","oid":"a","data_b64":"!!"}]}])", &txns, &err), -EINVAL);
  EXPECT_EQ(parse(R"([{"ops":[{"op":"write","coll":"c","oid":"a","data_file":"/nonexistent/file"}]}])", &txns, &err), -EINVAL);
  EXPECT_EQ(parse(R"({"ops":[]})", &txns, &err), -EINVAL);
  EXPECT_EQ(parse(R"([{"ops":[{"op":"touch","coll":"","oid":"a"}]}])", &txns, &err), -EINVAL);
}

TEST(TxnJson, GarbageAndDeepNestingAreRejectedWithoutCrashing) {
  std::vector<Transaction> txns;
  std::string err;
  EXPECT_EQ(parse("", &txns, &err), -EINVAL);
  EXPECT_EQ(parse("[{\"ops\":[", &txns, &err), -EINVAL);
  EXPECT_EQ(parse(std::string(100000, '['), &txns, &err), -EINVAL);
  EXPECT_NE(err.find("nests"), std::string::npos);
  std::mt19937_64 rng(5);
  const std::string good = R"([{"ops":[{"op":"write","coll":"1.0_head","oid":{"name":"a","hash":3},"off":1,"data":"x"}]}])";
  for (int i = 0; i < 3000; ++i) {
    std::string s = good;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < edits; ++k) s[rng() % s.size()] = static_cast<char>(rng() % 128);
    parse(s, &txns, &err);  // any outcome but a crash is fine
  }
}

TEST(TxnJson, Base64RoundTrips) {
  std::mt19937_64 rng(1);
  for (int n = 0; n < 50; ++n) {
    std::string s(static_cast<size_t>(n), '\0');
    for (auto& c : s) c = static_cast<char>(rng());
    std::string back;
    ASSERT_TRUE(base64_decode(base64_encode(s), &back));
    EXPECT_EQ(back, s);
  }
  std::string out;
  EXPECT_FALSE(base64_decode("abc", &out));
  EXPECT_FALSE(base64_decode("a=bc", &out));
}

TEST(TxnJson, ObjectIdJsonRoundTrips) {
  ObjectId o;
  o.pool = 3;
  o.name = std::string("bin\0ary", 7);
  o.hash = 99;
  o.snap = 4;
  o.shard = 2;
  ObjectId back;
  std::string err;
  ASSERT_EQ(parse_object_id(object_id_to_json(o), "3.0_head", &back, &err), 0) << err;
  EXPECT_EQ(back, o);
}
