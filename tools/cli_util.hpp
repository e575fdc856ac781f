// SPDX-License-Identifier: BSD-3-Clause
// Small helpers shared by the CLI commands: checked size arithmetic, strict number parsing,
// output paths that must differ from the inputs and from each other, the progress line of long
// commands, the JSON form of an error.
#pragma once
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <sys/ioctl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "io/files.hpp"
#include "spmma/error.hpp"

namespace spmma::cli {

// a * b for sizes that come from files or the command line; invalid_argument "<what>: a x b
// overflows" instead of undefined behaviour.
inline int64_t checked_mul(int64_t a, int64_t b, const std::string& what) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    fail(Status::invalid_argument, what + ": " + std::to_string(a) + " x " + std::to_string(b) + " overflows 64 bits");
  return r;
}
// A positive decimal integer and nothing else ("64", not "64q", "+64", " 64", "0x40", "1e3").
inline bool parse_positive(std::string_view s, int64_t& out) {
  if (s.empty() || s[0] < '0' || s[0] > '9') return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && out > 0;
}

// A file the command reads or writes, and the option that names it ("IN.npy", "--meta").
struct NamedPath {
  std::string role, path;
};

// Refuses (invalid_argument) an output that is the same file as an input or as another output
// (canonical paths, links followed), and an output whose directory does not exist: before any
// work, so that nothing is overwritten or computed in vain.
inline void require_distinct(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const NamedPath& o = outputs[i];
    if (o.path.empty()) continue;
    for (const NamedPath& in : inputs)
      if (!in.path.empty() && io::same_file(in.path, o.path))
        fail(Status::invalid_argument, o.role + " " + o.path + " is the same file as the input " + in.role + " " + in.path +
                                           ": the output would overwrite it; write to another path");
    for (size_t j = 0; j < i; ++j)
      if (!outputs[j].path.empty() && io::same_file(outputs[j].path, o.path))
        fail(Status::invalid_argument, o.role + " " + o.path + " is the same file as " + outputs[j].role + " " +
                                           outputs[j].path + ": each output needs its own path");
    io::check_output_path(o.path);
  }
}

// The progress line of a command that runs case after case (bench, conform): "spmma bench:
// [3/40] 8192x16x4096 bf16 ...", rewritten in place on stderr. Only where stderr is a terminal:
// a log file or a pipe would collect every intermediate state; off with --quiet. The rows
// themselves go to standard output as each case finishes; clear() before printing one, so that
// a row never lands after the progress text. The destructor clears too: an error message (printed
// after the stack unwinds) then starts on a clean line.
class ProgressLine {
 public:
  ProgressLine(std::string command, bool quiet, bool terminal = isatty(fileno(stderr)) != 0)
      : command_(std::move(command)), on_(!quiet && terminal) {}
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine() { clear(); }

  // Case i (0-based) of total has started; `what` names it.
  void start(size_t i, size_t total, const std::string& what) {
    if (!on_) return;
    std::string line = "spmma " + command_ + ": [" + std::to_string(i + 1) + "/" + std::to_string(total) + "] ";
    // One terminal row at most: "\r\033[K" erases only the row the cursor is on, so a line that
    // wrapped (conform's ids run to 90 characters) would leave its first part behind. The end of
    // `what` is kept: it is what tells one case from the next.
    const size_t room = columns() > line.size() + 8 ? columns() - 1 - line.size() - 4 : 0;
    line += what.size() <= room ? what : "..." + what.substr(what.size() - (room > 3 ? room - 3 : 0));
    std::cerr << "\r\033[K" << line << " ..." << std::flush;
    shown_ = true;
  }
  // Erases the line, if one is shown.
  void clear() {
    if (!shown_) return;
    std::cerr << "\r\033[K" << std::flush;
    shown_ = false;
  }
  bool enabled() const { return on_; }

 private:
  // The terminal's width; 80 where it does not say (a pseudo-terminal without a size).
  static size_t columns() {
    winsize ws{};
    return ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
  }

  std::string command_;
  bool on_ = false, shown_ = false;
};

// The JSON form of an error on standard output, for a caller that asked for JSON (--json):
// {"error": {"status": "invalid_argument", "exit_code": 2, "message": "..."}}. main's errors
// (spmma.cpp) and conform's "no GPU" (exit 77) print the same object.
inline nlohmann::json error_json(const std::string& status, int exit_code, const std::string& message) {
  return {{"error", {{"status", status}, {"exit_code", exit_code}, {"message", message}}}};
}

}  // namespace spmma::cli
