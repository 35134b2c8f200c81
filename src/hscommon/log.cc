#include "hscommon/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace hybridstore {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kWarn)};
std::mutex g_mutex;
FILE* g_file = nullptr;
std::function<void(LogLevel, const std::string&)> g_sink;
const char* kNames[] = {"error", "warn", "info", "debug"};
}  // namespace

void set_log_level(LogLevel level) { g_level = static_cast<int>(level); }
LogLevel log_level() { return static_cast<LogLevel>(g_level.load(std::memory_order_relaxed)); }

bool set_log_file(const std::string& path) {
  std::lock_guard<std::mutex> l(g_mutex);
  if (g_file) fclose(g_file);
  g_file = nullptr;
  if (path.empty()) return true;
  g_file = fopen(path.c_str(), "a");
  return g_file != nullptr;
}

bool parse_log_level(const std::string& s, LogLevel* out) {
  for (int i = 0; i < 4; ++i)
    if (s == kNames[i]) {
      *out = static_cast<LogLevel>(i);
      return true;
    }
  return false;
}

void set_log_sink(std::function<void(LogLevel, const std::string&)> sink) {
  std::lock_guard<std::mutex> l(g_mutex);
  g_sink = std::move(sink);
}

void log_line(LogLevel level, const std::string& msg) {
  {
    std::function<void(LogLevel, const std::string&)> sink;
    {
      std::lock_guard<std::mutex> l(g_mutex);
      sink = g_sink;
    }
    if (sink) {
      sink(level, msg);
      return;
    }
  }
  auto now = std::chrono::system_clock::now();
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  time_t secs = static_cast<time_t>(us / 1000000);
  struct tm tm;
  localtime_r(&secs, &tm);
  char ts[32];
  strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
  std::lock_guard<std::mutex> l(g_mutex);
  FILE* f = g_file ? g_file : stderr;
  fprintf(f, "%s.%06lld hybridstore %s: %s\n", ts, static_cast<long long>(us % 1000000),
          kNames[static_cast<int>(level)], msg.c_str());
  fflush(f);
}

}  // namespace hybridstore
