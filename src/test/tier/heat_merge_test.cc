// Heat records merged in RocksDB (kv/heat_record.h) and the tracker's hot
// set over them (HeatTrackerOptions::on_demand): the merge of a trace's
// operands, in any grouping, equals the in-memory fold of the same trace,
// garbage is dropped without failing a read, and the hot set stays within
// its bytes.
#include "hybridstore/kv/heat_record.h"

#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "hscommon/encoding.h"
#include "hybridstore/kv/kv_schema.h"
#include "hybridstore/tier/heat_tracker.h"

using namespace hybridstore;

namespace {

constexpr uint64_t kSeed = 20261130;

HeatRecord decode_ok(const std::string& v) {
  HeatRecord r;
  std::string err;
  EXPECT_EQ(decode_heat_record(v, &r, &err), 0) << err;
  return r;
}

// The operands of one key, merged in the given shape.
HeatRecord fold_left(const std::vector<HeatRecord>& ops) {
  HeatRecord acc;
  for (const auto& op : ops) merge_heat(&acc, op);
  return acc;
}
HeatRecord fold_right(const std::vector<HeatRecord>& ops) {
  HeatRecord acc;
  for (size_t i = ops.size(); i-- > 0;) {
    HeatRecord left = ops[i];
    merge_heat(&left, acc);
    acc = left;
  }
  return acc;
}
// A random binary tree over the operands in order, as compactions and
// reads group them.
HeatRecord fold_tree(const std::vector<HeatRecord>& ops, size_t b, size_t e, std::mt19937_64& rng) {
  if (e - b == 0) return HeatRecord{};
  if (e - b == 1) return ops[b];
  const size_t m = b + 1 + rng() % (e - b - 1);
  HeatRecord l = fold_tree(ops, b, m, rng);
  merge_heat(&l, fold_tree(ops, m, e, rng));
  return l;
}

double f_of(const HeatRecord& r, uint32_t epoch, double decay) {
  HeatRecord x = r;
  fold_heat(&x, epoch, decay);
  return static_cast<double>(x.hist_f) + x.cur_f;
}
double r_of(const HeatRecord& r, uint32_t epoch, double decay) {
  HeatRecord x = r;
  fold_heat(&x, epoch, decay);
  return static_cast<double>(x.hist_r) + x.cur_r;
}

void expect_close(double a, double b, const std::string& what) {
  EXPECT_NEAR(a, b, 1e-4 * std::max(1.0, std::fabs(b))) << what;
}

// Replays a random trace on a tracker holding everything (today's load
// mode: the in-memory fold) and on an on-demand one whose deltas go out at
// random exports and, with a small cap, evictions; returns how many
// operands were written. `gap_us`: time between requests (continuations
// only happen below the 0.5 s window).
void replay(uint64_t seed, double decay, size_t on_demand_bytes, uint64_t gap_us, int keys, int requests,
            size_t* written_out = nullptr) {
  SCOPED_TRACE("seed " + std::to_string(seed) + " decay " + std::to_string(decay));
  std::mt19937_64 rng(seed);
  HeatTrackerOptions lo;
  lo.decay = decay;
  lo.max_objects = 1 << 20;
  HeatTracker mem(lo);
  HeatTrackerOptions od = lo;
  od.on_demand = true;
  od.max_bytes = on_demand_bytes;
  HeatTracker hot(od);
  std::map<std::string, std::vector<HeatRecord>> ops;
  size_t written = 0;
  if (written_out) *written_out = 0;
  auto take = [&](std::vector<HeatOp>&& v) {
    for (auto& op : v) {
      ASSERT_FALSE(op.operand.empty());
      ops[op.key].push_back(decode_ok(op.operand));
      ++written;
    }
  };
  hot.set_spill(take);
  std::vector<uint64_t> next_off(keys, 0);
  uint64_t now = 1000000;
  for (int n = 0; n < requests; ++n) {
    const int k = static_cast<int>(rng() % keys);
    const std::string key = "obj" + std::to_string(k);
    const AccessType type = rng() % 4 == 0 ? AccessType::kWrite : AccessType::kRead;
    // Half the requests continue where the key's last one ended.
    const uint64_t off = rng() % 2 ? next_off[k] : (rng() % 64) * 4096;
    const uint64_t len = 4096 * (1 + rng() % 4);
    next_off[k] = off + len;
    now += gap_us + rng() % 1000;
    const bool counts = rng() % 16 != 0;
    mem.record(key, type, off, len, now, 1 << 20, counts);
    hot.record(key, type, off, len, now, 1 << 20, counts);
    if (rng() % 200 == 0) {
      mem.advance_window();
      hot.advance_window();
    }
    if (rng() % 97 == 0) take(std::move(hot.export_dirty().ops));
  }
  take(std::move(hot.export_dirty().ops));
  if (written_out) *written_out = written;
  EXPECT_EQ(mem.window(), hot.window());
  const uint32_t epoch = mem.window();
  for (int k = 0; k < keys; ++k) {
    const std::string key = "obj" + std::to_string(k);
    HeatSample want;
    if (!mem.lookup(key, &want)) {
      EXPECT_EQ(ops.count(key), 0u) << key;
      continue;
    }
    SCOPED_TRACE(key);
    const auto& v = ops[key];
    ASSERT_FALSE(v.empty());
    std::mt19937_64 shape(seed ^ static_cast<uint64_t>(k));
    const HeatRecord left = fold_left(v), right = fold_right(v), tree = fold_tree(v, 0, v.size(), shape);
    for (const HeatRecord* r : {&left, &right, &tree}) {
      expect_close(f_of(*r, epoch, decay), want.frequency, "f");
      expect_close(r_of(*r, epoch, decay), want.randomness, "R");
      EXPECT_EQ(r->last_time_us, want.last_time_us);
      EXPECT_EQ(r->last_offset, want.last_offset);
      EXPECT_EQ(r->last_end, want.last_end);
      EXPECT_EQ(r->last_type, want.last_type);
      EXPECT_EQ(r->size, want.size);
    }
    // The tracker's own view, stored record plus nothing unwritten.
    HeatSample merged;
    ASSERT_TRUE(hot.lookup_merged(key, &left, &merged));
    expect_close(merged.frequency, want.frequency, "lookup_merged f");
  }
}

}  // namespace

