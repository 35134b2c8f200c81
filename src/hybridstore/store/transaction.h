// A transaction: an ordered list of ops applied atomically.
//
// The op set and semantics follow Ceph's ObjectStore::Transaction (see
// shared/docs/ceph-objectstore-contract.md, section 2.3). The whole list
// applies or nothing does; it is durable when its on_commit callbacks run.
// Unlike Ceph, which aborts the daemon on an unexpected error, the engine
// reports the failing op and leaves the store unchanged; the Ceph adapter
// turns that into Ceph's abort.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hybridstore/format/collection_id.h"
#include "hybridstore/format/object_id.h"
#include "hybridstore/format/onode.h"

namespace hybridstore {

enum class OpCode {
  kNop,
  kTouch,
  kCreate,
  kWrite,
  kZero,
  kTruncate,
  kRemove,
  kSetAttrs,
  kRmAttr,
  kRmAttrs,
  kClone,
  kCloneRange,
  kOmapSetKeys,
  kOmapRmKeys,
  kOmapRmKeyRange,
  kOmapClear,
  kOmapSetHeader,
  kMkColl,
  kRmColl,
  kCollMoveRename,
  kTryRename,
  kSplitCollection,
  kMergeCollection,
  kCollSetBits,
  kSetAllocHint,
  kMigrate,  // engine-internal: move an object's data to another tier
};
const char* op_name(OpCode c);
// Whether an op on a missing object is skipped rather than failing the
// transaction, by default: Ceph's "tolerated ENOENT" cases plus omap key
// removal. The Ceph adapter sets each op's flag to Ceph's exact list.
bool default_enoent_tolerated(OpCode c);

// A write payload in memory the caller owns (a Ceph bufferlist's buffers, a
// string): segments in order, kept alive by `owner` until the transaction is
// destroyed, and not changed meanwhile (Ceph's rule for bufferlists). The
// engine copies out of it once, into the aligned buffers it writes from.
struct ScatterData {
  std::vector<std::string_view> segments;
  std::shared_ptr<const void> owner;

  uint64_t size() const;
  bool empty() const { return size() == 0; }
  // Copies the bytes [off, off+len) to dst; the range must lie inside.
  void copy_out(uint64_t off, uint64_t len, char* dst) const;
  std::string to_string() const;
  static ScatterData of(std::string data);
  static ScatterData of(std::shared_ptr<const std::string> data);
  // A view of bytes that outlive it (no owner).
  static ScatterData view(std::string_view bytes);
};

struct Op {
  OpCode code = OpCode::kNop;
  CollectionId cid;
  ObjectId oid;
  CollectionId dst_cid;    // rename, split (dest), merge (dest)
  ObjectId dst_oid;        // clone, clone_range, rename
  uint64_t off = 0;        // write/zero/truncate(size)/clone_range src offset
  uint64_t len = 0;
  uint64_t dst_off = 0;    // clone_range
  ScatterData scatter;     // write payload
  std::string data;        // omap header
  std::shared_ptr<const std::string> shared_data;  // migrate: the object's image
  std::string_view payload() const { return shared_data ? std::string_view(*shared_data) : std::string_view(data); }
  std::map<std::string, std::string> kv;  // setattrs, omap_setkeys
  std::vector<std::string> keys;          // omap_rmkeys
  std::string name;        // rmattr; omap range first
  std::string name2;       // omap range last
  uint32_t bits = 0;       // mkcoll, split, merge, set_bits
  uint32_t rem = 0;        // split
  uint64_t expected_object_size = 0;
  uint64_t expected_write_size = 0;
  uint32_t flags = 0;      // alloc hint flags, fadvise flags
  bool enoent_ok = false;  // skipped when its object is missing (set from default_enoent_tolerated)
};

class Transaction {
 public:
  using Callback = std::function<void()>;

