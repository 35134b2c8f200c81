#include "hybridstore/store/store_mount.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <rocksdb/cache.h>
#include <rocksdb/version.h>
// RocksDB 8 moved Cache's definition out of cache.h (which only declares it);
// the tuner calls its members. By version, not __has_include: a Ceph tree
// builds against its own RocksDB 7 while the system's headers may be newer.
#if ROCKSDB_MAJOR >= 8
#include <rocksdb/advanced_cache.h>
#endif
#include <rocksdb/db.h>

#include "hscommon/encoding.h"
#include "hscommon/log.h"
#include "hybridstore/kv/commit_journal.h"
#include "hybridstore/kv/deferred.h"
#include "hybridstore/kv/kv_schema.h"
#include "hybridstore/kvfs/kv_device.h"
#include "hybridstore/kvfs/kvfs_check.h"
#include "hybridstore/space/tier_device.h"
#include "hybridstore/store/collections.h"
#include "hybridstore/store/data_reader.h"
#include "hybridstore/store/data_writer.h"
#include "hybridstore/store/object_heat.h"
#include "hybridstore/store/onode_checkpointer.h"
#include "hybridstore/store/onode_replay.h"
#include "hybridstore/store/onode_store.h"
#include "hybridstore/store/storage_hooks.h"
#include "hybridstore/store/store_fsck.h"
#include "hybridstore/store/store_kvfs.h"
#include "hybridstore/store/store_kvfs_fsck.h"
#include "hybridstore/store/store_perf.h"
#include "hybridstore/store/store_reader.h"
#include "hybridstore/store/tier_lender.h"
#include "hybridstore/store/tier_set.h"
#include "hybridstore/store/txn_pipeline.h"
#include "hsio/buffer_pool_stats.h"
#include "hsio/read_cache.h"
#include "hybridstore/tier/heat_tracker.h"

namespace fs = std::filesystem;

