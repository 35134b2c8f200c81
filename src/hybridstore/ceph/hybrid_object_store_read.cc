// Reads, attributes and omap of the Ceph adapter: straight calls into the
// engine, with Ceph's types and error conventions at the boundary.
#include <sys/stat.h>

#include "common/deleter.h"
#include "common/debug.h"
#include "include/encoding.h"

#include "hybridstore/ceph/ceph_ids.h"
#include "hybridstore/ceph/hybrid_object_store.h"
#include "hybridstore/ceph/op_policy.h"
#include "hybridstore/ceph/perf_bridge.h"

#define dout_context cct
#define dout_subsys ceph_subsys_hybridstore
#undef dout_prefix
#define dout_prefix *_dout << "hybridstore(" << path << ") "

namespace hybridstore::ceph_adapter {

namespace {

const CollectionId& cid_of(ObjectStore::CollectionHandle& ch) {
  return static_cast<HybridObjectStore::Collection*>(ch.get())->id;
}

#if HS_CEPH_RELEASE < 20
// The engine's omap iterator as Ceph's: user keys only, in byte order.
// (Tentacle removed ObjectMap and get_omap_iterator; omap_iterate remains.)
class OmapIteratorAdapter : public ObjectMap::ObjectMapIteratorImpl {
 public:
  explicit OmapIteratorAdapter(std::unique_ptr<OmapIterator> it) : it_(std::move(it)) {}
  int seek_to_first() override {
    it_->seek_to_first();
    return it_->status();
  }
  int upper_bound(const std::string& after) override {
    it_->upper_bound(after);
    return it_->status();
  }
  int lower_bound(const std::string& to) override {
    it_->lower_bound(to);
    return it_->status();
  }
  bool valid() override { return it_->valid(); }
  int next() override {
    it_->next();
    return it_->status();
  }
  std::string key() override { return it_->key(); }
  ceph::buffer::list value() override {
    ceph::buffer::list bl;
    bl.append(it_->value());
    return bl;
  }
  int status() override { return it_->status(); }

