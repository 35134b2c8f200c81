// Files of the kvfs (docs/kvfs.md 3.4, 3.5): the writer's buffer and its
// whole-block writes, sync with the partial last block inline in the log,
// close with the padded block in the data area and the extents trimmed,
// and positioned reads.
#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "hybridstore/kvfs/kvfs.h"

namespace hybridstore {

namespace {
uint64_t align_up(uint64_t v, uint64_t unit) { return (v + unit - 1) / unit * unit; }
uint64_t align_down(uint64_t v, uint64_t unit) { return v / unit * unit; }

// How big the next extent of a growing file is: at least A, else as much
// as the file holds already, up to 16 MiB, so a large file has few extents.
constexpr uint64_t kMaxGrowth = 16 << 20;

uint64_t mtime_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

uint64_t covered(const std::vector<KvFsExtent>& extents) {
  uint64_t n = 0;
  for (const KvFsExtent& e : extents) n += e.length;
  return n;
}

// Calls fn(device offset, offset into the range, length) for each piece of
// the file range [offset, offset + len) on the device: 0, or -EIO when the
// extents do not cover it (-EIO), or fn's first error.
template <typename Fn>
int for_each_piece(const std::vector<KvFsExtent>& extents, uint64_t offset, uint64_t len, Fn fn) {
  uint64_t file_pos = 0, done = 0;
  for (const KvFsExtent& e : extents) {
    if (done == len) break;
    const uint64_t at = offset + done;
    if (at < file_pos + e.length) {
      const uint64_t piece = std::min(len - done, file_pos + e.length - at);
      if (int r = fn(e.offset + (at - file_pos), done, piece); r < 0) return r;
      done += piece;
    }
    file_pos += e.length;
  }
  return done == len ? 0 : -EIO;
}
}  // namespace

// ---- opening

int KvFs::open_writable(const std::string& dir, const std::string& name, std::unique_ptr<KvFsWritableFile>* out,
                        std::string* why) {
  if (name.empty() || name.size() > kKvFsMaxName || name.find('/') != std::string::npos) {
    *why = fmt::format("kvfs: invalid name '{}' ({} bytes; names are 1 to {} bytes without '/')",
                       name.substr(0, 64), name.size(), kKvFsMaxName);
    return -EINVAL;
  }
  std::lock_guard<std::mutex> l(meta_mutex_);
  if (!state_->dirs().count(dir)) {
    *why = fmt::format("kvfs: no directory '{}'", dir);
    return -ENOENT;
  }
  const Victim victim = victim_locked(dir, name);
  const uint64_t ino = next_ino_;
  uint64_t ticket;
  if (int r = queue_locked(KvCreate{dir, name, ino}, &ticket, why); r < 0) return r;
  ++next_ino_;
  drop_victim_locked(victim, ticket);
  auto node = std::make_shared<KvFsNode>(ino);
  node->writing = true;
  node->handles = 1;
  open_[ino] = node;
  out->reset(new KvFsWritableFile(this, node, false));
  return 0;
}

int KvFs::open_readable(const std::string& dir, const std::string& name, std::unique_ptr<KvFsReadableFile>* out,
                        std::string* why) {
  std::lock_guard<std::mutex> l(meta_mutex_);
  auto d = state_->dirs().find(dir);
  if (d == state_->dirs().end() || !d->second.count(name)) {
    *why = fmt::format("kvfs: no file '{}/{}'", dir, name);
    return -ENOENT;
  }
  auto node = node_locked(d->second.at(name));
  ++node->handles;
  out->reset(new KvFsReadableFile(this, node));
  return 0;
}

// A file nobody has open gets a node built from the state: its data area up
// to the last whole block, and the inline tail (a file whose writer never
// closed it before a crash) as if it were still buffered.
std::shared_ptr<KvFsNode> KvFs::node_locked(uint64_t ino) {
  auto o = open_.find(ino);
  if (o != open_.end()) return o->second;
  const KvInode& i = state_->inodes().at(ino);
  auto node = std::make_shared<KvFsNode>(ino);
  node->size = i.size;
  node->extents = i.extents;
  node->logged_extents = i.extents.size();
  if (i.tail_kind == KvTailKind::kInline) {
    node->written = align_down(i.size, geo_.block);
    node->buffer = i.tail;
  } else {
    node->written = align_up(i.size, geo_.block);
  }
  open_[ino] = node;
  return node;
}

int KvFs::reopen_for_truncate(const std::string& dir, const std::string& name,
                              std::unique_ptr<KvFsWritableFile>* out, std::string* why) {
  std::lock_guard<std::mutex> l(meta_mutex_);
  auto d = state_->dirs().find(dir);
  if (d == state_->dirs().end() || !d->second.count(name)) {
    *why = fmt::format("kvfs: no file '{}/{}'", dir, name);
    return -ENOENT;
  }
  auto node = node_locked(d->second.at(name));
  if (node->writing) {
    *why = fmt::format("kvfs: '{}/{}' is open for writing", dir, name);
    return -EBUSY;
  }
  node->writing = true;
  ++node->handles;
  out->reset(new KvFsWritableFile(this, node, true));
  return 0;
}

// Only the size changes here. Blocks in the data area stay as they are (a
// cut inside a block leaves bytes past the size that nobody reads); the
// close writes the cut tail block if it was inline, and trims the extents.
int KvFs::truncate_file(KvFsNode* node, uint64_t size, std::string* why) {
  std::lock_guard<std::mutex> l(node->mutex);
  if (size > node->size) {
    *why = fmt::format("kvfs: truncate of inode {} to {} bytes would extend it ({} bytes)", node->ino, size,
                       node->size);
    return -EINVAL;
  }
  node->size = size;
  if (size >= node->written) {
    node->buffer.resize(size - node->written);
  } else {
    node->buffer.clear();
    node->written = align_up(size, geo_.block);
  }
  return 0;
}

void KvFs::put_node(const std::shared_ptr<KvFsNode>& node, bool writer) {
  std::lock_guard<std::mutex> l(meta_mutex_);
  if (writer) node->writing = false;
  if (--node->handles > 0) return;
  open_.erase(node->ino);
  // No handle is left to touch the node's extents.
  if (node->unlinked) release_after_locked(node->unlink_ticket, node->extents);
}

// ---- the write buffer

void KvFsWriteBuffer::reserve(size_t n) {
  if (n <= mem_.size()) return;
  // Doubling, in whole blocks, from 64 KiB: a file written in small appends
  // reaches its write-out size in a few moves.
  size_t cap = std::max<size_t>({n, 2 * mem_.size(), size_t{64} << 10});
  cap = (cap + 4095) / 4096 * 4096;
  AlignedBuffer grown(cap, 4096, AlignedBuffer::kUninitialized);
  if (size_ > 0) std::memcpy(grown.data(), mem_.data(), size_);
  mem_ = std::move(grown);
}

void KvFsWriteBuffer::append(const char* p, size_t n) {
  if (n == 0) return;
  reserve(size_ + n);
  std::memcpy(mem_.data() + size_, p, n);
  size_ += n;
}

void KvFsWriteBuffer::resize(size_t n) {
  if (n > size_) {
    reserve(n);
    std::memset(mem_.data() + size_, 0, n - size_);
  }
  size_ = n;
}

void KvFsWriteBuffer::erase_front(size_t n) {
  n = std::min(n, size_);
  if (n < size_) std::memmove(mem_.data(), mem_.data() + n, size_ - n);
  size_ -= n;
}

const char* KvFsWriteBuffer::padded(size_t len) {
  if (len > size_) {
    reserve(len);
    std::memset(mem_.data() + size_, 0, len - size_);
  }
  return mem_.data();
}

// ---- writing

// Writes the file range [written, upto) from the buffer, zeros past its
// end (only close asks for that, to pad the last block), allocating extents
// as needed. Only blocks that hold no durable bytes get here: everything
// below `written` was written once and is never written again, and the
// synced partial block is durable in the log, not in the data area.
int KvFs::write_blocks(KvFsNode* node, uint64_t upto, std::string* why) {
  if (upto <= node->written) return 0;
  const uint64_t len = upto - node->written;
  const uint64_t have = covered(node->extents);
  if (have < upto) {
    const uint64_t want = std::max(upto - have, std::max<uint64_t>(geo_.alloc_unit, std::min(have, kMaxGrowth)));
    const uint64_t hint = node->extents.empty() ? 0 : node->extents.back().end();
    if (int r = allocate(want, hint, &node->extents, why, upto - have); r < 0) return r;
  }
  // Straight from the buffer (block-aligned); close's padding of the last
  // block is zeroed in place.
  const uint64_t from_buffer = std::min<uint64_t>(len, node->buffer.size());
  const char* src = node->buffer.padded(len);
  const int r = for_each_piece(node->extents, node->written, len, [&](uint64_t dev_off, uint64_t at, uint64_t n) {
    const int wr = dev_->write(dev_off, src + at, n);
    if (wr < 0) *why = fmt::format("kvfs: write of inode {} at {:#x} failed: {}", node->ino, dev_off, strerror(-wr));
    return wr;
  });
  if (r < 0) return r;
  node->written = upto;
  node->buffer.erase_front(from_buffer);
  return 0;
}

KvUpdate KvFs::update_of(const KvFsNode& node, KvTailKind tail_kind) const {
  KvUpdate u;
  u.ino = node.ino;
  u.size = node.size;
  u.mtime = mtime_now();
  u.keep = node.logged_extents;
  u.extents.assign(node.extents.begin() + node.logged_extents, node.extents.end());
  u.tail_kind = node.size % geo_.block == 0 ? KvTailKind::kNone : tail_kind;
  if (u.tail_kind == KvTailKind::kInline) u.tail = node.buffer.str();
  return u;
}

// A file whose name is gone logs nothing more: its inode left the log with
// the name. *ticket 0 then.
int KvFs::queue_update(KvFsNode* node, KvUpdate update, uint64_t* ticket, std::string* why) {
  std::lock_guard<std::mutex> l(meta_mutex_);
  *ticket = 0;
  if (node->unlinked) return 0;
  const size_t extents = update.keep + update.extents.size();
  if (int r = queue_locked(update, ticket, why); r < 0) return r;
  node->logged_extents = extents;
  return 0;
}

int KvFs::sync_file(KvFsNode* node, std::string* why) {
  syncs_.fetch_add(1, std::memory_order_relaxed);
  uint64_t ticket = 0;
  {
    std::lock_guard<std::mutex> l(node->mutex);
    const uint64_t whole = node->written + align_down(node->buffer.size(), geo_.block);
    if (int r = write_blocks(node, whole, why); r < 0) return r;
    if (int r = queue_update(node, update_of(*node, KvTailKind::kInline), &ticket, why); r < 0) return r;
  }
  return commit_through(ticket, why);
}

// Pads and writes the last block, trims the extents to align_up(size, A),
// and queues the UPDATE with the tail in the data area. Pieces the log
// never knew are free at once; pieces of logged extents once the UPDATE is
// durable.
int KvFs::close_writer(KvFsNode* node, std::string* why) {
  std::lock_guard<std::mutex> l(node->mutex);
  if (int r = write_blocks(node, align_up(node->size, geo_.block), why); r < 0) return r;
  node->buffer.release();
  const uint64_t need = align_up(node->size, geo_.alloc_unit);
  std::vector<KvFsExtent> kept, released_logged;
  std::vector<Interval> released_unlogged;
  size_t unchanged = 0;
  uint64_t pos = 0;
  for (size_t i = 0; i < node->extents.size(); ++i) {
    KvFsExtent e = node->extents[i];
    const uint64_t keep_len = pos >= need ? 0 : std::min(e.length, need - pos);
    pos += e.length;
    if (keep_len == e.length && unchanged == i) ++unchanged;
    if (keep_len > 0) kept.push_back(KvFsExtent{e.offset, keep_len});
    if (keep_len == e.length) continue;
    const KvFsExtent gone{e.offset + keep_len, e.length - keep_len};
    if (i < node->logged_extents) {
      released_logged.push_back(gone);
    } else {
      released_unlogged.push_back(Interval{gone.offset, gone.length});
    }
  }
  {
    std::lock_guard<std::mutex> ml(meta_mutex_);
    if (node->unlinked) return 0;  // put_node frees every extent
  }
  node->logged_extents = std::min(node->logged_extents, unchanged);
  node->extents = kept;
  uint64_t ticket = 0;
  if (int r = queue_update(node, update_of(*node, KvTailKind::kInData), &ticket, why); r < 0) return r;
  alloc_.release(released_unlogged);
  std::lock_guard<std::mutex> ml(meta_mutex_);
  // Unlinked meanwhile: the trimmed pieces go with the name's record.
  release_after_locked(ticket != 0 ? ticket : node->unlink_ticket, released_logged);
  return 0;
}

// ---- reading

// The data area [offset, offset + len), below `written`: straight into
// `out` when everything is aligned to b, else through a bounce buffer of
// whole blocks.
int KvFs::read_data(const KvFsNode& node, uint64_t offset, uint64_t len, char* out, std::string* why) {
  const uint64_t b = geo_.block;
  const bool direct = offset % b == 0 && len % b == 0 && reinterpret_cast<uintptr_t>(out) % dev_->alignment() == 0;
  const uint64_t start = direct ? offset : align_down(offset, b);
  const uint64_t end = direct ? offset + len : align_up(offset + len, b);
  AlignedBuffer bounce(direct ? 0 : end - start, 4096, AlignedBuffer::kUninitialized);
  char* dst = direct ? out : bounce.data();
  const int r = for_each_piece(node.extents, start, end - start, [&](uint64_t dev_off, uint64_t at, uint64_t n) {
    const int rr = dev_->read(dev_off, dst + at, n);
    if (rr < 0) *why = fmt::format("kvfs: read of inode {} at {:#x} failed: {}", node.ino, dev_off, strerror(-rr));
    return rr;
  });
  if (r < 0) {
    if (why->empty()) *why = fmt::format("kvfs: inode {} has no extent at {:#x}", node.ino, start);
    return r;
  }
  if (!direct) std::memcpy(out, bounce.data() + (offset - start), len);
  return 0;
}

int KvFs::read_file(KvFsNode* node, uint64_t offset, uint64_t n, char* out, uint64_t* got, std::string* why) {
  std::lock_guard<std::mutex> l(node->mutex);
  *got = 0;
  if (offset >= node->size) return 0;
  n = std::min(n, node->size - offset);
  const uint64_t data_end = std::min(offset + n, node->written);
  if (offset < data_end) {
    if (int r = read_data(*node, offset, data_end - offset, out, why); r < 0) return r;
  }
  if (offset + n > node->written) {
    const uint64_t from = std::max(offset, node->written);
    std::memcpy(out + (from - offset), node->buffer.data() + (from - node->written), offset + n - from);
  }
  *got = n;
  return 0;
}

// ---- the handles

KvFsWritableFile::~KvFsWritableFile() {
  std::string why;
  if (!closed_) close(&why);
}

int KvFsWritableFile::append(std::string_view data, std::string* why) {
  if (closed_ || truncate_only_) {
    *why = closed_ ? "kvfs: append to a closed file" : "kvfs: append to a file reopened for truncate";
    return closed_ ? -EBADF : -EOPNOTSUPP;
  }
  std::lock_guard<std::mutex> l(node_->mutex);
  node_->buffer.append(data.data(), data.size());
  node_->size += data.size();
  if (node_->buffer.size() < fs_->params_.write_buffer) return 0;
  const uint64_t whole = node_->written + align_down(node_->buffer.size(), fs_->geo_.block);
  return fs_->write_blocks(node_.get(), whole, why);
}

int KvFsWritableFile::flush(std::string* why) {
  if (closed_) return 0;
  std::lock_guard<std::mutex> l(node_->mutex);
  const uint64_t whole = node_->written + align_down(node_->buffer.size(), fs_->geo_.block);
  return fs_->write_blocks(node_.get(), whole, why);
}

int KvFsWritableFile::sync(std::string* why) {
  if (closed_) {
    *why = "kvfs: sync of a closed file";
    return -EBADF;
  }
  return fs_->sync_file(node_.get(), why);
}

int KvFsWritableFile::close(std::string* why) {
  if (closed_) return 0;
  closed_ = true;
  const int r = fs_->close_writer(node_.get(), why);
  fs_->put_node(node_, true);
  return r;
}

int KvFsWritableFile::truncate(uint64_t size, std::string* why) {
  if (closed_) {
    *why = "kvfs: truncate of a closed file";
    return -EBADF;
  }
  return fs_->truncate_file(node_.get(), size, why);
}

uint64_t KvFsWritableFile::size() const {
  std::lock_guard<std::mutex> l(node_->mutex);
  return node_->size;
}

KvFsReadableFile::~KvFsReadableFile() { fs_->put_node(node_, false); }

int KvFsReadableFile::read(uint64_t offset, uint64_t n, char* out, uint64_t* got, std::string* why) {
  return fs_->read_file(node_.get(), offset, n, out, got, why);
}

uint64_t KvFsReadableFile::size() const {
  std::lock_guard<std::mutex> l(node_->mutex);
  return node_->size;
}

}  // namespace hybridstore
