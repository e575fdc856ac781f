// SPDX-License-Identifier: BSD-3-Clause
// spmma — NumPy .npy files: read and write, and convert to / from spmma::Matrix.
//
// Supported (what `np.save` writes for a C-ordered numeric array):
//   format versions 1.0, 2.0 and 3.0;
//   dtypes  |b1 |i1 |u1 <i2 <u2 <i4 <u4 <i8 <u8 <f2 <f4 <f8  (little-endian; '|', '<' and '='
//           are all accepted as the byte-order mark, a big-endian '>' is refused);
//           and the raw-bytes dtypes |V1 <V2 <V4 <V8, which NumPy writes for the dtypes it does not
//           know (ml_dtypes' bfloat16 is '<V2', its float8 types '|V1'): bit patterns only;
//   C order (fortran_order=True is refused unless the layout is the same, i.e. 1-D or a
//   dimension of 1);
//   1-D or 2-D shapes; a 1-D array of n elements is a 1 x n matrix.
// Every file problem throws Error(Status::io_error, "<file>: <what is wrong>").
//
// Two ways to carry a Matrix in an array:
//   values        each element is the number it denotes (float32 for the narrow float types,
//                 which all fit exactly; int8 / uint8 for the small integer types). Reading
//                 rounds each value into the chosen ElemType with spmma::encode (RNE).
//   bit patterns  an integer (or raw-bytes 'V') array whose elements are the raw encodings (bf16
//                 as uint16, e4m3 as uint8, a 4-bit type one element per byte in the low nibble,
//                 tf32 as uint32). Reading checks that no bit above the type's width is set.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spmma/matrix.hpp"
#include "spmma/types.hpp"

namespace spmma {

struct NpyArray {
  std::string dtype;           // normalized descr: "|b1" "|i1" "|u1" "<i2" ... "<f8", "|V1" ... "<V8"
  std::vector<int64_t> shape;  // 1 or 2 dimensions
  std::vector<uint8_t> data;   // C order, little-endian, size() * itemsize() bytes

  int64_t size() const;      // number of elements (product of the shape)
  int64_t rows() const;      // 1-D: 1
  int64_t cols() const;      // 1-D: shape[0]
  size_t itemsize() const;   // bytes per element
};

// An array of the given dtype and shape with all bytes zero (dtype is normalized; an
// unsupported dtype or a bad shape throws io_error).
NpyArray make_npy(std::string_view dtype, std::vector<int64_t> shape);

// Normalizes a NumPy descr ("<f4", "|u1", "=i2", "f8", "<u1" ...) to the spelling spmma writes.
// `where` prefixes the message of the io_error thrown for an unsupported or big-endian dtype.
std::string npy_normalize_dtype(std::string_view descr, std::string_view where = {});
bool npy_dtype_is_integer(std::string_view dtype);  // b1 and the i*/u* kinds
bool npy_dtype_is_float(std::string_view dtype);
bool npy_dtype_is_void(std::string_view dtype);     // the raw-bytes V kinds: bit patterns, no numbers

// Whole files. `path` names the file in every message.
NpyArray read_npy(const std::string& path);
void write_npy(const std::string& path, const NpyArray& a);
// The same on bytes in memory; `name` stands for the file in messages.
NpyArray parse_npy(std::span<const uint8_t> bytes, std::string_view name);
std::vector<uint8_t> serialize_npy(const NpyArray& a);  // always the shortest version that fits

// Element access by flat index (row-major). npy_value decodes by value (bool: 0 or 1; a 'V'
// dtype throws invalid_argument: it has no numbers); npy_raw returns the element's bytes as an
// unsigned integer (no sign extension).
double npy_value(const NpyArray& a, int64_t i);
uint64_t npy_raw(const NpyArray& a, int64_t i);
// Stores v exactly; throws invalid_value if the dtype cannot hold v exactly (3.5 in an integer
// dtype, 300 in |u1, 0.1 in <f4, anything but 0/1 in |b1). NaN and ±Inf go into float dtypes.
// A 'V' dtype throws invalid_argument (store bit patterns with npy_set_raw).
void npy_set_value(NpyArray& a, int64_t i, double v);
// Stores the low itemsize() bytes of `raw`.
void npy_set_raw(NpyArray& a, int64_t i, uint64_t raw);

// The dtypes spmma writes for a type: by value (float32 for every float type narrower than f64,
// float64 for f64, int8 for s8 / s4, uint8 for u8 / u4 / b1, int32 for s32), and as bit
// patterns (the narrowest unsigned integer holding type_info(t).bits).
std::string_view npy_value_dtype(ElemType t);
std::string_view npy_bits_dtype(ElemType t);

// Matrix <-> array. `name` (usually the file) prefixes error messages.
// By value: every element is encoded into `t` (RNE; an unrepresentable value such as NaN for
// an integer type throws invalid_value naming the element).
Matrix npy_to_matrix(const NpyArray& a, ElemType t, std::string_view name);
// Bit patterns: needs an integer or 'V' dtype; an element with bits above the type's width
// throws invalid_value naming the element.
Matrix npy_bits_to_matrix(const NpyArray& a, ElemType t, std::string_view name);
// By value into `dtype` (empty: npy_value_dtype(m.type)); always 2-D.
NpyArray matrix_to_npy(const Matrix& m, std::string_view dtype = {});
// Bit patterns into `dtype` (empty: npy_bits_dtype(m.type)); always 2-D.
NpyArray matrix_bits_to_npy(const Matrix& m, std::string_view dtype = {});

// Conveniences: read_npy + npy_to_matrix, matrix_to_npy + write_npy, and the same for bits.
Matrix read_npy_values(const std::string& path, ElemType t);
Matrix read_npy_bits(const std::string& path, ElemType t);
void write_npy_values(const std::string& path, const Matrix& m, std::string_view dtype = {});
void write_npy_bits(const std::string& path, const Matrix& m, std::string_view dtype = {});

}  // namespace spmma
