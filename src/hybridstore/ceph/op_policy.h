// How the Ceph adapter treats each op of a Ceph ObjectStore::Transaction.
//
// This part knows Ceph's op codes and the contract's rules but no Ceph type,
// so it is compiled and tested with the engine in every build; the adapter
// (hybrid_object_store.cc, built only inside a Ceph tree) decodes a Ceph op
// into a DecodedOp and hands it to translate_op(). When the adapter is built
// in a Ceph tree, every code below is checked against Ceph's own enum at
// compile time (ceph_op_codes_check.h).
//
// Error policy, as the OSD expects it (contract, sections 2.3 and 2.4):
//  - ops on a missing object that Ceph defines as no-ops ("tolerated ENOENT")
//    are skipped inside the engine, so the rest of the transaction applies;
//  - a missing attribute in rmattr is not an error (the engine returns 0);
//  - every other failure means the OSD handed us a transaction it believes
//    valid: the adapter aborts the daemon before anything of it is applied
//    (the engine applies a transaction all or nothing), printing the op.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hybridstore/store/transaction.h"

namespace hybridstore::ceph_adapter {

// Ceph's Transaction op codes. The values are the wire format of
// transactions the OSD ships to replicas, so they never change.
enum class CephOp : uint32_t {
  kNop = 0,
  kCreate = 7,
  kCollMove = 8,  // deprecated
  kTouch = 9,
  kWrite = 10,
  kZero = 11,
  kTruncate = 12,
  kRemove = 13,
  kSetAttr = 14,
  kSetAttrs = 15,
  kRmAttr = 16,
  kClone = 17,
  kCloneRange = 18,  // deprecated
  kTrimCache = 19,   // deprecated
  kMkColl = 20,
  kRmColl = 21,
  kCollAdd = 22,        // deprecated
  kCollRemove = 23,     // deprecated
  kCollSetAttr = 24,    // deprecated
  kCollRmAttr = 25,     // deprecated
  kCollSetAttrs = 26,   // deprecated
  kRmAttrs = 28,
  kCollRename = 29,     // deprecated
  kCloneRange2 = 30,
  kOmapClear = 31,
  kOmapSetKeys = 32,
  kOmapRmKeys = 33,
  kOmapSetHeader = 34,
  kSplitCollection = 35,  // deprecated
  kSplitCollection2 = 36,
  kOmapRmKeyRange = 37,
  kCollMoveRename = 38,
  kSetAllocHint = 39,
  kCollHint = 40,
  kTryRename = 41,
  kCollSetBits = 42,
  kMergeCollection = 43,
};

// What happens to an op once its arguments are decoded (every op's payload
// is always decoded, so the ops after it decode from the right place).
enum class Disposition {
  kApply,   // becomes an engine op
  kDrop,    // advice or a no-op: decoded and dropped
  kReject,  // has no meaning in this store: the transaction is refused (abort)
};

struct OpRule {
  CephOp op;
  const char* name;
  Disposition disposition;
  bool enoent_tolerated;  // skipped when its object (or source) is missing
  const char* why;        // for kDrop and kReject: the reason, for logs and docs
};

// One rule per op code Ceph defines; nullptr for a code Ceph does not have.
const OpRule* find_op_rule(uint32_t code);
const std::vector<OpRule>& op_rules();

// A Ceph op with its arguments decoded into engine types. Only the fields
// the op carries are set.
struct DecodedOp {
  uint32_t code = 0;
  CollectionId cid;
  ObjectId oid;
  CollectionId dest_cid;
  ObjectId dest_oid;
  uint64_t off = 0;
  uint64_t len = 0;
  uint64_t dest_off = 0;
  uint32_t bits = 0;
  uint32_t rem = 0;
  uint64_t expected_object_size = 0;
  uint64_t expected_write_size = 0;
  uint32_t alloc_hint_flags = 0;
  uint32_t hint_type = 0;  // OP_COLL_HINT
  std::string name;        // attr name, omap range first
  std::string name2;       // omap range last
  ScatterData data;        // write payload (shares the bufferlist's memory)
  std::string blob;        // setattr value, omap header
  std::map<std::string, std::string> kv;  // setattrs, omap_setkeys
  std::vector<std::string> keys;          // omap_rmkeys
};

// Appends the engine op(s) for `d` to `out`; fadvise_flags is the
// transaction's fadvise word. Returns 0, or -EOPNOTSUPP for a rejected op
// (deprecated codes the OSD never sends) and -EINVAL for an unknown code,
// with *why saying which.
int translate_op(DecodedOp&& d, uint32_t fadvise_flags, Transaction* out, std::string* why);

// True when the error the engine reported for op `code` is one Ceph's
// ObjectStore absorbs (never true for anything the engine reports today,
// since tolerated cases are skipped inside it; kept as the single place that
// says so, for the adapter's abort path and for tests).
bool error_is_tolerated(uint32_t code, int err);

// Read fadvise flags (CEPH_OSD_OP_FLAG_*) that mark a read that must not
// count as a client access: scrub and recovery reads.
constexpr uint32_t kFadviseDontNeed = 0x20;
constexpr uint32_t kFadviseNoCache = 0x40;
constexpr uint32_t kBypassCleanCache = 0x100;
uint32_t engine_read_flags(uint32_t ceph_op_flags);

}  // namespace hybridstore::ceph_adapter
