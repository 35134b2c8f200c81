#include "hybridstore/store/store_kvfs.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/version.h>
#include <rocksdb/write_batch.h>

#include "hscommon/log.h"
#include "hsio/shared_device.h"
#include "hybridstore/kv/kv_schema.h"
#include "hybridstore/kvfs/kvfs_rocksdb.h"
#include "hybridstore/space/tier_space.h"

namespace hybridstore {

namespace {

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// The write_buffer_size hybridstore_rocksdb_options gives RocksDB (its
// default when the string does not say; 0 when it does not parse: mkfs and
// mount refuse such a string themselves).
uint64_t rocksdb_memtable_bytes(const Config& cfg) {
  rocksdb::ColumnFamilyOptions base, parsed;
#if ROCKSDB_MAJOR > 6 || (ROCKSDB_MAJOR == 6 && ROCKSDB_MINOR >= 11)
  rocksdb::ConfigOptions co;
  co.ignore_unknown_options = true;
  rocksdb::Status s =
      rocksdb::GetColumnFamilyOptionsFromString(co, base, cfg.get_str("hybridstore_rocksdb_options"), &parsed);
#else
  rocksdb::Status s =
      rocksdb::GetColumnFamilyOptionsFromString(base, cfg.get_str("hybridstore_rocksdb_options"), &parsed);
#endif
  return s.ok() ? parsed.write_buffer_size : 0;
}

}  // namespace

bool kv_location_is_device(const Config& cfg) { return cfg.get_str("hybridstore_kv_location") == "device"; }

std::string kv_on_device_unsupported(const Superblock& sb) {
  if (!HS_HAVE_KVFS_ROCKSDB)
    return fmt::format("RocksDB on the device needs RocksDB 7 or later; this build has RocksDB {}.{}", ROCKSDB_MAJOR,
                       ROCKSDB_MINOR);
  if (sb.order.fastest() != Tier::kSsd) return "the store's fastest tier is not its ssd tier";
  // Raw NAND is fine: mount finds it by its image header and takes the
  // options that shaped it from its label (space/tier_device.h), not from
  // the superblock inside it.
  return "";
}

KvFsParams kvfs_params(const Config& cfg, const BlockDevice& dev, uint64_t head) {
  KvFsParams p;
  p.block = std::max<uint64_t>(4096, dev.alignment());
  p.alloc_unit = cfg.get_size("hybridstore_kvfs_alloc_unit");
  p.head = head;
  // Copies A and B of the label at 0 and s, the kvfs's slots at 2s and 3s
  // (docs/kvfs.md 2.1): label_head() keeps room for all four.
  const uint64_t s = label_slot(&dev);
  p.slots = KvFsSuperSlotsAt{2 * s, s};
  p.log_segment = std::max(p.alloc_unit, cfg.get_size("hybridstore_kvfs_log_segment") / p.alloc_unit * p.alloc_unit);
  p.log_compact = cfg.get_size("hybridstore_kvfs_log_compact");
  p.write_buffer = cfg.get_size("hybridstore_kvfs_write_buffer");
  p.grow_wait = std::chrono::seconds(cfg.get_int("hybridstore_kvfs_grow_wait"));
  return p;
}

int kvfs_sizing(const Config& cfg, uint64_t size, uint64_t head, uint64_t lend_unit, uint64_t tier_unit,
                uint64_t owned, KvSizing* out, std::string* error) {
  KvSizingRequest req;
  req.usable = size > head ? size - head : 0;
  req.lend_unit = lend_unit;
  req.tier_unit = tier_unit;
  req.journal = cfg.get_size("hybridstore_commit_journal_size");
  req.initial = owned ? align_up(owned, lend_unit) : cfg.get_size("hybridstore_kvfs_initial_size");
  req.grow_step = cfg.get_size("hybridstore_kvfs_grow_step");
  req.reserve = cfg.get_size("hybridstore_kvfs_reserve");
  req.alloc_unit = cfg.get_size("hybridstore_kvfs_alloc_unit");
  req.memtable = rocksdb_memtable_bytes(cfg);
  req.log_segment = std::max(req.alloc_unit, cfg.get_size("hybridstore_kvfs_log_segment"));
  // G is the tier's, A the option's: the tier's G must be a multiple of A.
  if (lend_unit % req.alloc_unit != 0) {
    *error = fmt::format("hybridstore_kvfs_alloc_unit {} does not divide the ssd tier's lend unit {}",
                         req.alloc_unit, lend_unit);
    return -EINVAL;
  }
  return size_kv_device(req, out, error);
}

int lend_initial_chunks(const Config& cfg, const Superblock& sb, std::shared_ptr<BlockDevice> ssd,
                        KvSizing* sizing, uint64_t* lend_unit, std::vector<Interval>* chunks, std::string* error) {
  // The space's records go to a RocksDB in memory: the real one can only be
  // made once the kvfs exists, in what is lent here. mkfs writes the same
  // records there, and mount then loads the space with these chunks lent.
  std::unique_ptr<rocksdb::Env> mem(rocksdb::NewMemEnv(rocksdb::Env::Default()));
  rocksdb::Options o;
  o.env = mem.get();
  o.create_if_missing = true;
  o.merge_operator = kv::make_merge_operator();
  rocksdb::DB* raw = nullptr;
  if (rocksdb::Status s = rocksdb::DB::Open(o, "/mkfs-ssd-space", &raw); !s.ok()) {
    *error = "mkfs: a RocksDB in memory for the ssd tier's space: " + s.ToString();
    return -EIO;
  }
  std::unique_ptr<rocksdb::DB> db(raw);
  rocksdb::WriteBatch b;
  if (int r = format_tier_space(Tier::kSsd, cfg, sb, &b, error); r < 0) return r;
  if (!db->Write(rocksdb::WriteOptions(), &b).ok()) {
    *error = "mkfs: writing the ssd tier's space records in memory failed";
    return -EIO;
  }
  std::unique_ptr<TierSpace> space = make_tier_space(Tier::kSsd, std::make_unique<SharedBlockDevice>(ssd), sb);
  space->configure(cfg);
  if (int r = space->load(db.get(), cfg, {}, error); r < 0) return r;
  const TierDescriptor& d = sb.tier[Tier::kSsd];
  *lend_unit = space->lend_unit();
  if (int r = kvfs_sizing(cfg, d.size, d.reserved, *lend_unit, d.alloc_unit, 0, sizing, error); r < 0) return r;
  chunks->clear();
  if (int r = space->lend(sizing->initial, chunks); r < 0) {
    *error = fmt::format("mkfs: the ssd tier cannot lend the {} bytes the KV file system needs", sizing->initial);
    return r;
  }
  uint64_t got = 0;
  for (const Interval& i : *chunks) got += i.length;
  if (got != sizing->initial) {
    *error = fmt::format("mkfs: the ssd tier lent {} of the {} bytes the KV file system needs", got,
                         sizing->initial);
    return -ENOSPC;
  }
  space.reset();
  // Only a scratch copy in memory: a failed close loses nothing.
  if (!db->Close().ok()) HS_DEBUG("mkfs: closing the in-memory RocksDB of the ssd tier's space failed");
  return 0;
}

bool write_file_durably(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    if (!f) return false;
    f << text;
    if (!f.flush()) return false;
  }
  int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced || ::rename(tmp.c_str(), path.c_str()) != 0) return false;
  // The rename is durable once its directory is.
  const std::string dir = std::filesystem::path(path).parent_path().string();
  fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool dir_synced = ::fsync(fd) == 0;
  ::close(fd);
  return dir_synced;
}

uint64_t PresetLender::lendable() const {
  uint64_t bytes = 0;
  for (const Interval& r : ranges_) bytes += r.length;
  return bytes;
}

int PresetLender::lend(uint64_t want, std::vector<Interval>* out) {
  uint64_t got = 0;
  while (!ranges_.empty() && got < want) {
    Interval& r = ranges_.front();
    const uint64_t take = std::min(r.length, (want - got + unit_ - 1) / unit_ * unit_);
    out->push_back({r.offset, take});
    got += take;
    r.offset += take;
    r.length -= take;
    if (r.length == 0) ranges_.erase(ranges_.begin());
  }
  return got ? 0 : -ENOSPC;
}

}  // namespace hybridstore
