// Shared by the KvFs tests: a lender that hands out G-aligned space from a
// bump pointer until its budget is gone, the test parameters, and a device
// file.
#pragma once
#include <gtest/gtest.h>

#include <cerrno>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <rocksdb/write_batch.h>

#include "hscommon/encoding.h"
#include "hsio/block_device.h"
#include "hybridstore/kv/kv_schema.h"
#include "hybridstore/kvfs/kvfs.h"
#include "kvfs/kvfs_test_util.h"

namespace hybridstore::test {

class FakeLender : public KvFsLender {
 public:
  // Lends at most `budget` bytes in all, from kHead up.
  explicit FakeLender(uint64_t budget) : budget_(budget) {}
  uint64_t unit() const override { return kG; }
  int lend(uint64_t want, std::vector<Interval>* out) override {
    std::lock_guard<std::mutex> l(mutex_);
    const uint64_t give = std::min(want, budget_ - lent_);
    if (give < kG || refuse_next_ > 0 || (whole_ && give < want)) {
      refuse_next_ -= refuse_next_ > 0;
      ++refusals_;
      return -ENOSPC;
    }
    out->push_back(Interval{next_, give});
    next_ += give;
    lent_ += give;
    return 0;
  }
  void take_back(const std::vector<Interval>& ranges) override {
    std::lock_guard<std::mutex> l(mutex_);
    for (const Interval& i : ranges) taken_back_ += i.length;
  }
  uint64_t lendable() const override {
    std::lock_guard<std::mutex> l(mutex_);
    return refuse_next_ > 0 || budget_ < lent_ + kG ? 0 : (budget_ - lent_) / kG * kG;
  }
  // The next `n` lends are refused whatever the budget (a tier that frees
  // space a moment later).
  void refuse_next(uint64_t n) {
    std::lock_guard<std::mutex> l(mutex_);
    refuse_next_ = n;
  }
  // As the store's tiers lend (TierSpace::lend): all of an ask or nothing.
  void lend_whole_asks_only() {
    std::lock_guard<std::mutex> l(mutex_);
    whole_ = true;
  }
  void set_budget(uint64_t b) {
    std::lock_guard<std::mutex> l(mutex_);
    budget_ = b;
  }
  uint64_t lent() const {
    std::lock_guard<std::mutex> l(mutex_);
    return lent_;
  }
  uint64_t refusals() const {
    std::lock_guard<std::mutex> l(mutex_);
    return refusals_;
  }
  uint64_t taken_back() const {
    std::lock_guard<std::mutex> l(mutex_);
    return taken_back_;
  }

 private:
  mutable std::mutex mutex_;
  uint64_t budget_;
  uint64_t next_ = kHead;
  uint64_t lent_ = 0;
  uint64_t refusals_ = 0;
  uint64_t refuse_next_ = 0;
  uint64_t taken_back_ = 0;
  bool whole_ = false;
};

inline KvFsParams test_params() {
  KvFsParams p;
  p.block = kB;
  p.alloc_unit = kA;
  p.head = kHead;
  p.slots = KvFsSuperSlotsAt{2 * kB, kB};
  p.initial_size = 4 * kG;
  p.log_segment = 4 * kA;
  p.log_compact = 1ull << 40;  // never, unless a test asks
  p.write_buffer = 16 * kB;
  p.grow_wait = std::chrono::milliseconds(0);
  return p;
}

inline std::unique_ptr<BlockDevice> open_kvfs_media(const std::string& path) {
  DeviceOpenOptions o;
  o.create = true;
  o.create_size = kDevSize;
  o.backend = IoBackend::kPosix;
  std::string err;
  auto dev = open_block_device(path, o, &err);
  EXPECT_TRUE(dev) << err;
  return dev;
}

inline const Uuid& fs_uuid() {
  static const Uuid u = test_uuid(0x11);
  return u;
}
inline const Uuid& fs_fsid() {
  static const Uuid u = test_uuid(0x22);
  return u;
}

inline std::unique_ptr<KvFs> mount_kvfs(BlockDevice* dev, KvFsLender* lender, const KvFsParams& p = test_params()) {
  std::unique_ptr<KvFs> fs;
  std::string why;
  EXPECT_EQ(KvFs::mount(dev, p, fs_uuid(), fs_fsid(), lender, &fs, &why), 0) << why;
  return fs;
}

inline std::unique_ptr<KvFs> format_and_mount(BlockDevice* dev, KvFsLender* lender,
                                              const KvFsParams& p = test_params()) {
  std::string why;
  EXPECT_EQ(KvFs::format(dev, p, fs_uuid(), fs_fsid(), lender, &why), 0) << why;
  return mount_kvfs(dev, lender, p);
}

// The whole file, through a readable handle.
inline std::string read_all(KvFs* fs, const std::string& dir, const std::string& name, int* result = nullptr) {
  std::unique_ptr<KvFsReadableFile> f;
  std::string why;
  int r = fs->open_readable(dir, name, &f, &why);
  if (result) *result = r;
  if (r < 0) return "";
  std::string out(f->size(), '\0');
  uint64_t got = 0;
  r = f->read(0, out.size(), out.data(), &got, &why);
  EXPECT_EQ(r, 0) << why;
  if (result) *result = r;
  out.resize(got);
  return out;
}

// A transaction's batch as the committer journals it: key k<seq> = v<seq>,
// and the journal number RocksDB keeps.
inline std::string journal_test_batch(uint64_t seq) {
  rocksdb::WriteBatch b;
  b.Put("k" + std::to_string(seq), "v" + std::to_string(seq));
  std::string n;
  put_fixed64(&n, seq);
  b.Put(kv::journal_seq_key(), n);
  return b.Data();
}

}  // namespace hybridstore::test
