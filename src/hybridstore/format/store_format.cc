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
  l.role = static_cast<Tier>(role);
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
  put_u8(&b, static_cast<uint8_t>(s.tiers));
  for (int t = 0; t < s.tiers; ++t) {
    put_varint(&b, s.tier_size[t]);
    put_varint(&b, s.alloc_unit[t]);
    put_varint(&b, s.reserved[t]);
    put_u8(&b, static_cast<uint8_t>(s.layout[t].device));
    put_u8(&b, static_cast<uint8_t>(s.layout[t].space));
  }
  for (int r = 0; r < s.tiers; ++r) put_u8(&b, static_cast<uint8_t>(s.order[r]));
  put_varint(&b, s.csum_block);
  put_varint(&b, s.mkfs_options.size());
  for (const auto& [k, v] : s.mkfs_options) {
    put_bytes(&b, k);
    put_bytes(&b, v);
  }
  return seal_record(kSuperTag, kSuperVersion, b);
}

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
    s.tiers = n;
  }
  for (int t = 0; t < s.tiers; ++t) {
    if (!d.get_varint(&s.tier_size[t]) || !d.get_varint(&s.alloc_unit[t]) ||
        !d.get_varint(&s.reserved[t])) {
      *why = "superblock: truncated";
      return -EIO;
    }
    uint64_t au = s.alloc_unit[t];
    if (au < 256 || (au & (au - 1)) || s.reserved[t] % au || s.reserved[t] > s.tier_size[t]) {
      *why = "superblock: bad allocation unit or reserved size";
      return -EIO;
    }
    if (ver >= 2) {
      uint8_t dev, space;
      if (!d.get_u8(&dev) || !d.get_u8(&space)) {
        *why = "superblock: truncated";
        return -EIO;
      }
      if (dev > static_cast<uint8_t>(DeviceKind::kNand) || space > static_cast<uint8_t>(SpaceKind::kSections)) {
        *why = fmt::format("superblock: tier {} has an unknown device or space kind", t);
        return -EIO;
      }
      s.layout[t] = {static_cast<DeviceKind>(dev), static_cast<SpaceKind>(space)};
    }
  }
  if (ver >= 2) {
    bool seen[kMaxTiers] = {};
    for (int r = 0; r < s.tiers; ++r) {
      uint8_t t;
      if (!d.get_u8(&t)) {
        *why = "superblock: truncated";
        return -EIO;
      }
      if (t >= s.tiers || seen[t]) {
        *why = "superblock: the tier order is not an order of the store's tiers";
        return -EIO;
      }
      seen[t] = true;
      s.order[r] = static_cast<Tier>(t);
    }
    // HFM sections (one SFS cleaner per store) and raw NAND (one FTL
    // configuration) belong to the SSD, and an SSD that has them is the
    // fastest tier: the store relies on both.
    for (int t = 1; t < s.tiers; ++t)
      if (s.layout[t].space != SpaceKind::kExtents || s.layout[t].device != DeviceKind::kBlock) {
        *why = fmt::format("superblock: tier {} has sections or raw NAND, which only the SSD tier may have", t);
        return -EIO;
      }
    if ((s.layout[0].space != SpaceKind::kExtents || s.layout[0].device != DeviceKind::kBlock) &&
        s.order[0] != Tier::kSsd) {
      *why = "superblock: the SSD tier has sections or raw NAND but is not the fastest";
      return -EIO;
    }
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
    for (int t = 0; t < s.tiers; ++t) s.layout[t] = format1_tier_layout(tier_at(t), s.mkfs_options);
    s.order[0] = Tier::kSsd;
    s.order[1] = Tier::kHdd;
  }
  *out = std::move(s);
  return 0;
}

}  // namespace hybridstore
