// libFuzzer target: the kvfs log group decoder and the kvfs superblock
// decoder (kvfs_log.h, kvfs_super.h), fed untrusted bytes. Input: one mode
// byte, then
//   mode % 4 == 0: a group body, sealed and framed by the target;
//   mode % 4 == 1: raw group bytes;
//   mode % 4 == 2: a superblock body, sealed and framed by the target;
//   mode % 4 == 3: a raw superblock slot.
// Properties: never a crash, an out-of-bounds read or undefined behaviour;
// a rejection says why; an accepted group re-encodes to a group that
// decodes to the same records, and its records go through the replay
// state's checks (accepted or refused with a reason, never a crash); an
// accepted superblock round-trips.
#include <cstdint>

#include "fuzz_common.h"
#include "hybridstore/kvfs/kvfs_log.h"
#include "hybridstore/kvfs/kvfs_state.h"
#include "hybridstore/kvfs/kvfs_super.h"

using namespace hybridstore;
using namespace hybridstore::fuzz;

namespace {

constexpr uint64_t kBlock = 4096;

void check_group(std::string_view in) {
  KvGroup g;
  uint64_t len = 0;
  std::string why;
  if (decode_kvfs_group(in, kBlock, &g, &len, &why) < 0) {
    require(!why.empty(), "a rejected group must say why");
    return;
  }
  require(len % kBlock == 0 && len >= kBlock, "a group's padded length is whole blocks");
  const std::string again = encode_kvfs_group(g, kBlock);
  KvGroup g2;
  uint64_t len2 = 0;
  require(decode_kvfs_group(again, kBlock, &g2, &len2, &why) == 0, "a re-encoded group must decode");
  require(g2.log_id == g.log_id && g2.first_seq == g.first_seq && g2.records == g.records,
          "group round trip changed it");
  require(len2 == again.size() && kvfs_group_size(g, kBlock) == again.size(), "group size mismatch");
  // Whatever the records say, the state checks them without crashing.
  Uuid uuid{};
  KvFsState state(uuid, KvFsGeometry{kBlock, 65536, 1 << 20, 1 << 20, 1ull << 40});
  if (state.begin_log(KvFsExtent{1 << 20, 65536}, &why) < 0) return;
  for (size_t i = 0; i < g.records.size(); ++i) {
    why.clear();
    if (state.apply(g.records[i], g.first_seq + i, &why) < 0) require(!why.empty(), "a refused record must say why");
  }
}

void check_super(std::string_view slot) {
  KvFsSuper s;
  std::string why;
  if (decode_kvfs_super(slot, &s, &why) < 0) {
    require(!why.empty(), "a rejected kvfs superblock must say why");
    return;
  }
  std::string again;
  require(encode_kvfs_super(s, kBlock, &again, &why) == 0, "an accepted superblock must encode");
  KvFsSuper s2;
  require(decode_kvfs_super(again, &s2, &why) == 0 && s2 == s, "kvfs superblock round trip changed it");
}

std::string frame_group(std::string_view body) {
  const std::string rec = seal_record(kKvfsGroupTag, 1, body);
  std::string out;
  put_fixed32(&out, kKvfsGroupMagic);
  put_fixed32(&out, static_cast<uint32_t>(rec.size()));
  return out + rec;
}

std::string frame_super(std::string_view body) {
  const std::string rec = seal_record(kKvfsSuperTag, 1, body);
  std::string out(kKvfsSuperMagic, kKvfsSuperMagicLen);
  put_fixed32(&out, static_cast<uint32_t>(rec.size()));
  out += rec;
  if (out.size() < kBlock) out.resize(kBlock, '\0');
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool tags_ok = [] {
    const std::string group = encode_kvfs_group(KvGroup{}, kBlock);
    require(load_fixed32(group.data()) == kKvfsGroupMagic, "group magic copy does not match its encoder");
    body_of(kKvfsGroupTag, std::string_view(group).substr(8, load_fixed32(group.data() + 4)));
    KvFsSuper s;
    s.block = s.alloc_unit = s.lend_unit = kBlock;
    s.log_segment = KvFsExtent{0, kBlock};
    std::string slot, why;
    require(encode_kvfs_super(s, kBlock, &slot, &why) == 0, "the superblock must encode");
    require(slot.compare(0, kKvfsSuperMagicLen, kKvfsSuperMagic) == 0, "superblock magic copy does not match");
    body_of(kKvfsSuperTag,
            std::string_view(slot).substr(kKvfsSuperMagicLen + 4, load_fixed32(slot.data() + kKvfsSuperMagicLen)));
    return true;
  }();
  (void)tags_ok;
  if (size == 0) return 0;
  std::string_view rest = as_view(data + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      check_group(frame_group(rest));
      break;
    case 1:
      check_group(rest);
      break;
    case 2:
      check_super(frame_super(rest));
      break;
    default:
      check_super(rest);
      break;
  }
  return 0;
}
