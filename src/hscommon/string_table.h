// StringTable: a hash table from string keys to values, for tables probed on
// every I/O (the heat tracker's shards).
//
// Why not std::unordered_map: a lookup there walks a bucket, the node before
// the wanted one, the node and the key's heap block, each a cache miss once
// the table is larger than the caches, and hashes the key again; in a
// profile of 4 KiB random reads on NAND that lookup was 11-12% of a read
// (docs/benchmarks.md, item 32). No flat hash map is in the C++17
// standard library or in both places the engine is built (Debian's packages
// and a Ceph source tree), hence this one.
//
// Layout: one array of 8-byte slots, probed linearly, each holding the upper
// 32 bits of the key's hash and the index of its entry; the entries (key,
// full hash, value) sit densely in chunks that never move. A lookup reads
// one slot line, then the entry whose slot hash matches, then its key. The
// table keeps at most half its slots full. The caller hashes the key once
// and passes the hash to every call (the heat tracker picks its shard from
// the same hash); the low bits choose the slot.
//
// Entries are numbered 0..size()-1; erase() moves the last entry into the
// hole, so indices of other entries stay valid except the last one's.
// Not thread-safe: the caller locks.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hybridstore {

template <class V>
class StringTable {
 public:
  struct Entry {
    std::string key;
    uint64_t hash = 0;
    V value{};
  };
  // Slots store index + 1 in 32 bits (0 is an empty slot).
  static constexpr size_t kMaxEntries = UINT32_MAX - 1;

  StringTable() = default;
  StringTable(const StringTable&) = delete;
  StringTable& operator=(const StringTable&) = delete;

  size_t size() const { return size_; }
  Entry& at(size_t i) { return chunks_[i / kChunk][i % kChunk]; }
  const Entry& at(size_t i) const { return chunks_[i / kChunk][i % kChunk]; }

  // The entry's index, or -1.
  ptrdiff_t find(std::string_view key, uint64_t hash) const {
    if (slots_.empty()) return -1;
    const uint32_t tag = slot_tag(hash);
    for (size_t p = hash & mask_;; p = (p + 1) & mask_) {
      const uint64_t s = slots_[p];
      if (s == 0) return -1;
      if (static_cast<uint32_t>(s >> 32) != tag) continue;
      const size_t i = static_cast<uint32_t>(s) - 1;
      const Entry& e = at(i);
      if (e.hash == hash && e.key.size() == key.size() && std::memcmp(e.key.data(), key.data(), key.size()) == 0)
        return static_cast<ptrdiff_t>(i);
    }
  }

  // Adds a key that is not in the table (the caller found it absent);
  // returns its index. size() must be below kMaxEntries.
  size_t insert(std::string_view key, uint64_t hash, const V& value) {
    if ((size_ + 1) * 2 > slots_.size()) grow_slots();
    if (size_ == chunks_.size() * kChunk) chunks_.push_back(std::make_unique<Entry[]>(kChunk));
    const size_t i = size_++;
    Entry& e = at(i);
    e.key.assign(key.data(), key.size());
    key_bytes_ += key_heap_bytes(key.size());
    e.hash = hash;
    e.value = value;
    place(hash, i);
    return i;
  }

  // Removes entry i; the last entry (if another) takes index i.
  void erase(size_t i) {
    const size_t last = size_ - 1;
    key_bytes_ -= key_heap_bytes(at(i).key.size());
    remove_slot(slot_of(i));
    if (i != last) {
      Entry& hole = at(i);
      Entry& moved = at(last);
      hole.key.swap(moved.key);
      hole.hash = moved.hash;
      hole.value = moved.value;
      slots_[slot_of(last)] = make_slot(hole.hash, i);
    }
    Entry& gone = at(last);
    std::string().swap(gone.key);  // frees a long key's heap block
    gone.value = V{};
    --size_;
    if (size_ <= (chunks_.size() - 1) * kChunk) chunks_.pop_back();  // its last entry went
  }

