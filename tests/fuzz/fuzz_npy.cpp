// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target for the .npy reader (src/io/npy.cpp, include/spmma/npy.hpp).
//
// Every input goes to parse_npy. Refused inputs must be refused with Error(io_error) — any other
// exception, a crash, a sanitizer report, a hang or a huge allocation is a finding. An accepted
// array must be well-formed, and everything the API can do with it must hold together:
//   writer    serialize_npy(a) parses back to the same dtype, shape and bytes (a 64-byte aligned
//             header, version 1.0 or 2.0), and writing that again gives the same bytes;
//   elements  npy_raw / npy_set_raw copy every element exactly; npy_value / npy_set_value store
//             every number back (8-byte integers may refuse a value that a double rounded);
//   matrices  bit patterns of a type exactly as wide as the dtype go to a Matrix and back to the
//             same bytes; values go to a Matrix of a few types and back, encoding being stable.
// Run: scripts/fuzz.sh, or build-fuzz/tests/fuzz/fuzz_npy tests/fuzz/corpus/npy (docs/testing.md).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fuzz_check.hpp"
#include "spmma/error.hpp"
#include "spmma/matrix.hpp"
#include "spmma/npy.hpp"
#include "spmma/types.hpp"

using namespace spmma;

namespace {

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "(";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + ")";
}

std::string describe(const NpyArray& a) { return a.dtype + " " + shape_text(a.shape) + ", " + std::to_string(a.data.size()) + " bytes"; }

// A type whose bit patterns are exactly as wide as the dtype's elements: bits round-trip.
std::optional<ElemType> exact_bits_type(size_t itemsize) {
  switch (itemsize) {
    case 1: return ElemType::u8;
    case 2: return ElemType::bf16;
    case 4: return ElemType::f32;
    case 8: return ElemType::f64;
    default: return std::nullopt;
  }
}

void check_writer(const NpyArray& a) {
  const std::vector<uint8_t> out = FUZZ_NO_ERROR(serialize_npy(a));
  FUZZ_CHECK(out.size() >= 10 + a.data.size(), "serialize_npy wrote " + std::to_string(out.size()) + " bytes for " + describe(a));
  FUZZ_CHECK(std::memcmp(out.data(), "\x93NUMPY", 6) == 0, "serialize_npy: no magic");
  FUZZ_CHECK((out[6] == 1 || out[6] == 2) && out[7] == 0, "serialize_npy wrote version " + std::to_string(out[6]) + "." + std::to_string(out[7]));
  const size_t header_end = out.size() - a.data.size();
  FUZZ_CHECK(header_end % 64 == 0, "serialize_npy: data starts at " + std::to_string(header_end) + ", not 64-byte aligned");
  FUZZ_CHECK(out[header_end - 1] == '\n', "serialize_npy: the header does not end in a newline");
  FUZZ_CHECK(std::equal(a.data.begin(), a.data.end(), out.begin() + static_cast<std::ptrdiff_t>(header_end)),
             "serialize_npy: the data bytes differ");

  const NpyArray b = FUZZ_NO_ERROR(parse_npy(out, "roundtrip.npy"));
  FUZZ_CHECK(b.dtype == a.dtype && b.shape == a.shape && b.data == a.data,
             "write + read changed the array: " + describe(a) + " -> " + describe(b));
  const std::vector<uint8_t> again = FUZZ_NO_ERROR(serialize_npy(b));
  FUZZ_CHECK(again == out, "serialize_npy is not deterministic for " + describe(a));
}

void check_elements(const NpyArray& a, int64_t n) {
  // Bit patterns: an exact copy through npy_raw / npy_set_raw.
  NpyArray copy = FUZZ_NO_ERROR(make_npy(a.dtype, a.shape));
  FUZZ_CHECK(copy.data.size() == a.data.size(), "make_npy(" + a.dtype + ", " + shape_text(a.shape) + ") holds " +
                                                    std::to_string(copy.data.size()) + " bytes");
  for (int64_t i = 0; i < n; ++i) npy_set_raw(copy, i, npy_raw(a, i));
  FUZZ_CHECK(copy.data == a.data, "npy_raw / npy_set_raw did not copy " + describe(a));

  const bool is_void = FUZZ_NO_ERROR(npy_dtype_is_void(a.dtype));
  if (is_void) {
    // No numbers in a raw-bytes dtype: both accessors refuse with invalid_argument.
    if (n > 0) {
      try {
        (void)npy_value(a, 0);
        FUZZ_CHECK(false, "npy_value accepted the raw-bytes dtype " + a.dtype);
      } catch (const Error& e) {
        FUZZ_CHECK(e.code() == Status::invalid_argument, std::string("npy_value on a V dtype: ") + e.what());
      }
    }
    return;
  }
  // Values: every number read can be stored back exactly (and reads back as itself).
  const bool wide_int = a.itemsize() == 8 && FUZZ_NO_ERROR(npy_dtype_is_integer(a.dtype));
  NpyArray vals = FUZZ_NO_ERROR(make_npy(a.dtype, a.shape));
  for (int64_t i = 0; i < n; ++i) {
    const double v = FUZZ_NO_ERROR(npy_value(a, i));
    try {
      npy_set_value(vals, i, v);
    } catch (const Error& e) {
      // A 64-bit integer above 2^53 reads as the nearest double, which may lie outside the dtype.
      FUZZ_CHECK(wide_int && e.code() == Status::invalid_value,
                 "npy_set_value(" + a.dtype + ", element " + std::to_string(i) + ") refused the value npy_value read: " + e.what());
      continue;
    }
    const double w = FUZZ_NO_ERROR(npy_value(vals, i));
    FUZZ_CHECK((std::isnan(v) && std::isnan(w)) || v == w, "npy_set_value / npy_value changed element " + std::to_string(i) +
                                                               " of " + describe(a));
  }
}

