// HybridStore::probe: what a store directory holds, without mounting it.
//
// A Ceph OSD asks before mount which devices it runs on, whether they spin
// and what the allocation unit is (its _hdd/_ssd tunables depend on it), and
// whether another process holds the store. All of it comes from the
// directory, the devices' sysfs entries and, for the allocation units, the
// superblock read from a read-only open of RocksDB (allowed while another
// process has the store mounted), or, when RocksDB is on the SSD, from the
// SSD's label.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <rocksdb/db.h>

#include "hsio/block_device.h"
#include "hybridstore/format/store_format.h"
#include "hybridstore/kv/kv_schema.h"
#include "hybridstore/space/tier_device.h"
#include "hybridstore/space/tier_space.h"
#include "hybridstore/store/hybrid_store.h"
#include "hybridstore/store/store_kvfs.h"

namespace hybridstore {

namespace fs = std::filesystem;

namespace {

std::string read_sys(const std::string& path) {
  std::ifstream f(path);
  std::string v;
  if (f) std::getline(f, v);
  return v;
}

// `media`: what the tier's layout says of its device (layout_media); a
// device of known media is not asked about it.
void describe(const std::string& path, bool default_rotational, Media media, StoreProbe::Device* d) {
  d->path = path;
  const bool known = media != Media::kUnknown;
  d->rotational = known ? media == Media::kRotational : default_rotational;
  std::error_code ec;
  fs::path real = fs::canonical(path, ec);
  d->resolved = ec ? path : real.string();
  struct stat st;
  if (::stat(d->resolved.c_str(), &st) < 0) return;
  d->exists = true;
  d->is_block = S_ISBLK(st.st_mode);
  if (d->kind.empty()) d->kind = d->is_block ? "block" : "file";
  dev_t holder = d->is_block ? st.st_rdev : st.st_dev;
  if (d->is_block) {
    int fd = ::open(d->resolved.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      uint64_t bytes = 0;
      if (::ioctl(fd, BLKGETSIZE64, &bytes) == 0) d->size = bytes;
      ::close(fd);
    }
  } else {
    d->size = static_cast<uint64_t>(st.st_size);
  }
  std::string dir = sys_block_dir_of(holder);
  if (dir.empty()) return;  // tmpfs, overlay: no device to name
  d->kernel_devices.push_back(fs::path(dir).filename().string());
  std::string rot = read_sys(dir + "/queue/rotational");
  // Raw flash behind the embedded FTL is a file on whatever disk holds it.
  if ((rot == "0" || rot == "1") && !known) d->rotational = rot == "1";
}

// True when another open file description holds the store's fsid lock (the
// one mount takes).
bool locked_by_other(const std::string& fsid_path) {
  int fd = ::open(fsid_path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  struct flock fl;
  std::memset(&fl, 0, sizeof(fl));
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  bool busy = ::fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
  ::close(fd);
  return busy;
}

int read_superblock(const std::string& path, Superblock* sb, std::string* error) {
  rocksdb::Options opts;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::OpenForReadOnly(opts, path + "/db", &raw);
  if (!s.ok()) {
    *error = "cannot open RocksDB at " + path + "/db read-only: " + s.ToString();
    return -EIO;
  }
  std::unique_ptr<rocksdb::DB> db(raw);
  std::string v;
  s = db->Get(rocksdb::ReadOptions(), kv::superblock_key(), &v);
  if (!s.ok()) {
    *error = "no superblock in " + path + "/db";
    return -EIO;
  }
  return decode_superblock(v, sb, error);
}

// A store whose RocksDB is on its SSD has no <dir>/db: what probe needs is
// in the SSD's label (its tier table), which a mounted store's device
// still lets anyone read. True when the label says such a store committed.
bool read_device_store_label(const std::string& path, const Config& cfg, DeviceLabel* label, Superblock* sb) {
  std::error_code ec;
  std::string p = path + "/" + tier_device_link(Tier::kSsd);
  const std::string option = cfg.get_str(tier_option(Tier::kSsd, "path"));
  if (!fs::exists(p, ec) && !option.empty()) p = option;
  if (!fs::exists(p, ec)) return false;
  DeviceOpenOptions o;
  o.direct_io = false;
  std::string why;
  std::unique_ptr<BlockDevice> dev = open_detected_device(cfg, p, o, nullptr, &why);
  LabelPairStatus st;
  if (!dev || read_labels(dev.get(), label, &st, &why) < 0) return false;
  if (!(label->flags & kLabelKvOnDevice) || !(label->flags & kLabelMkfsDone) || label->tiers.empty()) return false;
  *sb = Superblock();
  sb->fsid = label->fsid;
  sb->format_version = label->format_version;
  sb->kv_location = KvLocation::kDevice;
  sb->order = TierOrder();
  for (const LabelTier& t : label->tiers) {
    sb->order.add(t.role);
    sb->tier[t.role].layout = t.layout;
    sb->tier[t.role].alloc_unit = t.alloc_unit;
    sb->tier[t.role].size = t.size;
  }
  return true;
}

}  // namespace

int HybridStore::probe(const std::string& path, const Config& cfg, StoreProbe* out, std::string* error) {
  *out = StoreProbe();
  std::string dummy;
  if (!error) error = &dummy;

  std::error_code ec;
  out->exists = fs::exists(path + "/db/CURRENT", ec) && fs::exists(path + "/fsid", ec);
  Superblock sb;
  bool have_super = false;
  if (out->exists) {
    out->fsid = read_sys(path + "/fsid");
    out->in_use = locked_by_other(path + "/fsid");
    have_super = read_superblock(path, &sb, error) == 0;
  } else if (DeviceLabel label; read_device_store_label(path, cfg, &label, &sb)) {
    out->exists = true;
    have_super = true;
    out->fsid = uuid_to_string(label.fsid);
    // A mount locks the SSD device, and the fsid file once it has one.
    out->in_use = locked_by_other(path + "/fsid") || locked_by_other(path + "/" + tier_device_link(Tier::kSsd));
  }
  // The layout mkfs recorded; before mkfs, the one it would choose.
  std::map<std::string, std::string> mkfs_options = sb.mkfs_options;
  if (!have_super)
    for (const auto& o : option_registry())
      if (o.mkfs_only) mkfs_options[o.name] = cfg.get_text(o.name);
  if (have_super) out->format_version = sb.format_version;
  out->tiers = have_super ? sb.tiers() : static_cast<int>(cfg.get_int("hybridstore_tiers"));
  out->slowest = have_super ? sb.order.slowest() : Tier::kHdd;  // mkfs puts the HDD last
  out->min_alloc_size = UINT64_MAX;
  for (Tier tier : tier_ids(out->tiers)) {
    // The link mkfs made wins; before mkfs, what mkfs would use.
    std::string p = path + "/" + tier_device_link(tier);
    const std::string option = tier_option(tier, "path");
    if (!fs::exists(p, ec) && !cfg.get_str(option).empty()) p = cfg.get_str(option);
    StoreProbe::Device& d = out->tier[tier];
    const TierLayout layout = have_super ? sb.tier[tier].layout : tier_layout(tier, mkfs_options);
    d.kind = device_kind_name(layout.device);
    // A file or a device sysfs says nothing about keeps the role it plays:
    // only the slowest tier is taken for a disk.
    describe(p, tier == out->slowest, layout_media(layout), &d);
    const uint64_t unit = have_super ? sb.tier[tier].alloc_unit : tier_alloc_unit(tier, layout, cfg);
    out->min_alloc_size = std::min(out->min_alloc_size, unit);
  }
  struct stat st;
  // RocksDB on the SSD runs on its media; in a directory, on that of the
  // filesystem holding it.
  std::string kv_dir = fs::exists(path + "/db", ec) ? path + "/db" : path;
  // Before mkfs, where mkfs would put it (by default the SSD, when the
  // build has the kvfs).
  bool kv_on_device = have_super && sb.kv_location == KvLocation::kDevice;
  if (!have_super && kv_location_is_device(cfg)) {
    Superblock would;
    would.order = TierOrder::made_by_mkfs(out->tiers);
    kv_on_device = kv_on_device_unsupported(would).empty();
  }
  if (kv_on_device) {
    out->kv_rotational = out->tier[Tier::kSsd].rotational;
    return out->exists ? 0 : -ENOENT;
  }
  if (::stat(kv_dir.c_str(), &st) == 0) {
    std::string dir = sys_block_dir_of(st.st_dev);
    std::string rot = dir.empty() ? "" : read_sys(dir + "/queue/rotational");
    out->kv_rotational = rot != "0";
  }
  return out->exists ? 0 : -ENOENT;
}

}  // namespace hybridstore
