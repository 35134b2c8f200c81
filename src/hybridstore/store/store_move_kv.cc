// The move of a directory store's RocksDB and commit journal into a KV file
// system on its SSD tier, and its rollback (docs/kvfs.md 7.3, steps M1-M9;
// M10 is MountedStore::finish_move).
//
// Crash safety rests on one rule: everything written before the commit (the
// SSD label pair, M8) goes where the directory store never looks (the
// head's kvfs slots, space its bitmap calls free), and nothing in the
// directory changes until after it.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>

#include "hscommon/crc32c.h"
#include "hscommon/log.h"
#include "hsio/shared_device.h"
#include "hybridstore/format/store_format.h"
#include "hybridstore/kv/kv_schema.h"
#include "hybridstore/kvfs/kv_device.h"
#include "hybridstore/space/tier_device.h"
#include "hybridstore/space/tier_space.h"
#include "hybridstore/store/hybrid_store.h"
#include "hybridstore/store/storage_hooks.h"
#include "hybridstore/store/store_kvfs.h"
#include "hybridstore/store/store_mount.h"
#include "hybridstore/store/tier_set.h"

namespace fs = std::filesystem;

namespace hybridstore {

namespace {

constexpr const char* kMovedSuffix = ".format3-moved";
// Ceph's meta files of the data directory that the label takes over
// (docs/kvfs.md 5.5); `keyring` becomes osd_key.
constexpr const char* kMetaFiles[] = {"whoami",      "ceph_fsid",           "magic",
                                      "ready",       "require_osd_release", "osdspec_affinity",
                                      "ceph_version_when_created", "created_at"};

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

bool fsync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}

// RocksDB writes LOCK and its info logs itself; they are no part of the
// database.
bool is_db_file(const std::string& name) { return name != "LOCK" && name.rfind("LOG", 0) != 0; }

struct DbFile {
  std::string name;
  uint64_t size = 0;
};

int list_db_files(const std::string& dir, std::vector<DbFile>* out, uint64_t* total, std::string* error) {
  std::error_code ec;
  out->clear();
  *total = 0;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || !is_db_file(name)) continue;
    out->push_back({name, static_cast<uint64_t>(e.file_size())});
    *total += out->back().size;
  }
  if (ec) {
    *error = "cannot list " + dir + ": " + ec.message();
    return -EIO;
  }
  std::sort(out->begin(), out->end(), [](const DbFile& a, const DbFile& b) { return a.name < b.name; });
  return 0;
}

// The directory's RocksDB read-only: the move never writes to it, so that
// it stays exactly what the old store needs until the commit.
int open_source_db(const std::string& path, std::unique_ptr<rocksdb::DB>* out, std::string* error) {
  rocksdb::Options o;
  o.merge_operator = kv::make_merge_operator();
  o.paranoid_checks = true;
  rocksdb::DB* db = nullptr;
  rocksdb::Status s = rocksdb::DB::OpenForReadOnly(o, path + "/db", &db);
  if (!s.ok()) {
    *error = "cannot open RocksDB at " + path + "/db read-only: " + s.ToString();
    return -EIO;
  }
  out->reset(db);
  return 0;
}

int read_superblock(rocksdb::DB* db, const std::string& path, Superblock* sb, std::string* error) {
  std::string v;
  if (!db->Get(rocksdb::ReadOptions(), kv::mkfs_done_key(), &v).ok()) {
    *error = "store at " + path + " was never completely created (mkfs did not finish)";
    return -EINVAL;
  }
  if (!db->Get(rocksdb::ReadOptions(), kv::superblock_key(), &v).ok()) {
    *error = "store at " + path + " has no superblock";
    return -EINVAL;
  }
  return decode_superblock(v, sb, error);
}

// An OFD lock on <dir>/fsid, as mount takes: no mount while the move runs.
class FsidLock {
 public:
  ~FsidLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  int lock(const std::string& path, std::string* error) {
    fd_ = ::open((path + "/fsid").c_str(), O_RDWR | O_CLOEXEC);
    if (fd_ < 0) {
      *error = "cannot open " + path + "/fsid: " + strerror(errno);
      return -errno;
    }
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    if (::fcntl(fd_, F_OFD_SETLK, &fl) < 0) {
      *error = "store at " + path + " is in use by another process";
      return -EBUSY;
    }
    return 0;
  }

