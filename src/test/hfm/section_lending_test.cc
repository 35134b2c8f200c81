// Lending whole erase units to the KV file system (docs/kvfs.md 2.5): a
// lent unit is in neither the pool nor a lane and has no record; the floor
// keeps the last units for lending; exclude_units takes the kvfs's units
// out after a rebuild; and a lend never waits behind the SsdSections lock
// that a transaction holds.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <rocksdb/db.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "allocator_fixture.h"
#include "common_helpers.h"
#include "hscommon/config.h"
#include "hybridstore/sections/hole_cleaner.h"
#include "hybridstore/sections/ssd_sections.h"

namespace hybridstore {
namespace {

using test::AllocSetup;
using test::BlockModel;
using Store = std::map<std::string, std::string>;

AllocRequest req(uint64_t bytes, int section, uint64_t owner, uint64_t now) {
  AllocRequest r;
  r.bytes = bytes;
  r.section = section;
  r.owner = owner;
  r.hint = owner;
  r.now_us = now;
  r.born_us = now;
  return r;
}

void apply(Store* store, std::vector<PersistOp>* ops) {
  for (const auto& op : *ops) {
    if (op.kind == PersistOp::Kind::kPut)
      (*store)[op.key()] = op.value;
    else
      store->erase(op.key());
  }
  ops->clear();
}

std::set<uint32_t> eus_of(const SectionAllocator& a, const std::vector<AllocPiece>& pieces) {
  std::set<uint32_t> out;
  for (const auto& p : pieces)
    for (uint64_t b = p.block; b < p.block + p.blocks; ++b)
      out.insert(static_cast<uint32_t>((b - a.erase_unit_block(0)) / a.erase_unit_blocks()));
  return out;
}

TEST(SectionLending, LentUnitsLeaveThePoolAndComeBack) {
  auto a = test::make_allocator(AllocSetup{});
  const uint32_t n = a->erase_unit_count();
  std::vector<uint32_t> lent;
  ASSERT_EQ(a->lend_units(3, &lent), 3);
  EXPECT_EQ(lent, (std::vector<uint32_t>{n - 1, n - 2, n - 3})) << "lent from the top, away from the lanes";
  EXPECT_EQ(a->free_erase_units(), n - 3);
  EXPECT_EQ(a->consumed_blocks(), 3ull * a->erase_unit_blocks()) << "kvfs space is consumed space";
  EXPECT_EQ(a->lent_units().size(), 3u);
  EXPECT_EQ(a->verify(), "");
  for (uint32_t eu : lent) EXPECT_FALSE(a->erase_unit_info(eu).owned) << "a lent unit has no lane";
  std::vector<PersistOp> ops;
  a->drain_records(&ops);
  EXPECT_TRUE(ops.empty()) << "a lend writes no record";
  // Data never lands in a lent unit.
  BlockModel model;
  AllocEvents ev;
  for (uint64_t id = 1; id < 200; ++id) {
    std::vector<AllocPiece> pieces;
    ASSERT_EQ(a->allocate(req(100 << 10, 1, id, id), &pieces, &ev), 0);
    for (uint32_t eu : eus_of(*a, pieces)) EXPECT_LT(eu, n - 3);
    ASSERT_TRUE(model.add(id, 100 << 10, pieces, 1024));
  }
  EXPECT_EQ(a->verify(), "");
  // Giving back what was not lent changes nothing.
  EXPECT_EQ(a->take_back_units({0}), -EINVAL);
  EXPECT_EQ(a->take_back_units({lent[0], 0}), -EINVAL);
  EXPECT_EQ(a->lent_units().size(), 3u);
  const uint32_t free_before = a->free_erase_units();
  ASSERT_EQ(a->take_back_units(lent), 0);
  EXPECT_EQ(a->free_erase_units(), free_before + 3);
  EXPECT_TRUE(a->lent_units().empty());
  EXPECT_EQ(a->verify(), "");
  EXPECT_EQ(a->take_back_units(lent), -EINVAL) << "given back twice";
}

TEST(SectionLending, TheFloorIsLeftToLending) {
  auto a = test::make_allocator(AllocSetup{});
  a->set_floor_units(4);
  AllocEvents ev;
  uint64_t id = 1;
  int r = 0;
  while ((r = [&] {
            std::vector<AllocPiece> pieces;
            return a->allocate(req(400 << 10, 2, id, id), &pieces, &ev);
          }()) == 0)
    ++id;
  EXPECT_EQ(r, -ENOSPC);
  EXPECT_EQ(a->free_erase_units(), 4u) << "data stopped at the floor";
  EXPECT_EQ(a->verify(), "");
  std::vector<uint32_t> lent;
  EXPECT_EQ(a->lend_units(10, &lent), 4) << "the floor is the kvfs's";
  EXPECT_EQ(a->lend_units(1, &lent), -ENOSPC);
  EXPECT_EQ(a->verify(), "");
  ASSERT_EQ(a->take_back_units(lent), 0);
  a->set_floor_units(0);
  std::vector<AllocPiece> pieces;
  EXPECT_EQ(a->allocate(req(400 << 10, 2, id, id), &pieces, &ev), 0) << "without a floor data takes it again";
}

// kvfs.md 2.5, the floor 1: the cleaner sees the floor as used space, as it
// would a full tier, and cleans so that data keeps units to take.
TEST(SectionLending, TheCleanerCountsTheFloorAsUsed) {
  auto a = test::make_allocator(AllocSetup{});
  CleanerConfig c;
  c.start_free = 0.05;
  c.stop_free = 0.08;
  HoleCleaner cleaner(c);
  EXPECT_FALSE(cleaner.should_start(*a));
  a->set_floor_units(a->erase_unit_count() - 2);
  EXPECT_TRUE(cleaner.should_start(*a));
  EXPECT_TRUE(cleaner.should_continue(*a));
  a->set_floor_units(0);
  EXPECT_FALSE(cleaner.should_continue(*a));
}

// A rebuilt allocator meets the kvfs's units: free ones are taken out, one
// that still holds object data is a conflict.
TEST(SectionLending, ExcludeUnitsAfterARebuild) {
  AllocSetup setup;
  auto a = test::make_allocator(setup);
  AllocEvents ev;
  std::vector<PersistOp> ops;
  Store store;
  std::vector<AllocPiece> first, second;
  ASSERT_EQ(a->allocate(req(400 << 10, 2, 1, 1), &first, &ev), 0);
  ASSERT_EQ(a->allocate(req(400 << 10, 2, 2, 2), &second, &ev), 0);
  a->drain_records(&ops);
  apply(&store, &ops);
  const std::set<uint32_t> used = eus_of(*a, first);
  ASSERT_EQ(used.size(), 1u);
  const uint32_t busy = *used.begin();
  const uint32_t n = a->erase_unit_count();
  std::vector<std::pair<std::string, std::string>> recs(store.begin(), store.end());

  std::unique_ptr<SectionAllocator> b;
  std::string err;
  ASSERT_EQ(SectionAllocator::rebuild(test::make_geometry(setup), setup.tune, recs, 10, &b, &err), 0) << err;
  std::vector<uint32_t> stale;
  EXPECT_EQ(b->exclude_units({n - 1, busy}, &stale, &err), -EIO);
  EXPECT_EQ(err, fmt::format("erase unit {} is owned by the KV file system and holds object data; run fsck", busy));
  EXPECT_TRUE(b->lent_units().empty()) << "a conflict excludes nothing";

  // The first object's unit freed, then lent, before its record deletes
  // committed: the mount returns its placements (the bitmap does not mark
  // them), and the unit goes to the kvfs; the deletes ride the next drain.
  ASSERT_EQ(SectionAllocator::rebuild(test::make_geometry(setup), setup.tune, recs, 10, &b, &err), 0) << err;
  for (const auto& p : first) ASSERT_EQ(b->release(p.block, p.blocks, 20), 0);
  ASSERT_EQ(b->exclude_units({n - 1, busy}, &stale, &err), 0) << err;
  EXPECT_EQ(b->lent_units(), (std::vector<uint32_t>{busy, n - 1}));
  EXPECT_EQ(b->verify(), "");
  b->drain_records(&ops);
  bool deleted = false;
  for (const auto& op : ops) deleted |= op.kind == PersistOp::Kind::kDelete && op.eu == busy;
  EXPECT_TRUE(deleted) << "the lent unit's records are deleted with the next batch";
  for (const auto& op : ops) EXPECT_FALSE(op.kind == PersistOp::Kind::kPut && op.eu == busy);
  EXPECT_EQ(b->exclude_units({n - 1}, &stale, &err), -EIO) << "owned twice";
  // Allocations after the mount avoid both.
  for (uint64_t id = 3; id < 60; ++id) {
    std::vector<AllocPiece> pieces;
    if (b->allocate(req(100 << 10, 1, id, 30 + id), &pieces, &ev) < 0) break;
    for (uint32_t eu : eus_of(*b, pieces)) EXPECT_TRUE(eu != busy && eu != n - 1);
  }
  EXPECT_EQ(b->verify(), "");
}

// A lane's current unit whose records survived while the kvfs took the unit:
// the lane takes a new current unit.
TEST(SectionLending, ExcludingALanesCurrentUnitGivesTheLaneANewOne) {
  AllocSetup setup;
  auto a = test::make_allocator(setup);
  AllocEvents ev;
  std::vector<PersistOp> ops;
  Store store;
  std::vector<AllocPiece> obj;
  ASSERT_EQ(a->allocate(req(3000, 0, 1, 1), &obj, &ev), 0);
  a->drain_records(&ops);
  apply(&store, &ops);
  const uint32_t cur = *eus_of(*a, obj).begin();
  ASSERT_TRUE(a->erase_unit_info(cur).owned);
  std::unique_ptr<SectionAllocator> b;
  std::string err;
  ASSERT_EQ(SectionAllocator::rebuild(test::make_geometry(setup), setup.tune, {store.begin(), store.end()}, 5, &b,
                                      &err),
            0)
      << err;
  for (const auto& p : obj) ASSERT_EQ(b->release(p.block, p.blocks, 6), 0);
  std::vector<uint32_t> stale;
  ASSERT_EQ(b->exclude_units({cur}, &stale, &err), 0) << err;
  EXPECT_EQ(b->verify(), "");
  std::vector<AllocPiece> next;
  ASSERT_EQ(b->allocate(req(3000, 0, 2, 7), &next, &ev), 0);
  EXPECT_NE(*eus_of(*b, next).begin(), cur);
  EXPECT_EQ(b->verify(), "");
}

// The race of kvfs.md 2.5: the kvfs lends and gives back on its own thread
// while transactions allocate, free and drain under one lock. Seeded; the
// seed is printed. Run under TSan by qa/tsan.sh.
TEST(SectionLending, ConcurrentLendingAndAllocationKeepThePoolExact) {
  const uint64_t seed = test::test_seed(5150);
  AllocSetup setup;
  auto a = test::make_allocator(setup);
  std::mutex sections;  // what SsdSections::lock() is to a transaction
  std::atomic<bool> done{false};
  std::atomic<int> lends{0};
  std::vector<uint32_t> held;  // the lender's own
  std::thread lender([&] {
    std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
    while (!done) {
      if (held.empty() || rng() % 2) {
        if (a->lend_units(1 + rng() % 4, &held) > 0) ++lends;
      } else {
        std::vector<uint32_t> back(held.end() - std::min<size_t>(held.size(), 1 + rng() % 3), held.end());
        held.resize(held.size() - back.size());
        ASSERT_EQ(a->take_back_units(back), 0);
      }
      (void)a->free_erase_units();
      (void)a->consumed_blocks();
    }
  });
  std::vector<std::thread> workers;
  std::atomic<int> failures{0};
  BlockModel model;  // under `sections`
  for (int w = 0; w < 2; ++w) {
    workers.emplace_back([&, w] {
      std::mt19937_64 rng(seed + w);
      std::vector<PersistOp> ops;
      for (int i = 0; i < 3000; ++i) {
        std::lock_guard<std::mutex> l(sections);
        const uint64_t now = 1000 + i;
        if (model.objects().empty() || rng() % 100 < 55) {
          const uint64_t bytes = rng() % 6 == 0 ? 100 << 10 : 500 + rng() % 8000;
          const uint64_t id = (uint64_t(w) << 32) | uint64_t(i);
          std::vector<AllocPiece> pieces;
          AllocEvents ev;
          int used;
          if (a->allocate_with_fallback(req(bytes, bytes > 8192 ? 1 : 0, id, now), &pieces, &ev, &used) == 0)
            if (!model.add(id, bytes, pieces, setup.block_size)) ++failures;
        } else {
          auto it = model.objects().begin();
          std::advance(it, static_cast<long>(rng() % model.objects().size()));
          for (const auto& p : it->second.pieces)
            if (a->release(p.block, p.blocks, now) != 0) ++failures;
          model.remove(it->first);
        }
        if (i % 64 == 0) a->drain_records(&ops);
        if (i % 500 == 0 && !a->verify().empty()) ++failures;
      }
    });
  }
  for (auto& t : workers) t.join();
  done = true;
  lender.join();
  printf("seed %llu: %d lends beside %zu live objects\n", static_cast<unsigned long long>(seed), lends.load(),
         model.objects().size());
  EXPECT_EQ(failures.load(), 0) << "seed " << seed;
  EXPECT_EQ(a->verify(), "") << "seed " << seed;
  // No object lies in a unit the kvfs holds.
  const std::vector<uint32_t> lent = a->lent_units();
  const std::set<uint32_t> lent_set(lent.begin(), lent.end());
  EXPECT_EQ(lent_set, std::set<uint32_t>(held.begin(), held.end()));
  for (const auto& [id, o] : model.objects())
    for (uint32_t eu : eus_of(*a, o.pieces)) EXPECT_FALSE(lent_set.count(eu)) << "seed " << seed;
}

// --- SsdSections over RocksDB: the store's side --------------------------------

class SsdSectionsLending : public ::testing::Test {
 protected:
  void SetUp() override {
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, dir_.file("db"), &raw).ok());
    db_.reset(raw);
    std::string err;
    ASSERT_EQ(cfg_.set("hybridstore_ssd_block_size", "4096", &err), 0) << err;
    rocksdb::WriteBatch b;
    ASSERT_EQ(SsdSections::format(cfg_, kOffset, kBytes, &b, &err), 0) << err;
    ASSERT_TRUE(db_->Write(rocksdb::WriteOptions(), &b).ok());
  }
  int open(const SsdSections::Ranges& lent, std::unique_ptr<SsdSections>* out, std::string* err,
           const std::function<bool(uint64_t, uint64_t)>& marked = [](uint64_t, uint64_t) { return true; }) {
    return SsdSections::open(cfg_, db_.get(), kOffset, kBytes, marked, lent, out, err);
  }
  // One object of `len` bytes; its pieces, committed with their records.
  int put(SsdSections* s, uint64_t len, uint64_t owner, std::vector<SsdSections::Piece>* out) {
    ObjectPlacementKey key;
    int r = s->allocate(key, len, len, 0, owner, out, [](const std::vector<SsdSections::Piece>&) {});
    if (r < 0) return r;
    commit(s);
    return 0;
  }
  void commit(SsdSections* s) {
    rocksdb::WriteBatch b;
    std::vector<SsdSections::Region> regions;
    std::unique_lock<std::mutex> l(s->lock());
    s->finish_locked(&b, &regions);
    ASSERT_TRUE(db_->Write(rocksdb::WriteOptions(), &b).ok());
  }

