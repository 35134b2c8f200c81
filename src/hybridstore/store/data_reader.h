// Reads of object data: the bytes an onode's extents hold on the tiers'
// devices, with the deferred writes still headed there laid over them, and
// every checksum block verified (a mismatch is -EIO, never wrong bytes).
// Blocks the checksums vouched for are kept in the data cache, and a read
// the cache holds whole can be handed out as the cached bytes themselves.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "hybridstore/format/collection_id.h"
#include "hybridstore/format/object_id.h"
#include "hybridstore/format/onode.h"
#include "hsio/read_cache.h"
#include "hybridstore/space/tier_space.h"
#include "hybridstore/store/api_types.h"

namespace hybridstore {

class DeferredWriter;
class TierSet;
struct StorePerf;

class DataReader {
 public:
  DataReader(const TierSet* tiers, const DeferredWriter* deferred, StorePerf* perf)
      : tiers_(tiers), deferred_(deferred), perf_(perf) {}

  // Reads logical [off, off+len) of `o` into `out` (holes as zeros),
  // verifying checksums. The range must lie within the object's allocated
  // units or holes. `own`: the writes of the transaction reading, not on
  // the devices yet (a read-modify-write inside it); such a read is never
  // kept in the data cache. `c` and `oid` name the object in messages.
  int read(const CollectionId& c, const ObjectId& oid, const Onode& o, uint64_t off, uint64_t len, char* out,
           const std::vector<TierWrite>* own = nullptr) const;
  // One extent's data, verified.
  int read_extent(const DataExtent& e, std::string* out) const;
  // The range as pieces of the data cache, when it holds every block of it
  // and read() would have used them (no holes, no staged records over
  // them); false (and `out` unchanged) otherwise.
  bool read_cached(const Onode& o, uint64_t off, uint64_t len, std::vector<ReadPiece>* out) const;

 private:
  struct Piece;
  // The device blocks each extent's part of [off, end) needs, with the
  // deferred records over them and what the cache holds of them; holes in
  // `out` zeroed.
  std::vector<Piece> plan(const Onode& o, uint64_t off, uint64_t end, char* out, ReadCache* cache) const;
  // Reads the pieces the cache did not hold, tier by tier, neighbours as one
  // request.
  int fetch(const CollectionId& c, const ObjectId& oid, std::vector<Piece>& pieces) const;
  // Lays what is not on the devices yet over what was read: the reader's
  // own writes, then the deferred records.
  static void patch(std::vector<Piece>& pieces, const std::vector<TierWrite>* own);
  // Checks each read piece against its checksums, keeps the cacheable ones,
  // and copies the asked-for bytes into `out`.
  int deliver(const CollectionId& c, const ObjectId& oid, std::vector<Piece>& pieces, uint64_t off, uint64_t end,
              char* out, ReadCache* cache) const;

  const TierSet* tiers_;
  const DeferredWriter* deferred_;
  StorePerf* perf_;
};

}  // namespace hybridstore