 private:
  int fd_ = -1;
};

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t b = 0;
  while (b < s.size() && (s[b] == ' ' || s[b] == '\t')) ++b;
  return s.substr(b);
}

// The secret of a Ceph keyring file: the value of its `key = ...` line.
std::string keyring_secret(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    line = trim(line);
    const size_t eq = line.find('=');
    if (eq == std::string::npos || trim(line.substr(0, eq)) != "key") continue;
    return trim(line.substr(eq + 1));
  }
  return "";
}

// Ceph's meta files into the label's meta map; a key the label cannot hold
// stays a file only (prime would not bring it back), with a warning.
void import_meta(const std::string& path, DeviceLabel* label, MoveKvReport* rep) {
  auto put = [&](const std::string& key, const std::string& value) {
    std::string why;
    if (int r = change_label_meta(label, key, &value, &why); r < 0) {
      HS_WARN("move-kv: meta key {} stays in {} only: {}", key, path, why);
      return;
    }
    rep->meta_imported.push_back(key);
  };
  auto slurp = [](const std::string& p, std::string* out) {
    std::ifstream f(p, std::ios::binary);
    if (!f) return false;
    std::ostringstream s;
    s << f.rdbuf();
    *out = s.str();
    return true;
  };
  for (const char* name : kMetaFiles) {
    std::string text;
    if (slurp(path + "/" + name, &text)) put(name, trim(text));
  }
  std::string keyring;
  if (slurp(path + "/keyring", &keyring)) {
    const std::string secret = keyring_secret(keyring);
    if (secret.empty())
      HS_WARN("move-kv: {}/keyring has no key line; osd_key not set", path);
    else
      put("osd_key", secret);
  }
}

class Move {
 public:
  Move(std::string path, Config cfg, StorePerf* perf, const MoveKvOptions& opts, MoveKvReport* rep)
      : path_(std::move(path)), cfg_(std::move(cfg)), perf_(perf), opts_(opts), rep_(rep) {}

  int run(std::string* error) {
    if (opts_.verify != "files" && opts_.verify != "keys" && opts_.verify != "none") {
      *error = fmt::format("verify must be files, keys or none, not '{}'", opts_.verify);
      return -EINVAL;
    }
    if (int r = check_storage_hooks(cfg_, error); r < 0) return r;
    if (int r = precheck(error); r < 0) return r;
    if (int r = m1_mount_and_flush(error); r < 0) return r;
    if (int r = m2_size_and_lend(error); r < 0) return r;
    // M3: M1 closed the store; only the SSD device stays open.
    if (int r = step(3, error); r < 0) return r;
    if (int r = m4_format(error); r < 0) return r;
    if (int r = m5_copy(error); r < 0) return r;
    if (int r = m6_m7_verify_and_superblock(error); r < 0) return r;
    if (int r = m8_commit(error); r < 0) return r;
    return m9_rename(error);
  }

 private:
  // 0, or -EINTR when the test's hook stopped the move after step n.
  int step(int n, std::string* error) {
    if (!opts_.after_step || opts_.after_step(n)) return 0;
    *error = fmt::format("stopped after step M{} (test hook)", n);
    return -EINTR;
  }

  // Refusals that need no mount: a store already on its device (its label
  // says so, whatever the directory still holds).
  int precheck(std::string* error) {
    std::string ignored;
    DeviceLabel l;
    if (read_ssd_label(false, &l, &ignored) == 0 && (l.flags & kLabelKvOnDevice)) {
      *error = fmt::format("store {} at {} keeps its RocksDB on its ssd device already; nothing to move",
                           uuid_to_string(l.fsid), path_);
      return -EEXIST;
    }
    std::error_code ec;
    if (!fs::exists(path_ + "/db/CURRENT", ec)) {
      *error = "no store at " + path_ + " (no " + path_ + "/db)";
      return -ENOENT;
    }
    return 0;
  }

