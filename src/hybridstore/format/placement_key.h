// What placement can see of an object: the fields the sections' mapping
// rules match (sections/section_rules.h) and a tier's space is asked about
// when it places new data (space/tier_space.h). A view: it borrows the
// object's and the collection's strings and must not outlive them.
#pragma once
#include <cstdint>
#include <string_view>

#include "hybridstore/format/collection_id.h"
#include "hybridstore/format/object_id.h"

namespace hybridstore {

struct ObjectPlacementKey {
  int64_t pool = 0;
  std::string_view nspace;
  std::string_view collection;
  std::string_view name;
};

inline ObjectPlacementKey placement_key(const CollectionId& c, const ObjectId& o) {
  return ObjectPlacementKey{o.pool, o.nspace, c.name, o.name};
}

}  // namespace hybridstore
