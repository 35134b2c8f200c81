// set-label-key, rm-label-key, get-label-key, zap: a device's label as an
// operator changes it (the names are ceph-bluestore-tool's).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "hscommon/config.h"
#include "hsio/block_device.h"
#include "hybridstore/format/store_format.h"
#include "hybridstore/space/tier_device.h"
#include "store_access.h"

namespace hybridstore::tool {
namespace {

struct KeyArgs {
  std::string dev;
  std::string key;
  std::string value;
};

// A device named on the command line. Exclusive for a change: a mounted
// store holds the same lock, and would write its own label over ours.
std::unique_ptr<BlockDevice> open_dev(const std::string& path, bool exclusive, std::string* err) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    *err = "device " + path + " does not exist";
    return nullptr;
  }
  DeviceOpenOptions o;
  o.direct_io = false;
  o.backend = IoBackend::kPosix;
  o.exclusive = exclusive;
  // Raw NAND keeps its label behind the FTL: opened as what it is.
  return open_detected_device(Config(), path, o, nullptr, err);
}

// The store at --path, for the commands that take the store's SSD label
// when no --dev is given. Null (the error printed) when there is neither.
std::unique_ptr<HybridStore> store_for_key(const GlobalArgs& args) {
  if (args.path.empty()) {
    fprintf(stderr, "hybridstore-tool: --dev DEV or --path DIR (the store's ssd device) is required\n");
    return nullptr;
  }
  Config cfg;
  if (!args.load_config(&cfg)) return nullptr;
  return std::make_unique<HybridStore>(args.path, cfg);
}

void add_key_options(CLI::App* sub, KeyArgs* a, bool value) {
  sub->add_option("--dev", a->dev, "the device whose label to change (any tier's); without it, --path's ssd device");
  sub->add_option("-k,--key", a->key, "meta key")->required();
  if (value) sub->add_option("-v,--value", a->value, "value")->required();
}

// set-label-key and rm-label-key: value null removes the key.
int change_key(const GlobalArgs& args, const KeyArgs& a, const std::string* value) {
  const char* what = value ? "set-label-key" : "rm-label-key";
  if (a.dev.empty()) {
    auto store = store_for_key(args);
    if (!store) return 2;
    std::string err;
    int r = value ? store->set_meta(a.key, *value, &err) : store->rm_meta(a.key, &err);
    if (r < 0) return fail(std::string(what) + ": " + args.path + ": " + err);
    printf("%s meta key %s in the ssd label of %s\n", value ? "set" : "removed", a.key.c_str(), args.path.c_str());
    return 0;
  }
  Config cfg;
  if (!args.load_config(&cfg)) return 2;
  std::string err;
  auto dev = open_dev(a.dev, true, &err);
  if (!dev) return fail(std::string(what) + ": " + err);
  DeviceLabel written;
  if (rewrite_label_meta(dev.get(), a.key, value, &written, &err) < 0)
    return fail(std::string(what) + ": " + a.dev + ": " + err);
  printf("%s meta key %s in the %s label of %s (generation %llu)\n", value ? "set" : "removed", a.key.c_str(),
         tier_name(written.role), a.dev.c_str(), static_cast<unsigned long long>(written.generation));
  return 0;
}

ToolCommand set_key_cmd("set-label-key", "set a meta key in a device's label (works without mounting; not on a device in use)",
                        [](CLI::App* sub, GlobalArgs* args) {
                          auto a = std::make_shared<KeyArgs>();
                          add_key_options(sub, a.get(), true);
                          return [args, a] { return change_key(*args, *a, &a->value); };
                        });

ToolCommand rm_key_cmd("rm-label-key", "remove a meta key from a device's label (works without mounting; not on a device in use)",
                       [](CLI::App* sub, GlobalArgs* args) {
                         auto a = std::make_shared<KeyArgs>();
                         add_key_options(sub, a.get(), false);
                         return [args, a] { return change_key(*args, *a, nullptr); };
                       });

