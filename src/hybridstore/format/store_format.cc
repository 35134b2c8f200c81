#include "hybridstore/format/store_format.h"

#include <uuid/uuid.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "hscommon/encoding.h"

namespace hybridstore {

namespace {
constexpr char kLabelMagic[] = "HYBRIDSTORE-LABEL\n";  // 18 bytes + NUL
constexpr size_t kMagicLen = sizeof(kLabelMagic) - 1;
constexpr uint32_t kLabelTag = 0x4c41424c;   // "LABL"
constexpr uint32_t kSuperTag = 0x53555052;   // "SUPR"
// Label record versions: 1 is formats 1-3's label (one copy at offset 0);
// 2 adds the generation, flags and the fields of docs/kvfs.md 2.2.
constexpr uint8_t kLabelVersion = 2;
// Record versions: 1 is format 1's superblock (two tiers), 2 adds the tier
// count, each tier's layout and the tier order; 3 (format 4) adds where
// RocksDB lives.
constexpr uint8_t kSuperVersion = 3;

std::string option_or(const std::map<std::string, std::string>& opts, const std::string& name,
                      const std::string& fallback) {
  auto it = opts.find(name);
  return it == opts.end() ? fallback : it->second;
}
}  // namespace

TierLayout format1_tier_layout(Tier tier, const std::map<std::string, std::string>& mkfs_options) {
  TierLayout l;
  // Options a store predates take the behaviour of that time (block device, extents).
  if (tier == Tier::kSsd) {
    if (option_or(mkfs_options, "hybridstore_ssd_kind", "file") == "nand") l.device = DeviceKind::kNand;
    if (option_or(mkfs_options, "hybridstore_ssd_allocator", "extent") == "hfm") l.space = SpaceKind::kSections;
  }
  return l;
}

std::string tier_device_link(Tier t) { return std::string("block.") + tier_name(t); }

Uuid generate_uuid() {
  Uuid u;
  uuid_generate_random(u.data());
  return u;
}

std::string uuid_to_string(const Uuid& u) {
  char buf[37];
  uuid_unparse_lower(u.data(), buf);
  return buf;
}

bool parse_uuid(std::string_view s, Uuid* out) {
  if (s.size() != 36) return false;
  std::string z(s);
  return uuid_parse(z.c_str(), out->data()) == 0;
}

bool operator==(const LabelTier& a, const LabelTier& b) {
  return a.role == b.role && a.layout == b.layout && a.alloc_unit == b.alloc_unit && a.size == b.size;
}

bool same_label_content(const DeviceLabel& a, const DeviceLabel& b) {
  return a.fsid == b.fsid && a.role == b.role && a.size == b.size && a.format_version == b.format_version &&
         a.created_us == b.created_us && a.description == b.description && a.generation == b.generation &&
         a.flags == b.flags && a.device_kind == b.device_kind && a.slot == b.slot && a.head == b.head &&
         a.kvfs_uuid == b.kvfs_uuid && a.tiers == b.tiers && a.meta == b.meta;
}

int encode_label(const DeviceLabel& l, std::string* out) {
  if (l.description.size() > kLabelMaxDescription || l.tiers.size() > static_cast<size_t>(kMaxTiers)) return -E2BIG;
  for (const auto& [k, v] : l.meta)
    if (k.size() > kLabelMaxMetaKey || v.size() > kLabelMaxMetaValue) return -E2BIG;
  std::string body;
  body.append(reinterpret_cast<const char*>(l.fsid.data()), l.fsid.size());
  put_u8(&body, static_cast<uint8_t>(l.role));
  put_fixed64(&body, l.size);
  put_fixed32(&body, l.format_version);
  put_fixed64(&body, l.created_us);
  put_bytes(&body, l.description);
  put_fixed64(&body, l.generation);
  put_fixed32(&body, l.flags);
  put_u8(&body, static_cast<uint8_t>(l.device_kind));
  put_varint(&body, l.slot);
  put_varint(&body, l.head);
  body.append(reinterpret_cast<const char*>(l.kvfs_uuid.data()), l.kvfs_uuid.size());
  put_u8(&body, static_cast<uint8_t>(l.tiers.size()));
  for (const LabelTier& t : l.tiers) {
    put_u8(&body, static_cast<uint8_t>(tier_index(t.role)));
    put_u8(&body, static_cast<uint8_t>(t.layout.device));
    put_u8(&body, static_cast<uint8_t>(t.layout.space));
    put_varint(&body, t.alloc_unit);
    put_varint(&body, t.size);
  }
  put_varint(&body, l.meta.size());
  for (const auto& [k, v] : l.meta) {
    put_bytes(&body, k);
    put_bytes(&body, v);
  }
  std::string rec = seal_record(kLabelTag, kLabelVersion, body);
  std::string enc(kLabelMagic, kMagicLen);
  put_fixed32(&enc, static_cast<uint32_t>(rec.size()));
  enc += rec;
  if (enc.size() > kLabelSize) return -E2BIG;
  enc.resize(kLabelSize, '\0');
  *out = std::move(enc);
  return 0;
}

namespace {

bool is_pow2(uint64_t v) { return v && !(v & (v - 1)); }

// The fields record version 2 adds, each range-checked: a crc that happens
// to match over garbage must still not yield a label that misleads.
bool decode_label_v2(Decoder* d, DeviceLabel* l, std::string* why) {
  uint8_t kind, ntiers;
  std::string_view kvfs;
  if (!d->get_fixed64(&l->generation) || !d->get_fixed32(&l->flags) || !d->get_u8(&kind) ||
      !d->get_varint(&l->slot) || !d->get_varint(&l->head) || !d->get_raw(16, &kvfs) || !d->get_u8(&ntiers)) {
    *why = "label body malformed (truncated)";
    return false;
  }
  if (l->flags & ~kLabelKnownFlags) {
    *why = fmt::format("label has unknown flags {:#x}", l->flags & ~kLabelKnownFlags);
    return false;
  }
  if (kind > static_cast<uint8_t>(DeviceKind::kNand)) {
    *why = "label has an unknown device kind";
    return false;
  }
  l->device_kind = static_cast<DeviceKind>(kind);
  // Zero on a label that does not say; otherwise both copies fit the head.
  if ((l->slot && (!is_pow2(l->slot) || l->slot < kLabelSize || l->slot > (1u << 24))) ||
      (l->head && l->head < 2 * l->slot)) {
    *why = "label slot or head out of range";
    return false;
  }
  std::memcpy(l->kvfs_uuid.data(), kvfs.data(), 16);
  if (ntiers > kMaxTiers) {
    *why = "label tier table too long";
    return false;
  }
  bool seen[kMaxTiers] = {};
  for (int i = 0; i < ntiers; ++i) {
    uint8_t role, dev, space;
    LabelTier t;
    if (!d->get_u8(&role) || !d->get_u8(&dev) || !d->get_u8(&space) || !d->get_varint(&t.alloc_unit) ||
        !d->get_varint(&t.size)) {
      *why = "label tier table truncated";
      return false;
    }
    if (role >= kMaxTiers || seen[role] || dev > static_cast<uint8_t>(DeviceKind::kNand) ||
        space > static_cast<uint8_t>(SpaceKind::kSections) || !is_pow2(t.alloc_unit)) {
      *why = "label tier table malformed";
      return false;
    }
    seen[role] = true;
    t.role = tier_at(role);
    t.layout = {static_cast<DeviceKind>(dev), static_cast<SpaceKind>(space)};
    l->tiers.push_back(t);
  }
  uint64_t nmeta;
  if (!d->get_varint(&nmeta) || nmeta > d->remaining() / 2) {
    *why = "label meta malformed";
    return false;
  }
  for (uint64_t i = 0; i < nmeta; ++i) {
    std::string k, v;
    if (!d->get_bytes(&k, kLabelMaxMetaKey) || !d->get_bytes(&v, kLabelMaxMetaValue) ||
        !l->meta.emplace(std::move(k), std::move(v)).second) {
      *why = "label meta malformed";
      return false;
    }
  }
  return true;
}

}  // namespace

int decode_label(std::string_view block, DeviceLabel* out, std::string* why) {
  if (block.size() < kMagicLen + 4 || std::memcmp(block.data(), kLabelMagic, kMagicLen) != 0) {
    *why = "no hybridstore label (magic not found)";
    return -EINVAL;
  }
  uint32_t len = load_fixed32(block.data() + kMagicLen);
  if (len > block.size() - kMagicLen - 4 || len > kLabelSize - kMagicLen - 4) {
    *why = "label length out of range";
    return -EIO;
  }
  uint8_t ver;
  std::string_view body;
  if (int r = open_stored_record(kLabelTag, kLabelVersion, block.substr(kMagicLen + 4, len), "label", &ver, &body,
                                 why);
      r < 0)
    return r;
  Decoder d(body);
  DeviceLabel l;
  l.record_version = ver;
  std::string_view fsid;
  uint8_t role;
  if (!d.get_raw(16, &fsid) || !d.get_u8(&role) || !d.get_fixed64(&l.size) ||
      !d.get_fixed32(&l.format_version) || !d.get_fixed64(&l.created_us) ||
      !d.get_bytes(&l.description, kLabelMaxDescription) || role >= kMaxTiers) {
    *why = "label body malformed";
    return -EIO;
  }
  if (ver >= 2 && !decode_label_v2(&d, &l, why)) return -EIO;
  if (!d.done()) {
    *why = "label body malformed (trailing bytes)";
    return -EIO;
  }
  std::memcpy(l.fsid.data(), fsid.data(), 16);
  l.role = tier_at(role);
  if (l.format_version > kFormatNewest) {
    *why = fmt::format("label format version {} is newer than this build supports ({})",
                       l.format_version, kFormatNewest);
    return -EOPNOTSUPP;
  }
  *out = std::move(l);
  return 0;
}

uint64_t label_slot(const BlockDevice* dev) { return std::max<uint64_t>(kLabelSize, dev->alignment()); }

uint64_t label_head(uint64_t slot, uint64_t unit) {
  const uint64_t want = std::max<uint64_t>(65536, 4 * slot);
  return (want + unit - 1) / unit * unit;
}

std::string LabelPairStatus::problem() const {
  if (a == 0 && b == 0) {
    if (!other_behind) return "";
    return fmt::format("copy {} is behind (generation {} against {})", chosen == 'A' ? 'B' : 'A',
                       chosen == 'A' ? label_b.generation : label_a.generation,
                       chosen == 'A' ? label_a.generation : label_b.generation);
  }
  if (single_copy_v1()) return "";
  if (a != 0 && b != 0) return "both copies are unreadable (A: " + why_a + "; B: " + why_b + ")";
  return a != 0 ? "copy A is damaged: " + why_a : "copy B is damaged: " + why_b;
}

int read_labels(BlockDevice* dev, DeviceLabel* chosen, LabelPairStatus* status, std::string* why) {
  LabelPairStatus st;
  st.slot = label_slot(dev);
  const uint64_t s = st.slot;
  if (dev->size() < s) {
    *why = fmt::format("device {} is only {} bytes, too small to hold a label", dev->path(), dev->size());
    if (status) *status = st;
    return -EINVAL;
  }
  AlignedBuffer buf(s, std::max<uint64_t>(4096, dev->alignment()));
  auto read_copy = [&](uint64_t off, DeviceLabel* l, std::string* w) {
    if (int r = dev->read(off, buf.data(), s); r < 0) {
      *w = fmt::format("cannot read label of {} at {}: {}", dev->path(), off, strerror(-r));
      return r;
    }
    return decode_label(std::string_view(buf.data(), s), l, w);
  };
  st.a = read_copy(0, &st.label_a, &st.why_a);
  if (dev->size() >= 2 * s) {
    st.b = read_copy(s, &st.label_b, &st.why_b);
  } else {
    st.b = -EINVAL;
    st.why_b = "device too small for a second copy";
  }
  int r = 0;
  if (st.a == -EOPNOTSUPP || st.b == -EOPNOTSUPP) {
    // A newer build has written to this device: whatever the other copy
    // says may be what that build has superseded.
    *why = st.a == -EOPNOTSUPP ? st.why_a : st.why_b;
    r = -EOPNOTSUPP;
  } else if (st.a == 0 && (st.b != 0 || st.label_a.generation >= st.label_b.generation ||
                            st.label_a.fsid != st.label_b.fsid)) {
    // A B copy of another store is what an older build's mkfs, which writes
    // only A, left of an earlier store: A is the device's label.
    st.chosen = 'A';
    st.other_behind = st.b == 0 && !same_label_content(st.label_a, st.label_b);
    *chosen = st.label_a;
  } else if (st.b == 0) {
    st.chosen = 'B';
    st.other_behind = st.a == 0;
    *chosen = st.label_b;
  } else {
    *why = st.why_a;
    r = st.a;
  }
  if (status) *status = std::move(st);
  return r;
}

int read_label(BlockDevice* dev, DeviceLabel* out, std::string* why) { return read_labels(dev, out, nullptr, why); }

int write_label_pair(BlockDevice* dev, DeviceLabel* l, std::string* why) {
  const uint64_t s = label_slot(dev);
  if (dev->size() < 2 * s) {
    *why = fmt::format("device {} is only {} bytes, too small to hold two label copies", dev->path(), dev->size());
    return -EINVAL;
  }
  // Generations of whatever valid copies there are, damaged or behind ones
  // included: the new pair must outrank every copy a later read could find.
  DeviceLabel cur;
  LabelPairStatus st;
  std::string ignored;
  read_labels(dev, &cur, &st, &ignored);
  uint64_t gen = 0;
  if (st.a == 0) gen = std::max(gen, st.label_a.generation);
  if (st.b == 0) gen = std::max(gen, st.label_b.generation);
  l->generation = gen + 1;
  l->slot = s;
  std::string enc;
  if (int r = encode_label(*l, &enc); r < 0) {
    *why = fmt::format("label of {} does not fit in {} bytes", dev->path(), kLabelSize);
    return r;
  }
  AlignedBuffer buf(s, std::max<uint64_t>(4096, dev->alignment()));
  std::memcpy(buf.data(), enc.data(), enc.size());
  for (uint64_t off : {s, uint64_t(0)}) {
    int r = dev->write(off, buf.data(), s);
    if (r >= 0) r = dev->flush();
    if (r < 0) {
      *why = fmt::format("cannot write label copy {} of {}: {}", off ? 'B' : 'A', dev->path(), strerror(-r));
      return r;
    }
  }
  // What the device now holds is the newest record version, whatever *l
  // was read as: a caller keeping *l (TierSet after the format upgrade)
  // must not take a rewritten v1 label for one that has no meta map.
  l->record_version = kLabelVersion;
  return 0;
}

// mkfs.* (space/tier_device.h's kLabelDeviceOptionPrefix): the options
// that shaped the device, which mount trusts over the configuration.
bool label_meta_key_reserved(std::string_view key) {
  return key.rfind("path_block.", 0) == 0 || key.rfind("mkfs.", 0) == 0;
}

int change_label_meta(DeviceLabel* l, const std::string& key, const std::string* value, std::string* why) {
  if (l->record_version < 2) {
    *why = "the label is of record version 1, which has no meta keys (a format-3 store: one read-write mount "
           "upgrades it to format 4)";
    return -EOPNOTSUPP;
  }
  if (key.empty()) {
    *why = "a meta key must not be empty";
    return -EINVAL;
  }
  if (label_meta_key_reserved(key)) {
    *why = fmt::format("meta key '{}' is reserved: the store writes the path_block.* and mkfs.* keys itself", key);
    return -EINVAL;
  }
  if (key.size() > kLabelMaxMetaKey) {
    *why = fmt::format("meta key of {} bytes is longer than the {} a label holds", key.size(), kLabelMaxMetaKey);
    return -E2BIG;
  }
  if (value && value->size() > kLabelMaxMetaValue) {
    *why = fmt::format("value of meta key '{}' is {} bytes, more than the {} a label holds", key, value->size(),
                       kLabelMaxMetaValue);
    return -E2BIG;
  }
  DeviceLabel next = *l;
  if (!value) {
    if (next.meta.erase(key) == 0) {
      *why = fmt::format("the label has no meta key '{}'", key);
      return -ENOENT;
    }
  } else {
    next.meta[key] = *value;
  }
  std::string enc;
  if (encode_label(next, &enc) < 0) {
    size_t held = 0;
    for (const auto& [k, v] : l->meta) held += k.size() + v.size();
    *why = fmt::format("the label would not fit in {} bytes with meta key '{}' (its {} keys hold {} bytes)",
                       kLabelSize, key, l->meta.size(), held);
    return -E2BIG;
  }
  *l = std::move(next);
  return 0;
}

int rewrite_label_meta(BlockDevice* dev, const std::string& key, const std::string* value, DeviceLabel* out,
                       std::string* why) {
  DeviceLabel l;
  LabelPairStatus st;
  if (int r = read_labels(dev, &l, &st, why); r < 0) return r;
  if (int r = change_label_meta(&l, key, value, why); r < 0) return r;
  if (int r = write_label_pair(dev, &l, why); r < 0) return r;
  if (out) *out = l;
  return 0;
}

std::string encode_superblock(const Superblock& s) {
  std::string b;
  put_fixed32(&b, s.format_version);
  b.append(reinterpret_cast<const char*>(s.fsid.data()), 16);
  put_fixed64(&b, s.created_us);
  put_u8(&b, static_cast<uint8_t>(s.tiers()));
  for (Tier t : tier_ids(s.tiers())) {
    const TierDescriptor& d = s.tier[t];
    put_varint(&b, d.size);
    put_varint(&b, d.alloc_unit);
    put_varint(&b, d.reserved);
    put_u8(&b, static_cast<uint8_t>(d.layout.device));
    put_u8(&b, static_cast<uint8_t>(d.layout.space));
  }
  for (Tier t : s.order) put_u8(&b, static_cast<uint8_t>(tier_index(t)));
  put_varint(&b, s.csum_block);
  put_varint(&b, s.mkfs_options.size());
  for (const auto& [k, v] : s.mkfs_options) {
    put_bytes(&b, k);
    put_bytes(&b, v);
  }
  // A store of an older format keeps the record its builds read; only
  // format 4 says where RocksDB lives (and a store of an older format has it
  // in the directory).
  if (s.format_version < 4) return seal_record(kSuperTag, 2, b);
  put_u8(&b, static_cast<uint8_t>(s.kv_location));
  return seal_record(kSuperTag, kSuperVersion, b);
}

std::vector<LabelTier> label_tier_table(const Superblock& s) {
  std::vector<LabelTier> out;
  for (Tier t : s.order) {
    const TierDescriptor& d = s.tier[t];
    out.push_back({t, d.layout, d.alloc_unit, d.size});
  }
  return out;
}

namespace {

// One tier's record: size, unit and reserved head, then (record version 2)
// its layout.
int decode_tier(Decoder* d, uint8_t ver, Tier t, TierDescriptor* out, std::string* why) {
  if (!d->get_varint(&out->size) || !d->get_varint(&out->alloc_unit) || !d->get_varint(&out->reserved)) {
    *why = "superblock: truncated";
    return -EIO;
  }
  const uint64_t au = out->alloc_unit;
  if (au < 256 || (au & (au - 1)) || out->reserved % au || out->reserved > out->size) {
    *why = "superblock: bad allocation unit or reserved size";
    return -EIO;
  }
  if (ver < 2) return 0;
  uint8_t dev, space;
  if (!d->get_u8(&dev) || !d->get_u8(&space)) {
    *why = "superblock: truncated";
    return -EIO;
  }
  if (dev > static_cast<uint8_t>(DeviceKind::kNand) || space > static_cast<uint8_t>(SpaceKind::kSections)) {
    *why = fmt::format("superblock: tier {} has an unknown device or space kind", tier_index(t));
    return -EIO;
  }
  out->layout = {static_cast<DeviceKind>(dev), static_cast<SpaceKind>(space)};
  return 0;
}

// The tier order (record version 2), checked against what the store relies
// on: HFM sections (one SFS cleaner per store) and raw NAND (one FTL
// configuration) belong to the SSD, and an SSD that has them is the fastest
// tier.
int decode_order(Decoder* d, int tiers, Superblock* s, std::string* why) {
  TierOrder order;
  bool seen[kMaxTiers] = {};
  for (int r = 0; r < tiers; ++r) {
    uint8_t t;
    if (!d->get_u8(&t)) {
      *why = "superblock: truncated";
      return -EIO;
    }
    if (t >= tiers || seen[t]) {
      *why = "superblock: the tier order is not an order of the store's tiers";
      return -EIO;
    }
    seen[t] = true;
    order.add(tier_at(t));
  }
  s->order = order;
  auto plain = [](const TierLayout& l) { return l.space == SpaceKind::kExtents && l.device == DeviceKind::kBlock; };
  for (Tier t : tier_ids(tiers))
    if (t != Tier::kSsd && !plain(s->tier[t].layout)) {
      *why = fmt::format("superblock: tier {} has sections or raw NAND, which only the SSD tier may have",
                         tier_index(t));
      return -EIO;
    }
  if (!plain(s->tier[Tier::kSsd].layout) && order.fastest() != Tier::kSsd) {
    *why = "superblock: the SSD tier has sections or raw NAND but is not the fastest";
    return -EIO;
  }
  return 0;
}

}  // namespace

int decode_superblock(std::string_view v, Superblock* out, std::string* why) {
  uint8_t ver;
  std::string_view body;
  if (int r = open_stored_record(kSuperTag, kSuperVersion, v, "superblock", &ver, &body, why); r < 0) return r;
  Decoder d(body);
  Superblock s;
  std::string_view fsid;
  if (!d.get_fixed32(&s.format_version) || !d.get_raw(16, &fsid) || !d.get_fixed64(&s.created_us)) {
    *why = "superblock: truncated";
    return -EIO;
  }
  std::memcpy(s.fsid.data(), fsid.data(), 16);
  int tiers = 2;  // format 1: the SSD and the HDD
  if (ver >= 2) {
    uint8_t n;
    if (!d.get_u8(&n)) {
      *why = "superblock: truncated";
      return -EIO;
    }
    if (n < 2 || n > kMaxTiers) {
      *why = fmt::format("superblock: {} tiers (a store has 2 to {})", n, kMaxTiers);
      return -EIO;
    }
    tiers = n;
  }
  for (Tier t : tier_ids(tiers))
    if (int r = decode_tier(&d, ver, t, &s.tier[t], why); r < 0) return r;
  if (ver >= 2) {
    if (int r = decode_order(&d, tiers, &s, why); r < 0) return r;
  }
  uint64_t nopts;
  if (!d.get_varint32(&s.csum_block) || !d.get_varint(&nopts) || nopts > d.remaining() / 2) {
    *why = "superblock: truncated";
    return -EIO;
  }
  for (uint64_t i = 0; i < nopts; ++i) {
    std::string k, val;
    if (!d.get_bytes(&k) || !d.get_bytes(&val)) {
      *why = "superblock: truncated options";
      return -EIO;
    }
    s.mkfs_options[k] = val;
  }
  if (ver >= 3) {
    uint8_t loc;
    if (!d.get_u8(&loc)) {
      *why = "superblock: truncated";
      return -EIO;
    }
    if (loc > static_cast<uint8_t>(KvLocation::kDevice) || (loc != 0 && s.format_version < 4)) {
      *why = fmt::format("superblock: unknown RocksDB location {}", loc);
      return -EIO;
    }
    s.kv_location = static_cast<KvLocation>(loc);
  }
  if (!d.done()) {
    *why = "superblock: trailing bytes";
    return -EIO;
  }
  if (s.format_version > kFormatNewest) {
    *why = fmt::format("store format version {} is newer than this build supports ({})",
                       s.format_version, kFormatNewest);
    return -EOPNOTSUPP;
  }
  if (ver < 2) {
    // Format 1: SSD then HDD, layouts from the mkfs options.
    for (Tier t : tier_ids(tiers)) s.tier[t].layout = format1_tier_layout(t, s.mkfs_options);
    s.order = TierOrder{Tier::kSsd, Tier::kHdd};
  }
  *out = std::move(s);
  return 0;
}

}  // namespace hybridstore
