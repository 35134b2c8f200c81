// mkfs, mount, umount and space statistics.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <rocksdb/cache.h>
#include <rocksdb/convenience.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <rocksdb/version.h>

#include "hscommon/encoding.h"
#include "hscommon/log.h"
#include "hybridstore/kv/gated_db.h"
#include "hybridstore/store/storage_hooks.h"
#include "hsio/async_write_device.h"
#include "hybridstore/store/store_impl.h"

namespace fs = std::filesystem;

namespace hybridstore {

namespace {

uint64_t now_us() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

// A tier's device link in the store directory, by the tier's name:
// block.ssd, block.tier2, ... (its options: tier_option).
std::string tier_link(Tier t) { return std::string("block.") + tier_name(t); }

bool write_text_file(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    if (!f) return false;
    f << text;
    if (!f.flush()) return false;
  }
  int fd = ::open(tmp.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  return ::rename(tmp.c_str(), path.c_str()) == 0;
}

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// The tiers a store at `path` has (its superblock), or, before mkfs, the
// tiers mkfs will make: the per-tier counters are registered for them.
int counted_tiers(const std::string& path, const Config& cfg) {
  int n = static_cast<int>(cfg.get_int("hybridstore_tiers"));
  StoreProbe p;
  if (HybridStore::probe(path, cfg, &p, nullptr) == 0) n = p.tiers;
  return n;
}

}  // namespace

StoreImpl::StoreImpl(std::string path, Config cfg)
    : path_(std::move(path)), cfg_(std::move(cfg)), perf_(std::make_unique<StorePerf>(cfg_, counted_tiers(path_, cfg_))) {}

StoreImpl::~StoreImpl() {
  if (mounted_) umount();
  close_all();
}

void StoreImpl::close_all() {
  if (deferred_) deferred_->stop();
  committer_.reset();
  journal_.reset();
  deferred_.reset();
  for (auto& sp : space_) sp.reset();
  db_.reset();
  if (fsid_lock_fd_ >= 0) {
    ::close(fsid_lock_fd_);
    fsid_lock_fd_ = -1;
  }
  cache_.reset();
  colls_.clear();
}

std::shared_ptr<CollectionState> StoreImpl::coll_state(const CollectionId& c) {
  std::lock_guard<std::mutex> l(colls_mutex_);
  auto& p = colls_[c];
  if (!p) p = std::make_shared<CollectionState>(c);
  return p;
}

uint64_t StoreImpl::allocate_nid() {
  std::lock_guard<std::mutex> l(nid_mutex_);
  if (next_nid_ >= nid_reserved_) {
    // Reserve a block of ids with a synced write of its own, so no
    // transaction's fate can make the store forget an id it handed out.
    uint64_t want = next_nid_ + 4096;
    std::string v;
    put_fixed64(&v, want);
    rocksdb::WriteOptions wo;
    wo.sync = true;
    if (rocksdb::Status s = db_->Put(wo, kv::nid_max_key(), v); !s.ok()) {
      committer_->fail(-EIO, "RocksDB write reserving omap ids failed: " + s.ToString());
      return 0;
    }
    nid_reserved_ = want;
  }
  return next_nid_++;
}

int StoreImpl::open_db(bool create, std::string* error) {
  rocksdb::Options base;
  base.create_if_missing = create;
  base.error_if_exists = create;
  base.paranoid_checks = true;
  base.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
  base.merge_operator = kv::make_merge_operator();
  base.max_background_jobs = 2;
  // Table files any RocksDB from 6.8 (Ceph's bundled one, inside ceph-osd)
  // to Debian's 7.x (the standalone tools) reads: newer releases default to
  // an XXH3 block checksum that 6.8 rejects as corruption, so a store the
  // standalone hybridstore-tool touched would no longer mount in the OSD.
  rocksdb::BlockBasedTableOptions table;
  table.checksum = rocksdb::kCRC32c;
  table.format_version = 4;
  // Every transaction looks its objects up before it changes them, and a
  // create looks for a key that is nowhere: without filters that Get
  // searches every memtable and table file (8% of the CPU of 4 KiB creates
  // with 16 writers; 2% with them). Full filters of format 4 are what Ceph's
  // RocksDB writes too.
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10, false));
  table.block_cache = rocksdb::NewLRUCache(cfg_.get_size("hybridstore_kv_block_cache_size"));
  base.memtable_prefix_bloom_size_ratio = 0.02;
  base.memtable_whole_key_filtering = true;
  base.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  base.memtable_insert_with_hint_prefix_extractor = kv::make_insert_hint_prefixes();
  // With the commit journal, transactions are durable through its ring and
  // RocksDB's WAL is only synced when ring space is reused: its records can
  // stay in RocksDB's buffer (written out in ~1 MiB pieces, or by any synced
  // write) instead of costing a write() per commit group. What a crash
  // loses of that buffer, the journal replays (kv/commit_journal.h).
  base.manual_wal_flush = cfg_.get_size("hybridstore_commit_journal_size") > 0;
  rocksdb::Options opts;
  // Inside ceph-osd the engine is built against Ceph's bundled RocksDB (6.8),
  // which parses option strings without a ConfigOptions (docs/ceph.md).
