// SPDX-License-Identifier: BSD-3-Clause
// Running the built `spmma` binary from a test, as a user would: one helper for every CLI test
// (test_cli_formats.cpp, test_cli_errors.cpp, test_cli_demo.cpp).
#pragma once
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

#include <sys/wait.h>
#include <unistd.h>

#ifndef SPMMA_CLI_PATH
#error "SPMMA_CLI_PATH must name the spmma binary"
#endif

namespace spmma::test {

struct CliResult {
  int code = -1;  // exit status (124: the time limit ended it)
  std::string out, err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

// A single-quoted shell word.
inline std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// A fresh directory under the system's temporary one, removed with the object.
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    static std::atomic<int> counter{0};
    dir_ = std::filesystem::temp_directory_path() /
           ("spmma_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(dir_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& dir() const { return dir_; }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

// `spmma <args>` with its output captured in `dir`, limited to limit_s seconds (status 124), so
// that a command that hangs fails its test. `redirect` replaces the capture of standard output
// (e.g. ">/dev/full"; then `out` is empty).
inline CliResult run_cli(const TempDir& dir, const std::string& args, int limit_s = 120, const std::string& redirect = "") {
  const std::string out = dir.path("stdout.txt"), err = dir.path("stderr.txt");
  const std::string cmd = "timeout -k 5 " + std::to_string(limit_s) + " " + quote(SPMMA_CLI_PATH) + " " + args + " " +
                          (redirect.empty() ? ">" + quote(out) : redirect) + " 2>" + quote(err);
  const int st = std::system(cmd.c_str());
  CliResult r;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = redirect.empty() ? slurp(out) : "";
  r.err = slurp(err);
  return r;
}

}  // namespace spmma::test