  // The last erase unit: units lie at multiples of their size.
  static uint64_t top(uint64_t g) {
    const uint64_t base = (kOffset + g - 1) / g * g;
    return base + ((kOffset + kBytes - base) / g - 1) * g;
  }

  static constexpr uint64_t kOffset = 1 << 20, kBytes = 64ull << 20;
  test::TempDir dir_{"ssd-lending"};
  std::unique_ptr<rocksdb::DB> db_;
  Config cfg_;
};

TEST_F(SsdSectionsLending, LendsWholeUnitsWithoutTheLock) {
  std::unique_ptr<SsdSections> s;
  std::string err;
  ASSERT_EQ(open({}, &s, &err), 0) << err;
  const uint64_t g = s->lend_unit();
  ASSERT_GT(g, 0u);
  SsdSections::Ranges got;
  EXPECT_EQ(s->lend(g / 2, &got), -EINVAL);
  // A transaction holds the sections' lock (across drain and submit): a lend
  // must not wait for it.
  {
    std::unique_lock<std::mutex> l(s->lock());
    auto f = std::async(std::launch::async, [&] { return s->lend(3 * g, &got); });
    ASSERT_EQ(f.wait_for(std::chrono::seconds(20)), std::future_status::ready) << "a lend waited for the lock";
    EXPECT_EQ(f.get(), 0);
  }
  ASSERT_EQ(got.size(), 1u) << "adjacent units come back as one range";
  EXPECT_EQ(got[0].second, 3 * g);
  EXPECT_EQ(got[0].first % g, 0u);
  EXPECT_EQ(got[0].first + got[0].second, top(g) + g) << "from the top";
  EXPECT_EQ(s->lent(), got);
  EXPECT_EQ(s->verify(), "");
  EXPECT_EQ(s->take_back({{got[0].first + 4096, g}}), -EINVAL) << "not whole units";
  ASSERT_EQ(s->take_back(got), 0);
  EXPECT_TRUE(s->lent().empty());
}

