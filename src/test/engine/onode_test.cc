#include "hybridstore/format/onode.h"

#include "hscommon/encoding.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <random>
#include <stdexcept>

using namespace hybridstore;

namespace {
DataExtent extent(uint64_t logical, uint64_t len, uint64_t phys, Tier t = Tier::kSsd) {
  DataExtent e;
  e.logical = logical;
  e.length = len;
  e.physical = phys;
  e.tier = t;
  e.csum_block = 4096;
  for (uint64_t i = 0; i < len / 4096; ++i) e.csums.push_back(static_cast<uint32_t>(phys + i));
  return e;
}
}  // namespace

TEST(Onode, EncodeDecodeRoundTrip) {
  Onode o;
  o.size = 123456;
  o.nid = 99;
  o.alloc_hint_flags = 5;
  o.expected_object_size = 4 << 20;
  o.attrs["_"] = std::string(300, 'a');
  o.attrs["snapset"] = "";
  o.extents.insert(extent(0, 8192, 65536));
  o.extents.insert(extent(16384, 4096, 1 << 20, Tier::kHdd));
  Onode back;
  std::string why;
  ASSERT_TRUE(decode_onode(encode_onode(o), &back, &why)) << why;
  EXPECT_EQ(back.size, o.size);
  EXPECT_EQ(back.nid, 99u);
  EXPECT_EQ(back.attrs, o.attrs);
  ASSERT_EQ(back.extents.size(), 2u);
  const auto& e = back.extents.extents().at(16384);
  EXPECT_EQ(e.tier, Tier::kHdd);
  EXPECT_EQ(e.physical, 1u << 20);
  EXPECT_EQ(e.csums.size(), 1u);
}

TEST(Onode, DecoderRejectsEveryFlippedByteAndTruncation) {
  Onode o;
  o.size = 10;
  o.attrs["k"] = "v";
  o.extents.insert(extent(0, 4096, 8192));
  std::string enc = encode_onode(o);
  Onode out;
  for (size_t i = 0; i < enc.size(); ++i) {
    std::string bad = enc;
    bad[i] ^= 0x20;
    EXPECT_FALSE(decode_onode(bad, &out)) << "byte " << i;
  }
  for (size_t n = 0; n < enc.size(); ++n) EXPECT_FALSE(decode_onode(enc.substr(0, n), &out));
}

TEST(Onode, PunchTrimsSplitsAndReportsFreedRanges) {
  ExtentMap m;
  m.insert(extent(0, 16384, 100 * 4096));
  std::vector<PExtent> freed;
  m.punch(4096, 8192, &freed);
  ASSERT_EQ(freed.size(), 1u);
  EXPECT_EQ(freed[0].offset, 101u * 4096);
  EXPECT_EQ(freed[0].length, 4096u);
  ASSERT_EQ(m.size(), 2u);
  const auto& head = m.extents().at(0);
  const auto& tail = m.extents().at(8192);
  EXPECT_EQ(head.length, 4096u);
  EXPECT_EQ(head.csums.size(), 1u);
  EXPECT_EQ(tail.physical, 102u * 4096);
  EXPECT_EQ(tail.csums.size(), 2u);
  EXPECT_EQ(tail.csums[0], static_cast<uint32_t>(100 * 4096 + 2));  // csums moved with their blocks
  freed.clear();
  m.punch(0, UINT64_MAX, &freed);
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(freed.size(), 2u);
}

TEST(Onode, OverlappingFindsEveryTouchedExtent) {
  ExtentMap m;
  m.insert(extent(0, 4096, 0));
  m.insert(extent(8192, 4096, 4096));
  m.insert(extent(20480, 8192, 8192));
  EXPECT_EQ(m.overlapping(4096, 8192).size(), 0u);
  EXPECT_EQ(m.overlapping(4095, 8193).size(), 2u);
  EXPECT_EQ(m.overlapping(0, 1 << 20).size(), 3u);
  EXPECT_TRUE(m.any_in(24000, 24001));
}

