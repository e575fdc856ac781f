// SPDX-License-Identifier: BSD-3-Clause
// The spmma CLI's format commands, run as a user would: the binary at SPMMA_CLI_PATH on .npy
// files in a fresh temporary directory, with fresh random inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_run.hpp"
#include "spmma/npy.hpp"
#include "spmma/safetensors.hpp"
#include "spmma/sparse.hpp"
#include "spmma/types.hpp"

namespace fs = std::filesystem;
using namespace spmma;
using spmma::test::CliResult;
using spmma::test::quote;
using spmma::test::slurp;
using nlohmann::json;

namespace {

struct TypeCase {
  const char* name;
  int chunk;  // dense elements per chunk
  int kept;   // elements kept per chunk
  const char* value_dtype;
  const char* bits_dtype;
};

const TypeCase kTypes[] = {
    {"f16", 4, 2, "<f4", "<u2"},  {"bf16", 4, 2, "<f4", "<u2"}, {"tf32", 2, 1, "<f4", "<u4"},
    {"e4m3", 4, 2, "<f4", "|u1"}, {"e5m2", 4, 2, "<f4", "|u1"}, {"e3m2", 4, 2, "<f4", "|u1"},
    {"e2m3", 4, 2, "<f4", "|u1"}, {"e2m1", 8, 4, "<f4", "|u1"}, {"s8", 4, 2, "|i1", "|u1"},
    {"u8", 4, 2, "|u1", "|u1"},   {"s4", 8, 4, "|i1", "|u1"},   {"u4", 8, 4, "|u1", "|u1"},
};

class CliFormats : public ::testing::Test {
 protected:
  void SetUp() override {
    const unsigned seed = std::random_device{}();
    rng_.seed(seed);
    ::testing::Test::RecordProperty("seed", std::to_string(seed));
    tmp_ = std::make_unique<spmma::test::TempDir>("cli_" + std::to_string(seed));
    dir_ = tmp_->dir();
  }
  void TearDown() override { tmp_.reset(); }
  std::string path(const std::string& name) const { return tmp_->path(name); }

  // Each run is limited (`timeout`: status 124), so that a command that hangs fails its test.
  CliResult run(const std::string& args, int limit_s = 120) { return spmma::test::run_cli(*tmp_, args, limit_s); }

  // A dense rows x cols float32 matrix of random non-zero values that `type` holds non-zero.
  NpyArray random_dense(const std::string& type, int64_t rows, int64_t cols) {
    NpyArray a = make_npy("<f4", {rows, cols});
    std::uniform_real_distribution<double> mag(0.5, 6.0);
    std::bernoulli_distribution neg(0.5);
    for (int64_t i = 0; i < a.size(); ++i) {
      double v;
      if (type == "s8") v = std::uniform_int_distribution<int>(1, 127)(rng_) * (neg(rng_) ? -1 : 1);
      else if (type == "u8") v = std::uniform_int_distribution<int>(1, 255)(rng_);
      else if (type == "s4") v = std::uniform_int_distribution<int>(1, 7)(rng_) * (neg(rng_) ? -1 : 1);
      else if (type == "u4") v = std::uniform_int_distribution<int>(1, 15)(rng_);
      else v = static_cast<float>(mag(rng_) * (neg(rng_) ? -1 : 1));
      npy_set_value(a, i, v);
    }
    return a;
  }