namespace hybridstore {

namespace {

constexpr const char* kMovedSuffix = ".format3-moved";

// Whether the SSD label of the store at `path` says RocksDB is on the device:
// read only when a <dir>/db is there, to tell a directory store from a
// device store whose move left it behind. Raw NAND (its label behind the
// FTL) is opened as such.
bool moved_to_device(const std::string& path, const Config& cfg) {
  const std::string p = path + "/" + tier_device_link(Tier::kSsd);
  std::error_code ec;
  if (!fs::exists(p, ec)) return false;
  DeviceOpenOptions o;
  o.direct_io = false;
  o.backend = IoBackend::kPosix;
  std::string why;
  std::unique_ptr<BlockDevice> dev = open_detected_device(cfg, p, o, nullptr, &why);
  DeviceLabel l;
  LabelPairStatus st;
  if (!dev || read_labels(dev.get(), &l, &st, &why) < 0) return false;
  return l.role == Tier::kSsd && (l.flags & kLabelKvOnDevice) && (l.flags & kLabelMkfsDone);
}

void rename_moved_leftovers(const std::string& path) {
  for (const char* name : {"db", "journal"}) {
    const std::string from = path + "/" + name, to = from + kMovedSuffix;
    std::error_code ec;
    if (!fs::exists(from, ec)) continue;
    fs::remove_all(to, ec);
    fs::rename(from, to, ec);
    if (ec) HS_WARN("cannot rename {} to {}: {}", from, to, ec.message());
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

}  // namespace

MountedStore::MountedStore(std::string path, Config* cfg, StorePerf* perf)
    : path_(std::move(path)), cfg_(cfg), perf_(perf) {}

int MountedStore::open(const std::string& path, Config* cfg, StorePerf* perf, std::vector<std::string>* repair_log,
                       bool read_only, std::unique_ptr<MountedStore>* out, std::string* error) {
  if (int r = check_storage_hooks(*cfg, error); r < 0) return r;
  // Whatever fails below, the half-opened store closes as it goes.
  std::unique_ptr<MountedStore> m(new MountedStore(path, cfg, perf));
  const bool has_db = fs::exists(path + "/db/CURRENT");
  const bool moved = has_db && moved_to_device(path, *cfg);
  if (moved) {
    // A move committed and stopped before it renamed the directory's copy
    // (docs/kvfs.md 7.3, M9): that copy is the old store, no longer this one.
    HS_WARN("store at {}: its ssd label says RocksDB is on the device; ignoring the directory's db/ (a move "
            "that did not finish renaming it)",
            path);
    if (!read_only) rename_moved_leftovers(path);
  }
  if (has_db && !moved) {
    if (int r = m->lock_fsid(error); r < 0) return r;
    if (int r = open_store_db(path, *cfg, false, &m->db_, error, nullptr, nullptr, &m->block_cache_); r < 0)
      return r;
  } else if (int r = m->open_kv_device(error); r < 0) {
    return r;
  }
  if (int r = m->read_superblock(error); r < 0) return r;
  if (int r = small_writes_in_ring(*cfg, &m->ring_data_, error); r < 0) return r;
  if (m->ring_data_ && cfg->get_str("hybridstore_small_write_journal") == "on" &&
      !cfg->get_bool("hybridstore_commit_checkpointer")) {
    // The inline sync frees the whole ring at once, whatever the onode
    // deltas in it still carry.
    *error = "hybridstore_small_write_journal=on needs hybridstore_commit_checkpointer=true: an inline sync "
             "would free ring space whose onode deltas RocksDB does not hold yet";
    return -EINVAL;
  }
  // Transactions the commit journal made durable but RocksDB lost go back
  // into RocksDB before anything reads it.
  uint64_t next_journal_seq = 1;
  if (int r = m->open_journal(&next_journal_seq, error); r < 0) return r;
  if (int r = m->open_tiers(repair_log, error); r < 0) return r;
  if (!read_only)
    if (int r = m->resize_journal(error); r < 0) return r;
  m->colls_ = std::make_unique<CollectionTable>();
  if (int r = m->colls_->load(m->db_.get(), repair_log, error); r < 0) return r;
  m->committer_ = std::make_unique<KvCommitter>(m->db_.get(), m->tiers_->devices(), &m->write_tracker_, 4096);
  m->onodes_ = std::make_unique<OnodeStore>(m->db_.get(), m->committer_.get(), m->colls_.get(), *cfg,
                                            m->tiers_->count(), perf);
  if (int r = m->onodes_->load_nids(error); r < 0) return r;
  if (m->super_.format_version >= kFormatOnodeVersions) {
    if (int r = m->onodes_->enable_versions(error); r < 0) return r;
    if (m->journal_deltas()) m->onodes_->enable_journal_deltas();
  }
  m->start_writers(next_journal_seq);
  m->tiers_->set_gauges();
  if (int r = m->set_object_gauges(error); r < 0) return r;
  m->heat_ = std::make_unique<ObjectHeat>(*cfg, m->tiers_.get());
  m->heat_->load(m->db_.get());
  m->data_ = std::make_unique<DataReader>(m->tiers_.get(), m->deferred_.get(), perf);
  m->writer_ = std::make_unique<DataWriter>(m->tiers_.get(), m->data_.get(), m->deferred_.get(), m->heat_.get(),
                                            &m->write_tracker_, *cfg, perf, m->ring_data_);
  const OpApplier::Parts parts{m->db_.get(),      m->committer_.get(), m->onodes_.get(),
                               m->tiers_.get(),   m->writer_.get(),    m->heat_.get(),
                               cfg->get_size("hybridstore_max_object_size")};
  m->pipeline_ = std::make_unique<TxnPipeline>(parts, m->colls_.get(), m->deferred_.get(), perf,
                                               m->checkpointer_.get());
  m->reads_ = std::make_unique<StoreReader>(m->db_.get(), m->committer_.get(), m->colls_.get(), m->onodes_.get(),
                                            m->data_.get(), m->heat_.get(), perf);
  HS_INFO("mounted store {} at {}", uuid_to_string(m->super_.fsid), path);
  if (cfg->get_bool("hybridstore_fsck_on_mount")) {
    FsckReport rep;
    if (m->fsck(false, &rep) != 0) {
      *error = fmt::format("fsck on mount found {} errors (first: {})", rep.errors,
                           rep.problems.empty() ? "?" : rep.problems[0]);
      m->close();
      return -EIO;
    }
  }
  if (!read_only) {
    if (int r = m->upgrade_format(error); r < 0) return r;
    if (m->ring_data_ && m->super_.format_version < kFormatSmallWriteJournal) {
      *error = fmt::format("store at {} stays at format {}, and hybridstore_small_write_journal=data needs "
                           "format {}",
                           path, m->super_.format_version, kFormatSmallWriteJournal);
      m->close();
      return -EOPNOTSUPP;
    }
    if (m->kv_)
      if (int r = m->finish_move(error); r < 0) return r;
  }
  // Last: what the mount loaded is the fixed part the tuner measures.
  if (cfg->get_size("hybridstore_memory_target")) m->restart_memory_tuner(nullptr);
  *out = std::move(m);
  return 0;
}

int MountedStore::open_kv_device(std::string* error) {
  const std::string p = path_ + "/" + tier_device_link(Tier::kSsd);
  std::error_code ec;
  if (!fs::exists(p, ec)) {
    *error = "no store at " + path_ + " (run mkfs first)";
    return -ENOENT;
  }
  std::shared_ptr<StorageHooks> hooks = storage_hooks();
  if (hooks)
    if (int r = hooks->begin_mount(path_, *cfg_, error); r < 0) return r;
  DeviceOpenOptions o;
  if (!parse_io_backend(cfg_->get_str("hybridstore_io_backend"), &o.backend)) o.backend = IoBackend::kAuto;
  o.direct_io = cfg_->get_bool("hybridstore_direct_io");
  o.uring_depth = static_cast<unsigned>(cfg_->get_int("hybridstore_uring_depth"));
  o.exclusive = true;  // one mount of the kvfs and of the tier at a time
  const NandCounters nand{&perf_->set, perf_->ftl_merges, perf_->ftl_erases, perf_->ftl_pages_copied,
                          perf_->ftl_host_pages_written};
  std::unique_ptr<BlockDevice> dev = open_detected_device(*cfg_, p, o, &nand, error);
  if (!dev) return errno == EBUSY ? -EBUSY : -ENOENT;
  DeviceLabel label;
  LabelPairStatus status;
  std::string why;
  if (read_labels(dev.get(), &label, &status, &why) < 0) {
    *error = "no store at " + path_ + " (no <dir>/db, and " + p + ": " + why + ")";
    return -ENOENT;
  }
  if (!(label.flags & kLabelKvOnDevice) || label.role != Tier::kSsd) {
    *error = "no store at " + path_ + " (no <dir>/db, and the label of " + p +
             " does not say RocksDB is on it: a directory store that lost its db?)";
    return -ENOENT;
  }
  if (!(label.flags & kLabelMkfsDone)) {
    *error = "store at " + path_ + " was never completely created (mkfs did not finish)";
    return -EINVAL;
  }
  if (int r = take_label_device_options(label, p, cfg_, error); r < 0) return r;
  journal_discard_span_ = erase_block_bytes(dev.get());
  // Everything the directory holds besides the links comes from the label
  // (docs/kvfs.md 5.5): a directory that lost it gets it back.
  const std::string fsid_path = path_ + "/fsid", fsid = uuid_to_string(label.fsid);
  if (!fs::exists(fsid_path, ec)) {
    if (!write_file_durably(fsid_path, fsid + "\n") || !write_file_durably(path_ + "/type", "hybridstore\n")) {
      *error = "cannot write " + fsid_path + " or type";
      return -EIO;
    }
    HS_INFO("store {}: wrote {} and type from the ssd label", fsid, fsid_path);
  } else {
    std::ifstream f(fsid_path);
    std::string have;
    std::getline(f, have);
    if (have != fsid) {
      *error = fmt::format("{} says store {}, but its ssd device {} carries store {}", fsid_path, have, p, fsid);
      return -EINVAL;
    }
  }
  if (int r = lock_fsid(error); r < 0) return r;
  // One decorated device under the kvfs, the ring and the tier: the fault
  // model's volatile cache and a device model see them as one drive.
  if (hooks) dev = hooks->wrap_device(path_, Tier::kSsd, *cfg_, std::move(dev));
  ssd_base_ = std::shared_ptr<BlockDevice>(std::move(dev));
  const KvFsParams params = kvfs_params(*cfg_, *ssd_base_, label.head);
  if (int r = KvDevice::mount(ssd_base_, params, label.kvfs_uuid, label.fsid, nullptr, &kv_, error); r < 0) {
    *error = "store at " + path_ + ": the KV file system on " + p + ": " + *error;
    return r;
  }
  return open_store_db(path_, *cfg_, false, &db_, error, kv_->env(), &compactions_held_, &block_cache_);
}

PerTier<std::vector<Interval>> MountedStore::kvfs_chunks() const {
  PerTier<std::vector<Interval>> lent;
  if (kv_) lent[Tier::kSsd] = kv_->fs().chunks();
  return lent;
}

void MountedStore::set_kvfs_mount_headroom() {
  // What the next mount writes before it has a lender again: RocksDB's new
  // MANIFEST, OPTIONS and WAL, and the ring's records replayed into that
  // WAL (at most the ring's size).
  kvfs_mount_headroom_ = (journal_ ? journal_->size() : 0) + (4ull << 20);
  kv_->fs().set_mount_headroom(kvfs_mount_headroom_);
}

void MountedStore::lend_to_kvfs() {
  TierSpace& space = tiers_->space(Tier::kSsd);
  const TierDescriptor& d = super_.tier[Tier::kSsd];
  KvSizing sizing;
  std::string why;
  if (kvfs_sizing(*cfg_, d.size, d.reserved, space.lend_unit(), d.alloc_unit, kv_->fs().owned_bytes(), &sizing,
                  &why) < 0) {
    HS_WARN("store {}: {}; RocksDB grows a lend unit at a time and object data may fill the ssd tier",
            uuid_to_string(super_.fsid), why);
    sizing.grow_step = space.lend_unit();
    sizing.reserve = 0;
  }
  // The size mkfs lent (the sizing of an empty kvfs): a kvfs that grew
  // gives back its free peaks down to it, never below.
  KvSizing at_mkfs;
  if (cfg_->get_bool("hybridstore_kvfs_give_back") &&
      kvfs_sizing(*cfg_, d.size, d.reserved, space.lend_unit(), d.alloc_unit, 0, &at_mkfs, &why) == 0) {
    kvfs_give_back_step_ = sizing.grow_step;
    kvfs_keep_owned_ = at_mkfs.initial;
  }
  lender_ = std::make_unique<TierLender>(
      &space, TierLender::Counters{&perf_->set, perf_->kvfs_grows, perf_->kvfs_grow_bytes, perf_->kvfs_nospace});
  set_kvfs_gauges();
  kv_->fs().set_grow_step(sizing.grow_step);
  set_kvfs_mount_headroom();
  space.set_floor(sizing.reserve);
  kv_->set_lender(lender_.get());
  if (compactions_held_) {
    rocksdb::Status s = db_->SetOptions({{"disable_auto_compactions", "false"}});
    if (!s.ok()) HS_WARN("store {}: RocksDB's compactions stay off: {}", uuid_to_string(super_.fsid), s.ToString());
    compactions_held_ = false;
  }
}

int MountedStore::lock_fsid(std::string* error) {
  fsid_lock_fd_ = ::open((path_ + "/fsid").c_str(), O_RDWR | O_CLOEXEC);
  if (fsid_lock_fd_ < 0) {
    *error = "cannot open " + path_ + "/fsid: " + strerror(errno);
    return -errno;
  }
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  // An open-file-description lock, so a second mount is refused even from
  // the same process (classic POSIX locks are per process).
  if (::fcntl(fsid_lock_fd_, F_OFD_SETLK, &fl) < 0) {
    *error = "store at " + path_ + " is in use by another process";
    return -EBUSY;
  }
  return 0;
}

int MountedStore::read_superblock(std::string* error) {
  std::string v;
  if (!db_->Get(rocksdb::ReadOptions(), kv::mkfs_done_key(), &v).ok()) {
    *error = "store at " + path_ + " was never completely created (mkfs did not finish)";
    return -EINVAL;
  }
  if (!db_->Get(rocksdb::ReadOptions(), kv::superblock_key(), &v).ok()) {
    *error = "store at " + path_ + " has no superblock";
    return -EINVAL;
  }
  if (int r = decode_superblock(v, &super_, error); r < 0) return r;
  if ((super_.kv_location == KvLocation::kDevice) != (kv_ != nullptr)) {
    *error = kv_ ? "store at " + path_ + ": its ssd label says RocksDB is on the device, its superblock says in "
                   "the directory"
                 : "store at " + path_ + " keeps its RocksDB on the device, but a RocksDB is in " + path_ + "/db";
    return -EINVAL;
  }
  // Options fixed at mkfs take the values the store was made with.
  for (const auto& [k, val] : super_.mkfs_options) {
    std::string e;
    if (find_option(k) && cfg_->set(k, val, &e) < 0) HS_WARN("store option {}: {}", k, e);
  }
  return 0;
}

CommitJournal::Wrap MountedStore::journal_wrap() const {
  std::shared_ptr<StorageHooks> hooks = storage_hooks();
  if (!hooks) return {};
  return [this, hooks](std::unique_ptr<BlockDevice> d) { return hooks->wrap_journal(path_, *cfg_, std::move(d)); };
}

int MountedStore::open_journal(uint64_t* next_seq, std::string* error) {
  const std::string path = path_ + "/journal";
  const uint64_t size = cfg_->get_size("hybridstore_commit_journal_size");
  if (kv_) {
    // The ring in the kvfs: made now if the store has none and the option
    // asks for one; replayed whenever it exists.
    journal_ = kv_->open_journal(size, super_.fsid, journal_discard_span_, error);
    if (!journal_) return error->empty() ? 0 : -EIO;
    int r = journal_->replay(db_.get(), next_seq, error, ring_read(), ring_writes_ptr(), onode_deltas_ptr());
    journal_next_seq_ = *next_seq;
    return r < 0 ? r : 0;
  }
  std::error_code ec;
  // Without the option a journal left by an earlier mount is still replayed.
  if (size == 0 && !fs::exists(path, ec)) return 0;
  const CommitJournal::Wrap wrap = journal_wrap();
  journal_ = CommitJournal::open(path, size > 0 ? size : (16ull << 20), super_.fsid, wrap, error);
  if (!journal_) return -EIO;
  int r = journal_->replay(db_.get(), next_seq, error, ring_read(), ring_writes_ptr(), onode_deltas_ptr());
  journal_next_seq_ = *next_seq;
  return r < 0 ? r : 0;
}

int MountedStore::resize_journal(std::string* error) {
  // Only when asked: a tool mounting with the defaults must not undo the
  // size the OSD's configuration gave the ring.
  uint64_t want = cfg_->get_size("hybridstore_commit_journal_size");
  if (!kv_) {
    // A ring file is renamed into place only when complete, so one still
    // under its making name was cut off by a crash and holds nothing; left,
    // it would hold its space until some later mount made the ring again.
    std::error_code ec;
    if (std::filesystem::remove(path_ + "/journal.tmp", ec))
      HS_INFO("store {}: removed journal.tmp, a commit journal ring left half made", uuid_to_string(super_.fsid));
  }
  if (!journal_ || want == 0 || cfg_->is_default("hybridstore_commit_journal_size")) return 0;
  // The smallest ring a journal opens, in the kvfs as in a directory.
  want = std::max<uint64_t>(want, CommitJournal::kMinRingBlocks * CommitJournal::kBlock);
  const uint64_t have = journal_->size();
  const uint64_t made = kv_ ? kv_->fs().ring_bytes_for(want) : CommitJournal::ring_file_bytes(want);
  if (made == have) return 0;
  // The ring's records are all in RocksDB by now (the replay's end was
  // written synced); this makes sure of it before the ring goes.
  if (rocksdb::Status s = db_->FlushWAL(true); !s.ok()) {
    *error = "syncing RocksDB before the commit journal's ring is made again: " + s.ToString();
    return -EIO;
  }
  journal_.reset();
  int code = 0;
  const CommitJournal::Wrap wrap = journal_wrap();
  const std::string path = path_ + "/journal";
  if (kv_) {
    journal_ = kv_->resize_journal(want, super_.fsid, journal_discard_span_, error, &code);
  } else {
    journal_ = CommitJournal::remake(path, want, super_.fsid, wrap, error);
    code = journal_ ? 0 : -ENOSPC;
  }
  if (!journal_ && code == -ENOSPC) {
    // Nothing changed that matters: the kvfs could not lend the new ring
    // and recorded nothing, or the directory's new file was not made (or
    // was renamed over the old one, which is then as empty as the old one
    // was; either opens).
    HS_WARN("store {}: the commit journal's ring stays at {} bytes; hybridstore_commit_journal_size asks for {}: "
            "{}",
            uuid_to_string(super_.fsid), have, made, *error);
    error->clear();
    std::error_code ec;
    if (kv_) {
      journal_ = kv_->open_journal(have, super_.fsid, journal_discard_span_, error);
    } else {
      std::filesystem::remove(path + ".tmp", ec);
      journal_ = CommitJournal::open(path, have, super_.fsid, wrap, error);
    }
  }
  if (!journal_) {
    *error = "making the commit journal's ring again at " + std::to_string(made) + " bytes: " + *error;
    return -EIO;
  }
  journal_->start_empty(journal_next_seq_ - 1);
  if (journal_->size() != have)
    HS_INFO("store {}: the commit journal's ring is now {} bytes (was {})", uuid_to_string(super_.fsid),
            journal_->size(), have);
  // lend_to_kvfs kept the old ring's size free for the next mount's replay.
  if (kv_) set_kvfs_mount_headroom();
  return 0;
}

int MountedStore::open_tiers(std::vector<std::string>* repair_log, std::string* error) {
  tiers_ = std::make_unique<TierSet>(perf_);
  if (int r = tiers_->open(path_, super_, *cfg_, error, ssd_base_); r < 0) return r;
  // Deferred writes acknowledged before a crash reach their devices before
  // anything reads them; never over what the kvfs owns now (docs/kvfs.md
  // 2.6).
  const PerTier<std::vector<Interval>> lent = kvfs_chunks();
  DeferredWriter::Exclude exclude;
  for (const Interval& i : lent[Tier::kSsd]) exclude.ranges.emplace_back(i.offset, i.length);
  // Ring data goes to its place with the D records, in staging order; the
  // journal's number and tail, which replay left as they were, are written
  // with the records' deletes, once the data is in place.
  rocksdb::WriteBatch finish;
  if (!onode_deltas_.empty())
    if (int r = replay_deltas(&finish, error); r < 0) return r;
  DeferredWriter::RingReplay ring;
  if (!ring_writes_.empty()) {
    std::string v;
    rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), kv::journal_applied_key(), &v);
    if (s.ok() && v.size() == 8) {
      ring.applied = load_fixed64(v.data());
    } else if (!s.IsNotFound()) {
      *error = s.ok() ? "corrupt applied ring data number in RocksDB" : "reading the applied ring data number: " + s.ToString();
      return -EIO;
    }
    journal_->finish_replay(&finish, journal_next_seq_);
    ring.writes = &ring_writes_;
    ring.also = &finish;
  }
  int from_ring = 0;
  ring.written = &from_ring;
  const int replayed = DeferredWriter::replay(db_.get(), tiers_->devices(), error, repair_log,
                                              kv_ ? &exclude : nullptr, ring_writes_.empty() ? nullptr : &ring);
  if (replayed < 0) return replayed;
  if (!onode_deltas_.empty() && ring_writes_.empty()) {
    // No data to place first: the onodes and the end of the replay now.
    journal_->finish_replay(&finish, journal_next_seq_);
    rocksdb::WriteOptions wo;
    wo.sync = true;
    if (rocksdb::Status s = db_->Write(wo, &finish); !s.ok()) {
      *error = "writing the onodes the commit journal's deltas changed: " + s.ToString();
      return -EIO;
    }
  }
  onode_deltas_.clear();
  onode_deltas_.shrink_to_fit();
  replayed_from_ring_ = static_cast<uint64_t>(from_ring);
  replayed_from_records_ = static_cast<uint64_t>(replayed - from_ring);
  ring_writes_.clear();
  ring_writes_.shrink_to_fit();
  if (int r = tiers_->load(db_.get(), *cfg_, lent, error); r < 0) return r;
  if (kv_) lend_to_kvfs();
  return 0;
}

bool MountedStore::journal_deltas() const {
  return ring_data_ && journal_ && cfg_->get_str("hybridstore_small_write_journal") == "on";
}

int MountedStore::replay_deltas(rocksdb::WriteBatch* finish, std::string* error) {
  // The onodes as a mounted store reads and writes them; nothing of it but
  // RocksDB is used before the store is up.
  OnodeStore onodes(db_.get(), nullptr, nullptr, *cfg_, tiers_->count(), perf_);
  if (int r = onodes.enable_versions(error); r < 0) return r;
  OnodeReplayCounts n;
  if (int r = replay_onode_deltas(onodes, onode_deltas_, finish, &n, error); r < 0) return r;
  HS_INFO("commit journal: onode deltas of {} transactions: {} applied, {} already in RocksDB, {} of earlier "
          "lives, {} of removed objects; {} onodes written",
          n.transactions, n.applied, n.included, n.other_life, n.absent, n.onodes_written);
  deltas_applied_ = n.applied;
  deltas_included_ = n.included;
  return 0;
}

void MountedStore::start_writers(uint64_t next_journal_seq) {
  committer_->set_perf(committer_counters(perf_));
  if (journal_ && cfg_->get_size("hybridstore_commit_journal_size") > 0)
    committer_->set_journal(journal_.get(), next_journal_seq,
                            static_cast<int>(cfg_->get_int("hybridstore_commit_lanes")));
  committer_->set_inline_checkpoints(!cfg_->get_bool("hybridstore_commit_checkpointer"));
  const bool ring_data = ring_data_ && journal_;
  // Ring space holds each record until its data is in place, too; and,
  // with onode deltas (from this mount's upgrade to format 7 on), until
  // RocksDB holds the onodes its deltas changed.
  if (ring_data) journal_->hold_tail_for(CommitJournal::TailHold::kApplied);
  if (journal_deltas()) journal_->hold_tail_for(CommitJournal::TailHold::kClean);
  committer_->start();
  DeferredOptions dopts;
  dopts.batch_bytes = cfg_->get_size("hybridstore_deferred_batch_bytes");
  dopts.max_delay_ms = static_cast<uint64_t>(cfg_->get_int("hybridstore_deferred_max_delay_ms"));
  dopts.max_pending_bytes = cfg_->get_size("hybridstore_deferred_max_pending");
  TierSet* tiers = tiers_.get();
  deferred_ = std::make_unique<DeferredWriter>(
      db_.get(), tiers_->devices(), &write_tracker_, [tiers](const PExtent& e) { tiers->release(e); }, dopts);
  // One failure state for the store: after any failed write to RocksDB or a
  // device, nothing more is written (RocksDB refuses, or asserts, after a
  // failed WAL write) and the store is read-only.
  KvCommitter* committer = committer_.get();
  deferred_->set_store_failure([committer] { return committer->error(); },
                               [committer](int err, const std::string& why) { committer->fail(err, why); });
  deferred_->set_perf(deferred_counters(perf_));
  if (ring_data) {
    CommitJournal* journal = journal_.get();
    deferred_->set_ring_sync(
        [committer](rocksdb::WriteBatch* b, uint64_t journal_seq, std::string* failure) {
          return committer->sync_applied_ring_data(b, journal_seq, failure);
        },
        [journal] { return journal->batches_written_seq(); });
    DeferredWriter* deferred = deferred_.get();
    if (journal_deltas()) {
      OnodeCheckpointer::Options o;
      o.period = std::chrono::milliseconds(cfg_->get_int("hybridstore_small_write_checkpoint_ms"));
      o.dirty_max = static_cast<size_t>(cfg_->get_int("hybridstore_small_write_dirty_max"));
      o.dirty_bytes_max = cfg_->get_size("hybridstore_small_write_dirty_bytes");
      checkpointer_ = std::make_unique<OnodeCheckpointer>(db_.get(), onodes_.get(), colls_.get(), committer,
                                                          journal, o, perf_);
      OnodeCheckpointer* ckpt = checkpointer_.get();
      journal_->set_room_wanted([deferred, ckpt] {
        deferred->ring_room_wanted();
        ckpt->wake();
      });
      checkpointer_->start();
    } else {
      journal_->set_room_wanted([deferred] { deferred->ring_room_wanted(); });
    }
  }
  deferred_->start();
}

int MountedStore::set_object_gauges(std::string* error) {
  PerfCounterSet& ps = perf_->set;
  std::string v;
  int64_t stats[kv::kStatCount];
  if (!db_->Get(rocksdb::ReadOptions(), kv::stats_key(), &v).ok() || !kv::decode_stats(v, stats)) {
    // fsck reports (and repair rewrites) a missing or corrupt record.
    for (Tier t : tiers_->ids()) ps.set(perf_->objects[t], 0);
    return 0;
  }
  if (v.size() <= 8 * kv::kStatTierObjects) {
    // Made before objects were counted per tier: count them once. (A record
    // shorter than kStatCount but with the per-tier slots comes from a store
    // with fewer tier slots; decode_stats reads the missing ones as zero.)
    int64_t delta[kv::kStatCount] = {};
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    std::string prefix(1, kv::kOnode);
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
      Onode o;
      std::string why;
      if (onodes_->complete(it->key().ToString(), it->value().ToStringView(), rocksdb::ReadOptions(), &o, &why) < 0)
        continue;  // fsck's business
      if (std::optional<Tier> h = tiers_->home(o)) ++delta[kv::stat_objects_on(*h)];
    }
    if (!it->status().ok()) {
      *error = "counting objects per tier: " + it->status().ToString();
      return -EIO;
    }
    it.reset();
    rocksdb::WriteBatch b;
    b.Merge(kv::stats_key(), kv::encode_stat_delta(delta));
    rocksdb::WriteOptions wo;
    wo.sync = true;
    if (!db_->Write(wo, &b).ok()) {
      *error = "writing the per-tier object counts failed";
      return -EIO;
    }
    for (Tier t : tiers_->ids()) stats[kv::stat_objects_on(t)] = delta[kv::stat_objects_on(t)];
  }
  for (Tier t : tiers_->ids())
    ps.set(perf_->objects[t], static_cast<uint64_t>(std::max<int64_t>(0, stats[kv::stat_objects_on(t)])));
  return 0;
}

