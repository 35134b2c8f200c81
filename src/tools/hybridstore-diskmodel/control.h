// The power-cut control of a running hybridstore-diskmodel: a unix socket the
// model listens on (--control), and the `cut` subcommand that talks to it.
//
// One request per connection, one line each way:
//   cut keep=none|random tear=0|1 seed=N   ->   ok <what the cut did>
//                                          or   error <why>
// The model answers once the image holds the state after the cut and is
// fsynced, so a caller that has its answer can read the image.
#pragma once
#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "testing/disk_undo_log.h"

namespace hybridstore::diskmodel {

std::string format_cut_request(const DiskUndoLog::CutOptions& opt);
bool parse_cut_request(const std::string& line, DiskUndoLog::CutOptions* opt, std::string* err);

class ControlServer {
 public:
  using Handler = std::function<std::string(const std::string& request)>;
  ~ControlServer() { stop(); }
  // Listens on `path` (a stale socket there is replaced; anything else is an
  // error) and serves each request with `handler` on a thread of its own.
  bool start(const std::string& path, Handler handler, std::string* err);
  // Stops serving and removes the socket.
  void stop();

 private:
  void serve();

  std::string path_;
  Handler handler_;
  int fd_ = -1;
  std::atomic<bool> quit_{false};
  std::thread thread_;
};

// `hybridstore-diskmodel cut ...`: argv[0] is "cut". The exit status.
int run_cut_command(int argc, char** argv);

}  // namespace hybridstore::diskmodel
