// list, stat, cat, getattr, omap-list, omap-keys: read-only views of collections and objects.
#include <unistd.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "hybridstore/txn_json/txn_json.h"
#include "store_access.h"

namespace hybridstore::tool {
namespace {

struct ObjArgs {
  std::string coll;
  std::string oid;
  std::string name;
  uint64_t offset = 0;
  uint64_t length = 0;
  bool json = false;
};

void add_coll(CLI::App* sub, ObjArgs* a) { sub->add_option("--coll", a->coll, "collection")->required(); }
void add_oid(CLI::App* sub, ObjArgs* a) {
  sub->add_option("--oid", a->oid, "object: a name, or JSON identity {\"name\":..,\"pool\":..,\"hash\":..}")
      ->required();
}

// Mounts and resolves the object; returns 0 or an exit code.
int resolve(const GlobalArgs& g, const ObjArgs& a, std::unique_ptr<HybridStore>* store, ObjectId* o) {
  std::string err;
  if (parse_object_id_arg(a.oid, CollectionId(a.coll), o, &err) < 0) return fail("--oid: " + err), 2;
  *store = mount_store(g);
  return *store ? 0 : 1;
}

bool write_all(const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::write(STDOUT_FILENO, s.data() + done, s.size() - done);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

ToolCommand list_cmd("list", "list the objects of a collection (or, without --coll, the collections)",
                     [](CLI::App* sub, GlobalArgs* args) {
                       auto a = std::make_shared<ObjArgs>();
                       sub->add_option("--coll", a->coll, "collection");
                       sub->add_flag("--json", a->json, "one JSON identity per line instead of names");
                       return [args, a] {
                         auto store = mount_store(*args);
                         if (!store) return 1;
                         if (a->coll.empty()) {
                           for (const auto& c : store->list_collections()) printf("%s\n", c.name.c_str());
                           return store->umount() < 0 ? 1 : 0;
                         }
                         ObjectId start = ObjectId::make_min();
                         for (;;) {
                           std::vector<ObjectId> page;
                           ObjectId next;
                           int r = store->collection_list(a->coll, start, ObjectId::make_max(), 1000, &page, &next);
                           if (r < 0) return fail("list " + a->coll, r);
                           for (const auto& o : page) {
                             if (a->json)
                               printf("%s\n", object_id_to_json(o).dump().c_str());
                             else
                               printf("%s\n", o.name.c_str());
                           }
                           if (next.max) break;
                           start = next;
                         }
                         return store->umount() < 0 ? 1 : 0;
                       };
                     });

ToolCommand stat_cmd("stat", "print an object's size, placement and attributes as JSON",
                     [](CLI::App* sub, GlobalArgs* args) {
                       auto a = std::make_shared<ObjArgs>();
                       add_coll(sub, a.get());
                       add_oid(sub, a.get());
                       return [args, a] {
                         std::unique_ptr<HybridStore> store;
                         ObjectId o;
                         if (int r = resolve(*args, *a, &store, &o)) return r;
                         ObjectStat st;
                         if (int r = store->stat(a->coll, o, &st); r < 0) return fail("stat " + a->oid, r);
                         std::map<std::string, std::string> attrs;
                         store->getattrs(a->coll, o, &attrs);
                         nlohmann::json names = nlohmann::json::array();
                         for (auto& [k, v] : attrs) names.push_back(k);
                         nlohmann::json j{{"oid", object_id_to_json(o)},
                                          {"size", st.size},
                                          {"allocated", st.allocated},
                                          {"omap_id", st.omap_id},
                                          {"attrs", names}};
                         // ssd_bytes, hdd_bytes, and tier2_bytes... where a tier holds some.
                         for (Tier t : tier_ids(kMaxTiers))
                           if (t == Tier::kSsd || t == Tier::kHdd || st.bytes_on[t])
                             j[std::string(tier_name(t)) + "_bytes"] = st.bytes_on[t];
                         printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
                         return store->umount() < 0 ? 1 : 0;
                       };
                     });

ToolCommand cat_cmd("cat", "write an object's data to stdout", [](CLI::App* sub, GlobalArgs* args) {
  auto a = std::make_shared<ObjArgs>();
  add_coll(sub, a.get());
  add_oid(sub, a.get());
  sub->add_option("--offset", a->offset, "first byte (default 0)");
  sub->add_option("--length", a->length, "bytes (default: to the end)");
  return [args, a] {
    std::unique_ptr<HybridStore> store;
    ObjectId o;
    if (int r = resolve(*args, *a, &store, &o)) return r;
    ObjectStat st;
    if (int r = store->stat(a->coll, o, &st); r < 0) return fail("cat " + a->oid, r);
    uint64_t end = a->length ? std::min(st.size, a->offset + a->length) : st.size;
    // In pieces, so objects of any size stream in bounded memory.
    for (uint64_t pos = a->offset; pos < end;) {
      uint64_t n = std::min<uint64_t>(end - pos, 16ull << 20);
      std::string data;
      int r = store->read(a->coll, o, pos, n, &data);
      if (r < 0) return fail("read " + a->oid, r);
      if (!write_all(data)) return fail("writing to stdout failed");
      pos += n;
    }
    return store->umount() < 0 ? 1 : 0;
  };
});

ToolCommand getattr_cmd("getattr", "write one attribute's value to stdout", [](CLI::App* sub, GlobalArgs* args) {
  auto a = std::make_shared<ObjArgs>();
  add_coll(sub, a.get());
  add_oid(sub, a.get());
  sub->add_option("--name", a->name, "attribute name")->required();
  return [args, a] {
    std::unique_ptr<HybridStore> store;
    ObjectId o;
    if (int r = resolve(*args, *a, &store, &o)) return r;
    std::string v;
    int r = store->getattr(a->coll, o, a->name, &v);
    if (r == -ENODATA) return fail("object " + a->oid + " has no attribute " + a->name);
    if (r < 0) return fail("getattr " + a->oid, r);
    if (!write_all(v)) return fail("writing to stdout failed");
    return store->umount() < 0 ? 1 : 0;
  };
});

ToolCommand omap_cmd("omap-list", "print an object's omap as a JSON object of key to value",
                     [](CLI::App* sub, GlobalArgs* args) {
                       auto a = std::make_shared<ObjArgs>();
                       add_coll(sub, a.get());
                       add_oid(sub, a.get());
                       auto header = std::make_shared<bool>(false);
                       sub->add_flag("--header", *header, "print {\"header\": .., \"keys\": {..}} instead");
                       return [args, a, header] {
                         std::unique_ptr<HybridStore> store;
                         ObjectId o;
                         if (int r = resolve(*args, *a, &store, &o)) return r;
                         std::string h;
                         std::map<std::string, std::string> kv;
                         if (int r = store->omap_get(a->coll, o, &h, &kv); r < 0) return fail("omap " + a->oid, r);
                         nlohmann::json keys = nlohmann::json::object();
                         for (auto& [k, v] : kv) keys[k] = v;
                         nlohmann::json out = *header ? nlohmann::json{{"header", h}, {"keys", keys}} : keys;
                         printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
                         return store->umount() < 0 ? 1 : 0;
                       };
                     });

// A key as one line's field: bytes outside printable ASCII, '%' and the
// tab are written %XX, so any key prints on one line and reads back.
std::string escape_key(const std::string& k) {
  std::string out;
  for (unsigned char ch : k) {
    if (ch < 0x21 || ch > 0x7e || ch == '%') {
      char buf[4];
      snprintf(buf, sizeof(buf), "%%%02X", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out;
}

ToolCommand omap_keys_cmd(
    "omap-keys",
    "print every omap key of a collection's objects (or of all collections): collection, object as JSON, key "
    "(%XX for bytes outside printable ASCII), tab-separated, one key a line",
    [](CLI::App* sub, GlobalArgs* args) {
      auto a = std::make_shared<ObjArgs>();
      sub->add_option("--coll", a->coll, "collection (default: every collection)");
      return [args, a] {
        auto store = mount_store(*args);
        if (!store) return 1;
        std::vector<CollectionId> colls;
        if (a->coll.empty())
          colls = store->list_collections();
        else
          colls.push_back(CollectionId(a->coll));
        for (const auto& c : colls) {
          ObjectId start = ObjectId::make_min();
          for (;;) {
            std::vector<ObjectId> page;
            ObjectId next;
            if (int r = store->collection_list(c, start, ObjectId::make_max(), 1000, &page, &next); r < 0)
              return fail("list " + c.name, r);
            for (const auto& o : page) {
              std::set<std::string> keys;
              if (int r = store->omap_get_keys(c, o, &keys); r < 0 && r != -ENOENT)
                return fail("omap keys of " + o.name + " in " + c.name, r);
              const std::string id = object_id_to_json(o).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
              for (const auto& k : keys) printf("%s\t%s\t%s\n", c.name.c_str(), id.c_str(), escape_key(k).c_str());
            }
            if (next.max) break;
            start = next;
          }
        }
        return store->umount() < 0 ? 1 : 0;
      };
    });

}  // namespace
}  // namespace hybridstore::tool