int MountedStore::upgrade_format(std::string* error) {
  const uint32_t target = target_format(*cfg_, ring_data_);
  if (super_.format_version >= target) return upgrade_labels(error);
  // A format-4 label pair puts copy B at s, inside the head the store
  // reserved; a head too small for it (none is known) keeps the old format.
  for (Tier t : tiers_->ids()) {
    if (super_.format_version >= 4) break;
    const uint64_t s = label_slot(tiers_->device(t));
    if (super_.tier[t].reserved < 2 * s) {
      HS_WARN("store {}: the {} tier reserves {} bytes, too few for two {}-byte label copies; it stays at "
              "format {}",
              uuid_to_string(super_.fsid), tier_name(t), super_.tier[t].reserved, s, super_.format_version);
      return 0;
    }
  }
  // Upgrade, once the store has mounted (and passed fsck on mount, when
  // asked): the superblock of the current format, with what the old one
  // implied (format 1: SSD then HDD, layouts from the mkfs options) made
  // explicit. A mount that fails leaves the old format, which the previous
  // build still opens. One durable commit; a build of the old format
  // refuses the new superblock instead of misreading it, and so never sees
  // the labels rewritten after it. To format 5 the commit adds nothing:
  // this mount's replay wrote the ring's tail, and every RocksDB sync since
  // has moved it.
  Superblock up = super_;
  up.format_version = target;
  if (super_.format_version < 4) up.kv_location = KvLocation::kDirectory;
  CommitWork work;
  work.batch = std::make_unique<rocksdb::WriteBatch>();
  work.batch->Put(kv::superblock_key(), encode_superblock(up));
  // Format 7: incarnations start with the upgrade; every older onode reads
  // as incarnation 0, version 0, and no delta of them exists (the ring of a
  // format-6 store holds no onode deltas).
  const bool versions = target >= kFormatOnodeVersions && super_.format_version < kFormatOnodeVersions;
  if (versions) {
    std::string one;
    put_fixed64(&one, 1);
    work.batch->Put(kv::incarnation_max_key(), one);
  }
  const uint64_t seq = committer_->submit(std::move(work));
  if (seq == 0 || committer_->wait_committed(seq) < 0) {
    *error = "cannot write the upgraded superblock: " + committer_->error_message();
    close();
    return -EIO;
  }
  // In RocksDB itself, not only in the journal's ring: a mount reads the
  // superblock before it replays the ring, and how it reads the ring
  // depends on the format (a format-6 ring's data is replayed only by a
  // mount that knows the store is of format 6).
  if (rocksdb::Status s = db_->FlushWAL(true); !s.ok()) {
    *error = "cannot sync the upgraded superblock: " + s.ToString();
    close();
    return -EIO;
  }
  HS_INFO("store {} upgraded from format {} to format {}", uuid_to_string(super_.fsid), super_.format_version,
          target);
  super_ = up;
  if (versions) {
    if (int r = onodes_->enable_versions(error); r < 0) {
      close();
      return r;
    }
    if (journal_deltas()) onodes_->enable_journal_deltas();
  }
  return upgrade_labels(error);
}

