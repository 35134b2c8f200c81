#include "disk_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

namespace hybridstore::diskmodel {

namespace {

constexpr fuse_ino_t kDiskIno = 2;
constexpr const char* kDiskName = "disk";
constexpr uint64_t kAlign = 4096;
// One file that only we change: the kernel may keep its attributes for long.
constexpr double kAttrTimeout = 3600;

DiskFs* fs_of(fuse_req_t req) { return static_cast<DiskFs*>(fuse_req_userdata(req)); }

// Charges the handler's thread CPU time to the FUSE side of the stats.
struct HandlerCpu {
  explicit HandlerCpu(DiskFs* f) : fs(f), c0(thread_cpu_ns()) {}
  ~HandlerCpu() { fs->add_handler_cpu(thread_cpu_ns() - c0); }
  DiskFs* fs;
  uint64_t c0;
};

void op_init(void* userdata, fuse_conn_info* conn) { static_cast<DiskFs*>(userdata)->on_init(conn); }

void op_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  fuse_entry_param e;
  memset(&e, 0, sizeof(e));
  if (parent != FUSE_ROOT_ID || strcmp(name, kDiskName) != 0) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  e.ino = kDiskIno;
  e.attr_timeout = kAttrTimeout;
  e.entry_timeout = kAttrTimeout;
  fs_of(req)->fill_attr(kDiskIno, &e.attr);
  fuse_reply_entry(req, &e);
}

void op_getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  struct stat st;
  if (!fs_of(req)->fill_attr(ino, &st)) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  fuse_reply_attr(req, &st, kAttrTimeout);
}

void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info*) {
  // The disk has a fixed size; everything else (times, mode) is not kept.
  if ((to_set & FUSE_SET_ATTR_SIZE) && static_cast<uint64_t>(attr->st_size) != fs_of(req)->size()) {
    fuse_reply_err(req, EPERM);
    return;
  }
  struct stat st;
  if (!fs_of(req)->fill_attr(ino, &st)) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  fuse_reply_attr(req, &st, kAttrTimeout);
}

void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  if (ino != FUSE_ROOT_ID) {
    fuse_reply_err(req, ENOTDIR);
    return;
  }
  struct Ent {
    const char* name;
    fuse_ino_t ino;
    mode_t mode;
  };
  const Ent ents[] = {{".", FUSE_ROOT_ID, S_IFDIR}, {"..", FUSE_ROOT_ID, S_IFDIR}, {kDiskName, kDiskIno, S_IFREG}};
  std::string buf(size, '\0');
  size_t used = 0;
  for (off_t i = off; i < 3; ++i) {
    struct stat st;
    memset(&st, 0, sizeof(st));
    st.st_ino = ents[i].ino;
    st.st_mode = ents[i].mode;
    size_t need = fuse_add_direntry(req, nullptr, 0, ents[i].name, nullptr, 0);
    if (used + need > size) break;
    fuse_add_direntry(req, buf.data() + used, size - used, ents[i].name, &st, i + 1);
    used += need;
  }
  fuse_reply_buf(req, buf.data(), used);
}

void op_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  if (ino != kDiskIno) {
    fuse_reply_err(req, ino == FUSE_ROOT_ID ? EISDIR : ENOENT);
    return;
  }
  // No page cache between the loop device and the model: every request of
  // the loop device reaches us, as it would reach the disk.
  fi->direct_io = 1;
  fi->keep_cache = 0;
  // close() is not a durability point; only fsync is.
  fi->noflush = 1;
  fuse_reply_open(req, fi);
}

void op_read(fuse_req_t req, fuse_ino_t, size_t size, off_t off, fuse_file_info*) {
  DiskFs* fs = fs_of(req);
  HandlerCpu cpu(fs);
  fs->on_read(req, size, off);
}

void op_write(fuse_req_t req, fuse_ino_t, const char* buf, size_t size, off_t off, fuse_file_info*) {
  DiskFs* fs = fs_of(req);
  HandlerCpu cpu(fs);
  fs->on_write(req, buf, size, off);
}

void op_flush(fuse_req_t req, fuse_ino_t, fuse_file_info*) { fuse_reply_err(req, 0); }

void op_release(fuse_req_t req, fuse_ino_t, fuse_file_info*) { fuse_reply_err(req, 0); }

