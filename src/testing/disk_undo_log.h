// The volatile write cache of hybridstore-diskmodel, for power cuts: writes go
// to the image at once, and what a power cut would lose is taken back from an
// undo log. Before a write (or a write-zeroes, or a discard) reaches the
// image, the pre-image of its range is appended to the undo file; a flush
// drops the entries of the writes acknowledged before it arrived. A cut puts
// back, newest first, the pre-images of every write not yet flushed: all of
// them (keep = none), or each 4 KiB block of each write with probability 1/2
// (keep = random); with `tear`, a write still in flight keeps a random prefix
// of whole 512-byte sectors and loses the rest. From the cut on, every request
// fails.
//
// An undo log rather than a cache in memory: reads need no lookup, the image
// always holds what the device shows, and a cut costs only the restore.
//
// Kept free of FUSE so a unit test can drive it over plain files. Thread-safe:
// the FUSE workers call it concurrently. Pre-images are read and appended
// under one mutex, in sequence order; the writes themselves run outside it.
//
// The undo file: a 32-byte header (magic "HSDMUNDO", version, entry header
// size, image size, crc32c) and entries, each a 48-byte header (magic, flags,
// sequence number, image offset, length, payload bytes, crc32c over the
// header and the payload) and the pre-image (none when the range was a hole
// of the sparse image: the entry says "zeros"). scan() reads a file back and
// tells a torn last entry (a crash while appending) from damage.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace hybridstore {

class DiskUndoLog {
 public:
  enum class Keep { kNone, kRandom };
  struct CutOptions {
    Keep keep = Keep::kNone;
    bool tear = false;
    uint64_t seed = 0;
  };
  struct CutReport {
    uint64_t seed = 0;
    uint64_t writes = 0;             // unflushed writes at the cut
    uint64_t in_flight = 0;          // of them, not acknowledged yet
    uint64_t torn = 0;               // in-flight writes cut to a sector prefix
    uint64_t blocks_restored = 0;    // 4 KiB blocks (or parts) put back to their pre-image
    uint64_t blocks_kept = 0;        // and left holding the new data
    uint64_t bytes_restored = 0;
    std::string describe() const;
  };
  struct Stats {
    uint64_t live_writes = 0, live_payload_bytes = 0, file_bytes = 0;
    uint64_t logged_writes = 0, logged_payload_bytes = 0, zero_pieces = 0;
    uint64_t flushes = 0, writes_made_durable = 0, truncations = 0, compactions = 0;
    bool cut = false;
  };
  // One entry as scan() found it.
  struct Entry {
    uint64_t file_offset = 0, seq = 0, offset = 0, length = 0;
    bool zeros = false;
    std::string payload;
  };

  static constexpr uint32_t kVersion = 1;
  static constexpr uint64_t kFileHeaderBytes = 32;
  static constexpr uint64_t kEntryHeaderBytes = 48;
  static constexpr uint64_t kBlock = 4096;
  static constexpr uint64_t kSector = 512;

  DiskUndoLog() = default;
  ~DiskUndoLog();
  DiskUndoLog(const DiskUndoLog&) = delete;
  DiskUndoLog& operator=(const DiskUndoLog&) = delete;

  // Opens the image (its own descriptor: buffered reads of pre-images, and
  // the restore) and starts a fresh undo file at `undo_path`, replacing any
  // left by an earlier run: an earlier run's cache is not this run's.
  // `compact_at`: the undo file is rewritten with only its live entries once
  // it grows past this many bytes (and past four times those entries).
  bool open(const std::string& undo_path, const std::string& image_path, uint64_t image_size, std::string* err,
            uint64_t compact_at = 64ull << 20);

  // Before a write of [offset, offset + length) touches the image: logs its
  // pre-image. false after a cut (*error = EIO) or when the log cannot be
  // written (*error = errno); the write must then not reach the image.
  bool begin_write(uint64_t offset, uint64_t length, uint64_t* seq, int* error);
  // The write's I/O on the image has returned (whatever its result).
  void write_landed(uint64_t seq);
  // Just before the write's reply: from now on a flush that arrives covers it.
  void write_acknowledged(uint64_t seq);

  // A flush arrives: returns what flush_done() needs.
  uint64_t flush_begin();
  // The flush is about to be acknowledged: the writes acknowledged before it
  // arrived are durable. false after a cut (the flush must fail: it did not
  // complete before the power went).
  bool flush_done(uint64_t ticket);

  // The power cut. Waits for writes landing on the image, restores, fsyncs
  // the image; every call after it fails. false with *err when the undo file
  // is damaged or the image cannot be written (the image is then in an
  // undefined state) or when the cut already happened.
  bool cut(const CutOptions& opt, CutReport* report, std::string* err);
  bool is_cut() const;

  Stats stats() const;

  // Reads an undo file back: every entry in order. A torn last entry (its
  // header or payload short or failing its checksum at the end of the file)
  // sets *torn_tail and ends the scan; anything else that does not parse is
  // an error.
  static bool scan(const std::string& undo_path, std::vector<Entry>* entries, bool* torn_tail, std::string* err);

 private:
  struct Piece {
    uint64_t offset = 0, length = 0, file_offset = 0;
    bool zeros = false;
  };
  struct Write {
    uint64_t offset = 0, length = 0;
    std::vector<Piece> pieces;
    bool landing = true;      // begin_write .. write_landed
    uint64_t ack_order = 0;   // 0: not acknowledged yet
  };

  bool log_range(uint64_t seq, uint64_t offset, uint64_t length, std::vector<Piece>* pieces, int* error);
  bool append_entry(uint64_t seq, uint64_t offset, uint64_t length, const char* payload, bool zeros,
                    uint64_t* file_offset, int* error);
  bool start_file(int fd, std::string* err);
  bool read_piece(const Piece& p, uint64_t seq, std::string* payload, std::string* err) const;
  bool restore(const Piece& p, const std::string& payload, uint64_t from, uint64_t to, std::string* err);
  void forget_durable(uint64_t ticket);
  void compact_if_worth_it();

  mutable std::mutex mu_;
  std::condition_variable landed_cv_;
  std::string path_;
  int undo_fd_ = -1, image_fd_ = -1;
  uint64_t image_size_ = 0, compact_at_ = 0;
  uint64_t append_at_ = kFileHeaderBytes;
  uint64_t next_seq_ = 1, next_ack_ = 1;
  uint64_t landing_ = 0;
  bool cut_ = false;
  std::map<uint64_t, Write> writes_;  // by sequence number: every write not yet durable
  Stats stats_;
};

}  // namespace hybridstore
