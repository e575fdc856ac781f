// SPDX-License-Identifier: BSD-3-Clause
// safetensors reader / writer and the compressed-matrix container: round trips for every dtype
// and every sparse type, a file as the safetensors library writes it, and malformed files
// (each class of defect the reader must refuse), which must give io_error naming the file.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "spmma/error.hpp"
#include "spmma/safetensors.hpp"
#include "spmma/sparse.hpp"
#include "spmma/types.hpp"

using namespace spmma;

namespace {

const char* const kDtypes[] = {"BOOL", "U8",  "I8",  "F8_E5M2", "F8_E4M3", "F8_E8M0", "U16", "I16",
                               "F16",  "BF16", "U32", "I32",     "F32",     "U64",     "I64", "F64"};

// A file from a header text and a data buffer, as the format lays them out.
std::vector<uint8_t> file_of(const std::string& header, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> b(8);
  const uint64_t n = header.size();
  for (int k = 0; k < 8; ++k) b[static_cast<size_t>(k)] = static_cast<uint8_t>(n >> (8 * k));
  b.insert(b.end(), header.begin(), header.end());
  if (!data.empty()) b.insert(b.end(), data.begin(), data.end());  // (GCC 12 warns on an empty range)
  return b;
}

void expect_refused(const std::vector<uint8_t>& bytes, const std::string& what) {
  try {
    (void)parse_safetensors(bytes, "x.safetensors");
    ADD_FAILURE() << "accepted (expected: " << what << ")";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Status::io_error) << e.what();
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("x.safetensors: ", 0), 0u) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << "lacks '" << what << "': " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const unsigned seed = std::random_device{}();
    rng_.seed(seed);
    ::testing::Test::RecordProperty("seed", std::to_string(seed));
  }
  std::vector<uint8_t> random_bytes(size_t n) {
    std::vector<uint8_t> v(n);
    for (auto& x : v) x = static_cast<uint8_t>(rng_());
    return v;
  }
  // A random matrix of type t that satisfies pattern p (kept positions random non-zero values).
  Matrix random_sparse(ElemType t, Pattern p, int64_t rows, int64_t cols) {
    Matrix m(t, rows, cols);
    const TypeInfo& ti = type_info(t);
    for (auto& b : m.bits) {
      do {
        b = rng_() & ((uint64_t{1} << std::min(ti.bits, 32)) - 1);
        if (t == ElemType::tf32) b &= ~uint64_t{0x1FFF};
      } while (is_nan(t, b));
    }
    return prune_magnitude(m, p);
  }
  std::mt19937_64 rng_;
};

TEST_F(SafetensorsTest, RoundTripEveryDtypeAndShape) {
  SafeTensors f;
  f.metadata = {{"format", "pt"}, {"note", "a \"quoted\" \xc3\xa9 value"}};
  int k = 0;
  for (const char* dt : kDtypes) {
    for (std::vector<int64_t> shape : {std::vector<int64_t>{}, {0}, {3, 0}, {1 + static_cast<int64_t>(rng_() % 5)},
                                       {1 + static_cast<int64_t>(rng_() % 4), 1 + static_cast<int64_t>(rng_() % 6), 2}}) {
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      f.tensors.push_back({"t" + std::to_string(k++) + "_" + dt, dt, shape,
                           random_bytes(static_cast<size_t>(n) * safetensors_dtype_size(dt))});
    }
  }
  const std::vector<uint8_t> bytes = serialize_safetensors(f);
  uint64_t n = 0;
  for (int b = 0; b < 8; ++b) n |= static_cast<uint64_t>(bytes[static_cast<size_t>(b)]) << (8 * b);
  EXPECT_EQ((8 + n) % 8, 0u) << "the data starts 8-byte aligned";
  const SafeTensors g = parse_safetensors(bytes, "rt.safetensors");
  EXPECT_EQ(g.metadata, f.metadata);
  ASSERT_EQ(g.tensors.size(), f.tensors.size());
  for (const SafeTensor& t : f.tensors) {
    SCOPED_TRACE(t.name);
    const SafeTensor* u = g.find(t.name);
    ASSERT_NE(u, nullptr);
    EXPECT_EQ(u->dtype, t.dtype);
    EXPECT_EQ(u->shape, t.shape);
    EXPECT_EQ(u->data, t.data);
  }
  // No tensors, no metadata: "{}" padded.
  EXPECT_TRUE(parse_safetensors(serialize_safetensors(SafeTensors{}), "e").tensors.empty());
}

