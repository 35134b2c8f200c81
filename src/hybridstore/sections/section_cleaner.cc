#include "hybridstore/sections/section_cleaner.h"

#include <algorithm>

#include "hscommon/log.h"
#include "hybridstore/sections/ssd_sections.h"

namespace hybridstore {

void SectionCleaner::find_owners(const std::unordered_set<uint64_t>& wanted, Owners* out) {
  store_->for_each_object([&](const CollectionId& c, const ObjectId& o, const ObjectStat& st) {
    if (!st.bytes_on[tier_]) return;
    const uint64_t owner = ObjectIdHash()(o);
    if (wanted.count(owner)) (*out)[owner].emplace_back(c, o);
  });
}

int SectionCleaner::run_pass(uint64_t max_bytes, bool force, CleanerReport* rep) {
  *rep = CleanerReport();
  if (!force && !sections_->cleaning_needed(started_)) {
    started_ = false;
    return 0;
  }
  started_ = true;
  // Writes still staged in a victim's neighbourhood must be settled first,
  // so that live ranges and extents agree.
  if (int r = store_->flush(); r < 0) return r;
  std::vector<uint32_t> victims = sections_->begin_cleaning(4);
  // Every victim's live data first, so that one scan finds all their owners.
  // A range that changes before its turn is the store's to notice:
  // relocate moves what the object holds in the unit then.
  std::vector<std::vector<SsdSections::Live>> lives;
  std::unordered_set<uint64_t> wanted;
  for (uint32_t eu : victims) {
    lives.push_back(sections_->live_in(eu));
    for (const auto& l : lives.back()) wanted.insert(l.owner);
  }
  Owners owners;
  if (!wanted.empty()) {
    find_owners(wanted, &owners);
    ++rep->owner_scans;
    for (const auto& [id, objects] : owners) rep->owners_held += objects.size();
  }
  for (size_t v = 0; v < victims.size(); ++v) {
    const uint32_t eu = victims[v];
    const auto& live = lives[v];
    ++rep->victims;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const auto& l : live) {
      lo = std::min(lo, l.offset);
      hi = std::max(hi, l.offset + l.length);
    }
    for (const auto& l : live) {
      if (rep->bytes_moved >= max_bytes) break;
      auto it = owners.find(l.owner);
      if (it == owners.end()) {
        ++rep->skipped;
        continue;
      }
      bool moved = false;
      for (const auto& [c, o] : it->second) {
        int r = store_->relocate(c, o, tier_, lo, hi);
        if (r == -EAGAIN) r = store_->relocate(c, o, tier_, lo, hi);  // written meanwhile: once more
        if (r == 0) moved = true;
      }
      if (moved) {
        ++rep->objects_moved;
        rep->bytes_moved += l.length;
      } else {
        ++rep->skipped;
      }
    }
    // Freed space reaches the sections once the moves are durable.
    store_->flush();
    if (sections_->erase_unit_free(eu))
      ++rep->units_freed;
    else
      sections_->end_cleaning(eu);
  }
  if (rep->victims)
    HS_INFO("{} cleaner: {} victims, {} units freed, {} objects moved ({} bytes), {} skipped", tier_name(tier_),
            rep->victims, rep->units_freed, rep->objects_moved, rep->bytes_moved, rep->skipped);
  return 0;
}

}  // namespace hybridstore
