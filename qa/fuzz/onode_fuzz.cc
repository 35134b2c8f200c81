// libFuzzer target: the onode decoder (onode.h), fed untrusted bytes.
// Input: one mode byte, then either a raw record (mode odd) or a body that
// the target seals with the onode tag and the version the mode byte picks.
// Properties: never a crash, an out-of-bounds read or undefined behaviour;
// a rejected input says why; an accepted one re-encodes to a record that
// decodes to the same onode and encodes identically again.
#include <cstdint>

#include "fuzz_common.h"
#include "hybridstore/format/onode.h"

using namespace hybridstore;
using namespace hybridstore::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool tags_ok = (body_of(kOnodeTag, encode_onode(Onode())), true);
  (void)tags_ok;
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  std::string_view rest = as_view(data + 1, size - 1);
  std::string record = (mode & 1) ? std::string(rest) : seal_record(kOnodeTag, static_cast<uint8_t>(1 + (mode >> 1) % 2), rest);
  Onode o;
  std::string why;
  if (!decode_onode(record, &o, &why)) {
    require(!why.empty(), "a rejected onode must say why");
    return 0;
  }
  const std::string again = encode_onode(o);
  Onode o2;
  require(decode_onode(again, &o2, &why), "a re-encoded onode must decode");
  require(encode_onode(o2) == again, "onode encoding must be stable");
  require(o2.size == o.size && o2.attrs == o.attrs && o2.extents.size() == o.extents.size(),
          "onode round trip changed it");
  return 0;
}
