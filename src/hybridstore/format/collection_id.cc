#include "hybridstore/format/collection_id.h"

#include <cstdlib>

#include "hybridstore/format/object_id.h"

namespace hybridstore {

bool CollectionId::valid() const {
  return !name.empty() && name.size() <= 1024 && name.find('\0') == std::string::npos;
}

bool CollectionId::parse_pg(int64_t* pool, uint32_t* seed, int* shard) const {
  const std::string suffix = "_head";
  if (name.size() <= suffix.size() ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return false;
  std::string body = name.substr(0, name.size() - suffix.size());
  size_t dot = body.find('.');
  if (dot == std::string::npos || dot == 0) return false;
  char* end = nullptr;
  long long p = strtoll(body.c_str(), &end, 10);
  if (end != body.c_str() + dot) return false;
  std::string rest = body.substr(dot + 1);
  int sh = kNoShard;
  size_t s = rest.find('s');
  std::string seed_hex = rest.substr(0, s);
  if (seed_hex.empty() || seed_hex.size() > 8) return false;
  unsigned long sd = strtoul(seed_hex.c_str(), &end, 16);
  if (*end != '\0') return false;
  if (s != std::string::npos) {
    std::string shs = rest.substr(s + 1);
    if (shs.empty()) return false;
    long v = strtol(shs.c_str(), &end, 10);
    if (*end != '\0' || v < 0 || v > 127) return false;
    sh = static_cast<int>(v);
  }
  *pool = p;
  *seed = static_cast<uint32_t>(sd);
  *shard = sh;
  return true;
}

int64_t CollectionId::default_pool() const {
  int64_t pool;
  uint32_t seed;
  int shard;
  if (parse_pg(&pool, &seed, &shard)) return pool;
  return kPoolMeta;
}

}  // namespace hybridstore
