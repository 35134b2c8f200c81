// A store's tiers, named one way and ordered another.
//
// A tier's id (Tier) names its device and its options, fixed at mkfs:
// kSsd is block.ssd and hybridstore_ssd_*, kHdd block.hdd and
// hybridstore_hdd_*, kTier2 and kTier3 the extra tiers of a store made with
// hybridstore_tiers > 2 (block.tier2, hybridstore_tier2_*, ...). Records
// (extents, deferred writes, bitmap keys, labels) hold the id. An id says
// nothing about speed.
//
// A tier's rank is its place in the store's order (TierOrder, recorded in
// the superblock), fastest first: everything that places or moves data goes
// by rank. mkfs writes SSD, tier2, tier3, HDD.
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace hybridstore {

enum class Tier : uint8_t { kSsd = 0, kHdd = 1, kTier2 = 2, kTier3 = 3 };
constexpr int kMaxTiers = 4;

const char* tier_name(Tier t);  // "ssd", "hdd", "tier2", "tier3"
// The name of a per-tier option, or of a key named the same way:
// "hybridstore_<tier>_<what>" (hybridstore_ssd_path, hybridstore_tier2_size).
std::string tier_option(Tier t, std::string_view what);

// The id as a number: what records hold and arrays by id are indexed by.
constexpr int tier_index(Tier t) { return static_cast<int>(t); }
constexpr Tier tier_at(int index) { return static_cast<Tier>(index); }  // 0 <= index < kMaxTiers

// The ids of a store of `n` tiers, 0 .. n-1: `for (Tier t : tier_ids(n))`.
class TierIds {
 public:
  class iterator {
   public:
    explicit constexpr iterator(int i) : i_(i) {}
    constexpr Tier operator*() const { return tier_at(i_); }
    constexpr iterator& operator++() {
      ++i_;
      return *this;
    }
    constexpr bool operator!=(const iterator& o) const { return i_ != o.i_; }

   private:
    int i_;
  };
  explicit constexpr TierIds(int n) : n_(n) {}
  constexpr iterator begin() const { return iterator(0); }
  constexpr iterator end() const { return iterator(n_); }

 private:
  int n_;
};
constexpr TierIds tier_ids(int n) { return TierIds(n); }

// A value per tier, by id. Indexed by a Tier, or by the id's number (as
// the tools and the Ceph adapter walk a store's tiers 0 .. tiers-1).
template <class T>
struct PerTier {
  std::array<T, kMaxTiers> by_id{};

  T& operator[](Tier t) { return by_id[tier_index(t)]; }
  const T& operator[](Tier t) const { return by_id[tier_index(t)]; }
  T& operator[](int id) { return by_id[id]; }
  const T& operator[](int id) const { return by_id[id]; }
  T* begin() { return by_id.data(); }
  T* end() { return by_id.data() + kMaxTiers; }
  const T* begin() const { return by_id.data(); }
  const T* end() const { return by_id.data() + kMaxTiers; }
};

// A store's tiers by rank, fastest first.
class TierOrder {
 public:
  TierOrder() = default;
  TierOrder(std::initializer_list<Tier> fastest_first);
  // The order mkfs gives a store of `tiers` tiers: SSD, tier2, tier3, HDD.
  static TierOrder made_by_mkfs(int tiers);

  int count() const { return count_; }
  // The tier at `rank` (0 = fastest).
  Tier operator[](int rank) const { return at_[rank]; }
  Tier fastest() const { return at_[0]; }
  Tier slowest() const { return at_[count_ - 1]; }
  // The tier's rank; count() for a tier the store does not have.
  int rank(Tier t) const;
  bool has(Tier t) const { return rank(t) < count_; }
  // The neighbour of `t` one step slower (+1) or faster (-1); `t` itself at
  // the end of the order.
  Tier next(Tier t, int step) const;
  // Where a write that prefers `preferred` goes when a tier is full:
  // `preferred`, then the slower tiers fastest first, then the faster ones
  // nearest first. Fills `out` (count() entries), returns count().
  int spill_order(Tier preferred, Tier* out) const;
  // The rank, from `from` on, of the tier holding the most of `bytes`, the
  // faster on a tie; -1 when none holds any.
  int heaviest(const PerTier<uint64_t>& bytes, int from = 0) const;
  // Adds `t` as the slowest tier so far.
  void add(Tier t) { at_[count_++] = t; }

  const Tier* begin() const { return at_; }
  const Tier* end() const { return at_ + count_; }
  bool operator==(const TierOrder& o) const;

 private:
  Tier at_[kMaxTiers] = {};
  int count_ = 0;
};

}  // namespace hybridstore
