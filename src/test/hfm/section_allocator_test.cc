// The section allocator: placement by the segment map, sealing, erase-block
// collection, hotness groups, holes and the free pool.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "allocator_fixture.h"
#include "hscommon/config.h"
#include "hybridstore/sections/section_report.h"
#include "hybridstore/sections/section_rules.h"

namespace hybridstore {
namespace {

using test::AllocSetup;
using test::BlockModel;
using test::make_allocator;

AllocRequest req(uint64_t bytes, int section = 0, uint64_t now = 0, uint32_t group = 0,
                 uint64_t owner = 0) {
  AllocRequest r;
  r.bytes = bytes;
  r.section = section;
  r.group = group;
  r.owner = owner;
  r.hint = owner;
  r.now_us = now;
  r.born_us = now;
  return r;
}

// Random creates and removes against the brute-force model, checking every
// invariant of the allocator after each step.
void random_workload(const AllocSetup& setup, uint64_t seed, int steps, bool fallback,
                     bool direct = false) {
  auto a = make_allocator(setup);
  ASSERT_TRUE(a);
  SectionRouter router;
  std::string err;
  ASSERT_EQ(SectionRouter::make(a->geometry().sections, setup.block_size, "", &router, &err), 0);
  BlockModel model;
  std::mt19937_64 rng(seed);
  std::vector<AllocPiece> pieces;
  AllocEvents ev;
  uint64_t next_id = 1, now = 0;
  std::set<uint64_t> written_blocks;  // blocks inside emitted regions
  std::set<uint64_t> direct_blocks;   // live blocks of units handed over written
  for (int step = 0; step < steps; ++step) {
    now += 1000;
    bool create = model.objects().empty() || rng() % 100 < 55;
    if (create) {
      uint64_t bytes = rng() % 8 == 0 ? 1 + rng() % (1500 << 10) : 500 + rng() % 12000;
      int section = router.route_by_size(bytes);
      AllocRequest r = req(bytes, section, now, static_cast<uint32_t>(rng() % setup.groups),
                           next_id);
      r.direct = direct && next_id % 2 == 0;
      int used = section, rc;
      rc = fallback ? a->allocate_with_fallback(r, &pieces, &ev, &used)
                    : a->allocate(r, &pieces, &ev);
      if (rc == 0) {
        ASSERT_TRUE(model.add(next_id, bytes, pieces, setup.block_size));
        uint64_t sum = 0;
        for (const auto& p : pieces) {
          sum += p.bytes;
          ASSERT_TRUE(!p.direct || r.direct);
          if (p.direct)
            for (uint64_t b = p.block; b < p.block + p.blocks; ++b) direct_blocks.insert(b);
        }
        ASSERT_EQ(sum, bytes);
        ++next_id;
      } else {
        ASSERT_EQ(rc, -ENOSPC);
        ASSERT_TRUE(pieces.empty());
      }
    } else {
      auto it = model.objects().begin();
      std::advance(it, rng() % model.objects().size());
      uint64_t id = it->first;
      for (const auto& p : it->second.pieces) {
        ASSERT_EQ(a->release(p.block, p.blocks, now), 0);
        for (uint64_t b = p.block; b < p.block + p.blocks; ++b) direct_blocks.erase(b);
      }
      model.remove(id);
    }
    a->collect(&ev);
    if (step % 97 == 0) a->tick(now, &ev);
    for (const auto& r : ev.regions) {
      ASSERT_EQ(r.block % r.blocks, 0u) << "region not aligned to its size";
      auto d = direct_blocks.lower_bound(r.block);
      ASSERT_TRUE(d == direct_blocks.end() || *d >= r.block + r.blocks)
          << "a region over live data of a unit handed over written, step " << step;
      for (const auto& [b, n] : r.extents) {
        ASSERT_GE(b, r.block);
        ASSERT_LE(b + n, r.block + r.blocks);
      }
    }
    ev.clear();
    ASSERT_EQ(test::total_live_blocks(*a), model.live_blocks());
    std::string v = a->verify();
    ASSERT_EQ(v, "") << "step " << step;
    // The constant-time totals agree with the scan.
    uint64_t live = 0, consumed = 0;
    for (const auto& u : a->usage()) {
      live += u.live_blocks;
      consumed += u.consumed_blocks;
    }
    ASSERT_EQ(a->live_blocks(), live) << "step " << step;
    ASSERT_EQ(a->consumed_blocks(), consumed) << "step " << step;
  }
  a->flush(now, &ev);
  ASSERT_EQ(a->verify(), "");
  for (const auto& [id, o] : model.objects())
    for (const auto& p : o.pieces) ASSERT_EQ(a->release(p.block, p.blocks, now), 0);
  ASSERT_EQ(a->verify(), "");
  EXPECT_EQ(a->free_erase_units() + (a->erase_unit_count() - a->free_erase_units()),
            a->erase_unit_count());
  for (const auto& u : a->usage()) EXPECT_EQ(u.live_blocks, 0u);
}

TEST(SectionAllocator, RandomWorkloadKeepsInvariantsDefaultSections) {
  AllocSetup s;
  random_workload(s, 1, 3000, true);
}

TEST(SectionAllocator, RandomWorkloadKeepsInvariantsWithUnitsHandedOverWritten) {
  AllocSetup s;
  random_workload(s, 5, 3000, true, true);
  s.ssd_bytes = 8 << 20;  // under pressure: holes and fallbacks take large objects too
  s.sections = "small:8K:rho1,mid:64K:rho2,large:512K:rho3:delta32:holes=fill";
  random_workload(s, 6, 3000, true, true);
}

TEST(SectionAllocator, RandomWorkloadKeepsInvariantsHfmPolicyNoGaps) {
  AllocSetup s;
  s.sections = "small:8K:rho1:hfm:gaps=off,mid:64K:rho2:hfm:gaps=off,large:512K:rho3:hfm";
  random_workload(s, 2, 3000, true);
}

TEST(SectionAllocator, RandomWorkloadKeepsInvariantsUnderPressure) {
  AllocSetup s;
  s.ssd_bytes = 8 << 20;  // fills up: exercises ENOSPC, hole filling, staging caps
  s.sections = "small:8K:rho1,mid:64K:rho3:delta4:theta2,large:512K:rho3:delta32";
  s.tune.max_staged_units = 1;
  random_workload(s, 3, 4000, true);
}

TEST(SectionAllocator, RandomWorkloadKeepsInvariantsCleanHolesGroupsNoEraseBlock) {
  AllocSetup s;
  s.ssd_bytes = 16 << 20;
  s.erase_block = 0;
  s.groups = 3;
  s.first_block = 77;  // unaligned range start
  s.sections = "small:4K:rho1:holes=clean,mid:32K:rho2:holes=clean,large:256K:rho3:delta8";
  random_workload(s, 4, 4000, false);
}

TEST(SectionAllocator, SmallObjectsStartAtTheMapPosition) {
  AllocSetup s;
  s.sections = "small:8K:rho1:gaps=off";
  s.erase_block = 0;
  auto a = make_allocator(s);
  std::vector<AllocPiece> p;
  AllocEvents ev;
  ASSERT_EQ(a->allocate(req(3 * 1024), &p, &ev), 0);  // blocks 0..2, pos 2 -> next 4
  uint64_t base = p[0].block;
  EXPECT_EQ(base % 8, 0u);
  ASSERT_EQ(a->allocate(req(2 * 1024), &p, &ev), 0);
  EXPECT_EQ(p[0].block, base + 4);  // map(2) = segment 2 at block 4
  // The extent is now full at 6 blocks: pos 5 -> next start 8.
  ASSERT_EQ(a->allocate(req(1024), &p, &ev), 0);
  EXPECT_EQ(p[0].block, base + 8);  // a fresh extent
}

TEST(SectionAllocator, GapsTakeSmallObjectsBeforeTails) {
  AllocSetup s;
  s.sections = "small:8K:rho1";
  s.erase_block = 64 << 10;  // the sealed extent stays staged until its unit is full
  auto a = make_allocator(s);
  std::vector<AllocPiece> p;
  AllocEvents ev;
  ASSERT_EQ(a->allocate(req(5 * 1024), &p, &ev), 0);  // [0,5), next start 8: gap [5,8)
  uint64_t base = p[0].block;
  ASSERT_EQ(a->allocate(req(2 * 1024), &p, &ev), 0);
  EXPECT_EQ(p[0].block, base + 5);
  ASSERT_EQ(a->allocate(req(1024), &p, &ev), 0);
  EXPECT_EQ(p[0].block, base + 7);
  // Sealed at the full tail and every block used; flushing writes its unit.
  a->flush(0, &ev);
  ASSERT_EQ(ev.regions.size(), 1u);
  EXPECT_EQ(ev.regions[0].block, base);
  ASSERT_EQ(ev.regions[0].extents.size(), 1u);
  auto u = a->usage();
  EXPECT_EQ(u[0].live_blocks, 8u);
  EXPECT_EQ(u[0].hole_blocks, 56u);  // only the 7 extents flush padded, none in ours
}

TEST(SectionAllocator, ThetaSealsAnExtentWhoseTailIsTooShort) {
  AllocSetup s;
  s.sections = "bump:16K:rho3:delta2:theta4:gaps=off";
  s.erase_block = 0;
  auto a = make_allocator(s);
  std::vector<AllocPiece> p;
  AllocEvents ev;
  ASSERT_EQ(a->allocate(req(12 * 1024), &p, &ev), 0);  // free tail 4: stays open
  EXPECT_TRUE(ev.sealed.empty());
  EXPECT_EQ(a->map_table(0, 0).size(), 1u);
  ASSERT_EQ(a->allocate(req(1024), &p, &ev), 0);  // free tail 3 < theta: sealed
  ASSERT_EQ(ev.sealed.size(), 1u);
  EXPECT_TRUE(ev.regions.empty());  // the write is collected off the allocation path
  a->collect(&ev);
  ASSERT_EQ(ev.regions.size(), 1u);
  EXPECT_FALSE(ev.regions[0].forced);
  EXPECT_EQ(a->map_table(0, 0).size(), 0u);
}

TEST(SectionAllocator, StagingTimeoutWritesThePartlyFilledUnit) {
  AllocSetup s;
  s.sections = "small:8K:rho1";
  s.erase_block = 64 << 10;  // 8 extents per write unit
  s.tune.staging_timeout_us = 1'000'000;
  auto a = make_allocator(s);
  std::vector<AllocPiece> p;
  AllocEvents ev;
  ASSERT_EQ(a->allocate(req(3000, 0, 100), &p, &ev), 0);
  a->tick(100 + 999'999, &ev);
  EXPECT_TRUE(ev.regions.empty());
  a->tick(100 + 1'000'000, &ev);
  ASSERT_EQ(ev.regions.size(), 1u);
  const WriteRegion& r = ev.regions[0];
  EXPECT_TRUE(r.forced);
  EXPECT_EQ(r.blocks, 64u);
  EXPECT_EQ(r.block % 64, 0u);
  ASSERT_EQ(r.extents.size(), 1u);
  EXPECT_EQ(r.extents[0].first, p[0].block);
  EXPECT_EQ(a->verify(), "");
  // The unit is written: the rest of it is holes; new data goes to the next unit.
  ASSERT_EQ(a->allocate(req(3000, 0, 2'000'000), &p, &ev), 0);
  EXPECT_GE(p[0].block, r.block + r.blocks);
}

TEST(SectionAllocator, ExtentsAreCollectedUntilAWholeEraseBlock) {
  AllocSetup s;
  s.sections = "small:8K:rho1";
  s.erase_block = 64 << 10;
  auto a = make_allocator(s);
  std::vector<AllocPiece> p;
  AllocEvents ev;
  std::vector<uint64_t> blocks;
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(a->allocate(req(8 * 1024), &p, &ev), 0);
    blocks.push_back(p[0].block);
    a->collect(&ev);
    if (i < 7) {
      EXPECT_TRUE(ev.regions.empty()) << "written before the erase block was full";
      EXPECT_EQ(ev.sealed.size(), size_t(i + 1));
    }
  }
  ASSERT_EQ(ev.regions.size(), 1u);
  const WriteRegion& r = ev.regions[0];
  EXPECT_FALSE(r.forced);
  EXPECT_EQ(r.blocks, 64u);
  EXPECT_EQ(r.block, blocks[0]);
  EXPECT_EQ(r.block % 64, 0u);
  ASSERT_EQ(r.extents.size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(r.extents[i].first, blocks[i]);
}

TEST(SectionAllocator, AnEraseUnitHoldsOneHotnessGroupOnly) {
  AllocSetup s;
  s.groups = 4;
  s.ssd_bytes = 256 << 20;
  auto a = make_allocator(s);
  std::vector<AllocPiece> p;
  AllocEvents ev;
  std::mt19937_64 rng(5);
  std::map<uint32_t, uint32_t> eu_group;
  for (int i = 0; i < 3000; ++i) {
    uint32_t g = static_cast<uint32_t>(rng() % 4);
    uint64_t bytes = 500 + rng() % 60000;
    int sec = bytes <= 8192 ? 0 : 1;
    ASSERT_EQ(a->allocate(req(bytes, sec, i, g, i), &p, &ev), 0);
    for (const auto& piece : p) {
      uint32_t eu = static_cast<uint32_t>(piece.block / a->erase_unit_blocks());
      auto [it, fresh] = eu_group.emplace(eu, g);
      ASSERT_EQ(it->second, g) << "erase unit " << eu << " mixes groups";
      ASSERT_EQ(a->erase_unit_info(eu).group, g);
    }
  }
  a->flush(3000, &ev);
  for (const auto& r : ev.regions) {
    uint32_t eu = static_cast<uint32_t>(r.block / a->erase_unit_blocks());
    EXPECT_EQ(eu_group.at(eu), r.group);
  }
}

TEST(SectionAllocator, LargeObjectsTakeWholeExtentsAndPlaceTheRemainder) {
  AllocSetup s;
  s.sections = "large:64K:rho3:delta4";
  s.erase_block = 0;
  s.ssd_bytes = 16 << 20;
  auto a = make_allocator(s);
  std::vector<AllocPiece> p;
  AllocEvents ev;
  ASSERT_EQ(a->allocate(req(20 * 1024), &p, &ev), 0);  // leaves an open tail of 44 blocks
  uint64_t small_block = p[0].block;
  ASSERT_EQ(a->allocate(req(2 * 65536 + 30 * 1024 - 100), &p, &ev), 0);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].blocks, 128u);  // two whole extents, contiguous
  EXPECT_EQ(p[0].bytes, 2u * 65536);
  EXPECT_EQ(p[1].blocks, 30u);   // the remainder went into the open tail
  EXPECT_EQ(p[1].bytes, 30u * 1024 - 100);
  EXPECT_EQ(p[1].block, small_block + 20);
  EXPECT_EQ(a->verify(), "");
}

TEST(SectionAllocator, WholeUnitsOfADirectRequestAreHandedOverWritten) {
  AllocSetup s;
  s.sections = "small:8K:rho1,large:64K:rho3:delta4";
  s.erase_block = 256 << 10;  // a write unit = 4 large extents = 256 blocks
  s.ssd_bytes = 16 << 20;
  auto a = make_allocator(s);
  std::vector<AllocPiece> p;
  AllocEvents ev;
  // 1 MiB + 10 KiB: four whole units, the remainder down in `small`.
  AllocRequest r = req((1 << 20) + 10 * 1024, 1, 1000, 0, 7);
  r.direct = true;
  ASSERT_EQ(a->allocate(r, &p, &ev), 0);
  ASSERT_GE(p.size(), 2u);
  EXPECT_TRUE(p[0].direct);
  EXPECT_EQ(p[0].blocks, 1024u);
  EXPECT_EQ(p[0].bytes, 1u << 20);
  EXPECT_EQ(p[0].block % 256, 0u);
  for (size_t i = 1; i < p.size(); ++i) EXPECT_FALSE(p[i].direct);
  a->collect(&ev);
  for (const auto& reg : ev.regions)
    EXPECT_TRUE(reg.block + reg.blocks <= p[0].block || reg.block >= p[0].block + p[0].blocks)
        << "a region over units handed over written";
  EXPECT_EQ(a->verify(), "");
  // Without `direct` the same request stages its units and regions follow.
  AllocRequest staged = req((1 << 20), 1, 2000, 0, 8);
  ASSERT_EQ(a->allocate(staged, &p, &ev), 0);
  for (const auto& piece : p) EXPECT_FALSE(piece.direct);
  ev.clear();
  a->collect(&ev);
  EXPECT_EQ(ev.regions.size(), 4u);
  // Released, a handed-over unit is free space like any written one.
  ASSERT_EQ(a->release(p[0].block, p[0].blocks, 3000), 0);
  EXPECT_EQ(a->verify(), "");
}

TEST(SectionAllocator, ADirectRequestStagesUnitsItSharesWithOthers) {
  AllocSetup s;
  s.sections = "large:64K:rho3:delta4";
  s.erase_block = 256 << 10;
  s.ssd_bytes = 16 << 20;
  auto a = make_allocator(s);
  std::vector<AllocPiece> p;
  AllocEvents ev;
  // A small object opens the first unit; a large direct one (10 extents)
  // fills the rest of it (3 extents, staged: the unit is shared), one whole
  // unit (direct) and 3 extents of the next (staged: not whole).
  ASSERT_EQ(a->allocate(req(20 * 1024, 0, 0, 0, 1), &p, &ev), 0);
  AllocRequest r = req(640 << 10, 0, 1000, 0, 2);
  r.direct = true;
  ASSERT_EQ(a->allocate(r, &p, &ev), 0);
  uint64_t direct_blocks = 0, total = 0;
  for (const auto& piece : p) {
    total += piece.blocks;
    if (!piece.direct) continue;
    direct_blocks += piece.blocks;
    EXPECT_EQ(piece.block % 256, 0u) << "a direct piece not on a unit";
    EXPECT_EQ(piece.blocks % 256, 0u);
  }
  EXPECT_EQ(total, 640u);
  EXPECT_EQ(direct_blocks, 256u);
  EXPECT_EQ(a->verify(), "");
}

TEST(SectionAllocator, ReleaseRejectsRangesThatAreNotLive) {
  AllocSetup s;
  auto a = make_allocator(s);
  std::vector<AllocPiece> p;
  AllocEvents ev;
  ASSERT_EQ(a->allocate(req(4000), &p, &ev), 0);
  std::string before = a->dump();
  EXPECT_EQ(a->release(p[0].block, p[0].blocks + 1, 0), -EINVAL);  // runs past the object
  EXPECT_EQ(a->release(p[0].block + 100000, 1, 0), -EINVAL);       // a free unit
  EXPECT_EQ(a->release(p[0].block, 0, 0), -EINVAL);
  EXPECT_EQ(a->release(UINT64_MAX - 3, 2, 0), -EINVAL);
  EXPECT_EQ(a->dump(), before);
  ASSERT_EQ(a->release(p[0].block, p[0].blocks, 0), 0);
  EXPECT_EQ(a->release(p[0].block, p[0].blocks, 0), -EINVAL);  // double free
  EXPECT_EQ(a->verify(), "");
}

TEST(SectionAllocator, PartialReleaseKeepsTheRestOfThePiece) {
  AllocSetup s;
  s.sections = "bump:64K:rho3:delta2";
  auto a = make_allocator(s);
  std::vector<AllocPiece> p;
  AllocEvents ev;
  ASSERT_EQ(a->allocate(req(10 * 1024 - 10), &p, &ev), 0);
  ASSERT_EQ(a->release(p[0].block + 2, 3, 0), 0);  // punch a hole in the middle
  EXPECT_EQ(a->verify(), "");
  EXPECT_EQ(test::total_live_blocks(*a), 7u);
  EXPECT_EQ(a->usage()[0].live_bytes, 7u * 1024 - 10);
  ASSERT_EQ(a->release(p[0].block, 2, 0), 0);
  ASSERT_EQ(a->release(p[0].block + 5, 5, 0), 0);
  EXPECT_EQ(a->verify(), "");
  EXPECT_EQ(test::total_live_blocks(*a), 0u);
}

TEST(SectionAllocator, AnEmptiedEraseUnitReturnsToThePool) {
  AllocSetup s;
  s.sections = "small:8K:rho1";
  s.erase_block = 64 << 10;
  s.ssd_bytes = 1 << 20;  // 16 units
  auto a = make_allocator(s);
  std::vector<AllocPiece> p;
  AllocEvents ev;
  std::vector<AllocPiece> all;
  for (int i = 0; i < 16; ++i) {  // two units of whole extents
    ASSERT_EQ(a->allocate(req(8192), &p, &ev), 0);
    all.push_back(p[0]);
  }
  EXPECT_EQ(a->free_erase_units(), 14u);
  for (int i = 0; i < 8; ++i) ASSERT_EQ(a->release(all[i].block, all[i].blocks, 0), 0);
  EXPECT_EQ(a->free_erase_units(), 15u);
  EXPECT_EQ(a->verify(), "");
}

// Fills a small SSD with 4K objects, frees every other one, and allocates again.
struct HoleRun {
  int in_place = 0;
  int failed = 0;
};
HoleRun refill_after_frees(const std::string& sections) {
  AllocSetup s;
  s.sections = sections;
  s.erase_block = 64 << 10;
  s.ssd_bytes = 1 << 20;
  auto a = make_allocator(s);
  std::vector<AllocPiece> p;
  AllocEvents ev;
  std::vector<AllocPiece> all;
  while (a->allocate(req(4096), &p, &ev) == 0) all.push_back(p[0]);
  EXPECT_EQ(all.size(), 256u);  // every block used
  a->collect(&ev);              // the full units are written
  for (size_t i = 0; i < all.size(); i += 2)
    EXPECT_EQ(a->release(all[i].block, all[i].blocks, 0), 0);
  HoleRun r;
  for (int i = 0; i < 128; ++i) {
    if (a->allocate(req(4096), &p, &ev) != 0) {
      ++r.failed;
      continue;
    }
    r.in_place += p[0].in_place;
  }
  EXPECT_EQ(a->verify(), "");
  return r;
}

TEST(SectionAllocator, HolesFillInPlaceWhenCleanSpaceRunsOut) {
  HoleRun r = refill_after_frees("small:8K:rho1:holes=fill");
  EXPECT_EQ(r.failed, 0);
  EXPECT_EQ(r.in_place, 128);
}

TEST(SectionAllocator, CleanHoleModeLeavesHolesToTheCleaner) {
  HoleRun r = refill_after_frees("small:8K:rho1:holes=clean");
  EXPECT_EQ(r.failed, 128);
  EXPECT_EQ(r.in_place, 0);
}

TEST(SectionAllocator, EnospcLeavesNothingAllocated) {
  AllocSetup s;
  s.sections = "large:64K:rho3:delta4";
  s.erase_block = 0;
  s.ssd_bytes = 1 << 20;  // 16 extents
  auto a = make_allocator(s);
  std::vector<AllocPiece> p;
  AllocEvents ev;
  ASSERT_EQ(a->allocate(req(10 * 65536), &p, &ev), 0);
  EXPECT_EQ(a->allocate(req(7 * 65536), &p, &ev), -ENOSPC);
  EXPECT_TRUE(p.empty());
  EXPECT_EQ(test::total_live_blocks(*a), 640u);
  EXPECT_EQ(a->verify(), "");
  EXPECT_EQ(a->allocate(req(6 * 65536), &p, &ev), 0);
}

TEST(SectionAllocator, FallbackTakesTheNearestOtherSection) {
  AllocSetup s;
  s.sections = "small:8K:rho1,mid:64K:rho2,large:512K:rho3";
  s.ssd_bytes = 2 << 20;  // four 512K units
  s.erase_block = 0;
  auto a = make_allocator(s);
  EXPECT_EQ(a->fallback_order(0), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(a->fallback_order(2), (std::vector<int>{2, 1, 0}));
  std::vector<AllocPiece> p;
  AllocEvents ev;
  for (int i = 0; i < 4; ++i) ASSERT_EQ(a->allocate(req(512 << 10, 2), &p, &ev), 0);
  int used = -1;
  EXPECT_EQ(a->allocate(req(4000, 0), &p, &ev), -ENOSPC);
  EXPECT_EQ(a->allocate_with_fallback(req(4000, 0), &p, &ev, &used), -ENOSPC);
  ASSERT_EQ(a->release(p.empty() ? 0 : p[0].block, 0, 0), -EINVAL);
}

TEST(SectionAllocator, RejectsBadRequestsAndGeometry) {
  AllocSetup s;
  s.sections = "small:8K:rho1,cold:bypass";
  auto a = make_allocator(s);
  std::vector<AllocPiece> p;
  AllocEvents ev;
  EXPECT_EQ(a->allocate(req(0), &p, &ev), -EINVAL);
  EXPECT_EQ(a->allocate(req(100, 1), &p, &ev), -EINVAL);  // bypass
  EXPECT_EQ(a->allocate(req(100, 5), &p, &ev), -EINVAL);
  EXPECT_EQ(a->allocate(req(100, 0, 0, 3), &p, &ev), -EINVAL);  // no such group
  AllocatorGeometry g = test::make_geometry(s);
  std::unique_ptr<SectionAllocator> b;
  std::string err;
  g.blocks = 10;
  EXPECT_EQ(SectionAllocator::create(g, {}, &b, &err), -EINVAL);
  g = test::make_geometry(s);
  g.erase_block_bytes = 3000;
  EXPECT_EQ(SectionAllocator::create(g, {}, &b, &err), -EINVAL);
}


TEST(SectionAllocator, RemainderCascadesToTheNextSmallerSection) {
  AllocSetup s;
  s.sections = "small:8K:rho1,mid:64K:rho3:delta4,large:512K:rho3:delta32";
  s.ssd_bytes = 16 << 20;
  auto a = make_allocator(s);
  std::vector<AllocPiece> p;
  AllocEvents ev;
  ASSERT_EQ(a->allocate(req((512 << 10) + (70 << 10) - 10, 2), &p, &ev), 0);
  auto section_at = [&](uint64_t block) {
    return a->erase_unit_info(static_cast<uint32_t>(block / a->erase_unit_blocks())).section;
  };
  // The whole 512K extent and the whole 64K mid extent of the 70K remainder
  // happen to be adjacent units: one piece. The last 6K go to the small section.
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].blocks, 512u + 64u);
  EXPECT_EQ(section_at(p[0].block), 2);
  EXPECT_EQ(section_at(p[0].block + 512), 1);
  EXPECT_EQ(section_at(p[1].block), 0);
  EXPECT_EQ(p[1].blocks, 6u);
  EXPECT_EQ(p[1].bytes, 6u * 1024 - 10);
  // remainder=fresh keeps the papers' rule: the head of one more clean extent.
  s.sections = "small:8K:rho1,large:512K:rho3:delta32:remainder=fresh";
  auto b = make_allocator(s);
  ASSERT_EQ(b->allocate(req((512 << 10) + 3000, 1), &p, &ev), 0);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[1].block, p[0].block + 512);  // the next clean extent, from its head
  EXPECT_EQ(p[1].blocks, 3u);
  EXPECT_EQ(b->map_table(1, 0).size(), 1u);  // its tail is in the map table
  EXPECT_EQ(a->verify(), "");
  EXPECT_EQ(b->verify(), "");
}

