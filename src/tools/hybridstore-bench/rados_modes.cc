// write | seq | rand | randwrite: rados bench against the engine directly.
//
// write makes objects <prefix>_object<N> (spread over PG collections
// 1.0_head .. 1.f_head by N) of -O bytes in -b writes, each durable before it
// counts, and records the run in a metadata object (--run-name) as rados
// bench does; seq and rand read what a `write --no-cleanup` left and check
// every byte. randwrite is the RBD pattern: small overwrites at random
// block-aligned offsets of large objects, every block checked at the end.
#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>

#include "bench_command.h"
#include "rados_common.h"

namespace hybridstore::bench {
namespace {

// A buffer per worker, reused once the store no longer holds it.
std::shared_ptr<std::string> buffer_for(std::vector<std::shared_ptr<std::string>>* bufs, int w, uint64_t len) {
  auto& b = (*bufs)[static_cast<size_t>(w)];
  if (!b || b.use_count() > 1) b = std::make_shared<std::string>();
  b->resize(len);
  return b;
}

}  // namespace

namespace {

// Named and filled from the object's name, so that a run is the same bytes
// every time.
void add_metadata(Transaction* t, const CollectionId& c, const ObjectId& o, const std::string& name, int xattrs,
                  int omap_keys) {
  auto value = [&](const std::string& key) {
    std::string v(64, '\0');
    fill_pattern(v.data(), name_hash(name + key), 0, v.size());
    return v;
  };
  if (xattrs > 0) {
    std::map<std::string, std::string> attrs;
    for (int i = 0; i < xattrs; ++i) {
      const std::string k = "_bench." + std::to_string(i);
      attrs[k] = value(k);
    }
    t->setattrs(c, o, std::move(attrs));
  }
  if (omap_keys > 0) {
    std::map<std::string, std::string> kv;
    for (int i = 0; i < omap_keys; ++i) {
      char k[24];
      std::snprintf(k, sizeof k, "key.%06d", i);
      kv[k] = value(k);
    }
    t->omap_setkeys(c, o, std::move(kv));
  }
}

}  // namespace

int run_write(RadosArgs* args, ModeRun* mr) {
  ModeRun& m = *mr;
  if (int rc = begin_mode(&m, true); rc) return rc;
  RadosArgs& a = m.a;
  HybridStore* s = m.t.store.get();
  if (int r = ensure_collections(s); r < 0) {
    fprintf(stderr, "hybridstore-bench write: creating collections: %s\n", strerror(-r));
    return 1;
  }
  RunMeta meta;
  meta.prefix = object_prefix();
  meta.op_size = a.op_size;
  meta.object_size = a.object_size;
  meta.mix = a.mix;
  meta.seed = a.seed;
  const uint64_t per_object = meta.ops_per_object();
  std::cout << "hints = 1\n";
  if (a.mix.empty())
    std::cout << "Maintaining " << a.concurrent << " concurrent writes of " << a.op_size
              << " bytes to objects of size " << a.object_size << " for up to " << a.seconds << " seconds or "
              << a.max_objects << " objects\n";
  else
    std::cout << "Maintaining " << a.concurrent << " concurrent writes of whole objects of sizes " << a.object_mix_text
              << " for up to " << a.seconds << " seconds or " << a.max_objects << " objects\n";
  if (a.xattrs > 0 || a.omap_keys > 0)
    std::cout << "Each object created with " << a.xattrs << " attributes and " << a.omap_keys
              << " omap keys of 64 bytes\n";
  std::cout << "Object prefix: " << meta.prefix << std::endl;

  std::vector<std::shared_ptr<std::string>> bufs(static_cast<size_t>(a.concurrent));
  RunnerConfig rc = runner_config(m);
  rc.max_ops = static_cast<uint64_t>(a.max_objects) * per_object;
  m.before = s->perf().snapshot();
  m.res = run_ops(rc, [&](int w, uint64_t i, uint64_t* bytes) {
    uint64_t n = i / per_object;
    uint64_t off = (i % per_object) * meta.op_size;
    uint64_t len = meta.mix.empty() ? meta.op_size : meta.size_of(n);
    std::string name = object_name(meta.prefix, n);
    auto buf = buffer_for(&bufs, w, len);
    fill_pattern(buf->data(), name_hash(name), off, len);
    Transaction t;
    ObjectId o = bench_oid(name);
    if (off == 0) {
      // A hint on a missing object is a no-op: create it first, as the OSD does.
      t.touch(pg_coll(n), o);
      t.set_alloc_hint(pg_coll(n), o, meta.mix.empty() ? meta.object_size : len, len, 0);
      if (a.xattrs > 0 || a.omap_keys > 0) add_metadata(&t, pg_coll(n), o, name, a.xattrs, a.omap_keys);
    }
    t.write(pg_coll(n), o, off, std::shared_ptr<const std::string>(buf));
    int r = s->apply_transaction(std::move(t));
    *bytes = len;
    return r;
  });
  meta.ops = m.res.finished;
  meta.objects = (m.res.finished + per_object - 1) / per_object;
  if (int r = save_meta(s, a.run_name, meta); r < 0 && !m.res.error) {
    m.res.error = r;
    m.res.error_message = "saving the run's metadata failed";
  }
  if (m.res.error) fprintf(stderr, "hybridstore-bench write: %s\n", m.res.error_message.c_str());
  measure_ceiling(&m, busiest_tier(m, true), RawOp::kWrite, a.op_size, a.mix, a.object_mix_text);
  m.extra["run"] = {{"prefix", meta.prefix}, {"objects", meta.objects}, {"run_name", meta_name(a.run_name)}};
  print_results(&m, a.mix.empty() ? a.op_size : 0, a.mix.empty() ? a.object_size : 0);
  bool keep = a.no_cleanup;
  if (!keep && !m.res.error) {
    std::cout << "Cleaning up (deleting benchmark objects)" << std::endl;
    auto t0 = std::chrono::steady_clock::now();
    int r = remove_objects(s, meta.prefix, meta.objects, a.concurrent);
    if (r == 0) r = remove_meta(s, a.run_name);
    std::cout << "Removed " << meta.objects << " objects\n"
              << "Clean up completed and total clean up time :"
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << std::endl;
    if (r < 0) fprintf(stderr, "hybridstore-bench write: cleanup: %s\n", strerror(-r));
  }
  return end_mode(&m, a.mix.empty() ? a.op_size : 0, a.mix.empty() ? a.object_size : 0, keep);
}

int run_read(RadosArgs* args, ModeRun* mr) {
  ModeRun& m = *mr;
  if (int rc = begin_mode(&m, false); rc) return rc;
  RadosArgs& a = m.a;
  HybridStore* s = m.t.store.get();
  RunMeta meta;
  if (int r = load_meta(s, a.run_name, &meta); r < 0) {
    if (r == -ENOENT)
      std::cerr << "Must write data before running a read benchmark!" << std::endl;
    else
      std::cerr << "hybridstore-bench: the run's metadata object " << meta_name(a.run_name)
                << " cannot be read: " << strerror(-r) << std::endl;
    m.t.finish(true);
    return 1;
  }
  if (meta.ops == 0) {
    std::cerr << "Must write data before running a read benchmark! (the last write made no objects)" << std::endl;
    m.t.finish(true);
    return 1;
  }
  const bool seq = a.mode == RadosMode::kSeq;
  const uint64_t per_object = meta.ops_per_object();
  std::cout << "hints = 1" << std::endl;
  RunnerConfig rc = runner_config(m);
  if (seq) rc.max_ops = meta.ops;
  std::vector<std::mt19937_64> rngs;
  for (int w = 0; w < a.concurrent; ++w) rngs.emplace_back(a.seed * 1000003 + static_cast<uint64_t>(w));
  m.before = s->perf().snapshot();
  m.res = run_ops(rc, [&](int w, uint64_t i, uint64_t* bytes) {
    uint64_t op = seq ? i : rngs[static_cast<size_t>(w)]() % meta.ops;
    uint64_t n = op / per_object;
    uint64_t off = (op % per_object) * meta.op_size;
    uint64_t len = meta.mix.empty() ? meta.op_size : meta.size_of(n);
    std::string name = object_name(meta.prefix, n);
    std::string data;
    int r = s->read(pg_coll(n), bench_oid(name), off, len, &data);
    if (r < 0) return r;
    *bytes = data.size();
    if (a.no_verify) return 0;
    if (data.size() != len || check_pattern(data.data(), name_hash(name), off, len) >= 0) {
      std::cerr << name << " is not correct!" << std::endl;
      return 1;
    }
    return 0;
  });
  if (m.res.error) fprintf(stderr, "hybridstore-bench %s: %s\n", rados_mode_name(a.mode), m.res.error_message.c_str());
  std::string mix_text;
  for (const auto& [size, w] : meta.mix)
    mix_text += (mix_text.empty() ? "" : ",") + std::to_string(size) + ":" + std::to_string(w);
  measure_ceiling(&m, busiest_tier(m, false), seq ? RawOp::kSeqRead : RawOp::kRandRead, meta.op_size, meta.mix,
                  mix_text);
  m.extra["verify"] = {{"checked", !a.no_verify}, {"errors", m.res.verify_errors}};
  m.extra["run"] = {{"prefix", meta.prefix}, {"objects", meta.objects}, {"run_name", meta_name(a.run_name)}};
  return end_mode(&m, meta.mix.empty() ? meta.op_size : 0, meta.mix.empty() ? meta.object_size : 0, true);
}

int run_randwrite(RadosArgs* args, ModeRun* mr) {
  ModeRun& m = *mr;
  if (int rc = begin_mode(&m, true); rc) return rc;
  RadosArgs& a = m.a;
  HybridStore* s = m.t.store.get();
  if (int r = ensure_collections(s); r < 0) return 1;
  const std::string prefix = object_prefix();
  const uint64_t objects = static_cast<uint64_t>(a.max_objects);
  const uint64_t per_object = a.object_size / a.op_size;
  std::cout << "Writing " << objects << " objects of " << a.object_size << " bytes, then " << a.concurrent
            << " concurrent writes of " << a.op_size << " bytes at random offsets for up to " << a.seconds
            << " seconds\nObject prefix: " << prefix << std::endl;
  // Whole objects first (not timed), like an RBD image written once.
  int r = parallel_for(objects, a.concurrent, "prefill", "objects", [&](uint64_t n) {
    std::string name = object_name(prefix, n);
    auto buf = std::make_shared<std::string>(a.object_size, '\0');
    fill_pattern(buf->data(), name_hash(name), 0, a.object_size);
    Transaction t;
    t.touch(pg_coll(n), bench_oid(name));
    t.set_alloc_hint(pg_coll(n), bench_oid(name), a.object_size, a.op_size, 0);
    t.write(pg_coll(n), bench_oid(name), 0, std::shared_ptr<const std::string>(buf));
    return s->apply_transaction(std::move(t));
  });
  if (r < 0) {
    fprintf(stderr, "hybridstore-bench randwrite: prefill: %s\n", strerror(-r));
    return 1;
  }
  // The generation of every block: what it must read back as. A block is
  // never written by two workers at once, so the last write is the one.
  std::vector<uint32_t> gen(objects * per_object, 0);
  std::vector<uint8_t> busy(gen.size(), 0);
  std::mutex mu;
  std::vector<std::mt19937_64> rngs;
  for (int w = 0; w < a.concurrent; ++w) rngs.emplace_back(a.seed * 1000003 + static_cast<uint64_t>(w));
  std::vector<std::shared_ptr<std::string>> bufs(static_cast<size_t>(a.concurrent));
  m.before = s->perf().snapshot();
  m.res = run_ops(runner_config(m), [&](int w, uint64_t, uint64_t* bytes) {
    uint64_t b;
    uint32_t g;
    {
      std::lock_guard<std::mutex> l(mu);
      do b = rngs[static_cast<size_t>(w)]() % gen.size();
      while (busy[b]);
      busy[b] = 1;
      g = ++gen[b];
    }
    uint64_t n = b / per_object, off = (b % per_object) * a.op_size;
    std::string name = object_name(prefix, n);
    auto buf = buffer_for(&bufs, w, a.op_size);
    fill_pattern(buf->data(), name_hash(name), off, a.op_size, g);
    Transaction t;
    t.write(pg_coll(n), bench_oid(name), off, std::shared_ptr<const std::string>(buf));
    int rr = s->apply_transaction(std::move(t));
    std::lock_guard<std::mutex> l(mu);
    busy[b] = 0;
    *bytes = a.op_size;
    return rr;
  });
  if (m.res.error) fprintf(stderr, "hybridstore-bench randwrite: %s\n", m.res.error_message.c_str());
  ObjectStat st0;
  // The tier holding most of the first object (the SSD on a tie).
  int tier = tier_index(Tier::kSsd);
  if (s->stat(pg_coll(0), bench_oid(object_name(prefix, 0)), &st0) == 0)
    for (int t = 0; t < kMaxTiers; ++t)
      if (st0.bytes_on[t] > st0.bytes_on[tier]) tier = t;
  measure_ceiling(&m, tier, RawOp::kWrite, a.op_size);
  print_results(&m, a.op_size, a.object_size);
  uint64_t wrong = 0;
  if (!a.no_verify && !m.res.error) {
    std::mutex wm;
    r = parallel_for(objects, a.concurrent, "verify", "objects", [&](uint64_t n) {
      std::string name = object_name(prefix, n), data;
      int rr = s->read(pg_coll(n), bench_oid(name), 0, 0, &data);
      if (rr < 0) return rr;
      uint64_t bad = data.size() == a.object_size ? 0 : 1;
      for (uint64_t k = 0; !bad && k < per_object; ++k)
        if (check_pattern(data.data() + k * a.op_size, name_hash(name), k * a.op_size, a.op_size,
                          gen[n * per_object + k]) >= 0) {
          std::cerr << name << " is not correct at offset " << k * a.op_size << "!" << std::endl;
          bad = 1;
        }
      std::lock_guard<std::mutex> l(wm);
      wrong += bad;
      return 0;
    });
    if (r < 0) {
      m.res.error = r;
      fprintf(stderr, "hybridstore-bench randwrite: verify: %s\n", strerror(-r));
    }
    m.res.verify_errors += wrong;
    if (!r)
      std::cout << "Verified " << objects << " objects: "
                << (wrong ? std::to_string(wrong) + " with blocks that differ from their last write"
                          : std::string("every block as last written"))
                << std::endl;
  }
  m.extra["verify"] = {{"checked", !a.no_verify}, {"objects", objects}, {"errors", wrong}};
  if (!a.no_cleanup && !m.res.error) {
    std::cout << "Cleaning up (deleting benchmark objects)" << std::endl;
    remove_objects(s, prefix, objects, a.concurrent);
    std::cout << "Removed " << objects << " objects" << std::endl;
  }
  return end_mode(&m, a.op_size, a.object_size, a.no_cleanup);
}

namespace {

int run(RadosArgs* a, int (*fn)(RadosArgs*, ModeRun*)) {
  ModeRun m(a);
  return fn(a, &m);
}

BenchCommand write_cmd("write", "rados bench write: -t writes in flight of -b bytes into -O objects, each durable",
                       [](CLI::App* sub) {
                         auto a = std::make_shared<RadosArgs>();
                         a->mode = RadosMode::kWrite;
                         add_rados_options(sub, a.get());
                         return [a] { return run(a.get(), run_write); };
                       });
BenchCommand seq_cmd("seq", "rados bench seq: read back, in order, what `write --no-cleanup` left; check every byte",
                     [](CLI::App* sub) {
                       auto a = std::make_shared<RadosArgs>();
                       a->mode = RadosMode::kSeq;
                       add_rados_options(sub, a.get());
                       return [a] { return run(a.get(), run_read); };
                     });
BenchCommand rand_cmd("rand", "rados bench rand: read random objects `write --no-cleanup` left; check every byte",
                      [](CLI::App* sub) {
                        auto a = std::make_shared<RadosArgs>();
                        a->mode = RadosMode::kRand;
                        add_rados_options(sub, a.get());
                        return [a] { return run(a.get(), run_read); };
                      });
BenchCommand randwrite_cmd("randwrite",
                           "small overwrites at random offsets of large objects (the RBD pattern), checked after",
                           [](CLI::App* sub) {
                             auto a = std::make_shared<RadosArgs>();
                             a->mode = RadosMode::kRandWrite;
                             add_rados_options(sub, a.get());
                             return [a] { return run(a.get(), run_randwrite); };
                           });

}  // namespace
}  // namespace hybridstore::bench