  // The documented error: status 2, one line "spmma: error: ...", holding every part.
  static void expect_error(const CliResult& r, const std::vector<std::string>& parts) {
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_EQ(r.err.rfind("spmma: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    for (const auto& p : parts) EXPECT_NE(r.err.find(p), std::string::npos) << "lacks '" << p << "': " << r.err;
  }

  std::mt19937 rng_;
  std::unique_ptr<spmma::test::TempDir> tmp_;
  fs::path dir_;
};

int64_t nonzeros(const NpyArray& a) {
  int64_t n = 0;
  for (int64_t i = 0; i < a.size(); ++i) n += npy_value(a, i) != 0.0;
  return n;
}

TEST_F(CliFormats, PruneThenCheckOkForEveryType) {
  for (const TypeCase& tc : kTypes) {
    SCOPED_TRACE(tc.name);
    const int64_t rows = 1 + rng_() % 9, cols = 8 * (1 + rng_() % 6);
    const std::string in = path(std::string("in_") + tc.name + ".npy"), out = path(std::string("pr_") + tc.name + ".npy");
    write_npy(in, random_dense(tc.name, rows, cols));

    CliResult r = run("prune " + quote(in) + " " + quote(out) + " --type " + tc.name);
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("pruned"), std::string::npos) << r.out;
    const NpyArray p = read_npy(out);
    EXPECT_EQ(p.dtype, tc.value_dtype);
    EXPECT_EQ(p.shape, (std::vector<int64_t>{rows, cols}));
    EXPECT_EQ(nonzeros(p), rows * cols / tc.chunk * tc.kept);

    r = run("check " + quote(out) + " --type " + tc.name);
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    const std::string pattern = tc.chunk == 4 ? "2:4" : tc.chunk == 2 ? "1:2" : "4:8";
    EXPECT_EQ(r.out.rfind("ok: " + std::to_string(rows) + " x " + std::to_string(cols) + " " + tc.name + " satisfies " + pattern, 0), 0u)
        << r.out;

    // The unpruned input breaks the pattern in its very first chunk.
    r = run("check " + quote(in) + " --type " + tc.name);
    EXPECT_EQ(r.code, 1) << r.out << r.err;
    EXPECT_NE(r.out.find("row 0"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("chunk 0"), std::string::npos) << r.out;
  }
}

TEST_F(CliFormats, CheckNamesTheViolatingRowAndChunk) {
  for (const char* type : {"bf16", "tf32", "s4", "e4m3"}) {
    SCOPED_TRACE(type);
    const TypeCase* tc = nullptr;
    for (const auto& t : kTypes)
      if (std::string(t.name) == type) tc = &t;
    const int64_t rows = 4 + rng_() % 8, cols = 8 * (2 + rng_() % 6);
    const std::string in = path("in.npy"), pr = path("pr.npy"), bad = path("bad.npy");
    write_npy(in, random_dense(type, rows, cols));
    ASSERT_EQ(run("prune " + quote(in) + " " + quote(pr) + " --type " + type).code, 0);

    NpyArray a = read_npy(pr);
    const int64_t r = static_cast<int64_t>(rng_() % static_cast<unsigned>(rows));
    const int64_t c = static_cast<int64_t>(rng_() % static_cast<unsigned>(cols / tc->chunk));
    // Make one pruned-away element of chunk (r, c) non-zero again.
    int64_t col = -1;
    for (int64_t k = c * tc->chunk; k < (c + 1) * tc->chunk; ++k)
      if (npy_value(a, r * cols + k) == 0.0 && col < 0) col = k;
    ASSERT_GE(col, 0);
    npy_set_value(a, r * cols + col, std::string(type) == "s4" ? 3.0 : 1.5);
    write_npy(bad, a);

    CliResult res = run("check " + quote(bad) + " --type " + type);
    EXPECT_EQ(res.code, 1) << res.out << res.err;
    EXPECT_NE(res.out.find("row " + std::to_string(r)), std::string::npos) << res.out;
    EXPECT_NE(res.out.find("chunk " + std::to_string(c)), std::string::npos) << res.out;

    res = run("check " + quote(bad) + " --type " + type + " --json");
    EXPECT_EQ(res.code, 1) << res.out << res.err;
    const json j = json::parse(res.out);
    EXPECT_EQ(j["ok"], false);
    EXPECT_EQ(j["violation"]["row"], r);
    EXPECT_EQ(j["violation"]["chunk"], c);
    EXPECT_EQ(j["violation"]["first_col"], c * tc->chunk);
    EXPECT_EQ(j["violation"]["nonzeros"], tc->chunk == 8 ? 5 : tc->kept + 1);

    res = run("check " + quote(pr) + " --type " + type + " --json");
    EXPECT_EQ(res.code, 0) << res.out << res.err;
    const json ok = json::parse(res.out);
    EXPECT_EQ(ok["ok"], true);
    EXPECT_EQ(ok["rows"], rows);
    EXPECT_EQ(ok["cols"], cols);
    EXPECT_EQ(ok["type"], type);
  }
}

// A checkpoint (.safetensors): one report per tensor, with what magnitude pruning removes; the
// tensors that cannot be sparse matrices are listed as skipped with the reason.
TEST_F(CliFormats, CheckReportsEveryTensorOfACheckpoint) {
  auto tensor = [](const std::string& name, const std::string& dtype, std::vector<int64_t> shape, ElemType t,
                   const std::vector<double>& v) {
    SafeTensor s{name, dtype, std::move(shape), {}};
    const int bits = memory_bits(t);
    s.data.assign(v.size() * static_cast<size_t>(bits / 8), 0);
    for (size_t i = 0; i < v.size(); ++i) store_element(s.data.data(), static_cast<int64_t>(i), bits, encode(t, v[i]));
    return s;
  };
  SafeTensors f;
  // a: 2:4 already (BF16); b: row 0 breaks it, pruning removes |1| + |2| of 14 and 1 + 4 of 46;
  // c: F32, read as tf32 (1:2): satisfied; norm: 1-D; ids: I32 (no sparse type).
  f.tensors.push_back(tensor("a.weight", "BF16", {2, 8}, ElemType::bf16, {1, 0, 0, 2, 0, 3, 4, 0, 0, 0, 5, 6, 7, 0, 0, 8}));
  f.tensors.push_back(tensor("b.weight", "F16", {2, 4}, ElemType::f16, {1, 2, 3, 4, -4, 0, 0, 0}));
  f.tensors.push_back(tensor("c.weight", "F32", {2, 6}, ElemType::f32, {1, 0, 0, 2, 3, 0, 0, 1, 1, 0, 0, 0}));
  f.tensors.push_back(tensor("norm", "F32", {8}, ElemType::f32, {1, 1, 1, 1, 1, 1, 1, 1}));
  f.tensors.push_back(tensor("ids", "I32", {2, 4}, ElemType::s32, {1, 2, 3, 4, 5, 6, 7, 8}));
  const std::string ck = path("model.safetensors");
  write_safetensors(ck, f);

  CliResult r = run("check " + quote(ck) + " --json");
  EXPECT_EQ(r.code, 1) << r.out << r.err;  // b breaks its pattern
  json j = json::parse(r.out);
  EXPECT_EQ(j["summary"], json::parse(R"({"checked": 3, "satisfy": 2, "violate": 1, "skipped": 2})"));
  ASSERT_EQ(j["tensors"].size(), 5u);
  std::map<std::string, json> by;
  for (const auto& t : j["tensors"]) by[t["name"]] = t;
  EXPECT_EQ(by["a.weight"]["status"], "satisfies");
  EXPECT_EQ(by["a.weight"]["pattern"], "2:4");
  EXPECT_EQ(by["c.weight"]["type"], "tf32");
  EXPECT_EQ(by["c.weight"]["pattern"], "1:2");
  EXPECT_EQ(by["c.weight"]["status"], "satisfies");
  const json& b = by["b.weight"];
  EXPECT_EQ(b["status"], "violates");
  EXPECT_EQ(b["chunks"], 2);
  EXPECT_EQ(b["violating_chunks"], 1);
  EXPECT_EQ(b["first_violation"], "row 0, chunk 0 (cols 0..3): 4 non-zeros, 2:4 allows at most 2");
  EXPECT_DOUBLE_EQ(b["magnitude_pruning_removes"]["l1_fraction"].get<double>(), 3.0 / 14.0);
  EXPECT_DOUBLE_EQ(b["magnitude_pruning_removes"]["l2_fraction"].get<double>(), 5.0 / 46.0);
  EXPECT_EQ(by["norm"]["status"], "skipped");
  EXPECT_EQ(by["norm"]["why"], "not a matrix (1-D)");
  EXPECT_EQ(by["ids"]["why"], "dtype I32 has no sparse type");

  // Text, and a selection by name pattern: only the satisfied ones, exit 0.
  r = run("check " + quote(ck) + " --tensors 'a.*' --tensors 'c.*'");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("2 tensors checked (2 satisfy their pattern, 0 do not), 0 skipped"), std::string::npos) << r.out;
  r = run("check " + quote(ck) + " --tensors b.weight");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("1 of 2 chunks break it"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("removes 21.43% of Σ|w|, 10.87% of Σw²"), std::string::npos) << r.out;
  // --type names the pattern: F32 c.weight against bf16's 2:4 has 6 columns, not whole chunks.
  r = run("check " + quote(ck) + " --tensors c.weight --type bf16 --json");
  EXPECT_EQ(json::parse(r.out)["tensors"][0]["why"], "6 columns is not a whole number of 2:4 chunks") << r.out;
  expect_error(run("check " + quote(ck) + " --tensors 'z*'"), {ck, "no tensor matches --tensors", "5 tensors"});
  expect_error(run("check " + quote(ck) + " --bits"), {"--bits is for .npy"});
  expect_error(run("check " + quote(ck) + " --type f64"), {"f64"});
  const std::string in = path("m.npy");
  write_npy(in, random_dense("bf16", 4, 8));
  expect_error(run("check " + quote(in)), {"--type is required for .npy"});
  expect_error(run("check " + quote(in) + " --type bf16 --tensors x"), {"--tensors selects tensors of a .safetensors"});
}

TEST_F(CliFormats, CompressDecompressRoundTripEveryType) {
  for (const TypeCase& tc : kTypes) {
    for (bool unordered : {false, true}) {
      SCOPED_TRACE(std::string(tc.name) + (unordered ? " unordered" : " ordered"));
      const int64_t rows = 1 + rng_() % 12, cols = 8 * (1 + rng_() % 9);
      const std::string in = path("in.npy"), pr = path("pr.npy"), v = path("v.npy"), m = path("m.npy"),
                        back = path("back.npy");
      const std::string flag = unordered ? " --unordered" : "";
      write_npy(in, random_dense(tc.name, rows, cols));
      ASSERT_EQ(run("prune " + quote(in) + " " + quote(pr) + " -t " + tc.name).code, 0);

      CliResult r = run("compress " + quote(pr) + " --type " + tc.name + " --values " + quote(v) + " --meta " + quote(m) + flag);
      ASSERT_EQ(r.code, 0) << r.out << r.err;
      const NpyArray va = read_npy(v), ma = read_npy(m);
      EXPECT_EQ(va.dtype, tc.bits_dtype);
      EXPECT_EQ(va.shape, (std::vector<int64_t>{rows, cols / 2}));
      const int64_t chunks = cols / tc.chunk, words = (chunks + 3) / 4;
      EXPECT_EQ(ma.dtype, "<u2");
      EXPECT_EQ(ma.shape, (std::vector<int64_t>{rows, words}));
      // Exact sizes in the summary: metadata is 2 bytes a word.
      EXPECT_NE(r.out.find("(" + std::to_string(rows * words * 2) + " bytes)"), std::string::npos) << r.out;
      // 4-bit types: one element per byte, the high nibble zero.
      if (tc.chunk == 8)
        for (int64_t i = 0; i < va.size(); ++i) ASSERT_LT(npy_raw(va, i), 16u);

      r = run("decompress --type " + std::string(tc.name) + " --values " + quote(v) + " --meta " + quote(m) + " " +
              quote(back) + flag);
      ASSERT_EQ(r.code, 0) << r.out << r.err;
      const NpyArray p = read_npy(pr), b = read_npy(back);
      EXPECT_EQ(b.dtype, p.dtype);
      EXPECT_EQ(b.shape, p.shape);
      for (int64_t i = 0; i < p.size(); ++i) ASSERT_EQ(npy_value(b, i), npy_value(p, i)) << "element " << i;

      // --cols K agrees; a wrong K is refused.
      EXPECT_EQ(run("decompress -t " + std::string(tc.name) + " --values " + quote(v) + " --meta " + quote(m) + " " +
                    quote(back) + flag + " --cols " + std::to_string(cols))
                    .code,
                0);
      r = run("decompress -t " + std::string(tc.name) + " --values " + quote(v) + " --meta " + quote(m) + " " +
              quote(back) + flag + " --cols " + std::to_string(cols + 2 * tc.chunk));
      EXPECT_EQ(r.code, 2) << r.out << r.err;
    }
  }
}

TEST_F(CliFormats, CompressJsonReportsExactSizes) {
  const int64_t rows = 16, cols = 64;
  const std::string in = path("in.npy"), pr = path("pr.npy"), v = path("v.npy"), m = path("m.npy");
  write_npy(in, random_dense("bf16", rows, cols));
  ASSERT_EQ(run("prune " + quote(in) + " " + quote(pr) + " --type bf16").code, 0);
  const CliResult r = run("compress " + quote(pr) + " --type bf16 --values " + quote(v) + " --meta " + quote(m) + " --json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["pattern"], "2:4");
  EXPECT_EQ(j["values"]["packed_bytes"], rows * cols / 2 * 2);
  EXPECT_EQ(j["metadata"]["bytes"], rows * (cols / 16) * 2);
  EXPECT_EQ(j["dense_bytes"], rows * cols * 2);
  EXPECT_EQ(j["compressed_bytes"], rows * cols + rows * (cols / 16) * 2);
  EXPECT_EQ(j["values"]["shape"], json::array({rows, cols / 2}));
}

TEST_F(CliFormats, PruneByMask) {
  const int64_t rows = 6, cols = 16;
  const std::string in = path("in.npy"), mk = path("mask.npy"), out = path("out.npy");
  write_npy(in, random_dense("f16", rows, cols));
  NpyArray mask = make_npy("|b1", {rows, cols});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols / 4; ++c) {
      const int a = static_cast<int>(rng_() % 4);
      const int b = (a + 1 + static_cast<int>(rng_() % 3)) % 4;
      npy_set_value(mask, r * cols + 4 * c + a, 1);
      npy_set_value(mask, r * cols + 4 * c + b, 1);
    }
  write_npy(mk, mask);
  CliResult r = run("prune " + quote(in) + " " + quote(out) + " --type f16 --mask " + quote(mk));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const NpyArray a = read_npy(in), o = read_npy(out);
  for (int64_t i = 0; i < a.size(); ++i) {
    if (npy_value(mask, i) != 0.0) {
      EXPECT_EQ(npy_value(o, i), decode(ElemType::f16, encode(ElemType::f16, npy_value(a, i)))) << i;
    } else {
      EXPECT_EQ(npy_value(o, i), 0.0) << i;
    }
  }
  // A mask that keeps 3 of a chunk is refused, naming the mask file, row and chunk.
  npy_set_value(mask, 2 * cols + 4, 1);
  npy_set_value(mask, 2 * cols + 5, 1);
  npy_set_value(mask, 2 * cols + 6, 1);
  write_npy(mk, mask);
  r = run("prune " + quote(in) + " " + quote(out) + " --type f16 --mask " + quote(mk));
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("spmma: error: " + mk, 0), 0u) << r.err;
  EXPECT_NE(r.err.find("row 2"), std::string::npos) << r.err;
  // A mask of the wrong shape.
  write_npy(mk, make_npy("|u1", {rows, cols / 2}));
  r = run("prune " + quote(in) + " " + quote(out) + " --type f16 --mask " + quote(mk));
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("mask is 6 x 8"), std::string::npos) << r.err;
}

