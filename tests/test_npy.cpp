// SPDX-License-Identifier: BSD-3-Clause
// .npy reader / writer: round trips for every dtype and shape, hand-written headers of every
// version and spelling, and malformed files that must give io_error naming the file.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "io/files.hpp"
#include "spmma/error.hpp"
#include "spmma/matrix.hpp"
#include "spmma/npy.hpp"
#include "spmma/types.hpp"

namespace fs = std::filesystem;
using namespace spmma;

namespace {

const char* const kDtypes[] = {"|b1", "|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8", "<f2", "<f4", "<f8"};

class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    const unsigned seed = std::random_device{}();
    rng_.seed(seed);
    ::testing::Test::RecordProperty("seed", std::to_string(seed));
    dir_ = fs::temp_directory_path() /
           ("spmma_npy_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" + std::to_string(seed));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  static void write_bytes(const std::string& p, const std::vector<uint8_t>& b) {
    std::ofstream f(p, std::ios::binary);
    f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
  static std::vector<uint8_t> read_bytes(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  }
  // A .npy file with a hand-written header (version major.0) and `data` as the payload.
  static std::vector<uint8_t> hand_made(int major, const std::string& header, const std::vector<uint8_t>& data) {
    std::vector<uint8_t> b = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
    const size_t n = header.size();
    b.push_back(static_cast<uint8_t>(n));
    b.push_back(static_cast<uint8_t>(n >> 8));
    if (major >= 2) {
      b.push_back(static_cast<uint8_t>(n >> 16));
      b.push_back(static_cast<uint8_t>(n >> 24));
    }
    b.insert(b.end(), header.begin(), header.end());
    b.insert(b.end(), data.begin(), data.end());
    return b;
  }
  std::vector<uint8_t> random_bytes(size_t n) {
    std::vector<uint8_t> v(n);
    std::uniform_int_distribution<int> d(0, 255);
    for (auto& x : v) x = static_cast<uint8_t>(d(rng_));
    return v;
  }
  // Expects read_npy(p) to throw io_error whose message names the file and contains `what`.
  static void expect_io_error(const std::string& p, const std::string& what) {
    try {
      (void)read_npy(p);
      ADD_FAILURE() << "read_npy(" << p << ") did not throw (expected: " << what << ")";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Status::io_error) << e.what();
      const std::string msg = e.what();
      EXPECT_NE(msg.find(p), std::string::npos) << "message does not name the file: " << msg;
      EXPECT_NE(msg.find(what), std::string::npos) << "message lacks '" << what << "': " << msg;
    }
  }

  std::mt19937 rng_;
  fs::path dir_;
};

TEST_F(NpyTest, RoundTripEveryDtypeAndShape) {
  std::uniform_int_distribution<int64_t> dim(1, 9);
  for (const char* dt : kDtypes) {
    for (int ndim : {1, 2}) {
      SCOPED_TRACE(std::string(dt) + " ndim " + std::to_string(ndim));
      std::vector<int64_t> shape = ndim == 1 ? std::vector<int64_t>{dim(rng_)} : std::vector<int64_t>{dim(rng_), dim(rng_)};
      NpyArray a = make_npy(dt, shape);
      a.data = random_bytes(a.data.size());
      if (std::string(dt) == "|b1")
        for (auto& x : a.data) x &= 1;
      const std::string p = path(std::string("rt_") + dt[1] + dt[2] + "_" + std::to_string(ndim) + ".npy");
      write_npy(p, a);
      const NpyArray b = read_npy(p);
      EXPECT_EQ(b.dtype, a.dtype);
      EXPECT_EQ(b.shape, a.shape);
      EXPECT_EQ(b.data, a.data);
      EXPECT_EQ(b.rows(), ndim == 1 ? 1 : shape[0]);
      EXPECT_EQ(b.cols(), shape.back());

      // What NumPy expects of the file: version 1.0, data 64-byte aligned, header ends in '\n'.
      const auto bytes = read_bytes(p);
      ASSERT_GE(bytes.size(), 10u);
      EXPECT_EQ(bytes[6], 1);
      EXPECT_EQ(bytes[7], 0);
      const size_t hl = bytes[8] | (bytes[9] << 8);
      EXPECT_EQ((10 + hl) % 64, 0u);
      EXPECT_EQ(bytes[10 + hl - 1], '\n');
      EXPECT_EQ(bytes.size(), 10 + hl + a.data.size());
      const std::string header(bytes.begin() + 10, bytes.begin() + 10 + static_cast<long>(hl));
      EXPECT_NE(header.find(std::string("'descr': '") + dt + "'"), std::string::npos) << header;
      EXPECT_NE(header.find("'fortran_order': False"), std::string::npos) << header;
    }
  }
}

