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

namespace {

bool same_layout(const DataExtent& a, const DataExtent& b) {
  return a.logical == b.logical && a.length == b.length && a.tier == b.tier && a.physical == b.physical &&
         a.csum_block == b.csum_block && a.csums.size() == b.csums.size();
}

// The extents of shard `index` (those starting in its span).
std::vector<const DataExtent*> shard_extents(const ExtentMap& m, uint64_t index) {
  const uint64_t begin = index * ExtentMap::kShardSpan, end = begin + ExtentMap::kShardSpan;
  std::vector<const DataExtent*> v = m.overlapping(begin, end);
  while (!v.empty() && v.front()->logical < begin) v.erase(v.begin());
  return v;
}

// OVERWRITEs for the blocks of `b` whose checksums differ from `a`'s.
bool overwrites_between(const DataExtent& a, const DataExtent& b, const JournalDelta& proto,
                        std::vector<JournalDelta>* out) {
  for (size_t i = 0; i < b.csums.size();) {
    if (a.csums[i] == b.csums[i]) {
      ++i;
      continue;
    }
    if (b.csum_block != kJournalBlock) return false;
    JournalDelta d = proto;
    d.kind = JournalDeltaKind::kOverwrite;
    d.logical = b.logical + i * kJournalBlock;
    d.tier = static_cast<uint8_t>(tier_index(b.tier));
    d.physical = b.physical + i * kJournalBlock;
    for (; i < b.csums.size() && a.csums[i] != b.csums[i]; ++i) d.crcs.push_back(b.csums[i]);
    out->push_back(std::move(d));
  }
  return true;
}

}  // namespace

bool onode_deltas_between(const Onode& before, const Onode& after, const std::string& key,
                          std::vector<JournalDelta>* out) {
  if (after.incarnation != before.incarnation || after.version != before.version + 1 || after.nid != before.nid ||
      after.alloc_hint_flags != before.alloc_hint_flags ||
      after.expected_object_size != before.expected_object_size ||
      after.expected_write_size != before.expected_write_size || after.extents.size() != before.extents.size() ||
      after.extents.bytes_by_tier().by_id != before.extents.bytes_by_tier().by_id)
    return false;
  JournalDelta proto;
  proto.key = key;
  proto.version = after.version;
  proto.incarnation = after.incarnation;
  std::vector<JournalDelta> made;
  // A shard no one changed is the same object in both maps (copies share
  // it), so only the shards the transaction touched are compared.
  const auto hb = before.extents.shard_handles(), ha = after.extents.shard_handles();
  if (hb.size() != ha.size()) return false;
  for (size_t s = 0; s < ha.size(); ++s) {
    if (hb[s].first != ha[s].first) return false;
    if (hb[s].second == ha[s].second) continue;
    const auto eb = shard_extents(before.extents, hb[s].first), ea = shard_extents(after.extents, ha[s].first);
    if (eb.size() != ea.size()) return false;
    for (size_t i = 0; i < ea.size(); ++i)
      if (!same_layout(*eb[i], *ea[i]) || !overwrites_between(*eb[i], *ea[i], proto, &made)) return false;
  }
  for (const auto& [name, value] : after.attrs) {
    auto it = before.attrs.find(name);
    if (it != before.attrs.end() && it->second == value) continue;
    JournalDelta d = proto;
    d.kind = JournalDeltaKind::kSetAttr;
    d.name = name;
    d.value = value;
    made.push_back(std::move(d));
  }
  for (const auto& [name, value] : before.attrs)
    if (!after.attrs.count(name)) {
      JournalDelta d = proto;
      d.kind = JournalDeltaKind::kRmAttr;
      d.name = name;
      made.push_back(std::move(d));
    }
  if (after.size != before.size || made.empty()) {
    JournalDelta d = proto;
    d.kind = JournalDeltaKind::kSetSize;
    d.size = after.size;
    made.push_back(std::move(d));
  }
  for (auto& d : made) out->push_back(std::move(d));
  return true;
}

}  // namespace hybridstore
