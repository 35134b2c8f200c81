// The store's data cache (hybridstore_data_cache_size): reads are served
// from it, every way the engine writes a device keeps it right, and a deep
// fsck still reads the media.
#include <fcntl.h>
#include <unistd.h>

#include "hybridstore/store/test_hooks.h"
#include "hybridstore/tier/migrator.h"
#include "store_helpers.h"

using namespace hybridstore;
using hybridstore::test::StoreTest;

namespace {

class DataCacheTest : public StoreTest {
 protected:
  Config config() override {
    Config c = hybridstore::test::small_store_config();
    std::string err;
    // Objects stay where they were written: a promotion on reads would
    // move one away from the block a test flips.
    c.set("hybridstore_tier_promote_hits", "0", &err);
    for (const auto& [k, v] : extra_) EXPECT_EQ(c.set(k, v, &err), 0) << err;
    return c;
  }
  void SetUp() override {
    StoreTest::SetUp();
    make_coll(coll_);
  }
  uint64_t counter(const std::string& name) {
    int i = store_->perf().find(name);
    EXPECT_GE(i, 0) << name;
    return store_->perf().get(i);
  }
  // On the HDD when hinted as librbd hints its 4 MiB objects: written to
  // the device at once (the SSD's sections stage small objects a while).
  std::string put(const ObjectId& o, size_t size, bool on_hdd = false) {
    std::string data = hybridstore::test::random_bytes(rng_, size);
    Transaction t;
    t.touch(coll_, o);
    if (on_hdd) t.set_alloc_hint(coll_, o, 4u << 20, 4u << 20, 0);
    t.write(coll_, o, 0, data);
    apply(std::move(t));
    return data;
  }
  // Where the object's first extent lies: its device file and offset.
  std::pair<std::string, uint64_t> first_block(const ObjectId& o) {
    std::shared_ptr<const Onode> on;
    EXPECT_EQ(StoreTestHooks::onode(*store_, coll_, o, &on), 0);
    const DataExtent& e = on->extents.extents().begin()->second;
    return {dir_->path() + "/store/block." + tier_name(e.tier), e.physical};
  }
  void flip_on_media(const std::string& dev, uint64_t off) {
    int fd = ::open(dev.c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0) << dev;
    char c;
    ASSERT_EQ(::pread(fd, &c, 1, static_cast<off_t>(off + 100)), 1);
    c = static_cast<char>(~c);
    ASSERT_EQ(::pwrite(fd, &c, 1, static_cast<off_t>(off + 100)), 1);
    ::fsync(fd);
    ::close(fd);
  }
  std::vector<std::pair<std::string, std::string>> extra_;
};

}  // namespace

TEST_F(DataCacheTest, ASecondReadIsServedFromTheCache) {
  std::string data = put(obj("a"), 1 << 20);
  ASSERT_EQ(store_->flush(), 0);
  EXPECT_EQ(read_all(coll_, obj("a")), data);
  const uint64_t missed = counter("data_cache_miss_bytes");
  EXPECT_GE(missed, 1u << 20);
  EXPECT_EQ(counter("data_cache_hit_bytes"), 0u);
  EXPECT_GE(counter("data_cache_bytes"), 1u << 20);
  EXPECT_EQ(read_all(coll_, obj("a")), data);
  EXPECT_GE(counter("data_cache_hit_bytes"), 1u << 20);
  EXPECT_EQ(counter("data_cache_miss_bytes"), missed);
}

