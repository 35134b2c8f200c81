// The kvfs log's groups and records (docs/kvfs.md 3.2): every record type
// survives a round trip, damage is refused with a reason and never crashes,
// and the replay state refuses each record that contradicts it with -EIO
// naming the seq, leaving itself unchanged.
#include "hybridstore/kvfs/kvfs_log.h"

#include <gtest/gtest.h>

#include "common_helpers.h"
#include "hscommon/encoding.h"
#include "hybridstore/kvfs/kvfs_state.h"
#include "kvfs/kvfs_workload.h"

using namespace hybridstore;
using namespace hybridstore::test;

namespace {

constexpr uint32_t kGroupMagic = 0x564b5348;  // kvfs_log.cc
constexpr uint32_t kGroupTag = 0x4b564c47;    // kvfs_log.cc

size_t meaningful(const std::string& group) { return 8 + load_fixed32(group.data() + 4); }

std::string framed(std::string_view body) {
  std::string rec = seal_record(kGroupTag, 1, body);
  std::string out;
  put_fixed32(&out, kGroupMagic);
  put_fixed32(&out, static_cast<uint32_t>(rec.size()));
  return out + rec;
}

}  // namespace

TEST(KvFsGroup, EveryRecordTypeRoundTrips) {
  const auto records = sample_records();
  std::set<KvOp> ops;
  for (const KvRecord& r : records) ops.insert(kv_record_op(r));
  EXPECT_EQ(ops.size(), 12u) << "the samples cover every op";
  for (const KvRecord& r : records) {
    KvGroup g{77, 1000, {r}};
    const std::string enc = encode_kvfs_group(g, kB);
    EXPECT_EQ(enc.size() % kB, 0u);
    EXPECT_EQ(enc.size(), kvfs_group_size(g, kB));
    KvGroup back;
    uint64_t len = 0;
    std::string why;
    ASSERT_EQ(decode_kvfs_group(enc, kB, &back, &len, &why), 0) << kv_op_name(kv_record_op(r)) << ": " << why;
    EXPECT_EQ(len, enc.size());
    EXPECT_EQ(back.log_id, 77u);
    EXPECT_EQ(back.first_seq, 1000u);
    ASSERT_EQ(back.records.size(), 1u);
    EXPECT_TRUE(back.records[0] == r) << kv_op_name(kv_record_op(r));
  }
  KvGroup all{5, 1, records};
  KvGroup back;
  uint64_t len;
  std::string why;
  ASSERT_EQ(decode_kvfs_group(encode_kvfs_group(all, kB), kB, &back, &len, &why), 0) << why;
  EXPECT_TRUE(back.records == records);
}

TEST(KvFsGroup, EveryBitFlipIsRefused) {
  const std::string enc = encode_kvfs_group(KvGroup{5, 1, sample_records()}, kB);
  const size_t n = meaningful(enc);
  for (size_t bit = 0; bit < n * 8; ++bit) {
    std::string bad = enc;
    bad[bit / 8] ^= static_cast<char>(1 << (bit % 8));
    KvGroup out;
    uint64_t len;
    std::string why;
    ASSERT_EQ(decode_kvfs_group(bad, kB, &out, &len, &why), -EIO) << "bit " << bit;
    ASSERT_FALSE(why.empty());
  }
}

TEST(KvFsGroup, TruncatedIsRefused) {
  const std::string enc = encode_kvfs_group(KvGroup{5, 1, sample_records()}, kB);
  for (size_t l = 0; l < meaningful(enc); ++l) {
    KvGroup out;
    uint64_t len;
    std::string why;
    ASSERT_EQ(decode_kvfs_group(std::string_view(enc).substr(0, l), kB, &out, &len, &why), -EIO) << l;
  }
}

TEST(KvFsGroup, RandomBodiesNeverCrash) {
  const uint64_t seed = test_seed(55);
  std::mt19937_64 rng(seed);
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string body;
    put_fixed64(&body, 1);
    put_fixed64(&body, 1);
    if (i % 2) {
      // One record of a known op with random fields: reaches the field
      // decoders, which a wholly random body almost never does.
      put_varint(&body, 1);
      put_u8(&body, static_cast<uint8_t>(1 + rng() % 12));
      put_bytes(&body, random_bytes(rng, rng() % 48));
    } else {
      body += random_bytes(rng, rng() % 64);
    }
    KvGroup out;
    uint64_t len;
    std::string why;
    const int r = decode_kvfs_group(framed(body), kB, &out, &len, &why);
    if (r == 0) ++accepted;
    else ASSERT_FALSE(why.empty());
  }
  printf("seed %llu: %d of 20000 random bodies parsed\n", static_cast<unsigned long long>(seed), accepted);
}

