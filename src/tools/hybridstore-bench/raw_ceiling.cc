#include "raw_ceiling.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "hsio/block_device.h"

namespace hybridstore::bench {

namespace fs = std::filesystem;

const char* raw_op_name(RawOp op) {
  switch (op) {
    case RawOp::kWrite: return "write";
    case RawOp::kSeqRead: return "seq read";
    case RawOp::kRandRead: return "rand read";
  }
  return "?";
}

RawResult measure_raw(const std::string& device, RawOp op, uint64_t block_size, int queue_depth, double seconds,
                      uint64_t seed) {
  return measure_raw_mix(device, op, {{block_size, 1}}, "", queue_depth, seconds, seed);
}

RawResult measure_raw_mix(const std::string& device, RawOp op, const std::vector<std::pair<uint64_t, unsigned>>& mix,
                          const std::string& mix_text, int queue_depth, double seconds, uint64_t seed) {
  uint64_t block_size = 0;
  unsigned weights = 0;
  for (const auto& [size, w] : mix) {
    block_size = std::max(block_size, size);
    weights += w;
  }
  // The size of I/O number i (each slot of the file holds the largest).
  auto size_of = [&](uint64_t i) {
    uint64_t z = (seed ^ 0x9e3779b97f4a7c15ull) + i * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 31)) * 0x94d049bb133111ebull;
    uint64_t pick = (z ^ (z >> 29)) % std::max(1u, weights);
    for (const auto& [size, w] : mix) {
      if (pick < w) return (size + 4095) / 4096 * 4096;
      pick -= w;
    }
    return (mix.back().first + 4095) / 4096 * 4096;
  };
  RawResult res;
  res.sizes = mix_text;
  res.op = op;
  res.block_size = block_size;
  res.queue_depth = queue_depth;
  std::error_code ec;
  fs::path dev = fs::canonical(device, ec);
  struct stat st;
  if (ec || ::stat(dev.c_str(), &st) != 0) {
    res.note = "cannot resolve " + device;
    return res;
  }
  if (!S_ISREG(st.st_mode)) {
    res.note = device + " is not a file: no scratch space beside it, raw ceiling skipped";
    return res;
  }
  // Aligned for O_DIRECT; a few times what is in flight, at most 1 GiB (reads
  // must reach the disk, writes must not fill it).
  const uint64_t bs = (block_size + 4095) / 4096 * 4096;
  const uint64_t want = op == RawOp::kWrite ? (2ull << 30) : std::clamp<uint64_t>(bs * queue_depth * 16, 64ull << 20, 1ull << 30);
  const uint64_t blocks = std::max<uint64_t>(want / bs, static_cast<uint64_t>(queue_depth));
  const uint64_t span = blocks * bs;
  res.file = (dev.parent_path() / (".hybridstore-raw-ceiling." + std::to_string(getpid()))).string();
  DeviceOpenOptions o;
  o.direct_io = true;
  o.create = true;
  o.create_size = span;
  std::string err;
  auto bd = open_block_device(res.file, o, &err);
  struct Cleanup {
    std::string f;
    ~Cleanup() {
      std::error_code e;
      fs::remove(f, e);
    }
  } cleanup{res.file};
  if (!bd) {
    res.note = err;
    return res;
  }
  res.backend = bd->backend();
  std::vector<AlignedBuffer> bufs;
  std::mt19937_64 fill(seed);
  for (int i = 0; i < queue_depth; ++i) {
    bufs.emplace_back(bs, 4096, AlignedBuffer::kUninitialized);
    for (uint64_t k = 0; k + 8 <= bs; k += 8) {
      uint64_t v = fill();
      std::memcpy(bufs.back().data() + k, &v, 8);
    }
  }
  if (op != RawOp::kWrite) {
    // Something real to read: holes of a sparse file read without the disk.
    for (uint64_t b = 0; b < blocks; ++b)
      if (int r = bd->write(b * bs, bufs[b % bufs.size()].data(), bs); r < 0) {
        res.note = "filling the scratch file: " + std::string(strerror(-r));
        return res;
      }
    bd->flush();
  }
  std::atomic<uint64_t> next{0}, done{0}, bytes{0}, cursor{0};
  std::atomic<int> error{0};
  const auto t0 = std::chrono::steady_clock::now();
  const auto stop = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                             std::chrono::duration<double>(seconds));
  std::vector<std::thread> th;
  for (int q = 0; q < queue_depth; ++q)
    th.emplace_back([&, q] {
      std::mt19937_64 rng(seed * 1000003 + static_cast<uint64_t>(q));
      char* buf = bufs[static_cast<size_t>(q)].data();
      while (!error && std::chrono::steady_clock::now() < stop) {
        uint64_t i = next++;
        uint64_t len = size_of(i);
        // Writes and seq reads go through the file in order, each I/O where
        // the one before it ended; rand reads anywhere.
        uint64_t off = op == RawOp::kRandRead ? rng() % ((span - len) / 4096 + 1) * 4096
                                              : cursor.fetch_add(len) % span;
        off = std::min(off, span - len);
        int r = op == RawOp::kWrite ? bd->write(off, buf, len) : bd->read(off, buf, len);
        if (r < 0) {
          error = r;
          return;
        }
        ++done;
        bytes += len;
      }
    });
  for (auto& t : th) t.join();
  if (op == RawOp::kWrite && !error) error = bd->flush();
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (error) {
    res.note = std::string("raw I/O failed: ") + strerror(-error);
    return res;
  }
  res.ops = done;
  res.bytes = bytes;
  res.mb_s = static_cast<double>(res.bytes) / res.seconds / (1024 * 1024);
  res.iops = static_cast<double>(res.ops) / res.seconds;
  res.ok = true;
  return res;
}

}  // namespace hybridstore::bench
