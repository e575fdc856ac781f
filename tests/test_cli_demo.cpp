// SPDX-License-Identifier: BSD-3-Clause
// `spmma demo` (the README's main job), run as a user would, on the CPU path (--cpu) at small
// sizes: every type verifies and prints both times; bad arguments are named.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include "cli_run.hpp"

namespace {

using Result = spmma::test::CliResult;

Result demo(const std::string& args) {
  const spmma::test::TempDir dir("demo");
  return spmma::test::run_cli(dir, "demo " + args);
}

TEST(CliDemo, EveryTypeVerifiesAndIsTimedAgainstDense) {
  for (const char* t : {"bf16", "f16", "tf32", "e4m3", "s8"}) {
    SCOPED_TRACE(t);
    const Result r = demo(std::string("--cpu --reps 1 --m 40 --n 24 --k 256 --type ") + t);
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("CPU backend (--cpu)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("M x N x K = 40 x 24 x 256, A and B " + std::string(t)), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("40 of 40 rows"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("): ok"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("spmma Plan::run"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("cblas_sgemm"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("sparse / dense speed"), std::string::npos) << r.out;
  }
}

TEST(CliDemo, BadArgumentsAreNamed) {
  Result r = demo("--cpu --type u8");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--type u8"), std::string::npos) << r.err;
  r = demo("--cpu --k 100");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("MatmulDesc.k = 100"), std::string::npos) << r.err;
  r = demo("--cpu --m 0");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("MatmulDesc.m = 0"), std::string::npos) << r.err;
  r = demo("--cpu --reps 0");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--reps 0"), std::string::npos) << r.err;
}

// Sizes that cannot fit are refused before anything is allocated, with the memory they would
// need (--m 2147483647 used to end in "unexpected error: std::bad_alloc", status 1).
TEST(CliDemo, SizesThatCannotFitAreRefusedWithTheMemoryNeeded) {
  for (const std::string args : {"--m 2147483647", "--n 2147483647", "--k 2147483616", "--m 1048576 --n 1048576 --k 1048576"}) {
    SCOPED_TRACE(args);
    const Result r = demo("--cpu --reps 1 " + args);
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_EQ(r.err.rfind("spmma: error: demo: --m/--n/--k: M x N x K = ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("of host memory, this machine has"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("bad_alloc"), std::string::npos) << r.err;
  }
}

}  // namespace
