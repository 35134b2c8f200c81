#include "hybridstore/kvfs/kvfs_check.h"

#include <algorithm>
#include <cerrno>
#include <exception>
#include <map>

#include <fmt/format.h>

#include "hybridstore/kvfs/kvfs_log.h"

namespace hybridstore {

namespace {
std::string extent_str(const KvFsExtent& e) { return fmt::format("{:#x}+{:#x}", e.offset, e.length); }

std::string owner_str(uint64_t ino) {
  if (ino == kKvFsLogIno) return "the log";
  if (ino == kKvFsJournalIno) return "the journal ring";
  return fmt::format("inode {}", ino);
}

// Sorted by offset, overlapping and touching ranges merged: the form both
// free maps are compared in.
std::vector<KvFsExtent> normalised(std::vector<KvFsExtent> v) {
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.offset < b.offset; });
  std::vector<KvFsExtent> out;
  for (const KvFsExtent& e : v) {
    if (e.length == 0) continue;
    if (!out.empty() && e.offset <= out.back().end()) {
      out.back().length = std::max(out.back().end(), e.end()) - out.back().offset;
    } else {
      out.push_back(e);
    }
  }
  return out;
}

// a − b, both normalised.
std::vector<KvFsExtent> subtract(const std::vector<KvFsExtent>& a, const std::vector<KvFsExtent>& b) {
  std::vector<KvFsExtent> out;
  size_t j = 0;
  for (const KvFsExtent& e : a) {
    uint64_t pos = e.offset;
    while (j < b.size() && b[j].end() <= pos) ++j;
    for (size_t k = j; k < b.size() && b[k].offset < e.end(); ++k) {
      if (b[k].offset > pos) out.push_back(KvFsExtent{pos, b[k].offset - pos});
      pos = std::max(pos, b[k].end());
    }
    if (pos < e.end()) out.push_back(KvFsExtent{pos, e.end() - pos});
  }
  return out;
}

uint64_t total(const std::vector<KvFsExtent>& v) {
  uint64_t n = 0;
  for (const KvFsExtent& e : v) n += e.length;
  return n;
}

// An extent's end past 2^64 would wrap round and look small.
bool wraps(const KvFsExtent& e) { return e.offset + e.length < e.offset; }

bool inside_chunks(const std::map<uint64_t, uint64_t>& chunks, const KvFsExtent& e) {
  auto it = chunks.upper_bound(e.offset);
  if (it == chunks.begin()) return false;
  --it;
  return e.end() <= it->first + it->second;
}

// What an extent must be wherever it lies inside the kvfs (file, ring,
// log, held): non-empty, A-aligned, inside the chunks. One error, naming
// `who`, or none.
void check_extent_shape(const std::map<uint64_t, uint64_t>& chunks, const KvFsExtent& e, uint64_t alloc_unit,
                        const std::string& who, KvFsCheckReport* rep) {
  if (e.length == 0 || wraps(e) || e.offset % alloc_unit != 0 || e.length % alloc_unit != 0) {
    rep->error(fmt::format("kvfs: extent {} of {} is not a non-empty range aligned to A ({})", extent_str(e), who,
                           alloc_unit));
  } else if (!inside_chunks(chunks, e)) {
    rep->error(fmt::format("kvfs: extent {} of {} is outside the kvfs's chunks", extent_str(e), who));
  }
}

// The slot rows of section 6: only the current slot carries the kvfs, so a
// bad other slot is a warning (the next compaction rewrites it). Slot 1 of
// a kvfs never compacted was never written and reads as zeros: no warning.
void report_slots(const std::array<KvFsSlotReport, kKvFsSuperSlots>& slots,
                  const std::array<bool, kKvFsSuperSlots>& blank, const KvFsSuper& current, KvFsCheckReport* rep) {
  rep->current_slot = static_cast<int>(current.generation % kKvFsSuperSlots);
  rep->generation = current.generation;
  const uint32_t other = 1 - static_cast<uint32_t>(rep->current_slot);
  const KvFsSlotReport& o = slots[other];
  if (o.result == 0) {
    rep->other_slot_valid = o.super.generation + 1 == current.generation;
    if (!rep->other_slot_valid) {
      rep->warning(fmt::format("kvfs superblock slot {} (not current) holds generation {}, expected {}", other,
                               o.super.generation, current.generation == 0 ? 0 : current.generation - 1));
    }
    return;
  }
  if (current.generation == 0 && blank[other]) return;
  rep->warning(fmt::format("kvfs superblock slot {} (not current) is bad: {} (the next compaction rewrites it)", other,
                           o.why));
}