TEST_F(NpyTest, ZeroSizedAndWideShapes) {
  for (std::vector<int64_t> shape : {std::vector<int64_t>{0}, {0, 5}, {3, 0}, {1, 1000}}) {
    NpyArray a = make_npy("<f4", shape);
    a.data = random_bytes(a.data.size());
    const std::string p = path("z.npy");
    write_npy(p, a);
    const NpyArray b = read_npy(p);
    EXPECT_EQ(b.shape, shape);
    EXPECT_EQ(b.data, a.data);
  }
}

TEST_F(NpyTest, ReadsVersions2And3AndPythonSpellings) {
  const auto data = random_bytes(3 * 4 * 2);
  const std::string headers[] = {
      "{'descr': '<u2', 'fortran_order': False, 'shape': (3, 4), }          \n",
      "{\"descr\": \"<u2\", \"fortran_order\": False, \"shape\": (3, 4)}\n",
      "{'shape':(3,4),'fortran_order':False,'descr':'<u2'}",
      "{ 'descr' : '=u2' ,\n 'fortran_order' : False , 'shape' : ( 3 , 4 , ) , }\t\n",
      "{'descr': 'u2', 'fortran_order': False, 'shape': [3, 4]}",
      "{u'descr': u'<u2', 'fortran_order': False, 'shape': (3L, 4L), }\n",
  };
  int k = 0;
  for (int major : {1, 2, 3}) {
    for (const auto& h : headers) {
      SCOPED_TRACE("version " + std::to_string(major) + " header " + h);
      const std::string p = path("v" + std::to_string(k++) + ".npy");
      write_bytes(p, hand_made(major, h, data));
      const NpyArray a = read_npy(p);
      EXPECT_EQ(a.dtype, "<u2");
      EXPECT_EQ(a.shape, (std::vector<int64_t>{3, 4}));
      EXPECT_EQ(a.data, data);
    }
  }
  // One-byte dtypes: NumPy writes '|', '<' and '>' mean the same.
  for (const char* d : {"|u1", "<u1", ">u1", "=u1", "u1"}) {
    const std::string p = path("one.npy");
    write_bytes(p, hand_made(1, std::string("{'descr': '") + d + "', 'fortran_order': False, 'shape': (5,), }\n",
                             {1, 2, 3, 4, 5}));
    const NpyArray a = read_npy(p);
    EXPECT_EQ(a.dtype, "|u1") << d;
    EXPECT_EQ(a.shape, (std::vector<int64_t>{5}));
  }
}

