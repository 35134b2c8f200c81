#include "hybridstore/txn_json/txn_json.h"

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

namespace hybridstore {

using nlohmann::json;

namespace {

constexpr int kMaxDepth = 32;
constexpr uint64_t kMaxDataFile = 1ull << 32;

// nlohmann's parser recurses per nesting level; refuse deep nesting up front
// so hostile input cannot exhaust the stack.
bool nesting_ok(std::string_view s) {
  int depth = 0;
  bool in_str = false, esc = false;
  for (char c : s) {
    if (in_str) {
      if (esc) esc = false;
      else if (c == '\\') esc = true;
      else if (c == '"') in_str = false;
      continue;
    }
    if (c == '"') in_str = true;
    else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

struct Ctx {
  int txn = 0;
  int op = 0;
  std::string opname;
  std::string* error;
  int fail(const std::string& msg) {
    *error = fmt::format("transaction {}, op {}{}: {}", txn, op, opname.empty() ? "" : " (" + opname + ")", msg);
    return -EINVAL;
  }
};

bool get_u64(const json& j, uint64_t* out) {
  if (j.is_number_unsigned()) {
    *out = j.get<uint64_t>();
    return true;
  }
  if (j.is_number_integer()) {
    int64_t v = j.get<int64_t>();
    if (v < 0) return false;
    *out = static_cast<uint64_t>(v);
    return true;
  }
  return false;
}

// A byte string: a JSON string, or {"b64": "..."}.
bool get_bytes(const json& j, std::string* out) {
  if (j.is_string()) {
    *out = j.get<std::string>();
    return true;
  }
  if (j.is_object() && j.size() == 1 && j.contains("b64") && j["b64"].is_string())
    return base64_decode(j["b64"].get<std::string>(), out);
  return false;
}

}  // namespace

std::string base64_encode(std::string_view in) {
  static const char* tbl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = static_cast<uint8_t>(in[i]) << 16 | static_cast<uint8_t>(in[i + 1]) << 8 | static_cast<uint8_t>(in[i + 2]);
    out += {tbl[v >> 18], tbl[(v >> 12) & 63], tbl[(v >> 6) & 63], tbl[v & 63]};
  }
  if (i + 1 == in.size()) {
    uint32_t v = static_cast<uint8_t>(in[i]) << 16;
    out += {tbl[v >> 18], tbl[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    uint32_t v = static_cast<uint8_t>(in[i]) << 16 | static_cast<uint8_t>(in[i + 1]) << 8;
    out += {tbl[v >> 18], tbl[(v >> 12) & 63], tbl[(v >> 6) & 63], '='};
  }
  return out;
}

bool base64_decode(std::string_view in, std::string* out) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  out->clear();
  if (in.size() % 4) return false;
  for (size_t i = 0; i < in.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      char c = in[i + k];
      if (c == '=' && i + 4 == in.size() && k >= 2) {
        v[k] = 0;
        ++pad;
      } else {
        if (pad) return false;  // data after padding
        v[k] = val(c);
        if (v[k] < 0) return false;
      }
    }
    uint32_t w = static_cast<uint32_t>(v[0] << 18 | v[1] << 12 | v[2] << 6 | v[3]);
    out->push_back(static_cast<char>(w >> 16));
    if (pad < 2) out->push_back(static_cast<char>(w >> 8));
    if (pad < 1) out->push_back(static_cast<char>(w));
  }
  return true;
}

int parse_object_id(const json& j, const CollectionId& coll, ObjectId* out, std::string* error) {
  if (j.is_string()) {
    *out = ObjectId::from_name(j.get<std::string>(), coll.default_pool());
    return 0;
  }
  if (!j.is_object()) {
    *error = "an object id is a name or an object with identity fields";
    return -EINVAL;
  }
  std::string name;
  if (!j.contains("name") || !get_bytes(j["name"], &name)) {
    *error = "object id needs a \"name\" (a string or {\"b64\": ...})";
    return -EINVAL;
  }
  ObjectId o = ObjectId::from_name(name, coll.default_pool());
  for (const auto& [k, v] : j.items()) {
    uint64_t u;
    if (k == "name") continue;
    if (k == "pool") {
      if (!v.is_number_integer()) return *error = "\"pool\" must be an integer", -EINVAL;
      o.pool = v.get<int64_t>();
    } else if (k == "namespace" || k == "nspace") {
      if (!get_bytes(v, &o.nspace)) return *error = "\"namespace\" must be a string", -EINVAL;
    } else if (k == "key") {
      if (!get_bytes(v, &o.key)) return *error = "\"key\" must be a string", -EINVAL;
    } else if (k == "hash") {
      if (!get_u64(v, &u) || u > UINT32_MAX) return *error = "\"hash\" must be a 32-bit unsigned integer", -EINVAL;
      o.hash = static_cast<uint32_t>(u);
    } else if (k == "snap") {
      if (v.is_string() && v.get<std::string>() == "head") o.snap = kNoSnap;
      else if (v.is_string() && v.get<std::string>() == "snapdir") o.snap = kSnapDir;
      else if (get_u64(v, &u)) o.snap = u;
      else return *error = "\"snap\" must be an integer, \"head\" or \"snapdir\"", -EINVAL;
    } else if (k == "generation" || k == "gen") {
      if (!get_u64(v, &u)) return *error = "\"generation\" must be a non-negative integer", -EINVAL;
      o.generation = u;
    } else if (k == "shard") {
      if (!v.is_number_integer() || v.get<int64_t>() < -1 || v.get<int64_t>() > 127)
        return *error = "\"shard\" must be -1..127", -EINVAL;
      o.shard = static_cast<int8_t>(v.get<int64_t>());
    } else {
      *error = "unknown object id field \"" + k + "\"";
      return -EINVAL;
    }
  }
  if (o.key == o.name) o.key.clear();
  *out = std::move(o);
  return 0;
}

int parse_object_id_arg(const std::string& arg, const CollectionId& coll, ObjectId* out, std::string* error) {
  if (!arg.empty() && arg[0] == '{') {
    if (!nesting_ok(arg)) return *error = "object id nests too deeply", -EINVAL;
    json j = json::parse(arg, nullptr, false);
    if (j.is_discarded()) return *error = "object id is not valid JSON", -EINVAL;
    return parse_object_id(j, coll, out, error);
  }
  *out = ObjectId::from_name(arg, coll.default_pool());
  return 0;
}

json object_id_to_json(const ObjectId& o) {
  if (o.max) return json{{"max", true}};
  auto text = [](const std::string& s) -> json {
    // Names are bytes; JSON strings are UTF-8: carry anything else as base64.
    bool ascii = true;
    for (unsigned char c : s) ascii &= (c >= 0x20 && c < 0x7f);
    if (ascii) return s;
    return json{{"b64", base64_encode(s)}};
  };
  json j{{"name", text(o.name)}, {"pool", o.pool}, {"hash", o.hash}};
  if (!o.nspace.empty()) j["namespace"] = text(o.nspace);
  if (!o.key.empty()) j["key"] = text(o.key);
  if (o.snap != kNoSnap) j["snap"] = o.snap;
  if (o.generation != kNoGen) j["generation"] = o.generation;
  if (o.shard != kNoShard) j["shard"] = o.shard;
  return j;
}

namespace {

// Long on purpose: one branch per op name, each a few lines, over field readers that share the op's JSON.
int parse_op(const json& j, const std::string& base_dir, Transaction* t, Ctx& ctx) {
  if (!j.is_object()) return ctx.fail("an op must be a JSON object");
  if (!j.contains("op") || !j["op"].is_string()) return ctx.fail("missing string field \"op\"");
  const std::string name = j["op"].get<std::string>();
  ctx.opname = name;
  // Named first: an unknown op must not be reported as a missing field.
  static const std::set<std::string> kOps = {
      "nop", "mkcoll", "rmcoll", "set_bits", "split", "merge", "touch", "create", "write", "zero",
      "truncate", "remove", "setattr", "setattrs", "rmattr", "rmattrs", "clone", "clone_range",
      "omap_setkeys", "omap_rmkeys", "omap_rmkeyrange", "omap_clear", "omap_setheader", "rename",
      "try_rename", "set_alloc_hint"};
  if (!kOps.count(name)) return ctx.fail("unknown op \"" + name + "\"");
  std::set<std::string> used = {"op"};
  auto has = [&](const char* f) { return j.contains(f); };
  auto field = [&](const char* f) -> const json& {
    used.insert(f);
    return j.at(f);
  };
  std::string err;
  auto coll = [&](const char* f, CollectionId* c) -> int {
    if (!has(f) || !j[f].is_string()) return ctx.fail(fmt::format("missing string field \"{}\"", f));
    *c = CollectionId(field(f).get<std::string>());
    if (!c->valid()) return ctx.fail(fmt::format("\"{}\" is not a valid collection name", f));
    return 0;
  };
  auto oid = [&](const char* f, const CollectionId& c, ObjectId* o) -> int {
    if (!has(f)) return ctx.fail(fmt::format("missing field \"{}\"", f));
    if (parse_object_id(field(f), c, o, &err) < 0) return ctx.fail(fmt::format("\"{}\": {}", f, err));
    return 0;
  };
  auto u64 = [&](const char* f, uint64_t* v, bool required = true, uint64_t def = 0) -> int {
    if (!has(f)) {
      if (required) return ctx.fail(fmt::format("missing field \"{}\"", f));
      *v = def;
      return 0;
    }
    if (!get_u64(field(f), v)) return ctx.fail(fmt::format("\"{}\" must be a non-negative integer", f));
    return 0;
  };
  auto bytes = [&](const char* f, std::string* v) -> int {
    if (!has(f)) return ctx.fail(fmt::format("missing field \"{}\"", f));
    if (!get_bytes(field(f), v)) return ctx.fail(fmt::format("\"{}\" must be a string or {{\"b64\": ...}}", f));
    return 0;
  };
  auto kvmap = [&](const char* f, std::map<std::string, std::string>* m) -> int {
    if (!has(f) || !j[f].is_object()) return ctx.fail(fmt::format("\"{}\" must be an object of key to value", f));
    for (const auto& [k, v] : field(f).items()) {
      std::string val;
      if (!get_bytes(v, &val)) return ctx.fail(fmt::format("value of \"{}\" in \"{}\" must be a string", k, f));
      (*m)[k] = std::move(val);
    }
    return 0;
  };
  auto data = [&](std::string* out) -> int {
    int n = has("data") + has("data_b64") + has("data_file");
    if (n != 1) return ctx.fail("give exactly one of \"data\", \"data_b64\", \"data_file\"");
    if (has("data")) return bytes("data", out);
    if (has("data_b64")) {
      if (!j["data_b64"].is_string() || !base64_decode(field("data_b64").get<std::string>(), out))
        return ctx.fail("\"data_b64\" is not valid base64");
      return 0;
    }
    if (!j["data_file"].is_string()) return ctx.fail("\"data_file\" must be a path");
    std::string path = field("data_file").get<std::string>();
    if (!path.empty() && path[0] != '/' && !base_dir.empty()) path = base_dir + "/" + path;
    // Size first: a device, FIFO or /dev/zero would be read forever.
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) return ctx.fail("data_file " + path + " is not a regular file");
    const uint64_t size = std::filesystem::file_size(path, ec);
    if (ec) return ctx.fail("cannot read data_file " + path + ": " + ec.message());
    if (size > kMaxDataFile) return ctx.fail("data_file " + path + " is larger than an object may be");
    std::ifstream f(path, std::ios::binary);
    if (!f) return ctx.fail("cannot read data_file " + path);
    std::ostringstream ss;
    ss << f.rdbuf();
    *out = ss.str();
    return 0;
  };

