// Persistence of the section allocator: records round-trip through a
// RocksDB-like key/value map, the map table is rebuilt at mount, and damaged
// or contradictory records are rejected with an error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <random>

#include "allocator_fixture.h"
#include "hscommon/encoding.h"
#include "hybridstore/sections/section_rules.h"

namespace hybridstore {
namespace {

using test::AllocSetup;
using test::BlockModel;
using Store = std::map<std::string, std::string>;

// The record format (allocator_records.cc): per-kind checksum seeds.
constexpr uint32_t kExtentTag = 0x48534558;

void apply(Store* store, std::vector<PersistOp>* ops) {
  for (const auto& op : *ops) {
    if (op.kind == PersistOp::Kind::kPut)
      (*store)[op.key()] = op.value;
    else
      store->erase(op.key());
  }
  ops->clear();
}

// The first line where two dumps differ ("" when equal), to keep failures short.
std::string first_difference(const std::string& a, const std::string& b) {
  size_t pa = 0, pb = 0;
  while (pa < a.size() || pb < b.size()) {
    size_t ea = a.find('\n', pa), eb = b.find('\n', pb);
    std::string la = a.substr(pa, ea - pa), lb = b.substr(pb, eb - pb);
    if (la != lb) return "rebuilt: " + la + "\noriginal: " + lb;
    if (ea == std::string::npos || eb == std::string::npos) break;
    pa = ea + 1;
    pb = eb + 1;
  }
  return a.size() == b.size() ? "" : "dumps differ in length";
}

std::vector<std::pair<std::string, std::string>> records(const Store& s) {
  return {s.begin(), s.end()};
}

struct Workload {
  AllocSetup setup;
  std::unique_ptr<SectionAllocator> a;
  BlockModel model;
  Store store;
  std::mt19937_64 rng{7};
  std::mt19937_64 direct_rng{11};
  bool direct = false;  // half the requests may take whole units written
  uint64_t now = 0, next_id = 1;
  std::vector<PersistOp> ops;

  explicit Workload(AllocSetup s) : setup(std::move(s)) { a = test::make_allocator(setup); }

