// SPDX-License-Identifier: BSD-3-Clause
// The spmma CLI's error contract outside the format commands (issue 8, items 15 and 17): parse
// errors, bench's shapes, rows and rates, and writes that fail. Each command runs as a user
// would run it: the binary at SPMMA_CLI_PATH, small CPU cases only.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_run.hpp"
#include "spmma/detail/gemm_pairs.hpp"
#include "spmma/version.hpp"

namespace fs = std::filesystem;
using spmma::test::CliResult;
using spmma::test::quote;
using spmma::test::slurp;

namespace {

class CliErrors : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return tmp_.path(name); }

  // `redirect` replaces the capture of standard output (e.g. ">/dev/full").
  CliResult run(const std::string& args, const std::string& redirect = "") {
    return spmma::test::run_cli(tmp_, args, 120, redirect);
  }

  static void expect_error(const CliResult& r, const std::vector<std::string>& parts) {
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_EQ(r.err.rfind("spmma: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    for (const auto& p : parts) EXPECT_NE(r.err.find(p), std::string::npos) << "lacks '" << p << "': " << r.err;
  }

  spmma::test::TempDir tmp_{"clierr"};
  const fs::path& dir_ = tmp_.dir();
};

// Every command-line parse error (CLI11 used to exit 104-114 and print two lines): status 2 and
// the documented single line, naming the sub-command.
TEST_F(CliErrors, ParseErrorsAreOneLineWithStatus2) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"", {"subcommand is required"}},
      {"bogus", {"'bogus' is not a command", "prune"}},
      {"--bogus", {"--bogus"}},
      {"check", {"check: ", "IN is required", "spmma check --help"}},
      {"check x.npy --type bf16 --foo", {"check: ", "--foo"}},
      {"check x.npy", {"check: ", "--type"}},
      {"prune x.npy", {"prune: ", "OUT is required"}},
      {"decompress", {"decompress: "}},
      {"decompress a b c", {"decompress: "}},
      {"demo --m abc", {"demo: ", "abc"}},
      {"demo --m", {"demo: ", "--m"}},
      {"bench --reps x", {"bench: ", "x"}},
      {"emulate", {"emulate: "}},
      {"variants --nope", {"variants: ", "--nope"}},
      {"ptx", {"ptx: ", "--target"}},
      {"decompress --cols -3 o.npy", {"decompress: ", "-3"}},
  };
  for (const auto& [args, parts] : cases) {
    SCOPED_TRACE(args);
    expect_error(run(args), parts);
  }
  // --help and --version are not errors.
  EXPECT_EQ(run("--help").code, 0);
  EXPECT_EQ(run("bench --help").code, 0);
  EXPECT_EQ(run("--version").code, 0);
}

// --shapes: each size a positive decimal integer, three of them, nothing else.
TEST_F(CliErrors, BenchShapesAreParsedStrictly) {
  for (const std::string bad : {"64x64x64q", "64x64", "64x64x64x2", "64x64x", "x64x64", "64xx64x64", "0x8x32", "-1x8x32",
                                "+64x64x64", "1e3x8x32", "0x40x8x32", "64 x64x64", "64x64x64,", ",64x64x64", "64x64x64,,64x64x64",
                                "99999999999999999999x1x32", "64x64x64.0"}) {
    SCOPED_TRACE(bad);
    const CliResult r = run("bench --cpu --reps 1 --types bf16 --shapes " + quote(bad));
    expect_error(r, {"--shapes"});
    EXPECT_TRUE(r.out.empty()) << "ran the bench: " << r.out;
  }
  // Upper case X and several shapes are fine.
  const CliResult r = run("bench --cpu --reps 1 --types bf16 --shapes 32X16x64,16x16X32 --json");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).size(), 2u) << r.out;
}