void op_fsync(fuse_req_t req, fuse_ino_t, int datasync, fuse_file_info*) {
  DiskFs* fs = fs_of(req);
  HandlerCpu cpu(fs);
  fs->on_fsync(req, datasync);
}

void op_fallocate(fuse_req_t req, fuse_ino_t, int mode, off_t off, off_t len, fuse_file_info*) {
  DiskFs* fs = fs_of(req);
  HandlerCpu cpu(fs);
  fs->on_fallocate(req, mode, off, len);
}

void op_statfs(fuse_req_t req, fuse_ino_t) {
  struct statvfs sv;
  memset(&sv, 0, sizeof(sv));
  sv.f_bsize = kAlign;
  sv.f_frsize = kAlign;
  sv.f_blocks = fs_of(req)->size() / kAlign;
  sv.f_files = 2;
  sv.f_namemax = 255;
  fuse_reply_statfs(req, &sv);
}

fuse_lowlevel_ops make_ops() {
  fuse_lowlevel_ops o;
  memset(&o, 0, sizeof(o));
  o.init = op_init;
  o.lookup = op_lookup;
  o.getattr = op_getattr;
  o.setattr = op_setattr;
  o.readdir = op_readdir;
  o.open = op_open;
  o.read = op_read;
  o.write = op_write;
  o.flush = op_flush;
  o.release = op_release;
  o.fsync = op_fsync;
  o.fallocate = op_fallocate;
  o.statfs = op_statfs;
  return o;
}

}  // namespace

// One request in flight: the model's verdict and the backing I/O, in either
// order; the second to finish replies.
struct DiskFs::Io final : ModelWaiter {
  enum Kind { kRead, kWrite, kStatus };
  DiskFs* fs = nullptr;
  fuse_req_t req = nullptr;
  Kind kind = kStatus;
  char* buf = nullptr;
  size_t n = 0, want = 0;
  int err = 0;
  uint64_t undo_seq = 0;  // a write the undo log holds the pre-image of
  bool flush = false;
  uint64_t flush_ticket = 0;
  std::atomic<int> parts{2};

  void model_done() override { part_done(); }
  // Set before the submit; `n` is the I/O's to write meanwhile.
  bool light() const override { return kind != kRead || want <= (64u << 10); }
  void part_done() {
    if (parts.fetch_sub(1, std::memory_order_acq_rel) == 1) fs->finish(this);
  }
};

const fuse_lowlevel_ops* DiskFs::ops() {
  static const fuse_lowlevel_ops o = make_ops();
  return &o;
}

DiskFs::DiskFs(const DiskFsConfig& conf, ModelDriver* driver) : conf_(conf), driver_(driver) {}

DiskFs::~DiskFs() {
  if (dfd_ >= 0) close(dfd_);
  if (fd_ >= 0) close(fd_);
}

bool DiskFs::open_image(std::string* err) {
  fd_ = open(conf_.image.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    *err = fmt::format("cannot open the image {}: {}", conf_.image, strerror(errno));
    return false;
  }
  struct stat st;
  if (fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    *err = fmt::format("the image {} is not a regular file", conf_.image);
    return false;
  }
  if (static_cast<uint64_t>(st.st_size) > conf_.size) {
    *err = fmt::format("the image {} holds {} bytes, more than --size {}: refusing to shrink it",
                       conf_.image, st.st_size, conf_.size);
    return false;
  }
  if (static_cast<uint64_t>(st.st_size) < conf_.size && ftruncate(fd_, static_cast<off_t>(conf_.size)) != 0) {
    *err = fmt::format("cannot extend the image {} to {} bytes: {}", conf_.image, conf_.size, strerror(errno));
    return false;
  }
  if (conf_.direct_backing) {
    dfd_ = open(conf_.image.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC);
    if (dfd_ < 0) {
      *err = fmt::format("cannot open the image {} with O_DIRECT: {}", conf_.image, strerror(errno));
      return false;
    }
  }
  if (!conf_.undo_path.empty()) {
    undo_ = std::make_unique<DiskUndoLog>();
    if (!undo_->open(conf_.undo_path, conf_.image, conf_.size, err)) return false;
  }
  return true;
}

