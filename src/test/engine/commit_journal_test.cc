// The commit journal (kv/commit_journal.h) and the committer's journal path:
// the record decoder takes nothing but intact records of its own store,
// replay restores exactly the prefix RocksDB lost, ring space is reused only
// after a checkpoint, and groups in flight on several lanes are acknowledged
// in queue order with every transaction durable. Each of those runs on a
// ring file and on a ring that is a region of two extents of a device
// (open_region), which must also never touch the device outside them.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <random>
#include <set>
#include <thread>

#include <pthread.h>

#include <rocksdb/db.h>
#include <rocksdb/utilities/stackable_db.h>
#include <rocksdb/write_batch.h>

#include "common_helpers.h"
#include "hscommon/crc32c.h"
#include "hscommon/encoding.h"
#include "hsio/forwarding_device.h"
#include "hsio/region_device.h"
#include "hybridstore/kv/commit_journal.h"
#include "hybridstore/kv/kv_committer.h"
#include "hybridstore/kv/kv_schema.h"

using namespace hybridstore;

namespace {

Uuid fsid_a() { return Uuid{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}; }
Uuid fsid_b() { return Uuid{16, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 1}; }

std::string batch_putting(const std::string& k, const std::string& v, uint64_t seq) {
  rocksdb::WriteBatch b;
  b.Put(k, v);
  std::string n;
  put_fixed64(&n, seq);
  b.Put(kv::journal_seq_key(), n);
  return b.Data();
}

std::vector<JournalEntry> entries(uint64_t first, int count) {
  std::vector<JournalEntry> e;
  for (int i = 0; i < count; ++i) {
    uint64_t s = first + static_cast<uint64_t>(i);
    e.push_back({s, batch_putting("k" + std::to_string(s), "v" + std::to_string(s), s)});
  }
  return e;
}

// What the committer's RocksDB sync leaves in RocksDB (kv_committer.cc):
// the number it covers and the ring's tail mark for it.
void mark_synced(rocksdb::DB* db, const CommitJournal& j, uint64_t covered) {
  rocksdb::WriteBatch b;
  std::string n;
  put_fixed64(&n, covered);
  b.Put(kv::journal_seq_key(), n);
  b.Put(kv::journal_tail_key(), j.tail_mark(covered));
  rocksdb::WriteOptions wo;
  wo.sync = true;
  ASSERT_TRUE(db->Write(wo, &b).ok());
}

std::unique_ptr<rocksdb::DB> open_db(const std::string& path) {
  rocksdb::Options o;
  o.create_if_missing = true;
  rocksdb::DB* db = nullptr;
  EXPECT_TRUE(rocksdb::DB::Open(o, path, &db).ok());
  return std::unique_ptr<rocksdb::DB>(db);
}

TEST(CommitJournalRecord, RoundTripsAndIsPaddedToWholeBlocks) {
  auto in = entries(7, 3);
  std::string r = encode_journal_record(fsid_a(), in);
  EXPECT_EQ(r.size() % CommitJournal::kBlock, 0u);
  std::vector<JournalEntry> out;
  uint64_t len = 0;
  ASSERT_TRUE(decode_journal_record(r, fsid_a(), &out, &len));
  EXPECT_EQ(len, r.size());
  ASSERT_EQ(out.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(out[i].seq, in[i].seq);
    EXPECT_EQ(out[i].batch, in[i].batch);
  }
}

// The record is built in one buffer from a size computed first; its bytes
// must stay those of the store's generic sealed record (magic, length,
// seal_record of the body, zero padding), which records already on disk were
// written in. Batch lengths sit on each side of every varint boundary of
// their length prefixes, and single batches are sized so that the body's own
// length prefix crosses each boundary (the 16-byte fsid, a 1-byte count, 8
// bytes of number and the batch's prefix make up the rest).
TEST(CommitJournalRecord, IsTheSealedRecordLayoutByteForByte) {
  const std::vector<std::vector<size_t>> records = {
      {0}, {1}, {101}, {102}, {16356}, {16357}, {2097123}, {2097124},
      {127, 128, 16383, 16384}, {2097151, 2097152}, std::vector<size_t>(40, 4200)};
  std::set<uint64_t> body_sizes;
  for (const auto& lens : records) {
    std::vector<JournalEntry> in;
    for (size_t i = 0; i < lens.size(); ++i)
      in.push_back({100 + i, std::string(lens[i], static_cast<char>('a' + i % 26))});
    std::string body(reinterpret_cast<const char*>(fsid_a().data()), fsid_a().size());
    put_varint(&body, in.size());
    for (const auto& e : in) {
      put_fixed64(&body, e.seq);
      put_bytes(&body, e.batch);
    }
    body_sizes.insert(body.size());
    std::string sealed = seal_record(0x4a524e4c, 1, body);
    std::string want;
    put_fixed32(&want, 0x314a5348);
    put_fixed32(&want, static_cast<uint32_t>(sealed.size()));
    want += sealed;
    want.resize((want.size() + CommitJournal::kBlock - 1) / CommitJournal::kBlock * CommitJournal::kBlock, '\0');
    std::string got = encode_journal_record(fsid_a(), in);
    EXPECT_TRUE(got == want) << lens.size() << " batches, the first of " << lens[0] << " bytes";
    std::vector<JournalEntryView> views;
    for (const auto& e : in) views.push_back({e.seq, e.batch});
    EXPECT_EQ(journal_record_size(fsid_a(), views), want.size());
  }
  for (uint64_t edge : {127ull, 128ull, 16383ull, 16384ull, 2097151ull, 2097152ull})
    EXPECT_EQ(body_sizes.count(edge), 1u) << "no record with a body of " << edge << " bytes";
}

TEST(CommitJournalRecord, RejectsEveryFlippedBitTruncationAndAnotherStoresRecord) {
  std::string r = encode_journal_record(fsid_a(), entries(1, 2));
  std::vector<JournalEntry> out;
  uint64_t len;
  EXPECT_FALSE(decode_journal_record(r, fsid_b(), &out, &len));
  // Every bit of the framed part (the padding after it carries nothing).
  const size_t framed = 8 + load_fixed32(r.data() + 4);
  for (size_t byte = 0; byte < framed; ++byte)
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = r;
      bad[byte] = static_cast<char>(bad[byte] ^ (1 << bit));
      EXPECT_FALSE(decode_journal_record(bad, fsid_a(), &out, &len)) << "byte " << byte << " bit " << bit;
    }
  for (size_t n = 0; n < framed; n += 7) EXPECT_FALSE(decode_journal_record(r.substr(0, n), fsid_a(), &out, &len));
  // A future version is refused even with a valid checksum.
  std::string body(16, '\0');
  std::string sealed = seal_record(0x4a524e4c, 2, body);
  std::string v2;
  put_fixed32(&v2, 0x314a5348);
  put_fixed32(&v2, static_cast<uint32_t>(sealed.size()));
  v2 += sealed;
  v2.resize(4096, '\0');
  EXPECT_FALSE(decode_journal_record(v2, fsid_a(), &out, &len));
}

// A commit group goes to RocksDB as one batch: every record of every
// transaction, in order, puts, deletes and merges alike.
TEST(CommitGroupBatch, JoinedBatchHoldsEveryRecordInOrder) {
  rocksdb::WriteBatch a, b, c;
  a.Put("k1", "v1");
  a.Delete("k2");
  b.Merge("m", std::string(8, '\1'));
  c.Put("k3", std::string(5000, 'x'));
  c.Put("k1", "v1b");
  rocksdb::WriteBatch joined(join_write_batches({&a, &b, &c}));
  EXPECT_EQ(joined.Count(), 5u);
  struct Log : rocksdb::WriteBatch::Handler {
    std::vector<std::string> ops;
    void Put(const rocksdb::Slice& k, const rocksdb::Slice& v) override {
      ops.push_back("put " + k.ToString() + " " + std::to_string(v.size()));
    }
    void Delete(const rocksdb::Slice& k) override { ops.push_back("del " + k.ToString()); }
    void Merge(const rocksdb::Slice& k, const rocksdb::Slice& v) override {
      ops.push_back("merge " + k.ToString() + " " + std::to_string(v.size()));
    }
  } log;
  ASSERT_TRUE(joined.Iterate(&log).ok());
  EXPECT_EQ(log.ops, (std::vector<std::string>{"put k1 2", "del k2", "merge m 8", "put k3 5000", "put k1 3"}));
  rocksdb::WriteBatch one(join_write_batches({&b}));
  EXPECT_EQ(one.Data(), b.Data());
}

// Every key's records in order, for comparing what two batches do.
std::vector<std::string> records_of(const rocksdb::WriteBatch& b) {
  struct Log : rocksdb::WriteBatch::Handler {
    std::vector<std::string> ops;
    void Put(const rocksdb::Slice& k, const rocksdb::Slice& v) override {
      ops.push_back("put " + k.ToString() + " " + v.ToString(true));
    }
    void Delete(const rocksdb::Slice& k) override { ops.push_back("del " + k.ToString()); }
    void Merge(const rocksdb::Slice& k, const rocksdb::Slice& v) override {
      ops.push_back("merge " + k.ToString() + " " + v.ToString(true));
    }
  } log;
  EXPECT_TRUE(b.Iterate(&log).ok());
  return log.ops;
}

std::string stat_delta(int64_t objects) {
  int64_t d[kv::kStatCount] = {};
  d[0] = objects;
  return kv::encode_stat_delta(d);
}

TEST(CollapseWriteBatches, WritesEachKeyOnceAndFoldsMerges) {
  auto merge = kv::make_merge_operator();
  const std::string chunk = "B" + std::string(9, '\0');
  rocksdb::WriteBatch a, b, c;
  a.Put("k1", "v1");
  a.Merge(kv::stats_key(), stat_delta(1));
  a.Merge(chunk, std::string("\x01\x00", 2));
  a.Put("gone", "x");
  b.Delete("gone");
  b.Merge(kv::stats_key(), stat_delta(2));
  b.Merge(chunk, std::string("\x03\x04", 2));
  b.Delete("k2");
  c.Put("k1", "v1b");
  c.Put("k2", "back");
  c.Merge(kv::stats_key(), stat_delta(-1));
  rocksdb::WriteBatch out;
  ASSERT_TRUE(collapse_write_batches({&a, &b, &c}, merge.get(), &out));
  EXPECT_EQ(records_of(out), (std::vector<std::string>{
                                 "merge " + rocksdb::Slice(kv::stats_key()).ToString() + " " +
                                     rocksdb::Slice(stat_delta(2)).ToString(true),
                                 "merge " + chunk + " 0204",
                                 "del gone",
                                 "put k1 763162",
                                 "put k2 6261636B",
                             }));
  // A Put or Delete keeps a merge that follows it as a second record.
  rocksdb::WriteBatch d, e;
  d.Put(kv::stats_key(), stat_delta(5));
  e.Merge(kv::stats_key(), stat_delta(1));
  e.Merge(kv::stats_key(), stat_delta(1));
  ASSERT_TRUE(collapse_write_batches({&d, &e}, merge.get(), &out));
  EXPECT_EQ(out.Count(), 2u);
}

TEST(CollapseWriteBatches, RefusesWhatItCannotCollapse) {
  auto merge = kv::make_merge_operator();
  rocksdb::WriteBatch plain, single, range, log, merges;
  plain.Put("a", "1");
  single.SingleDelete("a");
  range.DeleteRange("a", "b");
  log.PutLogData("note");
  rocksdb::WriteBatch out;
  EXPECT_FALSE(collapse_write_batches({&plain, &single}, merge.get(), &out));
  EXPECT_FALSE(collapse_write_batches({&plain, &range}, merge.get(), &out));
  EXPECT_FALSE(collapse_write_batches({&log, &plain}, merge.get(), &out));
  // Merges the operator rejects (a key it does not know) are not folded.
  merges.Merge("unknown", "x");
  merges.Merge("unknown", "y");
  EXPECT_FALSE(collapse_write_batches({&merges}, merge.get(), &out));
  // Without an operator, one merge per key is still fine; two are not.
  rocksdb::WriteBatch one;
  one.Merge("m", "x");
  EXPECT_TRUE(collapse_write_batches({&plain, &one}, nullptr, &out));
  EXPECT_FALSE(collapse_write_batches({&one, &one}, nullptr, &out));
}

