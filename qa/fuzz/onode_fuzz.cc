// libFuzzer target: the onode and extent-shard decoders (onode.h), fed
// untrusted bytes. Input: one mode byte, then either a raw record (mode bit
// 0) or a body that the target seals with the tag and the version the mode
// picks (bit 1: onode record version 1 or 2, bit 3: version 3, which only
// decodes yet; bit 2: an extent shard record
// instead of an onode, checked against the ref its own header and bytes
// would have, so the extent parsing behind the crc is reached too).
// Properties: never a crash, an out-of-bounds read or undefined behaviour;
// a rejected input says why; an accepted one re-encodes to a record that
// decodes to the same onode (or shard) and encodes identically again.
#include <cstdint>
#include <vector>

#include "fuzz_common.h"
#include "hscommon/crc32c.h"
#include "hybridstore/format/onode.h"

using namespace hybridstore;
using namespace hybridstore::fuzz;

namespace {

int fuzz_shard(uint8_t mode, std::string_view rest) {
  const std::string record = (mode & 1) ? std::string(rest) : seal_record(kShardTag, 1, rest);
  // The ref a well-formed shard would be named with: its own index and
  // count, and the crc32c of the extents after them.
  ShardRef ref;
  uint8_t ver;
  std::string_view body;
  if (open_record(kShardTag, 255, record, &ver, &body) == RecordError::kNone) {
    Decoder d(body);
    if (d.get_varint(&ref.index) && d.get_varint(&ref.extents)) ref.crc = crc32c(d.rest());
  }
  ExtentMap m;
  std::string why;
  if (!decode_extent_shard(record, ref, &m, &why)) {
    require(!why.empty(), "a rejected shard must say why");
    require(m.empty(), "a rejected shard must add nothing");
    return 0;
  }
  require(m.size() == ref.extents, "an accepted shard holds the extents its ref names");
  const std::string again = encode_extent_shard(m, ref.index);
  const ShardRef ref2{ref.index, m.shard_extent_count(ref.index), m.shard_crc(ref.index)};
  ExtentMap m2;
  require(decode_extent_shard(again, ref2, &m2, &why), "a re-encoded shard must decode");
  require(encode_extent_shard(m2, ref.index) == again, "shard encoding must be stable");
  require(extent_fingerprint(m2) == extent_fingerprint(m), "shard round trip changed it");
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool tags_ok = (body_of(kOnodeTag, encode_onode(Onode())),
                               body_of(kShardTag, encode_extent_shard(ExtentMap(), 0)), true);
  (void)tags_ok;
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  std::string_view rest = as_view(data + 1, size - 1);
  if (mode & 4) return fuzz_shard(mode, rest);
  // Bit 3 picks record version 3 (the incarnation and version after the rest).
  const uint8_t version = (mode & 8) ? 3 : static_cast<uint8_t>(1 + (mode >> 1) % 2);
  std::string record = (mode & 1) ? std::string(rest) : seal_record(kOnodeTag, version, rest);
  Onode o;
  std::string why;
  std::vector<ShardRef> refs;
  if (!decode_onode(record, &o, &why, kMaxTiers, &refs)) {
    require(!why.empty(), "a rejected onode must say why");
    return 0;
  }
  if (o.extents_in_shards) {
    require(!refs.empty() && o.extents.empty(), "a sharded onode names its shards and holds no extent");
    for (size_t i = 1; i < refs.size(); ++i) require(refs[i - 1].index < refs[i].index, "shard refs in order");
    require(!decode_onode(record, &o, &why), "a sharded onode read without its shards is refused");
    return 0;
  }
  for (bool versions : {false, true}) {
    const std::string again = encode_onode(o, false, versions);
    Onode o2;
    require(decode_onode(again, &o2, &why), "a re-encoded onode must decode");
    require(encode_onode(o2, false, versions) == again, "onode encoding must be stable");
    require(o2.size == o.size && o2.attrs == o.attrs && o2.extents.size() == o.extents.size(),
            "onode round trip changed it");
    require(!versions || (o2.incarnation == o.incarnation && o2.version == o.version),
            "a version-3 round trip keeps incarnation and version");
  }
  return 0;
}
