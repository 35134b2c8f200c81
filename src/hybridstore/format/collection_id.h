// Collection identity: Ceph's coll_t as text ("meta", "<pool>.<seed-hex>_head",
// "<pool>.<seed-hex>s<shard>_head", "..._TEMP"); other names are allowed for
// tools and tests. Collections sort by name.
#pragma once
#include <cstdint>
#include <string>

namespace hybridstore {

struct CollectionId {
  std::string name;

  CollectionId() = default;
  CollectionId(std::string n) : name(std::move(n)) {}  // NOLINT: implicit on purpose
  CollectionId(const char* n) : name(n) {}             // NOLINT

  bool valid() const;  // non-empty, no NUL, at most 1024 bytes
  bool is_meta() const { return name == "meta"; }
  // Parses "<pool>.<hex seed>[s<shard>]_head"; false for other names.
  bool parse_pg(int64_t* pool, uint32_t* seed, int* shard) const;
  // The pool objects named in this collection default to: the PG's pool, or
  // the meta pool (-1).
  int64_t default_pool() const;

  bool operator<(const CollectionId& o) const { return name < o.name; }
  bool operator==(const CollectionId& o) const { return name == o.name; }
  bool operator!=(const CollectionId& o) const { return name != o.name; }
};

}  // namespace hybridstore