#if ROCKSDB_MAJOR > 6 || (ROCKSDB_MAJOR == 6 && ROCKSDB_MINOR >= 11)
  rocksdb::ConfigOptions co;
  co.ignore_unknown_options = false;
  rocksdb::Status s = rocksdb::GetOptionsFromString(co, base, cfg_.get_str("hybridstore_rocksdb_options"), &opts);
#else
  rocksdb::Status s = rocksdb::GetOptionsFromString(base, cfg_.get_str("hybridstore_rocksdb_options"), &opts);
#endif
  if (!s.ok()) {
    *error = "hybridstore_rocksdb_options: " + s.ToString();
    return -EINVAL;
  }
  if (auto hooks = storage_hooks())
    if (int r = hooks->setup_kv(path_, cfg_, &opts, error); r < 0) return r;
  rocksdb::DB* db = nullptr;
  s = rocksdb::DB::Open(opts, path_ + "/db", &db);
  if (!s.ok()) {
    *error = "cannot open RocksDB at " + path_ + "/db: " + s.ToString();
    return s.IsInvalidArgument() ? -ENOENT : -EIO;
  }
  db_ = std::make_unique<kv::GatedDb>(db);
  return 0;
}

// Fault injection and device models are test machinery that test tools
// install as hooks; a store without them must not run as if they were on.
int StoreImpl::check_storage_hooks(std::string* error) const {
  if (storage_hooks()) return 0;
  std::string opt = option_needing_storage_hooks(cfg_);
  if (opt.empty()) return 0;
  *error = opt + " is set, but fault injection and device models are test features: only the test tools "
           "(hybridstore-tool, hybridstore-bench, hybridstore-crashtest, unit tests) provide them";
  return -EINVAL;
}

