// The FUSE side of hybridstore-diskmodel: a file system holding one regular
// file, `disk`, backed by the image, for a loop device to sit on.
//
// Replies are asynchronous: a handler starts the backing I/O and submits the
// request to the model, and whichever of the two finishes last replies. FUSE
// threads never wait for modelled time, so a handful of them keeps any queue
// depth outstanding, and the backing I/O overlaps the modelled delay instead of
// adding to it.
#pragma once
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "model_driver.h"
#include "testing/disk_undo_log.h"

namespace hybridstore::diskmodel {

struct DiskFsConfig {
  std::string image;
  uint64_t size = 0;
  bool direct_backing = false;  // O_DIRECT on the image for 4 KiB-aligned requests
  bool sync_backing = true;     // an fsync of `disk` also fsyncs the image
  uint32_t max_request = 1 << 20;
  // Power cuts: the undo log of the unflushed writes (empty: no power cuts,
  // and no cost).
  std::string undo_path;
};

class DiskFs {
 public:
  DiskFs(const DiskFsConfig& conf, ModelDriver* driver);  // driver: null = no delay
  ~DiskFs();

  // Creates the image, or extends it (sparse) to the size; refuses to shrink.
  // Starts the undo log when the config names one.
  bool open_image(std::string* err);
  bool can_cut() const { return undo_ != nullptr; }
  // The power cut (DiskUndoLog::cut): every request fails from now on.
  bool cut(const DiskUndoLog::CutOptions& opt, DiskUndoLog::CutReport* report, std::string* err);
  static const fuse_lowlevel_ops* ops();
  nlohmann::json stats() const;

  // ---- for the request handlers ----
  struct Io;
  void finish(Io* io);
  void on_init(fuse_conn_info* conn);
  void on_read(fuse_req_t req, size_t size, off_t off);
  void on_write(fuse_req_t req, const char* buf, size_t size, off_t off);
  void on_fsync(fuse_req_t req, int datasync);
  void on_fallocate(fuse_req_t req, int mode, off_t off, off_t len);
  bool fill_attr(fuse_ino_t ino, struct stat* st) const;
  uint64_t size() const { return conf_.size; }
  void add_handler_cpu(uint64_t ns) { handler_cpu_ns_ += ns; ++handler_calls_; }

 private:
  int backing_fd(uint64_t off, uint64_t len) const;

  DiskFsConfig conf_;
  ModelDriver* driver_;
  int fd_ = -1, dfd_ = -1;
  std::unique_ptr<DiskUndoLog> undo_;
  // Set as the cut starts, before the undo log's own flag: requests check it
  // without taking the log's mutex.
  std::atomic<bool> powered_off_{false};

  // What the kernel and libfuse agreed in INIT.
  unsigned proto_major_ = 0, proto_minor_ = 0, max_write_ = 0, max_read_ = 0;
  unsigned max_background_ = 0, congestion_ = 0;
  bool async_dio_ = false;

  std::atomic<uint64_t> reads_{0}, writes_{0}, fsyncs_{0}, fallocates_{0}, errors_{0};
  std::atomic<uint64_t> read_bytes_{0}, write_bytes_{0}, max_request_{0};
  std::atomic<uint64_t> direct_ios_{0}, buffered_ios_{0};
  std::atomic<uint64_t> backing_fsync_ns_{0};
  std::atomic<uint64_t> handler_cpu_ns_{0}, handler_calls_{0};
};

}  // namespace hybridstore::diskmodel
