#include "hybridstore/kv/commit_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <climits>
#include <cstring>
#include <filesystem>
#include <map>

#include <rocksdb/write_batch.h>

#include "hscommon/crc32c.h"
#include "hscommon/encoding.h"
#include "hscommon/log.h"
#include "hybridstore/kv/kv_schema.h"

namespace hybridstore {

namespace {
constexpr uint32_t kJournalMagic = 0x314a5348;  // "HSJ1"
constexpr uint32_t kJournalTag = 0x4a524e4c;    // "JRNL"
constexpr uint8_t kJournalVersion = 1;

uint64_t pad(uint64_t n) { return (n + CommitJournal::kBlock - 1) / CommitJournal::kBlock * CommitJournal::kBlock; }

bool fsync_path(const std::string& p) {
  int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}
}  // namespace

namespace {
uint64_t journal_body_size(const Uuid& fsid, const std::vector<JournalEntryView>& entries) {
  uint64_t body = fsid.size() + varint_size(entries.size());
  for (const auto& e : entries) body += 8 + varint_size(e.batch.size()) + e.batch.size();
  return body;
}
}  // namespace

uint64_t journal_record_size(const Uuid& fsid, const std::vector<JournalEntryView>& entries) {
  return pad(8 + sealed_record_size(journal_body_size(fsid, entries)));
}

std::string encode_journal_record(const Uuid& fsid, const std::vector<JournalEntryView>& entries) {
  // Built in one buffer of the final size: a group's record carries every
  // batch of the group, and the committer builds it on the commit path,
  // where each extra copy of it is time every writer of the group waits.
  const uint64_t body_size = journal_body_size(fsid, entries);
  const uint64_t sealed_size = sealed_record_size(body_size);
  assert(sealed_size <= UINT32_MAX);
  std::string out;
  out.reserve(pad(8 + sealed_size));
  put_fixed32(&out, kJournalMagic);
  put_fixed32(&out, static_cast<uint32_t>(sealed_size));
  append_sealed_record(&out, kJournalTag, kJournalVersion, body_size, [&](std::string* o) {
    o->append(reinterpret_cast<const char*>(fsid.data()), fsid.size());
    put_varint(o, entries.size());
    for (const auto& e : entries) {
      put_fixed64(o, e.seq);
      put_bytes(o, e.batch);
    }
  });
  out.resize(pad(out.size()), '\0');
  return out;
}

std::string encode_journal_record(const Uuid& fsid, const std::vector<JournalEntry>& entries) {
  std::vector<JournalEntryView> views;
  views.reserve(entries.size());
  for (const auto& e : entries) views.push_back({e.seq, e.batch});
  return encode_journal_record(fsid, views);
}

bool decode_journal_record(std::string_view in, const Uuid& fsid, std::vector<JournalEntry>* out, uint64_t* len) {
  if (in.size() < 8 || load_fixed32(in.data()) != kJournalMagic) return false;
  uint64_t n = load_fixed32(in.data() + 4);
  if (n > in.size() - 8) return false;
  uint8_t version;
  std::string_view body;
  if (open_record(kJournalTag, kJournalVersion, in.substr(8, n), &version, &body) != RecordError::kNone)
    return false;
  if (body.size() < fsid.size() || std::memcmp(body.data(), fsid.data(), fsid.size()) != 0) return false;
  Decoder d(body.substr(fsid.size()));
  uint64_t count;
  if (!d.get_varint(&count) || count > body.size()) return false;
  std::vector<JournalEntry> entries;
  uint64_t prev = 0;
  for (uint64_t i = 0; i < count; ++i) {
    JournalEntry e;
    if (!d.get_fixed64(&e.seq) || !d.get_bytes(&e.batch)) return false;
    // Numbers within a record follow each other: anything else is not ours.
    if (e.seq == 0 || (i > 0 && e.seq != prev + 1)) return false;
    prev = e.seq;
    entries.push_back(std::move(e));
  }
  if (!d.done() || entries.empty()) return false;
  *out = std::move(entries);
  *len = pad(8 + n);
  return true;
}

std::string CommitJournal::unusable_ring(const BlockDevice& dev, uint64_t bytes) {
  if (bytes < kMinRingBlocks * kBlock) return "is too small (" + std::to_string(bytes) + " bytes)";
  // Records are written whole blocks at block offsets.
  if (kBlock % dev.alignment() != 0)
    return "is on a device whose alignment (" + std::to_string(dev.alignment()) + " bytes) does not divide " +
           std::to_string(kBlock);
  return "";
}

int CommitJournal::format_region(BlockDevice& ring, std::string* error) {
  const uint64_t size = ring.size();
  AlignedBuffer zeros(std::min<uint64_t>(size, 4ull << 20), 4096, AlignedBuffer::kZeroed);
  for (uint64_t off = 0; off < size; off += zeros.size())
    if (int r = ring.write(off, zeros.data(), std::min<uint64_t>(zeros.size(), size - off)); r < 0) {
      *error = "writing zeros over the commit journal ring on " + ring.path() + ": " + strerror(-r);
      return r;
    }
  if (int r = ring.flush(); r < 0) {
    *error = "syncing the commit journal ring on " + ring.path() + ": " + strerror(-r);
    return r;
  }
  return 0;
}

std::unique_ptr<CommitJournal> CommitJournal::open(const std::string& path, uint64_t size, const Uuid& fsid,
                                                   const Wrap& wrap, std::string* error) {
  namespace fs = std::filesystem;
  DeviceOpenOptions o;
  o.direct_io = true;
  // Plain pwrite and fdatasync: each committer lane blocks on its own
  // record, and the ring needs no reaper thread of its own.
  o.backend = IoBackend::kPosix;
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    // Made under another name and renamed once complete, so a crash while
    // making it never leaves a short or sparse ring.
    size = std::max<uint64_t>(pad(size), kMinRingBlocks * kBlock);
    std::string tmp = path + ".tmp";
    fs::remove(tmp, ec);
    DeviceOpenOptions c = o;
    c.create = true;
    c.create_size = size;
    auto dev = open_block_device(tmp, c, error);
    if (!dev) return nullptr;
    if (format_region(*dev, error) < 0) return nullptr;
    dev.reset();
    if (::rename(tmp.c_str(), path.c_str()) != 0 || !fsync_path(fs::path(path).parent_path().string())) {
      *error = "making the commit journal " + path + ": " + strerror(errno);
      return nullptr;
    }
  }
  auto dev = open_block_device(path, o, error);
  if (!dev) return nullptr;
  // The ring is the file's whole blocks (a file made elsewhere may end in a part of one).
  const uint64_t have = dev->size() / kBlock * kBlock;
  if (std::string why = unusable_ring(*dev, have); !why.empty()) {
    *error = "commit journal " + path + " " + why;
    return nullptr;
  }
  if (wrap) dev = wrap(std::move(dev));
  if (!dev) {
    *error = "commit journal " + path + ": the storage hooks refused the device";
    return nullptr;
  }
  return std::unique_ptr<CommitJournal>(new CommitJournal(std::move(dev), have, fsid));
}