TEST(KvFsGroup, UnknownOpIsANewerBuild) {
  std::string body;
  put_fixed64(&body, 5);
  put_fixed64(&body, 40);
  put_varint(&body, 1);
  put_u8(&body, 13);
  put_bytes(&body, "future");
  KvGroup out;
  uint64_t len;
  std::string why;
  EXPECT_EQ(decode_kvfs_group(framed(body), kB, &out, &len, &why), -EOPNOTSUPP);
  EXPECT_NE(why.find("newer build"), std::string::npos) << why;
  EXPECT_NE(why.find("seq 40"), std::string::npos) << why;
}

TEST(KvFsGroup, ImplausibleCountsAreRefused) {
  std::string body;
  put_fixed64(&body, 5);
  put_fixed64(&body, 1);
  put_varint(&body, 1);
  put_u8(&body, static_cast<uint8_t>(KvOp::kJournal));
  std::string fields;
  put_varint(&fields, UINT64_MAX / 2);  // extents that are not there
  put_bytes(&body, fields);
  KvGroup out;
  uint64_t len;
  std::string why;
  EXPECT_EQ(decode_kvfs_group(framed(body), kB, &out, &len, &why), -EIO);
}

// ---- the state's rules

namespace {

struct RuleCase {
  const char* what;
  std::vector<KvRecord> setup;  // applied after the base
  KvRecord bad;
  const char* expect;  // part of the message
};

std::vector<KvRecord> base() {
  return {KvInit{test_uuid(0x11), kB, kA, kG}, KvGrant{{kHead, 4 * kG}}, KvMkdir{"db"}, KvCreate{"db", "a", 16},
          KvUpdate{16, kA, 1, 0, {{2 << 20, kA}}, KvTailKind::kInData, ""}};
}

}  // namespace

TEST(KvFsState, EveryContradictionIsEioNamingTheSeq) {
  const KvUpdate over_a{17, kA, 1, 0, {{2 << 20, kA}}, KvTailKind::kInData, ""};
  const std::vector<RuleCase> cases = {
      {"extent outside chunks", {KvCreate{"db", "b", 17}},
       KvUpdate{17, kA, 1, 0, {{6 << 20, kA}}, KvTailKind::kInData, ""}, "outside the kvfs's chunks"},
      {"two owners", {KvCreate{"db", "b", 17}}, over_a, "two owners"},
      {"extent over the log", {KvCreate{"db", "b", 17}},
       KvUpdate{17, kA, 1, 0, {{kHead, kA}}, KvTailKind::kInData, ""}, "in use by the log"},
      {"unaligned extent", {KvCreate{"db", "b", 17}},
       KvUpdate{17, kB, 1, 0, {{(2 << 20) + kA, kB}}, KvTailKind::kInData, ""}, "aligned"},
      {"grant below H", {}, KvGrant{{0, kG}}, "inside"},
      {"grant past the device", {}, KvGrant{{kDevSize - kG, 2 * kG}}, "inside"},
      {"grant over a chunk", {}, KvGrant{{kHead + 3 * kG, 2 * kG}}, "overlaps"},
      {"unaligned grant", {}, KvGrant{{kHead * 8 + kA, kG}}, "aligned"},
      {"return of a chunk in use", {}, KvReturn{{2 << 20, kG}}, "in use"},
      {"return of a chunk not owned", {}, KvReturn{{8 << 20, kG}}, "not wholly"},
      {"unlink of a missing name", {}, KvUnlink{"db", "nope"}, "does not exist"},
      {"rename of a missing name", {}, KvRename{"db", "nope", "db", "x"}, "does not exist"},
      {"rename into a missing dir", {}, KvRename{"db", "a", "nodir", "x"}, "does not exist"},
      {"create in a missing dir", {}, KvCreate{"nodir", "x", 20}, "does not exist"},
      {"create of a live inode", {}, KvCreate{"db", "x", 16}, "in use"},
      {"create of a reserved inode", {}, KvCreate{"db", "x", 2}, "reserved"},
      {"name too long", {}, KvCreate{"db", std::string(256, 'n'), 20}, "not valid"},
      {"update of a missing inode", {}, KvUpdate{99, 0, 1, 0, {}, KvTailKind::kNone, ""}, "does not exist"},
      {"keep past the extents", {}, KvUpdate{16, kA, 1, 2, {}, KvTailKind::kInData, ""}, "keeps 2"},
      {"size past the extents", {}, KvUpdate{16, 3 * kA, 1, 1, {}, KvTailKind::kInData, ""}, "covering only"},
      {"inline tail of the wrong length", {},
       KvUpdate{16, 100, 1, 1, {}, KvTailKind::kInline, std::string(99, 'x')}, "tail"},
      {"rmdir of a non-empty dir", {}, KvRmdir{"db"}, "not empty"},
      {"mkdir of an existing dir", {}, KvMkdir{"db"}, "not a valid new"},
      {"second INIT", {}, KvInit{test_uuid(0x11), kB, kA, kG}, "second INIT"},
      {"second SNAPSHOT_DONE", {KvSnapshotDone{}}, KvSnapshotDone{}, "second SNAPSHOT_DONE"},
      {"next over a used range", {}, KvNext{{2 << 20, kA}}, "two owners"},
      {"journal over a file", {}, KvJournal{{{2 << 20, kA}}}, "two owners"},
      {"journal extents overlapping each other", {}, KvJournal{{{3 << 20, 2 * kA}, {(3 << 20) + kA, kA}}},
       "overlap"},
  };
  for (const RuleCase& c : cases) {
    KvFsState s(test_uuid(0x11), test_geometry());
    std::string why;
    ASSERT_EQ(s.begin_log(test_super().log_segment, &why), 0) << why;
    uint64_t seq = 1;
    for (const KvRecord& r : base()) ASSERT_EQ(s.apply(r, seq++, &why), 0) << c.what << ": " << why;
    for (const KvRecord& r : c.setup) ASSERT_EQ(s.apply(r, seq++, &why), 0) << c.what << ": " << why;
    const std::string before = s.describe();
    why.clear();
    EXPECT_EQ(s.apply(c.bad, 1000, &why), -EIO) << c.what;
    EXPECT_NE(why.find("seq 1000"), std::string::npos) << c.what << ": " << why;
    EXPECT_NE(why.find(c.expect), std::string::npos) << c.what << ": " << why;
    EXPECT_EQ(s.describe(), before) << c.what << ": a refused record changed the state";
  }
}