ToolCommand get_key_cmd("get-label-key", "print the value of a meta key in a device's label",
                        [](CLI::App* sub, GlobalArgs* args) {
                          auto a = std::make_shared<KeyArgs>();
                          add_key_options(sub, a.get(), false);
                          return [args, a] {
                            std::string value, err;
                            Config cfg;
                            if (!a->dev.empty() && !args->load_config(&cfg)) return 2;
                            if (a->dev.empty()) {
                              auto store = store_for_key(*args);
                              if (!store) return 2;
                              if (store->get_meta(a->key, &value, &err) < 0)
                                return fail("get-label-key: " + args->path + ": " + err);
                            } else {
                              auto dev = open_dev(a->dev, false, &err);
                              if (!dev) return fail("get-label-key: " + err);
                              DeviceLabel l;
                              if (read_label(dev.get(), &l, &err) < 0) return fail("get-label-key: " + a->dev + ": " + err);
                              auto it = l.meta.find(a->key);
                              if (it == l.meta.end())
                                return fail("get-label-key: " + a->dev + ": the label has no meta key '" + a->key + "'");
                              value = it->second;
                            }
                            printf("%s\n", value.c_str());
                            return 0;
                          };
                        });

// Zeroes [0, head) of dev and flushes; what it found there goes to *found.
int zap_head(BlockDevice* dev, std::string* found, std::string* err) {
  const uint64_t s = label_slot(dev);
  DeviceLabel l;
  LabelPairStatus st;
  std::string why;
  const int lr = read_labels(dev, &l, &st, &why);
  // A store's head is at least label_head(s, 4096) whatever its unit; a
  // label says how far its own goes (a coarser unit, raw NAND's pages).
  uint64_t head = label_head(s, 4096);
  if (lr == 0) {
    head = std::max(head, l.head);
    *found = "label of store " + uuid_to_string(l.fsid) + " (" + tier_name(l.role) + " device, record version " +
             std::to_string(l.record_version) + ", generation " + std::to_string(l.generation) + ")";
  } else if (lr == -EOPNOTSUPP) {
    *found = "a label this build cannot read (" + why + ")";
  } else {
    *found = "no label (" + why + "): zapped anyway";
  }
  head = std::max(head, 4 * s);
  const uint64_t align = std::max<uint64_t>(4096, dev->alignment());
  head = std::min(head, dev->size() / align * align);
  constexpr uint64_t kChunk = 1ull << 20;
  AlignedBuffer zeros(kChunk, align);
  for (uint64_t off = 0; off < head; off += kChunk) {
    const uint64_t n = std::min(kChunk, head - off);
    if (int r = dev->write(off, zeros.data(), n); r < 0) {
      *err = "cannot write " + dev->path() + " at " + std::to_string(off) + ": " + strerror(-r);
      return r;
    }
  }
  if (int r = dev->flush(); r < 0) {
    *err = "cannot flush " + dev->path() + ": " + strerror(-r);
    return r;
  }
  *found += "; zeroed bytes 0 to " + std::to_string(head) + " (both label copies and both kvfs superblock slots)";
  return 0;
}

ToolCommand zap_cmd("zap", "erase the label copies and kvfs superblock slots of devices (not a device in use)",
                    [](CLI::App* sub, GlobalArgs* args) {
                      auto devs = std::make_shared<std::vector<std::string>>();
                      sub->add_option("--dev", *devs, "a device to zap (repeatable)")->required();
                      return [args, devs] {
                        Config cfg;
                        if (!args->load_config(&cfg)) return 2;
                        // All of them locked before any is written: a refusal zaps nothing.
                        std::vector<std::unique_ptr<BlockDevice>> open;
                        for (const auto& p : *devs) {
                          std::string err;
                          auto d = open_dev(p, true, &err);
                          if (!d) return fail("zap: " + err + "; nothing zapped");
                          open.push_back(std::move(d));
                        }
                        for (size_t i = 0; i < open.size(); ++i) {
                          std::string found, err;
                          if (zap_head(open[i].get(), &found, &err) < 0) return fail("zap: " + err);
                          printf("zapped %s: %s\n", (*devs)[i].c_str(), found.c_str());
                        }
                        return 0;
                      };
                    });

}  // namespace
}  // namespace hybridstore::tool
