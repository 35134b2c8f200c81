#include "hybridstore/kvfs/kv_device.h"

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>
#include <rocksdb/env.h>
#include <rocksdb/version.h>

#include "hsio/region_device.h"
#include "hybridstore/kv/commit_journal.h"
#include "hybridstore/kvfs/kvfs_rocksdb.h"

namespace hybridstore {

namespace {

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
uint64_t align_down(uint64_t v, uint64_t a) { return v / a * a; }

}  // namespace

int size_kv_device(const KvSizingRequest& req, KvSizing* out, std::string* why) {
  const uint64_t G = req.lend_unit, A = req.alloc_unit;
  if (G == 0 || A == 0 || G % A != 0) {
    *why = fmt::format("kvfs: lend unit {} is not a multiple of the allocation unit {}", G, A);
    return -EINVAL;
  }
  constexpr uint64_t MiB = 1 << 20, GiB = 1ull << 30;
  KvSizing s;
  // What RocksDB's first files need besides the ring and the log: a
  // MANIFEST, a WAL, OPTIONS and a few tables of a young store.
  const uint64_t floor_initial = req.journal + 4 * align_up(req.log_segment, A) + 32 * MiB;
  s.initial = req.initial ? req.initial
                          : std::max(std::clamp(req.usable / 16, 64 * MiB, 16 * GiB), floor_initial);
  s.initial = align_up(s.initial, G);
  s.grow_step = align_up(req.grow_step ? req.grow_step : std::clamp(req.usable / 64, G, GiB), G);
  if (req.reserve) {
    s.reserve = align_up(req.reserve, G);
  } else {
    const uint64_t want = std::clamp(req.usable / 32, 2 * s.grow_step, 4 * GiB);
    // A flush writes a table as large as the memtable while that memtable's
    // WAL is still alive. When object data has filled the tier to the floor,
    // RocksDB grows only into the floor, so the floor must hold both. On a
    // small tier this takes up to a quarter of it.
    const uint64_t burst = std::min(2 * req.memtable, req.usable / 4);
    s.reserve = align_up(std::max(std::min(want, req.usable / 8), burst), G);
  }
  // At least 16 segments in the first chunks, so the log's first laps
  // never wait for growth.
  s.log_segment = std::max(A, align_down(std::min(req.log_segment, s.initial / 16), A));
  const uint64_t need = s.initial + s.reserve + 64 * req.tier_unit;
  if (req.usable < need) {
    *why = fmt::format(
        "SSD tier too small to hold RocksDB (needs {} bytes, has {}); raise it or use "
        "hybridstore_kv_location=directory",
        need, req.usable);
    return -EINVAL;
  }
  if (s.initial < floor_initial) {
    *why = fmt::format("kvfs: an initial size of {} bytes cannot hold the journal ({}) and RocksDB's first files",
                       s.initial, req.journal);
    return -EINVAL;
  }
  *out = s;
  return 0;
}

int KvDevice::format(std::shared_ptr<BlockDevice> dev, const KvFsParams& params, const Uuid& kvfs_uuid,
                     const Uuid& fsid, KvFsLender* lender, uint64_t journal_size, std::string* error,
                     uint64_t ring_align) {
  if (int r = KvFs::format(dev.get(), params, kvfs_uuid, fsid, lender, error); r < 0) return r;
  if (journal_size == 0) return 0;
  std::unique_ptr<KvFs> fs;
  if (int r = KvFs::mount(dev.get(), params, kvfs_uuid, fsid, lender, &fs, error); r < 0) return r;
  std::vector<KvFsExtent> ring;
  if (int r = fs->make_journal(journal_size, &ring, error, ring_align); r < 0) return r;
  return fs->unmount(error);
}

int KvDevice::mount(std::shared_ptr<BlockDevice> dev, const KvFsParams& params, const Uuid& kvfs_uuid,
                    const Uuid& fsid, KvFsLender* lender, std::unique_ptr<KvDevice>* out, std::string* error) {
  std::unique_ptr<KvDevice> k(new KvDevice());
  k->dev_ = std::move(dev);
#if HS_HAVE_KVFS_ROCKSDB
  if (int r = KvFs::mount(k->dev_.get(), params, kvfs_uuid, fsid, lender, &k->fs_, error); r < 0) return r;
  k->rocks_fs_ = std::make_shared<KvRocksFileSystem>(*k->fs_);
  k->env_ = rocksdb::NewCompositeEnv(k->rocks_fs_);
#else
  *error = fmt::format("RocksDB on the device needs RocksDB 7 or later; this build has RocksDB {}.{}",
                       ROCKSDB_MAJOR, ROCKSDB_MINOR);
  return -EOPNOTSUPP;
#endif
  *out = std::move(k);
  return 0;
}

KvDevice::~KvDevice() {
  // RocksDB's view first, then the kvfs it points at.
  env_.reset();
  rocks_fs_.reset();
  fs_.reset();
}

std::unique_ptr<CommitJournal> KvDevice::open_journal(uint64_t size, const Uuid& fsid, uint64_t discard_span,
                                                      std::string* error) {
  error->clear();
  std::vector<KvFsExtent> ring = fs_->journal();
  if (ring.empty()) {
    if (size == 0) return nullptr;
    // The span the checkpoint discards is the erase block the ring aligns to.
    if (fs_->make_journal(size, &ring, error, discard_span) < 0) return nullptr;
  }
  return journal_on(ring, fsid, discard_span, error);
}

std::unique_ptr<CommitJournal> KvDevice::resize_journal(uint64_t size, const Uuid& fsid, uint64_t discard_span,
                                                        std::string* error, int* code) {
  error->clear();
  std::vector<KvFsExtent> ring;
  if (int r = fs_->resize_journal(size, &ring, error, discard_span); r < 0) {
    *code = r;
    return nullptr;
  }
  *code = 0;
  auto journal = journal_on(ring, fsid, discard_span, error);
  if (!journal) *code = -EIO;
  return journal;
}

std::unique_ptr<CommitJournal> KvDevice::journal_on(const std::vector<KvFsExtent>& ring, const Uuid& fsid,
                                                    uint64_t discard_span, std::string* error) {
  std::vector<RegionExtent> extents;
  for (const KvFsExtent& e : ring) extents.push_back(RegionExtent{e.offset, e.length});
  auto region = RegionDevice::make(dev_, std::move(extents), error);
  if (!region) {
    *error = "the commit journal's ring in the kvfs: " + *error;
    return nullptr;
  }
  auto journal = CommitJournal::open_region(std::move(region), fsid, error);
  if (journal) journal->set_discard_span(discard_span);
  return journal;
}

int KvDevice::unmount(std::string* error) { return fs_->unmount(error); }

}  // namespace hybridstore
