#include "testing/disk_undo_log.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "hscommon/crc32c.h"
#include "hscommon/encoding.h"

namespace hybridstore {

namespace {

constexpr char kFileMagic[8] = {'H', 'S', 'D', 'M', 'U', 'N', 'D', 'O'};
constexpr uint32_t kEntryMagic = 0x45444e55;  // "UNDE"
constexpr uint32_t kFlagZeros = 1;
// Pre-images are read and logged in pieces of at most this, aligned to it in
// the image, so that no 4 KiB block straddles two pieces of one write.
constexpr uint64_t kChunk = 1 << 20;

bool pread_full(int fd, char* buf, uint64_t len, uint64_t off, int* error) {
  uint64_t got = 0;
  while (got < len) {
    ssize_t r = pread(fd, buf + got, len - got, static_cast<off_t>(off + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      *error = errno;
      return false;
    }
    if (r == 0) {
      *error = 0;  // short: the caller decides what that means
      return false;
    }
    got += static_cast<uint64_t>(r);
  }
  return true;
}

bool pwrite_full(int fd, const char* buf, uint64_t len, uint64_t off, int* error) {
  uint64_t put = 0;
  while (put < len) {
    ssize_t r = pwrite(fd, buf + put, len - put, static_cast<off_t>(off + put));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      *error = r < 0 ? errno : EIO;
      return false;
    }
    put += static_cast<uint64_t>(r);
  }
  return true;
}

std::string file_header(uint64_t image_size) {
  std::string h(kFileMagic, sizeof(kFileMagic));
  put_fixed32(&h, DiskUndoLog::kVersion);
  put_fixed32(&h, static_cast<uint32_t>(DiskUndoLog::kEntryHeaderBytes));
  put_fixed64(&h, image_size);
  put_fixed32(&h, 0);
  put_fixed32(&h, crc32c(0, h.data(), h.size()));
  return h;
}

struct EntryHeader {
  uint32_t magic = 0, flags = 0;
  uint64_t seq = 0, offset = 0, length = 0, payload_bytes = 0;
  uint32_t crc = 0;
};

void encode_entry_header(const EntryHeader& e, char* p) {
  memset(p, 0, DiskUndoLog::kEntryHeaderBytes);
  store_fixed32(p, e.magic);
  store_fixed32(p + 4, e.flags);
  store_fixed64(p + 8, e.seq);
  store_fixed64(p + 16, e.offset);
  store_fixed64(p + 24, e.length);
  store_fixed64(p + 32, e.payload_bytes);
  store_fixed32(p + 44, e.crc);
}

EntryHeader decode_entry_header(const char* p) {
  EntryHeader e;
  e.magic = load_fixed32(p);
  e.flags = load_fixed32(p + 4);
  e.seq = load_fixed64(p + 8);
  e.offset = load_fixed64(p + 16);
  e.length = load_fixed64(p + 24);
  e.payload_bytes = load_fixed64(p + 32);
  e.crc = load_fixed32(p + 44);
  return e;
}

// The checksum covers the header up to the crc field, then the payload.
uint32_t entry_crc(const char* header, const char* payload, uint64_t payload_bytes) {
  uint32_t c = crc32c(0, header, DiskUndoLog::kEntryHeaderBytes - 4);
  return crc32c(c, payload, payload_bytes);
}

}  // namespace

std::string DiskUndoLog::CutReport::describe() const {
  return fmt::format(
      "seed {}: {} unflushed writes ({} in flight, {} torn); {} blocks restored, {} kept; {} bytes restored", seed,
      writes, in_flight, torn, blocks_restored, blocks_kept, bytes_restored);
}

DiskUndoLog::~DiskUndoLog() {
  if (undo_fd_ >= 0) close(undo_fd_);
  if (image_fd_ >= 0) close(image_fd_);
}

bool DiskUndoLog::start_file(int fd, std::string* err) {
  const std::string h = file_header(image_size_);
  int e = 0;
  if (ftruncate(fd, 0) != 0 || !pwrite_full(fd, h.data(), h.size(), 0, &e)) {
    *err = fmt::format("cannot write the undo file {}: {}", path_, strerror(e ? e : errno));
    return false;
  }
  return true;
}

bool DiskUndoLog::open(const std::string& undo_path, const std::string& image_path, uint64_t image_size,
                       std::string* err, uint64_t compact_at) {
  path_ = undo_path;
  image_size_ = image_size;
  compact_at_ = compact_at;
  image_fd_ = ::open(image_path.c_str(), O_RDWR | O_CLOEXEC);
  if (image_fd_ < 0) {
    *err = fmt::format("cannot open the image {}: {}", image_path, strerror(errno));
    return false;
  }
  undo_fd_ = ::open(undo_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (undo_fd_ < 0) {
    *err = fmt::format("cannot open the undo file {}: {}", undo_path, strerror(errno));
    return false;
  }
  struct stat st;
  if (fstat(undo_fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    *err = fmt::format("the undo file {} is not a regular file", undo_path);
    return false;
  }
  append_at_ = kFileHeaderBytes;
  return start_file(undo_fd_, err);
}

bool DiskUndoLog::append_entry(uint64_t seq, uint64_t offset, uint64_t length, const char* payload, bool zeros,
                               uint64_t* file_offset, int* error) {
  const uint64_t payload_bytes = zeros ? 0 : length;
  std::string buf(kEntryHeaderBytes + payload_bytes, '\0');
  EntryHeader e;
  e.magic = kEntryMagic;
  e.flags = zeros ? kFlagZeros : 0;
  e.seq = seq;
  e.offset = offset;
  e.length = length;
  e.payload_bytes = payload_bytes;
  encode_entry_header(e, buf.data());
  if (payload_bytes) memcpy(buf.data() + kEntryHeaderBytes, payload, payload_bytes);
  store_fixed32(buf.data() + kEntryHeaderBytes - 4, entry_crc(buf.data(), buf.data() + kEntryHeaderBytes, payload_bytes));
  if (!pwrite_full(undo_fd_, buf.data(), buf.size(), append_at_, error)) return false;
  *file_offset = append_at_;
  append_at_ += buf.size();
  ++(zeros ? stats_.zero_pieces : stats_.logged_writes);
  stats_.logged_payload_bytes += payload_bytes;
  return true;
}

// With mu_ held. The sparse image's holes are logged as "zeros" without a
// payload: an mkfs over a fresh image then costs the log almost nothing.
bool DiskUndoLog::log_range(uint64_t seq, uint64_t offset, uint64_t length, std::vector<Piece>* pieces,
                            int* error) {
  const uint64_t end = offset + length;
  std::string buf;
  uint64_t pos = offset;
  while (pos < end) {
    off_t data = lseek(image_fd_, static_cast<off_t>(pos), SEEK_DATA);
    uint64_t data_at = data < 0 ? end : std::min<uint64_t>(static_cast<uint64_t>(data), end);
    if (data < 0 && errno != ENXIO) data_at = pos;  // no SEEK_DATA here: read it all
    if (data_at > pos) {
      Piece p{pos, data_at - pos, 0, true};
      if (!append_entry(seq, p.offset, p.length, nullptr, true, &p.file_offset, error)) return false;
      pieces->push_back(p);
      pos = data_at;
      continue;
    }
    off_t hole = lseek(image_fd_, static_cast<off_t>(pos), SEEK_HOLE);
    const uint64_t hole_at = hole < 0 ? end : std::min<uint64_t>(static_cast<uint64_t>(hole), end);
    const uint64_t piece_end = std::min(hole_at, (pos / kChunk + 1) * kChunk);
    Piece p{pos, piece_end - pos, 0, false};
    buf.resize(p.length);
    if (!pread_full(image_fd_, buf.data(), p.length, p.offset, error)) {
      if (*error != 0) return false;
      // Past the image's end reads as zeroes (the image is never shorter).
      p.zeros = true;
    }
    if (!append_entry(seq, p.offset, p.length, buf.data(), p.zeros, &p.file_offset, error)) return false;
    pieces->push_back(p);
    pos = piece_end;
  }
  return true;
}

bool DiskUndoLog::begin_write(uint64_t offset, uint64_t length, uint64_t* seq, int* error) {
  std::lock_guard<std::mutex> lk(mu_);
  if (cut_) {
    *error = EIO;
    return false;
  }
  const uint64_t s = next_seq_++;
  Write w;
  w.offset = offset;
  w.length = length;
  const uint64_t undo_end = append_at_;
  if (!log_range(s, offset, length, &w.pieces, error)) {
    // Nothing of a half-logged write may stay: its pieces would restore a
    // range the image never changed.
    append_at_ = undo_end;
    if (ftruncate(undo_fd_, static_cast<off_t>(undo_end)) != 0) {
      // The next append overwrites what is left past undo_end.
    }
    return false;
  }
  writes_.emplace(s, std::move(w));
  ++landing_;
  *seq = s;
  return true;
}

void DiskUndoLog::write_landed(uint64_t seq) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = writes_.find(seq);
  if (it == writes_.end() || !it->second.landing) return;
  it->second.landing = false;
  if (--landing_ == 0) landed_cv_.notify_all();
}

void DiskUndoLog::write_acknowledged(uint64_t seq) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = writes_.find(seq);
  if (it != writes_.end() && it->second.ack_order == 0) it->second.ack_order = next_ack_++;
}

uint64_t DiskUndoLog::flush_begin() {
  std::lock_guard<std::mutex> lk(mu_);
  return next_ack_;
}

bool DiskUndoLog::flush_done(uint64_t ticket) {
  std::lock_guard<std::mutex> lk(mu_);
  if (cut_) return false;
  ++stats_.flushes;
  forget_durable(ticket);
  return true;
}

void DiskUndoLog::forget_durable(uint64_t ticket) {
  for (auto it = writes_.begin(); it != writes_.end();) {
    if (it->second.ack_order != 0 && it->second.ack_order < ticket) {
      ++stats_.writes_made_durable;
      it = writes_.erase(it);
    } else {
      ++it;
    }
  }
  if (writes_.empty()) {
    if (append_at_ > kFileHeaderBytes && ftruncate(undo_fd_, static_cast<off_t>(kFileHeaderBytes)) == 0) {
      append_at_ = kFileHeaderBytes;
      ++stats_.truncations;
    }
    return;
  }
  compact_if_worth_it();
}

// With mu_ held: every live entry is whole (appends happen under mu_), so
// they can be copied to a fresh file and the file swapped. Under a steady
// load some write is always live at a flush and the file would never empty.
void DiskUndoLog::compact_if_worth_it() {
  uint64_t live = 0;
  for (const auto& [seq, w] : writes_)
    for (const auto& p : w.pieces) live += kEntryHeaderBytes + (p.zeros ? 0 : p.length);
  if (append_at_ <= compact_at_ || append_at_ <= 4 * live) return;
  const std::string tmp = path_ + ".new";
  int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;  // the log stays as it is, only larger
  std::string err;
  bool ok = start_file(fd, &err);
  uint64_t at = kFileHeaderBytes;
  std::map<uint64_t, std::vector<uint64_t>> moved;
  std::string buf;
  for (auto& [seq, w] : writes_) {
    std::vector<uint64_t>& offs = moved[seq];
    for (const auto& p : w.pieces) {
      if (!ok) break;
      const uint64_t n = kEntryHeaderBytes + (p.zeros ? 0 : p.length);
      buf.resize(n);
      int e = 0;
      ok = pread_full(undo_fd_, buf.data(), n, p.file_offset, &e) && pwrite_full(fd, buf.data(), n, at, &e);
      offs.push_back(at);
      at += n;
    }
  }
  if (!ok || rename(tmp.c_str(), path_.c_str()) != 0) {
    close(fd);
    unlink(tmp.c_str());
    return;
  }
  for (auto& [seq, w] : writes_) {
    const auto& offs = moved[seq];
    for (size_t i = 0; i < w.pieces.size(); ++i) w.pieces[i].file_offset = offs[i];
  }
  close(undo_fd_);
  undo_fd_ = fd;
  append_at_ = at;
  ++stats_.compactions;
}

bool DiskUndoLog::read_piece(const Piece& p, uint64_t seq, std::string* payload, std::string* err) const {
  char h[kEntryHeaderBytes];
  int e = 0;
  if (!pread_full(undo_fd_, h, kEntryHeaderBytes, p.file_offset, &e)) {
    *err = fmt::format("undo file {}: cannot read the entry at {}: {}", path_, p.file_offset,
                       e ? strerror(e) : "short file");
    return false;
  }
  const EntryHeader eh = decode_entry_header(h);
  const uint64_t payload_bytes = p.zeros ? 0 : p.length;
  if (eh.magic != kEntryMagic || eh.seq != seq || eh.offset != p.offset || eh.length != p.length ||
      eh.payload_bytes != payload_bytes || eh.flags != (p.zeros ? kFlagZeros : 0)) {
    *err = fmt::format("undo file {}: the entry at {} is not the one logged for write {} ({}+{})", path_,
                       p.file_offset, seq, p.offset, p.length);
    return false;
  }
  payload->resize(payload_bytes);
  if (payload_bytes && !pread_full(undo_fd_, payload->data(), payload_bytes, p.file_offset + kEntryHeaderBytes, &e)) {
    *err = fmt::format("undo file {}: cannot read the pre-image at {}: {}", path_, p.file_offset,
                       e ? strerror(e) : "short file");
    return false;
  }
  if (entry_crc(h, payload->data(), payload_bytes) != eh.crc) {
    *err = fmt::format("undo file {}: the entry at {} fails its checksum", path_, p.file_offset);
    return false;
  }
  return true;
}

bool DiskUndoLog::restore(const Piece& p, const std::string& payload, uint64_t from, uint64_t to, std::string* err) {
  if (from >= to) return true;
  int e = 0;
  if (p.zeros) {
    if (fallocate(image_fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(from),
                  static_cast<off_t>(to - from)) == 0)
      return true;
    const std::string zeros(to - from, '\0');
    if (pwrite_full(image_fd_, zeros.data(), zeros.size(), from, &e)) return true;
  } else if (pwrite_full(image_fd_, payload.data() + (from - p.offset), to - from, from, &e)) {
    return true;
  }
  *err = fmt::format("cannot restore {}+{} of the image: {}", from, to - from, strerror(e ? e : errno));
  return false;
}

bool DiskUndoLog::cut(const CutOptions& opt, CutReport* report, std::string* err) {
  std::unique_lock<std::mutex> lk(mu_);
  if (cut_) {
    *err = "the power is already cut";
    return false;
  }
  cut_ = true;
  stats_.cut = true;
  landed_cv_.wait(lk, [&] { return landing_ == 0; });
  *report = CutReport{};
  report->seed = opt.seed;
  std::mt19937_64 rng(opt.seed);
  std::bernoulli_distribution coin(0.5);
  std::string payload;
  for (auto it = writes_.rbegin(); it != writes_.rend(); ++it) {
    const Write& w = it->second;
    ++report->writes;
    const bool in_flight = w.ack_order == 0;
    report->in_flight += in_flight;
    uint64_t torn_at = w.offset;  // the new data before this stays
    const bool torn = opt.tear && in_flight;
    if (torn) {
      const uint64_t sectors = (w.length + kSector - 1) / kSector;
      const uint64_t keep = std::uniform_int_distribution<uint64_t>(0, sectors)(rng);
      torn_at = std::min(w.offset + keep * kSector, w.offset + w.length);
      ++report->torn;
    }
    // One decision per 4 KiB block of the image for the whole write, even
    // when two of its pieces share the block.
    uint64_t decided_block = UINT64_MAX;
    bool restore_block = true;
    for (const Piece& p : w.pieces) {
      if (!read_piece(p, it->first, &payload, err)) return false;
      const uint64_t end = p.offset + p.length;
      if (torn || opt.keep == Keep::kNone) {
        const uint64_t from = std::max(p.offset, torn_at);
        if (!restore(p, payload, from, end, err)) return false;
        if (from < end) report->bytes_restored += end - from;
        const uint64_t blocks = (end - 1) / kBlock - p.offset / kBlock + 1;
        const uint64_t restored = from < end ? (end - 1) / kBlock - from / kBlock + 1 : 0;
        report->blocks_restored += restored;
        report->blocks_kept += blocks - restored;
        continue;
      }
      for (uint64_t b = p.offset; b < end;) {
        const uint64_t block = b / kBlock;
        const uint64_t b_end = std::min(end, (block + 1) * kBlock);
        if (block != decided_block) {
          decided_block = block;
          restore_block = coin(rng);
          ++(restore_block ? report->blocks_restored : report->blocks_kept);
        }
        if (restore_block) {
          if (!restore(p, payload, b, b_end, err)) return false;
          report->bytes_restored += b_end - b;
        }
        b = b_end;
      }
    }
  }
  if (fsync(image_fd_) != 0) {
    *err = fmt::format("cannot fsync the image after the cut: {}", strerror(errno));
    return false;
  }
  return true;
}

bool DiskUndoLog::is_cut() const {
  std::lock_guard<std::mutex> lk(mu_);
  return cut_;
}

DiskUndoLog::Stats DiskUndoLog::stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  Stats s = stats_;
  s.live_writes = writes_.size();
  for (const auto& [seq, w] : writes_)
    for (const auto& p : w.pieces) s.live_payload_bytes += p.zeros ? 0 : p.length;
  s.file_bytes = append_at_;
  return s;
}

