// fsck and repair: cross-check everything the store keeps about space and
// objects, and (repair) put it back in order.
//
// Checks:
//  - every onode decodes, lives in an existing collection, and its extents
//    lie inside the device, on unit boundaries, each unit referenced once;
//  - the persisted allocation bitmap marks exactly the referenced units
//    (more is leaked space, less is data at risk of being overwritten);
//  - the in-memory allocator agrees with both;
//  - every omap entry belongs to an object, no two objects share an omap id;
//  - the object and byte counters match the onodes;
//  - deep: every extent reads back and matches its checksums.
//
// Repair fixes what the scan can attribute: unreadable onodes are dropped,
// objects of a missing collection get the collection back, bad or doubly
// referenced extents are cut out of the object that holds them (those bytes
// read as zeros afterwards), a second owner of an omap id loses the link,
// orphaned omap entries are deleted, the bitmap is made to match the
// references exactly (leaked space returns), counters are rewritten. Every
// change is printed. Data that fails its checksum is reported, not changed:
// the bytes are gone and only a replica can bring them back.
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "hscommon/log.h"
#include "hsio/read_cache.h"
#include "hybridstore/store/store_impl.h"

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
  bool any_set(uint64_t first, uint64_t count) const {
    for (uint64_t u = first; u < first + count && u < units_; ++u)
      if (test(u)) return true;
    return false;
  }
  bool test(uint64_t u) const { return bits_[u / 64] >> (u % 64) & 1; }
  uint64_t units() const { return units_; }

 private:
  std::vector<uint64_t> bits_;
  uint64_t units_;
};

}  // namespace

struct RepairPlan {
  rocksdb::WriteBatch batch;
  std::vector<std::string> changes;
  std::set<CollectionId> recreate;
};

int StoreImpl::fsck(bool deep, FsckReport* rep) { return scan(deep, rep, nullptr); }

int StoreImpl::repair(FsckReport* rep, std::vector<std::string>* changes) {
  RepairPlan plan;
  int r = scan(false, rep, &plan);
  if (r < 0) return r;
  for (const auto& c : plan.recreate) {
    plan.batch.Put(kv::collection_key(c), kv::encode_collection(0));
    plan.changes.push_back("recreated collection " + c.name + " (its objects had lost it)");
  }
  if (!plan.changes.empty()) {
    rocksdb::WriteOptions wo;
    wo.sync = true;
    rocksdb::Status s = db_->Write(wo, &plan.batch);
    if (!s.ok()) {
      HS_ERROR("repair: writing the fixes failed: {}", s.ToString());
      return -EIO;
    }
  }
  *changes = std::move(plan.changes);
  return static_cast<int>(changes->size());
}

