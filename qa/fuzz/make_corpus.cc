// Writes the seed corpora of the fuzz targets (qa/fuzz/corpus/<target>/):
// valid inputs of every mode, made by the real encoders, so that the fuzzers
// start from the formats' actual shapes. Run once when a format changes:
//   build-fuzz/bin/fuzz_make_corpus qa/fuzz/corpus
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "fuzz_common.h"
#include "hybridstore/format/onode.h"
#include "hybridstore/format/store_format.h"
#include "hybridstore/kv/journal_record.h"
#include "hscommon/crc32c.h"
#include "hybridstore/kvfs/kvfs_log.h"
#include "hybridstore/kvfs/kvfs_super.h"

using namespace hybridstore;
using namespace hybridstore::fuzz;

namespace {

void put(const std::string& dir, const std::string& name, char mode, std::string_view payload) {
  std::filesystem::create_directories(dir);
  std::ofstream f(dir + "/" + name, std::ios::binary | std::ios::trunc);
  f.put(mode);
  f.write(payload.data(), static_cast<std::streamsize>(payload.size()));
}

DataExtent extent(uint64_t logical, uint64_t len, uint64_t phys, Tier t) {
  DataExtent e;
  e.logical = logical;
  e.length = len;
  e.physical = phys;
  e.tier = t;
  e.csum_block = 4096;
  for (uint64_t i = 0; i < len / 4096; ++i) e.csums.push_back(static_cast<uint32_t>(0x9e3779b9u * (i + 1)));
  return e;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const std::string root = argv[1];

  std::vector<Onode> onodes(4);
  onodes[1].size = 5;
  onodes[1].attrs["_"] = "object info";
  onodes[1].attrs["snapset"] = "";
  onodes[1].extents.insert(extent(0, 4096, 65536, Tier::kSsd));
  onodes[2].size = 3 << 20;
  onodes[2].nid = 42;
  onodes[2].alloc_hint_flags = 1;
  onodes[2].expected_object_size = 4 << 20;
  onodes[2].expected_write_size = 1 << 20;
  onodes[2].extents.insert(extent(0, 1 << 20, 1 << 20, Tier::kHdd));
  onodes[2].extents.insert(extent(2 << 20, 1 << 20, 8 << 20, Tier::kHdd));
  onodes[3].size = 20000;
  onodes[3].nid = 7;
  for (int i = 0; i < 5; ++i) onodes[3].attrs["_a" + std::to_string(i)] = std::string(i * 10, 'v');
  onodes[3].extents.insert(extent(0, 8192, 131072, Tier::kSsd));
  onodes[3].extents.insert(extent(12288, 8192, 262144, Tier::kSsd));
  for (size_t i = 0; i < onodes.size(); ++i) {
    const std::string rec = encode_onode(onodes[i]);
    // Mode 2: sealed as record version 2, the version the encoder writes.
    put(root + "/onode", "sealed-" + std::to_string(i), 2, body_of(kOnodeTag, rec));
    put(root + "/onode", "raw-" + std::to_string(i), 1, rec);
    // Mode 8: sealed as record version 3 (format 7), incarnation and version last.
    Onode versioned = onodes[i];
    versioned.incarnation = 4097 + i;
    versioned.version = 1000 + i;
    put(root + "/onode", "sealed-v3-" + std::to_string(i), 8,
        body_of(kOnodeTag, encode_onode(versioned, false, true)));
  }
  // A map in shards: the onode naming them (modes as above), and each shard
  // (mode 4: sealed shard body; 5: raw shard record).
  Onode big;
  big.size = 1 << 20;
  big.attrs["_"] = "object info";
  for (uint64_t s = 0; s < 4; ++s)
    big.extents.insert(extent(s * ExtentMap::kShardSpan, ExtentMap::kShardSpan, (s + 1) << 20, Tier::kHdd));
  const std::string brec = encode_onode(big, true);
  put(root + "/onode", "sharded-sealed", 2, body_of(kOnodeTag, brec));
  put(root + "/onode", "sharded-raw", 1, brec);
  for (uint64_t s = 0; s < 4; s += 3) {
    const std::string srec = encode_extent_shard(big.extents, s);
    put(root + "/onode", "shard-sealed-" + std::to_string(s), 4, body_of(kShardTag, srec));
    put(root + "/onode", "shard-raw-" + std::to_string(s), 5, srec);
  }

  DeviceLabel l;
  l.fsid = generate_uuid();
  l.role = Tier::kHdd;
  l.size = 64ull << 30;
  l.created_us = 1700000000000000ull;
  l.description = "hybridstore hdd";
  l.generation = 3;
  l.flags = kLabelMkfsDone;
  l.slot = 4096;
  l.head = 65536;
  l.tiers = {{Tier::kSsd, {}, 4096, 8ull << 30}, {Tier::kHdd, {}, 65536, 64ull << 30}};
  l.meta = {{"path_block.ssd", "/dev/sdb"}, {"whoami", "0"}};
  std::string block;
  if (encode_label(l, &block) < 0) return 1;
  const uint32_t len = load_fixed32(block.data() + kLabelMagicLen);
  const std::string_view rec = std::string_view(block).substr(kLabelMagicLen + 4, len);
  // Record version 2 (mode bit 2: the target seals the body as version 2).
  put(root + "/label", "label-v2-sealed", 4, body_of(kLabelTag, rec));
  put(root + "/label", "label-v2-raw", 1, std::string_view(block).substr(0, kLabelMagicLen + 4 + len));
  Superblock sb;
  sb.fsid = l.fsid;
  sb.created_us = l.created_us;
  sb.tier[Tier::kSsd].size = 8ull << 30;
  sb.tier[Tier::kHdd].size = 64ull << 30;
  sb.tier[Tier::kSsd].reserved = sb.tier[Tier::kHdd].reserved = 65536;
  sb.mkfs_options["hybridstore_csum_block"] = "4096";
  sb.mkfs_options["hybridstore_ssd_alloc_unit"] = "4096";
  const std::string srec = encode_superblock(sb);
  put(root + "/label", "super-sealed", 2, body_of(kSuperTag, srec));
  put(root + "/label", "super-raw", 3, srec);

  // kvfs: the groups of a short real log (mkfs's first group, a file's
  // life, a segment change, a compacted snapshot's end) and a superblock.
  {
    constexpr uint64_t kB = 4096, kA = 65536, kG = 1 << 20;
    const Uuid kvfs_uuid = generate_uuid();
    const std::vector<std::vector<KvRecord>> groups = {
        {KvInit{kvfs_uuid, kB, kA, kG}, KvGrant{{kG, 4 * kG}}, KvMkdir{"db"}, KvJournal{{{3 * kG, 2 * kA}}}},
        {KvCreate{"db", "000004.log", 16},
         KvUpdate{16, 5000, 1700000000, 0, {{2 * kG, kA}}, KvTailKind::kInline, std::string(5000 % kB, 'w')}},
        {KvCreate{"db", "MANIFEST-000005", 17}, KvUpdate{17, 8192, 1700000001, 0, {{2 * kG + kA, kA}},
                                                         KvTailKind::kInData, ""},
         KvRename{"db", "MANIFEST-000005", "db", "CURRENT"}},
        {KvNext{{4 * kG, kA}}},
        {KvUnlink{"db", "000004.log"}, KvGrant{{6 * kG, kG}}, KvReturn{{6 * kG, kG}}, KvMkdir{"tmp"},
         KvRmdir{"tmp"}, KvSnapshotDone{}},
    };
    uint64_t seq = 1;
    for (size_t i = 0; i < groups.size(); ++i) {
      const std::string g = encode_kvfs_group(KvGroup{0x5eed5eed5eedull, seq, groups[i]}, kB);
      seq += groups[i].size();
      const uint32_t n = load_fixed32(g.data() + 4);
      put(root + "/kvfs", "group-sealed-" + std::to_string(i), 0, body_of(kKvfsGroupTag, std::string_view(g).substr(8, n)));
      put(root + "/kvfs", "group-raw-" + std::to_string(i), 1, std::string_view(g).substr(0, 8 + n));
    }
    KvFsSuper ks;
    ks.kvfs_uuid = kvfs_uuid;
    ks.fsid = l.fsid;
    ks.generation = 3;
    ks.block = kB;
    ks.alloc_unit = kA;
    ks.lend_unit = kG;
    ks.log_id = 0x5eed5eed5eedull;
    ks.log_first_seq = 1;
    ks.log_segment = KvFsExtent{kG, kA};
    ks.created_us = l.created_us;
    std::string slot, why;
    require(encode_kvfs_super(ks, kB, &slot, &why) == 0, "kvfs superblock seed");
    const uint32_t klen = load_fixed32(slot.data() + kKvfsSuperMagicLen);
    put(root + "/kvfs", "super-sealed", 2, body_of(kKvfsSuperTag, std::string_view(slot).substr(kKvfsSuperMagicLen + 4, klen)));
    put(root + "/kvfs", "super-raw", 3, std::string_view(slot).substr(0, kKvfsSuperMagicLen + 4 + klen));
  }

  {
    // journal: records of both versions, as journal_fuzz frames them (the
    // fsid is the target's). Version 2 with each delta kind, and with 0..3
    // data blocks of the target's pattern and their real crcs.
    const Uuid fsid{0x5e, 0xed, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
    std::vector<JournalEntry> v1 = {{41, "batch one"}, {42, std::string(300, 'b')}};
    const std::string r1 = encode_journal_record(fsid, v1);
    const uint32_t n1 = load_fixed32(r1.data() + 4);
    put(root + "/journal", "v1-sealed", 0, body_of(kJournalTag, std::string_view(r1).substr(8, n1)));
    put(root + "/journal", "v1-raw", 1, r1);
    require(frame_journal_record(0, body_of(kJournalTag, std::string_view(r1).substr(8, n1))) == r1,
            "journal_fuzz frames a v1 seed as the encoder does");
    for (size_t blocks = 0; blocks < 4; ++blocks) {
      std::vector<std::string> bufs;
      std::vector<std::string_view> data;
      for (size_t i = 0; i < blocks; ++i) bufs.push_back(journal_fuzz_block(i));
      for (const auto& b : bufs) data.push_back(b);
      JournalEntry a{7, "omap batch"};
      JournalEntry b{8, ""};
      b.has_batch = false;
      JournalDelta w;
      w.kind = JournalDeltaKind::kOverwrite;
      w.key = "O.1.0_head.obj";
      w.version = 3;
      w.incarnation = 4099;
      w.logical = 8192;
      w.tier = 1;
      w.physical = 1 << 20;
      for (const auto& x : bufs) w.crcs.push_back(crc32c(x));
      // The data rides as RING_DATA; the OVERWRITE carries the checksums.
      JournalDelta rd;
      rd.kind = JournalDeltaKind::kRingData;
      rd.staged = 5;
      rd.tier = 1;
      rd.physical = w.physical;
      rd.crcs = w.crcs;
      if (blocks) {
        b.deltas.push_back(rd);
        b.deltas.push_back(w);
      }
      JournalDelta sa;
      sa.kind = JournalDeltaKind::kSetAttr;
      sa.key = w.key;
      sa.version = 3;
      sa.name = "_";
      sa.value = std::string(40, 'i');
      JournalDelta ra = sa;
      ra.kind = JournalDeltaKind::kRmAttr;
      ra.value.clear();
      ra.name = "snapset";
      JournalDelta sz;
      sz.kind = JournalDeltaKind::kSetSize;
      sz.key = "O.1.0_head.other";
      sz.version = 1;
      sz.size = 12345;
      b.deltas.push_back(sa);
      b.deltas.push_back(ra);
      a.deltas.push_back(sz);
      const std::string r2 = encode_journal_record_v2(fsid, std::vector<JournalEntry>{a, b}, data);
      const uint32_t n2 = load_fixed32(r2.data() + 4);
      const std::string tag = std::to_string(blocks);
      // Seeds the decoder takes, which the target's own framing rebuilds
      // byte for byte: mutations start from accepted records.
      JournalRecord rec;
      uint64_t len = 0;
      require(decode_journal_record(r2, fsid, &rec, &len) && len == r2.size(), "journal v2 seed decodes");
      const char mode = static_cast<char>(2 | (blocks << 2));
      require(frame_journal_record(mode, body_of(kJournalTag, std::string_view(r2).substr(12, n2))) == r2,
              "journal_fuzz frames a v2 seed as the encoder does");
      put(root + "/journal", "v2-sealed-" + tag, mode,
          body_of(kJournalTag, std::string_view(r2).substr(12, n2)));
      put(root + "/journal", "v2-raw-" + tag, 1, r2);
    }
  }

  const char* txns[] = {
      R"([{"ops": [{"op": "mkcoll", "coll": "1.0_head"},
          {"op": "write", "coll": "1.0_head", "oid": "a", "off": 0, "data": "text"},
          {"op": "setattrs", "coll": "1.0_head", "oid": "a", "attrs": {"k": "v"}},
          {"op": "omap_setkeys", "coll": "1.0_head", "oid": "a", "kv": {"x": "1"}}]},
 {"ops": [{"op": "clone", "coll": "1.0_head", "oid": "a", "dst": "b"}]}])",
      R"([{"ops": [{"op": "write", "coll": "3.1f_head", "oid": {"name": "rbd_data.1", "pool": 3, "namespace": "ns",
  "key": "loc", "hash": 1234, "snap": 7, "generation": 2, "shard": 1}, "data_b64": "aGVsbG8="},
  {"op": "zero", "coll": "3.1f_head", "oid": "x", "off": 4096, "len": 8192},
  {"op": "truncate", "coll": "3.1f_head", "oid": "x", "size": 100},
  {"op": "clone_range", "coll": "3.1f_head", "oid": "x", "dst": "y", "src_off": 0, "len": 10, "dst_off": 4096},
  {"op": "omap_rmkeys", "coll": "3.1f_head", "oid": "x", "keys": ["a", {"b64": "AAE="}]},
  {"op": "omap_rmkeyrange", "coll": "3.1f_head", "oid": "x", "first": "a", "last": "m"},
  {"op": "omap_setheader", "coll": "3.1f_head", "oid": "x", "data": "h"},
  {"op": "omap_clear", "coll": "3.1f_head", "oid": "x"},
  {"op": "rename", "coll": "3.1f_head", "oid": "x", "dst": "z", "dst_coll": "3.0_head"},
  {"op": "try_rename", "coll": "3.1f_head", "oid": "y", "dst": "w"},
  {"op": "set_alloc_hint", "coll": "3.1f_head", "oid": "w", "expected_object_size": 4194304,
   "expected_write_size": 65536, "flags": 3},
  {"op": "rmattr", "coll": "3.1f_head", "oid": "w", "name": "k"},
  {"op": "rmattrs", "coll": "3.1f_head", "oid": "w"},
  {"op": "remove", "coll": "3.1f_head", "oid": "w"}, {"op": "nop"}]}])",
      R"([{"ops": [{"op": "split", "coll": "1.0_head", "dst_coll": "1.1_head", "bits": 1, "rem": 1},
  {"op": "merge", "coll": "1.1_head", "dst_coll": "1.0_head", "bits": 0},
  {"op": "set_bits", "coll": "1.0_head", "bits": 3}, {"op": "rmcoll", "coll": "2.0_head"},
  {"op": "touch", "coll": "meta", "oid": "osdmap"}, {"op": "create", "coll": "meta", "oid": "x"},
  {"op": "setattr", "coll": "meta", "oid": "x", "name": "n", "value": {"b64": "/w=="}},
  {"op": "write", "coll": "meta", "oid": "x", "data_file": "blob"}]}])",
  };
  for (size_t i = 0; i < sizeof(txns) / sizeof(txns[0]); ++i)
    put(root + "/txn_json", "txns-" + std::to_string(i), 0, txns[i]);
  put(root + "/txn_json", "oid-name", 1, "rbd_data.1234");
  put(root + "/txn_json", "oid-json", 1,
      R"({"name": "a", "pool": 3, "namespace": "n", "key": "k", "hash": 99, "snap": "snapdir", "gen": 5, "shard": 2})");
  put(root + "/txn_json", "oid-b64", 1, R"({"name": {"b64": "AAEC"}, "snap": "head"})");
  printf("wrote seed corpora under %s\n", root.c_str());
  return 0;
}