// A group written collapsed leaves RocksDB exactly as the same group joined
// record by record: random groups over a few keys of every kind the merge
// operator knows, applied on top of the same earlier contents.
TEST(CollapseWriteBatches, LeavesTheSameDatabaseAsTheJoinedGroup) {
  std::mt19937_64 rng(test::test_seed(1515));
  test::TempDir dir("collapse");
  auto open = [&](const std::string& name) {
    rocksdb::Options o;
    o.create_if_missing = true;
    o.merge_operator = kv::make_merge_operator();
    rocksdb::DB* db = nullptr;
    EXPECT_TRUE(rocksdb::DB::Open(o, dir.file(name), &db).ok());
    return std::unique_ptr<rocksdb::DB>(db);
  };
  auto joined_db = open("joined"), collapsed_db = open("collapsed");
  auto merge = kv::make_merge_operator();
  const std::vector<std::string> keys = {"B" + std::string(9, '\1'), "B" + std::string(9, '\2'),
                                         kv::stats_key(), "k1", "k2", "k3"};
  size_t records_in = 0, records_out = 0;
  for (int group = 0; group < 300; ++group) {
    std::vector<rocksdb::WriteBatch> parts(1 + rng() % 6);
    for (auto& p : parts)
      for (int n = 1 + static_cast<int>(rng() % 5); n > 0; --n) {
        const std::string& k = keys[rng() % keys.size()];
        const bool mergeable = k[0] == 'B' || k == kv::stats_key();
        std::string v = k[0] == 'B'               ? test::random_bytes(rng, 1 + rng() % 16)
                        : k == kv::stats_key() ? stat_delta(static_cast<int64_t>(rng() % 7) - 3)
                                               : test::random_bytes(rng, rng() % 40);
        switch (rng() % 4) {
          case 0: p.Delete(k); break;
          case 1: p.Put(k, v); break;
          default:
            if (mergeable)
              p.Merge(k, v);
            else
              p.Put(k, v);
        }
      }
    std::vector<const rocksdb::WriteBatch*> ptrs;
    for (const auto& p : parts) ptrs.push_back(&p);
    rocksdb::WriteBatch joined(join_write_batches(ptrs)), collapsed;
    ASSERT_TRUE(collapse_write_batches(ptrs, merge.get(), &collapsed)) << "group " << group;
    records_in += joined.Count();
    records_out += collapsed.Count();
    ASSERT_TRUE(joined_db->Write(rocksdb::WriteOptions(), &joined).ok());
    ASSERT_TRUE(collapsed_db->Write(rocksdb::WriteOptions(), &collapsed).ok());
    for (const auto& k : keys) {
      std::string a, b;
      rocksdb::Status sa = joined_db->Get(rocksdb::ReadOptions(), k, &a);
      rocksdb::Status sb = collapsed_db->Get(rocksdb::ReadOptions(), k, &b);
      ASSERT_EQ(sa.code(), sb.code()) << "group " << group << " key " << rocksdb::Slice(k).ToString(true);
      ASSERT_EQ(a, b) << "group " << group << " key " << rocksdb::Slice(k).ToString(true);
    }
  }
  // Not a tautology: the groups did have keys written more than once.
  EXPECT_LT(records_out, records_in * 3 / 4);
}

TEST(CommitJournalRecord, RandomGarbageNeverDecodes) {
  std::mt19937_64 rng(15);
  std::vector<JournalEntry> out;
  uint64_t len;
  for (int i = 0; i < 2000; ++i) {
    std::string g = test::random_bytes(rng, 4096);
    if (i % 2) {  // with the magic, so the checksum must catch it
      std::string m;
      put_fixed32(&m, 0x314a5348);
      put_fixed32(&m, static_cast<uint32_t>(rng() % 4000));
      g.replace(0, 8, m);
    }
    EXPECT_FALSE(decode_journal_record(g, fsid_a(), &out, &len));
  }
}

// ---- Version 2 records (docs/small-writes.md section 5) ----

std::string block_of(uint64_t seed) {
  std::mt19937_64 rng(seed);
  return test::random_bytes(rng, CommitJournal::kBlock);
}

// An OVERWRITE names no data block: its checksums are those of `count`
// blocks from `first` of `blocks`, which the entry carries as RING_DATA.
JournalDelta overwrite(const std::string& key, uint64_t version, uint64_t logical, uint64_t first,
                       const std::vector<std::string>& blocks, size_t count) {
  JournalDelta d;
  d.kind = JournalDeltaKind::kOverwrite;
  d.key = key;
  d.version = version;
  d.incarnation = 4096 + version;  // more than one byte of varint
  d.logical = logical;
  d.tier = 1;
  d.physical = (logical + (64 << 20));
  for (size_t i = 0; i < count; ++i) d.crcs.push_back(crc32c(blocks[first + i]));
  return d;
}

JournalDelta ring_data(uint64_t staged, uint64_t physical, uint64_t first, const std::vector<std::string>& blocks,
                       size_t count) {
  JournalDelta d;
  d.kind = JournalDeltaKind::kRingData;
  d.staged = staged;
  d.tier = 1;
  d.physical = physical;
  d.first_block = first;
  for (size_t i = 0; i < count; ++i) d.crcs.push_back(crc32c(blocks[first + i]));
  return d;
}

JournalDelta attr(JournalDeltaKind kind, const std::string& key, uint64_t version, const std::string& name,
                  const std::string& value = "") {
  JournalDelta d;
  d.kind = kind;
  d.key = key;
  d.version = version;
  d.incarnation = 4096 + version;
  d.name = name;
  d.value = value;
  return d;
}

// A group of three transactions: one with omap (a batch) and an overwrite of
// two blocks with two attrs; one pure overwrite of one block (no batch);
// one that extends an object (overwrite and size). Four data blocks.
struct V2Group {
  std::vector<std::string> blocks;
  std::vector<JournalEntry> entries;
  std::vector<std::string_view> data() const { return {blocks.begin(), blocks.end()}; }
};
V2Group v2_group(uint64_t first_seq, uint64_t seed) {
  V2Group g;
  for (uint64_t i = 0; i < 4; ++i) g.blocks.push_back(block_of(seed * 10 + i));
  JournalEntry a{first_seq, batch_putting("omap" + std::to_string(first_seq), "entry", first_seq)};
  a.deltas = {ring_data(1, (64 << 20) + 8192, 0, g.blocks, 2), overwrite("Oa", 7, 8192, 0, g.blocks, 2),
              attr(JournalDeltaKind::kSetAttr, "Oa", 7, "_", "info"), attr(JournalDeltaKind::kRmAttr, "Oa", 7, "snapset")};
  JournalEntry b{first_seq + 1, ""};
  b.has_batch = false;
  b.deltas = {ring_data(2, 64 << 20, 2, g.blocks, 1), overwrite("Ob", 1, 0, 2, g.blocks, 1)};
  JournalEntry c{first_seq + 2, ""};
  c.has_batch = false;
  JournalDelta size;
  size.kind = JournalDeltaKind::kSetSize;
  size.key = "Oa";
  size.version = 8;
  size.size = 4 << 20;
  c.deltas = {ring_data(3, (68 << 20) - 4096, 3, g.blocks, 1), overwrite("Oa", 8, (4 << 20) - 4096, 3, g.blocks, 1),
              size};
  g.entries = {a, b, c};
  return g;
}

void expect_same_entries(const std::vector<JournalEntry>& got, const std::vector<JournalEntry>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].seq, want[i].seq);
    EXPECT_EQ(got[i].has_batch, want[i].has_batch);
    EXPECT_EQ(got[i].batch, want[i].batch);
    EXPECT_TRUE(got[i].deltas == want[i].deltas) << "entry " << i;
  }
}

// A version-2 record framed by hand around `body` (sealed as `version`),
// padded, with `blocks` after it: for bodies the encoder would never make.
std::string frame_v2(std::string_view body, uint8_t version, const std::vector<std::string>& blocks,
                     uint32_t magic = 0x324a5348) {
  std::string sealed = seal_record(0x4a524e4c, version, body);
  std::string r;
  put_fixed32(&r, magic);
  put_fixed32(&r, static_cast<uint32_t>(sealed.size()));
  put_fixed32(&r, static_cast<uint32_t>(blocks.size()));
  r += sealed;
  r.resize((r.size() + 4095) / 4096 * 4096, '\0');
  for (const auto& b : blocks) r += b;
  return r;
}

std::string fsid_bytes() { return std::string(reinterpret_cast<const char*>(fsid_a().data()), fsid_a().size()); }

TEST(CommitJournalRecordV2, RoundTripsDeltasAndDataBlocksAfterAPaddedHeader) {
  const V2Group g = v2_group(40, 1);
  const std::string r = encode_journal_record_v2(fsid_a(), g.entries, g.data());
  std::vector<JournalEntryView> views;
  for (const auto& e : g.entries) views.push_back({e.seq, e.batch, e.has_batch, &e.deltas});
  EXPECT_EQ(journal_record_v2_size(fsid_a(), views, 4), r.size());
  ASSERT_EQ(r.size() % CommitJournal::kBlock, 0u);
  // The data blocks are the record's last four blocks, as they were given:
  // they go to their place later straight from there.
  const size_t header = r.size() - 4 * CommitJournal::kBlock;
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(r.substr(header + i * CommitJournal::kBlock, CommitJournal::kBlock), g.blocks[i]);
  EXPECT_EQ(load_fixed32(r.data()), 0x324a5348u);
  EXPECT_EQ(load_fixed32(r.data() + 8), 4u);
  JournalRecord rec;
  uint64_t len = 0;
  std::string why;
  // Followed by more ring (a next record's bytes): the length says where it ends.
  ASSERT_TRUE(decode_journal_record(r + std::string(8192, 'x'), fsid_a(), &rec, &len, &why)) << why;
  EXPECT_EQ(len, r.size());
  EXPECT_EQ(rec.version, 2);
  expect_same_entries(rec.entries, g.entries);
  ASSERT_EQ(rec.data.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(rec.data[i], g.blocks[i]);
  // The entries-only decoder takes it too.
  std::vector<JournalEntry> out;
  ASSERT_TRUE(decode_journal_record(r, fsid_a(), &out, &len));
  expect_same_entries(out, g.entries);
  // A record of batches only (no data) is one header block.
  const std::string plain = encode_journal_record_v2(fsid_a(), entries(3, 2), {});
  EXPECT_EQ(plain.size(), CommitJournal::kBlock);
  ASSERT_TRUE(decode_journal_record(plain, fsid_a(), &rec, &len, &why)) << why;
  expect_same_entries(rec.entries, entries(3, 2));
  EXPECT_TRUE(rec.data.empty());
  // Version 1 through the same decoder.
  ASSERT_TRUE(decode_journal_record(encode_journal_record(fsid_a(), entries(9, 2)), fsid_a(), &rec, &len, &why)) << why;
  EXPECT_EQ(rec.version, 1);
  expect_same_entries(rec.entries, entries(9, 2));
}

TEST(CommitJournalRecordV2, RejectsEveryFlippedHeaderBitTruncationAndAnotherStoresRecord) {
  const V2Group g = v2_group(1, 2);
  const std::string r = encode_journal_record_v2(fsid_a(), g.entries, g.data());
  JournalRecord rec;
  uint64_t len;
  std::string why;
  EXPECT_FALSE(decode_journal_record(r, fsid_b(), &rec, &len, &why));
  EXPECT_NE(why.find("another store"), std::string::npos) << why;
  const size_t framed = 12 + load_fixed32(r.data() + 4);
  for (size_t byte = 0; byte < framed; ++byte)
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = r;
      bad[byte] = static_cast<char>(bad[byte] ^ (1 << bit));
      why.clear();
      EXPECT_FALSE(decode_journal_record(bad, fsid_a(), &rec, &len, &why)) << "byte " << byte << " bit " << bit;
      EXPECT_FALSE(why.empty());
    }
  // Cut anywhere, header or data: never a record.
  for (size_t n = 0; n < r.size(); n += (n < framed ? 5 : 509)) {
    why.clear();
    EXPECT_FALSE(decode_journal_record(r.substr(0, n), fsid_a(), &rec, &len, &why)) << "cut at " << n;
    EXPECT_FALSE(why.empty());
  }
}

// A data block's bytes are checked by the crc its delta carries: any change
// in any block, even with the header intact, refuses the whole record.
TEST(CommitJournalRecordV2, ABadCrcOfAnyDataBlockRefusesTheRecord) {
  const V2Group g = v2_group(1, 3);
  const std::string r = encode_journal_record_v2(fsid_a(), g.entries, g.data());
  const size_t header = r.size() - 4 * CommitJournal::kBlock;
  std::mt19937_64 rng(test::test_seed(5858));
  JournalRecord rec;
  uint64_t len;
  for (size_t b = 0; b < 4; ++b)
    for (int k = 0; k < 64; ++k) {
      std::string bad = r;
      const size_t at = header + b * CommitJournal::kBlock + rng() % CommitJournal::kBlock;
      bad[at] = static_cast<char>(bad[at] ^ (1 << (rng() % 8)));
      std::string why;
      EXPECT_FALSE(decode_journal_record(bad, fsid_a(), &rec, &len, &why)) << "block " << b << " byte " << at;
      EXPECT_NE(why.find("data block crc"), std::string::npos) << why;
    }
  // A delta whose crc is wrong for a good block: the same.
  V2Group h = v2_group(1, 3);
  h.entries[1].deltas[0].crcs[0] ^= 1;
  std::string why;
  EXPECT_FALSE(decode_journal_record(encode_journal_record_v2(fsid_a(), h.entries, h.data()), fsid_a(), &rec, &len, &why));
  EXPECT_NE(why.find("data block crc"), std::string::npos) << why;
}

