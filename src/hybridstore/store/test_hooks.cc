#include "hybridstore/store/test_hooks.h"

#include "hybridstore/store/onode_checkpointer.h"

#include "hybridstore/kvfs/kv_device.h"
#include "hybridstore/store/object_heat.h"
#include "hybridstore/store/onode_store.h"
#include "hybridstore/store/store_mount.h"
#include "hybridstore/store/tier_lender.h"
#include "hybridstore/store/tier_set.h"
#include "hybridstore/tier/migrator.h"

namespace hybridstore {

int StoreTestHooks::onode(HybridStore& s, const CollectionId& c, const ObjectId& o,
                          std::shared_ptr<const Onode>* out) {
  std::shared_lock<std::shared_mutex> lock;
  return s.store_->onodes().get_for_read(c, o, out, &lock);
}

BlockDevice* StoreTestHooks::device(HybridStore& s, Tier t) { return s.store_->tiers().device(t); }

uint64_t StoreTestHooks::deferred_pending_bytes(HybridStore& s) { return s.store_->deferred().pending_bytes(); }

DeferredStats StoreTestHooks::deferred_stats(HybridStore& s) { return s.store_->deferred().stats(); }

bool StoreTestHooks::deferred_range_quiet(HybridStore& s, Tier t, uint64_t offset, uint64_t len) {
  return s.store_->deferred().range_quiet(t, offset, len);
}

int StoreTestHooks::drain_deferred(HybridStore& s) { return s.store_->deferred().drain(); }

int StoreTestHooks::write_out_staged(HybridStore& s) { return s.store_->settle(); }

void StoreTestHooks::tick(HybridStore& s) { s.tick(); }

void StoreTestHooks::deltas_beside_puts(HybridStore& s) { s.store_->onodes().set_deltas_replace_puts(false); }
int StoreTestHooks::checkpoint_onodes(HybridStore& s) {
  OnodeCheckpointer* c = s.store_->checkpointer();
  return c ? c->checkpoint() : -ENOTSUP;
}
size_t StoreTestHooks::cached_onodes(HybridStore& s) { return s.store_->onodes().cached_count(); }
uint64_t StoreTestHooks::cached_onode_bytes(HybridStore& s) { return s.store_->onodes().cached_bytes(); }
uint64_t StoreTestHooks::dirty_onode_bytes(HybridStore& s) { return s.store_->onodes().dirty_bytes(); }

void StoreTestHooks::set_heap_reader(HybridStore& s, std::function<uint64_t()> heap) {
  s.store_->restart_memory_tuner(std::move(heap));
}

std::vector<MemoryTuner::Size> StoreTestHooks::memory_sizes(HybridStore& s) {
  MemoryTuner* t = s.store_->memory_tuner();
  return t ? t->sizes() : std::vector<MemoryTuner::Size>();
}

bool StoreTestHooks::heat(HybridStore& s, const std::string& onode_key, HeatSample* out) {
  return s.store_->heat().tracker()->lookup(onode_key, out);
}

uint64_t StoreTestHooks::lend_unit(HybridStore& s, Tier t) {
  return TierLender(&s.store_->tiers().space(t)).unit();
}

int StoreTestHooks::lend(HybridStore& s, Tier t, uint64_t want, std::vector<Interval>* out) {
  return TierLender(&s.store_->tiers().space(t)).lend(want, out);
}

void StoreTestHooks::take_back(HybridStore& s, Tier t, const std::vector<Interval>& ranges) {
  TierLender(&s.store_->tiers().space(t)).take_back(ranges);
}

void StoreTestHooks::set_floor(HybridStore& s, Tier t, uint64_t bytes) { s.store_->tiers().space(t).set_floor(bytes); }

int StoreTestHooks::fsck_lent(HybridStore& s, Tier t, const std::vector<Interval>& lent, bool deep,
                              FsckReport* report) {
  PerTier<std::vector<Interval>> chunks;
  chunks[t] = lent;
  // As HybridStore::fsck: no move and no cleaner relocation meanwhile.
  HybridStore::Quiet quiet = s.hold_background();
  return s.store_->fsck(deep, report, &chunks);
}

namespace {
KvFs* kvfs_of(const std::unique_ptr<MountedStore>& store) {
  KvDevice* kv = store ? store->kv_device() : nullptr;
  return kv ? &kv->fs() : nullptr;
}
}  // namespace

int StoreTestHooks::kvfs_write(HybridStore& s, const std::string& dir, const std::string& name,
                               const std::string& data) {
  KvFs* fs = kvfs_of(s.store_);
  if (!fs) return -ENOTSUP;
  std::unique_ptr<KvFsWritableFile> f;
  std::string why;
  if (int r = fs->open_writable(dir, name, &f, &why); r < 0) return r;
  if (int r = f->append(data, &why); r < 0) return r;
  if (int r = f->sync(&why); r < 0) return r;
  if (int r = f->close(&why); r < 0) return r;
  return fs->sync_log(&why);
}

int StoreTestHooks::kvfs_unlink(HybridStore& s, const std::string& dir, const std::string& name) {
  KvFs* fs = kvfs_of(s.store_);
  if (!fs) return -ENOTSUP;
  std::string why;
  if (int r = fs->unlink(dir, name, &why); r < 0) return r;
  return fs->sync_log(&why);
}

int StoreTestHooks::kvfs_list(HybridStore& s, const std::string& dir, std::vector<std::string>* names) {
  KvFs* fs = kvfs_of(s.store_);
  if (!fs) return -ENOTSUP;
  std::string why;
  return fs->list(dir, names, &why);
}

int StoreTestHooks::kvfs_extents(HybridStore& s, const std::string& dir, const std::string& name,
                                 std::vector<Interval>* out) {
  KvFs* fs = kvfs_of(s.store_);
  if (!fs) return -ENOTSUP;
  KvFsSnapshot snap;
  if (int r = fs->check_snapshot(&snap); r < 0) return r;
  auto d = snap.state->dirs().find(dir);
  if (d == snap.state->dirs().end()) return -ENOENT;
  auto n = d->second.find(name);
  if (n == d->second.end()) return -ENOENT;
  out->clear();
  for (const KvFsExtent& e : snap.state->inodes().at(n->second).extents) out->push_back(Interval{e.offset, e.length});
  return 0;
}

int StoreTestHooks::kvfs_ring(HybridStore& s, std::vector<Interval>* out) {
  KvFs* fs = kvfs_of(s.store_);
  if (!fs) return -ENOTSUP;
  out->clear();
  for (const KvFsExtent& e : fs->journal()) out->push_back(Interval{e.offset, e.length});
  return 0;
}

}  // namespace hybridstore