  int read_ssd_label(bool exclusive, DeviceLabel* l, std::string* error) {
    DeviceOpenOptions o;
    o.direct_io = false;
    o.backend = IoBackend::kPosix;
    o.exclusive = exclusive;
    std::unique_ptr<BlockDevice> dev =
        open_detected_device(cfg_, path_ + "/" + tier_device_link(Tier::kSsd), o, nullptr, error);
    if (!dev) return -ENOENT;
    LabelPairStatus st;
    return read_labels(dev.get(), l, &st, error);
  }

  // M1: an ordinary mount (journal and deferred replay; a format-3 store
  // upgraded), everything settled and RocksDB's memtables flushed so that
  // its WAL is small, then an ordinary umount.
  int m1_mount_and_flush(std::string* error) {
    Config cfg = cfg_;
    std::unique_ptr<MountedStore> m;
    if (int r = MountedStore::open(path_, &cfg, perf_, nullptr, false, &m, error); r < 0) return r;
    sb_ = m->superblock();
    cfg_ = cfg;
    if (std::string why = kv_on_device_unsupported(sb_); !why.empty()) {
      m->close();
      *error = "cannot move RocksDB to the device: " + why;
      return -EOPNOTSUPP;
    }
    if (sb_.format_version < 4) {
      m->close();
      *error = fmt::format("store at {} stays at format {} (see the mount's warning); the move needs format 4",
                           path_, sb_.format_version);
      return -EOPNOTSUPP;
    }
    int r = m->settle();
    if (r == 0) {
      rocksdb::FlushOptions fo;
      fo.wait = true;
      if (rocksdb::Status s = m->db()->Flush(fo); !s.ok()) {
        *error = "flushing RocksDB's memtables: " + s.ToString();
        r = -EIO;
      }
    }
    if (int c = m->close(); c < 0 && r == 0) {
      r = c;
      *error = "closing the store after flushing it failed";
    }
    if (r < 0 && error->empty()) *error = "settling the store failed";
    if (r < 0) return r;
    return step(1, error);
  }