int StoreImpl::scan(bool deep, FsckReport* rep, RepairPlan* plan) {
  if (!mounted_) return -ENOTCONN;
  *rep = FsckReport();
  if (int r = flush(); r < 0) return r;
  auto problem = [&](std::string msg) {
    ++rep->errors;
    if (rep->problems.size() < 1000) rep->problems.push_back(std::move(msg));
  };
  auto change = [&](std::string msg) {
    if (plan) plan->changes.push_back(std::move(msg));
  };

  std::vector<UnitBitmap> used;
  for (int t = 0; t < tiers(); ++t) used.emplace_back(super_.tier_size[t] / space_[t]->unit());
  std::unordered_set<uint64_t> nids;
  int64_t objects = 0, bytes = 0;
  int64_t on_tier[kMaxTiers] = {};
  std::set<CollectionId> colls;
  for (const auto& c : list_collections()) colls.insert(c);
  rep->collections = colls.size();

  // One view of the DB for the whole scan: an onode and its extent shards
  // are read as one commit left them.
  struct SnapshotHolder {
    rocksdb::DB* db;
    const rocksdb::Snapshot* snap;
    ~SnapshotHolder() { db->ReleaseSnapshot(snap); }
  } snapshot{db_.get(), db_->GetSnapshot()};
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot.snap;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
  std::set<std::string> dropped;  // onode keys repair drops
  std::string oprefix(1, kv::kOnode);
  for (it->Seek(oprefix); it->Valid() && it->key().starts_with(oprefix); it->Next()) {
    CollectionId c;
    ObjectId oid;
    if (!kv::decode_onode_key(it->key().ToStringView(), &c, &oid)) {
      problem("malformed onode key " + it->key().ToString(true));
      if (plan) plan->batch.Delete(it->key());
      change("deleted malformed onode key " + it->key().ToString(true));
      continue;
    }
    std::string where = oid.to_string() + " in " + c.name;
    Onode o;
    std::string why;
    const std::string okey = it->key().ToString();
    if (complete_onode(okey, it->value().ToStringView(), ro, &o, &why) < 0) {
      problem("object " + where + ": " + why);
      if (plan) plan->batch.Delete(it->key());
      change("dropped object " + where + ": its onode cannot be read (" + why + ")");
      dropped.insert(okey);  // and its shards, in the shard pass below
      continue;
    }
    // What the key holds, for a rewrite under repair (contents unknown: all rewritten).
    StoredShards stored;
    if (o.extents_in_shards)
      for (const auto& sh : o.extents.shard_handles()) stored.emplace_back(sh.first, nullptr);
    if (!colls.count(c)) {
      problem("object " + where + " belongs to a collection that does not exist");
      if (plan) plan->recreate.insert(c);
    }
    ++rep->objects;
    ++objects;
    bytes += static_cast<int64_t>(o.size);
    bool rewrite = false;
    if (o.nid && !nids.insert(o.nid).second) {
      problem(fmt::format("omap id {} is used by more than one object (one is {})", o.nid, where));
      change(fmt::format("object {} no longer shares omap id {} with another object (its omap is lost)", where, o.nid));
      o.nid = 0;
      rewrite = true;
    }
    std::vector<uint64_t> drop;  // logical offsets of extents to cut out
    for (const auto& [off, e] : o.extents.extents()) {
      ++rep->extents;
      int t = tier_index(e.tier);
      uint64_t u = space_[t]->unit();
      std::string bad;
      if (e.physical % u || e.length % u || e.logical % u)
        bad = fmt::format("extent at {} is not aligned to the {} unit", e.logical, tier_name(e.tier));
      else if (e.physical < super_.reserved[t] || e.physical + e.length > super_.tier_size[t])
        bad = fmt::format("extent at {} points outside the {} device", e.logical, tier_name(e.tier));
      // A piece of a finer-grained tier may sit in the object's last unit
      // of the coarser one (a small write into the last 4 KiB of an HDD
      // object, taken by SSD blocks of 256 bytes, replaces that whole unit).
      else if (e.logical >= (o.size + max_unit_ - 1) / max_unit_ * max_unit_)
        bad = fmt::format("extent at {} lies past the end of the object", e.logical);
      else if (used[t].any_set(e.physical / u, e.length / u))
        bad = fmt::format("extent at {} ({} {}~{}) is also referenced by another object", e.logical,
                          tier_name(e.tier), e.physical, e.length);
      if (!bad.empty()) {
        problem("object " + where + ": " + bad);
        change("cut " + bad.substr(0, bad.find(' ', 10)) + " out of object " + where + " (reads as zeros now)");
        drop.push_back(off);
        continue;
      }
      used[t].set_range(e.physical / u, e.length / u);
      if (deep) {
        std::string data;
        ReadCache::Bypass from_the_media;
        if (read_extent_raw(e, &data) < 0)
          problem(fmt::format("object {}: data at {} fails its checksum or cannot be read", where, e.logical));
        else
          rep->bytes_verified += e.length;
      }
    }
    if (plan && (rewrite || !drop.empty())) {
      for (uint64_t off : drop) o.extents.erase(off);
      put_onode(&plan->batch, okey, o, stored);
    }
    // As the transactions count it: after repair cut out any bad extents.
    for (uint64_t off : drop) o.extents.erase(off);
    if (int h = home_tier(o); h >= 0) ++on_tier[h];
  }
  if (!it->status().ok()) problem("iterating onodes: " + it->status().ToString());

  // Extent shards need an onode that names them (by index, count and crc,
  // checked when the onode was read above).
  std::string xprefix(1, kv::kExtentShard);
  std::string last_onode;
  std::set<uint64_t> named;  // shards last_onode names
  for (it->Seek(xprefix); it->Valid() && it->key().starts_with(xprefix); it->Next()) {
    std::string okey;
    uint64_t shard;
    if (!kv::decode_extent_shard_key(it->key().ToStringView(), &okey, &shard)) {
      problem("malformed extent shard key " + it->key().ToString(true));
      if (plan) plan->batch.Delete(it->key());
      change("deleted malformed extent shard key " + it->key().ToString(true));
      continue;
    }
    ++rep->extent_shards;
    if (dropped.count(okey)) {
      // Part of an object reported and dropped above.
      if (plan) plan->batch.Delete(it->key());
      continue;
    }
    if (okey != last_onode) {
      last_onode = okey;
      named.clear();
      std::string v;
      Onode o;
      std::vector<ShardRef> refs;
      if (db_->Get(ro, okey, &v).ok() && decode_onode(v, &o, nullptr, tiers(), &refs))
        for (const auto& r : refs) named.insert(r.index);
    }
    if (!named.count(shard)) {
      CollectionId c;
      ObjectId oid;
      kv::decode_onode_key(okey, &c, &oid);
      std::string what = fmt::format("extent shard {} of object {} in {}", shard, oid.to_string(), c.name);
      problem(what + " belongs to no onode");
      if (plan) plan->batch.Delete(it->key());
      change("deleted the orphaned " + what);
    }
  }

  // Omap entries need an owner.
  std::string mprefix(1, kv::kOmap);
  for (it->Seek(mprefix); it->Valid() && it->key().starts_with(mprefix); it->Next()) {
    uint64_t nid;
    bool hdr;
    std::string_view user;
    if (!kv::decode_omap_key(it->key().ToStringView(), &nid, &hdr, &user)) {
      problem("malformed omap key " + it->key().ToString(true));
      if (plan) plan->batch.Delete(it->key());
      change("deleted malformed omap key " + it->key().ToString(true));
      continue;
    }
    ++rep->omap_entries;
    if (!nids.count(nid)) {
      problem(fmt::format("omap entries of id {} belong to no object", nid));
      if (plan) plan->batch.DeleteRange(kv::omap_nid_begin(nid), kv::omap_nid_end(nid));
      change(fmt::format("deleted the orphaned omap entries of id {}", nid));
      // One report per orphaned id is enough.
      it->Seek(kv::omap_nid_end(nid));
      if (!it->Valid()) break;
      it->Prev();
    }
  }

  // Persisted and in-memory allocation state against the references.
  for (int t = 0; t < tiers(); ++t) {
    Tier tier = tier_at(t);
    const TierSpace& sp = *space_[t];
    uint64_t u = sp.unit();
    UnitBitmap persisted(used[t].units());
    std::string err;
    int r = sp.freelist().load(db_.get(), super_.tier_size[t],
                               [&](uint64_t off, uint64_t len) { persisted.set_range(off / u, len / u); }, &err);
    if (r < 0) {
      problem(fmt::format("{} allocation bitmap: {}", tier_name(tier), err));
      continue;
    }
    UnitBitmap in_memory_free(used[t].units());
    sp.for_each_free([&](uint64_t off, uint64_t len) { in_memory_free.set_range(off / u, len / u); });
    if (std::string bad = sp.verify(); !bad.empty()) problem(fmt::format("{} {}", tier_name(tier), bad));
    uint64_t leaked = 0, unmarked = 0, mem_conflict = 0;
    // Runs of units whose bit must flip, for repair.
    uint64_t run_start = 0, run_len = 0;
    auto flush_run = [&] {
      if (run_len && plan) sp.freelist().toggle(&plan->batch, run_start * u, run_len * u);
      run_len = 0;
    };
    for (uint64_t unit = 0; unit < used[t].units(); ++unit) {
      bool ref = used[t].test(unit), mark = persisted.test(unit);
      bool reserved = unit < super_.reserved[t] / u;
      if (mark != ref) {
        if (mark) ++leaked;
        else ++unmarked;
        if (run_len && run_start + run_len == unit) {
          ++run_len;
        } else {
          flush_run();
          run_start = unit;
          run_len = 1;
        }
      }
      if (!reserved && in_memory_free.test(unit) == mark) ++mem_conflict;
    }
    flush_run();
    rep->leaked_bytes[t] = leaked * u;
    if (leaked) {
      problem(fmt::format("{}: {} bytes marked allocated but referenced by no object (leaked)", tier_name(tier), leaked * u));
      change(fmt::format("{}: returned {} leaked bytes to free space", tier_name(tier), leaked * u));
    }
    if (unmarked) {
      problem(fmt::format("{}: {} bytes referenced by objects but marked free", tier_name(tier), unmarked * u));
      change(fmt::format("{}: marked {} referenced bytes allocated", tier_name(tier), unmarked * u));
    }
    // Under repair the allocator is rebuilt from the fixed bitmap at the next mount.
    if (mem_conflict && !plan)
      problem(fmt::format("{}: in-memory allocator disagrees with the bitmap on {} units", tier_name(tier), mem_conflict));
  }

  std::string v;
  int64_t stats[kv::kStatCount];
  bool stats_ok = db_->Get(rocksdb::ReadOptions(), kv::stats_key(), &v).ok() && kv::decode_stats(v, stats);
  bool stats_match = stats_ok && stats[kv::kStatObjects] == objects && stats[kv::kStatBytes] == bytes;
  std::string said, hold;
  for (int t = 0; t < tiers(); ++t) {
    stats_match = stats_match && stats[kv::kStatSsdObjects + t] == on_tier[t];
    said += fmt::format(" / {} on {}", stats_ok ? stats[kv::kStatSsdObjects + t] : 0, tier_name(tier_at(t)));
    hold += fmt::format(" / {}", on_tier[t]);
  }
  if (!stats_match) {
    problem(stats_ok ? fmt::format("statistics say {} objects / {} bytes{}, onodes hold {} / {}{}", stats[kv::kStatObjects],
                                   stats[kv::kStatBytes], said, objects, bytes, hold)
                     : std::string("statistics record missing or corrupt"));
    int64_t fixed[kv::kStatCount] = {objects, bytes, 0};
    for (int t = 0; t < tiers(); ++t) fixed[kv::kStatSsdObjects + t] = on_tier[t];
    if (plan) plan->batch.Put(kv::stats_key(), kv::encode_stat_delta(fixed));
    change(fmt::format("rewrote statistics: {} objects, {} bytes, per tier{}", objects, bytes, hold));
  }
  return static_cast<int>(std::min<uint64_t>(rep->errors, INT32_MAX));
}

}  // namespace hybridstore