namespace {
// The reference: every extent in one plain map, cut the way punch cuts.
using RefMap = std::map<uint64_t, DataExtent>;

void ref_punch(RefMap* m, uint64_t b, uint64_t e) {
  RefMap out;
  for (auto& [off, x] : *m) {
    if (x.logical_end() <= b || x.logical >= e) {
      out.emplace(off, x);
      continue;
    }
    if (x.logical < b) {
      DataExtent h = x;
      h.length = b - h.logical;
      h.csums.resize(h.length / h.csum_block);
      out.emplace(h.logical, h);
    }
    if (x.logical_end() > e) {
      DataExtent t = x;
      uint64_t skip = e - t.logical;
      t.physical += skip;
      t.logical = e;
      t.length -= skip;
      t.csums.erase(t.csums.begin(), t.csums.begin() + static_cast<long>(skip / t.csum_block));
      out.emplace(t.logical, t);
    }
  }
  *m = std::move(out);
}

std::string listing(const ExtentMap& m) {
  std::string s;
  for (const auto& [off, e] : m.extents())
    s += std::to_string(off) + "+" + std::to_string(e.length) + "@" + std::to_string(e.physical) + "/" +
         std::to_string(e.csums.empty() ? 0 : e.csums.front()) + " ";
  return s;
}

std::string listing(const RefMap& m) {
  std::string s;
  for (const auto& [off, e] : m)
    s += std::to_string(off) + "+" + std::to_string(e.length) + "@" + std::to_string(e.physical) + "/" +
         std::to_string(e.csums.empty() ? 0 : e.csums.front()) + " ";
  return s;
}

std::string encoded(const ExtentMap& m) {
  std::string s;
  m.encode_into(&s);
  return s;
}
}  // namespace

// The sharded map against one plain map, through random writes (punch, then
// insert) over an object of many shards, big extents spanning several.
TEST(Onode, ShardedMapMatchesAPlainMap) {
  const unsigned seed = 20261128;
  std::printf("seed %u\n", seed);
  std::mt19937_64 rng(seed);
  ExtentMap m;
  RefMap ref;
  uint64_t phys = 0;
  const uint64_t object = 4 << 20;
  for (int step = 0; step < 3000; ++step) {
    uint64_t len = (rng() % 4 == 0 ? 1 + rng() % 256 : 1 + rng() % 4) * 4096;
    uint64_t at = rng() % (object / 4096) * 4096;
    std::vector<PExtent> freed;
    m.punch(at, at + len, &freed);
    ref_punch(&ref, at, at + len);
    if (rng() % 8) {
      DataExtent e = extent(at, len, phys += len);
      m.insert(e);
      ref.emplace(at, e);
    }
    if (step % 97 == 0) {
      ExtentMap copy = m;  // a transaction's copy, changed and then dropped
      copy.punch(0, object / 2, &freed);
    }
    ASSERT_EQ(listing(m), listing(ref)) << "step " << step;
    ASSERT_EQ(m.size(), ref.size());
    uint64_t on[2] = {0, 0};
    for (const auto& [off, e] : ref) on[tier_index(e.tier)] += e.length;
    ASSERT_EQ(m.bytes_on(Tier::kSsd), on[0]);
    uint64_t qb = rng() % object, qe = qb + 1 + rng() % (1 << 20);
    size_t want = 0;
    for (const auto& [off, e] : ref) want += e.logical < qe && e.logical_end() > qb;
    ASSERT_EQ(m.overlapping(qb, qe).size(), want) << qb << "~" << qe;
    ASSERT_EQ(m.any_in(qb, qe), want > 0);
  }
  // The same extents inserted into a fresh map encode the same way.
  ExtentMap fresh;
  for (const auto& [off, e] : ref) fresh.insert(e);
  EXPECT_EQ(encoded(m), encoded(fresh));
  EXPECT_EQ(encoded(m).size(), m.encoded_size());
  EXPECT_GT(m.shard_count(), 8u);
}