TEST_F(NpyTest, FortranOrderAcceptedOnlyWhenLayoutIsTheSame) {
  const std::string p = path("f1.npy");
  write_bytes(p, hand_made(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (4,), }\n", random_bytes(16)));
  EXPECT_EQ(read_npy(p).shape, (std::vector<int64_t>{4}));
  const std::string q = path("f2.npy");
  write_bytes(q, hand_made(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (3, 4), }\n", random_bytes(48)));
  expect_io_error(q, "np.ascontiguousarray");
  expect_io_error(q, "Fortran order");
}

TEST_F(NpyTest, MalformedFilesGiveIoErrorNamingTheFile) {
  const std::string good = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }\n";
  const auto data = random_bytes(48);
  struct Case {
    std::string name;
    std::vector<uint8_t> bytes;
    std::string what;
  };
  std::vector<Case> cases;
  {
    auto b = hand_made(1, good, data);
    b[1] = 'X';
    cases.push_back({"bad_magic", b, "not a .npy file (magic bytes are 93 58"});
  }
  cases.push_back({"zip", {'P', 'K', 3, 4, 20, 0, 0, 0, 0, 0, 0, 0}, ".npz"});
  cases.push_back({"empty", {}, "empty"});
  cases.push_back({"short", {0x93, 'N', 'U', 'M', 'P', 'Y', 1}, "truncated"});
  cases.push_back({"truncated_data", hand_made(1, good, std::vector<uint8_t>(data.begin(), data.begin() + 40)),
                   "header declares shape (3, 4) but the file holds 40 bytes of data, need 48"});
  {
    auto b = hand_made(1, good, data);
    b.push_back(0);
    cases.push_back({"trailing", b, "holds 49 bytes of data, need 48"});
  }
  {
    auto b = hand_made(1, good, data);
    b.resize(30);  // cut inside the header
    cases.push_back({"truncated_header", b, "truncated .npy header"});
  }
  {
    auto b = hand_made(1, good, data);
    b[6] = 4;
    cases.push_back({"version", b, "unsupported .npy format version 4.0"});
  }
  cases.push_back({"big_endian", hand_made(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (3, 4), }\n", data),
                   "big-endian dtype '>f4'"});
  cases.push_back({"complex", hand_made(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (3, 2), }\n", data),
                   "unsupported dtype '<c8'"});
  cases.push_back({"string", hand_made(1, "{'descr': '<U3', 'fortran_order': False, 'shape': (4,), }\n", data),
                   "unsupported dtype '<U3'"});
  cases.push_back({"object", hand_made(1, "{'descr': '|O', 'fortran_order': False, 'shape': (6,), }\n", data),
                   "unsupported dtype '|O'"});
  cases.push_back({"structured",
                   hand_made(1, "{'descr': [('a', '<f4'), ('b', '<f4')], 'fortran_order': False, 'shape': (6,), }\n", data),
                   "structured dtypes"});
  cases.push_back({"three_d", hand_made(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 3), }\n", data),
                   "has 3 dimensions"});
  cases.push_back({"scalar", hand_made(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }\n", {1, 2, 3, 4}),
                   "has 0 dimensions"});
  cases.push_back({"negative", hand_made(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-3, 4), }\n", data),
                   "negative dimension"});
  cases.push_back({"huge", hand_made(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 8), }\n", data),
                   "too large"});
  cases.push_back({"huge2", hand_made(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1152921504606846976, 4), }\n", data),
                   "need more than fits in memory"});
  cases.push_back({"missing_key", hand_made(1, "{'descr': '<f4', 'shape': (3, 4), }\n", data), "lacks the key 'fortran_order'"});
  cases.push_back({"not_dict", hand_made(1, "['descr', '<f4']\n", data), "malformed .npy header"});
  cases.push_back({"unterminated", hand_made(1, "{'descr': '<f4, 'fortran_order': False, 'shape': (3, 4), }\n", data),
                   "malformed .npy header"});
  cases.push_back({"garbage_after", hand_made(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4)} x\n", data),
                   "malformed .npy header"});
  cases.push_back({"bad_bool", hand_made(1, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (3, 4)}\n", data),
                   "malformed .npy header"});
  cases.push_back({"float_dim", hand_made(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3.0, 4)}\n", data),
                   "malformed .npy header"});
  cases.push_back({"deep", hand_made(1, "{'descr': " + std::string(200, '(') + "\n", data), "malformed .npy header"});
  cases.push_back({"dup", hand_made(1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3, 4)}\n", data),
                   "duplicate key"});
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string p = path(c.name + ".npy");
    write_bytes(p, c.bytes);
    expect_io_error(p, c.what);
  }
  expect_io_error(path("does_not_exist.npy"), "No such file");
}