void check_matrices(const NpyArray& a) {
  const bool is_void = FUZZ_NO_ERROR(npy_dtype_is_void(a.dtype));
  const bool is_int = FUZZ_NO_ERROR(npy_dtype_is_integer(a.dtype));
  // Bit patterns.
  const std::optional<ElemType> bt = exact_bits_type(a.itemsize());
  FUZZ_CHECK(bt.has_value(), "itemsize " + std::to_string(a.itemsize()) + " of dtype " + a.dtype);
  if ((is_int && a.dtype != "|b1") || is_void) {
    const Matrix m = FUZZ_NO_ERROR(npy_bits_to_matrix(a, *bt, "fuzz.npy"));
    FUZZ_CHECK(m.rows == a.rows() && m.cols == a.cols(), "npy_bits_to_matrix: " + std::to_string(m.rows) + " x " +
                                                           std::to_string(m.cols) + " from " + describe(a));
    const NpyArray back = FUZZ_NO_ERROR(matrix_bits_to_npy(m, a.dtype));
    FUZZ_CHECK(back.dtype == a.dtype && back.data == a.data && back.shape == (std::vector<int64_t>{m.rows, m.cols}),
               "bit patterns did not round-trip through a Matrix: " + describe(a) + " -> " + describe(back));
  } else {
    try {
      (void)npy_bits_to_matrix(a, *bt, "fuzz.npy");
      FUZZ_CHECK(false, "npy_bits_to_matrix accepted dtype " + a.dtype);
    } catch (const Error& e) {
      FUZZ_CHECK(e.code() == Status::io_error, std::string("npy_bits_to_matrix: ") + e.what());
    }
  }
  if (is_void) return;
  // Values, into a few types: what npy_to_matrix encodes, matrix_to_npy writes back exactly and
  // reading that again gives the same bit patterns.
  for (ElemType t : {ElemType::f32, ElemType::bf16, ElemType::e4m3, ElemType::s8}) {
    Matrix m;
    try {
      m = npy_to_matrix(a, t, "fuzz.npy");
    } catch (const Error& e) {
      FUZZ_CHECK(e.code() == Status::invalid_value, std::string("npy_to_matrix: ") + e.what());
      continue;
    }
    FUZZ_CHECK(m.rows == a.rows() && m.cols == a.cols() && m.bits.size() == static_cast<size_t>(a.size()),
               "npy_to_matrix(" + std::string(type_name(t)) + ") shape from " + describe(a));
    const NpyArray w = FUZZ_NO_ERROR(matrix_to_npy(m));
    const Matrix again = FUZZ_NO_ERROR(npy_to_matrix(w, t, "roundtrip.npy"));
    FUZZ_CHECK(again == m, "values of " + std::string(type_name(t)) + " did not round-trip through " + w.dtype + " (from " +
                               describe(a) + ")");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  NpyArray a;
  try {
    a = parse_npy(std::span<const uint8_t>(data, size), "fuzz.npy");
  } catch (const Error& e) {
    FUZZ_CHECK(e.code() == Status::io_error, std::string("parse_npy refused with ") + std::string(status_name(e.code())) +
                                                 ", not io_error: " + e.what());
    return 0;
  }

  // What parse_npy returns is well-formed.
  FUZZ_CHECK(a.shape.size() == 1 || a.shape.size() == 2, "parse_npy returned shape " + shape_text(a.shape));
  FUZZ_CHECK(FUZZ_NO_ERROR(npy_normalize_dtype(a.dtype)) == a.dtype, "dtype '" + a.dtype + "' is not normalized");
  int64_t n = 1;
  for (int64_t d : a.shape) {
    FUZZ_CHECK(d >= 0, "negative dimension in " + shape_text(a.shape));
    if (d == 0) n = 0;
  }
  if (n != 0) {
    n = 1;
    for (int64_t d : a.shape) {
      FUZZ_CHECK(static_cast<uint64_t>(d) <= size, "dimension " + std::to_string(d) + " of a " + std::to_string(size) + "-byte file");
      n *= d;
    }
  }
  FUZZ_CHECK(a.size() == n, "NpyArray::size() = " + std::to_string(a.size()) + " for " + shape_text(a.shape));
  FUZZ_CHECK(a.rows() * a.cols() == n, "rows() * cols() != size() for " + shape_text(a.shape));
  FUZZ_CHECK(a.data.size() == static_cast<size_t>(n) * a.itemsize(), "data size of " + describe(a));

  check_writer(a);
  check_elements(a, n);
  check_matrices(a);
  return 0;
}