TEST(HeatMerge, OperandsMergedInAnyGroupingEqualTheInMemoryFold) {
  std::printf("seed %llu\n", static_cast<unsigned long long>(kSeed));
  // Everything in memory on both sides: the operands are the exports'
  // deltas, requests 1-2 ms apart so half of them continue the last one.
  for (uint64_t t = 0; t < 8; ++t)
    for (double decay : {0.5, 0.0, 1.0, 0.9}) replay(kSeed + t, decay, 64ull << 20, 1000, 40, 3000);
}

TEST(HeatMerge, AHotSetTooSmallForTheKeysLosesNoHistory) {
  std::printf("seed %llu\n", static_cast<unsigned long long>(kSeed));
  // 5,000 keys in 64 KiB (about 450 entries): most requests miss and most
  // deltas leave by eviction. A miss inserts a fresh entry, so requests are
  // a second apart: a continuation across an eviction would count as a new
  // segment in the hot set (docs/memory.md), never in the fold.
  size_t written = 0;
  for (uint64_t t = 0; t < 4; ++t) {
    size_t w = 0;
    replay(kSeed + 100 + t, 0.5, 64 << 10, 1000000, 5000, 20000, &w);
    written += w;
  }
  std::printf("operands written: %zu for 80000 requests\n", written);
  EXPECT_GT(written, 40000u);
}

// Operands are written outside the shard's lock, yet in the order the lock
// made them. An eviction's merge that a forget() overtook left a heat record
// for a removed object. Here the merge is held in the spill until the
// forget has finished or 300 ms have passed: ordered, the forget waits for it.
TEST(HeatMerge, AnEvictionsMergeIsWrittenBeforeALaterForgetsDelete) {
  HeatTrackerOptions o;
  o.on_demand = true;
  o.max_bytes = 1;  // every new key evicts the others
  o.shards = 1;
  HeatTracker t(o);
  std::mutex mu;
  std::condition_variable cv;
  bool merging = false, forgot = false;
  std::vector<std::string> written;
  t.set_spill([&](std::vector<HeatOp>&& v) {
    for (auto& op : v) {
      const bool merge = !op.operand.empty();
      std::unique_lock<std::mutex> l(mu);
      if (merge && op.key == "victim") {
        merging = true;
        cv.notify_all();
        cv.wait_for(l, std::chrono::milliseconds(300), [&] { return forgot; });
      }
      written.push_back((merge ? "merge " : "delete ") + op.key);
    }
  });
  t.record("victim", AccessType::kRead, 0, 4096, 1000000, 4096);
  std::thread evictor([&] { t.record("other", AccessType::kRead, 0, 4096, 2000000, 4096); });
  {
    std::unique_lock<std::mutex> l(mu);
    ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(30), [&] { return merging; })) << "no eviction of victim";
  }
  std::thread forgetter([&] {
    t.forget("victim");
    std::lock_guard<std::mutex> l(mu);
    forgot = true;
    cv.notify_all();
  });
  evictor.join();
  forgetter.join();
  const std::vector<std::string> want = {"merge victim", "delete victim"};
  EXPECT_EQ(written, want);
}