// A copy shares the shards; changing it leaves the original, and the
// original's cached encoding, as they were.
TEST(Onode, CopiesShareShardsUntilChanged) {
  Onode a;
  a.size = 4 << 20;
  for (uint64_t off = 0; off < (4u << 20); off += 64 * 1024) a.extents.insert(extent(off, 8192, off));
  const std::string before = encode_onode(a);
  Onode b = a;
  std::vector<PExtent> freed;
  b.extents.punch(1 << 20, (1 << 20) + 4096, &freed);
  b.extents.insert(extent(1 << 20, 4096, 1ull << 30));
  DataExtent* e = b.extents.mutable_extent(3 << 20);
  ASSERT_NE(e, nullptr);
  e->csums[0] = 0xdeadbeef;
  EXPECT_EQ(encode_onode(a), before);
  EXPECT_EQ(a.extents.at(3 << 20).csums[0], static_cast<uint32_t>(3 << 20));
  Onode back;
  std::string why;
  ASSERT_TRUE(decode_onode(encode_onode(b), &back, &why)) << why;
  EXPECT_EQ(back.extents.at(3 << 20).csums[0], 0xdeadbeefu);
  EXPECT_EQ(back.extents.at(1 << 20).physical, 1ull << 30);
  EXPECT_EQ(listing(back.extents), listing(b.extents));
  EXPECT_EQ(b.extents.mutable_extent(4096), nullptr);
  EXPECT_TRUE(b.extents.erase(0));
  EXPECT_FALSE(b.extents.erase(0));
  EXPECT_EQ(b.extents.size(), a.extents.size());  // one split in two, one erased
  EXPECT_THROW(b.extents.at(0), std::out_of_range);
}

// The heap a map reports is cached per shard; every kind of change, made
// to a copy or to the map itself, shows in it, and a copy's change leaves
// the original's. Checked against a map built afresh with the same
// extents, less the checksum vectors' capacities (a copy's may be smaller).
TEST(Onode, MemoryBytesFollowEveryChangeDespiteItsPerShardCache) {
  auto csum_heap = [](const ExtentMap& m) {
    size_t n = 0;
    for (const auto& [off, e] : m.extents()) n += e.csums.capacity() * sizeof(uint32_t);
    return n;
  };
  auto matches_fresh = [&](const ExtentMap& m) {
    ExtentMap rebuilt;
    for (const auto& [off, e] : m.extents()) rebuilt.insert(e);
    return m.memory_bytes() - csum_heap(m) == rebuilt.memory_bytes() - csum_heap(rebuilt);
  };
  Onode a;
  for (uint64_t off = 0; off < (4u << 20); off += 64 * 1024) a.extents.insert(extent(off, 8192, off));
  const size_t a_bytes = a.extents.memory_bytes();
  EXPECT_TRUE(matches_fresh(a.extents));
  Onode b = a;
  EXPECT_EQ(b.extents.memory_bytes(), a_bytes);
  b.extents.insert(extent(16384, 4096 * 8, 1ull << 30));
  EXPECT_GT(b.extents.memory_bytes(), a_bytes);
  EXPECT_TRUE(matches_fresh(b.extents));
  std::vector<PExtent> freed;
  b.extents.punch(1 << 20, 2 << 20, &freed);
  EXPECT_TRUE(matches_fresh(b.extents));
  const size_t before_growth = b.extents.memory_bytes();
  DataExtent* e = b.extents.mutable_extent(3 << 20);
  ASSERT_NE(e, nullptr);
  const size_t had = e->csums.capacity();
  e->csums.reserve(had + 100);
  const size_t grown = e->csums.capacity() - had;
  EXPECT_EQ(b.extents.memory_bytes(), before_growth + grown * sizeof(uint32_t));
  EXPECT_TRUE(b.extents.erase(0));
  EXPECT_TRUE(matches_fresh(b.extents));
  EXPECT_EQ(a.extents.memory_bytes(), a_bytes);
}

