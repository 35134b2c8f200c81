#include "bench_target.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

#include <nlohmann/json.hpp>

#include "hscommon/log.h"

namespace hybridstore::bench {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kBlock = 4096;
constexpr uint64_t kTableBlocks = 256;  // 1 MiB of random bytes, 4 KiB slices
constexpr uint64_t kStamp = 24;

const char* table() {
  static const std::string t = [] {
    // Fixed, not the run's seed: another process must produce the same bytes.
    std::mt19937_64 rng(0x6879627269645354ull);
    std::string s(kTableBlocks * kBlock, '\0');
    for (size_t i = 0; i < s.size(); i += 8) {
      uint64_t v = rng();
      std::memcpy(&s[i], &v, 8);
    }
    return s;
  }();
  return t.data();
}

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// One 4 KiB block of content: its table slice with the stamp over its head.
void block_of(char* out, uint64_t h, uint64_t block, uint32_t gen) {
  std::memcpy(out, table() + (mix64(h + block) % kTableBlocks) * kBlock, kBlock);
  uint64_t stamp[3] = {h, block * kBlock, gen};
  std::memcpy(out, stamp, kStamp);
}

}  // namespace

uint64_t name_hash(const std::string& name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a: stable across builds, unlike std::hash
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return mix64(h);
}

void fill_pattern(char* out, uint64_t h, uint64_t off, uint64_t len, uint32_t gen) {
  char blk[kBlock];
  uint64_t end = off + len;
  for (uint64_t pos = off; pos < end;) {
    uint64_t b = pos / kBlock, in = pos % kBlock;
    uint64_t n = std::min(kBlock - in, end - pos);
    if (in == 0 && n == kBlock) {
      block_of(out + (pos - off), h, b, gen);
    } else {
      block_of(blk, h, b, gen);
      std::memcpy(out + (pos - off), blk + in, n);
    }
    pos += n;
  }
}

int64_t check_pattern(const char* data, uint64_t h, uint64_t off, uint64_t len, uint32_t gen) {
  char blk[kBlock];
  uint64_t end = off + len;
  for (uint64_t pos = off; pos < end;) {
    uint64_t b = pos / kBlock, in = pos % kBlock;
    uint64_t n = std::min(kBlock - in, end - pos);
    block_of(blk, h, b, gen);
    if (std::memcmp(data + (pos - off), blk + in, n) != 0) {
      for (uint64_t i = 0; i < n; ++i)
        if (data[pos - off + i] != blk[in + i]) return static_cast<int64_t>(pos + i);
    }
    pos += n;
  }
  return -1;
}

uint64_t RunMeta::size_of(uint64_t n) const {
  if (mix.empty()) return object_size;
  unsigned total = 0;
  for (const auto& [s, w] : mix) total += w;
  uint64_t pick = mix64(seed * 0x9e3779b97f4a7c15ull + n) % total;
  for (const auto& [s, w] : mix) {
    if (pick < w) return s;
    pick -= w;
  }
  return mix.back().first;
}

CollectionId pg_coll(uint64_t n) {
  char buf[32];
  snprintf(buf, sizeof(buf), "1.%x_head", static_cast<unsigned>(n % kPgs));
  return CollectionId(buf);
}

std::string object_prefix() {
  char host[64] = {0};
  gethostname(host, sizeof(host) - 1);
  return "benchmark_data_" + std::string(host) + "_" + std::to_string(getpid());
}

std::string object_name(const std::string& prefix, uint64_t n) { return prefix + "_object" + std::to_string(n); }

ObjectId bench_oid(const std::string& name) { return ObjectId::from_name(name, 1); }

BenchTarget::~BenchTarget() { finish(false); }

void BenchTarget::finish(bool keep) {
  if (store) {
    store->umount();
    store.reset();
  }
  if (temporary && !keep && !path.empty()) {
    std::error_code ec;
    fs::remove_all(fs::path(path).parent_path(), ec);
    path.clear();
  }
}

