// fsck: cross-checks everything the store keeps about space and objects.
//
//  - every onode decodes, lives in an existing collection, and its extents
//    lie inside the device, on unit boundaries, each unit referenced once;
//  - the persisted allocation bitmap marks exactly the referenced units
//    (more is leaked space, less is data at risk of being overwritten);
//  - the in-memory allocator agrees with both;
//  - every omap entry belongs to an object, no two objects share an omap id;
//  - the object and byte counters match the onodes;
//  - deep: every extent reads back and matches its checksums.
#include <cstring>
#include <unordered_set>

#include "hybridstore/common/log.h"
#include "hybridstore/store_impl.h"

namespace hybridstore {

namespace {

class UnitBitmap {
 public:
  explicit UnitBitmap(uint64_t units) : bits_((units + 63) / 64, 0), units_(units) {}
  // Returns false when any unit was already set.
  bool set_range(uint64_t first, uint64_t count) {
    bool fresh = true;
    for (uint64_t u = first; u < first + count && u < units_; ++u) {
      uint64_t& w = bits_[u / 64];
      uint64_t m = 1ull << (u % 64);
      if (w & m) fresh = false;
      w |= m;
    }
    return fresh;
  }
  bool test(uint64_t u) const { return bits_[u / 64] >> (u % 64) & 1; }
  uint64_t units() const { return units_; }