int MountedStore::upgrade_labels(std::string* error) {
  for (Tier t : tiers_->ids()) {
    const DeviceLabel& cur = tiers_->label(t);
    DeviceLabel want = store_tier_label(path_, super_, t, cur);
    // Only what the format needs: the path hints alone never cause a rewrite.
    DeviceLabel cmp = want;
    cmp.meta = cur.meta;
    // A pair whose copies are of different record versions is an upgrade
    // a crash cut between B and A: finished here. Other damage is fsck's
    // to report and repair's to mend.
    const LabelPairStatus& st = tiers_->label_status(t);
    const bool torn_upgrade = st.a == 0 && st.b == 0 && st.label_a.record_version != st.label_b.record_version;
    if (cur.record_version >= 2 && same_label_content(cmp, cur) && !torn_upgrade) continue;
    if (int r = tiers_->write_label(t, &want, error); r < 0) {
      close();
      return r;
    }
    HS_INFO("store {}: {} label rewritten (record version 2, generation {})", uuid_to_string(super_.fsid),
            tier_name(t), want.generation);
  }
  return 0;
}

int MountedStore::finish_move(std::string* error) {
  DeviceLabel l = tiers_->label(Tier::kSsd);
  std::vector<std::string> old = {"db", "journal"};
  // A move cut between its two renames (M9) leaves the old journal under
  // its own name.
  if (l.flags & kLabelKvMovedPending) old.push_back("journal");
  // The flag first: once it is clear a rollback is refused, so the old
  // copy may go; a crash before the deletes leaves them to the next mount.
  if (l.flags & kLabelKvMovedPending) {
    l.flags &= ~kLabelKvMovedPending;
    if (int r = tiers_->write_label(Tier::kSsd, &l, error); r < 0) {
      *error = "clearing kv_moved_pending in the ssd label: " + *error;
      close();
      return r;
    }
    HS_INFO("store {}: first read-write mount from the device after the move; it can no longer be rolled back",
            uuid_to_string(super_.fsid));
  }
  for (size_t i = 0; i < old.size(); ++i) {
    const std::string p = path_ + "/" + old[i] + (i < 2 ? kMovedSuffix : "");
    std::error_code ec;
    if (!fs::exists(p, ec)) continue;
    fs::remove_all(p, ec);
    if (ec)
      HS_WARN("store {}: cannot delete {}: {}", uuid_to_string(super_.fsid), p, ec.message());
    else
      HS_INFO("store {}: deleted {}, the directory's copy from before the move", uuid_to_string(super_.fsid), p);
  }
  return 0;
}