// A record torn while written: its blocks reach the ring in any order and
// some never do; what is left of an older record of the same size, or the
// zeros of a fresh ring, may be under them. Every mix of new blocks and
// what was under them is refused, and the whole record decodes.
TEST(CommitJournalRecordV2, EveryTornMixOfNewAndOldBlocksIsRefused) {
  const V2Group g = v2_group(20, 4);
  const std::string fresh = encode_journal_record_v2(fsid_a(), g.entries, g.data());
  const V2Group o = v2_group(10, 5);
  const std::string old = encode_journal_record_v2(fsid_a(), o.entries, o.data());
  ASSERT_EQ(old.size(), fresh.size());
  const size_t blocks = fresh.size() / CommitJournal::kBlock;
  ASSERT_LE(blocks, 12u);
  const std::string zeros(fresh.size(), '\0');
  JournalRecord rec;
  uint64_t len;
  for (const std::string* under : {&old, &zeros})
    for (uint32_t mask = 0; mask + 1 < (1u << blocks); ++mask) {
      std::string torn = *under;
      for (size_t b = 0; b < blocks; ++b)
        if (mask & (1u << b))
          torn.replace(b * CommitJournal::kBlock, CommitJournal::kBlock,
                       fresh.substr(b * CommitJournal::kBlock, CommitJournal::kBlock));
      // Only the old record itself (nothing new written) may decode, as itself.
      if (torn == old) continue;
      std::string why;
      EXPECT_FALSE(decode_journal_record(torn, fsid_a(), &rec, &len, &why)) << "new blocks mask " << mask;
      EXPECT_FALSE(why.empty());
    }
  std::string why;
  ASSERT_TRUE(decode_journal_record(fresh, fsid_a(), &rec, &len, &why)) << why;
  EXPECT_EQ(rec.entries[0].seq, 20u);
}

// Headers whose seal is intact but whose meaning is not: the decoder refuses
// them with a reason, never takes them.
TEST(CommitJournalRecordV2, RefusesWellSealedNonsense) {
  JournalRecord rec;
  uint64_t len;
  auto refused = [&](const std::string& r, const std::string& reason) {
    std::string why;
    EXPECT_FALSE(decode_journal_record(r, fsid_a(), &rec, &len, &why)) << reason;
    EXPECT_NE(why.find(reason), std::string::npos) << "want '" << reason << "', got '" << why << "'";
  };
  auto encoded = [&](const std::function<void(V2Group&)>& spoil) {
    V2Group g = v2_group(1, 6);
    spoil(g);
    return encode_journal_record_v2(fsid_a(), g.entries, g.data());
  };
  refused(encoded([](V2Group& g) { g.entries[1].deltas[0].first_block = 3; }), "out of order");
  refused(encoded([](V2Group& g) { g.entries[0].deltas[0].first_block = 1; }), "out of order");
  refused(encoded([](V2Group& g) { g.blocks.push_back(block_of(99)); }), "data blocks no delta names");
  refused(encoded([](V2Group& g) { g.entries[2].deltas.clear(); }), "data blocks no delta names");
  refused(encoded([](V2Group& g) { g.entries[0].deltas[1].version = 6; }), "disagree on its version");
  refused(encoded([](V2Group& g) { g.entries[1].deltas[1].version = 0; }), "version 0");
  refused(encoded([](V2Group& g) { g.entries[1].deltas[1].key.clear(); }), "without an object key");
  refused(encoded([](V2Group& g) { g.entries[1].deltas[0].tier = kMaxTiers; }), "bad tier");
  refused(encoded([](V2Group& g) { g.entries[1].deltas[1].logical = 100; }), "misaligned");
  refused(encoded([](V2Group& g) { g.entries[1].deltas[0].physical = 4097; }), "misaligned");
  refused(encoded([](V2Group& g) { g.entries[1].deltas[1].kind = static_cast<JournalDeltaKind>(9); }),
          "unknown delta kind");
  refused(encoded([](V2Group& g) { g.entries[1].seq = 5; }), "not consecutive");
  refused(encoded([](V2Group& g) { g.entries[2].deltas[2].size = 1ull << 62; }), "setsize out of range");
  // By hand: what the encoder cannot even say.
  auto body_with = [&](uint64_t flags, const std::string& batch) {
    std::string b = fsid_bytes();
    put_varint(&b, 1);
    put_fixed64(&b, 1);
    put_varint(&b, flags);
    put_bytes(&b, batch);
    put_varint(&b, 0);
    return b;
  };
  refused(frame_v2(body_with(2, ""), 2, {}), "unknown entry flags");
  refused(frame_v2(body_with(0, "batch"), 2, {}), "flagged without one");
  refused(frame_v2(body_with(1, "batch") + "x", 2, {}), "trailing bytes");
  std::string none = fsid_bytes();
  put_varint(&none, 0);
  refused(frame_v2(none, 2, {}), "entry count");
  // The magic fixes the version: each version under the other's magic, and
  // a version past 2 under either, is refused although its seal is intact.
  ASSERT_TRUE(decode_journal_record(frame_v2(body_with(1, "b"), 2, {}), fsid_a(), &rec, &len));
  refused(frame_v2(body_with(1, "b"), 1, {}), "does not match the magic");
  refused(frame_v2(body_with(1, "b"), 3, {}), record_error_name(RecordError::kBadVersion));
  std::string v1body = fsid_bytes();
  put_varint(&v1body, 1);
  put_fixed64(&v1body, 1);
  put_bytes(&v1body, "b");
  std::string sealed = seal_record(0x4a524e4c, 2, v1body);
  std::string v1magic;
  put_fixed32(&v1magic, 0x314a5348);
  put_fixed32(&v1magic, static_cast<uint32_t>(sealed.size()));
  v1magic += sealed;
  v1magic.resize(4096, '\0');
  refused(v1magic, record_error_name(RecordError::kBadVersion));
  // A data block count past the input: the record is torn, not a huge one.
  std::string many = frame_v2(body_with(1, "b"), 2, {});
  store_fixed32(many.data() + 8, 0xffffffffu);
  refused(many, "truncated data blocks");
}

// Garbage of every kind, with each magic: refused with a reason, never a
// crash (the ASan and UBSan builds and qa/fuzz's journal target look for
// the rest).
TEST(CommitJournalRecordV2, RandomGarbageAndMutationsNeverDecode) {
  std::mt19937_64 rng(test::test_seed(5859));
  JournalRecord rec;
  uint64_t len;
  for (int i = 0; i < 3000; ++i) {
    std::string g = test::random_bytes(rng, 4096 * (1 + rng() % 3));
    std::string m;
    put_fixed32(&m, i % 3 == 0 ? 0x314a5348 : 0x324a5348);
    put_fixed32(&m, static_cast<uint32_t>(rng() % 9000));
    put_fixed32(&m, static_cast<uint32_t>(rng() % 4));
    if (i % 3 != 2) g.replace(0, 12, m);
    std::string why;
    EXPECT_FALSE(decode_journal_record(g, fsid_a(), &rec, &len, &why)) << "garbage " << i;
    EXPECT_FALSE(why.empty());
  }
  const V2Group grp = v2_group(1, 7);
  const std::string r = encode_journal_record_v2(fsid_a(), grp.entries, grp.data());
  const size_t framed = 12 + load_fixed32(r.data() + 4);
  const size_t header = r.size() - 4 * CommitJournal::kBlock;
  for (int i = 0; i < 3000; ++i) {
    std::string bad = r;
    // 1-4 random bytes changed in the framed header or the data blocks.
    for (int n = 1 + static_cast<int>(rng() % 4); n > 0; --n) {
      const size_t at = rng() % 2 ? rng() % framed : header + rng() % (r.size() - header);
      bad[at] = static_cast<char>(bad[at] ^ (1 + rng() % 255));
    }
    std::string why;
    EXPECT_FALSE(decode_journal_record(bad, fsid_a(), &rec, &len, &why)) << "mutation " << i;
  }
}

// Where a test's ring lives. kFile: the ring file of a directory store
// (CommitJournal::open). kRegion: a RegionDevice over two extents of a
// device file (CommitJournal::open_region), the ring's first part placed
// after its second on the device, with other blocks before, between and
// after them, as the ring on the SSD may lie among the kvfs's chunks. Those
// other blocks hold intact records of the same store (numbers from 1000):
// a read or a write that strays out of the ring is seen in what replay
// returns or in what they hold afterwards.
enum class Ring { kFile, kRegion };
void PrintTo(Ring r, std::ostream* os) { *os << (r == Ring::kFile ? "file" : "region"); }

class RingBacking {
 public:
  static constexpr uint64_t kB = CommitJournal::kBlock;
  static constexpr uint64_t kOtherSeq = 1000;

  RingBacking(const test::TempDir& dir, Ring ring, uint64_t size)
      : ring_(ring), blocks_(size / kB), first_blocks_(blocks_ * 3 / 5 | 1),
        file_(dir.file(ring == Ring::kFile ? "journal" : "ssd")) {}

  // The journal on this ring; a region is made (filled with other records,
  // then formatted) the first time, and found again after that.
  std::unique_ptr<CommitJournal> open() const {
    std::string err;
    if (ring_ == Ring::kFile) {
      auto j = CommitJournal::open(file_, blocks_ * kB, fsid_a(), nullptr, &err);
      EXPECT_TRUE(j) << err;
      return j;
    }
    const bool make = !std::filesystem::exists(file_);
    DeviceOpenOptions o;
    o.create = true;
    o.create_size = (blocks_ + 6) * kB;
    std::shared_ptr<BlockDevice> dev = open_block_device(file_, o, &err);
    EXPECT_TRUE(dev) << err;
    if (!dev) return nullptr;
    if (make) {
      std::string others;
      for (uint64_t b = 0; b < blocks_ + 6; ++b) others += encode_journal_record(fsid_a(), entries(kOtherSeq + b, 1));
      EXPECT_EQ(others.size(), (blocks_ + 6) * kB) << "other records of one block each";
      AlignedBuffer buf(others.size());
      std::memcpy(buf.data(), others.data(), others.size());
      EXPECT_EQ(dev->write(0, buf.data(), buf.size()), 0);
    }
    auto region = RegionDevice::make(dev, {{first_at(), first_blocks_ * kB}, {second_at(), second_blocks() * kB}}, &err);
    EXPECT_TRUE(region) << err;
    if (!region) return nullptr;
    if (make) {
      EXPECT_EQ(CommitJournal::format_region(*region, &err), 0) << err;
    }
    auto j = CommitJournal::open_region(std::move(region), fsid_a(), &err);
    EXPECT_TRUE(j) << err;
    return j;
  }

  const std::string& file() const { return file_; }
  // Where byte `pos` of the ring lies in file().
  uint64_t file_offset(uint64_t pos) const {
    if (ring_ == Ring::kFile) return pos;
    return pos < boundary() ? first_at() + pos : second_at() + (pos - boundary());
  }
  // The ring offset where a region's first extent ends (on a file, a place
  // in the middle of the ring like any other).
  uint64_t boundary() const { return first_blocks_ * kB; }

  // On a region: every block of the device outside the ring still holds
  // the record it was given.
  void expect_others_untouched() const {
    if (ring_ == Ring::kFile) return;
    std::string err;
    auto dev = open_block_device(file_, DeviceOpenOptions{}, &err);
    ASSERT_TRUE(dev) << err;
    AlignedBuffer all(dev->size());
    ASSERT_EQ(dev->read(0, all.data(), all.size()), 0);
    for (uint64_t b = 0; b < blocks_ + 6; ++b) {
      const uint64_t off = b * kB;
      const bool in_ring = (off >= second_at() && off < second_at() + second_blocks() * kB) ||
                           (off >= first_at() && off < first_at() + first_blocks_ * kB);
      if (in_ring) continue;
      std::vector<JournalEntry> got;
      uint64_t len = 0;
      ASSERT_TRUE(decode_journal_record(std::string_view(all.data() + off, kB), fsid_a(), &got, &len))
          << "device block " << b << " outside the ring";
      EXPECT_EQ(got[0].seq, kOtherSeq + b);
    }
  }

 private:
  // The device, in blocks: 1 other, the second extent, 3 others, the
  // first extent, 2 others.
  uint64_t second_blocks() const { return blocks_ - first_blocks_; }
  uint64_t second_at() const { return kB; }
  uint64_t first_at() const { return (1 + second_blocks() + 3) * kB; }

  Ring ring_;
  uint64_t blocks_;
  uint64_t first_blocks_;  // odd, so records of even block counts straddle its end
  std::string file_;
};

