// The rule mount will replay onode deltas by (kv/onode_delta.h,
// docs/small-writes.md section 8, I3 and 12.10): whatever version of an
// onode RocksDB holds after a crash (checkpointed anywhere along the way) and
// wherever the ring's replay starts at or before the first delta it lacks,
// replaying every transaction's deltas in order gives exactly the onode the
// transactions made; a missing record is found, never skipped; a delta of an
// earlier life of the key changes nothing; and a delta that does not fit its
// onode is refused without changing it.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <random>
#include <tuple>

#include "hybridstore/format/onode.h"
#include "hybridstore/kv/onode_delta.h"

using namespace hybridstore;

namespace {

constexpr uint64_t kB = 4096;
constexpr uint64_t kIncarnation = 4242;

// An object of two extents on the HDD tier, 4 KiB checksum blocks: 64 KiB
// at logical 0 (physical 1 MiB) and 32 KiB at logical 128 KiB (physical
// 8 MiB), with a hole between.
Onode base_onode() {
  Onode o;
  o.size = 160 * 1024;
  o.incarnation = kIncarnation;
  for (auto [logical, length, physical] : {std::tuple<uint64_t, uint64_t, uint64_t>{0, 64 * 1024, 1 << 20},
                                           {128 * 1024, 32 * 1024, 8 << 20}}) {
    DataExtent e;
    e.logical = logical;
    e.length = length;
    e.tier = Tier::kHdd;
    e.physical = physical;
    e.csum_block = kB;
    e.csums.assign(length / kB, 0);
    o.extents.insert(std::move(e));
  }
  return o;
}

// Where logical block `b` (a block inside an extent of base_onode) lies.
uint64_t physical_of(uint64_t logical) {
  return logical < 64 * 1024 ? (1 << 20) + logical : (8 << 20) + (logical - 128 * 1024);
}

using Txn = std::vector<JournalDelta>;

// One transaction's deltas (1 to 3), making version `version`, and the same
// change made straight to `truth`.
Txn random_txn(std::mt19937_64& rng, uint64_t version, Onode* truth) {
  Txn t;
  const int n = 1 + static_cast<int>(rng() % 3);
  for (int i = 0; i < n; ++i) {
    JournalDelta d;
    d.key = "Oobject";
    d.version = version;
    d.incarnation = kIncarnation;
    switch (rng() % 4) {
      case 0:
      case 1: {
        d.kind = JournalDeltaKind::kOverwrite;
        // Blocks inside one extent, 1 to 4 of them.
        const bool first = rng() % 2;
        const uint64_t ext_begin = first ? 0 : 128 * 1024, ext_blocks = first ? 16 : 8;
        const uint64_t count = 1 + rng() % 4;
        const uint64_t start = rng() % (ext_blocks - count + 1);
        d.logical = ext_begin + start * kB;
        d.tier = static_cast<uint8_t>(tier_index(Tier::kHdd));
        d.physical = physical_of(d.logical);
        for (uint64_t b = 0; b < count; ++b) {
          const uint32_t crc = static_cast<uint32_t>(rng());
          d.crcs.push_back(crc);
          const uint64_t at = d.logical + b * kB;
          DataExtent* e = truth->extents.mutable_extent(first ? 0 : 128 * 1024);
          e->csums[(at - e->logical) / kB] = crc;
        }
        break;
      }
      case 2:
        d.kind = JournalDeltaKind::kSetAttr;
        d.name = "a" + std::to_string(rng() % 3);
        d.value = std::string(1 + rng() % 40, static_cast<char>('a' + rng() % 26));
        truth->attrs[d.name] = d.value;
        break;
      default:
        if (rng() % 2) {
          d.kind = JournalDeltaKind::kRmAttr;
          d.name = "a" + std::to_string(rng() % 3);
          truth->attrs.erase(d.name);
        } else {
          d.kind = JournalDeltaKind::kSetSize;
          d.size = 100 * 1024 + rng() % (60 * 1024);
          truth->size = d.size;
        }
        break;
    }
    t.push_back(std::move(d));
  }
  truth->version = version;
  return t;
}

std::vector<const JournalDelta*> ptrs(const Txn& t) {
  std::vector<const JournalDelta*> p;
  for (const auto& d : t) p.push_back(&d);
  return p;
}

void expect_same(const Onode& got, const Onode& want) {
  EXPECT_EQ(got.version, want.version);
  EXPECT_EQ(got.incarnation, want.incarnation);
  EXPECT_EQ(got.size, want.size);
  EXPECT_EQ(got.attrs, want.attrs);
  EXPECT_EQ(extent_fingerprint(got.extents), extent_fingerprint(want.extents));
}

}  // namespace