int StoreImpl::mkfs(std::string* error) {
  if (int r = check_storage_hooks(error); r < 0) return r;
  std::error_code ec;
  fs::create_directories(path_, ec);
  if (ec) {
    *error = "cannot create store directory " + path_ + ": " + ec.message();
    return -EIO;
  }
  if (fs::exists(path_ + "/db/CURRENT")) {
    std::string err;
    if (open_db(false, &err) == 0) {
      std::string v;
      bool done = db_->Get(rocksdb::ReadOptions(), kv::mkfs_done_key(), &v).ok();
      db_.reset();
      if (done) {
        HS_INFO("store at {} already exists; mkfs leaves it as it is", path_);
        return 0;
      }
    }
    // An earlier mkfs died half way: start over.
    fs::remove_all(path_ + "/db", ec);
  }

  Superblock sb;
  sb.fsid = requested_fsid_ != Uuid{} ? requested_fsid_ : generate_uuid();
  sb.created_us = now_us();
  sb.csum_block = static_cast<uint32_t>(cfg_.get_size("hybridstore_csum_block"));
  for (const auto& o : option_registry())
    if (o.mkfs_only) sb.mkfs_options[o.name] = cfg_.get_text(o.name);

  // Fastest first: the SSD, the extra tiers, the HDD.
  sb.tiers = static_cast<int>(cfg_.get_int("hybridstore_tiers"));
  for (int t = 0; t < sb.tiers; ++t) sb.order[t] = t == 0 ? Tier::kSsd : tier_at(t + 1 < sb.tiers ? t + 1 : 1);
  uint64_t units[kMaxTiers];
  for (int t = 0; t < sb.tiers; ++t) {
    sb.layout[t] = tier_layout(tier_at(t), sb.mkfs_options);
    units[t] = tier_alloc_unit(tier_at(t), sb.layout[t], cfg_);
  }
  for (int t = 0; t < sb.tiers; ++t) {
    std::string link = path_ + "/" + tier_link(tier_at(t));
    std::string want = cfg_.get_str(tier_option(tier_at(t), "path"));
    std::string dev_path = want.empty() ? link : fs::absolute(want).string();
    DeviceOpenOptions o;
    o.create = cfg_.get_bool("hybridstore_block_create");
    o.create_size = cfg_.get_size(tier_option(tier_at(t), "size"));
    parse_file_layout(cfg_.get_str("hybridstore_block_preallocate"), &o.create_layout);
    o.direct_io = false;
    if (dev_path != link) {
      fs::remove(link, ec);
      fs::create_symlink(dev_path, link, ec);
      if (ec) {
        *error = "cannot link " + link + " to " + dev_path + ": " + ec.message();
        return -EIO;
      }
    }
    std::unique_ptr<BlockDevice> dev = open_tier_device(sb.layout[t], cfg_, dev_path, o, o.create, nullptr, error);
    if (!dev) return -ENOENT;
    uint64_t size = dev->size() / units[t] * units[t];
    uint64_t reserved = align_up(std::max<uint64_t>(65536, kLabelSize), units[t]);
    if (size < reserved + 64 * units[t]) {
      *error = fmt::format("{} device {} is too small ({} bytes)", tier_name(static_cast<Tier>(t)),
                           dev_path, dev->size());
      return -EINVAL;
    }
    DeviceLabel label;
    label.fsid = sb.fsid;
    label.role = static_cast<Tier>(t);
    label.size = size;
    label.created_us = sb.created_us;
    label.description = std::string("hybridstore ") + tier_name(static_cast<Tier>(t));
    if (int r = write_label(dev.get(), label); r < 0) {
      *error = fmt::format("cannot write label to {}: {}", dev_path, strerror(-r));
      return r;
    }
    sb.tier_size[t] = size;
    sb.alloc_unit[t] = units[t];
    sb.reserved[t] = reserved;
  }

  if (int r = open_db(true, error); r < 0) return r;
  rocksdb::WriteBatch b;
  b.Put(kv::superblock_key(), encode_superblock(sb));
  for (int t = 0; t < sb.tiers; ++t)
    if (int r = format_tier_space(tier_at(t), sb.layout[t], cfg_, sb, &b, error); r < 0) {
      db_.reset();
      return r;
    }
  std::string nid;
  put_fixed64(&nid, 1);
  b.Put(kv::nid_max_key(), nid);
  int64_t zero[kv::kStatCount] = {};
  b.Put(kv::stats_key(), kv::encode_stat_delta(zero));
  rocksdb::WriteOptions wo;
  wo.sync = true;
  if (!db_->Write(wo, &b).ok()) {
    *error = "cannot write superblock";
    db_.reset();
    return -EIO;
  }
  std::string fsid = uuid_to_string(sb.fsid);
  if (!write_text_file(path_ + "/fsid", fsid + "\n") || !write_text_file(path_ + "/type", "hybridstore\n")) {
    *error = "cannot write " + path_ + "/fsid or type";
    db_.reset();
    return -EIO;
  }
  // Last: the marker that makes a repeated mkfs harmless.
  if (!db_->Put(wo, kv::mkfs_done_key(), "yes").ok()) {
    *error = "cannot write mkfs marker";
    db_.reset();
    return -EIO;
  }
  db_.reset();
  HS_INFO("created store {} at {}", fsid, path_);
  return 0;
}

int StoreImpl::open_journal(uint64_t* next_seq, std::string* error) {
  const std::string path = path_ + "/journal";
  const uint64_t size = cfg_.get_size("hybridstore_commit_journal_size");
  std::error_code ec;
  // Without the option a journal left by an earlier mount is still replayed.
  if (size == 0 && !fs::exists(path, ec)) return 0;
  CommitJournal::Wrap wrap;
  if (auto hooks = storage_hooks())
    wrap = [&](std::unique_ptr<BlockDevice> d) { return hooks->wrap_journal(path_, cfg_, std::move(d)); };
  journal_ = CommitJournal::open(path, size > 0 ? size : (16ull << 20), super_.fsid, wrap, error);
  if (!journal_) return -EIO;
  int r = journal_->replay(db_.get(), next_seq, error);
  return r < 0 ? r : 0;
}