TEST(SectionAllocator, StagingCapWritesTheOldestUnitPartlyFilled) {
  AllocSetup s;
  s.sections = "bump:8K:rho3:delta2";
  s.erase_block = 16 << 10;  // two extents per write unit
  s.tune.max_staged_units = 1;
  auto a = make_allocator(s);
  std::vector<AllocPiece> p;
  AllocEvents ev;
  ASSERT_EQ(a->allocate(req(1024), &p, &ev), 0);  // extent A stays open in unit 0
  uint64_t first = p[0].block;
  // Whole extents: B completes unit 0 but A keeps it open; C and D fill
  // unit 1; E starts unit 2, one more than the cap allows: unit 0 is forced.
  for (int i = 0; i < 4; ++i) ASSERT_EQ(a->allocate(req(8192), &p, &ev), 0);
  ASSERT_EQ(ev.regions.size(), 1u);
  EXPECT_TRUE(ev.regions[0].forced);
  EXPECT_EQ(ev.regions[0].block, first);
  EXPECT_EQ(ev.regions[0].extents.size(), 2u);
  a->collect(&ev);  // unit 1 completed normally
  ASSERT_EQ(ev.regions.size(), 2u);
  EXPECT_FALSE(ev.regions[1].forced);
  EXPECT_EQ(a->verify(), "");
}