TEST_F(NpyTest, RandomCorruptionNeverCrashes) {
  NpyArray a = make_npy("<i4", {7, 9});
  a.data = random_bytes(a.data.size());
  const auto good = serialize_npy(a);
  std::uniform_int_distribution<size_t> pos(0, 127);
  for (int trial = 0; trial < 300; ++trial) {
    auto b = good;
    const size_t n = 1 + trial % 4;
    for (size_t k = 0; k < n; ++k) b[pos(rng_)] = random_bytes(1)[0];
    if (trial % 3 == 0) b.resize(pos(rng_) + 1);
    try {
      const NpyArray r = parse_npy(b, "fuzz.npy");
      EXPECT_EQ(static_cast<size_t>(r.size()) * r.itemsize(), r.data.size());
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Status::io_error) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("fuzz.npy: ", 0), 0u) << e.what();
    }
  }
}

TEST_F(NpyTest, WriteErrorsNameTheFile) {
  NpyArray a = make_npy("<f4", {2, 2});
  const std::string p = (dir_ / "no_such_dir" / "x.npy").string();
  try {
    write_npy(p, a);
    ADD_FAILURE() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Status::io_error);
    EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
  a.data.pop_back();  // inconsistent with the shape
  EXPECT_THROW(write_npy(path("y.npy"), a), Error);
  EXPECT_THROW(make_npy("<c16", {2}), Error);
  EXPECT_THROW(make_npy("<f4", {2, 2, 2}), Error);
}

TEST_F(NpyTest, ValueAccessAndExactStores) {
  NpyArray i1 = make_npy("|i1", {3});
  npy_set_value(i1, 0, -128);
  npy_set_value(i1, 1, 127);
  npy_set_value(i1, 2, -1);
  EXPECT_EQ(npy_value(i1, 0), -128);
  EXPECT_EQ(npy_value(i1, 2), -1);
  EXPECT_EQ(npy_raw(i1, 2), 0xFFu);
  EXPECT_THROW(npy_set_value(i1, 0, 128), Error);
  EXPECT_THROW(npy_set_value(i1, 0, 1.5), Error);
  NpyArray u8 = make_npy("<u8", {1});
  npy_set_value(u8, 0, 18446744073709549568.0);  // 2^64 - 2048, the largest double below 2^64
  EXPECT_EQ(npy_raw(u8, 0), 18446744073709549568ull);
  EXPECT_THROW(npy_set_value(u8, 0, 18446744073709551616.0), Error);
  NpyArray f4 = make_npy("<f4", {2});
  npy_set_value(f4, 0, 0.15625);
  EXPECT_EQ(npy_value(f4, 0), 0.15625);
  EXPECT_THROW(npy_set_value(f4, 1, 0.1), Error);
  npy_set_value(f4, 1, std::nan(""));
  EXPECT_TRUE(std::isnan(npy_value(f4, 1)));
  NpyArray b1 = make_npy("|b1", {2});
  npy_set_value(b1, 1, 1);
  EXPECT_EQ(npy_value(b1, 1), 1);
  EXPECT_THROW(npy_set_value(b1, 0, 2), Error);
}

// ---------------------------------------------------------------- Matrix conversions
// (these go through spmma::encode / decode)

