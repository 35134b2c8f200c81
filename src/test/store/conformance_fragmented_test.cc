// Conformance: objects made of many separate pieces (issue 10). An object
// written as N pieces of 4 KiB with a hole after each reads back whole and in
// ranges, before and after a remount, on both I/O backends (and, through
// ctest's .nand run, with the SSD tier on NAND); the read takes about one
// device I/O per physically contiguous run, not one per piece; and readers of
// such objects keep getting the right bytes while writers, the deferred
// writer and the SSD cleaner work underneath them.
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <map>
#include <random>
#include <shared_mutex>
#include <thread>

#include "hsio/block_device.h"
#include "hybridstore/tier/tier_cleaner.h"
#include "hybridstore/store/test_hooks.h"
#include "store_helpers.h"

using namespace hybridstore;
using hybridstore::test::StoreTest;

namespace {

constexpr uint64_t kPiece = 4096, kGap = 4096;

class FragmentedTest : public StoreTest, public ::testing::WithParamInterface<const char*> {
 protected:
  Config config() override {
    Config c = StoreTest::config();
    std::string err;
    EXPECT_EQ(c.set("hybridstore_io_backend", GetParam(), &err), 0) << err;
    return c;
  }
  void SetUp() override {
    if (std::string(GetParam()) == "uring" && !uring_available()) GTEST_SKIP() << "no io_uring here";
    StoreTest::SetUp();
    make_coll(coll_);
  }

  // Writes `o` as `pieces` separate pieces (transactions of 200 writes);
  // returns the bytes the object must read back as.
  std::string write_fragmented(const ObjectId& o, size_t pieces, std::mt19937_64& rng) {
    std::string image((pieces - 1) * (kPiece + kGap) + kPiece, '\0');
    for (size_t i = 0; i < pieces; i += 200) {
      Transaction t;
      for (size_t k = i; k < std::min(pieces, i + 200); ++k) {
        std::string d = hybridstore::test::random_bytes(rng, kPiece);
        image.replace(k * (kPiece + kGap), kPiece, d);
        t.write(coll_, o, k * (kPiece + kGap), d);
      }
      apply(std::move(t));
    }
    return image;
  }

  // Whole, then ranges that start and end anywhere (in pieces and in holes).
  void expect_reads(const ObjectId& o, const std::string& image, std::mt19937_64& rng, int ranges) {
    ASSERT_EQ(read_all(coll_, o), image);
    for (int i = 0; i < ranges; ++i) {
      uint64_t off = rng() % image.size();
      uint64_t len = 1 + rng() % (image.size() - off);
      if (i % 2) len = std::min<uint64_t>(len, 1 + rng() % (64 * kPiece));  // short ones too
      std::string out;
      ASSERT_EQ(store_->read(coll_, o, off, len, &out), static_cast<int>(len)) << off << "~" << len;
      ASSERT_TRUE(out == image.substr(off, len)) << "range " << off << "~" << len << " differs";
    }
  }

  // Device I/Os a whole read of `o` may take per tier: the extents' device
  // ranges (as read_data widens them) grouped into physically contiguous runs;
  // each run is one I/O, cut further only every IOV_MAX buffers.
  struct Expect {
    uint64_t extents = 0, runs = 0;
  };
  std::array<Expect, 2> expected_ios(const ObjectId& o) {
    std::array<Expect, 2> out{};
    std::shared_ptr<const Onode> on;
    EXPECT_EQ(StoreTestHooks::onode(*store_, coll_, o, &on), 0);
    if (!on) return out;
    std::array<std::vector<std::pair<uint64_t, uint64_t>>, 2> ranges;
    for (const auto& [off, e] : on->extents.extents()) {
      int t = tier_index(e.tier);
      uint64_t a = StoreTestHooks::device(*store_, e.tier)->alignment();
      uint64_t last = (e.length + e.csum_block - 1) / e.csum_block;
      uint64_t b = e.physical / a * a, f = (e.physical + last * e.csum_block + a - 1) / a * a;
      ranges[t].emplace_back(b, f);
    }
    for (int t = 0; t < 2; ++t) {
      auto& r = ranges[t];
      std::stable_sort(r.begin(), r.end(), [](auto& x, auto& y) { return x.first < y.first; });
      out[t].extents = r.size();
      for (size_t i = 0; i < r.size(); ++i)
        if (i == 0 || r[i].first != r[i - 1].second) ++out[t].runs;
    }
    return out;
  }
};

}  // namespace