  // Heap bytes held: slots, chunks, and the keys longer than the
  // small-string buffer (malloc-rounded as glibc does).
  size_t memory_bytes() const {
    return slots_.capacity() * sizeof(uint64_t) + chunks_.capacity() * sizeof(void*) +
           chunks_.size() * malloc_rounded(kChunk * sizeof(Entry)) + key_bytes_;
  }
  // memory_bytes() once one more key of `key_len` bytes is inserted: a
  // caller held to a byte budget checks before it inserts.
  size_t memory_bytes_with(size_t key_len) const {
    size_t slots = slots_.capacity();
    if ((size_ + 1) * 2 > slots_.size()) slots = std::max(slots, slots_.empty() ? size_t{16} : slots_.size() * 2);
    size_t chunk_ptrs = chunks_.capacity(), chunks = chunks_.size();
    if (size_ == chunks * kChunk) {
      ++chunks;
      if (chunks > chunk_ptrs) chunk_ptrs = std::max<size_t>(1, chunk_ptrs * 2);
    }
    return slots * sizeof(uint64_t) + chunk_ptrs * sizeof(void*) + chunks * malloc_rounded(kChunk * sizeof(Entry)) +
           key_bytes_ + key_heap_bytes(key_len);
  }
  // The estimate per entry for a table of many entries with keys of
  // `key_len` bytes: its entry, three slots (the table is between a quarter
  // and half full, so two to four slots an entry), its key's heap block.
  static size_t bytes_per_entry(size_t key_len) {
    return sizeof(Entry) + 3 * sizeof(uint64_t) + key_heap_bytes(key_len);
  }
  static size_t key_heap_bytes(size_t key_len) {
    return key_len > kSmallString ? malloc_rounded(key_len + 1) : 0;
  }

 private:
  static constexpr size_t kChunk = 64;
  static constexpr size_t kSmallString = 15;  // libstdc++'s std::string keeps up to 15 bytes inline

  static size_t malloc_rounded(size_t n) { return (n + 8 + 15) / 16 * 16; }
  static uint32_t slot_tag(uint64_t hash) { return static_cast<uint32_t>(hash >> 32); }
  static uint64_t make_slot(uint64_t hash, size_t i) {
    return (static_cast<uint64_t>(slot_tag(hash)) << 32) | static_cast<uint64_t>(i + 1);
  }

  void place(uint64_t hash, size_t i) {
    size_t p = hash & mask_;
    while (slots_[p] != 0) p = (p + 1) & mask_;
    slots_[p] = make_slot(hash, i);
  }
  size_t slot_of(size_t i) const {
    const uint64_t want = i + 1;
    for (size_t p = at(i).hash & mask_;; p = (p + 1) & mask_)
      if ((slots_[p] & UINT32_MAX) == want) return p;
  }
  // Backward-shift deletion: later slots of the probe run move up, so no
  // tombstones build up and lookups stay short.
  void remove_slot(size_t hole) {
    for (size_t p = (hole + 1) & mask_; slots_[p] != 0; p = (p + 1) & mask_) {
      const size_t home = at(static_cast<uint32_t>(slots_[p]) - 1).hash & mask_;
      // The entry at p may fill the hole when its home is not in (hole, p].
      if (((p - home) & mask_) >= ((p - hole) & mask_)) {
        slots_[hole] = slots_[p];
        hole = p;
      }
    }
    slots_[hole] = 0;
  }
  void grow_slots() {
    slots_.assign(slots_.empty() ? 16 : slots_.size() * 2, 0);
    mask_ = slots_.size() - 1;
    for (size_t i = 0; i < size_; ++i) place(at(i).hash, i);
  }

  std::vector<uint64_t> slots_;
  size_t mask_ = 0;
  std::vector<std::unique_ptr<Entry[]>> chunks_;
  size_t size_ = 0;
  size_t key_bytes_ = 0;  // heap blocks of the long keys, so memory_bytes() costs no walk
};

}  // namespace hybridstore