class CommitJournalReplay : public ::testing::TestWithParam<Ring> {
 protected:
  static constexpr uint64_t kB = CommitJournal::kBlock;
  test::TempDir dir_{"journal"};
  RingBacking ring(uint64_t size = 1 << 20) const { return RingBacking(dir_, GetParam(), size); }
  std::unique_ptr<CommitJournal> open_journal(uint64_t size = 1 << 20) const { return ring(size).open(); }
  void write_record(CommitJournal& j, uint64_t first, int count) {
    std::string r = j.encode(entries(first, count));
    bool cp = false;
    uint64_t pos = j.reserve(r.size(), &cp);
    ASSERT_EQ(j.write(pos, r), 0);
  }
  // A started committer over `db`, writing its records to `journal` through
  // four lanes (journal numbers from 1).
  static std::unique_ptr<KvCommitter> start_committer(rocksdb::DB* db, CommitJournal* journal,
                                                      WriteTracker* tracker) {
    auto c = std::make_unique<KvCommitter>(db, PerTier<BlockDevice*>{}, tracker, 64);
    if (journal) c->set_journal(journal, 1, 4);
    c->start();
    return c;
  }
  static CommitWork putting(const std::string& key, const std::string& value) {
    CommitWork work;
    work.batch = std::make_unique<rocksdb::WriteBatch>();
    work.batch->Put(key, value);
    return work;
  }
};

TEST_P(CommitJournalReplay, ReplaysWhatRocksDBLacksUpToTheFirstGapAndRaisesItsNumber) {
  auto db = open_db(dir_.file("db"));
  {
    // RocksDB holds transactions 1..3 already.
    for (uint64_t s = 1; s <= 3; ++s) {
      rocksdb::WriteBatch b(batch_putting("k" + std::to_string(s), "v", s));
      ASSERT_TRUE(db->Write(rocksdb::WriteOptions(), &b).ok());
    }
    auto j = open_journal();
    write_record(*j, 1, 3);  // already held: skipped
    write_record(*j, 4, 2);
    write_record(*j, 6, 1);
    write_record(*j, 9, 2);  // after a gap (7, 8 never made it): dropped
  }
  auto j = open_journal();
  uint64_t next = 0;
  std::string err;
  EXPECT_EQ(j->replay(db.get(), &next, &err), 3) << err;
  // Past every number the ring can hold: 9 and 10 are never met again.
  EXPECT_EQ(next, 7 + j->renumber_gap());
  std::string v;
  for (uint64_t s = 4; s <= 6; ++s) EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), "k" + std::to_string(s), &v).ok());
  for (uint64_t s : {9, 10}) EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), "k" + std::to_string(s), &v).IsNotFound());
  ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), kv::journal_seq_key(), &v).ok());
  EXPECT_EQ(load_fixed64(v.data()), next - 1);
  // A second replay finds nothing new.
  EXPECT_EQ(j->replay(db.get(), &next, &err), 0) << err;
}

TEST_P(CommitJournalReplay, SpaceIsReusedOnlyAfterACheckpoint) {
  auto j = open_journal(64 * CommitJournal::kBlock);
  bool cp = false;
  uint64_t used = 0;
  while (!cp) {
    j->reserve(4 * CommitJournal::kBlock, &cp);
    used += 4 * CommitJournal::kBlock;
    ASSERT_LE(used, j->size() + 4 * CommitJournal::kBlock);
  }
  EXPECT_GT(used, j->size());  // the first lap is free
  j->checkpoint();
  for (uint64_t n = 0; n + 4 * CommitJournal::kBlock <= j->size(); n += 4 * CommitJournal::kBlock) {
    j->reserve(4 * CommitJournal::kBlock, &cp);
    EXPECT_FALSE(cp);
  }
  j->reserve(4 * CommitJournal::kBlock, &cp);
  EXPECT_TRUE(cp);
}

TEST_P(CommitJournalReplay, AGarbageFilledRingReplaysNothing) {
  {
    auto j = open_journal();
    std::mt19937_64 rng(3);
    std::string g = test::random_bytes(rng, 64 * 4096);
    bool cp;
    uint64_t pos = j->reserve(g.size(), &cp);
    ASSERT_EQ(j->write(pos, g), 0);
  }
  auto db = open_db(dir_.file("db"));
  auto j = open_journal();
  uint64_t next = 0;
  std::string err;
  EXPECT_EQ(j->replay(db.get(), &next, &err), 0) << err;
  EXPECT_EQ(next, 1 + j->renumber_gap());
}

// The committer with a journal and several lanes: many submitters; every
// transaction is acknowledged, acknowledgements (and callbacks) come in
// queue order, and after a "crash" that keeps only the journal (RocksDB
// reopened from a copy taken before any of it was synced) replay restores
// every acknowledged transaction.
TEST_P(CommitJournalReplay, LanesAcknowledgeInQueueOrderAndReplayRestoresEveryTransaction) {
  auto db = open_db(dir_.file("db"));
  auto j = open_journal(64 * CommitJournal::kBlock);  // small: laps and checkpoints happen
  WriteTracker tracker;
  std::atomic<uint64_t> last_cb{0};
  std::atomic<bool> out_of_order{false};
  uint64_t committed_total = 0;
  {
    KvCommitter c(db.get(), {nullptr, nullptr}, &tracker, 64);
    c.set_journal(j.get(), 1, 4);
    c.start();
    std::mutex m;
    std::vector<std::thread> th;
    for (int w = 0; w < 16; ++w)
      th.emplace_back([&, w] {
        for (int i = 0; i < 100; ++i) {
          CommitWork work;
          work.batch = std::make_unique<rocksdb::WriteBatch>();
          work.batch->Put("w" + std::to_string(w) + "_" + std::to_string(i), std::string(300, 'x'));
          auto seq = std::make_shared<uint64_t>(0);
          work.on_commit.push_back([&, seq] {
            std::lock_guard<std::mutex> l(m);  // *seq is set by then
            // Callbacks run in sequence order, one after another.
            uint64_t prev = last_cb.exchange(*seq);
            if (prev >= *seq) out_of_order = true;
          });
          std::lock_guard<std::mutex> l(m);  // the sequence is known before the callback can run
          *seq = c.submit(std::move(work));
          ASSERT_GT(*seq, 0u);
        }
      });
    for (auto& t : th) t.join();
    ASSERT_EQ(c.wait_committed(c.last_seq()), 0);
    c.drain_callbacks();
    EXPECT_EQ(c.committed_seq(), 1600u);
    EXPECT_GT(c.stats().journal_records, 0u);
    EXPECT_GT(c.stats().journal_checkpoints, 0u);
    committed_total = c.stats().transactions;
    c.stop();
  }
  EXPECT_FALSE(out_of_order);
  EXPECT_EQ(last_cb.load(), 1600u);
  EXPECT_EQ(committed_total, 1600u);
  // Everything is in RocksDB and replay finds nothing RocksDB lacks.
  uint64_t next = 0;
  std::string err;
  EXPECT_EQ(j->replay(db.get(), &next, &err), 0) << err;
  EXPECT_EQ(next, 1601 + j->renumber_gap());
}

// RocksDB loses its unsynced tail (here: a database that never saw the
// batches at all): the journal alone brings back every acknowledged one.
// One transaction at a time, so each record is written by the thread that
// commits its group, before it fills the memtable: by the committer thread,
// or by the caller itself when it says it will wait.
TEST_P(CommitJournalReplay, AcknowledgedTransactionsComeBackFromTheJournalAlone) {
  for (bool caller_waits : {false, true}) {
    SCOPED_TRACE(caller_waits ? "callers commit their own" : "the committer thread commits");
    test::TempDir dir("journal");
    std::string err;
    auto j = RingBacking(dir, GetParam(), 1 << 20).open();
    ASSERT_TRUE(j);
    {
      auto db = open_db(dir.file("db-lost"));
      WriteTracker tracker;
      KvCommitter c(db.get(), {nullptr, nullptr}, &tracker, 64);
      c.set_journal(j.get(), 1, 2);
      c.start();
      for (int i = 0; i < 50; ++i) {
        CommitWork work;
        work.batch = std::make_unique<rocksdb::WriteBatch>();
        work.batch->Put("key" + std::to_string(i), "value" + std::to_string(i));
        uint64_t s = c.submit(std::move(work), caller_waits);
        ASSERT_EQ(c.wait_committed(s), 0);
      }
      EXPECT_EQ(c.stats().journal_records, 50u);
      c.stop();
    }
    auto fresh = open_db(dir.file("db-fresh"));
    uint64_t next = 0;
    EXPECT_EQ(j->replay(fresh.get(), &next, &err), 50) << err;
    std::string v;
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(fresh->Get(rocksdb::ReadOptions(), "key" + std::to_string(i), &v).ok()) << i;
      EXPECT_EQ(v, "value" + std::to_string(i));
    }
  }
}

}  // namespace

namespace {
// Callers that wait commit their own group when the committer is idle
// (submit(..., true) then wait_committed); mixed with callers that do not
// wait, every transaction is still acknowledged once, in queue order.
TEST_P(CommitJournalReplay, CallersThatWaitMayCommitThemselvesWithoutBreakingTheOrder) {
  auto db = open_db(dir_.file("db"));
  auto j = open_journal(64 * CommitJournal::kBlock);
  WriteTracker tracker;
  auto c = start_committer(db.get(), j.get(), &tracker);
  std::mutex order_mu;
  std::vector<uint64_t> acked;
  std::vector<std::thread> th;
  for (int w = 0; w < 6; ++w)
    th.emplace_back([&, w] {
      for (int i = 0; i < 150; ++i) {
        CommitWork work;
        work.batch = std::make_unique<rocksdb::WriteBatch>();
        work.batch->Put("c" + std::to_string(w) + "_" + std::to_string(i), "v");
        auto seq = std::make_shared<uint64_t>(0);
        work.after_commit = [&, seq](uint64_t) {
          std::lock_guard<std::mutex> l(order_mu);
          acked.push_back(*seq);
        };
        const bool waits = w % 2 == 0 || i % 3 == 0;
        std::lock_guard<std::mutex> l(order_mu);
        *seq = c->submit(std::move(work), waits);
        ASSERT_GT(*seq, 0u);
        if (waits) {
          order_mu.unlock();
          EXPECT_EQ(c->wait_committed(*seq), 0);
          EXPECT_GE(c->committed_seq(), *seq);
          order_mu.lock();
        }
      }
    });
  for (auto& t : th) t.join();
  ASSERT_EQ(c->wait_committed(c->last_seq()), 0);
  c->stop();
  ASSERT_EQ(acked.size(), 900u);
  for (size_t i = 0; i < acked.size(); ++i) ASSERT_EQ(acked[i], i + 1) << "acknowledged out of order";
}

// submit() leaves a lone caller's transaction for that caller to commit,
// without waking the committer thread. Another thread waiting for the same
// transaction (a read waiting for its collection), before or after the
// owner, must neither block the owner nor be left behind: both return once
// the transaction is durable, whichever of them committed it.
TEST_P(CommitJournalReplay, AnotherThreadWaitingForASelfCommittedTransactionReturnsWithItsOwner) {
  auto db = open_db(dir_.file("db"));
  auto j = open_journal(64 * CommitJournal::kBlock);
  WriteTracker tracker;
  auto c = start_committer(db.get(), j.get(), &tracker);
  for (int round = 0; round < 20; ++round) {
    const uint64_t seq = c->submit(putting("k" + std::to_string(round), "v"), /*caller_waits=*/true);
    ASSERT_GT(seq, 0u);
    std::atomic<bool> other_done{false};
    std::thread other([&] {
      EXPECT_EQ(c->wait_committed(seq), 0);
      other_done = true;
    });
    // Give the other thread time to register first on some rounds.
    if (round % 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(c->wait_committed(seq), 0);
    other.join();
    EXPECT_TRUE(other_done);
    EXPECT_GE(c->committed_seq(), seq);
  }
  // A second committer in the same thread: the first one's choice does not
  // make this thread commit the second one's queue.
  auto db2 = open_db(dir_.file("db2"));
  auto c2 = start_committer(db2.get(), nullptr, &tracker);
  const uint64_t sa = c->submit(putting("a", "1"), true);
  const uint64_t sb = c2->submit(putting("b", "1"), false);
  EXPECT_EQ(c2->wait_committed(sb), 0);
  EXPECT_EQ(c->wait_committed(sa), 0);
  c2->stop();
  c->stop();
  std::string v;
  EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), "k19", &v).ok());
  EXPECT_TRUE(db2->Get(rocksdb::ReadOptions(), "b", &v).ok());
}
}  // namespace

namespace {
// A column family the database does not have: a batch naming it is one
// RocksDB refuses to write.
class MissingColumnFamily final : public rocksdb::ColumnFamilyHandle {
 public:
  const std::string& GetName() const override { return name_; }
  uint32_t GetID() const override { return 77; }
  rocksdb::Status GetDescriptor(rocksdb::ColumnFamilyDescriptor*) override { return rocksdb::Status::NotSupported(); }
  const rocksdb::Comparator* GetComparator() const override { return rocksdb::BytewiseComparator(); }

