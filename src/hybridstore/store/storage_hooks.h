// Storage hooks: how a test tool puts test-only machinery between the store
// and its storage (fault injection, device timing models).
//
// The store opens RocksDB and its devices itself; tests need to sit in
// between (an emulated volatile write cache, injected EIO, power cuts,
// modelled device time). That machinery lives in the hybridstore_testing
// library, which the product library and a ceph-osd never contain. A test
// binary or tool installs its hooks (TestStorageHooks) at startup; the store
// calls them at the two points where it opens storage.
//
// The options that ask for this machinery are registered by the testing
// library (testing/test_options.h), so a product binary does not know them.
// Where they are registered but no hooks are installed, any of them away
// from its default makes mkfs and mount fail with an error naming the
// option, rather than be silently ignored.
#pragma once
#include <memory>
#include <string>

#include <rocksdb/options.h>

#include "hscommon/config.h"
#include "hybridstore/format/onode.h"
#include "hsio/block_device.h"

namespace hybridstore {

class StorageHooks {
 public:
  virtual ~StorageHooks() = default;
  // Where the RocksDB options of the store at `store_path` are built, before
  // its database opens (mkfs and mount). May replace opts->env. Returns 0,
  // or a negative errno with *error; the open then fails.
  virtual int setup_kv(const std::string& store_path, const Config& cfg, rocksdb::Options* opts,
                       std::string* error) = 0;
  // mkfs and mount of a store whose RocksDB lives on its fastest tier
  // (which then never calls setup_kv), before any device opens: what
  // setup_kv does for a directory store's RocksDB besides its Env (fault
  // injection restores the power an earlier mount cut and arms itself).
  virtual int begin_mount(const std::string& store_path, const Config& cfg, std::string* error) { return 0; }
  // At mount, once per tier, after the device was opened and its label
  // checked: returns the device the store uses from then on (`dev` itself or
  // a decorator that owns it).
  virtual std::unique_ptr<BlockDevice> wrap_device(const std::string& store_path, Tier tier, const Config& cfg,
                                                   std::unique_ptr<BlockDevice> dev) = 0;
  // At mount, for the commit journal (<store>/journal), before it is
  // replayed: the same for the journal's ring. It is no tier's device, so
  // device models leave it alone; fault injection must not.
  virtual std::unique_ptr<BlockDevice> wrap_journal(const std::string& store_path, const Config& cfg,
                                                    std::unique_ptr<BlockDevice> dev) {
    return dev;
  }
};

// Process-wide; install before the first mkfs or mount. Null uninstalls.
void set_storage_hooks(std::shared_ptr<StorageHooks> hooks);
std::shared_ptr<StorageHooks> storage_hooks();

// The first option set in `cfg` that only storage hooks honour, or "".
std::string option_needing_storage_hooks(const Config& cfg);

}  // namespace hybridstore