TEST_F(DataCacheTest, OverwritesReadBackNewWhetherDeferredOrApplied) {
  for (const char* name : {"small", "big"}) {
    const size_t size = std::string(name) == "small" ? 64 << 10 : 4 << 20;
    std::string data = put(obj(name), size);
    ASSERT_EQ(store_->flush(), 0);
    EXPECT_EQ(read_all(coll_, obj(name)), data);  // cached
    for (int i = 0; i < 8; ++i) {
      const uint64_t off = (rng_() % (size / 4096)) * 4096;
      std::string piece(4096, static_cast<char>('a' + i));
      Transaction t;
      t.write(coll_, obj(name), off, piece);
      apply(std::move(t));
      data.replace(off, piece.size(), piece);
      EXPECT_EQ(read_all(coll_, obj(name)), data) << name << " before the deferred write is applied";
      ASSERT_EQ(store_->flush(), 0);
      EXPECT_EQ(read_all(coll_, obj(name)), data) << name << " after";
    }
    // Moved to the other tier and back: new places, the old ones freed.
    MigrationReport rep;
    ASSERT_EQ(store_->migrate_now(&rep), 0);
    EXPECT_EQ(read_all(coll_, obj(name)), data);
  }
  EXPECT_GT(counter("data_cache_hit_bytes"), 0u);
  EXPECT_EQ(fsck_errors(true), 0);
}

// An overwrite in place is staged before it reaches the device: the cache,
// like the device, is behind until then, and the read must not use it.
TEST_F(DataCacheTest, AnInPlaceOverwriteIsReadBeforeItReachesTheDevice) {
  ASSERT_EQ(store_->umount(), 0);
  extra_ = {{"hybridstore_tier_absorb_max", "0"}, {"hybridstore_deferred_max_delay_ms", "60000"},
            {"hybridstore_deferred_batch_bytes", "1G"}};
  dir_ = std::make_unique<hybridstore::test::TempDir>("store");
  make_store();
  make_coll(coll_);
  std::string data = put(obj("rbd"), 1 << 20, /*on_hdd=*/true);
  ASSERT_EQ(store_->flush(), 0);
  EXPECT_EQ(read_all(coll_, obj("rbd")), data);  // cached
  const uint64_t deferred = counter("deferred_write_ops");
  for (int i = 0; i < 4; ++i) {
    const uint64_t off = (37 + 61 * i) * 4096;
    Transaction t;
    t.write(coll_, obj("rbd"), off, std::string(4096, static_cast<char>('p' + i)));
    apply(std::move(t));
    data.replace(off, 4096, std::string(4096, static_cast<char>('p' + i)));
    EXPECT_EQ(read_all(coll_, obj("rbd")), data) << "write " << i << ", staged";
  }
  EXPECT_EQ(counter("deferred_write_ops"), deferred + 4);
  ASSERT_EQ(store_->flush(), 0);
  EXPECT_EQ(read_all(coll_, obj("rbd")), data);
  EXPECT_EQ(read_all(coll_, obj("rbd")), data);
}

TEST_F(DataCacheTest, RemovedThenReusedSpaceReadsTheNewObject) {
  std::string old_data = put(obj("old"), 256 << 10);
  ASSERT_EQ(store_->flush(), 0);
  EXPECT_EQ(read_all(coll_, obj("old")), old_data);
  Transaction r;
  r.remove(coll_, obj("old"));
  apply(std::move(r));
  ASSERT_EQ(store_->flush(), 0);
  for (int i = 0; i < 4; ++i) {
    std::string data = put(obj("new" + std::to_string(i)), 256 << 10);
    ASSERT_EQ(store_->flush(), 0);
    EXPECT_EQ(read_all(coll_, obj("new" + std::to_string(i))), data);
  }
}

// The cache keeps a read from seeing rot that came after it (as BlueStore's
// does), but a deep fsck reads the media and finds it.
TEST_F(DataCacheTest, DeepFsckReadsTheMediaNotTheCache) {
  std::string data = put(obj("rot"), 256 << 10, /*on_hdd=*/true);
  ASSERT_EQ(store_->flush(), 0);
  EXPECT_EQ(read_all(coll_, obj("rot")), data);
  auto [dev, off] = first_block(obj("rot"));
  flip_on_media(dev, off);
  EXPECT_EQ(read_all(coll_, obj("rot")), data);
  FsckReport rep;
  EXPECT_NE(store_->fsck(true, &rep), 0);
  ASSERT_FALSE(rep.problems.empty());
  EXPECT_NE(rep.problems[0].find("checksum"), std::string::npos) << rep.problems[0];
  // So does a read that asks for the media (Ceph's deep scrub).
  std::string out;
  EXPECT_EQ(store_->read(coll_, obj("rot"), 0, 256 << 10, &out, kReadNoHeat | kReadUncached), -EIO);
  EXPECT_EQ(read_all(coll_, obj("rot")), data);
  flip_on_media(dev, off);  // put it back for the fixture's fsck
}