// One extent spanning many shards is found from any offset inside it.
TEST(Onode, AnExtentSpanningShardsIsFoundAnywhereInIt) {
  ExtentMap m;
  m.insert(extent(0, 4 << 20, 0));
  std::vector<PExtent> freed;
  m.punch(1 << 20, (1 << 20) + 4096, &freed);
  ASSERT_EQ(m.size(), 2u);
  auto at = m.overlapping(3 << 20, (3 << 20) + 1);
  ASSERT_EQ(at.size(), 1u);
  EXPECT_EQ(at[0]->logical, (1u << 20) + 4096);
  EXPECT_FALSE(m.any_in(1 << 20, (1 << 20) + 4096));
  EXPECT_TRUE(m.any_in((1 << 20) - 1, 1 << 20));
  EXPECT_EQ(m.bytes_on(Tier::kSsd), (4u << 20) - 4096);
}

TEST(Onode, AMovedFromMapIsEmptyTotalsIncluded) {
  ExtentMap m;
  m.insert(extent(0, 8192, 0, Tier::kHdd));
  ExtentMap n = std::move(m);
  EXPECT_EQ(n.size(), 1u);
  EXPECT_EQ(n.bytes_on(Tier::kHdd), 8192u);
  EXPECT_EQ(m.size(), 0u);  // NOLINT(bugprone-use-after-move): what is checked
  EXPECT_EQ(m.bytes_on(Tier::kHdd), 0u);
  EXPECT_EQ(encoded(m), encoded(ExtentMap()));
}

namespace {
// An onode whose map needs shards: three of them, one extent crossing into
// the next shard's span (it lives in the shard of its first byte).
Onode sharded_onode() {
  Onode o;
  o.size = 3 * ExtentMap::kShardSpan;
  o.attrs["_"] = std::string(350, 'o');
  o.extents.insert(extent(0, 128 * 1024, 1 << 20));
  o.extents.insert(extent(128 * 1024, 192 * 1024, 8 << 20, Tier::kHdd));  // into shard 1
  o.extents.insert(extent(ExtentMap::kShardSpan + 64 * 1024, 64 * 1024, 2 << 20));
  o.extents.insert(extent(2 * ExtentMap::kShardSpan, ExtentMap::kShardSpan, 3 << 20));
  return o;
}
}  // namespace

TEST(Onode, AShardedMapRoundTripsThroughItsShardRecords) {
  Onode o = sharded_onode();
  const std::string rec = encode_onode(o, true);
  EXPECT_LT(rec.size(), 500u) << "the record names the shards, it does not hold them";
  Onode back;
  std::string why;
  EXPECT_FALSE(decode_onode(rec, &back, &why)) << "a sharded record read without its shards";
  std::vector<ShardRef> refs;
  ASSERT_TRUE(decode_onode(rec, &back, &why, kMaxTiers, &refs)) << why;
  EXPECT_TRUE(back.extents_in_shards);
  EXPECT_TRUE(back.extents.empty());
  ASSERT_EQ(refs.size(), 3u);
  for (const auto& r : refs)
    ASSERT_TRUE(decode_extent_shard(encode_extent_shard(o.extents, r.index), r, &back.extents, &why)) << why;
  EXPECT_EQ(extent_fingerprint(back.extents), extent_fingerprint(o.extents));
  EXPECT_EQ(back.attrs, o.attrs);
  EXPECT_EQ(back.size, o.size);
  // A shard record is refused against any other ref, and loading one twice
  // (an overlap) is refused too.
  ShardRef wrong = refs[1];
  wrong.index = 0;
  EXPECT_FALSE(decode_extent_shard(encode_extent_shard(o.extents, 1), wrong, &back.extents, &why));
  wrong = refs[1];
  wrong.extents += 1;
  EXPECT_FALSE(decode_extent_shard(encode_extent_shard(o.extents, 1), wrong, &back.extents, &why));
  wrong = refs[1];
  wrong.crc ^= 1;
  EXPECT_FALSE(decode_extent_shard(encode_extent_shard(o.extents, 1), wrong, &back.extents, &why));
  EXPECT_FALSE(decode_extent_shard(encode_extent_shard(o.extents, 1), refs[1], &back.extents, &why));
  EXPECT_NE(why.find("overlaps"), std::string::npos) << why;
}