TEST(KvFsState, RecordsBeforeInitOrAForeignInitAreRefused) {
  KvFsState s(test_uuid(0x11), test_geometry());
  std::string why;
  ASSERT_EQ(s.begin_log(test_super().log_segment, &why), 0);
  EXPECT_EQ(s.apply(KvGrant{{kHead, kG}}, 1, &why), -EIO);
  EXPECT_NE(why.find("does not start with INIT"), std::string::npos) << why;
  EXPECT_EQ(s.apply(KvInit{test_uuid(0x12), kB, kA, kG}, 1, &why), -EIO);
  EXPECT_EQ(s.apply(KvInit{test_uuid(0x11), kB, kA * 2, kG}, 1, &why), -EIO);
  EXPECT_NE(why.find("does not match the superblock"), std::string::npos) << why;
  EXPECT_EQ(s.finish(&why), -EIO);
}

TEST(KvFsState, SampleRecordsBuildTheExpectedState) {
  KvFsState s(test_uuid(0x11), test_geometry());
  std::string why;
  ASSERT_EQ(s.begin_log(test_super().log_segment, &why), 0);
  uint64_t seq = 1;
  for (const KvRecord& r : sample_records()) ASSERT_EQ(s.apply(r, seq++, &why), 0) << why;
  ASSERT_EQ(s.finish(&why), 0) << why;
  EXPECT_EQ(s.chunks().size(), 1u);
  EXPECT_EQ(s.chunks().at(kHead), 4 * kG);
  EXPECT_EQ(s.dirs().size(), 1u);
  const auto& db = s.dirs().at("db");
  ASSERT_EQ(db.size(), 2u);
  EXPECT_EQ(db.at("CURRENT"), 17u);
  EXPECT_EQ(db.at("000001.log"), 16u);
  EXPECT_EQ(s.inodes().size(), 2u);
  EXPECT_EQ(s.inodes().at(16).tail.size(), 5000 % kB);
  EXPECT_EQ(s.journal().size(), 1u);
  EXPECT_EQ(s.log_segments().size(), 2u);
  EXPECT_EQ(s.next_ino(), 19u);
  EXPECT_TRUE(s.snapshot_done());
}

TEST(KvFsState, ReplacingANameFreesTheOldInodesBlocks) {
  KvFsState s(test_uuid(0x11), test_geometry());
  std::string why;
  ASSERT_EQ(s.begin_log(test_super().log_segment, &why), 0);
  uint64_t seq = 1;
  for (const KvRecord& r : base()) ASSERT_EQ(s.apply(r, seq++, &why), 0) << why;
  // Renaming b over a drops inode 16, so its extent may go to inode 17 next.
  ASSERT_EQ(s.apply(KvCreate{"db", "b", 17}, seq++, &why), 0) << why;
  ASSERT_EQ(s.apply(KvRename{"db", "b", "db", "a"}, seq++, &why), 0) << why;
  EXPECT_EQ(s.inodes().count(16), 0u);
  ASSERT_EQ(s.apply(KvUpdate{17, kA, 1, 0, {{2 << 20, kA}}, KvTailKind::kInData, ""}, seq++, &why), 0) << why;
  // An UPDATE may reuse the blocks it gives up itself.
  ASSERT_EQ(s.apply(KvUpdate{17, kA, 2, 0, {{2 << 20, kA}}, KvTailKind::kInData, ""}, seq++, &why), 0) << why;
  // RETURN once the chunk is empty.
  ASSERT_EQ(s.apply(KvUnlink{"db", "a"}, seq++, &why), 0) << why;
  ASSERT_EQ(s.apply(KvReturn{{2 << 20, kG}}, seq++, &why), 0) << why;
  EXPECT_EQ(s.chunks().size(), 2u);
}
