#include "hybridstore/kv/heat_record.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "hscommon/encoding.h"

namespace hybridstore {

namespace {

constexpr uint32_t kEntryTag = 0x48454154;  // "HEAT"
// v2 added the decay, which a merge needs and v1 never had to carry.
constexpr uint8_t kEntryVersion = 2;

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
uint64_t double_bits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
}
double bits_double(uint64_t u) {
  double d;
  std::memcpy(&d, &u, sizeof d);
  return d;
}

uint32_t add_saturated(uint32_t a, uint32_t b) { return a > UINT32_MAX - b ? UINT32_MAX : a + b; }

}  // namespace

const char* access_type_name(AccessType t) { return t == AccessType::kWrite ? "write" : "read"; }

double heat_decayed(double v, uint32_t from, uint32_t to, double decay) {
  if (to <= from) return v;
  if (decay == 0.0) return 0.0;
  if (decay == 1.0) return v;
  return v * std::pow(decay, static_cast<double>(to - from));
}

void fold_heat(HeatRecord* r, uint32_t epoch, double decay) {
  if (r->epoch >= epoch) return;
  r->hist_f = static_cast<float>(heat_decayed(static_cast<double>(r->hist_f) + r->cur_f, r->epoch, epoch, decay));
  r->hist_r = static_cast<float>(heat_decayed(static_cast<double>(r->hist_r) + r->cur_r, r->epoch, epoch, decay));
  r->cur_f = 0;
  r->cur_r = 0;
  r->epoch = epoch;
}

void merge_heat(HeatRecord* acc, const HeatRecord& later) {
  // The record at the newer window says how its history was weighted.
  const uint32_t epoch = std::max(acc->epoch, later.epoch);
  double decay = later.epoch >= acc->epoch ? later.decay : acc->decay;
  if (decay < 0) decay = later.decay >= 0 ? later.decay : acc->decay;
  if (decay < 0) decay = 0.5;  // two v1 records: the option's default is the best guess
  HeatRecord b = later;
  fold_heat(acc, epoch, decay);
  fold_heat(&b, epoch, decay);
  acc->hist_f += b.hist_f;
  acc->hist_r += b.hist_r;
  acc->cur_f = add_saturated(acc->cur_f, b.cur_f);
  acc->cur_r = add_saturated(acc->cur_r, b.cur_r);
  if (b.last_time_us >= acc->last_time_us) {
    acc->size = b.size;
    acc->last_offset = b.last_offset;
    acc->last_end = b.last_end;
    acc->last_time_us = b.last_time_us;
    acc->last_type = b.last_type;
  }
  if (later.decay >= 0) acc->decay = later.decay;
  // Sums of valid records stay valid records: float rounding may lift R
  // past f by an ulp, and huge counts may overflow; either would make the
  // decoder drop the merged history.
  if (!(acc->hist_f <= std::numeric_limits<float>::max())) acc->hist_f = std::numeric_limits<float>::max();
  if (!(acc->hist_r <= acc->hist_f)) acc->hist_r = acc->hist_f;
}

// Body v2: varint size, varint last_offset, varint (last_end - last_offset),
// varint last_time_us, varint cur_f, varint cur_r, fixed32 hist_f (IEEE float
// bits), fixed32 hist_r, varint epoch, u8 last_type, fixed64 decay (IEEE
// double bits). v1 is the same without the decay.
std::string encode_heat_record(const HeatRecord& r) {
  std::string body;
  put_varint(&body, r.size);
  put_varint(&body, r.last_offset);
  put_varint(&body, r.last_end - r.last_offset);
  put_varint(&body, r.last_time_us);
  put_varint(&body, r.cur_f);
  put_varint(&body, r.cur_r);
  put_fixed32(&body, float_bits(r.hist_f));
  put_fixed32(&body, float_bits(r.hist_r));
  put_varint(&body, r.epoch);
  put_u8(&body, static_cast<uint8_t>(r.last_type));
  put_fixed64(&body, double_bits(r.decay));
  return seal_record(kEntryTag, kEntryVersion, body);
}

int decode_heat_record(std::string_view record, HeatRecord* out, std::string* error) {
  uint8_t version;
  std::string_view body;
  if (int r = open_stored_record(kEntryTag, kEntryVersion, record, "heat record", &version, &body, error); r < 0)
    return r;
  Decoder d(body);
  HeatRecord e;
  uint64_t len;
  uint32_t hf, hr;
  uint8_t type;
  uint64_t decay_bits = double_bits(-1.0);
  if (!d.get_varint(&e.size) || !d.get_varint(&e.last_offset) || !d.get_varint(&len) ||
      !d.get_varint(&e.last_time_us) || !d.get_varint32(&e.cur_f) || !d.get_varint32(&e.cur_r) ||
      !d.get_fixed32(&hf) || !d.get_fixed32(&hr) || !d.get_varint32(&e.epoch) || !d.get_u8(&type) ||
      (version >= 2 && !d.get_fixed64(&decay_bits)) || !d.done()) {
    if (error) *error = "heat record: malformed body";
    return -EIO;
  }
  e.hist_f = bits_float(hf);
  e.hist_r = bits_float(hr);
  e.decay = bits_double(decay_bits);
  const char* why = nullptr;
  if (type > static_cast<uint8_t>(AccessType::kWrite)) why = "unknown access type";
  else if (len > UINT64_MAX - e.last_offset) why = "last request end overflows";
  else if (e.cur_r > e.cur_f) why = "randomness count exceeds frequency";
  else if (!std::isfinite(e.hist_f) || !std::isfinite(e.hist_r) || e.hist_f < 0 || e.hist_r < 0)
    why = "history counts not finite and non-negative";
  else if (e.hist_r > e.hist_f * 1.0001f + 1e-3f) why = "randomness history exceeds frequency";
  // -1: a record that never saw a window fold (the merge's identity).
  else if (version >= 2 && !(e.decay == -1.0 || (e.decay >= 0.0 && e.decay <= 1.0))) why = "decay outside [0, 1]";
  if (why) {
    if (error) *error = fmt::format("heat record: {}", why);
    return -EIO;
  }
  e.last_end = e.last_offset + len;
  e.last_type = static_cast<AccessType>(type);
  *out = e;
  return 0;
}

}  // namespace hybridstore