TEST(Onode, ShardedRecordsRejectEveryFlippedByteAndTruncation) {
  Onode o = sharded_onode();
  const std::string rec = encode_onode(o, true);
  Onode back;
  std::vector<ShardRef> refs;
  ASSERT_TRUE(decode_onode(rec, &back, nullptr, kMaxTiers, &refs));
  const std::string shard = encode_extent_shard(o.extents, refs[1].index);
  for (size_t i = 0; i < rec.size(); ++i) {
    std::string bad = rec;
    bad[i] ^= 0x20;
    std::vector<ShardRef> r;
    EXPECT_FALSE(decode_onode(bad, &back, nullptr, kMaxTiers, &r)) << "onode byte " << i;
  }
  for (size_t i = 0; i < shard.size(); ++i) {
    std::string bad = shard;
    bad[i] ^= 0x20;
    ExtentMap m;
    EXPECT_FALSE(decode_extent_shard(bad, refs[1], &m)) << "shard byte " << i;
    EXPECT_TRUE(m.empty()) << "a refused shard adds nothing";
  }
  for (size_t n = 0; n < rec.size(); ++n) {
    std::vector<ShardRef> r;
    EXPECT_FALSE(decode_onode(rec.substr(0, n), &back, nullptr, kMaxTiers, &r));
  }
  for (size_t n = 0; n < shard.size(); ++n) {
    ExtentMap m;
    EXPECT_FALSE(decode_extent_shard(shard.substr(0, n), refs[1], &m));
  }
}

TEST(Onode, OnlyAMapLargerThanTheInlineLimitGoesInShards) {
  Onode o;
  o.extents.insert(extent(0, 64 * 4096, 1 << 20));  // 64 checksums: about 270 bytes
  EXPECT_FALSE(extents_go_in_shards(o, 1024));
  for (uint64_t i = 1; i < 4; ++i) o.extents.insert(extent(i * ExtentMap::kShardSpan, 64 * 4096, (i + 1) << 20));
  EXPECT_TRUE(extents_go_in_shards(o, 1024));
  EXPECT_FALSE(extents_go_in_shards(o, 0)) << "0: never";
  // An inline record still decodes without a shard list, and says so.
  Onode small;
  small.extents.insert(extent(0, 4096, 8192));
  Onode back;
  std::vector<ShardRef> refs{{7, 1, 0}};
  ASSERT_TRUE(decode_onode(encode_onode(small), &back, nullptr, kMaxTiers, &refs));
  EXPECT_TRUE(refs.empty());
  EXPECT_FALSE(back.extents_in_shards);
  EXPECT_EQ(back.extents.size(), 1u);
}

// Onode record version 3 (format 7, docs/small-writes.md section 9): the
// incarnation and the version after everything else. Written only when asked
// (format-7 stores); otherwise version 2, which format-4 to -6 builds read.
namespace {
constexpr uint32_t kOnodeTagCopy = 0x4f4e4f44;  // onode.cc
// `rec` resealed as record version `version` with its body cut by `cut`
// bytes and `tail` appended.
std::string resealed(const std::string& rec, size_t cut, const std::string& tail, uint8_t version) {
  uint8_t ver = 0;
  std::string_view body;
  EXPECT_EQ(open_record(kOnodeTagCopy, 3, rec, &ver, &body), RecordError::kNone);
  body.remove_suffix(cut);
  return seal_record(kOnodeTagCopy, version, std::string(body) + tail);
}
uint8_t record_version(const std::string& rec) {
  uint8_t ver = 0;
  std::string_view body;
  EXPECT_EQ(open_record(kOnodeTagCopy, 3, rec, &ver, &body), RecordError::kNone);
  return ver;
}
}  // namespace

