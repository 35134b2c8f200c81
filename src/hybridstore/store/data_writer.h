// How a transaction changes object data. New data goes to new space,
// always: committed data is never overwritten before the metadata that
// stops referencing it is durable. Which tier takes it is placement's
// (tier/placement.h) with small writes absorbed by the fastest tier and
// full tiers spilling to the next; how it reaches the device is that tier's
// space's (TierSpace::write_new). Small overwrites of data a tier already
// holds are written in place, as deferred records, where its space says so.
//
// Granularity: new data is written in units of the target tier's allocation
// unit. A range cutting into an extent whose tier has a coarser unit is first
// widened to that unit, so every extent always starts and ends on its own
// unit and every cut lands on a checksum-block boundary.
//
// Everything goes into the transaction (TxnContext): the space it took and
// freed, its records, and the device writes write_pending() makes once
// every op succeeded.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hscommon/config.h"
#include "hybridstore/format/collection_id.h"
#include "hybridstore/format/object_id.h"
#include "hybridstore/format/onode.h"
#include "hybridstore/store/transaction.h"
#include "hybridstore/store/txn_context.h"
#include "hybridstore/tier/placement.h"

namespace hybridstore {

class DataReader;
class DeferredWriter;
class ObjectHeat;
class TierSet;
class WriteTracker;
struct StorePerf;

class DataWriter {
 public:
  DataWriter(TierSet* tiers, const DataReader* reader, DeferredWriter* deferred, ObjectHeat* heat,
             WriteTracker* tracker, const Config& cfg, StorePerf* perf, bool ring_data);

  // Whether a write of `len` bytes at `off` into `o` may be absorbed by the
  // fastest tier though the object lives on a slower one: a small write
  // that does not continue the object's previous one, into a tier the
  // fastest absorbs for (hybridstore_tier_absorb). Asked before the write
  // is noted in the object's heat.
  bool absorbable(const CollectionId& c, const ObjectId& oid, const Onode& o, uint64_t off, uint64_t len) const;
  // Writes `data` at `off` of `o`.
  int write(TxnContext& tx, const CollectionId& c, const ObjectId& oid, Onode& o, uint64_t off,
            const ScatterData& data, bool absorbable = false);
  int write(TxnContext& tx, const CollectionId& c, const ObjectId& oid, Onode& o, uint64_t off,
            std::string_view data);
  int zero(TxnContext& tx, const CollectionId& c, const ObjectId& oid, Onode& o, uint64_t off, uint64_t len);
  int truncate(TxnContext& tx, const CollectionId& c, const ObjectId& oid, Onode& o, uint64_t size);
  // Frees all of the object's data.
  void release_all(TxnContext& tx, Onode& o);
  // The data of a migrate or relocate op: what moves of `o` goes to the
  // op's tier, from the image the op carries (checked against the
  // checksums it replaces).
  int move(TxnContext& tx, const CollectionId& c, const Op& op, Onode& o, std::string* why);
  // A clone's data: every extent of `src` copied into `dst` (empty), each on
  // its source's tier or the next with room.
  int copy(TxnContext& tx, const CollectionId& c, const ObjectId& src_oid, const Onode& src, const ObjectId& dst_oid,
           Onode& dst, std::string* why);
  // clone_range's data: [op.off, op.off + op.len) of `src` (a snapshot of
  // the source as it was) to op.dst_off of `dst`, holes staying holes.
  int copy_range(TxnContext& tx, const CollectionId& c, const Op& op, const Onode& src, Onode& dst,
                 std::string* why);

  // Writes the transaction's new data to the devices; called once all ops
  // succeeded. Large writes of a tier go on while the transaction is
  // queued (its commit waits for them), unless the space needs them made
  // before (TierWrite::before_queue).
  int write_pending(TxnContext& tx);

 private:
  // Puts `len` bytes of `data` (a multiple of the tier's unit) in new space
  // on `tier` (no spill), the way the tier's space writes new data, and
  // records the space in the transaction.
  int allocate_on(TxnContext& tx, Tier tier, uint64_t len, uint64_t hint, std::vector<PExtent>* out,
                  const CollectionId& c, const ObjectId& oid, uint64_t object_size, const char* data);
  void release(TxnContext& tx, const PExtent& e);
  // The extents, with their checksums, of the data in `buf` (taken over and
  // kept until the writes out of it are made) placed at `where`, starting at
  // logical offset `logical`: added to `into`.
  int add_extents(TxnContext& tx, Tier tier, uint64_t logical, AlignedBuffer buf, uint64_t len,
                  const std::vector<PExtent>& where, ExtentMap* into);
  // Overwrites [a, a+len) of `o` in place through deferred writes; the range
  // is covered by extents on `tier` whose boundaries it respects.
  void overwrite_in_place(TxnContext& tx, Tier tier, Onode& o, uint64_t a, const char* buf, uint64_t len);
  // The tier a write to `o` reaching `end` prefers, and whether it is an
  // absorbed one.
  Tier preferred_tier(const CollectionId& c, const ObjectId& oid, const Onode& o, uint64_t end, uint64_t len,
                      bool absorbable, bool* absorbed) const;
  // [*a, *b) widened to the unit of any coarser-grained extent of `o` it cuts into.
  void widen_to_units(const Onode& o, uint64_t* a, uint64_t* b) const;
  // True when the fastest tier has room to absorb `len` more bytes.
  bool fastest_can_absorb(uint64_t len) const;

  TierSet* tiers_;
  const DataReader* reader_;
  DeferredWriter* deferred_;
  ObjectHeat* heat_;
  WriteTracker* tracker_;
  StorePerf* perf_;
  TierPlacement placement_;
  // A transaction's writes to new space of a tier, from this many bytes on,
  // go on while it is queued (hybridstore_async_write_min; 0 = never).
  uint64_t async_write_min_;
  const bool cut_at_shards_;  // hybridstore_extent_map_inline_max > 0
  const uint64_t absorb_max_;        // hybridstore_tier_absorb_max
  const double absorb_min_free_;     // hybridstore_tier_absorb_min_free
  const bool ring_data_;             // small_writes_in_ring: whole blocks staged in the journal
  // By tier id: the fastest tier absorbs small writes into objects there
  // (hybridstore_tier_absorb, and absorb_pays of the devices' media).
  PerTier<bool> absorb_from_;
};

}  // namespace hybridstore
