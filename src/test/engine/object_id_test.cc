#include "hybridstore/format/object_id.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

using namespace hybridstore;

namespace {
ObjectId make(int64_t pool, uint32_t hash, std::string ns, std::string key, std::string name,
              uint64_t snap = kNoSnap, uint64_t gen = kNoGen, int8_t shard = kNoShard) {
  ObjectId o;
  o.pool = pool;
  o.hash = hash;
  o.nspace = std::move(ns);
  o.key = std::move(key);
  o.name = std::move(name);
  o.snap = snap;
  o.generation = gen;
  o.shard = shard;
  return o;
}
}  // namespace

TEST(ObjectId, OrderComparesFieldsInCephPriority) {
  // Shard first, then pool, then bit-reversed hash...
  EXPECT_LT(make(5, 0, "", "", "a", kNoSnap, kNoGen, -1), make(1, 0, "", "", "a", kNoSnap, kNoGen, 0));
  EXPECT_LT(make(-3, 9, "", "", "z"), make(1, 0, "", "", "a"));
  // 0x1 reversed is 0x80000000, larger than 0x2 reversed (0x40000000).
  EXPECT_LT(make(1, 0x2, "", "", "a"), make(1, 0x1, "", "", "a"));
  // ...then namespace, then effective key, then name, snap, generation.
  EXPECT_LT(make(1, 7, "a", "", "z"), make(1, 7, "b", "", "a"));
  EXPECT_LT(make(1, 7, "", "k1", "z"), make(1, 7, "", "k2", "a"));
  EXPECT_LT(make(1, 7, "", "", "a"), make(1, 7, "", "", "b"));
  EXPECT_LT(make(1, 7, "", "", "a", 3), make(1, 7, "", "", "a", kNoSnap));
  EXPECT_LT(make(1, 7, "", "", "a", kNoSnap, 1), make(1, 7, "", "", "a", kNoSnap, kNoGen));
  EXPECT_LT(make(1, 7, "", "", "a"), ObjectId::make_max());
  EXPECT_LT(ObjectId::make_min(), make(INT64_MIN, 0, "", "", ""));
}

TEST(ObjectId, EffectiveKeyComparesOnlyWhenAKeyIsSet) {
  // Without keys the names decide; with a key, the key decides first.
  ObjectId a = make(1, 7, "", "", "b"), b = make(1, 7, "", "a", "c");
  EXPECT_LT(b, a);  // key "a" < effective key "b"
  ObjectId c = make(1, 7, "", "b", "a");
  EXPECT_LT(c, a);  // same effective key "b", then name "a" < "b"
}

TEST(ObjectId, EncodedKeysSortExactlyLikeObjects) {
  std::mt19937_64 rng(7);
  std::vector<ObjectId> objs;
  const std::string pieces[] = {"", "a", "b", "ab", std::string("\0", 1), "\x01", "\xff", "zz"};
  for (int i = 0; i < 3000; ++i) {
    auto pick = [&] {
      std::string s;
      int n = static_cast<int>(rng() % 3);
      for (int k = 0; k < n; ++k) s += (rng() % 8 == 4) ? std::string(1, '\0') : std::string(pieces[rng() % 8]);
      return s;
    };
    objs.push_back(make(static_cast<int64_t>(rng() % 5) - 2, static_cast<uint32_t>(rng() % 4) << 30, pick(), pick(),
                        pick(), rng() % 3 ? kNoSnap : rng() % 4, rng() % 3 ? kNoGen : rng() % 3,
                        static_cast<int8_t>(static_cast<int>(rng() % 3) - 1)));
  }
  objs.push_back(ObjectId::make_max());
  for (size_t i = 0; i + 1 < objs.size(); ++i) {
    const ObjectId& a = objs[i];
    const ObjectId& b = objs[i + 1];
    int c = compare(a, b);
    int k = encode_object_key(a).compare(encode_object_key(b));
    k = k < 0 ? -1 : (k > 0 ? 1 : 0);
    ASSERT_EQ(c, k) << a.to_string() << " vs " << b.to_string();
  }
}

TEST(ObjectId, KeyEncodingRoundTrips) {
  ObjectId o = make(-7, 0xdeadbeef, std::string("n\0s", 3), "key", std::string("na\x01me", 5), 42, 3, 2);
  ObjectId back;
  ASSERT_TRUE(decode_object_key(encode_object_key(o), &back));
  EXPECT_EQ(back, o);
  EXPECT_EQ(back.hash, 0xdeadbeefu);
  EXPECT_EQ(back.key, "key");
  ObjectId nokey = make(1, 1, "", "", "same");
  ASSERT_TRUE(decode_object_key(encode_object_key(nokey), &back));
  EXPECT_TRUE(back.key.empty());
  ASSERT_TRUE(decode_object_key(encode_object_key(ObjectId::make_max()), &back));
  EXPECT_TRUE(back.max);
}

// The bytes are on disk in every key: escaping must never change.
TEST(ObjectId, EscapingKeepsItsBytes) {
  std::string out = "x";
  append_escaped(&out, std::string("\x01" "a\0\0" "bc\x01", 7));
  EXPECT_EQ(out, std::string("x\x01\x02" "a\x01\x01\x01\x01" "bc\x01\x02\0", 13));
  out.clear();
  append_escaped(&out, "plain");
  EXPECT_EQ(out, std::string("plain\0", 6));
  ObjectId o = make(3, 0x01020304, "", "", "obj", 5, kNoGen, kNoShard);
  std::string k = encode_object_key(o);
  EXPECT_EQ(k.size(), object_key_size_hint(o));
  std::string appended = "pre";
  append_object_key(&appended, o);
  EXPECT_EQ(appended, "pre" + k);
}

TEST(ObjectId, DecodeRejectsGarbageWithoutCrashing) {
  std::mt19937_64 rng(3);
  std::string good = encode_object_key(make(1, 2, "ns", "", "name"));
  ObjectId out;
  for (size_t n = 0; n < good.size(); ++n) EXPECT_FALSE(decode_object_key(good.substr(0, n), &out));
  for (int i = 0; i < 5000; ++i) {
    std::string junk(rng() % 40, '\0');
    for (auto& ch : junk) ch = static_cast<char>(rng());
    decode_object_key(junk, &out);  // must not crash; result irrelevant
  }
}

TEST(ObjectId, MatchesUsesTheLowHashBits) {
  ObjectId o = make(1, 0b1011, "", "", "x");
  EXPECT_TRUE(o.matches(2, 0b11));
  EXPECT_FALSE(o.matches(3, 0b111));
  EXPECT_TRUE(o.matches(0, 5));
  EXPECT_TRUE(o.matches(32, 0b1011));
}