bool DiskUndoLog::scan(const std::string& undo_path, std::vector<Entry>* entries, bool* torn_tail,
                       std::string* err) {
  entries->clear();
  *torn_tail = false;
  int fd = ::open(undo_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *err = fmt::format("cannot open the undo file {}: {}", undo_path, strerror(errno));
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    *err = fmt::format("cannot stat the undo file {}: {}", undo_path, strerror(errno));
    close(fd);
    return false;
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  auto fail = [&](std::string msg) {
    *err = fmt::format("undo file {}: {}", undo_path, msg);
    close(fd);
    return false;
  };
  char fh[kFileHeaderBytes];
  int e = 0;
  if (!pread_full(fd, fh, kFileHeaderBytes, 0, &e)) return fail("shorter than its header: not an undo file");
  if (memcmp(fh, kFileMagic, sizeof(kFileMagic)) != 0) return fail("bad magic: not an undo file");
  if (load_fixed32(fh + 28) != crc32c(0, fh, 28)) return fail("its header fails its checksum");
  if (load_fixed32(fh + 8) != kVersion)
    return fail(fmt::format("version {}, this build reads version {}", load_fixed32(fh + 8), kVersion));
  if (load_fixed32(fh + 12) != kEntryHeaderBytes) return fail("unexpected entry header size");
  uint64_t at = kFileHeaderBytes, last_seq = 0;
  std::string payload;
  while (at < size) {
    char h[kEntryHeaderBytes];
    if (size - at < kEntryHeaderBytes) {
      *torn_tail = true;
      break;
    }
    if (!pread_full(fd, h, kEntryHeaderBytes, at, &e)) return fail(fmt::format("cannot read at {}", at));
    const EntryHeader eh = decode_entry_header(h);
    if (eh.magic != kEntryMagic) {
      // A torn append can leave the file longer than what reached it, as zeroes.
      std::string rest(size - at, '\0');
      if (pread_full(fd, rest.data(), rest.size(), at, &e) && rest.find_first_not_of('\0') == std::string::npos) {
        *torn_tail = true;
        break;
      }
      return fail(fmt::format("no entry at {} (bad magic)", at));
    }
    const bool zeros = eh.flags == kFlagZeros;
    if ((eh.flags & ~kFlagZeros) != 0 || eh.payload_bytes != (zeros ? 0 : eh.length))
      return fail(fmt::format("the entry at {} has inconsistent flags and lengths", at));
    if (eh.payload_bytes > size - at - kEntryHeaderBytes) {
      *torn_tail = true;
      break;
    }
    payload.resize(eh.payload_bytes);
    if (!pread_full(fd, payload.data(), eh.payload_bytes, at + kEntryHeaderBytes, &e))
      return fail(fmt::format("cannot read the payload at {}", at));
    const uint64_t next = at + kEntryHeaderBytes + eh.payload_bytes;
    if (entry_crc(h, payload.data(), eh.payload_bytes) != eh.crc) {
      if (next == size) {
        *torn_tail = true;
        break;
      }
      return fail(fmt::format("the entry at {} fails its checksum", at));
    }
    if (eh.seq < last_seq) return fail(fmt::format("the entry at {} goes back in sequence", at));
    last_seq = eh.seq;
    entries->push_back(Entry{at, eh.seq, eh.offset, eh.length, zeros, payload});
    at = next;
  }
  close(fd);
  return true;
}

}  // namespace hybridstore
