#include "hscommon/string_table.h"

#include <cstdio>
#include <functional>
#include <map>
#include <random>
#include <string>

#include <gtest/gtest.h>

namespace hybridstore {
namespace {

uint64_t hash_of(const std::string& k) { return std::hash<std::string_view>()(k); }

// Every key of the model is found with its value at a valid index, and
// nothing else is in the table.
void expect_same(const StringTable<int>& t, const std::map<std::string, int>& model,
                 const std::function<uint64_t(const std::string&)>& hash) {
  ASSERT_EQ(t.size(), model.size());
  for (const auto& [k, v] : model) {
    ptrdiff_t i = t.find(k, hash(k));
    ASSERT_GE(i, 0) << k;
    ASSERT_LT(static_cast<size_t>(i), t.size());
    EXPECT_EQ(t.at(static_cast<size_t>(i)).key, k);
    EXPECT_EQ(t.at(static_cast<size_t>(i)).value, v);
  }
  for (size_t i = 0; i < t.size(); ++i) EXPECT_EQ(model.count(t.at(i).key), 1u) << t.at(i).key;
}

// Random inserts, updates and erases against a std::map. `hash` may be weak
// on purpose: colliding hashes make long probe runs, which is where
// backward-shift deletion can go wrong.
void run_against_model(uint64_t seed, int ops, int key_space,
                       const std::function<uint64_t(const std::string&)>& hash) {
  std::printf("seed %llu, %d ops over %d keys\n", static_cast<unsigned long long>(seed), ops, key_space);
  std::mt19937_64 rng(seed);
  StringTable<int> t;
  std::map<std::string, int> model;
  for (int op = 0; op < ops; ++op) {
    // Keys from 1 to 40 bytes, across the small-string boundary.
    std::string k = "k" + std::to_string(rng() % static_cast<uint64_t>(key_space));
    if (rng() % 3 == 0) k += std::string(rng() % 30, 'x');
    const uint64_t h = hash(k);
    ptrdiff_t i = t.find(k, h);
    ASSERT_EQ(i >= 0, model.count(k) == 1) << "op " << op << " key " << k;
    switch (rng() % 3) {
      case 0:
        if (i < 0) {
          t.insert(k, h, op);
          model[k] = op;
        }
        break;
      case 1:
        if (i >= 0) {
          t.at(static_cast<size_t>(i)).value = op;
          model[k] = op;
        }
        break;
      default:
        if (i >= 0) {
          t.erase(static_cast<size_t>(i));
          model.erase(k);
        }
        break;
    }
    if (op % 997 == 0) {
      ASSERT_NO_FATAL_FAILURE(expect_same(t, model, hash));
    }
  }
  ASSERT_NO_FATAL_FAILURE(expect_same(t, model, hash));
  // Emptied completely, it is empty and still usable.
  while (t.size() > 0) t.erase(rng() % t.size());
  for (const auto& kv : model) {
    EXPECT_LT(t.find(kv.first, hash(kv.first)), 0);
  }
  t.insert("again", hash("again"), 7);
  EXPECT_EQ(t.at(static_cast<size_t>(t.find("again", hash("again")))).value, 7);
}

TEST(StringTable, MatchesAMapUnderRandomInsertsUpdatesAndErases) {
  run_against_model(1, 200000, 5000, hash_of);
}

TEST(StringTable, CollidingHashesStillFindEveryKey) {
  // 16 distinct hashes for every key: long runs of equal slot homes and tags,
  // so lookups must compare keys and erasures must shift whole runs.
  run_against_model(2, 40000, 2000, [](const std::string& k) { return hash_of(k) & 0xf000000000000003ull; });
}

TEST(StringTable, SameLowBitsDifferentTagsProbePastEachOther) {
  // Every key homes on slot 0; only the upper 32 bits (the slot's tag) differ.
  run_against_model(3, 30000, 500, [](const std::string& k) { return hash_of(k) & 0xffffffff00000000ull; });
}

TEST(StringTable, EraseMovesOnlyTheLastEntry) {
  StringTable<int> t;
  for (int i = 0; i < 10; ++i) {
    std::string k = "key" + std::to_string(i);
    EXPECT_EQ(t.insert(k, hash_of(k), i), static_cast<size_t>(i));
  }
  t.erase(3);
  EXPECT_EQ(t.size(), 9u);
  EXPECT_EQ(t.at(3).key, "key9");  // the last entry took the hole
  for (int i = 0; i < 9; ++i) {
    if (i != 3) {
      EXPECT_EQ(t.at(static_cast<size_t>(i)).key, "key" + std::to_string(i));
    }
  }
  EXPECT_LT(t.find("key3", hash_of("key3")), 0);
  EXPECT_EQ(t.find("key9", hash_of("key9")), 3);
}

TEST(StringTable, MemoryFollowsTheEntriesAndReturnsWhenTheyGo) {
  StringTable<int> t;
  const size_t empty = t.memory_bytes();
  for (int i = 0; i < 10000; ++i) {
    std::string k = "a-key-longer-than-fifteen-bytes-" + std::to_string(i);
    t.insert(k, hash_of(k), i);
  }
  const size_t full = t.memory_bytes();
  const double per_entry = static_cast<double>(full - empty) / 10000;
  std::printf("%.1f bytes per entry, estimate %zu\n", per_entry, StringTable<int>::bytes_per_entry(40));
  EXPECT_NEAR(per_entry, static_cast<double>(StringTable<int>::bytes_per_entry(40)),
              StringTable<int>::bytes_per_entry(40) * 0.25);
  while (t.size() > 0) t.erase(t.size() - 1);
  // Entry chunks and keys go back; the slot array stays at its size.
  EXPECT_LT(t.memory_bytes(), full / 2);
}

}  // namespace
}  // namespace hybridstore