// 127/128/129 sit around the default ring depth; 10,000 far beyond it.
TEST_P(FragmentedTest, ObjectsOfManyPiecesReadBackWholeAndInRanges) {
  std::mt19937_64 rng(test::test_seed(10));
  std::map<std::string, std::string> images;
  for (size_t pieces : {1, 127, 128, 129, 1000, 10000}) {
    std::string name = "frag" + std::to_string(pieces);
    SCOPED_TRACE(name);
    images[name] = write_fragmented(obj(name), pieces, rng);
    std::map<uint64_t, uint64_t> allocated;
    ASSERT_EQ(store_->fiemap(coll_, obj(name), 0, images[name].size(), &allocated), 0);
    EXPECT_EQ(allocated.size(), pieces) << "the object is not made of separate pieces";
    // Before the data reached the devices (staged, deferred) and after.
    expect_reads(obj(name), images[name], rng, 8);
  }
  remount();
  for (const auto& [name, image] : images) {
    SCOPED_TRACE(name + " after remount");
    expect_reads(obj(name), image, rng, 8);
  }
  EXPECT_EQ(fsck_errors(true), 0);
}

TEST_P(FragmentedTest, ReadOfAFragmentedObjectJoinsContiguousDeviceRanges) {
  std::mt19937_64 rng(test::test_seed(11));
  std::string image = write_fragmented(obj("f"), 10000, rng);
  // Where it was written, then moved to the HDD (each piece an extent still).
  for (bool on_hdd : {false, true}) {
    SCOPED_TRACE(on_hdd ? "moved to the HDD" : "as written");
    if (on_hdd) {
      ASSERT_EQ(store_->migrate(coll_, obj("f"), Tier::kHdd), 0);
    }
    remount();  // everything on the devices, nothing staged
    auto want = expected_ios(obj("f"));
    std::array<BlockDeviceStats, 2> before;
    for (int t = 0; t < 2; ++t) before[t] = StoreTestHooks::device(*store_, tier_at(t))->io_stats();
    ASSERT_EQ(read_all(coll_, obj("f")), image);
    for (int t = 0; t < 2; ++t) {
      BlockDeviceStats now = StoreTestHooks::device(*store_, tier_at(t))->io_stats();
      uint64_t requests = now.requests - before[t].requests, ios = now.device_ios - before[t].device_ios;
      printf("%s: %llu extents in %llu device runs; the read asked for %llu ranges, took %llu I/Os\n",
             tier_name(static_cast<Tier>(t)), static_cast<unsigned long long>(want[t].extents),
             static_cast<unsigned long long>(want[t].runs), static_cast<unsigned long long>(requests),
             static_cast<unsigned long long>(ios));
      // Counted only where the device counts (files) and nothing else ran on
      // it meanwhile (a background pass would add its own I/Os).
      if (now.requests == 0 || requests != want[t].extents) continue;
      EXPECT_GE(ios, want[t].runs);
      EXPECT_LE(ios, want[t].runs + want[t].extents / IOV_MAX + 1);
    }
  }
}

