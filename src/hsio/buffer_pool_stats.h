// What AlignedBuffer's pool of freed I/O buffers holds (hsio/block_device.cc):
// buffers of 64 KiB and more are kept for reuse when freed, up to 256 MiB of
// them process-wide. For the store's mempools; a header of its own so that
// asking does not touch the device interface every layer includes.
#pragma once
#include <cstdint>

namespace hybridstore {

void aligned_buffer_pool_idle(uint64_t* buffers, uint64_t* bytes);
// At most `bytes` (and never more than 256 MiB) kept idle from now on; what
// is idle above it is freed at once. A memory target sets it.
void aligned_buffer_pool_set_idle_limit(uint64_t bytes);

}  // namespace hybridstore