  // M2: K from the database's size; K lent from the SSD tier's space as the
  // directory's RocksDB describes it, in memory only.
  int m2_size_and_lend(std::string* error) {
    if (int r = lock_.lock(path_, error); r < 0) return r;
    std::shared_ptr<StorageHooks> hooks = storage_hooks();
    // From here the move's device writes are the fault model's (tests).
    if (hooks)
      if (int r = hooks->begin_mount(path_, cfg_, error); r < 0) return r;
    const std::string p = path_ + "/" + tier_device_link(Tier::kSsd);
    DeviceOpenOptions o;
    o.direct_io = cfg_.get_bool("hybridstore_direct_io");
    o.backend = IoBackend::kPosix;
    o.exclusive = true;
    std::unique_ptr<BlockDevice> dev = open_detected_device(cfg_, p, o, nullptr, error);
    if (!dev) return errno == EBUSY ? -EBUSY : -ENOENT;
    ring_align_ = erase_block_bytes(dev.get());
    if (hooks) dev = hooks->wrap_device(path_, Tier::kSsd, cfg_, std::move(dev));
    ssd_ = std::shared_ptr<BlockDevice>(std::move(dev));
    LabelPairStatus st;
    std::string why;
    if (int r = read_labels(ssd_.get(), &label_, &st, &why); r < 0) {
      *error = p + ": " + why;
      return r;
    }
    if (label_.record_version < 2 || label_.role != Tier::kSsd || label_.fsid != sb_.fsid) {
      *error = fmt::format("{}: not the format-4 ssd label of store {}", p, uuid_to_string(sb_.fsid));
      return -EINVAL;
    }
    const uint64_t s = label_slot(ssd_.get());
    const TierDescriptor& d = sb_.tier[Tier::kSsd];
    if (d.reserved < 4 * s) {
      *error = fmt::format("the ssd tier reserves {} bytes at its start, too few for the label pair and the KV "
                           "file system's two superblocks ({} bytes)",
                           d.reserved, 4 * s);
      return -EOPNOTSUPP;
    }
    std::vector<DbFile> files;
    uint64_t D = 0;
    if (int r = list_db_files(path_ + "/db", &files, &D, error); r < 0) return r;

    std::unique_ptr<rocksdb::DB> db;
    if (int r = open_source_db(path_, &db, error); r < 0) return r;
    Superblock on_disk;
    if (int r = read_superblock(db.get(), path_, &on_disk, error); r < 0) return r;
    std::unique_ptr<TierSpace> space =
        make_tier_space(Tier::kSsd, std::make_unique<SharedBlockDevice>(ssd_), on_disk);
    space->configure(cfg_);
    if (int r = space->load(db.get(), cfg_, {}, error); r < 0) return r;
    G_ = space->lend_unit();
    KvSizing sizing;
    std::string sizing_error;
    // An explicit size stands for the automatic initial one, also in the
    // check that the tier can hold RocksDB at all.
    const int sized =
        kvfs_sizing(cfg_, d.size, d.reserved, G_, d.alloc_unit, opts_.kvfs_size, &sizing, &sizing_error);
    if (sized < 0) {
      sizing.initial = align_up(opts_.kvfs_size, G_);
      sizing.log_segment = cfg_.get_size("hybridstore_kvfs_log_segment");
    }
    const uint64_t J = cfg_.get_size("hybridstore_commit_journal_size");
    const uint64_t need = align_up(D + D / 4 + J + 2 * sizing.log_segment, G_);
    K_ = std::max(sizing.initial, need);
    log_segment_ = std::max(sizing.log_segment, cfg_.get_size("hybridstore_kvfs_alloc_unit"));
    grow_step_ = sizing.grow_step;
    const uint64_t F = space->usage().free;
    auto refuse = [&] {
      *error = fmt::format("the move needs {} bytes free on the SSD tier, it has {}", K_, F);
      return -ENOSPC;
    };
    if (K_ > F) return refuse();
    if (sized < 0) {
      *error = sizing_error;
      return sized;
    }
    uint64_t got = 0;
    if (space->lend(K_, &chunks_) == 0)
      for (const Interval& i : chunks_) got += i.length;
    if (got != K_) return refuse();
    space.reset();
    db.reset();
    rep_->kvfs_bytes = K_;
    HS_INFO("move-kv: {} bytes of RocksDB in {} files; the KV file system gets {} bytes of the ssd tier", D,
            files.size(), K_);
    if (int r = step(2, error); r < 0) return r;
    return 0;
  }

  // M4: the kvfs in the lent chunks, with the ring made first, as mkfs
  // makes it.
  int m4_format(std::string* error) {
    kvfs_uuid_ = generate_uuid();
    params_ = kvfs_params(cfg_, *ssd_, label_.head);
    params_.initial_size = K_;
    params_.log_segment = log_segment_;
    params_.grow_step = grow_step_;
    PresetLender lender(G_, chunks_);
    const uint64_t ring = cfg_.get_size("hybridstore_commit_journal_size");
    if (int r = KvDevice::format(ssd_, params_, kvfs_uuid_, sb_.fsid, &lender, ring, error, ring_align_); r < 0) {
      *error = "formatting the KV file system: " + *error;
      return r;
    }
    if (int r = KvDevice::mount(ssd_, params_, kvfs_uuid_, sb_.fsid, nullptr, &kv_, error); r < 0) return r;
    if (int r = step(4, error); r < 0) return r;
    return 0;
  }