  void step(SectionAllocator* al, bool persist = true) {
    now += 500;
    std::vector<AllocPiece> pieces;
    AllocEvents ev;
    if (model.objects().empty() || rng() % 100 < 60) {
      uint64_t bytes = rng() % 10 == 0 ? 1 + rng() % (700 << 10) : 300 + rng() % 9000;
      AllocRequest r;
      r.bytes = bytes;
      r.section = bytes <= 8192 ? 0 : bytes < (512 << 10) ? 1 : 2;
      r.group = static_cast<uint32_t>(rng() % setup.groups);
      r.owner = next_id;
      r.hint = rng() % 100;
      r.writes = 1 + static_cast<uint32_t>(rng() % 5);
      r.born_us = now - rng() % 400;
      r.now_us = now;
      r.direct = direct && direct_rng() % 2 == 0;
      int used;
      if (al->allocate_with_fallback(r, &pieces, &ev, &used) == 0) {
        ASSERT_TRUE(model.add(next_id, bytes, pieces, setup.block_size));
        ++next_id;
      }
    } else {
      auto it = model.objects().begin();
      std::advance(it, rng() % model.objects().size());
      for (const auto& p : it->second.pieces) ASSERT_EQ(al->release(p.block, p.blocks, now), 0);
      model.remove(it->first);
    }
    if (rng() % 50 == 0) al->tick(now, &ev);
    if (persist) {
      al->drain_records(&ops);
      apply(&store, &ops);
    }
  }
};

// Rebuilds an allocator from what `w` persisted; it must verify clean.
std::unique_ptr<SectionAllocator> rebuilt(const Workload& w) {
  std::unique_ptr<SectionAllocator> b;
  std::string err;
  EXPECT_EQ(SectionAllocator::rebuild(test::make_geometry(w.setup), w.setup.tune, records(w.store), w.now, &b, &err),
            0)
      << err;
  if (b) {
    EXPECT_EQ(b->verify(), "");
  }
  return b;
}

AllocSetup pressured() {
  AllocSetup s;
  s.ssd_bytes = 16 << 20;
  s.groups = 2;
  s.sections = "small:8K:rho1,mid:64K:rho2:hfm,large:512K:rho3:delta32";
  s.tune.max_staged_units = 2;
  s.tune.staging_timeout_us = 20'000;
  return s;
}

TEST(AllocatorRecords, RoundTripRebuildsTheSameState) {
  Workload w(pressured());
  for (int round = 0; round < 6; ++round) {
    for (int i = 0; i < 400; ++i) {
      w.step(w.a.get());
      ASSERT_FALSE(HasFatalFailure());
    }
    auto b = rebuilt(w);
    ASSERT_TRUE(b);
    ASSERT_FALSE(HasFailure());
    ASSERT_EQ(first_difference(b->dump(), w.a->dump()), "") << "round " << round;
  }
  // The rebuilt allocator carries on: same objects, more work, invariants hold.
  std::unique_ptr<SectionAllocator> b;
  std::string err;
  ASSERT_EQ(SectionAllocator::rebuild(test::make_geometry(w.setup), w.setup.tune,
                                      records(w.store), w.now, &b, &err),
            0);
  w.a = std::move(b);
  for (int i = 0; i < 800; ++i) {
    w.step(w.a.get());
    ASSERT_FALSE(HasFatalFailure());
  }
  ASSERT_EQ(w.a->verify(), "");
  std::unique_ptr<SectionAllocator> c;
  ASSERT_EQ(SectionAllocator::rebuild(test::make_geometry(w.setup), w.setup.tune,
                                      records(w.store), w.now, &c, &err),
            0)
      << err;
  EXPECT_EQ(first_difference(c->dump(), w.a->dump()), "");
}

// Yields records in the order given, each copied into one buffer that the
// next record overwrites, as a RocksDB iterator's views are only good until
// Next(): a rebuild that kept a view past next() would restore garbage.
class OneAtATime : public AllocatorRecordSource {
 public:
  explicit OneAtATime(std::vector<std::pair<std::string, std::string>> records) : records_(std::move(records)) {}
  int next(std::string_view* key, std::string_view* value, std::string*) override {
    if (at_ == records_.size()) return 0;
    buffer_.assign(records_[at_].first);
    buffer_.append(records_[at_].second);
    *key = std::string_view(buffer_).substr(0, records_[at_].first.size());
    *value = std::string_view(buffer_).substr(records_[at_].first.size());
    ++at_;
    ++calls_;
    return 1;
  }
  size_t calls() const { return calls_; }

