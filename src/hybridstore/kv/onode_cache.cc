#include "hybridstore/kv/onode_cache.h"

#include <algorithm>
#include <functional>

namespace hybridstore {

namespace {
// Shards hold at least this many entries each, so that a small cache (tests,
// tools) is one exact LRU and a large one spreads its readers.
constexpr size_t kMinPerShard = 128;
constexpr size_t kMaxShards = 16;
}  // namespace

OnodeCache::OnodeCache(size_t capacity, uint64_t byte_capacity) {
  size_t n = 1;
  unsigned bits = 0;
  while (n * 2 <= kMaxShards && capacity / (n * 2) >= kMinPerShard) {
    n *= 2;
    ++bits;
  }
  shard_shift_ = 64 - bits;
  for (size_t i = 0; i < n; ++i) {
    shards_.push_back(std::make_unique<Shard>());
    // The shards' capacities add up to exactly `capacity`.
    shards_.back()->capacity = capacity / n + (i < capacity % n ? 1 : 0);
    if (byte_capacity) shards_.back()->byte_capacity = std::max<uint64_t>(1, byte_capacity / n);
  }
}

size_t OnodeCache::charge_of(const Entry& e) {
  // The map's node (its next pointer, the key and the entry) and a bucket,
  // the strings of the key beyond what they hold inside themselves, and the
  // onode.
  auto heap = [](const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; };
  size_t n = sizeof(void*) + sizeof(Map::value_type) + sizeof(void*);
  n += heap(e.coll) + heap(e.oid.nspace) + heap(e.oid.key) + heap(e.oid.name);
  if (e.onode) n += onode_memory_bytes(*e.onode);
  return n;
}

void OnodeCache::set_onode_locked(Shard& s, Entry* e, OnodeRef onode) {
  e->onode = std::move(onode);
  // The estimate walks every extent of the onode: a cache bounded by its
  // count alone (the default) does not pay for it on every transaction.
  if (s.byte_capacity == UINT64_MAX) return;
  s.bytes -= e->charge;
  e->charge = charge_of(*e);
  s.bytes += e->charge;
}

OnodeCache::~OnodeCache() = default;

size_t OnodeCache::hash_of(const CollectionId& c, const ObjectId& o) {
  return std::hash<std::string>()(c.name) * 31 + ObjectIdHash()(o);
}

OnodeCache::Shard& OnodeCache::shard_for(size_t hash) {
  if (shards_.size() == 1) return *shards_[0];
  // The map buckets by the hash itself (modulo its bucket count); the shard
  // comes from the high bits of a multiplicative mix, so that objects of
  // one shard still spread over that shard's buckets.
  uint64_t mixed = static_cast<uint64_t>(hash) * 0x9E3779B97F4A7C15ull;
  return *shards_[static_cast<size_t>(mixed >> shard_shift_)];
}

OnodeCache::Map::iterator OnodeCache::find_locked(Shard& s, size_t hash, const CollectionId& c,
                                                  const ObjectId& o) {
  auto [b, e] = s.map.equal_range(hash);
  for (auto it = b; it != e; ++it)
    if (it->second.coll == c.name && it->second.oid == o) return it;
  return s.map.end();
}

OnodeCache::Map::iterator OnodeCache::find_entry_locked(Shard& s, size_t hash, const Entry* e) {
  auto [b, end] = s.map.equal_range(hash);
  for (auto it = b; it != end; ++it)
    if (&it->second == e) return it;
  return s.map.end();
}

void OnodeCache::link_newest_locked(Shard& s, Entry* e) {
  e->older = s.newest;
  e->newer = nullptr;
  if (s.newest) s.newest->newer = e;
  s.newest = e;
  if (!s.oldest) s.oldest = e;
}

void OnodeCache::unlink_locked(Shard& s, Entry* e) {
  (e->newer ? e->newer->older : s.newest) = e->older;
  (e->older ? e->older->newer : s.oldest) = e->newer;
  e->newer = e->older = nullptr;
}

void OnodeCache::evict_locked(Shard& s, Entry* e, std::vector<OnodeRef>* dead) {
  unlink_locked(s, e);
  if (e->onode) dead->push_back(std::move(e->onode));
  s.bytes -= e->charge;
  s.map.erase(find_entry_locked(s, e->hash, e));
}

OnodeCache::Lookup OnodeCache::get(const CollectionId& c, const ObjectId& o, OnodeRef* out) {
  const size_t h = hash_of(c, o);
  Shard& s = shard_for(h);
  std::lock_guard<std::mutex> l(s.mutex);
  auto it = find_locked(s, h, c, o);
  if (it == s.map.end()) return Lookup::kMiss;
  Entry* e = &it->second;
  if (s.newest != e) {
    unlink_locked(s, e);
    link_newest_locked(s, e);
  }
  if (!e->onode) return Lookup::kTombstone;
  *out = e->onode;
  return Lookup::kHit;
}

void OnodeCache::put_pending(const CollectionId& c, const ObjectId& o, OnodeRef onode, uint64_t seq) {
  const size_t h = hash_of(c, o);
  Shard& s = shard_for(h);
  OnodeRef replaced;  // freed after the lock is dropped
  std::lock_guard<std::mutex> l(s.mutex);
  auto it = find_locked(s, h, c, o);
  if (it == s.map.end()) {
    it = s.map.emplace(h, Entry{});
    it->second.hash = h;
    it->second.coll = c.name;
    it->second.oid = o;
  } else {
    replaced = std::move(it->second.onode);
    unlink_locked(s, &it->second);
  }
  set_onode_locked(s, &it->second, std::move(onode));
  it->second.seq = seq;
  link_newest_locked(s, &it->second);
}

void OnodeCache::put_clean(const CollectionId& c, const ObjectId& o, OnodeRef onode, uint64_t committed_seq) {
  const size_t h = hash_of(c, o);
  Shard& s = shard_for(h);
  std::vector<OnodeRef> dead;  // declared first: freed after the lock is dropped
  std::lock_guard<std::mutex> l(s.mutex);
  if (find_locked(s, h, c, o) != s.map.end()) return;
  auto it = s.map.emplace(h, Entry{});
  it->second.hash = h;
  it->second.coll = c.name;
  it->second.oid = o;
  set_onode_locked(s, &it->second, std::move(onode));
  link_newest_locked(s, &it->second);
  trim_locked(s, committed_seq, &dead);
}

void OnodeCache::erase(const CollectionId& c, const ObjectId& o) {
  const size_t h = hash_of(c, o);
  Shard& s = shard_for(h);
  std::vector<OnodeRef> dead;
  std::lock_guard<std::mutex> l(s.mutex);
  auto it = find_locked(s, h, c, o);
  if (it == s.map.end()) return;
  evict_locked(s, &it->second, &dead);
}

void OnodeCache::trim(uint64_t committed_seq) {
  for (auto& sp : shards_) {
    std::vector<OnodeRef> dead;
    std::lock_guard<std::mutex> l(sp->mutex);
    trim_locked(*sp, committed_seq, &dead);
  }
}

void OnodeCache::trim_locked(Shard& s, uint64_t committed_seq, std::vector<OnodeRef>* dead) {
  if (!s.over()) return;
  // Walk from the cold end; pinned (uncommitted) entries are skipped, and the
  // walk is bounded so a burst of pinned entries cannot make trim expensive.
  // Every eviction takes an entry away, so only the skips need a bound: one
  // large onode may take many small ones out to stay within the bytes.
  size_t skips = 256;
  for (Entry* e = s.oldest; e && s.over();) {
    Entry* newer = e->newer;
    if (e->seq <= committed_seq)
      evict_locked(s, e, dead);
    else if (skips-- == 0)
      break;
    e = newer;
  }
}

size_t OnodeCache::drop_committed(uint64_t committed_seq) {
  size_t n = 0;
  for (auto& sp : shards_) {
    Shard& s = *sp;
    std::vector<OnodeRef> dead;
    std::lock_guard<std::mutex> l(s.mutex);
    for (auto it = s.map.begin(); it != s.map.end();) {
      if (it->second.seq > committed_seq) {
        ++it;
        continue;
      }
      unlink_locked(s, &it->second);
      if (it->second.onode) dead.push_back(std::move(it->second.onode));
      s.bytes -= it->second.charge;
      it = s.map.erase(it);
      ++n;
    }
  }
  return n;
}

void OnodeCache::clear() {
  for (auto& sp : shards_) {
    std::lock_guard<std::mutex> l(sp->mutex);
    sp->map.clear();
    sp->bytes = 0;
    sp->newest = sp->oldest = nullptr;
  }
}

size_t OnodeCache::size() const {
  size_t n = 0;
  for (const auto& sp : shards_) {
    std::lock_guard<std::mutex> l(sp->mutex);
    n += sp->map.size();
  }
  return n;
}

void OnodeCache::set_byte_capacity(uint64_t byte_capacity, uint64_t committed_seq) {
  const size_t n = shards_.size();
  for (auto& sp : shards_) {
    Shard& s = *sp;
    std::vector<OnodeRef> dead;
    std::lock_guard<std::mutex> l(s.mutex);
    const bool was_charging = s.byte_capacity != UINT64_MAX;
    s.byte_capacity = byte_capacity ? std::max<uint64_t>(1, byte_capacity / n) : UINT64_MAX;
    if (!byte_capacity) {
      // set_onode_locked stops charging: no stale charge may stay behind.
      for (auto& [h, e] : s.map) e.charge = 0;
      s.bytes = 0;
      continue;
    }
    if (!was_charging) {
      s.bytes = 0;
      for (auto& [h, e] : s.map) {
        e.charge = charge_of(e);
        s.bytes += e.charge;
      }
    }
    trim_locked(s, committed_seq, &dead);
  }
}

uint64_t OnodeCache::byte_capacity() const {
  uint64_t n = 0;
  for (const auto& sp : shards_) {
    std::lock_guard<std::mutex> l(sp->mutex);
    if (sp->byte_capacity == UINT64_MAX) return 0;
    n += sp->byte_capacity;
  }
  return n;
}

void OnodeCache::measure(uint64_t* items, uint64_t* bytes) const {
  *items = *bytes = 0;
  for (const auto& sp : shards_) {
    std::lock_guard<std::mutex> l(sp->mutex);
    *items += sp->map.size();
    if (sp->byte_capacity != UINT64_MAX) {
      *bytes += sp->bytes;
      continue;
    }
    for (const auto& [h, e] : sp->map) *bytes += charge_of(e);
  }
}

uint64_t OnodeCache::bytes() const {
  uint64_t n = 0;
  for (const auto& sp : shards_) {
    std::lock_guard<std::mutex> l(sp->mutex);
    n += sp->bytes;
  }
  return n;
}

}  // namespace hybridstore
