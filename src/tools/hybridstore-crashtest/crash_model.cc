#include "crash_model.h"

#include <cerrno>

#include <fmt/format.h>

#include "hscommon/crc32c.h"
#include "hscommon/encoding.h"

namespace hybridstore::crashtest {

bool operator==(const ObjectState& a, const ObjectState& b) {
  return a.data == b.data && a.attrs == b.attrs && a.omap_header == b.omap_header && a.omap == b.omap;
}

namespace {

constexpr uint64_t kMaxObjectSize = 4ull << 30;  // hybridstore_max_object_size's default
constexpr size_t kMaxAttrNameLen = 256;

}  // namespace

int StoreModel::apply(const Transaction& t, std::string* why) {
  StoreModel work = *this;
  const auto& ops = t.ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    std::string w;
    int r = work.apply_op(ops[i], &w);
    if (r < 0) {
      if (why) *why = fmt::format("op {} ({}): {}", i, op_name(ops[i].code), w);
      return r;
    }
  }
  *this = std::move(work);
  return 0;
}

// Long on purpose: one case per op code, each a few lines; split, the model's semantics would scatter.
int StoreModel::apply_op(const Op& op, std::string* why) {
  auto fail = [&](int err, std::string msg) {
    if (err == -ENOENT && default_enoent_tolerated(op.code)) return 0;
    *why = std::move(msg);
    return err;
  };
  auto find_coll = [&](const CollectionId& c) -> ModelCollection* {
    auto it = colls.find(c.name);
    return it == colls.end() ? nullptr : &it->second;
  };
  auto find_obj = [&](ModelCollection* mc, const ObjectId& o) -> ObjectRef {
    auto it = mc->objects.find(o);
    return it == mc->objects.end() ? nullptr : it->second;
  };
  // Copy on write: the returned object replaces the shared one.
  auto mutable_obj = [&](ModelCollection* mc, const ObjectId& o) -> ObjectState* {
    auto& slot = mc->objects[o];
    auto fresh = slot ? std::make_shared<ObjectState>(*slot) : std::make_shared<ObjectState>();
    slot = fresh;
    return fresh.get();
  };

  if (op.code == OpCode::kNop) return 0;
  ModelCollection* mc = find_coll(op.cid);
  if (op.code == OpCode::kMkColl) {
    if (mc) return fail(-EEXIST, "collection " + op.cid.name + " already exists");
    if (op.bits > 32) return fail(-EINVAL, "bits out of range");
    colls[op.cid.name].bits = op.bits;
    return 0;
  }
  if (!mc) return fail(-ENOENT, "collection " + op.cid.name + " does not exist");
  ObjectRef cur = find_obj(mc, op.oid);
  auto need_obj = [&]() { return cur ? 0 : fail(-ENOENT, "object " + op.oid.to_string() + " does not exist"); };

  switch (op.code) {
    case OpCode::kNop:
    case OpCode::kMkColl:
      return 0;
    case OpCode::kMigrate:  // moves data between tiers or inside one: contents unchanged
      return need_obj();
    case OpCode::kTouch:
    case OpCode::kCreate:
      if (!cur) mutable_obj(mc, op.oid);
      return 0;
    case OpCode::kWrite: {
      const std::string d = op.scatter.to_string();
      if (op.off + d.size() > kMaxObjectSize) return fail(-E2BIG, "past the largest object size");
      ObjectState* o = mutable_obj(mc, op.oid);
      if (d.empty()) return 0;
      if (o->data.size() < op.off + d.size()) o->data.resize(op.off + d.size(), '\0');
      o->data.replace(op.off, d.size(), d.data(), d.size());
      return 0;
    }
    case OpCode::kZero: {
      if (op.off + op.len > kMaxObjectSize) return fail(-E2BIG, "past the largest object size");
      ObjectState* o = mutable_obj(mc, op.oid);
      if (op.len == 0) return 0;
      uint64_t size = o->data.size();
      if (op.off < size) {
        uint64_t e = std::min(size, op.off + op.len);
        std::fill(o->data.begin() + static_cast<long>(op.off), o->data.begin() + static_cast<long>(e), '\0');
      }
      if (op.off + op.len > size) o->data.resize(op.off + op.len, '\0');
      return 0;
    }
    case OpCode::kTruncate:
      if (op.off > kMaxObjectSize) return fail(-E2BIG, "past the largest object size");
      if (int r = need_obj(); r || !cur) return r;
      mutable_obj(mc, op.oid)->data.resize(op.off, '\0');
      return 0;
    case OpCode::kRemove:
      if (int r = need_obj(); r || !cur) return r;
      mc->objects.erase(op.oid);
      return 0;
    case OpCode::kSetAttrs: {
      for (const auto& [k, v] : op.kv)
        if (k.empty() || k.size() > kMaxAttrNameLen) return fail(-ENAMETOOLONG, "attribute name length");
      if (int r = need_obj(); r || !cur) return r;
      ObjectState* o = mutable_obj(mc, op.oid);
      for (const auto& [k, v] : op.kv) o->attrs[k] = v;
      return 0;
    }
    case OpCode::kRmAttr:
      if (int r = need_obj(); r || !cur) return r;
      mutable_obj(mc, op.oid)->attrs.erase(op.name);
      return 0;
    case OpCode::kRmAttrs:
      if (int r = need_obj(); r || !cur) return r;
      mutable_obj(mc, op.oid)->attrs.clear();
      return 0;
    case OpCode::kClone:
      if (!cur) return fail(-ENOENT, "clone source " + op.oid.to_string() + " does not exist");
      if (op.oid == op.dst_oid) return 0;
      mc->objects[op.dst_oid] = cur;  // shared: objects are immutable once published
      return 0;
    case OpCode::kCloneRange: {
      if (!cur) return fail(-ENOENT, "clone_range source does not exist");
      if (op.off + op.len < op.off || op.off + op.len > cur->data.size())
        return fail(-EINVAL, "source range outside the source object");
      if (op.dst_off + op.len > kMaxObjectSize) return fail(-E2BIG, "past the largest object size");
      std::string bytes = cur->data.substr(op.off, op.len);
      ObjectState* d = mutable_obj(mc, op.dst_oid);
      if (op.len == 0) return 0;
      if (d->data.size() < op.dst_off + op.len) d->data.resize(op.dst_off + op.len, '\0');
      d->data.replace(op.dst_off, op.len, bytes);
      return 0;
    }
    case OpCode::kOmapSetKeys: {
      if (int r = need_obj(); r || !cur) return r;
      ObjectState* o = mutable_obj(mc, op.oid);
      for (const auto& [k, v] : op.kv) o->omap[k] = v;
      return 0;
    }
    case OpCode::kOmapRmKeys: {
      if (int r = need_obj(); r || !cur) return r;
      ObjectState* o = mutable_obj(mc, op.oid);
      for (const auto& k : op.keys) o->omap.erase(k);
      return 0;
    }
    case OpCode::kOmapRmKeyRange: {
      if (int r = need_obj(); r || !cur) return r;
      if (op.name >= op.name2) return 0;
      ObjectState* o = mutable_obj(mc, op.oid);
      o->omap.erase(o->omap.lower_bound(op.name), o->omap.lower_bound(op.name2));
      return 0;
    }
    case OpCode::kOmapClear: {
      if (int r = need_obj(); r || !cur) return r;
      ObjectState* o = mutable_obj(mc, op.oid);
      o->omap.clear();
      o->omap_header.clear();
      return 0;
    }
    case OpCode::kOmapSetHeader:
      if (int r = need_obj(); r || !cur) return r;
      mutable_obj(mc, op.oid)->omap_header = op.data;
      return 0;
    case OpCode::kRmColl:
      if (!mc->objects.empty()) return fail(-ENOTEMPTY, "collection " + op.cid.name + " is not empty");
      colls.erase(op.cid.name);
      return 0;
    case OpCode::kCollMoveRename:
    case OpCode::kTryRename: {
      ModelCollection* dc = find_coll(op.dst_cid);
      if (!dc) return fail(-ENOENT, "destination collection does not exist");
      if (!cur) return fail(-ENOENT, "source " + op.oid.to_string() + " does not exist");
      if (mc == dc && op.oid == op.dst_oid) return 0;
      if (find_obj(dc, op.dst_oid)) return fail(-EEXIST, "destination " + op.dst_oid.to_string() + " exists");
      mc->objects.erase(op.oid);
      dc->objects[op.dst_oid] = cur;
      return 0;
    }
    case OpCode::kSplitCollection: {
      ModelCollection* dc = find_coll(op.dst_cid);
      if (!dc) return fail(-ENOENT, "split destination does not exist");
      if (op.bits > 32) return fail(-EINVAL, "bits out of range");
      std::vector<ObjectId> moving;
      for (const auto& [o, st] : mc->objects)
        if (o.matches(op.bits, op.rem)) {
          if (dc != mc && find_obj(dc, o)) return fail(-EEXIST, "split destination holds " + o.to_string());
          moving.push_back(o);
        }
      if (dc != mc)
        for (const auto& o : moving) {
          dc->objects[o] = mc->objects[o];
          mc->objects.erase(o);
        }
      mc->bits = op.bits;
      return 0;
    }
    case OpCode::kMergeCollection: {
      ModelCollection* dc = find_coll(op.dst_cid);
      if (!dc) return fail(-ENOENT, "merge destination does not exist");
      if (dc == mc) return fail(-EINVAL, "cannot merge a collection into itself");
      for (const auto& [o, st] : mc->objects)
        if (find_obj(dc, o)) return fail(-EEXIST, "merge destination holds " + o.to_string());
      for (auto& [o, st] : mc->objects) dc->objects[o] = st;
      dc->bits = op.bits;
      colls.erase(op.cid.name);
      return 0;
    }
    case OpCode::kCollSetBits:
      mc->bits = op.bits;
      return 0;
    case OpCode::kSetAllocHint:
      return need_obj();  // placement only: nothing observable
  }
  return fail(-EINVAL, "unknown op");
}

