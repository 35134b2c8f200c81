#include "hybridstore/store/memory_tuner.h"

#include <dlfcn.h>
#include <malloc.h>

#include <algorithm>

namespace hybridstore {

uint64_t read_heap_bytes(const char** source) {
  // Looked up, not linked: the engine library goes into binaries on
  // tcmalloc (the tools, ceph-osd) and on glibc's malloc (some tests).
  using GetNumeric = int (*)(const char*, size_t*);
  using Release = void (*)();
  static const GetNumeric tcmalloc_get =
      reinterpret_cast<GetNumeric>(dlsym(RTLD_DEFAULT, "MallocExtension_GetNumericProperty"));
  static const Release tcmalloc_release =
      reinterpret_cast<Release>(dlsym(RTLD_DEFAULT, "MallocExtension_ReleaseFreeMemory"));
  if (tcmalloc_get) {
    // What the process holds, not what it has allocated: tcmalloc keeps
    // freed pages mapped, and in a ceph-osd that held a third more than the
    // allocated bytes (3.0 GB of RSS at 1.96 GB allocated, a 2 GiB target).
    // So hand the free pages back first and count what stays mapped, as
    // osd_memory_target is meant: the tuner then shrinks the caches until
    // the resident heap, not the allocated one, is near the target.
    if (tcmalloc_release) tcmalloc_release();
    size_t heap = 0, unmapped = 0;
    if (tcmalloc_get("generic.heap_size", &heap) && heap > 0 &&
        tcmalloc_get("tcmalloc.pageheap_unmapped_bytes", &unmapped) && unmapped < heap) {
      if (source) *source = "tcmalloc";
      return heap - unmapped;
    }
    size_t v = 0;
    if (tcmalloc_get("generic.current_allocated_bytes", &v) && v > 0) {
      if (source) *source = "tcmalloc";
      return v;
    }
  }
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  // Walks every arena: fine every few seconds, not per operation.
  const struct mallinfo2 mi = mallinfo2();
  if (source) *source = "mallinfo2";
  return mi.uordblks + mi.hblkhd;
#else
  if (source) *source = "none";
  return 0;
#endif
}

MemoryTuner::MemoryTuner(uint64_t target, std::vector<Cache> caches, HeapReader heap, unsigned interval_ticks,
                         uint64_t chunk)
    : target_(target),
      caches_(std::move(caches)),
      heap_(std::move(heap)),
      interval_(std::max(1u, interval_ticks)),
      chunk_(chunk ? chunk : std::max<uint64_t>(target / 32, 4ull << 20)) {
  std::lock_guard<std::mutex> l(mutex_);
  last_heap_ = heap_();
  uint64_t held = 0;
  for (const Cache& c : caches_) held += c.used ? c.used() : 0;
  fixed_ = last_heap_ > held ? last_heap_ - held : 0;
  const uint64_t left = target_ > fixed_ ? target_ - fixed_ : 0;
  unsigned parts = 0;
  for (const Cache& c : caches_) parts += c.ratio;
  for (const Cache& c : caches_) {
    const uint64_t share = parts ? static_cast<uint64_t>(static_cast<unsigned __int128>(left) * c.ratio / parts) : 0;
    share_.push_back(std::max(c.min_bytes, share));
    capacity_.push_back(share_.back());
    c.set_capacity(capacity_.back());
  }
}

uint64_t MemoryTuner::last_heap() const {
  std::lock_guard<std::mutex> l(mutex_);
  return last_heap_;
}

uint64_t MemoryTuner::shrinks() const {
  std::lock_guard<std::mutex> l(mutex_);
  return shrinks_;
}

uint64_t MemoryTuner::grows() const {
  std::lock_guard<std::mutex> l(mutex_);
  return grows_;
}

std::vector<MemoryTuner::Size> MemoryTuner::sizes() const {
  std::lock_guard<std::mutex> l(mutex_);
  std::vector<Size> out;
  for (size_t i = 0; i < caches_.size(); ++i)
    out.push_back({caches_[i].name, capacity_[i], share_[i], caches_[i].min_bytes});
  return out;
}

bool MemoryTuner::tick() {
  std::lock_guard<std::mutex> l(mutex_);
  if (++ticks_ % interval_ != 0) return false;
  const uint64_t heap = heap_();
  last_heap_ = heap;
  if (heap == 0) return true;  // no reading: better unchanged than guessed
  if (heap > target_)
    shrink_locked(heap - target_);
  else if (heap + chunk_ <= target_)
    grow_locked(chunk_);
  return true;
}

void MemoryTuner::shrink_locked(uint64_t excess) {
  uint64_t above = 0;
  for (size_t i = 0; i < caches_.size(); ++i) above += capacity_[i] - caches_[i].min_bytes;
  if (above == 0) return;
  const uint64_t take = std::min(excess, above);
  for (size_t i = 0; i < caches_.size(); ++i) {
    const uint64_t mine = capacity_[i] - caches_[i].min_bytes;
    const uint64_t cut =
        take == above ? mine : static_cast<uint64_t>(static_cast<unsigned __int128>(mine) * take / above);
    if (cut == 0) continue;
    capacity_[i] -= cut;
    caches_[i].set_capacity(capacity_[i]);
  }
  ++shrinks_;
}

void MemoryTuner::grow_locked(uint64_t amount) {
  unsigned parts = 0;
  for (size_t i = 0; i < caches_.size(); ++i)
    if (capacity_[i] < share_[i]) parts += caches_[i].ratio;
  if (parts == 0) return;
  for (size_t i = 0; i < caches_.size(); ++i) {
    if (capacity_[i] >= share_[i]) continue;
    const uint64_t add = std::min(share_[i] - capacity_[i], amount * caches_[i].ratio / parts);
    if (add == 0) continue;
    capacity_[i] += add;
    caches_[i].set_capacity(capacity_[i]);
  }
  ++grows_;
}

}  // namespace hybridstore
