// Leveled logging to stderr (or a file), formatted with {fmt}.
#pragma once
#include <fmt/format.h>

#include <functional>
#include <string>

namespace hybridstore {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

void set_log_level(LogLevel level);
LogLevel log_level();
// Redirects log lines to `path` (appended); empty path means stderr.
bool set_log_file(const std::string& path);
void log_line(LogLevel level, const std::string& msg);
bool parse_log_level(const std::string& s, LogLevel* out);
// Sends log lines to `sink` instead of stderr or the file (the Ceph adapter
// routes them into Ceph's log); an empty function restores the default.
void set_log_sink(std::function<void(LogLevel, const std::string&)> sink);

}  // namespace hybridstore

// The format string is checked against the arguments at compile time: a
// mismatch in a rarely taken log line must not surface as an exception.
#define HS_LOG(level, format_string, ...)                                                  \
  do {                                                                                     \
    if (static_cast<int>(level) <= static_cast<int>(::hybridstore::log_level()))            \
      ::hybridstore::log_line(level, fmt::format(FMT_STRING(format_string), ##__VA_ARGS__)); \
  } while (0)
#define HS_ERROR(...) HS_LOG(::hybridstore::LogLevel::kError, __VA_ARGS__)
#define HS_WARN(...) HS_LOG(::hybridstore::LogLevel::kWarn, __VA_ARGS__)
#define HS_INFO(...) HS_LOG(::hybridstore::LogLevel::kInfo, __VA_ARGS__)
#define HS_DEBUG(...) HS_LOG(::hybridstore::LogLevel::kDebug, __VA_ARGS__)
