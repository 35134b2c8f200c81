#include "hybridstore/format/store_format.h"

#include <uuid/uuid.h>

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
constexpr uint8_t kLabelVersion = 1;
// Record versions: 1 is format 1's superblock (two tiers), 2 adds the tier
// count, each tier's layout and the tier order.
constexpr uint8_t kSuperVersion = 2;

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

std::string encode_label(const DeviceLabel& l) {
  std::string body;
  body.append(reinterpret_cast<const char*>(l.fsid.data()), l.fsid.size());
  put_u8(&body, static_cast<uint8_t>(l.role));
  put_fixed64(&body, l.size);
  put_fixed32(&body, l.format_version);
  put_fixed64(&body, l.created_us);
  put_bytes(&body, l.description.substr(0, 1024));
  std::string rec = seal_record(kLabelTag, kLabelVersion, body);
  std::string out(kLabelMagic, kMagicLen);
  put_fixed32(&out, static_cast<uint32_t>(rec.size()));
  out += rec;
  out.resize(kLabelSize, '\0');
  return out;
}

int decode_label(std::string_view block, DeviceLabel* out, std::string* why) {
  if (block.size() < kMagicLen + 4 || std::memcmp(block.data(), kLabelMagic, kMagicLen) != 0) {
    *why = "no hybridstore label (magic not found)";
    return -EINVAL;
  }
  uint32_t len = load_fixed32(block.data() + kMagicLen);
  if (len > block.size() - kMagicLen - 4) {
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
  std::string_view fsid;
  uint8_t role;
  if (!d.get_raw(16, &fsid) || !d.get_u8(&role) || !d.get_fixed64(&l.size) ||
      !d.get_fixed32(&l.format_version) || !d.get_fixed64(&l.created_us) ||
      !d.get_bytes(&l.description, 1024) || !d.done() || role >= kMaxTiers) {
    *why = "label body malformed";
    return -EIO;
  }
  std::memcpy(l.fsid.data(), fsid.data(), 16);
  l.role = tier_at(role);
  if (l.format_version > kFormatVersion) {
    *why = fmt::format("label format version {} is newer than this build supports ({})",
                       l.format_version, kFormatVersion);
    return -EOPNOTSUPP;
  }
  *out = std::move(l);
  return 0;
}

int write_label(BlockDevice* dev, const DeviceLabel& l) {
  std::string enc = encode_label(l);
  AlignedBuffer buf(kLabelSize);
  std::memcpy(buf.data(), enc.data(), kLabelSize);
  if (int r = dev->write(0, buf.data(), kLabelSize); r < 0) return r;
  return dev->flush();
}

int read_label(BlockDevice* dev, DeviceLabel* out, std::string* why) {
  if (dev->size() < kLabelSize) {
    *why = fmt::format("device {} is only {} bytes, too small to hold a label", dev->path(), dev->size());
    return -EINVAL;
  }
  AlignedBuffer buf(kLabelSize);
  if (int r = dev->read(0, buf.data(), kLabelSize); r < 0) {
    *why = fmt::format("cannot read label of {}: {}", dev->path(), strerror(-r));
    return r;
  }
  return decode_label(std::string_view(buf.data(), kLabelSize), out, why);
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
  return seal_record(kSuperTag, kSuperVersion, b);
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
  if (!d.done()) {
    *why = "superblock: trailing bytes";
    return -EIO;
  }
  if (s.format_version > kFormatVersion) {
    *why = fmt::format("store format version {} is newer than this build supports ({})",
                       s.format_version, kFormatVersion);
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
