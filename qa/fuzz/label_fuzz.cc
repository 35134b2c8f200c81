// libFuzzer target: the device label and superblock decoders
// (store_format.h), fed untrusted bytes. Input: one mode byte, then
//   mode % 4 == 0: a label body, sealed (record version 1, or 2 when mode
//                  bit 2 is set) and framed by the target;
//   mode % 4 == 1: a raw label block;
//   mode % 4 == 2: a superblock body, sealed by the target;
//   mode % 4 == 3: a raw superblock record.
// Properties: never a crash, an out-of-bounds read or undefined behaviour;
// a rejection says why; whatever is accepted round-trips through its encoder.
#include <cstdint>

#include "fuzz_common.h"
#include "hybridstore/format/store_format.h"

using namespace hybridstore;
using namespace hybridstore::fuzz;

namespace {

void check_label(std::string_view block) {
  DeviceLabel l;
  std::string why;
  if (decode_label(block, &l, &why) < 0) {
    require(!why.empty(), "a rejected label must say why");
    return;
  }
  // Whatever decodes is within the limits, so it encodes again (as record
  // version 2, a version-1 label with its new fields at their defaults).
  std::string enc;
  require(encode_label(l, &enc) == 0, "a decoded label must re-encode");
  DeviceLabel l2;
  require(decode_label(enc, &l2, &why) == 0, "a re-encoded label must decode");
  require(same_label_content(l2, l) && l2.record_version == 2, "label round trip changed it");
}

void check_superblock(std::string_view record) {
  Superblock s;
  std::string why;
  if (decode_superblock(record, &s, &why) < 0) {
    require(!why.empty(), "a rejected superblock must say why");
    return;
  }
  const std::string again = encode_superblock(s);
  Superblock s2;
  require(decode_superblock(again, &s2, &why) == 0, "a re-encoded superblock must decode");
  require(encode_superblock(s2) == again, "superblock encoding must be stable");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool tags_ok = [] {
    std::string label;
    encode_label(DeviceLabel(), &label);
    body_of(kLabelTag, std::string_view(label).substr(kLabelMagicLen + 4, load_fixed32(label.data() + kLabelMagicLen)));
    body_of(kSuperTag, encode_superblock(Superblock()));
    return true;
  }();
  (void)tags_ok;
  if (size == 0) return 0;
  std::string_view rest = as_view(data + 1, size - 1);
  switch (data[0] % 4) {
    case 0: {
      // Bodies of both record versions: mode bit 2 picks which.
      std::string rec = seal_record(kLabelTag, (data[0] & 4) ? 2 : 1, rest);
      std::string block(kLabelMagic, kLabelMagicLen);
      put_fixed32(&block, static_cast<uint32_t>(rec.size()));
      block += rec;
      if (block.size() < kLabelSize) block.resize(kLabelSize, '\0');
      check_label(block);
      break;
    }
    case 1:
      check_label(rest);
      break;
    case 2:
      check_superblock(seal_record(kSuperTag, 1, rest));
      break;
    default:
      check_superblock(rest);
      break;
  }
  return 0;
}
