// Narrow hooks for white-box tests, in the manner of LevelDB's TEST_
// methods: each says what a test may look at or make happen inside a
// mounted store, and nothing hands out the store's parts. Product code
// never calls them. Every hook needs a mounted store.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hsio/block_device.h"
#include "hybridstore/alloc/allocator.h"
#include "hybridstore/format/collection_id.h"
#include "hybridstore/format/object_id.h"
#include "hybridstore/format/onode.h"
#include "hybridstore/kv/deferred.h"
#include "hybridstore/store/hybrid_store.h"
#include "hybridstore/store/memory_tuner.h"
#include "hybridstore/tier/heat_tracker.h"

namespace hybridstore {

class StoreTestHooks {
 public:
  // The object's onode as reads see it: 0, -ENOENT or -EIO.
  static int onode(HybridStore& s, const CollectionId& c, const ObjectId& o, std::shared_ptr<const Onode>* out);
  // The device a tier's data is written to (behind the store's wrappers).
  static BlockDevice* device(HybridStore& s, Tier t);
  // The deferred writer's bytes not yet on their devices, its counts, and
  // whether a device range has nothing staged or queued over it.
  static uint64_t deferred_pending_bytes(HybridStore& s);
  static DeferredStats deferred_stats(HybridStore& s);
  static bool deferred_range_quiet(HybridStore& s, Tier t, uint64_t offset, uint64_t len);
  // Applies every committed deferred write and waits for it.
  static int drain_deferred(HybridStore& s);
  // What umount does without unmounting: every staged write unit written
  // out, every record applied.
  static int write_out_staged(HybridStore& s);
  // The staged tiers' timeouts, as the migrator's thread runs them.
  static void tick(HybridStore& s);
  // hybridstore_small_write_journal=on: the onode deltas go into the
  // journal's records beside onode puts, as if every object were clean
  // (OnodeStore::set_deltas_replace_puts(false)); and a checkpoint of the
  // dirty onodes now (0 or -errno; -ENOTSUP without the option).
  static void deltas_beside_puts(HybridStore& s);
  static int checkpoint_onodes(HybridStore& s);
  static size_t cached_onodes(HybridStore& s);
  static uint64_t cached_onode_bytes(HybridStore& s);
  // What the dirty onodes (hybridstore_small_write_journal=on) hold.
  static uint64_t dirty_onode_bytes(HybridStore& s);
  // The memory tuner (hybridstore_memory_target): made again with `heap` as
  // its heap reading, so a test decides what the tuner sees; and the
  // caches' sizes it set (empty without a target). Its readings come every
  // 5 ticks, of tick() or of the migrator's thread.
  static void set_heap_reader(HybridStore& s, std::function<uint64_t()> heap);
  static std::vector<MemoryTuner::Size> memory_sizes(HybridStore& s);
  // The heat recorded for the object under `onode_key`: false when none.
  static bool heat(HybridStore& s, const std::string& onode_key, HeatSample* out);
  // Lending as the KV file system will (kvfs.md 2.5), through the store's
  // lender over tier `t`'s space, before the store lends by itself.
  static uint64_t lend_unit(HybridStore& s, Tier t);
  static int lend(HybridStore& s, Tier t, uint64_t want, std::vector<Interval>* out);
  static void take_back(HybridStore& s, Tier t, const std::vector<Interval>& ranges);
  static void set_floor(HybridStore& s, Tier t, uint64_t bytes);
  // fsck with `lent` as the KV file system's chunks of tier `t`.
  static int fsck_lent(HybridStore& s, Tier t, const std::vector<Interval>& lent, bool deep, FsckReport* report);
  // The KV file system under RocksDB (a device store; -ENOTSUP otherwise),
  // for tests that damage it behind RocksDB's back: a file written whole
  // and synced, a name dropped, a directory's names, and where a file's
  // bytes lie on the SSD device, in file order.
  static int kvfs_write(HybridStore& s, const std::string& dir, const std::string& name, const std::string& data);
  static int kvfs_unlink(HybridStore& s, const std::string& dir, const std::string& name);
  static int kvfs_list(HybridStore& s, const std::string& dir, std::vector<std::string>* names);
  static int kvfs_extents(HybridStore& s, const std::string& dir, const std::string& name,
                          std::vector<Interval>* out);
  // The commit journal's ring in the kvfs, in ring order.
  static int kvfs_ring(HybridStore& s, std::vector<Interval>* out);
};

}  // namespace hybridstore