 private:
  std::string name_ = "missing";
};

// A group whose RocksDB write fails while its journal record is with a lane
// (the two now overlap): the store's error is sticky, nothing from that
// group on is acknowledged, and the committer still stops (a group left
// neither acknowledged nor dropped would hold the only lane forever).
TEST_P(CommitJournalReplay, AFailedRocksDBWriteAcknowledgesNothingAfterItAndStillStops) {
  auto db = open_db(dir_.file("db"));
  auto j = open_journal(64 * CommitJournal::kBlock);
  WriteTracker tracker;
  MissingColumnFamily missing;
  std::atomic<uint64_t> bad_seq{0}, highest_acked{0};
  {
    KvCommitter c(db.get(), {nullptr, nullptr}, &tracker, 64);
    c.set_journal(j.get(), 1, 1);
    c.start();
    std::vector<std::thread> th;
    for (int w = 0; w < 8; ++w)
      th.emplace_back([&, w] {
        for (int i = 0; i < 60; ++i) {
          CommitWork work;
          work.batch = std::make_unique<rocksdb::WriteBatch>();
          if (w == 3 && i == 30)
            work.batch->Put(&missing, "refused", "v");
          else
            work.batch->Put("f" + std::to_string(w) + "_" + std::to_string(i), "v");
          auto seq = std::make_shared<std::atomic<uint64_t>>(0);
          work.after_commit = [&, seq](uint64_t) {
            uint64_t s = seq->load();
            uint64_t h = highest_acked.load();
            while (s > h && !highest_acked.compare_exchange_weak(h, s)) {
            }
          };
          uint64_t s = c.submit(std::move(work));
          seq->store(s);
          if (w == 3 && i == 30) bad_seq = s;
          if (s == 0) return;  // the store has failed
        }
      });
    for (auto& t : th) t.join();
    ASSERT_GT(bad_seq.load(), 0u);
    EXPECT_NE(c.wait_committed(bad_seq), 0);
    c.drain_callbacks();
    EXPECT_NE(c.error(), 0);
    EXPECT_NE(c.error_message().find("RocksDB commit failed"), std::string::npos) << c.error_message();
    c.stop();
    EXPECT_LT(c.committed_seq(), bad_seq.load());
  }
  EXPECT_LT(highest_acked.load(), bad_seq.load());
}
}  // namespace

namespace {

// A fresh ring holds zeros only: a ring file is made of them, and a region
// is zeroed by format_region over whatever was there (here: records of the
// same store, which would be replayed otherwise).
TEST_P(CommitJournalReplay, AFreshRingHoldsOnlyZeros) {
  const RingBacking backing = ring(64 * kB);
  ASSERT_TRUE(backing.open());
  std::string err;
  auto dev = open_block_device(backing.file(), DeviceOpenOptions{}, &err);
  ASSERT_TRUE(dev) << err;
  AlignedBuffer block(kB);
  const std::string zeros(kB, '\0');
  for (uint64_t pos = 0; pos < 64 * kB; pos += kB) {
    ASSERT_EQ(dev->read(backing.file_offset(pos), block.data(), kB), 0);
    ASSERT_TRUE(std::string(block.data(), kB) == zeros) << "ring block at " << pos;
  }
  backing.expect_others_untouched();
}

// Records of random sizes, many laps round a small ring, one checkpoint
// whenever reserve() asks for one (RocksDB then holds every group so far,
// this one included, as the committer's checkpoint does). Replay into a
// database that holds exactly what the last checkpoint covered brings back
// everything after it, though records straddle the region's two extents
// and earlier laps left older records all around the ring.
TEST_P(CommitJournalReplay, LapsTheRingAndReplaysEverythingAfterTheLastCheckpoint) {
  std::mt19937_64 rng(test::test_seed(GetParam() == Ring::kFile ? 4401 : 4402));
  const RingBacking backing = ring(64 * kB);
  std::map<uint64_t, std::string> values;
  uint64_t seq = 0, synced = 0, reserved = 0;
  int checkpoints = 0, straddling = 0;
  std::string mark;  // the tail the last checkpoint's sync left in RocksDB
  {
    auto j = backing.open();
    ASSERT_TRUE(j);
    // At least two and a half laps, two checkpoints and two records across
    // the boundary, then a random number more.
    while (reserved < 5 * j->size() / 2 || checkpoints < 2 || straddling < 2 || rng() % 4 != 0) {
      ASSERT_LT(seq, 100000u) << "the loop never met its ends";
      std::vector<JournalEntry> group;
      for (int n = 1 + static_cast<int>(rng() % 3); n > 0; --n) {
        ++seq;
        values[seq] = test::random_bytes(rng, rng() % 5000);
        group.push_back({seq, batch_putting("k" + std::to_string(seq), values[seq], seq)});
      }
      const std::string record = j->encode(group);
      bool needs_checkpoint = false;
      const uint64_t pos = j->reserve(record.size(), &needs_checkpoint);
      reserved += record.size();
      if (needs_checkpoint) {
        synced = seq;
        mark = j->tail_mark(synced);
        j->checkpoint();
        ++checkpoints;
      }
      straddling += pos < backing.boundary() && pos + record.size() > backing.boundary();
      ASSERT_EQ(j->write(pos, record), 0) << "seq " << seq;
    }
  }
  ASSERT_GT(seq, synced);
  auto db = open_db(dir_.file("db"));
  {
    std::string n;
    put_fixed64(&n, synced);
    rocksdb::WriteOptions wo;
    wo.sync = true;
    ASSERT_TRUE(db->Put(wo, kv::journal_seq_key(), n).ok());
    ASSERT_TRUE(db->Put(wo, kv::journal_tail_key(), mark).ok());
  }
  auto j = backing.open();
  ASSERT_TRUE(j);
  uint64_t next = 0;
  std::string err;
  EXPECT_EQ(j->replay(db.get(), &next, &err), static_cast<int>(seq - synced)) << err;
  EXPECT_EQ(next, seq + 1 + j->renumber_gap());
  std::string v;
  for (const auto& [s, want] : values) {
    rocksdb::Status st = db->Get(rocksdb::ReadOptions(), "k" + std::to_string(s), &v);
    if (s <= synced) {
      EXPECT_TRUE(st.IsNotFound()) << "seq " << s << " was RocksDB's already";
    } else {
      ASSERT_TRUE(st.ok()) << "seq " << s;
      EXPECT_TRUE(v == want) << "seq " << s;
    }
  }
  backing.expect_others_untouched();
}

// A record whose blocks past the region's first extent never reached the
// device (a cut between the two pieces of its write): replay keeps the
// records before it and drops it and every one after it.
TEST_P(CommitJournalReplay, ARecordTornAtTheExtentBoundaryEndsTheReplayedPrefix) {
  const RingBacking backing = ring(64 * kB);
  uint64_t torn_seq = 0, torn_end = 0;
  const uint64_t last = 24;
  {
    auto j = backing.open();
    ASSERT_TRUE(j);
    for (uint64_t s = 1; s <= last; ++s) {
      const std::string record =
          j->encode(std::vector<JournalEntry>{{s, batch_putting("k" + std::to_string(s), std::string(5000, 'v'), s)}});
      ASSERT_EQ(record.size(), 2 * kB);
      bool needs_checkpoint = false;
      const uint64_t pos = j->reserve(record.size(), &needs_checkpoint);
      ASSERT_FALSE(needs_checkpoint) << "the records fit in the first lap";
      if (pos < backing.boundary() && pos + record.size() > backing.boundary()) {
        torn_seq = s;
        torn_end = pos + record.size();
      }
      ASSERT_EQ(j->write(pos, record), 0);
    }
  }
  ASSERT_GT(torn_seq, 1u) << "no record straddles the boundary";
  ASSERT_LT(torn_seq, last);
  {
    std::string err;
    auto dev = open_block_device(backing.file(), DeviceOpenOptions{}, &err);
    ASSERT_TRUE(dev) << err;
    AlignedBuffer zeros(kB);
    for (uint64_t pos = backing.boundary(); pos < torn_end; pos += kB)
      ASSERT_EQ(dev->write(backing.file_offset(pos), zeros.data(), kB), 0);
  }
  auto db = open_db(dir_.file("db"));
  auto j = backing.open();
  ASSERT_TRUE(j);
  uint64_t next = 0;
  std::string err;
  EXPECT_EQ(j->replay(db.get(), &next, &err), static_cast<int>(torn_seq - 1)) << err;
  // The walk stops at the torn record; the numbers after it are never met
  // again.
  EXPECT_EQ(next, torn_seq + j->renumber_gap());
  std::string v;
  for (uint64_t s = 1; s <= last; ++s)
    EXPECT_EQ(db->Get(rocksdb::ReadOptions(), "k" + std::to_string(s), &v).ok(), s < torn_seq) << "seq " << s;
  backing.expect_others_untouched();
}

// Version-2 records of batches mixed with version-1 records in one ring:
// replay takes both, in number order, entries without a batch counting for
// the prefix. Data blocks are stepped over: the ones here hold an intact
// version-1 record of this store (client bytes may be anything), numbered
// right after the last real one, which replay would otherwise take.
TEST_P(CommitJournalReplay, ReplaysVersion1And2RecordsMixedInOneRing) {
  auto db = open_db(dir_.file("db"));
  for (uint64_t s = 1; s <= 2; ++s) {
    rocksdb::WriteBatch b(batch_putting("k" + std::to_string(s), "v", s));
    ASSERT_TRUE(db->Write(rocksdb::WriteOptions(), &b).ok());
  }
  {
    auto j = open_journal();
    auto put = [&](const std::string& r) {
      bool cp = false;
      ASSERT_EQ(j->write(j->reserve(r.size(), &cp), r), 0);
    };
    // Held already: a record with data and deltas that RocksDB's number covers.
    std::vector<std::string> blocks = {encode_journal_record(fsid_a(), entries(9, 1)),
                                       encode_journal_record(fsid_a(), entries(10, 1))};
    ASSERT_EQ(blocks[0].size(), CommitJournal::kBlock);
    auto held = entries(1, 2);
    held[1].deltas = {ring_data(1, 0, 0, blocks, 2)};
    put(encode_journal_record_v2(fsid_a(), held, {blocks[0], blocks[1]}));
    auto mid = entries(3, 3);
    mid[1].batch.clear();
    mid[1].has_batch = false;
    put(encode_journal_record_v2(fsid_a(), mid, {}));
    put(encode_journal_record(fsid_a(), entries(6, 2)));
    put(encode_journal_record_v2(fsid_a(), entries(8, 1), {}));
  }
  for (auto how : {CommitJournal::RingRead::kWalkFromTail, CommitJournal::RingRead::kScanEveryBlock}) {
    SCOPED_TRACE(how == CommitJournal::RingRead::kWalkFromTail ? "walked" : "scanned");
    auto j = open_journal();
    uint64_t next = 0;
    std::string err;
    {
      // Each read starts from RocksDB holding 1..2 and no tail (the ring's
      // first life).
      std::string n;
      put_fixed64(&n, 2);
      ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), kv::journal_seq_key(), n).ok());
      ASSERT_TRUE(db->Delete(rocksdb::WriteOptions(), kv::journal_tail_key()).ok());
    }
    EXPECT_EQ(j->replay(db.get(), &next, &err, how), 6) << err;
    EXPECT_EQ(next, 9 + j->renumber_gap()) << "a number from inside a data block was taken";
    std::string v;
    for (uint64_t s : {1, 2, 3, 5, 6, 7, 8})
      EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), "k" + std::to_string(s), &v).ok()) << s;
    for (uint64_t s : {4, 9, 10})
      EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), "k" + std::to_string(s), &v).IsNotFound()) << s;
    ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), kv::journal_seq_key(), &v).ok());
    EXPECT_EQ(load_fixed64(v.data()), next - 1);
  }
  ring().expect_others_untouched();
}

// docs/small-writes.md 12.9: a record whose head was torn leaves its data
// blocks (a client's bytes) in the ring. A client that wrote a block forming
// a record of this store, numbered as the torn one, has it taken by a scan
// of every block (how format 4 reads its ring, and why format 5 walks);
// the walk stops at the torn record and never reads the block.
TEST_P(CommitJournalReplay, AForgedRecordInATornRecordsDataIsNeverWalkedInto) {
  const std::string forged = encode_journal_record(
      fsid_a(), std::vector<JournalEntry>{{3, batch_putting("forged", "by a client", 3)}});
  ASSERT_EQ(forged.size(), CommitJournal::kBlock);
  {
    auto j = open_journal();
    bool cp = false;
    const std::string first = encode_journal_record(fsid_a(), entries(1, 2));
    ASSERT_EQ(j->write(j->reserve(first.size(), &cp), first), 0);
    auto e = entries(3, 1);
    e[0].deltas = {ring_data(1, 0, 0, {forged}, 1)};
    std::string torn = encode_journal_record_v2(fsid_a(), e, {forged});
    ASSERT_EQ(torn.size(), 2 * CommitJournal::kBlock) << "a header block, then the client's block";
    std::memset(torn.data(), 0, CommitJournal::kBlock);
    ASSERT_EQ(j->write(j->reserve(torn.size(), &cp), torn), 0);
  }
  for (auto how : {CommitJournal::RingRead::kScanEveryBlock, CommitJournal::RingRead::kWalkFromTail}) {
    const bool walk = how == CommitJournal::RingRead::kWalkFromTail;
    SCOPED_TRACE(walk ? "walked" : "scanned");
    test::TempDir fresh("db");
    auto db = open_db(fresh.file("db"));
    auto j = open_journal();
    uint64_t next = 0;
    std::string err;
    EXPECT_EQ(j->replay(db.get(), &next, &err, how), walk ? 2 : 3) << err;
    std::string v;
    EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), "k2", &v).ok());
    EXPECT_EQ(db->Get(rocksdb::ReadOptions(), "forged", &v).ok(), !walk);
  }
}