MountedStore::~MountedStore() {
  // What a failed mount, or close(), leaves to stop and let go of.
  tuner_.reset();  // it resizes the parts below
  reads_.reset();
  pipeline_.reset();
  checkpointer_.reset();  // its thread stops; nothing more is written
  writer_.reset();
  data_.reset();
  if (deferred_) deferred_->stop();
  committer_.reset();
  journal_.reset();
  deferred_.reset();
  heat_.reset();
  // The kvfs stops growing before the space it grows from goes.
  if (kv_) kv_->set_lender(nullptr);
  tiers_.reset();
  db_.reset();
  kv_.reset();  // after RocksDB, which runs on it
  lender_.reset();
  ssd_base_.reset();
  if (fsid_lock_fd_ >= 0) ::close(fsid_lock_fd_);
  onodes_.reset();
  colls_.reset();
}

int MountedStore::close() {
  if (!committer_) return 0;  // closed already
  int r = settle();
  if (r == 0 && cfg_->get_bool("hybridstore_fsck_on_umount")) {
    FsckReport rep;
    if (fsck(false, &rep) != 0) HS_ERROR("fsck on umount found {} errors", rep.errors);
  }
  // After an I/O error the store is read-only and writes nothing more: a
  // RocksDB whose WAL write failed aborts on FlushWAL (assertion builds).
  if (committer_->error() == 0) save_heat();  // which may fail the store itself
  if (heat_) heat_->detach();
  // Every dirty onode into RocksDB: the next mount replays nothing, and
  // tools reading RocksDB see the objects as they are.
  if (checkpointer_) checkpointer_->stop();
  const bool failed = committer_->error() != 0;
  reads_.reset();
  pipeline_.reset();
  writer_.reset();
  data_.reset();
  // The deferred writer asks the committer whether the store failed: it
  // stops first.
  deferred_->stop(!failed);
  committer_->stop();
  committer_.reset();
  deferred_.reset();
  if (!failed) tiers_->flush_devices();
  if (db_) {
    if (!failed) db_->FlushWAL(true);
    db_->Close();
  }
  // The kvfs's last records (RocksDB's last file sizes) made durable; after
  // a failure nothing more is written, as with RocksDB.
  if (kv_ && !failed) {
    journal_.reset();  // its ring region reads the kvfs's device
    kv_->set_lender(nullptr);
    std::string why;
    if (int u = kv_->unmount(&why); u < 0) {
      HS_ERROR("store {}: unmounting the KV file system: {}", uuid_to_string(super_.fsid), why);
      if (r == 0) r = u;
    }
  }
  return r;
}

