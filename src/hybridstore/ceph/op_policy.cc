#include "hybridstore/ceph/op_policy.h"

#include <cerrno>

#include "hybridstore/store/hybrid_store.h"

namespace hybridstore::ceph_adapter {

namespace {

using D = Disposition;

// The contract's table (shared/docs/ceph-objectstore-contract.md, 2.3): the
// ENOENT column is exactly the ops it lists as tolerated.
const std::vector<OpRule> kRules = {
    {CephOp::kNop, "nop", D::kDrop, false, "no-op"},
    {CephOp::kCreate, "create", D::kApply, false, nullptr},
    {CephOp::kCollMove, "coll_move", D::kApply, true,
     "deprecated: a move of the object under the same name, as collection_move_rename"},
    {CephOp::kTouch, "touch", D::kApply, false, nullptr},
    {CephOp::kWrite, "write", D::kApply, false, nullptr},
    {CephOp::kZero, "zero", D::kApply, false, nullptr},
    {CephOp::kTruncate, "truncate", D::kApply, true, nullptr},
    {CephOp::kRemove, "remove", D::kApply, true, nullptr},
    {CephOp::kSetAttr, "setattr", D::kApply, false, nullptr},
    {CephOp::kSetAttrs, "setattrs", D::kApply, false, nullptr},
    {CephOp::kRmAttr, "rmattr", D::kApply, false, nullptr},
    {CephOp::kClone, "clone", D::kApply, false, nullptr},
    {CephOp::kCloneRange, "clonerange", D::kApply, false,
     "deprecated: clone_range with the destination offset equal to the source offset"},
    {CephOp::kTrimCache, "trimcache", D::kDrop, false, "deprecated no-op"},
    {CephOp::kMkColl, "mkcoll", D::kApply, false, nullptr},
    {CephOp::kRmColl, "rmcoll", D::kApply, false, nullptr},
    {CephOp::kCollAdd, "collection_add", D::kReject, false,
     "deprecated: an object in two collections at once has no representation here"},
    {CephOp::kCollRemove, "collection_remove", D::kApply, true,
     "deprecated: removal of the object from its only collection, as remove"},
    {CephOp::kCollSetAttr, "collection_setattr", D::kReject, false,
     "deprecated: collections carry no attributes"},
    {CephOp::kCollRmAttr, "collection_rmattr", D::kReject, false,
     "deprecated: collections carry no attributes"},
    {CephOp::kCollSetAttrs, "collection_setattrs", D::kReject, false,
     "deprecated: collections carry no attributes"},
    {CephOp::kRmAttrs, "rmattrs", D::kApply, true, nullptr},
    {CephOp::kCollRename, "collection_rename", D::kReject, false,
     "deprecated: collections are renamed by split and merge only"},
    {CephOp::kCloneRange2, "clonerange2", D::kApply, false, nullptr},
    {CephOp::kOmapClear, "omap_clear", D::kApply, true, nullptr},
    {CephOp::kOmapSetKeys, "omap_setkeys", D::kApply, false, nullptr},
    {CephOp::kOmapRmKeys, "omap_rmkeys", D::kApply, false, nullptr},
    {CephOp::kOmapSetHeader, "omap_setheader", D::kApply, false, nullptr},
    {CephOp::kSplitCollection, "split_collection", D::kReject, false,
     "deprecated: the form without a pre-created destination; Pacific sends split_collection2"},
    {CephOp::kSplitCollection2, "split_collection2", D::kApply, false, nullptr},
    {CephOp::kOmapRmKeyRange, "omap_rmkeyrange", D::kApply, false, nullptr},
    {CephOp::kCollMoveRename, "collection_move_rename", D::kApply, true, nullptr},
    {CephOp::kSetAllocHint, "set_alloc_hint", D::kApply, true, nullptr},
    {CephOp::kCollHint, "collection_hint", D::kDrop, false,
     "advice (expected number of objects): placement does not need it"},
    {CephOp::kTryRename, "try_rename", D::kApply, true, nullptr},
    {CephOp::kCollSetBits, "collection_set_bits", D::kApply, false, nullptr},
    {CephOp::kMergeCollection, "merge_collection", D::kApply, false, nullptr},
};

}  // namespace

const std::vector<OpRule>& op_rules() { return kRules; }

const OpRule* find_op_rule(uint32_t code) {
  for (const auto& r : kRules)
    if (static_cast<uint32_t>(r.op) == code) return &r;
  return nullptr;
}

int translate_op(DecodedOp&& d, uint32_t fadvise_flags, Transaction* t, std::string* why) {
  const OpRule* rule = find_op_rule(d.code);
  if (!rule) {
    *why = "unknown transaction op code " + std::to_string(d.code);
    return -EINVAL;
  }
  if (rule->disposition == Disposition::kDrop) return 0;
  if (rule->disposition == Disposition::kReject) {
    *why = std::string(rule->name) + " is not supported: " + rule->why;
    return -EOPNOTSUPP;
  }
  const size_t first = t->ops().size();
  switch (static_cast<CephOp>(d.code)) {
    case CephOp::kCreate: t->create(d.cid, d.oid); break;
    case CephOp::kTouch: t->touch(d.cid, d.oid); break;
    case CephOp::kWrite: t->write(d.cid, d.oid, d.off, std::move(d.data), fadvise_flags); break;
    case CephOp::kZero: t->zero(d.cid, d.oid, d.off, d.len); break;
    case CephOp::kTruncate: t->truncate(d.cid, d.oid, d.off); break;
    case CephOp::kRemove:
    case CephOp::kCollRemove: t->remove(d.cid, d.oid); break;
    case CephOp::kSetAttr: t->setattr(d.cid, d.oid, d.name, std::move(d.blob)); break;
    case CephOp::kSetAttrs: t->setattrs(d.cid, d.oid, std::move(d.kv)); break;
    case CephOp::kRmAttr: t->rmattr(d.cid, d.oid, d.name); break;
    case CephOp::kRmAttrs: t->rmattrs(d.cid, d.oid); break;
    case CephOp::kClone: t->clone(d.cid, d.oid, d.dest_oid); break;
    case CephOp::kCloneRange: t->clone_range(d.cid, d.oid, d.dest_oid, d.off, d.len, d.off); break;
    case CephOp::kCloneRange2: t->clone_range(d.cid, d.oid, d.dest_oid, d.off, d.len, d.dest_off); break;
    case CephOp::kMkColl: t->create_collection(d.cid, d.bits); break;
    case CephOp::kRmColl: t->remove_collection(d.cid); break;
    case CephOp::kOmapClear: t->omap_clear(d.cid, d.oid); break;
    case CephOp::kOmapSetKeys: t->omap_setkeys(d.cid, d.oid, std::move(d.kv)); break;
    case CephOp::kOmapRmKeys: t->omap_rmkeys(d.cid, d.oid, std::move(d.keys)); break;
    case CephOp::kOmapSetHeader: t->omap_setheader(d.cid, d.oid, std::move(d.blob)); break;
    case CephOp::kOmapRmKeyRange: t->omap_rmkeyrange(d.cid, d.oid, d.name, d.name2); break;
    case CephOp::kSplitCollection2: t->split_collection(d.cid, d.bits, d.rem, d.dest_cid); break;
    case CephOp::kMergeCollection: t->merge_collection(d.cid, d.dest_cid, d.bits); break;
    case CephOp::kCollMove:
      // The deprecated move keeps the object's name: old collection (cid) to
      // the new one (dest_cid).
      t->collection_move_rename(d.cid, d.oid, d.dest_cid, d.oid);
      break;
    case CephOp::kCollMoveRename: t->collection_move_rename(d.cid, d.oid, d.dest_cid, d.dest_oid); break;
    case CephOp::kTryRename: t->try_rename(d.cid, d.oid, d.dest_oid); break;
    case CephOp::kCollSetBits: t->collection_set_bits(d.cid, d.bits); break;
    case CephOp::kSetAllocHint:
      t->set_alloc_hint(d.cid, d.oid, d.expected_object_size, d.expected_write_size, d.alloc_hint_flags);
      break;
    default:
      *why = std::string("no translation for ") + rule->name;
      return -EINVAL;
  }
  // Ceph's list of tolerated cases, not the engine's own default.
  for (size_t i = first; i < t->ops().size(); ++i) t->mutable_ops()[i].enoent_ok = rule->enoent_tolerated;
  return 0;
}

bool error_is_tolerated(uint32_t code, int err) {
  const OpRule* rule = find_op_rule(code);
  if (!rule) return false;
  if (err == -ENOENT) return rule->enoent_tolerated;
  // rmattr of an attribute that is not there.
  return err == -ENODATA && rule->op == CephOp::kRmAttr;
}

uint32_t engine_read_flags(uint32_t ceph_op_flags) {
  uint32_t f = 0;
  if (ceph_op_flags & (kFadviseDontNeed | kFadviseNoCache | kBypassCleanCache)) f |= kReadNoHeat | kReadUncached;
  return f;
}

}  // namespace hybridstore::ceph_adapter