 private:
  std::vector<std::pair<std::string, std::string>> records_;
  std::string buffer_;
  size_t at_ = 0, calls_ = 0;
};

TEST(AllocatorRecords, ASourceReadOneRecordAtATimeRebuildsTheSameState) {
  Workload w(pressured());
  for (int i = 0; i < 1500; ++i) {
    w.step(w.a.get());
    ASSERT_FALSE(HasFatalFailure());
  }
  OneAtATime source(records(w.store));
  std::unique_ptr<SectionAllocator> b;
  std::string err;
  ASSERT_EQ(SectionAllocator::rebuild(test::make_geometry(w.setup), w.setup.tune, &source, w.now, &b, &err), 0)
      << err;
  EXPECT_EQ(source.calls(), w.store.size());
  EXPECT_EQ(b->verify(), "");
  EXPECT_EQ(first_difference(b->dump(), w.a->dump()), "");
}

TEST(AllocatorRecords, AVectorInAnyOrderRebuildsTheSameStateASourceOutOfOrderIsRefused) {
  Workload w(pressured());
  for (int i = 0; i < 1500; ++i) {
    w.step(w.a.get());
    ASSERT_FALSE(HasFatalFailure());
  }
  ASSERT_GT(w.store.size(), 3u);
  const uint64_t seed = 5;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::vector<std::pair<std::string, std::string>> shuffled = records(w.store);
  std::mt19937_64 rng(seed);
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  ASSERT_NE(shuffled, records(w.store));
  std::unique_ptr<SectionAllocator> b;
  std::string err;
  ASSERT_EQ(SectionAllocator::rebuild(test::make_geometry(w.setup), w.setup.tune, shuffled, w.now, &b, &err), 0)
      << err;
  EXPECT_EQ(first_difference(b->dump(), w.a->dump()), "");

  // A source promises key order: one that breaks it is damage, not a shuffle.
  std::vector<std::pair<std::string, std::string>> swapped = records(w.store);
  std::swap(swapped[0], swapped[1]);
  OneAtATime out_of_order(swapped);
  std::unique_ptr<SectionAllocator> c;
  EXPECT_EQ(SectionAllocator::rebuild(test::make_geometry(w.setup), w.setup.tune, &out_of_order, w.now, &c, &err),
            -EIO);
  EXPECT_EQ(err, "allocator records out of key order");
  std::vector<std::pair<std::string, std::string>> repeated = records(w.store);
  repeated.insert(repeated.begin() + 1, repeated[1]);
  OneAtATime twice(repeated);
  EXPECT_EQ(SectionAllocator::rebuild(test::make_geometry(w.setup), w.setup.tune, &twice, w.now, &c, &err), -EIO);
  EXPECT_EQ(err, "duplicate allocator record key");
  // The same duplicate in a vector is refused too.
  EXPECT_EQ(SectionAllocator::rebuild(test::make_geometry(w.setup), w.setup.tune, repeated, w.now, &c, &err), -EIO);
  EXPECT_EQ(err, "duplicate allocator record key");
}

// Extent records read back by key from a workload's store, as the engine
// reads them from RocksDB; `damage` changes one record's value first.
class MapPlacements : public PlacementStore {
 public:
  explicit MapPlacements(const Store* store) : store_(store) {}
  int read_extent_record(uint32_t eu, uint32_t idx, std::string* value, std::string* error) override {
    ++reads_;
    auto it = store_->find(PersistOp{PersistOp::Kind::kPut, PersistOp::Type::kExtent, eu, idx, {}}.key());
    if (it == store_->end()) {
      *error = "missing";
      return -EIO;
    }
    *value = it->second;
    return 0;
  }
  size_t reads() const { return reads_; }

