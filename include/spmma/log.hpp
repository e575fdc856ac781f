// SPDX-License-Identifier: BSD-3-Clause
// spmma — logging, in the manner of cuBLASLt / cuSPARSELt.
//
// Levels (SPMMA_LOG_LEVEL in the environment, or set_log_level):
//   0 off (default)   1 errors   2 trace (calls that launch work)   3 hints (every slower path
//   a plan takes, once per plan: a B repacked on each run, the fallback kernel, and why)
//   4 info (what each plan decided)   5 API trace (every entry point with its arguments)
// Each level includes the ones below it. Messages go to stderr, or to the file SPMMA_LOG_FILE
// names (or set_log_file), or to a callback (set_log_callback), e.g. Python's logging. Logging
// never changes what runs.
#pragma once
#include <functional>
#include <string>
#include <string_view>

namespace spmma {

enum class LogLevel : int { off = 0, error = 1, trace = 2, hints = 3, info = 4, api = 5 };

void set_log_level(LogLevel level);
LogLevel log_level();
// Appends to `path` ("" = back to stderr). Throws io_error when the file cannot be opened.
void set_log_file(const std::string& path);
// Receives every message at or below the level instead of the stream (nullptr: back to the
// stream). Called from the thread that logs, one message at a time.
using LogCallback = std::function<void(LogLevel level, std::string_view where, std::string_view message)>;
void set_log_callback(LogCallback callback);

namespace detail {
bool log_enabled(LogLevel level);
void log(LogLevel level, std::string_view where, std::string_view message);
}  // namespace detail

}  // namespace spmma