int StoreImpl::open_devices(bool create, std::string* error) {
  DeviceOpenOptions o;
  if (!parse_io_backend(cfg_.get_str("hybridstore_io_backend"), &o.backend)) o.backend = IoBackend::kAuto;
  o.direct_io = cfg_.get_bool("hybridstore_direct_io");
  o.uring_depth = static_cast<unsigned>(cfg_.get_int("hybridstore_uring_depth"));
  const NandCounters nand{&perf_->set, perf_->ftl_merges, perf_->ftl_erases, perf_->ftl_pages_copied,
                          perf_->ftl_host_pages_written};
  read_cache_.reset();
  if (const uint64_t bytes = cfg_.get_size("hybridstore_data_cache_size"); bytes > 0) {
    read_cache_ = std::make_shared<ReadCache>(bytes);
    PerfCounterSet* ps = &perf_->set;
    const int hit = perf_->data_cache_hit_bytes, miss = perf_->data_cache_miss_bytes, held = perf_->data_cache_bytes;
    read_cache_->set_observer({[ps, hit](uint64_t n) { ps->inc(hit, n); },
                               [ps, miss](uint64_t n) { ps->inc(miss, n); },
                               [ps, held](int64_t n) {
                                 if (n > 0) ps->inc(held, static_cast<uint64_t>(n));
                                 else ps->dec(held, static_cast<uint64_t>(-n));
                               }});
    perf_->set.set(held, 0);
  }
  for (int t = 0; t < tiers(); ++t) {
    Tier tier = tier_at(t);
    std::string p = path_ + "/" + tier_link(tier);
    // What the device is (raw NAND behind the embedded FTL, say): mkfs recorded it.
    std::unique_ptr<BlockDevice> dev = open_tier_device(super_.layout[t], cfg_, p, o, false, &nand, error);
    if (!dev) return -ENOENT;
    DeviceLabel label;
    std::string why;
    if (int r = read_label(dev.get(), &label, &why); r < 0) {
      *error = fmt::format("{} device {}: {}", tier_name(tier), p, why);
      return r;
    }
    if (label.fsid != super_.fsid) {
      *error = fmt::format("{} device {} belongs to store {}, not to this store ({})", tier_name(tier),
                           p, uuid_to_string(label.fsid), uuid_to_string(super_.fsid));
      return -EINVAL;
    }
    if (label.role != tier) {
      *error = fmt::format("device {} is labelled as the {} device of this store, not the {} device",
                           p, tier_name(label.role), tier_name(tier));
      return -EINVAL;
    }
    if (dev->size() < label.size || label.size < super_.tier_size[t]) {
      *error = fmt::format("{} device {} is {} bytes but its label says {} (store expects {}): "
                           "truncated or wrong device",
                           tier_name(tier), p, dev->size(), label.size, super_.tier_size[t]);
      return -EINVAL;
    }
    // Test tools put fault injection and device models in between here.
    if (auto hooks = storage_hooks()) dev = hooks->wrap_device(path_, tier, cfg_, std::move(dev));
    // Writes that go on while the transaction is queued (store_data_ops.cc,
    // write_pending): above the test wrappers, which then see them as the
    // writes they are.
    if (const int n = static_cast<int>(cfg_.get_int("hybridstore_async_write_threads"));
        n > 0 && cfg_.get_size("hybridstore_async_write_min") > 0)
      dev = std::make_unique<AsyncWriteDevice>(std::move(dev), n);
    // Above any test wrapper: what the cache serves is what the media
    // (faulty or modelled) returned, and every write reaches both.
    if (read_cache_) dev = std::make_unique<CachingBlockDevice>(std::move(dev), read_cache_, t);
    space_[t] = make_tier_space(tier, std::move(dev), super_);
    space_[t]->configure(cfg_);
    if (int r = space_[t]->check_device(error); r < 0) return r;
  }
  (void)create;
  return 0;
}