 private:
  const Store* store_;
  size_t reads_ = 0;
};

// Small objects in holes=fill sections, filling holes from the start: releases
// and hole fills land in written extents all the time.
AllocSetup holey() {
  AllocSetup s = pressured();
  s.sections = "small:8K:rho1:holes=fill,mid:64K:rho2:hfm:holes=fill,large:512K:rho3:delta32";
  s.tune.hole_fill_below = 0.9;
  return s;
}

std::unique_ptr<SectionAllocator> rebuilt_evicted(const Workload& w, PlacementStore* placements,
                                                  std::function<bool(uint64_t, uint64_t)> keep = {}) {
  std::unique_ptr<SectionAllocator> b;
  std::string err;
  RebuildOptions o;
  o.placements = placements;
  o.keep = std::move(keep);
  EXPECT_EQ(SectionAllocator::rebuild(test::make_geometry(w.setup), w.setup.tune, records(w.store), w.now, &b, &err,
                                      o),
            0)
      << err;
  return b;
}

// The same workload twice, from one rebuilt state: once with every placement
// in memory, once with written extents' placements left in their records.
// Every step must leave both allocators in the same state.
TEST(AllocatorRecords, PlacementsLeftInTheirRecordsBehaveAsResidentOnes) {
  Workload resident(holey());
  for (int i = 0; i < 1500; ++i) {
    resident.step(resident.a.get());
    ASSERT_FALSE(HasFatalFailure());
  }
  Workload evicted(holey());
  evicted.model = resident.model;
  evicted.store = resident.store;
  evicted.rng = resident.rng;
  evicted.now = resident.now;
  evicted.next_id = resident.next_id;
  MapPlacements placements(&evicted.store);
  resident.a = rebuilt(resident);
  evicted.a = rebuilt_evicted(evicted, &placements);
  ASSERT_TRUE(resident.a && evicted.a);
  uint64_t extents, stored;
  evicted.a->evicted(&extents, &stored);
  uint64_t in_memory, bytes;
  evicted.a->memory(&in_memory, &bytes);
  uint64_t all, all_bytes;
  resident.a->memory(&all, &all_bytes);
  std::printf("after the rebuild: %llu extents evicted, %llu of %llu placements in their records, %llu B of %llu B\n",
              (unsigned long long)extents, (unsigned long long)stored, (unsigned long long)all,
              (unsigned long long)bytes, (unsigned long long)all_bytes);
  ASSERT_GT(extents, 10u);
  EXPECT_EQ(in_memory + stored, all);
  EXPECT_LT(bytes, all_bytes);
  // dump() and verify() read the records back; nothing is kept.
  ASSERT_EQ(first_difference(evicted.a->dump(), resident.a->dump()), "");
  ASSERT_EQ(evicted.a->verify(), "");
  for (uint32_t eu = 0; eu < resident.a->erase_unit_count(); ++eu) {
    std::vector<LiveRange> r, e;
    ASSERT_EQ(resident.a->live_ranges(eu, &r), 0);
    ASSERT_EQ(evicted.a->live_ranges(eu, &e), 0);
    ASSERT_EQ(r.size(), e.size()) << "unit " << eu;
    for (size_t k = 0; k < r.size(); ++k)
      ASSERT_TRUE(r[k].block == e[k].block && r[k].blocks == e[k].blocks && r[k].bytes == e[k].bytes &&
                  r[k].owner == e[k].owner && r[k].born_us == e[k].born_us && r[k].writes == e[k].writes);
  }
  uint64_t extents_after_reads;
  evicted.a->evicted(&extents_after_reads, &stored);
  EXPECT_EQ(extents_after_reads, extents);
  const size_t reads_before = placements.reads();
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 300; ++i) {
      resident.step(resident.a.get());
      evicted.step(evicted.a.get());
      ASSERT_FALSE(HasFatalFailure());
    }
    ASSERT_EQ(first_difference(evicted.a->dump(), resident.a->dump()), "") << "round " << round;
    ASSERT_EQ(evicted.a->verify(), "");
    ASSERT_EQ(evicted.store, resident.store) << "round " << round;
    // A mount again, of both: whatever came back into memory leaves again.
    resident.a = rebuilt(resident);
    evicted.a = rebuilt_evicted(evicted, &placements);
    ASSERT_TRUE(resident.a && evicted.a);
    ASSERT_EQ(first_difference(evicted.a->dump(), resident.a->dump()), "") << "round " << round;
  }
  EXPECT_GT(placements.reads(), reads_before);
  std::printf("%zu records read back over 1,200 steps\n", placements.reads() - reads_before);
}