void check_lend_unit(const KvFsSuper& s, const KvFsCheckOptions& opts, KvFsCheckReport* rep) {
  if (opts.lend_unit != 0 && opts.lend_unit != s.lend_unit) {
    rep->error(fmt::format("kvfs superblock's lend unit G {} is not the tier's {}", s.lend_unit, opts.lend_unit));
  }
}
}  // namespace

void KvFsCheckReport::error(std::string msg) {
  ++errors;
  if (problems.size() < kMaxProblems) problems.push_back(std::move(msg));
}

void KvFsCheckReport::warning(std::string msg) {
  ++warnings;
  if (problems.size() < kMaxProblems) problems.push_back("warning: " + std::move(msg));
}

void check_kvfs_state(const KvFsState& state, const KvFsGeometry& geo, const KvFsCheckOptions& opts,
                      KvFsCheckReport* rep) {
  const uint64_t G = opts.lend_unit != 0 ? opts.lend_unit : geo.lend_unit;
  if (geo.block == 0 || geo.alloc_unit == 0 || G == 0) {
    rep->error(fmt::format("kvfs geometry b {} A {} G {} has a zero unit", geo.block, geo.alloc_unit, G));
    return;
  }
  const auto& chunks = state.chunks();

  // Chunks: inside [H, size), G-aligned, apart.
  uint64_t prev_end = 0;
  bool first = true;
  for (const auto& [off, len] : chunks) {
    const KvFsExtent c{off, len};
    rep->owned_bytes += len;
    if (len == 0 || wraps(c) || off < geo.head || c.end() > geo.device_size) {
      rep->error(fmt::format("kvfs chunk {} is not inside [H {:#x}, device size {:#x})", extent_str(c), geo.head,
                             geo.device_size));
    }
    if (off % G != 0 || len % G != 0) rep->error(fmt::format("kvfs chunk {} is not aligned to G ({})", extent_str(c), G));
    if (!first && off < prev_end) rep->error(fmt::format("kvfs chunk {} overlaps the chunk before it", extent_str(c)));
    prev_end = std::max(prev_end, wraps(c) ? UINT64_MAX : c.end());
    first = false;
  }

  // Every extent an owner holds, then pairs of neighbours sharing bytes.
  struct Use {
    KvFsExtent e;
    uint64_t ino;
  };
  std::vector<Use> uses;
  for (const KvFsExtent& s : state.log_segments()) {
    uses.push_back({s, kKvFsLogIno});
    rep->log_bytes += s.length;
  }
  for (const KvFsExtent& e : state.journal()) {
    uses.push_back({e, kKvFsJournalIno});
    rep->journal_bytes += e.length;
  }
  for (const auto& [ino, inode] : state.inodes()) {
    for (const KvFsExtent& e : inode.extents) uses.push_back({e, ino});
  }
  for (const Use& u : uses) {
    check_extent_shape(chunks, u.e, geo.alloc_unit, owner_str(u.ino), rep);
    rep->used_bytes += u.e.length;
  }
  std::sort(uses.begin(), uses.end(), [](const Use& a, const Use& b) { return a.e.offset < b.e.offset; });
  const Use* reach = nullptr;  // the use reaching furthest so far
  for (const Use& u : uses) {
    if (reach && u.e.offset < reach->e.end()) {
      rep->error(fmt::format("kvfs: extent {} of {} and extent {} of {} share bytes (a block owned twice)",
                             extent_str(reach->e), owner_str(reach->ino), extent_str(u.e), owner_str(u.ino)));
    }
    if (!reach || (!wraps(u.e) && u.e.end() > reach->e.end())) reach = &u;
  }
  // The state keeps its own map of used blocks for the allocator's free
  // map; it must say what the owners say.
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> from_owners;
  for (const Use& u : uses) from_owners[u.e.offset] = {u.e.length, u.ino};
  bool same = from_owners.size() == state.used().size();
  auto b = state.used().begin();
  for (auto a = from_owners.begin(); same && a != from_owners.end(); ++a, ++b)
    same = a->first == b->first && a->second.first == b->second.length && a->second.second == b->second.ino;
  if (!same) rep->error("kvfs: the state's map of used blocks differs from its files, ring and log segments");

  // Files: sizes covered, tails of their kind, one name each.
  std::map<uint64_t, std::vector<std::string>> names;
  for (const auto& [dir, entries] : state.dirs()) {
    for (const auto& [name, ino] : entries) {
      names[ino].push_back(dir + "/" + name);
      if (!state.inodes().count(ino)) rep->error(fmt::format("kvfs: name {}/{} points at no inode ({})", dir, name, ino));
    }
  }
  for (const auto& [ino, inode] : state.inodes()) {
    ++rep->files;
    auto n = names.find(ino);
    const std::string label = n == names.end() ? fmt::format("inode {}", ino)
                                               : fmt::format("inode {} ({})", ino, n->second.front());
    if (ino < kKvFsFirstFileIno) rep->error(fmt::format("kvfs: {} has a reserved number", label));
    if (n == names.end()) {
      rep->error(fmt::format("kvfs: {} has no name", label));
    } else if (n->second.size() > 1) {
      rep->error(fmt::format("kvfs: {} has {} names", label, n->second.size()));
    }
    // An inline tail is in the log; its block may not be allocated yet
    // (docs/kvfs.md 3.4). In blocks, so a size near 2^64 cannot wrap.
    const bool inline_tail = inode.tail_kind == KvTailKind::kInline;
    const uint64_t need_blocks = inode.size / geo.block + (!inline_tail && inode.size % geo.block != 0 ? 1 : 0);
    uint64_t covered_blocks = 0;
    for (const KvFsExtent& e : inode.extents) covered_blocks += e.length / geo.block;
    if (covered_blocks < need_blocks) {
      rep->error(fmt::format("kvfs: {} of size {} has extents covering only {} bytes", label, inode.size,
                             covered_blocks * geo.block));
    }
    if (inline_tail ? inode.tail.size() != inode.size % geo.block : !inode.tail.empty()) {
      rep->error(fmt::format("kvfs: {} of size {} has a tail of {} bytes that does not fit its kind", label,
                             inode.size, inode.tail.size()));
    }
  }

  // The ring: inside the chunks (above), and of the size the option says.
  if (opts.journal_size != 0) {
    const uint64_t want = (opts.journal_size + geo.alloc_unit - 1) / geo.alloc_unit * geo.alloc_unit;
    if (state.journal().empty()) {
      rep->warning(fmt::format("kvfs has no journal ring (the option says {} bytes)", want));
    } else if (rep->journal_bytes != want) {
      rep->warning(fmt::format("kvfs journal ring is {} bytes, the option says {} (a read-write mount makes it again at that size when the kvfs has the room)",
                               rep->journal_bytes, want));
    }
  }
}