  CollectionId c, dc;
  ObjectId o, d;
  uint64_t a = 0, b = 0, e = 0;
  std::string s1, s2;
  std::map<std::string, std::string> m;
  int r = 0;
  if (name == "nop") {
    t->nop();
  } else if (name == "mkcoll") {
    if ((r = coll("coll", &c)) || (r = u64("bits", &a, false, 0))) return r;
    if (a > 32) return ctx.fail("\"bits\" must be 0..32");
    t->create_collection(c, static_cast<uint32_t>(a));
  } else if (name == "rmcoll") {
    if ((r = coll("coll", &c))) return r;
    t->remove_collection(c);
  } else if (name == "set_bits") {
    if ((r = coll("coll", &c)) || (r = u64("bits", &a))) return r;
    if (a > 32) return ctx.fail("\"bits\" must be 0..32");
    t->collection_set_bits(c, static_cast<uint32_t>(a));
  } else if (name == "split") {
    if ((r = coll("coll", &c)) || (r = coll("dst_coll", &dc)) || (r = u64("bits", &a)) || (r = u64("rem", &b)))
      return r;
    if (a > 32 || b > UINT32_MAX) return ctx.fail("\"bits\" must be 0..32 and \"rem\" 32-bit");
    t->split_collection(c, static_cast<uint32_t>(a), static_cast<uint32_t>(b), dc);
  } else if (name == "merge") {
    if ((r = coll("coll", &c)) || (r = coll("dst_coll", &dc)) || (r = u64("bits", &a))) return r;
    if (a > 32) return ctx.fail("\"bits\" must be 0..32");
    t->merge_collection(c, dc, static_cast<uint32_t>(a));
  } else {
    // Everything else names an object in a collection.
    if ((r = coll("coll", &c)) || (r = oid("oid", c, &o))) return r;
    if (name == "touch") {
      t->touch(c, o);
    } else if (name == "create") {
      t->create(c, o);
    } else if (name == "write") {
      if ((r = u64("off", &a, false, 0)) || (r = data(&s1))) return r;
      t->write(c, o, a, std::move(s1));
    } else if (name == "zero") {
      if ((r = u64("off", &a)) || (r = u64("len", &b))) return r;
      t->zero(c, o, a, b);
    } else if (name == "truncate") {
      if ((r = u64("size", &a))) return r;
      t->truncate(c, o, a);
    } else if (name == "remove") {
      t->remove(c, o);
    } else if (name == "setattr") {
      if (!has("name") || !j["name"].is_string()) return ctx.fail("missing string field \"name\"");
      s1 = field("name").get<std::string>();
      if ((r = bytes("value", &s2))) return r;
      t->setattr(c, o, s1, std::move(s2));
    } else if (name == "setattrs") {
      if ((r = kvmap("attrs", &m))) return r;
      t->setattrs(c, o, std::move(m));
    } else if (name == "rmattr") {
      if (!has("name") || !j["name"].is_string()) return ctx.fail("missing string field \"name\"");
      t->rmattr(c, o, field("name").get<std::string>());
    } else if (name == "rmattrs") {
      t->rmattrs(c, o);
    } else if (name == "clone") {
      if ((r = oid("dst", c, &d))) return r;
      t->clone(c, o, d);
    } else if (name == "clone_range") {
      if ((r = oid("dst", c, &d)) || (r = u64("src_off", &a, false, 0)) || (r = u64("len", &b)) ||
          (r = u64("dst_off", &e, false, 0)))
        return r;
      t->clone_range(c, o, d, a, b, e);
    } else if (name == "omap_setkeys") {
      if ((r = kvmap("kv", &m))) return r;
      t->omap_setkeys(c, o, std::move(m));
    } else if (name == "omap_rmkeys") {
      if (!has("keys") || !j["keys"].is_array()) return ctx.fail("\"keys\" must be a list of strings");
      std::vector<std::string> keys;
      for (const auto& k : field("keys")) {
        std::string ks;
        if (!get_bytes(k, &ks)) return ctx.fail("\"keys\" must be a list of strings");
        keys.push_back(std::move(ks));
      }
      t->omap_rmkeys(c, o, std::move(keys));
    } else if (name == "omap_rmkeyrange") {
      if ((r = bytes("first", &s1)) || (r = bytes("last", &s2))) return r;
      t->omap_rmkeyrange(c, o, s1, s2);
    } else if (name == "omap_clear") {
      t->omap_clear(c, o);
    } else if (name == "omap_setheader") {
      if ((r = bytes("data", &s1))) return r;
      t->omap_setheader(c, o, std::move(s1));
    } else if (name == "rename") {
      dc = c;
      if (has("dst_coll") && (r = coll("dst_coll", &dc))) return r;
      if ((r = oid("dst", dc, &d))) return r;
      t->collection_move_rename(c, o, dc, d);
    } else if (name == "try_rename") {
      if ((r = oid("dst", c, &d))) return r;
      t->try_rename(c, o, d);
    } else if (name == "set_alloc_hint") {
      if ((r = u64("expected_object_size", &a, false, 0)) || (r = u64("expected_write_size", &b, false, 0)) ||
          (r = u64("flags", &e, false, 0)))
        return r;
      if (e > UINT32_MAX) return ctx.fail("\"flags\" must be 32-bit");
      t->set_alloc_hint(c, o, a, b, static_cast<uint32_t>(e));
    } else {
      return ctx.fail("unknown op \"" + name + "\"");
    }
  }
  for (const auto& [k, v] : j.items())
    if (!used.count(k)) return ctx.fail("unknown field \"" + k + "\"");
  return 0;
}

}  // namespace

int parse_json_transactions(std::string_view text, const std::string& base_dir, std::vector<Transaction>* out,
                            std::string* error) {
  out->clear();
  if (!nesting_ok(text)) {
    *error = fmt::format("JSON nests deeper than {} levels", kMaxDepth);
    return -EINVAL;
  }
  json doc = json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded()) {
    *error = "not valid JSON";
    return -EINVAL;
  }
  if (!doc.is_array()) {
    *error = "expected a JSON list of transactions";
    return -EINVAL;
  }
  Ctx ctx;
  ctx.error = error;
  for (const auto& tj : doc) {
    ctx.op = 0;
    ctx.opname.clear();
    // Every failure leaves *out empty: no caller may apply half a file.
    if (!tj.is_object() || !tj.contains("ops") || !tj["ops"].is_array()) {
      out->clear();
      return ctx.fail("a transaction is an object with a list \"ops\"");
    }
    for (const auto& [k, v] : tj.items())
      if (k != "ops") {
        out->clear();
        return ctx.fail("unknown transaction field \"" + k + "\"");
      }
    Transaction t;
    for (const auto& oj : tj["ops"]) {
      if (int r = parse_op(oj, base_dir, &t, ctx); r < 0) {
        out->clear();
        return r;
      }
      ++ctx.op;
      ctx.opname.clear();
    }
    out->push_back(std::move(t));
    ++ctx.txn;
  }
  return 0;
}

}  // namespace hybridstore