// RING_DATA (format 6): data only, named by the deferred writer's staging
// number; it round-trips, names no object and no version, and replay hands
// its pieces to a caller that can place them, also those of transactions
// RocksDB holds already (their data may not be in place), and refuses them
// to one that cannot.

TEST(CommitJournalRecordV2, RingDataRoundTripsAndNamesNoObject) {
  const std::vector<std::string> blocks = {block_of(1), block_of(2), block_of(3)};
  auto e = entries(5, 2);
  e[0].deltas = {ring_data(7, 1 << 20, 0, blocks, 2)};
  e[1].deltas = {ring_data(9, 8 << 20, 2, blocks, 1), overwrite("Oa", 3, 0, 2, blocks, 0)};
  e[1].deltas.pop_back();
  const std::string r = encode_journal_record_v2(fsid_a(), e, {blocks[0], blocks[1], blocks[2]});
  JournalRecord back;
  uint64_t len = 0;
  std::string why;
  ASSERT_TRUE(decode_journal_record(r, fsid_a(), &back, &len, &why)) << why;
  ASSERT_EQ(back.entries.size(), 2u);
  EXPECT_EQ(back.entries[0].deltas, e[0].deltas);
  EXPECT_EQ(back.entries[1].deltas, e[1].deltas);
  EXPECT_EQ(back.entries[0].deltas[0].staged, 7u);
  for (auto bad : {0, 1, 2}) {
    auto x = e;
    if (bad == 0) x[0].deltas[0].key = "Oa";
    if (bad == 1) x[0].deltas[0].version = 1;
    if (bad == 2) x[0].deltas[0].staged = 0;
    const std::string rb = encode_journal_record_v2(fsid_a(), x, {blocks[0], blocks[1], blocks[2]});
    EXPECT_FALSE(decode_journal_record(rb, fsid_a(), &back, &len, &why)) << bad;
  }
}

TEST_P(CommitJournalReplay, RingDataGoesToACallerThatPlacesItAndIsRefusedOtherwise) {
  const std::vector<std::string> blocks = {block_of(11), block_of(12)};
  {
    auto j = open_journal();
    bool cp = false;
    auto e = entries(1, 2);
    e[0].deltas = {ring_data(1, 1 << 20, 0, blocks, 1)};
    e[1].deltas = {ring_data(2, 2 << 20, 1, blocks, 1)};
    const std::string r = encode_journal_record_v2(fsid_a(), e, {blocks[0], blocks[1]});
    ASSERT_EQ(j->write(j->reserve(r.size(), &cp), r), 0);
  }
  auto db = open_db(dir_.file("db"));
  {
    // RocksDB holds transaction 1: its batch is not replayed, its data is.
    rocksdb::WriteBatch b(batch_putting("k1", "v1", 1));
    ASSERT_TRUE(db->Write(rocksdb::WriteOptions(), &b).ok());
  }
  uint64_t next = 0;
  std::string err;
  EXPECT_EQ(open_journal()->replay(db.get(), &next, &err), -EIO);
  EXPECT_NE(err.find("ring data"), std::string::npos) << err;
  auto j = open_journal();
  std::vector<CommitJournal::RingWrite> data;
  EXPECT_EQ(j->replay(db.get(), &next, &err, CommitJournal::RingRead::kWalkFromTail, &data), 1) << err;
  ASSERT_EQ(data.size(), 2u);
  EXPECT_EQ(data[0].staged, 1u);
  EXPECT_EQ(data[0].physical, 1u << 20);
  EXPECT_EQ(data[0].data, blocks[0]);
  EXPECT_EQ(data[1].staged, 2u);
  EXPECT_EQ(data[1].data, blocks[1]);
  // The data is not in place yet: RocksDB's number and tail stay, so a
  // crash now walks the same records again.
  std::string v;
  ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), kv::journal_seq_key(), &v).ok());
  EXPECT_EQ(load_fixed64(v.data()), 2u);
  EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), kv::journal_tail_key(), &v).IsNotFound());
  data.clear();
  EXPECT_EQ(j->replay(db.get(), &next, &err, CommitJournal::RingRead::kWalkFromTail, &data), 0) << err;
  EXPECT_EQ(data.size(), 2u);
  // Once placed, finish_replay's batch ends it.
  rocksdb::WriteBatch fin;
  j->finish_replay(&fin, next);
  ASSERT_TRUE(db->Write(rocksdb::WriteOptions(), &fin).ok());
  data.clear();
  EXPECT_EQ(j->replay(db.get(), &next, &err, CommitJournal::RingRead::kWalkFromTail, &data), 0) << err;
  EXPECT_TRUE(data.empty());
}

// A walk takes only records numbered on from the last: a record of an
// earlier lap where the next one should start, or one after a gap RocksDB
// does not cover, ends it; a gap RocksDB covers (a group synced instead of
// recorded) does not.
TEST(CommitJournalWalk, TakesOnlyTheNextNumberAtTheNextPlace) {
  constexpr uint64_t kB = CommitJournal::kBlock;
  auto record = [](uint64_t first, int count) { return encode_journal_record(fsid_a(), entries(first, count)); };
  auto walk = [](const std::string& ring, JournalTail from, uint64_t held) {
    std::vector<uint64_t> seqs;
    const JournalWalk w = walk_journal_ring(ring, fsid_a(), from, held, [&](JournalRecord& r) {
      for (const JournalEntry& e : r.entries) seqs.push_back(e.seq);
    });
    EXPECT_EQ(seqs.empty() ? from.covered : seqs.back(), w.last);
    return seqs;
  };
  using V = std::vector<uint64_t>;
  // 8 blocks: records 11-12, 13, then an older lap's 5, 6.
  std::string ring = record(11, 2) + record(13, 1) + record(5, 1) + record(6, 1) + std::string(4 * kB, '\0');
  EXPECT_EQ(walk(ring, {0, 10}, 10), (V{11, 12, 13}));
  EXPECT_EQ(walk(ring, {kB, 12}, 12), (V{13}));
  // From a tail whose record a sync already covered in part: never taken.
  EXPECT_EQ(walk(ring, {0, 11}, 11), V{});
  // 14..20 synced without a record: 21 continues; 22 after an unsynced gap does not.
  ring = record(11, 2) + record(21, 1) + record(23, 1) + std::string(5 * kB, '\0');
  EXPECT_EQ(walk(ring, {0, 10}, 20), (V{11, 12, 21}));
  EXPECT_EQ(walk(ring, {0, 10}, 10), (V{11, 12}));
  // A record that did not fit at the end went to the ring's start.
  ring = record(29, 1) + std::string(5 * kB, '\0') + record(28, 1) + record(2, 1);
  EXPECT_EQ(walk(ring, {6 * kB, 27}, 27), (V{28, 29}));
  // Entries not numbered one after another are no record of the committer.
  std::vector<JournalEntry> holes = entries(11, 1);
  holes.push_back(entries(14, 1)[0]);
  ring = encode_journal_record(fsid_a(), holes) + std::string(7 * kB, '\0');
  EXPECT_EQ(walk(ring, {0, 10}, 10), V{});
  // Never more than a lap, even over a ring of records that all follow on.
  ring.clear();
  for (uint64_t s = 1; s <= 8; ++s) ring += record(s, 1);
  EXPECT_EQ(walk(ring, {3 * kB, 3}, 3).size(), 5u);
}

TEST(CommitJournalTail, RoundTripsAndRefusesDamage) {
  const JournalTail t{7 * CommitJournal::kBlock, 123456789};
  const std::string v = encode_journal_tail(t);
  JournalTail back;
  std::string err;
  ASSERT_EQ(decode_journal_tail(v, &back, &err), 0) << err;
  EXPECT_EQ(back.pos, t.pos);
  EXPECT_EQ(back.covered, t.covered);
  for (size_t i = 0; i < v.size() * 8; ++i) {
    std::string bad = v;
    bad[i / 8] ^= static_cast<char>(1 << (i % 8));
    EXPECT_LT(decode_journal_tail(bad, &back, &err), 0) << "bit " << i;
  }
  for (size_t n = 0; n < v.size(); ++n) EXPECT_EQ(decode_journal_tail(v.substr(0, n), &back, &err), -EIO);
  EXPECT_EQ(decode_journal_tail(encode_journal_tail({100, 1}), &back, &err), -EIO) << "not a block boundary";
}

// Deltas and ring data past what RocksDB holds are what only a format-5
// build can apply; this one refuses the replay rather than drop them.
TEST_P(CommitJournalReplay, DeltasPastWhatRocksDBHoldsAreRefusedNotSkipped) {
  {
    auto j = open_journal();
    const std::vector<std::string> blocks = {block_of(77)};
    auto e = entries(1, 2);
    e[1].deltas = {overwrite("Oa", 1, 0, 0, blocks, 1)};
    const std::string r = encode_journal_record_v2(fsid_a(), e, {});
    bool cp = false;
    ASSERT_EQ(j->write(j->reserve(r.size(), &cp), r), 0);
  }
  auto db = open_db(dir_.file("db"));
  auto j = open_journal();
  uint64_t next = 0;
  std::string err;
  EXPECT_EQ(j->replay(db.get(), &next, &err), -EIO);
  EXPECT_NE(err.find("transaction 2 holds onode deltas"), std::string::npos) << err;
}

// A version-2 record torn in the ring (its second header block never
// written) is absent: replay stops before it, whatever follows.
TEST_P(CommitJournalReplay, ATornVersion2RecordEndsTheReplayedPrefix) {
  {
    auto j = open_journal();
    auto put = [&](const std::string& r, bool torn) {
      bool cp = false;
      const uint64_t pos = j->reserve(r.size(), &cp);
      std::string w = r;
      if (torn) std::memset(w.data() + CommitJournal::kBlock, 0, w.size() - CommitJournal::kBlock);
      ASSERT_EQ(j->write(pos, w), 0);
    };
    put(encode_journal_record(fsid_a(), entries(1, 2)), false);
    std::vector<JournalEntry> big = {{3, batch_putting("k3", std::string(6000, 'v'), 3)}};
    const std::string r3 = encode_journal_record_v2(fsid_a(), big, {});
    ASSERT_EQ(r3.size(), 2 * CommitJournal::kBlock);
    put(r3, true);
    put(encode_journal_record_v2(fsid_a(), entries(4, 1), {}), false);
  }
  auto db = open_db(dir_.file("db"));
  auto j = open_journal();
  uint64_t next = 0;
  std::string err;
  EXPECT_EQ(j->replay(db.get(), &next, &err), 2) << err;
  EXPECT_EQ(next, 3 + j->renumber_gap());
  std::string v;
  EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), "k2", &v).ok());
  EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), "k3", &v).IsNotFound());
  EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), "k4", &v).IsNotFound());
}

// ---- The ring's tail (docs/small-writes.md 6.2, step 3) ----

using Hold = CommitJournal::TailHold;

// Records never straddle the ring's end (the rest of the lap is skipped),
// and room is reused only behind the oldest record still needed.
TEST_P(CommitJournalReplay, TailRoomIsReusedOnlyBehindTheOldestNeededRecord) {
  auto j = open_journal(16 * kB);
  uint64_t pos = 0;
  for (uint64_t s = 1; s <= 5; ++s) {
    ASSERT_TRUE(j->try_reserve(3 * kB, s, &pos)) << s;
    EXPECT_EQ(pos, (s - 1) * 3 * kB);
  }
  EXPECT_EQ(j->needed(), 15 * kB);
  // A sixth starts over at the ring's beginning, over record 1.
  EXPECT_FALSE(j->try_reserve(3 * kB, 6, &pos));
  j->advance(Hold::kRocksDb, 0);
  EXPECT_FALSE(j->try_reserve(3 * kB, 6, &pos));
  j->advance(Hold::kRocksDb, 1);
  ASSERT_TRUE(j->try_reserve(3 * kB, 6, &pos));
  EXPECT_EQ(pos, 0u);
  EXPECT_EQ(j->needed(), 16 * kB) << "records 2..6 and the block skipped at the end";
  EXPECT_FALSE(j->try_reserve(kB, 7, &pos));
  // A hold never goes back.
  j->advance(Hold::kRocksDb, 6);
  j->advance(Hold::kRocksDb, 2);
  EXPECT_EQ(j->needed(), 0u);
  ASSERT_TRUE(j->try_reserve(13 * kB, 8, &pos));  // transactions 7 and 8
  EXPECT_EQ(pos, 3 * kB) << "fills the ring exactly to its end";
  // A record only partly covered by a hold (its last number past it) is
  // still needed.
  j->advance(Hold::kRocksDb, 7);
  EXPECT_EQ(j->needed(), 13 * kB);
  j->advance(Hold::kRocksDb, 8);
  EXPECT_EQ(j->needed(), 0u);
}

