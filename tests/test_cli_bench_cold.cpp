// SPDX-License-Identifier: BSD-3-Clause
// `spmma bench --l2 hot|cold|both` and `--sweep decode` (issue 12, decode and small batches), on
// this machine's CPU path: the options parse, the decode preset expands to its 35 shapes (through
// --dry-run, which lists the cases without measuring), the CPU path refuses the cold L2 by name,
// hot rows carry the weight-stream fields, the cuSPARSELt merge matches the L2 mode; and the
// arithmetic that sizes a cold rotation (bench::cold_copies). The cold timing itself needs a GPU.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../tools/bench_gpu.hpp"
#include "cli_run.hpp"

namespace {

using spmma::test::CliResult;
using spmma::test::quote;
using spmma::test::TempDir;

// The preset, written out here rather than taken from the code under test.
std::vector<std::string> expected_decode_shapes() {
  std::vector<std::string> out;
  for (const char* mk : {"4096x4096", "14336x4096", "4096x14336", "28672x8192", "11008x4096"})
    for (int n : {1, 8, 16, 32, 64, 128, 256}) {
      const std::string s(mk);
      const size_t x = s.find('x');
      out.push_back(s.substr(0, x) + "x" + std::to_string(n) + "x" + s.substr(x + 1));
    }
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

void expect_refused(const CliResult& r, const std::vector<std::string>& parts) {
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("spmma: error: "), std::string::npos) << r.err;
  for (const auto& p : parts) EXPECT_NE(r.err.find(p), std::string::npos) << "lacks '" << p << "': " << r.err;
}

TEST(CliBenchCold, DecodeSweepExpandsToThe35Shapes) {
  TempDir dir("bench_cold");
  const std::vector<std::string> want = expected_decode_shapes();
  ASSERT_EQ(want.size(), 35u);
  // Two types: type outer, shape inner, one hot row each.
  const CliResult r = spmma::test::run_cli(dir, "bench --cpu --sweep decode --l2 hot --types bf16,e4m3 --dry-run");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::vector<std::string> got = lines_of(r.out);
  ASSERT_EQ(got.size(), 2 * 35u + 1) << r.out;
  for (size_t t = 0; t < 2; ++t)
    for (size_t i = 0; i < 35; ++i)
      EXPECT_EQ(got[t * 35 + i], want[i] + (t == 0 ? " bf16" : " e4m3") + " hot") << "line " << t * 35 + i;
  EXPECT_EQ(got.back(), "spmma bench --dry-run: 70 cases, 70 rows, on the CPU");
  // The library-side list is the same (the test binary sees the header).
  const auto shapes = spmma::bench::decode_sweep_shapes();
  ASSERT_EQ(shapes.size(), 35u);
  for (size_t i = 0; i < shapes.size(); ++i)
    EXPECT_EQ(std::to_string(shapes[i][0]) + "x" + std::to_string(shapes[i][1]) + "x" + std::to_string(shapes[i][2]),
              want[i]);
  // --json: the same cases as objects, N = 1 included (the CLI's shape rules take it).
  const CliResult j = spmma::test::run_cli(dir, "bench --cpu --sweep decode --l2 hot --types bf16 --dry-run --json");
  ASSERT_EQ(j.code, 0) << j.err;
  const auto arr = nlohmann::json::parse(j.out);
  ASSERT_EQ(arr.size(), 35u);
  EXPECT_EQ(arr[0], (nlohmann::json{{"m", 4096}, {"n", 1}, {"k", 4096}, {"type", "bf16"}, {"l2", "hot"}}));
  EXPECT_EQ(arr[34], (nlohmann::json{{"m", 11008}, {"n", 256}, {"k", 4096}, {"type", "bf16"}, {"l2", "hot"}}));
}

// The cold L2 is the GPU's: the CPU path refuses cold and both by name, before measuring (the
// decode sweep's default, both, included), and says what to give instead.
TEST(CliBenchCold, CpuPathRefusesTheColdL2) {
  TempDir dir("bench_cold");
  for (const std::string mode : {"cold", "both"}) {
    SCOPED_TRACE(mode);
    const CliResult r = spmma::test::run_cli(dir, "bench --cpu --reps 1 --types bf16 --shapes 64x16x64 --l2 " + mode);
    expect_refused(r, {"bench: --l2 " + mode, "GPU only", "(--cpu)", "--l2 hot"});
    EXPECT_TRUE(r.out.empty()) << "measured something: " << r.out;
    // --dry-run lists only what could run: refused alike.
    expect_refused(spmma::test::run_cli(dir, "bench --cpu --shapes 64x16x64 --dry-run --l2 " + mode), {"GPU only"});
  }
  const CliResult sweep = spmma::test::run_cli(dir, "bench --cpu --sweep decode --types bf16");
  expect_refused(sweep, {"--l2 both (the default of --sweep decode)", "GPU only", "--l2 hot"});
  EXPECT_TRUE(sweep.out.empty()) << sweep.out;
}

TEST(CliBenchCold, OptionsAreChecked) {
  TempDir dir("bench_cold");
  expect_refused(spmma::test::run_cli(dir, "bench --cpu --l2 warm --shapes 64x16x64"), {"--l2", "warm"});
  expect_refused(spmma::test::run_cli(dir, "bench --cpu --sweep prefill --l2 hot"), {"--sweep", "prefill"});
  expect_refused(spmma::test::run_cli(dir, "bench --cpu --sweep decode --l2 hot --shapes 64x16x64"),
                 {"--sweep decode and --shapes both name the shapes"});
  // Without --sweep and --l2 the default is hot, as before the cold mode.
  const CliResult r = spmma::test::run_cli(dir, "bench --cpu --types bf16 --shapes 64x16x64 --dry-run");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(lines_of(r.out).front(), "64x16x64 bf16 hot");
}

// Hot rows on the CPU carry the new fields: the L2 mode, the weight bytes as stored and their
// rate, the dense weight's, no copy rate (the GPU's); N = 1 runs and verifies.
TEST(CliBenchCold, RowsCarryTheWeightStream) {
  TempDir dir("bench_cold");
  const CliResult r = spmma::test::run_cli(dir, "bench --cpu --reps 1 --types bf16 --shapes 64x16x64,64x1x64 --json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto arr = nlohmann::json::parse(r.out);
  ASSERT_EQ(arr.size(), 2u);
  for (const auto& row : arr) {
    EXPECT_TRUE(row["verified"].get<bool>()) << row;
    EXPECT_EQ(row["l2"], "hot");
    EXPECT_EQ(row["l2_rotation"]["copies"], 1);
    EXPECT_EQ(row["l2_rotation"]["between_bytes"], 0);
    const auto weight = row["weight_bytes"].get<uint64_t>();
    EXPECT_EQ(weight, row["value_bytes"].get<uint64_t>() + row["metadata_bytes"].get<uint64_t>());
    EXPECT_EQ(row["value_bytes"], 64 * 64 / 2 * 2);  // half of A's bf16 elements kept
    EXPECT_GT(row["metadata_bytes"].get<uint64_t>(), 0u);
    // GB/s = bytes / (ms·1e-3) / 1e9.
    EXPECT_NEAR(row["weight_gbps"].get<double>(), weight / (row["spmma_ms"].get<double>() * 1e6),
                1e-9 * row["weight_gbps"].get<double>());
    EXPECT_EQ(row["dense_weight_bytes"], 64 * 64 * 4);  // the f32 A that cblas_sgemm reads
    EXPECT_GT(row["dense_weight_gbps"].get<double>(), 0.0);
    EXPECT_TRUE(row["copy_gbps"].is_null()) << row;
    EXPECT_TRUE(row["weight_of_copy"].is_null()) << row;
    EXPECT_EQ(row["provenance"]["l2"], "hot");
  }
  EXPECT_EQ(arr[1]["n"], 1);
  // The table has the L2 column.
  const CliResult t = spmma::test::run_cli(dir, "bench --cpu --reps 1 --types bf16 --shapes 64x16x64");
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find(" l2 "), std::string::npos) << t.out;
  EXPECT_NE(t.out.find(" hot "), std::string::npos) << t.out;
}

// --cusparselt-json: a row takes the record of its own L2 mode; a record without "l2" (before the
// cold mode) is hot.
TEST(CliBenchCold, CusparseltMergeMatchesTheL2Mode) {
  TempDir dir("bench_cold");
  const std::string peers = dir.path("cslt.json");
  auto write = [&](const nlohmann::json& j) { std::ofstream(peers) << j.dump(); };
  auto merged = [&]() {
    const CliResult r = spmma::test::run_cli(
        dir, "bench --cpu --reps 1 --types bf16 --shapes 64x16x64 --json --cusparselt-json " + quote(peers));
    EXPECT_EQ(r.code, 0) << r.err;
    return nlohmann::json::parse(r.out).at(0)["cusparselt_tflops"];
  };
  const nlohmann::json cold = {{"m", 64},        {"n", 16},      {"k", 64},
                               {"type", "bf16"}, {"l2", "cold"}, {"cusparselt_tflops", 1.5}};
  nlohmann::json legacy = cold, hot = cold;
  legacy.erase("l2");
  legacy["cusparselt_tflops"] = 2.5;
  hot["l2"] = "hot";
  hot["cusparselt_tflops"] = 3.5;
  write(nlohmann::json::array({cold, legacy}));
  EXPECT_EQ(merged(), 2.5);
  write(nlohmann::json::array({hot, cold}));
  EXPECT_EQ(merged(), 3.5);
  write(nlohmann::json::array({cold}));
  EXPECT_TRUE(merged().is_null());
}

// A cold rotation's copies: the other copies read between two uses of one copy reach twice the
// L2, with no more copies than that needs, at least 2, at most the cap.
TEST(BenchColdCopies, CoverTwiceTheL2) {
  using spmma::bench::cold_copies;
  const uint64_t l2 = 50ull << 20;  // the H100's
  for (uint64_t per :
       {uint64_t{1}, uint64_t{4096}, uint64_t{10} << 20, (uint64_t{10} << 20) + 4096, uint64_t{100} << 20,
        (uint64_t{100} << 20) + 1, uint64_t{36} << 20, uint64_t{470} << 20, uint64_t{1} << 40}) {
    SCOPED_TRACE(per);
    const int c = cold_copies(per, l2);
    ASSERT_GE(c, 2);
    EXPECT_GE(static_cast<uint64_t>(c - 1) * per, 2 * l2);
    if (c > 2) EXPECT_LT(static_cast<uint64_t>(c - 2) * per, 2 * l2);
  }
  EXPECT_EQ(cold_copies(uint64_t{10} << 20, l2), 11);  // 4096 x 4096 e4m3: 8 MiB values + 2 MiB metadata
  EXPECT_EQ(cold_copies(uint64_t{1} << 40, l2), 2);
  EXPECT_EQ(cold_copies(4096, l2, 64), 64);
  EXPECT_EQ(cold_copies(0, l2), 2);
}

// The verification bound of an f32 D grows as sqrt(K) past K = 4096 (rounding differences of
// two f32 sums, a random walk), and stays far below what a stage read wrong gives (5% or more):
// tf32 4096x32x14336 in 2 parts of K measured 0.00106-0.00115 against cuBLAS on the H200.
TEST(BenchErrorBound, F32GrowsAsSqrtK) {
  using spmma::bench::error_bound;
  using spmma::ElemType;
  EXPECT_EQ(error_bound(ElemType::f32, 16), 1e-3);
  EXPECT_EQ(error_bound(ElemType::f32, 4096), 1e-3);
  EXPECT_DOUBLE_EQ(error_bound(ElemType::f32, 16384), 2e-3);
  EXPECT_GT(error_bound(ElemType::f32, 14336), 0.00115);
  EXPECT_LT(error_bound(ElemType::f32, 1 << 20), 0.05);
  // The other D types' bounds are their rounding, whatever K.
  EXPECT_EQ(error_bound(ElemType::bf16, 1 << 20), error_bound(ElemType::bf16, 16));
  EXPECT_EQ(error_bound(ElemType::s32, 1 << 20), 0.0);
}

}  // namespace
