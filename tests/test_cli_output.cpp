// SPDX-License-Identifier: BSD-3-Clause
// What the CLI prints for programs and people (issue 13, item 8): `spmma bench` and `spmma
// conform` print each row as its case finishes, a progress line goes to stderr only where stderr
// is a terminal (a pseudo-terminal made by util-linux's `script` here), --quiet silences it; every
// command takes --json and then prints one JSON document on standard output, an error included.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_run.hpp"
#include "spmma/npy.hpp"

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

// stdout of a --json run as one JSON document (failing the test, with the text, when it is not).
nlohmann::json parse_json(const CliResult& r, const std::string& args) {
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << args << ": not one JSON document:\n" << r.out << r.err;
  return j;
}

// Two variants (mma.sp and mma.sp::ordered_metadata), one trial each: seconds on a GPU.
const char* kConformFew = "conform --filter m16n8k32.row.col.f32.bf16.bf16.f32 --trials 1 --wgmma-trials 1";

// conform runs on the GPU only. Where there is none (CI) it exits 77, and with --json its answer
// is still one JSON object on standard output; where there is one, its report.
TEST(CliConform, JsonWithAndWithoutAGpu) {
  TempDir dir("conform_json");
  const std::string args = std::string(kConformFew) + " --json";
  const CliResult r = spmma::test::run_cli(dir, args, 300);
  const nlohmann::json j = parse_json(r, args);
  if (r.code == 77 || r.code == 2) {  // no GPU here; 2: a build without CUDA
    ASSERT_TRUE(j.contains("error")) << r.out;
    EXPECT_EQ(j["error"]["status"], "not_supported") << r.out;
    EXPECT_EQ(j["error"]["exit_code"], r.code) << r.out;
    const std::string says = r.code == 77 ? "no GPU here" : "no CUDA support";
    EXPECT_NE(j["error"]["message"].get<std::string>().find(says), std::string::npos) << r.out;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
    // Without --json the answer is on stderr only; -q/--quiet is an option of conform.
    for (const char* flags : {"", " -q", " --quiet"}) {
      const CliResult plain = spmma::test::run_cli(dir, std::string(kConformFew) + flags);
      EXPECT_EQ(plain.code, r.code) << flags << ": " << plain.err;
      EXPECT_TRUE(plain.out.empty()) << flags << ": " << plain.out;
    }
    return;
  }
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(j["rows"].size(), 2u) << r.out;
  for (const auto& row : j["rows"]) {
    EXPECT_NE(row["id"].get<std::string>().find("m16n8k32.row.col.f32.bf16.bf16.f32"), std::string::npos);
    EXPECT_EQ(row["mismatches"], 0) << row;
    EXPECT_GT(row["trials"].get<int>(), 0) << row;
  }
  EXPECT_EQ(j["summary"]["variants"], 2);
}