bool DiskFs::cut(const DiskUndoLog::CutOptions& opt, DiskUndoLog::CutReport* report, std::string* err) {
  if (!undo_) {
    *err = "this model runs without --powercut-undo: it cannot cut";
    return false;
  }
  powered_off_ = true;
  return undo_->cut(opt, report, err);
}

int DiskFs::backing_fd(uint64_t off, uint64_t len) const {
  if (dfd_ >= 0 && off % kAlign == 0 && len % kAlign == 0) return dfd_;
  return fd_;
}

bool DiskFs::fill_attr(fuse_ino_t ino, struct stat* st) const {
  memset(st, 0, sizeof(*st));
  st->st_uid = getuid();
  st->st_gid = getgid();
  if (ino == FUSE_ROOT_ID) {
    st->st_ino = FUSE_ROOT_ID;
    st->st_mode = S_IFDIR | 0755;
    st->st_nlink = 2;
    return true;
  }
  if (ino != kDiskIno) return false;
  struct stat img;
  if (fstat(fd_, &img) == 0) {
    st->st_blocks = img.st_blocks;  // what the sparse image really holds
    st->st_atim = img.st_atim;
    st->st_mtim = img.st_mtim;
    st->st_ctim = img.st_ctim;
  }
  st->st_ino = kDiskIno;
  st->st_mode = S_IFREG | 0600;
  st->st_nlink = 1;
  st->st_size = static_cast<off_t>(conf_.size);
  st->st_blksize = kAlign;
  return true;
}

void DiskFs::on_init(fuse_conn_info* conn) {
  proto_major_ = conn->proto_major;
  proto_minor_ = conn->proto_minor;
  // libfuse turns max_write into the INIT reply's max_pages: 1 MiB lets the
  // kernel send one request per 1 MiB bio instead of 128 KiB pieces.
  conn->max_write = conf_.max_request;
  conn->max_read = conf_.max_request;  // must match the max_read mount option
  conn->max_readahead = 0;
  // The loop device's direct I/O arrives as asynchronous direct I/O, which
  // the kernel counts against max_background (default 12): lift it above any
  // queue depth we want to model.
  conn->max_background = 512;
  conn->congestion_threshold = 384;
  if (conn->capable & FUSE_CAP_ASYNC_DIO) conn->want |= FUSE_CAP_ASYNC_DIO;
  conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
  max_write_ = conn->max_write;
  max_read_ = conn->max_read;
  max_background_ = conn->max_background;
  congestion_ = conn->congestion_threshold;
  async_dio_ = (conn->want & FUSE_CAP_ASYNC_DIO) != 0;
}

void DiskFs::finish(Io* io) {
  if (undo_ && !io->err) {
    // Acknowledged before the reply: a flush that the kernel sends once it
    // has seen this reply must find the write acknowledged.
    if (io->undo_seq) undo_->write_acknowledged(io->undo_seq);
    if (io->flush && !undo_->flush_done(io->flush_ticket)) io->err = EIO;
    // Whatever was still on its way when the power went gets no answer but
    // an error.
    if (powered_off_.load()) io->err = EIO;
  }
  switch (io->kind) {
    case Io::kRead:
      if (io->err) fuse_reply_err(io->req, io->err);
      else fuse_reply_buf(io->req, io->buf, io->n);
      break;
    case Io::kWrite:
      if (io->err) fuse_reply_err(io->req, io->err);
      else fuse_reply_write(io->req, io->n);
      break;
    case Io::kStatus:
      fuse_reply_err(io->req, io->err);
      break;
  }
  if (io->err) ++errors_;
  free(io->buf);
  delete io;
}