  // M5: every file of the database into /db, each synced, then /db.
  int m5_copy(std::string* error) {
    std::vector<DbFile> files;
    uint64_t D = 0;
    if (int r = list_db_files(path_ + "/db", &files, &D, error); r < 0) return r;
    rocksdb::Env* env = kv_->env();
    if (rocksdb::Status s = env->CreateDirIfMissing(KvDevice::kDbDir); !s.ok()) {
      *error = "making /db in the KV file system: " + s.ToString();
      return -EIO;
    }
    std::string buf(1 << 20, '\0');
    for (const DbFile& f : files) {
      const std::string src = path_ + "/db/" + f.name, dst = std::string(KvDevice::kDbDir) + "/" + f.name;
      std::ifstream in(src, std::ios::binary);
      if (!in) {
        *error = "cannot read " + src;
        return -EIO;
      }
      std::unique_ptr<rocksdb::WritableFile> out;
      rocksdb::Status s = env->NewWritableFile(dst, &out, rocksdb::EnvOptions());
      uint32_t crc = 0;
      uint64_t copied = 0;
      while (s.ok() && in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        const size_t n = static_cast<size_t>(in.gcount());
        if (n == 0) break;
        crc = crc32c(crc, buf.data(), n);
        copied += n;
        s = out->Append(rocksdb::Slice(buf.data(), n));
      }
      if (s.ok() && in.bad()) s = rocksdb::Status::IOError("reading " + src);
      if (s.ok()) s = out->Sync();
      if (s.ok()) s = out->Close();
      if (!s.ok()) {
        *error = fmt::format("copying {} into the KV file system: {}", src, s.ToString());
        return s.IsNoSpace() ? -ENOSPC : -EIO;
      }
      copies_.push_back({f.name, copied, crc});
    }
    std::unique_ptr<rocksdb::Directory> dir;
    rocksdb::Status s = env->NewDirectory(KvDevice::kDbDir, &dir);
    if (s.ok()) s = dir->Fsync();
    if (!s.ok()) {
      *error = "syncing /db in the KV file system: " + s.ToString();
      return -EIO;
    }
    rep_->db_bytes = D;
    rep_->files = copies_.size();
    if (int r = step(5, error); r < 0) return r;
    return 0;
  }

  int verify_files(std::string* error) {
    rocksdb::Env* env = kv_->env();
    std::string buf(1 << 20, '\0');
    for (const Copy& c : copies_) {
      const std::string dst = std::string(KvDevice::kDbDir) + "/" + c.name;
      std::unique_ptr<rocksdb::SequentialFile> in;
      rocksdb::Status s = env->NewSequentialFile(dst, &in, rocksdb::EnvOptions());
      uint32_t crc = 0;
      uint64_t n = 0;
      while (s.ok()) {
        rocksdb::Slice got;
        s = in->Read(buf.size(), &got, buf.data());
        if (!s.ok() || got.empty()) break;
        crc = crc32c(crc, got.data(), got.size());
        n += got.size();
      }
      if (!s.ok()) {
        *error = fmt::format("verify: reading back {}: {}", dst, s.ToString());
        return -EIO;
      }
      if (n != c.size || crc != c.crc) {
        *error = fmt::format("verify: the copy of {} differs from its source ({} bytes, crc32c {:08x}; the source "
                             "{} bytes, {:08x})",
                             c.name, n, crc, c.size, c.crc);
        return -EIO;
      }
    }
    return 0;
  }

  int verify_keys(rocksdb::DB* copy, std::string* error) {
    std::unique_ptr<rocksdb::DB> src;
    if (int r = open_source_db(path_, &src, error); r < 0) return r;
    std::unique_ptr<rocksdb::Iterator> a(src->NewIterator(rocksdb::ReadOptions()));
    std::unique_ptr<rocksdb::Iterator> b(copy->NewIterator(rocksdb::ReadOptions()));
    uint64_t n = 0;
    for (a->SeekToFirst(), b->SeekToFirst(); a->Valid() && b->Valid(); a->Next(), b->Next(), ++n) {
      if (a->key() != b->key() || a->value() != b->value()) {
        *error = fmt::format("verify: key {} of the copy differs from the source", n);
        return -EIO;
      }
    }
    if (!a->status().ok() || !b->status().ok()) {
      *error = "verify: iterating: " + (a->status().ok() ? b->status() : a->status()).ToString();
      return -EIO;
    }
    if (a->Valid() != b->Valid()) {
      *error = fmt::format("verify: the copy has {} keys than the source", a->Valid() ? "fewer" : "more");
      return -EIO;
    }
    rep_->keys_compared = n;
    return 0;
  }