// Every checkpoint c (RocksDB holds the onode as transaction c left it) and
// every replay start s from 1 to c + 1: the replay includes what the
// checkpoint holds, applies the rest, and ends at the transactions' onode.
// Replaying a second time changes nothing.
TEST(OnodeDelta, EveryCheckpointAndReplayStartEndsAtTheSameOnode) {
  const uint64_t seed = 20261202;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  for (uint64_t round = 0; round < 8; ++round) {
    std::mt19937_64 rng(seed + round);
    constexpr uint64_t kTxns = 12;
    std::vector<Onode> after(1, base_onode());  // after[k]: the onode after transaction k
    std::vector<Txn> txns(1);
    for (uint64_t v = 1; v <= kTxns; ++v) {
      Onode next = after.back();
      txns.push_back(random_txn(rng, v, &next));
      after.push_back(std::move(next));
    }
    for (uint64_t c = 0; c <= kTxns; ++c)
      for (uint64_t s = 1; s <= c + 1 && s <= kTxns; ++s) {
        SCOPED_TRACE("round " + std::to_string(round) + ", checkpoint at " + std::to_string(c) +
                     ", replay from " + std::to_string(s));
        Onode o = after[c];
        std::string why;
        for (uint64_t v = s; v <= kTxns; ++v) {
          const OnodeDeltaResult r = apply_onode_deltas(&o, ptrs(txns[v]), &why);
          EXPECT_EQ(r, v <= c ? OnodeDeltaResult::kIncluded : OnodeDeltaResult::kApplied)
              << "transaction " << v << ": " << onode_delta_result_name(r) << " " << why;
        }
        expect_same(o, after[kTxns]);
        for (uint64_t v = s; v <= kTxns; ++v)
          EXPECT_EQ(apply_onode_deltas(&o, ptrs(txns[v]), &why), OnodeDeltaResult::kIncluded);
        expect_same(o, after[kTxns]);
      }
  }
}

// A record lost between what RocksDB holds and what the ring holds: the next
// transaction's deltas are a version ahead, which the rule says, and it
// leaves the onode as it was.
TEST(OnodeDelta, AMissingTransactionIsAGapNotASkip) {
  std::mt19937_64 rng(7);
  Onode truth = base_onode();
  Txn t1 = random_txn(rng, 1, &truth);
  Txn t2 = random_txn(rng, 2, &truth);
  Onode o = base_onode();
  std::string why;
  EXPECT_EQ(apply_onode_deltas(&o, ptrs(t2), &why), OnodeDeltaResult::kGap);
  EXPECT_NE(why.find("version 2"), std::string::npos) << why;
  expect_same(o, base_onode());
  EXPECT_EQ(apply_onode_deltas(&o, ptrs(t1), &why), OnodeDeltaResult::kApplied);
  EXPECT_EQ(apply_onode_deltas(&o, ptrs(t2), &why), OnodeDeltaResult::kApplied);
  expect_same(o, truth);
}

// docs/small-writes.md 12.10: a write (its delta makes version 2 of life A),
// the object removed, made again (life B, version 1, written whole), a crash
// before any checkpoint. The old life's deltas find life B's onode at a
// version their own numbering would fit, and must change nothing.
TEST(OnodeDelta, ADeltaOfAnEarlierLifeOfTheKeyChangesNothing) {
  std::mt19937_64 rng(11);
  Onode life_a = base_onode();
  Txn a1 = random_txn(rng, 1, &life_a);
  Txn a2 = random_txn(rng, 2, &life_a);
  Onode life_b = base_onode();
  life_b.incarnation = kIncarnation + 1;
  life_b.version = 1;
  life_b.attrs["_"] = "life b";
  const Onode stored = life_b;
  std::string why;
  for (const Txn* t : {&a1, &a2}) EXPECT_EQ(apply_onode_deltas(&life_b, ptrs(*t), &why), OnodeDeltaResult::kOtherLife);
  expect_same(life_b, stored);
}