  void nop();
  void touch(const CollectionId& c, const ObjectId& o);
  void create(const CollectionId& c, const ObjectId& o);
  void write(const CollectionId& c, const ObjectId& o, uint64_t off, std::string data,
             uint32_t fadvise_flags = 0);
  // The same without a copy: the buffer is shared until the transaction is
  // destroyed and must not change meanwhile (Ceph's rule for bufferlists).
  void write(const CollectionId& c, const ObjectId& o, uint64_t off,
             std::shared_ptr<const std::string> data, uint32_t fadvise_flags = 0);
  // The same from scattered memory (a Ceph bufferlist), without a copy.
  void write(const CollectionId& c, const ObjectId& o, uint64_t off, ScatterData data,
             uint32_t fadvise_flags = 0);
  void zero(const CollectionId& c, const ObjectId& o, uint64_t off, uint64_t len);
  void truncate(const CollectionId& c, const ObjectId& o, uint64_t size);
  void remove(const CollectionId& c, const ObjectId& o);
  void setattr(const CollectionId& c, const ObjectId& o, const std::string& name, std::string value);
  void setattrs(const CollectionId& c, const ObjectId& o, std::map<std::string, std::string> attrs);
  void rmattr(const CollectionId& c, const ObjectId& o, const std::string& name);
  void rmattrs(const CollectionId& c, const ObjectId& o);
  void clone(const CollectionId& c, const ObjectId& src, const ObjectId& dst);
  void clone_range(const CollectionId& c, const ObjectId& src, const ObjectId& dst,
                   uint64_t src_off, uint64_t len, uint64_t dst_off);
  void omap_setkeys(const CollectionId& c, const ObjectId& o, std::map<std::string, std::string> kv);
  void omap_rmkeys(const CollectionId& c, const ObjectId& o, std::vector<std::string> keys);
  void omap_rmkeyrange(const CollectionId& c, const ObjectId& o, const std::string& first,
                       const std::string& last);  // [first, last)
  void omap_clear(const CollectionId& c, const ObjectId& o);
  void omap_setheader(const CollectionId& c, const ObjectId& o, std::string header);
  void create_collection(const CollectionId& c, uint32_t bits);
  void remove_collection(const CollectionId& c);
  void collection_move_rename(const CollectionId& src_c, const ObjectId& src,
                              const CollectionId& dst_c, const ObjectId& dst);
  void try_rename(const CollectionId& c, const ObjectId& src, const ObjectId& dst);
  void split_collection(const CollectionId& c, uint32_t bits, uint32_t rem, const CollectionId& dest);
  void merge_collection(const CollectionId& src, const CollectionId& dest, uint32_t bits);
  void collection_set_bits(const CollectionId& c, uint32_t bits);
  void set_alloc_hint(const CollectionId& c, const ObjectId& o, uint64_t expected_object_size,
                      uint64_t expected_write_size, uint32_t flags);
  // Engine-internal (HybridStore::migrate builds it): rewrite the object's
  // data, read beforehand as `image`, on `target`, provided its extent map
  // still matches `fingerprint`; otherwise the op fails with -EAGAIN.
  void migrate(const CollectionId& c, const ObjectId& o, Tier target, std::string fingerprint,
               std::shared_ptr<const std::string> image);
  // The same, rewriting only extents that lie in the device range
  // [phys_begin, phys_end) of `target` (the SSD cleaner moving live data out).
  void relocate(const CollectionId& c, const ObjectId& o, Tier target, uint64_t phys_begin, uint64_t phys_end,
                std::string fingerprint, std::shared_ptr<const std::string> image);

  // Runs once the transaction is durable (and, with on_applied, once it is
  // visible to reads — immediately after queueing, since reads see queued
  // transactions at once).
  void register_on_commit(Callback cb) { on_commit_.push_back(std::move(cb)); }
  void register_on_applied(Callback cb) { on_applied_.push_back(std::move(cb)); }
  // Appends another transaction's ops and callbacks.
  void append(Transaction&& other);

  const std::vector<Op>& ops() const { return ops_; }
  std::vector<Op>& mutable_ops() { return ops_; }
  bool empty() const { return ops_.empty(); }
  uint64_t data_bytes() const;
  std::vector<Callback> take_on_commit() { return std::move(on_commit_); }
  std::vector<Callback> take_on_applied() { return std::move(on_applied_); }

 private:
  Op& add(OpCode code, const CollectionId& c);
  std::vector<Op> ops_;
  std::vector<Callback> on_commit_;
  std::vector<Callback> on_applied_;
};

// Which op of which transaction failed, and why.
struct TxnError {
  int code = 0;          // negative errno
  int txn_index = -1;
  int op_index = -1;
  std::string op;        // op name
  std::string message;
};

}  // namespace hybridstore