int check_kvfs(BlockDevice* dev, const KvFsParams& params, const Uuid& kvfs_uuid, const Uuid& fsid,
               const KvFsCheckOptions& opts, KvFsCheckReport* rep) {
  *rep = KvFsCheckReport();
  if (params.slots.slot_size == 0) return -EINVAL;
  // Decoders return errors rather than throw; an allocation failure on a
  // garbage length is the one thing left, and a check must not die of it.
  try {
    std::array<KvFsSlotReport, kKvFsSuperSlots> slots;
    KvFsSuper s;
    std::string why;
    if (read_kvfs_super(dev, params.slots, kvfs_uuid, fsid, &s, &why, &slots) < 0) {
      rep->error(why);
      return 0;
    }
    std::array<bool, kKvFsSuperSlots> blank{};
    for (uint32_t i = 0; i < kKvFsSuperSlots; ++i) blank[i] = kvfs_slot_blank(dev, params.slots, i);
    report_slots(slots, blank, s, rep);
    check_lend_unit(s, opts, rep);

    const KvFsGeometry geo{s.block, s.alloc_unit, s.lend_unit, params.head, dev->size()};
    KvFsState state(kvfs_uuid, geo);
    KvFsLogEnd end;
    if (replay_kvfs_log(dev, s, &state, &end, &why) < 0) {
      rep->error("kvfs log does not replay to its end: " + why);
      return 0;
    }
    if (s.generation > 0 && !state.snapshot_done()) {
      rep->error(fmt::format("kvfs log of generation {} has no SNAPSHOT_DONE after its snapshot", s.generation));
    }
    check_kvfs_state(state, geo, opts, rep);
    rep->free_bytes = rep->owned_bytes > rep->used_bytes ? rep->owned_bytes - rep->used_bytes : 0;
  } catch (const std::exception& e) {
    rep->error(fmt::format("kvfs check stopped: {}", e.what()));
  }
  return 0;
}

