// crc32c (Castagnoli), the checksum on every on-disk record and data block.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hybridstore {

// Extends `crc` with `len` bytes. Start a fresh checksum with crc = 0.
// Uses the SSE4.2 instruction when the CPU has it, a table otherwise; both
// give the same value (RFC 3720 test vectors in crc32c_test).
uint32_t crc32c(uint32_t crc, const void* data, size_t len);

inline uint32_t crc32c(std::string_view s) { return crc32c(0, s.data(), s.size()); }

// out[i] = crc32c(0, data + i * block, block) for i < count: the checksums of
// consecutive data blocks, several computed at once (about three times the
// speed of one at a time on the hardware path).
void crc32c_blocks(const void* data, size_t block, size_t count, uint32_t* out);

// True when the hardware path is in use (reported by tools and benches).
bool crc32c_hardware();

}  // namespace hybridstore