// A written extent whose placements went back to its record and which has
// no holes to index keeps its 32-byte descriptor and nothing else: at 10M
// small objects 2.3M such extents are most of the SSD sections' memory
// (docs/memory.md, step 8).
TEST(AllocatorRecords, AnEvictedExtentWithoutHolesKeepsOnlyItsDescriptor) {
  AllocSetup setup = pressured();
  setup.sections = "small:8K:rho1:holes=clean,mid:64K:rho2:hfm,large:512K:rho3:delta32";
  Workload w(setup);
  // Creates only, of one block each, so the small section's extents fill
  // up without holes; then everything is written.
  std::mt19937_64 rng(3);
  for (int i = 0; i < 2000; ++i) {
    w.now += 100;
    AllocRequest r;
    r.bytes = 1 + rng() % 4096;
    r.section = 0;
    r.group = static_cast<uint32_t>(rng() % setup.groups);
    r.owner = w.next_id;
    r.writes = 1;
    r.born_us = w.now;
    r.now_us = w.now;
    std::vector<AllocPiece> pieces;
    AllocEvents ev;
    int used;
    ASSERT_EQ(w.a->allocate_with_fallback(r, &pieces, &ev, &used), 0) << i;
    ASSERT_TRUE(w.model.add(w.next_id++, r.bytes, pieces, setup.block_size));
  }
  AllocEvents ev;
  w.a->flush(w.now, &ev);
  w.a->drain_records(&w.ops);
  apply(&w.store, &w.ops);
  MapPlacements placements(&w.store);
  auto resident = rebuilt(w);
  auto evicted = rebuilt_evicted(w, &placements);
  ASSERT_TRUE(resident && evicted);
  ASSERT_EQ(evicted->verify(), "");
  uint64_t extents, stored, n, resident_bytes, evicted_bytes;
  evicted->evicted(&extents, &stored);
  resident->memory(&n, &resident_bytes);
  evicted->memory(&n, &evicted_bytes);
  std::printf("%llu extents evicted holding %llu placements: %llu B resident, %llu B evicted\n",
              (unsigned long long)extents, (unsigned long long)stored, (unsigned long long)resident_bytes,
              (unsigned long long)evicted_bytes);
  ASSERT_GT(extents, 500u);
  EXPECT_EQ(n, 0u) << "no placement stays in memory";
  EXPECT_EQ(sizeof(ExtentDesc), 32u);
  // Each evicted extent gave up its detail, not only its placements.
  EXPECT_GE(resident_bytes - evicted_bytes, extents * sizeof(ExtentDetail) + stored * sizeof(Placement));
  ASSERT_EQ(first_difference(evicted->dump(), resident->dump()), "");
}

TEST(AllocatorRecords, AKeptPlacementKeepsItsExtentInMemory) {
  Workload w(holey());
  for (int i = 0; i < 1500; ++i) {
    w.step(w.a.get());
    ASSERT_FALSE(HasFatalFailure());
  }
  MapPlacements placements(&w.store);
  // Keep every extent that holds block b: the first placement's of a unit.
  std::vector<LiveRange> live;
  uint32_t eu = 0;
  for (; eu < w.a->erase_unit_count() && live.empty(); ++eu) ASSERT_EQ(w.a->live_ranges(eu, &live), 0);
  ASSERT_FALSE(live.empty());
  const uint64_t b = live[0].block;
  auto a = rebuilt_evicted(w, &placements, [&](uint64_t block, uint64_t blocks) { return block <= b && b < block + blocks; });
  ASSERT_TRUE(a);
  std::vector<LiveRange> resident;
  ASSERT_EQ(a->live_ranges(eu - 1, &resident, nullptr, /*resident_only=*/true), 0);
  bool found = false;
  for (const LiveRange& r : resident) found |= r.block == b;
  EXPECT_TRUE(found);
  EXPECT_EQ(placements.reads(), 0u);
}

TEST(AllocatorRecords, AnEvictedExtentWhoseRecordWentBadIsAnErrorNotACrash) {
  Workload w(holey());
  for (int i = 0; i < 1500; ++i) {
    w.step(w.a.get());
    ASSERT_FALSE(HasFatalFailure());
  }
  Store damaged = w.store;
  MapPlacements placements(&damaged);
  auto a = rebuilt_evicted(w, &placements);
  ASSERT_TRUE(a);
  // Every extent record flipped in one bit, or gone.
  int n = 0;
  for (auto it = damaged.begin(); it != damaged.end();) {
    if (it->first[0] != static_cast<char>(PersistOp::Type::kExtent)) {
      ++it;
      continue;
    }
    if (++n % 2) {
      it->second[it->second.size() / 2] ^= 0x10;
      ++it;
    } else {
      it = damaged.erase(it);
    }
  }
  ASSERT_GT(n, 2);
  EXPECT_NE(a->verify(), "");
  int errors = 0;
  for (const auto& [id, obj] : w.model.objects())
    for (const auto& p : obj.pieces) errors += a->release(p.block, p.blocks, w.now) == -EIO;
  EXPECT_GT(errors, 0);
  for (uint32_t eu = 0; eu < a->erase_unit_count(); ++eu) {
    std::vector<LiveRange> live;
    std::string err;
    if (a->live_ranges(eu, &live, &err) < 0) {
      EXPECT_NE(err.find("reading its placements back"), std::string::npos);
    }
  }
}

