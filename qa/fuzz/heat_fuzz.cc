// libFuzzer target: the heat record decoder (kv/heat_record.h), which
// reads RocksDB merge operands and stored records, fed untrusted bytes.
// Input: one mode byte, then either a raw record (mode bit 0) or a body the
// target seals with the heat tag and version 1 or 2 (bit 1), so the parsing
// behind the crc is reached. Properties: never a crash, an out-of-bounds
// read or undefined behaviour; a rejected input says why; an accepted one
// re-encodes stably, and its merge with itself and with the empty record
// (the merge operator's work) is again a record the decoder accepts.
#include <cstdint>

#include "fuzz_common.h"
#include "hybridstore/kv/heat_record.h"

using namespace hybridstore;
using namespace hybridstore::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool tag_ok = (body_of(kHeatTag, encode_heat_record(HeatRecord())), true);
  (void)tag_ok;
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  std::string_view rest = as_view(data + 1, size - 1);
  const std::string record =
      (mode & 1) ? std::string(rest) : seal_record(kHeatTag, static_cast<uint8_t>(1 + (mode >> 1) % 2), rest);
  HeatRecord r;
  std::string why;
  if (decode_heat_record(record, &r, &why) < 0) {
    require(!why.empty(), "a rejected heat record must say why");
    return 0;
  }
  const std::string again = encode_heat_record(r);
  HeatRecord r2;
  require(decode_heat_record(again, &r2, &why) == 0, "a re-encoded heat record must decode");
  require(encode_heat_record(r2) == again, "heat record encoding must be stable");
  HeatRecord sum = r;
  merge_heat(&sum, r2);
  require(decode_heat_record(encode_heat_record(sum), &r2, &why) == 0, "a merge of valid records must decode");
  HeatRecord empty;
  merge_heat(&empty, r);
  require(decode_heat_record(encode_heat_record(empty), &r2, &why) == 0, "a merge into nothing must decode");
  return 0;
}