// Every bench record carries its provenance (what it was measured with, the command, the date,
// repetitions and seed) and the dispersion of its timings, so that a table can be reproduced
// and regenerated from the JSON alone; the epilogue options are recorded too.
TEST_F(CliErrors, BenchRecordsCarryProvenanceAndDispersion) {
  const CliResult r = run("bench --cpu --reps 5 --types bf16 --shapes 64x16x64 --bias --activation gelu --out f32 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto arr = nlohmann::json::parse(r.out);
  ASSERT_EQ(arr.size(), 1u);
  const auto& row = arr[0];
  EXPECT_EQ(row["epilogue"], "bias+gelu");
  EXPECT_EQ(row["d_type"], "f32");
  EXPECT_EQ(row["d_order"], "row");
  EXPECT_TRUE(row["verified"].get<bool>()) << row;
  const auto& p = row["provenance"];
  EXPECT_EQ(p["version"], std::string(spmma::version()));
  EXPECT_EQ(p["commit"], std::string(spmma::commit()));
  EXPECT_EQ(p["device"], "CPU");
  EXPECT_EQ(p["reps"], 5);
  EXPECT_TRUE(p["warmup"].is_number() && p["seed"].is_number()) << p;
  EXPECT_NE(p["command"].get<std::string>().find("bench --cpu --reps 5"), std::string::npos) << p;
  EXPECT_TRUE(std::regex_match(p["date_utc"].get<std::string>(), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)"))) << p;
  EXPECT_TRUE(p["cpu"]["blas"].is_string() && p["build"].contains("cuda")) << p;
  for (const char* side : {"spmma", "cpu_dense"}) {
    const auto& t = row["timing_ms"][side];
    EXPECT_GT(t["min"].get<double>(), 0.0) << side;
    EXPECT_LE(t["min"].get<double>(), t["median"].get<double>()) << side;
    EXPECT_LE(t["median"].get<double>(), t["p90"].get<double>()) << side;
  }
  EXPECT_DOUBLE_EQ(row["timing_ms"]["spmma"]["median"].get<double>(), row["spmma_ms"].get<double>());
  // A column-major D is the GPU path's alone: refused on the CPU, by name.
  const CliResult col = run("bench --cpu --reps 1 --types bf16 --shapes 64x16x64 --d-order col");
  EXPECT_NE(col.code, 0);
  EXPECT_NE(col.err.find("--d-order col is timed on the GPU only"), std::string::npos) << col.err;
}

// A row that is not verified makes bench fail (status 1) and name the row; the table, the JSON
// and --json-out still come out.
TEST_F(CliErrors, BenchExitsOneNamingTheRowsNotVerified) {
  // K = 100 is not a whole number of sparse MMA steps: that case cannot be run, hence not verified.
  const std::string shapes = " --cpu --reps 1 --types bf16,e4m3 --shapes 32x16x64,32x16x100";
  CliResult r = run("bench" + shapes);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("2 of 4 rows not verified"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("32x16x100 bf16"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("32x16x100 e4m3"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("32x16x64 "), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("NO"), std::string::npos) << r.out;
  const std::string j = path("b.json");
  r = run("bench" + shapes + " --json --json-out " + quote(j));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const auto arr = nlohmann::json::parse(r.out);
  ASSERT_EQ(arr.size(), 4u);
  EXPECT_EQ(nlohmann::json::parse(slurp(j)), arr);
  for (const auto& row : arr) EXPECT_EQ(row["verified"], row["k"] == 64) << row;
  // All verified: status 0.
  EXPECT_EQ(run("bench --cpu --reps 1 --types bf16 --shapes 32x16x64").code, 0);
}

// --json-out holds every finished row as soon as it is finished: a run stopped by a time limit
// (here the test's, during a case that takes minutes on the CPU) keeps what it measured.
TEST_F(CliErrors, BenchJsonOutKeepsTheRowsOfAStoppedRun) {
  const std::string j = path("partial.json");
  const CliResult r = spmma::test::run_cli(
      tmp_, "bench --cpu --reps 1 --types bf16 --shapes 32x16x64,8192x8192x8192 --json-out " + quote(j), 15);
  ASSERT_EQ(r.code, 124) << "the 8192^3 case on the CPU was expected to outlast 15 s\n" << r.out << r.err;
  ASSERT_TRUE(fs::exists(j)) << r.err;
  const auto arr = nlohmann::json::parse(slurp(j));
  ASSERT_EQ(arr.size(), 1u) << arr;
  EXPECT_EQ(arr[0]["m"], 32);
  EXPECT_EQ(arr[0]["verified"], true);
}

// On the CPU path bench says the true reason (here --cpu, which a CUDA build used to report as
// "built without CUDA") and prints rates with digits (0.0 TFLOP/s for every CPU row before).
TEST_F(CliErrors, BenchCpuSaysWhyAndPrintsReadableRates) {
  const CliResult r = run("bench --cpu --reps 1 --types bf16 --shapes 64x32x64");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("no GPU (--cpu)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("built without CUDA"), std::string::npos) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  bool found = false;
  while (std::getline(lines, line)) {
    if (line.rfind("64x32x64", 0) != 0) continue;
    found = true;
    std::istringstream cols(line);
    std::string shape, type, spmma, dense;
    cols >> shape >> type >> spmma >> dense;
    EXPECT_GT(std::stod(spmma), 0.0) << line;
    EXPECT_GT(std::stod(dense), 0.0) << line;
    EXPECT_NE(spmma, "0.0") << line;
  }
  EXPECT_TRUE(found) << r.out;
}

// A case too large for this machine is refused before anything is allocated, with the memory it
// needs (std::bad_alloc, or the OOM killer, used to end it).
TEST_F(CliErrors, BenchRefusesShapesThatCannotFit) {
  for (const std::string shape : {"2147483647x512x512", "512x2147483647x512", "2147483647x2147483647x2147483616"}) {
    SCOPED_TRACE(shape);
    expect_error(run("bench --cpu --reps 1 --types bf16 --shapes " + shape), {"bench: M x N x K", "host memory"});
  }
  expect_error(run("bench --cpu --reps 0 --types bf16 --shapes 32x16x64"), {"--reps 0"});
}

// Writes are checked: a full device, a missing directory, a directory, a full standard output.
TEST_F(CliErrors, FailedWritesAreErrors) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  expect_error(run("ptx --target sm_80 --out /dev/full"), {"/dev/full", "write failed"});
  const std::string missing = path("no_such_dir/x.ptx");
  expect_error(run("ptx --target sm_80 --out " + quote(missing)), {missing, "does not exist"});
  expect_error(run("ptx --target sm_80 --out " + quote(dir_.string())), {dir_.string(), "directory"});
  // bench checks --json-out before it measures anything.
  const std::string json_missing = path("no_such_dir/b.json");
  CliResult r = run("bench --cpu --reps 1 --types bf16 --shapes 32x16x64 --json-out " + quote(json_missing));
  expect_error(r, {json_missing});
  EXPECT_TRUE(r.out.empty()) << r.out;
  // (bench's own status line "no GPU (--cpu): ..." comes first on standard error.)
  r = run("bench --cpu --reps 1 --types bf16 --shapes 32x16x64 --json-out /dev/full");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("spmma: error: /dev/full: write failed"), std::string::npos) << r.err;
  // Standard output on a full device.
  expect_error(run("ptx --target sm_80", ">/dev/full"), {"standard output"});
  expect_error(run("variants", ">/dev/full"), {"standard output"});
  // A good write replaces the file whole and leaves no temporary.
  const std::string ptx = path("m.ptx");
  { std::ofstream(ptx) << "old contents that are longer than nothing"; }
  ASSERT_EQ(run("ptx --target sm_80 --out " + quote(ptx)).code, 0);
  EXPECT_EQ(slurp(ptx).rfind(".version", 0), 0u) << slurp(ptx).substr(0, 80);
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".spmma-tmp"), std::string::npos) << e.path();
}

}  // namespace