TEST(HeatMerge, TheHotSetStaysWithinItsBytes) {
  std::printf("seed %llu\n", static_cast<unsigned long long>(kSeed));
  std::mt19937_64 rng(kSeed);
  for (size_t cap : {size_t{64} << 10, size_t{1} << 20, size_t{8} << 20}) {
    HeatTrackerOptions o;
    o.on_demand = true;
    o.max_bytes = cap;
    HeatTracker t(o);
    size_t spilled = 0, peak = 0;
    t.set_spill([&](std::vector<HeatOp>&& v) { spilled += v.size(); });
    std::string key(40, 'k');  // a Ceph-like key: the entry plus a heap block
    for (int i = 0; i < 200000; ++i) {
      std::snprintf(key.data(), key.size(), "rbd_data.1234abcd.%016llx",
                    static_cast<unsigned long long>(rng() % 150000));
      key.back() = 'x';
      t.record(key, AccessType::kRead, 0, 4096, static_cast<uint64_t>(i) * 1000000, 4096);
      if (i % 1000 == 0) peak = std::max(peak, t.memory_bytes());
    }
    peak = std::max(peak, t.memory_bytes());
    std::printf("cap %zu: peak %zu bytes, %zu entries held, %zu operands spilled\n", cap, peak, t.size(), spilled);
    EXPECT_LE(peak, cap);
    // The cap is used, not just respected (at least half of it holds entries).
    EXPECT_GT(t.size() * HeatTracker::bytes_per_entry(key.size()), cap / 2);
    EXPECT_GT(spilled, 0u);
  }
}

TEST(HeatMerge, DecoderRejectsGarbageAndTheOperatorDropsItWithoutFailing) {
  std::printf("seed %llu\n", static_cast<unsigned long long>(kSeed));
  HeatRecord r;
  r.size = 4096;
  r.cur_f = 3;
  r.cur_r = 2;
  r.hist_f = 1.5f;
  r.hist_r = 1.0f;
  r.epoch = 4;
  r.last_time_us = 77;
  r.decay = 0.5;
  const std::string good = encode_heat_record(r);
  std::string err;
  HeatRecord out;
  ASSERT_EQ(decode_heat_record(good, &out, &err), 0) << err;
  EXPECT_EQ(encode_heat_record(out), good);
  // Every truncation and every single-byte flip is refused.
  for (size_t n = 0; n < good.size(); ++n) EXPECT_LT(decode_heat_record(good.substr(0, n), &out, &err), 0) << n;
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x20;
    EXPECT_LT(decode_heat_record(bad, &out, &err), 0) << i;
  }
  std::mt19937_64 rng(kSeed);
  for (int n = 0; n < 2000; ++n) {
    std::string junk(rng() % 64, '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    EXPECT_LT(decode_heat_record(junk, &out, &err), 0);
  }
  // Well framed, impossible values.
  auto framed = [](uint32_t cur_f, uint32_t cur_r, double decay) {
    std::string body;
    put_varint(&body, 4096);
    put_varint(&body, 0);
    put_varint(&body, 4096);
    put_varint(&body, 1);
    put_varint(&body, cur_f);
    put_varint(&body, cur_r);
    put_fixed32(&body, 0);
    put_fixed32(&body, 0);
    put_varint(&body, 0);
    put_u8(&body, 0);
    uint64_t u;
    std::memcpy(&u, &decay, 8);
    put_fixed64(&body, u);
    return seal_record(0x48454154, 2, body);
  };
  EXPECT_EQ(decode_heat_record(framed(3, 2, 0.5), &out, &err), 0) << err;
  EXPECT_EQ(decode_heat_record(framed(3, 4, 0.5), &out, &err), -EIO);
  EXPECT_EQ(decode_heat_record(framed(3, 2, 1.5), &out, &err), -EIO);
  EXPECT_EQ(decode_heat_record(framed(3, 2, NAN), &out, &err), -EIO);
  EXPECT_EQ(decode_heat_record(seal_record(0x48454154, 3, "newer"), &out, &err), -EOPNOTSUPP);

  // The operator keeps the good side of a merge with a bad one.
  HeatMergeOperator op;
  const uint64_t before = HeatMergeOperator::rejected();
  std::string merged;
  const rocksdb::Slice good_slice(good), junk_slice("not a heat record");
  ASSERT_TRUE(op.Merge("Hox", &good_slice, junk_slice, &merged, nullptr));
  EXPECT_EQ(merged, good);
  ASSERT_TRUE(op.Merge("Hox", &junk_slice, good_slice, &merged, nullptr));
  EXPECT_EQ(merged, good);
  EXPECT_EQ(HeatMergeOperator::rejected(), before + 2);
}

