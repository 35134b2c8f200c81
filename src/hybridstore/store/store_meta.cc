// HybridStore::set_meta, get_meta, rm_meta: Ceph's meta keys in the SSD
// device's label (docs/kvfs.md 5.5), so that what ceph-osd needs of its data
// directory can be had from the device alone.
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "hybridstore/format/store_format.h"
#include "hybridstore/space/tier_space.h"
#include "hybridstore/store/hybrid_store.h"
#include "hybridstore/store/store_mount.h"
#include "hybridstore/store/tier_set.h"

namespace hybridstore {

namespace {

// The SSD device of a store that is not mounted here. To change the label
// it is opened exclusively: a mount elsewhere (another process, another
// HybridStore object) holds the same lock, and would overwrite a label
// rewritten under it. A reader needs no lock (raw flash takes one anyway,
// its FTL being one per file): read_labels picks the valid copy of a pair
// being rewritten.
std::unique_ptr<BlockDevice> open_unmounted_ssd(const std::string& path, const Config& cfg, bool exclusive,
                                                int* err, std::string* error) {
  const std::string p = path + "/" + tier_device_link(Tier::kSsd);
  std::error_code ec;
  if (!std::filesystem::exists(p, ec)) {
    *error = fmt::format("no store at {}: {} does not exist", path, tier_device_link(Tier::kSsd));
    *err = -ENOENT;
    return nullptr;
  }
  // Raw flash keeps its label behind the FTL, so the device must be opened
  // as what the store says it is; without a superblock to read (RocksDB on
  // the device), probe answers what the options would make.
  TierLayout layout;
  StoreProbe probe;
  std::string ignored;
  HybridStore::probe(path, cfg, &probe, &ignored);
  if (probe.tier[Tier::kSsd].kind == device_kind_name(DeviceKind::kNand)) layout.device = DeviceKind::kNand;
  DeviceOpenOptions o;
  o.backend = IoBackend::kPosix;  // two label copies: no queue worth setting up
  o.direct_io = cfg.get_bool("hybridstore_direct_io");
  o.exclusive = exclusive;
  errno = 0;
  auto dev = open_tier_device(layout, cfg, p, o, false, nullptr, error);
  if (!dev) *err = errno == EBUSY ? -EBUSY : errno ? -errno : -EIO;
  return dev;
}

}  // namespace

// Sets key to *value, or removes it when value is null.
int HybridStore::change_meta(const std::string& key, const std::string* value, std::string* error) {
  std::string e;
  std::lock_guard<std::mutex> l(meta_mutex_);
  int r = 0;
  if (read_only_mount_) {
    e = "the store is mounted read-only";
    r = -EROFS;
  } else if (store_) {
    TierSet& tiers = store_->tiers();
    DeviceLabel label = tiers.label(Tier::kSsd);
    r = change_label_meta(&label, key, value, &e);
    // Ceph writes the same keys at every start: no rewrite when nothing changes.
    if (r == 0 && label.meta != tiers.label(Tier::kSsd).meta) r = tiers.write_label(Tier::kSsd, &label, &e);
  } else {
    auto dev = open_unmounted_ssd(path_, cfg_, true, &r, &e);
    if (dev) {
      DeviceLabel label;
      r = read_label(dev.get(), &label, &e);
      if (r == 0) {
        DeviceLabel changed = label;
        r = change_label_meta(&changed, key, value, &e);
        if (r == 0 && changed.meta != label.meta) r = write_label_pair(dev.get(), &changed, &e);
      }
    }
  }
  if (error) *error = e;
  return r;
}

int HybridStore::set_meta(const std::string& key, const std::string& value, std::string* error) {
  return change_meta(key, &value, error);
}

int HybridStore::rm_meta(const std::string& key, std::string* error) { return change_meta(key, nullptr, error); }

int HybridStore::get_meta(const std::string& key, std::string* value, std::string* error) {
  std::string e;
  std::lock_guard<std::mutex> l(meta_mutex_);
  DeviceLabel label;
  int r = 0;
  if (store_) {
    label = store_->tiers().label(Tier::kSsd);
  } else if (auto dev = open_unmounted_ssd(path_, cfg_, false, &r, &e)) {
    r = read_label(dev.get(), &label, &e);
  }
  if (r == 0) {
    auto it = label.meta.find(key);
    if (it == label.meta.end()) {
      e = fmt::format("the label has no meta key '{}'", key);
      r = -ENOENT;
    } else {
      *value = it->second;
    }
  }
  if (error) *error = e;
  return r;
}

}  // namespace hybridstore