TEST_F(NpyTest, MatrixValuesRoundTripEveryType) {
  std::uniform_real_distribution<double> mag(0.5, 6.0);
  std::bernoulli_distribution sign(0.5);
  for (ElemType t : kAllElemTypes) {
    const TypeInfo& ti = type_info(t);
    SCOPED_TRACE(std::string(ti.name));
    Matrix m(t, 5, 8);
    for (int64_t r = 0; r < m.rows; ++r)
      for (int64_t c = 0; c < m.cols; ++c) {
        double v = mag(rng_);
        if (ti.min_value < 0 && sign(rng_)) v = -v;
        if (t == ElemType::b1) v = 1;
        m.set_value(r, c, v);
      }
    const std::string p = path("m.npy");
    write_npy_values(p, m);
    const NpyArray a = read_npy(p);
    EXPECT_EQ(a.dtype, std::string(npy_value_dtype(t)));
    EXPECT_EQ(a.shape, (std::vector<int64_t>{5, 8}));
    const Matrix back = read_npy_values(p, t);
    EXPECT_EQ(back, m);
  }
}

TEST_F(NpyTest, MatrixBitsRoundTripEveryType) {
  for (ElemType t : kAllElemTypes) {
    const TypeInfo& ti = type_info(t);
    SCOPED_TRACE(std::string(ti.name));
    Matrix m(t, 3, 6);
    const uint64_t mask = ti.bits >= 64 ? ~0ull : ((1ull << ti.bits) - 1);
    std::uniform_int_distribution<uint64_t> d;
    for (auto& b : m.bits) b = d(rng_) & mask;
    const std::string p = path("b.npy");
    write_npy_bits(p, m);
    const NpyArray a = read_npy(p);
    EXPECT_EQ(a.dtype, std::string(npy_bits_dtype(t)));
    EXPECT_EQ(read_npy_bits(p, t), m);
  }
  EXPECT_EQ(npy_bits_dtype(ElemType::bf16), "<u2");
  EXPECT_EQ(npy_bits_dtype(ElemType::tf32), "<u4");
  EXPECT_EQ(npy_bits_dtype(ElemType::e2m1), "|u1");
  EXPECT_EQ(npy_bits_dtype(ElemType::e4m3), "|u1");
}

TEST_F(NpyTest, MatrixFromValuesRoundsAndFromOneDim) {
  // bf16 from a 1-D float32 array: a 1 x n matrix, values rounded RNE.
  NpyArray a = make_npy("<f4", {4});
  npy_set_value(a, 0, 1.0);
  npy_set_value(a, 1, 1.0 + std::ldexp(1.0, -8));  // halfway between two bf16 values: ties to even -> 1.0
  npy_set_value(a, 2, -2.5);
  npy_set_value(a, 3, 3.0);
  const Matrix m = npy_to_matrix(a, ElemType::bf16, "a.npy");
  EXPECT_EQ(m.rows, 1);
  EXPECT_EQ(m.cols, 4);
  EXPECT_EQ(m.at(0, 0), 0x3F80u);
  EXPECT_EQ(m.at(0, 1), 0x3F80u);
  EXPECT_EQ(m.value(0, 2), -2.5);
  // A NaN cannot become an integer: invalid_value naming the file and element.
  NpyArray n = make_npy("<f8", {2, 2});
  npy_set_value(n, 3, std::nan(""));
  try {
    (void)npy_to_matrix(n, ElemType::s8, "n.npy");
    ADD_FAILURE() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Status::invalid_value);
    EXPECT_NE(std::string(e.what()).find("n.npy: element (1, 1)"), std::string::npos) << e.what();
  }
}