TEST(AllocatorRecords, UnitsHandedOverWrittenRebuildAsWritten) {
  Workload w(pressured());
  w.direct = true;
  for (int i = 0; i < 1500; ++i) {
    w.step(w.a.get());
    ASSERT_FALSE(HasFatalFailure());
  }
  ASSERT_EQ(w.a->verify(), "");
  auto b = rebuilt(w);
  ASSERT_TRUE(b);
  EXPECT_EQ(first_difference(b->dump(), w.a->dump()), "");
}

TEST(AllocatorRecords, OpenExtentsComeBackInTheirMapTableEntries) {
  AllocSetup s;
  s.sections = "large:512K:rho3:delta32:gaps=off";
  s.erase_block = 0;
  auto a = test::make_allocator(s);
  std::vector<AllocPiece> p;
  AllocEvents ev;
  AllocRequest r;
  r.bytes = 162 * 1024;  // the paper's example: next start (1, 2, 162)
  ASSERT_EQ(a->allocate(r, &p, &ev), 0);
  std::vector<PersistOp> ops;
  Store store;
  a->drain_records(&ops);
  apply(&store, &ops);
  std::unique_ptr<SectionAllocator> b;
  std::string err;
  ASSERT_EQ(SectionAllocator::rebuild(test::make_geometry(s), {}, records(store), 0, &b, &err), 0)
      << err;
  auto v = b->map_table(0, 0).entry_extents(2, 1);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0]->tail, 162u);
}

class Corruption : public ::testing::Test {
 protected:
  void SetUp() override {
    w_ = std::make_unique<Workload>(pressured());
    for (int i = 0; i < 600; ++i) w_->step(w_->a.get());
  }
  int rebuild(const Store& s, std::string* err) {
    std::unique_ptr<SectionAllocator> b;
    return SectionAllocator::rebuild(test::make_geometry(w_->setup), w_->setup.tune, records(s),
                                     w_->now, &b, err);
  }
  std::unique_ptr<Workload> w_;
};

TEST_F(Corruption, EveryFlippedBitIsRejected) {
  std::mt19937_64 rng(11);
  int tried = 0;
  for (auto it = w_->store.begin(); it != w_->store.end() && tried < 300; ++it, ++tried) {
    Store s = w_->store;
    std::string& v = s[it->first];
    size_t bit = rng() % (v.size() * 8);
    v[bit / 8] = static_cast<char>(v[bit / 8] ^ (1 << (bit % 8)));
    std::string err;
    EXPECT_LT(rebuild(s, &err), 0) << "flipped bit " << bit << " of " << v.size() * 8;
    EXPECT_FALSE(err.empty());
  }
  EXPECT_GT(tried, 20);
}

TEST_F(Corruption, TruncatedExtendedAndRandomRecordsAreRejected) {
  std::mt19937_64 rng(12);
  for (auto it = w_->store.begin(); it != w_->store.end(); ++it) {
    for (int kind = 0; kind < 3; ++kind) {
      Store s = w_->store;
      std::string& v = s[it->first];
      if (kind == 0) v.resize(rng() % v.size());
      if (kind == 1) v.push_back('x');
      if (kind == 2)
        for (auto& c : v) c = static_cast<char>(rng());
      std::string err;
      EXPECT_LT(rebuild(s, &err), 0);
    }
  }
}

TEST_F(Corruption, BadKeysAreRejected) {
  std::string err;
  Store s = w_->store;
  s["short"] = "x";
  EXPECT_EQ(rebuild(s, &err), -EIO);
  s = w_->store;
  std::string k(9, '\0');
  k[0] = 9;  // unknown record type
  s[k] = s.begin()->second;
  EXPECT_EQ(rebuild(s, &err), -EIO);
  s = w_->store;
  k = std::string(1, 1);
  put_be32(&k, 1u << 30);  // erase unit beyond the range
  put_be32(&k, 0);
  s[k] = s.begin()->second;
  EXPECT_EQ(rebuild(s, &err), -EIO);
}