// Deltas that cannot be the onode's: the data elsewhere than the extent
// holds it, a block outside every extent (the hole), checksum blocks other
// than 4 KiB, or one transaction's deltas disagreeing. Each is refused with
// a reason, and the onode is untouched even when an earlier delta of the
// same transaction fitted.
TEST(OnodeDelta, DeltasThatDoNotFitAreRefusedAndChangeNothing) {
  auto overwrite = [](uint64_t logical, uint64_t physical, int blocks) {
    JournalDelta d;
    d.kind = JournalDeltaKind::kOverwrite;
    d.key = "Oobject";
    d.version = 1;
    d.incarnation = kIncarnation;
    d.logical = logical;
    d.tier = static_cast<uint8_t>(tier_index(Tier::kHdd));
    d.physical = physical;
    d.crcs.assign(static_cast<size_t>(blocks), 0xabcdef01u);
    return d;
  };
  const JournalDelta good = overwrite(8 * kB, physical_of(8 * kB), 2);
  struct Case {
    const char* name;
    JournalDelta bad;
  } cases[] = {
      {"data elsewhere", overwrite(8 * kB, physical_of(8 * kB) + kB, 2)},
      {"another tier", [&] {
         JournalDelta d = good;
         d.tier = static_cast<uint8_t>(tier_index(Tier::kSsd));
         return d;
       }()},
      {"into the hole", overwrite(64 * 1024, physical_of(63 * 1024) + kB, 1)},
      {"across the hole", overwrite(60 * 1024, physical_of(60 * 1024), 2)},
      {"past the end", overwrite(156 * 1024, physical_of(156 * 1024), 2)},
      {"another version", [&] {
         JournalDelta d = good;
         d.version = 2;
         return d;
       }()},
      {"another life", [&] {
         JournalDelta d = good;
         d.incarnation = kIncarnation + 5;
         return d;
       }()},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Onode o = base_onode();
    std::string why;
    EXPECT_EQ(apply_onode_deltas(&o, {&good, &c.bad}, &why), OnodeDeltaResult::kMismatch);
    EXPECT_FALSE(why.empty());
    expect_same(o, base_onode());
  }
  // Checksum blocks of 8 KiB: the delta's 4 KiB crcs are not the map's.
  Onode coarse = base_onode();
  {
    DataExtent* e = coarse.extents.mutable_extent(0);
    e->csum_block = 8192;
    e->csums.assign(e->length / 8192, 0);
  }
  const Onode coarse_before = coarse;
  std::string why;
  EXPECT_EQ(apply_onode_deltas(&coarse, {&good}, &why), OnodeDeltaResult::kMismatch);
  EXPECT_NE(why.find("checksum blocks"), std::string::npos) << why;
  expect_same(coarse, coarse_before);
  // Ring data is not an onode's change; no deltas at all is not a transaction's.
  JournalDelta ring = good;
  ring.kind = JournalDeltaKind::kRingData;
  Onode o = base_onode();
  EXPECT_EQ(apply_onode_deltas(&o, {&ring}, &why), OnodeDeltaResult::kMismatch);
  EXPECT_EQ(apply_onode_deltas(&o, {}, &why), OnodeDeltaResult::kMismatch);
  // And the good one alone fits.
  EXPECT_EQ(apply_onode_deltas(&o, {&good}, &why), OnodeDeltaResult::kApplied) << why;
  EXPECT_EQ(o.extents.at(0).csums[8], 0xabcdef01u);
  EXPECT_EQ(o.extents.at(0).csums[9], 0xabcdef01u);
  EXPECT_EQ(o.version, 1u);
}

// ---- The deltas of a change (onode_deltas_between): what a transaction
// puts into its record instead of the onode ----

namespace {

// base_onode with a third extent in the next extent shard, so that a map
// of more than one shard is compared only where it changed.
Onode two_shard_onode() {
  Onode o = base_onode();
  DataExtent e;
  e.logical = ExtentMap::kShardSpan + 16 * kB;
  e.length = 8 * kB;
  e.tier = Tier::kSsd;
  e.physical = 64 << 20;
  e.csum_block = kB;
  e.csums.assign(8, 7);
  o.extents.insert(std::move(e));
  o.size = e.logical + e.length;
  o.attrs = {{"a0", "x"}, {"a1", "yy"}};
  return o;
}

}  // namespace

