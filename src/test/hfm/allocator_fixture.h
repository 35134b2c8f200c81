// Shared by the section allocator tests: building allocators from section text
// and a brute-force model of which block belongs to which object.
#pragma once
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "hybridstore/sections/section_allocator.h"

namespace hybridstore::test {

struct AllocSetup {
  std::string sections = "small:8K:rho1,mid:64K:rho2,large:512K:rho3:delta32";
  uint64_t ssd_bytes = 64ull << 20;
  uint32_t block_size = 1024;
  uint64_t erase_block = 256 << 10;
  uint32_t groups = 1;
  uint64_t first_block = 0;
  AllocatorTuning tune{};
};

inline AllocatorGeometry make_geometry(const AllocSetup& s) {
  AllocatorGeometry g;
  g.block_size = s.block_size;
  g.first_block = s.first_block;
  g.blocks = s.ssd_bytes / s.block_size;
  g.erase_block_bytes = s.erase_block;
  g.groups = s.groups;
  SectionDefaults d;
  d.block_size = s.block_size;
  std::string err;
  EXPECT_EQ(parse_sections(s.sections, d, &g.sections, &err), 0) << err;
  return g;
}

inline std::unique_ptr<SectionAllocator> make_allocator(const AllocSetup& s) {
  std::unique_ptr<SectionAllocator> a;
  std::string err;
  EXPECT_EQ(SectionAllocator::create(make_geometry(s), s.tune, &a, &err), 0) << err;
  return a;
}

// Which object owns each block, checked against every allocation and release.
class BlockModel {
 public:
  struct Object {
    uint64_t bytes;
    std::vector<AllocPiece> pieces;
  };

  // Records an allocation; false (with a gtest failure) when it overlaps.
  bool add(uint64_t id, uint64_t bytes, const std::vector<AllocPiece>& pieces, uint32_t bs) {
    uint64_t blocks = 0;
    for (const auto& p : pieces) {
      for (uint64_t b = p.block; b < p.block + p.blocks; ++b) {
        if (!owner_.emplace(b, id).second) {
          ADD_FAILURE() << "block " << b << " handed out twice";
          return false;
        }
      }
      blocks += p.blocks;
    }
    EXPECT_EQ(blocks, (bytes + bs - 1) / bs);
    objects_[id] = Object{bytes, pieces};
    return true;
  }
  void remove(uint64_t id) {
    for (const auto& p : objects_.at(id).pieces)
      for (uint64_t b = p.block; b < p.block + p.blocks; ++b) owner_.erase(b);
    objects_.erase(id);
  }
  size_t live_blocks() const { return owner_.size(); }
  const std::map<uint64_t, Object>& objects() const { return objects_; }

 private:
  std::map<uint64_t, uint64_t> owner_;
  std::map<uint64_t, Object> objects_;
};

inline uint64_t total_live_blocks(const SectionAllocator& a) {
  uint64_t n = 0;
  for (const auto& u : a.usage()) n += u.live_blocks;
  return n;
}

}  // namespace hybridstore::test
