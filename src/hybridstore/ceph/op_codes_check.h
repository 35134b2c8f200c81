// Compile-time proof, inside a Ceph tree, that the adapter's op codes
// (op_policy.h, compiled without Ceph) are Ceph's own.
#pragma once
#include "os/Transaction.h"

#include "hybridstore/ceph/op_policy.h"

namespace hybridstore::ceph_adapter {

static_assert(static_cast<uint32_t>(CephOp::kNop) == ceph::os::Transaction::OP_NOP);
static_assert(static_cast<uint32_t>(CephOp::kCreate) == ceph::os::Transaction::OP_CREATE);
static_assert(static_cast<uint32_t>(CephOp::kCollMove) == ceph::os::Transaction::OP_COLL_MOVE);
static_assert(static_cast<uint32_t>(CephOp::kTouch) == ceph::os::Transaction::OP_TOUCH);
static_assert(static_cast<uint32_t>(CephOp::kWrite) == ceph::os::Transaction::OP_WRITE);
static_assert(static_cast<uint32_t>(CephOp::kZero) == ceph::os::Transaction::OP_ZERO);
static_assert(static_cast<uint32_t>(CephOp::kTruncate) == ceph::os::Transaction::OP_TRUNCATE);
static_assert(static_cast<uint32_t>(CephOp::kRemove) == ceph::os::Transaction::OP_REMOVE);
static_assert(static_cast<uint32_t>(CephOp::kSetAttr) == ceph::os::Transaction::OP_SETATTR);
static_assert(static_cast<uint32_t>(CephOp::kSetAttrs) == ceph::os::Transaction::OP_SETATTRS);
static_assert(static_cast<uint32_t>(CephOp::kRmAttr) == ceph::os::Transaction::OP_RMATTR);
static_assert(static_cast<uint32_t>(CephOp::kClone) == ceph::os::Transaction::OP_CLONE);
static_assert(static_cast<uint32_t>(CephOp::kCloneRange) == ceph::os::Transaction::OP_CLONERANGE);
static_assert(static_cast<uint32_t>(CephOp::kTrimCache) == ceph::os::Transaction::OP_TRIMCACHE);
static_assert(static_cast<uint32_t>(CephOp::kMkColl) == ceph::os::Transaction::OP_MKCOLL);
static_assert(static_cast<uint32_t>(CephOp::kRmColl) == ceph::os::Transaction::OP_RMCOLL);
static_assert(static_cast<uint32_t>(CephOp::kCollAdd) == ceph::os::Transaction::OP_COLL_ADD);
static_assert(static_cast<uint32_t>(CephOp::kCollRemove) == ceph::os::Transaction::OP_COLL_REMOVE);
static_assert(static_cast<uint32_t>(CephOp::kCollSetAttr) == ceph::os::Transaction::OP_COLL_SETATTR);
static_assert(static_cast<uint32_t>(CephOp::kCollRmAttr) == ceph::os::Transaction::OP_COLL_RMATTR);
static_assert(static_cast<uint32_t>(CephOp::kCollSetAttrs) == ceph::os::Transaction::OP_COLL_SETATTRS);
static_assert(static_cast<uint32_t>(CephOp::kRmAttrs) == ceph::os::Transaction::OP_RMATTRS);
static_assert(static_cast<uint32_t>(CephOp::kCollRename) == ceph::os::Transaction::OP_COLL_RENAME);
static_assert(static_cast<uint32_t>(CephOp::kCloneRange2) == ceph::os::Transaction::OP_CLONERANGE2);
static_assert(static_cast<uint32_t>(CephOp::kOmapClear) == ceph::os::Transaction::OP_OMAP_CLEAR);
static_assert(static_cast<uint32_t>(CephOp::kOmapSetKeys) == ceph::os::Transaction::OP_OMAP_SETKEYS);
static_assert(static_cast<uint32_t>(CephOp::kOmapRmKeys) == ceph::os::Transaction::OP_OMAP_RMKEYS);
static_assert(static_cast<uint32_t>(CephOp::kOmapSetHeader) == ceph::os::Transaction::OP_OMAP_SETHEADER);
static_assert(static_cast<uint32_t>(CephOp::kSplitCollection) == ceph::os::Transaction::OP_SPLIT_COLLECTION);
static_assert(static_cast<uint32_t>(CephOp::kSplitCollection2) == ceph::os::Transaction::OP_SPLIT_COLLECTION2);
static_assert(static_cast<uint32_t>(CephOp::kOmapRmKeyRange) == ceph::os::Transaction::OP_OMAP_RMKEYRANGE);
static_assert(static_cast<uint32_t>(CephOp::kCollMoveRename) == ceph::os::Transaction::OP_COLL_MOVE_RENAME);
static_assert(static_cast<uint32_t>(CephOp::kSetAllocHint) == ceph::os::Transaction::OP_SETALLOCHINT);
static_assert(static_cast<uint32_t>(CephOp::kCollHint) == ceph::os::Transaction::OP_COLL_HINT);
static_assert(static_cast<uint32_t>(CephOp::kTryRename) == ceph::os::Transaction::OP_TRY_RENAME);
static_assert(static_cast<uint32_t>(CephOp::kCollSetBits) == ceph::os::Transaction::OP_COLL_SET_BITS);
static_assert(static_cast<uint32_t>(CephOp::kMergeCollection) == ceph::os::Transaction::OP_MERGE_COLLECTION);

}  // namespace hybridstore::ceph_adapter