TEST_F(CliFormats, OneDimensionalInputIsOneRow) {
  const std::string in = path("in.npy"), out = path("out.npy");
  NpyArray a = random_dense("bf16", 1, 12);
  a.shape = {12};
  write_npy(in, a);
  ASSERT_EQ(run("prune " + quote(in) + " " + quote(out) + " --type bf16").code, 0);
  EXPECT_EQ(read_npy(out).shape, (std::vector<int64_t>{1, 12}));
}

TEST_F(CliFormats, ErrorsAreOneClearLineWithExitCode2) {
  const std::string in = path("in.npy"), missing = path("missing.npy");
  write_npy(in, random_dense("bf16", 4, 8));
  auto expect_error = [&](const std::string& args, const std::vector<std::string>& parts) {
    SCOPED_TRACE(args);
    const CliResult r = run(args);
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_EQ(r.err.rfind("spmma: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    for (const auto& p : parts) EXPECT_NE(r.err.find(p), std::string::npos) << "lacks '" << p << "': " << r.err;
  };
  expect_error("check " + quote(missing) + " --type bf16", {missing, "No such file"});
  expect_error("prune " + quote(missing) + " " + quote(path("o.npy")) + " --type bf16", {missing});
  expect_error("compress " + quote(missing) + " --type bf16 --values " + quote(path("v.npy")) + " --meta " +
                   quote(path("m.npy")),
               {missing});
  expect_error("decompress --type bf16 --values " + quote(missing) + " --meta " + quote(in) + " " + quote(path("o.npy")),
               {missing});
  expect_error("check " + quote(in) + " --type f17", {"f17"});
  expect_error("check " + quote(in) + " --type f64", {"f64"});
  {
    std::ofstream f(path("text.npy"));
    f << "this is not numpy\n";
  }
  expect_error("check " + quote(path("text.npy")) + " --type bf16", {path("text.npy"), "not a .npy file"});
  write_npy(path("odd.npy"), random_dense("bf16", 2, 6));
  expect_error("check " + quote(path("odd.npy")) + " --type bf16", {path("odd.npy"), "multiple"});
  // Compressing an unpruned matrix.
  expect_error("compress " + quote(in) + " --type bf16 --values " + quote(path("v.npy")) + " --meta " +
                   quote(path("m.npy")),
               {in, "row 0"});

  // Values and metadata of different matrices.
  const std::string pr = path("pr.npy"), v = path("v.npy"), m = path("m.npy"), in2 = path("in2.npy"),
                    pr2 = path("pr2.npy"), v2 = path("v2.npy"), m2 = path("m2.npy");
  ASSERT_EQ(run("prune " + quote(in) + " " + quote(pr) + " --type bf16").code, 0);
  ASSERT_EQ(run("compress " + quote(pr) + " --type bf16 --values " + quote(v) + " --meta " + quote(m)).code, 0);
  write_npy(in2, random_dense("bf16", 5, 8));
  ASSERT_EQ(run("prune " + quote(in2) + " " + quote(pr2) + " --type bf16").code, 0);
  ASSERT_EQ(run("compress " + quote(pr2) + " --type bf16 --values " + quote(v2) + " --meta " + quote(m2)).code, 0);
  expect_error("decompress --type bf16 --values " + quote(v) + " --meta " + quote(m2) + " " + quote(path("o.npy")),
               {"shape mismatch", m2});
  // Float values where bit patterns are expected.
  expect_error("decompress --type bf16 --values " + quote(pr) + " --meta " + quote(m) + " " + quote(path("o.npy")),
               {pr, "dtype '<f4'"});
  // A forbidden metadata nibble (0x0: a repeated index) in ordered metadata.
  NpyArray ma = read_npy(m);
  npy_set_raw(ma, 0, 0);
  write_npy(m, ma);
  expect_error("decompress --type bf16 --values " + quote(v) + " --meta " + quote(m) + " " + quote(path("o.npy")),
               {m, "row 0"});
}

TEST_F(CliFormats, HelpAndVersion) {
  CliResult r = run("--help");
  EXPECT_EQ(r.code, 0) << r.err;
  for (const char* cmd : {"prune", "check", "compress", "decompress"}) EXPECT_NE(r.out.find(cmd), std::string::npos) << r.out;
  for (const char* cmd : {"prune", "check", "compress", "decompress"}) {
    SCOPED_TRACE(cmd);
    r = run(std::string(cmd) + " --help");
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("--type"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("bf16"), std::string::npos) << r.out;
  }
  r = run("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("spmma ", 0), 0u) << r.out;
  r = run("");
  EXPECT_NE(r.code, 0);
  r = run("check");  // missing the required input: the documented one line and status 2
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("spmma: error: check: IN is required", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// ---------------------------------------------------------------- issue 8, items 12 and 13
// A legal .npy with no elements, e.g. shape (2^40, 0) in 128 bytes, made the row loops run 2^40
// times (decompress hung; check, prune, compress too at -O1), and values of shape (0, 2^62) made
// decompress compute 2 * 2^62 (signed overflow). Every command refuses such arrays at once,
// naming the file and the shape.
TEST_F(CliFormats, ArraysWithoutElementsAreRefusedAtOnce) {
  const std::string good = path("good.npy"), out = path("out.npy");
  write_npy(good, random_dense("bf16", 4, 8));
  const int64_t big = int64_t{1} << 40, huge = int64_t{1} << 62;
  const std::vector<std::vector<int64_t>> shapes = {{big, 0}, {huge, 0}, {0, huge}, {0, 8}, {4, 0}, {0}};
  for (const auto& shape : shapes) {
    std::string text = "(" + std::to_string(shape[0]) + (shape.size() == 2 ? ", " + std::to_string(shape[1]) : ",") + ")";
    SCOPED_TRACE(text);
    const std::string e = path("empty.npy"), v = path("v.npy"), m = path("m.npy");
    write_npy(e, make_npy("<f4", shape));
    write_npy(v, make_npy("<u2", shape));
    // Metadata of the shape the values imply (rows x ceil(2 * cols / 16)), computed without overflow.
    const int64_t rows = shape.size() == 2 ? shape[0] : 1, vcols = shape.back();
    write_npy(m, make_npy("<u2", {rows, static_cast<int64_t>((static_cast<uint64_t>(vcols) * 2 + 15) / 16)}));
    const std::vector<std::string> parts = {text, "no elements"};
    expect_error(run("check " + quote(e) + " --type bf16", 20), {e, text});
    expect_error(run("prune " + quote(e) + " " + quote(out) + " --type bf16", 20), {e, text});
    expect_error(run("prune " + quote(good) + " " + quote(out) + " --type bf16 --mask " + quote(e), 20), {e, text});
    expect_error(run("compress " + quote(e) + " --type bf16 --out " + quote(path("c.safetensors")), 20), {e, text});
    expect_error(run("compress " + quote(e) + " --type bf16 --values " + quote(path("cv.npy")) + " --meta " +
                     quote(path("cm.npy")), 20),
                 {e, text});
    const CliResult r = run("decompress --type bf16 --values " + quote(v) + " --meta " + quote(m) + " " + quote(out), 20);
    expect_error(r, {"no elements"});
    EXPECT_TRUE(r.err.find(v + ": shape " + text) != std::string::npos ||
                r.err.find(m + ": shape (" + std::to_string(rows)) != std::string::npos)
        << r.err;
    EXPECT_FALSE(fs::exists(out));
  }
  // The container: rows recorded as 2^40 or 2^62 with no columns.
  for (const int64_t rows : {big, huge}) {
    SafeTensors f;
    f.metadata = {{"format", "spmma.compressed"}, {"format_version", "1"}, {"type", "bf16"}, {"pattern", "2:4"},
                  {"rows", std::to_string(rows)},    {"cols", "0"},            {"ordered", "true"}};
    f.tensors = {{"values", "BF16", {rows, 0}, {}}, {"metadata", "U16", {rows, 0}, {}}};
    const std::string c = path("empty.safetensors");
    write_safetensors(c, f);
    expect_error(run("decompress " + quote(c) + " " + quote(out), 20), {c, "empty " + std::to_string(rows) + " x 0"});
  }
}

// ---------------------------------------------------------------- issue 8, item 14
// compress --out writes one self-describing file; decompress needs neither --type nor --cols.
TEST_F(CliFormats, ContainerRoundTripEveryTypeWithoutTypeOrCols) {
  const char* const st_dtype[] = {"F16", "BF16", "F32", "F8_E4M3", "F8_E5M2", "U8", "U8", "U8", "I8", "U8", "U8", "U8"};
  for (size_t ti = 0; ti < std::size(kTypes); ++ti) {
    const TypeCase& tc = kTypes[ti];
    for (bool unordered : {false, true}) {
      SCOPED_TRACE(std::string(tc.name) + (unordered ? " unordered" : ""));
      const int64_t rows = 1 + rng_() % 9, cols = 8 * (1 + rng_() % 6);
      const std::string in = path("in.npy"), pr = path("pr.npy"), c = path("c.safetensors"), back = path("back.npy");
      const std::string flag = unordered ? " --unordered" : "";
      write_npy(in, random_dense(tc.name, rows, cols));
      ASSERT_EQ(run("prune " + quote(in) + " " + quote(pr) + " -t " + tc.name).code, 0);
      CliResult r = run("compress " + quote(pr) + " --type " + tc.name + " --out " + quote(c) + flag + " --json");
      ASSERT_EQ(r.code, 0) << r.out << r.err;
      const json j = json::parse(r.out);
      EXPECT_EQ(j["output"]["format"], "safetensors");
      EXPECT_EQ(j["values"]["dtype"], st_dtype[ti]);

      const SafeTensors f = read_safetensors(c);
      EXPECT_EQ(f.metadata.at("format"), "spmma.compressed");
      EXPECT_EQ(f.metadata.at("format_version"), "1");
      EXPECT_EQ(f.metadata.at("type"), tc.name);
      EXPECT_EQ(f.metadata.at("rows"), std::to_string(rows));
      EXPECT_EQ(f.metadata.at("cols"), std::to_string(cols));
      EXPECT_EQ(f.metadata.at("ordered"), unordered ? "false" : "true");
      EXPECT_EQ(f.find("values")->dtype, st_dtype[ti]);
      EXPECT_EQ(f.find("values")->shape, (std::vector<int64_t>{rows, cols / 2}));
      EXPECT_EQ(f.find("metadata")->dtype, "U16");

      r = run("decompress " + quote(c) + " " + quote(back));
      ASSERT_EQ(r.code, 0) << r.out << r.err;
      const NpyArray p = read_npy(pr), b = read_npy(back);
      EXPECT_EQ(b.dtype, p.dtype);
      EXPECT_EQ(b.shape, p.shape);
      for (int64_t i = 0; i < p.size(); ++i) ASSERT_EQ(npy_value(b, i), npy_value(p, i)) << "element " << i;

      // --type / --cols may be given; they must agree with the file.
      EXPECT_EQ(run("decompress " + quote(c) + " " + quote(back) + " --type " + tc.name + " --cols " + std::to_string(cols)).code, 0);
      const char* other = std::string(tc.name) == "bf16" ? "f16" : "bf16";
      expect_error(run("decompress " + quote(c) + " " + quote(back) + " --type " + other), {c, tc.name, "drop --type"});
      expect_error(run("decompress " + quote(c) + " " + quote(back) + " --cols " + std::to_string(cols + 8)), {c, "drop --cols"});
    }
  }
  // Not a container: named, with what to do. Outputs given twice or half: refused.
  const std::string pr = path("pr.npy");
  expect_error(run("compress " + quote(pr) + " -t bf16 --out " + quote(path("a.safetensors")) + " --values " +
                   quote(path("v.npy")) + " --meta " + quote(path("m.npy"))),
               {"not both"});
  expect_error(run("compress " + quote(pr) + " -t bf16 --values " + quote(path("v.npy"))), {"--meta is missing"});
  expect_error(run("compress " + quote(pr) + " -t bf16"), {"--out"});
  expect_error(run("decompress " + quote(path("c.safetensors")) + " " + quote(path("o.npy")) + " --values " +
                   quote(path("v.npy")) + " --meta " + quote(path("m.npy"))),
               {"not both"});
  expect_error(run("decompress --values " + quote(path("v.npy")) + " --meta " + quote(path("m.npy")) + " " +
                   quote(path("o.npy"))),
               {"need --type"});
  expect_error(run("decompress " + quote(pr) + " " + quote(path("o.npy"))), {pr, "this is a .npy file"});
  expect_error(run("decompress " + quote(path("o.npy"))), {"--values"});
}

// With --values/--meta, the values' dtype must be the one compress writes for --type: e4m3 values
// (uint8) are not bf16 (uint16), bf16 values are not tf32 (uint32). Every pair of types whose
// containers differ is refused, with what to do.
TEST_F(CliFormats, DecompressRefusesValuesWrittenForAnotherType) {
  auto width = [](const TypeCase& t) { return std::string(t.bits_dtype).back() - '0'; };
  for (const TypeCase& a : kTypes) {
    const std::string in = path("in.npy"), pr = path("pr.npy"), v = path("v.npy"), m = path("m.npy");
    write_npy(in, random_dense(a.name, 2, 16));
    ASSERT_EQ(run("prune " + quote(in) + " " + quote(pr) + " -t " + a.name).code, 0);
    ASSERT_EQ(run("compress " + quote(pr) + " -t " + a.name + " --values " + quote(v) + " --meta " + quote(m)).code, 0);
    for (const TypeCase& b : kTypes) {
      if (width(a) == width(b)) continue;
      SCOPED_TRACE(std::string(a.name) + " values read as " + b.name);
      const std::string out = path("out.npy");
      expect_error(run("decompress --type " + std::string(b.name) + " --values " + quote(v) + " --meta " + quote(m) + " " +
                       quote(out)),
                   {v, a.bits_dtype, b.name, "pass the --type the file was compressed with"});
      EXPECT_FALSE(fs::exists(out));
    }
  }
}

// ---------------------------------------------------------------- issue 8, item 15
// An output that is an input, or another output, under any spelling of its path, is refused
// before anything is written.
TEST_F(CliFormats, OutputsThatAreInputsOrEachOtherAreRefused) {
  const std::string in = path("in.npy"), pr = path("pr.npy"), v = path("v.npy"), m = path("m.npy"), c = path("c.safetensors"),
                    mask = path("mask.npy");
  write_npy(in, random_dense("bf16", 4, 16));
  ASSERT_EQ(run("prune " + quote(in) + " " + quote(pr) + " -t bf16").code, 0);
  ASSERT_EQ(run("compress " + quote(pr) + " -t bf16 --values " + quote(v) + " --meta " + quote(m)).code, 0);
  ASSERT_EQ(run("compress " + quote(pr) + " -t bf16 --out " + quote(c)).code, 0);
  write_npy(mask, make_npy("|b1", {4, 16}));
  fs::create_directories(dir_ / "sub");
  // Other names of the same file: ./, ../, a symbolic link, a hard link.
  auto aliases = [&](const std::string& p) {
    const std::string name = fs::path(p).filename().string();
    std::vector<std::string> out = {p, (dir_ / "." / name).string(), (dir_ / "sub" / ".." / name).string()};
    const fs::path sym = dir_ / ("sym_" + name), hard = dir_ / ("hard_" + name);
    fs::remove(sym);
    fs::remove(hard);
    fs::create_symlink(p, sym);
    fs::create_hard_link(p, hard);
    out.push_back(sym.string());
    out.push_back(hard.string());
    return out;
  };
  const std::string before_in = slurp(in), before_pr = slurp(pr), before_v = slurp(v), before_m = slurp(m),
                    before_c = slurp(c);
  for (const std::string& a : aliases(in)) {
    SCOPED_TRACE(a);
    expect_error(run("prune " + quote(in) + " " + quote(a) + " -t bf16"), {"same file", a});
  }
  for (const std::string& a : aliases(mask)) {
    SCOPED_TRACE(a);
    expect_error(run("prune " + quote(in) + " " + quote(a) + " -t bf16 --mask " + quote(mask)), {"same file", a});
  }
  const std::string x = path("x.npy");
  expect_error(run("compress " + quote(pr) + " -t bf16 --values " + quote(x) + " --meta " + quote(x)), {"same file", x});
  EXPECT_FALSE(fs::exists(x));
  expect_error(run("compress " + quote(pr) + " -t bf16 --values " + quote(x) + " --meta " + quote(path("sub/../x.npy"))),
               {"same file"});
  EXPECT_FALSE(fs::exists(x));
  for (const std::string& a : aliases(pr)) {
    SCOPED_TRACE(a);
    expect_error(run("compress " + quote(pr) + " -t bf16 --values " + quote(a) + " --meta " + quote(path("m2.npy"))),
                 {"same file", a});
    expect_error(run("compress " + quote(pr) + " -t bf16 --values " + quote(path("v2.npy")) + " --meta " + quote(a)),
                 {"same file", a});
    expect_error(run("compress " + quote(pr) + " -t bf16 --out " + quote(a)), {"same file", a});
  }
  for (const std::string& a : aliases(v)) {
    SCOPED_TRACE(a);
    expect_error(run("decompress -t bf16 --values " + quote(v) + " --meta " + quote(m) + " " + quote(a)), {"same file", a});
  }
  for (const std::string& a : aliases(m)) {
    SCOPED_TRACE(a);
    expect_error(run("decompress -t bf16 --values " + quote(v) + " --meta " + quote(m) + " " + quote(a)), {"same file", a});
  }
  for (const std::string& a : aliases(c)) {
    SCOPED_TRACE(a);
    expect_error(run("decompress " + quote(c) + " " + quote(a)), {"same file", a});
  }
  EXPECT_EQ(slurp(in), before_in);
  EXPECT_EQ(slurp(pr), before_pr);
  EXPECT_EQ(slurp(v), before_v);
  EXPECT_EQ(slurp(m), before_m);
  EXPECT_EQ(slurp(c), before_c);
  EXPECT_FALSE(fs::exists(path("m2.npy")));
  EXPECT_FALSE(fs::exists(path("v2.npy")));
}

// A write that fails is an error (status 2, the file named) and leaves no partial output: not
// the values file when the metadata cannot be written, and no temporary beside the target.
TEST_F(CliFormats, FailedWritesAreErrorsAndLeaveNoPartialOutput) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  const std::string in = path("in.npy"), pr = path("pr.npy"), v = path("v.npy"), m = path("m.npy"), c = path("c.safetensors");
  write_npy(in, random_dense("bf16", 4, 16));
  ASSERT_EQ(run("prune " + quote(in) + " " + quote(pr) + " -t bf16").code, 0);
  expect_error(run("compress " + quote(pr) + " -t bf16 --values " + quote(v) + " --meta /dev/full"), {"/dev/full", "write failed"});
  EXPECT_FALSE(fs::exists(v)) << "the values were written although the metadata could not be";
  expect_error(run("compress " + quote(pr) + " -t bf16 --values /dev/full --meta " + quote(m)), {"/dev/full", "write failed"});
  EXPECT_FALSE(fs::exists(m));
  expect_error(run("compress " + quote(pr) + " -t bf16 --out /dev/full"), {"/dev/full", "write failed"});
  expect_error(run("prune " + quote(in) + " /dev/full -t bf16"), {"/dev/full", "write failed"});
  const std::string missing = path("no_such_dir/c.safetensors");
  expect_error(run("compress " + quote(pr) + " -t bf16 --out " + quote(missing)), {missing, "does not exist"});
  expect_error(run("compress " + quote(pr) + " -t bf16 --out " + quote(dir_.string())), {dir_.string(), "directory"});
  ASSERT_EQ(run("compress " + quote(pr) + " -t bf16 --out " + quote(c)).code, 0);
  expect_error(run("decompress " + quote(c) + " /dev/full"), {"/dev/full", "write failed"});
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".spmma-tmp"), std::string::npos) << "left behind: " << e.path();
}

// ---------------------------------------------------------------- issue 8, item 16
// An integer array with a float --type: bit patterns (torch's w.view(torch.int16)) or numbers?
// Refused without --bits, with what to do; integer dtypes of every width, signed and unsigned.
TEST_F(CliFormats, IntegerArraysWithAFloatTypeNeedBits) {
  const std::string out = path("out.npy");
  for (const char* type : {"bf16", "tf32", "e4m3", "e2m1"}) {
    for (const char* dt : {"|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8"}) {
      SCOPED_TRACE(std::string(type) + " from " + dt);
      const std::string f = path("int.npy");
      NpyArray a = make_npy(dt, {2, 8});
      for (int64_t i = 0; i < a.size(); ++i) npy_set_raw(a, i, rng_() & 0x3F);
      write_npy(f, a);
      for (const std::string cmd : {"check " + quote(f), "prune " + quote(f) + " " + quote(out),
                                    "compress " + quote(f) + " --out " + quote(path("c.safetensors"))})
        expect_error(run(cmd + " --type " + type), {f, dt, "ambiguous", "--bits"});
      EXPECT_FALSE(fs::exists(out));
    }
  }
}

// Bit patterns given explicitly (--bits with an integer array of the type's width, signed or
// unsigned; or a raw-bytes 'V' dtype as NumPy writes ml_dtypes' bfloat16 '<V2' and float8 '|V1')
// give exactly what the same matrix gives by value; prune writes bit patterns back in the input's
// dtype. Wrong widths and --bits on numbers are refused.
TEST_F(CliFormats, BitPatternsWithBitsOrRawDtypesEqualValues) {
  struct BitsCase {
    const char* type;
    ElemType t;
    std::vector<std::string> dtypes;
  };
  const BitsCase cases[] = {{"bf16", ElemType::bf16, {"<u2", "<i2", "<V2"}}, {"f16", ElemType::f16, {"<u2", "<i2", "<V2"}},
                            {"tf32", ElemType::tf32, {"<u4", "<i4", "<V4"}}, {"e4m3", ElemType::e4m3, {"|u1", "|i1", "|V1"}},
                            {"e5m2", ElemType::e5m2, {"|u1", "|V1"}},        {"e2m1", ElemType::e2m1, {"|u1", "|V1"}},
                            {"s8", ElemType::s8, {"|u1", "|V1"}}};
  for (const BitsCase& bc : cases) {
    const int64_t rows = 1 + rng_() % 5, cols = 8 * (1 + rng_() % 4);
    const std::string fv = path("values.npy"), pv = path("pv.npy"), cv = path("cv.safetensors");
    const NpyArray values = random_dense(bc.type, rows, cols);
    write_npy(fv, values);
    ASSERT_EQ(run("prune " + quote(fv) + " " + quote(pv) + " --type " + bc.type).code, 0);
    ASSERT_EQ(run("compress " + quote(pv) + " --type " + std::string(bc.type) + " --out " + quote(cv)).code, 0);
    const Matrix want = npy_to_matrix(read_npy(pv), bc.t, "pv");
    Matrix m(bc.t, rows, cols);  // the same matrix as bit patterns
    for (int64_t i = 0; i < values.size(); ++i) m.bits[static_cast<size_t>(i)] = encode(bc.t, npy_value(values, i));
    for (const std::string& dt : bc.dtypes) {
      SCOPED_TRACE(std::string(bc.type) + " as " + dt);
      const bool raw = dt[1] == 'V';
      const std::string flag = raw ? "" : " --bits";
      const std::string fb = path("bits.npy"), pb = path("pb.npy"), cb = path("cb.safetensors");
      write_npy(fb, matrix_bits_to_npy(m, dt));
      CliResult r = run("prune " + quote(fb) + " " + quote(pb) + " --type " + bc.type + flag);
      ASSERT_EQ(r.code, 0) << r.out << r.err;
      const NpyArray p = read_npy(pb);
      EXPECT_EQ(p.dtype, dt);
      EXPECT_EQ(npy_bits_to_matrix(p, bc.t, "pb").bits, want.bits);
      r = run("check " + quote(pb) + " --type " + bc.type + flag);
      EXPECT_EQ(r.code, 0) << r.out << r.err;
      r = run("compress " + quote(pb) + " --type " + bc.type + flag + " --out " + quote(cb));
      ASSERT_EQ(r.code, 0) << r.out << r.err;
      EXPECT_EQ(slurp(cb), slurp(cv)) << "bit patterns and values compress differently";
    }
  }
  // Refusals: the width of the type, and --bits on numbers.
  const std::string f = path("f.npy");
  write_npy(f, make_npy("<V2", {2, 8}));
  expect_error(run("check " + quote(f) + " --type e4m3"), {f, "'<V2'", "2-byte", "1 byte", "--type"});
  expect_error(run("check " + quote(f) + " --type tf32"), {f, "'<V2'", "4 bytes"});
  write_npy(f, make_npy("|V1", {2, 8}));
  expect_error(run("check " + quote(f) + " --type bf16"), {f, "'|V1'", "2 bytes"});
  write_npy(f, make_npy("<u2", {2, 8}));
  expect_error(run("check " + quote(f) + " --type e4m3 --bits"), {f, "'<u2'", "1 byte"});
  write_npy(f, make_npy("<f4", {2, 8}));
  expect_error(run("check " + quote(f) + " --type bf16 --bits"), {f, "'<f4'", "drop --bits"});
  write_npy(f, make_npy("|b1", {2, 8}));
  expect_error(run("check " + quote(f) + " --type e4m3 --bits"), {f, "'|b1'", "drop --bits"});
  // A raw-bytes mask has no numbers.
  const std::string in = path("in.npy");
  write_npy(in, random_dense("bf16", 2, 8));
  write_npy(f, make_npy("<V2", {2, 8}));
  expect_error(run("prune " + quote(in) + " " + quote(path("o.npy")) + " --type bf16 --mask " + quote(f)), {f, "raw bytes"});
}

// ---------------------------------------------------------------- issue 13, item 9
// prune, compress and decompress of whole checkpoints. The expectations are computed here, from
// the documented rules, not by the code under test: each chunk keeps its `kept` largest |w| (ties
// to the lower column) with their exact bits, the rest is +0; the compressed values are a row's
// kept elements in column order, each nibble names their positions.

// One dtype of the synthetic checkpoint: its element type, the pattern's chunk and kept count.
struct CkptKind {
  const char* dtype;
  ElemType t;
  int chunk, kept;
  const char* pattern;
};
const CkptKind kCkptKinds[] = {
    {"BF16", ElemType::bf16, 4, 2, "2:4"},    {"F16", ElemType::f16, 4, 2, "2:4"},
    {"F8_E4M3", ElemType::e4m3, 4, 2, "2:4"}, {"I8", ElemType::s8, 4, 2, "2:4"},
    {"F32", ElemType::f32, 2, 1, "1:2"},
};

SafeTensor bits_tensor(const std::string& name, const std::string& dtype, std::vector<int64_t> shape, ElemType t,
                       const std::vector<uint64_t>& bits) {
  SafeTensor s{name, dtype, std::move(shape), {}};
  const int w = memory_bits(t);
  s.data.assign(bits.size() * static_cast<size_t>(w / 8), 0);
  for (size_t i = 0; i < bits.size(); ++i) store_element(s.data.data(), static_cast<int64_t>(i), w, bits[i]);
  return s;
}

std::vector<uint64_t> tensor_bits(const SafeTensor& s, ElemType t) {
  const int w = memory_bits(t);
  std::vector<uint64_t> out(s.data.size() / static_cast<size_t>(w / 8));
  for (size_t i = 0; i < out.size(); ++i) out[i] = load_element(s.data.data(), static_cast<int64_t>(i), w);
  return out;
}

// Magnitude pruning as documented, written independently of src/core: a stable sort of each
// chunk's positions by |w|, largest first.
std::vector<uint64_t> expected_prune(const std::vector<uint64_t>& bits, const CkptKind& k) {
  std::vector<uint64_t> out(bits.size(), 0);
  for (size_t c0 = 0; c0 < bits.size(); c0 += static_cast<size_t>(k.chunk)) {
    std::vector<int> pos(static_cast<size_t>(k.chunk));
    for (int i = 0; i < k.chunk; ++i) pos[static_cast<size_t>(i)] = i;
    std::stable_sort(pos.begin(), pos.end(), [&](int a, int b) {
      return std::fabs(decode(k.t, bits[c0 + static_cast<size_t>(a)])) >
             std::fabs(decode(k.t, bits[c0 + static_cast<size_t>(b)]));
    });
    for (int i = 0; i < k.kept; ++i)
      out[c0 + static_cast<size_t>(pos[static_cast<size_t>(i)])] =
          bits[c0 + static_cast<size_t>(pos[static_cast<size_t>(i)])];
  }
  return out;
}

class CliCheckpoint : public CliFormats {
 protected:
  // A non-zero finite element of t, either sign.
  uint64_t random_bits(ElemType t) {
    std::bernoulli_distribution neg(0.5);
    if (t == ElemType::s8) return encode(t, std::uniform_int_distribution<int>(1, 127)(rng_) * (neg(rng_) ? -1 : 1));
    return encode(t, std::uniform_real_distribution<double>(0.5, 6.0)(rng_) * (neg(rng_) ? -1 : 1));
  }
  std::vector<uint64_t> random_tensor(ElemType t, int64_t n) {
    std::vector<uint64_t> v(static_cast<size_t>(n));
    for (auto& b : v) b = random_bits(t);
    return v;
  }

  // One 2-D tensor per kind ("layers.K.NAME.weight", random rows and columns), a 1-D bias, a BF16
  // tensor with 6 columns (not whole 2:4 chunks), an I32 one; __metadata__ {"format": "pt"}.
  SafeTensors make_checkpoint() {
    SafeTensors f;
    f.metadata = {{"format", "pt"}};
    int layer = 0;
    for (const CkptKind& k : kCkptKinds) {
      const int64_t rows = 1 + rng_() % 6, cols = 8 * (1 + rng_() % 3);
      const std::string name = "layers." + std::to_string(layer++ % 2) + "." + k.dtype + ".weight";
      f.tensors.push_back(bits_tensor(name, k.dtype, {rows, cols}, k.t, random_tensor(k.t, rows * cols)));
      if (layer == 2)
        f.tensors.push_back(
            bits_tensor("layers.0.bias", "F32", {cols}, ElemType::f32, random_tensor(ElemType::f32, cols)));
    }
    f.tensors.push_back(bits_tensor("odd.weight", "BF16", {3, 6}, ElemType::bf16, random_tensor(ElemType::bf16, 18)));
    f.tensors.push_back(bits_tensor("ids", "I32", {2, 4}, ElemType::s32, random_tensor(ElemType::s32, 8)));
    return f;
  }

  static const CkptKind* kind_of(const SafeTensor& s) {
    if (s.shape.size() != 2 || s.name == "odd.weight") return nullptr;
    for (const CkptKind& k : kCkptKinds)
      if (s.dtype == k.dtype) return &k;
    return nullptr;
  }
};

TEST_F(CliCheckpoint, PruneCompressDecompressRoundTripBitForBit) {
  const SafeTensors model = make_checkpoint();
  const std::string m = path("model.safetensors"), p = path("pruned.safetensors"), c = path("compressed.safetensors"),
                    d = path("dense.safetensors");
  write_safetensors(m, model);

  // prune: the documented selection, in each tensor's own dtype; everything else byte for byte.
  CliResult r = run("prune " + quote(m) + " " + quote(p) + " --json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["summary"], json::parse(R"({"pruned": 5, "already_satisfied": 0, "skipped": 3})")) << r.out;
  const SafeTensors pruned = read_safetensors(p);
  ASSERT_EQ(pruned.tensors.size(), model.tensors.size());
  std::map<std::string, json> report;
  for (const auto& t : j["tensors"]) report[t["name"]] = t;
  for (size_t i = 0; i < model.tensors.size(); ++i) {
    const SafeTensor &in = model.tensors[i], &out = pruned.tensors[i];
    SCOPED_TRACE(in.name);
    EXPECT_EQ(out.name, in.name);  // the same order
    EXPECT_EQ(out.dtype, in.dtype);
    EXPECT_EQ(out.shape, in.shape);
    const CkptKind* k = kind_of(in);
    if (!k) {
      EXPECT_EQ(out.data, in.data);
      EXPECT_EQ(report[in.name]["status"], "skipped");
      EXPECT_FALSE(pruned.metadata.contains("spmma.pruned." + in.name));
      continue;
    }
    const std::vector<uint64_t> before = tensor_bits(in, k->t), want = expected_prune(before, *k);
    EXPECT_EQ(tensor_bits(out, k->t), want);
    EXPECT_EQ(pruned.metadata.at("spmma.pruned." + in.name), k->pattern);
    const json& t = report[in.name];
    EXPECT_EQ(t["status"], "pruned");
    EXPECT_EQ(t["pattern"], k->pattern);
    EXPECT_EQ(t["nonzeros"], static_cast<int64_t>(before.size()));
    EXPECT_EQ(t["nonzeros_kept"], static_cast<int64_t>(before.size()) / k->chunk * k->kept);
    double l1 = 0, removed = 0;
    for (size_t e = 0; e < before.size(); ++e) {
      l1 += std::fabs(decode(k->t, before[e]));
      if (want[e] == 0) removed += std::fabs(decode(k->t, before[e]));
    }
    EXPECT_NEAR(t["removed"]["l1_fraction"].get<double>(), removed / l1, 1e-12);

    // The same bits as `spmma prune` of the tensor as a .npy of bit patterns.
    const size_t width = in.data.size() / before.size();
    NpyArray a = make_npy(width == 1 ? "|u1" : width == 2 ? "<u2" : "<u4", in.shape);
    for (size_t e = 0; e < before.size(); ++e) npy_set_raw(a, static_cast<int64_t>(e), before[e]);
    write_npy(path("t.npy"), a);
    ASSERT_EQ(run("prune " + quote(path("t.npy")) + " " + quote(path("tp.npy")) + " --bits --type " +
                  std::string(type_name(k->t)))
                  .code,
              0);
    const NpyArray tp = read_npy(path("tp.npy"));
    for (size_t e = 0; e < want.size(); ++e)
      ASSERT_EQ(npy_raw(tp, static_cast<int64_t>(e)), want[e]) << "element " << e;
  }
  EXPECT_EQ(pruned.metadata.at("format"), "pt");
  EXPECT_EQ(pruned.metadata.at("spmma.pruned_by").rfind("spmma ", 0), 0u);

  // The pruned checkpoint satisfies check; the model does not.
  r = run("check " + quote(p) + " --json");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(json::parse(r.out)["summary"], json::parse(R"({"checked": 5, "satisfy": 5, "violate": 0, "skipped": 3})"));
  EXPECT_EQ(run("check " + quote(m)).code, 1);
  // Pruning again changes nothing.
  r = run("prune " + quote(p) + " " + quote(path("again.safetensors")));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("0 tensors pruned, 5 already satisfied"), std::string::npos) << r.out;
  EXPECT_EQ(slurp(path("again.safetensors")), slurp(p));

  // compress: NAME.values and NAME.metadata in NAME's place, the records in __metadata__.
  r = run("compress " + quote(p) + " " + quote(c) + " --json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  j = json::parse(r.out);
  EXPECT_EQ(j["summary"]["compressed"], 5);
  EXPECT_EQ(j["summary"]["skipped"], 3);
  const SafeTensors comp = read_safetensors(c);
  EXPECT_EQ(comp.metadata.at("spmma.format"), "spmma.compressed-checkpoint");
  EXPECT_EQ(comp.metadata.at("spmma.format_version"), "1");
  EXPECT_EQ(comp.metadata.at("format"), "pt");
  size_t at = 0;
  uint64_t total_before = 0, total_after = 0;
  for (const SafeTensor& in : pruned.tensors) {
    SCOPED_TRACE(in.name);
    total_before += in.data.size();
    const CkptKind* k = kind_of(in);
    ASSERT_LT(at, comp.tensors.size());
    if (!k) {
      EXPECT_EQ(comp.tensors[at].name, in.name);
      EXPECT_EQ(comp.tensors[at].data, in.data);
      total_after += in.data.size();
      ++at;
      continue;
    }
    const int64_t rows = in.shape[0], cols = in.shape[1], chunks = cols / k->chunk, words = (chunks + 3) / 4;
    ASSERT_LT(at + 1, comp.tensors.size());
    const SafeTensor &v = comp.tensors[at], &mt = comp.tensors[at + 1];
    at += 2;
    EXPECT_EQ(v.name, in.name + ".values");
    EXPECT_EQ(v.dtype, in.dtype);
    EXPECT_EQ(v.shape, (std::vector<int64_t>{rows, cols / 2}));
    EXPECT_EQ(mt.name, in.name + ".metadata");
    EXPECT_EQ(mt.dtype, "U16");
    EXPECT_EQ(mt.shape, (std::vector<int64_t>{rows, words}));
    const std::string rec = "spmma.compressed." + in.name + ".";
    EXPECT_EQ(comp.metadata.at(rec + "type"), type_name(k->t));
    EXPECT_EQ(comp.metadata.at(rec + "pattern"), k->pattern);
    EXPECT_EQ(comp.metadata.at(rec + "rows"), std::to_string(rows));
    EXPECT_EQ(comp.metadata.at(rec + "cols"), std::to_string(cols));
    EXPECT_EQ(comp.metadata.at(rec + "ordered"), "true");
    // The values are each row's non-zeros in column order; nibble = idx0 | idx1 << 2 (1:2: 0x4
    // for element 0, 0xE for element 1).
    const std::vector<uint64_t> dense = tensor_bits(in, k->t), values = tensor_bits(v, k->t);
    std::vector<uint64_t> want_values;
    std::vector<uint16_t> want_meta(static_cast<size_t>(rows * words), 0);
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t ch = 0; ch < chunks; ++ch) {
        std::vector<int> nz;
        for (int e = 0; e < k->chunk; ++e)
          if (dense[static_cast<size_t>(row * cols + ch * k->chunk + e)] != 0) {
            nz.push_back(e);
            want_values.push_back(dense[static_cast<size_t>(row * cols + ch * k->chunk + e)]);
          }
        ASSERT_EQ(nz.size(), static_cast<size_t>(k->kept));
        const unsigned nib = k->kept == 1 ? (nz[0] == 0 ? 0x4u : 0xEu) : static_cast<unsigned>(nz[0] | nz[1] << 2);
        want_meta[static_cast<size_t>(row * words + ch / 4)] |= static_cast<uint16_t>(nib << (4 * (ch % 4)));
      }
    EXPECT_EQ(values, want_values);
    std::vector<uint16_t> meta(static_cast<size_t>(rows * words));
    for (size_t w = 0; w < meta.size(); ++w) meta[w] = static_cast<uint16_t>(mt.data[2 * w] | mt.data[2 * w + 1] << 8);
    EXPECT_EQ(meta, want_meta);
    total_after += v.data.size() + mt.data.size();
  }
  EXPECT_EQ(at, comp.tensors.size());
  EXPECT_EQ(j["summary"]["bytes_before"], total_before);
  EXPECT_EQ(j["summary"]["bytes_after"], total_after);

  // decompress gives the pruned checkpoint back: the same file, byte for byte.
  r = run("decompress " + quote(c) + " " + quote(d));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("5 tensors restored, 3 copied"), std::string::npos) << r.out;
  EXPECT_EQ(slurp(d), slurp(p));
}

TEST_F(CliCheckpoint, TensorsSelectsByName) {
  const SafeTensors model = make_checkpoint();
  const std::string m = path("model.safetensors"), p = path("p.safetensors"), c = path("c.safetensors"),
                    d = path("d.safetensors");
  write_safetensors(m, model);
  // layers.0.*: BF16, F8_E4M3, F32 weights and the bias (skipped, 1-D).
  CliResult r = run("prune " + quote(m) + " " + quote(p) + " --tensors 'layers.0.*' --json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["summary"], json::parse(R"({"pruned": 3, "already_satisfied": 0, "skipped": 1})")) << r.out;
  EXPECT_EQ(j["tensors"].size(), 4u);
  const SafeTensors pruned = read_safetensors(p);
  for (size_t i = 0; i < model.tensors.size(); ++i) {
    const SafeTensor &in = model.tensors[i], &out = pruned.tensors[i];
    SCOPED_TRACE(in.name);
    const CkptKind* k = kind_of(in);
    if (k && in.name.starts_with("layers.0.")) {
      EXPECT_EQ(tensor_bits(out, k->t), expected_prune(tensor_bits(in, k->t), *k));
      EXPECT_TRUE(pruned.metadata.contains("spmma.pruned." + in.name));
    } else {
      EXPECT_EQ(out.data, in.data);
      EXPECT_FALSE(pruned.metadata.contains("spmma.pruned." + in.name));
    }
  }
  // Only the selected tensors need satisfy their pattern to be compressed.
  r = run("compress " + quote(p) + " " + quote(c) + " --tensors 'layers.0.*' --tensors ids");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("3 tensors compressed, 2 skipped"), std::string::npos) << r.out;
  const SafeTensors comp = read_safetensors(c);
  EXPECT_EQ(comp.tensors.size(), model.tensors.size() + 3);
  EXPECT_NE(comp.find("layers.0.BF16.weight.values"), nullptr);
  EXPECT_EQ(comp.find("layers.1.F16.weight.values"), nullptr);
  EXPECT_NE(comp.find("layers.1.F16.weight"), nullptr);
  ASSERT_EQ(run("decompress " + quote(c) + " " + quote(d)).code, 0);
  EXPECT_EQ(slurp(d), slurp(p));

  // --type names the pattern: tf32's 1:2 is one only F32 has; the others are skipped, their own
  // type having no 1:2 form.
  r = run("prune " + quote(m) + " " + quote(p) + " --type tf32 --json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  j = json::parse(r.out);
  EXPECT_EQ(j["summary"]["pruned"], 1);
  for (const auto& t : j["tensors"])
    if (t["name"] == "layers.0.BF16.weight") EXPECT_EQ(t["why"], "BF16 (bf16) has no 1:2 form (--type tf32)");

  // A selection that matches nothing: the file and the patterns.
  for (const char* cmd : {"prune", "compress"})
    expect_error(
        run(std::string(cmd) + " " + quote(m) + " " + quote(path("x.safetensors")) + " --tensors 'nope*' --tensors zz"),
        {m, "no tensor matches --tensors 'nope*' 'zz'", "8 tensors in the file"});
  EXPECT_FALSE(fs::exists(path("x.safetensors")));
}

// decompress --json of a compressed checkpoint: one JSON document, a record per tensor of the
// output in its order (restored from which record, or copied), checked against the files.
TEST_F(CliCheckpoint, DecompressJsonReportsEveryTensor) {
  const SafeTensors model = make_checkpoint();
  const std::string m = path("model.safetensors"), p = path("p.safetensors"), c = path("c.safetensors"),
                    d = path("d.safetensors");
  write_safetensors(m, model);
  ASSERT_EQ(run("prune " + quote(m) + " " + quote(p)).code, 0);
  for (const bool unordered : {false, true}) {
    SCOPED_TRACE(unordered ? "compress --unordered" : "compress");
    ASSERT_EQ(run("compress " + quote(p) + " " + quote(c) + (unordered ? " --unordered" : "")).code, 0);
    const CliResult r = run("decompress " + quote(c) + " " + quote(d) + " --json");
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const json j = json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << "not one JSON document: " << r.out;
    EXPECT_EQ(slurp(d), slurp(p));  // the JSON changes nothing of what is written

    EXPECT_EQ(j["file"], c);
    EXPECT_EQ(j["output"], d);
    EXPECT_EQ(j["format"], "spmma.compressed-checkpoint");
    EXPECT_EQ(j["format_version"], "1");
    const SafeTensors comp = read_safetensors(c), dense = read_safetensors(d);
    uint64_t before = 0, after = 0;
    for (const SafeTensor& t : comp.tensors) before += t.data.size();
    for (const SafeTensor& t : dense.tensors) after += t.data.size();
    EXPECT_EQ(j["summary"], (json{{"restored", 5}, {"copied", 3}, {"bytes_before", before}, {"bytes_after", after}}))
        << r.out;
    ASSERT_EQ(j["tensors"].size(), dense.tensors.size()) << r.out;
    for (size_t i = 0; i < dense.tensors.size(); ++i) {
      const SafeTensor& t = dense.tensors[i];
      const json& e = j["tensors"][i];
      SCOPED_TRACE(t.name);
      EXPECT_EQ(e["name"], t.name);
      EXPECT_EQ(e["dtype"], t.dtype);
      EXPECT_EQ(e["shape"], json(t.shape));
      EXPECT_EQ(e["bytes"], t.data.size());
      const CkptKind* k = kind_of(t);
      if (!k) {
        EXPECT_EQ(e["status"], "copied");
        EXPECT_FALSE(e.contains("restored_from"));
        continue;
      }
      EXPECT_EQ(e["status"], "restored");
      EXPECT_EQ(e["restored_from"], (json{{"type", type_name(k->t)},
                                          {"pattern", k->pattern},
                                          {"ordered", !unordered},
                                          {"values", t.name + ".values"},
                                          {"metadata", t.name + ".metadata"}}));
      EXPECT_EQ(comp.metadata.at("spmma.compressed." + t.name + ".type"), type_name(k->t));
    }
    EXPECT_EQ(r.out.find("decompressed "), std::string::npos) << "text in the JSON output: " << r.out;
  }

  // An error with --json: one JSON document with the status, and no output file.
  const std::string out = path("out.safetensors");
  const CliResult r = run("decompress " + quote(p) + " " + quote(out) + " --json");
  EXPECT_EQ(r.code, 2);
  const json e = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(e.is_discarded()) << r.out;
  EXPECT_EQ(e["error"]["status"], "io_error") << r.out;
  EXPECT_NE(e["error"]["message"].get<std::string>().find("not an spmma compressed checkpoint"), std::string::npos);
  EXPECT_FALSE(fs::exists(out));
}

// A -0 is a zero: prune writes +0 for every zero (so the round trip is exact); compress reports
// the -0s the format cannot keep. NaN is the largest magnitude and keeps its payload.
TEST_F(CliCheckpoint, SignedZerosAndNaN) {
  const uint64_t nz = 0x8000, nan = 0x7FC1, five = encode(ElemType::bf16, 5), one = encode(ElemType::bf16, 1),
                 two = encode(ElemType::bf16, 2), three = encode(ElemType::bf16, -3), m1 = encode(ElemType::bf16, -1);
  SafeTensors f;
  f.tensors.push_back(
      bits_tensor("w", "BF16", {1, 12}, ElemType::bf16, {nz, five, 0, 0, nan, one, two, three, nz, nz, m1, 0}));
  const std::string m = path("m.safetensors"), p = path("p.safetensors"), c = path("c.safetensors"),
                    d = path("d.safetensors");
  write_safetensors(m, f);
  CliResult r = run("prune " + quote(m) + " " + quote(p) + " --json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(json::parse(r.out)["tensors"][0]["negative_zeros_to_positive"], 3);
  EXPECT_EQ(tensor_bits(read_safetensors(p).tensors[0], ElemType::bf16),
            (std::vector<uint64_t>{0, five, 0, 0, nan, 0, 0, three, 0, 0, m1, 0}));
  ASSERT_EQ(run("compress " + quote(p) + " " + quote(c)).code, 0);
  ASSERT_EQ(run("decompress " + quote(c) + " " + quote(d)).code, 0);
  EXPECT_EQ(slurp(d), slurp(p));

  // A checkpoint that satisfies 2:4 with -0 where no nibble points: compress says so.
  f.tensors[0] = bits_tensor("w", "BF16", {1, 8}, ElemType::bf16, {nz, five, 0, three, five, nz, 0, 0});
  write_safetensors(m, f);
  r = run("compress " + quote(m) + " " + quote(c) + " --json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(json::parse(r.out)["tensors"][0]["negative_zeros_to_positive"], 2);
  ASSERT_EQ(run("decompress " + quote(c) + " " + quote(d)).code, 0);
  EXPECT_EQ(tensor_bits(read_safetensors(d).tensors[0], ElemType::bf16),
            (std::vector<uint64_t>{0, five, 0, three, five, 0, 0, 0}));
}

TEST_F(CliCheckpoint, ErrorsNameTheFileTensorAndWhatToDo) {
  SafeTensors model = make_checkpoint();
  const std::string m = path("model.safetensors"), p = path("p.safetensors"), c = path("c.safetensors"),
                    out = path("out.safetensors");
  write_safetensors(m, model);
  ASSERT_EQ(run("prune " + quote(m) + " " + quote(p)).code, 0);

  // An unpruned tensor into compress: pattern_violation naming tensor, row and chunk; no output.
  SafeTensors bad = read_safetensors(p);
  SafeTensor* t = nullptr;
  for (SafeTensor& s : bad.tensors)
    if (s.dtype == "F16" && s.shape.size() == 2) t = &s;
  ASSERT_NE(t, nullptr);
  const int64_t rows = t->shape[0], cols = t->shape[1];
  const int64_t row = static_cast<int64_t>(rng_() % static_cast<unsigned>(rows)),
                chunk = static_cast<int64_t>(rng_() % static_cast<unsigned>(cols / 4));
  std::vector<uint64_t> bits = tensor_bits(*t, ElemType::f16);
  for (int e = 0; e < 4; ++e)
    if (bits[static_cast<size_t>(row * cols + chunk * 4 + e)] == 0) {
      bits[static_cast<size_t>(row * cols + chunk * 4 + e)] = encode(ElemType::f16, 1.5);
      break;
    }
  *t = bits_tensor(t->name, "F16", {rows, cols}, ElemType::f16, bits);
  const std::string b = path("bad.safetensors");
  write_safetensors(b, bad);
  expect_error(run("compress " + quote(b) + " " + quote(out)),
               {b, "tensor \"" + t->name + "\"", "row " + std::to_string(row) + ", chunk " + std::to_string(chunk),
                "3 non-zeros, 2:4 allows at most 2", "spmma prune"});
  EXPECT_FALSE(fs::exists(out));
  // The unpruned model: all five, counted.
  expect_error(run("compress " + quote(m) + " " + quote(out)), {m, "row 0, chunk 0", "5 of 5 tensors", "spmma prune"});
  // As compress of one .npy matrix: the place, and prune first.
  const std::string in = path("in.npy");
  write_npy(in, random_dense("bf16", 4, 8));
  expect_error(run("compress " + quote(in) + " --type bf16 --out " + quote(c)), {in, "row 0, chunk 0", "spmma prune"});

  // Not a compressed checkpoint into decompress: a plain checkpoint, a .npy, one compressed matrix.
  expect_error(run("decompress " + quote(m) + " " + quote(out)),
               {m, "not an spmma compressed checkpoint", "spmma.format"});
  expect_error(run("decompress " + quote(in) + " " + quote(out)), {in, ".npy"});
  const std::string pr = path("pr.npy"), one = path("one.safetensors");
  ASSERT_EQ(run("prune " + quote(in) + " " + quote(pr) + " --type bf16").code, 0);
  ASSERT_EQ(run("compress " + quote(pr) + " --type bf16 --out " + quote(one)).code, 0);
  expect_error(run("decompress " + quote(one) + " " + quote(out)), {one, "one compressed matrix", "OUT.npy"});
  EXPECT_EQ(run("decompress " + quote(one) + " " + quote(path("back.npy"))).code, 0);  // still works
  ASSERT_EQ(run("compress " + quote(p) + " " + quote(c)).code, 0);
  expect_error(run("decompress " + quote(c) + " " + quote(path("o.npy"))),
               {c, "compressed checkpoint", "OUT.safetensors"});
  expect_error(run("decompress " + quote(c) + " " + quote(out) + " --type bf16"), {"drop --type"});
  // A compressed checkpoint is not pruned or compressed again.
  for (const char* cmd : {"prune", "compress"})
    expect_error(run(std::string(cmd) + " " + quote(c) + " " + quote(out)), {c, "decompress it first"});

  // A damaged record: named, with the tensor.
  SafeTensors comp = read_safetensors(c);
  const std::string name = comp.tensors[0].name;  // kind_of: the first tensor of make_checkpoint is a weight
  ASSERT_TRUE(name.ends_with(".values")) << name;
  const std::string base = name.substr(0, name.size() - 7);
  comp.metadata.erase("spmma.compressed." + base + ".rows");
  write_safetensors(c, comp);
  expect_error(run("decompress " + quote(c) + " " + quote(out)), {c, "\"" + base + "\"", "rows"});
  comp.metadata["spmma.compressed." + base + ".rows"] = "1000";
  write_safetensors(c, comp);
  expect_error(run("decompress " + quote(c) + " " + quote(out)), {c, "\"" + base + "\"", "values"});
  comp.metadata["spmma.compressed." + base + ".rowz"] = "1";
  write_safetensors(c, comp);
  expect_error(run("decompress " + quote(c) + " " + quote(out)), {c, ".rowz", "FIELD"});
  comp.metadata["spmma.format_version"] = "2";
  write_safetensors(c, comp);
  expect_error(run("decompress " + quote(c) + " " + quote(out)), {c, "\"2\"", "version 1"});
  EXPECT_FALSE(fs::exists(out));

  // A name the compressed tensors would take; the wrong kind of output; options for .npy.
  model.tensors.push_back(bits_tensor(model.tensors[0].name + ".values", "F32", {1}, ElemType::f32, {0}));
  write_safetensors(m, model);
  ASSERT_EQ(run("prune " + quote(m) + " " + quote(p)).code, 0);
  expect_error(run("compress " + quote(p) + " " + quote(out)), {p, model.tensors[0].name + ".values", "--tensors"});
  expect_error(run("prune " + quote(m) + " " + quote(path("o.npy"))), {"OUT ending in .safetensors"});
  expect_error(run("prune " + quote(m) + " " + quote(m)), {"same file"});
  expect_error(run("prune " + quote(m) + " " + quote(out) + " --mask " + quote(pr)), {"--mask is for .npy"});
  expect_error(run("compress " + quote(m) + " " + quote(out) + " --out " + quote(out)), {"not both"});
  expect_error(run("compress " + quote(m) + " --values " + quote(path("v.npy")) + " --meta " + quote(path("mm.npy"))),
               {"not into --values"});
  expect_error(run("compress " + quote(pr) + " " + quote(out) + " --type bf16"), {pr, "--out"});
  expect_error(run("prune " + quote(in) + " " + quote(pr)), {"--type is required for .npy"});
  expect_error(run("prune " + quote(in) + " " + quote(pr) + " --type bf16 --tensors x"),
               {"--tensors selects tensors of a .safetensors"});
}

}  // namespace