int check_mounted_kvfs(KvFs* fs, const KvFsCheckOptions& opts, KvFsCheckReport* rep) {
  *rep = KvFsCheckReport();
  KvFsSnapshot snap;
  if (int r = fs->check_snapshot(&snap); r < 0) return r;
  check_kvfs_snapshot(snap, opts, rep);
  return 0;
}

void check_kvfs_snapshot(const KvFsSnapshot& snap, const KvFsCheckOptions& opts, KvFsCheckReport* rep) {
  *rep = KvFsCheckReport();
  if (!snap.state) {
    rep->error("kvfs: the snapshot holds no state");
    return;
  }
  const KvFsSuper& s = snap.super;
  if (snap.slots_result < 0) {
    rep->error(snap.slots_why);
  } else {
    report_slots(snap.slots, snap.slot_blank, s, rep);
    const KvFsSlotReport& cur = snap.slots[s.generation % kKvFsSuperSlots];
    if (cur.result != 0 || !(cur.super == s)) {
      rep->error(fmt::format("kvfs superblock slot {} on the device is not the one the mounted kvfs runs on "
                             "(generation {})",
                             s.generation % kKvFsSuperSlots, s.generation));
    }
  }
  rep->current_slot = static_cast<int>(s.generation % kKvFsSuperSlots);
  rep->generation = s.generation;
  check_lend_unit(s, opts, rep);
  const KvFsState& state = *snap.state;
  check_kvfs_state(state, snap.geometry, opts, rep);
  if (snap.geometry.alloc_unit == 0) return;

  // Held blocks are owned by no record, so they must lie in no owner's
  // extent and in no other held one.
  std::vector<KvFsExtent> owned, used, held;
  for (const auto& [off, len] : state.chunks()) owned.push_back(KvFsExtent{off, len});
  for (const auto& [off, use] : state.used()) used.push_back(KvFsExtent{off, use.length});
  used = normalised(used);
  std::vector<KvFsHeld> sorted = snap.held;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.extent.offset < b.extent.offset; });
  const KvFsHeld* reach = nullptr;
  for (const KvFsHeld& h : sorted) {
    check_extent_shape(state.chunks(), h.extent, snap.geometry.alloc_unit, h.what, rep);
    if (subtract({h.extent}, used) != std::vector<KvFsExtent>{h.extent}) {
      rep->error(fmt::format("kvfs: extent {} of {} is in use by a file, the ring or the log too",
                             extent_str(h.extent), h.what));
    }
    if (reach && h.extent.offset < reach->extent.end()) {
      rep->error(fmt::format("kvfs: extent {} of {} and extent {} of {} share bytes", extent_str(reach->extent),
                             reach->what, extent_str(h.extent), h.what));
    }
    if (!reach || (!wraps(h.extent) && h.extent.end() > reach->extent.end())) reach = &h;
    rep->held_bytes += h.extent.length;
    held.push_back(h.extent);
  }

  // kvfs free = chunks − used − held, against the allocator's map.
  std::vector<KvFsExtent> taken = used;
  taken.insert(taken.end(), held.begin(), held.end());
  const std::vector<KvFsExtent> expected = subtract(normalised(owned), normalised(taken));
  std::vector<KvFsExtent> actual;
  for (const auto& [off, len] : snap.free) actual.push_back(KvFsExtent{off, len});
  actual = normalised(actual);
  rep->free_bytes = total(actual);
  const std::vector<KvFsExtent> extra = subtract(actual, expected);    // free, but in use or not owned
  const std::vector<KvFsExtent> missing = subtract(expected, actual);  // unowned by anything, yet not free
  if (!extra.empty() || !missing.empty()) {
    std::string msg = "kvfs: in-memory kvfs allocator disagrees with the metadata:";
    if (!extra.empty())
      msg += fmt::format(" {} bytes free that are in use or not the kvfs's (first {})", total(extra),
                         extent_str(extra.front()));
    if (!missing.empty())
      msg += fmt::format("{} {} bytes neither in use nor free (first {})", extra.empty() ? "" : ";", total(missing),
                         extent_str(missing.front()));
    rep->error(msg + " (rebuilt at the next mount)");
  }
}

}  // namespace hybridstore
