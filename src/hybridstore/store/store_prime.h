// A store directory made again from the devices alone (docs/kvfs.md 5.5):
// what `hybridstore-tool prime-osd-dir` does, as `ceph-bluestore-tool
// prime-osd-dir` does for BlueStore. Only a store whose RocksDB and journal
// are on its SSD can be primed: a directory store's metadata is in the
// directory itself.
#pragma once
#include <string>
#include <vector>

namespace hybridstore {

struct PrimeRequest {
  std::string dir;
  // The SSD first; the other tiers' devices in any order. A tier without
  // one here is found through the SSD label's path_block.<tier> hint.
  std::vector<std::string> devices;
  // Link the SSD only, even if other tiers' devices cannot be found.
  bool ssd_only = false;
};

// Never writes to a device; refuses one a mount holds (-EBUSY). Writes
// `type`, `fsid`, one file per meta key of the SSD label (but the secret
// osd_key, which becomes `keyring`, and the path hints), and the block.*
// links, each file written to a temporary name, synced and renamed. A
// directory holding an earlier prime of the same store is primed again; one
// holding a RocksDB or journal, or another store's fsid, is refused.
// `done` lists what was written, for people.
int prime_store_dir(const PrimeRequest& req, std::vector<std::string>* done, std::string* error);

}  // namespace hybridstore