TEST(SectionAllocator, FlushWritesEverythingStaged) {
  AllocSetup s;
  auto a = make_allocator(s);
  std::vector<AllocPiece> p;
  AllocEvents ev;
  std::mt19937_64 rng(9);
  for (int i = 0; i < 500; ++i) ASSERT_EQ(a->allocate(req(500 + rng() % 9000), &p, &ev), 0);
  a->flush(0, &ev);
  for (const auto& u : a->usage()) {
    EXPECT_EQ(u.extents_open, 0u) << u.name;
    EXPECT_EQ(u.extents_sealed, 0u) << u.name;
  }
  EXPECT_EQ(a->verify(), "");
}

TEST(SectionAllocator, ReportShowsEverySection) {
  AllocSetup s;
  s.sections = "small:8K:rho1,mid:64K:rho2,cold:bypass";
  auto a = make_allocator(s);
  std::vector<AllocPiece> p;
  AllocEvents ev;
  ASSERT_EQ(a->allocate(req(4000), &p, &ev), 0);
  std::string r = format_section_report(*a);
  EXPECT_NE(r.find("small"), std::string::npos);
  EXPECT_NE(r.find("rho2"), std::string::npos);
  EXPECT_NE(r.find("bypass"), std::string::npos);
  EXPECT_NE(r.find("total"), std::string::npos);
}