TEST_F(DataCacheTest, ZeroSizeTurnsItOff) {
  ASSERT_EQ(store_->umount(), 0);
  extra_ = {{"hybridstore_data_cache_size", "0"}};
  dir_ = std::make_unique<hybridstore::test::TempDir>("store");
  make_store();
  make_coll(coll_);
  std::string data = put(obj("a"), 256 << 10, /*on_hdd=*/true);
  ASSERT_EQ(store_->flush(), 0);
  EXPECT_EQ(read_all(coll_, obj("a")), data);
  auto [dev, off] = first_block(obj("a"));
  flip_on_media(dev, off);
  std::string out;
  EXPECT_EQ(store_->read(coll_, obj("a"), 0, 256 << 10, &out), -EIO);  // the media, every time
  flip_on_media(dev, off);
  EXPECT_EQ(counter("data_cache_hit_bytes") + counter("data_cache_miss_bytes"), 0u);
}

// read_shared: the cached bytes themselves once the cache holds the range,
// the ordinary read otherwise; either way the object's bytes.
TEST_F(DataCacheTest, SharedReadsHandOutCachedBytesOnlyWhereTheyAreRight) {
  auto shared_read = [&](const ObjectId& o, uint64_t off, uint64_t len, uint32_t flags, size_t* npieces) {
    std::string copy;
    std::vector<HybridStore::ReadPiece> pieces;
    int r = store_->read_shared(
        coll_, o, off, len, [&](uint64_t n) { copy.resize(n); return copy.data(); }, &pieces, flags);
    EXPECT_GE(r, 0);
    *npieces = pieces.size();
    if (pieces.empty()) return copy;
    std::string s;
    for (const auto& p : pieces) s.append(p.data, p.len);
    EXPECT_EQ(static_cast<int>(s.size()), r);
    return s;
  };
  std::string data = put(obj("s"), 1 << 20, /*on_hdd=*/true);
  ASSERT_EQ(store_->flush(), 0);
  size_t n = 0;
  EXPECT_EQ(shared_read(obj("s"), 0, 0, 0, &n), data);
  EXPECT_EQ(n, 0u) << "first read: from the device";
  EXPECT_EQ(shared_read(obj("s"), 0, 0, 0, &n), data);
  EXPECT_GT(n, 0u) << "second read: from the cache";
  EXPECT_EQ(shared_read(obj("s"), 5000, 70000, 0, &n), data.substr(5000, 70000));
  EXPECT_GT(n, 0u);
  EXPECT_EQ(shared_read(obj("s"), 0, 0, kReadUncached, &n), data);
  EXPECT_EQ(n, 0u) << "a read asking for the media";
  // An overwrite staged, not yet on the device: never from the cache.
  Transaction t;
  t.write(coll_, obj("s"), 8192, std::string(4096, 'w'));
  apply(std::move(t));
  data.replace(8192, 4096, std::string(4096, 'w'));
  EXPECT_EQ(shared_read(obj("s"), 0, 65536, 0, &n), data.substr(0, 65536));
  ASSERT_EQ(store_->flush(), 0);
  EXPECT_EQ(shared_read(obj("s"), 0, 0, 0, &n), data);
  // (The overwrite itself may still be staged on the SSD: the range beside it.)
  EXPECT_EQ(shared_read(obj("s"), 65536, 0, 0, &n), data.substr(65536));
  EXPECT_GT(n, 0u);
  // A hole: the ordinary read, zeros.
  Transaction z;
  z.zero(coll_, obj("s"), 0, 65536);
  apply(std::move(z));
  data.replace(0, 65536, std::string(65536, '\0'));
  EXPECT_EQ(shared_read(obj("s"), 0, 0, 0, &n), data);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(shared_read(obj("s"), 65536, 0, 0, &n), data.substr(65536));
}