// Each of the three conditions keeps the tail by itself: RocksDB's durable
// number, the applied data and the checkpointed onodes.
TEST_P(CommitJournalReplay, EachOfTheThreeHoldsKeepsTheTail) {
  const Hold holds[] = {Hold::kRocksDb, Hold::kApplied, Hold::kClean};
  for (Hold lagging : holds) {
    SCOPED_TRACE(static_cast<int>(lagging));
    auto j = open_journal(16 * kB);
    j->hold_tail_for(Hold::kApplied);
    j->hold_tail_for(Hold::kClean);
    uint64_t pos = 0;
    for (uint64_t s = 1; s <= 4; ++s) ASSERT_TRUE(j->try_reserve(4 * kB, s, &pos));
    for (Hold h : holds)
      if (h != lagging) j->advance(h, 4);
    EXPECT_FALSE(j->try_reserve(4 * kB, 5, &pos)) << "the lagging hold keeps every record";
    EXPECT_EQ(j->needed(), 16 * kB);
    j->advance(lagging, 2);
    EXPECT_EQ(j->needed(), 8 * kB);
    ASSERT_TRUE(j->try_reserve(8 * kB, 5, &pos));
    EXPECT_EQ(pos, 0u);
    EXPECT_FALSE(j->try_reserve(kB, 6, &pos));
  }
  // Holds not enabled do not count.
  auto j = open_journal(16 * kB);
  uint64_t pos = 0;
  for (uint64_t s = 1; s <= 4; ++s) ASSERT_TRUE(j->try_reserve(4 * kB, s, &pos));
  j->advance(Hold::kRocksDb, 4);
  EXPECT_EQ(j->needed(), 0u);
}

// Backpressure: a reserve without room waits, makes a checkpoint due, and
// goes on once the tail moves; abort() releases a waiter with kStopped.
TEST_P(CommitJournalReplay, AReserveWaitsForRoomAndAbortReleasesIt) {
  auto j = open_journal(16 * kB);
  uint64_t pos = 0, seq = 0;
  for (uint64_t s = 1; s <= 4; ++s) ASSERT_TRUE(j->try_reserve(4 * kB, s, &pos));
  j->batches_written(4);
  std::atomic<uint64_t> got{1};
  std::thread t([&] { got = j->reserve(4 * kB, 5); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(got.load(), 1u) << "reserved without room";
  EXPECT_TRUE(j->checkpoint_due(std::chrono::seconds(10), &seq)) << "a waiting reserve makes a sync due";
  EXPECT_EQ(seq, 4u);
  j->advance(Hold::kRocksDb, 1);
  t.join();
  EXPECT_EQ(got.load(), 0u);
  std::atomic<uint64_t> got2{1};
  std::thread t2([&] { got2 = j->reserve(4 * kB, 6); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(got2.load(), 1u) << "reserved without room";
  j->abort();
  t2.join();
  EXPECT_EQ(got2.load(), CommitJournal::kStopped);
  EXPECT_FALSE(j->try_reserve(kB, 7, &pos)) << "nothing is reserved after abort";
}

// The checkpointer's signal: due past half the ring, and only when a sync
// would free something (batches written past the last one).
TEST_P(CommitJournalReplay, ACheckpointIsDuePastHalfTheRingWhenASyncWouldFreeRoom) {
  auto j = open_journal(16 * kB);
  uint64_t pos = 0, seq = 0;
  const auto now = std::chrono::milliseconds(0);
  EXPECT_FALSE(j->checkpoint_due(now, &seq));
  ASSERT_TRUE(j->try_reserve(8 * kB, 1, &pos));
  j->batches_written(1);
  EXPECT_FALSE(j->checkpoint_due(now, &seq)) << "half the ring is not past half";
  ASSERT_TRUE(j->try_reserve(kB, 2, &pos));
  EXPECT_TRUE(j->checkpoint_due(now, &seq));
  EXPECT_EQ(seq, 1u) << "a sync covers only the batches written";
  j->advance(Hold::kRocksDb, 1);
  EXPECT_EQ(j->needed(), kB);
  EXPECT_FALSE(j->checkpoint_due(now, &seq));
  ASSERT_TRUE(j->try_reserve(8 * kB, 3, &pos));
  EXPECT_FALSE(j->checkpoint_due(now, &seq)) << "no batch written since the last sync: nothing to free";
  j->batches_written(3);
  EXPECT_TRUE(j->checkpoint_due(now, &seq));
  EXPECT_EQ(seq, 3u);
  j->wake();
  EXPECT_FALSE(j->checkpoint_due(std::chrono::seconds(10), &seq)) << "wake() ends a wait";
}

// Retention (small-writes.md 8, I2) with the tail: groups of random sizes
// lap a small ring while RocksDB's durable number lags by a random amount
// (the checkpointer behind); a group that finds no room waits for a sync.
// After a crash at a random point, RocksDB's number is the last one made
// durable, and the ring still holds every record after it.
TEST_P(CommitJournalReplay, TheTailKeepsEveryRecordPastRocksDBsDurableNumber) {
  std::mt19937_64 rng(test::test_seed(GetParam() == Ring::kFile ? 4403 : 4404));
  const RingBacking backing = ring(64 * kB);
  std::map<uint64_t, std::string> values;
  uint64_t seq = 0, durable = 0, reserved = 0;
  int waits = 0;
  std::string mark;  // the tail the last sync left in RocksDB
  std::vector<uint64_t> group_ends;
  {
    auto j = backing.open();
    ASSERT_TRUE(j);
    while (reserved < 3 * j->size() || waits < 3 || rng() % 5 != 0) {
      ASSERT_LT(seq, 100000u) << "the loop never met its ends";
      std::vector<JournalEntry> group;
      for (int n = 1 + static_cast<int>(rng() % 3); n > 0; --n) {
        ++seq;
        values[seq] = test::random_bytes(rng, rng() % 5000);
        group.push_back({seq, batch_putting("k" + std::to_string(seq), values[seq], seq)});
      }
      const std::string record = j->encode(group);
      uint64_t pos = 0;
      if (!j->try_reserve(record.size(), seq, &pos)) {
        // What the checkpointer does when a group waits: a sync covering
        // every batch written (the groups before this one).
        ++waits;
        durable = group.front().seq - 1;
        mark = j->tail_mark(durable);
        j->advance(Hold::kRocksDb, durable);
        ASSERT_TRUE(j->try_reserve(record.size(), seq, &pos)) << "a sync of everything before frees room";
      }
      reserved += record.size();
      ASSERT_EQ(j->write(pos, record), 0) << "seq " << seq;
      group_ends.push_back(seq);
      // Sometimes a sync lagging behind the writes: it covers the groups
      // whose batches were written when it started (a group's batches are
      // written whole, so a sync covers whole groups).
      if (rng() % 6 == 0 && group_ends.size() > 1) {
        const uint64_t to = group_ends[rng() % (group_ends.size() - 1)];
        if (to > durable) {
          durable = to;
          mark = j->tail_mark(durable);
          j->advance(Hold::kRocksDb, durable);
        }
      }
    }
  }
  ASSERT_GT(seq, durable);
  auto db = open_db(dir_.file("db"));
  {
    std::string n;
    put_fixed64(&n, durable);
    rocksdb::WriteOptions wo;
    wo.sync = true;
    ASSERT_TRUE(db->Put(wo, kv::journal_seq_key(), n).ok());
    if (!mark.empty()) {
      ASSERT_TRUE(db->Put(wo, kv::journal_tail_key(), mark).ok());
    }
  }
  auto j = backing.open();
  ASSERT_TRUE(j);
  uint64_t next = 0;
  std::string err;
  EXPECT_EQ(j->replay(db.get(), &next, &err), static_cast<int>(seq - durable)) << err;
  EXPECT_EQ(next, seq + 1 + j->renumber_gap());
  std::string v;
  for (const auto& [s, want] : values) {
    if (s <= durable) continue;
    ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), "k" + std::to_string(s), &v).ok()) << "seq " << s;
    EXPECT_TRUE(v == want) << "seq " << s;
  }
  backing.expect_others_untouched();
}

// RocksDB's WAL syncs leave the commit path: with a small ring that laps
// many times, every FlushWAL runs on the checkpointer thread (hs-ckpt),
// none on the committer, a lane or a writer, and every transaction is
// acknowledged in order.
class SyncSpyDb final : public rocksdb::StackableDB {
 public:
  explicit SyncSpyDb(rocksdb::DB* db) : rocksdb::StackableDB(db) {}
  rocksdb::Status FlushWAL(bool sync) override {
    char name[32] = {0};
    pthread_getname_np(pthread_self(), name, sizeof(name));
    std::lock_guard<std::mutex> l(mu);
    ++by_thread[name];
    return rocksdb::StackableDB::FlushWAL(sync);
  }
  std::mutex mu;
  std::map<std::string, int> by_thread;
};

TEST_P(CommitJournalReplay, RocksDBSyncsRunOnTheCheckpointerNotOnTheCommitPath) {
  // With inline checkpoints (hybridstore_commit_checkpointer=false, the A
  // of step 3's A/B) the group that needs room syncs, as before.
  for (bool inline_checkpoints : {false, true}) {
    SCOPED_TRACE(inline_checkpoints ? "inline checkpoints" : "checkpointer");
    test::TempDir dir("journal");
    SyncSpyDb db(open_db(dir.file("db")).release());
    auto j = RingBacking(dir, GetParam(), 64 * kB).open();
    ASSERT_TRUE(j);
    WriteTracker tracker;
    {
      KvCommitter c(&db, {nullptr, nullptr}, &tracker, 64);
      c.set_journal(j.get(), 1, 4);
      c.set_inline_checkpoints(inline_checkpoints);
      c.start();
      std::vector<std::thread> th;
      for (int w = 0; w < 8; ++w)
        th.emplace_back([&, w] {
          for (int i = 0; i < 200; ++i) {
            CommitWork work;
            work.batch = std::make_unique<rocksdb::WriteBatch>();
            work.batch->Put("w" + std::to_string(w) + "_" + std::to_string(i), std::string(3000, 'x'));
            const uint64_t s = c.submit(std::move(work), i % 2 == 0);
            ASSERT_GT(s, 0u);
            ASSERT_EQ(c.wait_committed(s), 0);
          }
        });
      for (auto& t : th) t.join();
      EXPECT_EQ(c.committed_seq(), 1600u);
      EXPECT_GT(c.stats().journal_checkpoints, 0u);
      c.stop();
    }
    std::lock_guard<std::mutex> l(db.mu);
    int on_ckpt = db.by_thread.count("hs-ckpt") ? db.by_thread["hs-ckpt"] : 0, elsewhere = 0;
    for (const auto& [name, n] : db.by_thread)
      if (name != "hs-ckpt") elsewhere += n;
    if (inline_checkpoints) {
      EXPECT_EQ(on_ckpt, 0);
      EXPECT_GT(elsewhere, 0);
    } else {
      EXPECT_GT(on_ckpt, 0);
      for (const auto& [name, n] : db.by_thread) EXPECT_EQ(name, "hs-ckpt") << n << " syncs on " << name;
    }
    std::string v;
    for (int w = 0; w < 8; ++w)
      EXPECT_TRUE(
          static_cast<rocksdb::DB&>(db).Get(rocksdb::ReadOptions(), "w" + std::to_string(w) + "_199", &v).ok())
          << w;
  }
}

INSTANTIATE_TEST_SUITE_P(Rings, CommitJournalReplay, ::testing::Values(Ring::kFile, Ring::kRegion),
                         [](const auto& info) { return std::string(info.param == Ring::kFile ? "file" : "region"); });

// A device whose I/O must be aligned more coarsely than the journal's blocks.
class CoarseDevice final : public ForwardingBlockDevice {
 public:
  explicit CoarseDevice(std::unique_ptr<BlockDevice> inner) : ForwardingBlockDevice(std::move(inner), "coarse") {}
  uint32_t alignment() const override { return 2 * CommitJournal::kBlock; }
};

TEST(CommitJournalRegion, RefusesARingItCannotUse) {
  constexpr uint64_t kB = CommitJournal::kBlock;
  test::TempDir dir("journal");
  DeviceOpenOptions o;
  o.create = true;
  o.create_size = 1 << 20;
  o.direct_io = false;  // extents at any byte
  std::string err;
  std::shared_ptr<BlockDevice> dev = open_block_device(dir.file("ssd"), o, &err);
  ASSERT_TRUE(dev) << err;
  auto refusal = [&](std::shared_ptr<BlockDevice> on, uint64_t length) {
    std::string why;
    auto region = RegionDevice::make(std::move(on), {{8 * kB, length}}, &why);
    EXPECT_TRUE(region) << why;
    auto j = CommitJournal::open_region(std::move(region), fsid_a(), &why);
    return j ? std::string() : why;
  };
  EXPECT_EQ(CommitJournal::open_region(nullptr, fsid_a(), &err), nullptr);
  EXPECT_NE(err, "");
  EXPECT_NE(refusal(dev, 16 * kB + 512).find("is not a whole number of 4096-byte blocks (66048 bytes)"),
            std::string::npos);
  EXPECT_NE(refusal(dev, 15 * kB).find("is too small (61440 bytes)"), std::string::npos);
  auto coarse = std::make_shared<CoarseDevice>(open_block_device(dir.file("ssd"), DeviceOpenOptions{}, &err));
  EXPECT_NE(refusal(coarse, 32 * kB).find("alignment (8192 bytes) does not divide 4096"), std::string::npos);
  EXPECT_EQ(refusal(dev, 16 * kB), "");
}

// Records a ring's discards, and writes zeros over each discarded range, as
// a trimmed NAND block reads back.
class DiscardRecorder final : public ForwardingBlockDevice {
 public:
  explicit DiscardRecorder(std::unique_ptr<BlockDevice> inner)
      : ForwardingBlockDevice(std::move(inner), "discards") {}
  int discard(uint64_t offset, uint64_t len) override {
    std::lock_guard<std::mutex> l(mutex_);
    discards.emplace_back(offset, len);
    AlignedBuffer zeros(len, 4096, AlignedBuffer::kZeroed);
    return inner_->write(offset, zeros.data(), len);
  }
  std::mutex mutex_;
  std::vector<std::pair<uint64_t, uint64_t>> discards;
};

// On NAND the ring's erase-block spans are discarded at a checkpoint, all
// but the head's: every record they held is in RocksDB by then, and what
// is written after the checkpoint replays.
// With the tail (step 3): as it moves, the whole spans of the room ahead of
// the head are discarded, each once per lap, never one holding a record
// still needed or the head; what is written after replays.
TEST(CommitJournalRegion, AsTheTailMovesTheFreeSpansAheadOfTheHeadAreDiscarded) {
  constexpr uint64_t kB = CommitJournal::kBlock, kSpan = 4 * kB, kRing = 32 * kB;
  test::TempDir dir("journal");
  DeviceOpenOptions o;
  o.create = true;
  o.create_size = kRing + 8 * kB;
  std::string err;
  auto recorder = std::make_shared<DiscardRecorder>(open_block_device(dir.file("ssd"), o, &err));
  ASSERT_TRUE(recorder->inner()) << err;
  auto make = [&] {
    auto region = RegionDevice::make(recorder, {{8 * kB, kRing}}, &err);
    EXPECT_TRUE(region) << err;
    return CommitJournal::open_region(std::move(region), fsid_a(), &err);
  };
  {
    auto region = RegionDevice::make(recorder, {{8 * kB, kRing}}, &err);
    ASSERT_TRUE(region) << err;
    ASSERT_EQ(CommitJournal::format_region(*region, &err), 0) << err;
  }
  auto j = make();
  ASSERT_TRUE(j) << err;
  j->set_discard_span(kSpan);
  auto put = [&](uint64_t s) {
    const std::string r = j->encode(entries(s, 1));
    ASSERT_EQ(r.size(), kB);
    uint64_t pos = 0;
    ASSERT_TRUE(j->try_reserve(r.size(), s, &pos));
    ASSERT_EQ(j->write(pos, r), 0);
  };
  auto spans = [&] {
    std::multiset<uint64_t> d;
    for (const auto& [off, len] : recorder->discards) {
      EXPECT_EQ(len, kSpan);
      d.insert((off - 8 * kB) / kSpan);
    }
    return d;
  };
  // Records 1..5, a block each: the head at block 5, in span 1.
  for (uint64_t s = 1; s <= 5; ++s) put(s);
  EXPECT_TRUE(spans().empty());
  // 1..3 durable: records 4 and 5 (spans 0 and 1) still needed; spans 2..7
  // are free ahead of the head.
  j->advance(CommitJournal::TailHold::kRocksDb, 3);
  EXPECT_EQ(spans(), (std::multiset<uint64_t>{2, 3, 4, 5, 6, 7}));
  // 4 durable: span 0 is free now (its records all durable), once; span 1
  // holds record 5 and the head.
  const std::string mark = j->tail_mark(4);
  j->advance(CommitJournal::TailHold::kRocksDb, 4);
  EXPECT_EQ(spans(), (std::multiset<uint64_t>{0, 2, 3, 4, 5, 6, 7}));
  // The tail not moving discards nothing more.
  j->advance(CommitJournal::TailHold::kRocksDb, 4);
  EXPECT_EQ(j->discarded_spans(), 7u);
  // Records 6..10 go into span 1 and the discarded span 2; RocksDB holds
  // up to 4: replay finds 5..10 whole.
  for (uint64_t s = 6; s <= 10; ++s) put(s);
  j.reset();
  auto db = open_db(dir.file("db"));
  {
    std::string n;
    put_fixed64(&n, 4);
    rocksdb::WriteOptions wo;
    wo.sync = true;
    ASSERT_TRUE(db->Put(wo, kv::journal_seq_key(), n).ok());
    ASSERT_TRUE(db->Put(wo, kv::journal_tail_key(), mark).ok());
  }
  auto again = make();
  ASSERT_TRUE(again) << err;
  uint64_t next = 0;
  EXPECT_EQ(again->replay(db.get(), &next, &err), 6) << err;
  EXPECT_EQ(next, 11 + again->renumber_gap());
}

TEST(CommitJournalRegion, ACheckpointDiscardsEverySpanButTheHeads) {
  constexpr uint64_t kB = CommitJournal::kBlock, kSpan = 4 * kB, kRing = 32 * kB;
  test::TempDir dir("journal");
  DeviceOpenOptions o;
  o.create = true;
  o.create_size = kRing + 8 * kB;
  std::string err;
  auto recorder = std::make_shared<DiscardRecorder>(open_block_device(dir.file("ssd"), o, &err));
  ASSERT_TRUE(recorder->inner()) << err;
  auto region = RegionDevice::make(recorder, {{8 * kB, kRing}}, &err);
  ASSERT_TRUE(region) << err;
  ASSERT_EQ(CommitJournal::format_region(*region, &err), 0) << err;
  auto j = CommitJournal::open_region(std::move(region), fsid_a(), &err);
  ASSERT_TRUE(j) << err;
  j->set_discard_span(kSpan);
  auto db = open_db(dir.file("db"));
  // Records 1..5, each one block, all in RocksDB (as a checkpoint
  // requires): the head is then at 20 KiB, in span 1 of 8.
  for (uint64_t s = 1; s <= 5; ++s) {
    std::string r = j->encode(entries(s, 1));
    ASSERT_EQ(r.size(), kB);
    bool cp = false;
    ASSERT_EQ(j->write(j->reserve(r.size(), &cp), r), 0);
    rocksdb::WriteBatch b(batch_putting("k" + std::to_string(s), "v", s));
    ASSERT_TRUE(db->Write(rocksdb::WriteOptions(), &b).ok());
  }
  mark_synced(db.get(), *j, 5);
  j->checkpoint();
  EXPECT_EQ(j->discarded_spans(), kRing / kSpan - 1);
  std::set<uint64_t> discarded;
  for (const auto& [off, len] : recorder->discards) {
    EXPECT_EQ(len, kSpan);
    EXPECT_EQ((off - 8 * kB) % kSpan, 0u);
    discarded.insert((off - 8 * kB) / kSpan);
  }
  EXPECT_EQ(discarded.size(), kRing / kSpan - 1);
  EXPECT_EQ(discarded.count(1), 0u) << "the head's span (the head at 20 KiB) was discarded";
  // Eight more after the checkpoint: three fill the head's span, five go
  // into span 2, which was discarded.
  for (uint64_t s = 6; s <= 13; ++s) {
    std::string r = j->encode(entries(s, 1));
    bool cp = false;
    ASSERT_EQ(j->write(j->reserve(r.size(), &cp), r), 0);
  }
  j.reset();
  auto region2 = RegionDevice::make(recorder, {{8 * kB, kRing}}, &err);
  ASSERT_TRUE(region2) << err;
  auto again = CommitJournal::open_region(std::move(region2), fsid_a(), &err);
  ASSERT_TRUE(again) << err;
  uint64_t next = 0;
  EXPECT_EQ(again->replay(db.get(), &next, &err), 8) << err;
  EXPECT_EQ(next, 14 + again->renumber_gap());
  // Without a span set, a checkpoint discards nothing.
  const size_t before = recorder->discards.size();
  again->checkpoint();
  EXPECT_EQ(recorder->discards.size(), before);
  EXPECT_EQ(again->discarded_spans(), 0u);
}

}  // namespace

