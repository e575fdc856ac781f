// The spmma CLI's format commands, run as a user would: the binary at SPMMA_CLI_PATH on .npy
// files in a fresh temporary directory, with fresh random inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include "spmma/npy.hpp"
#include "spmma/sparse.hpp"
#include "spmma/types.hpp"

#ifndef SPMMA_CLI_PATH
#error "SPMMA_CLI_PATH must name the spmma binary"
#endif

namespace fs = std::filesystem;
using namespace spmma;
using nlohmann::json;

namespace {

struct CliResult {
  int code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

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
    static std::atomic<int> counter{0};
    const unsigned seed = std::random_device{}();
    rng_.seed(seed);
    ::testing::Test::RecordProperty("seed", std::to_string(seed));
    dir_ = fs::temp_directory_path() /
           ("spmma_cli_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" + std::to_string(seed));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  CliResult run(const std::string& args) {
    const fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    const std::string cmd = quote(SPMMA_CLI_PATH) + " " + args + " >" + quote(out.string()) + " 2>" + quote(err.string());
    const int st = std::system(cmd.c_str());
    CliResult r;
    r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

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

  std::mt19937 rng_;
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
  r = run("check");  // missing the required input and --type: CLI11's own message
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.code, 2);
  EXPECT_FALSE(r.err.empty());
}

}  // namespace