 private:
  std::unique_ptr<OmapIterator> it_;
};
#endif

}  // namespace

bool HybridObjectStore::exists(CollectionHandle& ch, const ghobject_t& oid) {
  return engine_->exists(cid_of(ch), to_engine(oid));
}

bool HybridObjectStore::debug_eio(const ObjectId& oid, bool data) const {
  if (!debug_eio_any_.load(std::memory_order_relaxed) ||
      !cct->_conf.get_val<bool>("hybridstore_debug_inject_read_err"))
    return false;
  std::shared_lock l(debug_eio_lock_);
  return (data ? debug_data_eio_ : debug_mdata_eio_).count(oid) > 0;
}

void HybridObjectStore::debug_forget(const ObjectId& oid) {
  if (!debug_eio_any_.load(std::memory_order_relaxed)) return;
  std::unique_lock l(debug_eio_lock_);
  debug_data_eio_.erase(oid);
  debug_mdata_eio_.erase(oid);
}

void HybridObjectStore::inject_data_error(const ghobject_t& oid) {
  std::unique_lock l(debug_eio_lock_);
  debug_data_eio_.insert(to_engine(oid));
  debug_eio_any_ = true;
}

void HybridObjectStore::inject_mdata_error(const ghobject_t& oid) {
  std::unique_lock l(debug_eio_lock_);
  debug_mdata_eio_.insert(to_engine(oid));
  debug_eio_any_ = true;
}

int HybridObjectStore::stat(CollectionHandle& ch, const ghobject_t& oid, struct stat* st, bool allow_eio) {
  ObjectStat s;
  int r = engine_->stat(cid_of(ch), to_engine(oid), &s);
  if (r < 0) return r;
  // allow_eio says the caller handles -EIO (scrub passes it, so that the
  // injected error becomes the shard's stat_error); the injected error is
  // returned either way, as BlueStore does.
  if (debug_eio(to_engine(oid), /*data=*/false)) {
    derr << "stat " << oid << ": injected EIO" << dendl;
    return -EIO;
  }
  memset(st, 0, sizeof(*st));
  st->st_size = s.size;
  st->st_blksize = s.blksize;
  st->st_blocks = (s.allocated + 511) / 512;
  st->st_nlink = 1;
  return 0;
}

int HybridObjectStore::read(CollectionHandle& ch, const ghobject_t& oid, uint64_t offset, size_t len,
                            ceph::buffer::list& bl, uint32_t op_flags) {
  const uint64_t t0 = perf_now_ns();
  const uint32_t flags = engine_read_flags(op_flags);
  // Page-aligned memory of the result's size: the engine reads whole aligned
  // blocks from the device straight into it (no bounce buffer, no copy).
  ceph::buffer::ptr data;
  // What the data cache holds whole comes as its own memory, referenced,
  // not copied, as BlueStore hands out its cached buffers.
  std::vector<HybridStore::ReadPiece> cached;
  int r = engine_->read_shared(
      cid_of(ch), to_engine(oid), offset, len,
      [&data](uint64_t n) {
        data = ceph::buffer::ptr(ceph::buffer::create_small_page_aligned(static_cast<unsigned>(n)));
        return data.c_str();
      },
      &cached, flags);
  if (r < 0) {
    if (r == -EIO) derr << "read " << oid << " " << offset << "~" << len << ": checksum or media error" << dendl;
    return r;
  }
  if (debug_eio(to_engine(oid), /*data=*/true)) {
    derr << "read " << oid << " " << offset << "~" << len << ": injected EIO" << dendl;
    return -EIO;
  }
  // The result replaces what bl held (callers reuse one bufferlist).
  bl.clear();
  if (!cached.empty()) {
    for (auto& p : cached) {
      // Ceph's buffers are writable in type only: readers must not change
      // what a read returned (BlueStore's are its cache too).
      char* bytes = const_cast<char*>(p.data);
      bl.append(ceph::buffer::ptr(ceph::buffer::claim_buffer(
          static_cast<unsigned>(p.len), bytes, ::make_deleter([owner = std::move(p.owner)] {}))));
    }
  } else if (r > 0) {
    bl.append(std::move(data));
  }
  if (flags & kReadNoHeat) logger_->inc(l_hs_read_noheat_ops);
  logger_->inc(l_hs_read_bytes, r);
  logger_->tinc(l_hs_read_lat, ceph::make_timespan((perf_now_ns() - t0) / 1e9));
  return r;
}

int HybridObjectStore::fiemap(CollectionHandle& ch, const ghobject_t& oid, uint64_t offset, size_t len,
                              std::map<uint64_t, uint64_t>& destmap) {
  return engine_->fiemap(cid_of(ch), to_engine(oid), offset, len, &destmap);
}

int HybridObjectStore::fiemap(CollectionHandle& ch, const ghobject_t& oid, uint64_t offset, size_t len,
                              ceph::buffer::list& bl) {
  std::map<uint64_t, uint64_t> m;
  int r = fiemap(ch, oid, offset, len, m);
  if (r >= 0) {
    using ceph::encode;
    encode(m, bl);
  }
  return r;
}

int HybridObjectStore::getattr(CollectionHandle& ch, const ghobject_t& oid, const char* name,
                               ceph::buffer::ptr& value) {
  std::string v;
  int r = engine_->getattr(cid_of(ch), to_engine(oid), name, &v);
  if (r < 0) return r;  // -ENOENT: no object; -ENODATA: no such attribute
  if (debug_eio(to_engine(oid), /*data=*/false)) {
    derr << "getattr " << oid << " " << name << ": injected EIO" << dendl;
    return -EIO;
  }
  value = ceph::buffer::copy(v.data(), v.size());
  return 0;
}

int HybridObjectStore::getattrs(CollectionHandle& ch, const ghobject_t& oid, AttrPtrMap& aset) {
  std::map<std::string, std::string> m;
  int r = engine_->getattrs(cid_of(ch), to_engine(oid), &m);
  if (r < 0) return r;
  if (debug_eio(to_engine(oid), /*data=*/false)) {
    derr << "getattrs " << oid << ": injected EIO" << dendl;
    return -EIO;
  }
  for (auto& [k, v] : m) aset[k] = ceph::buffer::copy(v.data(), v.size());
  return 0;
}

int HybridObjectStore::omap_get(CollectionHandle& ch, const ghobject_t& oid, ceph::buffer::list* header,
                                std::map<std::string, ceph::buffer::list>* out) {
  std::string h;
  std::map<std::string, std::string> m;
  int r = engine_->omap_get(cid_of(ch), to_engine(oid), &h, &m);
  if (r < 0) return r;
  header->clear();
  header->append(h);
  for (auto& [k, v] : m) {
    ceph::buffer::list& dst = (*out)[k];
    dst.clear();
    dst.append(v);
  }
  return 0;
}

int HybridObjectStore::omap_get_header(CollectionHandle& ch, const ghobject_t& oid, ceph::buffer::list* header,
                                       bool allow_eio) {
  std::string h;
  int r = engine_->omap_get_header(cid_of(ch), to_engine(oid), &h);
  if (r < 0) return r;
  header->clear();
  header->append(h);
  return 0;
}

int HybridObjectStore::omap_get_keys(CollectionHandle& ch, const ghobject_t& oid, std::set<std::string>* keys) {
  return engine_->omap_get_keys(cid_of(ch), to_engine(oid), keys);
}

int HybridObjectStore::omap_get_values(CollectionHandle& ch, const ghobject_t& oid,
                                       const std::set<std::string>& keys,
                                       std::map<std::string, ceph::buffer::list>* out) {
  std::map<std::string, std::string> m;
  int r = engine_->omap_get_values(cid_of(ch), to_engine(oid), keys, &m);
  if (r < 0) return r;
  for (auto& [k, v] : m) {
    ceph::buffer::list& dst = (*out)[k];
    dst.clear();
    dst.append(v);
  }
  return 0;
}

int HybridObjectStore::omap_check_keys(CollectionHandle& ch, const ghobject_t& oid,
                                       const std::set<std::string>& keys, std::set<std::string>* out) {
  return engine_->omap_check_keys(cid_of(ch), to_engine(oid), keys, out);
}

#if HS_CEPH_RELEASE < 20
ObjectMap::ObjectMapIterator HybridObjectStore::get_omap_iterator(CollectionHandle& ch, const ghobject_t& oid) {
  const uint64_t t0 = perf_now_ns();
  auto it = engine_->get_omap_iterator(cid_of(ch), to_engine(oid));
  if (!it) return ObjectMap::ObjectMapIterator();  // no such object
  logger_->tinc(l_hs_omap_iter_lat, ceph::make_timespan((perf_now_ns() - t0) / 1e9));
  return std::make_shared<OmapIteratorAdapter>(std::move(it));
}
#endif

#if HS_CEPH_RELEASE >= 19 && HS_CEPH_HAS_OMAP_ITERATE
int HybridObjectStore::omap_iterate(CollectionHandle& ch, const ghobject_t& oid, omap_iter_seek_t start_from,
                                    std::function<omap_iter_ret_t(std::string_view, std::string_view)> f) {
  const uint64_t t0 = perf_now_ns();
  auto it = engine_->get_omap_iterator(cid_of(ch), to_engine(oid));
  if (!it) return -ENOENT;
  if (start_from.seek_type == omap_iter_seek_t::UPPER_BOUND)
    it->upper_bound(start_from.seek_position);
  else
    it->lower_bound(start_from.seek_position);
  logger_->tinc(l_hs_omap_iter_lat, ceph::make_timespan((perf_now_ns() - t0) / 1e9));
  for (; it->valid(); it->next()) {
    // The engine hands out copies; the views live until f returns.
    const std::string key = it->key();
    const std::string value = it->value();
    if (f(key, value) == omap_iter_ret_t::STOP) return 1;
  }
  return it->status();  // 0 at the end of the omap, -EIO when a read failed
}
#endif

}  // namespace hybridstore::ceph_adapter