int MountedStore::flush() {
  int r = committer_->wait_committed(committer_->last_seq());
  committer_->drain_callbacks();
  // After a failed commit the store is read-only: records of the failed
  // transactions will never commit, so there is nothing to wait for.
  if (int e = committer_->error(); e < 0) return r < 0 ? r : e;
  // Staged data stays staged (durable, readable): forcing its write units
  // out here would write them partly filled at every sync.
  if (int d = deferred_->drain(); d < 0 && r == 0) r = d;
  return r;
}

int MountedStore::settle() {
  int r = flush();
  if (r == 0 && tiers_->keeps_state()) {
    if (!committer_->error())
      if (uint64_t seq = submit_staged_state(TierSpace::Drain::kFlush)) committer_->wait_committed(seq);
    r = deferred_->drain(true);
  }
  return r;
}

void MountedStore::set_kvfs_gauges() {
  if (!kv_) return;
  const uint64_t owned = kv_->fs().owned_bytes();
  perf_->set.set(perf_->kvfs_owned_bytes, owned);
  perf_->set.set(perf_->kvfs_used_bytes, owned - std::min(owned, kv_->fs().free_bytes()));
  const KvFs::Counts c = kv_->fs().take_counts();
  perf_->set.inc(perf_->kvfs_syncs, c.syncs);
  perf_->set.inc(perf_->kvfs_log_flushes, c.log_flushes);
  perf_->set.inc(perf_->kvfs_compactions, c.compactions);
  perf_->set.inc(perf_->kvfs_returns, c.returns);
  perf_->set.inc(perf_->kvfs_return_bytes, c.return_bytes);
}

void MountedStore::balance_kvfs() {
  if (!kv_ || !lender_ || kvfs_give_back_step_ == 0) return;
  std::unique_lock<std::mutex> l(kvfs_balance_mutex_, std::try_to_lock);
  if (!l.owns_lock()) return;  // fsck or repair is comparing the kvfs with the tier
  const uint64_t step = kvfs_give_back_step_;
  // Hysteresis: the next compaction's peak finds two steps free (one on top
  // of the mount headroom, which allocations keep free anyway), and a
  // return follows only a peak two steps above that.
  const uint64_t keep_free = std::max(2 * step, kvfs_mount_headroom_ + step);
  if (kv_->fs().free_bytes() <= keep_free + 2 * step || kv_->fs().owned_bytes() <= kvfs_keep_owned_) return;
  uint64_t returned = 0;
  std::string why;
  if (int r = kv_->fs().give_back(keep_free, kvfs_keep_owned_, &returned, &why); r < 0)
    HS_WARN("store {}: the KV file system kept its free space: {}", uuid_to_string(super_.fsid), why);
  else if (returned)
    HS_DEBUG("store {}: the KV file system gave {} bytes back to the ssd tier", uuid_to_string(super_.fsid),
             returned);
}

