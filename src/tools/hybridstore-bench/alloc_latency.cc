// Allocation latency of the section allocator with many live objects: each
// measured operation removes a random object and creates a new one of a
// PostMark size; allocate(), release() and drain_records() are timed apart.
// Times include two steady_clock reads (tens of nanoseconds).
#include <algorithm>
#include <chrono>
#include <random>
#include <stdexcept>

#include "alloc_bench.h"
#include "hybridstore/sections/section_allocator.h"
#include "hybridstore/sections/section_rules.h"

namespace hybridstore::bench {
namespace {

double percentile(std::vector<float>* v, double p) {
  if (v->empty()) return 0;
  size_t k = std::min(v->size() - 1, static_cast<size_t>(p * double(v->size())));
  std::nth_element(v->begin(), v->begin() + static_cast<long>(k), v->end());
  return (*v)[k] / 1000.0;
}

}  // namespace

LatencyResult run_latency(const std::string& sections, uint32_t block_size,
                          uint64_t erase_block, uint64_t live_objects,
                          uint64_t measured_ops, uint64_t seed, const Progress& progress) {
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  AllocatorGeometry g;
  g.block_size = block_size;
  g.erase_block_bytes = erase_block;
  // Room for the objects at about 70% utilization, so the run measures the
  // allocator in normal service rather than at the edge of ENOSPC.
  g.blocks = (live_objects * 8 * 1024 + (64 << 20)) / g.block_size;
  SectionDefaults d;
  d.block_size = block_size;
  std::string err;
  std::unique_ptr<SectionAllocator> a;
  SectionRouter router;
  if (parse_sections(sections, d, &g.sections, &err) < 0 ||
      SectionAllocator::create(g, AllocatorTuning{}, &a, &err) < 0 ||
      SectionRouter::make(g.sections, g.block_size, "", &router, &err) < 0)
    throw std::runtime_error("latency: " + err);

  std::mt19937_64 rng(seed);
  std::vector<std::vector<AllocPiece>> objs(live_objects);
  std::vector<PersistOp> ops;
  AllocEvents ev;
  uint64_t now = 0;
  AllocRequest r;
  auto fill = [&](uint64_t id) {
    r.bytes = 500 + rng() % 9741;
    r.section = router.route_by_size(r.bytes);
    r.owner = id;
    r.hint = id;
    r.now_us = r.born_us = now;
    int used;
    return a->allocate_with_fallback(r, &objs[id], &ev, &used);
  };
  for (uint64_t i = 0; i < live_objects; ++i) {
    now += 10;
    if (fill(i) != 0) throw std::runtime_error("latency: prefill ran out of space");
    if (i % 64 == 0) {
      a->drain_records(&ops);
      ops.clear();
      a->tick(now, &ev);
      ev.clear();
    }
    if (progress && (i + 1) % 200000 == 0)
      progress("latency: " + std::to_string(i + 1) + " objects live");
  }
  a->drain_records(&ops);
  ops.clear();

  std::vector<float> ta, tr, td;
  ta.reserve(measured_ops);
  tr.reserve(measured_ops);
  td.reserve(measured_ops);
  for (uint64_t k = 0; k < measured_ops; ++k) {
    now += 10;
    uint64_t id = rng() % live_objects;
    auto s = clock::now();
    for (const auto& p : objs[id]) a->release(p.block, p.blocks, now);
    auto m = clock::now();
    int rc = fill(id);
    auto e = clock::now();
    if (rc != 0) throw std::runtime_error("latency: ran out of space");
    a->collect(&ev);
    a->drain_records(&ops);
    auto f = clock::now();
    ops.clear();
    ev.clear();
    if (k % 64 == 0) a->tick(now, &ev);
    tr.push_back(std::chrono::duration<float, std::nano>(m - s).count());
    ta.push_back(std::chrono::duration<float, std::nano>(e - m).count());
    td.push_back(std::chrono::duration<float, std::nano>(f - e).count());
  }
  LatencyResult res;
  res.sections = sections;
  res.live_objects = live_objects;
  res.measured_ops = measured_ops;
  res.alloc_max_us = ta.empty() ? 0 : *std::max_element(ta.begin(), ta.end()) / 1000.0;
  res.alloc_p50_us = percentile(&ta, 0.50);
  res.alloc_p99_us = percentile(&ta, 0.99);
  res.alloc_p999_us = percentile(&ta, 0.999);
  res.release_p50_us = percentile(&tr, 0.50);
  res.release_p99_us = percentile(&tr, 0.99);
  res.drain_p50_us = percentile(&td, 0.50);
  res.drain_p99_us = percentile(&td, 0.99);
  res.seconds = std::chrono::duration<double>(clock::now() - t0).count();
  return res;
}

}  // namespace hybridstore::bench
