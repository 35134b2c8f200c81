#include "ftl/nand_geometry.h"

#include <cerrno>

#include <fmt/format.h>

namespace hybridstore::ftl {

int NandGeometry::validate(std::string* error) const {
  auto fail = [&](std::string msg) {
    if (error) *error = std::move(msg);
    return -EINVAL;
  };
  if (page_size < 512 || page_size > 65536 || (page_size & (page_size - 1)))
    return fail(fmt::format("page size {} must be a power of two in [512, 65536]", page_size));
  if (pages_per_block < 4 || pages_per_block > 4096)
    return fail(fmt::format("pages per block {} must be in [4, 4096]", pages_per_block));
  if (oob_size < kMinOobSize || oob_size > page_size)
    return fail(fmt::format("OOB size {} must be in [{}, page size]", oob_size, kMinOobSize));
  if (block_count < 8 || block_count > (1u << 24))
    return fail(fmt::format("block count {} must be in [8, 2^24]", block_count));
  return 0;
}

std::string describe(const NandGeometry& g) {
  return fmt::format("{} blocks x {} pages x ({} + {} OOB) B = {} MiB", g.block_count,
                     g.pages_per_block, g.page_size, g.oob_size, g.total_bytes() >> 20);
}

}  // namespace hybridstore::ftl