TEST(OnodeDeltasBetween, ReplayedOnTheOnodeBeforeTheyGiveTheOnodeAfter) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    std::mt19937_64 rng(seed);
    std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
    Onode before = two_shard_onode();
    before.version = 10;
    for (int round = 0; round < 40; ++round) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " round " + std::to_string(round));
      Onode after = before;  // shares the shards, as a transaction's copy does
      random_txn(rng, before.version + 1, &after);
      std::vector<JournalDelta> deltas;
      ASSERT_TRUE(onode_deltas_between(before, after, "Oobject", &deltas));
      ASSERT_FALSE(deltas.empty());
      for (const auto& d : deltas) {
        EXPECT_EQ(d.key, "Oobject");
        EXPECT_EQ(d.version, after.version);
        EXPECT_EQ(d.incarnation, kIncarnation);
        // The untouched shard's blocks are never named.
        if (d.kind == JournalDeltaKind::kOverwrite) {
          EXPECT_LT(d.logical, ExtentMap::kShardSpan);
        }
      }
      Onode replayed = before;
      std::string why;
      ASSERT_EQ(apply_onode_deltas(&replayed, ptrs(deltas), &why), OnodeDeltaResult::kApplied) << why;
      expect_same(replayed, after);
      before = after;
    }
  }
}

TEST(OnodeDeltasBetween, AVersionWithNoOtherChangeStillHasItsDelta) {
  Onode before = two_shard_onode();
  Onode after = before;
  after.version = 1;
  std::vector<JournalDelta> deltas;
  ASSERT_TRUE(onode_deltas_between(before, after, "Oobject", &deltas));
  ASSERT_EQ(deltas.size(), 1u);
  EXPECT_EQ(deltas[0].kind, JournalDeltaKind::kSetSize);
  EXPECT_EQ(deltas[0].size, before.size);
  // Without it, the next transaction's deltas would be a version ahead of
  // an onode checkpointed before this one.
  Onode replayed = before;
  std::string why;
  EXPECT_EQ(apply_onode_deltas(&replayed, ptrs(deltas), &why), OnodeDeltaResult::kApplied) << why;
  EXPECT_EQ(replayed.version, 1u);
}

TEST(OnodeDeltasBetween, ChangesDeltasCannotSayAreLeftToThePut) {
  const Onode before = two_shard_onode();
  struct Case {
    const char* what;
    std::function<void(Onode*)> change;
  };
  const std::vector<Case> cases = {
      {"a new extent", [](Onode* o) {
         DataExtent e;
         e.logical = 96 * 1024;
         e.length = kB;
         e.tier = Tier::kHdd;
         e.physical = 2 << 20;
         e.csums = {1};
         o->extents.insert(std::move(e));
       }},
      {"an extent moved", [](Onode* o) {
         DataExtent e = o->extents.at(0);
         o->extents.erase(0);
         e.physical += 1 << 20;
         o->extents.insert(std::move(e));
       }},
      {"an extent cut", [](Onode* o) {
         std::vector<PExtent> gone;
         o->extents.punch(0, kB, &gone);
       }},
      {"the omap id", [](Onode* o) { o->nid = 5; }},
      {"the hints", [](Onode* o) { o->alloc_hint_flags = kHintRandomWrite; }},
      {"the expected size", [](Onode* o) { o->expected_object_size = 4 << 20; }},
      {"another life", [](Onode* o) { o->incarnation += 1; }},
      {"two versions on", [](Onode* o) { o->version += 1; }},
  };
  for (const auto& c : cases) {
    Onode after = before;
    after.version = before.version + 1;
    c.change(&after);
    std::vector<JournalDelta> deltas(1);
    EXPECT_FALSE(onode_deltas_between(before, after, "Oobject", &deltas)) << c.what;
    EXPECT_EQ(deltas.size(), 1u) << c.what << ": *out changed";
  }
  // A checksum of a block larger than the 4 KiB an OVERWRITE names.
  Onode coarse = before;
  DataExtent e;
  e.logical = 1 << 20;
  e.length = 128 * 1024;
  e.tier = Tier::kHdd;
  e.physical = 32 << 20;
  e.csum_block = 64 * 1024;
  e.csums = {1, 2};
  coarse.extents.insert(std::move(e));
  Onode after = coarse;
  after.version = coarse.version + 1;
  after.extents.mutable_extent(1 << 20)->csums[1] = 3;
  std::vector<JournalDelta> deltas;
  EXPECT_FALSE(onode_deltas_between(coarse, after, "Oobject", &deltas));
  // Its attributes alone still go as deltas.
  after = coarse;
  after.version = coarse.version + 1;
  after.attrs["a9"] = "new";
  EXPECT_TRUE(onode_deltas_between(coarse, after, "Oobject", &deltas));
}