uint64_t StoreModel::object_count() const {
  uint64_t n = 0;
  for (const auto& [name, c] : colls) n += c.objects.size();
  return n;
}

uint64_t StoreModel::data_bytes() const {
  uint64_t n = 0;
  for (const auto& [name, c] : colls)
    for (const auto& [o, st] : c.objects) n += st->data.size();
  return n;
}

uint64_t StoreModel::digest() const {
  // Two crc32c streams with different seeds over a length-prefixed
  // serialization: cheap, and ambiguity-free.
  uint32_t a = 0, b = 0x9e3779b9u;
  auto feed = [&](std::string_view s) {
    std::string len;
    put_varint(&len, s.size());
    a = crc32c(a, len.data(), len.size());
    a = crc32c(a, s.data(), s.size());
    b = crc32c(b, s.data(), s.size());
    b = crc32c(b, len.data(), len.size());
  };
  for (const auto& [name, c] : colls) {
    feed(name);
    feed(std::to_string(c.bits));
    for (const auto& [o, st] : c.objects) {
      feed(encode_object_key(o));
      feed(st->data);
      for (const auto& [k, v] : st->attrs) feed(k), feed(v);
      feed(st->omap_header);
      for (const auto& [k, v] : st->omap) feed(k), feed(v);
    }
  }
  return static_cast<uint64_t>(a) << 32 | b;
}