// ---------------------------------------------------------------- issue 13, item 2: one version

// The version is written once (project(spmma VERSION ...)); the header, the library and the CLI
// say the same, with the commit and the CUDA side of the build.
TEST_F(CliErrors, VersionIsOneWithCommitAndCuda) {
  EXPECT_STREQ(spmma::version(), SPMMA_VERSION_STRING);
  EXPECT_EQ(std::string(SPMMA_VERSION_STRING), std::to_string(SPMMA_VERSION_MAJOR) + "." +
                                                   std::to_string(SPMMA_VERSION_MINOR) + "." +
                                                   std::to_string(SPMMA_VERSION_PATCH));
  const std::string commit = spmma::commit();
  EXPECT_FALSE(commit.empty());
  EXPECT_EQ(commit.find_first_of(" \n\""), std::string::npos) << commit;
  const spmma::BuildInfo b = spmma::build_info();
  EXPECT_EQ(b.version, SPMMA_VERSION_STRING);
  EXPECT_EQ(b.commit, commit);
  std::string want = "spmma " + b.version + " (commit " + commit + "), ";
  if (b.cuda) {
    EXPECT_FALSE(b.cuda_version.empty());
    EXPECT_FALSE(b.architectures.empty());
    want += "CUDA " + b.cuda_version + ", architectures " + b.architectures;
  } else {
    want += "built without CUDA";
  }
  const CliResult r = run("--version");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, want + "\n");
}

// ---------------------------------------------------------------- issue 13, item 5: spmma info

// Text and JSON say the same things; the JSON has every documented field; the logging level in
// force is the one the environment sets. On a machine without a usable GPU the GPU list is empty
// and the reason Device::automatic runs on the CPU is given.
TEST_F(CliErrors, InfoReportsBuildDevicesBlasAndLogging) {
  CliResult r = run("info");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind(std::string("spmma ") + spmma::version() + " (commit " + spmma::commit() + ")\n", 0), 0u)
      << r.out;
  for (const char* part : {"\nbuild: ", "\nCPU: ", "BLAS: ", "\nlogging: level 0, to stderr"})
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
  r = run("info --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("version"), spmma::version());
  EXPECT_EQ(j.at("commit"), spmma::commit());
  const spmma::BuildInfo b = spmma::build_info();
  EXPECT_EQ(j.at("build").at("cuda"), b.cuda);
  EXPECT_EQ(j.at("build").at("architectures"), b.architectures);
  EXPECT_GT(j.at("cpu").at("threads").get<int>(), 0);
  EXPECT_FALSE(j.at("cpu").at("blas").get<std::string>().empty());
  EXPECT_EQ(j.at("logging").at("level"), 0);
  EXPECT_TRUE(j.at("logging").at("file").is_null());
  ASSERT_TRUE(j.at("gpus").is_array());
  if (j.at("gpus").empty()) {
    EXPECT_FALSE(j.at("gpu_fallback_reason").get<std::string>().empty());
  } else {
    for (const auto& g : j.at("gpus")) {
      if (g.contains("why")) continue;  // a GPU the build's kernels do not load on
      ASSERT_EQ(g.at("kernels").size(), std::size(spmma::detail::kGemmPairs));
      for (const auto& k : g.at("kernels")) EXPECT_TRUE(k.at("kernel").is_string() || k.contains("why")) << k.dump();
    }
  }
  // The level in force, as the environment sets it (logging never changes what runs).
  ::setenv("SPMMA_LOG_LEVEL", "3", 1);  // the child inherits it
  r = run("info --json");
  ::unsetenv("SPMMA_LOG_LEVEL");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).at("logging").at("level"), 3);
}
