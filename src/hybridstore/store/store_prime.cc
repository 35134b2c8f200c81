// HybridStore::prime_dir: a store directory made again from the devices'
// labels (docs/kvfs.md 5.5).
#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <memory>

#include <fmt/format.h>

#include "hsio/block_device.h"
#include "hybridstore/format/store_format.h"
#include "hybridstore/store/hybrid_store.h"
#include "hybridstore/store/store_kvfs.h"

namespace fs = std::filesystem;

namespace hybridstore {

namespace {

constexpr const char* kPathHint = "path_block.";
constexpr const char* kOsdKey = "osd_key";

// The label pair of `path`, read under the device's exclusive lock (held
// only while reading): a device a mount holds is refused, because what its
// labels say may be about to change.
int read_device_label(const std::string& path, DeviceLabel* label, std::string* error) {
  DeviceOpenOptions o;
  o.direct_io = false;
  o.backend = IoBackend::kPosix;
  o.exclusive = true;
  std::unique_ptr<BlockDevice> dev = open_block_device(path, o, error);
  if (!dev) return errno == EBUSY ? -EBUSY : -ENOENT;
  LabelPairStatus st;
  std::string why;
  if (int r = read_labels(dev.get(), label, &st, &why); r < 0) {
    *error = path + ": " + why;
    return r;
  }
  return 0;
}

bool is_meta_file_name(const std::string& key) {
  // A key becomes a file name in the directory: nothing that leaves it or
  // hides.
  if (key.empty() || key[0] == '.' || key.find('/') != std::string::npos) return false;
  return key != "type" && key != "fsid" && key != "keyring" && key.rfind("block", 0) != 0;
}

int link_device(const std::string& dir, const std::string& name, const std::string& target, std::string* error) {
  const std::string link = dir + "/" + name, tmp = link + ".tmp";
  std::error_code ec;
  fs::remove(tmp, ec);
  fs::create_symlink(target, tmp, ec);
  if (!ec) fs::rename(tmp, link, ec);
  if (ec) {
    *error = "cannot link " + link + " to " + target + ": " + ec.message();
    return -EIO;
  }
  return 0;
}

}  // namespace

int HybridStore::prime_dir(const PrimeRequest& req, std::vector<std::string>* done, std::string* error) {
  if (req.devices.empty()) {
    *error = "prime: no device given (the SSD's first)";
    return -EINVAL;
  }
  std::error_code ec;
  const std::string ssd_path = fs::absolute(req.devices[0], ec).string();
  DeviceLabel ssd;
  if (int r = read_device_label(ssd_path, &ssd, error); r < 0) return r;
  if (ssd.role != Tier::kSsd) {
    *error = fmt::format("{} is the {} device of store {}; give the ssd's first", ssd_path, tier_name(ssd.role),
                         uuid_to_string(ssd.fsid));
    return -EINVAL;
  }
  if (!(ssd.flags & kLabelMkfsDone)) {
    *error = ssd_path + " carries a store whose mkfs did not finish";
    return -EINVAL;
  }
  if (!(ssd.flags & kLabelKvOnDevice)) {
    *error = fmt::format("store {} keeps its RocksDB in its directory; nothing on {} can make that directory "
                         "again (move it onto the device first: hybridstore-tool --path DIR move-kv)",
                         uuid_to_string(ssd.fsid), ssd_path);
    return -EINVAL;
  }
  const std::string fsid = uuid_to_string(ssd.fsid);

  fs::create_directories(req.dir, ec);
  if (ec) {
    *error = "cannot create " + req.dir + ": " + ec.message();
    return -EIO;
  }
  for (const char* kv : {"db", "journal"})
    if (fs::exists(req.dir + "/" + kv, ec)) {
      *error = fmt::format("{} holds a store's {} (a directory store's): refusing to prime it", req.dir, kv);
      return -EEXIST;
    }
  if (fs::exists(req.dir + "/fsid", ec)) {
    std::ifstream f(req.dir + "/fsid");
    std::string have;
    std::getline(f, have);
    if (have != fsid) {
      *error = fmt::format("{} belongs to store {}, the devices to store {}", req.dir, have, fsid);
      return -EEXIST;
    }
  }

  // Every tier's device, before anything is written: the ones given, then
  // the label's hints.
  PerTier<std::string> device;
  device[Tier::kSsd] = ssd_path;
  for (size_t i = 1; i < req.devices.size(); ++i) {
    const std::string p = fs::absolute(req.devices[i], ec).string();
    DeviceLabel l;
    if (int r = read_device_label(p, &l, error); r < 0) return r;
    if (l.fsid != ssd.fsid) {
      *error = fmt::format("{} belongs to store {}, not to store {}", p, uuid_to_string(l.fsid), fsid);
      return -EINVAL;
    }
    device[l.role] = p;
  }
  std::vector<Tier> missing;
  for (const LabelTier& t : ssd.tiers) {
    if (!device[t.role].empty()) continue;
    auto hint = ssd.meta.find(std::string(kPathHint) + tier_name(t.role));
    DeviceLabel l;
    std::string why;
    if (hint != ssd.meta.end() && read_device_label(hint->second, &l, &why) == 0 && l.fsid == ssd.fsid &&
        l.role == t.role) {
      device[t.role] = hint->second;
      continue;
    }
    missing.push_back(t.role);
  }
  if (!missing.empty() && !req.ssd_only) {
    std::string names;
    for (Tier t : missing) names += std::string(names.empty() ? "" : ", ") + tier_name(t);
    *error = fmt::format("no device found for the {} tier of store {} (give it with --dev, or --ssd-only)", names,
                         fsid);
    return -ENOENT;
  }

  auto write = [&](const std::string& name, const std::string& text, mode_t mode) {
    const std::string p = req.dir + "/" + name;
    if (!write_file_durably(p, text)) {
      *error = "cannot write " + p;
      return -EIO;
    }
    ::chmod(p.c_str(), mode);
    done->push_back(name);
    return 0;
  };
  // Links first: each file written after them syncs the directory, and
  // `type`, what says a store is here, comes last.
  for (const LabelTier& t : ssd.tiers) {
    if (device[t.role].empty()) continue;
    if (int r = link_device(req.dir, tier_device_link(t.role), device[t.role], error); r < 0) return r;
    done->push_back(tier_device_link(t.role) + " -> " + device[t.role]);
  }
  for (const auto& [key, value] : ssd.meta) {
    if (key == kOsdKey || key.rfind(kPathHint, 0) == 0 || !is_meta_file_name(key)) continue;
    if (int r = write(key, value + "\n", 0644); r < 0) return r;
  }
  if (auto key = ssd.meta.find(kOsdKey); key != ssd.meta.end()) {
    auto who = ssd.meta.find("whoami");
    const std::string entity = who != ssd.meta.end() ? "osd." + who->second : "osd";
    if (int r = write("keyring", "[" + entity + "]\nkey = " + key->second + "\n", 0600); r < 0) return r;
  }
  if (int r = write("fsid", fsid + "\n", 0644); r < 0) return r;
  if (int r = write("type", "hybridstore\n", 0644); r < 0) return r;
  return 0;
}

}  // namespace hybridstore