TEST_P(FragmentedTest, ReadersOfFragmentedObjectsWhileWritersDeferredWriterAndCleanerWork) {
  const uint64_t seed = test::test_seed(12);
  std::mt19937_64 rng(seed);
  // Read-only during the run: objects of 129..1500 pieces.
  // Half of them on the HDD, so reads go to both devices.
  std::vector<std::pair<ObjectId, std::string>> stable;
  for (size_t pieces : {129, 300, 700, 1500}) {
    ObjectId o = obj("stable" + std::to_string(pieces));
    stable.emplace_back(o, write_fragmented(o, pieces, rng));
    if (pieces == 129 || pieces == 700) {
      ASSERT_EQ(store_->migrate(coll_, o, Tier::kHdd), 0);
    }
  }
  std::atomic<bool> readers_done{false};
  std::atomic<int> reads{0}, writes{0}, cleans{0}, moved{0};
  std::vector<std::string> failures(6);
  std::vector<std::thread> threads;
  // Readers: whole objects and ranges, checked byte for byte.
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      std::mt19937_64 g(seed * 31 + r);
      for (int i = 0; i < 40 && failures[r].empty(); ++i) {
        const auto& [o, image] = stable[g() % stable.size()];
        uint64_t off = i % 2 ? g() % image.size() : 0;
        uint64_t len = i % 2 ? 1 + g() % (image.size() - off) : 0;
        std::string out;
        int n = store_->read(coll_, o, off, len, &out);
        if (n < 0 || out != image.substr(off, len ? len : std::string::npos))
          failures[r] = "read " + std::to_string(i) + " of " + o.name + " at " + std::to_string(off) + " returned " +
                        std::to_string(n) + (n >= 0 ? " with wrong bytes" : "");
        reads++;
      }
    });
  // Writers: other objects made fragmented and overwritten in small pieces
  // (small HDD writes go through the deferred writer, SSD ones through the
  // staged sections), and removed, which leaves SSD holes for the cleaner.
  threads.emplace_back([&] {
    std::mt19937_64 g(seed * 31 + 3);
    for (int i = 0; !readers_done && failures[3].empty(); ++i) {
      ObjectId o = obj("churn" + std::to_string(i % 6));
      Transaction t;
      if (i % 7 == 6) {
        t.remove(coll_, o);
      } else {
        for (int k = 0; k < 150; ++k)
          t.write(coll_, o, (g() % 3000) * (kPiece + kGap), hybridstore::test::random_bytes(g, kPiece));
      }
      TxnError e;
      if (int rc = store_->queue_transaction(std::move(t), &e); rc < 0 && rc != -ENOENT)
        failures[3] = "transaction " + std::to_string(i) + ": " + e.message;
      // Some of them live on the HDD, where small overwrites are deferred.
      if (i % 6 < 2 && i % 7 != 6)
        if (int rc = store_->migrate(coll_, o, Tier::kHdd); rc < 0 && rc != -EAGAIN && rc != -ENOENT)
          failures[3] = "migrate " + o.name + ": " + std::to_string(rc);
      writes++;
    }
  });
  threads.emplace_back([&] {
    while (!readers_done && failures[4].empty()) {
      int rc = StoreTestHooks::drain_deferred(*store_);
      if (rc < 0) failures[4] = "deferred drain: " + std::to_string(rc);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // a drain on nothing returns at once
    }
  });
  threads.emplace_back([&] {
    while (!readers_done && failures[5].empty()) {
      CleanerReport rep;
      int rc = store_->clean_now(true, &rep);
      if (rc == -ENOTCONN) break;  // no SSD sections here: nothing to clean
      if (rc < 0) failures[5] = "cleaner: " + std::to_string(rc);
      cleans++;
      moved += static_cast<int>(rep.objects_moved);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  for (int r = 0; r < 3; ++r) threads[r].join();
  readers_done = true;
  for (size_t i = 3; i < threads.size(); ++i) threads[i].join();
  StoreStats st;
  store_->statfs(&st);
  printf("%d reads, %d transactions, %d cleaner passes (%d objects moved), %llu deferred writes applied\n",
         reads.load(), writes.load(), cleans.load(), moved.load(),
         static_cast<unsigned long long>(st.deferred_applied));
  for (size_t i = 0; i < failures.size(); ++i) EXPECT_EQ(failures[i], "") << "thread " << i;
  for (const auto& [o, image] : stable) ASSERT_EQ(read_all(coll_, o), image) << o.name;
  EXPECT_EQ(fsck_errors(true), 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, FragmentedTest, ::testing::Values("uring", "posix"),
                         [](const auto& info) { return std::string(info.param); });
