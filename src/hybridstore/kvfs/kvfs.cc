#include "hybridstore/kvfs/kvfs.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <numeric>
#include <random>
#include <thread>

#include <fmt/format.h>

namespace hybridstore {

namespace {
uint64_t align_up(uint64_t v, uint64_t unit) { return (v + unit - 1) / unit * unit; }

bool power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

uint64_t random_log_id() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

uint64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}


int check_name(const std::string& name, std::string* why) {
  if (name.empty() || name.size() > kKvFsMaxName || name.find('/') != std::string::npos) {
    *why = fmt::format("kvfs: invalid name '{}' ({} bytes; names are 1 to {} bytes without '/')",
                       name.substr(0, 64), name.size(), kKvFsMaxName);
    return -EINVAL;
  }
  return 0;
}

// Appends `records` in as many groups as it takes for each to fit well
// inside a segment (a group never spans segments). A record's size alone,
// framing included, bounds its share of a group from above.
int append_records(KvFsLogWriter* writer, uint64_t log_id, uint64_t block, uint64_t segment,
                   const std::vector<KvRecord>& records, std::vector<KvLoggedRecord>* logged, uint64_t* bytes,
                   std::string* why) {
  const uint64_t limit = segment / 2;
  std::vector<KvRecord> part;
  uint64_t estimate = 0;
  for (size_t i = 0; i <= records.size(); ++i) {
    const uint64_t one = i < records.size() ? kvfs_group_size(KvGroup{log_id, 0, {records[i]}}, 1) : 0;
    if (!part.empty() && (i == records.size() || align_up(estimate + one, block) > limit)) {
      if (int r = writer->append_group(part, logged, why); r < 0) return r;
      *bytes += kvfs_group_size(KvGroup{log_id, 0, part}, block);
      part.clear();
      estimate = 0;
    }
    if (i < records.size()) {
      part.push_back(records[i]);
      estimate += one;
    }
  }
  return 0;
}

int check_format_params(const KvFsParams& p, uint64_t lend_unit, std::string* why) {
  if (!power_of_two(p.block) || p.alloc_unit % p.block != 0 || lend_unit % p.alloc_unit != 0 ||
      p.log_segment < 8 * p.block || p.log_segment % p.alloc_unit != 0 || p.initial_size == 0 ||
      p.initial_size % lend_unit != 0 || p.initial_size < p.log_segment) {
    *why = fmt::format(
        "kvfs format: bad geometry (b {}, A {}, G {}, segment {}, initial {}): b must be a power of two, A a "
        "multiple of b, G of A, the segment of A and at least 8 b, the initial size of G and at least a segment",
        p.block, p.alloc_unit, lend_unit, p.log_segment, p.initial_size);
    return -EINVAL;
  }
  return 0;
}
}  // namespace

// Format checks every record against a fresh KvFsState before writing any,
// so a lender that hands out bad ranges fails format, not the next mount.
int KvFs::format(BlockDevice* dev, const KvFsParams& params, const Uuid& kvfs_uuid, const Uuid& fsid,
                 KvFsLender* lender, std::string* why) {
  if (!lender) {
    *why = "kvfs format: no lender to take the initial chunks from";
    return -EINVAL;
  }
  const uint64_t lend_unit = lender->unit();
  if (int r = check_format_params(params, lend_unit, why); r < 0) return r;
  std::vector<Interval> lent;
  if (int r = lender->lend(params.initial_size, &lent); r < 0 || lent.empty()) {
    *why = fmt::format("kvfs format: the tier lent nothing for the initial {} bytes", params.initial_size);
    return r < 0 ? r : -ENOSPC;
  }
  std::sort(lent.begin(), lent.end(), [](auto& a, auto& b) { return a.offset < b.offset; });
  KvFsSuper s;
  s.kvfs_uuid = kvfs_uuid;
  s.fsid = fsid;
  s.generation = 0;
  s.block = params.block;
  s.alloc_unit = params.alloc_unit;
  s.lend_unit = lend_unit;
  s.log_id = random_log_id();
  s.log_first_seq = 1;
  s.log_segment = KvFsExtent{lent[0].offset, params.log_segment};
  s.created_us = now_us();
  std::vector<KvRecord> records{KvInit{kvfs_uuid, s.block, s.alloc_unit, s.lend_unit}};
  for (const Interval& i : lent) records.push_back(KvGrant{{i.offset, i.length}});
  for (const std::string& d : params.dirs) records.push_back(KvMkdir{d});

  int r = 0;
  KvFsState check(kvfs_uuid, KvFsGeometry{s.block, s.alloc_unit, s.lend_unit, params.head, dev->size()});
  r = check.begin_log(s.log_segment, why);
  for (size_t i = 0; r == 0 && i < records.size(); ++i) r = check.apply(records[i], i + 1, why);
  if (r == 0) r = check.finish(why);
  if (r == 0) {
    KvFsLogWriter writer(dev, s.block, s.log_id, s.log_segment, s.log_segment.offset, s.log_first_seq,
                         [](KvFsExtent*, std::string* w) {
                           *w = "kvfs format: the first group must fit in the first segment";
                           return -ENOSPC;
                         });
    r = writer.append_group(records, nullptr, why);
  }
  if (r == 0 && (r = dev->flush()) < 0) *why = fmt::format("kvfs format: device flush failed: {}", strerror(-r));
  if (r == 0) r = write_kvfs_super(dev, params.slots, s, why);
  if (r < 0) {
    lender->take_back(lent);
    *why = "kvfs format: " + *why;
  }
  return r;
}

