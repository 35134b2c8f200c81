// mkfs, and the RocksDB options mkfs and mount share.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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
#include "hybridstore/kv/kv_schema.h"
#include "hybridstore/kvfs/kvfs_rocksdb.h"
#include "hybridstore/kvfs/kv_device.h"
#include "hybridstore/store/storage_hooks.h"
#include "hybridstore/store/store_kvfs.h"
#include "hybridstore/store/store_mount.h"
#include "hybridstore/space/tier_device.h"
#include "hybridstore/store/tier_set.h"

namespace fs = std::filesystem;

namespace hybridstore {

namespace {

uint64_t now_us() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

uint64_t kv_block_cache_bytes(const Config& cfg, bool on_device) {
  uint64_t bytes = cfg.get_size("hybridstore_kv_block_cache_size");
  if (on_device && cfg.is_default("hybridstore_kv_block_cache_size")) bytes = std::max<uint64_t>(bytes, 1ull << 30);
  return bytes;
}

int open_store_db(const std::string& path, const Config& cfg, bool create, std::unique_ptr<rocksdb::DB>* out,
                  std::string* error, rocksdb::Env* kv_env, bool* compactions_held,
                  std::shared_ptr<rocksdb::Cache>* block_cache_out) {
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
  // With RocksDB in a directory the kernel's page cache also holds its
  // tables, beyond this cache; on the device nothing does. At its default
  // the cache then takes that share: 128 MiB left a 4 KiB create with the
  // PG log's omap a quarter slower than in a directory (fio ObjectStore
  // engine, Tentacle, docs/benchmarks.md), 1 GiB made it faster.
  uint64_t block_cache = kv_block_cache_bytes(cfg, kv_env != nullptr);
  if (const uint64_t target = cfg.get_size("hybridstore_memory_target"))
    // The mount's heat load reads every H block through this cache, before
    // the tuner exists: with a target it starts at a fraction of it.
    block_cache = std::min(block_cache, std::max<uint64_t>(16ull << 20, target / 4));
  table.block_cache = rocksdb::NewLRUCache(block_cache);
  // Under a memory target, index and filter blocks live in that cache, not
  // beside it in each open table reader: at 10M small objects the readers
  // held 148 MB that no target could shrink. L0's stay pinned, as every
  // write's lookup reads them; the others are cached with high priority, as
  // BlueStore's RocksDB has them (Ceph's rocksdb_cache_index_and_filter_blocks).
  // Without a target they stay in the readers: each lookup through the
  // cache cost random 4 KiB reads 10% of their rate (docs/memory.md, step 8).
  if (cfg.get_size("hybridstore_memory_target") > 0) {
    table.cache_index_and_filter_blocks = true;
    table.cache_index_and_filter_blocks_with_high_priority = true;
    table.pin_l0_filter_and_index_blocks_in_cache = true;
  }
  if (block_cache_out) *block_cache_out = table.block_cache;
  base.memtable_prefix_bloom_size_ratio = 0.02;
  base.memtable_whole_key_filtering = true;
  base.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  base.memtable_insert_with_hint_prefix_extractor = kv::make_insert_hint_prefixes();
  // With the commit journal, transactions are durable through its ring and
  // RocksDB's WAL is only synced when ring space is reused: its records can
  // stay in RocksDB's buffer (written out in ~1 MiB pieces, or by any synced
  // write) instead of costing a write() per commit group. What a crash
  // loses of that buffer, the journal replays (kv/commit_journal.h).
  base.manual_wal_flush = cfg.get_size("hybridstore_commit_journal_size") > 0;
  rocksdb::Options opts;
  // Inside ceph-osd the engine is built against Ceph's bundled RocksDB (6.8),
  // which parses option strings without a ConfigOptions (docs/ceph.md).
#if ROCKSDB_MAJOR > 6 || (ROCKSDB_MAJOR == 6 && ROCKSDB_MINOR >= 11)
  rocksdb::ConfigOptions co;
  co.ignore_unknown_options = false;
  rocksdb::Status s = rocksdb::GetOptionsFromString(co, base, cfg.get_str("hybridstore_rocksdb_options"), &opts);
#else
  rocksdb::Status s = rocksdb::GetOptionsFromString(base, cfg.get_str("hybridstore_rocksdb_options"), &opts);
#endif
  if (!s.ok()) {
    *error = "hybridstore_rocksdb_options: " + s.ToString();
    return -EINVAL;
  }
  std::string where = path + "/db";
  if (kv_env) {
#if HS_HAVE_KVFS_ROCKSDB
    // The hooks' fault injection and device models already sit below the
    // kvfs, on the tier's device.
    apply_kvfs_rocksdb_options(kv_env, make_kvfs_rocksdb_logger(), &opts);
    where = KvDevice::kDbDir;
#else
    *error = "this build's RocksDB cannot run on the device (kvfs_rocksdb.h)";
    return -EOPNOTSUPP;
#endif
  } else if (auto hooks = storage_hooks()) {
    if (int r = hooks->setup_kv(path, cfg, &opts, error); r < 0) return r;
  }
  if (compactions_held) {
    *compactions_held = !opts.disable_auto_compactions;
    opts.disable_auto_compactions = true;
  }
  rocksdb::DB* db = nullptr;
  s = rocksdb::DB::Open(opts, where, &db);
  if (!s.ok()) {
    *error = kv_env ? "cannot open RocksDB in the KV file system of " + path + ": " + s.ToString()
                    : "cannot open RocksDB at " + where + ": " + s.ToString();
    return s.IsInvalidArgument() ? -ENOENT : -EIO;
  }
  *out = std::make_unique<kv::GatedDb>(db);
  return 0;
}

int small_writes_in_ring(const Config& cfg, bool* in_ring, std::string* error) {
  const std::string mode = cfg.get_str("hybridstore_small_write_journal");
  const bool wanted = mode == "data" || mode == "on";
  const bool journal = cfg.get_size("hybridstore_commit_journal_size") > 0;
  if (wanted && !journal && !cfg.is_default("hybridstore_small_write_journal")) {
    *error = fmt::format("hybridstore_small_write_journal={} puts small writes' data in the commit journal, which "
                         "hybridstore_commit_journal_size=0 turns off",
                         mode);
    return -EINVAL;
  }
  *in_ring = wanted && journal;
  return 0;
}

uint32_t target_format(const Config& cfg, bool in_ring) {
  if (!in_ring) return kFormatWalkedJournal;
  return cfg.get_str("hybridstore_small_write_journal") == "on" ? kFormatOnodeVersions : kFormatSmallWriteJournal;
}

int check_storage_hooks(const Config& cfg, std::string* error) {
  if (storage_hooks()) return 0;
  std::string opt = option_needing_storage_hooks(cfg);
  if (opt.empty()) return 0;
  *error = opt + " is set, but fault injection and device models are test features: only the test tools "
           "(hybridstore-tool, hybridstore-bench, hybridstore-crashtest, unit tests) provide them";
  return -EINVAL;
}

namespace {

// Links, labels and sizes the device of tier `t` as *sb says it is made,
// recording its size, unit and reserved head in *sb.
int make_tier_device(const std::string& path, const Config& cfg, Tier tier, uint64_t unit, const Uuid& kvfs_uuid,
                     Superblock* sb, std::unique_ptr<BlockDevice>* out, std::string* error) {
  TierDescriptor& desc = sb->tier[tier];
  std::error_code ec;
  std::string link = path + "/" + tier_device_link(tier);
  std::string want = cfg.get_str(tier_option(tier, "path"));
  std::string dev_path = want.empty() ? link : fs::absolute(want).string();
  DeviceOpenOptions o;
  o.create = cfg.get_bool("hybridstore_block_create");
  o.exclusive = true;  // never write labels over the devices of a mounted store
  o.create_size = cfg.get_size(tier_option(tier, "size"));
  const std::string layout = cfg.get_str("hybridstore_block_preallocate");
  if (layout == "auto") {
    // The kvfs's journal ring is written with RWF_DSYNC into the same file
    // as the tier's data. On ext4 a direct write into a hole takes the file's
    // inode lock exclusively and leaves metadata that the next DSYNC write
    // must commit, so on a sparse file every ring sync waits behind data
    // writes filling holes elsewhere in it (fio: 4 KiB DSYNC writes at 222/s
    // beside 1 MiB writes into holes of the same file, 790/s beside them in
    // another file, 737/s in the same file written out). Written zeros make
    // every later write an overwrite.
    o.create_layout = kvfs_uuid != Uuid{} ? FileLayout::kZeros : FileLayout::kSparse;
  } else {
    parse_file_layout(layout, &o.create_layout);
  }
  o.direct_io = false;
  if (dev_path != link) {
    fs::remove(link, ec);
    fs::create_symlink(dev_path, link, ec);
    if (ec) {
      *error = "cannot link " + link + " to " + dev_path + ": " + ec.message();
      return -EIO;
    }
  }
  std::unique_ptr<BlockDevice> dev = open_tier_device(desc.layout, cfg, dev_path, o, o.create, nullptr, error);
  if (!dev) return errno == EBUSY ? -EBUSY : -ENOENT;
  // A device that carries a finished store is another store's (or this
  // one's, whose directory was lost): never written over unasked.
  if (DeviceLabel old; !cfg.get_bool("hybridstore_mkfs_overwrite")) {
    LabelPairStatus st;
    std::string why;
    if (read_labels(dev.get(), &old, &st, &why) == 0 &&
        (old.record_version < 2 || (old.flags & kLabelMkfsDone))) {
      *error = fmt::format("{} device {} carries store {}; refusing to overwrite it (hybridstore-tool zap --dev {}, "
                           "or hybridstore_mkfs_overwrite=true)",
                           tier_name(tier), dev_path, uuid_to_string(old.fsid), dev_path);
      return -EEXIST;
    }
  }
  uint64_t size = dev->size() / unit * unit;
  uint64_t reserved = label_head(label_slot(dev.get()), unit);
  if (size < reserved + 64 * unit) {
    *error = fmt::format("{} device {} is too small ({} bytes)", tier_name(tier), dev_path, dev->size());
    return -EINVAL;
  }
  DeviceLabel label;
  label.fsid = sb->fsid;
  label.role = tier;
  label.size = size;
  label.created_us = sb->created_us;
  label.description = std::string("hybridstore ") + tier_name(tier);
  label.device_kind = desc.layout.device;
  label.head = reserved;
  if (kvfs_uuid != Uuid{}) {
    label.flags |= kLabelKvOnDevice;
    label.kvfs_uuid = kvfs_uuid;
    // Mount opens this device before RocksDB, and so the superblock, is up.
    record_device_options(cfg, desc.layout.device, &label);
  }
  // mkfs_done clear: until mkfs commits, the devices say a store is being made.
  std::string why;
  if (int r = write_label_pair(dev.get(), &label, &why); r < 0) {
    *error = fmt::format("cannot write label to {}: {}", dev_path, why);
    return r;
  }
  desc.size = size;
  desc.alloc_unit = unit;
  desc.reserved = reserved;
  *out = std::move(dev);
  return 0;
}

// The commit point of mkfs: every tier's label pair with mkfs_done set, the
// SSD's with the tier table, once the records are durable in RocksDB.
int commit_labels(const std::string& path, const Superblock& sb, const PerTier<BlockDevice*>& devs,
                  std::string* error) {
  for (Tier t : tier_ids(sb.tiers())) {
    BlockDevice* dev = devs[t];
    DeviceLabel cur;
    std::string why;
    if (int r = read_label(dev, &cur, &why); r < 0) {
      *error = fmt::format("{} device: {}", tier_name(t), why);
      return r;
    }
    DeviceLabel l = store_tier_label(path, sb, t, cur);
    if (int r = write_label_pair(dev, &l, &why); r < 0) {
      *error = why;
      return r;
    }
  }
  return 0;
}

// The new store's records: superblock, the tiers' spaces, the omap id and
// statistics records, then the fsid and type files, and last the marker
// that makes a repeated mkfs harmless.
int write_new_store(const std::string& path, const Config& cfg, const Superblock& sb, rocksdb::DB* db,
                    std::string* error) {
  rocksdb::WriteBatch b;
  b.Put(kv::superblock_key(), encode_superblock(sb));
  for (Tier t : tier_ids(sb.tiers()))
    if (int r = format_tier_space(t, cfg, sb, &b, error); r < 0) return r;
  std::string nid;
  put_fixed64(&nid, 1);
  b.Put(kv::nid_max_key(), nid);
  if (sb.format_version >= kFormatOnodeVersions) b.Put(kv::incarnation_max_key(), nid);
  int64_t zero[kv::kStatCount] = {};
  b.Put(kv::stats_key(), kv::encode_stat_delta(zero));
  rocksdb::WriteOptions wo;
  wo.sync = true;
  if (!db->Write(wo, &b).ok()) {
    *error = "cannot write superblock";
    return -EIO;
  }
  std::string fsid = uuid_to_string(sb.fsid);
  if (!write_file_durably(path + "/fsid", fsid + "\n") || !write_file_durably(path + "/type", "hybridstore\n")) {
    *error = "cannot write " + path + "/fsid or type";
    return -EIO;
  }
  if (!db->Put(wo, kv::mkfs_done_key(), "yes").ok()) {
    *error = "cannot write mkfs marker";
    return -EIO;
  }
  return 0;
}

// The SSD's label of an earlier mkfs of a store whose RocksDB is on the
// device: 1 with *fsid when it committed (mkfs_done), 0 when there is none,
// -EBUSY when a mount holds the device. A directory store is found by its
// <dir>/db instead.
int committed_device_store(const std::string& path, const Config& cfg, Uuid* fsid, std::string* error) {
  std::string want = cfg.get_str(tier_option(Tier::kSsd, "path"));
  const std::string dev_path = want.empty() ? path + "/" + tier_device_link(Tier::kSsd) : want;
  std::error_code ec;
  if (!fs::exists(dev_path, ec)) return 0;
  DeviceOpenOptions o;
  o.direct_io = false;
  o.exclusive = true;
  std::string why;
  std::unique_ptr<BlockDevice> dev = open_detected_device(cfg, dev_path, o, nullptr, &why);
  if (!dev && errno == EBUSY) {
    *error = why;
    return -EBUSY;
  }
  DeviceLabel l;
  LabelPairStatus st;
  if (!dev || read_labels(dev.get(), &l, &st, &why) < 0) return 0;
  if (!(l.flags & kLabelKvOnDevice) || !(l.flags & kLabelMkfsDone) || l.role != Tier::kSsd) return 0;
  *fsid = l.fsid;
  return 1;
}

// RocksDB and the ring in a new kvfs on the SSD, in chunks its space lends
// (docs/kvfs.md 5.1, steps 3-5), then the store's records into it.
int write_new_device_store(const std::string& path, const Config& cfg, const Superblock& sb, const Uuid& kvfs_uuid,
                           std::shared_ptr<BlockDevice> ssd, std::string* error) {
  if (auto hooks = storage_hooks())
    if (int r = hooks->begin_mount(path, cfg, error); r < 0) return r;
  KvSizing sizing;
  uint64_t lend_unit = 0;
  std::vector<Interval> chunks;
  if (int r = lend_initial_chunks(cfg, sb, ssd, &sizing, &lend_unit, &chunks, error); r < 0) return r;
  KvFsParams params = kvfs_params(cfg, *ssd, sb.tier[Tier::kSsd].reserved);
  params.initial_size = sizing.initial;
  params.log_segment = sizing.log_segment;
  params.grow_step = sizing.grow_step;
  PresetLender lender(lend_unit, chunks);
  const uint64_t ring = cfg.get_size("hybridstore_commit_journal_size");
  if (int r = KvDevice::format(ssd, params, kvfs_uuid, sb.fsid, &lender, ring, error, erase_block_bytes(ssd.get()));
      r < 0)
    return r;
  std::unique_ptr<KvDevice> kv;
  if (int r = KvDevice::mount(ssd, params, kvfs_uuid, sb.fsid, nullptr, &kv, error); r < 0) return r;
  {
    std::unique_ptr<rocksdb::DB> db;
    if (int r = open_store_db(path, cfg, true, &db, error, kv->env()); r < 0) return r;
    if (int r = write_new_store(path, cfg, sb, db.get(), error); r < 0) return r;
    if (rocksdb::Status s = db->Close(); !s.ok()) {
      *error = "closing the new RocksDB: " + s.ToString();
      return -EIO;
    }
  }
  if (int r = kv->unmount(error); r < 0) return r;
  HS_INFO("mkfs: RocksDB and the commit journal in {} bytes of the ssd tier (grows by {}, floor {})", sizing.initial,
          sizing.grow_step, sizing.reserve);
  return 0;
}

}  // namespace

int make_store(const std::string& path, const Config& cfg, const Uuid& fsid, std::string* error) {
  if (int r = check_storage_hooks(cfg, error); r < 0) return r;
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) {
    *error = "cannot create store directory " + path + ": " + ec.message();
    return -EIO;
  }
  if (fs::exists(path + "/db/CURRENT")) {
    std::string err;
    std::unique_ptr<rocksdb::DB> db;
    if (open_store_db(path, cfg, false, &db, &err) == 0) {
      std::string v;
      bool done = db->Get(rocksdb::ReadOptions(), kv::mkfs_done_key(), &v).ok();
      db.reset();
      if (done) {
        HS_INFO("store at {} already exists; mkfs leaves it as it is", path);
        return 0;
      }
    }
    // An earlier mkfs died half way: start over.
    fs::remove_all(path + "/db", ec);
  }
  Uuid have;
  if (int r = committed_device_store(path, cfg, &have, error); r < 0) {
    return r;
  } else if (r == 1) {
    if (fsid != Uuid{} && fsid != have) {
      *error = fmt::format("the ssd device of {} carries store {}; refusing to make store {} over it", path,
                           uuid_to_string(have), uuid_to_string(fsid));
      return -EEXIST;
    }
    HS_INFO("store at {} already exists; mkfs leaves it as it is", path);
    return 0;
  }