bool open_target(const RadosArgs& a, bool may_create, const std::vector<std::string>& extra_sets, BenchTarget* t) {
  std::string err;
  if (!a.conf.empty() && t->cfg.load_ini(a.conf, &err) < 0) {
    fprintf(stderr, "hybridstore-bench: --conf %s: %s\n", a.conf.c_str(), err.c_str());
    return false;
  }
  if (a.path.empty()) {
    const char* tmp = getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/hybridstore-bench.XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data())) {
      fprintf(stderr, "hybridstore-bench: cannot make a temporary directory %s: %s\n", templ.c_str(),
              strerror(errno));
      return false;
    }
    t->path = std::string(buf.data()) + "/store";
    t->temporary = true;
  } else {
    t->path = a.path;
  }
  StoreProbe probe;
  std::string probe_error;
  bool exists = HybridStore::probe(t->path, t->cfg, &probe, &probe_error) == 0;
  if (!exists && !may_create) {
    fprintf(stderr, "hybridstore-bench: no store at %s (make one with `write --no-cleanup --path %s`)\n",
            t->path.c_str(), t->path.c_str());
    return false;
  }
  std::vector<std::string> sets = exists ? std::vector<std::string>() : extra_sets;
  sets.insert(sets.end(), a.sets.begin(), a.sets.end());
  for (const auto& s : sets)
    if (t->cfg.set_from_arg(s, &err) < 0) {
      fprintf(stderr, "hybridstore-bench: --set %s: %s\n", s.c_str(), err.c_str());
      return false;
    }
  LogLevel lvl;
  if (parse_log_level(t->cfg.get_str("hybridstore_log_level"), &lvl)) set_log_level(lvl);
  t->store = std::make_unique<HybridStore>(t->path, t->cfg);
  if (!exists) {
    if (t->store->mkfs(&err) < 0) {
      fprintf(stderr, "hybridstore-bench: mkfs %s: %s\n", t->path.c_str(), err.c_str());
      return false;
    }
    t->fresh = true;
  }
  if (t->store->mount(&err) < 0) {
    fprintf(stderr, "hybridstore-bench: cannot mount %s: %s\n", t->path.c_str(), err.c_str());
    t->store.reset();
    return false;
  }
  return true;
}

int ensure_collections(HybridStore* s) {
  Transaction t;
  bool any = false;
  for (int i = 0; i < kPgs; ++i)
    if (!s->collection_exists(pg_coll(i))) {
      t.create_collection(pg_coll(i), 4);
      any = true;
    }
  return any ? s->apply_transaction(std::move(t)) : 0;
}

std::string meta_name(const std::string& run_name) {
  return run_name.empty() ? "benchmark_last_metadata" : run_name;
}

int save_meta(HybridStore* s, const std::string& run_name, const RunMeta& m) {
  nlohmann::json mix = nlohmann::json::array();
  for (const auto& [size, w] : m.mix) mix.push_back({size, w});
  nlohmann::json j{{"prefix", m.prefix},   {"op_size", m.op_size}, {"object_size", m.object_size},
                   {"objects", m.objects}, {"ops", m.ops},         {"mix", mix},
                   {"seed", m.seed},       {"pgs", kPgs}};
  ObjectId o = bench_oid(meta_name(run_name));
  Transaction t;
  t.truncate(pg_coll(0), o, 0);
  t.write(pg_coll(0), o, 0, j.dump());
  return s->apply_transaction(std::move(t));
}

int load_meta(HybridStore* s, const std::string& run_name, RunMeta* m) {
  std::string text;
  if (!s->collection_exists(pg_coll(0))) return -ENOENT;
  int r = s->read(pg_coll(0), bench_oid(meta_name(run_name)), 0, 0, &text);
  if (r < 0) return r;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("prefix") || j.value("pgs", 0) != kPgs) return -EINVAL;
  m->prefix = j.value("prefix", "");
  m->op_size = j.value("op_size", 0ull);
  m->object_size = j.value("object_size", 0ull);
  m->objects = j.value("objects", 0ull);
  m->ops = j.value("ops", 0ull);
  m->seed = j.value("seed", 0ull);
  for (const auto& x : j["mix"]) m->mix.push_back({x[0].get<uint64_t>(), x[1].get<unsigned>()});
  if (!m->op_size || !m->object_size || m->object_size % m->op_size) return -EINVAL;
  return 0;
}

int remove_meta(HybridStore* s, const std::string& run_name) {
  Transaction t;
  t.remove(pg_coll(0), bench_oid(meta_name(run_name)));
  return s->apply_transaction(std::move(t));
}

}  // namespace hybridstore::bench