KvFs::KvFs(BlockDevice* dev, const KvFsParams& params, const KvFsSuper& super, KvFsLender* lender,
           std::unique_ptr<KvFsState> state)
    : dev_(dev),
      params_(params),
      lender_(lender),
      grow_step_(params.grow_step),
      geo_{super.block, super.alloc_unit, super.lend_unit, params.head, dev->size()},
      alloc_(dev->size(), super.alloc_unit),
      super_(super),
      state_(std::move(state)) {}

KvFs::~KvFs() = default;

int KvFs::mount(BlockDevice* dev, const KvFsParams& params, const Uuid& kvfs_uuid, const Uuid& fsid,
                KvFsLender* lender, std::unique_ptr<KvFs>* out, std::string* why) {
  KvFsSuper s;
  if (int r = read_kvfs_super(dev, params.slots, kvfs_uuid, fsid, &s, why); r < 0) return r;
  if (params.log_segment % s.alloc_unit != 0 || params.log_segment < 8 * s.block) {
    *why = fmt::format("kvfs mount: log segment {} is not a multiple of A {} of at least 8 blocks", params.log_segment,
                       s.alloc_unit);
    return -EINVAL;
  }
  if (lender && lender->unit() != s.lend_unit) {
    *why = fmt::format("kvfs mount: the lender's unit {} is not the superblock's G {}", lender->unit(), s.lend_unit);
    return -EINVAL;
  }
  auto state = std::make_unique<KvFsState>(
      kvfs_uuid, KvFsGeometry{s.block, s.alloc_unit, s.lend_unit, params.head, dev->size()});
  KvFsLogEnd end;
  if (int r = replay_kvfs_log(dev, s, state.get(), &end, why); r < 0) return r;
  // Only a compaction writes a generation past the first, and its log is a
  // snapshot that ends in SNAPSHOT_DONE before the superblock names it.
  if (s.generation > 0 && !state->snapshot_done()) {
    *why = fmt::format("kvfs log of generation {} has no SNAPSHOT_DONE after its snapshot", s.generation);
    return -EIO;
  }
  std::unique_ptr<KvFs> fs(new KvFs(dev, params, s, lender, std::move(state)));
  fs->next_ino_ = fs->state_->next_ino();
  fs->build_free_map();
  fs->writer_ = fs->make_writer(s.log_id, end.segment, end.position, end.next_seq);
  // How long the log is decides when it is compacted: every segment it
  // left behind counts whole.
  for (const KvFsExtent& seg : fs->state_->log_segments())
    if (seg != end.segment) fs->log_bytes_ += seg.length;
  fs->log_bytes_ += end.position - end.segment.offset;
  *out = std::move(fs);
  return 0;
}

// Free = the chunks minus every byte the state says is in use (files, the
// journal ring, the log's segments).
void KvFs::build_free_map() {
  const auto& used = state_->used();
  for (const auto& [start, length] : state_->chunks()) {
    uint64_t pos = start;
    const uint64_t end = start + length;
    auto it = used.lower_bound(start);
    for (; it != used.end() && it->first < end; ++it) {
      if (it->first > pos) alloc_.init_add_free(pos, it->first - pos);
      pos = std::max(pos, it->first + it->second.length);
    }
    if (pos < end) alloc_.init_add_free(pos, end - pos);
  }
}

std::unique_ptr<KvFsLogWriter> KvFs::make_writer(uint64_t log_id, const KvFsExtent& segment, uint64_t position,
                                                 uint64_t next_seq) {
  return std::make_unique<KvFsLogWriter>(
      dev_, geo_.block, log_id, segment, position, next_seq,
      [this](KvFsExtent* seg, std::string* why) { return segment_for_log(seg, why); });
}

// A segment is one contiguous run: the log writer fills it front to back.
// It comes from what the kvfs owns (growing here would need a log write
// from inside one): a spare that file allocations keep ready, or any run
// that holds it.
int KvFs::segment_for_log(KvFsExtent* segment, std::string* why) {
  {
    std::lock_guard<std::mutex> l(spare_mutex_);
    if (!spare_segments_.empty()) {
      *segment = spare_segments_.back();
      spare_segments_.pop_back();
      return 0;
    }
  }
  if (take_contiguous_segment(segment)) return 0;
  *why = fmt::format("kvfs: no contiguous {} bytes free for a log segment ({} bytes free)", params_.log_segment,
                     alloc_.free_bytes());
  return -ENOSPC;
}

bool KvFs::take_contiguous_segment(KvFsExtent* segment) {
  std::vector<Interval> got;
  if (alloc_.allocate(params_.log_segment, 0, &got) != 0) return false;
  if (got.size() == 1) {
    *segment = KvFsExtent{got[0].offset, got[0].length};
    return true;
  }
  alloc_.release(got);
  return false;
}

bool KvFs::refill_spare_segments() {
  for (;;) {
    {
      std::lock_guard<std::mutex> l(spare_mutex_);
      if (spare_segments_.size() >= kSpareSegments) return true;
    }
    KvFsExtent seg;
    if (!take_contiguous_segment(&seg)) return false;
    std::lock_guard<std::mutex> l(spare_mutex_);
    if (spare_segments_.size() >= kSpareSegments) {
      alloc_.release({Interval{seg.offset, seg.length}});  // another thread was quicker
      return true;
    }
    spare_segments_.push_back(seg);
  }
}