TEST(SectionAllocator, GeometryAndTuningComeFromTheRegistry) {
  Config cfg;
  std::string err;
  ASSERT_EQ(cfg.set("hybridstore_ssd_sections", "a:16K:rho2,b:bypass", &err), 0) << err;
  ASSERT_EQ(cfg.set("hybridstore_ssd_hotness_groups", "3", &err), 0) << err;
  ASSERT_EQ(cfg.set("hybridstore_ssd_staging_timeout", "2.5", &err), 0) << err;
  AllocatorGeometry g;
  ASSERT_EQ(make_allocator_geometry(cfg, 1 << 20, 64 << 20, &g, &err), 0) << err;
  EXPECT_EQ(g.block_size, 256u);
  EXPECT_EQ(g.first_block, (1u << 20) / 256);
  EXPECT_EQ(g.groups, 3u);
  ASSERT_EQ(g.sections.size(), 2u);
  EXPECT_EQ(g.sections[0].extent_blocks, 64u);
  EXPECT_EQ(AllocatorTuning::from_config(cfg).staging_timeout_us, 2'500'000u);
  std::unique_ptr<SectionAllocator> a;
  EXPECT_EQ(SectionAllocator::create(g, AllocatorTuning::from_config(cfg), &a, &err), 0) << err;
  EXPECT_EQ(make_allocator_geometry(cfg, 100, 64 << 20, &g, &err), -EINVAL);
  ASSERT_EQ(cfg.set("hybridstore_ssd_sections", "a:12K:rho2", &err), 0);
  EXPECT_EQ(make_allocator_geometry(cfg, 0, 64 << 20, &g, &err), -EINVAL);
  EXPECT_NE(err.find("hybridstore_ssd_sections"), std::string::npos);
}

}  // namespace
}  // namespace hybridstore