namespace {
// Each tuned cache's floor, whatever the heap says: the onode cache still
// holds the onodes of the transactions in flight and a shard's working set;
// the block cache the index and filter blocks of the hot tables and a few
// thousand onode blocks; the data cache a few stripes per shard.
constexpr uint64_t kOnodeCacheMin = 8ull << 20;
constexpr uint64_t kBlockCacheMin = 16ull << 20;
constexpr uint64_t kDataCacheMin = 8ull << 20;
// The I/O buffer pool's own bound (hsio/block_device.cc), and the least a
// memory target leaves it: the journal replay's ring buffer is 16 MiB.
constexpr uint64_t kIdleBuffersMax = 256ull << 20;
constexpr uint64_t kIdleBuffersMin = 16ull << 20;
}  // namespace

void MountedStore::apply_cache_options() {
  onodes_->set_cache_byte_capacity(cfg_->get_size("hybridstore_onode_cache_bytes"));
  if (block_cache_) block_cache_->SetCapacity(kv_block_cache_bytes(*cfg_, kv_ != nullptr));
  if (ReadCache* rc = tiers_->read_cache()) rc->set_capacity(cfg_->get_size("hybridstore_data_cache_size"));
}

void MountedStore::restart_memory_tuner(std::function<uint64_t()> heap) {
  std::lock_guard<std::mutex> l(tuner_mutex_);
  tuner_.reset();
  const uint64_t target = cfg_->get_size("hybridstore_memory_target");
  if (target == 0) {
    apply_cache_options();
    aligned_buffer_pool_set_idle_limit(kIdleBuffersMax);
    return;
  }
  // Idle I/O buffers are a cache of allocations the tuner cannot see into:
  // bounded by a fixed share instead (64 MiB at a 2 GiB target; 256 MiB of
  // them sat idle in a 1M-object OSD after the mount's replays).
  aligned_buffer_pool_set_idle_limit(std::max<uint64_t>(target / 32, kIdleBuffersMin));
  if (!heap)
    heap = [this] {
      if (const uint64_t h = read_heap_bytes()) return h;
      // No allocator to ask: what the store counts is the best guess left.
      uint64_t sum = 0;
      for (const MemPoolStat& p : mempools()) sum += p.bytes;
      return sum;
    };
  // Parts of what is left: metadata (onodes, RocksDB blocks) before data,
  // as BlueStore's meta and kv ratios come before its data ratio.
  std::vector<MemoryTuner::Cache> caches;
  caches.push_back({"onode_cache", kOnodeCacheMin, 4,
                    [this] {
                      uint64_t items = 0, bytes = 0;
                      onodes_->cache_memory(&items, &bytes);
                      return bytes;
                    },
                    [this](uint64_t c) { onodes_->set_cache_byte_capacity(c); }});
  if (block_cache_)
    caches.push_back({"kv_block_cache", kBlockCacheMin, 4, [this] { return uint64_t(block_cache_->GetUsage()); },
                      [this](uint64_t c) { block_cache_->SetCapacity(static_cast<size_t>(c)); }});
  if (ReadCache* rc = tiers_->read_cache())
    caches.push_back({"data_cache", kDataCacheMin, 2, [rc] { return rc->stats().cached_bytes; },
                      [rc](uint64_t c) { rc->set_capacity(c); }});
  // A reading every tick (a second), as Ceph's cache autotuner reads: at
  // every 5th, a 1M-object OSD's caches grew under reads past 1.1 x its
  // 2 GiB target between two readings.
  tuner_ = std::make_unique<MemoryTuner>(target, std::move(caches), std::move(heap), /*interval_ticks=*/1);
  std::string sizes;
  for (const MemoryTuner::Size& z : tuner_->sizes()) sizes += fmt::format(" {} {}", z.name, z.capacity);
  HS_INFO("store {}: memory target {}, fixed parts {} at mount, caches:{}", uuid_to_string(super_.fsid), target,
          tuner_->fixed_bytes(), sizes);
}

void MountedStore::set_memory_target(uint64_t bytes) {
  std::string e;
  if (cfg_->set("hybridstore_memory_target", std::to_string(bytes), &e) < 0)
    HS_WARN("hybridstore_memory_target: {}", e);
  restart_memory_tuner(nullptr);
}

void MountedStore::set_plan_memory(uint64_t items, uint64_t bytes) {
  plan_items_.store(items, std::memory_order_relaxed);
  plan_bytes_.store(bytes, std::memory_order_relaxed);
}

std::vector<MemPoolStat> MountedStore::mempools() {
  std::vector<MemPoolStat> out;
  MemPoolStat onode{"onode_cache"};
  onodes_->cache_memory(&onode.items, &onode.bytes);
  out.push_back(onode);
  if (HeatTracker* t = heat_ ? heat_->tracker() : nullptr) out.push_back({"heat", t->size(), t->memory_bytes()});
  if (block_cache_) {
    MemPoolStat bc{"kv_block_cache", 0, block_cache_->GetUsage()};
#if ROCKSDB_MAJOR >= 7
    bc.items = block_cache_->GetOccupancyCount();
#endif
    out.push_back(bc);
  }
  uint64_t mem = 0, imm = 0, readers = 0;
  db_->GetIntProperty(rocksdb::DB::Properties::kCurSizeAllMemTables, &mem);
  db_->GetIntProperty(rocksdb::DB::Properties::kNumImmutableMemTable, &imm);
  out.push_back({"kv_memtables", imm + 1, mem});
  // Index and filter blocks held outside the block cache, per open table.
  db_->GetIntProperty(rocksdb::DB::Properties::kEstimateTableReadersMem, &readers);
  out.push_back({"kv_table_readers", 0, readers});
  MemPoolStat sections{"tier_sections"};
  tiers_->memory(&sections.items, &sections.bytes);
  out.push_back(sections);
  if (ReadCache* rc = tiers_->read_cache()) {
    const uint64_t b = rc->stats().cached_bytes;
    out.push_back({"data_cache", b / ReadCache::kBlock, b});
  }
  // Freed I/O buffers kept for reuse: the mount's journal replay leaves its
  // ring-sized buffer there.
  MemPoolStat io{"io_buffers_idle"};
  aligned_buffer_pool_idle(&io.items, &io.bytes);
  out.push_back(io);
  out.push_back({"tier_plan", plan_items_.load(std::memory_order_relaxed), plan_bytes_.load(std::memory_order_relaxed)});
  return out;
}