size_t KvFs::spare_segments() const {
  std::lock_guard<std::mutex> l(spare_mutex_);
  return spare_segments_.size();
}

int KvFs::unmount(std::string* why) {
  {
    std::lock_guard<std::mutex> l(meta_mutex_);
    if (!open_.empty()) {
      *why = fmt::format("kvfs unmount: {} files are still open", open_.size());
      return -EBUSY;
    }
  }
  return sync_log(why);
}

uint64_t KvFs::owned_bytes() const {
  std::lock_guard<std::mutex> l(meta_mutex_);
  uint64_t n = 0;
  for (const auto& [start, length] : state_->chunks()) n += length;
  return n;
}

std::vector<Interval> KvFs::chunks() const {
  std::lock_guard<std::mutex> l(meta_mutex_);
  std::vector<Interval> out;
  for (const auto& [start, length] : state_->chunks()) out.push_back({start, length});
  return out;
}

KvFsStats KvFs::stats() const {
  KvFsStats st;
  {
    std::lock_guard<std::mutex> l(meta_mutex_);
    for (const auto& [start, length] : state_->chunks()) st.owned += length;
    for (const auto& [offset, use] : state_->used()) st.used += use.length;
    for (const KvFsExtent& s : state_->log_segments()) st.log += s.length;
    for (const KvFsExtent& e : state_->journal()) st.journal += e.length;
    st.files = state_->inodes().size();
  }
  st.free = alloc_.free_bytes();
  return st;
}

// Lock order puts the files' locks outermost, so the set of open files is
// read first and the locks taken after: a file opened in between makes the
// set differ, and the round starts again.
int KvFs::check_snapshot(KvFsSnapshot* out) {
  for (int round = 0; round < 1000; ++round) {
    std::vector<std::shared_ptr<KvFsNode>> nodes;
    {
      std::lock_guard<std::mutex> l(meta_mutex_);
      for (const auto& [ino, node] : open_) nodes.push_back(node);
    }
    std::vector<std::unique_lock<std::mutex>> node_locks;
    for (const auto& n : nodes) node_locks.emplace_back(n->mutex);
    std::lock_guard<std::mutex> cl(commit_mutex_);
    std::lock_guard<std::mutex> ml(meta_mutex_);
    bool same = open_.size() == nodes.size();
    for (size_t i = 0; same && i < nodes.size(); ++i) {
      auto it = open_.find(nodes[i]->ino);
      same = it != open_.end() && it->second == nodes[i];
    }
    if (!same) continue;
    out->super = super_;
    out->state = std::make_unique<KvFsState>(*state_);
    out->held.clear();
    {
      std::lock_guard<std::mutex> sl(spare_mutex_);
      for (const KvFsExtent& e : spare_segments_) out->held.push_back({e, "a spare log segment"});
    }
    for (const auto& [ticket, e] : pending_release_) out->held.push_back({e, "pending release"});
    for (const KvFsExtent& e : granting_) out->held.push_back({e, "granted, not yet in the allocator"});
    for (const auto& n : nodes) {
      // An unlinked file's inode left the state with its name; a linked
      // one's extents past logged_extents are not in any record yet.
      const size_t from = n->unlinked ? 0 : std::min(n->logged_extents, n->extents.size());
      for (size_t i = from; i < n->extents.size(); ++i)
        out->held.push_back({n->extents[i], n->unlinked ? "an unlinked open file" : "an open file, not yet logged"});
    }
    out->free.clear();
    alloc_.for_each_free([&](uint64_t off, uint64_t len) { out->free.emplace_back(off, len); });
    out->geometry = geo_;
    out->slots_why.clear();
    for (uint32_t i = 0; i < kKvFsSuperSlots; ++i)
      out->slot_blank[i] = kvfs_slot_blank(dev_, params_.slots, i);
    KvFsSuper on_device;
    out->slots_result =
        read_kvfs_super(dev_, params_.slots, super_.kvfs_uuid, super_.fsid, &on_device, &out->slots_why, &out->slots);
    return 0;
  }
  return -EAGAIN;
}

uint64_t KvFs::generation() const {
  std::lock_guard<std::mutex> l(meta_mutex_);
  return super_.generation;
}

std::string KvFs::describe() const {
  std::lock_guard<std::mutex> l(meta_mutex_);
  return state_->describe();
}

// ---- namespace

int KvFs::mkdir(const std::string& dir, std::string* why) {
  if (int r = check_name(dir, why); r < 0) return r;
  std::lock_guard<std::mutex> l(meta_mutex_);
  if (state_->dirs().count(dir)) {
    *why = fmt::format("kvfs: directory '{}' exists", dir);
    return -EEXIST;
  }
  uint64_t ticket;
  return queue_locked(KvMkdir{dir}, &ticket, why);
}

int KvFs::rmdir(const std::string& dir, std::string* why) {
  std::lock_guard<std::mutex> l(meta_mutex_);
  auto it = state_->dirs().find(dir);
  if (it == state_->dirs().end()) {
    *why = fmt::format("kvfs: no directory '{}'", dir);
    return -ENOENT;
  }
  // Checked here, not left to the state: a refused record would fail the
  // whole log (-EIO), not just this call.
  if (!it->second.empty()) {
    *why = fmt::format("kvfs: directory '{}' holds {} names", dir, it->second.size());
    return -ENOTEMPTY;
  }
  uint64_t ticket;
  return queue_locked(KvRmdir{dir}, &ticket, why);
}

