#include "hybridstore/store/collections.h"

#include <rocksdb/db.h>

#include <cerrno>

#include "hybridstore/kv/kv_schema.h"

namespace hybridstore {

int CollectionTable::load(rocksdb::DB* db, std::vector<std::string>* dropped, std::string* error) {
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  std::string cprefix(1, kv::kCollection);
  for (it->Seek(cprefix); it->Valid() && it->key().starts_with(cprefix); it->Next()) {
    CollectionId c;
    uint32_t bits;
    if (!kv::decode_collection_key(it->key().ToStringView(), &c) ||
        !kv::decode_collection(it->value().ToStringView(), &bits)) {
      if (!dropped) {
        *error = "corrupt collection record " + it->key().ToString(true) + " (hybridstore-tool repair can drop it)";
        return -EIO;
      }
      db->Delete(rocksdb::WriteOptions(), it->key());
      dropped->push_back("deleted corrupt collection record " + it->key().ToString(true));
      continue;
    }
    auto st = state(c);
    st->exists = true;
    st->bits = bits;
  }
  return 0;
}

std::shared_ptr<CollectionState> CollectionTable::state(const CollectionId& c) {
  std::lock_guard<std::mutex> l(mutex_);
  auto& p = colls_[c];
  if (!p) p = std::make_shared<CollectionState>(c);
  return p;
}

std::vector<CollectionId> CollectionTable::list() const {
  std::vector<CollectionId> out;
  std::lock_guard<std::mutex> l(mutex_);
  for (const auto& [c, st] : colls_)
    if (st->exists) out.push_back(c);
  return out;
}

bool CollectionTable::exists(const CollectionId& c) const {
  std::lock_guard<std::mutex> l(mutex_);
  auto it = colls_.find(c);
  return it != colls_.end() && it->second->exists;
}

int CollectionTable::bits(const CollectionId& c) const {
  std::lock_guard<std::mutex> l(mutex_);
  auto it = colls_.find(c);
  if (it == colls_.end() || !it->second->exists) return -ENOENT;
  return static_cast<int>(it->second->bits.load());
}

}  // namespace hybridstore