void DiskFs::on_read(fuse_req_t req, size_t size, off_t off) {
  const uint64_t o = static_cast<uint64_t>(off);
  if (off < 0 || o >= conf_.size || size == 0) {
    fuse_reply_buf(req, nullptr, 0);
    return;
  }
  if (powered_off_.load()) {
    ++errors_;
    fuse_reply_err(req, EIO);
    return;
  }
  const uint64_t len = std::min<uint64_t>(size, conf_.size - o);
  ++reads_;
  read_bytes_ += len;
  uint64_t prev = max_request_.load();
  while (len > prev && !max_request_.compare_exchange_weak(prev, len)) {}
  Io* io = new Io;
  io->fs = this;
  io->req = req;
  io->kind = Io::kRead;
  io->want = len;
  io->buf = static_cast<char*>(aligned_alloc(kAlign, (len + kAlign - 1) / kAlign * kAlign));
  if (!driver_ || driver_->submit(DiskOp::kRead, o, len, io)) io->part_done();
  const int fd = backing_fd(o, len);
  (fd == dfd_ ? direct_ios_ : buffered_ios_)++;
  uint64_t got = 0;
  while (got < len) {
    ssize_t r = pread(fd, io->buf + got, len - got, static_cast<off_t>(o + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      io->err = errno;
      break;
    }
    if (r == 0) {  // the image cannot end before the disk does; read as zeroes
      memset(io->buf + got, 0, len - got);
      got = len;
      break;
    }
    got += static_cast<uint64_t>(r);
  }
  io->n = got;
  io->part_done();
}

void DiskFs::on_write(fuse_req_t req, const char* buf, size_t size, off_t off) {
  const uint64_t o = static_cast<uint64_t>(off);
  if (off < 0 || o + size > conf_.size) {
    ++errors_;
    fuse_reply_err(req, ENOSPC);
    return;
  }
  const uint64_t len = size;
  // The pre-image goes to the undo log before the image changes.
  uint64_t undo_seq = 0;
  if (int e = 0; undo_ && !undo_->begin_write(o, len, &undo_seq, &e)) {
    ++errors_;
    fuse_reply_err(req, e);
    return;
  }
  ++writes_;
  write_bytes_ += len;
  uint64_t prev = max_request_.load();
  while (len > prev && !max_request_.compare_exchange_weak(prev, len)) {}
  Io* io = new Io;
  io->fs = this;
  io->req = req;
  io->kind = Io::kWrite;
  io->undo_seq = undo_seq;
  if (!driver_ || driver_->submit(DiskOp::kWrite, o, len, io)) io->part_done();
  const int fd = backing_fd(o, len);
  (fd == dfd_ ? direct_ios_ : buffered_ios_)++;
  const char* src = buf;
  char* bounce = nullptr;
  if (fd == dfd_ && reinterpret_cast<uintptr_t>(buf) % kAlign != 0) {
    // libfuse's buffer puts the data after the request header: O_DIRECT needs
    // it aligned.
    bounce = static_cast<char*>(aligned_alloc(kAlign, len));
    memcpy(bounce, buf, len);
    src = bounce;
  }
  uint64_t put = 0;
  while (put < len) {
    ssize_t r = pwrite(fd, src + put, len - put, static_cast<off_t>(o + put));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      io->err = r < 0 ? errno : EIO;
      break;
    }
    put += static_cast<uint64_t>(r);
  }
  free(bounce);
  if (undo_) undo_->write_landed(undo_seq);
  io->n = put;
  io->part_done();
}

// The only durability point of the disk. The loop driver announces a write
// cache but no FUA, so the block layer sends a FUA write as the write and then
// a flush (check-model.sh checks this on the host's kernel): the undo log can
// treat every write alike and needs to honour nothing but this fsync.
void DiskFs::on_fsync(fuse_req_t req, int datasync) {
  ++fsyncs_;
  if (powered_off_.load()) {
    ++errors_;
    fuse_reply_err(req, EIO);
    return;
  }
  Io* io = new Io;
  io->fs = this;
  io->req = req;
  io->kind = Io::kStatus;
  if (undo_) {
    io->flush = true;
    io->flush_ticket = undo_->flush_begin();
  }
  if (!driver_ || driver_->submit(DiskOp::kFlush, 0, 0, io)) io->part_done();
  if (conf_.sync_backing) {
    const uint64_t t0 = monotonic_ns();
    if ((datasync ? fdatasync(fd_) : fsync(fd_)) != 0) io->err = errno;
    backing_fsync_ns_ += monotonic_ns() - t0;
  }
  io->part_done();
}

