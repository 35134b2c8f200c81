#include "hybridstore/store/store_kvfs_fsck.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/transaction_log.h>

#include "hscommon/encoding.h"
#include "hybridstore/kv/commit_journal.h"
#include "hybridstore/kv/kv_schema.h"

namespace hybridstore {

namespace {

// RocksDB's directory in the kvfs (KvDevice::kDbDir without its slash).
constexpr const char* kDb = "db";

void error(FsckReport* rep, std::string msg) {
  ++rep->errors;
  if (rep->problems.size() < 1000) rep->problems.push_back("kvfs: " + std::move(msg));
}

void warning(FsckReport* rep, std::string msg) {
  ++rep->warnings;
  if (rep->problems.size() < 1000) rep->problems.push_back("kvfs: warning: " + std::move(msg));
}

// RocksDB names its files by path ("/000012.sst", "/db/000012.sst"); the
// kvfs has them in one directory by their last component.
std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool is_options_file(const std::string& name) {
  static const std::string kPrefix = "OPTIONS-";
  if (name.rfind(kPrefix, 0) != 0 || name.size() == kPrefix.size()) return false;
  return std::all_of(name.begin() + kPrefix.size(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

int read_whole(KvFs* fs, const std::string& dir, const std::string& name, std::string* out, std::string* why) {
  std::unique_ptr<KvFsReadableFile> f;
  if (int r = fs->open_readable(dir, name, &f, why); r < 0) return r;
  // CURRENT is one short line; anything much longer is not a CURRENT.
  const uint64_t n = std::min<uint64_t>(f->size(), 4096);
  out->assign(n, '\0');
  uint64_t got = 0;
  if (int r = f->read(0, n, out->data(), &got, why); r < 0) return r;
  out->resize(got);
  return 0;
}

// Reads the file whole in pieces, so that a bad range is named and the rest
// is still read. The kvfs has no read cache (docs/kvfs.md 3.5), so every
// byte comes from the device.
void read_file_whole(KvFs* fs, const std::string& dir, const std::string& name, FsckReport* rep) {
  std::unique_ptr<KvFsReadableFile> f;
  std::string why;
  if (int r = fs->open_readable(dir, name, &f, &why); r < 0) {
    // Deleted by RocksDB since the listing: nothing left to read.
    if (r != -ENOENT) error(rep, fmt::format("{}/{} cannot be opened for reading: {}", dir, name, why));
    return;
  }
  constexpr uint64_t kPiece = 1 << 20;
  AlignedBuffer buf(kPiece, 4096, AlignedBuffer::kUninitialized);
  const uint64_t size = f->size();
  uint64_t bad_from = 0, bad_to = 0;
  std::string bad_why;
  auto report_bad = [&] {
    if (bad_to > bad_from)
      error(rep, fmt::format("{}/{}: bytes [{:#x}, {:#x}) cannot be read: {}", dir, name, bad_from, bad_to, bad_why));
    bad_from = bad_to = 0;
  };
  for (uint64_t off = 0; off < size;) {
    const uint64_t n = std::min(kPiece, size - off);
    uint64_t got = 0;
    why.clear();
    int r = f->read(off, n, buf.data(), &got, &why);
    if (r < 0 || got != n) {
      if (bad_to != off) {
        report_bad();
        bad_from = off;
        bad_why = r < 0 ? (why.empty() ? strerror(-r) : why) : fmt::format("short read of {} bytes", got);
      }
      bad_to = off + n;
    } else {
      rep->bytes_verified += n;
    }
    off += n;
  }
  report_bad();
}

// Which live tables fail their checksums, each by name; RocksDB's own check
// stops at the first.
void verify_tables(rocksdb::DB* db, const std::vector<rocksdb::LiveFileMetaData>& tables, FsckReport* rep) {
  rocksdb::Status all = db->VerifyChecksum();
  if (all.ok()) return;
  const rocksdb::Options options = db->GetOptions();
  size_t named = 0;
  for (const auto& t : tables) {
    rocksdb::SstFileReader reader(options);
    const std::string path = t.db_path + "/" + base_name(t.name);
    rocksdb::Status s = reader.Open(path);
    if (s.ok()) s = reader.VerifyChecksum();
    if (s.ok()) continue;
    ++named;
    error(rep, fmt::format("RocksDB table {}/{} fails verification: {}", kDb, base_name(t.name), s.ToString()));
  }
  if (named == 0) error(rep, "RocksDB's VerifyChecksum failed: " + all.ToString());
}

}  // namespace

void check_kvfs_files(rocksdb::DB* db, KvFs* fs, bool deep, FsckReport* rep, std::vector<std::string>* changes) {
  if (rocksdb::Status s = db->PauseBackgroundWork(); !s.ok()) {
    error(rep, "RocksDB's background work could not be paused to list its files: " + s.ToString());
    return;
  }
  // What RocksDB needs, by name in its directory, and what kind of file.
  std::map<std::string, std::string> needed;
  std::vector<rocksdb::LiveFileMetaData> tables;
  db->GetLiveFilesMetaData(&tables);
  for (const auto& t : tables) needed[base_name(t.name)] = "live table";
  rocksdb::VectorLogPtr wals;
  if (rocksdb::Status s = db->GetSortedWalFiles(wals); !s.ok()) {
    error(rep, "RocksDB's WAL files could not be listed: " + s.ToString());
  } else {
    for (const auto& w : wals)
      if (w->Type() == rocksdb::kAliveLogFile) needed[base_name(w->PathName())] = "WAL";
  }
  // RocksDB's list leaves out a WAL nothing was written to yet, and the
  // current one often is.
  std::unique_ptr<rocksdb::LogFile> current_wal;
  if (db->GetCurrentWalFile(&current_wal).ok() && current_wal) needed[base_name(current_wal->PathName())] = "WAL";
  needed["CURRENT"] = "CURRENT";
  needed["IDENTITY"] = "IDENTITY";
  std::string current, why;
  if (read_whole(fs, kDb, "CURRENT", &current, &why) == 0) {
    while (!current.empty() && (current.back() == '\n' || current.back() == '\r')) current.pop_back();
    if (current.rfind("MANIFEST-", 0) != 0 || current.find('/') != std::string::npos)
      error(rep, fmt::format("{}/CURRENT does not name a MANIFEST: \"{}\"", kDb, current.substr(0, 64)));
    else
      needed[current] = "MANIFEST CURRENT names";
  }

  std::set<std::string> present;  // in kDb
  bool have_options = false;
  std::vector<std::pair<std::string, std::string>> orphans;  // (dir, name)
  for (const std::string& dir : fs->list_dirs()) {
    std::vector<std::string> names;
    if (int r = fs->list(dir, &names, &why); r < 0) {
      error(rep, fmt::format("directory {} cannot be listed: {}", dir, why));
      continue;
    }
    for (const std::string& name : names) {
      if (dir == kDb) {
        present.insert(name);
        // RocksDB keeps the latest options files and deletes older ones itself.
        if (is_options_file(name)) {
          have_options = true;
          continue;
        }
        if (needed.count(name)) continue;
      }
      orphans.emplace_back(dir, name);
    }
  }
  for (const auto& [name, what] : needed)
    if (!present.count(name)) error(rep, fmt::format("{} {}/{} is missing from the KV file system", what, kDb, name));
  if (!have_options) error(rep, fmt::format("no OPTIONS file in {}", kDb));

  for (const auto& [dir, name] : orphans) {
    uint64_t size = 0;
    fs->file_size(dir, name, &size, &why);
    ++rep->kvfs_orphans;
    warning(rep, fmt::format("{}/{} ({} bytes) is no file RocksDB uses: an orphan", dir, name, size));
    if (!changes) continue;
    if (int r = fs->unlink(dir, name, &why); r < 0) {
      error(rep, fmt::format("orphan {}/{} could not be deleted: {}", dir, name, why));
      continue;
    }
    changes->push_back(fmt::format("deleted orphan kvfs file {}/{} ({} bytes)", dir, name, size));
  }
  if (changes && !orphans.empty() && fs->sync_log(&why) < 0)
    error(rep, "the orphans' deletion could not be made durable: " + why);

  if (deep) {
    for (const std::string& dir : fs->list_dirs()) {
      std::vector<std::string> names;
      if (fs->list(dir, &names, &why) < 0) continue;  // reported above
      for (const std::string& name : names) read_file_whole(fs, dir, name, rep);
    }
    verify_tables(db, tables, rep);
  }
  if (rocksdb::Status s = db->ContinueBackgroundWork(); !s.ok())
    error(rep, "RocksDB's background work could not be resumed: " + s.ToString());
}

void check_kvfs_ring(rocksdb::DB* db, BlockDevice* dev, const std::vector<KvFsExtent>& ring, const Uuid& fsid,
                     FsckReport* rep) {
  if (ring.empty()) return;
  uint64_t size = 0;
  for (const KvFsExtent& e : ring) size += e.length;
  AlignedBuffer buf(size, 4096, AlignedBuffer::kUninitialized);
  uint64_t at = 0;
  for (const KvFsExtent& e : ring) {
    if (int r = dev->read(e.offset, buf.data() + at, e.length); r < 0) {
      error(rep, fmt::format("the commit journal's ring at {:#x}+{:#x} cannot be read: {}", e.offset, e.length,
                             strerror(-r)));
      return;
    }
    at += e.length;
  }
  // What a mount would replay: the walk from the tail RocksDB keeps.
  uint64_t held = 0;
  JournalTail from;
  std::string why;
  if (CommitJournal::read_start(db, true, &held, &from, &why) < 0) {
    error(rep, why);
    return;
  }
  const JournalWalk w =
      walk_journal_ring(std::string_view(buf.data(), size), fsid, from, held, [](JournalRecord&) {});
  rep->kvfs_ring_records = w.records;
  rep->kvfs_ring_seq = w.last;
  rep->kvfs_ring_walk_end = w.end;
  const uint64_t highest = w.last, records = w.records;
  if (highest > held)
    error(rep, fmt::format("the commit journal's ring holds number {} ({} records), above RocksDB's {}: "
                           "transactions the mount's replay did not bring into RocksDB",
                           highest, records, held));
}

}  // namespace hybridstore