TEST_F(Corruption, RecordsThatContradictEachOtherAreRejected) {
  std::string err;
  // An erase unit record removed: its extents belong to a free unit.
  Store s = w_->store;
  for (auto it = s.begin(); it != s.end(); ++it)
    if (it->first[0] == 1) {
      s.erase(it);
      break;
    }
  EXPECT_EQ(rebuild(s, &err), -EIO);
  EXPECT_NE(err.find("free erase unit"), std::string::npos) << err;
  // An extent record removed: a handed-out extent without state.
  s = w_->store;
  for (auto it = s.begin(); it != s.end(); ++it)
    if (it->first[0] == 2) {
      s.erase(it);
      break;
    }
  EXPECT_EQ(rebuild(s, &err), -EIO);
  EXPECT_NE(err.find("no record"), std::string::npos) << err;
}

// Extent records with a valid checksum but impossible contents.
TEST_F(Corruption, WellFramedGarbageExtentsAreRejected) {
  std::string key;
  for (const auto& [k, v] : w_->store)
    if (k[0] == 2) {
      key = k;
      break;
    }
  ASSERT_FALSE(key.empty());
  auto body = [](uint8_t state, uint64_t tail, std::vector<std::array<uint64_t, 6>> pl) {
    std::string b;
    put_u8(&b, state);
    put_varint(&b, tail);
    put_varint(&b, 1);
    put_varint(&b, 1);
    put_varint(&b, 0);
    put_varint(&b, pl.size());
    for (auto& p : pl)
      for (uint64_t x : p) put_varint(&b, x);
    return seal_record(kExtentTag, 1, b);
  };
  std::vector<std::string> bad = {
      body(9, 8, {}),                                        // no such state
      body(3, 8, {{0, 9, 9000, 1, 1, 0}}),                   // past the extent
      body(3, 8, {{UINT64_MAX, 1, 1000, 1, 1, 0}}),          // start wraps around
      body(3, 8, {{0, 2, 5000, 1, 1, 0}}),                   // more bytes than blocks
      body(3, 8, {{0, 2, 900, 1, 1, 0}}),                    // a whole unused block
      body(3, 8, {{0, 0, 0, 1, 1, 0}}),                      // empty placement
      body(3, 8, {{0, 1, 1024, 1ull << 33, 1, 0}}),          // writes out of range
      body(1, 3, {{0, 2, 2048, 1, 1, 0}}),                   // open tail not a map position
      body(2, 5, {{0, 2, 2048, 1, 1, 0}}),                   // closed with a tail
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    Store s = w_->store;
    s[key] = bad[i];
    std::string err;
    EXPECT_LT(rebuild(s, &err), 0) << "case " << i;
    EXPECT_FALSE(err.empty());
  }
}

TEST(AllocatorRecords, GeometryRecordDetectsAChangedConfiguration) {
  AllocSetup s;
  auto a = test::make_allocator(s);
  std::string rec = a->geometry_record();
  std::string err;
  EXPECT_EQ(a->check_geometry_record(rec, &err), 0) << err;
  AllocSetup s2 = s;
  s2.sections = "small:8K:rho1,mid:64K:rho2,large:512K:rho3:delta16";
  auto b = test::make_allocator(s2);
  EXPECT_EQ(b->check_geometry_record(rec, &err), -EINVAL);
  EXPECT_NE(err.find("hybridstore_ssd_sections"), std::string::npos);
  AllocSetup s3 = s;
  s3.erase_block = 1 << 20;
  auto c = test::make_allocator(s3);
  EXPECT_EQ(c->check_geometry_record(rec, &err), -EINVAL);
  EXPECT_NE(err.find("erase_block"), std::string::npos);
  rec[3] ^= 1;
  EXPECT_EQ(a->check_geometry_record(rec, &err), -EIO);
}

}  // namespace
}  // namespace hybridstore