int KvFs::list(const std::string& dir, std::vector<std::string>* names, std::string* why) const {
  std::lock_guard<std::mutex> l(meta_mutex_);
  auto it = state_->dirs().find(dir);
  if (it == state_->dirs().end()) {
    *why = fmt::format("kvfs: no directory '{}'", dir);
    return -ENOENT;
  }
  names->clear();
  for (const auto& [name, ino] : it->second) names->push_back(name);
  return 0;
}

int KvFs::file_size(const std::string& dir, const std::string& name, uint64_t* size, std::string* why) const {
  uint64_t ino = 0;
  std::shared_ptr<KvFsNode> node;
  {
    std::lock_guard<std::mutex> l(meta_mutex_);
    auto d = state_->dirs().find(dir);
    if (d == state_->dirs().end() || !d->second.count(name)) {
      *why = fmt::format("kvfs: no file '{}/{}'", dir, name);
      return -ENOENT;
    }
    ino = d->second.at(name);
    auto o = open_.find(ino);
    if (o == open_.end()) {
      *size = state_->inodes().at(ino).size;
      return 0;
    }
    node = o->second;
  }
  std::lock_guard<std::mutex> nl(node->mutex);
  *size = node->size;
  return 0;
}

std::vector<std::string> KvFs::list_dirs() const {
  std::lock_guard<std::mutex> l(meta_mutex_);
  std::vector<std::string> dirs;
  for (const auto& [dir, names] : state_->dirs()) dirs.push_back(dir);
  return dirs;
}

int KvFs::file_mtime(const std::string& dir, const std::string& name, uint64_t* mtime, std::string* why) const {
  std::lock_guard<std::mutex> l(meta_mutex_);
  auto d = state_->dirs().find(dir);
  if (d == state_->dirs().end() || !d->second.count(name)) {
    *why = fmt::format("kvfs: no file '{}/{}'", dir, name);
    return -ENOENT;
  }
  *mtime = state_->inodes().at(d->second.at(name)).mtime;
  return 0;
}

int KvFs::rename(const std::string& src_dir, const std::string& src, const std::string& dst_dir,
                 const std::string& dst, std::string* why) {
  if (int r = check_name(dst, why); r < 0) return r;
  std::lock_guard<std::mutex> l(meta_mutex_);
  auto sd = state_->dirs().find(src_dir);
  if (sd == state_->dirs().end() || !sd->second.count(src) || !state_->dirs().count(dst_dir)) {
    *why = fmt::format("kvfs rename: no file '{}/{}' or no directory '{}'", src_dir, src, dst_dir);
    return -ENOENT;
  }
  if (src_dir == dst_dir && src == dst) return 0;
  const Victim victim = victim_locked(dst_dir, dst);
  uint64_t ticket;
  if (int r = queue_locked(KvRename{src_dir, src, dst_dir, dst}, &ticket, why); r < 0) return r;
  drop_victim_locked(victim, ticket);
  return 0;
}

int KvFs::unlink(const std::string& dir, const std::string& name, std::string* why) {
  std::lock_guard<std::mutex> l(meta_mutex_);
  auto d = state_->dirs().find(dir);
  if (d == state_->dirs().end() || !d->second.count(name)) {
    *why = fmt::format("kvfs: no file '{}/{}'", dir, name);
    return -ENOENT;
  }
  const Victim victim = victim_locked(dir, name);
  uint64_t ticket;
  if (int r = queue_locked(KvUnlink{dir, name}, &ticket, why); r < 0) return r;
  drop_victim_locked(victim, ticket);
  return 0;
}

int KvFs::lock(const std::string& dir, const std::string& name, std::string* why) {
  std::lock_guard<std::mutex> l(meta_mutex_);
  if (!locks_.insert(dir + "/" + name).second) {
    *why = fmt::format("kvfs: '{}/{}' is locked already", dir, name);
    return -EBUSY;
  }
  return 0;
}

int KvFs::unlock(const std::string& dir, const std::string& name, std::string* why) {
  std::lock_guard<std::mutex> l(meta_mutex_);
  if (locks_.erase(dir + "/" + name) == 0) {
    *why = fmt::format("kvfs: '{}/{}' is not locked", dir, name);
    return -ENOENT;
  }
  return 0;
}

// ---- the queue and group commit

int KvFs::queue_locked(const KvRecord& record, uint64_t* ticket, std::string* why) {
  if (log_error_ < 0) {
    *why = "kvfs: the log failed earlier: " + log_error_why_;
    return log_error_;
  }
  const uint64_t t = last_ticket_ + 1;
  if (int r = state_->apply(record, t, why); r < 0) return r;
  last_ticket_ = t;
  pending_.push_back(Pending{t, record});
  *ticket = t;
  return 0;
}

KvFs::Victim KvFs::victim_locked(const std::string& dir, const std::string& name) const {
  Victim v;
  auto d = state_->dirs().find(dir);
  if (d == state_->dirs().end()) return v;
  auto n = d->second.find(name);
  if (n == d->second.end()) return v;
  v.ino = n->second;
  v.extents = state_->inodes().at(v.ino).extents;
  return v;
}