TEST(Onode, RecordVersion3CarriesIncarnationAndVersionAndOlderOnesReadAsZero) {
  Onode o;
  o.size = 8192;
  o.attrs["_"] = "info";
  o.extents.insert(extent(0, 8192, 65536));
  o.incarnation = 77;
  o.version = 41;
  const std::string v2 = encode_onode(o);
  EXPECT_EQ(record_version(v2), 2) << "without versions the record is the one format-6 builds read";
  Onode back;
  std::string why;
  ASSERT_TRUE(decode_onode(v2, &back, &why)) << why;
  EXPECT_EQ(back.version, 0u);
  EXPECT_EQ(back.incarnation, 0u);
  for (uint64_t v : {1ull, 127ull, 128ull, 1ull << 40}) {
    o.version = v;
    o.incarnation = v * 3 + 1;
    const std::string v3 = encode_onode(o, false, true);
    EXPECT_EQ(record_version(v3), 3);
    ASSERT_TRUE(decode_onode(v3, &back, &why)) << why;
    EXPECT_EQ(back.version, v);
    EXPECT_EQ(back.incarnation, v * 3 + 1);
    EXPECT_EQ(back.size, o.size);
    EXPECT_EQ(back.attrs, o.attrs);
    EXPECT_EQ(extent_fingerprint(back.extents), extent_fingerprint(o.extents));
    OnodeSpace sp;
    std::vector<ShardRef> refs;
    ASSERT_TRUE(decode_onode_space(v3, &sp, &why, kMaxTiers, &refs)) << why;
    EXPECT_EQ(sp.allocated, 8192u);
  }
  o.incarnation = 5;
  o.version = 300;
  const std::string v3 = encode_onode(o, false, true);  // ends with varints 5 and 300 (3 bytes)
  // Both are required in 3, and nothing may follow them.
  EXPECT_FALSE(decode_onode(resealed(v3, 3, "", 3), &back, &why));
  EXPECT_NE(why.find("truncated version"), std::string::npos) << why;
  EXPECT_FALSE(decode_onode(resealed(v3, 2, "", 3), &back, &why));
  EXPECT_NE(why.find("truncated version"), std::string::npos) << why;
  EXPECT_FALSE(decode_onode(resealed(v3, 0, "x", 3), &back, &why));
  EXPECT_NE(why.find("trailing"), std::string::npos) << why;
  EXPECT_FALSE(decode_onode(resealed(v3, 2, std::string(1, '\x80'), 3), &back, &why));
  // A record version past 3 is refused.
  EXPECT_FALSE(decode_onode(resealed(v3, 0, "", 4), &back, &why));
  // Every flipped byte and every cut of a version-3 record is refused.
  for (size_t i = 0; i < v3.size(); ++i) {
    std::string bad = v3;
    bad[i] = static_cast<char>(bad[i] ^ 0x41);
    EXPECT_FALSE(decode_onode(bad, &back, &why)) << "byte " << i;
  }
  for (size_t n = 0; n < v3.size(); ++n) EXPECT_FALSE(decode_onode(v3.substr(0, n), &back, &why)) << n;
}

TEST(Onode, AShardedRecordOfVersion3CarriesThemToo) {
  Onode o = sharded_onode();
  o.incarnation = 12;
  o.version = 9;
  const std::string v3 = encode_onode(o, true, true);
  EXPECT_EQ(record_version(v3), 3);
  EXPECT_EQ(record_version(encode_onode(o, true)), 2);
  Onode back;
  std::string why;
  std::vector<ShardRef> refs;
  ASSERT_TRUE(decode_onode(v3, &back, &why, kMaxTiers, &refs)) << why;
  EXPECT_EQ(back.version, 9u);
  EXPECT_EQ(back.incarnation, 12u);
  EXPECT_EQ(refs.size(), 3u);
  OnodeSpace sp;
  ASSERT_TRUE(decode_onode_space(v3, &sp, &why, kMaxTiers, &refs)) << why;
  EXPECT_EQ(refs.size(), 3u);
  EXPECT_FALSE(decode_onode(resealed(v3, 1, "", 3), &back, &why, kMaxTiers, &refs));
}