void MountedStore::tick() {
  {
    std::lock_guard<std::mutex> l(tuner_mutex_);
    if (tuner_) tuner_->tick();
  }
  balance_kvfs();
  set_kvfs_gauges();
  if (committer_->error()) return;
  submit_staged_state(TierSpace::Drain::kTick);
}

uint64_t MountedStore::submit_staged_state(TierSpace::Drain how) {
  // Through the committer, drained and submitted under the tiers' locks like
  // a transaction's state: RocksDB then takes every state in the order it
  // was drained (see SsdSections::tick_locked).
  CommitWork work;
  work.batch = std::make_unique<rocksdb::WriteBatch>();
  uint64_t seq = 0;
  TierSet::Drained state = tiers_->drain_state(how, work.batch.get());
  if (work.batch->Count() > 0 && (seq = committer_->submit(std::move(work))) == 0)
    return 0;  // read-only: without their state the regions must not be written either
  // Queued under the locks, as a transaction's (see TxnPipeline::commit).
  state.queue_regions(deferred_.get());
  return seq;
}

int MountedStore::save_heat() { return heat_ ? heat_->save(db_.get(), committer_.get()) : 0; }

int MountedStore::statfs(StoreStats* st) {
  // Statistics are kept with merges in the same batches as the changes they
  // count, and freed space returns to the allocators at commit: waiting for
  // what is queued makes every figure exact.
  flush();
  st->format_version = super_.format_version;
  tiers_->usage(st);
  std::string v;
  int64_t stats[kv::kStatCount];
  if (db_->Get(rocksdb::ReadOptions(), kv::stats_key(), &v).ok() && kv::decode_stats(v, stats)) {
    st->objects = static_cast<uint64_t>(std::max<int64_t>(0, stats[kv::kStatObjects]));
    st->data_bytes = static_cast<uint64_t>(std::max<int64_t>(0, stats[kv::kStatBytes]));
  }
  auto ds = deferred_->stats();
  st->deferred_staged = ds.records_staged;
  st->deferred_in_ring = ds.records_in_ring;
  st->deferred_applied = ds.records_applied;
  st->deferred_device_writes = ds.device_writes;
  st->deferred_pending_bytes = deferred_->pending_bytes();
  st->mount_replayed_from_ring = replayed_from_ring_;
  st->mount_replayed_from_records = replayed_from_records_;
  st->mount_onode_deltas_applied = deltas_applied_;
  st->mount_onode_deltas_included = deltas_included_;
  auto cs = committer_->stats();
  st->transactions_committed = cs.transactions;
  st->commit_groups = cs.groups;
  st->read_only = committer_->error() != 0;
  // RocksDB's own estimate of the omap key range, and all of its files.
  const std::string omap_begin(1, kv::kOmap), omap_end = kv::prefix_end(omap_begin);
  rocksdb::Range omap_range(omap_begin, omap_end);
  uint64_t omap = 0;
  db_->GetApproximateSizes(rocksdb::SizeApproximationOptions(), db_->DefaultColumnFamily(), &omap_range, 1, &omap);
  uint64_t sst = 0, mem = 0;
  db_->GetIntProperty(rocksdb::DB::Properties::kTotalSstFilesSize, &sst);
  db_->GetIntProperty(rocksdb::DB::Properties::kCurSizeAllMemTables, &mem);
  const uint64_t total = sst + mem;
  st->omap_bytes = std::min(omap, total);
  st->metadata_bytes = total - st->omap_bytes;
  // Set either way: a caller may hand in the figures of another store.
  st->kv_on_device = kv_ != nullptr;
  st->commit_journal_bytes = journal_ ? journal_->size() : 0;
  st->kvfs_owned = kv_ ? kv_->fs().owned_bytes() : 0;
  st->kvfs_used = kv_ ? st->kvfs_owned - std::min(st->kvfs_owned, kv_->fs().free_bytes()) : 0;
  return 0;
}

int MountedStore::fsck(bool deep, FsckReport* report, const PerTier<std::vector<Interval>>* lent) {
  *report = FsckReport();
  if (int r = flush(); r < 0) return r;
  // fsck reads onodes from RocksDB.
  if (checkpointer_)
    if (int r = checkpointer_->checkpoint(); r < 0) return r;
  std::lock_guard<std::mutex> held(kvfs_balance_mutex_);
  StoreFsck f(db_.get(), &super_, tiers_.get(), colls_.get(), onodes_.get(), data_.get());
  const PerTier<std::vector<Interval>> own = kvfs_chunks();
  if (!lent && kv_) lent = &own;
  if (lent)
    for (Tier t : tiers_->ids()) f.set_lent(t, (*lent)[t]);
  int r = f.check(deep, report);
  if (kv_) check_kvfs(report, deep);
  return r < 0 ? r : (report->errors ? static_cast<int>(std::min<uint64_t>(report->errors, INT32_MAX)) : r);
}

void MountedStore::check_kvfs(FsckReport* report, bool deep) {
  // The kvfs's own rows (docs/kvfs.md section 6), on the live state: its
  // chunks against the tier's lend unit, the ring against the option.
  KvFsCheckOptions o;
  o.lend_unit = tiers_->space(Tier::kSsd).lend_unit();
  // Checked against the option only where a mount would have resized to it.
  o.journal_size = cfg_->is_default("hybridstore_commit_journal_size")
                       ? 0
                       : cfg_->get_size("hybridstore_commit_journal_size");
  KvFsCheckReport k;
  if (int r = check_mounted_kvfs(&kv_->fs(), o, &k); r < 0 && k.problems.empty())
    k.error(fmt::format("the KV file system could not be checked: {}", strerror(-r)));
  report->errors += k.errors;
  report->warnings += k.warnings;
  for (std::string& p : k.problems) report->problems.push_back("kvfs: " + std::move(p));
  report->kvfs_owned = k.owned_bytes;
  report->kvfs_used = k.used_bytes;
  check_kvfs_files(db_.get(), &kv_->fs(), deep, report, nullptr);
  check_kvfs_ring(db_.get(), ssd_base_.get(), kv_->fs().journal(), super_.fsid, report);
}

int MountedStore::repair(FsckReport* report, std::vector<std::string>* changes) {
  *report = FsckReport();
  if (int r = flush(); r < 0) return r;
  std::lock_guard<std::mutex> held(kvfs_balance_mutex_);
  StoreFsck f(db_.get(), &super_, tiers_.get(), colls_.get(), onodes_.get(), data_.get());
  const PerTier<std::vector<Interval>> lent = kvfs_chunks();
  for (Tier t : tiers_->ids()) f.set_lent(t, lent[t]);
  int r = f.repair(report, changes);
  if (r < 0 || !kv_) return r;
  check_kvfs_files(db_.get(), &kv_->fs(), false, report, changes);
  return static_cast<int>(changes->size());
}

}  // namespace hybridstore