// The victim's blocks may be reused only once the record that dropped its
// name (`ticket`) is durable, and not before its last handle closes.
void KvFs::drop_victim_locked(const Victim& victim, uint64_t ticket) {
  if (victim.ino == 0) return;
  auto o = open_.find(victim.ino);
  if (o != open_.end()) {
    o->second->unlinked = true;
    o->second->unlink_ticket = ticket;
    return;
  }
  release_after_locked(ticket, victim.extents);
}

void KvFs::release_after_locked(uint64_t ticket, const std::vector<KvFsExtent>& extents) {
  for (const KvFsExtent& e : extents) pending_release_.emplace_back(ticket, e);
  release_durable_locked();
}

void KvFs::release_durable_locked() {
  std::vector<Interval> now;
  auto keep = std::remove_if(pending_release_.begin(), pending_release_.end(), [&](const auto& p) {
    if (p.first > durable_ticket_) return false;
    now.push_back(Interval{p.second.offset, p.second.length});
    return true;
  });
  pending_release_.erase(keep, pending_release_.end());
  for (const Interval& i : now) dev_->discard(i.offset, i.length);
  alloc_.release(now);
}

std::vector<KvFsExtent> KvFs::journal() const {
  std::lock_guard<std::mutex> l(meta_mutex_);
  return state_->journal();
}

int KvFs::make_journal(uint64_t size, std::vector<KvFsExtent>* extents, std::string* why, uint64_t align) {
  extents->clear();
  if (std::vector<KvFsExtent> have = journal(); !have.empty()) {
    *extents = std::move(have);
    return 0;
  }
  return new_ring(size, extents, why, align);
}

int KvFs::resize_journal(uint64_t size, std::vector<KvFsExtent>* extents, std::string* why, uint64_t align) {
  extents->clear();
  const std::vector<KvFsExtent> old = journal();
  if (int r = new_ring(size, extents, why, align); r < 0) return r;
  // The JOURNAL record naming the new ring is durable: the old ring's
  // space is free from here on, in the log's replay as in the allocator.
  std::vector<Interval> freed;
  for (const KvFsExtent& e : old) freed.push_back(Interval{e.offset, e.length});
  alloc_.release(freed);
  return 0;
}

int KvFs::new_ring(uint64_t size, std::vector<KvFsExtent>* extents, std::string* why, uint64_t align) {
  if (size == 0) {
    *why = "kvfs: a journal ring of 0 bytes";
    return -EINVAL;
  }
  size = align_up(size, geo_.alloc_unit);
  // The allocator takes one free run when one holds the ring (best fit
  // before pieces), so the committer's records never straddle two places
  // on the device unless the kvfs is fragmented.
  std::vector<KvFsExtent> pieces;
  // Aligned: one run of a step more than the ring, the ring at its first
  // multiple of the step, and what is left on either side free again.
  const uint64_t step = align ? std::lcm(align, geo_.alloc_unit) : 0;
  if (step && step <= size) {
    std::string ignored;
    if (allocate(size + step, 0, &pieces, &ignored) == 0) {
      if (pieces.size() == 1) {
        const KvFsExtent run = pieces[0];
        const uint64_t start = align_up(run.offset, step);
        std::vector<Interval> spare;
        if (start > run.offset) spare.push_back(Interval{run.offset, start - run.offset});
        if (run.end() > start + size) spare.push_back(Interval{start + size, run.end() - start - size});
        alloc_.release(spare);
        pieces = {KvFsExtent{start, size}};
      } else {
        std::vector<Interval> back;
        for (const KvFsExtent& e : pieces) back.push_back(Interval{e.offset, e.length});
        alloc_.release(back);
        pieces.clear();
      }
    }
  }
  if (pieces.empty())
    if (int r = allocate(size, 0, &pieces, why); r < 0) return r;
  std::vector<Interval> got;
  for (const KvFsExtent& e : pieces) got.push_back(Interval{e.offset, e.length});
  AlignedBuffer zeros(std::min<uint64_t>(size, 1ull << 20), 4096, AlignedBuffer::kZeroed);
  int r = 0;
  for (const Interval& i : got)
    for (uint64_t off = 0; r == 0 && off < i.length; off += zeros.size())
      r = dev_->write(i.offset + off, zeros.data(), std::min<uint64_t>(zeros.size(), i.length - off));
  if (r == 0) r = dev_->flush();
  if (r < 0) {
    alloc_.release(got);
    *why = fmt::format("kvfs: writing zeros over the journal ring: {}", strerror(-r));
    return r;
  }
  std::vector<KvFsExtent> ring = std::move(pieces);
  uint64_t ticket;
  {
    std::lock_guard<std::mutex> l(meta_mutex_);
    if (int q = queue_locked(KvJournal{ring}, &ticket, why); q < 0) {
      alloc_.release(got);
      return q;
    }
  }
  // Recorded, though maybe not durable: never the "no room, nothing
  // changed" of a failed allocation, whatever the log's failure was.
  if (int c = commit_through(ticket, why); c < 0) return c == -ENOSPC ? -EIO : c;
  *extents = std::move(ring);
  return 0;
}

int KvFs::sync_log(std::string* why) {
  uint64_t ticket;
  {
    std::lock_guard<std::mutex> l(meta_mutex_);
    ticket = last_ticket_;
  }
  return commit_through(ticket, why);
}