 private:
  std::vector<uint64_t> bits_;
  uint64_t units_;
};

}  // namespace

int StoreImpl::fsck(bool deep, FsckReport* rep) {
  if (!mounted_) return -ENOTCONN;
  *rep = FsckReport();
  if (int r = flush(); r < 0) return r;
  auto problem = [&](std::string msg) {
    ++rep->errors;
    if (rep->problems.size() < 1000) rep->problems.push_back(std::move(msg));
  };

  std::vector<UnitBitmap> used;
  for (int t = 0; t < kNumTiers; ++t) used.emplace_back(super_.tier_size[t] / unit_[t]);
  std::unordered_set<uint64_t> nids;
  int64_t objects = 0, bytes = 0;
  std::set<CollectionId> colls;
  for (const auto& c : list_collections()) colls.insert(c);
  rep->collections = colls.size();

  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  std::string oprefix(1, kv::kOnode);
  for (it->Seek(oprefix); it->Valid() && it->key().starts_with(oprefix); it->Next()) {
    CollectionId c;
    ObjectId oid;
    if (!kv::decode_onode_key(it->key().ToStringView(), &c, &oid)) {
      problem("malformed onode key " + it->key().ToString(true));
      continue;
    }
    std::string where = oid.to_string() + " in " + c.name;
    if (!colls.count(c)) problem("object " + where + " belongs to a collection that does not exist");
    Onode o;
    std::string why;
    if (!decode_onode(it->value().ToStringView(), &o, &why)) {
      problem("object " + where + ": " + why);
      continue;
    }
    ++rep->objects;
    ++objects;
    bytes += static_cast<int64_t>(o.size);
    if (o.nid && !nids.insert(o.nid).second) problem(fmt::format("omap id {} is used by more than one object (one is {})", o.nid, where));
    for (const auto& [off, e] : o.extents.extents()) {
      ++rep->extents;
      int t = tier_index(e.tier);
      uint64_t u = unit_[t];
      if (e.physical % u || e.length % u || e.logical % u) {
        problem(fmt::format("object {}: extent at {} is not aligned to the {} unit", where, e.logical, tier_name(e.tier)));
        continue;
      }
      if (e.physical < super_.reserved[t] || e.physical + e.length > super_.tier_size[t]) {
        problem(fmt::format("object {}: extent at {} points outside the {} device", where, e.logical, tier_name(e.tier)));
        continue;
      }
      if (e.logical >= (o.size + u - 1) / u * u && !(o.size == 0 && e.logical == 0))
        problem(fmt::format("object {}: extent at {} lies past the end of the object", where, e.logical));
      if (!used[t].set_range(e.physical / u, e.length / u))
        problem(fmt::format("object {}: extent at {} ({} {}~{}) is also referenced elsewhere", where,
                            e.logical, tier_name(e.tier), e.physical, e.length));
      if (deep) {
        std::string data;
        if (read_extent_raw(e, &data) < 0)
          problem(fmt::format("object {}: data at {} fails its checksum or cannot be read", where, e.logical));
        else
          rep->bytes_verified += e.length;
      }
    }
  }
  if (!it->status().ok()) problem("iterating onodes: " + it->status().ToString());

  // Omap entries need an owner.
  std::string mprefix(1, kv::kOmap);
  for (it->Seek(mprefix); it->Valid() && it->key().starts_with(mprefix); it->Next()) {
    uint64_t nid;
    bool hdr;
    std::string_view user;
    if (!kv::decode_omap_key(it->key().ToStringView(), &nid, &hdr, &user)) {
      problem("malformed omap key " + it->key().ToString(true));
      continue;
    }
    ++rep->omap_entries;
    if (!nids.count(nid)) {
      problem(fmt::format("omap entry of id {} belongs to no object", nid));
      // Skip the rest of this id: one report per orphaned id is enough.
      it->Seek(kv::omap_nid_end(nid));
      if (!it->Valid()) break;
      it->Prev();
    }
  }

  // Persisted and in-memory allocation state against the references.
  for (int t = 0; t < kNumTiers; ++t) {
    Tier tier = static_cast<Tier>(t);
    uint64_t u = unit_[t];
    UnitBitmap persisted(used[t].units());
    std::string err;
    bool reserved_marked = false;
    int r = freelist_[t]->load(db_.get(), super_.tier_size[t],
                               [&](uint64_t off, uint64_t len) {
                                 if (off < super_.reserved[t]) reserved_marked = true;
                                 persisted.set_range(off / u, len / u);
                               },
                               &err);
    if (r < 0) {
      problem(fmt::format("{} allocation bitmap: {}", tier_name(tier), err));
      continue;
    }
    if (reserved_marked) problem(fmt::format("{} allocation bitmap marks the reserved label area", tier_name(tier)));
    UnitBitmap in_memory_free(used[t].units());
    alloc_[t]->for_each_free([&](uint64_t off, uint64_t len) { in_memory_free.set_range(off / u, len / u); });
    uint64_t leaked = 0, unmarked = 0, mem_conflict = 0;
    for (uint64_t unit = super_.reserved[t] / u; unit < used[t].units(); ++unit) {
      bool ref = used[t].test(unit), mark = persisted.test(unit), fr = in_memory_free.test(unit);
      if (mark && !ref) ++leaked;
      if (ref && !mark) ++unmarked;
      if (fr == mark) ++mem_conflict;
    }
    rep->leaked_bytes[t] = leaked * u;
    if (leaked)
      problem(fmt::format("{}: {} bytes marked allocated but referenced by no object (leaked)", tier_name(tier), leaked * u));
    if (unmarked)
      problem(fmt::format("{}: {} bytes referenced by objects but marked free", tier_name(tier), unmarked * u));
    if (mem_conflict)
      problem(fmt::format("{}: in-memory allocator disagrees with the bitmap on {} units", tier_name(tier), mem_conflict));
  }

  std::string v;
  int64_t stats[kv::kStatCount];
  if (db_->Get(rocksdb::ReadOptions(), kv::stats_key(), &v).ok() && kv::decode_stats(v, stats)) {
    if (stats[kv::kStatObjects] != objects || stats[kv::kStatBytes] != bytes)
      problem(fmt::format("statistics say {} objects / {} bytes, onodes hold {} / {}", stats[kv::kStatObjects],
                          stats[kv::kStatBytes], objects, bytes));
  } else {
    problem("statistics record missing or corrupt");
  }
  return static_cast<int>(std::min<uint64_t>(rep->errors, INT32_MAX));
}

}  // namespace hybridstore