int StoreImpl::mount(std::string* error) {
  if (mounted_) {
    *error = "already mounted";
    return -EBUSY;
  }
  if (int r = check_storage_hooks(error); r < 0) return r;
  if (!fs::exists(path_ + "/db/CURRENT")) {
    *error = "no store at " + path_ + " (run mkfs first)";
    return -ENOENT;
  }
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
    close_all();
    return -EBUSY;
  }
  auto fail = [&](int r) {
    close_all();
    return r;
  };
  if (int r = open_db(false, error); r < 0) return fail(r);
  std::string v;
  if (!db_->Get(rocksdb::ReadOptions(), kv::mkfs_done_key(), &v).ok()) {
    *error = "store at " + path_ + " was never completely created (mkfs did not finish)";
    return fail(-EINVAL);
  }
  if (!db_->Get(rocksdb::ReadOptions(), kv::superblock_key(), &v).ok()) {
    *error = "store at " + path_ + " has no superblock";
    return fail(-EINVAL);
  }
  if (int r = decode_superblock(v, &super_, error); r < 0) return fail(r);
  // Options fixed at mkfs take the values the store was made with.
  for (const auto& [k, val] : super_.mkfs_options) {
    std::string e;
    if (find_option(k) && cfg_.set(k, val, &e) < 0) HS_WARN("store option {}: {}", k, e);
  }
  // Transactions the commit journal made durable but RocksDB lost go back
  // into RocksDB before anything reads it.
  uint64_t next_journal_seq = 1;
  if (int r = open_journal(&next_journal_seq, error); r < 0) return fail(r);
  if (int r = open_devices(false, error); r < 0) return fail(r);
  // Deferred writes acknowledged before a crash reach their devices before
  // anything reads them.
  if (int r = DeferredWriter::replay(db_.get(), devices(), error,
                                     repair_mode_ ? &repair_log_ : nullptr);
      r < 0)
    return fail(r);

  max_unit_ = 0;
  min_unit_ = UINT64_MAX;
  for (int t = 0; t < tiers(); ++t) {
    max_unit_ = std::max(max_unit_, space_[t]->unit());
    min_unit_ = std::min(min_unit_, space_[t]->unit());
    if (int r = space_[t]->load(db_.get(), cfg_, error); r < 0) return fail(r);
  }

  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  std::string cprefix(1, kv::kCollection);
  for (it->Seek(cprefix); it->Valid() && it->key().starts_with(cprefix); it->Next()) {
    CollectionId c;
    uint32_t bits;
    if (!kv::decode_collection_key(it->key().ToStringView(), &c) ||
        !kv::decode_collection(it->value().ToStringView(), &bits)) {
      if (!repair_mode_) {
        *error = "corrupt collection record " + it->key().ToString(true) + " (hybridstore-tool repair can drop it)";
        it.reset();  // before the database closes: RocksDB aborts on a live iterator
        return fail(-EIO);
      }
      db_->Delete(rocksdb::WriteOptions(), it->key());
      repair_log_.push_back("deleted corrupt collection record " + it->key().ToString(true));
      continue;
    }
    auto st = coll_state(c);
    st->exists = true;
    st->bits = bits;
  }
  it.reset();
  if (db_->Get(rocksdb::ReadOptions(), kv::nid_max_key(), &v).ok() && v.size() == 8) {
    next_nid_ = load_fixed64(v.data());
    nid_reserved_ = next_nid_;
  } else {
    *error = "store has no nid_max record";
    return fail(-EIO);
  }

  placement_ = std::make_unique<TierPlacement>(cfg_, super_.order, super_.tiers);
  cache_ = std::make_unique<OnodeCache>(static_cast<size_t>(cfg_.get_int("hybridstore_onode_cache_size")));
  max_object_size_ = cfg_.get_size("hybridstore_max_object_size");
  committer_ = std::make_unique<KvCommitter>(db_.get(), devices(),
                                             &write_tracker_, 4096);
  committer_->set_perf(perf_->committer());
  if (journal_ && cfg_.get_size("hybridstore_commit_journal_size") > 0)
    committer_->set_journal(journal_.get(), next_journal_seq,
                            static_cast<int>(cfg_.get_int("hybridstore_commit_lanes")));
  committer_->start();
  DeferredOptions dopts;
  dopts.batch_bytes = cfg_.get_size("hybridstore_deferred_batch_bytes");
  dopts.max_delay_ms = static_cast<uint64_t>(cfg_.get_int("hybridstore_deferred_max_delay_ms"));
  dopts.max_pending_bytes = cfg_.get_size("hybridstore_deferred_max_pending");
  async_write_min_ =
      cfg_.get_int("hybridstore_async_write_threads") > 0 ? cfg_.get_size("hybridstore_async_write_min") : 0;
  extent_map_inline_max_ = cfg_.get_size("hybridstore_extent_map_inline_max");
  promote_hits_ = static_cast<uint64_t>(cfg_.get_int("hybridstore_tier_promote_hits"));
  absorb_max_ = cfg_.get_size("hybridstore_tier_absorb_max");
  absorb_min_free_ = cfg_.get_double("hybridstore_tier_absorb_min_free");
  decide_absorption();
  promote_max_size_ = cfg_.get_size("hybridstore_tier_promote_max_size");
  promote_break_even_ = cfg_.get_size("hybridstore_tier_promote_break_even");
  deferred_ = std::make_unique<DeferredWriter>(
      db_.get(), devices(), &write_tracker_,
      [this](const PExtent& e) { return_space(e); }, dopts);
  // One failure state for the store: after any failed write to RocksDB or a
  // device, nothing more is written (RocksDB refuses, or asserts, after a
  // failed WAL write) and the store is read-only.
  deferred_->set_store_failure([this] { return committer_->error(); },
                               [this](int err, const std::string& why) { committer_->fail(err, why); });
  deferred_->set_perf(perf_->deferred());
  deferred_->start();
  SpaceCounters counters;
  counters.set = &perf_->set;
  counters.direct_unit_bytes = perf_->ssd_direct_unit_bytes;
  counters.sections = [this](const std::vector<std::string>& names) { return perf_->sections(names); };
  for (int t = 0; t < tiers(); ++t) space_[t]->set_counters(counters);
  if (int r = init_perf_gauges(error); r < 0) return fail(r);
  heat_ = std::make_unique<HeatTracker>(heat_tracker_options_from_config(cfg_));
  load_heat();
  mounted_ = true;
  HS_INFO("mounted store {} at {}", uuid_to_string(super_.fsid), path_);
  if (cfg_.get_bool("hybridstore_fsck_on_mount")) {
    FsckReport rep;
    int r = fsck(false, &rep);
    if (r != 0) {
      *error = fmt::format("fsck on mount found {} errors (first: {})", rep.errors,
                           rep.problems.empty() ? "?" : rep.problems[0]);
      umount();
      return -EIO;
    }
  }
  if (super_.format_version < kFormatVersion) {
    // Upgrade, once the store has mounted (and passed fsck on mount, when
    // asked): the superblock of the current format, with what the old one
    // implied (format 1: SSD then HDD, layouts from the mkfs options) made
    // explicit. A mount that fails leaves the old format, which the previous
    // build still opens. One durable commit; a build of the old format
    // refuses the new superblock instead of misreading it.
    Superblock up = super_;
    up.format_version = kFormatVersion;
    CommitWork work;
    work.batch = std::make_unique<rocksdb::WriteBatch>();
    work.batch->Put(kv::superblock_key(), encode_superblock(up));
    const uint64_t seq = committer_->submit(std::move(work));
    if (seq == 0 || committer_->wait_committed(seq) < 0) {
      *error = "cannot write the upgraded superblock: " + committer_->error_message();
      umount();
      return -EIO;
    }
    HS_INFO("store {} upgraded from format {} to format {}", uuid_to_string(super_.fsid), super_.format_version,
            kFormatVersion);
    super_ = up;
  }
  return 0;
}