TEST_F(NpyTest, MatrixFromBitsChecksWidthAndDtype) {
  NpyArray a = make_npy("|u1", {2, 2});
  npy_set_raw(a, 2, 0x1F);
  try {
    (void)npy_bits_to_matrix(a, ElemType::e2m1, "q.npy");
    ADD_FAILURE() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Status::invalid_value);
    EXPECT_NE(std::string(e.what()).find("q.npy: element (1, 0) = 0x1f"), std::string::npos) << e.what();
  }
  // bf16 bit patterns from int16 (as torch's .view(torch.int16) gives them): two's complement bytes.
  NpyArray s = make_npy("<i2", {1, 2});
  npy_set_value(s, 0, -16512);  // 0xBF80 = bf16 -1.0
  npy_set_value(s, 1, 16256);   // 0x3F80 = bf16 1.0
  const Matrix m = npy_bits_to_matrix(s, ElemType::bf16, "s.npy");
  EXPECT_EQ(m.value(0, 0), -1.0);
  EXPECT_EQ(m.value(0, 1), 1.0);
  EXPECT_THROW((void)npy_bits_to_matrix(make_npy("<f4", {2}), ElemType::bf16, "f.npy"), Error);
}

// ml_dtypes' bfloat16 and float8 arrays are saved by NumPy with the raw-bytes descr '<V2' / '|V1'
// (they were refused): read as bit patterns, never as numbers; widths 1, 2, 4, 8.
TEST_F(NpyTest, ReadsRawBytesDtypesAsBitPatterns) {
  const std::vector<std::pair<std::string, std::string>> spellings = {
      {"<V2", "<V2"}, {"|V2", "<V2"}, {"V2", "<V2"}, {"|V1", "|V1"}, {"<V1", "|V1"}, {"<V4", "<V4"}, {"|V8", "<V8"}};
  for (const auto& [descr, normalized] : spellings) {
    SCOPED_TRACE(descr);
    const size_t item = static_cast<size_t>(normalized[2] - '0');
    const auto data = random_bytes(2 * 3 * item);
    const std::string p = path("v.npy");
    write_bytes(p, hand_made(1, "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (2, 3), }\n", data));
    const NpyArray a = read_npy(p);
    EXPECT_EQ(a.dtype, normalized);
    EXPECT_EQ(a.data, data);
    EXPECT_TRUE(npy_dtype_is_void(a.dtype));
    EXPECT_FALSE(npy_dtype_is_integer(a.dtype));
    EXPECT_FALSE(npy_dtype_is_float(a.dtype));
    EXPECT_THROW((void)npy_value(a, 0), Error);  // raw bytes have no numeric value
    NpyArray b = a;
    EXPECT_THROW(npy_set_value(b, 0, 1.0), Error);
    write_npy(path("w.npy"), a);
    EXPECT_EQ(read_npy(path("w.npy")).data, data);
  }
  expect_io_error(([&] {
                    const std::string p = path("be.npy");
                    write_bytes(p, hand_made(1, "{'descr': '>V2', 'fortran_order': False, 'shape': (1,), }\n", {0, 0}));
                    return p;
                  })(),
                  "big-endian");
  expect_io_error(([&] {
                    const std::string p = path("v3.npy");
                    write_bytes(p, hand_made(1, "{'descr': '|V3', 'fortran_order': False, 'shape': (1,), }\n", {0, 0, 0}));
                    return p;
                  })(),
                  "unsupported dtype '|V3'");
  // bf16 -1.0 and 1.0 as ml_dtypes saves them; e4m3 1.0 in '|V1'.
  NpyArray bf = make_npy("<V2", {1, 2});
  npy_set_raw(bf, 0, 0xBF80);
  npy_set_raw(bf, 1, 0x3F80);
  const Matrix m = npy_bits_to_matrix(bf, ElemType::bf16, "bf.npy");
  EXPECT_EQ(m.value(0, 0), -1.0);
  EXPECT_EQ(m.value(0, 1), 1.0);
  NpyArray f8 = make_npy("|V1", {1});
  npy_set_raw(f8, 0, 0x38);
  EXPECT_EQ(npy_bits_to_matrix(f8, ElemType::e4m3, "f8.npy").value(0, 0), 1.0);
  EXPECT_EQ(matrix_bits_to_npy(m, "<V2").data, bf.data);
}

