// Shared by the kvfs log tests: a sample of every record type, and a seeded
// generator of valid record batches (it checks each record against a
// KvFsState of its own, so what it hands out always applies).
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "hybridstore/kvfs/kvfs_log.h"
#include "hybridstore/kvfs/kvfs_state.h"
#include "kvfs/kvfs_test_util.h"

namespace hybridstore::test {

inline KvFsGeometry test_geometry() { return KvFsGeometry{kB, kA, kG, kHead, kDevSize}; }

// One record of each op, in an order that applies from an empty state whose
// log starts at test_super()'s segment.
inline std::vector<KvRecord> sample_records() {
  KvUpdate inline_tail{16, 5000, 10, 0, {{2 << 20, kA}}, KvTailKind::kInline, std::string(5000 % kB, 't')};
  KvUpdate in_data{17, 8192, 11, 0, {{(2 << 20) + kA, kA}}, KvTailKind::kInData, ""};
  return {KvInit{test_uuid(0x11), kB, kA, kG},
          KvGrant{{kHead, 4 * kG}},
          KvGrant{{kHead + 5 * kG, kG}},
          KvMkdir{"db"},
          KvCreate{"db", "000001.log", 16},
          inline_tail,
          KvCreate{"db", "MANIFEST-000002", 17},
          in_data,
          KvRename{"db", "MANIFEST-000002", "db", "CURRENT"},
          KvJournal{{{3 << 20, 2 * kA}}},
          KvCreate{"db", "LOCK", 18},
          KvUnlink{"db", "LOCK"},
          KvMkdir{"tmp"},
          KvRmdir{"tmp"},
          KvReturn{{kHead + 5 * kG, kG}},
          KvNext{{(4 << 20), kA}},
          KvSnapshotDone{}};
}

// Batches of valid records for a log that starts at test_super()'s segment:
// the first batch is INIT and a GRANT of [kHead, kHead + 15 G), then
// creates, updates (appending extents, inline tails), renames and unlinks.
// Extents and segments come from one bump pointer, so they never collide.
class KvWorkload {
 public:
  explicit KvWorkload(uint64_t seed) : rng_(seed), state_(test_uuid(0x11), test_geometry()) {
    std::string why;
    EXPECT_EQ(state_.begin_log(test_super().log_segment, &why), 0) << why;
  }

  std::vector<KvRecord> first_batch() {
    std::vector<KvRecord> b = {KvInit{test_uuid(0x11), kB, kA, kG}, KvGrant{{kHead, 15 * kG}}, KvMkdir{"db"}};
    for (const auto& r : b) apply(r);
    return b;
  }

  std::vector<KvRecord> batch(size_t n) {
    std::vector<KvRecord> b;
    while (b.size() < n) {
      KvRecord r = next();
      apply(r);
      b.push_back(std::move(r));
    }
    return b;
  }

  // A fresh extent of `len` bytes for a segment or a file.
  KvFsExtent take(uint64_t len) {
    KvFsExtent e{bump_, len};
    bump_ += len;
    return e;
  }
  // The writer's segment source. The NEXT records naming them never reach
  // this generator's state: the bump pointer alone keeps them apart.
  int next_segment(KvFsExtent* seg, std::string*) {
    *seg = take(kA);
    return 0;
  }

 private:
  void apply(const KvRecord& r) {
    std::string why;
    ASSERT_EQ(state_.apply(r, seq_++, &why), 0) << why;
  }

  KvRecord next() {
    const auto& names = state_.dirs().at("db");
    const unsigned pick = std::uniform_int_distribution<unsigned>(0, 9)(rng_);
    if (names.empty() || pick < 3) return KvCreate{"db", "f" + std::to_string(counter_++), state_.next_ino()};
    auto it = names.begin();
    std::advance(it, std::uniform_int_distribution<size_t>(0, names.size() - 1)(rng_));
    if (pick < 8) {
      const KvInode& ino = state_.inodes().at(it->second);
      KvUpdate u;
      u.ino = it->second;
      u.keep = ino.extents.size();
      u.extents.push_back(take(kA));
      uint64_t covered = 0;
      for (const auto& e : ino.extents) covered += e.length;
      u.size = covered + std::uniform_int_distribution<uint64_t>(1, kA)(rng_);
      u.mtime = counter_++;
      if (u.size % kB != 0 && pick < 6) {
        u.tail_kind = KvTailKind::kInline;
        u.tail = std::string(u.size % kB, static_cast<char>('a' + pick));
      } else {
        u.tail_kind = KvTailKind::kInData;
      }
      return u;
    }
    if (pick == 8) return KvRename{"db", it->first, "db", "r" + std::to_string(counter_++)};
    return KvUnlink{"db", it->first};
  }

  std::mt19937_64 rng_;
  KvFsState state_;
  uint64_t seq_ = 1;
  uint64_t counter_ = 0;
  uint64_t bump_ = kHead + kA;  // after the first segment
};

}  // namespace hybridstore::test
