#include "hybridstore/kv/onode_cache.h"

namespace hybridstore {

void OnodeCache::touch_locked(Entry& e) { lru_.splice(lru_.begin(), lru_, e.lru); }

OnodeCache::Lookup OnodeCache::get(const CollectionId& c, const ObjectId& o, OnodeRef* out) {
  std::lock_guard<std::mutex> l(mutex_);
  auto it = map_.find(Key{c.name, o});
  if (it == map_.end()) return Lookup::kMiss;
  touch_locked(it->second);
  if (!it->second.onode) return Lookup::kTombstone;
  *out = it->second.onode;
  return Lookup::kHit;
}

void OnodeCache::put_pending(const CollectionId& c, const ObjectId& o, OnodeRef onode, uint64_t seq) {
  std::lock_guard<std::mutex> l(mutex_);
  Key k{c.name, o};
  auto it = map_.find(k);
  if (it == map_.end()) {
    lru_.push_front(k);
    Entry e;
    e.onode = std::move(onode);
    e.seq = seq;
    e.lru = lru_.begin();
    map_.emplace(std::move(k), std::move(e));
  } else {
    it->second.onode = std::move(onode);
    it->second.seq = seq;
    touch_locked(it->second);
  }
}

void OnodeCache::put_clean(const CollectionId& c, const ObjectId& o, OnodeRef onode, uint64_t committed_seq) {
  std::lock_guard<std::mutex> l(mutex_);
  auto [it, inserted] = map_.try_emplace(Key{c.name, o});
  if (!inserted) return;
  lru_.push_front(it->first);
  it->second.onode = std::move(onode);
  it->second.lru = lru_.begin();
  trim_locked(committed_seq);
}

void OnodeCache::erase(const CollectionId& c, const ObjectId& o) {
  std::lock_guard<std::mutex> l(mutex_);
  auto it = map_.find(Key{c.name, o});
  if (it == map_.end()) return;
  lru_.erase(it->second.lru);
  map_.erase(it);
}

void OnodeCache::trim(uint64_t committed_seq) {
  std::lock_guard<std::mutex> l(mutex_);
  trim_locked(committed_seq);
}

void OnodeCache::trim_locked(uint64_t committed_seq) {
  if (map_.size() <= capacity_) return;
  // Walk from the cold end; pinned (uncommitted) entries are skipped, and the
  // walk is bounded so a burst of pinned entries cannot make trim expensive.
  auto it = lru_.end();
  size_t budget = map_.size() - capacity_ + 256;
  while (map_.size() > capacity_ && it != lru_.begin() && budget-- > 0) {
    --it;
    auto m = map_.find(*it);
    if (m->second.seq > committed_seq) continue;
    map_.erase(m);
    it = lru_.erase(it);
  }
}

size_t OnodeCache::drop_committed(uint64_t committed_seq) {
  std::lock_guard<std::mutex> l(mutex_);
  size_t n = 0;
  for (auto it = lru_.begin(); it != lru_.end();) {
    auto m = map_.find(*it);
    if (m->second.seq > committed_seq) {
      ++it;
      continue;
    }
    map_.erase(m);
    it = lru_.erase(it);
    ++n;
  }
  return n;
}

void OnodeCache::clear() {
  std::lock_guard<std::mutex> l(mutex_);
  map_.clear();
  lru_.clear();
}

size_t OnodeCache::size() const {
  std::lock_guard<std::mutex> l(mutex_);
  return map_.size();
}

}  // namespace hybridstore
