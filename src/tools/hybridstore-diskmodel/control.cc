#include "control.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace hybridstore::diskmodel {

namespace {

constexpr size_t kMaxLine = 4096;

bool socket_address(const std::string& path, sockaddr_un* addr, std::string* err) {
  memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr->sun_path)) {
    *err = fmt::format("control socket path '{}': must be 1..{} bytes", path, sizeof(addr->sun_path) - 1);
    return false;
  }
  memcpy(addr->sun_path, path.c_str(), path.size());
  return true;
}

void set_timeout(int fd, int optname, int seconds) {
  timeval tv{seconds, 0};
  setsockopt(fd, SOL_SOCKET, optname, &tv, sizeof(tv));
}

// Reads up to the first newline; false on a timeout, an error or a line too long.
bool read_line(int fd, std::string* line) {
  line->clear();
  char c;
  while (line->size() < kMaxLine) {
    ssize_t r = read(fd, &c, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return !line->empty() && r == 0;
    if (c == '\n') return true;
    line->push_back(c);
  }
  return false;
}

bool write_all(int fd, const std::string& s) {
  size_t put = 0;
  while (put < s.size()) {
    ssize_t r = write(fd, s.data() + put, s.size() - put);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    put += static_cast<size_t>(r);
  }
  return true;
}

}  // namespace

std::string format_cut_request(const DiskUndoLog::CutOptions& opt) {
  return fmt::format("cut keep={} tear={} seed={}", opt.keep == DiskUndoLog::Keep::kNone ? "none" : "random",
                     opt.tear ? 1 : 0, opt.seed);
}

bool parse_cut_request(const std::string& line, DiskUndoLog::CutOptions* opt, std::string* err) {
  std::istringstream in(line);
  std::string word;
  if (!(in >> word) || word != "cut") {
    *err = fmt::format("unknown request '{}' (expected: cut keep=none|random tear=0|1 seed=N)", line);
    return false;
  }
  bool have_keep = false, have_tear = false, have_seed = false;
  while (in >> word) {
    const auto eq = word.find('=');
    const std::string key = word.substr(0, eq), value = eq == std::string::npos ? "" : word.substr(eq + 1);
    if (key == "keep" && (value == "none" || value == "random")) {
      opt->keep = value == "none" ? DiskUndoLog::Keep::kNone : DiskUndoLog::Keep::kRandom;
      have_keep = true;
    } else if (key == "tear" && (value == "0" || value == "1")) {
      opt->tear = value == "1";
      have_tear = true;
    } else if (key == "seed" && !value.empty() && value.find_first_not_of("0123456789") == std::string::npos &&
               value.size() <= 20) {
      errno = 0;
      opt->seed = strtoull(value.c_str(), nullptr, 10);
      if (errno == ERANGE) {
        *err = fmt::format("seed {} does not fit 64 bits", value);
        return false;
      }
      have_seed = true;
    } else {
      *err = fmt::format("bad argument '{}' (expected keep=none|random, tear=0|1, seed=N)", word);
      return false;
    }
  }
  if (!have_keep || !have_tear || !have_seed) {
    *err = "a cut request names keep, tear and seed";
    return false;
  }
  return true;
}

bool ControlServer::start(const std::string& path, Handler handler, std::string* err) {
  sockaddr_un addr;
  if (!socket_address(path, &addr, err)) return false;
  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      *err = fmt::format("control socket {} exists and is not a socket: refusing to replace it", path);
      return false;
    }
    unlink(path.c_str());  // left by a model that did not exit cleanly
  }
  fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd_, 4) != 0) {
    *err = fmt::format("cannot listen on the control socket {}: {}", path, strerror(errno));
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    return false;
  }
  chmod(path.c_str(), 0600);
  path_ = path;
  handler_ = std::move(handler);
  thread_ = std::thread([this] { serve(); });
  return true;
}

void ControlServer::serve() {
  pthread_setname_np(pthread_self(), "diskmodel-ctl");
  while (!quit_.load()) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    set_timeout(c, SO_RCVTIMEO, 5);
    set_timeout(c, SO_SNDTIMEO, 5);
    std::string line;
    const std::string reply = read_line(c, &line) ? handler_(line) : "error no request line";
    write_all(c, reply + "\n");
    close(c);
  }
}

void ControlServer::stop() {
  if (!thread_.joinable()) return;
  quit_ = true;
  thread_.join();
  close(fd_);
  fd_ = -1;
  unlink(path_.c_str());
}

int run_cut_command(int argc, char** argv) {
  std::string control, keep = "none";
  bool tear = false;
  uint64_t seed = 0;
  CLI::App app{
      "hybridstore-diskmodel cut: cut the power of a running model (started with --powercut-undo and\n"
      "--control). Its writes since the last flush are lost: all of them (--keep none) or each 4 KiB\n"
      "block with probability 1/2 (--keep random); with --tear, the writes in flight keep a random\n"
      "prefix of 512-byte sectors. Every request fails from then on. Returns once the image holds the\n"
      "state after the cut and is fsynced; prints what was lost and the seed.",
      "hybridstore-diskmodel cut"};
  app.add_option("--control", control, "the model's control socket (its --control)")->required();
  app.add_option("--keep", keep, "what of the unflushed writes survives: none, or random (per 4 KiB block)")
      ->check(CLI::IsMember({"none", "random"}))
      ->capture_default_str();
  app.add_flag("--tear", tear, "writes in flight keep a random sector prefix instead of following --keep");
  auto* seed_opt = app.add_option("--seed", seed, "seed of the random choices (default: a random one, printed)");
  CLI11_PARSE(app, argc, argv);
  if (!seed_opt->count()) seed = std::random_device{}() | (static_cast<uint64_t>(std::random_device{}()) << 32);

  DiskUndoLog::CutOptions opt;
  opt.keep = keep == "none" ? DiskUndoLog::Keep::kNone : DiskUndoLog::Keep::kRandom;
  opt.tear = tear;
  opt.seed = seed;
  std::string err;
  sockaddr_un addr;
  if (!socket_address(control, &addr, &err)) {
    fprintf(stderr, "hybridstore-diskmodel cut: %s\n", err.c_str());
    return 2;
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    fprintf(stderr, "hybridstore-diskmodel cut: cannot reach the model at %s: %s\n", control.c_str(),
            strerror(errno));
    if (fd >= 0) close(fd);
    return 1;
  }
  // The restore can take a while on a large cache; a model that never
  // answers is stuck, not slow.
  set_timeout(fd, SO_RCVTIMEO, 600);
  std::string reply;
  const bool sent = write_all(fd, format_cut_request(opt) + "\n");
  const bool got = sent && read_line(fd, &reply);
  close(fd);
  if (!got) {
    fprintf(stderr, "hybridstore-diskmodel cut: no answer from the model at %s (seed %llu)\n", control.c_str(),
            static_cast<unsigned long long>(seed));
    return 1;
  }
  if (reply.rfind("ok ", 0) != 0) {
    fprintf(stderr, "hybridstore-diskmodel cut: %s (seed %llu)\n", reply.c_str(),
            static_cast<unsigned long long>(seed));
    return 1;
  }
  printf("cut (keep=%s%s): %s\n", keep.c_str(), tear ? ", tear" : "", reply.substr(3).c_str());
  return 0;
}

}  // namespace hybridstore::diskmodel