int read_store_model(HybridStore& store, StoreModel* out, std::string* error) {
  StoreModel m;
  for (const auto& c : store.list_collections()) {
    ModelCollection& mc = m.colls[c.name];
    int bits = store.collection_bits(c);
    if (bits < 0) {
      *error = "collection_bits of " + c.name;
      return bits;
    }
    mc.bits = static_cast<uint32_t>(bits);
    ObjectId pos = ObjectId::make_min();
    for (;;) {
      std::vector<ObjectId> objs;
      ObjectId next;
      if (int r = store.collection_list(c, pos, ObjectId::make_max(), 512, &objs, &next); r < 0) {
        *error = "listing " + c.name;
        return r;
      }
      for (const auto& o : objs) {
        auto st = std::make_shared<ObjectState>();
        ObjectStat s;
        if (int r = store.stat(c, o, &s); r < 0) {
          *error = "stat " + o.to_string() + " in " + c.name;
          return r;
        }
        int r = store.read(c, o, 0, 0, &st->data);
        if (r < 0) {
          *error = "reading " + o.to_string() + " in " + c.name;
          return r;
        }
        if (st->data.size() != s.size) {
          *error = fmt::format("reading {} in {} returned {} bytes but stat says {}", o.to_string(), c.name,
                               st->data.size(), s.size);
          return -EIO;
        }
        if ((r = store.getattrs(c, o, &st->attrs)) < 0) {
          *error = "getattrs " + o.to_string();
          return r;
        }
        if ((r = store.omap_get(c, o, &st->omap_header, &st->omap)) < 0) {
          *error = "omap_get " + o.to_string();
          return r;
        }
        mc.objects[o] = std::move(st);
      }
      if (next.max || objs.empty()) break;
      pos = next;
    }
  }
  *out = std::move(m);
  return 0;
}

std::string diff_models(const StoreModel& e, const StoreModel& a) {
  for (const auto& [name, ec] : e.colls)
    if (!a.colls.count(name)) return "collection " + name + " is missing";
  for (const auto& [name, ac] : a.colls) {
    auto it = e.colls.find(name);
    if (it == e.colls.end()) return "collection " + name + " should not exist";
    const ModelCollection& ec = it->second;
    if (ec.bits != ac.bits) return fmt::format("collection {} has {} hash bits, expected {}", name, ac.bits, ec.bits);
    for (const auto& [o, st] : ec.objects)
      if (!ac.objects.count(o)) return "object " + o.to_string() + " in " + name + " is missing";
    for (const auto& [o, ast] : ac.objects) {
      auto eit = ec.objects.find(o);
      std::string where = "object " + o.to_string() + " in " + name;
      if (eit == ec.objects.end()) return where + " should not exist";
      const ObjectState& x = *eit->second;
      const ObjectState& y = *ast;
      if (x.data.size() != y.data.size())
        return fmt::format("{} has size {}, expected {}", where, y.data.size(), x.data.size());
      if (x.data != y.data) {
        size_t i = 0;
        while (x.data[i] == y.data[i]) ++i;
        return fmt::format("{}: data differs from offset {} on", where, i);
      }
      if (x.attrs != y.attrs) return where + ": xattrs differ";
      if (x.omap_header != y.omap_header) return where + ": omap header differs";
      if (x.omap != y.omap)
        return fmt::format("{}: omap differs ({} keys, expected {})", where, y.omap.size(), x.omap.size());
    }
  }
  return "";
}

}  // namespace hybridstore::crashtest