// A thread that needs `ticket` durable either leads (takes the whole queue
// and writes it) or waits for the leader whose batch covers its ticket.
int KvFs::commit_through(uint64_t ticket, std::string* why) {
  std::unique_lock<std::mutex> l(meta_mutex_);
  while (durable_ticket_ < ticket) {
    if (log_error_ < 0) {
      *why = "kvfs: the log failed: " + log_error_why_;
      return log_error_;
    }
    if (leading_) {
      committed_.wait(l);
      continue;
    }
    leading_ = true;
    l.unlock();
    int r = lead_commit(why);
    l.lock();
    leading_ = false;
    committed_.notify_all();
    if (r < 0) return r;
  }
  return 0;
}

// The leader: one group of everything queued, then a compaction if the log
// has grown long enough.
int KvFs::lead_commit(std::string* why) {
  std::lock_guard<std::mutex> cl(commit_mutex_);
  std::vector<Pending> batch;
  {
    std::lock_guard<std::mutex> l(meta_mutex_);
    batch.swap(pending_);
  }
  if (int r = write_pending(std::move(batch), why); r < 0) return r;
  if (!compaction_due()) return 0;
  std::lock_guard<std::mutex> l(meta_mutex_);
  const int r = compact_locked(why);
  // Records queued meanwhile: the next leader compacts.
  return r == -EAGAIN ? 0 : r;
}

// Writes `batch` as one group (and the NEXT the writer may put first), then
// publishes it: the NEXT records enter the live state, the tickets become
// durable, and what they freed becomes free. commit_mutex_ held.
int KvFs::write_pending(std::vector<Pending> batch, std::string* why) {
  if (batch.empty()) return 0;
  std::vector<KvRecord> records;
  for (Pending& p : batch) records.push_back(std::move(p.record));
  std::vector<KvLoggedRecord> logged;
  uint64_t bytes = 0;
  const int r = append_records(writer_.get(), super_.log_id, geo_.block, params_.log_segment, records, &logged,
                               &bytes, why);
  if (r == 0) log_flushes_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> l(meta_mutex_);
  bool took_segment = false;
  for (const KvLoggedRecord& lr : logged) {
    if (kv_record_op(lr.record) != KvOp::kNext) continue;
    took_segment = true;
    std::string nwhy;
    if (int nr = state_->apply(lr.record, lr.seq, &nwhy); nr < 0) {
      log_error_ = nr;
      log_error_why_ = nwhy;
    }
  }
  if (r < 0) {
    log_error_ = r;
    log_error_why_ = *why;
    return r;
  }
  log_bytes_ += bytes;
  durable_ticket_ = std::max(durable_ticket_, batch.back().ticket);
  release_durable_locked();
  // Growing here would log from inside the log's leader: the next file
  // allocation grows if this finds no run. Until then the log runs on its
  // last spare, and compacting now gives its old segments back.
  if (took_segment && !refill_spare_segments()) log_short_ = true;
  return log_error_;
}

bool KvFs::compaction_due() const {
  if (log_short_) return true;
  return log_bytes_ >= params_.log_compact && log_bytes_ >= params_.log_compact_ratio * snapshot_bytes_;
}

int KvFs::compact(std::string* why) {
  std::unique_lock<std::mutex> l(meta_mutex_);
  committed_.wait(l, [this] { return !leading_; });
  leading_ = true;
  l.unlock();
  int r;
  {
    std::lock_guard<std::mutex> cl(commit_mutex_);
    for (;;) {
      std::vector<Pending> batch;
      {
        std::lock_guard<std::mutex> ml(meta_mutex_);
        batch.swap(pending_);
      }
      if ((r = write_pending(std::move(batch), why)) < 0) break;
      std::lock_guard<std::mutex> ml(meta_mutex_);
      if ((r = compact_locked(why)) != -EAGAIN) break;
    }
  }
  l.lock();
  leading_ = false;
  committed_.notify_all();
  return r;
}

// The log as a snapshot of the state (docs/kvfs.md 3.2 step 2).
std::vector<KvRecord> KvFs::snapshot_records() const {
  std::vector<KvRecord> out{KvInit{super_.kvfs_uuid, geo_.block, geo_.alloc_unit, geo_.lend_unit}};
  for (const auto& [start, length] : state_->chunks()) out.push_back(KvGrant{{start, length}});
  if (!state_->journal().empty()) out.push_back(KvJournal{state_->journal()});
  for (const auto& [dir, names] : state_->dirs()) {
    out.push_back(KvMkdir{dir});
    for (const auto& [name, ino] : names) {
      const KvInode& i = state_->inodes().at(ino);
      out.push_back(KvCreate{dir, name, ino});
      out.push_back(KvUpdate{ino, i.size, i.mtime, 0, i.extents, i.tail_kind, i.tail});
    }
  }
  out.push_back(KvSnapshotDone{});
  return out;
}