TEST_F(SafetensorsTest, ReadsWhatTheSafetensorsLibraryWrites) {
  // As safetensors.torch.save_file writes {"b": bf16 2x2, "a": u8 [3]} with metadata: keys in
  // any order, the header padded with spaces, data in offset order.
  std::string h =
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]},)"
      R"("a":{"dtype":"U8","shape":[3],"data_offsets":[8,11]}})";
  h.append((8 - h.size() % 8) % 8, ' ');
  const std::vector<uint8_t> data = {0x80, 0x3F, 0x00, 0x40, 0x40, 0x40, 0x80, 0xBF, 7, 8, 9};
  const SafeTensors f = parse_safetensors(file_of(h, data), "lib.safetensors");
  ASSERT_EQ(f.tensors.size(), 2u);
  EXPECT_EQ(f.tensors[0].name, "b");  // in data order
  EXPECT_EQ(f.tensors[0].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(f.tensors[0].data, std::vector<uint8_t>(data.begin(), data.begin() + 8));
  EXPECT_EQ(f.find("a")->data, (std::vector<uint8_t>{7, 8, 9}));
  EXPECT_EQ(f.metadata.at("format"), "pt");
}

TEST_F(SafetensorsTest, MalformedFilesAreRefusedNamingTheDefect) {
  const std::vector<uint8_t> four = {1, 2, 3, 4};
  auto one = [](const std::string& entry) { return "{\"t\":" + entry + "}"; };
  // The file and its header length.
  expect_refused({}, "0 bytes");
  expect_refused({1, 2, 3}, "3 bytes");
  {
    auto b = file_of("{}", {});
    b[0] = 200;  // header length 200, 2 bytes follow
    expect_refused(b, "beyond the end of the file");
    b[7] = 0xFF;  // 2^63-ish: no overflow in the comparison
    expect_refused(b, "beyond the end of the file");
  }
  // The header is not a JSON object.
  expect_refused(file_of("", {}), "must be a JSON object");
  expect_refused(file_of("[1, 2]", {}), "must be a JSON object");
  expect_refused(file_of(" {}", {}), "must be a JSON object");
  expect_refused(file_of("{\"t\": ", {}), "not valid JSON");
  expect_refused(file_of("{} {}", {}), "not valid JSON");
  expect_refused(file_of("{\"\xff\": 1}", {}), "not valid JSON");  // not UTF-8
  expect_refused(file_of("{\"t\": [[[[1]]]]}", {}), "nested deeper");
  expect_refused(file_of(one("5"), {}), "not an object");
  // Repeated keys (nlohmann would keep the last one silently).
  expect_refused(file_of(R"({"t":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"t":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", four),
                 "\"t\" appears twice");
  expect_refused(file_of(one(R"({"dtype":"U8","dtype":"U8","shape":[4],"data_offsets":[0,4]})"), four), "\"dtype\" appears twice");
  expect_refused(file_of(R"({"__metadata__":{"a":"1","a":"2"}})", {}), "\"a\" appears twice");
  // __metadata__.
  expect_refused(file_of(R"({"__metadata__":[1]})", {}), "\"__metadata__\" is not an object");
  expect_refused(file_of(R"({"__metadata__":{"a":1}})", {}), "not a string");
  // Tensor entries: fields.
  expect_refused(file_of(one(R"({"shape":[4],"data_offsets":[0,4]})"), four), "lacks the field \"dtype\"");
  expect_refused(file_of(one(R"({"dtype":"U8","data_offsets":[0,4]})"), four), "lacks the field \"shape\"");
  expect_refused(file_of(one(R"({"dtype":"U8","shape":[4]})"), four), "lacks the field \"data_offsets\"");
  expect_refused(file_of(one(R"({"dtype":"U8","shape":[4],"data_offsets":[0,4],"x":1})"), four), "unknown field \"x\"");
  expect_refused(file_of(one(R"({"dtype":8,"shape":[4],"data_offsets":[0,4]})"), four), "dtype that is");
  expect_refused(file_of(one(R"({"dtype":"Q8","shape":[4],"data_offsets":[0,4]})"), four), "unknown dtype \"Q8\"");
  expect_refused(file_of(one(R"({"dtype":"F4","shape":[8],"data_offsets":[0,4]})"), four), "below a byte");
  expect_refused(file_of(one(R"({"dtype":"U8","shape":4,"data_offsets":[0,4]})"), four), "not an array");
  expect_refused(file_of(one(R"({"dtype":"U8","shape":[-4],"data_offsets":[0,4]})"), four), "negative number");
  expect_refused(file_of(one(R"({"dtype":"U8","shape":[4.0],"data_offsets":[0,4]})"), four), "non-integer");
  expect_refused(file_of(one(R"({"dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,4]})"), four), "above 2^63");
  expect_refused(file_of(one(R"({"dtype":"U8","shape":[4],"data_offsets":[0]})"), four), "not [begin, end]");
  expect_refused(file_of(one(R"({"dtype":"U8","shape":[4],"data_offsets":[0,4,4]})"), four), "not [begin, end]");
  expect_refused(file_of(one(R"({"dtype":"U8","shape":[4],"data_offsets":[0,-4]})"), four), "not [begin, end]");
  // Sizes and offsets.
  expect_refused(file_of(one(R"({"dtype":"U8","shape":[4],"data_offsets":[4,0]})"), four), "begin after end");
  expect_refused(file_of(one(R"({"dtype":"U8","shape":[4],"data_offsets":[0,5]})"), four), "beyond the 4-byte data buffer");
  expect_refused(file_of(one(R"({"dtype":"U8","shape":[4],"data_offsets":[0,18446744073709551615]})"), four), "beyond");
  expect_refused(file_of(one(R"({"dtype":"U16","shape":[4],"data_offsets":[0,4]})"), four), "(8 bytes) but data_offsets [0, 4] hold 4");
  expect_refused(file_of(one(R"({"dtype":"F64","shape":[4611686018427387904,8],"data_offsets":[0,4]})"), four), "overflows 64 bits");
  expect_refused(file_of(one(R"({"dtype":"U8","shape":[4611686018427387904,0],"data_offsets":[0,4]})"), four), "(0 bytes)");
  expect_refused(file_of(R"({"a":{"dtype":"U8","shape":[3],"data_offsets":[0,3]},"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})", four),
                 "overlap");
  expect_refused(file_of(R"({"a":{"dtype":"U8","shape":[3],"data_offsets":[0,3]},"b":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}})", four),
                 "overlap");
  expect_refused(file_of(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})", four),
                 "belong to no tensor");
  expect_refused(file_of(one(R"({"dtype":"U8","shape":[3],"data_offsets":[0,3]})"), four), "cover 3 bytes of the 4-byte");
  expect_refused(file_of("{}", four), "cover 0 bytes of the 4-byte");
}