// On a GPU: each row on standard output between the table's header and the summary, a progress
// line naming each variant on a terminal's stderr, none with --quiet.
TEST(CliConform, RowsStreamAndProgressOnATerminal) {
  TempDir dir("conform_rows");
  const CliResult r = spmma::test::run_cli(dir, kConformFew, 300);
  if (r.code == 77 || r.code == 2) GTEST_SKIP() << "conform needs a GPU: " << r.err;
  ASSERT_EQ(r.code, 0) << r.err;
  const size_t header = r.out.find("mismatches"), plain = r.out.find("\nmma.sp.sync.aligned.m16n8k32"),
               ordered = r.out.find("\nmma.sp::ordered_metadata.sync.aligned.m16n8k32"),
               summary = r.out.find("2 variants, ");
  ASSERT_NE(header, std::string::npos) << r.out;
  ASSERT_NE(plain, std::string::npos) << r.out;
  ASSERT_NE(ordered, std::string::npos) << r.out;
  ASSERT_NE(summary, std::string::npos) << r.out;
  EXPECT_LT(header, std::min(plain, ordered));
  EXPECT_LT(std::max(plain, ordered), summary);
  EXPECT_EQ(r.err.find("[1/2]"), std::string::npos) << r.err;  // stderr is a file here
  if (std::system("command -v script >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no `script` (util-linux) for a pseudo-terminal";
  const std::string shown = on_terminal(dir, kConformFew);
  EXPECT_NE(shown.find("spmma conform: [1/2] "), std::string::npos) << shown;
  EXPECT_NE(shown.find("spmma conform: [2/2] "), std::string::npos) << shown;
  const std::string quiet = on_terminal(dir, std::string(kConformFew) + " --quiet");
  EXPECT_EQ(quiet.find("[1/2]"), std::string::npos) << quiet;
}

// `spmma ptx --json`: the module's variants are exactly the registry's for the target (as
// `variants --json` lists them), the module text with them; with --out, the file and its size.
TEST(CliJson, Ptx) {
  TempDir dir("json_ptx");
  const CliResult vr = spmma::test::run_cli(dir, "variants --json");
  ASSERT_EQ(vr.code, 0) << vr.err;
  const nlohmann::json all = parse_json(vr, "variants --json");
  std::vector<std::string> want;
  for (const auto& v : all)
    if (v["target"] == "sm_80" && std::stod(v["ptx_isa"].get<std::string>()) <= 9.0)
      want.push_back(v["id"]);  // --max-ptx-isa 90
  ASSERT_FALSE(want.empty());

  const std::string args = "ptx --target sm_80 --json";
  const CliResult r = spmma::test::run_cli(dir, args);
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = parse_json(r, args);
  EXPECT_EQ(j["target"], "sm_80");
  EXPECT_EQ(j["count"], want.size());
  EXPECT_EQ(j["variants"].get<std::vector<std::string>>(), want);
  const std::string ptx = j["ptx"].get<std::string>();
  EXPECT_NE(ptx.find(".version " + j["ptx_isa"].get<std::string>()), std::string::npos) << ptx.substr(0, 200);
  EXPECT_NE(ptx.find(".target sm_80"), std::string::npos) << ptx.substr(0, 200);
  EXPECT_FALSE(j.contains("file"));

  const std::string file = dir.path("m.ptx");
  const std::string args2 = "ptx --target sm_80 --json --out " + quote(file);
  const CliResult w = spmma::test::run_cli(dir, args2);
  ASSERT_EQ(w.code, 0) << w.err;
  const nlohmann::json jw = parse_json(w, args2);
  EXPECT_EQ(jw["file"], file);
  EXPECT_EQ(jw["bytes"], std::filesystem::file_size(file));
  EXPECT_EQ(spmma::test::slurp(file), ptx);
  EXPECT_FALSE(jw.contains("ptx"));
}

// `spmma demo --json`: bench's row fields for the one case, and the demo's own, with the values
// of a 64 x 16 x 64 bf16 product on the CPU.
TEST(CliJson, Demo) {
  TempDir dir("json_demo");
  const std::string args = "demo --cpu --m 64 --n 16 --k 64 --reps 1 --seed 5 --json";
  const CliResult r = spmma::test::run_cli(dir, args);
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = parse_json(r, args);
  EXPECT_EQ(j["m"], 64);
  EXPECT_EQ(j["n"], 16);
  EXPECT_EQ(j["k"], 64);
  EXPECT_EQ(j["type"], "bf16");
  EXPECT_EQ(j["d_type"], "bf16");
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_EQ(j["verified"], true);
  EXPECT_EQ(j["pattern"], "2:4");
  EXPECT_EQ(j["checked_rows"], 64);
  EXPECT_EQ(j["value_bytes"], 64 * 32 * 2);    // half of each row's 64 bf16 values
  EXPECT_EQ(j["metadata_bytes"], 64 * 4 * 2);  // 16 chunks a row, 4 per 16-bit word
  EXPECT_EQ(j["dense_bytes"], 64 * 64 * 2);
  EXPECT_TRUE(j["cublas_tflops"].is_null());
  EXPECT_GT(j["cpu_dense_tflops"].get<double>(), 0);
  EXPECT_GT(j["spmma_ms"].get<double>(), 0);
  EXPECT_LE(j["max_error"].get<double>(), j["error_bound"].get<double>());
  EXPECT_NEAR(j["speedup"].get<double>(), j["dense_ms"].get<double>() / j["spmma_ms"].get<double>(), 1e-9);
  EXPECT_TRUE(j["timing_ms"].contains("cpu_dense")) << j["timing_ms"];
  EXPECT_EQ(j["fallback_reason"], "--cpu");
  EXPECT_EQ(j["provenance"]["seed"], 5);
  EXPECT_NE(j["provenance"]["command"].get<std::string>().find("demo --cpu"), std::string::npos);
  EXPECT_EQ(r.out.find("spmma demo on"), std::string::npos) << r.out;  // no text
}

// prune and decompress of .npy files with --json: what was written, checked against the files.
TEST(CliJson, PruneAndDecompressNpy) {
  TempDir dir("json_npy");
  // 4 x 8 values, one of them 0 (row 1, column 0); every chunk keeps its two largest magnitudes.
  spmma::NpyArray a = spmma::make_npy("<f4", {4, 8});
  for (int64_t i = 0; i < a.size(); ++i)
    spmma::npy_set_value(a, i, i == 8 ? 0.0 : double(i % 5 + 1) * (i % 2 ? -1 : 1));
  const std::string in = dir.path("w.npy"), pruned = dir.path("p.npy");
  spmma::write_npy(in, a);

  std::string args = "prune " + quote(in) + " " + quote(pruned) + " --type bf16 --json";
  CliResult r = spmma::test::run_cli(dir, args);
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = parse_json(r, args);
  EXPECT_EQ(j["input"], in);
  EXPECT_EQ(j["output"], pruned);
  EXPECT_EQ(j["rows"], 4);
  EXPECT_EQ(j["cols"], 8);
  EXPECT_EQ(j["type"], "bf16");
  EXPECT_EQ(j["pattern"], "2:4");
  EXPECT_EQ(j["method"], "magnitude");
  EXPECT_TRUE(j["mask"].is_null());
  EXPECT_EQ(j["nonzeros"], 31);
  EXPECT_EQ(j["nonzeros_kept"], 16);
  EXPECT_EQ(j["dtype"], "<f4");
  EXPECT_EQ(j["bits"], false);

  // By a mask that keeps columns 0 and 1 of each chunk: the 0 at (1, 0) is kept as a 0.
  spmma::NpyArray mask = spmma::make_npy("|u1", {4, 8});
  for (int64_t i = 0; i < mask.size(); ++i) spmma::npy_set_value(mask, i, i % 4 < 2 ? 1 : 0);
  const std::string mask_file = dir.path("mask.npy"), by_mask = dir.path("pm.npy");
  spmma::write_npy(mask_file, mask);
  args = "prune " + quote(in) + " " + quote(by_mask) + " --type bf16 --mask " + quote(mask_file) + " --json";
  r = spmma::test::run_cli(dir, args);
  ASSERT_EQ(r.code, 0) << r.err;
  j = parse_json(r, args);
  EXPECT_EQ(j["method"], "mask");
  EXPECT_EQ(j["mask"], mask_file);
  EXPECT_EQ(j["nonzeros_kept"], 15);

  // decompress from the container, and from --values/--meta as bit patterns.
  const std::string c = dir.path("c.safetensors"), v = dir.path("v.npy"), m = dir.path("m.npy");
  ASSERT_EQ(spmma::test::run_cli(dir, "compress " + quote(pruned) + " --type bf16 --out " + quote(c)).code, 0);
  const std::string pair = " --type bf16 --values " + quote(v) + " --meta " + quote(m);
  ASSERT_EQ(spmma::test::run_cli(dir, "compress " + quote(pruned) + pair).code, 0);
  const std::string back = dir.path("back.npy");
  args = "decompress " + quote(c) + " " + quote(back) + " --json";
  r = spmma::test::run_cli(dir, args);
  ASSERT_EQ(r.code, 0) << r.err;
  j = parse_json(r, args);
  EXPECT_EQ(j["input"]["file"], c);
  EXPECT_EQ(j["output"], back);
  EXPECT_EQ(j["rows"], 4);
  EXPECT_EQ(j["cols"], 8);
  EXPECT_EQ(j["type"], "bf16");
  EXPECT_EQ(j["pattern"], "2:4");
  EXPECT_EQ(j["ordered_metadata"], true);
  EXPECT_EQ(j["dtype"], "<f4");
  EXPECT_EQ(j["bits"], false);
  EXPECT_EQ(j["nonzeros"], 16);
  EXPECT_EQ(spmma::test::slurp(back), spmma::test::slurp(pruned));  // the pruned matrix again, byte for byte

  const std::string back_bits = dir.path("back_bits.npy");
  args =
      "decompress --type bf16 --values " + quote(v) + " --meta " + quote(m) + " " + quote(back_bits) + " --bits --json";
  r = spmma::test::run_cli(dir, args);
  ASSERT_EQ(r.code, 0) << r.err;
  j = parse_json(r, args);
  EXPECT_EQ(j["input"]["values"], v);
  EXPECT_EQ(j["input"]["metadata"], m);
  EXPECT_EQ(j["dtype"], "<u2");
  EXPECT_EQ(j["bits"], true);
  EXPECT_EQ(spmma::read_npy(back_bits).dtype, "<u2");

  // (A compressed checkpoint's JSON report: CliCheckpoint.DecompressJsonReportsEveryTensor.)
}

}  // namespace