  // M6 and M7: verify, then RocksDB opened on the copy with the superblock
  // saying where it lives now; Ceph's meta into the label (in memory).
  int m6_m7_verify_and_superblock(std::string* error) {
    if (opts_.verify != "none")
      if (int r = verify_files(error); r < 0) return r;
    if (opts_.verify != "keys")
      if (int r = step(6, error); r < 0) return r;
    {
      std::unique_ptr<rocksdb::DB> db;
      if (int r = open_store_db(path_, cfg_, false, &db, error, kv_->env()); r < 0) return r;
      if (opts_.verify == "keys") {
        if (int r = verify_keys(db.get(), error); r < 0) return r;
        if (int r = step(6, error); r < 0) return r;
      }
      Superblock sb;
      if (int r = read_superblock(db.get(), path_, &sb, error); r < 0) return r;
      sb.kv_location = KvLocation::kDevice;
      if (sb.mkfs_options.count("hybridstore_kv_location")) sb.mkfs_options["hybridstore_kv_location"] = "device";
      rocksdb::WriteOptions wo;
      wo.sync = true;
      if (rocksdb::Status s = db->Put(wo, kv::superblock_key(), encode_superblock(sb)); !s.ok()) {
        *error = "writing the superblock into the copy: " + s.ToString();
        return -EIO;
      }
      if (rocksdb::Status s = db->Close(); !s.ok()) {
        *error = "closing the copy: " + s.ToString();
        return -EIO;
      }
    }
    if (int r = kv_->unmount(error); r < 0) return r;
    kv_.reset();
    import_meta(path_, &label_, rep_);
    if (int r = step(7, error); r < 0) return r;
    return 0;
  }

  // M8, the commit: the SSD label pair says RocksDB is on the device.
  int m8_commit(std::string* error) {
    if (ssd_->flush() < 0) {
      *error = "flushing the ssd device before the commit failed";
      return -EIO;
    }
    DeviceLabel l = label_;
    l.flags |= kLabelKvOnDevice | kLabelKvMovedPending;
    l.kvfs_uuid = kvfs_uuid_;
    // From now on mount opens this device before RocksDB: cfg_ holds the
    // options the store was made with (M1's mount took them).
    record_device_options(cfg_, l.device_kind, &l);
    std::string why;
    if (int r = write_label_pair(ssd_.get(), &l, &why); r < 0) {
      *error = "the commit (the ssd label pair): " + why;
      return r;
    }
    HS_INFO("move-kv: store {} committed: RocksDB and the commit journal are on the ssd device",
            uuid_to_string(sb_.fsid));
    if (int r = step(8, error); r < 0) return r;
    ssd_.reset();
    return 0;
  }

  // M9: the directory's RocksDB and journal out of the way of a mount.
  int m9_rename(std::string* error) {
    for (const char* name : {"db", "journal"}) {
      const std::string from = path_ + "/" + name, to = from + kMovedSuffix;
      std::error_code ec;
      if (!fs::exists(from, ec)) continue;
      fs::remove_all(to, ec);
      fs::rename(from, to, ec);
      if (ec) {
        *error = fmt::format("the move committed, but renaming {} to {} failed ({}); the next mount renames it",
                             from, to, ec.message());
        return -EIO;
      }
    }
    if (!fsync_dir(path_)) {
      *error = "the move committed, but syncing " + path_ + " failed";
      return -EIO;
    }
    if (int r = step(9, error); r < 0) return r;
    return 0;
  }

  struct Copy {
    std::string name;
    uint64_t size;
    uint32_t crc;
  };

  const std::string path_;
  // Once M1 mounted the store: with the options fixed at its mkfs.
  Config cfg_;
  StorePerf* perf_;
  const MoveKvOptions& opts_;
  MoveKvReport* rep_;
  FsidLock lock_;
  Superblock sb_;
  DeviceLabel label_;
  std::shared_ptr<BlockDevice> ssd_;
  uint64_t ring_align_ = 0;  // the FTL's erase block on raw NAND
  uint64_t G_ = 0, K_ = 0, log_segment_ = 0, grow_step_ = 0;
  std::vector<Interval> chunks_;
  Uuid kvfs_uuid_{};
  KvFsParams params_;
  std::unique_ptr<KvDevice> kv_;
  std::vector<Copy> copies_;
};

}  // namespace