void DiskFs::on_fallocate(fuse_req_t req, int mode, off_t off, off_t length) {
  ++fallocates_;
  const int known = FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE;
  if ((mode & ~known) || off < 0 || length <= 0 || static_cast<uint64_t>(off) >= conf_.size) {
    fuse_reply_err(req, (mode & ~known) ? EOPNOTSUPP : EINVAL);
    return;
  }
  const uint64_t o = static_cast<uint64_t>(off);
  const uint64_t len = std::min<uint64_t>(static_cast<uint64_t>(length), conf_.size - o);
  DiskOp op;
  int backing_mode;
  if (mode & FALLOC_FL_PUNCH_HOLE) {
    // Discard. A disk has no TRIM and charges nothing; the ssd profile a little.
    op = DiskOp::kDiscard;
    backing_mode = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
  } else if (mode & FALLOC_FL_ZERO_RANGE) {
    // Write-zeroes: the device writes every byte.
    op = DiskOp::kWrite;
    backing_mode = FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE;
  } else {
    // Preallocation inside a disk of fixed size: nothing to do.
    fuse_reply_err(req, 0);
    return;
  }
  // A discard or write-zeroes changes the image as a write does, and the
  // cache may lose it as it loses a write.
  uint64_t undo_seq = 0;
  if (int e = 0; undo_ && !undo_->begin_write(o, len, &undo_seq, &e)) {
    ++errors_;
    fuse_reply_err(req, e);
    return;
  }
  Io* io = new Io;
  io->fs = this;
  io->req = req;
  io->kind = Io::kStatus;
  io->undo_seq = undo_seq;
  if (!driver_ || driver_->submit(op, o, len, io)) io->part_done();
  if (fallocate(fd_, backing_mode, static_cast<off_t>(o), static_cast<off_t>(len)) != 0) {
    if (op == DiskOp::kWrite && (errno == EOPNOTSUPP || errno == EINVAL) &&
        fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(o),
                  static_cast<off_t>(len)) == 0) {
      // A hole reads as zeroes too.
    } else {
      io->err = errno;
    }
  }
  if (undo_) undo_->write_landed(undo_seq);
  io->part_done();
}

nlohmann::json DiskFs::stats() const {
  const uint64_t calls = std::max<uint64_t>(1, handler_calls_.load());
  nlohmann::json powercut = nullptr;
  if (undo_) {
    const DiskUndoLog::Stats u = undo_->stats();
    powercut = nlohmann::json{{"undo_file", conf_.undo_path},
                              {"cut", u.cut},
                              {"live_writes", u.live_writes},
                              {"live_payload_bytes", u.live_payload_bytes},
                              {"file_bytes", u.file_bytes},
                              {"logged_writes", u.logged_writes},
                              {"logged_payload_bytes", u.logged_payload_bytes},
                              {"zero_pieces", u.zero_pieces},
                              {"flushes", u.flushes},
                              {"writes_made_durable", u.writes_made_durable},
                              {"truncations", u.truncations},
                              {"compactions", u.compactions}};
  }
  return nlohmann::json{
      {"powercut", powercut},
      {"image", conf_.image},
      {"size", conf_.size},
      {"backing_io", dfd_ >= 0 ? "direct when 4 KiB-aligned, else buffered" : "buffered"},
      {"sync_backing", conf_.sync_backing},
      {"negotiated",
       {{"proto", fmt::format("{}.{}", proto_major_, proto_minor_)},
        {"max_write", max_write_},
        {"max_read", max_read_},
        {"max_background", max_background_},
        {"congestion_threshold", congestion_},
        {"async_dio", async_dio_}}},
      {"reads", reads_.load()},
      {"writes", writes_.load()},
      {"fsyncs", fsyncs_.load()},
      {"fallocates", fallocates_.load()},
      {"errors", errors_.load()},
      {"read_bytes", read_bytes_.load()},
      {"write_bytes", write_bytes_.load()},
      {"max_request_bytes", max_request_.load()},
      {"direct_ios", direct_ios_.load()},
      {"buffered_ios", buffered_ios_.load()},
      {"backing_fsync_ns", backing_fsync_ns_.load()},
      {"handler_cpu_ns", handler_cpu_ns_.load()},
      {"handler_calls", handler_calls_.load()},
      {"handler_cpu_ns_per_request", static_cast<double>(handler_cpu_ns_.load()) / static_cast<double>(calls)},
  };
}

}  // namespace hybridstore::diskmodel