int StoreImpl::flush() {
  if (!mounted_) return -ENOTCONN;
  int r = committer_->wait_committed(committer_->last_seq());
  committer_->drain_callbacks();
  // After a failed commit the store is read-only: records of the failed
  // transactions will never commit, so there is nothing to wait for.
  if (int e = committer_->error(); e < 0) return r < 0 ? r : e;
  // Staged SSD data stays staged (durable, readable): forcing its write units
  // out here would write them partly filled at every sync.
  if (int d = deferred_->drain(); d < 0 && r == 0) r = d;
  return r;
}

int StoreImpl::settle() {
  int r = flush();
  if (r == 0 && std::any_of(std::begin(space_), std::end(space_), [](auto& sp) { return sp && sp->keeps_state(); })) {
    flush_staged_state();
    r = deferred_->drain(true);
  }
  return r;
}

int StoreImpl::umount() {
  if (!mounted_) return 0;
  int r = settle();
  if (r == 0 && cfg_.get_bool("hybridstore_fsck_on_umount")) {
    FsckReport rep;
    if (fsck(false, &rep) != 0) HS_ERROR("fsck on umount found {} errors", rep.errors);
  }
  // After an I/O error the store is read-only and writes nothing more: a
  // RocksDB whose WAL write failed aborts on FlushWAL (assertion builds).
  if (committer_->error() == 0) save_heat();  // which may fail the store itself
  const bool failed = committer_->error() != 0;
  // The deferred writer asks the committer whether the store failed: it
  // stops first.
  deferred_->stop(!failed);
  committer_->stop();
  committer_.reset();
  deferred_.reset();
  for (auto& sp : space_)
    if (sp && !failed) sp->device()->flush();
  if (db_) {
    if (!failed) db_->FlushWAL(true);
    db_->Close();
  }
  mounted_ = false;
  close_all();
  return r;
}