TEST_F(SafetensorsTest, RandomCorruptionNeverCrashes) {
  SafeTensors f;
  f.metadata = {{"k", "v"}};
  f.tensors.push_back({"a", "BF16", {3, 4}, random_bytes(24)});
  f.tensors.push_back({"b", "U8", {5}, random_bytes(5)});
  const std::vector<uint8_t> good = serialize_safetensors(f);
  std::uniform_int_distribution<size_t> pos(0, good.size() - 1);
  for (int trial = 0; trial < 1000; ++trial) {
    auto b = good;
    for (int k = 0; k < 1 + trial % 4; ++k) b[pos(rng_)] = static_cast<uint8_t>(rng_());
    if (trial % 3 == 0) b.resize(pos(rng_) + 1);
    try {
      const SafeTensors g = parse_safetensors(b, "fuzz.safetensors");
      for (const SafeTensor& t : g.tensors) {
        size_t n = safetensors_dtype_size(t.dtype);
        for (int64_t d : t.shape) n *= static_cast<size_t>(d);
        EXPECT_EQ(n, t.data.size());
      }
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Status::io_error) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("fuzz.safetensors: ", 0), 0u) << e.what();
    }
  }
}

TEST_F(SafetensorsTest, WriterRefusesInconsistentTensors) {
  auto refused = [](SafeTensors f, const std::string& what) {
    try {
      (void)serialize_safetensors(f);
      ADD_FAILURE() << "accepted: " << what;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Status::invalid_argument) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  refused({{{"a", "U16", {3}, std::vector<uint8_t>(5)}}, {}}, "5 bytes of data");
  refused({{{"a", "U8", {1}, {1}}, {"a", "U8", {1}, {1}}}, {}}, "used twice");
  refused({{{"__metadata__", "U8", {1}, {1}}}, {}}, "reserved");
  refused({{{"a", "Q8", {1}, {1}}}, {}}, "unknown dtype");
  refused({{{"a", "U8", {-1}, {}}}, {}}, "shape [-1]");
}

TEST_F(SafetensorsTest, CompressedContainerRoundTripEveryType) {
  struct Case {
    ElemType t;
    Pattern p;
    const char* dtype;
  };
  const Case cases[] = {{ElemType::f16, Pattern::p2_4, "F16"},        {ElemType::bf16, Pattern::p2_4, "BF16"},
                        {ElemType::tf32, Pattern::p1_2, "F32"},       {ElemType::e4m3, Pattern::p2_4, "F8_E4M3"},
                        {ElemType::e5m2, Pattern::p2_4, "F8_E5M2"},   {ElemType::e3m2, Pattern::p2_4, "U8"},
                        {ElemType::e2m3, Pattern::p2_4, "U8"},        {ElemType::e2m1, Pattern::p4_8_pairs, "U8"},
                        {ElemType::e2m1, Pattern::p2_4, "U8"},        {ElemType::s8, Pattern::p2_4, "I8"},
                        {ElemType::u8, Pattern::p2_4, "U8"},          {ElemType::s4, Pattern::p4_8_pairs, "U8"},
                        {ElemType::u4, Pattern::p4_8_pairs, "U8"}};
  for (const Case& cs : cases) {
    for (bool ordered : {true, false}) {
      SCOPED_TRACE(std::string(type_name(cs.t)) + " " + pattern_info(cs.p).name + (ordered ? "" : " unordered"));
      const int64_t rows = 1 + static_cast<int64_t>(rng_() % 9), cols = 8 * (1 + static_cast<int64_t>(rng_() % 7));
      const Compressed c = compress(random_sparse(cs.t, cs.p, rows, cols), cs.p, ordered);
      const SafeTensors f = compressed_to_safetensors(c);
      EXPECT_EQ(f.find("values")->dtype, cs.dtype);
      EXPECT_EQ(f.metadata.at("format"), "spmma.compressed");
      EXPECT_EQ(f.metadata.at("format_version"), "1");
      EXPECT_EQ(f.metadata.at("type"), type_name(cs.t));
      EXPECT_EQ(f.metadata.at("ordered"), ordered ? "true" : "false");
      const Compressed d = compressed_from_safetensors(parse_safetensors(serialize_safetensors(f), "c"), "c");
      EXPECT_EQ(d.type, c.type);
      EXPECT_EQ(d.pattern, c.pattern);
      EXPECT_EQ(d.rows, c.rows);
      EXPECT_EQ(d.cols, c.cols);
      EXPECT_EQ(d.ordered, c.ordered);
      EXPECT_EQ(d.values, c.values);
      EXPECT_EQ(d.metadata, c.metadata);
      EXPECT_EQ(decompress(d), decompress(c));
    }
  }
}

TEST_F(SafetensorsTest, CompressedContainerRefusesWhatItDidNotWrite) {
  const Compressed c = compress(random_sparse(ElemType::bf16, Pattern::p2_4, 3, 16));
  const SafeTensors good = compressed_to_safetensors(c);
  auto refused = [&](SafeTensors f, const std::string& what, Status code = Status::io_error) {
    try {
      (void)compressed_from_safetensors(parse_safetensors(serialize_safetensors(f), "c.safetensors"), "c.safetensors");
      ADD_FAILURE() << "accepted: " << what;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("c.safetensors: ", 0), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  auto with = [&](const char* key, const std::string& value) {
    SafeTensors f = good;
    if (value == "<absent>") f.metadata.erase(key);
    else f.metadata[key] = value;
    return f;
  };
  refused(with("format", "pt"), "not an spmma compressed matrix");
  refused(with("format", "<absent>"), "lacks \"format\"");
  refused(with("format_version", "2"), "format_version \"2\"");
  refused(with("type", "bf17"), "not an element type");
  refused(with("type", ".bf16"), "not an element type");  // the PTX spelling: the file names the type as written
  // Another type of the same width: the values dtype tells them apart.
  refused(with("type", "f16"), "tensor \"values\" is BF16 [3, 8]");
  refused(with("type", "e4m3"), "tensor \"values\" is BF16");
  refused(with("type", "tf32"), "not a sparsity pattern of tf32");  // tf32 is 1:2
  refused(with("type", "f64"), "not a sparsity pattern of f64");
  refused(with("pattern", "3:4"), "pattern \"3:4\"");
  refused(with("pattern", "4:8 pair-wise"), "not a sparsity pattern of bf16");
  for (const char* bad : {"", "-3", "+3", "03", "3x", " 3", "3.0", "99999999999999999999"})
    refused(with("rows", bad), "is not a row count");
  refused(with("cols", "0x10"), "is not a column count");
  refused(with("rows", "4"), "tensor \"values\" is BF16 [3, 8]");
  refused(with("cols", "32"), "tensor \"values\" is BF16 [3, 8]");
  refused(with("cols", "18"), "not a multiple of the 2:4 chunk width 4");
  refused(with("ordered", "yes"), "ordered \"yes\"");
  {
    // A legal file of an empty matrix with 2^40 rows: refused, not a 2^40-iteration loop.
    SafeTensors f = good;
    f.metadata["rows"] = "1099511627776";
    f.metadata["cols"] = "0";
    f.tensors = {{"values", "BF16", {int64_t{1} << 40, 0}, {}}, {"metadata", "U16", {int64_t{1} << 40, 0}, {}}};
    refused(f, "empty 1099511627776 x 0 matrix");
  }
  {
    SafeTensors f = good;
    f.tensors.push_back({"extra", "U8", {1}, {0}});
    refused(f, "tensor \"extra\"");
  }
  {
    SafeTensors f = good;
    f.tensors.pop_back();
    refused(f, "lacks the tensor \"metadata\"");
  }
  {
    SafeTensors f = good;
    f.tensors[1].dtype = "I16";
    refused(f, "tensor \"metadata\" is I16");
  }
  {
    // e2m1 values with a bit above its 4.
    SafeTensors f = compressed_to_safetensors(compress(random_sparse(ElemType::e2m1, Pattern::p4_8_pairs, 2, 8)));
    f.tensors[0].data[3] = 0x1F;
    refused(f, "tensor \"values\" element (0, 3) = 0x1f", Status::invalid_value);
  }
}

}  // namespace
