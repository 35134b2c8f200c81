#include "hscommon/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace hybridstore {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // reflected Castagnoli polynomial

// Slicing-by-8 tables: table[k][b] is the crc of byte b followed by k zero bytes.
struct Tables {
  std::array<std::array<uint32_t, 256>, 8> t{};
  Tables() {
    for (uint32_t b = 0; b < 256; ++b) {
      uint32_t c = b;
      for (int i = 0; i < 8; ++i) c = (c >> 1) ^ (kPoly & (0u - (c & 1u)));
      t[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; ++b)
      for (int k = 1; k < 8; ++k) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
  }
};

const Tables& tables() {
  static const Tables tb;
  return tb;
}

uint32_t crc32c_software(uint32_t crc, const uint8_t* p, size_t len) {
  const auto& t = tables().t;
  crc = ~crc;
  while (len >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    uint32_t lo = static_cast<uint32_t>(w) ^ crc;
    uint32_t hi = static_cast<uint32_t>(w >> 32);
    crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
          t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    len -= 8;
  }
  while (len--) crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xff];
  return ~crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(uint32_t crc, const uint8_t* p,
                                                         size_t len) {
  uint64_t c = ~crc;
  while (len >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c = _mm_crc32_u64(c, w);
    p += 8;
    len -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (len--) c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}

// Three blocks at once: the crc32 instruction has a latency of about three
// cycles and a throughput of one, so one dependency chain uses a third of
// the unit. Independent blocks need no combining step.
__attribute__((target("sse4.2"))) void crc32c_sse42_x3(const uint8_t* a, const uint8_t* b, const uint8_t* c,
                                                       size_t len, uint32_t* out) {
  uint64_t ca = 0xffffffffu, cb = 0xffffffffu, cc = 0xffffffffu;
  size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    uint64_t wa, wb, wc;
    std::memcpy(&wa, a + i, 8);
    std::memcpy(&wb, b + i, 8);
    std::memcpy(&wc, c + i, 8);
    ca = _mm_crc32_u64(ca, wa);
    cb = _mm_crc32_u64(cb, wb);
    cc = _mm_crc32_u64(cc, wc);
  }
  uint32_t ra = static_cast<uint32_t>(ca), rb = static_cast<uint32_t>(cb), rc = static_cast<uint32_t>(cc);
  for (; i < len; ++i) {
    ra = _mm_crc32_u8(ra, a[i]);
    rb = _mm_crc32_u8(rb, b[i]);
    rc = _mm_crc32_u8(rc, c[i]);
  }
  out[0] = ~ra;
  out[1] = ~rb;
  out[2] = ~rc;
}

bool detect_hardware() { return __builtin_cpu_supports("sse4.2"); }
#else
bool detect_hardware() { return false; }
#endif

const bool kHardware = detect_hardware();

}  // namespace

uint32_t crc32c(uint32_t crc, const void* data, size_t len) {
  const auto* p = static_cast<const uint8_t*>(data);
#if defined(__x86_64__)
  if (kHardware) return crc32c_sse42(crc, p, len);
#endif
  return crc32c_software(crc, p, len);
}

void crc32c_blocks(const void* data, size_t block, size_t count, uint32_t* out) {
  const auto* p = static_cast<const uint8_t*>(data);
  size_t i = 0;
#if defined(__x86_64__)
  if (kHardware)
    for (; i + 3 <= count; i += 3) crc32c_sse42_x3(p + i * block, p + (i + 1) * block, p + (i + 2) * block, block, out + i);
#endif
  for (; i < count; ++i) out[i] = crc32c(0, p + i * block, block);
}

bool crc32c_hardware() { return kHardware; }

}  // namespace hybridstore