namespace {
std::string heat_state_key() { return std::string(1, kv::kHeat) + 's'; }
std::string heat_entry_prefix() { return std::string(1, kv::kHeat) + 'o'; }
uint64_t wall_us() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}
}  // namespace

void StoreImpl::note_access(const CollectionId& c, const ObjectId& o, AccessType type, uint64_t off, uint64_t len,
                            uint64_t size, bool counts) {
  note_access(kv::onode_key(c, o), type, off, len, size, counts);
}

void StoreImpl::note_access(const std::string& onode_key, AccessType type, uint64_t off, uint64_t len,
                            uint64_t size, bool counts) {
  heat_->record(onode_key, type, off, len, wall_us(), size, counts);
}

bool absorb_pays(Media fastest, Media below) {
  if (fastest == Media::kUnknown) fastest = Media::kSolidState;  // the roles
  if (below == Media::kUnknown) below = Media::kRotational;
  return fastest == Media::kSolidState && below == Media::kRotational;
}

void StoreImpl::decide_absorption() {
  const bool always = cfg_.get_str("hybridstore_tier_absorb") == "always";
  const Media top = dev(tier_index(fastest()))->media();
  std::string said;
  for (int t = 0; t < tiers(); ++t) {
    const Tier tier = tier_at(t);
    if (tier == fastest()) continue;
    const Media m = dev(t)->media();
    absorb_from_[t] = absorb_max_ > 0 && (always || absorb_pays(top, m));
    said += fmt::format("{}{} ({}): {}", said.empty() ? "" : "; ", tier_name(tier), media_name(m),
                        absorb_from_[t] ? "absorbed" : "written in place");
  }
  HS_INFO("small writes into objects below the {} ({}, hybridstore_tier_absorb={}): {}", tier_name(fastest()),
          media_name(top), always ? "always" : "auto", said);
}

bool StoreImpl::fastest_can_absorb(uint64_t len) const {
  const TierSpace::Usage u = space(fastest()).usage();
  return u.free > len && static_cast<double>(u.free - len) >= absorb_min_free_ * static_cast<double>(u.total);
}

std::array<BlockDevice*, kMaxTiers> StoreImpl::devices() const {
  std::array<BlockDevice*, kMaxTiers> d{};
  for (int t = 0; t < tiers(); ++t) d[t] = dev(t);
  return d;
}

int StoreImpl::rank(Tier t) const {
  for (int r = 0; r < tiers(); ++r)
    if (super_.order[r] == t) return r;
  return tiers();  // not a tier of this store
}

Tier StoreImpl::next_tier(Tier t, int step) const {
  const int r = rank(t) + step;
  return r >= 0 && r < tiers() ? super_.order[r] : t;
}

int StoreImpl::spill_order(Tier preferred, Tier* out) const {
  int n = 0;
  const int p = rank(preferred);
  for (int r = p; r < tiers(); ++r) out[n++] = super_.order[r];
  for (int r = p - 1; r >= 0; --r) out[n++] = super_.order[r];
  return n;
}

bool StoreImpl::write_continues(const CollectionId& c, const ObjectId& o, uint64_t off) const {
  HeatSample h;
  if (!heat_->lookup(kv::onode_key(c, o), &h)) return false;
  const uint64_t now = wall_us();
  return h.last_type == AccessType::kWrite && h.last_end == off && now >= h.last_time_us &&
         now - h.last_time_us < heat_->options().continuation_us;
}

void StoreImpl::return_space(const PExtent& e) {
  perf_->set.dec(perf_->bytes_used[tier_index(e.tier)], e.length);
  space(e.tier).release(e.offset, e.length);
}

void StoreImpl::tick_staged_state() {
  if (!mounted_ || committer_->error()) return;
  submit_staged_state(TierSpace::Drain::kTick);
}

void StoreImpl::flush_staged_state() {
  if (committer_->error()) return;
  if (uint64_t seq = submit_staged_state(TierSpace::Drain::kFlush)) committer_->wait_committed(seq);
}

