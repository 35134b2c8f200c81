// Human-readable report of the SSD sections of an allocator: per section the
// erase units and extents it holds, how full they are and how fragmented.
// Used by `hybridstore-tool sections` (store-backed) and the benchmarks.
#pragma once
#include <string>

#include "hybridstore/sections/section_allocator.h"

namespace hybridstore {

// One line per section plus a total, columns:
//   units      erase units owned (consumed = units x unit size)
//   extents    open / sealed (staged) / written
//   live       bytes of object data
//   util       live bytes / consumed bytes
//   fill       live blocks / blocks of extents handed out
//   frag       free blocks inside handed-out extents (gaps, tails, holes) /
//              blocks of extents handed out
//   holes      free blocks inside written extents (reclaimed by the cleaner or,
//              with holes=fill, reused in place)
std::string format_section_report(const SectionAllocator& a);

}  // namespace hybridstore
