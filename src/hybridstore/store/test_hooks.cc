#include "hybridstore/store/test_hooks.h"

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

size_t StoreTestHooks::cached_onodes(HybridStore& s) { return s.store_->onodes().cached_count(); }

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

}  // namespace hybridstore
