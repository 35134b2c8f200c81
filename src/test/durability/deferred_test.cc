// Deferred writes: small overwrites and small HDD writes ride in the RocksDB
// batch, are readable at once, reach the device in batches, and survive a
// crash before they were applied.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>

#include <rocksdb/db.h>

#include "hscommon/config.h"
#include "hscommon/encoding.h"
#include "hsio/block_device.h"
#include "hybridstore/kv/deferred.h"
#include "hybridstore/kv/kv_schema.h"
#include "hybridstore/store/test_hooks.h"
#include "testing/fault_injection.h"
#include "durability_helpers.h"
#include "store_helpers.h"

using namespace hybridstore;
using hybridstore::test::StoreTest;

namespace {

class DeferredTest : public StoreTest {
 protected:
  Config config() override {
    Config c = hybridstore::test::small_store_config();
    std::string err;
    // Keep deferred writes pending long enough to observe them.
    c.set("hybridstore_deferred_max_delay_ms", "60000", &err);
    c.set("hybridstore_deferred_batch_bytes", "1G", &err);
    // These tests count deferred writes of overwrites and HDD writes; SSD
    // sections defer all SSD data (tested in sections_test).
    c.set("hybridstore_ssd_allocator", "extent", &err);
    // Small writes into HDD objects must take the HDD's deferred path here,
    // not be absorbed by the SSD (absorb_test covers that).
    c.set("hybridstore_tier_absorb_max", "0", &err);
    // Promotion on reads must not move an object these tests read
    // repeatedly: on a loaded machine the promoter did, and the writes the
    // test expects still staged were gone.
    c.set("hybridstore_tier_promote_hits", "0", &err);
    return c;
  }
  void SetUp() override {
    StoreTest::SetUp();
    make_coll(coll_);
  }
  // The child commits 8 deferred overwrites and dies without unmounting, as
  // a crash would: the device still has the old bytes, the records carry the
  // new ones. Returns the number of deferred records RocksDB itself held
  // after the crash.
  int crash_after_deferred_overwrites(const std::string& path, const Config& cfg);
  // Remounting applied them, and umount leaves no record behind.
  void expect_overwrites_applied(const std::string& path, const Config& cfg);
  // What the last expect_overwrites_applied's mount put in place.
  uint64_t last_replayed_from_ring_ = 0;
  uint64_t last_replayed_from_records_ = 0;
  StoreStats stats() {
    StoreStats s;
    EXPECT_EQ(store_->statfs(&s), 0);
    return s;
  }
  uint64_t pending() { return StoreTestHooks::deferred_pending_bytes(*store_); }
  // Object "a" (16 KiB on the SSD), then a "fill" object that takes every
  // other free SSD block: the only SSD space a new object can get afterwards
  // is what "a" gives back.
  void write_a_and_fill_the_ssd() {
    Transaction t;
    t.write(coll_, obj("a"), 0, std::string(16384, 'a'));
    apply(std::move(t));
    uint64_t free_ssd = stats().tier[tier_index(Tier::kSsd)].free;
    Transaction f;
    f.touch(coll_, obj("fill"));
    f.truncate(coll_, obj("fill"), 0);
    apply(std::move(f));
    // A sparse object would not consume space: write it for real, in pieces
    // small enough to stay on the SSD.
    for (uint64_t off = 0; off < free_ssd; off += 512 << 10) {
      Transaction w;
      w.write(coll_, obj("fill"), off, std::string(std::min<uint64_t>(512 << 10, free_ssd - off), 'f'));
      apply(std::move(w));
    }
    ASSERT_EQ(stats().tier[tier_index(Tier::kSsd)].free, 0u);
  }
};

TEST_F(DeferredTest, SmallOverwriteIsDeferredAndReadableAtOnce) {
  Transaction t;
  t.write(coll_, obj("a"), 0, std::string(65536, 'a'));
  apply(std::move(t));
  ObjectStat before;
  ASSERT_EQ(store_->stat(coll_, obj("a"), &before), 0);
  Transaction o;
  o.write(coll_, obj("a"), 5000, "OVERWRITE");
  apply(std::move(o));
  EXPECT_GT(pending(), 0u);
  std::string want(65536, 'a');
  want.replace(5000, 9, "OVERWRITE");
  EXPECT_EQ(read_all(coll_, obj("a")), want);
  ObjectStat after;
  ASSERT_EQ(store_->stat(coll_, obj("a"), &after), 0);
  EXPECT_EQ(after.allocated, before.allocated);  // written in place: no new space
  StoreStats s = stats();  // statfs drains: now on the device
  EXPECT_EQ(s.deferred_staged, 1u);
  EXPECT_EQ(s.deferred_applied, 1u);
  EXPECT_EQ(pending(), 0u);
  remount();
  EXPECT_EQ(read_all(coll_, obj("a")), want);
  EXPECT_EQ(fsck_errors(true), 0);
}

// One transaction writes new data straight to fresh space (too large to
// defer), overwrites part of it in place (a deferred write), then writes a
// few bytes inside the overwritten block: the read-modify-write of that block
// must see the overwrite, not the older bytes still waiting to be written,
// on either tier. (The crash harness found a read that applied them the
// other way round and failed the transaction with a checksum error.)
TEST_F(DeferredTest, ATransactionReadsItsOwnOverwriteOfDataItWroteDirectly) {
  for (bool hdd : {false, true}) {
    SCOPED_TRACE(hdd ? "hdd" : "ssd");
    ObjectId o = obj(hdd ? "on-hdd" : "on-ssd");
    Transaction t;
    if (hdd) {
      t.touch(coll_, o);
      t.set_alloc_hint(coll_, o, 64 << 20, 4096, kHintSequentialWrite);
    }
    t.write(coll_, o, 0, std::string(131072, 'n'));
    t.write(coll_, o, 16384, std::string(8192, 'o'));
    t.write(coll_, o, 20000, "partial");
    ASSERT_EQ(store_->apply_transaction(std::move(t)), 0);
    std::string want(131072, 'n');
    want.replace(16384, 8192, std::string(8192, 'o'));
    want.replace(20000, 7, "partial");
    EXPECT_EQ(read_all(coll_, o), want);
    ObjectStat st;
    ASSERT_EQ(store_->stat(coll_, o, &st), 0);
    EXPECT_EQ(st.bytes_on[tier_index(hdd ? Tier::kHdd : Tier::kSsd)], 131072u);
    remount();
    EXPECT_EQ(read_all(coll_, o), want);
  }
  EXPECT_EQ(fsck_errors(true), 0);
}

// read_into puts the same bytes as read() into the caller's memory: whole
// aligned blocks straight from the device when that memory is aligned (and
// then patched by the writes still staged), through a bounce buffer when it
// is not; the buffer is asked for once, with the size returned, and not at
// all when nothing is read.
TEST_F(DeferredTest, ReadsIntoCallerMemoryMatchTheStringReadWithWritesStillStaged) {
  Transaction t;
  t.write(coll_, obj("ssd"), 0, std::string(65536, 'a'));
  t.write(coll_, obj("holes"), 0, std::string(4096, 'x'));
  t.write(coll_, obj("holes"), 65536, std::string(4096, 'y'));
  t.touch(coll_, obj("hdd"));
  t.set_alloc_hint(coll_, obj("hdd"), 64 << 20, 4096, kHintSequentialWrite);
  apply(std::move(t));
  Transaction o;
  o.write(coll_, obj("ssd"), 5000, "OVERWRITE");
  o.write(coll_, obj("ssd"), 16384, std::string(4096, 'b'));
  for (int i = 0; i < 8; ++i)
    o.write(coll_, obj("hdd"), static_cast<uint64_t>(i) * 8192, std::string(8192, static_cast<char>('A' + i)));
  apply(std::move(o));
  ASSERT_GT(pending(), 0u);
  for (const char* name : {"ssd", "holes", "hdd"}) {
    const ObjectId ob = obj(name);
    const uint64_t size = read_all(coll_, ob).size();
    const std::pair<uint64_t, uint64_t> ranges[] = {{0, 0},      {0, 4096},        {4096, 8192},     {100, 5000},
                                                    {8192, 0},   {16384, 4096},    {size - 1, 10},   {4096, 1 << 20}};
    for (auto [off, len] : ranges)
      for (size_t misalign : {0, 1}) {
        SCOPED_TRACE(std::string(name) + " " + std::to_string(off) + "~" + std::to_string(len) + " misaligned by " +
                     std::to_string(misalign));
        std::string want;
        int n = store_->read(coll_, ob, off, len, &want);
        ASSERT_GT(n, 0);
        AlignedBuffer mem(size + 4096 + misalign, 4096, AlignedBuffer::kZeroed);
        int calls = 0;
        uint64_t asked = 0;
        int got = store_->read_into(coll_, ob, off, len, [&](uint64_t k) {
          ++calls;
          asked = k;
          return mem.data() + misalign;
        });
        ASSERT_EQ(got, n);
        EXPECT_EQ(calls, 1);
        EXPECT_EQ(asked, static_cast<uint64_t>(n));
        EXPECT_EQ(std::string(mem.data() + misalign, static_cast<size_t>(got)), want);
      }
    int calls = 0;
    EXPECT_EQ(store_->read_into(coll_, ob, size, 10, [&](uint64_t) { ++calls; return nullptr; }), 0);
    EXPECT_EQ(calls, 0);
    EXPECT_EQ(store_->read_into(coll_, ob, 0, 10, [](uint64_t) { return nullptr; }), -ENOMEM);
  }
  EXPECT_EQ(store_->read_into(coll_, obj("none"), 0, 10, [](uint64_t) { return nullptr; }), -ENOENT);
  EXPECT_GT(pending(), 0u);  // the reads above saw staged writes, not applied ones
  EXPECT_EQ(fsck_errors(true), 0);
}

TEST_F(DeferredTest, SmallHddWritesNeverGoToTheDiskSynchronously) {
  Transaction t;
  t.touch(coll_, obj("h"));
  t.set_alloc_hint(coll_, obj("h"), 64 << 20, 4096, kHintSequentialWrite);
  apply(std::move(t));
  for (int i = 0; i < 20; ++i) {
    Transaction w;
    w.write(coll_, obj("h"), static_cast<uint64_t>(i) * 8192, std::string(8192, static_cast<char>('A' + i)));
    apply(std::move(w));
  }
  EXPECT_GT(pending(), 0u);
  ObjectStat st;
  ASSERT_EQ(store_->stat(coll_, obj("h"), &st), 0);
  EXPECT_EQ(st.bytes_on[tier_index(Tier::kHdd)], 20u * 8192);
  StoreStats s = stats();
  EXPECT_EQ(s.deferred_staged, 20u);
  // Consecutive appends land next to each other and merge into few writes.
  EXPECT_LT(s.deferred_device_writes, 5u);
  std::string d = read_all(coll_, obj("h"));
  for (int i = 0; i < 20; ++i) EXPECT_EQ(d[static_cast<size_t>(i) * 8192 + 7], 'A' + i);
}

TEST_F(DeferredTest, LargeWritesAreNotDeferred) {
  Transaction t;
  t.write(coll_, obj("big"), 0, std::string(256 << 10, 'b'));
  apply(std::move(t));
  Transaction o;
  o.write(coll_, obj("big"), 0, std::string(128 << 10, 'c'));
  apply(std::move(o));
  EXPECT_EQ(pending(), 0u);
  EXPECT_EQ(stats().deferred_staged, 0u);
}

TEST_F(DeferredTest, SpaceFreedBehindAPendingDeferredWriteIsNotReusedEarly) {
  // Fill the SSD so that the only SSD space a new object could get is the
  // space of a removed object whose deferred overwrite is still pending. That
  // space must not reach the allocator before the deferred write landed, or
  // the new object would be clobbered by it.
  ASSERT_NO_FATAL_FAILURE(write_a_and_fill_the_ssd());
  Transaction r;
  r.write(coll_, obj("a"), 100, "pending deferred overwrite");
  r.remove(coll_, obj("a"));
  ASSERT_EQ(store_->apply_transaction(std::move(r)), 0);  // committed, not yet applied
  ASSERT_GT(pending(), 0u);
  for (int i = 0; i < 4; ++i) {
    Transaction n;
    n.write(coll_, obj("n" + std::to_string(i)), 0, std::string(4096, static_cast<char>('0' + i)));
    apply(std::move(n));
  }
  ASSERT_EQ(store_->flush(), 0);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(read_all(coll_, obj("n" + std::to_string(i))), std::string(4096, static_cast<char>('0' + i)));
  EXPECT_EQ(fsck_errors(true), 0);
}

TEST_F(DeferredTest, AppliedRecordsStayDeletedThroughACutSoReusedSpaceKeepsItsNewData) {
  // The deferred writer applies a record, deletes it, and the space under it
  // is freed and given to a new object. Then the power goes. The deletion
  // must have been durable: a record that came back (from RocksDB, or from
  // the commit journal replaying the transaction that staged it) would be
  // written again at mount, over the new object's data.
  const std::string path = dir_->path() + "/store";
  std::string err;
  ASSERT_EQ(store_->umount(), 0);
  store_ = std::make_unique<HybridStore>(path, hybridstore::test::with_option(config(), "hybridstore_debug_fault_injection", "true"));
  ASSERT_EQ(store_->mount(&err), 0) << err;
  ASSERT_NO_FATAL_FAILURE(write_a_and_fill_the_ssd());
  Transaction o;
  o.write(coll_, obj("a"), 100, "deferred overwrite, applied before the cut");
  apply(std::move(o));
  ASSERT_GT(pending(), 0u);
  ASSERT_EQ(store_->flush(), 0);  // applies it and deletes its record
  ASSERT_EQ(pending(), 0u);
  Transaction r;
  r.remove(coll_, obj("a"));
  apply(std::move(r));
  ASSERT_EQ(store_->flush(), 0);
  ASSERT_EQ(stats().tier[tier_index(Tier::kSsd)].free, 16384u);
  Transaction b;
  b.write(coll_, obj("b"), 0, std::string(16384, 'b'));
  apply(std::move(b));
  ASSERT_EQ(stats().tier[tier_index(Tier::kSsd)].free, 0u);  // "b" is where "a" was
  fault_injector_for(path)->power_cut_now();
  store_.reset();
  store_ = std::make_unique<HybridStore>(path, config());
  ASSERT_EQ(store_->mount(&err), 0) << err;
  EXPECT_EQ(read_all(coll_, obj("b")), std::string(16384, 'b'));
  EXPECT_EQ(fsck_errors(true), 0);
}

int count_deferred_records(const std::string& db_path) {
  rocksdb::Options o;
  o.merge_operator = kv::make_merge_operator();
  rocksdb::DB* db = nullptr;
  if (!rocksdb::DB::OpenForReadOnly(o, db_path, &db).ok()) return -1;
  std::unique_ptr<rocksdb::DB> guard(db);
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  int n = 0;
  std::string p(1, kv::kDeferred);
  for (it->Seek(p); it->Valid() && it->key().starts_with(p); it->Next()) ++n;
  return n;
}

int DeferredTest::crash_after_deferred_overwrites(const std::string& path, const Config& cfg) {
  auto& store = store_;
  auto& coll = coll_;
  DeferredTest& t = *this;
  Transaction base;
  base.write(coll, t.obj("a"), 0, std::string(32768, 'a'));
  EXPECT_EQ(store->apply_transaction(std::move(base)), 0);
  EXPECT_EQ(store->umount(), 0);
  store.reset();
  pid_t pid = fork();
  if (pid == 0) {
    HybridStore s(path, cfg);
    std::string err;
    if (s.mount(&err) < 0) _exit(2);
    for (int i = 0; i < 8; ++i) {
      Transaction w;
      w.write(coll, t.obj("a"), static_cast<uint64_t>(i) * 4096 + 10, "new-" + std::to_string(i));
      if (s.apply_transaction(std::move(w)) < 0) _exit(3);
    }
    _exit(0);
  }
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  return count_deferred_records(path + "/db");
}

void DeferredTest::expect_overwrites_applied(const std::string& path, const Config& cfg) {
  auto& store = store_;
  auto& coll = coll_;
  DeferredTest& t = *this;
  store = std::make_unique<HybridStore>(path, cfg);
  std::string err;
  ASSERT_EQ(store->mount(&err), 0) << err;
  // The eight overwrites, each put in place by the mount from wherever it
  // was acknowledged (at most eight: the applier may have written some).
  const StoreStats mounted = t.stats();
  EXPECT_LE(mounted.mount_replayed_from_ring + mounted.mount_replayed_from_records, 8u);
  last_replayed_from_ring_ = mounted.mount_replayed_from_ring;
  last_replayed_from_records_ = mounted.mount_replayed_from_records;
  std::string want(32768, 'a');
  for (int i = 0; i < 8; ++i) {
    std::string s = "new-" + std::to_string(i);
    want.replace(static_cast<size_t>(i) * 4096 + 10, s.size(), s);
  }
  EXPECT_EQ(t.read_all(coll, t.obj("a")), want);
  EXPECT_EQ(t.fsck_errors(true), 0);
  ASSERT_EQ(store->umount(), 0);
  EXPECT_EQ(count_deferred_records(path + "/db"), 0);
  ASSERT_EQ(store->mount(&err), 0) << err;
}

TEST_F(DeferredTest, AcknowledgedDeferredWritesAreReplayedAfterACrash) {
  // Without the commit journal every acknowledged record is in RocksDB.
  Config cfg = hybridstore::test::with_option(config(), "hybridstore_commit_journal_size", "0");
  std::string path = dir_->path() + "/store";
  EXPECT_EQ(crash_after_deferred_overwrites(path, cfg), 8);
  expect_overwrites_applied(path, cfg);
  EXPECT_EQ(last_replayed_from_records_, 8u);
  EXPECT_EQ(last_replayed_from_ring_, 0u);
}

TEST_F(DeferredTest, AcknowledgedDeferredWritesAreReplayedAfterACrashThroughTheCommitJournal) {
  // With it, RocksDB's WAL may still have been in its buffer at the crash:
  // mount replays the journal first, which puts the records back.
  std::string path = dir_->path() + "/store";
  int in_kv = crash_after_deferred_overwrites(path, config());
  EXPECT_GE(in_kv, 0);
  EXPECT_LE(in_kv, 8);
  expect_overwrites_applied(path, config());
}

// hybridstore_small_write_journal=data (docs/small-writes.md step 5): the
// overwrites' data rides in the commit journal's record, so RocksDB holds
// no D record of them at the crash; the mount writes them from the ring,
// and the store is of format 6 from its first mount with the option.
TEST_F(DeferredTest, InDataModeAcknowledgedOverwritesComeBackFromTheRingAlone) {
  const Config cfg = hybridstore::test::with_option(config(), "hybridstore_small_write_journal", "data");
  std::string path = dir_->path() + "/store";
  EXPECT_EQ(crash_after_deferred_overwrites(path, cfg), 0) << "a D record of data the ring carries";
  StoreProbe probe;
  ASSERT_EQ(HybridStore::probe(path, cfg, &probe, nullptr), 0);
  EXPECT_EQ(probe.format_version, kFormatSmallWriteJournal);
  // Mounted without the option, the store still writes what its ring holds.
  expect_overwrites_applied(path, hybridstore::test::with_option(config(), "hybridstore_small_write_journal", "off"));
  if (HasFatalFailure()) return;
  EXPECT_EQ(last_replayed_from_ring_, 8u) << "the child exits with nothing applied";
  EXPECT_EQ(last_replayed_from_records_, 0u);
  // And with it, after another crash.
  EXPECT_EQ(crash_after_deferred_overwrites(path, cfg), 0);
  expect_overwrites_applied(path, cfg);
}

// With `on`, transactions that change only attributes put no data into
// the ring, so the deferred writer has nothing to apply and never records
// how far ring data is applied: that hold kept the ring's oldest record, and
// once three quarters of the ring were needed the checkpointer's throttle
// held every writer back for good (store_test's AttrSynthetic). A held
// writer asks for room as CommitJournal::reserve does. On a 512K ring, 300
// transactions of a 4 KiB attribute need it three times over.
TEST_F(DeferredTest, InOnModeAttributeOnlyTransactionsNeverStallOnTheRing) {
  const Config cfg = hybridstore::test::with_option(
      hybridstore::test::with_option(config(), "hybridstore_small_write_journal", "on"),
      "hybridstore_commit_journal_size", "512K");
  const std::string path = dir_->path() + "/store-attrs";
  store_ = std::make_unique<HybridStore>(path, cfg);
  ASSERT_EQ(store_->mkfs(), 0);
  std::string err;
  ASSERT_EQ(store_->mount(&err), 0) << err;
  make_coll(coll_);
  Transaction base;
  base.write(coll_, obj("a"), 0, std::string(8192, 'a'));
  apply(std::move(base));
  auto done = std::async(std::launch::async, [&] {
    for (int i = 0; i < 300; ++i) {
      Transaction t;
      t.setattr(coll_, obj("a"), "big" + std::to_string(i % 8), std::string(4096, static_cast<char>('A' + i % 26)));
      if (store_->apply_transaction(std::move(t)) != 0) return i;
    }
    return 300;
  });
  // Not a timing check: the stall was permanent. Far past any slow
  // machine's time for 300 transactions, print the stacks (the test
  // runner's watchdog would, much later) and fail.
  if (done.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
    fprintf(stderr, "the attribute transactions stopped progressing\n");
    std::abort();
  }
  EXPECT_EQ(done.get(), 300);
  std::string v;
  EXPECT_EQ(store_->getattr(coll_, obj("a"), "big3", &v), 0);
  EXPECT_EQ(v, std::string(4096, static_cast<char>('A' + 299 % 26)));
  ASSERT_EQ(store_->umount(), 0);
  store_ = std::make_unique<HybridStore>(path, cfg);
  ASSERT_EQ(store_->mount(&err), 0) << err;
  EXPECT_EQ(store_->getattr(coll_, obj("a"), "big3", &v), 0);
  EXPECT_EQ(v, std::string(4096, static_cast<char>('A' + 299 % 26)));
  EXPECT_EQ(fsck_errors(true), 0);
}

// The ring made again at another size (docs/small-writes.md 9, "Ring
// size") by a mount after a crash: what only the old ring held (the
// overwrites' data, and with `on` the onode deltas) is replayed first and
// survives; the new ring, grown and then shrunk, carries the next crash's
// records in turn. A half-made ring of an earlier try (journal.tmp) is not
// read. On a directory store; kv_on_device_test has the kvfs's ring.
TEST_F(DeferredTest, TheRingMadeAgainAtAnotherSizeAtMountKeepsWhatTheOldOneHeld) {
  namespace fs = std::filesystem;
  for (const char* mode : {"data", "on"}) {
    SCOPED_TRACE(mode);
    const Config base = hybridstore::test::with_option(config(), "hybridstore_small_write_journal", mode);
    const std::string path = dir_->path() + "/store-" + mode;
    store_ = std::make_unique<HybridStore>(path, base);
    ASSERT_EQ(store_->mkfs(), 0);
    std::string err;
    ASSERT_EQ(store_->mount(&err), 0) << err;
    make_coll(coll_);
    uint64_t ring = 16ull << 20;
    for (const char* next : {"4M", "32M", "1M"}) {
      SCOPED_TRACE(std::string("to ") + next);
      const Config before = hybridstore::test::with_option(base, "hybridstore_commit_journal_size",
                                                           std::to_string(ring));
      ASSERT_EQ(fs::file_size(path + "/journal"), ring);
      crash_after_deferred_overwrites(path, before);
      { std::ofstream(path + "/journal.tmp") << "half made"; }
      const Config after = hybridstore::test::with_option(base, "hybridstore_commit_journal_size", next);
      expect_overwrites_applied(path, after);
      if (HasFatalFailure()) return;
      EXPECT_EQ(last_replayed_from_ring_, 8u) << "the old ring's data";
      uint64_t want = 0;
      ASSERT_TRUE(parse_size(next, &want));
      EXPECT_EQ(stats().commit_journal_bytes, want);
      EXPECT_EQ(fs::file_size(path + "/journal"), want);
      EXPECT_FALSE(fs::exists(path + "/journal.tmp"));
      ring = want;
    }
    // At its size, a mount leaves the ring alone (the same file).
    auto inode = [&] {
      struct stat st {};
      EXPECT_EQ(::stat((path + "/journal").c_str(), &st), 0);
      return st.st_ino;
    };
    const ino_t made = inode();
    ASSERT_EQ(store_->umount(), 0);
    store_ = std::make_unique<HybridStore>(
        path, hybridstore::test::with_option(base, "hybridstore_commit_journal_size", "1M"));
    ASSERT_EQ(store_->mount(&err), 0) << err;
    EXPECT_EQ(inode(), made);
    // Nor does a mount with the option at its default (a tool run without
    // the OSD's configuration); but it removes a ring left half made by a
    // mount killed while making one, which a read-only mount leaves.
    ASSERT_EQ(store_->umount(), 0);
    { std::ofstream(path + "/journal.tmp") << "half made"; }
    store_ = std::make_unique<HybridStore>(path, base);
    ASSERT_EQ(store_->mount_read_only(&err), 0) << err;
    EXPECT_TRUE(fs::exists(path + "/journal.tmp"));
    ASSERT_EQ(store_->umount(), 0);
    store_ = std::make_unique<HybridStore>(path, base);
    ASSERT_EQ(store_->mount(&err), 0) << err;
    EXPECT_EQ(inode(), made);
    EXPECT_FALSE(fs::exists(path + "/journal.tmp"));
    EXPECT_EQ(stats().commit_journal_bytes, 1ull << 20);
    EXPECT_EQ(fsck_errors(true), 0);
    ASSERT_EQ(store_->umount(), 0);
    store_.reset();
  }
}

// hybridstore_small_write_journal=on (format 7, docs/small-writes.md step
// 6): a transaction's change to an object it found in the cache rides in
// its record as onode deltas, and no onode put goes into RocksDB until a
// checkpoint. A child that exits acknowledged before any checkpoint leaves
// the changes in the ring alone: the mount must apply them (the checksums
// of the overwritten blocks, the attributes set and removed) or the reads
// fail their checksums. Then a remount finds them in RocksDB; and with the
// deltas beside onode puts (the test hook) every delta replayed is one
// RocksDB had already.
TEST_F(DeferredTest, InOnModeChangesOnlyTheOnodeDeltasCarryComeBackAtMount) {
  // Nothing applied or checkpointed before the child exits, so the ring's
  // tail stays and the mount walks all eight records.
  const Config c0 = hybridstore::test::with_option(
      hybridstore::test::with_option(config(), "hybridstore_small_write_journal", "on"),
      "hybridstore_deferred_max_delay_ms", "60000");
  const Config cfg = hybridstore::test::with_option(c0, "hybridstore_small_write_checkpoint_ms", "600000");
  const std::string path = dir_->path() + "/store";
  Transaction base;
  base.write(coll_, obj("a"), 0, std::string(32768, 'a'));
  base.setattr(coll_, obj("a"), "gone", "soon");
  ASSERT_EQ(store_->apply_transaction(std::move(base)), 0);
  ASSERT_EQ(store_->umount(), 0);
  store_.reset();
  // `mode`: 0 deltas alone, 1 deltas beside puts, 2 a checkpoint after
  // the fourth transaction.
  auto crash_after_changes = [&](int mode, int round) {
    pid_t pid = fork();
    if (pid == 0) {
      HybridStore s(path, cfg);
      std::string err;
      if (s.mount(&err) < 0) _exit(2);
      if (mode == 1) StoreTestHooks::deltas_beside_puts(s);
      std::string v;
      if (s.getattr(coll_, obj("a"), "gone", &v) < 0 && round == 0) _exit(4);  // loads it into the cache
      for (int i = 0; i < 8; ++i) {
        Transaction w;
        w.write(coll_, obj("a"), static_cast<uint64_t>(i) * 4096 + 10, "r" + std::to_string(round) + "-" + std::to_string(i));
        w.setattr(coll_, obj("a"), "round", std::to_string(round) + "." + std::to_string(i));
        if (i == 3) w.rmattr(coll_, obj("a"), "gone");
        if (s.apply_transaction(std::move(w)) < 0) _exit(3);
        if (mode == 2 && i == 3 && StoreTestHooks::checkpoint_onodes(s) != 0) _exit(5);
      }
      _exit(0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  };
  auto expect_round = [&](int round) {
    store_ = std::make_unique<HybridStore>(path, cfg);
    std::string err;
    ASSERT_EQ(store_->mount(&err), 0) << err;
    std::string want(32768, 'a');
    for (int i = 0; i < 8; ++i) {
      std::string x = "r" + std::to_string(round) + "-" + std::to_string(i);
      want.replace(static_cast<size_t>(i) * 4096 + 10, x.size(), x);
    }
    EXPECT_EQ(read_all(coll_, obj("a")), want);
    std::string v;
    EXPECT_EQ(store_->getattr(coll_, obj("a"), "round", &v), 0);
    EXPECT_EQ(v, std::to_string(round) + ".7");
    EXPECT_EQ(store_->getattr(coll_, obj("a"), "gone", &v), -ENODATA);
  };
  crash_after_changes(0, 0);
  if (HasFatalFailure()) return;
  expect_round(0);
  if (HasFatalFailure()) return;
  StoreStats st = stats();
  EXPECT_EQ(st.format_version, kFormatOnodeVersions);
  EXPECT_EQ(st.mount_onode_deltas_applied, 8u) << "each transaction's change came from the ring alone";
  EXPECT_EQ(fsck_errors(true), 0);
  // What the mount wrote, it wrote: nothing is left to apply.
  ASSERT_EQ(store_->umount(), 0);
  store_ = std::make_unique<HybridStore>(path, cfg);
  std::string err;
  ASSERT_EQ(store_->mount(&err), 0) << err;
  EXPECT_EQ(stats().mount_onode_deltas_applied, 0u);
  ASSERT_EQ(store_->umount(), 0);
  store_.reset();
  // With the onodes put too, the deltas replayed are all in RocksDB already.
  crash_after_changes(1, 1);
  if (HasFatalFailure()) return;
  expect_round(1);
  if (HasFatalFailure()) return;
  st = stats();
  EXPECT_EQ(st.mount_onode_deltas_applied, 0u);
  EXPECT_EQ(st.mount_onode_deltas_included, 8u);
  EXPECT_EQ(fsck_errors(true), 0);
  ASSERT_EQ(store_->umount(), 0);
  store_.reset();
  // A checkpoint after the fourth: RocksDB has those four (the ring need
  // not), and the last four come from the ring.
  crash_after_changes(2, 2);
  if (HasFatalFailure()) return;
  expect_round(2);
  if (HasFatalFailure()) return;
  st = stats();
  EXPECT_EQ(st.mount_onode_deltas_applied, 4u);
  EXPECT_EQ(fsck_errors(true), 0);
}

// Data mode: the overwrite is readable at once, nothing of it goes to
// RocksDB, the applier puts it in place, and a remount finds nothing left
// to replay. Twice in the same block, in one transaction and in two, so the
// overlay's order is the staging order.
TEST_F(DeferredTest, InDataModeOverwritesAreReadAtOnceAndLandInOrder) {
  ASSERT_EQ(store_->umount(), 0);
  store_ = std::make_unique<HybridStore>(dir_->path() + "/store",
                                         hybridstore::test::with_option(config(), "hybridstore_small_write_journal", "data"));
  std::string err;
  ASSERT_EQ(store_->mount(&err), 0) << err;
  Transaction t;
  t.write(coll_, obj("a"), 0, std::string(65536, 'a'));
  apply(std::move(t));
  std::string want(65536, 'a');
  Transaction o;
  o.write(coll_, obj("a"), 8192, std::string(8192, 'x'));
  o.write(coll_, obj("a"), 8192, std::string(4096, 'y'));
  apply(std::move(o));
  Transaction o2;
  o2.write(coll_, obj("a"), 12288, std::string(4096, 'z'));
  apply(std::move(o2));
  want.replace(8192, 4096, std::string(4096, 'y'));
  want.replace(12288, 4096, std::string(4096, 'z'));
  EXPECT_GT(pending(), 0u);
  EXPECT_EQ(read_all(coll_, obj("a")), want);
  StoreStats s = stats();  // statfs drains: now on the device
  EXPECT_EQ(pending(), 0u);
  EXPECT_GE(s.deferred_applied, 2u);
  EXPECT_EQ(s.deferred_in_ring, s.deferred_staged) << "every piece was whole blocks";
  EXPECT_EQ(read_all(coll_, obj("a")), want);
  remount();
  EXPECT_EQ(read_all(coll_, obj("a")), want);
  EXPECT_EQ(fsck_errors(true), 0);
}

// The ring's space waits for ring data to be applied too: with a ring of a
// few records, transactions with no deferred write at all (attributes) and
// overwrites that ride in it, hundreds of laps, none waiting for good.
TEST_F(DeferredTest, InDataModeASmallRingLapsWithAndWithoutRingData) {
  ASSERT_EQ(store_->umount(), 0);
  Config cfg = hybridstore::test::with_option(config(), "hybridstore_small_write_journal", "data");
  store_ = std::make_unique<HybridStore>(dir_->path() + "/store2", hybridstore::test::with_option(cfg, "hybridstore_commit_journal_size", "512K"));
  std::string err;
  ASSERT_EQ(store_->mkfs(&err), 0) << err;
  ASSERT_EQ(store_->mount(&err), 0) << err;
  make_coll(coll_);
  Transaction t;
  t.write(coll_, obj("a"), 0, std::string(65536, 'a'));
  apply(std::move(t));
  std::string want(65536, 'a');
  for (int i = 0; i < 400; ++i) {
    Transaction w;
    if (i % 2 == 0) {
      w.setattr(coll_, obj("a"), "k" + std::to_string(i % 7), std::string(3000, static_cast<char>('0' + i % 10)));
    } else {
      const uint64_t off = static_cast<uint64_t>(i % 16) * 4096;
      w.write(coll_, obj("a"), off, std::string(4096, static_cast<char>('A' + i % 26)));
      want.replace(off, 4096, std::string(4096, static_cast<char>('A' + i % 26)));
    }
    ASSERT_EQ(store_->apply_transaction(std::move(w)), 0) << i;
  }
  EXPECT_EQ(read_all(coll_, obj("a")), want);
  EXPECT_GT(stats().deferred_in_ring, 100u);
  ASSERT_EQ(store_->umount(), 0);
  ASSERT_EQ(store_->mount(&err), 0) << err;
  EXPECT_EQ(read_all(coll_, obj("a")), want);
  EXPECT_EQ(fsck_errors(true), 0);
}

// The migration pass sizes objects from RocksDB: with `on`, what only the
// ring and the cache hold of a change must reach RocksDB before it lists.
TEST_F(DeferredTest, InOnModeTheObjectScanSeesChangesOnlyTheRingCarries) {
  ASSERT_EQ(store_->umount(), 0);
  Config cfg = hybridstore::test::with_option(config(), "hybridstore_small_write_journal", "on");
  cfg = hybridstore::test::with_option(cfg, "hybridstore_small_write_checkpoint_ms", "600000");
  store_ = std::make_unique<HybridStore>(dir_->path() + "/store", cfg);
  std::string err;
  ASSERT_EQ(store_->mount(&err), 0) << err;
  Transaction t;
  t.write(coll_, obj("s"), 0, std::string(5000, 's'));
  ASSERT_EQ(store_->apply_transaction(std::move(t)), 0);
  ASSERT_EQ(StoreTestHooks::checkpoint_onodes(*store_), 0);
  // Within the object's last 4 KiB block: the same extents, a new size.
  Transaction grow;
  grow.write(coll_, obj("s"), 5000, std::string(1000, 'g'));
  ASSERT_EQ(store_->apply_transaction(std::move(grow)), 0);
  uint64_t seen = 0;
  ASSERT_EQ(store_->scan_objects([&](const CollectionId& c, const ObjectId& o, const ObjectStat& s) {
    if (c == coll_ && o == obj("s")) seen = s.size;
  }), 0);
  EXPECT_EQ(seen, 6000u);
}

// Dirty onodes are pinned in the cache: their heap has a bound of its own,
// past which transactions wait for a round.
TEST_F(DeferredTest, InOnModeDirtyOnodeBytesStayWithinTheirBound) {
  ASSERT_EQ(store_->umount(), 0);
  Config on = hybridstore::test::with_option(config(), "hybridstore_small_write_journal", "on");
  on = hybridstore::test::with_option(on, "hybridstore_small_write_checkpoint_ms", "600000");
  const std::string value(32 << 10, 'v');
  // The most dirty bytes seen over 64 attribute changes of 64 objects.
  auto peak_with = [&](const Config& cfg, uint64_t* peak) {
    store_ = std::make_unique<HybridStore>(dir_->path() + "/store", cfg);
    std::string err;
    ASSERT_EQ(store_->mount(&err), 0) << err;
    for (int i = 0; i < 64; ++i) {
      Transaction t;
      t.write(coll_, obj("d" + std::to_string(i)), 0, std::string(4096, 'd'));
      ASSERT_EQ(store_->apply_transaction(std::move(t)), 0);
    }
    ASSERT_EQ(StoreTestHooks::checkpoint_onodes(*store_), 0);
    ASSERT_EQ(StoreTestHooks::dirty_onode_bytes(*store_), 0u);
    *peak = 0;
    for (int i = 0; i < 64; ++i) {
      Transaction t;
      t.setattr(coll_, obj("d" + std::to_string(i)), "big", value + std::to_string(i));
      ASSERT_EQ(store_->apply_transaction(std::move(t)), 0);
      *peak = std::max(*peak, StoreTestHooks::dirty_onode_bytes(*store_));
    }
    ASSERT_EQ(store_->umount(), 0);
  };
  uint64_t unbounded = 0, bounded = 0;
  peak_with(on, &unbounded);
  if (HasFatalFailure()) return;
  EXPECT_GT(unbounded, 64u * value.size()) << "all 64 stay dirty under the default bound";
  peak_with(hybridstore::test::with_option(on, "hybridstore_small_write_dirty_bytes", "1M"), &bounded);
  if (HasFatalFailure()) return;
  // One transaction past the bound at most: the next waits for a round.
  EXPECT_LE(bounded, (1u << 20) + 2 * value.size());
  EXPECT_GT(bounded, 0u);
  store_ = std::make_unique<HybridStore>(dir_->path() + "/store", config());
  std::string err;
  ASSERT_EQ(store_->mount(&err), 0) << err;
}

// A checkpoint round is counted with the dirty onodes it wrote and its
// time (small_write_ckpt_*): against txc, what checkpoints cost per op on
// Ceph's fio rows (docs/small-writes.md 12, question 2).
TEST_F(DeferredTest, InOnModeCheckpointRoundsAreCounted) {
  ASSERT_EQ(store_->umount(), 0);
  Config on = hybridstore::test::with_option(config(), "hybridstore_small_write_journal", "on");
  on = hybridstore::test::with_option(on, "hybridstore_small_write_checkpoint_ms", "600000");
  store_ = std::make_unique<HybridStore>(dir_->path() + "/store", on);
  std::string err;
  ASSERT_EQ(store_->mount(&err), 0) << err;
  auto get = [&](const char* name) {
    const int id = store_->perf().find(name);
    EXPECT_GE(id, 0) << name;
    return store_->perf().get(id);
  };
  for (int i = 0; i < 3; ++i) {
    Transaction t;
    t.write(coll_, obj("c" + std::to_string(i)), 0, std::string(4096, 'c'));
    ASSERT_EQ(store_->apply_transaction(std::move(t)), 0);
  }
  ASSERT_EQ(StoreTestHooks::checkpoint_onodes(*store_), 0);
  const uint64_t rounds = get("small_write_ckpt_rounds"), onodes = get("small_write_ckpt_onodes");
  const uint64_t timed = get("small_write_ckpt_lat");
  const uint64_t holds = get("small_write_ckpt_holds");
  // Two of the three objects changed, one of them twice.
  for (int i : {0, 1, 0}) {
    Transaction t;
    t.setattr(coll_, obj("c" + std::to_string(i)), "k", "v" + std::to_string(i));
    ASSERT_EQ(store_->apply_transaction(std::move(t)), 0);
  }
  ASSERT_GT(StoreTestHooks::dirty_onode_bytes(*store_), 0u);
  EXPECT_EQ(get("small_write_ckpt_rounds"), rounds) << "a round the test did not ask for";
  ASSERT_EQ(StoreTestHooks::checkpoint_onodes(*store_), 0);
  EXPECT_EQ(get("small_write_ckpt_rounds"), rounds + 1);
  EXPECT_EQ(get("small_write_ckpt_onodes"), onodes + 2);
  EXPECT_EQ(get("small_write_ckpt_postponed"), 0u);
  EXPECT_EQ(get("small_write_ckpt_lat"), timed + 1);
  EXPECT_EQ(get("small_write_ckpt_holds"), holds + 1) << "both objects in one collection";
  EXPECT_EQ(StoreTestHooks::dirty_onode_bytes(*store_), 0u);
  // Seventy of one collection's objects dirty: a round takes the
  // collection's lock for 32 of them at a time, and writes them all.
  for (int i = 0; i < 70; ++i) {
    Transaction t;
    t.write(coll_, obj("m" + std::to_string(i)), 0, std::string(4096, 'm'));
    ASSERT_EQ(store_->apply_transaction(std::move(t)), 0);
  }
  ASSERT_EQ(StoreTestHooks::checkpoint_onodes(*store_), 0);
  const uint64_t onodes70 = get("small_write_ckpt_onodes"), holds70 = get("small_write_ckpt_holds");
  for (int i = 0; i < 70; ++i) {
    Transaction t;
    t.setattr(coll_, obj("m" + std::to_string(i)), "k", "m" + std::to_string(i));
    ASSERT_EQ(store_->apply_transaction(std::move(t)), 0);
  }
  ASSERT_EQ(StoreTestHooks::checkpoint_onodes(*store_), 0);
  EXPECT_EQ(get("small_write_ckpt_onodes"), onodes70 + 70);
  EXPECT_EQ(get("small_write_ckpt_holds"), holds70 + 3);
  EXPECT_EQ(StoreTestHooks::dirty_onode_bytes(*store_), 0u);
  ASSERT_EQ(store_->umount(), 0);
  store_ = std::make_unique<HybridStore>(dir_->path() + "/store", config());
  ASSERT_EQ(store_->mount(&err), 0) << err;
  for (int i = 0; i < 70; ++i) {
    std::string v;
    ASSERT_EQ(store_->getattr(coll_, obj("m" + std::to_string(i)), "k", &v), 0) << i;
    EXPECT_EQ(v, "m" + std::to_string(i));
  }
}

// An inline RocksDB sync frees the whole ring at once, onode deltas RocksDB
// lacks included: `on` refuses to run with it.
TEST_F(DeferredTest, OnModeWithInlineRingSyncsIsRefused) {
  ASSERT_EQ(store_->umount(), 0);
  Config cfg = hybridstore::test::with_option(config(), "hybridstore_small_write_journal", "on");
  cfg = hybridstore::test::with_option(cfg, "hybridstore_commit_checkpointer", "false");
  store_ = std::make_unique<HybridStore>(dir_->path() + "/store", cfg);
  std::string err;
  EXPECT_EQ(store_->mount(&err), -EINVAL);
  EXPECT_NE(err.find("hybridstore_commit_checkpointer=true"), std::string::npos) << err;
  store_ = std::make_unique<HybridStore>(dir_->path() + "/store", config());
  ASSERT_EQ(store_->mount(&err), 0) << err;
}

TEST_F(DeferredTest, DataModeWithoutTheCommitJournalIsRefused) {
  ASSERT_EQ(store_->umount(), 0);
  Config cfg = hybridstore::test::with_option(config(), "hybridstore_small_write_journal", "data");
  cfg = hybridstore::test::with_option(cfg, "hybridstore_commit_journal_size", "0");
  store_ = std::make_unique<HybridStore>(dir_->path() + "/store", cfg);
  std::string err;
  EXPECT_EQ(store_->mount(&err), -EINVAL);
  EXPECT_NE(err.find("hybridstore_commit_journal_size=0"), std::string::npos) << err;
  store_ = std::make_unique<HybridStore>(dir_->path() + "/store", config());
  ASSERT_EQ(store_->mount(&err), 0) << err;
}

// `data` is the default: mkfs makes format 6 with it; `off` makes format
// 5, which the next read-write mount with the default upgrades; left at its
// default, the option yields to a store without a commit journal.
TEST_F(DeferredTest, DataIsTheDefaultAndYieldsToAStoreWithoutAJournal) {
  ASSERT_EQ(store_->umount(), 0);
  StoreProbe probe;
  ASSERT_EQ(HybridStore::probe(dir_->path() + "/store", config(), &probe, nullptr), 0);
  EXPECT_EQ(probe.format_version, kFormatSmallWriteJournal) << "the fixture's store, made with the defaults";

  const std::string off_path = dir_->path() + "/off";
  const Config off = hybridstore::test::with_option(config(), "hybridstore_small_write_journal", "off");
  store_ = std::make_unique<HybridStore>(off_path, off);
  std::string err;
  ASSERT_EQ(store_->mkfs(&err), 0) << err;
  ASSERT_EQ(HybridStore::probe(off_path, off, &probe, nullptr), 0);
  EXPECT_EQ(probe.format_version, kFormatWalkedJournal);
  ASSERT_EQ(store_->mount(&err), 0) << err;
  ASSERT_EQ(store_->umount(), 0);
  ASSERT_EQ(HybridStore::probe(off_path, off, &probe, nullptr), 0);
  EXPECT_EQ(probe.format_version, kFormatWalkedJournal) << "off leaves the format alone";
  store_ = std::make_unique<HybridStore>(off_path, config());
  ASSERT_EQ(store_->mount(&err), 0) << err;
  ASSERT_EQ(store_->umount(), 0);
  ASSERT_EQ(HybridStore::probe(off_path, config(), &probe, nullptr), 0);
  EXPECT_EQ(probe.format_version, kFormatSmallWriteJournal) << "upgraded by a mount with the default";

  const std::string nojournal_path = dir_->path() + "/nojournal";
  const Config nojournal = hybridstore::test::with_option(config(), "hybridstore_commit_journal_size", "0");
  store_ = std::make_unique<HybridStore>(nojournal_path, nojournal);
  ASSERT_EQ(store_->mkfs(&err), 0) << err;
  ASSERT_EQ(store_->mount(&err), 0) << err;
  make_coll(coll_);
  Transaction t;
  t.write(coll_, obj("a"), 0, std::string(65536, 'a'));
  apply(std::move(t));
  Transaction o;
  o.write(coll_, obj("a"), 8192, std::string(4096, 'x'));
  apply(std::move(o));
  EXPECT_EQ(stats().deferred_in_ring, 0u) << "no ring to ride in";
  ASSERT_EQ(store_->umount(), 0);
  ASSERT_EQ(HybridStore::probe(nojournal_path, nojournal, &probe, nullptr), 0);
  EXPECT_EQ(probe.format_version, kFormatWalkedJournal);
  ASSERT_EQ(store_->mount(&err), 0) << err;
  std::string want(65536, 'a');
  want.replace(8192, 4096, std::string(4096, 'x'));
  EXPECT_EQ(read_all(coll_, obj("a")), want);
}

// Built in pieces for speed: the bytes must be the sealed
// record of [tier][varint offset][length-prefixed data], tagged "DEFR", that
// records staged before were written as.
TEST(DeferredRecord, IsTheSealedLayoutOfTierOffsetAndData) {
  for (size_t len : {size_t{0}, size_t{1}, size_t{127}, size_t{128}, size_t{4096}, size_t{16384}, size_t{70000}})
    for (uint64_t off : {uint64_t{0}, uint64_t{8192}, uint64_t{1} << 40}) {
      std::string data(len, 'd');
      std::string body;
      put_u8(&body, static_cast<uint8_t>(Tier::kSsd));
      put_varint(&body, off);
      put_bytes(&body, data);
      EXPECT_TRUE(encode_deferred(Tier::kSsd, off, data) == seal_record(0x44454652, 1, body)) << len << " " << off;
    }
}

TEST(DeferredRecord, DecoderRejectsGarbage) {
  std::string rec = encode_deferred(Tier::kHdd, 8192, "payload");
  Tier t;
  uint64_t off;
  std::string data;
  ASSERT_TRUE(decode_deferred(rec, &t, &off, &data));
  EXPECT_EQ(t, Tier::kHdd);
  EXPECT_EQ(off, 8192u);
  EXPECT_EQ(data, "payload");
  for (size_t i = 0; i < rec.size(); ++i) {
    std::string bad = rec;
    bad[i] ^= 4;
    EXPECT_FALSE(decode_deferred(bad, &t, &off, &data));
  }
}

}  // namespace

namespace {

// docs/kvfs.md 2.6: a D record left over a range that was freed and then
// lent to the KV file system must not overwrite the kvfs's bytes at replay.
TEST(DeferredReplay, SkipsThePartsOfRecordsInsideTheKvFsChunks) {
  test::TempDir dir("defer-exclude");
  rocksdb::Options o;
  o.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(o, dir.file("db"), &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  DeviceOpenOptions dopt;
  dopt.create = true;
  dopt.create_size = 8 << 20;
  dopt.direct_io = false;
  std::string err;
  auto ssd = open_block_device(dir.file("ssd"), dopt, &err);
  ASSERT_TRUE(ssd) << err;
  const uint64_t chunk = 1 << 20, g = 1 << 20;  // the kvfs owns [1 MiB, 2 MiB)
  const std::string kvfs(g, 'K');
  ASSERT_EQ(ssd->write(chunk, kvfs.data(), g), 0);
  // One record straddles the chunk's start (4 KiB before, 4 KiB inside),
  // one lies inside it, one outside, unaligned.
  ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), deferred_key(1), encode_deferred(Tier::kSsd, chunk - 4096,
                                                                                 std::string(8192, 'a')))
                  .ok());
  ASSERT_TRUE(
      db->Put(rocksdb::WriteOptions(), deferred_key(2), encode_deferred(Tier::kSsd, chunk + 65536, "stale")).ok());
  ASSERT_TRUE(
      db->Put(rocksdb::WriteOptions(), deferred_key(3), encode_deferred(Tier::kSsd, 3 * g + 100, "keep")).ok());
  PerTier<BlockDevice*> devs;
  devs[Tier::kSsd] = ssd.get();
  DeferredWriter::Exclude ex;
  ex.tier = Tier::kSsd;
  ex.ranges = {{chunk, g}};
  EXPECT_EQ(DeferredWriter::replay(db.get(), devs, &err, nullptr, &ex), 2) << err;
  std::string got(g, '\0');
  ASSERT_EQ(ssd->read(chunk, got.data(), g), 0);
  EXPECT_TRUE(got == kvfs) << "a replay wrote into the KV file system's chunk";
  std::string before(4096, '\0');
  ASSERT_EQ(ssd->read(chunk - 4096, before.data(), 4096), 0);
  EXPECT_EQ(before, std::string(4096, 'a')) << "the part outside the chunk is still replayed";
  std::string keep(4, '\0');
  ASSERT_EQ(ssd->read(3 * g + 100, keep.data(), 4), 0);
  EXPECT_EQ(keep, "keep");
  // Every record is gone, the dropped ones too.
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  const std::string prefix(1, kv::kDeferred);
  it->Seek(prefix);
  EXPECT_FALSE(it->Valid() && it->key().starts_with(prefix));
  it.reset();
  // Another tier's chunks exclude nothing here.
  ASSERT_TRUE(
      db->Put(rocksdb::WriteOptions(), deferred_key(4), encode_deferred(Tier::kSsd, chunk + 8192, "lands")).ok());
  ex.tier = Tier::kHdd;
  EXPECT_EQ(DeferredWriter::replay(db.get(), devs, &err, nullptr, &ex), 1) << err;
  std::string lands(5, '\0');
  ASSERT_EQ(ssd->read(chunk + 8192, lands.data(), 5), 0);
  EXPECT_EQ(lands, "lands");
}

}  // namespace