std::unique_ptr<CommitJournal> CommitJournal::open_region(std::unique_ptr<BlockDevice> region, const Uuid& fsid,
                                                          std::string* error) {
  if (!region) {
    *error = "commit journal ring: no device";
    return nullptr;
  }
  const uint64_t size = region->size();
  std::string why = size % kBlock != 0 ? "is not a whole number of " + std::to_string(kBlock) + "-byte blocks (" +
                                             std::to_string(size) + " bytes)"
                                       : unusable_ring(*region, size);
  if (!why.empty()) {
    *error = "commit journal ring on " + region->path() + " " + why;
    return nullptr;
  }
  return std::unique_ptr<CommitJournal>(new CommitJournal(std::move(region), size, fsid));
}

int CommitJournal::replay(rocksdb::DB* db, uint64_t* next_seq, std::string* error) {
  std::string v;
  uint64_t held = 0;
  rocksdb::Status s = db->Get(rocksdb::ReadOptions(), kv::journal_seq_key(), &v);
  if (s.ok()) {
    if (v.size() != 8) {
      *error = "corrupt commit journal number in RocksDB";
      return -EIO;
    }
    held = load_fixed64(v.data());
  } else if (!s.IsNotFound()) {
    *error = "reading the commit journal number: " + s.ToString();
    return -EIO;
  }
  AlignedBuffer ring(size_, 4096, AlignedBuffer::kUninitialized);
  if (int r = dev_->read(0, ring.data(), size_); r < 0) {
    *error = std::string("reading the commit journal: ") + strerror(-r);
    return -EIO;
  }
  std::map<uint64_t, std::string> recorded;
  uint64_t highest = held;
  std::string_view all(ring.data(), size_);
  for (uint64_t off = 0; off < size_;) {
    std::vector<JournalEntry> entries;
    uint64_t len;
    if (!decode_journal_record(all.substr(off), fsid_, &entries, &len)) {
      off += kBlock;
      continue;
    }
    for (auto& e : entries) {
      highest = std::max(highest, e.seq);
      if (e.seq > held) recorded[e.seq] = std::move(e.batch);
    }
    off += len;
  }
  int replayed = 0;
  uint64_t seq = held;
  for (auto it = recorded.find(held + 1); it != recorded.end() && it->first == seq + 1; ++it) {
    rocksdb::WriteBatch b(it->second);
    s = db->Write(rocksdb::WriteOptions(), &b);
    if (!s.ok()) {
      *error = "replaying the commit journal: " + s.ToString();
      return -EIO;
    }
    seq = it->first;
    ++replayed;
  }
  // Numbers past a gap belong to transactions never acknowledged; the next
  // ones handed out must not meet them again in the ring.
  rocksdb::WriteBatch b;
  std::string n;
  put_fixed64(&n, highest);
  b.Put(kv::journal_seq_key(), n);
  rocksdb::WriteOptions wo;
  wo.sync = true;
  s = db->Write(wo, &b);
  if (!s.ok()) {
    *error = "recording the commit journal number: " + s.ToString();
    return -EIO;
  }
  if (replayed) HS_INFO("commit journal: replayed {} transactions ({}..{})", replayed, held + 1, seq);
  if (highest > seq) HS_INFO("commit journal: {} unacknowledged transactions after a gap dropped", highest - seq);
  *next_seq = highest + 1;
  return replayed;
}