// The .npy reader is also built with clang (a libFuzzer target): src/io/npy.cpp must compile
// there (a std::pair of the incomplete PyVal did not).
TEST_F(NpyTest, ReaderCompilesWithClang) {
  if (std::system("command -v clang++ >/dev/null 2>&1") != 0) GTEST_SKIP() << "no clang++";
  const fs::path root = fs::path(__FILE__).parent_path().parent_path();
  const fs::path log = dir_ / "clang.log";
  const std::string cmd = "clang++ -std=c++20 -fsyntax-only -I'" + (root / "include").string() + "' -I'" +
                          (root / "src").string() + "' '" + (root / "src/io/npy.cpp").string() + "' >'" + log.string() +
                          "' 2>&1";
  const int rc = std::system(cmd.c_str());
  const auto text = read_bytes(log.string());
  EXPECT_EQ(rc, 0) << std::string(text.begin(), text.end());
}

// Writes go through a temporary beside the target and a rename: a failure (here /dev/full)
// leaves no file, and no temporary; the files of one OutputFiles appear together or not at all.
TEST_F(NpyTest, WritesAreWholeOrNotAtAll) {
  NpyArray a = make_npy("<f4", {2, 2});
  a.data = random_bytes(a.data.size());
  // Replacing a file keeps its permissions; writing through a symbolic link replaces its target.
  const std::string p = path("x.npy"), link = path("link.npy");
  write_npy(p, make_npy("<f4", {1}));
  fs::permissions(p, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  write_npy(p, a);
  EXPECT_EQ(read_npy(p).data, a.data);
  EXPECT_EQ(fs::status(p).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  fs::create_symlink(p, link);
  a.data = random_bytes(a.data.size());
  write_npy(link, a);
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read_npy(p).data, a.data);
  if (fs::exists("/dev/full")) {
    try {
      write_npy("/dev/full", a);
      ADD_FAILURE() << "a write to /dev/full succeeded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Status::io_error);
      EXPECT_NE(std::string(e.what()).find("/dev/full: write failed"), std::string::npos) << e.what();
    }
    io::OutputFiles files;
    files.add(path("first.npy"), serialize_npy(a));
    files.add("/dev/full", serialize_npy(a));
    EXPECT_THROW(files.commit(), Error);
    EXPECT_FALSE(fs::exists(path("first.npy")));
  }
  {
    io::OutputFiles files;
    files.add(path("one.npy"), serialize_npy(a));
    EXPECT_THROW(files.add(path("sub/../one.npy"), serialize_npy(a)), Error);  // the same file twice
  }
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".spmma-tmp"), std::string::npos) << "left behind: " << e.path();
  // Paths that cannot be outputs fail before any work.
  EXPECT_THROW(io::check_output_path(dir_.string()), Error);
  EXPECT_THROW(io::check_output_path(path("none/x.npy")), Error);
  EXPECT_THROW(io::check_output_path(path("x.npy/y.npy")), Error);  // x.npy is a file
  EXPECT_NO_THROW(io::check_output_path(path("new.npy")));
  // Names of one file.
  fs::create_directories(dir_ / "sub");
  EXPECT_TRUE(io::same_file(p, path("sub/../x.npy")));
  EXPECT_TRUE(io::same_file(p, link));
  EXPECT_TRUE(io::same_file(path("new.npy"), path("./new.npy")));
  EXPECT_FALSE(io::same_file(p, path("y.npy")));
}

// An element count that fits in 64 bits but whose byte count does not (2^62 x 8 bytes) wrapped to
// an empty buffer.
TEST_F(NpyTest, ByteCountsThatOverflowAreRefused) {
  EXPECT_THROW((void)make_npy("<f8", {int64_t{1} << 61, 2}), Error);
  EXPECT_THROW((void)make_npy("<u4", {int64_t{1} << 62}), Error);
  NpyArray a;
  a.dtype = "<f8";
  a.shape = {int64_t{1} << 61, 2};
  EXPECT_THROW((void)serialize_npy(a), Error);
}

}  // namespace