int HybridStore::move_kv_to_device(const MoveKvOptions& opts, MoveKvReport* report, std::string* error) {
  std::string e;
  MoveKvReport local;
  int r;
  if (store_) {
    e = "the store is mounted; umount it first";
    r = -EBUSY;
  } else {
    Move m(path_, cfg_, perf_.get(), opts, report ? report : &local);
    r = m.run(&e);
  }
  if (r < 0) HS_ERROR("move-kv of {}: {}", path_, e);
  if (error) *error = e;
  return r;
}

int HybridStore::move_kv_rollback(std::string* error) {
  std::string e;
  int r = 0;
  auto fail = [&](int err, std::string why) {
    e = std::move(why);
    r = err;
  };
  if (store_) {
    fail(-EBUSY, "the store is mounted; umount it first");
  } else {
    FsidLock lock;
    DeviceOpenOptions o;
    o.direct_io = false;
    o.backend = IoBackend::kPosix;
    o.exclusive = true;
    const std::string p = path_ + "/" + tier_device_link(Tier::kSsd);
    std::unique_ptr<BlockDevice> dev;
    DeviceLabel l;
    LabelPairStatus st;
    std::string why;
    std::error_code ec;
    if (int lr = lock.lock(path_, &why); lr < 0) {
      fail(lr, why);
    } else if (!(dev = open_detected_device(cfg_, p, o, nullptr, &why))) {
      fail(errno == EBUSY ? -EBUSY : -ENOENT, why);
    } else if (int rr = read_labels(dev.get(), &l, &st, &why); rr < 0) {
      fail(rr, p + ": " + why);
    } else if (!(l.flags & kLabelKvOnDevice)) {
      fail(-EINVAL, "store at " + path_ + " keeps its RocksDB in its directory: there is no move to roll back");
    } else if (!(l.flags & kLabelKvMovedPending)) {
      fail(-EPERM, "store at " + path_ +
                       " has been mounted read-write from its ssd device since the move: the directory's old "
                       "RocksDB is stale (and deleted); the move can no longer be rolled back");
    } else if (!fs::exists(path_ + "/db" + kMovedSuffix + "/CURRENT", ec) && !fs::exists(path_ + "/db/CURRENT", ec)) {
      fail(-ENOENT, "store at " + path_ + ": the directory's old RocksDB (db" + kMovedSuffix +
                        ") is gone; nothing to roll back to");
    } else {
      // The directory first: a crash before the label leaves a device store
      // with a leftover db/, which mount moves aside again; the rollback can
      // simply be run again.
      for (const char* name : {"db", "journal"}) {
        const std::string to = path_ + "/" + name, from = to + kMovedSuffix;
        if (!fs::exists(from, ec)) continue;
        fs::rename(from, to, ec);
        if (ec) {
          fail(-EIO, fmt::format("cannot rename {} back to {}: {}", from, to, ec.message()));
          break;
        }
      }
      if (r == 0 && !fsync_dir(path_)) fail(-EIO, "cannot sync " + path_);
      if (r == 0) {
        l.flags &= ~(kLabelKvOnDevice | kLabelKvMovedPending);
        l.kvfs_uuid = Uuid{};
        // The superblock says again how the device was made.
        for (auto it = l.meta.begin(); it != l.meta.end();)
          it = it->first.rfind(kLabelDeviceOptionPrefix, 0) == 0 ? l.meta.erase(it) : std::next(it);
        if (int wr = write_label_pair(dev.get(), &l, &why); wr < 0) fail(wr, "rewriting the ssd label pair: " + why);
      }
      if (r == 0) HS_INFO("move-kv-rollback: store at {} keeps its RocksDB in its directory again", path_);
    }
  }
  if (error) *error = e;
  return r;
}

}  // namespace hybridstore