// Through RocksDB with the store's merge operator: operands on an `H` key
// read back as their merge, one bad operand among them costs only itself,
// and a compaction keeps the value.
TEST(HeatMerge, TheStoresMergeOperatorAddsOperandsInRocksDb) {
  std::printf("seed %llu\n", static_cast<unsigned long long>(kSeed));
  std::unique_ptr<rocksdb::Env> env(rocksdb::NewMemEnv(rocksdb::Env::Default()));
  rocksdb::Options o;
  o.env = env.get();
  o.create_if_missing = true;
  o.merge_operator = kv::make_merge_operator();
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(o, "/heat-merge", &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  std::mt19937_64 rng(kSeed);
  std::vector<HeatRecord> ops;
  for (int i = 0; i < 50; ++i) {
    HeatRecord r;
    r.epoch = static_cast<uint32_t>(i / 10);
    r.cur_f = 1 + static_cast<uint32_t>(rng() % 5);
    r.cur_r = static_cast<uint32_t>(rng() % (r.cur_f + 1));
    r.last_time_us = static_cast<uint64_t>(i) * 10;
    r.size = 4096;
    r.decay = 0.5;
    ops.push_back(r);
    ASSERT_TRUE(db->Merge(rocksdb::WriteOptions(), "Hokey", encode_heat_record(r)).ok());
    if (i == 20) {
      ASSERT_TRUE(db->Merge(rocksdb::WriteOptions(), "Hokey", "garbage").ok());
    }
    if (i == 30) {
      ASSERT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());
    }
  }
  std::string v;
  ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), "Hokey", &v).ok());
  const HeatRecord want = fold_left(ops), got = decode_ok(v);
  expect_close(f_of(got, 5, 0.5), f_of(want, 5, 0.5), "f");
  expect_close(r_of(got, 5, 0.5), r_of(want, 5, 0.5), "R");
  EXPECT_EQ(got.last_time_us, 490u);
  ASSERT_TRUE(db->CompactRange(rocksdb::CompactRangeOptions(), nullptr, nullptr).ok());
  ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), "Hokey", &v).ok());
  expect_close(f_of(decode_ok(v), 5, 0.5), f_of(want, 5, 0.5), "f after compaction");
  // A delete drops the history; a later operand starts a new one.
  ASSERT_TRUE(db->Delete(rocksdb::WriteOptions(), "Hokey").ok());
  ASSERT_TRUE(db->Merge(rocksdb::WriteOptions(), "Hokey", encode_heat_record(ops[0])).ok());
  ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), "Hokey", &v).ok());
  EXPECT_EQ(decode_ok(v).cur_f, ops[0].cur_f);
}

// forget() on demand: the stored record must go whether or not the object
// is hot, after whatever its earlier deltas wrote (a delete before a
// pending merge would let the merge bring the history of a removed object
// back), and a new object of the same name starts from nothing.
TEST(HeatMerge, ForgetWritesADeleteAfterTheObjectsPendingOperands) {
  HeatTrackerOptions o;
  o.on_demand = true;
  HeatTracker t(o);
  t.record("a", AccessType::kRead, 0, 4096, 1, 4096);
  t.record("b", AccessType::kRead, 0, 4096, 2, 4096);
  HeatDelta first = t.export_dirty();
  ASSERT_EQ(first.ops.size(), 2u);
  t.record("a", AccessType::kRead, 0, 4096, 3000000, 4096);
  t.forget("a");
  t.forget("c");  // cold: only on disk, if anywhere
  HeatSample s;
  EXPECT_FALSE(t.lookup("a", &s));
  HeatDelta d = t.export_dirty();
  // Without a spill the ops wait (in order per key; shards apart): the
  // deletes, and no delta of "a" after its delete.
  std::vector<std::pair<std::string, bool>> got;
  for (const auto& op : d.ops) got.emplace_back(op.key, op.operand.empty());
  std::sort(got.begin(), got.end());
  const std::vector<std::pair<std::string, bool>> want = {{"a", true}, {"c", true}};
  EXPECT_EQ(got, want);
  std::vector<HeatOp> spilled;
  t.set_spill([&](std::vector<HeatOp>&& v) {
    for (auto& op : v) spilled.push_back(std::move(op));
  });
  t.forget("b");
  ASSERT_EQ(spilled.size(), 1u);
  EXPECT_EQ(spilled[0].key, "b");
  EXPECT_TRUE(spilled[0].operand.empty());
  EXPECT_EQ(t.size(), 0u);
}