namespace {

// Holds every write to the ring's device while held(): a record a lane is
// writing stays unwritten for as long as a test needs.
class HeldWrites final : public ForwardingBlockDevice {
 public:
  explicit HeldWrites(std::unique_ptr<BlockDevice> inner) : ForwardingBlockDevice(std::move(inner), "held") {}
  int write(uint64_t offset, const char* buf, uint64_t len) override {
    wait_turn();
    return inner_->write(offset, buf, len);
  }
  int write_many(const std::vector<WriteIo>& ios) override {
    wait_turn();
    return inner_->write_many(ios);
  }
  int write_durable(uint64_t offset, const char* buf, uint64_t len) override {
    wait_turn();
    return inner_->write_durable(offset, buf, len);
  }
  void hold(bool on) {
    std::lock_guard<std::mutex> l(m_);
    held_ = on;
    cv_.notify_all();
  }
  // Until `n` writes have come (held or not).
  bool wait_arrived(int n) {
    std::unique_lock<std::mutex> l(m_);
    return cv_.wait_for(l, std::chrono::seconds(30), [&] { return arrived_ >= n; });
  }

 private:
  void wait_turn() {
    std::unique_lock<std::mutex> l(m_);
    ++arrived_;
    cv_.notify_all();
    cv_.wait(l, [&] { return !held_; });
  }
  std::mutex m_;
  std::condition_variable cv_;
  bool held_ = false;
  int arrived_ = 0;
};

// A group whose record carries onode deltas or ring data: its batches reach
// RocksDB only after its record is written, and the groups after it wait
// behind it. RocksDB's WAL reaches its file at anyone's sync (or when its
// buffer fills): a batch there without its record came back after a crash
// without the deltas only the record held (crash-long on `on`, 3f73f3e).
// A group without deltas still goes to RocksDB while its record is written.
TEST(CommitJournalOrder, BatchesOfAGroupWithDeltasWaitForItsRecord) {
  constexpr uint64_t kB = CommitJournal::kBlock, kRing = 256 * kB;
  auto work = [](const std::string& key, bool delta) {
    CommitWork w;
    w.batch = std::make_unique<rocksdb::WriteBatch>();
    w.batch->Put(key, "v");
    if (delta) {
      JournalDelta d;
      d.kind = JournalDeltaKind::kSetSize;
      d.key = "onode-" + key;
      d.version = 2;
      d.incarnation = 1;
      d.size = 4096;
      w.ring_deltas.push_back(std::move(d));
    }
    return w;
  };
  for (bool delta : {false, true}) {
    SCOPED_TRACE(delta ? "a group with deltas" : "a group without");
    test::TempDir dir("journal");
    DeviceOpenOptions o;
    o.create = true;
    o.create_size = kRing + 8 * kB;
    std::string err;
    auto held = std::make_shared<HeldWrites>(open_block_device(dir.file("ssd"), o, &err));
    ASSERT_TRUE(held->inner()) << err;
    {
      auto region = RegionDevice::make(held, {{8 * kB, kRing}}, &err);
      ASSERT_TRUE(region) << err;
      ASSERT_EQ(CommitJournal::format_region(*region, &err), 0) << err;
    }
    auto region = RegionDevice::make(held, {{8 * kB, kRing}}, &err);
    ASSERT_TRUE(region) << err;
    auto j = CommitJournal::open_region(std::move(region), fsid_a(), &err);
    ASSERT_TRUE(j) << err;
    auto db = open_db(dir.file("db"));
    auto in_db = [&](const std::string& key) {
      std::string v;
      return db->Get(rocksdb::ReadOptions(), key, &v).ok();
    };
    // Asks for a while whether `key` reached RocksDB.
    auto reaches = [&](const std::string& key) {
      for (int i = 0; i < 100 && !in_db(key); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return in_db(key);
    };
    WriteTracker tracker;
    KvCommitter c(db.get(), {nullptr, nullptr}, &tracker, 64);
    c.set_journal(j.get(), 1, 2);
    held->hold(true);
    // Both queued before the committer starts: one group of two, which goes
    // to a lane (a transaction alone is written by the committer itself).
    c.submit(work("a", delta), false);
    const uint64_t last = c.submit(work("b", delta), false);
    c.start();
    ASSERT_TRUE(held->wait_arrived(1)) << "the lane began the record";
    if (delta) {
      EXPECT_FALSE(reaches("a")) << "a batch in RocksDB before its record";
      EXPECT_FALSE(in_db("b"));
      // A sync now (the onode checkpointer's) finds nothing of theirs.
      ASSERT_TRUE(db->FlushWAL(true).ok());
    } else {
      EXPECT_TRUE(reaches("a")) << "the record and the batches overlap";
      EXPECT_TRUE(in_db("b"));
    }
    held->hold(false);
    ASSERT_EQ(c.wait_committed(last), 0);
    EXPECT_TRUE(in_db("a") && in_db("b"));
    c.stop();
  }
}
}  // namespace
