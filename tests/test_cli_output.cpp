// SPDX-License-Identifier: BSD-3-Clause
// What the CLI prints for programs and people (issue 13, item 8): `spmma bench` prints each row as
// its case finishes, a progress line goes to stderr only where stderr is a terminal (a
// pseudo-terminal made by util-linux's `script` here), --quiet silences it; with --json an error
// is a JSON object on standard output too.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_run.hpp"

namespace {

using spmma::test::CliResult;
using spmma::test::quote;
using spmma::test::TempDir;

const char* kCases = "bench --cpu --reps 1 --types bf16 --shapes 64x16x64,32x16x64";

// `spmma ARGS` with stderr on a pseudo-terminal (stdout to a file): what the terminal showed.
std::string on_terminal(const TempDir& dir, const std::string& args) {
  const std::string shown = dir.path("terminal.txt");
  const std::string inner = quote(SPMMA_CLI_PATH) + " " + args + " >" + quote(dir.path("stdout.txt"));
  const std::string cmd = "timeout -k 5 120 script -q -e -c " + quote(inner) + " /dev/null >" + quote(shown) + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return spmma::test::slurp(shown);
}

TEST(CliBench, RowsStreamAndNoProgressOffATerminal) {
  TempDir dir("bench");
  const CliResult r = spmma::test::run_cli(dir, kCases);
  ASSERT_EQ(r.code, 0) << r.err;
  // Both rows, in order, below the header.
  const size_t header = r.out.find("shape MxNxK"), first = r.out.find("64x16x64"), second = r.out.find("32x16x64");
  ASSERT_NE(header, std::string::npos) << r.out;
  ASSERT_NE(first, std::string::npos) << r.out;
  ASSERT_NE(second, std::string::npos) << r.out;
  EXPECT_LT(header, first);
  EXPECT_LT(first, second);
  // stderr is a file here: the CPU path's note, no progress line.
  EXPECT_EQ(r.err.find("[1/2]"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
}

TEST(CliBench, ProgressOnATerminalUnlessQuiet) {
  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "no `script` (util-linux) for a pseudo-terminal";
  TempDir dir("bench_tty");
  const std::string shown = on_terminal(dir, kCases);
  EXPECT_NE(shown.find("[1/2] 64x16x64 bf16"), std::string::npos) << shown;
  EXPECT_NE(shown.find("[2/2] 32x16x64 bf16"), std::string::npos) << shown;
  const std::string quiet = on_terminal(dir, std::string(kCases) + " --quiet");
  EXPECT_EQ(quiet.find("[1/2]"), std::string::npos) << quiet;
  EXPECT_NE(quiet.find("timing the CPU path"), std::string::npos) << quiet;  // the terminal was there
}

// --json anywhere: an error is also {"error": {"status", "exit_code", "message"}} on standard
// output (the one-line message stays on stderr), for a usage error and for spmma's own.
TEST(CliJson, ErrorsAreJsonToo) {
  TempDir dir("json_err");
  struct Case {
    std::string args, status, says;
  };
  for (const Case& c : {Case{"bench --cpu --reps 0 --json", "invalid_argument", "must be at least 1"},
                        Case{"bench --cpu --bogus --json", "usage", "bogus"},
                        Case{"check " + quote(dir.path("missing.safetensors")) + " --json", "io_error", "missing.safetensors"}}) {
    const CliResult r = spmma::test::run_cli(dir, c.args);
    EXPECT_EQ(r.code, 2) << c.args;
    const auto j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << c.args << ": " << r.out;
    EXPECT_EQ(j["error"]["status"], c.status) << c.args << ": " << r.out;
    EXPECT_EQ(j["error"]["exit_code"], 2);
    EXPECT_NE(j["error"]["message"].get<std::string>().find(c.says), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("spmma: error: "), std::string::npos) << r.err;
  }
  // Without --json, nothing on standard output.
  const CliResult plain = spmma::test::run_cli(dir, "bench --cpu --reps 0");
  EXPECT_EQ(plain.code, 2);
  EXPECT_TRUE(plain.out.empty()) << plain.out;
}

}  // namespace