  bool ring_data = false;
  if (int r = small_writes_in_ring(cfg, &ring_data, error); r < 0) return r;
  Superblock sb;
  sb.format_version = target_format(cfg, ring_data);
  sb.fsid = fsid != Uuid{} ? fsid : generate_uuid();
  sb.created_us = now_us();
  sb.csum_block = static_cast<uint32_t>(cfg.get_size("hybridstore_csum_block"));
  for (const auto& o : option_registry())
    if (o.mkfs_only) sb.mkfs_options[o.name] = cfg.get_text(o.name);

  sb.order = TierOrder::made_by_mkfs(static_cast<int>(cfg.get_int("hybridstore_tiers")));
  for (Tier t : tier_ids(sb.tiers())) sb.tier[t].layout = tier_layout(t, sb.mkfs_options);
  Uuid kvfs_uuid{};
  if (kv_location_is_device(cfg)) {
    if (std::string why = kv_on_device_unsupported(sb); why.empty()) {
      sb.kv_location = KvLocation::kDevice;
      kvfs_uuid = generate_uuid();
    } else if (cfg.is_default("hybridstore_kv_location")) {
      // device is only the default: a build without the kvfs (Pacific's
      // RocksDB 6.8) still makes stores, in the directory as before.
      HS_INFO("mkfs of {}: RocksDB and the commit journal go in the directory: {}", path, why);
      sb.mkfs_options["hybridstore_kv_location"] = "directory";
    } else {
      *error = "hybridstore_kv_location=device: " + why;
      return -EOPNOTSUPP;
    }
  }
  // Held open (and locked) until the labels commit the store.
  PerTier<std::unique_ptr<BlockDevice>> owned;
  for (Tier t : tier_ids(sb.tiers())) {
    const uint64_t unit = tier_alloc_unit(t, sb.tier[t].layout, cfg);
    const Uuid& kv = t == Tier::kSsd ? kvfs_uuid : Uuid{};
    if (int r = make_tier_device(path, cfg, t, unit, kv, &sb, &owned[t], error); r < 0) return r;
  }
  PerTier<BlockDevice*> devs;
  for (Tier t : tier_ids(sb.tiers())) devs[t] = owned[t].get();
  if (sb.kv_location == KvLocation::kDevice) {
    // The kvfs and the space share the SSD: shared from here on.
    std::shared_ptr<BlockDevice> ssd(std::move(owned[Tier::kSsd]));
    if (int r = write_new_device_store(path, cfg, sb, kvfs_uuid, ssd, error); r < 0) return r;
    if (int r = commit_labels(path, sb, devs, error); r < 0) return r;
  } else {
    {
      std::unique_ptr<rocksdb::DB> db;
      if (int r = open_store_db(path, cfg, true, &db, error); r < 0) return r;
      if (int r = write_new_store(path, cfg, sb, db.get(), error); r < 0) return r;
    }
    if (int r = commit_labels(path, sb, devs, error); r < 0) return r;
  }
  HS_INFO("created store {} at {}", uuid_to_string(sb.fsid), path);
  return 0;
}

}  // namespace hybridstore
