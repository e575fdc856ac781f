// SPDX-License-Identifier: BSD-3-Clause
// Logging (include/spmma/log.hpp): the environment is read once, at the first message or query.
#include "spmma/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <string>

#include "spmma/error.hpp"

namespace spmma {
namespace {

struct Sink {
  std::mutex mu;
  std::atomic<int> level{0};
  FILE* file = nullptr;  // null: stderr
  LogCallback callback;
};

Sink& sink() {
  static Sink* s = [] {
    auto* x = new Sink;  // never destroyed: messages may come from static destructors
    if (const char* v = std::getenv("SPMMA_LOG_LEVEL")) {
      const int l = std::atoi(v);
      x->level = l < 0 ? 0 : (l > 5 ? 5 : l);
    }
    if (const char* f = std::getenv("SPMMA_LOG_FILE"); f && *f) x->file = std::fopen(f, "a");
    return x;
  }();
  return *s;
}

const char* level_name(LogLevel l) {
  switch (l) {
    case LogLevel::error: return "Error";
    case LogLevel::trace: return "Trace";
    case LogLevel::hints: return "Hint";
    case LogLevel::info: return "Info";
    case LogLevel::api: return "Api";
    default: return "Off";
  }
}

}  // namespace

void set_log_level(LogLevel level) {
  const int l = static_cast<int>(level);
  if (l < 0 || l > 5) fail(Status::invalid_argument, "set_log_level: " + std::to_string(l) + " is not a LogLevel (0..5)");
  sink().level = l;
}

LogLevel log_level() { return static_cast<LogLevel>(sink().level.load()); }

void set_log_file(const std::string& path) {
  Sink& s = sink();
  FILE* f = nullptr;
  if (!path.empty() && !(f = std::fopen(path.c_str(), "a")))
    fail(Status::io_error, "set_log_file: cannot open " + path + " for appending");
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.file) std::fclose(s.file);
  s.file = f;
}

void set_log_callback(LogCallback callback) {
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mu);
  s.callback = std::move(callback);
}

namespace detail {

bool log_enabled(LogLevel level) { return level != LogLevel::off && static_cast<int>(level) <= sink().level.load(); }

void log(LogLevel level, std::string_view where, std::string_view message) {
  if (!log_enabled(level)) return;
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.callback) {
    s.callback(level, where, message);
    return;
  }
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
  FILE* out = s.file ? s.file : stderr;
  std::fprintf(out, "[%s][spmma][%s][%.*s] %.*s\n", stamp, level_name(level), static_cast<int>(where.size()),
               where.data(), static_cast<int>(message.size()), message.data());
  std::fflush(out);
}

}  // namespace detail
}  // namespace spmma