uint64_t CommitJournal::reserve(uint64_t len, bool* needs_checkpoint) {
  std::lock_guard<std::mutex> l(mutex_);
  // A record never wraps: it starts over at the ring's beginning.
  if (head_ % size_ + len > size_) head_ += size_ - head_ % size_;
  uint64_t pos = head_ % size_;
  head_ += len;
  *needs_checkpoint = head_ > reusable_;
  return pos;
}

void CommitJournal::checkpoint() {
  std::lock_guard<std::mutex> l(mutex_);
  // Every record reserved so far is in RocksDB, durably: a whole ring's
  // length from here on only overwrites such records.
  reusable_ = head_ + size_;
  if (discard_span_ == 0) return;
  // Under the mutex: a record reserved after this goes past the head, into
  // a span already discarded, never one being discarded.
  const uint64_t head_span = head_ % size_ / discard_span_;
  for (uint64_t s = 0; (s + 1) * discard_span_ <= size_; ++s) {
    if (s == head_span) continue;
    // Advisory: a failed discard only costs the FTL a merge later.
    if (dev_->discard(s * discard_span_, discard_span_) == 0) ++discarded_spans_;
  }
}

void CommitJournal::set_discard_span(uint64_t span) {
  std::lock_guard<std::mutex> l(mutex_);
  discard_span_ = span % kBlock == 0 ? span : 0;
}

uint64_t CommitJournal::discarded_spans() const {
  std::lock_guard<std::mutex> l(mutex_);
  return discarded_spans_;
}

int CommitJournal::write(uint64_t pos, const std::string& record) {
  // O_DIRECT wants the buffer aligned too.
  AlignedBuffer b(record.size(), 4096, AlignedBuffer::kUninitialized);
  std::memcpy(b.data(), record.data(), record.size());
  return dev_->write_durable(pos, b.data(), b.size());
}

}  // namespace hybridstore
