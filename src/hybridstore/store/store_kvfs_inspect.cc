// HybridStore::kvfs_inspect: the KV file system under a device store's
// RocksDB read from outside (docs/kvfs.md 5.5), for `hybridstore-tool kvfs`.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "hsio/block_device.h"
#include "hybridstore/format/store_format.h"
#include "hybridstore/kvfs/kvfs_inspect.h"
#include "hybridstore/space/tier_device.h"
#include "hybridstore/store/hybrid_store.h"
#include "hybridstore/store/store_kvfs.h"

namespace fs = std::filesystem;

namespace hybridstore {

namespace {

DeviceRange range(const KvFsExtent& e) { return DeviceRange{e.offset, e.length}; }

// Names come from the device: only plain names become paths.
bool safe_name(const std::string& n) {
  return !n.empty() && n != "." && n != ".." && n.find('/') == std::string::npos &&
         n.find('\0') == std::string::npos;
}

int export_file(BlockDevice* dev, const KvFsInspection& in, const KvFsFileView& f, const std::string& dir,
                std::string* error) {
  if (!safe_name(f.dir) || !safe_name(f.name)) {
    *error = fmt::format("kvfs file \"{}/{}\" has a name that is no file name here; not exported", f.dir, f.name);
    return -EINVAL;
  }
  std::string bytes, why;
  if (int r = read_kvfs_inode(dev, *in.state, in.super.block, f.ino, &bytes, &why); r < 0) {
    *error = fmt::format("kvfs file {}/{}: {}", f.dir, f.name, why);
    return r;
  }
  std::error_code ec;
  fs::create_directories(dir + "/" + f.dir, ec);
  const std::string path = dir + "/" + f.dir + "/" + f.name;
  std::ofstream o(path, std::ios::binary | std::ios::trunc);
  o.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  o.close();
  if (ec || !o) {
    *error = "cannot write " + path + (ec ? ": " + ec.message() : "");
    return -EIO;
  }
  return 0;
}

}  // namespace

int HybridStore::kvfs_inspect(const std::string& path, const Config& cfg, const KvFsInspectRequest& req,
                              KvFsView* out, std::vector<std::string>* exported, std::string* error) {
  *out = KvFsView();
  const std::string p = path + "/" + tier_device_link(Tier::kSsd);
  std::error_code ec;
  if (!fs::exists(p, ec)) {
    *error = fs::exists(path + "/db", ec) ? "this store keeps RocksDB in " + path + "/db, not on the device"
                                          : "no store at " + path + " (no " + p + ")";
    return fs::exists(path + "/db", ec) ? -ENOTSUP : -ENOENT;
  }
  DeviceOpenOptions o;
  o.direct_io = false;
  o.backend = IoBackend::kPosix;
  // Held while reading, writing nothing: a mount takes the same lock, and a
  // mounted kvfs may hand the extents being read to another file meanwhile.
  o.exclusive = true;
  std::unique_ptr<BlockDevice> dev = open_detected_device(cfg, p, o, nullptr, error);
  if (!dev) {
    if (errno == EBUSY) {
      *error = p + " is in use: a mount holds it, and a mounted kvfs may hand the extents being read to other "
                   "files; umount the store (stop the OSD) first";
      return -EBUSY;
    }
    return -ENOENT;
  }
  DeviceLabel label;
  LabelPairStatus st;
  std::string why;
  if (int r = read_labels(dev.get(), &label, &st, &why); r < 0) {
    *error = p + ": " + why;
    return r;
  }
  if (!(label.flags & kLabelKvOnDevice)) {
    *error = "this store keeps RocksDB in " + path + "/db, not on the device";
    return -ENOTSUP;
  }
  // Read as mount would read it: a configuration that contradicts how the
  // device was made is refused here too.
  Config as_made = cfg;
  if (int r = take_label_device_options(label, p, &as_made, error); r < 0) return r;
  const KvFsParams params = kvfs_params(as_made, *dev, label.head);
  KvFsInspection in;
  if (int r = inspect_kvfs(dev.get(), params, label.kvfs_uuid, label.fsid, req.log, &in, &why); r < 0) {
    *error = p + ": the KV file system: " + why;
    return r;
  }
  out->device = p;
  out->kvfs_uuid = uuid_to_string(label.kvfs_uuid);
  out->device_size = dev->size();
  out->head = label.head;
  out->block = in.super.block;
  out->alloc_unit = in.super.alloc_unit;
  out->lend_unit = in.super.lend_unit;
  out->current_slot = static_cast<int>(in.super.generation % kKvFsSuperSlots);
  out->generation = in.super.generation;
  for (uint32_t i = 0; i < kKvFsSuperSlots; ++i) {
    KvFsSlotView v;
    v.valid = in.slots[i].result == 0;
    v.blank = in.slot_blank[i];
    v.why = in.slots[i].why;
    if (v.valid) {
      const KvFsSuper& s = in.slots[i].super;
      v.generation = s.generation;
      v.log_id = s.log_id;
      v.log_first_seq = s.log_first_seq;
      v.created_us = s.created_us;
      v.log_segment = range(s.log_segment);
    }
    out->slots.push_back(v);
  }
  const KvFsState& state = *in.state;
  for (const auto& [off, len] : state.chunks()) {
    out->chunks.push_back(DeviceRange{off, len});
    out->owned += len;
  }
  for (const KvFsExtent& e : state.journal()) out->journal.push_back(range(e));
  for (const KvFsExtent& e : state.log_segments()) out->log_segments.push_back(range(e));
  for (const auto& [off, use] : state.used()) out->used += use.length;
  out->free = out->owned > out->used ? out->owned - out->used : 0;
  for (const auto& [dir, names] : state.dirs()) {
    for (const auto& [name, ino] : names) {
      KvFsFileView f;
      f.dir = dir;
      f.name = name;
      f.ino = ino;
      auto i = state.inodes().find(ino);
      if (i != state.inodes().end()) {
        f.size = i->second.size;
        f.mtime = i->second.mtime;
        f.inline_tail = i->second.tail_kind == KvTailKind::kInline;
        for (const KvFsExtent& e : i->second.extents) f.extents.push_back(range(e));
      }
      out->files.push_back(std::move(f));
    }
  }
  for (const KvLoggedRecord& r : in.records) out->log.push_back(fmt::format("{}: {}", r.seq, describe_kv_record(r.record)));
  out->damage = in.damage;
  if (!req.export_dir.empty()) {
    for (const KvFsFileView& f : out->files) {
      if (int r = export_file(dev.get(), in, f, req.export_dir, error); r < 0) return r;
      if (exported) exported->push_back(f.dir + "/" + f.name);
    }
  }
  return 0;
}

}  // namespace hybridstore