uint64_t StoreImpl::submit_staged_state(TierSpace::Drain how) {
  // Through the committer, drained and submitted under the tiers' locks like
  // a transaction's state: RocksDB then takes every state in the order it
  // was drained (see SsdSections::tick_locked).
  std::vector<TierSpace::Region> regions[kMaxTiers];
  CommitWork work;
  work.batch = std::make_unique<rocksdb::WriteBatch>();
  uint64_t seq = 0;
  {
    std::unique_lock<std::mutex> locks[kMaxTiers];
    for (int t = 0; t < tiers(); ++t)
      if (space_[t]->keeps_state()) locks[t] = space_[t]->drain_state(how, work.batch.get(), &regions[t]);
    if (work.batch->Count() > 0 && (seq = committer_->submit(std::move(work))) == 0)
      return 0;  // read-only: without their state the regions must not be written either
    // Queued under the locks, as a transaction's (see store_txn.cc).
    for (int t = 0; t < tiers(); ++t)
      for (const auto& r : regions[t]) deferred_->write_region(static_cast<Tier>(t), r.begin, r.end);
    for (int t = tiers() - 1; t >= 0; --t)
      if (locks[t].owns_lock()) locks[t].unlock();
  }
  return seq;
}

void StoreImpl::load_heat() {
  // Heat is advice: a damaged record costs its history, never the mount.
  std::string v, err;
  if (db_->Get(rocksdb::ReadOptions(), heat_state_key(), &v).ok() && heat_->import_state(v, &err) < 0)
    HS_WARN("heat history state unreadable ({}); starting fresh", err);
  std::string prefix = heat_entry_prefix();
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  size_t bad = 0;
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    std::string_view key = it->key().ToStringView().substr(prefix.size());
    if (heat_->import_entry(key, it->value().ToStringView(), &err) < 0) ++bad;
  }
  if (bad) HS_WARN("{} heat records were unreadable and are ignored", bad);
}

int StoreImpl::save_heat() {
  if (!heat_ || !db_) return 0;
  if (committer_ && committer_->error()) return -EROFS;
  HeatDelta d = heat_->export_dirty();
  rocksdb::WriteBatch b;
  std::string prefix = heat_entry_prefix();
  if (d.full) b.DeleteRange(prefix, kv::prefix_end(prefix));
  for (const auto& k : d.erase) b.Delete(prefix + k);
  for (const auto& [k, v] : d.put) b.Put(prefix + k, v);
  b.Put(heat_state_key(), d.state);
  rocksdb::Status st = db_->Write(rocksdb::WriteOptions(), &b);
  if (!st.ok()) {
    if (committer_) committer_->fail(-EIO, "saving heat records failed: " + st.ToString());
    return -EIO;
  }
  return 0;
}

int StoreImpl::statfs(StoreStats* st) {
  if (!mounted_) return -ENOTCONN;
  // Statistics are kept with merges in the same batches as the changes they
  // count, and freed space returns to the allocators at commit: waiting for
  // what is queued makes every figure exact.
  flush();
  st->format_version = super_.format_version;
  st->tiers = tiers();
  std::copy(std::begin(super_.order), std::end(super_.order), std::begin(st->order));
  for (int t = 0; t < tiers(); ++t) {
    TierStats& ts = st->tier[t];
    // A staged tier counts space it holds but cannot give any object yet
    // (rounding gaps, holes awaiting cleaning) as consumed.
    const TierSpace::Usage u = space_[t]->usage();
    ts.total = u.total;
    ts.consumed = u.consumed;
    ts.allocated = u.allocated;
    ts.free = u.free;
    ts.fragmentation = u.fragmentation;
    ts.unit = space_[t]->unit();
    ts.device = dev(t)->path();
    ts.backend = dev(t)->backend();
  }
  std::string v;
  int64_t stats[kv::kStatCount];
  if (db_->Get(rocksdb::ReadOptions(), kv::stats_key(), &v).ok() && kv::decode_stats(v, stats)) {
    st->objects = static_cast<uint64_t>(std::max<int64_t>(0, stats[kv::kStatObjects]));
    st->data_bytes = static_cast<uint64_t>(std::max<int64_t>(0, stats[kv::kStatBytes]));
  }
  auto ds = deferred_->stats();
  st->deferred_staged = ds.records_staged;
  st->deferred_applied = ds.records_applied;
  st->deferred_device_writes = ds.device_writes;
  st->deferred_pending_bytes = deferred_->pending_bytes();
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
  return 0;
}

}  // namespace hybridstore