// Stop-the-world: commit_mutex_ and meta_mutex_ held. The
// new log is written and checked into a state of its own; only the durable
// superblock makes it the kvfs's log, and only then are the old segments
// freed. A failed superblock write may or may not have landed, so the kvfs
// stops logging after one.
int KvFs::compact_locked(std::string* why) {
  if (log_error_ < 0) {
    *why = "kvfs compaction: the log failed earlier: " + log_error_why_;
    return log_error_;
  }
  // A snapshot of the state with records still queued would log them twice.
  if (!pending_.empty()) {
    *why = "kvfs compaction: records were queued meanwhile";
    return -EAGAIN;
  }
  KvFsExtent first;
  if (int r = segment_for_log(&first, why); r < 0) return r;
  const uint64_t log_id = random_log_id();
  auto fresh = std::make_unique<KvFsState>(super_.kvfs_uuid, geo_);
  auto writer = make_writer(log_id, first, first.offset, 1);
  const std::vector<KvRecord> snapshot = snapshot_records();
  int r = fresh->begin_log(first, why);
  uint64_t bytes = 0;
  std::vector<KvLoggedRecord> logged;
  if (r == 0) {
    r = append_records(writer.get(), log_id, geo_.block, params_.log_segment, snapshot, &logged, &bytes, why);
  }
  for (size_t j = 0; r == 0 && j < logged.size(); ++j) r = fresh->apply(logged[j].record, logged[j].seq, why);
  if (r == 0) r = fresh->finish(why);
  if (r < 0) {
    // The new log's segments go back: no superblock names them.
    std::vector<Interval> segments{Interval{first.offset, first.length}};
    for (const KvLoggedRecord& lr : logged) {
      if (kv_record_op(lr.record) != KvOp::kNext) continue;
      const KvFsExtent& s = std::get<KvNext>(lr.record).segment;
      segments.push_back(Interval{s.offset, s.length});
    }
    alloc_.release(segments);
    *why = "kvfs compaction: " + *why;
    return r;
  }
  KvFsSuper next = super_;
  next.generation += 1;
  next.log_id = log_id;
  next.log_first_seq = 1;
  next.log_segment = first;
  r = dev_->flush();
  if (r < 0) *why = fmt::format("kvfs compaction: device flush failed: {}", strerror(-r));
  if (r == 0) r = write_kvfs_super(dev_, params_.slots, next, why);
  if (r < 0) {
    log_error_ = r;
    log_error_why_ = *why;
    return r;
  }
  std::vector<Interval> old;
  for (const KvFsExtent& s : state_->log_segments()) old.push_back(Interval{s.offset, s.length});
  alloc_.release(old);
  super_ = next;
  state_ = std::move(fresh);
  writer_ = std::move(writer);
  log_bytes_ = snapshot_bytes_ = bytes;
  log_short_ = !refill_spare_segments();
  compactions_.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

// ---- allocation

// Extents come from what the kvfs owns; when that is short, from a growth
// through the lender, logged durably before any of it is used.
//
// First, the log's next segment is put aside if it is not yet: the log
// cannot grow from inside a log write, and RocksDB's files once fragmented
// the free space until no run held a segment and the log failed
// (kvfs_rocksdb_test), which fails every file at once. A file allocation
// that cannot leave a segment for the log fails instead, with -ENOSPC:
// RocksDB sees NoSpace for that write, and the log stays sound.
int KvFs::allocate(uint64_t want, uint64_t hint, std::vector<KvFsExtent>* out, std::string* why, uint64_t need) {
  want = align_up(want, geo_.alloc_unit);
  need = need ? std::min(align_up(need, geo_.alloc_unit), want) : want;
  if (!refill_spare_segments()) {
    std::string grow_why;
    const uint64_t missing = (kSpareSegments - spare_segments()) * params_.log_segment;
    if (grow(missing, true, &grow_why) < 0 || !refill_spare_segments()) {
      *why = fmt::format(
          "kvfs: no room left for the metadata log's next segments of {} bytes ({} bytes free in smaller "
          "pieces{})",
          params_.log_segment, alloc_.free_bytes(), grow_why.empty() ? "" : "; " + grow_why);
      return -ENOSPC;
    }
  }
  // With a lender, the mount headroom stays free: growth first, and a
  // refusal fails the allocation instead of taking it.
  const bool lending = lender_.load(std::memory_order_acquire) != nullptr;
  const uint64_t headroom = lending ? mount_headroom_.load(std::memory_order_relaxed) : 0;
  const auto fits = [&](uint64_t n) { return alloc_.free_bytes() >= n + headroom; };
  std::string grow_why;
  int grown = 1;  // 1: not tried
  if (!fits(want)) {
    // Waiting for the tier is worth it only when nothing else will do.
    const bool must = !fits(need);
    // Only the shortfall: asking for the whole headroom again, on a tier
    // down to its floor, was refused while what was missing would fit.
    const uint64_t shortfall = want + headroom - std::min(want + headroom, alloc_.free_bytes());
    if ((grown = grow(shortfall, must, &grow_why)) < 0 && must) {
      *why = headroom ? fmt::format("{} (the kvfs keeps {} bytes for the next mount)", grow_why, headroom) : grow_why;
      return -ENOSPC;
    }
  }
  std::vector<Interval> got;
  int r = fits(want) ? alloc_.allocate(want, hint, &got) : -ENOSPC;
  // What is free may lie in pieces the allocator cannot join into `want`,
  // or the tier refused it: what the caller needs will do.
  if (r == -ENOSPC && need < want && fits(need)) r = alloc_.allocate(need, hint, &got);
  // Free pieces too small for even that: grow, unless the tier just refused.
  if (r == -ENOSPC && grown >= 0) {
    // Enough is free, in pieces: a fresh chunk of `want` joins them.
    if ((r = grow(want, true, why)) < 0) return r;
    r = alloc_.allocate(want, hint, &got);
  }
  if (r < 0) {
    *why = fmt::format("kvfs: no {} bytes free after growth ({} free{}): {}", need, alloc_.free_bytes(),
                       headroom ? fmt::format(", {} kept for the next mount", headroom) : "", strerror(-r));
    return r;
  }
  for (const Interval& i : got) out->push_back(KvFsExtent{i.offset, i.length});
  return 0;
}

// A refused lend is retried once after grow_wait (the tier may have freed
// space meanwhile); then the caller gets -ENOSPC. The GRANTs are durable
// before the allocator hears of the chunks, so a crash never leaves a block
// in use that the log does not say the kvfs owns.
int KvFs::grow(uint64_t want, bool wait_if_refused, std::string* why) {
  KvFsLender* const lender = lender_.load(std::memory_order_acquire);
  if (!lender) {
    *why = fmt::format("kvfs: needs {} more bytes and has no lender to grow from", want);
    return -ENOSPC;
  }
  const uint64_t unit = geo_.lend_unit;
  const uint64_t ask = std::max(align_up(want, unit), align_up(std::max(grow_step_.load(std::memory_order_relaxed), unit), unit));
  std::vector<Interval> lent;
  int r = lender->lend(ask, &lent);
  if (r < 0 && wait_if_refused && params_.grow_wait.count() > 0) {
    std::this_thread::sleep_for(params_.grow_wait);
    lent.clear();
    r = lender->lend(ask, &lent);
  }
  if (r < 0 || lent.empty()) {
    *why = fmt::format("kvfs: the SSD tier has no free space for RocksDB (asked for {} bytes, kvfs free {})", ask,
                       alloc_.free_bytes());
    return -ENOSPC;
  }
  uint64_t ticket = 0;
  std::vector<Interval> granted;
  {
    std::lock_guard<std::mutex> l(meta_mutex_);
    for (const Interval& i : lent) {
      if (int qr = queue_locked(KvGrant{{i.offset, i.length}}, &ticket, why); qr < 0) {
        r = qr;
        break;
      }
      granted.push_back(i);
      granting_.push_back(KvFsExtent{i.offset, i.length});
    }
  }
  const auto granted_handed_over = [&] {
    std::lock_guard<std::mutex> l(meta_mutex_);
    for (const Interval& i : granted) {
      auto it = std::find(granting_.begin(), granting_.end(), KvFsExtent{i.offset, i.length});
      if (it != granting_.end()) granting_.erase(it);
    }
  };
  std::vector<Interval> refused(lent.begin() + granted.size(), lent.end());
  if (!refused.empty()) lender->take_back(refused);
  if (r >= 0) r = commit_through(ticket, why);
  if (r >= 0)
    for (const Interval& i : granted) alloc_.init_add_free(i.offset, i.length);
  granted_handed_over();
  return r < 0 ? r : 0;
}

int KvFs::give_back(uint64_t keep_free, uint64_t keep_owned, uint64_t* returned, std::string* why) {
  *returned = 0;
  KvFsLender* const lender = lender_.load(std::memory_order_acquire);
  if (!lender) return 0;
  const uint64_t unit = geo_.lend_unit;
  std::vector<Interval> taken;
  uint64_t ticket = 0, bytes = 0;
  {
    // Taken from the free map and logged under one hold of meta_mutex_, so a
    // check's snapshot never sees a range that is neither free nor returned.
    std::lock_guard<std::mutex> l(meta_mutex_);
    if (log_error_ < 0) {
      *why = "kvfs: the log failed earlier: " + log_error_why_;
      return log_error_;
    }
    uint64_t owned = 0;
    for (const auto& [start, length] : state_->chunks()) owned += length;
    const uint64_t free = alloc_.free_bytes();
    if (free <= keep_free || owned <= keep_owned) return 0;
    const uint64_t want = std::min(free - keep_free, owned - keep_owned) / unit * unit;
    if (want == 0) return 0;
    if (int r = alloc_.allocate_aligned(want, unit, &taken); r < 0) return r == -ENOSPC ? 0 : r;
    size_t queued = 0;
    int r = 0;
    for (; queued < taken.size(); ++queued) {
      if ((r = queue_locked(KvReturn{{taken[queued].offset, taken[queued].length}}, &ticket, why)) < 0) break;
      bytes += taken[queued].length;
    }
    if (r < 0) {
      // What was not queued is the kvfs's still; what was is in the live
      // state as returned and stays out of both until a remount reads the log.
      alloc_.release(std::vector<Interval>(taken.begin() + queued, taken.end()));
      return r;
    }
  }
  if (int r = commit_through(ticket, why); r < 0) return r;
  lender->take_back(taken);
  *returned = bytes;
  returns_.fetch_add(1, std::memory_order_relaxed);
  return_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  return 0;
}

KvFs::Counts KvFs::take_counts() {
  Counts c;
  c.returns = returns_.exchange(0, std::memory_order_relaxed);
  c.return_bytes = return_bytes_.exchange(0, std::memory_order_relaxed);
  c.syncs = syncs_.exchange(0, std::memory_order_relaxed);
  c.log_flushes = log_flushes_.exchange(0, std::memory_order_relaxed);
  c.compactions = compactions_.exchange(0, std::memory_order_relaxed);
  return c;
}

}  // namespace hybridstore
