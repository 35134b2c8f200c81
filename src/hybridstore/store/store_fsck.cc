#include "hybridstore/store/store_fsck.h"

#include <fmt/format.h>
#include <rocksdb/db.h>

#include <cstring>
#include <unordered_map>

#include "hscommon/log.h"
#include "hsio/read_cache.h"
#include "hybridstore/kv/kv_schema.h"
#include "hybridstore/store/collections.h"
#include "hybridstore/store/data_reader.h"
#include "hybridstore/store/onode_store.h"
#include "hybridstore/store/tier_set.h"

namespace hybridstore {

namespace {

class UnitBitmap {
 public:
  UnitBitmap() = default;
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
  uint64_t units_ = 0;
};

}  // namespace

struct RepairPlan {
  rocksdb::WriteBatch batch;
  std::vector<std::string> changes;
  std::set<CollectionId> recreate;
};

// What a scan has found so far, pass after pass.
struct FsckScan {
  FsckReport* rep;
  RepairPlan* plan;  // null: check only
  rocksdb::ReadOptions ro;  // one view of the DB for the whole scan
  PerTier<UnitBitmap> used;  // referenced units
  std::unordered_set<uint64_t> nids;
  int64_t objects = 0, bytes = 0;
  PerTier<int64_t> on_tier;  // objects by home tier
  std::set<CollectionId> colls;
  std::set<std::string> dropped;  // onode keys repair drops
};

namespace {
void problem(FsckScan& s, std::string msg) {
  ++s.rep->errors;
  if (s.rep->problems.size() < 1000) s.rep->problems.push_back(std::move(msg));
}
void warning(FsckScan& s, std::string msg) {
  ++s.rep->warnings;
  if (s.rep->problems.size() < 1000) s.rep->problems.push_back("warning: " + std::move(msg));
}
// What repair changes.
void change(FsckScan& s, std::string msg) {
  if (s.plan) s.plan->changes.push_back(std::move(msg));
}
// Under repair, `key` is deleted.
void drop(FsckScan& s, const rocksdb::Slice& key) {
  if (s.plan) s.plan->batch.Delete(key);
}
}  // namespace

int StoreFsck::check(bool deep, FsckReport* rep) { return scan(deep, rep, nullptr); }

int StoreFsck::repair(FsckReport* rep, std::vector<std::string>* changes) {
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

int StoreFsck::scan(bool deep, FsckReport* rep, RepairPlan* plan) {
  *rep = FsckReport();
  FsckScan s;
  s.rep = rep;
  s.plan = plan;
  for (Tier t : tiers_->ids()) s.used[t] = UnitBitmap(super_->tier[t].size / tiers_->space(t).unit());
  for (const auto& c : colls_->list()) s.colls.insert(c);
  rep->collections = s.colls.size();

  // One view of the DB for the whole scan: an onode and its extent shards
  // are read as one commit left them.
  struct SnapshotHolder {
    rocksdb::DB* db;
    const rocksdb::Snapshot* snap;
    ~SnapshotHolder() { db->ReleaseSnapshot(snap); }
  } snapshot{db_, db_->GetSnapshot()};
  s.ro.snapshot = snapshot.snap;
  {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(s.ro));
    scan_onodes(s, it.get(), deep);
    scan_shards(s, it.get());
    scan_omap(s, it.get());
  }
  for (Tier t : tiers_->ids()) check_space(s, t);
  check_statistics(s);
  check_labels(s);
  return static_cast<int>(std::min<uint64_t>(rep->errors, INT32_MAX));
}

// Both copies of every tier's label, read again from the device: what
// mount chose may have been damaged since, and a copy behind is what a
// crash between the two writes of a pair leaves.
void StoreFsck::check_labels(FsckScan& s) {
  for (Tier t : tiers_->ids()) {
    BlockDevice* dev = tiers_->device(t);
    DeviceLabel l;
    LabelPairStatus st;
    std::string why;
    if (read_labels(dev, &l, &st, &why) < 0) {
      problem(s, fmt::format("{} label: {}", tier_name(t), why));
      continue;
    }
    if (l.fsid != super_->fsid || l.role != t || l.format_version > super_->format_version) {
      problem(s, fmt::format("{} label: fsid {} role {} format {}, the store is {} (format {})", tier_name(t),
                             uuid_to_string(l.fsid), tier_name(l.role), l.format_version,
                             uuid_to_string(super_->fsid), super_->format_version));
      continue;
    }
    if (l.record_version >= 2 && t == Tier::kSsd && (l.flags & kLabelMkfsDone) &&
        l.tiers != label_tier_table(*super_))
      problem(s, fmt::format("{} label: its tier table differs from the superblock's", tier_name(t)));
    if (super_->format_version >= 4 && l.record_version < 2)
      warning(s, fmt::format("{} label is of record version 1 in a format-{} store (the next read-write mount "
                             "rewrites it)",
                             tier_name(t), super_->format_version));
    const std::string bad = st.problem();
    if (bad.empty()) continue;
    warning(s, fmt::format("{} label {} (the other copy carries the store)", tier_name(t), bad));
    if (!s.plan) continue;
    if (int r = write_label_pair(dev, &l, &why); r < 0) {
      problem(s, fmt::format("{} label: rewriting the pair failed: {}", tier_name(t), why));
      continue;
    }
    change(s, fmt::format("rewrote the {} label pair from copy {} (generation {})", tier_name(t), st.chosen,
                          l.generation));
  }
}

void StoreFsck::scan_onodes(FsckScan& s, rocksdb::Iterator* it, bool deep) {
  FsckReport* rep = s.rep;
  std::string oprefix(1, kv::kOnode);
  for (it->Seek(oprefix); it->Valid() && it->key().starts_with(oprefix); it->Next()) {
    CollectionId c;
    ObjectId oid;
    if (!kv::decode_onode_key(it->key().ToStringView(), &c, &oid)) {
      problem(s, "malformed onode key " + it->key().ToString(true));
      drop(s, it->key());
      change(s, "deleted malformed onode key " + it->key().ToString(true));
      continue;
    }
    std::string where = oid.to_string() + " in " + c.name;
    Onode o;
    std::string why;
    const std::string okey = it->key().ToString();
    if (onodes_->complete(okey, it->value().ToStringView(), s.ro, &o, &why) < 0) {
      problem(s, "object " + where + ": " + why);
      drop(s, it->key());
      change(s, "dropped object " + where + ": its onode cannot be read (" + why + ")");
      s.dropped.insert(okey);  // and its shards, in the shard pass
      continue;
    }
    // What the key holds, for a rewrite under repair (contents unknown: all rewritten).
    StoredShards stored;
    if (o.extents_in_shards)
      for (const auto& sh : o.extents.shard_handles()) stored.emplace_back(sh.first, nullptr);
    if (!s.colls.count(c)) {
      problem(s, "object " + where + " belongs to a collection that does not exist");
      if (s.plan) s.plan->recreate.insert(c);
    }
    ++rep->objects;
    ++s.objects;
    s.bytes += static_cast<int64_t>(o.size);
    bool rewrite = false;
    if (o.nid && !s.nids.insert(o.nid).second) {
      problem(s, fmt::format("omap id {} is used by more than one object (one is {})", o.nid, where));
      change(s, fmt::format("object {} no longer shares omap id {} with another object (its omap is lost)", where, o.nid));
      o.nid = 0;
      rewrite = true;
    }
    std::vector<uint64_t> drop;  // logical offsets of extents to cut out
    for (const auto& [off, e] : o.extents.extents()) {
      ++rep->extents;
      const TierDescriptor& desc = super_->tier[e.tier];
      UnitBitmap& used = s.used[e.tier];
      uint64_t u = tiers_->space(e.tier).unit();
      std::string bad;
      if (e.physical % u || e.length % u || e.logical % u)
        bad = fmt::format("extent at {} is not aligned to the {} unit", e.logical, tier_name(e.tier));
      else if (e.physical < desc.reserved || e.physical + e.length > desc.size)
        bad = fmt::format("extent at {} points outside the {} device", e.logical, tier_name(e.tier));
      // A piece of a finer-grained tier may sit in the object's last unit
      // of the coarser one (a small write into the last 4 KiB of an HDD
      // object, taken by SSD blocks of 256 bytes, replaces that whole unit).
      else if (e.logical >= (o.size + tiers_->coarsest_unit() - 1) / tiers_->coarsest_unit() * tiers_->coarsest_unit())
        bad = fmt::format("extent at {} lies past the end of the object", e.logical);
      else if (used.any_set(e.physical / u, e.length / u))
        bad = fmt::format("extent at {} ({} {}~{}) is also referenced by another object", e.logical,
                          tier_name(e.tier), e.physical, e.length);
      if (!bad.empty()) {
        problem(s, "object " + where + ": " + bad);
        change(s, "cut " + bad.substr(0, bad.find(' ', 10)) + " out of object " + where + " (reads as zeros now)");
        drop.push_back(off);
        continue;
      }
      used.set_range(e.physical / u, e.length / u);
      if (deep) {
        std::string data;
        ReadCache::Bypass from_the_media;
        if (data_->read_extent(e, &data) < 0)
          problem(s, fmt::format("object {}: data at {} fails its checksum or cannot be read", where, e.logical));
        else
          rep->bytes_verified += e.length;
      }
    }
    if (s.plan && (rewrite || !drop.empty())) {
      for (uint64_t off : drop) o.extents.erase(off);
      onodes_->put(&s.plan->batch, okey, o, stored);
    }
    // As the transactions count it: after repair cut out any bad extents.
    for (uint64_t off : drop) o.extents.erase(off);
    if (std::optional<Tier> h = tiers_->home(o)) ++s.on_tier[*h];
  }
  if (!it->status().ok()) problem(s, "iterating onodes: " + it->status().ToString());
}

void StoreFsck::scan_shards(FsckScan& s, rocksdb::Iterator* it) {
  // Extent shards need an onode that names them (by index, count and crc,
  // checked when the onode was read).
  std::string xprefix(1, kv::kExtentShard);
  std::string last_onode;
  std::set<uint64_t> named;  // shards last_onode names
  for (it->Seek(xprefix); it->Valid() && it->key().starts_with(xprefix); it->Next()) {
    std::string okey;
    uint64_t shard;
    if (!kv::decode_extent_shard_key(it->key().ToStringView(), &okey, &shard)) {
      problem(s, "malformed extent shard key " + it->key().ToString(true));
      drop(s, it->key());
      change(s, "deleted malformed extent shard key " + it->key().ToString(true));
      continue;
    }
    ++s.rep->extent_shards;
    if (s.dropped.count(okey)) {
      // Part of an object reported and dropped by the onode pass.
      drop(s, it->key());
      continue;
    }
    if (okey != last_onode) {
      last_onode = okey;
      named.clear();
      std::string v;
      Onode o;
      std::vector<ShardRef> refs;
      if (db_->Get(s.ro, okey, &v).ok() && decode_onode(v, &o, nullptr, tiers_->count(), &refs))
        for (const auto& r : refs) named.insert(r.index);
    }
    if (!named.count(shard)) {
      CollectionId c;
      ObjectId oid;
      kv::decode_onode_key(okey, &c, &oid);
      std::string what = fmt::format("extent shard {} of object {} in {}", shard, oid.to_string(), c.name);
      problem(s, what + " belongs to no onode");
      drop(s, it->key());
      change(s, "deleted the orphaned " + what);
    }
  }
}

void StoreFsck::scan_omap(FsckScan& s, rocksdb::Iterator* it) {
  // Omap entries need an owner.
  std::string mprefix(1, kv::kOmap);
  for (it->Seek(mprefix); it->Valid() && it->key().starts_with(mprefix); it->Next()) {
    uint64_t nid;
    bool hdr;
    std::string_view user;
    if (!kv::decode_omap_key(it->key().ToStringView(), &nid, &hdr, &user)) {
      problem(s, "malformed omap key " + it->key().ToString(true));
      drop(s, it->key());
      change(s, "deleted malformed omap key " + it->key().ToString(true));
      continue;
    }
    ++s.rep->omap_entries;
    if (!s.nids.count(nid)) {
      problem(s, fmt::format("omap entries of id {} belong to no object", nid));
      if (s.plan) s.plan->batch.DeleteRange(kv::omap_nid_begin(nid), kv::omap_nid_end(nid));
      change(s, fmt::format("deleted the orphaned omap entries of id {}", nid));
      // One report per orphaned id is enough.
      it->Seek(kv::omap_nid_end(nid));
      if (!it->Valid()) break;
      it->Prev();
    }
  }
}

// Persisted and in-memory allocation state against the references.
void StoreFsck::check_space(FsckScan& s, Tier tier) {
  const TierDescriptor& desc = super_->tier[tier];
  const TierSpace& sp = tiers_->space(tier);
  const uint64_t u = sp.unit();
  const UnitBitmap& used = s.used[tier];
  UnitBitmap persisted(used.units());
  std::string err;
  int r = sp.freelist().load(db_, desc.size,
                             [&](uint64_t off, uint64_t len) { persisted.set_range(off / u, len / u); }, &err);
  if (r < 0) {
    problem(s, fmt::format("{} allocation bitmap: {}", tier_name(tier), err));
    return;
  }
  UnitBitmap in_memory_free(used.units());
  sp.for_each_free([&](uint64_t off, uint64_t len) { in_memory_free.set_range(off / u, len / u); });
  if (std::string bad = sp.verify(); !bad.empty()) problem(s, fmt::format("{} {}", tier_name(tier), bad));
  // The KV file system's chunks are neither free nor marked: its log is
  // their only record (kvfs.md 2.1).
  UnitBitmap lent(used.units());
  // What the space has lent, read after its free runs: the kvfs may grow
  // while fsck runs (RocksDB compacts when it will), and a range lent in
  // between is then neither free there nor missing here.
  std::vector<Interval> lent_now = lent_[tier];
  if (!lent_now.empty()) {
    const std::vector<Interval> more = sp.lent();
    lent_now.insert(lent_now.end(), more.begin(), more.end());
  }
  for (const auto& c : lent_now) {
    const uint64_t b = std::min(c.offset / u, used.units()), e = std::min((c.offset + c.length + u - 1) / u, used.units());
    if (e > b) lent.set_range(b, e - b);
  }
  uint64_t leaked = 0, unmarked = 0, mem_conflict = 0, both = 0;
  // Runs of units whose bit must flip, for repair.
  uint64_t run_start = 0, run_len = 0;
  auto flush_run = [&] {
    if (run_len && s.plan) sp.freelist().toggle(&s.plan->batch, run_start * u, run_len * u);
    run_len = 0;
  };
  for (uint64_t unit = 0; unit < used.units(); ++unit) {
    bool ref = used.test(unit), mark = persisted.test(unit);
    bool reserved = unit < desc.reserved / u;
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
    if (lent.test(unit)) {
      if (mark || ref) ++both;
      continue;
    }
    if (!reserved && in_memory_free.test(unit) == mark) ++mem_conflict;
  }
  flush_run();
  if (both)
    problem(s, fmt::format("{}: {} bytes owned by both the KV file system and objects", tier_name(tier), both * u));
  s.rep->leaked_bytes[tier] = leaked * u;
  if (leaked) {
    problem(s, fmt::format("{}: {} bytes marked allocated but referenced by no object (leaked)", tier_name(tier), leaked * u));
    change(s, fmt::format("{}: returned {} leaked bytes to free space", tier_name(tier), leaked * u));
  }
  if (unmarked) {
    problem(s, fmt::format("{}: {} bytes referenced by objects but marked free", tier_name(tier), unmarked * u));
    change(s, fmt::format("{}: marked {} referenced bytes allocated", tier_name(tier), unmarked * u));
  }
  // Under repair the allocator is rebuilt from the fixed bitmap at the next mount.
  if (mem_conflict && !s.plan)
    problem(s, fmt::format("{}: in-memory allocator disagrees with the bitmap on {} units", tier_name(tier), mem_conflict));
}

void StoreFsck::check_statistics(FsckScan& s) {
  std::string v;
  int64_t stats[kv::kStatCount];
  bool stats_ok = db_->Get(rocksdb::ReadOptions(), kv::stats_key(), &v).ok() && kv::decode_stats(v, stats);
  bool stats_match = stats_ok && stats[kv::kStatObjects] == s.objects && stats[kv::kStatBytes] == s.bytes;
  std::string said, hold;
  for (Tier t : tiers_->ids()) {
    stats_match = stats_match && stats[kv::stat_objects_on(t)] == s.on_tier[t];
    said += fmt::format(" / {} on {}", stats_ok ? stats[kv::stat_objects_on(t)] : 0, tier_name(t));
    hold += fmt::format(" / {}", s.on_tier[t]);
  }
  if (stats_match) return;
  problem(s, stats_ok ? fmt::format("statistics say {} objects / {} bytes{}, onodes hold {} / {}{}",
                                   stats[kv::kStatObjects], stats[kv::kStatBytes], said, s.objects, s.bytes, hold)
                     : std::string("statistics record missing or corrupt"));
  int64_t fixed[kv::kStatCount] = {s.objects, s.bytes, 0};
  for (Tier t : tiers_->ids()) fixed[kv::stat_objects_on(t)] = s.on_tier[t];
  if (s.plan) s.plan->batch.Put(kv::stats_key(), kv::encode_stat_delta(fixed));
  change(s, fmt::format("rewrote statistics: {} objects, {} bytes, per tier{}", s.objects, s.bytes, hold));
}

}  // namespace hybridstore
