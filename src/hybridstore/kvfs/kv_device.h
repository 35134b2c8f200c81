// RocksDB and the commit journal on the fastest tier's device (docs/kvfs.md
// 2.4, 4, 5.1-5.3): the kvfs over the tier's decorated device, RocksDB's
// FileSystem and Env over the kvfs, and the journal's ring as a region of
// the same device. All three sit on one decorated device, beside the
// tier's object data, so fault injection and the device models see one
// drive, as a real one would be.
//
// Not yet used by mkfs and mount (docs/kvfs.md section 9, step 7): they
// need label v2 (where the kvfs is, its uuid) and the tier's lending.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "hsio/block_device.h"
#include "hybridstore/format/store_format.h"
#include "hybridstore/kvfs/kvfs.h"

namespace rocksdb {
class Env;
}  // namespace rocksdb

namespace hybridstore {

class CommitJournal;
class KvRocksFileSystem;

// What sizes the kvfs on a tier (docs/kvfs.md 2.4). A zero size asks for
// the automatic value.
struct KvSizingRequest {
  uint64_t usable = 0;         // bytes of the tier from H to its end
  uint64_t lend_unit = 1 << 20;  // G: what the tier lends in
  uint64_t tier_unit = 4096;   // the tier's own allocation unit
  uint64_t journal = 16 << 20;  // J, the commit journal's ring
  uint64_t initial = 0;
  uint64_t grow_step = 0;
  uint64_t reserve = 0;
  uint64_t log_segment = 4 << 20;
  uint64_t alloc_unit = 64 << 10;  // A
  // RocksDB's write_buffer_size: a memtable's WAL stays while its table is
  // written, so RocksDB's bursts are about two of them (0: not known).
  uint64_t memtable = 0;
};

struct KvSizing {
  uint64_t initial = 0;      // lent at mkfs
  uint64_t grow_step = 0;    // lent per growth
  uint64_t reserve = 0;      // the floor of the tier's free space
  uint64_t log_segment = 0;  // a multiple of A, at most initial / 16
};

// 0, or -EINVAL with *why when the tier cannot hold RocksDB beside object
// data (it needs initial + reserve + 64 of its units).
int size_kv_device(const KvSizingRequest& req, KvSizing* out, std::string* why);

class KvDevice {
 public:
  // Formats the kvfs in what `lender` lends (params.initial_size), with the
  // journal's ring of `journal_size` bytes (0: none) made first, so that on
  // a new tier it is one extent at the start of the first chunk.
  // `ring_align`: the FTL's erase block on raw NAND (KvFs::make_journal).
  static int format(std::shared_ptr<BlockDevice> dev, const KvFsParams& params, const Uuid& kvfs_uuid,
                    const Uuid& fsid, KvFsLender* lender, uint64_t journal_size, std::string* error,
                    uint64_t ring_align = 0);
  // Mounts the kvfs and makes RocksDB's Env over it. `lender` may be null
  // (mount reads RocksDB before the tier's space is loaded): the kvfs then
  // lives within what it owns until set_lender.
  static int mount(std::shared_ptr<BlockDevice> dev, const KvFsParams& params, const Uuid& kvfs_uuid,
                   const Uuid& fsid, KvFsLender* lender, std::unique_ptr<KvDevice>* out, std::string* error);
  // The DB opened on env() and every journal from open_journal must be gone
  // first.
  ~KvDevice();
  KvDevice(const KvDevice&) = delete;
  KvDevice& operator=(const KvDevice&) = delete;

  // For rocksdb::Options::env; RocksDB's directory is kDbDir.
  rocksdb::Env* env() const { return env_.get(); }
  static constexpr const char* kDbDir = "/db";
  KvFs& fs() { return *fs_; }
  void set_lender(KvFsLender* lender) { fs_->set_lender(lender); }

  // The commit journal on the kvfs's ring, which is made (zeroed) now when
  // the kvfs has none and `size` > 0. Null with *error empty when there is
  // no ring and `size` is 0; null with *error on a failure. On raw NAND
  // `discard_span` is the FTL's erase block (CommitJournal::set_discard_span).
  std::unique_ptr<CommitJournal> open_journal(uint64_t size, const Uuid& fsid, uint64_t discard_span,
                                              std::string* error);
  // A new ring of `size` in place of the kvfs's (KvFs::resize_journal),
  // opened; start_empty() is the caller's. The journal of open_journal must
  // be gone and its replay durable in RocksDB. Null with *error on a
  // failure, which leaves the old ring (-ENOSPC in *code when the kvfs had
  // no room for the new one).
  std::unique_ptr<CommitJournal> resize_journal(uint64_t size, const Uuid& fsid, uint64_t discard_span,
                                                std::string* error, int* code);

  // Makes every kvfs record durable; the kvfs is then closed.
  int unmount(std::string* error);

 private:
  KvDevice() = default;
  std::unique_ptr<CommitJournal> journal_on(const std::vector<KvFsExtent>& ring, const Uuid& fsid,
                                            uint64_t discard_span, std::string* error);

  std::shared_ptr<BlockDevice> dev_;
  std::unique_ptr<KvFs> fs_;
  std::shared_ptr<KvRocksFileSystem> rocks_fs_;
  std::unique_ptr<rocksdb::Env> env_;
};

}  // namespace hybridstore