TEST_F(SsdSectionsLending, OpenTakesTheLentUnitsOutAndRefusesAConflict) {
  std::unique_ptr<SsdSections> s;
  std::string err;
  ASSERT_EQ(open({}, &s, &err), 0) << err;
  const uint64_t g = s->lend_unit();
  std::vector<SsdSections::Piece> obj;
  ASSERT_EQ(put(s.get(), 256 << 10, 7, &obj), 0);
  const uint64_t busy = obj[0].offset / g * g;
  const uint64_t top = this->top(g);
  s.reset();
  // Object data the bitmap marks in a unit the kvfs owns.
  EXPECT_EQ(open({{top, g}, {busy, g}}, &s, &err), -EIO);
  EXPECT_NE(err.find("is owned by the KV file system and holds object data; run fsck"), std::string::npos) << err;
  EXPECT_EQ(open({{top + 4096, g}}, &s, &err), -EIO) << "not whole units";
  // Unmarked (the object's removal committed, its record delete did not):
  // the unit goes to the kvfs.
  ASSERT_EQ(open({{top, g}, {busy, g}}, &s, &err, [](uint64_t, uint64_t) { return false; }), 0) << err;
  EXPECT_EQ(s->lent(), (SsdSections::Ranges{{busy, g}, {top, g}}));
  EXPECT_EQ(s->verify(), "");
  EXPECT_EQ(s->live_bytes(), 0u);
  // Freed and lent survive a remount with the same chunks.
  commit(s.get());
  s.reset();
  ASSERT_EQ(open({{top, g}, {busy, g}}, &s, &err), 0) << err;
  EXPECT_EQ(s->verify(), "");
  std::vector<SsdSections::Piece> more;
  ASSERT_EQ(put(s.get(), 256 << 10, 8, &more), 0);
  for (const auto& p : more) EXPECT_TRUE(p.offset + p.length <= busy || p.offset >= busy + g);
}

TEST_F(SsdSectionsLending, TheFloorMakesDataFailBeforeTheKvFsDoes) {
  std::unique_ptr<SsdSections> s;
  std::string err;
  ASSERT_EQ(open({}, &s, &err), 0) << err;
  const uint64_t g = s->lend_unit();
  s->set_floor(2 * g + g / 2);  // two whole units
  std::vector<SsdSections::Piece> obj;
  uint64_t owner = 1;
  while (put(s.get(), 1 << 20, owner, &obj) == 0) ++owner;
  // Then small objects into what is left, one unit at a time.
  while (put(s.get(), 4096, owner, &obj) == 0) ++owner;
  SsdSections::Ranges got;
  ASSERT_EQ(s->lend(8 * g, &got), 0);
  uint64_t lent = 0;
  for (const auto& r : got) lent += r.second;
  EXPECT_EQ(lent, 2 * g) << "data left exactly the floor";
  EXPECT_EQ(s->verify(), "");
}

}  // namespace
}  // namespace hybridstore
