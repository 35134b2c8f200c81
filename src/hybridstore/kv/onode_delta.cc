#include "hybridstore/kv/onode_delta.h"

#include <fmt/format.h>

#include <vector>

namespace hybridstore {

const char* onode_delta_result_name(OnodeDeltaResult r) {
  switch (r) {
    case OnodeDeltaResult::kApplied: return "applied";
    case OnodeDeltaResult::kIncluded: return "included";
    case OnodeDeltaResult::kOtherLife: return "other life";
    case OnodeDeltaResult::kGap: return "gap";
    case OnodeDeltaResult::kMismatch: return "mismatch";
  }
  return "?";
}

namespace {

// Where each block of an OVERWRITE goes in `o`'s map: the extent starting
// at `starts[i]` and the checksum index within it. Checked in full before
// anything changes, so a delta that does not fit leaves the onode whole.
bool locate_blocks(const Onode& o, const JournalDelta& d, std::vector<std::pair<uint64_t, size_t>>* where,
                   std::string* why) {
  const uint64_t begin = d.logical;
  const uint64_t end = d.logical + d.crcs.size() * kJournalBlock;
  for (uint64_t i = 0; i < d.crcs.size(); ++i) {
    const uint64_t at = begin + i * kJournalBlock;
    const auto hits = o.extents.overlapping(at, at + kJournalBlock);
    if (hits.size() != 1 || hits[0]->logical > at || hits[0]->logical_end() < at + kJournalBlock) {
      *why = fmt::format("block at {} of an overwrite of {}~{} is not inside one extent", at, begin, end - begin);
      return false;
    }
    const DataExtent& e = *hits[0];
    if (e.csum_block != kJournalBlock) {
      *why = fmt::format("the extent at {} has {}-byte checksum blocks, not the delta's 4 KiB", e.logical,
                         e.csum_block);
      return false;
    }
    if (tier_index(e.tier) != d.tier || e.physical + (at - e.logical) != d.physical + i * kJournalBlock) {
      *why = fmt::format("block at {}: the delta's data went to {}:{}, the extent holds it at {}:{}", at, d.tier,
                         d.physical + i * kJournalBlock, tier_index(e.tier), e.physical + (at - e.logical));
      return false;
    }
    where->emplace_back(e.logical, static_cast<size_t>((at - e.logical) / kJournalBlock));
  }
  return true;
}

}  // namespace

OnodeDeltaResult apply_onode_deltas(Onode* o, const std::vector<const JournalDelta*>& deltas, std::string* why) {
  if (deltas.empty()) {
    *why = "no deltas";
    return OnodeDeltaResult::kMismatch;
  }
  const JournalDelta& first = *deltas.front();
  for (const JournalDelta* d : deltas) {
    if (d->kind == JournalDeltaKind::kRingData) {
      *why = "ring data changes no onode";
      return OnodeDeltaResult::kMismatch;
    }
    if (d->key != first.key || d->incarnation != first.incarnation || d->version != first.version) {
      *why = fmt::format("one transaction's deltas name different objects or versions ({} v{}, {} v{})",
                         first.incarnation, first.version, d->incarnation, d->version);
      return OnodeDeltaResult::kMismatch;
    }
  }
  if (first.incarnation != o->incarnation) return OnodeDeltaResult::kOtherLife;
  if (first.version <= o->version) return OnodeDeltaResult::kIncluded;
  if (first.version != o->version + 1) {
    *why = fmt::format("deltas make version {} of an onode at version {}", first.version, o->version);
    return OnodeDeltaResult::kGap;
  }
  // Every block located first: the layout is the same before and after
  // (checksums, attributes and size change, extents do not).
  std::vector<std::vector<std::pair<uint64_t, size_t>>> where(deltas.size());
  for (size_t k = 0; k < deltas.size(); ++k) {
    const JournalDelta& d = *deltas[k];
    if (d.kind != JournalDeltaKind::kOverwrite) continue;
    if (d.crcs.empty()) {
      *why = "an overwrite of no blocks";
      return OnodeDeltaResult::kMismatch;
    }
    if (!locate_blocks(*o, d, &where[k], why)) return OnodeDeltaResult::kMismatch;
  }
  for (size_t k = 0; k < deltas.size(); ++k) {
    const JournalDelta& d = *deltas[k];
    switch (d.kind) {
      case JournalDeltaKind::kOverwrite:
        for (size_t i = 0; i < where[k].size(); ++i)
          o->extents.mutable_extent(where[k][i].first)->csums[where[k][i].second] = d.crcs[i];
        break;
      case JournalDeltaKind::kSetAttr:
        o->attrs[d.name] = d.value;
        break;
      case JournalDeltaKind::kRmAttr:
        o->attrs.erase(d.name);
        break;
      case JournalDeltaKind::kSetSize:
        o->size = d.size;
        break;
      case JournalDeltaKind::kRingData:
        break;
    }
  }
  o->version = first.version;
  return OnodeDeltaResult::kApplied;
}

}  // namespace hybridstore
