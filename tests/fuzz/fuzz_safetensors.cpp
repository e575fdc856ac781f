// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target for the safetensors reader and the compressed-matrix container
// (src/io/safetensors.cpp, include/spmma/safetensors.hpp).
//
// Every input goes to parse_safetensors. Refused inputs must be refused with Error(io_error);
// anything else (another exception, a crash, a sanitizer report, a hang, a huge allocation) is a
// finding. An accepted file must hold together:
//   writer     serialize_safetensors(f) parses back to the same tensors (in offset order), the
//              same metadata, with 8-byte aligned data, and writing that again gives the same bytes;
//   container  where compressed_from_safetensors accepts the file (refusing with io_error or
//              invalid_value only), compressed_to_safetensors gives it back, through bytes too;
//              and where decompress accepts the matrix, compress(decompress(c)) decompresses to
//              the same dense matrix (compress is lossless on what decompress produces).
// Run: scripts/fuzz.sh, or build-fuzz/tests/fuzz/fuzz_safetensors tests/fuzz/corpus/safetensors.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "fuzz_check.hpp"
#include "spmma/error.hpp"
#include "spmma/safetensors.hpp"
#include "spmma/sparse.hpp"
#include "spmma/types.hpp"

using namespace spmma;

namespace {

bool same(const SafeTensors& a, const SafeTensors& b) {
  if (a.metadata != b.metadata || a.tensors.size() != b.tensors.size()) return false;
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const SafeTensor &x = a.tensors[i], &y = b.tensors[i];
    if (x.name != y.name || x.dtype != y.dtype || x.shape != y.shape || x.data != y.data) return false;
  }
  return true;
}

bool same(const Compressed& a, const Compressed& b) {
  return a.type == b.type && a.pattern == b.pattern && a.rows == b.rows && a.cols == b.cols && a.values == b.values &&
         a.metadata == b.metadata && a.ordered == b.ordered;
}

std::string summary(const SafeTensors& f) {
  std::string s = std::to_string(f.tensors.size()) + " tensors, " + std::to_string(f.metadata.size()) + " metadata entries";
  return s;
}

void check_writer(const SafeTensors& f) {
  const std::vector<uint8_t> out = FUZZ_NO_ERROR(serialize_safetensors(f));
  FUZZ_CHECK(out.size() >= 8, "serialize_safetensors wrote " + std::to_string(out.size()) + " bytes");
  uint64_t n = 0;
  for (int k = 0; k < 8; ++k) n |= static_cast<uint64_t>(out[static_cast<size_t>(k)]) << (8 * k);
  FUZZ_CHECK(n % 8 == 0 && n <= out.size() - 8, "serialize_safetensors: header length " + std::to_string(n));
  const SafeTensors g = FUZZ_NO_ERROR(parse_safetensors(out, "roundtrip.safetensors"));
  FUZZ_CHECK(same(f, g), "write + read changed the file: " + summary(f) + " -> " + summary(g));
  FUZZ_CHECK(FUZZ_NO_ERROR(serialize_safetensors(g)) == out, "serialize_safetensors is not deterministic");
}

void check_container(const SafeTensors& f) {
  Compressed c;
  try {
    c = compressed_from_safetensors(f, "fuzz.safetensors");
  } catch (const Error& e) {
    FUZZ_CHECK(e.code() == Status::io_error || e.code() == Status::invalid_value,
               std::string("compressed_from_safetensors refused with ") + std::string(status_name(e.code())) + ": " + e.what());
    return;
  }
  // What the container writes is what it read: the two tensors byte for byte, and the keys it
  // reads from __metadata__ (a file may hold more keys, and its tensors in another order).
  const SafeTensors back = FUZZ_NO_ERROR(compressed_to_safetensors(c));
  for (const char* name : {"values", "metadata"}) {
    const SafeTensor *x = f.find(name), *y = back.find(name);
    FUZZ_CHECK(x && y && x->dtype == y->dtype && x->shape == y->shape && x->data == y->data,
               std::string("compressed_to_safetensors changed the tensor ") + name);
  }
  for (const auto& [k, v] : back.metadata) {
    const auto it = f.metadata.find(k);
    FUZZ_CHECK(it != f.metadata.end() && it->second == v, "compressed_to_safetensors changed __metadata__ " + k);
  }
  const std::vector<uint8_t> bytes = FUZZ_NO_ERROR(serialize_safetensors(back));
  const Compressed c2 = FUZZ_NO_ERROR(compressed_from_safetensors(FUZZ_NO_ERROR(parse_safetensors(bytes, "rt")), "rt"));
  FUZZ_CHECK(same(c, c2), "the compressed container did not round-trip through bytes");

  Matrix dense;
  try {
    dense = decompress(c);
  } catch (const Error& e) {
    // Nibble validity is decompress's check (invalid_value), after what the reader accepts.
    FUZZ_CHECK(e.code() == Status::invalid_value, std::string("decompress refused with ") +
                                                      std::string(status_name(e.code())) + ": " + e.what());
    return;
  }
  FUZZ_CHECK(dense.rows == c.rows && dense.cols == c.cols, "decompress: wrong shape");
  const Compressed again = FUZZ_NO_ERROR(compress(dense, c.pattern, c.ordered));
  const Matrix dense2 = FUZZ_NO_ERROR(decompress(again));
  // Equal bit for bit, except a zero that is not +0 (-0.0, a tf32 zero with low bits set) outside
  // the slots PyTorch's nibble names: compress stores the non-zeros and the dense bits of the
  // padding slot only, so such a zero comes back +0 (docs/layouts.md, "the padding index";
  // SparseCompress.NegativeZero).
  bool same_bits = dense2.rows == dense.rows && dense2.cols == dense.cols;
  for (size_t i = 0; same_bits && i < dense.bits.size(); ++i)
    same_bits = dense2.bits[i] == dense.bits[i] || (is_zero(dense.type, dense.bits[i]) && dense2.bits[i] == 0);
  FUZZ_CHECK(same_bits, "decompress(compress(decompress(c))) != decompress(c) (beyond -0 -> +0) for " +
                            std::string(type_name(c.type)) + " " + pattern_info(c.pattern).name + ", " +
                            std::to_string(c.rows) + " x " + std::to_string(c.cols));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  SafeTensors f;
  try {
    f = parse_safetensors(std::span<const uint8_t>(data, size), "fuzz.safetensors");
  } catch (const Error& e) {
    FUZZ_CHECK(e.code() == Status::io_error, std::string("parse_safetensors refused with ") +
                                                 std::string(status_name(e.code())) + ", not io_error: " + e.what());
    return 0;
  }
  uint64_t at = 0;
  for (const SafeTensor& t : f.tensors) {
    FUZZ_CHECK(t.name != "__metadata__", "a tensor named __metadata__");
    const size_t item = FUZZ_NO_ERROR(safetensors_dtype_size(t.dtype));
    // product(shape) * item, exactly: 0 if a dimension is 0, else overflow means "too big".
    uint64_t n = item;
    bool zero = false, overflow = false;
    for (int64_t d : t.shape) {
      FUZZ_CHECK(d >= 0, "negative dimension in tensor " + t.name);
      zero = zero || d == 0;
      overflow = __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n) || overflow;
    }
    if (zero) n = 0, overflow = false;
    FUZZ_CHECK(!overflow && n == t.data.size(), "tensor " + t.name + ": shape and data size disagree");
    at += t.data.size();
  }
  FUZZ_CHECK(at <= size, "the tensors hold more bytes than the file");

  check_writer(f);
  check_container(f);
  return 0;
}
